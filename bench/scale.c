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
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HB "heartbeat.interval.ms"
#define ST "session.timeout.ms"

typedef struct cfg {
  const char *target, *client;
  int alters, describes, timeout_ms;
  double seconds;
  int value_bytes;
  long pid;
  int connections;
  long request_bytes, rss_cap_mb;
} cfg_t;

static int enc_describe(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_configs_req_encode(b, v, req);
}

static dc_kclient_t *connect_to(const cfg_t *c, int16_t *iac_version) {
  char err[512] = "";
  dc_kclient_t *kc = dc_kclient_new("dynconf-scale");
  if (!kc) {
    fprintf(stderr, "scale: out of memory\n");
    return NULL;
  }
  if (dc_kclient_connect(kc, c->target, 5000, err, sizeof(err)) ||
      dc_kclient_api_versions(kc, 5000, err, sizeof(err))) {
    fprintf(stderr, "scale: %s\n", err);
    dc_kclient_destroy(kc);
    return NULL;
  }
  *iac_version = dc_kclient_pick_version(kc, DC_API_INCREMENTAL_ALTER_CONFIGS);
  if (*iac_version < 0) {
    fprintf(stderr, "scale: %s does not serve IncrementalAlterConfigs\n",
            c->target);
    dc_kclient_destroy(kc);
    return NULL;
  }
  return kc;
}

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
  if (dc_kclient_request(kc, DC_API_DESCRIBE_CONFIGS, 1, enc_describe, &req,
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
    if (rc != 0) {
      t.errors++;
      if (!t.first_err[0])
        snprintf(t.first_err, sizeof(t.first_err), "%s", msg);
    }
    if (rc < 0) { /* the connection is gone: a new one for what follows */
      dc_kclient_destroy(*kcp);
      *kcp = connect_to(c, v);
      if (!*kcp)
        exit(1);
      failed = 1;
    }
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
    if (rc != 0) {
      t.errors++;
      if (!t.first_err[0])
        snprintf(t.first_err, sizeof(t.first_err), "%s", msg);
    }
    if (rc < 0) { /* the connection is gone: a new one for what follows */
      dc_kclient_destroy(*kcp);
      *kcp = connect_to(c, v);
      if (!*kcp)
        exit(1);
      break;
    }
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
  dc_kclient_t *kc = connect_to(c, &v);
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

/* ---- attack ------------------------------------------------------------- */

/* A large value the schema accepts for e, at most max_bytes long where the
 * type allows a choice; NULL when none is found. Lists repeat their allowed
 * items; the local validator (the same schema code as the server's when
 * built from the same tree) shrinks the value until it passes. */
static char *big_value(const dc_schema_entry_t *e, size_t max_bytes) {
  char why[256];
  char *v = NULL;
  if (!strcmp(e->name, ST))
    return strdup("1800000"); /* dynconfd's default upper bound */
  if (!strcmp(e->name, HB))
    return strdup("1799999"); /* below session.timeout.ms */
  switch (e->type) {
  case DC_TYPE_INT:
  case DC_TYPE_LONG:
  case DC_TYPE_DOUBLE:
    if (asprintf(&v, "%lld", (long long)e->max) < 0)
      return NULL;
    return v;
  case DC_TYPE_BOOLEAN:
    return strdup("false");
  default:
    break;
  }
  for (size_t len = max_bytes; len >= 1; len /= 2) {
    v = calloc(len + 1, 1);
    if (!v)
      return NULL;
    if (e->type == DC_TYPE_STRING && e->allowed) {
      /* The longest allowed value; nothing to grow. */
      for (const char *const *a = e->allowed; *a; a++)
        if (strlen(*a) > strlen(v) && strlen(*a) <= len)
          snprintf(v, len + 1, "%s", *a);
    } else if (e->type == DC_TYPE_LIST && e->allowed) {
      size_t used = 0;
      for (int k = 0;; k++) {
        const char *item = e->allowed[k] ? e->allowed[k] : NULL;
        if (!item) { /* wrap around: repeated items */
          k = -1;
          continue;
        }
        size_t n = strlen(item) + (used ? 1 : 0);
        if (used + n > len)
          break;
        used += (size_t)snprintf(v + used, len + 1 - used, "%s%s",
                                 used ? "," : "", item);
      }
    } else {
      memset(v, 'x', len);
    }
    if (*v && dc_schema_validate(e, v, why, sizeof(why)))
      return v;
    free(v);
    v = NULL;
  }
  return NULL;
}

/* Halves a value the server refused: a list at an item boundary, a free
 * string anywhere. False when there is nothing left to cut. */
static bool shrink(char *val, const dc_schema_entry_t *e) {
  size_t half = strlen(val) / 2;
  if (e->type == DC_TYPE_STRING && !e->allowed && half > 0) {
    val[half] = '\0';
    return true;
  }
  if (e->type != DC_TYPE_LIST)
    return false;
  char *cut = NULL;
  for (char *p = strchr(val, ','); p && (size_t)(p - val) <= half;
       p = strchr(p + 1, ','))
    cut = p;
  if (!cut)
    cut = strchr(val, ','); /* at least drop to the first item */
  if (!cut)
    return false;
  *cut = '\0';
  return true;
}

static int cmd_attack_seed(const cfg_t *c) {
  int16_t v;
  dc_kclient_t *kc = connect_to(c, &v);
  if (!kc)
    return 1;
  size_t n;
  const dc_schema_entry_t *all = dc_schema_all(&n);
  char *vals[32];
  size_t total = 0, nk = 0;
  char msg[700];
  int ret = 0;
  for (size_t i = 0; i < n && nk < 32; i++) {
    char *val = big_value(&all[i], (size_t)c->value_bytes);
    if (!val)
      continue;
    /* Each key on its own, halving what the server refuses. */
    int rc;
    while ((rc = bench_alter_set(kc, v, c->client, 1, &all[i].name,
                           (const char *const *)&val, false, c->timeout_ms,
                           msg, sizeof(msg))) > 0 &&
           shrink(val, &all[i]))
      ;
    if (rc != 0) {
      fprintf(stderr, "scale: setting %s on %s failed: %s\n", all[i].name,
              c->client, msg);
      free(val);
      if (rc < 0) {
        ret = 1;
        break;
      }
      continue;
    }
    vals[nk++] = val;
    total += strlen(val);
  }
  /* One v3 result for the client: what every repetition costs. */
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, (char *)c->client,
                                            -1, NULL};
  dc_describe_configs_req_t req = {1, &res, true, true, 0, false};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  long result_bytes = -1;
  if (!ret && dc_kclient_request(kc, DC_API_DESCRIBE_CONFIGS, 3, enc_describe,
                                 &req, c->timeout_ms, &rd, &arena, msg,
                                 sizeof(msg)) == 0)
    result_bytes = (long)rd.len - 4 - 4; /* throttle time, result count */
  dc_arena_free(&arena);
  printf("attack entity %s: %zu schema keys set, %zu value bytes; one v3 "
         "result (synonyms, documentation) is %ld bytes\n",
         c->client, nk, total, result_bytes);
  printf("RESULT keys=%zu value_bytes=%zu result_bytes=%ld\n", nk, total,
         result_bytes);
  for (size_t i = 0; i < nk; i++)
    free(vals[i]);
  dc_kclient_destroy(kc);
  return ret || nk == 0;
}

/* VmRSS and VmHWM of pid in kB; false when it is gone. */
static bool proc_mem(long pid, long *rss, long *hwm) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%ld/status", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  *rss = *hwm = -1;
  while (fgets(line, sizeof(line), f)) {
    if (!strncmp(line, "VmRSS:", 6))
      *rss = strtol(line + 6, NULL, 10);
    else if (!strncmp(line, "VmHWM:", 6))
      *hwm = strtol(line + 6, NULL, 10);
  }
  fclose(f);
  return *rss >= 0;
}


static int tcp_connect(const char *target) {
  char host[256];
  const char *colon = strrchr(target, ':');
  if (!colon || (size_t)(colon - target) >= sizeof(host))
    return -1;
  snprintf(host, sizeof(host), "%.*s", (int)(colon - target), target);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
  if (getaddrinfo(host, colon + 1, &hints, &ai))
    return -1;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return fd;
}

/* The request frame: header + DescribeConfigs v3 naming client as often as
 * the frame stays within max_bytes (the size field's value). */
static int build_attack_frame(dc_buf_t *b, const char *client, long max_bytes,
                              int32_t *n_out) {
  /* One repetition: type (1), name (2 + len), null key array (4). */
  long per = 1 + 2 + (long)strlen(client) + 4;
  long fixed = 64 + 32; /* header with client id, counts, flags, slack */
  int32_t n = (int32_t)((max_bytes - fixed) / per);
  if (n < 1)
    return -1;
  dc_describe_configs_req_resource_t *res = calloc((size_t)n, sizeof(*res));
  if (!res)
    return -1;
  for (int32_t i = 0; i < n; i++)
    res[i] = (dc_describe_configs_req_resource_t){DC_RES_CLIENT, (char *)client,
                                                  -1, NULL};
  dc_req_header_t h = {DC_API_DESCRIBE_CONFIGS, 3, 1, (char *)"scale-attack"};
  dc_describe_configs_req_t req = {n, res, true, true, 0, false};
  size_t off = dc_wr_frame_begin(b);
  int err = dc_req_header_encode(b, &h);
  if (!err)
    err = dc_describe_configs_req_encode(b, 3, &req);
  dc_wr_frame_end(b, off);
  free(res);
  if (err || b->err || (long)b->len - 4 > max_bytes)
    return -1;
  *n_out = n;
  return 0;
}

typedef struct aconn {
  int fd;
  size_t off;          /* bytes of the current frame copy already sent */
  long frames;         /* whole frames sent */
  int64_t progress_us; /* last time a send made progress */
} aconn_t;

/* One attack run: its frame, its connections and what it has seen. */
typedef struct attack {
  const cfg_t *c;
  dc_buf_t frame; /* owned */
  int32_t reps;
  aconn_t *cs;       /* owned */
  struct pollfd *pf; /* owned */
  int alive;
  long idle_rss, idle_hwm, rss, hwm, max_rss;
  long long cpu_mark;
  int64_t t0, deadline, cpu_mark_us;
  const char *why, *reason;
} attack_t;

/* The frame, dynconfd's idle memory and the connections; -1 after saying
 * why. */
static int attack_setup(attack_t *a) {
  const cfg_t *c = a->c;
  if (build_attack_frame(&a->frame, c->client, c->request_bytes, &a->reps)) {
    fprintf(stderr, "scale: cannot build a %ld-byte DescribeConfigs v3 "
                    "request\n", c->request_bytes);
    return -1;
  }
  if (!proc_mem(c->pid, &a->idle_rss, &a->idle_hwm)) {
    fprintf(stderr, "scale: no process %ld\n", c->pid);
    return -1;
  }
  a->cs = calloc((size_t)c->connections, sizeof(*a->cs));
  a->pf = calloc((size_t)c->connections, sizeof(*a->pf));
  if (!a->cs || !a->pf)
    return -1;
  for (int i = 0; i < c->connections; i++)
    a->cs[i].fd = -1;
  for (int i = 0; i < c->connections; i++) {
    a->cs[i].fd = tcp_connect(c->target);
    if (a->cs[i].fd < 0) {
      fprintf(stderr, "scale: cannot connect to %s\n", c->target);
      return -1;
    }
  }
  return 0;
}

/* Sends on every connection until it would block; a connection the
 * server closed is counted and dropped. */
static void attack_send(attack_t *a, int64_t now) {
  for (int i = 0; i < a->c->connections; i++) {
    aconn_t *k = &a->cs[i];
    while (k->fd >= 0) {
      ssize_t n = send(k->fd, a->frame.data + k->off, a->frame.len - k->off,
                       MSG_NOSIGNAL);
      if (n > 0) {
        k->progress_us = now;
        k->off += (size_t)n;
        if (k->off == a->frame.len) {
          k->off = 0;
          k->frames++;
        }
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        break;
      close(k->fd); /* the server closed it: counted, not retried */
      k->fd = -1;
      a->alive--;
    }
    a->pf[i] = (struct pollfd){k->fd, POLLOUT, 0};
  }
}

/* Whether the attack is over: dynconfd gone, the RSS cap, every
 * connection closed, the time limit, or settled. Sets why and reason. */
static bool attack_over(attack_t *a) {
  const cfg_t *c = a->c;
  if (!proc_mem(c->pid, &a->rss, &a->hwm)) {
    a->why = "dynconfd exited";
    a->reason = "exited";
    return true;
  }
  if (a->rss > a->max_rss)
    a->max_rss = a->rss;
  if (a->rss >= c->rss_cap_mb * 1024) {
    a->why = "RSS cap reached";
    a->reason = "cap";
    return true;
  }
  if (a->alive == 0) {
    a->why = "every connection was closed by dynconfd";
    a->reason = "closed";
    return true;
  }
  int64_t now = dc_mono_us();
  if (now >= a->deadline)
    return true;
  /* Settled: no send progressed for a second and dynconfd used no CPU
   * over the last second, so nothing is left in flight to grow. */
  long long cpu = bench_proc_ticks((pid_t)c->pid);
  if (now - a->cpu_mark_us >= 1000000) {
    bool blocked = true;
    for (int i = 0; i < c->connections; i++)
      if (a->cs[i].fd >= 0 && now - a->cs[i].progress_us < 1000000)
        blocked = false;
    if (blocked && cpu == a->cpu_mark) {
      a->why = "settled (every connection blocked, dynconfd idle for 1 s)";
      a->reason = "settled";
      return true;
    }
    a->cpu_mark = cpu;
    a->cpu_mark_us = now;
  }
  return false;
}

static void attack_report(attack_t *a) {
  const cfg_t *c = a->c;
  double secs = (double)(dc_mono_us() - a->t0) / 1e6;
  long frames = 0;
  for (int i = 0; i < c->connections; i++)
    frames += a->cs[i].frames;
  proc_mem(c->pid, &a->rss, &a->hwm);
  if (a->rss > a->max_rss)
    a->max_rss = a->rss;
  printf("attack stopped after %.1f s: %s; %ld whole requests sent, %d of %d "
         "connections open\n",
         secs, a->why, frames, a->alive, c->connections);
  printf("dynconfd RSS: idle %ld kB, now %ld kB, peak (VmHWM) %ld kB\n",
         a->idle_rss, a->rss, a->hwm);
  printf("RESULT idle_kb=%ld rss_kb=%ld hwm_kb=%ld max_sampled_kb=%ld "
         "seconds=%.2f frames=%ld frame_bytes=%zu reps=%d alive=%d "
         "reason=%s\n",
         a->idle_rss, a->rss, a->hwm, a->max_rss, secs, frames, a->frame.len,
         a->reps, a->alive, a->reason);
}

static void attack_free(attack_t *a) {
  for (int i = 0; a->cs && i < a->c->connections; i++)
    if (a->cs[i].fd >= 0)
      close(a->cs[i].fd);
  free(a->cs);
  free(a->pf);
  dc_buf_free(&a->frame);
}

static int cmd_attack(const cfg_t *c) {
  attack_t a = {.c = c, .why = "time limit", .reason = "time"};
  dc_buf_init(&a.frame);
  if (attack_setup(&a)) {
    attack_free(&a);
    return 1;
  }
  printf("attack: %d connections, each sending %zu-byte DescribeConfigs v3 "
         "requests naming %s %d times, never reading\n",
         c->connections, a.frame.len, c->client, a.reps);
  fflush(stdout);

  a.t0 = dc_mono_us();
  a.deadline = a.t0 + (int64_t)(c->seconds * 1e6);
  a.cpu_mark = bench_proc_ticks((pid_t)c->pid);
  a.cpu_mark_us = a.t0;
  a.rss = a.max_rss = a.idle_rss;
  a.hwm = a.idle_hwm;
  a.alive = c->connections;
  for (int i = 0; i < c->connections; i++)
    a.cs[i].progress_us = a.t0;
  for (;;) {
    attack_send(&a, dc_mono_us());
    if (attack_over(&a))
      break;
    poll(a.pf, (nfds_t)c->connections, 10); /* also paces the RSS samples */
  }
  attack_report(&a);
  attack_free(&a);
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
    return cmd_attack_seed(&c);
  if (!strcmp(cmd, "attack")) {
    if (c.pid <= 0) {
      usage(stderr);
      return 2;
    }
    return cmd_attack(&c);
  }
  usage(stderr);
  return 2;
}
