/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: request decoding and dispatch.
 *
 * Each input is fed three ways:
 *  1. As a stream of size-prefixed request frames: every complete frame's
 *     payload goes to dc_broker_handle() on two long-lived brokers (one
 *     strict, one relaying unknown keys), so sequences such as "alter, then
 *     describe" are explored within one input. Bytes that do not form a
 *     complete frame (including an input that is a bare payload: its first
 *     four bytes read as an absurd size) are handed over as one payload.
 *  2. Every decoder in codec/proto.h runs on the whole input and on each
 *     frame's body (after its request header), for every version of its
 *     API and one past each end.
 *     Every frame also goes to the strict broker as if it came on a SASL
 *     listener (a connection whose authentication state lives for the
 *     whole input), so SaslHandshake, SaslAuthenticate, the raw-token path
 *     and the "nothing before authentication" gate are explored.
 *  3. Oracles that can fail, beyond the sanitizers:
 *     - a decode that succeeds must re-encode, re-decode to exactly the
 *       bytes encoded, and re-encode to the same bytes (codec symmetry);
 *     - every response the broker writes must be one well-formed frame
 *       carrying the request's correlation id whose body our own response
 *       decoder accepts, with one result per requested resource.
 *
 * DC_FUZZ_VERBOSE=1 logs every dispatch and its outcome (for reading a
 * reproducer). Seed mode: with DC_FUZZ_WRITE_SEEDS=DIR set, the binary
 * writes a corpus of valid requests (every API and version), hostile ones
 * (thousands of resources, duplicate keys or repeated describes; values
 * beyond what a classic string carries) and response bodies into DIR,
 * built with the codec's encoders, and exits.
 *
 * Memory: the brokers, scratch arena and buffers are process-lifetime
 * globals, released by an atexit handler. The brokers' state grows with
 * accepted alters, so they are rebuilt every REBUILD_EVERY inputs.
 */
#include "broker/core/broker.h"
#include "codec/proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAME 65536
/* run.sh's -max_len: libFuzzer cuts longer seeds, so none may exceed it. */
#define SEED_MAX 65536
#define REBUILD_EVERY 20000

static dc_broker_t *g_strict, *g_relay; /* owned; see free_globals() */
static dc_arena_t g_arena;              /* owned scratch, reset per call */
static dc_buf_t g_out, g_enc1, g_enc2;  /* owned */
static unsigned long g_inputs;
static bool g_verbose; /* DC_FUZZ_VERBOSE=1: log each dispatch (debugging) */

static const char *const static_keys[] = {"listeners", "message.max.bytes"};
static const char *const static_values[] = {"PLAINTEXT://127.0.0.1:9092",
                                            "1048588"};

/* Each broker's PLAINTEXT connection, with its own fleet slot: a
 * ClientReport is recorded, and the connection closes at every input. */
static void *g_fleet_strict, *g_fleet_relay; /* the brokers' entries */
static const dc_conn_info_t g_conn = {
    .peer = "127.0.0.1:40000",
    .principal = "User:ANONYMOUS",
    .listener = "PLAINTEXT",
    .advertised_host = "127.0.0.1",
    .advertised_port = 9092,
    .fleet = &g_fleet_strict,
};
static const dc_conn_info_t g_conn_relay = {
    .peer = "127.0.0.1:40000",
    .principal = "User:ANONYMOUS",
    .listener = "PLAINTEXT",
    .advertised_host = "127.0.0.1",
    .advertised_port = 9092,
    .fleet = &g_fleet_relay,
};

/* The input's connections close: what reported on them is gone. */
static void close_fleet_conns(void) {
  if (g_fleet_strict)
    dc_broker_fleet_conn_closed(g_strict, g_fleet_strict);
  if (g_fleet_relay)
    dc_broker_fleet_conn_closed(g_relay, g_fleet_relay);
  g_fleet_strict = g_fleet_relay = NULL;
}
/* A connection on a SASL listener; its state is reset for every input. */
static dc_conn_auth_t g_auth; /* owned; cleared per input and at exit */
static dc_conn_info_t g_sasl_conn = {
    .peer = "127.0.0.1:40001",
    .principal = "User:ANONYMOUS",
    .listener = "SASL_PLAINTEXT",
    .advertised_host = "127.0.0.1",
    .advertised_port = 9093,
    .auth = &g_auth,
};

__attribute__((noreturn)) static void die(const char *what, int16_t api,
                                          int16_t v) {
  fprintf(stderr, "fuzz_request: %s (api %d version %d)\n", what, api, v);
  abort();
}

static dc_broker_t *make_broker(bool relay) {
  dc_broker_opts_t o;
  char errstr[256];
  dc_broker_opts_init(&o);
  o.allow_unknown_keys = relay;
  o.n_static = sizeof(static_keys) / sizeof(static_keys[0]);
  o.static_keys = static_keys;
  o.static_values = static_values;
  dc_broker_t *b = dc_broker_new(&o, NULL, errstr, sizeof(errstr));
  if (!b) {
    fprintf(stderr, "fuzz_request: dc_broker_new: %s\n", errstr);
    abort();
  }
  return b;
}

static void free_globals(void) {
  dc_conn_auth_clear(&g_auth);
  dc_broker_destroy(g_strict);
  dc_broker_destroy(g_relay);
  dc_arena_free(&g_arena);
  dc_buf_free(&g_out);
  dc_buf_free(&g_enc1);
  dc_buf_free(&g_enc2);
}

/* ---- codec symmetry --------------------------------------------------- */

/* One checker per message type: decode; if that succeeds, encode, decode
 * the encoding (must succeed and consume it all), encode again (must be
 * byte-identical). */
#define DEFINE_CHECK(fn, T, dec, enc)                                          \
  static void fn(const uint8_t *p, size_t n, int16_t api, int16_t v,         \
                 bool in_range) {                                              \
    T a, c;                                                                    \
    dc_rd_t rd;                                                                \
    dc_rd_init(&rd, p, n, &g_arena);                                           \
    int err = dec(&rd, v, &a);                                                 \
    if (err != rd.err)                                                         \
      die(#dec " return value differs from rd->err", api, v);                  \
    if (err || !in_range) {                                                    \
      dc_arena_reset(&g_arena);                                                \
      return;                                                                  \
    }                                                                          \
    dc_buf_clear(&g_enc1);                                                     \
    if (enc(&g_enc1, v, &a))                                                   \
      die(#enc " refused a message its decoder accepted", api, v);            \
    dc_rd_init(&rd, g_enc1.data, g_enc1.len, &g_arena);                        \
    if (dec(&rd, v, &c))                                                       \
      die(#dec " rejected the output of " #enc, api, v);                       \
    if (rd.pos != g_enc1.len)                                                  \
      die(#dec " did not consume all of " #enc "'s output", api, v);          \
    dc_buf_clear(&g_enc2);                                                     \
    if (enc(&g_enc2, v, &c))                                                   \
      die(#enc " failed on a re-decoded message", api, v);                    \
    if (g_enc1.len != g_enc2.len ||                                            \
        (g_enc1.len && memcmp(g_enc1.data, g_enc2.data, g_enc1.len)))          \
      die(#enc "(" #dec "(x)) is not stable", api, v);                         \
    dc_arena_reset(&g_arena);                                                  \
  }

DEFINE_CHECK(chk_av_req, dc_apiversions_req_t, dc_apiversions_req_decode,
             dc_apiversions_req_encode)
DEFINE_CHECK(chk_av_resp, dc_apiversions_resp_t, dc_apiversions_resp_decode,
             dc_apiversions_resp_encode)
DEFINE_CHECK(chk_md_req, dc_metadata_req_t, dc_metadata_req_decode,
             dc_metadata_req_encode)
DEFINE_CHECK(chk_md_resp, dc_metadata_resp_t, dc_metadata_resp_decode,
             dc_metadata_resp_encode)
DEFINE_CHECK(chk_dc_req, dc_describe_configs_req_t,
             dc_describe_configs_req_decode, dc_describe_configs_req_encode)
DEFINE_CHECK(chk_dc_resp, dc_describe_configs_resp_t,
             dc_describe_configs_resp_decode, dc_describe_configs_resp_encode)
DEFINE_CHECK(chk_ac_req, dc_alter_configs_req_t, dc_alter_configs_req_decode,
             dc_alter_configs_req_encode)
DEFINE_CHECK(chk_ac_resp, dc_alter_configs_resp_t,
             dc_alter_configs_resp_decode, dc_alter_configs_resp_encode)
DEFINE_CHECK(chk_iac_req, dc_alter_configs_req_t,
             dc_incremental_alter_configs_req_decode,
             dc_incremental_alter_configs_req_encode)
DEFINE_CHECK(chk_iac_resp, dc_alter_configs_resp_t,
             dc_incremental_alter_configs_resp_decode,
             dc_incremental_alter_configs_resp_encode)
DEFINE_CHECK(chk_hs_req, dc_sasl_handshake_req_t, dc_sasl_handshake_req_decode,
             dc_sasl_handshake_req_encode)
DEFINE_CHECK(chk_hs_resp, dc_sasl_handshake_resp_t,
             dc_sasl_handshake_resp_decode, dc_sasl_handshake_resp_encode)
DEFINE_CHECK(chk_sa_req, dc_sasl_authenticate_req_t,
             dc_sasl_authenticate_req_decode, dc_sasl_authenticate_req_encode)
DEFINE_CHECK(chk_sa_resp, dc_sasl_authenticate_resp_t,
             dc_sasl_authenticate_resp_decode, dc_sasl_authenticate_resp_encode)
DEFINE_CHECK(chk_rl_req, dc_reload_req_t, dc_reload_req_decode,
             dc_reload_req_encode)
DEFINE_CHECK(chk_rl_resp, dc_reload_resp_t, dc_reload_resp_decode,
             dc_reload_resp_encode)
DEFINE_CHECK(chk_wt_req, dc_watch_req_t, dc_watch_req_decode,
             dc_watch_req_encode)
DEFINE_CHECK(chk_wt_resp, dc_watch_resp_t, dc_watch_resp_decode,
             dc_watch_resp_encode)
DEFINE_CHECK(chk_cr_req, dc_client_report_req_t, dc_client_report_req_decode,
             dc_client_report_req_encode)
DEFINE_CHECK(chk_cr_resp, dc_client_report_resp_t,
             dc_client_report_resp_decode, dc_client_report_resp_encode)
DEFINE_CHECK(chk_df_req, dc_describe_fleet_req_t, dc_describe_fleet_req_decode,
             dc_describe_fleet_req_encode)
DEFINE_CHECK(chk_df_resp, dc_describe_fleet_resp_t,
             dc_describe_fleet_resp_decode, dc_describe_fleet_resp_encode)

typedef void(check_fn)(const uint8_t *, size_t, int16_t, int16_t, bool);
static const struct {
  int16_t api;
  check_fn *req, *resp;
} checks[] = {
    {DC_API_API_VERSIONS, chk_av_req, chk_av_resp},
    {DC_API_METADATA, chk_md_req, chk_md_resp},
    {DC_API_DESCRIBE_CONFIGS, chk_dc_req, chk_dc_resp},
    {DC_API_ALTER_CONFIGS, chk_ac_req, chk_ac_resp},
    {DC_API_INCREMENTAL_ALTER_CONFIGS, chk_iac_req, chk_iac_resp},
    {DC_API_SASL_HANDSHAKE, chk_hs_req, chk_hs_resp},
    {DC_API_SASL_AUTHENTICATE, chk_sa_req, chk_sa_resp},
    {DC_API_RELOAD_SECURITY, chk_rl_req, chk_rl_resp},
    {DC_API_WATCH, chk_wt_req, chk_wt_resp},
    {DC_API_CLIENT_REPORT, chk_cr_req, chk_cr_resp},
    {DC_API_DESCRIBE_FLEET, chk_df_req, chk_df_resp},
};
#define N_CHECKS (sizeof(checks) / sizeof(checks[0]))

/* Header codecs: request header symmetry, response header for every
 * (api, version) pair. */
static void check_headers(const uint8_t *p, size_t n) {
  dc_rd_t rd;
  dc_req_header_t h, h2;
  dc_rd_init(&rd, p, n, &g_arena);
  if (dc_req_header_decode(&rd, &h) == 0) {
    dc_buf_clear(&g_enc1);
    if (dc_req_header_encode(&g_enc1, &h))
      die("request header does not re-encode", h.api_key, h.api_version);
    dc_rd_init(&rd, g_enc1.data, g_enc1.len, &g_arena);
    if (dc_req_header_decode(&rd, &h2) || rd.pos != g_enc1.len ||
        h2.api_key != h.api_key || h2.api_version != h.api_version ||
        h2.correlation_id != h.correlation_id ||
        (!h.client_id != !h2.client_id) ||
        (h.client_id && strcmp(h.client_id, h2.client_id)))
      die("request header round trip differs", h.api_key, h.api_version);
  }
  for (size_t i = 0; i < N_CHECKS; i++) {
    const dc_api_info_t *ai = dc_api_info(checks[i].api);
    for (int16_t v = ai->min_version; v <= ai->max_version; v++) {
      int32_t corr;
      dc_rd_init(&rd, p, n, &g_arena);
      dc_resp_header_decode(&rd, ai->key, v, &corr);
    }
  }
  dc_arena_reset(&g_arena);
}

/* Every decoder, every version, plus one version past each end. */
static void check_decoders(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < N_CHECKS; i++) {
    const dc_api_info_t *ai = dc_api_info(checks[i].api);
    if (!ai)
      die("API missing from the version table", checks[i].api, -1);
    for (int v = ai->min_version - 1; v <= ai->max_version + 1; v++) {
      bool in = v >= ai->min_version && v <= ai->max_version;
      checks[i].req(p, n, ai->key, (int16_t)v, in);
      checks[i].resp(p, n, ai->key, (int16_t)v, in);
    }
  }
}

/* ---- dispatch oracle ---------------------------------------------------- */

/* Number of resources in a request body, or -1 when it does not decode
 * (the broker must then have closed the connection). */
static int32_t request_resources(const dc_req_header_t *h, dc_rd_t *rd) {
  switch (h->api_key) {
  case DC_API_DESCRIBE_CONFIGS: {
    dc_describe_configs_req_t q;
    return dc_describe_configs_req_decode(rd, h->api_version, &q)
               ? -1
               : q.n_resources;
  }
  case DC_API_ALTER_CONFIGS: {
    dc_alter_configs_req_t q;
    return dc_alter_configs_req_decode(rd, h->api_version, &q)
               ? -1
               : q.n_resources;
  }
  case DC_API_INCREMENTAL_ALTER_CONFIGS: {
    dc_alter_configs_req_t q;
    return dc_incremental_alter_configs_req_decode(rd, h->api_version, &q)
               ? -1
               : q.n_resources;
  }
  default:
    return 0;
  }
}

/* The broker answered: the answer must be exactly one frame our codec
 * reads back, for the request it answers. */
static void check_response(const uint8_t *req, size_t req_len,
                           const dc_buf_t *out) {
  dc_rd_t rd;
  dc_req_header_t h;
  dc_rd_init(&rd, req, req_len, &g_arena);
  if (dc_req_header_decode(&rd, &h))
    die("broker answered a request whose header does not decode", -1, -1);
  int32_t n_res = request_resources(&h, &rd);

  int32_t size;
  if (out->len < 8 ||
      dc_frame_peek(out->data, out->len, SIZE_MAX, &size) != 1 ||
      (size_t)size + 4 != out->len)
    die("response is not exactly one frame", h.api_key, h.api_version);

  int16_t v = h.api_version;
  if (h.api_key == DC_API_API_VERSIONS &&
      !dc_api_supported(h.api_key, v))
    v = 0; /* KIP-511: unsupported versions are answered in v0 */
  else if (!dc_api_supported(h.api_key, v))
    die("broker answered an unsupported API or version", h.api_key, v);

  int32_t corr;
  dc_rd_init(&rd, out->data + 4, (size_t)size, &g_arena);
  if (dc_resp_header_decode(&rd, h.api_key, v, &corr) ||
      corr != h.correlation_id)
    die("response header does not echo the correlation id", h.api_key, v);

  int32_t n_out = -1;
  int err;
  switch (h.api_key) {
  case DC_API_API_VERSIONS: {
    dc_apiversions_resp_t r;
    err = dc_apiversions_resp_decode(&rd, v, &r);
    break;
  }
  case DC_API_METADATA: {
    dc_metadata_resp_t r;
    err = dc_metadata_resp_decode(&rd, v, &r);
    break;
  }
  case DC_API_DESCRIBE_CONFIGS: {
    dc_describe_configs_resp_t r;
    err = dc_describe_configs_resp_decode(&rd, v, &r);
    n_out = r.n_results;
    if (!err)
      for (int32_t i = 0; i < r.n_results; i++)
        for (int32_t j = 0; j < r.results[i].n_configs; j++)
          if (!r.results[i].configs[j].name) /* librdkafka crashes on it */
            die("DescribeConfigs response has a null config name",
                h.api_key, v);
    break;
  }
  case DC_API_ALTER_CONFIGS: {
    dc_alter_configs_resp_t r;
    err = dc_alter_configs_resp_decode(&rd, v, &r);
    n_out = r.n_responses;
    break;
  }
  case DC_API_INCREMENTAL_ALTER_CONFIGS: {
    dc_alter_configs_resp_t r;
    err = dc_incremental_alter_configs_resp_decode(&rd, v, &r);
    n_out = r.n_responses;
    break;
  }
  case DC_API_SASL_HANDSHAKE: {
    dc_sasl_handshake_resp_t r;
    err = dc_sasl_handshake_resp_decode(&rd, v, &r);
    break;
  }
  case DC_API_SASL_AUTHENTICATE: {
    dc_sasl_authenticate_resp_t r;
    err = dc_sasl_authenticate_resp_decode(&rd, v, &r);
    break;
  }
  case DC_API_RELOAD_SECURITY: {
    dc_reload_resp_t r;
    err = dc_reload_resp_decode(&rd, v, &r);
    break;
  }
  case DC_API_ENVELOPE: {
    dc_envelope_resp_t r;
    err = dc_envelope_resp_decode(&rd, v, &r);
    break;
  }
  case DC_API_WATCH: {
    dc_watch_resp_t r;
    err = dc_watch_resp_decode(&rd, v, &r);
    break;
  }
  case DC_API_CLIENT_REPORT: {
    dc_client_report_resp_t r;
    err = dc_client_report_resp_decode(&rd, v, &r);
    break;
  }
  case DC_API_DESCRIBE_FLEET: {
    dc_describe_fleet_resp_t r;
    err = dc_describe_fleet_resp_decode(&rd, v, &r);
    break;
  }
  default:
    die("broker answered an API we do not implement", h.api_key, v);
    return;
  }
  if (err)
    die("our decoder rejects the broker's response", h.api_key, v);
  if (rd.pos != rd.len)
    die("response has trailing bytes", h.api_key, v);
  if (n_res < 0)
    die("broker answered a request whose body does not decode", h.api_key, v);
  if (n_out >= 0 && n_out != n_res)
    die("response has not one result per requested resource", h.api_key, v);
}

static void dispatch(dc_broker_t *b, const dc_conn_info_t *conn,
                     const uint8_t *p, size_t n) {
  char errstr[256];
  dc_buf_clear(&g_out);
  bool raw = conn->auth && conn->auth->state == DC_AUTH_RAW;
  int rc = dc_broker_handle(b, conn, p, n, &g_arena, &g_out, errstr,
                            sizeof(errstr));
  dc_arena_reset(&g_arena);
  if (g_verbose)
    fprintf(stderr, "fuzz_request: %s broker: %zu-byte request -> %s%s%s, "
            "%zu-byte response\n", b == g_strict ? "strict" : "relay", n,
            rc == DC_HANDLE_OK ? "ok" : "close", rc ? ": " : "",
            rc ? errstr : "", g_out.len);
  int32_t size;
  if (raw && rc == DC_HANDLE_OK &&
      (dc_frame_peek(g_out.data, g_out.len, SIZE_MAX, &size) != 1 ||
       (size_t)size + 4 != g_out.len))
    die("a raw SASL token reply is not exactly one frame", -1, -1);
  if (!raw && conn->auth && conn->auth->state != DC_AUTH_DONE &&
      rc == DC_HANDLE_OK && n >= 2) {
    int16_t key = (int16_t)(p[0] << 8 | p[1]);
    if (key != DC_API_API_VERSIONS && key != DC_API_SASL_HANDSHAKE &&
        key != DC_API_SASL_AUTHENTICATE)
      die("answered a request before SASL authentication", key, -1);
  }
  if (rc == DC_HANDLE_OK && !raw)
    check_response(p, n, &g_out);
  else if (rc != DC_HANDLE_OK && rc != DC_HANDLE_CLOSE)
    die("dc_broker_handle returned an unknown code", -1, -1);
  dc_arena_reset(&g_arena);
}

/* A payload as a request: to both brokers, and its body (after the request
 * header) through every decoder. */
static void one_payload(const uint8_t *slice, size_t n) {
  /* An exact-size copy, so ASan sees any read past the payload even when
   * more input follows it. Owned here, freed below. */
  uint8_t *p = malloc(n ? n : 1);
  if (!p)
    abort();
  memcpy(p, slice, n);
  dispatch(g_strict, &g_conn, p, n);
  dispatch(g_relay, &g_conn_relay, p, n);
  dispatch(g_strict, &g_sasl_conn, p, n);
  dc_rd_t rd;
  dc_req_header_t h;
  dc_rd_init(&rd, p, n, &g_arena);
  size_t body = dc_req_header_decode(&rd, &h) ? 0 : rd.pos;
  dc_arena_reset(&g_arena);
  if (body)
    check_decoders(p + body, n - body);
  free(p);
}

/* ---- seed corpus -------------------------------------------------------- */
static const char *g_seed_dir;
static int g_seed_n;

static void write_seed(const char *tag, const dc_buf_t *b) {
  char path[4096];
  if (b->err || b->len > SEED_MAX) {
    fprintf(stderr, "fuzz_request: encoding seed %s failed (%s, %zu bytes)\n",
            tag, b->err ? dc_err_str(b->err) : "over -max_len", b->len);
    exit(1);
  }
  snprintf(path, sizeof(path), "%s/%03d-%s", g_seed_dir, g_seed_n++, tag);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f)) {
    fprintf(stderr, "fuzz_request: %s: %s\n", path, strerror(errno));
    exit(1);
  }
}

typedef int(enc_req_fn)(dc_buf_t *b, int16_t v, const void *msg);

/* Appends one request frame to b. */
static void add_frame(dc_buf_t *b, int16_t api, int16_t v, int32_t corr,
                      enc_req_fn *enc, const void *msg) {
  dc_req_header_t h = {api, v, corr, (char *)"fuzz-seed"};
  size_t off = dc_wr_frame_begin(b);
  dc_req_header_encode(b, &h);
  if (enc(b, v, msg) && !b->err)
    b->err = DC_ERR__UNSUPPORTED_API;
  dc_wr_frame_end(b, off);
}

/* Adapters so one add_frame() serves every request type. */
static int enc_av(dc_buf_t *b, int16_t v, const void *m) {
  return dc_apiversions_req_encode(b, v, m);
}
static int enc_md(dc_buf_t *b, int16_t v, const void *m) {
  return dc_metadata_req_encode(b, v, m);
}
static int enc_dc(dc_buf_t *b, int16_t v, const void *m) {
  return dc_describe_configs_req_encode(b, v, m);
}
static int enc_ac(dc_buf_t *b, int16_t v, const void *m) {
  return dc_alter_configs_req_encode(b, v, m);
}
static int enc_iac(dc_buf_t *b, int16_t v, const void *m) {
  return dc_incremental_alter_configs_req_encode(b, v, m);
}
static int enc_hs(dc_buf_t *b, int16_t v, const void *m) {
  return dc_sasl_handshake_req_encode(b, v, m);
}
static int enc_sa(dc_buf_t *b, int16_t v, const void *m) {
  return dc_sasl_authenticate_req_encode(b, v, m);
}
static int enc_rl(dc_buf_t *b, int16_t v, const void *m) {
  return dc_reload_req_encode(b, v, m);
}
static int enc_wt(dc_buf_t *b, int16_t v, const void *m) {
  return dc_watch_req_encode(b, v, m);
}
static int enc_cr(dc_buf_t *b, int16_t v, const void *m) {
  return dc_client_report_req_encode(b, v, m);
}
static int enc_df(dc_buf_t *b, int16_t v, const void *m) {
  return dc_describe_fleet_req_encode(b, v, m);
}

static void seed_requests(dc_buf_t *b) {
  char tag[64];
  const dc_api_info_t *ai;

  dc_apiversions_req_t av = {(char *)"librdkafka", (char *)"2.0.2"};
  for (int16_t v = 0; v <= 4; v++) { /* 4: unsupported, answered in v0 */
    dc_buf_clear(b);
    add_frame(b, DC_API_API_VERSIONS, v, 1, enc_av, &av);
    if (v == 4) { /* the encoder refuses v4; use a v3 body */
      dc_buf_clear(b);
      dc_req_header_t h = {DC_API_API_VERSIONS, 4, 1, (char *)"x"};
      size_t off = dc_wr_frame_begin(b);
      dc_req_header_encode(b, &h);
      dc_apiversions_req_encode(b, 3, &av);
      dc_wr_frame_end(b, off);
    }
    snprintf(tag, sizeof(tag), "apiversions-v%d", v);
    write_seed(tag, b);
  }

  dc_metadata_req_topic_t topic = {.name = (char *)"some-topic"};
  ai = dc_api_info(DC_API_METADATA);
  for (int16_t v = ai->min_version; v <= ai->max_version; v++) {
    dc_metadata_req_t none = {.n_topics = 0, .allow_auto_topic_creation = true};
    dc_metadata_req_t all = {.n_topics = v ? -1 : 0};
    dc_metadata_req_t one = {.n_topics = 1, .topics = &topic,
                             .include_topic_authorized_operations = true};
    dc_buf_clear(b);
    add_frame(b, DC_API_METADATA, v, 2, enc_md, &none);
    add_frame(b, DC_API_METADATA, v, 3, enc_md, &all);
    snprintf(tag, sizeof(tag), "metadata-v%d-empty-all", v);
    write_seed(tag, b);
    dc_buf_clear(b);
    add_frame(b, DC_API_METADATA, v, 4, enc_md, &one);
    snprintf(tag, sizeof(tag), "metadata-v%d-topic", v);
    write_seed(tag, b);
  }

  char *keys[] = {(char *)"session.timeout.ms", (char *)"acks"};
  dc_describe_configs_req_resource_t dres[] = {
      {DC_RES_CLIENT, (char *)"bench-client", -1, NULL},
      {DC_RES_CLIENT, (char *)"<default>", 2, keys},
      {DC_RES_BROKER, (char *)"1", -1, NULL},
      {DC_RES_TOPIC, (char *)"t", 0, NULL},
  };
  ai = dc_api_info(DC_API_DESCRIBE_CONFIGS);
  for (int16_t v = ai->min_version; v <= ai->max_version; v++) {
    dc_describe_configs_req_t d = {4, dres, true, true, 7, false};
    dc_buf_clear(b);
    add_frame(b, DC_API_DESCRIBE_CONFIGS, v, 5, enc_dc, &d);
    snprintf(tag, sizeof(tag), "describe-v%d", v);
    write_seed(tag, b);
  }

  /* Alter then describe in one input: a stateful sequence. */
  dc_alter_config_t set[] = {
      {(char *)"session.timeout.ms", DC_OP_SET, (char *)"30000"},
      {(char *)"heartbeat.interval.ms", DC_OP_SET, (char *)"3000"},
      {(char *)"acks", DC_OP_SET, (char *)"all"},
  };
  dc_alter_config_t ops[] = {
      {(char *)"debug", DC_OP_APPEND, (char *)"broker,topic"},
      {(char *)"partition.assignment.strategy", DC_OP_SUBTRACT,
       (char *)"range"},
      {(char *)"session.timeout.ms", DC_OP_DELETE, NULL},
      {(char *)"linger.ms", DC_OP_SET, (char *)"5"},
  };
  dc_alter_resource_t ares[] = {
      {DC_RES_CLIENT, (char *)"bench-client", 3, set},
      {DC_RES_CLIENT, (char *)"<default>", 3, set},
      {DC_RES_BROKER, (char *)"1", 1, set},
  };
  dc_alter_resource_t ires[] = {
      {DC_RES_CLIENT, (char *)"bench-client", 4, ops},
      {DC_RES_CLIENT, (char *)"bench-client", 1, ops}, /* listed twice */
      {DC_RES_CLIENT, (char *)"other", 3, set},
  };
  dc_describe_configs_req_t d1 = {2, dres, true, false, 0, false};
  ai = dc_api_info(DC_API_ALTER_CONFIGS);
  for (int16_t v = ai->min_version; v <= ai->max_version; v++) {
    for (int vo = 0; vo <= 1; vo++) {
      dc_alter_configs_req_t a = {3, ares, vo == 1};
      dc_buf_clear(b);
      add_frame(b, DC_API_ALTER_CONFIGS, v, 6, enc_ac, &a);
      add_frame(b, DC_API_DESCRIBE_CONFIGS, 1, 7, enc_dc, &d1);
      snprintf(tag, sizeof(tag), "alter-v%d%s", v, vo ? "-validate" : "");
      write_seed(tag, b);
    }
  }
  ai = dc_api_info(DC_API_INCREMENTAL_ALTER_CONFIGS);
  for (int16_t v = ai->min_version; v <= ai->max_version; v++) {
    dc_alter_configs_req_t one = {1, ires, false};
    dc_alter_configs_req_t dup = {3, ires, false};
    dc_buf_clear(b);
    add_frame(b, DC_API_INCREMENTAL_ALTER_CONFIGS, v, 8, enc_iac, &one);
    add_frame(b, DC_API_DESCRIBE_CONFIGS, 1, 9, enc_dc, &d1);
    add_frame(b, DC_API_INCREMENTAL_ALTER_CONFIGS, v, 10, enc_iac, &dup);
    add_frame(b, DC_API_DESCRIBE_CONFIGS, 0, 11, enc_dc, &d1);
    snprintf(tag, sizeof(tag), "incremental-v%d", v);
    write_seed(tag, b);
  }

  /* SASL: handshake then authenticate (v1 path) or raw tokens (v0). */
  static const char plain_tok[] = "\0alice\0alice-secret";
  static const char scram_first[] = "n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL";
  for (int16_t hv = 0; hv <= 1; hv++) {
    for (int m = 0; m < 2; m++) {
      dc_sasl_handshake_req_t hs = {(char *)(m ? "SCRAM-SHA-256" : "PLAIN")};
      dc_buf_clear(b);
      add_frame(b, DC_API_SASL_HANDSHAKE, hv, 13, enc_hs, &hs);
      const char *tok = m ? scram_first : plain_tok;
      int32_t tl = (int32_t)(m ? sizeof(scram_first) - 1 : sizeof(plain_tok) - 1);
      if (hv == 1) {
        for (int16_t av = 0; av <= 2; av++) {
          dc_sasl_authenticate_req_t sa = {(const uint8_t *)tok, tl};
          add_frame(b, DC_API_SASL_AUTHENTICATE, av, 14 + av, enc_sa, &sa);
        }
      } else {
        size_t off = dc_wr_frame_begin(b);
        dc_buf_append(b, tok, (size_t)tl);
        dc_wr_frame_end(b, off);
      }
      add_frame(b, DC_API_DESCRIBE_CONFIGS, 1, 20, enc_dc, &d1);
      snprintf(tag, sizeof(tag), "sasl-v%d-%s", hv, m ? "scram" : "plain");
      write_seed(tag, b);
    }
  }
  dc_reload_req_t rl_all = {NULL}, rl_one = {(char *)"SSL"};
  dc_buf_clear(b);
  add_frame(b, DC_API_RELOAD_SECURITY, 0, 21, enc_rl, &rl_all);
  add_frame(b, DC_API_RELOAD_SECURITY, 0, 22, enc_rl, &rl_one);
  add_frame(b, DC_API_RELOAD_SECURITY, 1, 23, enc_rl, &rl_all);
  write_seed("reload-security", b);
  /* Watches are answered at once here: the fuzzer's connection cannot
   * wait, so none parks. */
  dc_watch_req_t wt_new = {(char *)"fuzz-seed", -1, 1000, 0},
                 wt_known = {(char *)"<default>", 12345, 0, 3};
  dc_buf_clear(b);
  add_frame(b, DC_API_WATCH, 0, 23, enc_wt, &wt_new);
  add_frame(b, DC_API_WATCH, 0, 24, enc_wt, &wt_known);
  add_frame(b, DC_API_WATCH, 1, 124, enc_wt, &wt_known); /* min_position */
  write_seed("watch", b);
  /* A report, then the fleet view with and without filters. */
  dc_client_report_req_t cr = {
      (char *)"fuzz-seed", (char *)"0123456789abcdef0123456789abcdef",
      (char *)"producer", (char *)"dynconf-agent", (char *)"0.1.0",
      (char *)"librdkafka/2.0.2", -1, 1, DC_OUTCOME_PARTLY,
      (char *)"acks=1 (pinned)"};
  dc_describe_fleet_req_t df_all = {.since_seq = -1},
                          df_one = {.client_id = (char *)"fuzz-seed",
                                    .user = (char *)"ANONYMOUS",
                                    .since_seq = -1},
                          df_page = {.since_seq = 0, .timeout_ms = 1000,
                                     .after_client_id = (char *)"a",
                                     .after_instance_id = (char *)"i",
                                     .max_clients = 1};
  dc_buf_clear(b);
  add_frame(b, DC_API_CLIENT_REPORT, 0, 25, enc_cr, &cr);
  add_frame(b, DC_API_DESCRIBE_FLEET, 0, 26, enc_df, &df_all);
  add_frame(b, DC_API_DESCRIBE_FLEET, 0, 27, enc_df, &df_one);
  add_frame(b, DC_API_DESCRIBE_FLEET, 1, 28, enc_df, &df_page);
  write_seed("fleet", b);

  /* A bare payload (no size prefix): DescribeConfigs v1. */
  dc_buf_clear(b);
  add_frame(b, DC_API_DESCRIBE_CONFIGS, 1, 12, enc_dc, &d1);
  dc_buf_consume(b, 4);
  write_seed("describe-v1-bare-payload", b);
}

/* ---- hostile seeds: the shapes of known attacks, each under SEED_MAX ---- */

/* calloc that aborts; the seed writer's allocations are freed by it. */
static void *seed_calloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz);
  if (!p)
    abort();
  return p;
}

/* n copies of c, NUL-terminated; the caller frees it. */
static char *seed_fill(char c, size_t n) {
  char *s = seed_calloc(n + 1, 1);
  memset(s, c, n);
  return s;
}

/* DescribeConfigs of client "a" (all keys) in version v. */
static void add_describe_a(dc_buf_t *b, int16_t v, int32_t corr) {
  dc_describe_configs_req_resource_t r = {DC_RES_CLIENT, (char *)"a", -1,
                                          NULL};
  dc_describe_configs_req_t d = {1, &r, true, v >= 3, 0, false};
  add_frame(b, DC_API_DESCRIBE_CONFIGS, v, corr, enc_dc, &d);
}

/* IncrementalAlterConfigs v0 with 5,000 copies of (CLIENT, "a", []). */
static void seed_many_resources(dc_buf_t *b) {
  enum { N = 5000 };
  dc_alter_resource_t *res = seed_calloc(N, sizeof(*res));
  for (int i = 0; i < N; i++)
    res[i] = (dc_alter_resource_t){DC_RES_CLIENT, (char *)"a", 0, NULL};
  for (int vo = 1; vo >= 0; vo--) {
    dc_alter_configs_req_t a = {N, res, vo == 1};
    dc_buf_clear(b);
    add_frame(b, DC_API_INCREMENTAL_ALTER_CONFIGS, 0, 30, enc_iac, &a);
    write_seed(vo ? "hostile-iac-v0-5000-resources-validate"
                  : "hostile-iac-v0-5000-resources",
               b);
  }
  free(res);
}

/* One resource setting acks 4,000 times (alternating values), then a
 * describe of it. */
static void seed_duplicate_keys(dc_buf_t *b) {
  enum { N = 4000 };
  dc_alter_config_t *cf = seed_calloc(N, sizeof(*cf));
  for (int i = 0; i < N; i++)
    cf[i] = (dc_alter_config_t){(char *)"acks", DC_OP_SET,
                                (char *)(i % 2 ? "all" : "1")};
  dc_alter_resource_t r = {DC_RES_CLIENT, (char *)"a", N, cf};
  dc_alter_configs_req_t a = {1, &r, false};
  dc_buf_clear(b);
  add_frame(b, DC_API_INCREMENTAL_ALTER_CONFIGS, 0, 31, enc_iac, &a);
  add_describe_a(b, 1, 32);
  write_seed("hostile-iac-v0-4000-duplicate-keys", b);
  free(cf);
}

/* Client "a" gets values, then DescribeConfigs v3 names it 5,000 times
 * with synonyms and documentation. */
static void seed_repeated_describe(dc_buf_t *b) {
  enum { N = 5000 };
  dc_alter_config_t set[] = {
      {(char *)"acks", DC_OP_SET, (char *)"all"},
      {(char *)"linger.ms", DC_OP_SET, (char *)"5"},
      {(char *)"debug", DC_OP_SET, (char *)"broker,topic,msg"},
  };
  dc_alter_resource_t ar = {DC_RES_CLIENT, (char *)"a", 3, set};
  dc_alter_configs_req_t a = {1, &ar, false};
  dc_describe_configs_req_resource_t *res = seed_calloc(N, sizeof(*res));
  for (int i = 0; i < N; i++)
    res[i] = (dc_describe_configs_req_resource_t){DC_RES_CLIENT, (char *)"a",
                                                  -1, NULL};
  dc_describe_configs_req_t d = {N, res, true, true, 0, false};
  dc_buf_clear(b);
  add_frame(b, DC_API_INCREMENTAL_ALTER_CONFIGS, 1, 33, enc_iac, &a);
  add_frame(b, DC_API_DESCRIBE_CONFIGS, 3, 34, enc_dc, &d);
  write_seed("hostile-describe-v3-5000-same-client", b);
  free(res);
}

/* One value set on client "a" by api/version, then described in a
 * classic (v1) and a flexible (v4) DescribeConfigs. */
static void seed_big_value(dc_buf_t *b, const char *tag, int16_t api,
                           int16_t v, const char *key, char *value) {
  dc_alter_config_t c = {(char *)key, DC_OP_SET, value};
  dc_alter_resource_t r = {DC_RES_CLIENT, (char *)"a", 1, &c};
  dc_alter_configs_req_t a = {1, &r, false};
  dc_buf_clear(b);
  add_frame(b, api, v, 35, api == DC_API_ALTER_CONFIGS ? enc_ac : enc_iac,
            &a);
  add_describe_a(b, 1, 36);
  add_describe_a(b, 4, 37);
  write_seed(tag, b);
}

/* Huge values: linger.ms of zeros (the longest classic string, and a
 * longer compact one) and a 40,000-byte value, which no classic string
 * can carry, for a schema key and for a key outside the schema (relayed
 * by the relaying broker). */
static void seed_huge_values(dc_buf_t *b) {
  char *z = seed_fill('0', 60000);
  z[32767] = '\0';
  seed_big_value(b, "hostile-alter-v0-linger-32767-zeros",
                 DC_API_ALTER_CONFIGS, 0, "linger.ms", z);
  z[32767] = '0';
  seed_big_value(b, "hostile-iac-v1-linger-60000-zeros",
                 DC_API_INCREMENTAL_ALTER_CONFIGS, 1, "linger.ms", z);
  free(z);
  char *v = seed_fill('v', 40000);
  seed_big_value(b, "hostile-iac-v1-value-40000",
                 DC_API_INCREMENTAL_ALTER_CONFIGS, 1, "x.unknown", v);
  seed_big_value(b, "hostile-alter-v2-acks-40000", DC_API_ALTER_CONFIGS, 2,
                 "acks", v);
  free(v);
}

static void seed_hostile(dc_buf_t *b) {
  seed_many_resources(b);
  seed_duplicate_keys(b);
  seed_repeated_describe(b);
  seed_huge_values(b);
}

/* Response bodies, for the response decoders (the dispatch path sees them
 * as garbage payloads, which is fine). */
static void seed_responses(dc_buf_t *b) {
  char tag[64];
  const dc_api_info_t *ai;
  dc_api_range_t ranges[] = {{18, 0, 3}, {3, 0, 12}, {32, 0, 4}};
  dc_apiversions_resp_t av = {0, 3, ranges, 0};
  for (int16_t v = 0; v <= 3; v++) {
    dc_buf_clear(b);
    dc_apiversions_resp_encode(b, v, &av);
    snprintf(tag, sizeof(tag), "resp-apiversions-v%d", v);
    write_seed(tag, b);
  }
  int32_t replicas[] = {1};
  dc_metadata_partition_t part = {0, 0, 1, 5, 1, replicas, 1, replicas,
                                  0, NULL};
  dc_metadata_topic_t topic = {.name = (char *)"t", .n_partitions = 1,
                               .partitions = &part,
                               .topic_authorized_operations = INT32_MIN};
  dc_metadata_broker_t broker = {1, (char *)"127.0.0.1", 9092, NULL};
  dc_metadata_resp_t md = {0, 1, &broker, (char *)"dynconf", 1, 1, &topic,
                           INT32_MIN};
  ai = dc_api_info(DC_API_METADATA);
  for (int16_t v = ai->min_version; v <= ai->max_version; v++) {
    dc_buf_clear(b);
    dc_metadata_resp_encode(b, v, &md);
    snprintf(tag, sizeof(tag), "resp-metadata-v%d", v);
    write_seed(tag, b);
  }
  dc_describe_configs_synonym_t syn = {(char *)"session.timeout.ms",
                                       (char *)"45000", DC_SRC_DYNAMIC_DEFAULT};
  dc_describe_configs_entry_t ent = {(char *)"session.timeout.ms",
                                     (char *)"30000", false, false,
                                     DC_SRC_DYNAMIC_CLIENT, false, 1, &syn, 3,
                                     (char *)"doc"};
  dc_describe_configs_result_t res = {0, NULL, DC_RES_CLIENT,
                                      (char *)"bench-client", 1, &ent, 7};
  dc_describe_configs_resp_t dr = {0, 1, &res, -1};
  ai = dc_api_info(DC_API_DESCRIBE_CONFIGS);
  for (int16_t v = ai->min_version; v <= ai->max_version; v++) {
    dc_buf_clear(b);
    dc_describe_configs_resp_encode(b, v, &dr);
    snprintf(tag, sizeof(tag), "resp-describe-v%d", v);
    write_seed(tag, b);
  }
  dc_alter_result_t ar = {40, (char *)"bad value", DC_RES_CLIENT,
                          (char *)"bench-client"};
  dc_alter_configs_resp_t acr = {0, 1, &ar};
  for (int16_t v = 0; v <= 2; v++) {
    dc_buf_clear(b);
    dc_alter_configs_resp_encode(b, v, &acr);
    snprintf(tag, sizeof(tag), "resp-alter-v%d", v);
    write_seed(tag, b);
  }
  for (int16_t v = 0; v <= 1; v++) {
    dc_buf_clear(b);
    dc_incremental_alter_configs_resp_encode(b, v, &acr);
    snprintf(tag, sizeof(tag), "resp-incremental-v%d", v);
    write_seed(tag, b);
  }
}

static void write_seeds(const char *dir) {
  dc_buf_t b;
  g_seed_dir = dir;
  if (mkdir(dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "fuzz_request: mkdir %s: %s\n", dir, strerror(errno));
    exit(1);
  }
  dc_buf_init(&b);
  seed_requests(&b);
  seed_hostile(&b);
  seed_responses(&b);
  dc_buf_free(&b);
  printf("fuzz_request: wrote %d seeds to %s\n", g_seed_n, dir);
}

/* ---- libFuzzer entry points -------------------------------------------- */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *seeds = getenv("DC_FUZZ_WRITE_SEEDS");
  if (seeds && *seeds) {
    write_seeds(seeds);
    exit(0);
  }
  const char *verbose = getenv("DC_FUZZ_VERBOSE");
  g_verbose = verbose && *verbose && *verbose != '0';
  dc_arena_init(&g_arena);
  dc_buf_init(&g_out);
  dc_buf_init(&g_enc1);
  dc_buf_init(&g_enc2);
  g_strict = make_broker(false);
  g_relay = make_broker(true);
  atexit(free_globals);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (++g_inputs % REBUILD_EVERY == 0) { /* bound the brokers' growth */
    dc_broker_destroy(g_strict);
    dc_broker_destroy(g_relay);
    g_strict = make_broker(false);
    g_relay = make_broker(true);
  }
  close_fleet_conns();
  check_headers(data, size);
  check_decoders(data, size);
  dc_conn_auth_clear(&g_auth); /* a new connection on the SASL listener */
  memset(&g_auth, 0, sizeof(g_auth));
  g_auth.state = DC_AUTH_HANDSHAKE;

  size_t pos = 0;
  while (pos < size) {
    int32_t n;
    if (dc_frame_peek(data + pos, size - pos, MAX_FRAME, &n) != 1)
      break;
    one_payload(data + pos + 4, (size_t)n);
    pos += 4 + (size_t)n;
  }
  if (pos < size) /* a bare payload, a truncated or an oversized frame */
    one_payload(data + pos, size - pos);
  return 0;
}
