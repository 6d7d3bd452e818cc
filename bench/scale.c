/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scale: the client side of bench/run-scale.sh.
 *
 *   scale latency --target H:P --client NAME [--alters N] [--describes N]
 *                 [--seconds S] [--timeout-ms MS]
 *       One request at a time over one connection (lib/client/kclient.h),
 *       seven series, each bounded by a count and by S seconds:
 *         IncrementalAlterConfigs of NAME setting heartbeat.interval.ms
 *           (the heartbeat/session cross-entity check runs),
 *         of <default> setting session.timeout.ms (the check reaches every
 *           client and user),
 *         of NAME setting linger.ms (no cross-entity check),
 *       each persisted and with validate_only=true, then DescribeConfigs v1
 *       of NAME with synonyms. Persisted alters alternate between two values
 *       so every one really changes the entity (an unchanged value is
 *       neither checked nor stored); validate-only alters use a value that
 *       differs from the stored one for the same reason.
 *       Then the bulk series, persisted and validate-only, a tenth of N
 *       requests each: one IncrementalAlterConfigs of 833 clients
 *       "bench-rows-NNN" setting linger.ms and batch.size, 4,998 store
 *       writes once they exist (max.request.writes is 5000): what the
 *       commit costs per row.
 *   scale attack-seed --target H:P --client NAME [--value-bytes N]
 *       Sets every schema key of NAME to the largest value (up to N bytes)
 *       that the schema in this build and then the server accept, and
 *       prints the size of one v3 DescribeConfigs result for NAME.
 *   scale attack --target H:P --client NAME --pid PID [--connections N]
 *                [--request-bytes B] [--seconds S] [--rss-cap-mb MB]
 *       N connections each send, over and over, a DescribeConfigs v3
 *       request (synonyms and documentation) naming NAME as many times as
 *       fits in B bytes, and never read. Stops when dynconfd's RSS passes
 *       the cap, when every connection is blocked and dynconfd has used no
 *       CPU for a second (nothing more will happen), or after S seconds;
 *       then reads dynconfd's VmHWM/VmRSS.
 *
 * Output: human lines, and one "RESULT key=value ..." line per series or
 * run for the script. Exit status: 0, 1 on a failure that left no figure,
 * 2 on a usage error.
 */
#include "codec/proto.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/entity.h"
#include "alter.h"
#include "client/kclient.h"
#include "common/schema.h"
#include "common/errors.h"
#include "scale.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- latency ------------------------------------------------------------ */


/* DescribeConfigs v1 of a client with synonyms. Returns the resource's
 * error code or -1; with key set, copies the entity's own value of it
 * (NULL when the entity does not set it) into *own (malloc'd). */
static int describe(dc_kclient_t *kc, const char *entity, const char *key,
                    char **own, int timeout_ms, char *msg, size_t msg_size) {
  char *keys[1] = {(char *)key};
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, (char *)entity,
                                            key ? 1 : -1, key ? keys : NULL};
  dc_describe_configs_req_t req = {1, &res, true, false, 0, false};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  dc_describe_configs_resp_t resp;
  int rc = -1;
  int8_t own_src = !dc_entity_is_default(entity) ? DC_SRC_DYNAMIC_CLIENT
                                                  : DC_SRC_DYNAMIC_DEFAULT;
  msg[0] = '\0';
  if (own)
    *own = NULL;
  if (dc_kclient_request(kc, DC_API_DESCRIBE_CONFIGS, 1, scale_enc_describe, &req,
                         timeout_ms, &rd, &arena, msg, msg_size) == 0) {
    if (dc_describe_configs_resp_decode(&rd, 1, &resp) == 0 &&
        resp.n_results == 1) {
      dc_describe_configs_result_t *r = &resp.results[0];
      rc = r->error_code;
      if (rc)
        snprintf(msg, msg_size, "%s", r->error_message ? r->error_message : "");
      for (int32_t i = 0; own && key && i < r->n_configs; i++)
        for (int32_t j = 0; j < r->configs[i].n_synonyms; j++) {
          dc_describe_configs_synonym_t *s = &r->configs[i].synonyms[j];
          if (!strcmp(s->name, key) && s->source == own_src && s->value &&
              !*own)
            *own = strdup(s->value);
        }
    } else {
      snprintf(msg, msg_size, "undecodable DescribeConfigs response");
    }
  }
  dc_arena_free(&arena);
  return rc;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static int64_t pct(const int64_t *s, int n, double p) {
  if (n == 0)
    return 0;
  int k = (int)(p / 100.0 * n + 0.999999);
  if (k < 1)
    k = 1;
  return s[(k > n ? n : k) - 1];
}

typedef struct series {
  const char *name;   /* for RESULT */
  const char *entity; /* NULL: the --client entity */
  const char *key;    /* NULL: a DescribeConfigs series */
  const char *a, *b;  /* persisted alters alternate between these */
  const char *c, *d;  /* validate-only alters use one that is not stored */
  bool validate_only;
} series_t;

/* What one series came to. */
typedef struct tally {
  int n, errors;
  bool capped;
  double secs;
  char first_err[700];
} tally_t;

/* Request i of series s: an alter (persisted ones alternate a and b,
 * flipped when a is stored) or a describe. Its result code. */
static int series_request(const cfg_t *c, dc_kclient_t *kc, int16_t v,
                          const series_t *s, const char *entity, int i,
                          bool flip, const char *fixed, char *msg,
                          size_t msg_size) {
  if (!s->key)
    return describe(kc, entity, NULL, NULL, c->timeout_ms, msg, msg_size);
  const char *val = s->validate_only ? fixed
                    : ((i % 2 == 0) != flip) ? s->a
                                             : s->b;
  return bench_alter_set(kc, v, entity, 1, &s->key, &val, s->validate_only,
                         c->timeout_ms, msg, msg_size);
}

/* Counts a failed request in t (its first error kept). A lost connection
 * (rc < 0) is replaced for what follows: true then. */
static bool note_failure(const cfg_t *c, dc_kclient_t **kcp, int16_t *v,
                         tally_t *t, int rc, const char *msg) {
  if (rc != 0) {
    t->errors++;
    if (!t->first_err[0])
      snprintf(t->first_err, sizeof(t->first_err), "%s", msg);
  }
  if (rc >= 0)
    return false;
  dc_kclient_destroy(*kcp);
  *kcp = scale_connect(c, v);
  if (!*kcp)
    exit(1);
  return true;
}

/* The series' line, its first error and its RESULT line. */
static void series_report(const series_t *s, const char *entity,
                          const int64_t *lat, const tally_t *t) {
  int n = t->n;
  printf("%-13s %-8s %-14s n=%-4d p50=%lld us p99=%lld us max=%lld us "
         "errors=%d%s (%.1f s)\n",
         s->name, s->key ? (s->validate_only ? "validate" : "commit") : "-",
         entity, n, (long long)pct(lat, n, 50), (long long)pct(lat, n, 99),
         (long long)(n ? lat[n - 1] : 0), t->errors,
         t->capped ? ", time cap reached" : "", t->secs);
  if (t->first_err[0])
    printf("  first error: %s\n", t->first_err);
  printf("RESULT series=%s mode=%s n=%d p50_us=%lld p99_us=%lld max_us=%lld "
         "errors=%d capped=%d seconds=%.2f\n",
         s->name, s->key ? (s->validate_only ? "validate" : "commit") : "read",
         n, (long long)pct(lat, n, 50), (long long)pct(lat, n, 99),
         (long long)(n ? lat[n - 1] : 0), t->errors, t->capped ? 1 : 0,
         t->secs);
  fflush(stdout);
}

/* Runs one series on *kcp (reconnecting when a request broke the
 * connection) and prints its RESULT line. */
static void run_series(const cfg_t *c, dc_kclient_t **kcp, int16_t *v,
                       const series_t *s) {
  const char *entity = s->entity ? s->entity : c->client;
  int limit = s->key ? c->alters : c->describes;
  int64_t *lat = calloc((size_t)limit + 1, sizeof(*lat));
  char msg[700] = "";
  tally_t t = {0, 0, false, 0, ""};
  int failed = 0;
  char *cur = NULL;
  if (!lat) {
    fprintf(stderr, "scale: out of memory\n");
    exit(1);
  }
  if (s->key && describe(*kcp, entity, s->key, &cur, c->timeout_ms, msg,
                         sizeof(msg)) != 0) {
    fprintf(stderr, "scale: reading %s of %s failed: %s\n", s->key, entity,
            msg);
    failed = t.errors = 1;
  }
  /* Persisted: start with the value that differs from the stored one. */
  bool flip = cur && !strcmp(cur, s->a);
  const char *fixed = s->c && cur && !strcmp(cur, s->c) ? s->d : s->c;
  int64_t t_start = dc_mono_us(), deadline = t_start + (int64_t)(c->seconds * 1e6);
  for (int i = 0; !failed && i <= limit; i++) {
    /* i == 0 is a warm-up and is not recorded. */
    if (i > 0 && dc_mono_us() >= deadline) {
      t.capped = true;
      break;
    }
    int64_t t0 = dc_mono_us();
    int rc = series_request(c, *kcp, *v, s, entity, i, flip, fixed, msg,
                            sizeof(msg));
    int64_t t1 = dc_mono_us();
    if (note_failure(c, kcp, v, &t, rc, msg))
      failed = 1;
    if (i > 0 && rc == 0)
      lat[t.n++] = t1 - t0;
  }
  t.secs = (double)(dc_mono_us() - t_start) / 1e6;
  qsort(lat, (size_t)t.n, sizeof(*lat), cmp_i64);
  series_report(s, entity, lat, &t);
  free(cur);
  free(lat);
}

/* The bulk series: one IncrementalAlterConfigs of BULK_ENTITIES clients
 * "bench-rows-NNN" setting BULK_KEYS keys each. Once they exist, each
 * persisted one changes both keys of every one of them: per entity its
 * old set (2 rows) removed, its new set (2) written and 2 audit rows, so
 * BULK_ROWS store writes, just within max.request.writes (5000). */
#define BULK_ENTITIES 833
#define BULK_KEYS 2
#define BULK_ROWS (BULK_ENTITIES * 3 * BULK_KEYS)

/* One bulk alter setting linger.ms to lv and batch.size to bv; the first
 * resource error's code (message in msg), 0, or -1 when the request
 * failed. */
static int bulk_request(const cfg_t *c, dc_kclient_t *kc, int16_t v,
                        const char *lv, const char *bv, bool validate_only,
                        char *msg, size_t msg_size) {
  static char names[BULK_ENTITIES][24];
  static dc_alter_config_t ops[BULK_ENTITIES][BULK_KEYS];
  static dc_alter_resource_t res[BULK_ENTITIES];
  for (int i = 0; i < BULK_ENTITIES; i++) {
    snprintf(names[i], sizeof(names[i]), "bench-rows-%03d", i);
    ops[i][0] = (dc_alter_config_t){"linger.ms", DC_OP_SET, (char *)lv};
    ops[i][1] = (dc_alter_config_t){"batch.size", DC_OP_SET, (char *)bv};
    res[i] = (dc_alter_resource_t){DC_RES_CLIENT, names[i], BULK_KEYS, ops[i]};
  }
  dc_alter_configs_req_t req = {BULK_ENTITIES, res, validate_only};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  int rc = -1;
  msg[0] = '\0';
  if (dc_kclient_request(kc, DC_API_INCREMENTAL_ALTER_CONFIGS, v,
                         bench_enc_incremental, &req, c->timeout_ms, &rd,
                         &arena, msg, msg_size) == 0) {
    if (dc_incremental_alter_configs_resp_decode(&rd, v, &resp) == 0 &&
        resp.n_responses == BULK_ENTITIES) {
      rc = 0;
      for (int32_t i = 0; !rc && i < resp.n_responses; i++)
        if ((rc = resp.responses[i].error_code))
          snprintf(msg, msg_size, "%s: %s: %s", names[i], dc_err_name(rc),
                   resp.responses[i].error_message
                       ? resp.responses[i].error_message
                       : "(no message)");
    } else {
      snprintf(msg, msg_size, "undecodable IncrementalAlterConfigs response");
    }
  }
  dc_arena_free(&arena);
  return rc;
}

/* The bulk series, persisted (alternating values; the first request,
 * which creates the entities, is a warm-up) or validate-only: a tenth of
 * --alters requests, at most --seconds. */
static void run_bulk(const cfg_t *c, dc_kclient_t **kcp, int16_t *v,
                     bool validate_only) {
  static const series_t s = {"bulk_rows", "-", "linger.ms", NULL, NULL, NULL,
                             NULL, false};
  series_t me = s;
  me.validate_only = validate_only;
  int limit = c->alters / 10 > 0 ? c->alters / 10 : 1;
  int64_t *lat = calloc((size_t)limit + 1, sizeof(*lat));
  char msg[700] = "", entity[32];
  tally_t t = {0, 0, false, 0, ""};
  if (!lat) {
    fprintf(stderr, "scale: out of memory\n");
    exit(1);
  }
  int64_t t_start = dc_mono_us(), deadline = t_start + (int64_t)(c->seconds * 1e6);
  for (int i = 0; i <= limit; i++) {
    if (i > 0 && dc_mono_us() >= deadline) {
      t.capped = true;
      break;
    }
    int64_t t0 = dc_mono_us();
    int rc = validate_only ? bulk_request(c, *kcp, *v, "7", "16386", true, msg,
                                          sizeof(msg))
                           : bulk_request(c, *kcp, *v, i % 2 ? "6" : "5",
                                          i % 2 ? "16385" : "16384", false,
                                          msg, sizeof(msg));
    int64_t t1 = dc_mono_us();
    if (note_failure(c, kcp, v, &t, rc, msg))
      break;
    if (i > 0 && rc == 0)
      lat[t.n++] = t1 - t0;
  }
  t.secs = (double)(dc_mono_us() - t_start) / 1e6;
  qsort(lat, (size_t)t.n, sizeof(*lat), cmp_i64);
  snprintf(entity, sizeof(entity), "%dx%d", BULK_ENTITIES, BULK_KEYS);
  series_report(&me, entity, lat, &t);
  free(lat);
}

static int cmd_latency(const cfg_t *c) {
  int16_t v;
  dc_kclient_t *kc = scale_connect(c, &v);
  if (!kc)
    return 1;
  /* Values stay inside every resolved pair's bounds of the populated
   * store: heartbeats below 3000, sessions above 10000 everywhere. */
  static const series_t all[] = {
      {"client_hb", NULL, HB, "2001", "2002", "2101", "2102", false},
      {"client_hb", NULL, HB, "2001", "2002", "2101", "2102", true},
      {"default_st", DC_ENTITY_DEFAULT, ST, "45001", "45002", "46001", "46002",
       false},
      {"default_st", DC_ENTITY_DEFAULT, ST, "45001", "45002", "46001", "46002",
       true},
      {"client_linger", NULL, "linger.ms", "5", "6", "7", "8", false},
      {"client_linger", NULL, "linger.ms", "5", "6", "7", "8", true},
      {"describe", NULL, NULL, NULL, NULL, NULL, NULL, false},
  };
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    run_series(c, &kc, &v, &all[i]);
  /* Last: its entities would be in the other series' stores. */
  run_bulk(c, &kc, &v, false);
  run_bulk(c, &kc, &v, true);
  printf("bulk_rows: each persisted alter of %d clients x %d keys makes %d "
         "store writes\n", BULK_ENTITIES, BULK_KEYS, BULK_ROWS);
  dc_kclient_destroy(kc);
  return 0;
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f,
          "Usage: scale latency --target H:P --client NAME [--alters N]\n"
          "                     [--describes N] [--seconds S] [--timeout-ms MS]\n"
          "       scale attack-seed --target H:P --client NAME [--value-bytes N]\n"
          "       scale attack --target H:P --client NAME --pid PID\n"
          "                    [--connections N] [--request-bytes B]\n"
          "                    [--seconds S] [--rss-cap-mb MB]\n"
          "The client side of bench/run-scale.sh; see the top of bench/scale.c.\n");
}

/* The options after the command into c; -1 on a usage error. */
static int parse_opts(int argc, char **argv, cfg_t *c) {
  static const struct option opts[] = {
      {"target", required_argument, NULL, 't'},
      {"client", required_argument, NULL, 'c'},
      {"alters", required_argument, NULL, 'a'},
      {"describes", required_argument, NULL, 'd'},
      {"seconds", required_argument, NULL, 's'},
      {"timeout-ms", required_argument, NULL, 'T'},
      {"value-bytes", required_argument, NULL, 'v'},
      {"pid", required_argument, NULL, 'p'},
      {"connections", required_argument, NULL, 'n'},
      {"request-bytes", required_argument, NULL, 'r'},
      {"rss-cap-mb", required_argument, NULL, 'm'},
      {NULL, 0, NULL, 0}};
  int o;
  optind = 2;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
    case 't': c->target = optarg; break;
    case 'c': c->client = optarg; break;
    case 'a': c->alters = atoi(optarg); break;
    case 'd': c->describes = atoi(optarg); break;
    case 's': c->seconds = atof(optarg); break;
    case 'T': c->timeout_ms = atoi(optarg); break;
    case 'v': c->value_bytes = atoi(optarg); break;
    case 'p': c->pid = atol(optarg); break;
    case 'n': c->connections = atoi(optarg); break;
    case 'r': c->request_bytes = atol(optarg); break;
    case 'm': c->rss_cap_mb = atol(optarg); break;
    default: return -1;
    }
  }
  if (!c->target || !c->client || c->alters < 1 || c->describes < 1 ||
      c->seconds <= 0 || c->timeout_ms < 1 || c->value_bytes < 1 ||
      c->connections < 1 || c->request_bytes < 128 || c->rss_cap_mb < 1)
    return -1;
  return 0;
}

int main(int argc, char **argv) {
  cfg_t c = {.alters = 300, .describes = 1000, .timeout_ms = 120000,
             .seconds = 8, .value_bytes = 1024, .connections = 40,
             .request_bytes = 1048576, .rss_cap_mb = 3072};
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *cmd = argv[1];
  if (parse_opts(argc, argv, &c)) {
    usage(stderr);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  if (!strcmp(cmd, "latency"))
    return cmd_latency(&c);
  if (!strcmp(cmd, "attack-seed"))
    return scale_cmd_attack_seed(&c);
  if (!strcmp(cmd, "attack")) {
    if (c.pid <= 0) {
      usage(stderr);
      return 2;
    }
    return scale_cmd_attack(&c);
  }
  usage(stderr);
  return 2;
}
