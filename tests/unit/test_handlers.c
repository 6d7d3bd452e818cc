/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The broker's request handling, driven through dc_broker_handle() with no
 * sockets (lib/broker/handlers.c, config_apis.c; SPEC §2-§4):
 *   - dispatch and framing: one well-formed frame per handled request,
 *     appended after what out already held; nothing on close; correlation
 *     ids echoed; unknown keys/versions and every truncation close;
 *   - ApiVersions 0-3 (+ unsupported versions, KIP-511 name checks) and
 *     Metadata 0-12;
 *   - DescribeConfigs 0-4: resolution (source 7/8), synonyms, v0
 *     is_default, <default>, unknown clients, the key filter, config types
 *     and documentation, the read-only BROKER resource, other types;
 *   - AlterConfigs 0-2 and IncrementalAlterConfigs 0-1: schema and server
 *     validation, KIP-339 rules, per-resource all-or-nothing, validate_only;
 *   - a real SQLite store: accepted changes persist and survive a new
 *     broker (and a reopened store), rejected/validate-only ones do not,
 *     audit rows carry the principal, peer, op, old and new values; a store
 *     that fails its commit leaves the snapshot unchanged.
 */
#include "broker/core/broker.h"
#include "broker/store/store.h"
#include "codec/proto.h"
#include "common/clock.h"
#include "common/schema.h"
#include "../tap.h"
#include "../testutil.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#define S(x) ((char *)(x))

/* ---- the harness -------------------------------------------------------- */

/* One broker plus everything a call needs. Owns the arenas and out. */
typedef struct tb {
  dc_broker_t *b;
  dc_conn_info_t conn;
  dc_arena_t scratch; /* handler scratch, reset after every call */
  dc_arena_t resp;    /* decoded response; valid until the next call */
  dc_arena_t build;   /* request building; reset per request */
  dc_buf_t out;
  struct dc_answer_memo *memo; /* the connection's kept answer */
  char errstr[256];
  int32_t corr;
  char msg[512]; /* error message of the last alter1(); "~" = null */
} tb_t;

/* Every response is checked for framing as it arrives; problems are
 * counted here and asserted at the end (with a diag at the time). */
static int frame_bad, echo_bad;
/* Every DescribeConfigs is also answered with no memo and twice more with
 * the connection's memo: all three answers must be the same bytes. */
static int memo_bad, memo_checked;

static const char *const static_keys[] = {"listeners", "data.dir"};
static const char *const static_vals[] = {"PLAINTEXT://127.0.0.1:19092",
                                          "/var/lib/dynconf"};

static void tb_opts(dc_broker_opts_t *o) {
  dc_broker_opts_init(o);
  o->node_id = 7;
  o->cluster_id = "test-cluster";
  o->n_static = 2;
  o->static_keys = static_keys;
  o->static_values = static_vals;
}

static bool tb_init(tb_t *t, const dc_broker_opts_t *opts, dc_store_t *st) {
  memset(t, 0, sizeof(*t));
  dc_broker_opts_t def;
  if (!opts) {
    tb_opts(&def);
    opts = &def;
  }
  char err[256] = "";
  t->b = dc_broker_new(opts, st, err, sizeof(err));
  if (!t->b)
    diag("dc_broker_new: %s", err);
  t->conn.peer = "127.0.0.1:40001";
  t->conn.principal = "User:alice";
  t->conn.advertised_host = "127.0.0.1";
  t->conn.advertised_port = 19092;
  t->conn.memo = &t->memo;
  dc_arena_init(&t->scratch);
  dc_arena_init(&t->resp);
  dc_arena_init(&t->build);
  dc_buf_init(&t->out);
  t->corr = 0x12340000;
  return t->b != NULL;
}

static void tb_free(tb_t *t) {
  dc_broker_memo_free(t->memo);
  dc_broker_destroy(t->b);
  dc_arena_free(&t->scratch);
  dc_arena_free(&t->resp);
  dc_arena_free(&t->build);
  dc_buf_free(&t->out);
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

/* With DC_REQUEST_LOG set, every request payload handled is appended to
 * that file in hex, a line each: the corpus scripts/compare-answers.py
 * replays against two builds of dynconfd. */
static void log_request(const uint8_t *p, size_t n) {
  static FILE *f;
  static bool opened;
  if (!opened) {
    const char *path = getenv("DC_REQUEST_LOG");
    f = path ? fopen(path, "w") : NULL;
    opened = true;
  }
  if (!f)
    return;
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%02x", p[i]);
  fputc('\n', f);
  fflush(f);
}

/* One call of dc_broker_handle with out holding "pre" only. */
static int handle_once(tb_t *t, const uint8_t *p, size_t n) {
  log_request(p, n);
  dc_buf_clear(&t->out);
  dc_buf_append(&t->out, "pre", 3);
  t->errstr[0] = '\0';
  int rc = dc_broker_handle(t->b, &t->conn, p, n, &t->scratch, &t->out,
                            t->errstr, sizeof(t->errstr));
  dc_arena_reset(&t->scratch);
  return rc;
}

/* A DescribeConfigs answered without the memo, then twice with it (the
 * second from the memo when the first kept it): the same bytes each
 * time. Leaves the last answer in out. */
static int handle_describe_thrice(tb_t *t, const uint8_t *p, size_t n) {
  t->conn.memo = NULL;
  int rc0 = handle_once(t, p, n);
  dc_buf_t ref;
  dc_buf_init(&ref);
  dc_buf_append(&ref, t->out.data, t->out.len);
  t->conn.memo = &t->memo;
  int rc = DC_HANDLE_OK;
  for (int i = 0; i < 2; i++) {
    rc = handle_once(t, p, n);
    if (rc != rc0 || t->out.len != ref.len ||
        memcmp(t->out.data, ref.data, ref.len)) {
      diag("  DescribeConfigs with the memo (call %d): %d, %zu bytes; "
           "without: %d, %zu bytes", i + 1, rc, t->out.len, rc0, ref.len);
      memo_bad++;
    }
  }
  memo_checked++;
  dc_buf_free(&ref);
  return rc;
}

/* Hands one payload (frame without its size) to the broker, with "pre"
 * already in out so appending (not overwriting) is checked. */
static int handle_raw(tb_t *t, const uint8_t *p, size_t n) {
  bool describe = n >= 2 && p[0] == 0 && p[1] == DC_API_DESCRIBE_CONFIGS &&
                  t->conn.memo;
  int rc = describe ? handle_describe_thrice(t, p, n) : handle_once(t, p, n);
  if (t->out.len < 3 || memcmp(t->out.data, "pre", 3)) {
    diag("  out's earlier content was overwritten");
    frame_bad++;
  }
  if (rc == DC_HANDLE_CLOSE) {
    if (t->out.len != 3) {
      diag("  close, yet %zu bytes were appended", t->out.len - 3);
      frame_bad++;
    }
    if (!t->errstr[0]) {
      diag("  close without a reason in errstr");
      frame_bad++;
    }
  } else if (rc == DC_HANDLE_OK) {
    if (t->out.len < 3 + 4 + 4 || be32(t->out.data + 3) != t->out.len - 7) {
      diag("  response is not exactly one size-prefixed frame (%zu bytes)",
           t->out.len - 3);
      frame_bad++;
      return -1;
    }
  } else {
    diag("  dc_broker_handle returned %d", rc);
    frame_bad++;
  }
  return rc;
}

/* A request frame for (key, v) with t->corr, into req (initialised
 * here): size field, header, body. Payloads are handed over from req+4. */
static void build_payload(tb_t *t, dc_buf_t *req, int16_t key, int16_t v,
                          const dc_buf_t *body) {
  dc_buf_init(req);
  size_t off = dc_wr_frame_begin(req);
  dc_req_header_t h = {key, v, t->corr, S("test-client")};
  dc_req_header_encode(req, &h);
  if (body)
    dc_buf_append(req, body->data, body->len);
  dc_wr_frame_end(req, off);
}

/* Sends body under a header for (key, v); on DC_HANDLE_OK rd is left at
 * the response body, the correlation id having been checked. */
static int exchange(tb_t *t, int16_t key, int16_t v, const dc_buf_t *body,
                    dc_rd_t *rd) {
  dc_buf_t frame;
  build_payload(t, &frame, key, v, body);
  int rc = handle_raw(t, frame.data + 4, frame.len - 4);
  dc_buf_free(&frame);
  if (rc != DC_HANDLE_OK)
    return rc;
  dc_arena_reset(&t->resp);
  dc_rd_init(rd, t->out.data + 7, t->out.len - 7, &t->resp);
  int32_t corr = 0;
  if (dc_resp_header_decode(rd, key, v, &corr) || corr != t->corr) {
    diag("  response header: err %d, correlation id %d, want %d", rd->err,
         corr, t->corr);
    frame_bad++;
  }
  return rc;
}

/* The body must decode and use up the frame exactly. */
static bool body_done(dc_rd_t *rd, int dec_err, const char *what) {
  if (dec_err || rd->err || dc_rd_remaining(rd)) {
    diag("  %s response: decode err %d, %zu bytes left over", what,
         dec_err ? dec_err : rd->err, dc_rd_remaining(rd));
    frame_bad++;
    return false;
  }
  return true;
}

/* ---- per-API calls ------------------------------------------------------ */

static int call_apiversions(tb_t *t, int16_t v, const dc_apiversions_req_t *req,
                            int16_t dec_v, dc_apiversions_resp_t *resp) {
  dc_buf_t body;
  dc_buf_init(&body);
  if (req)
    dc_apiversions_req_encode(&body, v, req);
  else /* a version we cannot encode: some arbitrary body bytes */
    dc_buf_append(&body, "\x02x\x02y\x00", 5);
  dc_rd_t rd;
  int rc = exchange(t, DC_API_API_VERSIONS, v, &body, &rd);
  dc_buf_free(&body);
  if (rc == DC_HANDLE_OK &&
      !body_done(&rd, dc_apiversions_resp_decode(&rd, dec_v, resp),
                 "ApiVersions"))
    return -1;
  return rc;
}

static int call_metadata(tb_t *t, int16_t v, const dc_metadata_req_t *req,
                         dc_metadata_resp_t *resp) {
  dc_buf_t body;
  dc_buf_init(&body);
  dc_metadata_req_encode(&body, v, req);
  dc_rd_t rd;
  int rc = exchange(t, DC_API_METADATA, v, &body, &rd);
  dc_buf_free(&body);
  if (rc == DC_HANDLE_OK &&
      !body_done(&rd, dc_metadata_resp_decode(&rd, v, resp), "Metadata"))
    return -1;
  return rc;
}

static int call_describe(tb_t *t, int16_t v,
                         const dc_describe_configs_req_t *req,
                         dc_describe_configs_resp_t *resp) {
  dc_buf_t body;
  dc_buf_init(&body);
  dc_describe_configs_req_encode(&body, v, req);
  dc_rd_t rd;
  int rc = exchange(t, DC_API_DESCRIBE_CONFIGS, v, &body, &rd);
  dc_buf_free(&body);
  if (rc == DC_HANDLE_OK &&
      !body_done(&rd, dc_describe_configs_resp_decode(&rd, v, resp),
                 "DescribeConfigs"))
    return -1;
  if (rc == DC_HANDLE_OK && resp->n_results != req->n_resources) {
    diag("  %d results for %d resources", resp->n_results, req->n_resources);
    echo_bad++;
    return -1;
  }
  for (int32_t i = 0; rc == DC_HANDLE_OK && i < req->n_resources; i++)
    if (resp->results[i].resource_type != req->resources[i].resource_type ||
        !resp->results[i].resource_name ||
        strcmp(resp->results[i].resource_name,
               req->resources[i].resource_name)) {
      diag("  result %d is not (%d, %s)", i, req->resources[i].resource_type,
           req->resources[i].resource_name);
      echo_bad++;
    }
  return rc;
}

/* One resource, all keys or the given ones. NULL unless answered. */
static const dc_describe_configs_result_t *
describe1(tb_t *t, int16_t v, int8_t type, const char *name, int32_t nkeys,
          const char *const *keys, bool syn, bool doc) {
  static dc_describe_configs_resp_t resp;
  dc_describe_configs_req_resource_t res = {type, S(name), nkeys,
                                            (char **)keys};
  dc_describe_configs_req_t req = {1, &res, syn, doc, 0, false};
  memset(&resp, 0, sizeof(resp));
  if (call_describe(t, v, &req, &resp) != DC_HANDLE_OK)
    return NULL;
  return &resp.results[0];
}

/* The entry named name, or NULL (also NULL, with a diag, if it repeats). */
static const dc_describe_configs_entry_t *
entry(const dc_describe_configs_result_t *r, const char *name) {
  const dc_describe_configs_entry_t *found = NULL;
  for (int32_t i = 0; r && i < r->n_configs; i++)
    if (r->configs[i].name && !strcmp(r->configs[i].name, name)) {
      if (found) {
        diag("  %s listed twice", name);
        return NULL;
      }
      found = &r->configs[i];
    }
  return found;
}

/* The resolved view of a CLIENT entity as "key=value/source;..." (sorted
 * by key, as served), "ERR<code>" on a resource error. Two rotating
 * buffers so two dumps can be compared. */
static const char *dump(tb_t *t, const char *entity) {
  static char bufs[2][2048];
  static int which;
  char *s = bufs[which ^= 1];
  const dc_describe_configs_result_t *r =
      describe1(t, 1, DC_RES_CLIENT, entity, -1, NULL, false, false);
  if (!r)
    return "NO-RESPONSE";
  if (r->error_code) {
    snprintf(s, sizeof(bufs[0]), "ERR%d", r->error_code);
    return s;
  }
  size_t n = 0;
  s[0] = '\0';
  for (int32_t i = 0; i < r->n_configs; i++)
    n += (size_t)snprintf(s + n, sizeof(bufs[0]) - n, "%s%s=%s/%d",
                          i ? ";" : "", r->configs[i].name,
                          r->configs[i].value ? r->configs[i].value : "~",
                          r->configs[i].config_source);
  return s;
}

/* Alter request description: a resource and its configs as strings
 * "<op>key[=value]": op '=' SET, '-' DELETE, '+' APPEND, '~' SUBTRACT,
 * '?' an undefined op (7). No '=value' means a null value. */
typedef struct rspec {
  int8_t type;
  const char *name;
  const char *cfg[12]; /* NULL-terminated */
} rspec_t;

static void parse_cfg(dc_arena_t *a, const char *spec, dc_alter_config_t *c) {
  switch (spec[0]) {
  case '=': c->op = DC_OP_SET; break;
  case '-': c->op = DC_OP_DELETE; break;
  case '+': c->op = DC_OP_APPEND; break;
  case '~': c->op = DC_OP_SUBTRACT; break;
  default: c->op = 7; break;
  }
  const char *kv = spec + 1, *eq = strchr(kv, '=');
  c->name = dc_arena_strndup(a, kv, eq ? (size_t)(eq - kv) : strlen(kv));
  c->value = eq ? dc_arena_strdup(a, eq + 1) : NULL;
}

/* AlterConfigs (api 33) or IncrementalAlterConfigs (44). NULL unless
 * answered; the result is valid until the next call. */
static const dc_alter_configs_resp_t *alter(tb_t *t, int16_t api, int16_t v,
                                            bool validate_only, int32_t nres,
                                            const rspec_t *rs) {
  static dc_alter_configs_resp_t resp;
  dc_arena_reset(&t->build);
  dc_alter_configs_req_t req = {nres, NULL, validate_only};
  req.resources = dc_arena_alloc(&t->build, (size_t)nres * sizeof(*req.resources));
  for (int32_t i = 0; i < nres; i++) {
    dc_alter_resource_t *r = &req.resources[i];
    r->resource_type = rs[i].type;
    r->resource_name = S(rs[i].name);
    while (rs[i].cfg[r->n_configs])
      r->n_configs++;
    r->configs = dc_arena_alloc(&t->build, (size_t)r->n_configs * sizeof(*r->configs));
    for (int32_t k = 0; k < r->n_configs; k++)
      parse_cfg(&t->build, rs[i].cfg[k], &r->configs[k]);
  }
  dc_buf_t body;
  dc_buf_init(&body);
  if (api == DC_API_ALTER_CONFIGS)
    dc_alter_configs_req_encode(&body, v, &req);
  else
    dc_incremental_alter_configs_req_encode(&body, v, &req);
  dc_rd_t rd;
  int rc = exchange(t, api, v, &body, &rd);
  dc_buf_free(&body);
  if (rc != DC_HANDLE_OK) {
    diag("  alter: handle returned %d (%s)", rc, t->errstr);
    return NULL;
  }
  memset(&resp, 0, sizeof(resp));
  int e = api == DC_API_ALTER_CONFIGS
              ? dc_alter_configs_resp_decode(&rd, v, &resp)
              : dc_incremental_alter_configs_resp_decode(&rd, v, &resp);
  if (!body_done(&rd, e, "alter"))
    return NULL;
  if (resp.n_responses != nres) {
    diag("  %d responses for %d resources", resp.n_responses, nres);
    echo_bad++;
    return NULL;
  }
  for (int32_t i = 0; i < nres; i++)
    if (resp.responses[i].resource_type != rs[i].type ||
        !resp.responses[i].resource_name ||
        strcmp(resp.responses[i].resource_name, rs[i].name)) {
      diag("  response %d is not (%d, %s)", i, rs[i].type, rs[i].name);
      echo_bad++;
    }
  return &resp;
}

/* One CLIENT resource; configs are NULL-terminated varargs. Returns the
 * error code (-999 if unanswered); the message goes to t->msg. */
static int alter1(tb_t *t, int16_t api, int16_t v, bool validate_only,
                  const char *entity, ...) {
  rspec_t r = {DC_RES_CLIENT, entity, {NULL}};
  va_list ap;
  va_start(ap, entity);
  for (int i = 0; i < 11; i++)
    if (!(r.cfg[i] = va_arg(ap, const char *)))
      break;
  va_end(ap);
  const dc_alter_configs_resp_t *resp = alter(t, api, v, validate_only, 1, &r);
  if (!resp)
    return -999;
  const char *m = resp->responses[0].error_message;
  snprintf(t->msg, sizeof(t->msg), "%s", m ? m : "~");
  return resp->responses[0].error_code;
}

/* ---- ApiVersions -------------------------------------------------------- */

static void check_ranges(const dc_apiversions_resp_t *r, int16_t v) {
  static const struct {
    int16_t key, min, max;
  } want[] = {{3, 0, 12},  {17, 0, 1}, {18, 0, 3},  {32, 0, 4},   {33, 0, 2},
              {36, 0, 2}, {44, 0, 1}, {58, 0, 0}, {20000, 0, 1},
              {20001, 0, 1}, {20002, 0, 0}, {20003, 0, 1}};
  int bad = 0;
  for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
    int seen = 0;
    for (int32_t i = 0; i < r->n_api_keys; i++)
      if (r->api_keys[i].api_key == want[w].key) {
        seen++;
        if (r->api_keys[i].min_version != want[w].min ||
            r->api_keys[i].max_version != want[w].max) {
          diag("  key %d: %d..%d, want %d..%d", want[w].key,
               r->api_keys[i].min_version, r->api_keys[i].max_version,
               want[w].min, want[w].max);
          bad++;
        }
      }
    if (seen != 1) {
      diag("  key %d listed %d times", want[w].key, seen);
      bad++;
    }
  }
  /* Nothing we do not serve. */
  for (int32_t i = 0; i < r->n_api_keys; i++) {
    int16_t k = r->api_keys[i].api_key;
    if (k != 3 && k != 17 && k != 18 && k != 32 && k != 33 && k != 36 &&
        k != 44 && k != 58 && k != 20000 && k != 20001 && k != 20002 &&
        k != 20003) {
      diag("  unexpected key %d", k);
      bad++;
    }
  }
  ok(bad == 0, "ApiVersions v%d lists the twelve APIs with their ranges", v);
}

static void test_apiversions(void) {
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "broker for ApiVersions"))
    return;
  dc_apiversions_req_t good = {S("dynconf-test"), S("0.1.0")};
  for (int16_t v = 0; v <= 3; v++) {
    dc_apiversions_resp_t r;
    int rc = call_apiversions(&t, v, &good, v, &r);
    if (!ok(rc == DC_HANDLE_OK && r.error_code == 0, "ApiVersions v%d: ok", v))
      continue;
    check_ranges(&r, v);
    if (v >= 1)
      is_int(r.throttle_time_ms, 0, "ApiVersions v%d: throttle 0", v);
  }

  /* KIP-511 software name/version rules (v3). */
  static const struct {
    const char *name, *ver;
    int16_t err;
  } sw[] = {
      {"-bad", "1.0", 42},        {"bad-", "1.0", 42},
      {"", "1.0", 42},            {"ok", "", 42},
      {"ok", "1.0.", 42},         {"o k", "1", 42},
      {"librdkafka", "2.0.2", 0}, {"a", "1", 0},
      {"a.b-c", "1-SNAPSHOT", 0}, {"x_y", "1", 42},
  };
  for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
    dc_apiversions_req_t q = {S(sw[i].name), S(sw[i].ver)};
    dc_apiversions_resp_t r;
    int rc = call_apiversions(&t, 3, &q, 3, &r);
    ok(rc == DC_HANDLE_OK && r.error_code == sw[i].err,
       "ApiVersions v3 name \"%s\" version \"%s\": error %d", sw[i].name,
       sw[i].ver, sw[i].err);
  }

  /* Unsupported versions: v0 body, error 35, key 18's own range. */
  static const int16_t bad_v[] = {4, 9, 100, -1};
  for (size_t i = 0; i < sizeof(bad_v) / sizeof(bad_v[0]); i++) {
    dc_apiversions_resp_t r;
    memset(&r, 0, sizeof(r));
    int rc = call_apiversions(&t, bad_v[i], NULL, 0, &r);
    ok(rc == DC_HANDLE_OK && r.error_code == 35 && r.n_api_keys == 1 &&
           r.api_keys[0].api_key == 18 && r.api_keys[0].min_version == 0 &&
           r.api_keys[0].max_version == 3,
       "ApiVersions v%d: v0 body, error 35, key 18 range 0..3", bad_v[i]);
  }
  tb_free(&t);
}

/* ---- Metadata ----------------------------------------------------------- */

static void test_metadata(void) {
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "broker for Metadata"))
    return;
  for (int16_t v = 0; v <= 12; v++) {
    dc_metadata_resp_t r;
    dc_metadata_req_t all = {-1, NULL, true, false, false};
    memset(&r, 0, sizeof(r));
    int rc = call_metadata(&t, v, &all, &r);
    if (!ok(rc == DC_HANDLE_OK, "Metadata v%d answered", v))
      continue;
    ok(r.n_brokers == 1 && r.brokers[0].node_id == 7 &&
           r.brokers[0].host && !strcmp(r.brokers[0].host, "127.0.0.1") &&
           r.brokers[0].port == 19092,
       "Metadata v%d: one broker, 7 at the advertised 127.0.0.1:19092", v);
    if (v >= 1)
      is_int(r.controller_id, 7, "Metadata v%d: controller is our node", v);
    if (v >= 2)
      is_str(r.cluster_id, "test-cluster", "Metadata v%d: cluster id", v);
    is_int(r.n_topics, 0, "Metadata v%d: all topics = none", v);

    dc_metadata_req_topic_t tp[2] = {{{0}, S("orders")}, {{0}, S("t2")}};
    dc_metadata_req_t named = {2, tp, true, false, false};
    memset(&r, 0, sizeof(r));
    rc = call_metadata(&t, v, &named, &r);
    ok(rc == DC_HANDLE_OK && r.n_topics == 2 && r.topics[0].error_code == 3 &&
           r.topics[1].error_code == 3 && r.topics[0].name &&
           !strcmp(r.topics[0].name, "orders") && r.topics[1].name &&
           !strcmp(r.topics[1].name, "t2") && r.topics[0].n_partitions == 0,
       "Metadata v%d: named topics come back UNKNOWN_TOPIC_OR_PARTITION", v);

    if (v >= 1) {
      dc_metadata_req_t none = {0, NULL, true, false, false};
      memset(&r, 0, sizeof(r));
      rc = call_metadata(&t, v, &none, &r);
      ok(rc == DC_HANDLE_OK && r.n_topics == 0 && r.n_brokers == 1,
         "Metadata v%d: empty topic list, no topics", v);
    }
  }
  tb_free(&t);

  /* With dc_broker_opts_init()'s defaults: node 1, cluster "dynconf". */
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  ok(o.node_id == 1 && !strcmp(o.cluster_id, "dynconf") &&
         o.session_timeout_min_ms == 6000 &&
         o.session_timeout_max_ms == 1800000 && !o.allow_unknown_keys &&
         o.n_static == 0,
     "dc_broker_opts_init defaults");
  if (ok(tb_init(&t, &o, NULL), "broker with default options")) {
    dc_metadata_req_t all = {-1, NULL, true, false, false};
    dc_metadata_resp_t r;
    memset(&r, 0, sizeof(r));
    ok(call_metadata(&t, 4, &all, &r) == DC_HANDLE_OK && r.n_brokers == 1 &&
           r.brokers[0].node_id == 1 && r.controller_id == 1 &&
           r.cluster_id && !strcmp(r.cluster_id, "dynconf"),
       "Metadata v4: node 1 is the controller of cluster dynconf");
    const dc_describe_configs_result_t *d =
        describe1(&t, 1, DC_RES_BROKER, "1", -1, NULL, true, false);
    ok(d && d->error_code == 0 && d->n_configs == 0,
       "BROKER 1 with no static settings: empty, error 0");
    d = describe1(&t, 1, DC_RES_BROKER, "7", -1, NULL, true, false);
    ok(d && d->error_code == 42, "BROKER 7 on node 1: INVALID_REQUEST");
    tb_free(&t);
  }
}

/* ---- dispatch, framing, malformed input -------------------------------- */

/* True when the broker closes on body under (key, v), with a reason and
 * without writing anything. */
static bool closes(tb_t *t, int16_t key, int16_t v, const dc_buf_t *body) {
  dc_buf_t req;
  build_payload(t, &req, key, v, body);
  int rc = handle_raw(t, req.data + 4, req.len - 4);
  dc_buf_free(&req);
  return rc == DC_HANDLE_CLOSE && t->out.len == 3 && t->errstr[0];
}

static void test_dispatch(void) {
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "broker for dispatch"))
    return;
  int fb = frame_bad;

  /* Correlation ids, including negative and extreme ones. */
  static const int32_t corrs[] = {0, -1, INT32_MAX, INT32_MIN, 42};
  for (size_t i = 0; i < sizeof(corrs) / sizeof(corrs[0]); i++) {
    t.corr = corrs[i];
    dc_apiversions_resp_t r;
    call_apiversions(&t, 0, &(dc_apiversions_req_t){0}, 0, &r);
    const dc_describe_configs_result_t *d =
        describe1(&t, 4, DC_RES_CLIENT, "c", -1, NULL, true, true);
    ok(d != NULL, "correlation id %d round trip", corrs[i]);
  }
  is_int(frame_bad - fb, 0, "correlation ids echoed in flexible and classic");

  /* Unknown API keys and versions close without writing anything. */
  static const struct {
    int16_t key, v;
  } closers[] = {{0, 0},  {1, 4},  {999, 0}, {-1, 0},  {32, 5},
                 {32, -1}, {33, 3}, {44, 2},  {3, 13}, {32, 100},
                 {11, 0}}; /* JoinGroup: only with GSSAPI */
  dc_buf_t zeros;
  dc_buf_init(&zeros);
  dc_buf_append(&zeros, "\0\0\0\0\0\0\0\0", 8);
  for (size_t i = 0; i < sizeof(closers) / sizeof(closers[0]); i++)
    ok(closes(&t, closers[i].key, closers[i].v, &zeros),
       "key %d v%d: close, nothing written (%s)", closers[i].key,
       closers[i].v, t.errstr);
  dc_buf_free(&zeros);

  /* Every strict prefix of valid requests closes, writing nothing. */
  dc_buf_t bodies[6];
  static const struct {
    int16_t key, v;
  } full[] = {{32, 1}, {32, 4}, {44, 1}, {33, 0}, {3, 9}, {18, 3}};
  for (int i = 0; i < 6; i++)
    dc_buf_init(&bodies[i]);
  dc_describe_configs_req_resource_t dres = {9, S("c1"), 1,
                                             (char *[]){S("acks")}};
  dc_describe_configs_req_t dreq = {1, &dres, true, true, 0, false};
  dc_describe_configs_req_encode(&bodies[0], 1, &dreq);
  dc_describe_configs_req_encode(&bodies[1], 4, &dreq);
  dc_alter_config_t ac = {S("acks"), DC_OP_SET, S("all")};
  dc_alter_resource_t ares = {9, S("c1"), 1, &ac};
  dc_alter_configs_req_t areq = {1, &ares, false};
  dc_incremental_alter_configs_req_encode(&bodies[2], 1, &areq);
  dc_alter_configs_req_encode(&bodies[3], 0, &areq);
  dc_metadata_req_topic_t mt = {{0}, S("x")};
  dc_metadata_req_t mreq = {1, &mt, true, false, false};
  dc_metadata_req_encode(&bodies[4], 9, &mreq);
  dc_apiversions_req_t avreq = {S("dynconf"), S("1")};
  dc_apiversions_req_encode(&bodies[5], 3, &avreq);
  for (int i = 0; i < 6; i++) {
    dc_buf_t req;
    build_payload(&t, &req, full[i].key, full[i].v, &bodies[i]);
    const uint8_t *p = req.data + 4;
    size_t len = req.len - 4;
    int rc = handle_raw(&t, p, len);
    ok(rc == DC_HANDLE_OK, "key %d v%d: the full request is answered",
       full[i].key, full[i].v);
    int bad = 0;
    for (size_t n = 0; n < len; n++) {
      rc = handle_raw(&t, p, n);
      if (rc != DC_HANDLE_CLOSE || t.out.len != 3 || !t.errstr[0]) {
        if (!bad)
          diag("  prefix of %zu/%zu bytes: rc %d", n, len, rc);
        bad++;
      }
    }
    ok(bad == 0, "key %d v%d: all %zu truncations close with a reason",
       full[i].key, full[i].v, len);
    dc_buf_free(&req);
    dc_buf_free(&bodies[i]);
  }

  /* Malformed but complete bodies. */
  dc_buf_t body;
  dc_buf_init(&body);
  dc_describe_configs_req_encode(&body, 1, &dreq);
  body.data[body.len - 1] = 2; /* include_synonyms = 2: not a boolean */
  ok(closes(&t, 32, 1, &body), "DescribeConfigs v1, bad boolean: close (%s)",
     t.errstr);
  dc_buf_clear(&body);
  dc_wr_i32(&body, -5);
  ok(closes(&t, 33, 0, &body), "AlterConfigs v0, count -5: close (%s)",
     t.errstr);
  dc_buf_clear(&body);
  dc_wr_i32(&body, 1000000);
  ok(closes(&t, 32, 0, &body), "DescribeConfigs v0 claiming 10^6 resources: "
                               "close (%s)", t.errstr);
  dc_buf_free(&body);

  /* errstr may be NULL. */
  {
    uint8_t junk[] = {0, 99, 0, 0};
    dc_buf_clear(&t.out);
    int rc = dc_broker_handle(t.b, &t.conn, junk, sizeof(junk), &t.scratch,
                              &t.out, NULL, 0);
    dc_arena_reset(&t.scratch);
    ok(rc == DC_HANDLE_CLOSE && t.out.len == 0,
       "truncated header with errstr NULL: close");
  }

  /* Two requests in a row: out holds two frames back to back. */
  {
    dc_buf_t out2, r1, r2, b2;
    dc_buf_init(&out2);
    dc_buf_init(&b2);
    build_payload(&t, &r1, 18, 0, NULL);
    dc_metadata_req_t m0 = {-1, NULL, true, false, false};
    dc_metadata_req_encode(&b2, 1, &m0);
    t.corr = 5;
    build_payload(&t, &r2, 3, 1, &b2);
    int rc1 = dc_broker_handle(t.b, &t.conn, r1.data + 4, r1.len - 4, &t.scratch,
                               &out2, NULL, 0);
    dc_arena_reset(&t.scratch);
    size_t first = out2.len;
    int rc2 = dc_broker_handle(t.b, &t.conn, r2.data + 4, r2.len - 4, &t.scratch,
                               &out2, NULL, 0);
    dc_arena_reset(&t.scratch);
    ok(rc1 == DC_HANDLE_OK && rc2 == DC_HANDLE_OK && first > 8 &&
           be32(out2.data) == first - 4 &&
           be32(out2.data + first) == out2.len - first - 4 &&
           be32(out2.data + first + 4) == 5,
       "two requests: two complete frames appended in order");
    dc_buf_free(&out2);
    dc_buf_free(&r1);
    dc_buf_free(&r2);
    dc_buf_free(&b2);
  }
  tb_free(&t);
}

/* ---- DescribeConfigs ---------------------------------------------------- */

/* Checks one entry against what SPEC §2 says for version v. own/def are
 * the client's own and the default's value (NULL = unset); src_own is the
 * source of an own value (7, or 8 when describing <default>). */
static bool entry_ok(const dc_describe_configs_entry_t *e, int16_t v, bool syn,
                     bool doc, const char *key, const char *own,
                     const char *def, int8_t src_own) {
  if (!e) {
    diag("  %s missing", key);
    return false;
  }
  const char *want = own ? own : def;
  int8_t src = own ? src_own : DC_SRC_DYNAMIC_DEFAULT;
  bool good = true;
#define CHECK(c, ...)                                                          \
  do {                                                                         \
    if (!(c)) {                                                                \
      diag("  " __VA_ARGS__);                                                  \
      good = false;                                                            \
    }                                                                          \
  } while (0)
  CHECK(e->value && !strcmp(e->value, want), "%s value %s, want %s", key,
        e->value ? e->value : "~", want);
  CHECK(!e->read_only && !e->is_sensitive, "%s read_only/is_sensitive", key);
  if (v == 0)
    CHECK(e->is_default == !own, "%s is_default %d", key, e->is_default);
  else
    CHECK(e->config_source == src, "%s source %d, want %d", key,
          e->config_source, src);
  int32_t nsyn = v >= 1 && syn ? (own ? 1 : 0) + (def ? 1 : 0) : 0;
  CHECK(e->n_synonyms == nsyn, "%s %d synonyms, want %d", key, e->n_synonyms,
        nsyn);
  if (e->n_synonyms == nsyn && nsyn) {
    int i = 0;
    if (own) {
      CHECK(!strcmp(e->synonyms[0].name, key) && e->synonyms[0].value &&
                !strcmp(e->synonyms[0].value, own) &&
                e->synonyms[0].source == src_own,
            "%s first synonym is not its own value", key);
      i = 1;
    }
    if (def)
      CHECK(!strcmp(e->synonyms[i].name, key) && e->synonyms[i].value &&
                !strcmp(e->synonyms[i].value, def) &&
                e->synonyms[i].source == DC_SRC_DYNAMIC_DEFAULT,
            "%s synonym %d is not the default (source 8)", key, i);
  }
  const dc_schema_entry_t *se = dc_schema_find(key);
  int8_t type = v >= 3 ? (int8_t)(se ? se->type : DC_TYPE_STRING) : 0;
  CHECK(e->config_type == type, "%s config_type %d, want %d", key,
        e->config_type, type);
  const char *wdoc = v >= 3 && doc && se ? se->doc : NULL;
  CHECK((!wdoc && !e->documentation) ||
            (wdoc && e->documentation && !strcmp(wdoc, e->documentation)),
        "%s documentation %s", key, e->documentation ? "wrong" : "missing");
#undef CHECK
  return good;
}

static void describe_version(tb_t *t, int16_t v) {
  /* State: <default> acks=1 linger.ms=5 session.timeout.ms=30000;
   * c1 acks=all heartbeat.interval.ms=3000 debug=broker. */
  static const struct {
    const char *key, *own, *def;
  } c1[] = {{"acks", "all", "1"},
            {"debug", "broker", NULL},
            {"heartbeat.interval.ms", "3000", NULL},
            {"linger.ms", NULL, "5"},
            {"session.timeout.ms", NULL, "30000"}};
  for (int mode = 0; mode < 4; mode++) {
    bool syn = mode & 1, doc = mode & 2;
    if ((v < 1 && syn) || (v < 3 && doc))
      continue; /* not on the wire at this version */
    const dc_describe_configs_result_t *r =
        describe1(t, v, DC_RES_CLIENT, "c1", -1, NULL, syn, doc);
    int bad = !r || r->error_code || r->n_configs != 5;
    for (size_t i = 0; !bad && i < 5; i++)
      bad += !entry_ok(entry(r, c1[i].key), v, syn, doc, c1[i].key,
                       c1[i].own, c1[i].def, DC_SRC_DYNAMIC_CLIENT);
    ok(bad == 0,
       "v%d syn=%d doc=%d: c1 own values source 7, inherited 8, synonyms, "
       "types, docs",
       v, syn, doc);

    /* <default> lists its own values with source 8; a client with
     * nothing set inherits them all. */
    for (int who = 0; who < 2; who++) {
      r = describe1(t, v, DC_RES_CLIENT, who ? "fresh" : "<default>", -1,
                    NULL, syn, doc);
      bad = !r || r->error_code || r->n_configs != 3;
      for (size_t i = 0; !bad && i < 5; i++)
        if (c1[i].def)
          bad += !entry_ok(entry(r, c1[i].key), v, syn, doc, c1[i].key,
                           who ? NULL : c1[i].def, who ? c1[i].def : NULL, 8);
      ok(bad == 0, "v%d syn=%d doc=%d: %s", v, syn, doc,
         who ? "a client without overrides gets the defaults, source 8"
             : "<default> lists its own values, source 8");
    }
  }
  const dc_describe_configs_result_t *r;
  int bad;

  /* The key filter. */
  static const char *const keys[] = {"acks", "linger.ms", "no.such.key"};
  r = describe1(t, v, DC_RES_CLIENT, "c1", 3, keys, false, false);
  ok(r && r->error_code == 0 && r->n_configs == 2 && entry(r, "acks") &&
         entry(r, "linger.ms") && !entry(r, "debug"),
     "v%d: ConfigurationKeys filter returns just acks and linger.ms", v);
  r = describe1(t, v, DC_RES_CLIENT, "c1", 1, (const char *const[]){"x"},
                false, false);
  ok(r && r->error_code == 0 && r->n_configs == 0,
     "v%d: filter on an unset key: empty, no error", v);

  /* Kafka treats a null and an EMPTY configuration_keys array alike as
   * "all keys"; some kafkajs releases send []. */
  r = describe1(t, v, DC_RES_CLIENT, "c1", 0, NULL, false, false);
  ok(r && r->error_code == 0 && r->n_configs == 5,
     "v%d: empty ConfigurationKeys array means all keys, as in Kafka",
     v);

  /* BROKER resource: the static settings, read-only, source 4. */
  for (int syn = 0; syn <= (v >= 1); syn++) {
    r = describe1(t, v, DC_RES_BROKER, "7", -1, NULL, syn, false);
    bad = !r || r->error_code || r->n_configs != 2;
    for (int i = 0; !bad && i < 2; i++) {
      const dc_describe_configs_entry_t *e = entry(r, static_keys[i]);
      if (!e || !e->value || strcmp(e->value, static_vals[i]) ||
          !e->read_only || e->is_sensitive ||
          (v == 0 && e->is_default) ||
          (v >= 1 && e->config_source != DC_SRC_STATIC_BROKER) ||
          (v >= 3 && e->config_type != DC_TYPE_STRING) ||
          e->n_synonyms != (syn ? 1 : 0) ||
          (syn && (e->synonyms[0].source != DC_SRC_STATIC_BROKER ||
                   strcmp(e->synonyms[0].value, static_vals[i])))) {
        diag("  BROKER %s wrong", static_keys[i]);
        bad++;
      }
    }
    ok(bad == 0, "v%d syn=%d: BROKER 7 returns static keys read-only, source 4",
       v, syn);
  }
  r = describe1(t, v, DC_RES_BROKER, "7", 1, (const char *const[]){"data.dir"},
                false, false);
  ok(r && r->error_code == 0 && r->n_configs == 1 && entry(r, "data.dir"),
     "v%d: BROKER honours the key filter", v);
  r = describe1(t, v, DC_RES_BROKER, "1", -1, NULL, false, false);
  ok(r && r->error_code == 42 && r->n_configs == 0 && r->error_message,
     "v%d: BROKER with another node id: INVALID_REQUEST with a message", v);

  /* Several resources: each answered in order, errors per resource. */
  dc_describe_configs_req_resource_t res[] = {
      {DC_RES_TOPIC, S("orders"), -1, NULL},
      {DC_RES_CLIENT, S("c1"), -1, NULL},
      {DC_RES_BROKER, S("7"), -1, NULL},
      {0, S("zero"), -1, NULL},
      {DC_RES_CLIENT, S("nobody"), -1, NULL},
      {16, S("group-ish"), -1, NULL},
  };
  dc_describe_configs_req_t req = {6, res, false, false, 0, false};
  dc_describe_configs_resp_t resp;
  memset(&resp, 0, sizeof(resp));
  int eb = echo_bad;
  int rc = call_describe(t, v, &req, &resp);
  ok(rc == DC_HANDLE_OK && echo_bad == eb,
     "v%d: six resources answered in order, type and name echoed", v);
  if (rc == DC_HANDLE_OK) {
    static const int16_t want_err[] = {42, 0, 0, 42, 0, 42};
    static const int32_t want_n[] = {0, 5, 2, 0, 3, 0};
    bad = 0;
    for (int i = 0; i < 6; i++) {
      const dc_describe_configs_result_t *x = &resp.results[i];
      if (x->error_code != want_err[i] || x->n_configs != want_n[i] ||
          (want_err[i] && (!x->error_message || !x->error_message[0]))) {
        diag("  resource %d: error %d, %d configs", i, x->error_code,
             x->n_configs);
        bad++;
      }
    }
    ok(bad == 0, "v%d: TOPIC/other types INVALID_REQUEST with a message, "
                 "the others answered",
       v);
  }

  /* SPEC §2: an entity name is 1..255 bytes, on describe as on alter. */
  char longname[257];
  memset(longname, 'n', 256);
  longname[256] = '\0';
  r = describe1(t, v, DC_RES_CLIENT, "", -1, NULL, false, false);
  ok(r && r->error_code == 42, "v%d: describe of an empty client-id: "
                               "INVALID_REQUEST", v);
  r = describe1(t, v, DC_RES_CLIENT, longname, -1, NULL, false, false);
  ok(r && r->error_code == 42, "v%d: describe of a 256-byte client-id: "
                               "INVALID_REQUEST", v);
  longname[255] = '\0';
  r = describe1(t, v, DC_RES_CLIENT, longname, -1, NULL, false, false);
  ok(r && r->error_code == 0 && r->n_configs == 3,
     "v%d: describe of a 255-byte client-id: the defaults", v);
}

static void test_describe(void) {
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "broker for DescribeConfigs"))
    return;
  /* Before anything is set: unknown clients (and <default>) are empty
   * lists with error NONE and no message, at every version. */
  for (int16_t v = 0; v <= 4; v++) {
    const char *names[] = {"nobody-here", "<default>"};
    for (int i = 0; i < 2; i++) {
      const dc_describe_configs_result_t *r =
          describe1(&t, v, DC_RES_CLIENT, names[i], -1, NULL, v >= 1, v >= 3);
      ok(r && r->error_code == 0 && r->n_configs == 0 && !r->error_message,
         "v%d: %s with nothing set: empty, error 0", v, names[i]);
    }
  }
  is_int(alter1(&t, 44, 1, false, "<default>", "=acks=1",
                "=session.timeout.ms=30000", "=linger.ms=5", NULL),
         0, "set <default>");
  is_int(alter1(&t, 44, 1, false, "c1", "=acks=all",
                "=heartbeat.interval.ms=3000", "=debug=broker", NULL),
         0, "set c1");
  for (int16_t v = 0; v <= 4; v++)
    describe_version(&t, v);
  tb_free(&t);
}

/* ---- AlterConfigs / IncrementalAlterConfigs: shared rules --------------- */

/* In the alter tests: one CLIENT alter at (api, v) whose error must be
 * want (the description is made from the arguments), and a resolved-view
 * check. Both expect tb_t t, api, v and the label pre in scope. */
#define AL(want, vo, entity, ...)                                              \
  is_int(alter1(&t, api, v, vo, entity, __VA_ARGS__, NULL), want,              \
         "%s:%s %s %s -> %d", pre, (vo) ? " validate_only" : "",               \
         *(entity) ? (entity) : "\"\"", #__VA_ARGS__, want)
#define DUMP(entity, want)                                                     \
  is_str(dump(&t, entity), want, "%s: %s resolves to %s", pre, entity,         \
         *(want) ? (want) : "nothing")
#define HAS(s, part) ok(strstr(s, part) != NULL, "  message names %s: %s", part, s)

/* Runs every rule both APIs share at (api, v), on fresh brokers.
 * AlterConfigs replaces the whole set, so every request below names the
 * complete set it wants. */
static void alter_common(int16_t api, int16_t v) {
  char pre[40];
  snprintf(pre, sizeof(pre), "%s v%d",
           api == DC_API_ALTER_CONFIGS ? "AlterConfigs"
                                       : "IncrementalAlterConfigs", v);
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "%s: broker", pre))
    return;

  AL(0, false, "c1", "=acks=all");
  is_str(t.msg, "~", "%s: no error message on success", pre);
  DUMP("c1", "acks=all/7");

  /* Schema validation. */
  AL(40, false, "c1", "=no.such.key=1");
  HAS(t.msg, "no.such.key");
  AL(40, false, "c1", "=acks=7");
  HAS(t.msg, "acks");
  AL(40, false, "c1", "=linger.ms=soon");
  AL(40, false, "c1", "=debug=broker,,topic");
  DUMP("c1", "acks=all/7");

  /* Server bounds on session.timeout.ms (default 6000..1800000). */
  AL(40, false, "s1", "=session.timeout.ms=5999");
  HAS(t.msg, "session.timeout.ms");
  AL(0, false, "s1", "=session.timeout.ms=6000");
  AL(0, false, "s1", "=session.timeout.ms=1800000");
  AL(40, false, "s1", "=session.timeout.ms=1800001");
  AL(40, false, "s1", "=session.timeout.ms=1");
  AL(40, false, "s1", "=session.timeout.ms=3600000");
  DUMP("s1", "session.timeout.ms=1800000/7");

  /* heartbeat < session: own values, then the inherited session. */
  AL(40, false, "h1", "=session.timeout.ms=10000", "=heartbeat.interval.ms=10000");
  HAS(t.msg, "heartbeat.interval.ms");
  AL(0, false, "h1", "=session.timeout.ms=10000", "=heartbeat.interval.ms=9999");
  AL(0, false, "<default>", "=session.timeout.ms=10000");
  AL(40, false, "h2", "=heartbeat.interval.ms=10000");
  AL(40, false, "h2", "=heartbeat.interval.ms=12000");
  AL(0, false, "h2", "=heartbeat.interval.ms=9999");
  /* An own session is what counts, not the default's. */
  AL(0, false, "h3", "=session.timeout.ms=20000", "=heartbeat.interval.ms=15000");
  DUMP("h2", "heartbeat.interval.ms=9999/7;session.timeout.ms=10000/8");
  /* A <default> change is checked against every client that overrides
   * one half of the pair: h2 has its own heartbeat 9999. */
  AL(40, false, "<default>", "=session.timeout.ms=9000");
  HAS(t.msg, "h2");
  DUMP("h2", "heartbeat.interval.ms=9999/7;session.timeout.ms=10000/8");
  /* h3 overrides both halves: the default does not reach it. */
  AL(0, false, "<default>", "=session.timeout.ms=12000");
  /* Drop the default again so the dumps below show only own values. */
  if (api == DC_API_ALTER_CONFIGS)
    is_int(alter1(&t, api, v, false, "<default>", NULL), 0,
           "%s: <default> emptied", pre);
  else
    AL(0, false, "<default>", "-session.timeout.ms");
  DUMP("<default>", "");

  /* Entity names. */
  char name[300];
  memset(name, 'x', 256);
  name[256] = '\0';
  AL(42, false, "", "=acks=1");
  is_int(alter1(&t, api, v, false, name, "=acks=1", NULL), 42,
         "%s: 256-byte client-id INVALID_REQUEST", pre);
  name[255] = '\0';
  is_int(alter1(&t, api, v, false, name, "=acks=1", NULL), 0,
         "%s: 255-byte client-id accepted", pre);
  is_str(dump(&t, name), "acks=1/7", "%s: and stored", pre);

  /* Other resource types, per resource; the CLIENT one still applies. */
  rspec_t mix[] = {
      {DC_RES_BROKER, "7", {"=listeners=PLAINTEXT://:1", NULL}},
      {DC_RES_TOPIC, "orders", {"=retention.ms=1", NULL}},
      {DC_RES_CLIENT, "c4", {"=acks=0", NULL}},
      {0, "zero", {"=acks=0", NULL}},
  };
  int eb = echo_bad;
  const dc_alter_configs_resp_t *r = alter(&t, api, v, false, 4, mix);
  ok(r && echo_bad == eb, "%s: four resources, type and name echoed", pre);
  for (int i = 0; r && i < 4; i++) {
    const dc_alter_result_t *x = &r->responses[i];
    if (i == 2)
      ok(x->error_code == 0, "%s: CLIENT c4 in the same request succeeds", pre);
    else
      ok(x->error_code == 42 && x->error_message && x->error_message[0],
         "%s: %s resource refused, INVALID_REQUEST with a message: %s", pre,
         i == 0 ? "BROKER" : i == 1 ? "TOPIC" : "type 0",
         x->error_message ? x->error_message : "~");
  }
  ok(r && r->responses[3].error_message &&
         strstr(r->responses[3].error_message, "librdkafka 2.10 and later"),
     "%s: type 0 says which clients send it", pre);
  DUMP("c4", "acks=0/7");
  const dc_describe_configs_result_t *br =
      describe1(&t, 1, DC_RES_BROKER, "7", 1,
                (const char *const[]){"listeners"}, false, false);
  ok(br && br->n_configs == 1 && !strcmp(br->configs[0].value, static_vals[0]),
     "%s: BROKER value unchanged", pre);

  /* A resource listed twice: INVALID_REQUEST for each copy, nothing
   * applied; the same name under another type is not a duplicate. */
  rspec_t twice[] = {
      {DC_RES_CLIENT, "c5", {"=acks=1", NULL}},
      {DC_RES_CLIENT, "c5", {"=acks=0", NULL}},
      {DC_RES_TOPIC, "c6", {"=acks=0", NULL}},
      {DC_RES_CLIENT, "c6", {"=acks=0", NULL}},
  };
  r = alter(&t, api, v, false, 4, twice);
  ok(r && r->responses[0].error_code == 42 && r->responses[1].error_code == 42,
     "%s: resource listed twice: INVALID_REQUEST for both", pre);
  ok(r && r->responses[2].error_code == 42 && r->responses[3].error_code == 0,
     "%s: same name, other type: not a duplicate", pre);
  DUMP("c5", "");
  DUMP("c6", "acks=0/7");

  /* Key twice in a resource; null value on SET; empty key. */
  AL(42, false, "c7", "=acks=1", "=acks=0");
  HAS(t.msg, "acks");
  AL(42, false, "c7", "=acks");
  AL(42, false, "c7", "==1");
  DUMP("c7", "");

  /* All or nothing per resource; the other resource applies. */
  AL(0, false, "c8", "=acks=1", "=linger.ms=1");
  rspec_t aon[] = {
      {DC_RES_CLIENT, "c8", {"=acks=0", "=linger.ms=2", "=batch.size=0", NULL}},
      {DC_RES_CLIENT, "c9", {"=acks=all", NULL}},
  };
  r = alter(&t, api, v, false, 2, aon);
  ok(r && r->responses[0].error_code == 40 && r->responses[1].error_code == 0,
     "%s: bad batch.size fails c8 only", pre);
  DUMP("c8", "acks=1/7;linger.ms=1/7"); /* no partial update */
  DUMP("c9", "acks=all/7");

  /* validate_only: full validation, nothing stored. */
  AL(0, true, "c10", "=acks=0");
  DUMP("c10", "");
  AL(40, true, "c10", "=acks=7");
  AL(40, true, "c10", "=session.timeout.ms=10000", "=heartbeat.interval.ms=10000");
  AL(42, true, "c8", "=acks=0", "=acks=1");
  AL(0, true, "<default>", "=acks=0");
  DUMP("<default>", "");
  DUMP("c8", "acks=1/7;linger.ms=1/7");
  tb_free(&t);

  /* Opt-in to relaying unknown keys; known keys still validated. */
  dc_broker_opts_t o;
  tb_opts(&o);
  o.allow_unknown_keys = true;
  if (ok(tb_init(&t, &o, NULL), "%s: allow_unknown_keys broker", pre)) {
    AL(0, false, "u1", "=acks=1", "=custom.app.setting=x y z");
    DUMP("u1", "acks=1/7;custom.app.setting=x y z/7");
    const dc_describe_configs_result_t *d = describe1(
        &t, 3, DC_RES_CLIENT, "u1", 1,
        (const char *const[]){"custom.app.setting"}, false, true);
    ok(d && d->n_configs == 1 && d->configs[0].config_type == DC_TYPE_STRING &&
           !d->configs[0].documentation,
       "%s: unknown key described as STRING without documentation", pre);
    AL(40, false, "u1", "=acks=7");
    tb_free(&t);
  }

  /* Custom session bounds; the rule against a lowered session. */
  tb_opts(&o);
  o.session_timeout_min_ms = 1000;
  o.session_timeout_max_ms = 10000;
  if (ok(tb_init(&t, &o, NULL), "%s: bounds 1000..10000 broker", pre)) {
    AL(40, false, "b1", "=session.timeout.ms=999");
    HAS(t.msg, "1000..10000");
    AL(0, false, "b1", "=session.timeout.ms=1000");
    AL(0, false, "b1", "=session.timeout.ms=10000");
    AL(40, false, "b1", "=session.timeout.ms=10001");
    AL(0, false, "b1", "=session.timeout.ms=6000");
    AL(40, false, "b1", "=session.timeout.ms=1800000");
    AL(0, false, "b2", "=session.timeout.ms=5000", "=heartbeat.interval.ms=3000");
    if (api == DC_API_ALTER_CONFIGS)
      AL(40, false, "b2", "=session.timeout.ms=3000",
         "=heartbeat.interval.ms=3000");
    else /* lowering the session to the stored heartbeat */
      AL(40, false, "b2", "=session.timeout.ms=3000");
    AL(0, false, "<default>", "=heartbeat.interval.ms=4000");
    AL(40, false, "b3", "=session.timeout.ms=4000"); /* == inherited hb */
    AL(0, false, "b3", "=session.timeout.ms=4001");
    tb_free(&t);
  }
}

/* ---- AlterConfigs: full replacement ------------------------------------ */

static void alter_full(int16_t v) {
  const int16_t api = DC_API_ALTER_CONFIGS;
  char pre[40];
  snprintf(pre, sizeof(pre), "AlterConfigs v%d", v);
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "%s: broker", pre))
    return;
  AL(0, false, "c1", "=acks=all", "=linger.ms=5");
  AL(0, false, "c1", "=debug=broker");
  DUMP("c1", "debug=broker/7"); /* keys not sent are removed */
  AL(0, false, "<default>", "=acks=1");
  is_int(alter1(&t, api, v, false, "c1", NULL), 0, "%s: c1 with no configs",
         pre);
  DUMP("c1", "acks=1/8"); /* emptied: inherits <default> */
  AL(0, false, "c1", "=acks=0");
  is_int(alter1(&t, api, v, true, "c1", NULL), 0,
         "%s: validate_only emptying", pre);
  DUMP("c1", "acks=0/7");
  tb_free(&t);
}

/* ---- IncrementalAlterConfigs: KIP-339 ----------------------------------- */

static void alter_incremental(int16_t v) {
  const int16_t api = DC_API_INCREMENTAL_ALTER_CONFIGS;
  char pre[40];
  snprintf(pre, sizeof(pre), "IncrementalAlterConfigs v%d", v);
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "%s: broker", pre))
    return;
  AL(0, false, "c1", "=acks=all");
  AL(0, false, "c1", "=linger.ms=5");
  DUMP("c1", "acks=all/7;linger.ms=5/7"); /* SET keeps the other keys */
  AL(0, false, "c1", "-acks");
  DUMP("c1", "linger.ms=5/7");
  AL(0, false, "c1", "-acks"); /* DELETE of an absent key succeeds */
  AL(0, false, "c1", "-no.such.key");
  AL(0, false, "c1", "-linger.ms=ignored"); /* DELETE's value is ignored */
  DUMP("c1", "");

  /* DELETE reverts to the default. */
  AL(0, false, "<default>", "=acks=1", "=partition.assignment.strategy=range");
  AL(0, false, "c1", "=acks=all");
  AL(0, false, "c1", "-acks");
  DUMP("c1", "acks=1/8;partition.assignment.strategy=range/8");

  /* APPEND adds only missing items, in order; SUBTRACT removes present
   * ones and ignores absent ones; nothing left removes the key. */
  AL(0, false, "c1", "+debug=broker");
  AL(0, false, "c1", "+debug=topic,broker");
  AL(0, false, "c1", "+debug=msg,msg");
  DUMP("c1", "acks=1/8;debug=broker,topic,msg/7;"
             "partition.assignment.strategy=range/8");
  AL(0, false, "c1", "~debug=topic,cgrp");
  DUMP("c1", "acks=1/8;debug=broker,msg/7;"
             "partition.assignment.strategy=range/8");
  AL(0, false, "c1", "~debug=msg,broker");
  DUMP("c1", "acks=1/8;partition.assignment.strategy=range/8");

  /* Lists start from the inherited default when there is no own value. */
  AL(0, false, "c1", "+partition.assignment.strategy=roundrobin");
  DUMP("c1", "acks=1/8;partition.assignment.strategy=range,roundrobin/7");
  AL(0, false, "c1", "+partition.assignment.strategy=roundrobin,range");
  DUMP("c1", "acks=1/8;partition.assignment.strategy=range,roundrobin/7");
  AL(0, false, "c1", "~partition.assignment.strategy=range");
  DUMP("c1", "acks=1/8;partition.assignment.strategy=roundrobin/7");
  AL(0, false, "c1", "~partition.assignment.strategy=roundrobin");
  DUMP("c1", "acks=1/8;partition.assignment.strategy=range/8");
  AL(0, false, "c2", "~partition.assignment.strategy=cooperative-sticky");
  DUMP("c2", "acks=1/8;partition.assignment.strategy=range/7");

  /* Type and validity of APPEND/SUBTRACT; request rules. */
  AL(40, false, "c3", "+acks=1");
  AL(40, false, "c3", "~session.timeout.ms=10000");
  AL(40, false, "c3", "+no.such.key=a");
  AL(40, false, "c3", "+debug=bogus");
  HAS(t.msg, "bogus");
  AL(42, false, "c3", "+debug");
  AL(42, false, "c3", "~debug");
  AL(42, false, "c3", "?acks=1"); /* undefined op */
  AL(42, false, "c3", "=acks=0", "+acks=1");
  AL(40, false, "c3", "=acks=0", "+session.timeout.ms=7000");
  DUMP("c3", "acks=1/8;partition.assignment.strategy=range/8");

  /* A DELETE that would expose an inherited value breaking the rule. */
  AL(40, false, "<default>", "=session.timeout.ms=6000",
     "=heartbeat.interval.ms=20000");
  AL(0, false, "<default>", "=session.timeout.ms=6000");
  AL(0, false, "h1", "=session.timeout.ms=30000", "=heartbeat.interval.ms=10000");
  AL(40, false, "h1", "-session.timeout.ms"); /* would inherit 6000 */
  AL(0, false, "<default>", "-session.timeout.ms",
     "=heartbeat.interval.ms=40000");
  AL(40, false, "h1", "-heartbeat.interval.ms"); /* would inherit 40000 */
  DUMP("h1", "acks=1/8;heartbeat.interval.ms=10000/7;"
             "partition.assignment.strategy=range/8;session.timeout.ms=30000/7");
  AL(0, false, "<default>", "-heartbeat.interval.ms");

  /* All four ops in one resource. SUBTRACT takes c4's inherited "range"
   * to an empty list, i.e. no own value, so the default shows through
   * again (see the report). */
  AL(0, false, "c4", "=acks=0", "=linger.ms=1");
  AL(0, false, "c4", "=acks=all", "-linger.ms", "+debug=eos",
     "~partition.assignment.strategy=range");
  DUMP("c4", "acks=all/7;debug=eos/7;partition.assignment.strategy=range/8");
  AL(0, true, "c4", "+debug=msg");
  DUMP("c4", "acks=all/7;debug=eos/7;partition.assignment.strategy=range/8");
  tb_free(&t);
}

/* ---- persistence and audit --------------------------------------------- */

typedef struct hist {
  char text[16384];
  int rows;
  int64_t last_seq;
  bool seq_ok, time_ok;
} hist_t;

static int hist_cb(void *opaque, const dc_audit_row_t *r) {
  hist_t *h = opaque;
  size_t n = strlen(h->text);
  snprintf(h->text + n, sizeof(h->text) - n, "%s|%d|%s|%s|%s|%s|%s|%d\n",
           r->key, r->op, r->old_value ? r->old_value : "~",
           r->new_value ? r->new_value : "~", r->principal, r->peer, r->api,
           r->resource_type);
  if (r->seq <= h->last_seq)
    h->seq_ok = false;
  if (r->time_ms < 1600000000000LL)
    h->time_ok = false;
  h->last_seq = r->seq;
  h->rows++;
  return 0;
}

static void history(dc_store_t *st, const char *entity, hist_t *h) {
  memset(h, 0, sizeof(*h));
  h->seq_ok = h->time_ok = true;
  char err[256] = "";
  if (dc_store_history(st, entity, hist_cb, h, err, sizeof(err)))
    diag("history: %s", err);
}

/* Rows added since `before` rows, as text. */
static const char *new_rows(const hist_t *h, int before) {
  const char *p = h->text;
  for (int i = 0; i < before && p; i++) {
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  return p ? p : "";
}

#define ALICE "User:alice|127.0.0.1:40001"

/* c1's audit rows after the first `before` must be exactly want. */
#define ROWS(before, want, what)                                               \
  do {                                                                         \
    history(st, "c1", &h);                                                     \
    is_str(new_rows(&h, before), want, "audit: %s", what);                     \
  } while (0)

static void test_persistence(void) {
  char dir[256];
  if (!ok(dc_tu_tmpdir(dir, sizeof(dir)) == 0, "scratch dir"))
    return;
  char err[256] = "";
  dc_store_t *st = NULL;
  if (!ok(dc_store_open_sqlite(dir, &st, err, sizeof(err)) == 0,
          "open SQLite store: %s", err)) {
    dc_tu_rmrf(dir);
    return;
  }
  tb_t t;
  hist_t h;
  if (!ok(tb_init(&t, NULL, st), "broker over the store"))
    goto out;
  const int16_t I = DC_API_INCREMENTAL_ALTER_CONFIGS, A = DC_API_ALTER_CONFIGS;
  int16_t api = I, v = 1; /* for AL() */
  const char *pre = "store";

  AL(0, false, "<default>", "=acks=1", "=partition.assignment.strategy=range");
  AL(0, false, "c1", "=acks=all");
  ROWS(0, "acks|0|~|all|" ALICE "|IncrementalAlterConfigs|9\n",
       "SET with principal, peer, api, type; old absent");
  history(st, "<default>", &h);
  ok(h.rows == 2 && strstr(h.text, "acks|0|~|1|" ALICE) &&
         strstr(h.text, "partition.assignment.strategy|0|~|range|" ALICE),
     "audit: <default> has its two rows");
  v = 0;
  AL(0, false, "c1", "=acks=0", "-linger.ms");
  ROWS(1, "acks|0|all|0|" ALICE "|IncrementalAlterConfigs|9\n",
       "old and new value; no row for the absent DELETE");
  v = 1;
  AL(0, false, "c1", "+partition.assignment.strategy=roundrobin");
  ROWS(2, "partition.assignment.strategy|2|~|range,roundrobin|" ALICE
          "|IncrementalAlterConfigs|9\n",
       "APPEND row (old = no own value)");
  AL(0, false, "c1", "~partition.assignment.strategy=roundrobin,range");
  ROWS(3, "partition.assignment.strategy|3|range,roundrobin|~|" ALICE
          "|IncrementalAlterConfigs|9\n",
       "SUBTRACT row, key now absent");

  /* Another connection, and one without a principal. */
  t.conn.peer = "127.0.0.1:40002";
  t.conn.principal = "User:bob";
  AL(0, false, "c1", "-acks");
  ROWS(4, "acks|1|0|~|User:bob|127.0.0.1:40002|IncrementalAlterConfigs|9\n",
       "DELETE row carries bob and his peer");
  t.conn.principal = NULL;
  api = A;
  AL(0, false, "c1", "=linger.ms=5", "=acks=1");
  history(st, "c1", &h);
  ok(h.rows == 7 &&
         strstr(new_rows(&h, 5), "linger.ms|0|~|5|User:ANONYMOUS|"
                                 "127.0.0.1:40002|AlterConfigs|9\n") &&
         strstr(new_rows(&h, 5), "acks|0|~|1|User:ANONYMOUS|"
                                 "127.0.0.1:40002|AlterConfigs|9\n"),
     "audit: AlterConfigs rows, principal defaults to User:ANONYMOUS");
  t.conn.peer = "127.0.0.1:40001";
  t.conn.principal = "User:alice";
  v = 0;
  AL(0, false, "c1", "=linger.ms=5"); /* drops acks by omission */
  ROWS(7, "acks|1|1|~|" ALICE "|AlterConfigs|9\n",
       "replacement records the dropped key as DELETE; linger.ms unchanged, "
       "no row");
  ok(h.seq_ok && h.time_ok, "audit: seq increasing, times are wall clock");

  /* Nothing recorded or persisted for these. */
  int before = h.rows;
  v = 2;
  AL(0, true, "c1", "=acks=0");
  api = I;
  v = 1;
  AL(0, true, "c1", "=acks=0");
  AL(40, false, "c1", "=acks=7", "=debug=all");
  AL(0, false, "c1", "=linger.ms=5"); /* the value it has */
  AL(0, false, "c1", "-debug");
  AL(0, false, "c2", "-debug");
  history(st, "c1", &h);
  is_int(h.rows, before, "audit: none of those wrote a row");
  history(st, NULL, &h);
  is_int(h.rows, before + 2, "audit: all entities: c1's rows and <default>'s");
  const char *want_c1 = "acks=1/8;linger.ms=5/7;"
                        "partition.assignment.strategy=range/8";
  is_str(dump(&t, "c1"), want_c1, "store: c1 resolved before restart");

  /* A new broker over the same store; then over a reopened store. */
  tb_free(&t);
  if (ok(tb_init(&t, NULL, st), "second broker over the same store")) {
    is_str(dump(&t, "c1"), want_c1, "persisted: c1 after a new broker");
    is_str(dump(&t, "<default>"),
           "acks=1/8;partition.assignment.strategy=range/8",
           "persisted: <default>");
    is_str(dump(&t, "c2"), "acks=1/8;partition.assignment.strategy=range/8",
           "persisted: nothing of c2's no-op");
    tb_free(&t);
  }
  dc_store_close(st);
  st = NULL;
  if (!ok(dc_store_open_sqlite(dir, &st, err, sizeof(err)) == 0,
          "reopen store: %s", err))
    goto out;
  if (ok(tb_init(&t, NULL, st), "broker over the reopened store")) {
    is_str(dump(&t, "c1"), want_c1, "persisted: c1 after reopening");
    tb_free(&t);
  }
out:
  dc_store_close(st);
  dc_tu_rmrf(dir);
}

/* A store whose commits fail (and that records what it was asked to
 * commit), to check a change is applied only once stored. */
typedef struct fake_store {
  dc_store_t base;
  bool fail_commit, fail_load;
  int commits;
  size_t batch; /* alters in the last commit */
  char last[1024]; /* the last commit's full set and changes, as text */
  char who[256];   /* the last commit's principal and peer */
} fake_store_t;

static void fake_close(dc_store_t *st) { (void)st; }
static int fake_load(dc_store_t *st, dc_store_load_cb *cb, void *opaque,
                     char *errstr, size_t errstr_size) {
  fake_store_t *f = (fake_store_t *)st;
  if (f->fail_load) {
    snprintf(errstr, errstr_size, "disk on fire");
    return -1;
  }
  int r = cb(opaque, DC_RES_CLIENT, "c1", "acks", "0");
  if (!r)
    r = cb(opaque, DC_RES_CLIENT, "c1", "linger.ms", "7");
  if (!r)
    r = cb(opaque, DC_RES_CLIENT, "<default>", "debug", "all");
  return r;
}
static int fake_commit(dc_store_t *st, const dc_store_commit_t *batch,
                       size_t nb, char *errstr, size_t errstr_size) {
  fake_store_t *f = (fake_store_t *)st;
  const dc_store_commit_t *c = &batch[nb - 1];
  f->commits++;
  f->batch = nb;
  size_t n = (size_t)snprintf(f->last, sizeof(f->last), "%d %s %s n=%zu:",
                              c->resource_type, c->entity, c->api,
                              c->n_configs);
  for (size_t k = 0; k < c->n_configs && n < sizeof(f->last); k++)
    n += (size_t)snprintf(f->last + n, sizeof(f->last) - n, " %s=%s;",
                          c->keys[k], c->values[k]);
  snprintf(f->last + n, sizeof(f->last) - n, " changes:%zu", c->n_changes);
  snprintf(f->who, sizeof(f->who), "%s %s", c->principal, c->peer);
  if (f->fail_commit) {
    snprintf(errstr, errstr_size, "disk full");
    return -1;
  }
  return 0;
}
static const dc_store_ops_t fake_ops = {.close = fake_close,
                                        .load = fake_load,
                                        .commit = fake_commit};

static void test_fake_store(void) {
  fake_store_t f;
  memset(&f, 0, sizeof(f));
  f.base.ops = &fake_ops;
  tb_t t;
  if (!ok(tb_init(&t, NULL, &f.base), "broker over a fake store"))
    return;
  is_str(dump(&t, "c1"), "acks=0/7;debug=all/8;linger.ms=7/7",
         "load: the store's rows are served");
  is_int(alter1(&t, 44, 1, false, "c1", "=acks=1", NULL), 0,
         "commit: IncrementalAlterConfigs SET acks=1");
  ok(!strncmp(f.last, "9 c1 IncrementalAlterConfigs n=2:", 33) &&
         strstr(f.last, " acks=1;") && strstr(f.last, " linger.ms=7;") &&
         strstr(f.last, " changes:1"),
     "commit carries the entity's complete new set: %s", f.last);
  f.fail_commit = true;
  int c0 = f.commits;
  is_int(alter1(&t, 44, 1, false, "c1", "=acks=all", "-linger.ms", NULL), -1,
         "a failed commit answers UNKNOWN_SERVER_ERROR");
  ok(strstr(t.msg, "disk full") != NULL, "  with the store's reason: %s",
     t.msg);
  is_int(f.commits, c0 + 1, "the commit was attempted");
  is_str(dump(&t, "c1"), "acks=1/7;debug=all/8;linger.ms=7/7",
         "a change the store refused is not applied in memory");
  is_int(alter1(&t, 33, 0, false, "c1", "=acks=all", NULL), -1,
         "AlterConfigs: failed commit also -1");
  is_str(dump(&t, "c1"), "acks=1/7;debug=all/8;linger.ms=7/7",
         "still unchanged");
  f.fail_commit = false;
  is_int(alter1(&t, 44, 1, true, "c1", "=acks=all", NULL), 0,
         "validate_only");
  is_int(f.commits, c0 + 2, "validate_only does not reach the store");

  /* Several resources: one commit for all of them, or none applied. */
  rspec_t three[] = {{DC_RES_CLIENT, "b1", {"=acks=0", NULL}},
                     {DC_RES_CLIENT, "b2", {"=acks=bogus", NULL}},
                     {DC_RES_CLIENT, "b3", {"=linger.ms=3", NULL}}};
  const dc_alter_configs_resp_t *a = alter(&t, 44, 1, false, 3, three);
  ok(a && !a->responses[0].error_code &&
         a->responses[1].error_code == DC_ERR_INVALID_CONFIG &&
         !a->responses[2].error_code,
     "three resources, one invalid: two accepted");
  ok(f.commits == c0 + 3 && f.batch == 2,
     "  the two accepted are stored in one commit (%d commits, batch %zu)",
     f.commits - c0 - 2, f.batch);
  is_str(dump(&t, "b3"), "debug=all/8;linger.ms=3/7", "  and served");
  f.fail_commit = true;
  three[0].cfg[0] = "=acks=1";
  three[1].cfg[0] = "=acks=1";
  three[2].cfg[0] = "=linger.ms=4";
  a = alter(&t, 44, 1, false, 3, three);
  ok(a && a->responses[0].error_code == -1 && a->responses[1].error_code == -1 &&
         a->responses[2].error_code == -1 &&
         strstr(a->responses[2].error_message, "disk full"),
     "a refused commit of three: each answers UNKNOWN_SERVER_ERROR");
  is_str(dump(&t, "b1"), "acks=0/7;debug=all/8", "  none is applied (b1)");
  is_str(dump(&t, "b2"), "debug=all/8", "  none is applied (b2)");
  is_str(dump(&t, "b3"), "debug=all/8;linger.ms=3/7", "  none is applied (b3)");
  f.fail_commit = false;
  tb_free(&t);

  f.fail_load = true;
  dc_broker_opts_t o;
  tb_opts(&o);
  char err[256] = "";
  dc_broker_t *b = dc_broker_new(&o, &f.base, err, sizeof(err));
  ok(b == NULL && strstr(err, "disk on fire"),
     "dc_broker_new fails with the store's load error: %s", err);
  dc_broker_destroy(b);
}

/* ---- bounds on every request's cost -------------------------------------- */

/* A describe of n resources (the same type/name each, or name_fmt with
 * %d), each asking for nkeys made-up keys (0 = all). */
static int describe_many(tb_t *t, int16_t v, int32_t n, const char *name,
                         int32_t nkeys, bool syn, bool doc,
                         dc_describe_configs_resp_t *resp) {
  dc_arena_reset(&t->build);
  dc_describe_configs_req_t req = {n, NULL, syn, doc, 0, false};
  req.resources = dc_arena_alloc(&t->build, (size_t)n * sizeof(*req.resources));
  char **keys = dc_arena_alloc(&t->build, (size_t)(nkeys + 1) * sizeof(char *));
  for (int32_t k = 0; k < nkeys; k++) {
    char key[32];
    snprintf(key, sizeof(key), "k%d", (int)k);
    keys[k] = dc_arena_strdup(&t->build, key);
  }
  for (int32_t i = 0; i < n; i++)
    req.resources[i] = (dc_describe_configs_req_resource_t){
        DC_RES_CLIENT, S(name), nkeys ? nkeys : -1, nkeys ? keys : NULL};
  memset(resp, 0, sizeof(*resp));
  return call_describe(t, v, &req, resp);
}

/* An IncrementalAlterConfigs v1 of n resources named name_i (or all the
 * same name when same), each setting nkeys keys "u<k>=v" (the last one
 * repeating the first when dup_last). */
static const dc_alter_configs_resp_t *alter_many(tb_t *t, int32_t n,
                                                 bool same, int32_t nkeys,
                                                 bool dup_last,
                                                 bool validate_only) {
  static dc_alter_configs_resp_t resp;
  dc_arena_reset(&t->build);
  dc_alter_configs_req_t req = {n, NULL, validate_only};
  req.resources = dc_arena_alloc(&t->build, (size_t)n * sizeof(*req.resources));
  dc_alter_config_t *cfg =
      dc_arena_alloc(&t->build, (size_t)(nkeys ? nkeys : 1) * sizeof(*cfg));
  for (int32_t k = 0; k < nkeys; k++) {
    char key[32];
    snprintf(key, sizeof(key), "u%d", (int)(dup_last && k == nkeys - 1 ? 0 : k));
    cfg[k] = (dc_alter_config_t){dc_arena_strdup(&t->build, key), DC_OP_SET,
                                 S("v")};
  }
  for (int32_t i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof(name), "many-%d", (int)(same ? 0 : i));
    req.resources[i] = (dc_alter_resource_t){
        DC_RES_CLIENT, dc_arena_strdup(&t->build, name), nkeys, cfg};
  }
  dc_buf_t body;
  dc_buf_init(&body);
  dc_incremental_alter_configs_req_encode(&body, 1, &req);
  dc_rd_t rd;
  int rc = exchange(t, DC_API_INCREMENTAL_ALTER_CONFIGS, 1, &body, &rd);
  dc_buf_free(&body);
  if (rc != DC_HANDLE_OK)
    return NULL;
  memset(&resp, 0, sizeof(resp));
  if (!body_done(&rd, dc_incremental_alter_configs_resp_decode(&rd, 1, &resp),
                 "alter") ||
      resp.n_responses != n)
    return NULL;
  return &resp;
}

/* Every result carries err and a message containing what. */
static bool all_describe_errors(const dc_describe_configs_resp_t *r,
                                int16_t err, const char *what) {
  for (int32_t i = 0; i < r->n_results; i++)
    if (r->results[i].error_code != err || !r->results[i].error_message ||
        !strstr(r->results[i].error_message, what) || r->results[i].n_configs)
      return false;
  return r->n_results > 0;
}

static bool all_alter_errors(const dc_alter_configs_resp_t *r, int16_t err,
                             const char *what) {
  for (int32_t i = 0; r && i < r->n_responses; i++)
    if (r->responses[i].error_code != err ||
        !r->responses[i].error_message ||
        !strstr(r->responses[i].error_message, what))
      return false;
  return r && r->n_responses > 0;
}

static void limits_counts(void) {
  dc_broker_opts_t o;
  tb_opts(&o);
  o.allow_unknown_keys = true;
  tb_t t;
  if (!ok(tb_init(&t, &o, NULL), "broker with default request bounds"))
    return;
  is_int(alter1(&t, 44, 1, false, "many-0", "=acks=1", NULL), 0, "seed");
  dc_describe_configs_resp_t r;
  is_int(describe_many(&t, 1, 1000, "many-0", 0, false, false, &r),
         DC_HANDLE_OK, "describe naming 1000 resources is answered");
  ok(r.n_results == 1000 && !r.results[999].error_code &&
         r.results[999].n_configs == 1,
     "  every one of them described");
  is_int(describe_many(&t, 1, 1001, "many-0", 0, false, false, &r),
         DC_HANDLE_OK, "describe naming 1001 resources is answered");
  ok(all_describe_errors(&r, DC_ERR_INVALID_REQUEST,
                         "at most 1000 per request (max.request.resources)"),
     "  each gets INVALID_REQUEST naming the limit: %s",
     r.results[0].error_message ? r.results[0].error_message : "~");
  is_int(describe_many(&t, 1, 1, "many-0", 1001, false, false, &r),
         DC_HANDLE_OK, "describe asking for 1001 keys");
  ok(all_describe_errors(&r, DC_ERR_INVALID_REQUEST,
                         "max.request.configs"),
     "  INVALID_REQUEST naming max.request.configs");
  is_int(describe_many(&t, 1, 1, "many-0", 1000, false, false, &r),
         DC_HANDLE_OK, "describe asking for 1000 keys");
  ok(r.results[0].error_code == 0 && r.results[0].n_configs == 0,
     "  answered (none of them is set)");

  const dc_alter_configs_resp_t *a = alter_many(&t, 1001, false, 1, false, true);
  ok(all_alter_errors(a, DC_ERR_INVALID_REQUEST, "max.request.resources"),
     "alter of 1001 resources: each INVALID_REQUEST naming the limit");
  a = alter_many(&t, 1000, false, 1, false, true);
  ok(all_alter_errors(a, 0, "") == false && a && !a->responses[0].error_code &&
         !a->responses[999].error_code,
     "alter of 1000 resources (validate_only) is accepted");
  a = alter_many(&t, 1000, true, 1, false, true);
  ok(all_alter_errors(a, DC_ERR_INVALID_REQUEST, "more than once"),
     "1000 copies of one resource: every copy is refused as repeated");
  a = alter_many(&t, 1, false, 1001, false, true);
  ok(all_alter_errors(a, DC_ERR_INVALID_REQUEST, "max.request.configs"),
     "1001 configs in one resource: INVALID_REQUEST naming the limit");
  a = alter_many(&t, 1, false, 1000, true, true);
  ok(all_alter_errors(a, DC_ERR_INVALID_REQUEST,
                      "config 'u0' appears more than once"),
     "a repeat at the end of 1000 configs is found");
  is_int(alter1(&t, 44, 1, false, "many-0", "-acks", NULL), 0, "unseed");
  a = alter_many(&t, 1, false, 1000, false, false);
  ok(a && !a->responses[0].error_code, "1000 distinct configs are stored");
  /* 999 new entities of 3 keys: 6 store rows each (3 configs, 3 audit
   * rows) against the default 5000 per request. */
  a = alter_many(&t, 1000, false, 3, false, false);
  int stored = 0, capped = 0, order_ok = 1;
  for (int32_t i = 0; a && i < a->n_responses; i++) {
    const char *m = a->responses[i].error_message;
    if (!a->responses[i].error_code)
      order_ok &= !capped, stored++;
    else if (m && strstr(m, "(max.request.writes)"))
      capped++;
  }
  ok(stored == 1 + 5000 / 6 && capped == 1000 - stored && order_ok,
     "a request's store writes stop at max.request.writes: %d resources "
     "stored, the %d after them refused", stored, capped);
  is_int(alter1(&t, 44, 1, false, "many-0", "=one.more=1", NULL),
         DC_ERR_INVALID_CONFIG, "an entity holding 1000 configs takes no more");
  ok(strstr(t.msg, "max.entity.configs") != NULL, "  %s", t.msg);
  tb_free(&t);
}

static void limits_entities(void) {
  dc_broker_opts_t o;
  tb_opts(&o);
  o.max_entities = 3;
  tb_t t;
  if (!ok(tb_init(&t, &o, NULL), "broker holding at most 3 entities"))
    return;
  is_int(alter1(&t, 44, 1, false, "e1", "=acks=1", NULL), 0, "entity 1");
  is_int(alter1(&t, 44, 1, false, "e2", "=acks=1", NULL), 0, "entity 2");
  is_int(alter1(&t, 44, 1, false, "<default>", "=acks=1", NULL), 0,
         "entity 3 (<default>)");
  is_int(alter1(&t, 44, 1, false, "e4", "=acks=1", NULL),
         DC_ERR_POLICY_VIOLATION, "a fourth is refused");
  ok(strstr(t.msg, "holds 3 entities") && strstr(t.msg, "(max.entities)"),
     "  %s", t.msg);
  is_str(dump(&t, "e4"), "acks=1/8", "  and not created");
  is_int(alter1(&t, 44, 1, false, "e1", "=acks=0", NULL), 0,
         "an existing entity still changes");
  is_int(alter1(&t, 44, 1, false, "e2", "-acks", NULL), 0,
         "emptying one removes it");
  is_int(alter1(&t, 44, 1, false, "e4", "=acks=1", NULL), 0,
         "which makes room for another");
  tb_free(&t);
}

static void limits_sizes(void) {
  dc_broker_opts_t o;
  tb_opts(&o);
  o.allow_unknown_keys = true;
  tb_t t;
  if (!ok(tb_init(&t, &o, NULL), "broker relaying unknown keys"))
    return;
  char name[300], val[5000], spec[5300];
  memset(name, 'n', 256);
  name[256] = '\0';
  snprintf(spec, sizeof(spec), "=%s=1", name);
  is_int(alter1(&t, 44, 1, false, "sz", spec, NULL),
         DC_ERR_INVALID_CONFIG, "a 256-byte config name is refused");
  ok(strstr(t.msg, "256 bytes; at most 255") != NULL, "  %s", t.msg);
  memset(val, 'x', 4097);
  val[4097] = '\0';
  snprintf(spec, sizeof(spec), "=relayed=%s", val);
  is_int(alter1(&t, 44, 1, false, "sz", spec, NULL),
         DC_ERR_INVALID_CONFIG, "a 4097-byte relayed value is refused");
  ok(strstr(t.msg, "4097 bytes; at most 4096") != NULL, "  %s", t.msg);
  val[4096] = '\0';
  snprintf(spec, sizeof(spec), "=relayed=%s", val);
  is_int(alter1(&t, 44, 1, false, "sz", spec, NULL), 0,
         "a 4096-byte relayed value is stored");
  memset(val, '0', 40);
  val[40] = '\0';
  snprintf(spec, sizeof(spec), "=linger.ms=%s", val);
  is_int(alter1(&t, 44, 1, false, "sz", spec, NULL),
         DC_ERR_INVALID_CONFIG, "linger.ms of 40 zeros is refused");
  is_int(alter1(&t, 44, 1, false, "sz", "+debug=broker,broker,topic", NULL), 0,
         "APPEND of repeated items");
  const dc_describe_configs_result_t *d =
      describe1(&t, 1, DC_RES_CLIENT, "sz", 1, (const char *[]){"debug"},
                false, false);
  ok(d && d->n_configs == 1 && !strcmp(d->configs[0].value, "broker,topic"),
     "  repeated items collapse to one: %s",
     d && d->n_configs ? d->configs[0].value : "~");
  tb_free(&t);
}

/* A response never passes max_response_size: results beyond it become
 * errors, and a request whose errors alone could not fit closes. */
static void limits_response(void) {
  dc_broker_opts_t o;
  tb_opts(&o);
  o.allow_unknown_keys = true;
  o.max_response_size = 65536;
  tb_t t;
  if (!ok(tb_init(&t, &o, NULL), "broker with a 64 KiB response limit"))
    return;
  char val[4097], spec[4200];
  memset(val, 'y', 1500);
  val[1500] = '\0';
  for (int k = 0; k < 5; k++) {
    snprintf(spec, sizeof(spec), "=big.%d=%s", k, val);
    alter1(&t, 44, 1, false, "big", spec, NULL);
  }
  dc_describe_configs_resp_t r;
  is_int(describe_many(&t, 4, 20, "big", 0, true, true, &r), DC_HANDLE_OK,
         "20 describes of a 7.5 KB entity with synonyms are answered");
  size_t frame = t.out.len - 3;
  int described = 0, refused = 0;
  for (int32_t i = 0; i < r.n_results; i++) {
    if (!r.results[i].error_code && r.results[i].n_configs == 5)
      described++;
    else if (r.results[i].error_code == DC_ERR_INVALID_REQUEST &&
             strstr(r.results[i].error_message, "max.response.bytes"))
      refused++;
  }
  ok(described >= 2 && described < 20 && described + refused == 20,
     "  the first %d are described, the other %d say max.response.bytes",
     described, refused);
  ok(frame <= 65536 + 8, "  the response frame is %zu bytes", frame);
  char longname[1100];
  memset(longname, 'L', 1000);
  longname[1000] = '\0';
  is_int(describe_many(&t, 4, 100, longname, 0, false, false, &r),
         DC_HANDLE_CLOSE, "a request whose error answer alone exceeds the "
                          "limit closes the connection");
  ok(strstr(t.errstr, "max.response.bytes") != NULL, "  %s", t.errstr);
  tb_free(&t);
}

/* A value longer than a classic string can carry is an error in v0-v3,
 * never a truncated answer. */
static void limits_classic_strings(void) {
  char dir[256], err[512] = "";
  dc_store_t *st = NULL;
  if (!ok(dc_tu_tmpdir(dir, sizeof(dir)) == 0 &&
              dc_store_open_sqlite(dir, &st, err, sizeof(err)) == 0,
          "store: %s", err))
    return;
  static char huge[40001];
  memset(huge, 'h', 40000);
  const char *keys[] = {"acks", "legacy.huge"}, *vals[] = {"1", huge};
  dc_store_change_t ch = {"legacy.huge", DC_OP_SET, NULL, huge};
  dc_store_commit_t c = {.resource_type = DC_RES_CLIENT, .entity = "old",
                         .principal = "User:test", .peer = "", .api = "test",
                         .n_configs = 2, .keys = keys, .values = vals,
                         .n_changes = 1, .changes = &ch};
  ok(dc_store_commit(st, &c, err, sizeof(err)) == 0,
     "a 40,000-byte value written by an older server: %s", err);
  /* The broker says at start-up which stored values fail validation. */
  char logpath[300], line[1024];
  snprintf(logpath, sizeof(logpath), "%s/stderr.log", dir);
  fflush(stderr);
  int saved = dup(2), lfd = open(logpath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  dup2(lfd, 2);
  tb_t t;
  bool up = tb_init(&t, NULL, st);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(lfd);
  FILE *lf = fopen(logpath, "r");
  bool warned = false;
  while (lf && fgets(line, sizeof(line), lf))
    warned |= strstr(line, "stored config legacy.huge of client 'old' fails "
                           "today's validation") != NULL;
  if (lf)
    fclose(lf);
  ok(warned, "start-up warns about the stored value that fails validation");
  if (up) {
    const dc_describe_configs_result_t *d =
        describe1(&t, 1, DC_RES_CLIENT, "old", -1, NULL, false, false);
    ok(d && d->error_code == DC_ERR_INVALID_REQUEST && !d->n_configs &&
           strstr(d->error_message, "32767"),
       "DescribeConfigs v1: an error naming the 32767-byte limit: %s",
       d && d->error_message ? d->error_message : "~");
    d = describe1(&t, 4, DC_RES_CLIENT, "old", -1, NULL, false, false);
    ok(d && !d->error_code && d->n_configs == 2 &&
           strlen(d->configs[1].value) == 40000,
       "DescribeConfigs v4 carries the whole value");
    tb_free(&t);
  }
  dc_store_close(st);
  dc_tu_rmrf(dir);
}

/* ---- Envelope (forwarded alters) ---------------------------------------- */

/* A replicated store in which this server (node 7) writes and node 8
 * follows, with peer_key as its replica key; nodes not heard of are "not
 * yet" while fake_young. */
static dc_replica_key_t *peer_key;
static bool fake_young;
static int64_t fake_pos = 10;
static size_t fake_replicas(dc_store_t *st, const dc_store_replica_t **out,
                            int32_t *leader) {
  (void)st;
  static dc_store_replica_t reps[2] = {{7, 0, NULL, NULL}, {8, 0, NULL, NULL}};
  reps[1].key = dc_replica_key_public(peer_key);
  *out = reps;
  *leader = 7;
  return 2;
}
static int fake_replica_key(dc_store_t *st, int32_t node, const uint8_t **key) {
  (void)st;
  *key = node == 8 ? dc_replica_key_public(peer_key) : NULL;
  return *key ? 1 : fake_young ? DC_STORE_NOT_YET : 0;
}
static int64_t fake_position(dc_store_t *st) {
  (void)st;
  return fake_pos;
}
static const dc_store_ops_t fake_replicated_ops = {
    .close = fake_close,
    .load = fake_load,
    .commit = fake_commit,
    .replicas = fake_replicas,
    .replica_key = fake_replica_key,
    .position = fake_position};

/* How an Envelope is signed: by node with key, skew ms off the clock,
 * claiming position; with a principal swapped in after signing when
 * swap is set. key NULL: unsigned. */
typedef struct env_sig {
  const dc_replica_key_t *key;
  int32_t node;
  int64_t skew;
  int64_t position;
  const char *swap;
} env_sig_t;

static void env_sign(dc_envelope_req_t *e, const env_sig_t *s) {
  e->position = s->position;
  if (!s->key)
    return;
  e->has_signature = true;
  e->signer = s->node;
  e->signed_ms = dc_wall_ms() + s->skew;
  dc_replica_msg_t m = {e->signer, e->signed_ms, e->principal,
                        (size_t)e->principal_len, e->client_host,
                        (size_t)e->client_host_len, e->request_data,
                        (size_t)e->request_data_len};
  dc_replica_sign(s->key, &m, e->signature);
  if (s->swap) {
    e->principal = (const uint8_t *)s->swap;
    e->principal_len = (int32_t)strlen(s->swap);
  }
}

/* Sends an Envelope carrying a request of (key) from principal at host,
 * signed as s says; returns its error code (-999 unanswered) and the
 * inner response's correlation id in *inner_corr (-1 without one). */
static int envelope_as(tb_t *t, int16_t key, const char *principal,
                       const char *host, int32_t *inner_corr,
                       const env_sig_t *s) {
  dc_buf_t body, inner, env;
  dc_buf_init(&body);
  dc_arena_reset(&t->build);
  dc_alter_configs_req_t req = {1, NULL, false};
  req.resources = dc_arena_alloc(&t->build, sizeof(*req.resources));
  req.resources[0] = (dc_alter_resource_t){.resource_type = DC_RES_CLIENT,
                                            .resource_name = S("fwd")};
  req.resources[0].n_configs = 1;
  req.resources[0].configs = dc_arena_alloc(&t->build, sizeof(dc_alter_config_t));
  parse_cfg(&t->build, "=acks=1", &req.resources[0].configs[0]);
  dc_incremental_alter_configs_req_encode(&body, 0, &req);
  int32_t corr = t->corr;
  t->corr = 4242;
  build_payload(t, &inner, key, 0, &body);
  t->corr = corr;
  dc_envelope_req_t e = {
      .request_data = inner.data + 4,
      .request_data_len = (int32_t)inner.len - 4,
      .principal = (const uint8_t *)principal,
      .principal_len = principal ? (int32_t)strlen(principal) : -1,
      .client_host = (const uint8_t *)host,
      .client_host_len = (int32_t)strlen(host)};
  env_sign(&e, s);
  dc_buf_init(&env);
  dc_envelope_req_encode(&env, 0, &e);
  dc_rd_t rd;
  int rc = exchange(t, DC_API_ENVELOPE, 0, &env, &rd);
  dc_buf_free(&body);
  dc_buf_free(&inner);
  dc_buf_free(&env);
  dc_envelope_resp_t resp;
  *inner_corr = -1;
  if (rc != DC_HANDLE_OK || dc_envelope_resp_decode(&rd, 0, &resp))
    return -999;
  if (resp.response_data_len >= 4)
    *inner_corr = (int32_t)be32(resp.response_data);
  return resp.error_code;
}

/* An Envelope as follower 8 sends it. */
static int envelope(tb_t *t, int16_t key, const char *principal,
                    const char *host, int32_t *inner_corr) {
  env_sig_t s = {.key = peer_key, .node = 8};
  return envelope_as(t, key, principal, host, inner_corr, &s);
}

/* What the writer makes of forged and stale Envelopes: each refused,
 * nothing stored. */
static void envelope_forged(tb_t *t, fake_store_t *f,
                            const dc_replica_key_t *other) {
  int32_t corr;
  struct {
    const char *what;
    env_sig_t s;
    int want;
  } cases[] = {
      {"an unsigned Envelope", {0}, DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
      {"signed by a node that published no key", {other, 9, 0, 0, NULL},
       DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
      {"signed in this server's own name", {other, 7, 0, 0, NULL},
       DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
      {"signed as node 8 with another key", {other, 8, 0, 0, NULL},
       DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
      {"node 8's, with the principal swapped after signing",
       {peer_key, 8, 0, 0, "User:root"}, DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
      {"node 8's, signed 61 s ago", {peer_key, 8, -61000, 0, NULL},
       DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
      {"node 8's, signed 61 s ahead", {peer_key, 8, 61000, 0, NULL},
       DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
      {"another key as node 8, at this server's position",
       {other, 8, 0, 10, NULL}, DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
      {"another key as node 8, from a replica further along the log (this "
       "server may not have read its new key): retriable",
       {other, 8, 0, 11, NULL}, DC_ERR_NOT_CONTROLLER},
      {"signed 61 s ago, from further along the log: not retriable",
       {peer_key, 8, -61000, 11, NULL}, DC_ERR_CLUSTER_AUTHORIZATION_FAILED},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    f->who[0] = '\0';
    is_int(envelope_as(t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:admin",
                       "10.6.6.6:1", &corr, &cases[i].s),
           cases[i].want, "%s: refused", cases[i].what);
    is_str(f->who, "", "  nothing stored");
  }
  env_sig_t s = {other, 9, 0, 0, NULL};
  fake_young = true;
  is_int(envelope_as(t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:admin",
                     "10.6.6.6:1", &corr, &s), DC_ERR_NOT_CONTROLLER,
         "a node not heard of by a server that started less than a session "
         "ago: retriable");
  fake_young = false;
  s = (env_sig_t){peer_key, 8, -59000, 0, NULL};
  is_int(envelope_as(t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:bob",
                     "10.1.1.1:5", &corr, &s), 0,
         "node 8's, signed 59 s ago, is taken");
}

/* Refusals are logged once per peer address and reason. */
static void envelope_logged_once(tb_t *t, const dc_replica_key_t *other,
                                 const char *dir) {
  char path[300], line[1024];
  int32_t corr;
  snprintf(path, sizeof(path), "%s/envelope.log", dir);
  fflush(stderr);
  int saved = dup(2), lfd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  dup2(lfd, 2);
  env_sig_t bad = {other, 8, 0, 0, NULL}, none = {0};
  for (int i = 0; i < 3; i++) {
    t->conn.peer = i == 2 ? "10.9.9.9:7" : i ? "127.0.0.1:40002" : "127.0.0.1:40001";
    envelope_as(t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:x", "h:1", &corr,
                &bad);
    envelope_as(t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:x", "h:1", &corr,
                &none);
  }
  t->conn.peer = "127.0.0.1:40001";
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(lfd);
  int sig = 0, unsigned_ = 0, other_peer = 0;
  FILE *lf = fopen(path, "r");
  while (lf && fgets(line, sizeof(line), lf)) {
    sig += strstr(line, "Envelope from 127.0.0.1:40001 (claiming node 8) "
                        "refused: its signature does not verify with node "
                        "8's replica key") != NULL;
    unsigned_ += strstr(line, "(claiming node none) refused: it carries no "
                              "replica signature") != NULL;
    other_peer += strstr(line, "Envelope from 10.9.9.9:7") != NULL;
  }
  if (lf)
    fclose(lf);
  is_int(sig, 1, "a bad signature is logged once for 127.0.0.1, naming the "
                 "peer, the claimed node and the failed check");
  is_int(unsigned_, 2, "an unsigned Envelope once for each of two addresses");
  is_int(other_peer, 2, "another address's refusals are logged too");
}

static void test_envelope(void) {
  tb_t t;
  int32_t corr;
  char err[200];
  peer_key = dc_replica_key_new(err, sizeof(err));
  dc_replica_key_t *other = dc_replica_key_new(err, sizeof(err));
  tb_init(&t, NULL, NULL);
  is_int(envelope(&t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:bob", "h:1",
                  &corr), DC_ERR_INVALID_REQUEST,
         "Envelope on a server without replicas: INVALID_REQUEST");
  tb_free(&t);

  fake_store_t f;
  memset(&f, 0, sizeof(f));
  f.base.ops = &fake_replicated_ops;
  tb_init(&t, NULL, &f.base);
  is_int(envelope(&t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:bob",
                  "10.1.1.1:5", &corr), 0,
         "the writer takes an alter forwarded and signed by node 8");
  is_int(corr, 4242, "  answering it under the client's correlation id");
  is_str(f.who, "User:bob 10.1.1.1:5",
         "  stored as the client's principal and address");
  is_int(envelope(&t, DC_API_DESCRIBE_CONFIGS, "User:bob", "h:1", &corr),
         DC_ERR_INVALID_REQUEST, "only alters travel in an Envelope");
  is_int(envelope(&t, DC_API_ENVELOPE, "User:bob", "h:1", &corr),
         DC_ERR_INVALID_REQUEST, "  not an Envelope in an Envelope");
  envelope_forged(&t, &f, other);
  tb_free(&t);

  char dir[256], acl[300];
  dc_tu_tmpdir(dir, sizeof(dir));
  tb_init(&t, NULL, &f.base);
  envelope_logged_once(&t, other, dir);
  tb_free(&t);
  snprintf(acl, sizeof(acl), "%s/acl", dir);
  FILE *fp = fopen(acl, "w");
  fputs("allow User:bob alter client:*\n", fp);
  fclose(fp);
  dc_broker_opts_t o;
  tb_opts(&o);
  o.acl_path = acl;
  o.super_users = "User:replica";
  tb_init(&t, &o, &f.base);
  f.who[0] = '\0';
  is_int(envelope(&t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:bob", "h:1",
                  &corr), DC_ERR_CLUSTER_AUTHORIZATION_FAILED,
         "with ACLs, a signed Envelope from a non-super user is refused");
  t.conn.principal = "User:replica";
  env_sig_t none = {0};
  is_int(envelope_as(&t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:bob", "h:1",
                     &corr, &none), DC_ERR_CLUSTER_AUTHORIZATION_FAILED,
         "  an unsigned one from a super user too");
  is_str(f.who, "", "  neither stored");
  is_int(envelope(&t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:bob", "h:1",
                  &corr), 0, "  a signed one from a super user is taken");
  is_str(f.who, "User:bob h:1", "  and the inner principal is the one stored");
  is_int(envelope(&t, DC_API_INCREMENTAL_ALTER_CONFIGS, "User:eve", "h:1",
                  &corr), 0, "an Envelope for a principal the ACLs refuse");
  is_int(corr, 4242, "  is answered");
  is_str(f.who, "User:bob h:1", "  and the ACLs kept it from the store");
  tb_free(&t);
  dc_tu_rmrf(dir);
  dc_replica_key_free(other);
  dc_replica_key_free(peer_key);
}

/* ---- the connection's kept DescribeConfigs answer ----------------------- */

/* A counter of the broker's metrics text. */
static double metric(tb_t *t, const char *name) {
  dc_buf_t m;
  dc_buf_init(&m);
  dc_broker_metrics(t->b, &m);
  dc_buf_append(&m, "", 1);
  char key[128];
  snprintf(key, sizeof(key), "\n%s ", name);
  const char *at = strstr((const char *)m.data, key);
  double v = at ? strtod(at + strlen(key), NULL) : -1;
  dc_buf_free(&m);
  return v;
}

static const char *acks_of(tb_t *t, const char *client) {
  const dc_describe_configs_result_t *r =
      describe1(t, 1, DC_RES_CLIENT, client, -1, NULL, false, false);
  if (!r)
    return "closed";
  if (r->error_code)
    return "denied";
  const dc_describe_configs_entry_t *e = entry(r, "acks");
  return e && e->value ? e->value : "none";
}

#define REUSED "dynconfd_describe_answers_reused_total"
#define DENIED "dynconfd_authorization_denials_total"

/* handle_raw answers each DescribeConfigs three times (no memo, then the
 * memo twice): a kept answer is reused twice per describe. */
static void test_memo(void) {
  char dir[256], acl[300];
  dc_tu_tmpdir(dir, sizeof(dir));
  dc_tu_put_file(dir, "acl", "allow User:alice describe client:app\n", acl,
                 sizeof(acl));
  dc_broker_opts_t o;
  tb_opts(&o);
  o.acl_path = acl;
  o.super_users = "User:admin";
  tb_t t;
  if (!ok(tb_init(&t, &o, NULL), "memo: broker with an ACL file")) {
    dc_tu_rmrf(dir);
    return;
  }
  t.conn.principal = "User:admin";
  is_int(alter1(&t, 44, 1, false, "app", "=acks=all", NULL), 0,
         "memo: app has acks=all");
  t.conn.principal = "User:alice";
  double r0 = metric(&t, REUSED);
  is_str(acks_of(&t, "app"), "all", "alice reads acks=all");
  is_int((int)(metric(&t, REUSED) - r0), 1,
         "  the answer was kept, and sent again from the memo");
  is_str(acks_of(&t, "app"), "all", "  read again");
  is_int((int)(metric(&t, REUSED) - r0), 3, "  from the memo each time");

  t.conn.principal = "User:mallory";
  double d0 = metric(&t, DENIED), r1 = metric(&t, REUSED);
  is_str(acks_of(&t, "app"), "denied",
         "the same request from another principal is refused");
  is_str(acks_of(&t, "app"), "denied", "  twice");
  is_int((int)(metric(&t, DENIED) - d0), 6,
         "  every refusal counted (a refused answer is never kept)");
  is_int((int)(metric(&t, REUSED) - r1), 0, "  none sent from the memo");

  t.conn.principal = "User:admin";
  is_int(alter1(&t, 44, 1, false, "app", "=acks=1", NULL), 0,
         "admin sets acks=1");
  t.conn.principal = "User:alice";
  is_str(acks_of(&t, "app"), "1", "  alice reads the new value at once");

  dc_tu_put_file(dir, "acl", "allow User:bob describe client:app\n", acl,
                 sizeof(acl));
  dc_reload_file_report_t files[DC_RELOAD_FILES_MAX];
  dc_broker_reload_security(t.b, files);
  is_str(acks_of(&t, "app"), "denied",
         "an ACL file reloaded without alice's rule refuses her at once");
  tb_free(&t);
  dc_tu_rmrf(dir);
}

int main(void) {
  test_apiversions();
  test_metadata();
  test_dispatch();
  test_describe();
  for (int16_t v = 0; v <= 2; v++)
    alter_common(DC_API_ALTER_CONFIGS, v);
  for (int16_t v = 0; v <= 1; v++)
    alter_common(DC_API_INCREMENTAL_ALTER_CONFIGS, v);
  for (int16_t v = 0; v <= 2; v++)
    alter_full(v);
  for (int16_t v = 0; v <= 1; v++)
    alter_incremental(v);
  test_persistence();
  test_fake_store();
  test_envelope();
  limits_counts();
  limits_entities();
  limits_sizes();
  limits_response();
  limits_classic_strings();
  test_memo();
  is_int(frame_bad, 0, "every response was one well-formed frame with the "
                       "request's correlation id, decoded exactly");
  is_int(echo_bad, 0, "every response echoed each resource's type and name");
  is_int(memo_bad, 0, "every DescribeConfigs answer sent from the "
                      "connection's memo was the answer made anew");
  ok(memo_checked >= 100, "  %d DescribeConfigs requests compared so",
     memo_checked);
  return done_testing();
}
