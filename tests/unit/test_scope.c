/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Principal-scoped configs and authorization, driven through
 * dc_broker_handle() with different principals and client ids (no
 * sockets; lib/broker/config/scope.c, security.c, config_apis.c, acl.c and
 * lib/common/entity.c):
 *   - type-10 entity names: percent-encoding, canonical form, every error;
 *   - resolution user+client > user > client > <default> for CLIENT and
 *     USER resources, sources 10/9/7/8 with synonyms in order, v0's
 *     is_default, at DescribeConfigs v0..v4; APPEND bases per level;
 *   - authorization: per-resource CLUSTER_AUTHORIZATION_FAILED (31) with a
 *     message while the authorized resources of the same request proceed;
 *     an unauthorized alter (validate_only too) changes nothing; principal
 *     A cannot describe B's user entity nor B's client; the broker
 *     resource; super users; the ACL file at start and on reload (a bad
 *     file keeps the old rules; bad credentials keep both old files);
 *   - heartbeat < session across levels (user, client, <default>,
 *     user+client), in both directions;
 *   - persistence of type-10 entities through a real SQLite store, with
 *     the principal in the audit rows.
 */
#include "broker/core/broker_int.h" /* b->creds, to see what a reload kept */
#include "broker/auth/credentials.h"
#include "broker/core/broker.h"
#include "broker/config/pairindex.h"
#include "broker/config/scope.h"
#include "broker/store/store.h"
#include "codec/proto.h"
#include "common/entity.h"
#include "../tap.h"
#include "../testutil.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S(x) ((char *)(x))
#define IAC DC_API_INCREMENTAL_ALTER_CONFIGS
#define AC DC_API_ALTER_CONFIGS

/* ---- entity names -------------------------------------------------------- */

static void test_entity_names(void) {
  char out[DC_ENTITY_ENC_NAME_SIZE], err[256];
  static const struct {
    const char *user, *client, *want;
  } enc[] = {
      {"alice", NULL, "alice"},
      {"alice", "", "alice"},
      {"alice", "app-1", "alice/app-1"},
      {"CN=alice smith,O=x", "a/b", "CN=alice%20smith,O=x/a%2Fb"},
      {"100%", "tab\there", "100%25/tab%09here"},
      {"caf\xc3\xa9", "~!", "caf%C3%A9/~!"},
      {"<default>", NULL, "<default>"}, /* naming is not policy */
  };
  for (size_t i = 0; i < sizeof(enc) / sizeof(enc[0]); i++) {
    int rc = dc_entity_user_name(enc[i].user, enc[i].client, out, sizeof(out),
                                 err, sizeof(err));
    ok(rc == 0 && !strcmp(out, enc[i].want), "encode '%s' + '%s' -> %s (%s)",
       enc[i].user, enc[i].client ? enc[i].client : "(null)", out, enc[i].want);
    dc_user_entity_t ue;
    rc = dc_entity_user_parse(out, &ue, err, sizeof(err));
    ok(rc == 0 && !strcmp(ue.user, enc[i].user) &&
           !strcmp(ue.client, enc[i].client ? enc[i].client : ""),
       "  and back");
  }
  /* Longest parts: 255 bytes each, all encoded. */
  char big[256];
  memset(big, ' ', 255);
  big[255] = '\0';
  ok(dc_entity_user_name(big, big, out, sizeof(out), err, sizeof(err)) == 0 &&
         strlen(out) == 2 * 765 + 1,
     "two 255-byte parts of spaces fit DC_ENTITY_ENC_NAME_SIZE");
  dc_user_entity_t ue;
  ok(dc_entity_user_parse(out, &ue, err, sizeof(err)) == 0 &&
         !strcmp(ue.user, big) && !strcmp(ue.client, big),
     "  and decode back");
  char toolong[257];
  memset(toolong, 'x', 256);
  toolong[256] = '\0';
  ok(dc_entity_user_name(toolong, NULL, out, sizeof(out), err, sizeof(err)) &&
         strstr(err, "1 to 255"),
     "encode refuses a 256-byte user: %s", err);
  ok(dc_entity_user_name("", "c", out, sizeof(out), err, sizeof(err)) &&
         strstr(err, "user"),
     "encode refuses an empty user: %s", err);
  ok(dc_entity_encode_part("abc", out, 3) == -1 && out[0] == '\0',
     "encode into a buffer too small: -1, empty");
  is_int(dc_entity_encode_part("a/b", out, 6), 5, "encode_part length");

  /* Canonical spelling: lower-case hex, raw bytes, eager encoders. */
  static const struct {
    const char *in, *want;
  } canon[] = {
      {"%61lice", "alice"},
      {"CN%3Dalice%2cO%3dx", "CN=alice,O=x"},
      {"a b/c", "a%20b/c"},
      {"a%2fb/c%2Fd", "a%2Fb/c%2Fd"},
      {"%25", "%25"},
  };
  for (size_t i = 0; i < sizeof(canon) / sizeof(canon[0]); i++) {
    int rc = dc_entity_user_canonical(canon[i].in, out, sizeof(out), err,
                                      sizeof(err));
    ok(rc == 0 && !strcmp(out, canon[i].want), "canonical '%s' = '%s' (%s)",
       canon[i].in, canon[i].want, rc ? err : out);
  }
  /* Errors. */
  char longenc[300];
  memset(longenc, 'y', 256);
  longenc[256] = '\0';
  char longpct[800];
  for (int i = 0; i < 256; i++)
    memcpy(longpct + 3 * i, "%41", 3);
  longpct[768] = '\0';
  const struct {
    const char *in, *says;
  } bad[] = {
      {"", "user part of the name is empty"},
      {"/c", "user part"},
      {"u/", "client-id part of the name is empty"},
      {"a/b/c", "USER or USER/CLIENT"},
      {"a%", "bad escape in the user part"},
      {"a%4", "bad escape"},
      {"a/%zz", "bad escape in the client-id part"},
      {"a%00b", "%00"},
      {longenc, "longer than 255"},
      {longpct, "longer than 255"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err[0] = '\0';
    ok(dc_entity_user_parse(bad[i].in, &ue, err, sizeof(err)) == -1 &&
           strstr(err, bad[i].says),
       "parse refuses '%.20s%s': %s", bad[i].in,
       strlen(bad[i].in) > 20 ? "..." : "", err);
  }
  memset(longpct + 3 * 255, 0, 1); /* 255 escapes: exactly the limit */
  ok(dc_entity_user_parse(longpct, &ue, err, sizeof(err)) == 0 &&
         strlen(ue.user) == 255,
     "255 escaped bytes decode");
}

/* ---- the harness --------------------------------------------------------- */

typedef struct tb {
  dc_broker_t *b;
  dc_conn_info_t conn;
  const char *client_id; /* request header client id */
  dc_arena_t scratch, resp;
  dc_buf_t out;
  int32_t corr;
  int16_t err[8];   /* per-resource errors of the last alter */
  char msg[8][600]; /* and their messages ("~" = null) */
} tb_t;

static int broken; /* framing/decoding problems, asserted at the end */

static bool tb_init(tb_t *t, const dc_broker_opts_t *o, dc_store_t *st) {
  memset(t, 0, sizeof(*t));
  dc_broker_opts_t def;
  if (!o) {
    dc_broker_opts_init(&def);
    o = &def;
  }
  char err[512] = "";
  t->b = dc_broker_new(o, st, err, sizeof(err));
  if (!t->b)
    diag("dc_broker_new: %s", err);
  t->conn.peer = "127.0.0.1:40001";
  t->conn.principal = "User:admin";
  t->conn.advertised_host = "127.0.0.1";
  t->conn.advertised_port = 19092;
  t->client_id = "cli";
  dc_arena_init(&t->scratch);
  dc_arena_init(&t->resp);
  dc_buf_init(&t->out);
  return t->b != NULL;
}

static void tb_free(tb_t *t) {
  dc_broker_destroy(t->b);
  dc_arena_free(&t->scratch);
  dc_arena_free(&t->resp);
  dc_buf_free(&t->out);
}

/* As principal/client id: sets who the next requests come from. */
static void as(tb_t *t, const char *principal, const char *client_id) {
  t->conn.principal = principal;
  t->client_id = client_id;
}

/* Sends body as (key, v); on success rd is at the response body. */
static bool exchange(tb_t *t, int16_t key, int16_t v, const dc_buf_t *body,
                     dc_rd_t *rd) {
  dc_buf_t req;
  dc_buf_init(&req);
  dc_req_header_t h = {key, v, ++t->corr, S(t->client_id)};
  dc_req_header_encode(&req, &h);
  dc_buf_append(&req, body->data, body->len);
  dc_buf_clear(&t->out);
  char errstr[256] = "";
  int rc = dc_broker_handle(t->b, &t->conn, req.data, req.len, &t->scratch,
                            &t->out, errstr, sizeof(errstr));
  dc_arena_reset(&t->scratch);
  dc_buf_free(&req);
  if (rc != DC_HANDLE_OK || t->out.len < 8) {
    diag("  request key %d v%d: rc %d (%s)", key, v, rc, errstr);
    broken++;
    return false;
  }
  dc_arena_reset(&t->resp);
  dc_rd_init(rd, t->out.data + 4, t->out.len - 4, &t->resp);
  int32_t corr;
  if (dc_resp_header_decode(rd, key, v, &corr) || corr != t->corr) {
    diag("  bad response header");
    broken++;
    return false;
  }
  return true;
}

/* One DescribeConfigs of (type, name); NULL on a transport problem. The
 * result lives in t->resp until the next call. */
static const dc_describe_configs_result_t *
describe(tb_t *t, int16_t v, int8_t type, const char *name, bool syn) {
  dc_describe_configs_req_resource_t res = {type, S(name), -1, NULL};
  dc_describe_configs_req_t req = {1, &res, syn && v >= 1, false, 0, false};
  dc_buf_t body;
  dc_buf_init(&body);
  dc_describe_configs_req_encode(&body, v, &req);
  dc_rd_t rd;
  bool okx = exchange(t, DC_API_DESCRIBE_CONFIGS, v, &body, &rd);
  dc_buf_free(&body);
  if (!okx)
    return NULL;
  dc_describe_configs_resp_t *resp = dc_arena_alloc(&t->resp, sizeof(*resp));
  if (dc_describe_configs_resp_decode(&rd, v, resp) || dc_rd_remaining(&rd) ||
      resp->n_results != 1 || resp->results[0].resource_type != type ||
      strcmp(resp->results[0].resource_name, name)) {
    diag("  DescribeConfigs response malformed or not echoing %d '%s'", type,
         name);
    broken++;
    return NULL;
  }
  return &resp->results[0];
}

/* A describe as text: "key=value/source[s:v,s:v];..." with synonyms
 * (v1+), "key=value/D" or "/-" for v0's is_default; "ERR n" on error. */
static const char *dumpv(tb_t *t, int16_t v, int8_t type, const char *name) {
  static char buf[4096];
  const dc_describe_configs_result_t *r = describe(t, v, type, name, true);
  if (!r)
    return "BROKEN";
  if (r->error_code) {
    snprintf(buf, sizeof(buf), "ERR %d", r->error_code);
    return buf;
  }
  size_t n = 0;
  buf[0] = '\0';
  for (int32_t i = 0; i < r->n_configs; i++) {
    const dc_describe_configs_entry_t *e = &r->configs[i];
    if (v == 0)
      n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s=%s/%s",
                            i ? ";" : "", e->name, e->value,
                            e->is_default ? "D" : "-");
    else
      n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s=%s/%d",
                            i ? ";" : "", e->name, e->value, e->config_source);
    if (v >= 1) {
      n += (size_t)snprintf(buf + n, sizeof(buf) - n, "[");
      for (int32_t j = 0; j < e->n_synonyms; j++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d:%s",
                              j ? "," : "", e->synonyms[j].source,
                              e->synonyms[j].value);
      n += (size_t)snprintf(buf + n, sizeof(buf) - n, "]");
    }
  }
  return buf;
}
#define dump(t, type, name) dumpv(t, 4, type, name)

/* A resource to alter: type, name and ops "=k=v" SET, "-k" DELETE,
 * "+k=v" APPEND, "~k=v" SUBTRACT (NULL-terminated, at most 8). */
typedef struct rspec {
  int8_t type;
  const char *name;
  const char *ops[9];
} rspec_t;

/* Alters n resources in one request; t->err[i]/t->msg[i] get each
 * result. Returns the first resource's error, or -99 when broken. */
static int alter(tb_t *t, int16_t api, int16_t v, bool validate_only,
                 const rspec_t *rs, int n) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_alter_resource_t res[8];
  for (int i = 0; i < n; i++) {
    int k = 0;
    while (rs[i].ops[k])
      k++;
    dc_alter_config_t *c = dc_arena_alloc(&a, (size_t)(k + 1) * sizeof(*c));
    for (int j = 0; j < k; j++) {
      const char *op = rs[i].ops[j];
      char *body = dc_arena_strdup(&a, op + 1);
      char *eq = strchr(body, '=');
      if (eq)
        *eq = '\0';
      c[j].name = body;
      c[j].value = eq ? eq + 1 : NULL;
      c[j].op = op[0] == '=' ? DC_OP_SET
                : op[0] == '-' ? DC_OP_DELETE
                : op[0] == '+' ? DC_OP_APPEND
                               : DC_OP_SUBTRACT;
    }
    res[i] = (dc_alter_resource_t){rs[i].type, S(rs[i].name), k, c};
  }
  dc_alter_configs_req_t req = {n, res, validate_only};
  dc_buf_t body;
  dc_buf_init(&body);
  if (api == IAC)
    dc_incremental_alter_configs_req_encode(&body, v, &req);
  else
    dc_alter_configs_req_encode(&body, v, &req);
  dc_arena_free(&a);
  dc_rd_t rd;
  bool okx = exchange(t, api, v, &body, &rd);
  dc_buf_free(&body);
  if (!okx)
    return -99;
  dc_alter_configs_resp_t resp;
  int dec = api == IAC ? dc_incremental_alter_configs_resp_decode(&rd, v, &resp)
                       : dc_alter_configs_resp_decode(&rd, v, &resp);
  if (dec || dc_rd_remaining(&rd) || resp.n_responses != n) {
    diag("  alter response malformed");
    broken++;
    return -99;
  }
  for (int i = 0; i < n; i++) {
    const dc_alter_result_t *x = &resp.responses[i];
    if (x->resource_type != rs[i].type ||
        strcmp(x->resource_name, rs[i].name)) {
      diag("  alter response %d does not echo its resource", i);
      broken++;
    }
    t->err[i] = x->error_code;
    snprintf(t->msg[i], sizeof(t->msg[i]), "%s",
             x->error_message ? x->error_message : "~");
  }
  return t->err[0];
}

/* One-resource IncrementalAlterConfigs v1. */
#define SET(t, type, name, ...)                                                \
  alter(t, IAC, 1, false, &(rspec_t){type, name, {__VA_ARGS__, NULL}}, 1)

#define CL DC_RES_CLIENT
#define US DC_RES_USER

/* ---- resolution ----------------------------------------------------------- */

static void test_resolution(void) {
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "broker without ACL"))
    return;
  is_int(SET(&t, CL, "<default>", "=acks=0", "=linger.ms=10",
             "=batch.size=1000", "=compression.type=none"),
         0, "set <default>");
  is_int(SET(&t, CL, "app", "=acks=1", "=linger.ms=20", "=batch.size=2000"), 0,
         "set client app");
  is_int(SET(&t, US, "alice", "=acks=all", "=linger.ms=30"), 0,
         "set user alice");
  is_int(SET(&t, US, "alice/app", "=acks=-1"), 0, "set alice/app");

  const char *alice_app = "acks=-1/10[10:-1,9:all,7:1,8:0];"
                          "batch.size=2000/7[7:2000,8:1000];"
                          "compression.type=none/8[8:none];"
                          "linger.ms=30/9[9:30,7:20,8:10]";
  as(&t, "User:alice", "app");
  is_str(dump(&t, CL, "app"), alice_app,
         "alice describing CLIENT app: user+client > user > client > "
         "<default>, synonyms in order");
  as(&t, "User:bob", "app");
  is_str(dump(&t, CL, "app"),
         "acks=1/7[7:1,8:0];batch.size=2000/7[7:2000,8:1000];"
         "compression.type=none/8[8:none];linger.ms=20/7[7:20,8:10]",
         "bob (no user entities) describing CLIENT app: client > <default>");
  is_str(dump(&t, US, "alice/app"), alice_app,
         "bob describing USER alice/app: alice's view of app");
  is_str(dump(&t, US, "alice"), "acks=all/9[9:all];linger.ms=30/9[9:30]",
         "USER alice: her own overrides only, source 9");
  as(&t, "User:alice", "x");
  is_str(dump(&t, CL, "other"),
         "acks=all/9[9:all,8:0];batch.size=1000/8[8:1000];"
         "compression.type=none/8[8:none];linger.ms=30/9[9:30,8:10]",
         "alice describing an unknown client: user > <default>");
  is_str(dump(&t, CL, "<default>"),
         "acks=0/8[8:0];batch.size=1000/8[8:1000];"
         "compression.type=none/8[8:none];linger.ms=10/8[8:10]",
         "<default> is its own values for everyone");
  is_str(dump(&t, US, "nobody"), "", "a user without overrides: empty");
  is_str(dump(&t, US, "nobody/app"),
         "acks=1/7[7:1,8:0];batch.size=2000/7[7:2000,8:1000];"
         "compression.type=none/8[8:none];linger.ms=20/7[7:20,8:10]",
         "nobody/app resolves like client app");

  /* Every version: v0 is_default only for values from <default>. */
  as(&t, "User:alice", "app");
  is_str(dumpv(&t, 0, CL, "app"),
         "acks=-1/-;batch.size=2000/-;compression.type=none/D;linger.ms=30/-",
         "v0: is_default true only when the value is from <default>");
  is_str(dumpv(&t, 0, CL, "<default>"),
         "acks=0/-;batch.size=1000/-;compression.type=none/-;linger.ms=10/-",
         "v0: <default>'s own values are not is_default");
  is_str(dumpv(&t, 0, US, "alice"), "acks=all/-;linger.ms=30/-",
         "v0: a user's own values");
  for (int16_t v = 1; v <= 4; v++)
    is_str(dumpv(&t, v, CL, "app"), alice_app, "v%d: same resolution", v);
  const dc_describe_configs_result_t *r = describe(&t, 1, CL, "app", false);
  ok(r && r->n_configs == 4 && r->configs[0].n_synonyms == 0 &&
         r->configs[0].config_source == 10,
     "v1 without IncludeSynonyms: sources, no synonyms");

  /* Unauthenticated: the user is ANONYMOUS. */
  is_int(SET(&t, US, "ANONYMOUS", "=linger.ms=99"), 0, "set user ANONYMOUS");
  as(&t, NULL, "app");
  is_str(dump(&t, CL, "app"),
         "acks=1/7[7:1,8:0];batch.size=2000/7[7:2000,8:1000];"
         "compression.type=none/8[8:none];linger.ms=99/9[9:99,7:20,8:10]",
         "no principal resolves as User:ANONYMOUS");

  /* A certificate principal: names are percent-encoded and canonical. */
  as(&t, "User:admin", "x");
  is_int(SET(&t, US, "CN%3Dcarol%20c%2cO=x/app", "=acks=all"), 0,
         "set a DN user+client entity spelled non-canonically");
  is_int(SET(&t, US, "CN=carol%20c,O=x", "=linger.ms=5"), 0,
         "set the same user canonically");
  as(&t, "User:CN=carol c,O=x", "app");
  is_str(dump(&t, CL, "app"),
         "acks=all/10[10:all,7:1,8:0];batch.size=2000/7[7:2000,8:1000];"
         "compression.type=none/8[8:none];linger.ms=5/9[9:5,7:20,8:10]",
         "the DN principal resolves both spellings as one user");
  is_str(dump(&t, US, "CN=carol%20c%2CO=x"), "linger.ms=5/9[9:5]",
         "describe with another spelling: same entity, name echoed as sent");

  /* APPEND starts from what each level inherits. */
  as(&t, "User:admin", "x");
  is_int(SET(&t, CL, "<default>", "=partition.assignment.strategy=range"), 0,
         "default strategy range");
  is_int(SET(&t, US, "dave", "+partition.assignment.strategy=roundrobin"), 0,
         "APPEND on user dave");
  is_str(dump(&t, US, "dave"),
         "partition.assignment.strategy=range,roundrobin/9[9:range,roundrobin]",
         "a user's APPEND starts from <default>");
  is_int(SET(&t, CL, "app", "=partition.assignment.strategy=cooperative-sticky"),
         0, "client app strategy");
  is_int(SET(&t, US, "eve/app", "+partition.assignment.strategy=range"), 0,
         "APPEND on eve/app (no user value)");
  is_int(SET(&t, US, "dave/app",
             "+partition.assignment.strategy=cooperative-sticky"),
         0, "APPEND on dave/app");
  as(&t, "User:eve", "app");
  ok(strstr(dump(&t, CL, "app"),
            "partition.assignment.strategy=cooperative-sticky,range/10"),
     "user+client APPEND starts from the client's value when the user has "
     "none");
  as(&t, "User:dave", "app");
  ok(strstr(dump(&t, CL, "app"),
            "partition.assignment.strategy=range,roundrobin,"
            "cooperative-sticky/10[10:range,roundrobin,cooperative-sticky,"
            "9:range,roundrobin,7:cooperative-sticky,8:range]"),
     "... and from the user's value when it has one: %s",
     dump(&t, CL, "app"));

  /* Bad names, on describe and alter. */
  char longu[300];
  memset(longu, 'u', 256);
  longu[256] = '\0';
  const char *bad[] = {"",         "a/",         "/b",  "a/b/c", "a%2",
                       "a%zz",     "a%00",       longu, "<default>",
                       "alice/<default>"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    const dc_describe_configs_result_t *d = describe(&t, 4, US, bad[i], false);
    bool dok = d && d->error_code == 42 && d->error_message;
    int ae = SET(&t, US, bad[i], "=acks=1"); /* frees d */
    ok(dok && ae == 42 &&
           strcmp(t.msg[0], "~"),
       "USER '%.12s': INVALID_REQUEST with a message on describe and alter "
       "(%s)",
       bad[i], t.msg[0]);
  }
  r = describe(&t, 4, 11, "x", false);
  ok(r && r->error_code == 42 && strstr(r->error_message, "USER (10)"),
     "unknown types name USER (10) among the served ones");
  tb_free(&t);
}

/* ---- authorization -------------------------------------------------------- */

/* A reload with the failed files' words in err (empty when none
 * failed): 0, or -1 when some file failed. */
static int reload(dc_broker_t *b, char *err, size_t size) {
  dc_reload_file_report_t files[DC_RELOAD_FILES_MAX];
  int n = dc_broker_reload_security(b, files);
  return dc_reload_files_say(files, n, true, err, size) ? -1 : 0;
}

static bool write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  fputs(text, f);
  return fclose(f) == 0;
}

static const char *const ACL1 =
    "# test rules\n"
    "allow User:ops alter client:pay*\n"
    "deny User:ops alter client:payroll\n"
    "allow User:ops alter user:*\n"
    "allow User:ops describe broker\n"
    "allow User:ro describe client:*\n";

static void test_authorization(void) {
  char dir[256], acl[300], err[512];
  if (!ok(dc_tu_tmpdir(dir, sizeof(dir)) == 0, "scratch dir"))
    return;
  snprintf(acl, sizeof(acl), "%s/acl", dir);
  write_file(acl, ACL1);
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.acl_path = acl;
  o.super_users = "User:admin,User:CN=root,O=x";
  tb_t t;
  if (!ok(tb_init(&t, &o, NULL), "broker with ACL file"))
    goto out;

  /* The super user sets the scene. */
  as(&t, "User:admin", "x");
  rspec_t setup[] = {{CL, "payments", {"=acks=1", NULL}},
                     {CL, "payroll", {"=acks=1", NULL}},
                     {CL, "other", {"=acks=1", NULL}},
                     {US, "alice", {"=linger.ms=7", NULL}},
                     {US, "bob", {"=linger.ms=8", NULL}},
                     {US, "bob/bob-app", {"=acks=0", NULL}}};
  ok(alter(&t, IAC, 1, false, setup, 6) == 0 && !t.err[1] && !t.err[2] &&
         !t.err[3] && !t.err[4] && !t.err[5],
     "super user alters anything");
  as(&t, "User:CN=root,O=x", "x");
  is_int(SET(&t, CL, "<default>", "=acks=all"), 0,
         "super user with a comma in its DN");

  /* ops: one request, three clients; only payments may change. */
  static const struct {
    int16_t api, v;
    bool vo;
  } calls[] = {{IAC, 0, false}, {IAC, 1, false}, {IAC, 1, true},
               {AC, 0, false},  {AC, 1, false},  {AC, 2, false},
               {AC, 2, true}};
  char last[16] = "1"; /* payments' acks */
  for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
    as(&t, "User:ops", "ops-cli");
    char val[16];
    snprintf(val, sizeof(val), "=acks=%s", i % 2 ? "0" : "-1");
    rspec_t mix[] = {{CL, "payroll", {val, NULL}},
                     {CL, "payments", {val, NULL}},
                     {CL, "other", {val, NULL}},
                     {US, "alice", {"=linger.ms=9", NULL}}};
    int16_t api = calls[i].api, v = calls[i].v;
    alter(&t, api, v, calls[i].vo, mix, 4);
    char want_pay[64];
    if (!calls[i].vo)
      snprintf(last, sizeof(last), "%s", val + 6);
    snprintf(want_pay, sizeof(want_pay), "acks=%s/7[", last);
    as(&t, "User:admin", "x");
    char got_pay[64];
    snprintf(got_pay, sizeof(got_pay), "%s", dump(&t, CL, "payments"));
    ok(t.err[0] == 31 && t.err[1] == 0 && t.err[2] == 31 && t.err[3] == 0 &&
           !strcmp(t.msg[0], "principal User:ops is not authorized to alter "
                             "client 'payroll' (denied by ACL rule at line 3)") &&
           !strcmp(t.msg[2], "principal User:ops is not authorized to alter "
                             "client 'other' (no ACL rule allows it)") &&
           !strcmp(t.msg[1], "~"),
       "%s v%d%s: 31 for payroll and other with messages, 0 for payments "
       "and user alice (%s | %s)",
       api == IAC ? "IncrementalAlterConfigs" : "AlterConfigs", v,
       calls[i].vo ? " validate_only" : "", t.msg[0], t.msg[2]);
    ok(!strncmp(got_pay, want_pay, strlen(want_pay)) &&
           !strncmp(dump(&t, CL, "payroll"), "acks=1/7", 8) &&
           !strncmp(dump(&t, CL, "other"), "acks=1/7", 8),
       "  afterwards: payments %s, payroll and other unchanged (%s)",
       calls[i].vo ? "unchanged (validate_only)" : "changed", got_pay);
  }
  /* A denied resource is refused even when its values are invalid, and
   * before any of its values are looked at. */
  as(&t, "User:ops", "ops-cli");
  is_int(SET(&t, CL, "other", "=acks=7"), 31, "denied before validation");
  is_int(SET(&t, CL, "paypal", "=acks=7"), 40, "allowed, then validated");

  /* Describe: alice with client id alice-app. */
  as(&t, "User:alice", "alice-app");
  is_int(SET(&t, CL, "alice-app", "=acks=0"), 31,
         "alice may not alter her own client-id by default");
  is_int(SET(&t, US, "alice", "=acks=0"), 31,
         "nor her own user entity");
  ok(strstr(t.msg[0], "principal User:alice is not authorized to alter "
                      "user 'alice'"),
     "  message: %s", t.msg[0]);
  is_str(dump(&t, CL, "alice-app"), "acks=all/8[8:all];linger.ms=9/9[9:9]",
         "alice reads her own client-id, resolved with her user");
  is_str(dump(&t, US, "alice"), "linger.ms=9/9[9:9]",
         "alice reads her own user entity");
  is_str(dump(&t, US, "alice/alice-app"),
         "acks=all/8[8:all];linger.ms=9/9[9:9]",
         "alice reads her own user+client view");
  const dc_describe_configs_result_t *r = describe(&t, 4, US, "bob", false);
  ok(r && r->error_code == 31 && r->n_configs == 0 && r->error_message &&
         strstr(r->error_message, "principal User:alice is not authorized to "
                                  "describe user 'bob'"),
     "alice cannot describe bob's user entity: %s",
     r && r->error_message ? r->error_message : "?");
  is_str(dump(&t, US, "bob/bob-app"), "ERR 31",
         "nor bob's user+client entity");
  is_str(dump(&t, CL, "bob-app"), "ERR 31", "nor bob's client");
  is_str(dump(&t, US, "alice/bob-app"), "ERR 31",
         "nor her user with someone else's client");
  is_str(dump(&t, CL, "<default>"), "ERR 31", "nor <default> directly");
  is_str(dump(&t, DC_RES_BROKER, "1"), "ERR 31", "nor the broker");
  /* One request mixing allowed and denied resources. */
  dc_describe_configs_req_resource_t rs[] = {
      {CL, S("alice-app"), -1, NULL},
      {CL, S("bob-app"), -1, NULL},
      {US, S("alice"), -1, NULL},
      {US, S("bob"), -1, NULL},
      {DC_RES_TOPIC, S("t"), -1, NULL}};
  dc_describe_configs_req_t dreq = {5, rs, false, false, 0, false};
  dc_buf_t body;
  dc_buf_init(&body);
  dc_describe_configs_req_encode(&body, 1, &dreq);
  dc_rd_t rd;
  dc_describe_configs_resp_t resp;
  memset(&resp, 0, sizeof(resp));
  if (exchange(&t, DC_API_DESCRIBE_CONFIGS, 1, &body, &rd))
    dc_describe_configs_resp_decode(&rd, 1, &resp);
  dc_buf_free(&body);
  ok(resp.n_results == 5 && resp.results[0].error_code == 0 &&
         resp.results[0].n_configs == 2 && resp.results[1].error_code == 31 &&
         resp.results[1].n_configs == 0 && resp.results[2].error_code == 0 &&
         resp.results[2].n_configs == 1 && resp.results[3].error_code == 31 &&
         resp.results[4].error_code == 42,
     "mixed describe: each resource answered on its own");

  /* bob with his own client id reads his view, not alice's. */
  as(&t, "User:bob", "bob-app");
  is_str(dump(&t, CL, "bob-app"), "acks=0/10[10:0,8:all];linger.ms=8/9[9:8]",
         "bob reads his own client-id resolved for bob");
  is_str(dump(&t, US, "alice"), "ERR 31", "bob cannot read alice's user");
  as(&t, "User:ro", "whatever");
  is_str(dump(&t, CL, "payments"), "acks=0/7[7:0,8:all]",
         "ro may describe any client (client:*)");
  is_str(dump(&t, US, "ro/payments"), "acks=0/7[7:0,8:all]",
         "... and its own user with any client");
  is_int(SET(&t, CL, "payments", "=acks=1"), 31, "but not alter");
  /* The broker resource. */
  as(&t, "User:ops", "x");
  is_str(dump(&t, DC_RES_BROKER, "1"), "", "ops describes broker 1");
  is_int(alter(&t, IAC, 1, false,
               &(rspec_t){DC_RES_BROKER, "1", {"=x=y", NULL}}, 1),
         31, "altering the broker needs alter on broker");
  as(&t, "User:admin", "x");
  is_int(alter(&t, IAC, 1, false,
               &(rspec_t){DC_RES_BROKER, "1", {"=x=y", NULL}}, 1),
         42, "super user: the broker is read-only anyway");

  /* Reload: a new rule takes effect; a bad file keeps the old rules. */
  as(&t, "User:alice", "alice-app");
  is_int(SET(&t, CL, "alice-app", "=acks=1"), 31, "before reload: denied");
  write_file(acl, "allow User:alice alter client:alice-*\n");
  ok(reload(t.b, err, sizeof(err)) == 0 && !err[0], "reload a good file");
  is_int(SET(&t, CL, "alice-app", "=acks=1"), 0, "after reload: allowed");
  as(&t, "User:ops", "x");
  is_int(SET(&t, CL, "payments", "=acks=1"), 31, "ops lost its rights");
  write_file(acl, "allow User:alice alter client:alice-*\nallow User:ops "
                  "alter nothing:x\n");
  ok(reload(t.b, err, sizeof(err)) == -1 &&
         strstr(err, acl) && strstr(err, ":2: unknown resource") &&
         strstr(err, "old rules kept"),
     "reload of a bad file fails with PATH:LINE: %s", err);
  as(&t, "User:alice", "alice-app");
  is_int(SET(&t, CL, "alice-app", "=acks=0"), 0, "old rules still apply");
  unlink(acl);
  ok(reload(t.b, err, sizeof(err)) == -1 && strstr(err, "cannot open"),
     "reload of a missing file fails: %s", err);
  is_int(SET(&t, CL, "alice-app", "=acks=1"), 0, "old rules still apply");
  tb_free(&t);

  /* dc_broker_new fails with the file's error. */
  write_file(acl, "allow User:a describe client:x\n\ndeny User:b\n");
  dc_broker_t *b = dc_broker_new(&o, NULL, err, sizeof(err));
  ok(!b && strstr(err, acl) && strstr(err, ":3: incomplete rule"),
     "dc_broker_new refuses a bad ACL file: %s", err);
  dc_broker_destroy(b);
  unlink(acl);
  b = dc_broker_new(&o, NULL, err, sizeof(err));
  ok(!b && strstr(err, "cannot open ACL file"),
     "dc_broker_new refuses a missing ACL file: %s", err);
  dc_broker_destroy(b);
  /* An empty file: only the default rule. */
  write_file(acl, "");
  if (ok(tb_init(&t, &o, NULL), "broker with an empty ACL file")) {
    as(&t, "User:x", "c");
    is_str(dump(&t, CL, "c"), "", "own client: readable (empty)");
    is_str(dump(&t, CL, "d"), "ERR 31", "other client: denied");
    is_int(SET(&t, CL, "c", "=acks=1"), 31, "no alter");
    tb_free(&t);
  }
out:
  dc_tu_rmrf(dir);
}

/* Reloading both security files: each on its own. */
static void test_security_reload(void) {
  char dir[256], acl[300], cred[300], err[512] = "";
  if (!ok(dc_tu_tmpdir(dir, sizeof(dir)) == 0, "scratch dir"))
    return;
  snprintf(acl, sizeof(acl), "%s/acl", dir);
  snprintf(cred, sizeof(cred), "%s/creds", dir);
  write_file(acl, "allow User:alice alter client:a\n");
  ok(dc_credentials_add(cred, "alice", "pw-a", 4096, err, sizeof(err)) == 0,
     "credentials file with alice: %s", err);
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.acl_path = acl;
  o.credentials_path = cred;
  tb_t t;
  if (!ok(tb_init(&t, &o, NULL), "broker with ACL and credentials"))
    goto out;
  is_int(dc_credentials_count(t.b->creds), 2, "alice's two SCRAM entries");
  ok(dc_credentials_add(cred, "bob", "pw-b", 4096, err, sizeof(err)) == 0,
     "add bob");
  write_file(acl, "allow User:alice alter client:b\n");
  ok(reload(t.b, err, sizeof(err)) == 0, "reload both: %s", err);
  is_int(dc_credentials_count(t.b->creds), 4, "bob is in after reload");
  as(&t, "User:alice", "x");
  ok(SET(&t, CL, "b", "=acks=1") == 0 && SET(&t, CL, "a", "=acks=1") == 31,
     "the new ACL applies");
  /* A good ACL with bad credentials: the ACL is swapped in, the
   * credentials stay, and each report says so. */
  write_file(acl, "allow User:alice alter client:c\n");
  write_file(cred, "bob SCRAM-SHA-256 nonsense\n");
  dc_reload_file_report_t files[DC_RELOAD_FILES_MAX];
  int n = dc_broker_reload_security(t.b, files);
  ok(n == 2 && !strcmp(files[0].what, "ACL file") &&
         !strcmp(files[0].path, acl) && files[0].error_code == 0 &&
         !files[0].message[0],
     "bad credentials: the ACL file is reported reloaded");
  ok(n == 2 && !strcmp(files[1].what, "credentials") &&
         !strcmp(files[1].path, cred) &&
         files[1].error_code == DC_ERR_INVALID_CONFIG &&
         strstr(files[1].message, cred),
     "  the credentials not, saying why: %s", n == 2 ? files[1].message : "");
  is_int(dc_credentials_count(t.b->creds), 4, "old credentials kept");
  ok(SET(&t, CL, "c", "=acks=1") == 0 && SET(&t, CL, "b", "=acks=0") == 31,
     "the new ACL applies all the same");
  char want[400];
  snprintf(want, sizeof(want),
           "credentials %s: not reloaded, old credentials kept: ", cred);
  ok(reload(t.b, err, sizeof(err)) == -1 &&
         !strncmp(err, want, strlen(want)),
     "  in words: %s", err);
  tb_free(&t);
  dc_broker_t *b = dc_broker_new(&o, NULL, err, sizeof(err));
  ok(!b && strstr(err, cred), "dc_broker_new refuses bad credentials: %s",
     err);
  dc_broker_destroy(b);
out:
  dc_tu_rmrf(dir);
}

/* ---- heartbeat < session across levels ------------------------------------ */

static void test_validation(void) {
  tb_t t;
  if (!ok(tb_init(&t, NULL, NULL), "broker for validation"))
    return;
  is_int(SET(&t, CL, "<default>", "=session.timeout.ms=30000"), 0,
         "<default> session 30000");
  is_int(SET(&t, US, "alice", "=heartbeat.interval.ms=40000"), 40,
         "user alice heartbeat 40000 >= inherited session 30000");
  ok(strstr(t.msg[0], "must be lower than session.timeout.ms (30000) for "
                      "user 'alice'"),
     "  message names the user: %s", t.msg[0]);
  is_int(SET(&t, US, "alice", "=heartbeat.interval.ms=10000"), 0,
         "user alice heartbeat 10000");
  /* A client lowering its session would break alice on that client. */
  is_int(SET(&t, CL, "c1", "=session.timeout.ms=8000"), 40,
         "client c1 session 8000 breaks (alice, c1)");
  ok(strstr(t.msg[0], "this change to client-id 'c1' would break user "
                      "'alice' with client-id 'c1'"),
     "  message: %s", t.msg[0]);
  is_int(alter(&t, IAC, 1, true,
               &(rspec_t){CL, "c1", {"=session.timeout.ms=8000", NULL}}, 1),
         40, "validate_only is checked the same");
  /* ... unless alice has her own session on c1. */
  is_int(SET(&t, US, "alice/c1", "=session.timeout.ms=20000"), 0,
         "alice/c1 session 20000");
  is_int(SET(&t, CL, "c1", "=session.timeout.ms=8000"), 0,
         "now client c1 session 8000 is fine");
  is_int(SET(&t, US, "alice/c1", "-session.timeout.ms"), 40,
         "deleting alice/c1's session would expose c1's 8000");
  ok(strstr(t.msg[0], "for user 'alice' with client-id 'c1'"),
     "  message: %s", t.msg[0]);
  is_int(SET(&t, US, "alice/c2", "=heartbeat.interval.ms=50000"), 40,
         "alice/c2 heartbeat above the session it resolves");
  /* <default> against users. */
  is_int(SET(&t, CL, "<default>", "=session.timeout.ms=9000"), 40,
         "<default> session 9000 breaks user alice (heartbeat 10000)");
  ok(strstr(t.msg[0], "this change to client-id '<default>' would break user "
                      "'alice'"),
     "  message: %s", t.msg[0]);
  is_int(SET(&t, US, "bob", "=session.timeout.ms=6000"), 0, "bob session 6000");
  is_int(SET(&t, CL, "<default>", "=heartbeat.interval.ms=7000"), 40,
         "<default> heartbeat 7000 breaks bob");
  ok(strstr(t.msg[0], "would break user 'bob'"), "  message: %s", t.msg[0]);
  is_int(SET(&t, US, "bob", "-session.timeout.ms"), 0, "bob's session gone");
  /* A user against clients. */
  is_int(SET(&t, CL, "c3", "=heartbeat.interval.ms=25000"), 0,
         "c3 heartbeat 25000");
  is_int(SET(&t, US, "carol", "=session.timeout.ms=20000"), 40,
         "user carol session 20000 breaks (carol, c3)");
  ok(strstr(t.msg[0], "this change to user 'carol' would break user 'carol' "
                      "with client-id 'c3'"),
     "  message: %s", t.msg[0]);
  is_int(SET(&t, US, "carol/c3", "=heartbeat.interval.ms=5000"), 0,
         "carol/c3 heartbeat 5000");
  is_int(SET(&t, US, "carol", "=session.timeout.ms=20000"), 0,
         "now carol session 20000 is fine");
  /* A user with a user+client entity on a client without its own entity. */
  is_int(SET(&t, US, "dan/c9", "=heartbeat.interval.ms=15000"), 0,
         "dan/c9 heartbeat 15000");
  is_int(SET(&t, US, "dan", "=session.timeout.ms=12000"), 40,
         "dan session 12000 breaks (dan, c9)");
  /* A client against a user+client entity whose user has no entity. */
  is_int(SET(&t, US, "erin/c5", "=heartbeat.interval.ms=20000"), 0,
         "erin/c5 heartbeat 20000");
  is_int(SET(&t, CL, "c5", "=session.timeout.ms=15000"), 40,
         "c5 session 15000 breaks (erin, c5)");
  /* <default> against a user+client entity. */
  is_int(SET(&t, CL, "<default>", "=session.timeout.ms=18000"), 40,
         "<default> session 18000 breaks erin/c5 (heartbeat 20000)");
  /* AlterConfigs replacing a set without its session also counts. */
  is_int(alter(&t, AC, 0, false,
               &(rspec_t){US, "alice/c1", {"=acks=1", NULL}}, 1),
         40, "AlterConfigs dropping alice/c1's session is checked too");
  /* Changes that leave the pair alone are not re-checked. */
  is_int(SET(&t, US, "alice", "=acks=1"), 0, "an unrelated key on alice");
  is_int(SET(&t, CL, "<default>", "=acks=1"), 0, "an unrelated default key");
  tb_free(&t);
}

/* ---- the heartbeat/session rule against a brute-force model -------------- */

/* dc_scope_check_pair() is driven directly over a configdb: random alters
 * among a few users, client-ids, their user+client entities and
 * <default>, each answer compared with a reference that resolves every
 * (user or none) x (client-id or none) pair by the rule itself. */

#define HBK "heartbeat.interval.ms"
#define STK "session.timeout.ms"
#define MAXU 8
#define MAXC 8

typedef struct ment {
  int u, c; /* -1 = none; (-1, -1) is <default> */
  dc_scope_ent_t ent;
  const char *hb, *st, *acks; /* the model's values; NULL = unset */
} ment_t;

typedef struct model {
  int nu, nc, n;
  ment_t ents[1 + MAXC + MAXU + MAXU * MAXC];
  dc_configdb_t *db;
  uint64_t rng;
} model_t;

typedef struct mpair {
  const char *hb, *st;
} mpair_t;

static uint64_t m_rand(model_t *m) { /* xorshift64* */
  m->rng ^= m->rng >> 12;
  m->rng ^= m->rng << 25;
  m->rng ^= m->rng >> 27;
  return m->rng * 2685821657736338717ull;
}
static int m_below(model_t *m, int n) { return (int)(m_rand(m) % (uint64_t)n); }

/* Entity index: <default>, clients, users, then user+client. */
static int m_idx(const model_t *m, int u, int c) {
  if (u < 0)
    return c < 0 ? 0 : 1 + c;
  return c < 0 ? 1 + m->nc + u : 1 + m->nc + m->nu + u * m->nc + c;
}

/* Names that need percent-encoding in type-10 names are in the mix. */
static void m_name(char *out, bool user, int i) {
  static const char *const odd_u[] = {"u 2", "CN=x,O=y"}, *const odd_c[] = {"c/2", "c%3"};
  if (i == 2 || i == 3)
    strcpy(out, user ? odd_u[i - 2] : odd_c[i - 2]);
  else
    sprintf(out, "%c%d", user ? 'u' : 'c', i);
}

static bool m_init(model_t *m, int nu, int nc, uint64_t seed) {
  memset(m, 0, sizeof(*m));
  m->nu = nu;
  m->nc = nc;
  m->rng = seed;
  m->db = dc_configdb_new();
  char err[256];
  for (int u = -1; u < nu; u++)
    for (int c = -1; c < nc; c++) {
      char un[16], cn[16], enc[DC_ENTITY_ENC_NAME_SIZE];
      ment_t *e = &m->ents[m_idx(m, u, c)];
      e->u = u;
      e->c = c;
      m_name(un, true, u);
      m_name(cn, false, c);
      int rc;
      if (u < 0)
        rc = dc_scope_ent_init(&e->ent, DC_RES_CLIENT,
                               c < 0 ? "<default>" : cn, err, sizeof(err));
      else
        rc = dc_entity_user_name(un, c < 0 ? NULL : cn, enc, sizeof(enc),
                                 err, sizeof(err)) ||
             dc_scope_ent_init(&e->ent, DC_RES_USER, enc, err, sizeof(err));
      if (rc) {
        diag("model entity (%d, %d): %s", u, c, err);
        return false;
      }
      m->n++;
    }
  return m->db != NULL;
}

static bool m_num(const char *s, long long *v) {
  if (!s || !*s)
    return false;
  char *end;
  *v = strtoll(s, &end, 10);
  return !*end;
}

static mpair_t m_resolve(const model_t *m, int u, int c) {
  int lv[4], n = 0;
  if (u >= 0 && c >= 0)
    lv[n++] = m_idx(m, u, c);
  if (u >= 0)
    lv[n++] = m_idx(m, u, -1);
  if (c >= 0)
    lv[n++] = m_idx(m, -1, c);
  lv[n++] = 0;
  mpair_t p = {NULL, NULL};
  for (int i = 0; i < n; i++) {
    if (!p.hb)
      p.hb = m->ents[lv[i]].hb;
    if (!p.st)
      p.st = m->ents[lv[i]].st;
  }
  return p;
}

static bool m_broken(mpair_t p) {
  long long h, s;
  return m_num(p.hb, &h) && m_num(p.st, &s) && h >= s;
}

static bool m_same(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

/* How check() names (u, c), or the altered entity x when self. */
static void m_combo(const model_t *m, int u, int c, char *out, size_t size) {
  char un[16], cn[16];
  m_name(un, true, u);
  m_name(cn, false, c);
  (void)m;
  if (u < 0)
    snprintf(out, size, "client-id '%s'", c < 0 ? "<default>" : cn);
  else if (c < 0)
    snprintf(out, size, "user '%s'", un);
  else
    snprintf(out, size, "user '%s' with client-id '%s'", un, cn);
}

/* The message a refusal of x's alter names pair (u, c) with. */
static void m_message(const model_t *m, const ment_t *x, int u, int c,
                      mpair_t p, char *out, size_t size) {
  char combo[128], self[128];
  m_combo(m, u, c, combo, sizeof(combo));
  m_combo(m, x->u, x->c, self, sizeof(self));
  if (x->u == u && x->c == c)
    snprintf(out, size, HBK " (%s) must be lower than " STK " (%s) for %s",
             p.hb, p.st, combo);
  else
    snprintf(out, size,
             "this change to %s would break %s, which resolves " HBK
             " (%s) not lower than " STK " (%s)",
             self, combo, p.hb, p.st);
}

typedef struct mstats {
  int steps, accepted, refused, wrong, bad_msg, bad_db, bad_inv, bad_idx;
} mstats_t;

static const char *m_value(model_t *m, bool hb) {
  static const char *const pool[] = {"1", "2", "3",  "4",  "5",  "6",  "7",
                                     "8", "9", "10", "11", "12", "13", "14"};
  int r = m_below(m, 20);
  if (r < 7)
    return NULL;
  if (r == 7)
    return "x"; /* set, but nothing to compare */
  return hb ? pool[m_below(m, 10)] : pool[3 + m_below(m, 11)];
}

/* The reference answer for x's new values (already in the model, the
 * old ones in old): refused when a pair whose resolution changes breaks.
 * *msg_ok: msg is what check() says for one such pair. */
static bool m_reference(model_t *m, ment_t *x, const ment_t *old,
                        const char *msg, bool *msg_ok) {
  bool fine = true;
  *msg_ok = false;
  for (int u = -1; u < m->nu; u++)
    for (int c = -1; c < m->nc; c++) {
      mpair_t now = m_resolve(m, u, c);
      ment_t saved = *x;
      x->hb = old->hb;
      x->st = old->st;
      mpair_t before = m_resolve(m, u, c);
      *x = saved;
      if ((m_same(now.hb, before.hb) && m_same(now.st, before.st)) ||
          !m_broken(now))
        continue;
      fine = false;
      char want[600];
      m_message(m, x, u, c, now, want, sizeof(want));
      if (!strcmp(want, msg))
        *msg_ok = true;
    }
  return fine;
}

/* Stores x's model values in the db: as an alter would, or key by key as
 * loading does. */
static void m_store(model_t *m, const ment_t *x, size_t n,
                    const char *const *k, const char *const *v) {
  if (m_below(m, 4)) {
    dc_configdb_replace(m->db, x->ent.type, x->ent.name, n, k, v);
    return;
  }
  dc_configdb_replace(m->db, x->ent.type, x->ent.name, 0, NULL, NULL);
  size_t first = n ? (size_t)m_below(m, (int)n) : 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = (first + i) % n;
    dc_configdb_set(m->db, x->ent.type, x->ent.name, k[j], v[j]);
  }
}

/* The heap sizes the index must have for the model's values. */
static bool m_index_ok(const model_t *m) {
  size_t want[3][4] = {{0}};
  for (int i = 1; i < m->n; i++) {
    const ment_t *e = &m->ents[i];
    int g = e->u < 0 ? DC_PIX_CLIENTS
                     : e->c < 0 ? DC_PIX_USERS : DC_PIX_USER_CLIENTS;
    long long v;
    bool hbn = m_num(e->hb, &v), stn = m_num(e->st, &v);
    if (g != DC_PIX_USER_CLIENTS) {
      want[g][DC_PIX_HB_ALL] += hbn;
      want[g][DC_PIX_ST_ALL] += stn;
    }
    want[g][DC_PIX_HB_ONLY] += hbn && !e->st;
    want[g][DC_PIX_ST_ONLY] += stn && !e->hb;
  }
  const dc_pairidx_t *ix = dc_configdb_pairidx(m->db);
  for (int g = 0; g < 3; g++)
    for (int h = 0; h < 4; h++)
      if (dc_pairidx_size(ix, g, h) != want[g][h])
        return false;
  return true;
}

/* The db holds exactly x's model values. */
static bool m_db_ok(const model_t *m, const ment_t *x) {
  const dc_entity_t *e = dc_configdb_get(m->db, x->ent.type, x->ent.name);
  if (!x->hb && !x->st && !x->acks)
    return e == NULL;
  return e && e->n == (size_t)(!!x->hb + !!x->st + !!x->acks) &&
         m_same(dc_entity_value(e, HBK), x->hb) &&
         m_same(dc_entity_value(e, STK), x->st) &&
         m_same(dc_entity_value(e, "acks"), x->acks);
}

static bool m_invariant(const model_t *m) {
  for (int u = -1; u < m->nu; u++)
    for (int c = -1; c < m->nc; c++)
      if (m_broken(m_resolve(m, u, c)))
        return false;
  return true;
}

/* One random alter: checked, compared with the reference, applied when
 * accepted. */
static void m_step(model_t *m, mstats_t *s) {
  int kind = m_below(m, 10), xi;
  if (kind == 0)
    xi = 0;
  else if (kind <= 3)
    xi = m_idx(m, -1, m_below(m, m->nc));
  else if (kind <= 6)
    xi = m_idx(m, m_below(m, m->nu), -1);
  else
    xi = m_idx(m, m_below(m, m->nu), m_below(m, m->nc));
  ment_t *x = &m->ents[xi], old = *x;
  bool del = m_below(m, 10) == 0;
  x->hb = del ? NULL : m_value(m, true);
  x->st = del ? NULL : m_value(m, false);
  x->acks = del || m_below(m, 3) ? NULL : "1";
  const char *k[3], *v[3];
  size_t n = 0;
  const char *const keys[3] = {"acks", HBK, STK}, *vals[3] = {x->acks, x->hb, x->st};
  for (int i = 0; i < 3; i++)
    if (vals[i]) {
      k[n] = keys[i];
      v[n++] = vals[i];
    }
  char msg[1024] = "";
  bool got = dc_scope_check_pair(m->db, &x->ent, n, k, v, msg, sizeof(msg));
  bool msg_ok, want = m_reference(m, x, &old, msg, &msg_ok);
  s->steps++;
  if (got != want && s->wrong++ < 5)
    diag("  %s: hb %s->%s st %s->%s: got %d, want %d (%s)", x->ent.name,
         old.hb ? old.hb : "-", x->hb ? x->hb : "-", old.st ? old.st : "-",
         x->st ? x->st : "-", got, want, msg);
  if (got == want && !got && !msg_ok && s->bad_msg++ < 5)
    diag("  %s: refused, but the message names no broken pair: %s",
         x->ent.name, msg);
  if (!got) {
    *x = old;
    s->refused++;
    return;
  }
  s->accepted++;
  m_store(m, x, n, k, v);
  s->bad_db += !m_db_ok(m, x);
  s->bad_inv += !m_invariant(m);
  s->bad_idx += !m_index_ok(m);
}

static void test_rule_model(void) {
  static const struct {
    int nu, nc, steps;
  } runs[] = {{3, 3, 5000}, {3, 3, 5000}, {8, 8, 5000}, {8, 8, 5000}};
  model_t *m = malloc(sizeof(*m));
  for (size_t r = 0; m && r < sizeof(runs) / sizeof(runs[0]); r++) {
    if (!ok(m_init(m, runs[r].nu, runs[r].nc, 0x9e3779b97f4a7c15ull * (r + 1)),
            "model %dx%d, seed %zu", runs[r].nu, runs[r].nc, r + 1))
      break;
    mstats_t s = {0};
    for (int i = 0; i < runs[r].steps; i++)
      m_step(m, &s);
    ok(s.wrong == 0, "  %d alters (%d accepted, %d refused): every answer is "
                     "the reference's (%d not)",
       s.steps, s.accepted, s.refused, s.wrong);
    ok(s.bad_msg == 0, "  every refusal names a pair the change breaks, in "
                       "check()'s words (%d not)", s.bad_msg);
    ok(s.accepted > s.steps / 10 && s.refused > s.steps / 10,
       "  both answers are common");
    ok(s.bad_db == 0 && s.bad_inv == 0,
       "  the db follows the model (%d not) and every pair holds (%d not)",
       s.bad_db, s.bad_inv);
    ok(s.bad_idx == 0, "  the index's heaps hold what the model says (%d not)",
       s.bad_idx);
    dc_configdb_destroy(m->db);
  }
  free(m);
}

/* ---- which pair a refusal names, when an index bound finds it ----------- */

/* Stores name's HB/ST (NULL = unset; both = remove) unchecked. */
static void put(dc_configdb_t *db, int8_t type, const char *name,
                const char *hb, const char *st) {
  const char *k[2], *v[2];
  size_t n = 0;
  if (hb) {
    k[n] = HBK;
    v[n++] = hb;
  }
  if (st) {
    k[n] = STK;
    v[n++] = st;
  }
  dc_configdb_replace(db, type, name, n, k, v);
}

/* Asserts what setting name's HB/ST says: accepted (want NULL) or
 * refused with exactly want. */
static void expect(dc_configdb_t *db, int8_t type, const char *name,
                   const char *hb, const char *st, const char *want,
                   const char *what) {
  dc_scope_ent_t e;
  char msg[1024] = "", err[256];
  if (!ok(!dc_scope_ent_init(&e, type, name, err, sizeof(err)), "%s", what))
    return;
  const char *k[2] = {HBK, STK}, *v[2] = {hb, st};
  size_t n = 0;
  if (!hb) {
    k[0] = STK;
    v[0] = st;
  }
  n = !!hb + !!st;
  bool got = dc_scope_check_pair(db, &e, n, k, v, msg, sizeof(msg));
  if (!ok(want ? !got && !strcmp(msg, want) : got, "%s", what))
    diag("  got %s: %s", got ? "accepted" : "refused", msg);
}

#define BREAKS(self, combo, h, s)                                              \
  "this change to " self " would break " combo ", which resolves " HBK        \
  " (" h ") not lower than " STK " (" s ")"

static void test_rule_messages(void) {
  dc_configdb_t *db = dc_configdb_new();
  char name[32], hb[16], st[16];
  for (int i = 0; i < 50; i++) {
    sprintf(name, "u%02d", i);
    sprintf(st, "%d", 20000 + 10 * i);
    put(db, US, name, NULL, st);
    sprintf(name, "k%02d", i);
    sprintf(hb, "%d", 1000 + i);
    put(db, CL, name, hb, NULL);
  }
  put(db, US, "alice", NULL, "9000");
  put(db, US, "bob", "5000", NULL);
  put(db, US, "carol", "100", "200");
  /* A client-id below the users. */
  expect(db, CL, "c1", "250", NULL, NULL,
         "client heartbeat 250: carol sets both keys, so she is not reached");
  expect(db, CL, "c1", "9500", NULL,
         BREAKS("client-id 'c1'", "user 'alice' with client-id 'c1'", "9500",
                "9000"),
         "client heartbeat 9500 breaks the user with the lowest session");
  expect(db, CL, "c1", NULL, "4000",
         BREAKS("client-id 'c1'", "user 'bob' with client-id 'c1'", "5000",
                "4000"),
         "client session 4000 breaks the user with the highest heartbeat");
  put(db, US, "alice/c1", NULL, "30000");
  expect(db, CL, "c1", "9500", NULL, NULL,
         "alice/c1's own session shields (alice, c1): the next user is fine");
  put(db, CL, "c1", "9500", NULL);
  expect(db, CL, "c1", "20005", NULL,
         BREAKS("client-id 'c1'", "user 'u00' with client-id 'c1'", "20005",
                "20000"),
         "  and past alice, u00's 20000 is the one that breaks");
  /* A user above the client-ids. */
  put(db, CL, "hot", "7000", NULL);
  put(db, CL, "both", "8000", "30000");
  expect(db, US, "dave", NULL, "8500",
         BREAKS("user 'dave'", "user 'dave' with client-id 'c1'", "9500",
                "8500"),
         "user session 8500 breaks the client with the highest heartbeat");
  put(db, US, "dave/c1", "100", NULL);
  expect(db, US, "dave", NULL, "7500",
         BREAKS("user 'dave'", "user 'dave' with client-id 'both'", "8000",
                "7500"),
         "  shielded from c1, a client setting both keys breaks next");
  expect(db, US, "dave", "31000", NULL,
         BREAKS("user 'dave'", "user 'dave' with client-id 'both'", "31000",
                "30000"),
         "user heartbeat 31000 breaks the client with the lowest session");
  expect(db, US, "dave", "31000", "40000", NULL,
         "a user setting both keys does not reach any client");
  /* <default> below everything. */
  put(db, CL, "slow", NULL, "8000");
  expect(db, CL, "<default>", "8500", NULL,
         BREAKS("client-id '<default>'", "client-id 'slow'", "8500", "8000"),
         "default heartbeat 8500 breaks a client's session");
  put(db, CL, "slow", NULL, NULL);
  expect(db, CL, "<default>", "9500", NULL,
         BREAKS("client-id '<default>'", "user 'alice'", "9500", "9000"),
         "default heartbeat 9500 breaks a user's session");
  expect(db, CL, "<default>", NULL, "9000",
         BREAKS("client-id '<default>'", "client-id 'c1'", "9500", "9000"),
         "default session 9000 breaks a client's heartbeat");
  put(db, US, "eve", "12000", NULL);
  expect(db, CL, "<default>", NULL, "9600",
         BREAKS("client-id '<default>'", "user 'eve'", "12000", "9600"),
         "default session 9600 breaks a user's heartbeat");
  put(db, US, "frank/k00", "13000", NULL);
  expect(db, CL, "<default>", NULL, "12500",
         BREAKS("client-id '<default>'", "user 'frank' with client-id 'k00'",
                "13000", "12500"),
         "default session 12500 breaks a user+client heartbeat");
  put(db, US, "frank", NULL, "14000");
  expect(db, CL, "<default>", NULL, "12500", NULL,
         "  not once user frank sets his own session");
  dc_configdb_destroy(db);
}

/* ---- scale ------------------------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__)
#define SCALE_BIG 100000 /* ASan: same shapes, a tenth of the size */
#else
#define SCALE_BIG 1000000
#endif
#define SCALE_SMALL 1000

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* n entities loaded key by key as the store is: n/20 client-ids setting
 * only heartbeat (1000..2999), n/20 only session (10000..29999), n/500
 * users (heartbeat only, session only, or both), n/100 user+client
 * entities setting one of them, <default> 500/45000, the rest client-ids
 * with an unrelated key. Every pair holds. */
static dc_configdb_t *scale_db(int n, double *load_s) {
  dc_configdb_t *db = dc_configdb_new();
  uint64_t r = 42;
  int nside = n / 20, nusers = n / 500, nuc = n / 100, rc = 0;
  char name[64], v[16];
  double t0 = now_s();
#define RND(lo, span) (r = r * 6364136223846793005ull + 1, (int)(lo + (r >> 33) % span))
#define SET1(type, nm, key, val) rc |= dc_configdb_set(db, type, nm, key, val)
  SET1(CL, "<default>", HBK, "500");
  SET1(CL, "<default>", STK, "45000");
  for (int i = 0; i < nside; i++) {
    sprintf(name, "hb%07d", i);
    sprintf(v, "%d", RND(1000, 2000));
    SET1(CL, name, HBK, v);
    sprintf(name, "st%07d", i);
    sprintf(v, "%d", RND(10000, 20000));
    SET1(CL, name, STK, v);
  }
  for (int i = 0; i < nusers; i++) {
    sprintf(name, "user%05d", i);
    if (i % 3 != 1)
      SET1(US, name, HBK, i % 3 ? "1000" : (sprintf(v, "%d", RND(1000, 2000)), v));
    if (i % 3 != 0)
      SET1(US, name, STK, i % 3 == 2 ? "30000" : (sprintf(v, "%d", RND(10000, 20000)), v));
  }
  for (int i = 0; i < nuc; i++) {
    sprintf(name, "user%05d/%s%07d", i % nusers, i % 2 ? "st" : "hb", i / 2);
    sprintf(v, "%d", i % 2 ? RND(1000, 2000) : RND(10000, 20000));
    SET1(US, name, i % 2 ? HBK : STK, v);
  }
  for (int i = 2 * nside + nusers + nuc + 1; i < n; i++) {
    sprintf(name, "p%07d", i);
    SET1(CL, name, "acks", "1");
  }
#undef SET1
#undef RND
  *load_s = now_s() - t0;
  if (rc || dc_configdb_count(db) != (size_t)n)
    diag("scale_db(%d): rc %d, %zu entities", n, rc, dc_configdb_count(db));
  return db;
}

typedef struct alter_case {
  int8_t type;
  const char *name, *hb, *st; /* the new set; NULL = unset */
  bool accept;
  const char *what;
} alter_case_t;

static const alter_case_t scale_cases[] = {
    {CL, "<default>", "500", "20000", true, "<default> session 20000"},
    {CL, "<default>", "9000", "45000", true, "<default> heartbeat 9000"},
    {CL, "<default>", "500", "2500", false, "<default> session 2500"},
    {CL, "<default>", "31000", "45000", false, "<default> heartbeat 31000"},
    {US, "user00000", "9999", NULL, true, "user (heartbeat only) 9999"},
    {US, "user00000", "31000", NULL, false, "user heartbeat 31000"},
    {US, "user00001", NULL, "5000", true, "user (session only) 5000"},
    {US, "user00001", NULL, "2000", false, "user session 2000"},
    {CL, "hb0000000", "9999", NULL, true, "client (heartbeat only) 9999"},
    {CL, "hb0000000", "31000", NULL, false, "client heartbeat 31000"},
    {CL, "st0000000", NULL, "5000", true, "client (session only) 5000"},
    {CL, "st0000000", NULL, "1000", false, "client session 1000"},
};
#define NCASES (sizeof(scale_cases) / sizeof(scale_cases[0]))

/* Mean seconds per check of c over db; *accepted: its answer. */
static double time_case(dc_configdb_t *db, const alter_case_t *c, int reps,
                        bool *accepted, char *msg, size_t msg_size) {
  dc_scope_ent_t e;
  char err[256];
  if (dc_scope_ent_init(&e, c->type, c->name, err, sizeof(err)))
    return -1;
  const char *k[2] = {HBK, STK}, *v[2] = {c->hb, c->st};
  if (!c->hb) {
    k[0] = STK;
    v[0] = c->st;
  }
  size_t n = !!c->hb + !!c->st;
  double t0 = now_s();
  for (int i = 0; i < reps; i++)
    *accepted = dc_scope_check_pair(db, &e, n, k, v, msg, msg_size);
  return (now_s() - t0) / reps;
}

static void test_rule_scale(void) {
  double load_small, load_big;
  dc_configdb_t *small = scale_db(SCALE_SMALL, &load_small);
  dc_configdb_t *big = scale_db(SCALE_BIG, &load_big);
  ok(dc_configdb_count(big) == SCALE_BIG, "%d entities loaded key by key",
     SCALE_BIG);
  diag("load: %d entities in %.3f s, %d in %.3f s", SCALE_SMALL, load_small,
       SCALE_BIG, load_big);
  for (size_t i = 0; i < NCASES; i++) {
    const alter_case_t *c = &scale_cases[i];
    char msg_s[1024] = "", msg_b[1024] = "";
    bool acc_s = !c->accept, acc_b = !c->accept;
    time_case(small, c, 20, &acc_s, msg_s, sizeof(msg_s)); /* warm up */
    double ts = time_case(small, c, 2000, &acc_s, msg_s, sizeof(msg_s));
    time_case(big, c, 20, &acc_b, msg_b, sizeof(msg_b));
    double tb = time_case(big, c, 2000, &acc_b, msg_b, sizeof(msg_b));
    ok(acc_s == c->accept && acc_b == c->accept &&
           (c->accept || (strstr(msg_s, "not lower than") &&
                          strstr(msg_b, "not lower than"))),
       "%s: %s at %d and at %d entities", c->what,
       c->accept ? "accepted" : "refused", SCALE_SMALL, SCALE_BIG);
    if (!c->accept)
      diag("  %s", msg_b);
    diag("  check: %.2f us at %d entities, %.2f us at %d", ts * 1e6,
         SCALE_SMALL, tb * 1e6, SCALE_BIG);
    ok(tb < 50 * ts + 1e-3, "  the check does not grow with the fleet");
  }
  double t0 = now_s();
  dc_configdb_destroy(big);
  diag("destroy: %.3f s", now_s() - t0);
  dc_configdb_destroy(small);
}

/* ---- persistence ---------------------------------------------------------- */

static int load_cb(void *opaque, int8_t type, const char *entity,
                   const char *key, const char *value) {
  char *acc = opaque;
  size_t n = strlen(acc);
  snprintf(acc + n, 4096 - n, "%d|%s|%s|%s\n", type, entity, key, value);
  return 0;
}

static int hist_cb(void *opaque, const dc_audit_row_t *r) {
  char *acc = opaque;
  size_t n = strlen(acc);
  snprintf(acc + n, 4096 - n, "%d|%s|%s|%s\n", r->resource_type, r->entity,
           r->key, r->principal);
  return 0;
}

static void test_persistence(void) {
  char dir[256], err[512] = "";
  if (!ok(dc_tu_tmpdir(dir, sizeof(dir)) == 0, "scratch dir"))
    return;
  dc_store_t *st = NULL;
  if (!ok(dc_store_open_sqlite(dir, &st, err, sizeof(err)) == 0,
          "open SQLite store: %s", err)) {
    dc_tu_rmrf(dir);
    return;
  }
  tb_t t;
  const char *want_app = "acks=all/10[10:all,7:1];linger.ms=5/9[9:5]";
  if (ok(tb_init(&t, NULL, st), "broker over the store")) {
    as(&t, "User:ops", "x");
    is_int(SET(&t, CL, "app", "=acks=1"), 0, "client app");
    is_int(SET(&t, US, "CN=a b,O=x", "=linger.ms=5"), 0, "user CN=a b,O=x");
    is_int(SET(&t, US, "CN%3Da%20b,O=x/app", "=acks=all"), 0,
           "its app entity");
    is_int(SET(&t, US, "gone", "=acks=0"), 0, "user gone");
    is_int(SET(&t, US, "gone", "-acks"), 0, "and emptied");
    is_int(SET(&t, US, "nope", "=acks=9"), 40, "rejected: not stored");
    is_int(alter(&t, IAC, 1, true,
                 &(rspec_t){US, "dry", {"=acks=1", NULL}}, 1),
           0, "validate_only: not stored");
    as(&t, "User:CN=a b,O=x", "app");
    is_str(dump(&t, CL, "app"), want_app, "resolved before restart");
    tb_free(&t);
  }
  char rows[4096] = "";
  dc_store_load(st, load_cb, rows, err, sizeof(err));
  is_str(rows,
         "9|app|acks|1\n10|CN=a%20b,O=x|linger.ms|5\n"
         "10|CN=a%20b,O=x/app|acks|all\n",
         "the store holds type 9 and canonical type 10 rows");
  char hist[4096] = "";
  dc_store_history(st, NULL, hist_cb, hist, err, sizeof(err));
  is_str(hist,
         "9|app|acks|User:ops\n10|CN=a%20b,O=x|linger.ms|User:ops\n"
         "10|CN=a%20b,O=x/app|acks|User:ops\n10|gone|acks|User:ops\n"
         "10|gone|acks|User:ops\n",
         "audit rows carry type 10 and the principal");
  dc_store_close(st);
  st = NULL;
  if (ok(dc_store_open_sqlite(dir, &st, err, sizeof(err)) == 0,
         "reopen the store: %s", err) &&
      ok(tb_init(&t, NULL, st), "a new broker over it")) {
    as(&t, "User:CN=a b,O=x", "app");
    is_str(dump(&t, CL, "app"), want_app, "type 10 survives a restart");
    is_str(dump(&t, US, "CN=a%20b,O=x"), "linger.ms=5/9[9:5]",
           "the user entity too");
    is_str(dump(&t, US, "gone"), "", "the emptied user is gone");
    tb_free(&t);
  }
  dc_store_close(st);
  dc_tu_rmrf(dir);
}

int main(void) {
  test_entity_names();
  test_resolution();
  test_authorization();
  test_security_reload();
  test_validation();
  test_rule_model();
  test_rule_messages();
  test_rule_scale();
  test_persistence();
  is_int(broken, 0, "every response was well-formed and echoed its resources");
  return done_testing();
}
