/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store_alter: the alter-latency client of bench/run-store.sh.
 *
 *   store_alter --target H:P [--entity NAME] [--key KEY] [--alters N]
 *               [--warmup W] [--base B] [--timeout-ms MS] [--max-seconds S]
 *
 * One connection (lib/client/kclient.h), one request at a time: W + N
 * IncrementalAlterConfigs of the client entity NAME, each setting KEY to a
 * value no earlier alter of the run used (B, B+1, B+2, ...), so every one
 * really changes the entity and is written by the store. The time of each
 * is send -> response, taken around dc_kclient_request (encoding the
 * request and decoding its header included: microseconds against the
 * store's milliseconds). The first W are not recorded. Afterwards one
 * DescribeConfigs of NAME checks that the last value is the one served.
 * S bounds the recorded alters' wall time; past it the run stops early and
 * says so (capped=1).
 *
 * Output: a human line, then "RESULT n=... p50_us=... p90_us=... p99_us=...
 * max_us=... mean_us=... errors=... capped=0|1 verified=0|1 seconds=...".
 * Exit status: 0 when every alter succeeded and the last value is served,
 * 1 otherwise (with the first error on stderr), 2 on a usage error.
 */
#include "alter.h"
#include "client/kclient.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "common/clock.h"
#include "common/errors.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg {
  const char *target, *entity, *key;
  long alters, warmup, base;
  int timeout_ms;
  double max_seconds;
} cfg_t;

static int enc_describe(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_configs_req_encode(b, v, req);
}

/* One IncrementalAlterConfigs SET of key=value on the client entity.
 * Returns the resource's error code, or -1 when the request itself failed
 * (the connection is then closed); msg gets the reason. */
static int alter_set(dc_kclient_t *kc, int16_t v, const cfg_t *c,
                     const char *value, char *msg, size_t msg_size) {
  return bench_alter_set(kc, v, c->entity, 1, &c->key, &value, false,
                         c->timeout_ms, msg, msg_size);
}

/* DescribeConfigs v1 of the entity's key: true when it resolves to want
 * (compared as numbers, as the schema may print a double differently). */
static bool served(dc_kclient_t *kc, const cfg_t *c, long want, char *msg,
                   size_t msg_size) {
  char *keys[1] = {(char *)c->key};
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, (char *)c->entity,
                                            1, keys};
  dc_describe_configs_req_t req = {1, &res, false, false, 0, false};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  dc_describe_configs_resp_t resp;
  bool good = false;
  if (dc_kclient_request(kc, DC_API_DESCRIBE_CONFIGS, 1, enc_describe, &req,
                         c->timeout_ms, &rd, &arena, msg, msg_size) == 0) {
    if (dc_describe_configs_resp_decode(&rd, 1, &resp) == 0 &&
        resp.n_results == 1 && resp.results[0].error_code == 0) {
      const dc_describe_configs_result_t *r = &resp.results[0];
      snprintf(msg, msg_size, "%s of %s not in the DescribeConfigs answer",
               c->key, c->entity);
      for (int32_t i = 0; i < r->n_configs; i++)
        if (!strcmp(r->configs[i].name, c->key)) {
          const char *got = r->configs[i].value ? r->configs[i].value : "";
          good = strtod(got, NULL) == (double)want;
          if (!good)
            snprintf(msg, msg_size, "%s of %s is served as '%s', not %ld",
                     c->key, c->entity, got, want);
        }
    } else {
      snprintf(msg, msg_size, "DescribeConfigs of %s failed", c->entity);
    }
  }
  dc_arena_free(&arena);
  return good;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted samples. */
static int64_t pct(const int64_t *s, long n, double p) {
  if (n == 0)
    return 0;
  long k = (long)(p / 100.0 * (double)n + 0.999999);
  if (k < 1)
    k = 1;
  return s[(k > n ? n : k) - 1];
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: store_alter --target HOST:PORT [options]\n"
          "  --entity NAME      client entity altered (default bench-alter)\n"
          "  --key KEY          config key set (default linger.ms)\n"
          "  --alters N         recorded alters (default 500)\n"
          "  --warmup W         alters before those, not recorded (default "
          "20)\n"
          "  --base B           first value; each alter uses the next "
          "(default 100000)\n"
          "  --timeout-ms MS    bound on each request (default 30000)\n"
          "  --max-seconds S    stop recording after S seconds (default "
          "120)\n");
}

static long num_arg(const char *s, long min, long max) {
  char *end;
  long v = strtol(s, &end, 10);
  return *s && !*end && v >= min && v <= max ? v : min - 1;
}

/* The command line into c. Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, cfg_t *c) {
  static const struct option opts[] = {
      {"target", required_argument, 0, 't'},
      {"entity", required_argument, 0, 'e'},
      {"key", required_argument, 0, 'k'},
      {"alters", required_argument, 0, 'n'},
      {"warmup", required_argument, 0, 'w'},
      {"base", required_argument, 0, 'b'},
      {"timeout-ms", required_argument, 0, 'T'},
      {"max-seconds", required_argument, 0, 's'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0},
  };
  int o;
  char *end;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    bool bad = false;
    switch (o) {
    case 't': c->target = optarg; break;
    case 'e': c->entity = optarg; break;
    case 'k': c->key = optarg; break;
    case 'n': bad = (c->alters = num_arg(optarg, 1, 10000000)) < 1; break;
    case 'w': bad = (c->warmup = num_arg(optarg, 0, 10000000)) < 0; break;
    case 'b': bad = (c->base = num_arg(optarg, 0, 1000000000)) < 0; break;
    case 'T': bad = (c->timeout_ms = (int)num_arg(optarg, 1, 3600000)) < 1; break;
    case 's':
      c->max_seconds = strtod(optarg, &end);
      bad = *end || !(c->max_seconds > 0);
      break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
    if (bad) {
      fprintf(stderr, "store_alter: bad value '%s'\n", optarg);
      return 2;
    }
  }
  if (optind != argc || !c->target) {
    usage(stderr);
    return 2;
  }
  return -1;
}

/* A connection to the target that serves IncrementalAlterConfigs, whose
 * version goes to *v; NULL after saying why. */
static dc_kclient_t *connect_target(const cfg_t *c, int16_t *v) {
  char err[700] = "";
  dc_kclient_t *kc = dc_kclient_new("dynconf-store-alter");
  if (!kc) {
    fprintf(stderr, "store_alter: out of memory\n");
    return NULL;
  }
  if (dc_kclient_connect(kc, c->target, 5000, err, sizeof(err)) ||
      dc_kclient_api_versions(kc, 5000, err, sizeof(err))) {
    fprintf(stderr, "store_alter: %s\n", err);
    dc_kclient_destroy(kc);
    return NULL;
  }
  *v = dc_kclient_pick_version(kc, DC_API_INCREMENTAL_ALTER_CONFIGS);
  if (*v < 0) {
    fprintf(stderr, "store_alter: %s does not serve IncrementalAlterConfigs\n",
            c->target);
    dc_kclient_destroy(kc);
    return NULL;
  }
  return kc;
}

/* What the alters came to. */
typedef struct outcome {
  int64_t *lat; /* [alters]: recorded latencies (owned) */
  long n, errors, last; /* last: the last value set, -1 = none */
  bool capped, broken, verified;
  int64_t t_start, sum;
  double secs;
  char first_err[700];
} outcome_t;

/* The warm-up and recorded alters, one after another, until the count,
 * the time cap or a broken connection. */
static void run_alters(dc_kclient_t *kc, int16_t v, const cfg_t *c,
                       outcome_t *r) {
  char err[700] = "";
  int64_t deadline = 0;
  for (long i = 0; i < c->warmup + c->alters; i++) {
    if (i == c->warmup) {
      r->t_start = dc_mono_us();
      deadline = r->t_start + (int64_t)(c->max_seconds * 1e6);
    } else if (i > c->warmup && dc_mono_us() >= deadline) {
      r->capped = true;
      break;
    }
    char value[32];
    snprintf(value, sizeof(value), "%ld", c->base + i);
    int64_t t0 = dc_mono_us();
    int rc = alter_set(kc, v, c, value, err, sizeof(err));
    int64_t t1 = dc_mono_us();
    if (rc != 0) {
      r->errors++;
      if (!r->first_err[0])
        snprintf(r->first_err, sizeof(r->first_err), "alter %ld: %s", i, err);
      if (rc < 0) { /* the connection is gone */
        r->broken = true;
        break;
      }
      continue;
    }
    r->last = c->base + i;
    if (i >= c->warmup) {
      r->lat[r->n++] = t1 - t0;
      r->sum += t1 - t0;
    }
  }
  r->secs = r->t_start ? (double)(dc_mono_us() - r->t_start) / 1e6 : 0;
}

/* The summary and the RESULT line; the exit status. */
static int report(const cfg_t *c, outcome_t *r) {
  long n = r->n;
  qsort(r->lat, (size_t)n, sizeof(*r->lat), cmp_i64);
  long long p50 = pct(r->lat, n, 50), p90 = pct(r->lat, n, 90),
            p99 = pct(r->lat, n, 99), mx = n ? r->lat[n - 1] : 0,
            mean = n ? r->sum / n : 0;
  printf("%s %s: %ld alters (after %ld warm-up) in %.1f s: p50 %lld us, "
         "p90 %lld us, p99 %lld us, max %lld us, mean %lld us; errors %ld%s; "
         "last value %s\n",
         c->target, c->key, n, c->warmup, r->secs, p50, p90, p99, mx, mean,
         r->errors, r->capped ? ", time cap reached" : "",
         r->verified ? "served" : "NOT served");
  printf("RESULT n=%ld p50_us=%lld p90_us=%lld p99_us=%lld max_us=%lld "
         "mean_us=%lld errors=%ld capped=%d verified=%d seconds=%.2f\n",
         n, p50, p90, p99, mx, mean, r->errors, r->capped ? 1 : 0,
         r->verified ? 1 : 0, r->secs);
  if (r->first_err[0])
    fprintf(stderr, "store_alter: %s\n", r->first_err);
  return r->errors == 0 && n > 0 && r->verified ? 0 : 1;
}

int main(int argc, char **argv) {
  cfg_t c = {.entity = "bench-alter", .key = "linger.ms", .alters = 500,
             .warmup = 20, .base = 100000, .timeout_ms = 30000,
             .max_seconds = 120};
  int rc = parse_args(argc, argv, &c);
  if (rc >= 0)
    return rc;
  int16_t v;
  dc_kclient_t *kc = connect_target(&c, &v);
  if (!kc)
    return 1;
  outcome_t r = {.last = -1};
  r.lat = calloc((size_t)c.alters, sizeof(*r.lat));
  if (!r.lat) {
    fprintf(stderr, "store_alter: out of memory\n");
    dc_kclient_destroy(kc);
    return 1;
  }
  run_alters(kc, v, &c, &r);
  if (!r.broken && r.last >= 0) {
    char err[700] = "";
    r.verified = served(kc, &c, r.last, err, sizeof(err));
    if (!r.verified && !r.first_err[0])
      snprintf(r.first_err, sizeof(r.first_err), "after the alters: %s", err);
  }
  dc_kclient_destroy(kc);
  rc = report(&c, &r);
  free(r.lat);
  return rc;
}
