/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Codec tests for DescribeConfigs (32, v0-4), AlterConfigs (33, v0-2) and
 * IncrementalAlterConfigs (44, v0-1):
 *   - byte-exact vectors derived by hand from apache/kafka's message
 *     schemas (clients/src/main/resources/common/message/<Name>.json);
 *   - round trips at every version (encode, decode, compare every field,
 *     re-encode to identical bytes), each with a check that every strict
 *     prefix of the encoding fails to decode;
 *   - array-count bounds: K minimal elements decode, K+5 claimed elements
 *     are rejected straight after the count, before any allocation;
 *   - malformed input: negative and huge counts, null non-nullable strings,
 *     bad booleans, over-long varints, embedded NULs, bad versions.
 */
#include "codec/proto.h"
#include "../tap.h"

#include <stdint.h>
#include <string.h>

/* Owns every decoded message; reset before each decode. Freed at exit. */
static dc_arena_t arena;

typedef union anymsg {
  dc_describe_configs_req_t dreq;
  dc_describe_configs_resp_t dresp;
  dc_alter_configs_req_t areq;
  dc_alter_configs_resp_t aresp;
} anymsg_t;

/* One message type of one API, behind a uniform interface. */
typedef struct kind {
  const char *name;
  int16_t api;
  int (*enc)(dc_buf_t *b, int16_t v, const void *m);
  int (*dec)(dc_rd_t *rd, int16_t v, void *m);
  /* want: the message encoded at v; got: what decoding gave back. */
  bool (*eq)(const void *want, const void *got, int16_t v);
} kind_t;

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      diag(__VA_ARGS__);                                                       \
      return false;                                                            \
    }                                                                          \
  } while (0)

static bool str_eq(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

#define SHOW(s) ((s) ? (s) : "(null)")

/* ---- field-by-field comparisons ----------------------------------------- */

static bool dreq_eq(const void *wv, const void *gv, int16_t v) {
  const dc_describe_configs_req_t *w = wv, *g = gv;
  EXPECT(g->n_resources == w->n_resources, "n_resources %d, want %d",
         g->n_resources, w->n_resources);
  for (int32_t i = 0; i < w->n_resources; i++) {
    const dc_describe_configs_req_resource_t *wr = &w->resources[i],
                                             *gr = &g->resources[i];
    EXPECT(gr->resource_type == wr->resource_type, "[%d] resource_type", i);
    EXPECT(str_eq(gr->resource_name, wr->resource_name),
           "[%d] resource_name \"%s\"", i, SHOW(gr->resource_name));
    EXPECT(gr->n_configuration_keys == wr->n_configuration_keys,
           "[%d] n_configuration_keys %d, want %d", i,
           gr->n_configuration_keys, wr->n_configuration_keys);
    EXPECT(wr->n_configuration_keys >= 0 || !gr->configuration_keys,
           "[%d] null key list has a pointer", i);
    for (int32_t k = 0; k < wr->n_configuration_keys; k++)
      EXPECT(str_eq(gr->configuration_keys[k], wr->configuration_keys[k]),
             "[%d] key %d \"%s\"", i, k, SHOW(gr->configuration_keys[k]));
  }
  EXPECT(g->include_synonyms == (v >= 1 && w->include_synonyms),
         "include_synonyms");
  EXPECT(g->include_documentation == (v >= 3 && w->include_documentation),
         "include_documentation");
  return true;
}

static bool entry_eq(const dc_describe_configs_entry_t *w,
                     const dc_describe_configs_entry_t *g, int16_t v,
                     int32_t i, int32_t k) {
  EXPECT(str_eq(g->name, w->name), "[%d][%d] name \"%s\"", i, k, SHOW(g->name));
  EXPECT(str_eq(g->value, w->value), "[%d][%d] value \"%s\"", i, k,
         SHOW(g->value));
  EXPECT(g->read_only == w->read_only, "[%d][%d] read_only", i, k);
  /* Absent fields decode to the schema defaults. */
  EXPECT(g->is_default == (v == 0 && w->is_default), "[%d][%d] is_default", i,
         k);
  EXPECT(g->config_source == (v >= 1 ? w->config_source : -1),
         "[%d][%d] config_source %d", i, k, g->config_source);
  EXPECT(g->is_sensitive == w->is_sensitive, "[%d][%d] is_sensitive", i, k);
  int32_t nsyn = v >= 1 ? w->n_synonyms : 0;
  EXPECT(g->n_synonyms == nsyn, "[%d][%d] n_synonyms %d, want %d", i, k,
         g->n_synonyms, nsyn);
  for (int32_t s = 0; s < nsyn; s++) {
    const dc_describe_configs_synonym_t *ws = &w->synonyms[s],
                                        *gs = &g->synonyms[s];
    EXPECT(str_eq(gs->name, ws->name), "[%d][%d] synonym %d name", i, k, s);
    EXPECT(str_eq(gs->value, ws->value), "[%d][%d] synonym %d value", i, k, s);
    EXPECT(gs->source == ws->source, "[%d][%d] synonym %d source", i, k, s);
  }
  EXPECT(g->config_type == (v >= 3 ? w->config_type : 0),
         "[%d][%d] config_type %d", i, k, g->config_type);
  EXPECT(str_eq(g->documentation, v >= 3 ? w->documentation : NULL),
         "[%d][%d] documentation \"%s\"", i, k, SHOW(g->documentation));
  return true;
}

static bool dresp_eq(const void *wv, const void *gv, int16_t v) {
  const dc_describe_configs_resp_t *w = wv, *g = gv;
  EXPECT(g->throttle_time_ms == w->throttle_time_ms, "throttle_time_ms");
  EXPECT(g->n_results == w->n_results, "n_results %d, want %d", g->n_results,
         w->n_results);
  for (int32_t i = 0; i < w->n_results; i++) {
    const dc_describe_configs_result_t *wr = &w->results[i],
                                       *gr = &g->results[i];
    EXPECT(gr->error_code == wr->error_code, "[%d] error_code", i);
    EXPECT(str_eq(gr->error_message, wr->error_message), "[%d] error_message",
           i);
    EXPECT(gr->resource_type == wr->resource_type, "[%d] resource_type", i);
    EXPECT(str_eq(gr->resource_name, wr->resource_name), "[%d] resource_name",
           i);
    EXPECT(gr->n_configs == wr->n_configs, "[%d] n_configs %d, want %d", i,
           gr->n_configs, wr->n_configs);
    for (int32_t k = 0; k < wr->n_configs; k++)
      if (!entry_eq(&wr->configs[k], &gr->configs[k], v, i, k))
        return false;
  }
  return true;
}

static bool areq_eq_common(const void *wv, const void *gv, bool incremental) {
  const dc_alter_configs_req_t *w = wv, *g = gv;
  EXPECT(g->n_resources == w->n_resources, "n_resources %d, want %d",
         g->n_resources, w->n_resources);
  for (int32_t i = 0; i < w->n_resources; i++) {
    const dc_alter_resource_t *wr = &w->resources[i], *gr = &g->resources[i];
    EXPECT(gr->resource_type == wr->resource_type, "[%d] resource_type", i);
    EXPECT(str_eq(gr->resource_name, wr->resource_name), "[%d] resource_name",
           i);
    EXPECT(gr->n_configs == wr->n_configs, "[%d] n_configs %d, want %d", i,
           gr->n_configs, wr->n_configs);
    for (int32_t k = 0; k < wr->n_configs; k++) {
      const dc_alter_config_t *wc = &wr->configs[k], *gc = &gr->configs[k];
      EXPECT(str_eq(gc->name, wc->name), "[%d][%d] name", i, k);
      /* AlterConfigs has no op on the wire: always decoded as SET. */
      EXPECT(gc->op == (incremental ? wc->op : DC_OP_SET), "[%d][%d] op %d", i,
             k, gc->op);
      EXPECT(str_eq(gc->value, wc->value), "[%d][%d] value \"%s\"", i, k,
             SHOW(gc->value));
    }
  }
  EXPECT(g->validate_only == w->validate_only, "validate_only");
  return true;
}

static bool areq_eq(const void *w, const void *g, int16_t v) {
  (void)v;
  return areq_eq_common(w, g, false);
}

static bool iareq_eq(const void *w, const void *g, int16_t v) {
  (void)v;
  return areq_eq_common(w, g, true);
}

static bool aresp_eq(const void *wv, const void *gv, int16_t v) {
  const dc_alter_configs_resp_t *w = wv, *g = gv;
  (void)v;
  EXPECT(g->throttle_time_ms == w->throttle_time_ms, "throttle_time_ms");
  EXPECT(g->n_responses == w->n_responses, "n_responses %d, want %d",
         g->n_responses, w->n_responses);
  for (int32_t i = 0; i < w->n_responses; i++) {
    const dc_alter_result_t *wr = &w->responses[i], *gr = &g->responses[i];
    EXPECT(gr->error_code == wr->error_code, "[%d] error_code", i);
    EXPECT(str_eq(gr->error_message, wr->error_message), "[%d] error_message",
           i);
    EXPECT(gr->resource_type == wr->resource_type, "[%d] resource_type", i);
    EXPECT(str_eq(gr->resource_name, wr->resource_name), "[%d] resource_name",
           i);
  }
  return true;
}

/* ---- kinds -------------------------------------------------------------- */

#define WRAP(short, fn)                                                        \
  static int short##_enc(dc_buf_t *b, int16_t v, const void *m) {              \
    return dc_##fn##_encode(b, v, m);                                          \
  }                                                                            \
  static int short##_dec(dc_rd_t *rd, int16_t v, void *m) {                    \
    return dc_##fn##_decode(rd, v, m);                                         \
  }
WRAP(dreq, describe_configs_req)
WRAP(dresp, describe_configs_resp)
WRAP(areq, alter_configs_req)
WRAP(aresp, alter_configs_resp)
WRAP(iareq, incremental_alter_configs_req)
WRAP(iaresp, incremental_alter_configs_resp)

static const kind_t K_DREQ = {"DescribeConfigsRequest", DC_API_DESCRIBE_CONFIGS,
                              dreq_enc, dreq_dec, dreq_eq};
static const kind_t K_DRESP = {"DescribeConfigsResponse",
                               DC_API_DESCRIBE_CONFIGS, dresp_enc, dresp_dec,
                               dresp_eq};
static const kind_t K_AREQ = {"AlterConfigsRequest", DC_API_ALTER_CONFIGS,
                              areq_enc, areq_dec, areq_eq};
static const kind_t K_ARESP = {"AlterConfigsResponse", DC_API_ALTER_CONFIGS,
                               aresp_enc, aresp_dec, aresp_eq};
static const kind_t K_IAREQ = {"IncrementalAlterConfigsRequest",
                               DC_API_INCREMENTAL_ALTER_CONFIGS, iareq_enc,
                               iareq_dec, iareq_eq};
static const kind_t K_IARESP = {"IncrementalAlterConfigsResponse",
                                DC_API_INCREMENTAL_ALTER_CONFIGS, iaresp_enc,
                                iaresp_dec, aresp_eq};
static const kind_t *const ALL_KINDS[] = {&K_DREQ, &K_DRESP, &K_AREQ,
                                          &K_ARESP, &K_IAREQ, &K_IARESP};
#define N_KINDS (sizeof(ALL_KINDS) / sizeof(ALL_KINDS[0]))

static int16_t max_version(const kind_t *k) {
  return dc_api_info(k->api)->max_version;
}

/* ---- generic checks ----------------------------------------------------- */

static int decode(const kind_t *k, int16_t v, const uint8_t *p, size_t n,
                  anymsg_t *out, dc_rd_t *rd) {
  dc_arena_reset(&arena);
  dc_rd_init(rd, p, n, &arena);
  return k->dec(rd, v, out);
}

/* Every strict prefix must fail, with a truncation or an impossible count
 * (the count check sees too few bytes left), and report it in rd->err. */
static bool all_prefixes_fail(const kind_t *k, int16_t v, const uint8_t *p,
                              size_t n) {
  for (size_t i = 0; i < n; i++) {
    anymsg_t m;
    dc_rd_t rd;
    int rc = decode(k, v, p, i, &m, &rd);
    if (rc >= 0 || rc != rd.err ||
        (rc != DC_ERR__TRUNCATED && rc != DC_ERR__BAD_LENGTH)) {
      diag("%s v%d: prefix of %zu/%zu bytes gave %d (%s)", k->name, v, i, n,
           rc, dc_err_name(rc));
      return false;
    }
  }
  return true;
}

/* Decode bytes, compare with want, re-encode, check all prefixes fail. */
static void check_decode(const kind_t *k, int16_t v, const void *want,
                         const uint8_t *p, size_t n, const char *label) {
  anymsg_t got;
  dc_rd_t rd;
  int rc = decode(k, v, p, n, &got, &rd);
  ok(rc == 0 && rd.pos == n, "%s v%d %s: decodes all %zu bytes (rc %d, pos %zu)",
     k->name, v, label, n, rc, rd.pos);
  /* A failed decode leaves a partial message: compare nothing further. */
  ok(rc == 0 && k->eq(want, &got, v), "%s v%d %s: decoded fields match",
     k->name, v, label);

  dc_buf_t b2;
  dc_buf_init(&b2);
  int rc2 = rc == 0 ? k->enc(&b2, v, &got) : rc;
  ok(rc2 == 0, "%s v%d %s: re-encode of decoded message ok", k->name, v,
     label);
  is_mem(b2.data, b2.len, p, n, "%s v%d %s: re-encodes to identical bytes",
         k->name, v, label);
  dc_buf_free(&b2);

  ok(all_prefixes_fail(k, v, p, n),
     "%s v%d %s: every strict prefix (%zu) fails to decode", k->name, v, label,
     n);
}

static void check_roundtrip(const kind_t *k, int16_t v, const void *msg,
                            const char *label) {
  dc_buf_t b;
  dc_buf_init(&b);
  int rc = k->enc(&b, v, msg);
  is_int(rc, 0, "%s v%d %s: encodes", k->name, v, label);
  check_decode(k, v, msg, b.data, b.len, label);
  dc_buf_free(&b);
}

static void check_vector(const kind_t *k, int16_t v, const void *msg,
                         const uint8_t *want, size_t n, const char *label) {
  dc_buf_t b;
  dc_buf_init(&b);
  int rc = k->enc(&b, v, msg);
  is_int(rc, 0, "%s v%d %s: encodes", k->name, v, label);
  is_mem(b.data, b.len, want, n, "%s v%d %s: encodes to the schema bytes",
         k->name, v, label);
  dc_buf_free(&b);
  check_decode(k, v, msg, want, n, label);
}

#define VECTOR(k, v, msg, bytes)                                               \
  check_vector(k, v, msg, bytes, sizeof(bytes), #bytes)

static void check_bad(const kind_t *k, int16_t v, const uint8_t *p, size_t n,
                      int want, const char *what) {
  anymsg_t m;
  dc_rd_t rd;
  int rc = decode(k, v, p, n, &m, &rd);
  ok(rc == want && rd.err == want, "%s v%d %s -> %s", k->name, v, what,
     dc_err_name(want));
  if (rc != want || rd.err != want)
    diag("  got rc %d (%s), rd.err %d", rc, dc_err_name(rc), rd.err);
}

#define BAD(k, v, want, what, ...)                                             \
  do {                                                                         \
    static const uint8_t b_[] = {__VA_ARGS__};                                 \
    check_bad(k, v, b_, sizeof(b_), want, what);                               \
  } while (0)

/* ---- DescribeConfigs vectors -------------------------------------------- */

static char *keys_acks[] = {"acks"};
static char *keys_acks_linger[] = {"acks", "linger.ms"};

/* v0 request: a null key list (all keys) and an explicit one. */
static dc_describe_configs_req_resource_t dreq_v0_res[] = {
    {DC_RES_CLIENT, "app", -1, NULL},
    {DC_RES_BROKER, "1", 1, keys_acks},
};
static const dc_describe_configs_req_t dreq_v0 = {2, dreq_v0_res, false,
                                                  false, 0, false};
static const uint8_t dreq_v0_bytes[] = {
    0x00, 0x00, 0x00, 0x02,             /* resources: int32 count 2 */
    0x09,                               /* [0] resource_type 9 (CLIENT) */
    0x00, 0x03, 'a', 'p', 'p',          /*     resource_name "app" */
    0xff, 0xff, 0xff, 0xff,             /*     configuration_keys: null */
    0x04,                               /* [1] resource_type 4 (BROKER) */
    0x00, 0x01, '1',                    /*     resource_name "1" */
    0x00, 0x00, 0x00, 0x01,             /*     configuration_keys: 1 */
    0x00, 0x04, 'a', 'c', 'k', 's',     /*       "acks" */
    /* no include_synonyms before v1 */
};

/* v1 request: include_synonyms appears after the resources. */
static dc_describe_configs_req_resource_t dreq_v1_res[] = {
    {DC_RES_CLIENT, "a", -1, NULL},
};
static const dc_describe_configs_req_t dreq_v1 = {1, dreq_v1_res, true, false, 0, false};
static const uint8_t dreq_v1_bytes[] = {
    0x00, 0x00, 0x00, 0x01, /* resources: 1 */
    0x09,                   /* resource_type */
    0x00, 0x01, 'a',        /* resource_name "a" */
    0xff, 0xff, 0xff, 0xff, /* configuration_keys: null */
    0x01,                   /* include_synonyms true */
};

/* v0 response: is_default present, no config_source or synonyms. */
static dc_describe_configs_entry_t dresp_v0_cfg[] = {
    {.name = "acks", .value = "all", .read_only = false, .is_default = true,
     .config_source = -1, .is_sensitive = false},
    {.name = "ssl.key", .value = NULL, .read_only = true, .is_default = false,
     .config_source = -1, .is_sensitive = true},
};
static dc_describe_configs_result_t dresp_v0_res[] = {
    {0, NULL, DC_RES_CLIENT, "app", 2, dresp_v0_cfg, 0},
};
static const dc_describe_configs_resp_t dresp_v0 = {0, 1, dresp_v0_res, 0};
static const uint8_t dresp_v0_bytes[] = {
    0x00, 0x00, 0x00, 0x00,                    /* throttle_time_ms 0 */
    0x00, 0x00, 0x00, 0x01,                    /* results: 1 */
    0x00, 0x00,                                /* error_code 0 */
    0xff, 0xff,                                /* error_message null */
    0x09,                                      /* resource_type */
    0x00, 0x03, 'a', 'p', 'p',                 /* resource_name "app" */
    0x00, 0x00, 0x00, 0x02,                    /* configs: 2 */
    0x00, 0x04, 'a', 'c', 'k', 's',            /* [0] name "acks" */
    0x00, 0x03, 'a', 'l', 'l',                 /*     value "all" */
    0x00,                                      /*     read_only false */
    0x01,                                      /*     is_default true */
    0x00,                                      /*     is_sensitive false */
    0x00, 0x07, 's', 's', 'l', '.', 'k', 'e', 'y', /* [1] name "ssl.key" */
    0xff, 0xff,                                /*     value null */
    0x01,                                      /*     read_only true */
    0x00,                                      /*     is_default false */
    0x01,                                      /*     is_sensitive true */
};

/* v1 response: config_source replaces is_default; synonyms follow
 * is_sensitive. Second result is an error with an empty config list. */
static dc_describe_configs_synonym_t dresp_v1_syn[] = {
    {"acks", "1", DC_SRC_DYNAMIC_CLIENT},
    {"acks", "all", DC_SRC_DYNAMIC_DEFAULT},
};
static dc_describe_configs_entry_t dresp_v1_cfg[] = {
    {.name = "acks", .value = "1", .config_source = DC_SRC_DYNAMIC_CLIENT,
     .n_synonyms = 2, .synonyms = dresp_v1_syn},
};
static dc_describe_configs_result_t dresp_v1_res[] = {
    {0, NULL, DC_RES_CLIENT, "app", 1, dresp_v1_cfg, 0},
    {DC_ERR_INVALID_REQUEST, "bad", DC_RES_TOPIC, "t", 0, NULL, 0},
};
static const dc_describe_configs_resp_t dresp_v1 = {100, 2, dresp_v1_res, 0};
static const uint8_t dresp_v1_bytes[] = {
    0x00, 0x00, 0x00, 0x64,         /* throttle_time_ms 100 */
    0x00, 0x00, 0x00, 0x02,         /* results: 2 */
    0x00, 0x00,                     /* [0] error_code 0 */
    0xff, 0xff,                     /*     error_message null */
    0x09,                           /*     resource_type */
    0x00, 0x03, 'a', 'p', 'p',      /*     resource_name "app" */
    0x00, 0x00, 0x00, 0x01,         /*     configs: 1 */
    0x00, 0x04, 'a', 'c', 'k', 's', /*       name "acks" */
    0x00, 0x01, '1',                /*       value "1" */
    0x00,                           /*       read_only false */
    0x07,                           /*       config_source 7 */
    0x00,                           /*       is_sensitive false */
    0x00, 0x00, 0x00, 0x02,         /*       synonyms: 2 */
    0x00, 0x04, 'a', 'c', 'k', 's', /*         name "acks" */
    0x00, 0x01, '1',                /*         value "1" */
    0x07,                           /*         source 7 */
    0x00, 0x04, 'a', 'c', 'k', 's', /*         name "acks" */
    0x00, 0x03, 'a', 'l', 'l',      /*         value "all" */
    0x08,                           /*         source 8 */
    0x00, 0x2a,                     /* [1] error_code 42 */
    0x00, 0x03, 'b', 'a', 'd',      /*     error_message "bad" */
    0x02,                           /*     resource_type 2 (TOPIC) */
    0x00, 0x01, 't',                /*     resource_name "t" */
    0x00, 0x00, 0x00, 0x00,         /*     configs: 0 */
};

/* v3 response: config_type and documentation end each entry. */
static dc_describe_configs_entry_t dresp_v3_cfg[] = {
    {.name = "acks", .value = "all", .config_source = DC_SRC_DYNAMIC_DEFAULT,
     .n_synonyms = 0, .config_type = 2, .documentation = "Acks."},
    {.name = "linger.ms", .value = "5", .config_source = DC_SRC_DYNAMIC_CLIENT,
     .n_synonyms = 0, .config_type = 5, .documentation = NULL},
};
static dc_describe_configs_result_t dresp_v3_res[] = {
    {0, NULL, DC_RES_CLIENT, "a", 2, dresp_v3_cfg, 0},
};
static const dc_describe_configs_resp_t dresp_v3 = {0, 1, dresp_v3_res, 0};
static const uint8_t dresp_v3_bytes[] = {
    0x00, 0x00, 0x00, 0x00,         /* throttle_time_ms 0 */
    0x00, 0x00, 0x00, 0x01,         /* results: 1 */
    0x00, 0x00,                     /* error_code 0 */
    0xff, 0xff,                     /* error_message null */
    0x09,                           /* resource_type */
    0x00, 0x01, 'a',                /* resource_name "a" */
    0x00, 0x00, 0x00, 0x02,         /* configs: 2 */
    0x00, 0x04, 'a', 'c', 'k', 's', /* [0] name "acks" */
    0x00, 0x03, 'a', 'l', 'l',      /*     value "all" */
    0x00,                           /*     read_only */
    0x08,                           /*     config_source 8 */
    0x00,                           /*     is_sensitive */
    0x00, 0x00, 0x00, 0x00,         /*     synonyms: 0 */
    0x02,                           /*     config_type 2 (STRING) */
    0x00, 0x05, 'A', 'c', 'k', 's', '.', /* documentation "Acks." */
    0x00, 0x09, 'l', 'i', 'n', 'g', 'e', 'r', '.', 'm', 's', /* [1] name */
    0x00, 0x01, '5',                /*     value "5" */
    0x00,                           /*     read_only */
    0x07,                           /*     config_source 7 */
    0x00,                           /*     is_sensitive */
    0x00, 0x00, 0x00, 0x00,         /*     synonyms: 0 */
    0x05,                           /*     config_type 5 (LONG) */
    0xff, 0xff,                     /*     documentation null */
};

/* v4 (flexible) request: compact lengths are uvarint(n+1), 0 = null, and
 * every struct and the body end with an (empty) tag section. */
static dc_describe_configs_req_resource_t dreq_v4_res[] = {
    {DC_RES_CLIENT, "app", 2, keys_acks_linger},
    {DC_RES_CLIENT, "b", -1, NULL},
};
static const dc_describe_configs_req_t dreq_v4 = {2, dreq_v4_res, true, false, 0, false};
static const uint8_t dreq_v4_bytes[] = {
    0x03,                           /* resources: compact 2+1 */
    0x09,                           /* [0] resource_type */
    0x04, 'a', 'p', 'p',            /*     resource_name compact 3+1 */
    0x03,                           /*     configuration_keys: 2+1 */
    0x05, 'a', 'c', 'k', 's',       /*       "acks" */
    0x0a, 'l', 'i', 'n', 'g', 'e', 'r', '.', 'm', 's', /* "linger.ms" */
    0x00,                           /*     tags: none */
    0x09,                           /* [1] resource_type */
    0x02, 'b',                      /*     resource_name "b" */
    0x00,                           /*     configuration_keys: null */
    0x00,                           /*     tags */
    0x01,                           /* include_synonyms true */
    0x00,                           /* include_documentation false */
    0x00,                           /* body tags */
};

static dc_describe_configs_synonym_t dresp_v4_syn[] = {
    {"acks", NULL, DC_SRC_DYNAMIC_DEFAULT},
};
static dc_describe_configs_entry_t dresp_v4_cfg[] = {
    {.name = "acks", .value = "all", .config_source = DC_SRC_DYNAMIC_CLIENT,
     .n_synonyms = 1, .synonyms = dresp_v4_syn, .config_type = 2,
     .documentation = NULL},
};
static dc_describe_configs_result_t dresp_v4_res[] = {
    {0, NULL, DC_RES_CLIENT, "app", 1, dresp_v4_cfg, 0},
};
static const dc_describe_configs_resp_t dresp_v4 = {0, 1, dresp_v4_res, 0};
static const uint8_t dresp_v4_bytes[] = {
    0x00, 0x00, 0x00, 0x00,   /* throttle_time_ms 0 */
    0x02,                     /* results: compact 1+1 */
    0x00, 0x00,               /* error_code 0 */
    0x00,                     /* error_message null */
    0x09,                     /* resource_type */
    0x04, 'a', 'p', 'p',      /* resource_name "app" */
    0x02,                     /* configs: 1+1 */
    0x05, 'a', 'c', 'k', 's', /*   name "acks" */
    0x04, 'a', 'l', 'l',      /*   value "all" */
    0x00,                     /*   read_only */
    0x07,                     /*   config_source 7 */
    0x00,                     /*   is_sensitive */
    0x02,                     /*   synonyms: 1+1 */
    0x05, 'a', 'c', 'k', 's', /*     name "acks" */
    0x00,                     /*     value null */
    0x08,                     /*     source 8 */
    0x00,                     /*     synonym tags */
    0x02,                     /*   config_type 2 */
    0x00,                     /*   documentation null */
    0x00,                     /*   entry tags */
    0x00,                     /* result tags */
    0x00,                     /* body tags */
};

static void test_describe_vectors(void) {
  VECTOR(&K_DREQ, 0, &dreq_v0, dreq_v0_bytes);
  VECTOR(&K_DREQ, 1, &dreq_v1, dreq_v1_bytes);
  VECTOR(&K_DREQ, 4, &dreq_v4, dreq_v4_bytes);
  VECTOR(&K_DRESP, 0, &dresp_v0, dresp_v0_bytes);
  VECTOR(&K_DRESP, 1, &dresp_v1, dresp_v1_bytes);
  VECTOR(&K_DRESP, 3, &dresp_v3, dresp_v3_bytes);
  VECTOR(&K_DRESP, 4, &dresp_v4, dresp_v4_bytes);

  /* v1 and v2 are identical on the wire. */
  VECTOR(&K_DRESP, 2, &dresp_v1, dresp_v1_bytes);
  VECTOR(&K_DREQ, 2, &dreq_v1, dreq_v1_bytes);

  /* A v0 decode leaves the v1+ fields at their schema defaults. */
  anymsg_t m;
  dc_rd_t rd;
  int rc = decode(&K_DRESP, 0, dresp_v0_bytes, sizeof(dresp_v0_bytes), &m, &rd);
  ok(rc == 0 && m.dresp.results[0].configs[0].config_source == -1 &&
         m.dresp.results[0].configs[0].config_type == 0 &&
         m.dresp.results[0].configs[0].n_synonyms == 0 &&
         m.dresp.results[0].configs[0].documentation == NULL &&
         m.dresp.results[0].configs[0].is_default,
     "DescribeConfigs v0 decode: config_source -1, type 0, no synonyms/doc");
}

/* ---- AlterConfigs / IncrementalAlterConfigs vectors --------------------- */

static dc_alter_config_t areq_v0_cfg[] = {
    {"acks", DC_OP_SET, "all"},
    {"linger.ms", DC_OP_SET, NULL},
};
static dc_alter_resource_t areq_v0_res[] = {
    {DC_RES_CLIENT, "app", 2, areq_v0_cfg},
};
static const dc_alter_configs_req_t areq_v0 = {1, areq_v0_res, true};
static const uint8_t areq_v0_bytes[] = {
    0x00, 0x00, 0x00, 0x01,         /* resources: 1 */
    0x09,                           /* resource_type */
    0x00, 0x03, 'a', 'p', 'p',      /* resource_name "app" */
    0x00, 0x00, 0x00, 0x02,         /* configs: 2 */
    0x00, 0x04, 'a', 'c', 'k', 's', /*   name "acks" */
    0x00, 0x03, 'a', 'l', 'l',      /*   value "all" */
    0x00, 0x09, 'l', 'i', 'n', 'g', 'e', 'r', '.', 'm', 's', /* name */
    0xff, 0xff,                     /*   value null */
    0x01,                           /* validate_only true */
};

static dc_alter_result_t aresp_v0_res[] = {
    {0, NULL, DC_RES_CLIENT, "app"},
    {DC_ERR_INVALID_CONFIG, "bad value", DC_RES_CLIENT, "b"},
};
static const dc_alter_configs_resp_t aresp_v0 = {0, 2, aresp_v0_res};
static const uint8_t aresp_v0_bytes[] = {
    0x00, 0x00, 0x00, 0x00,    /* throttle_time_ms 0 */
    0x00, 0x00, 0x00, 0x02,    /* responses: 2 */
    0x00, 0x00,                /* [0] error_code 0 */
    0xff, 0xff,                /*     error_message null */
    0x09,                      /*     resource_type */
    0x00, 0x03, 'a', 'p', 'p', /*     resource_name "app" */
    0x00, 0x28,                /* [1] error_code 40 */
    0x00, 0x09, 'b', 'a', 'd', ' ', 'v', 'a', 'l', 'u', 'e', /* message */
    0x09,                      /*     resource_type */
    0x00, 0x01, 'b',           /*     resource_name "b" */
};

static dc_alter_config_t areq_v2_cfg[] = {{"x", DC_OP_SET, "y"}};
static dc_alter_resource_t areq_v2_res[] = {
    {DC_RES_BROKER, "1", 1, areq_v2_cfg},
};
static const dc_alter_configs_req_t areq_v2 = {1, areq_v2_res, false};
static const uint8_t areq_v2_bytes[] = {
    0x02,      /* resources: compact 1+1 */
    0x04,      /* resource_type 4 (BROKER) */
    0x02, '1', /* resource_name "1" */
    0x02,      /* configs: 1+1 */
    0x02, 'x', /*   name "x" */
    0x02, 'y', /*   value "y" */
    0x00,      /*   config tags */
    0x00,      /* resource tags */
    0x00,      /* validate_only false */
    0x00,      /* body tags */
};

static dc_alter_result_t aresp_v2_res[] = {
    {DC_ERR_INVALID_REQUEST, "no", DC_RES_BROKER, "1"},
};
static const dc_alter_configs_resp_t aresp_v2 = {5, 1, aresp_v2_res};
static const uint8_t aresp_v2_bytes[] = {
    0x00, 0x00, 0x00, 0x05, /* throttle_time_ms 5 */
    0x02,                   /* responses: 1+1 */
    0x00, 0x2a,             /*   error_code 42 */
    0x03, 'n', 'o',         /*   error_message "no" */
    0x04,                   /*   resource_type */
    0x02, '1',              /*   resource_name "1" */
    0x00,                   /*   tags */
    0x00,                   /* body tags */
};

static dc_alter_config_t iareq_v0_cfg[] = {
    {"acks", DC_OP_SET, "1"},
    {"linger.ms", DC_OP_DELETE, NULL},
};
static dc_alter_resource_t iareq_v0_res[] = {
    {DC_RES_CLIENT, "app", 2, iareq_v0_cfg},
};
static const dc_alter_configs_req_t iareq_v0 = {1, iareq_v0_res, false};
static const uint8_t iareq_v0_bytes[] = {
    0x00, 0x00, 0x00, 0x01,         /* resources: 1 */
    0x09,                           /* resource_type */
    0x00, 0x03, 'a', 'p', 'p',      /* resource_name */
    0x00, 0x00, 0x00, 0x02,         /* configs: 2 */
    0x00, 0x04, 'a', 'c', 'k', 's', /*   name "acks" */
    0x00,                           /*   config_operation SET */
    0x00, 0x01, '1',                /*   value "1" */
    0x00, 0x09, 'l', 'i', 'n', 'g', 'e', 'r', '.', 'm', 's', /* name */
    0x01,                           /*   config_operation DELETE */
    0xff, 0xff,                     /*   value null */
    0x00,                           /* validate_only false */
};

static dc_alter_config_t iareq_v1_cfg[] = {
    {"debug", DC_OP_APPEND, "broker"},
    {"acks", DC_OP_DELETE, NULL},
};
static dc_alter_resource_t iareq_v1_res[] = {
    {DC_RES_CLIENT, "<default>", 2, iareq_v1_cfg},
};
static const dc_alter_configs_req_t iareq_v1 = {1, iareq_v1_res, true};
static const uint8_t iareq_v1_bytes[] = {
    0x02,                          /* resources: 1+1 */
    0x09,                          /* resource_type */
    0x0a, '<', 'd', 'e', 'f', 'a', 'u', 'l', 't', '>', /* name 9+1 */
    0x03,                          /* configs: 2+1 */
    0x06, 'd', 'e', 'b', 'u', 'g', /*   name "debug" */
    0x02,                          /*   config_operation APPEND */
    0x07, 'b', 'r', 'o', 'k', 'e', 'r', /* value "broker" */
    0x00,                          /*   tags */
    0x05, 'a', 'c', 'k', 's',      /*   name "acks" */
    0x01,                          /*   config_operation DELETE */
    0x00,                          /*   value null */
    0x00,                          /*   tags */
    0x00,                          /* resource tags */
    0x01,                          /* validate_only true */
    0x00,                          /* body tags */
};

static dc_alter_result_t iaresp_v0_res[] = {
    {0, NULL, DC_RES_CLIENT, "app"},
};
static const dc_alter_configs_resp_t iaresp_v0 = {0, 1, iaresp_v0_res};
static const uint8_t iaresp_v0_bytes[] = {
    0x00, 0x00, 0x00, 0x00,    /* throttle_time_ms */
    0x00, 0x00, 0x00, 0x01,    /* responses: 1 */
    0x00, 0x00,                /*   error_code */
    0xff, 0xff,                /*   error_message null */
    0x09,                      /*   resource_type */
    0x00, 0x03, 'a', 'p', 'p', /*   resource_name */
};

static dc_alter_result_t iaresp_v1_res[] = {
    {DC_ERR_INVALID_REQUEST, "dup", DC_RES_CLIENT, "a"},
    {0, NULL, DC_RES_CLIENT, "b"},
};
static const dc_alter_configs_resp_t iaresp_v1 = {0, 2, iaresp_v1_res};
static const uint8_t iaresp_v1_bytes[] = {
    0x00, 0x00, 0x00, 0x00, /* throttle_time_ms */
    0x03,                   /* responses: 2+1 */
    0x00, 0x2a,             /* [0] error_code 42 */
    0x04, 'd', 'u', 'p',    /*     error_message "dup" */
    0x09,                   /*     resource_type */
    0x02, 'a',              /*     resource_name "a" */
    0x00,                   /*     tags */
    0x00, 0x00,             /* [1] error_code 0 */
    0x00,                   /*     error_message null */
    0x09,                   /*     resource_type */
    0x02, 'b',              /*     resource_name "b" */
    0x00,                   /*     tags */
    0x00,                   /* body tags */
};

static void test_alter_vectors(void) {
  VECTOR(&K_AREQ, 0, &areq_v0, areq_v0_bytes);
  VECTOR(&K_AREQ, 1, &areq_v0, areq_v0_bytes); /* v1 == v0 on the wire */
  VECTOR(&K_AREQ, 2, &areq_v2, areq_v2_bytes);
  VECTOR(&K_ARESP, 0, &aresp_v0, aresp_v0_bytes);
  VECTOR(&K_ARESP, 1, &aresp_v0, aresp_v0_bytes);
  VECTOR(&K_ARESP, 2, &aresp_v2, aresp_v2_bytes);
  VECTOR(&K_IAREQ, 0, &iareq_v0, iareq_v0_bytes);
  VECTOR(&K_IAREQ, 1, &iareq_v1, iareq_v1_bytes);
  VECTOR(&K_IARESP, 0, &iaresp_v0, iaresp_v0_bytes);
  VECTOR(&K_IARESP, 1, &iaresp_v1, iaresp_v1_bytes);

  /* The IncrementalAlterConfigs v0 request bytes are not an AlterConfigs
   * request: without the op byte the layouts diverge. */
  anymsg_t m;
  dc_rd_t rd;
  int rc = decode(&K_AREQ, 0, iareq_v0_bytes, sizeof(iareq_v0_bytes), &m, &rd);
  ok(rc != 0 || !areq_eq_common(&iareq_v0, &m.areq, false),
     "Incremental v0 bytes do not decode as the same AlterConfigs request");

  /* AlterConfigs decode sets SET even if the caller's struct said other. */
  rc = decode(&K_AREQ, 0, areq_v0_bytes, sizeof(areq_v0_bytes), &m, &rd);
  ok(rc == 0 && m.areq.resources[0].configs[0].op == DC_OP_SET &&
         m.areq.resources[0].configs[1].op == DC_OP_SET,
     "AlterConfigs decode: every op is SET");

  /* An AlterConfigs encode ignores op; incremental writes it. */
  static dc_alter_config_t del_cfg[] = {{"k", DC_OP_DELETE, NULL}};
  static dc_alter_resource_t del_res[] = {{DC_RES_CLIENT, "c", 1, del_cfg}};
  static const dc_alter_configs_req_t del_req = {1, del_res, false};
  static const uint8_t del_alter[] = {
      0x00, 0x00, 0x00, 0x01, 0x09, 0x00, 0x01, 'c', /* resource "c" */
      0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 'k',       /* configs: 1, "k" */
      0xff, 0xff,                                    /* value null, no op */
      0x00,                                          /* validate_only */
  };
  dc_buf_t b;
  dc_buf_init(&b);
  rc = dc_alter_configs_req_encode(&b, 0, &del_req);
  ok(rc == 0, "AlterConfigs encode with a DELETE op in the struct");
  is_mem(b.data, b.len, del_alter, sizeof(del_alter),
         "AlterConfigs v0 encode writes no op byte");
  dc_buf_free(&b);
}

/* ---- rich round trips at every version ---------------------------------- */

static dc_describe_configs_req_resource_t rich_dreq_res[] = {
    {DC_RES_CLIENT, "app-1", -1, NULL},               /* null: all keys */
    {DC_RES_CLIENT, "<default>", 2, keys_acks_linger}, /* explicit list */
    {DC_RES_BROKER, "1", 0, NULL},                    /* empty list */
};
static const dc_describe_configs_req_t rich_dreq = {3, rich_dreq_res, true,
                                                    true, 0, false};

static dc_describe_configs_synonym_t rich_syn_acks[] = {
    {"acks", "1", DC_SRC_DYNAMIC_CLIENT},
    {"acks", "all", DC_SRC_DYNAMIC_DEFAULT},
};
static dc_describe_configs_synonym_t rich_syn_null[] = {
    {"ssl.key.password", NULL, DC_SRC_DYNAMIC_DEFAULT},
};
static dc_describe_configs_entry_t rich_app_cfg[] = {
    {.name = "acks", .value = "1", .config_source = DC_SRC_DYNAMIC_CLIENT,
     .n_synonyms = 2, .synonyms = rich_syn_acks, .config_type = 2,
     .documentation = "Number of acknowledgments."},
    {.name = "linger.ms", .value = "5", .is_default = true,
     .config_source = DC_SRC_DYNAMIC_DEFAULT, .config_type = 5},
    {.name = "ssl.key.password", .value = NULL, .read_only = true,
     .is_sensitive = true, .config_source = DC_SRC_DYNAMIC_DEFAULT,
     .n_synonyms = 1, .synonyms = rich_syn_null, .config_type = 9,
     .documentation = ""},
};
static dc_describe_configs_entry_t rich_broker_cfg[] = {
    {.name = "node.id", .value = "1", .read_only = true,
     .config_source = DC_SRC_STATIC_BROKER, .config_type = 3,
     .documentation = "The node id."},
};
static dc_describe_configs_result_t rich_dresp_res[] = {
    {0, NULL, DC_RES_CLIENT, "app-1", 3, rich_app_cfg, 0},
    {DC_ERR_INVALID_REQUEST, "Unsupported resource type", DC_RES_TOPIC,
     "topic-a", 0, NULL, 0},
    {0, NULL, DC_RES_BROKER, "1", 1, rich_broker_cfg, 0},
};
static const dc_describe_configs_resp_t rich_dresp = {250, 3, rich_dresp_res, 0};

static dc_alter_config_t rich_app_alter[] = {
    {"acks", DC_OP_SET, "all"},
    {"linger.ms", DC_OP_DELETE, NULL},
    {"debug", DC_OP_APPEND, "broker,topic"},
    {"partition.assignment.strategy", DC_OP_SUBTRACT, "range"},
};
static dc_alter_config_t rich_def_alter[] = {
    {"session.timeout.ms", DC_OP_SET, "30000"},
};
static dc_alter_resource_t rich_areq_res[] = {
    {DC_RES_CLIENT, "app-1", 4, rich_app_alter},
    {DC_RES_CLIENT, "<default>", 1, rich_def_alter},
    {DC_RES_BROKER, "1", 0, NULL},
};
static const dc_alter_configs_req_t rich_areq = {3, rich_areq_res, true};

static dc_alter_result_t rich_aresp_res[] = {
    {0, NULL, DC_RES_CLIENT, "app-1"},
    {DC_ERR_INVALID_CONFIG, "Invalid value for acks", DC_RES_CLIENT,
     "<default>"},
    {DC_ERR_INVALID_REQUEST, "", DC_RES_BROKER, "1"},
};
static const dc_alter_configs_resp_t rich_aresp = {17, 3, rich_aresp_res};

static const dc_describe_configs_req_t empty_dreq = {0, NULL, false, false, 0, false};
static const dc_describe_configs_resp_t empty_dresp = {0, 0, NULL, 0};
static const dc_alter_configs_req_t empty_areq = {0, NULL, false};
static const dc_alter_configs_resp_t empty_aresp = {0, 0, NULL};

static void test_roundtrips(void) {
  static const struct {
    const kind_t *k;
    const void *msg;
    const char *label;
  } cases[] = {
      {&K_DREQ, &rich_dreq, "rich"},     {&K_DREQ, &empty_dreq, "empty"},
      {&K_DREQ, &dreq_v4, "v4 vector"},  {&K_DRESP, &rich_dresp, "rich"},
      {&K_DRESP, &empty_dresp, "empty"}, {&K_DRESP, &dresp_v1, "v1 vector"},
      {&K_AREQ, &rich_areq, "rich"},     {&K_AREQ, &empty_areq, "empty"},
      {&K_ARESP, &rich_aresp, "rich"},   {&K_ARESP, &empty_aresp, "empty"},
      {&K_IAREQ, &rich_areq, "rich"},    {&K_IAREQ, &empty_areq, "empty"},
      {&K_IARESP, &rich_aresp, "rich"},  {&K_IARESP, &empty_aresp, "empty"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    for (int16_t v = 0; v <= max_version(cases[i].k); v++)
      check_roundtrip(cases[i].k, v, cases[i].msg, cases[i].label);
}

/* ---- array-count bounds ------------------------------------------------- */

/* K minimal elements must decode (the decoder's minimum element size is not
 * too large); claiming K+D must fail right after the count, before reading
 * any element (the minimum is not too small: with D = 5 and K = 100 a
 * minimum one byte short would let the count through). */
#define MIN_K 100
#define MIN_D 5
#define MIN_N (MIN_K + MIN_D)

static anymsg_t min_msg;

static void b_dreq_resources(int32_t n) {
  static dc_describe_configs_req_resource_t r[MIN_N];
  for (int i = 0; i < MIN_N; i++)
    r[i] = (dc_describe_configs_req_resource_t){0, "", -1, NULL};
  min_msg.dreq = (dc_describe_configs_req_t){n, r, false, false, 0, false};
}

static void b_dreq_keys(int32_t n) {
  static char *keys[MIN_N];
  static dc_describe_configs_req_resource_t r;
  for (int i = 0; i < MIN_N; i++)
    keys[i] = "";
  r = (dc_describe_configs_req_resource_t){0, "", n, keys};
  min_msg.dreq = (dc_describe_configs_req_t){1, &r, false, false, 0, false};
}

static void b_dresp_results(int32_t n) {
  static dc_describe_configs_result_t r[MIN_N];
  for (int i = 0; i < MIN_N; i++)
    r[i] = (dc_describe_configs_result_t){0, NULL, 0, "", 0, NULL, 0};
  min_msg.dresp = (dc_describe_configs_resp_t){0, n, r, 0};
}

static void b_dresp_configs(int32_t n) {
  static dc_describe_configs_entry_t e[MIN_N];
  static dc_describe_configs_result_t r;
  for (int i = 0; i < MIN_N; i++)
    e[i] = (dc_describe_configs_entry_t){.name = "", .config_source = -1};
  r = (dc_describe_configs_result_t){0, NULL, 0, "", n, e, 0};
  min_msg.dresp = (dc_describe_configs_resp_t){0, 1, &r, 0};
}

static void b_dresp_synonyms(int32_t n) {
  static dc_describe_configs_synonym_t s[MIN_N];
  static dc_describe_configs_entry_t e;
  static dc_describe_configs_result_t r;
  for (int i = 0; i < MIN_N; i++)
    s[i] = (dc_describe_configs_synonym_t){"", NULL, 0};
  e = (dc_describe_configs_entry_t){
      .name = "", .config_source = -1, .n_synonyms = n, .synonyms = s};
  r = (dc_describe_configs_result_t){0, NULL, 0, "", 1, &e, 0};
  min_msg.dresp = (dc_describe_configs_resp_t){0, 1, &r, 0};
}

static void b_areq_resources(int32_t n) {
  static dc_alter_resource_t r[MIN_N];
  for (int i = 0; i < MIN_N; i++)
    r[i] = (dc_alter_resource_t){0, "", 0, NULL};
  min_msg.areq = (dc_alter_configs_req_t){n, r, false};
}

static void b_areq_configs(int32_t n) {
  static dc_alter_config_t c[MIN_N];
  static dc_alter_resource_t r;
  for (int i = 0; i < MIN_N; i++)
    c[i] = (dc_alter_config_t){"", DC_OP_SET, NULL};
  r = (dc_alter_resource_t){0, "", n, c};
  min_msg.areq = (dc_alter_configs_req_t){1, &r, false};
}

static void b_aresp(int32_t n) {
  static dc_alter_result_t r[MIN_N];
  for (int i = 0; i < MIN_N; i++)
    r[i] = (dc_alter_result_t){0, NULL, 0, ""};
  min_msg.aresp = (dc_alter_configs_resp_t){0, n, r};
}

static void check_min_case(const kind_t *k, int16_t v, void (*build)(int32_t),
                           const char *label) {
  dc_buf_t bk, bd;
  dc_buf_init(&bk);
  dc_buf_init(&bd);
  build(MIN_K);
  int rc = k->enc(&bk, v, &min_msg);
  check_roundtrip(k, v, &min_msg, label);
  build(MIN_K + MIN_D);
  rc |= k->enc(&bd, v, &min_msg);
  ok(rc == 0 && bk.len < bd.len, "%s v%d %s: encodings of %d and %d elements",
     k->name, v, label, MIN_K, MIN_K + MIN_D);
  if (rc == 0 && bk.len < bd.len) {
    /* The two encodings first differ in the count's last byte. */
    size_t off = 0;
    while (bk.data[off] == bd.data[off])
      off++;
    bk.data[off] = bd.data[off];
    anymsg_t m;
    dc_rd_t rd;
    rc = decode(k, v, bk.data, bk.len, &m, &rd);
    ok(rc == DC_ERR__BAD_LENGTH && rd.pos == off + 1,
       "%s v%d %s: count of %d over %d minimal elements rejected at the count",
       k->name, v, label, MIN_K + MIN_D, MIN_K);
    if (rc != DC_ERR__BAD_LENGTH || rd.pos != off + 1)
      diag("  rc %d (%s), pos %zu, count ends at %zu", rc,
           dc_err_name(rc), rd.pos, off + 1);
  }
  dc_buf_free(&bk);
  dc_buf_free(&bd);
}

static void test_min_sizes(void) {
  static const struct {
    const kind_t *k;
    void (*build)(int32_t);
    int16_t from_version;
    const char *label;
  } cases[] = {
      {&K_DREQ, b_dreq_resources, 0, "minimal resources"},
      {&K_DREQ, b_dreq_keys, 0, "minimal configuration_keys"},
      {&K_DRESP, b_dresp_results, 0, "minimal results"},
      {&K_DRESP, b_dresp_configs, 0, "minimal configs"},
      {&K_DRESP, b_dresp_synonyms, 1, "minimal synonyms"},
      {&K_AREQ, b_areq_resources, 0, "minimal resources"},
      {&K_AREQ, b_areq_configs, 0, "minimal configs"},
      {&K_ARESP, b_aresp, 0, "minimal responses"},
      {&K_IAREQ, b_areq_resources, 0, "minimal resources"},
      {&K_IAREQ, b_areq_configs, 0, "minimal configs"},
      {&K_IARESP, b_aresp, 0, "minimal responses"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    for (int16_t v = cases[i].from_version; v <= max_version(cases[i].k); v++)
      check_min_case(cases[i].k, v, cases[i].build, cases[i].label);
}

/* ---- malformed input ---------------------------------------------------- */

static void test_malformed(void) {
  const int LEN = DC_ERR__BAD_LENGTH, BOOL = DC_ERR__BAD_BOOL,
            VARINT = DC_ERR__BAD_VARINT, STR = DC_ERR__BAD_STRING;

  /* Negative array lengths other than the null marker. */
  BAD(&K_DREQ, 0, LEN, "resources count -2", 0xff, 0xff, 0xff, 0xfe);
  BAD(&K_DREQ, 0, LEN, "configuration_keys count -2", 0x00, 0x00, 0x00, 0x01,
      0x09, 0x00, 0x01, 'a', 0xff, 0xff, 0xff, 0xfe);
  BAD(&K_DRESP, 1, LEN, "configs count -2", 0x00, 0x00, 0x00, 0x00, /* thr */
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x01, 'a',
      0xff, 0xff, 0xff, 0xfe);
  BAD(&K_DRESP, 0, LEN, "results count -1 (not nullable)", 0x00, 0x00, 0x00,
      0x00, 0xff, 0xff, 0xff, 0xff);
  BAD(&K_DRESP, 1, LEN, "synonyms count -2", 0x00, 0x00, 0x00, 0x00, /* thr */
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x01, 'a',
      0x00, 0x00, 0x00, 0x01,                   /* configs: 1 */
      0x00, 0x01, 'k', 0xff, 0xff, 0x00, 0x07, 0x00, /* k=null ro src sens */
      0xff, 0xff, 0xff, 0xfe);                  /* synonyms -2 */
  BAD(&K_AREQ, 0, LEN, "resources count -2", 0xff, 0xff, 0xff, 0xfe, 0x00);
  BAD(&K_AREQ, 0, LEN, "configs count -1 (not nullable)", 0x00, 0x00, 0x00,
      0x01, 0x09, 0x00, 0x01, 'a', 0xff, 0xff, 0xff, 0xff, 0x00);
  BAD(&K_IAREQ, 0, LEN, "configs count -2", 0x00, 0x00, 0x00, 0x01, 0x09,
      0x00, 0x01, 'a', 0xff, 0xff, 0xff, 0xfe, 0x00);
  BAD(&K_ARESP, 0, LEN, "responses count -2", 0x00, 0x00, 0x00, 0x00, 0xff,
      0xff, 0xff, 0xfe);
  BAD(&K_IARESP, 0, LEN, "responses count -2", 0x00, 0x00, 0x00, 0x00, 0xff,
      0xff, 0xff, 0xfe);

  /* Null where the schema says non-nullable. */
  BAD(&K_DREQ, 0, LEN, "null resource_name", 0x00, 0x00, 0x00, 0x01, 0x09,
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
  BAD(&K_DREQ, 4, LEN, "null compact resource_name", 0x02, 0x09, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00);
  BAD(&K_DREQ, 0, LEN, "null configuration key", 0x00, 0x00, 0x00, 0x01,
      0x09, 0x00, 0x01, 'a', 0x00, 0x00, 0x00, 0x01, 0xff, 0xff);
  BAD(&K_DRESP, 0, LEN, "null resource_name", 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0xff, 0xff, 0x00, 0x00,
      0x00, 0x00);
  /* librdkafka crashes on a null config name, so it must never pass. */
  BAD(&K_DRESP, 0, LEN, "null config name", 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x01, 'a', 0x00,
      0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00);
  BAD(&K_DRESP, 4, LEN, "null synonym name", 0x00, 0x00, 0x00, 0x00, 0x02,
      0x00, 0x00, 0x00, 0x09, 0x02, 'a', 0x02, 0x02, 'k', 0x00, 0x00, 0x07,
      0x00, 0x02, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_AREQ, 0, LEN, "null resource_name", 0x00, 0x00, 0x00, 0x01, 0x09,
      0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_AREQ, 2, LEN, "null compact config name", 0x02, 0x09, 0x02, 'a',
      0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_IAREQ, 1, LEN, "null compact resource_name", 0x02, 0x09, 0x00, 0x01,
      0x00, 0x00, 0x00);
  BAD(&K_ARESP, 0, LEN, "null resource_name", 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0xff, 0xff);
  BAD(&K_IARESP, 1, LEN, "null compact resource_name", 0x00, 0x00, 0x00, 0x00,
      0x02, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00);

  /* Booleans other than 0 and 1. */
  BAD(&K_AREQ, 0, BOOL, "validate_only = 2", 0x00, 0x00, 0x00, 0x00, 0x02);
  BAD(&K_AREQ, 2, BOOL, "validate_only = 2", 0x01, 0x02, 0x00);
  BAD(&K_IAREQ, 0, BOOL, "validate_only = 2", 0x00, 0x00, 0x00, 0x00, 0x02);
  BAD(&K_IAREQ, 1, BOOL, "validate_only = 2", 0x01, 0x02, 0x00);
  BAD(&K_DREQ, 1, BOOL, "include_synonyms = 2", 0x00, 0x00, 0x00, 0x00, 0x02);
  BAD(&K_DREQ, 3, BOOL, "include_documentation = 2", 0x00, 0x00, 0x00, 0x00,
      0x00, 0x02);
  BAD(&K_DRESP, 0, BOOL, "read_only = 2", 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x01, 'a', 0x00, 0x00,
      0x00, 0x01, 0x00, 0x01, 'k', 0xff, 0xff, 0x02, 0x00, 0x00);
  BAD(&K_DRESP, 0, BOOL, "is_default = 2", 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x01, 'a', 0x00, 0x00,
      0x00, 0x01, 0x00, 0x01, 'k', 0xff, 0xff, 0x00, 0x02, 0x00);
  BAD(&K_DRESP, 4, BOOL, "read_only = 2 (flexible)", 0x00, 0x00, 0x00, 0x00,
      0x02, 0x00, 0x00, 0x00, 0x09, 0x02, 'a', 0x02, 0x02, 'k', 0x00, 0x02,
      0x07, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_DRESP, 1, BOOL, "is_sensitive = 0xff", 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x01, 'a', 0x00,
      0x00, 0x00, 0x01, 0x00, 0x01, 'k', 0xff, 0xff, 0x00, 0x07, 0xff, 0x00,
      0x00, 0x00, 0x00);

  /* Over-long uvarints in compact lengths. */
  BAD(&K_DREQ, 4, VARINT, "6-byte compact array length", 0x80, 0x80, 0x80,
      0x80, 0x80, 0x01, 0x00, 0x00, 0x00);
  BAD(&K_DREQ, 4, VARINT, "5th varint byte above 0x0f", 0xff, 0xff, 0xff,
      0xff, 0x7f, 0x00, 0x00, 0x00);
  BAD(&K_DREQ, 4, VARINT, "over-long compact string length", 0x02, 0x09, 0x80,
      0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_AREQ, 2, VARINT, "over-long compact configs length", 0x02, 0x09,
      0x02, 'a', 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_IARESP, 1, VARINT, "over-long error_message length", 0x00, 0x00,
      0x00, 0x00, 0x02, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10, 0x09, 0x02,
      'a', 0x00, 0x00);
  BAD(&K_DRESP, 4, VARINT, "over-long tag count", 0x00, 0x00, 0x00, 0x00,
      0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00);

  /* Counts that cannot fit in the input are refused before allocating. */
  BAD(&K_DREQ, 0, LEN, "resources count INT32_MAX", 0x7f, 0xff, 0xff, 0xff,
      0x09, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff);
  BAD(&K_DREQ, 4, LEN, "compact resources count 2^32-2", 0xff, 0xff, 0xff,
      0xff, 0x0f, 0x09, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_DREQ, 0, LEN, "configuration_keys count INT32_MAX", 0x00, 0x00, 0x00,
      0x01, 0x09, 0x00, 0x01, 'a', 0x7f, 0xff, 0xff, 0xff, 0x00, 0x00);
  BAD(&K_DRESP, 1, LEN, "synonyms count 2^28", 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x01, 'a', 0x00,
      0x00, 0x00, 0x01, 0x00, 0x01, 'k', 0xff, 0xff, 0x00, 0x07, 0x00, 0x10,
      0x00, 0x00, 0x00);
  BAD(&K_AREQ, 0, LEN, "configs count INT32_MAX", 0x00, 0x00, 0x00, 0x01,
      0x09, 0x00, 0x01, 'a', 0x7f, 0xff, 0xff, 0xff, 0x00);
  BAD(&K_IARESP, 1, LEN, "compact responses count 1e9", 0x00, 0x00, 0x00,
      0x00, 0x81, 0x94, 0xeb, 0xdc, 0x03, 0x00);
  BAD(&K_DRESP, 0, LEN, "results count 2 with room for 1", 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00);

  /* Embedded NUL bytes. */
  BAD(&K_DREQ, 0, STR, "NUL in resource_name", 0x00, 0x00, 0x00, 0x01, 0x09,
      0x00, 0x03, 'a', 0x00, 'b', 0xff, 0xff, 0xff, 0xff);
  BAD(&K_DREQ, 4, STR, "NUL in compact configuration key", 0x02, 0x09, 0x02,
      'a', 0x02, 0x03, 'k', 0x00, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_DRESP, 0, STR, "NUL in config value", 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0x09, 0x00, 0x01, 'a', 0x00,
      0x00, 0x00, 0x01, 0x00, 0x01, 'k', 0x00, 0x02, 0x00, 'v', 0x00, 0x00,
      0x00);
  BAD(&K_AREQ, 0, STR, "NUL in config name", 0x00, 0x00, 0x00, 0x01, 0x09,
      0x00, 0x01, 'a', 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 'k', 0x00, 0xff,
      0xff, 0x00);
  BAD(&K_IAREQ, 1, STR, "NUL in compact config value", 0x02, 0x09, 0x02, 'a',
      0x02, 0x02, 'k', 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00);
  BAD(&K_ARESP, 2, STR, "NUL in compact error_message", 0x00, 0x00, 0x00,
      0x00, 0x02, 0x00, 0x2a, 0x02, 0x00, 0x09, 0x02, 'a', 0x00, 0x00);
}

/* ---- tolerated input ---------------------------------------------------- */

static void check_good(const kind_t *k, int16_t v, const uint8_t *p, size_t n,
                       const char *what) {
  anymsg_t m;
  dc_rd_t rd;
  int rc = decode(k, v, p, n, &m, &rd);
  ok(rc == 0 && rd.pos == n, "%s v%d %s: decodes (rc %d, pos %zu/%zu)",
     k->name, v, what, rc, rd.pos, n);
}

#define GOOD(k, v, what, ...)                                                  \
  do {                                                                         \
    static const uint8_t g_[] = {__VA_ARGS__};                                 \
    check_good(k, v, g_, sizeof(g_), what);                                    \
  } while (0)

static void test_tolerated(void) {
  /* Unknown tagged fields are skipped at every level, as Kafka does. */
  GOOD(&K_DREQ, 4, "unknown body tag", 0x01, 0x00, 0x00, /* 0 resources */
       0x01, 0x05, 0x02, 'x', 'y');                      /* tag 5, 2 bytes */
  GOOD(&K_DREQ, 4, "unknown resource tags", 0x02, 0x09, 0x02, 'a', 0x00,
       0x02, 0x00, 0x01, 'z', 0x03, 0x00, /* tags 0 and 3 */
       0x00, 0x00, 0x00);
  GOOD(&K_DRESP, 4, "unknown synonym tag", 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
       0x00, 0x00, 0x09, 0x02, 'a', 0x02, 0x02, 'k', 0x00, 0x00, 0x07, 0x00,
       0x02, 0x02, 's', 0x00, 0x08, 0x01, 0x00, 0x01, 0xee, /* tagged */
       0x00, 0x00, 0x00, 0x00, 0x00);
  GOOD(&K_AREQ, 2, "unknown config tag", 0x02, 0x09, 0x02, 'a', 0x02, 0x02,
       'k', 0x00, 0x01, 0x07, 0x00, /* tag 7, empty */
       0x00, 0x00, 0x00);
  GOOD(&K_IARESP, 1, "unknown response tag", 0x00, 0x00, 0x00, 0x00, 0x02,
       0x00, 0x00, 0x00, 0x09, 0x02, 'a', 0x01, 0x00, 0x01, 0x00, 0x00);

  /* Trailing bytes after the body are ignored (decoders stop at the end of
   * the body; rd.pos tells the caller where). */
  static const uint8_t trail[] = {0x00, 0x00, 0x00, 0x00, 0xaa};
  anymsg_t m;
  dc_rd_t rd;
  int rc = decode(&K_DREQ, 0, trail, sizeof(trail), &m, &rd);
  ok(rc == 0 && rd.pos == 4 && m.dreq.n_resources == 0,
     "trailing byte after the body is left unread");

  /* An unknown op byte is not a framing error; the handler rejects it. */
  GOOD(&K_IAREQ, 0, "op byte 7", 0x00, 0x00, 0x00, 0x01, 0x09, 0x00, 0x01, 'a',
       0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 'k', 0x07, 0xff, 0xff, 0x00);
}

/* ---- versions and encoder edge cases ------------------------------------ */

static void test_versions(void) {
  static const uint8_t body[64]; /* zeros: long enough for any version */
  for (size_t i = 0; i < N_KINDS; i++) {
    const kind_t *k = ALL_KINDS[i];
    int16_t bad[] = {-1, (int16_t)(max_version(k) + 1), INT16_MAX};
    for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
      anymsg_t m;
      dc_rd_t rd;
      int rc = decode(k, bad[j], body, sizeof(body), &m, &rd);
      ok(rc == DC_ERR__UNSUPPORTED_API &&
             rd.err == DC_ERR__UNSUPPORTED_API,
         "%s decode v%d -> _UNSUPPORTED_API", k->name, bad[j]);
      dc_buf_t b;
      dc_buf_init(&b);
      memset(&m, 0, sizeof(m));
      rc = k->enc(&b, bad[j], &m);
      ok(rc == DC_ERR__UNSUPPORTED_API && b.len == 0,
         "%s encode v%d -> _UNSUPPORTED_API, nothing written", k->name, bad[j]);
      dc_buf_free(&b);
    }
    /* The all-zero body is a valid empty message at every classic version
     * (flexible ones read 0x00 as a null array: refused). */
    for (int16_t v = 0; v <= max_version(k); v++) {
      anymsg_t m;
      dc_rd_t rd;
      int rc = decode(k, v, body, sizeof(body), &m, &rd);
      if (dc_api_flexible(k->api, v))
        ok(rc == DC_ERR__BAD_LENGTH, "%s v%d: null top-level array refused",
           k->name, v);
      else
        ok(rc == 0, "%s v%d: zero body decodes as empty", k->name, v);
    }
  }
}

static void test_encoder_edges(void) {
  dc_buf_t b;
  dc_buf_init(&b);

  /* NULL non-nullable strings and negative non-nullable counts go out as
   * "" and empty: never bytes a peer must reject. */
  static dc_describe_configs_req_resource_t r[] = {{DC_RES_CLIENT, NULL, -1,
                                                    NULL}};
  static const dc_describe_configs_req_t req = {1, r, false, false, 0, false};
  static const uint8_t want_req[] = {
      0x00, 0x00, 0x00, 0x01, 0x09, /* resources: 1, type 9 */
      0x00, 0x00,                   /* resource_name "" */
      0xff, 0xff, 0xff, 0xff,       /* keys null */
  };
  ok(dc_describe_configs_req_encode(&b, 0, &req) == 0,
     "encode request with NULL resource_name");
  is_mem(b.data, b.len, want_req, sizeof(want_req),
         "NULL resource_name written as empty string");

  dc_buf_clear(&b);
  static dc_describe_configs_entry_t e[] = {{.name = NULL, .n_synonyms = -1}};
  static dc_describe_configs_result_t res[] = {{0, NULL, 9, "a", 1, e, 0}};
  static const dc_describe_configs_resp_t resp = {0, 1, res, 0};
  static const uint8_t want_resp[] = {
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x09, 0x02, 'a', /* hdr */
      0x02,             /* configs: 1 */
      0x01,             /*   name "" */
      0x00,             /*   value null */
      0x00, 0x00, 0x00, /*   read_only, config_source 0, is_sensitive */
      0x01,             /*   synonyms: empty, not null */
      0x00, 0x00, 0x00, /*   config_type, documentation null, tags */
      0x00, 0x00,       /* result tags, body tags */
  };
  ok(dc_describe_configs_resp_encode(&b, 4, &resp) == 0,
     "encode v4 response with NULL name and n_synonyms -1");
  is_mem(b.data, b.len, want_resp, sizeof(want_resp),
         "NULL config name -> \"\", negative synonyms -> empty array");

  dc_buf_clear(&b);
  static const dc_alter_configs_resp_t aresp = {0, -1, NULL};
  static const uint8_t want_aresp[] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                       0x00, 0x00};
  ok(dc_alter_configs_resp_encode(&b, 0, &aresp) == 0,
     "encode AlterConfigs response with n_responses -1");
  is_mem(b.data, b.len, want_aresp, sizeof(want_aresp),
         "negative responses count -> empty array");

  dc_buf_free(&b);
}

/* dynconf's store position rides in a tagged field of v4 only, and only
 * when there is one to say. */
static void test_positions(void) {
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, "a", -1, NULL};
  dc_describe_configs_req_t req = {1, &res, true, false, 0, false}, back;
  dc_buf_t b;
  dc_buf_init(&b);
  dc_describe_configs_req_encode(&b, 4, &req);
  ok(b.len > 0 && b.data[b.len - 1] == 0,
     "DescribeConfigs v4 request without a position: empty tags");
  size_t plain = b.len;
  req.min_position = 300;
  dc_buf_clear(&b);
  dc_describe_configs_req_encode(&b, 4, &req);
  static const uint8_t tag[] = {1, 0x90, 0x4e, 8, 0, 0, 0, 0, 0, 0, 1, 0x2c};
  ok(b.len == plain - 1 + sizeof(tag) &&
         !memcmp(b.data + plain - 1, tag, sizeof(tag)),
     "  with min_position 300: tag 10000, 8 bytes");
  dc_rd_t rd;
  dc_rd_init(&rd, b.data, b.len, &arena);
  ok(!dc_describe_configs_req_decode(&rd, 4, &back) &&
         back.min_position == 300 && back.ask_position && rd.pos == rd.len,
     "  and decodes back");
  req.min_position = 0; /* none seen yet: the tag asks for the server's */
  req.ask_position = true;
  dc_buf_clear(&b);
  dc_describe_configs_req_encode(&b, 4, &req);
  dc_rd_init(&rd, b.data, b.len, &arena);
  ok(b.len == plain - 1 + sizeof(tag) &&
         !dc_describe_configs_req_decode(&rd, 4, &back) &&
         back.min_position == 0 && back.ask_position && rd.pos == rd.len,
     "  asking without one seen: the tag carries 0, and decodes back");
  req.min_position = 300;
  req.ask_position = false;
  dc_buf_clear(&b);
  dc_describe_configs_req_encode(&b, 1, &req);
  dc_rd_init(&rd, b.data, b.len, &arena);
  ok(!dc_describe_configs_req_decode(&rd, 1, &back) &&
         back.min_position == -1 && !back.ask_position && rd.pos == rd.len,
     "v1 (not flexible) carries no position");
  dc_describe_configs_result_t r = {0, NULL, DC_RES_CLIENT, "a", 0, NULL, 0};
  dc_describe_configs_resp_t resp = {0, 1, &r, 77}, rb;
  dc_buf_clear(&b);
  dc_describe_configs_resp_encode(&b, 4, &resp);
  dc_rd_init(&rd, b.data, b.len, &arena);
  ok(!dc_describe_configs_resp_decode(&rd, 4, &rb) && rb.position == 77 &&
         rd.pos == rd.len,
     "a v4 response says position 77 in its tag");
  resp.position = 0;
  dc_buf_clear(&b);
  dc_describe_configs_resp_encode(&b, 4, &resp);
  dc_rd_init(&rd, b.data, b.len, &arena);
  ok(!dc_describe_configs_resp_decode(&rd, 4, &rb) && rb.position == -1 &&
         b.data[b.len - 1] == 0,
     "  and none (empty tags, -1) when it has none to say");
  /* A result's configuration version rides in the result's own tags. */
  r.config_version = 42;
  dc_buf_clear(&b);
  dc_describe_configs_resp_encode(&b, 4, &resp);
  dc_rd_init(&rd, b.data, b.len, &arena);
  ok(!dc_describe_configs_resp_decode(&rd, 4, &rb) && rb.n_results == 1 &&
         rb.results[0].config_version == 42 && rd.pos == rd.len,
     "a v4 result says its configuration version (tag 10001)");
  dc_buf_clear(&b);
  dc_describe_configs_resp_encode(&b, 3, &resp);
  dc_rd_init(&rd, b.data, b.len, &arena);
  ok(!dc_describe_configs_resp_decode(&rd, 3, &rb) && rb.n_results == 1 &&
         rb.results[0].config_version == -1 && rd.pos == rd.len,
     "  v3 (not flexible) cannot: decoded as -1");
  r.config_version = 0;
  dc_buf_clear(&b);
  dc_describe_configs_resp_encode(&b, 4, &resp);
  dc_rd_init(&rd, b.data, b.len, &arena);
  ok(!dc_describe_configs_resp_decode(&rd, 4, &rb) &&
         rb.results[0].config_version == -1,
     "  and version 0 is not said");
  dc_buf_free(&b);
}

int main(void) {
  dc_arena_init(&arena);
  test_positions();
  test_describe_vectors();
  test_alter_vectors();
  test_roundtrips();
  test_min_sizes();
  test_malformed();
  test_tolerated();
  test_versions();
  test_encoder_edges();
  dc_arena_free(&arena);
  return done_testing();
}
