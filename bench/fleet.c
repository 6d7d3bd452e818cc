/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fleet: the client side of bench/run-fleet.sh. Every command runs a
 * probe beside its work: one connection sending a DescribeConfigs every
 * 5 ms, whose latencies while the work runs are its p50/p99 (what a
 * client of the same dynconfd saw meanwhile).
 *
 *   fleet reports --target H:P --pid PID --n N [--extra M] [--colliding]
 *                 [--fat]
 *       N ClientReports of new instance ids on one connection, 8 in
 *       flight (each makes the one before gone), then M more once the
 *       fleet is full (each drops the longest gone). With --colliding the
 *       ids' FNV-1a hashes share their low 20 bits (bench/fnv_collide.h),
 *       else they are distinct counters; with --fat every field is as
 *       long as dynconfd takes. Prints dynconfd's CPU for each, and its
 *       RSS after.
 *   fleet pages --target H:P --pid PID [--requests R] [--pipeline P]
 *       R DescribeFleet v1 pages of one client after random cursors, one
 *       at a time (latency p50/p99), then P of them at once on
 *       ceil(P / 8) connections (until the last answer, and dynconfd's
 *       CPU), then one v0 listing of the whole fleet (its answer, time,
 *       and dynconfd's RSS before and peak after).
 *   fleet waits --target H:P --pid PID --metrics H:P [--waits W] [--max M]
 *       W connections park a DescribeFleet v1 (pages of M) at the fleet's
 *       seq; once dynconfd_fleet_waits and the refusals add up to W, one
 *       ClientReport moves the fleet: the time until every parked one is
 *       answered, and dynconfd's CPU for it.
 *
 * Output: human lines, and one "RESULT key=value ..." line per figure for
 * the script. Exit status 0, 1 when something failed outright, 2 on a
 * usage error.
 */
#include "client/kclient.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "common/clock.h"
#include "fnv_collide.h"
#include "proc.h"

#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

typedef struct cfg {
  const char *cmd, *target, *metrics;
  pid_t pid;
  int n, extra, requests, pipeline, waits, max;
  bool colliding, fat;
} cfg_t;

static int enc_report(dc_buf_t *b, int16_t v, const void *q) {
  return dc_client_report_req_encode(b, v, q);
}
static int enc_fleet(dc_buf_t *b, int16_t v, const void *q) {
  return dc_describe_fleet_req_encode(b, v, q);
}
static int enc_describe(dc_buf_t *b, int16_t v, const void *q) {
  return dc_describe_configs_req_encode(b, v, q);
}

static dc_kclient_t *connect_to(const char *target) {
  char err[512] = "";
  dc_kclient_t *kc = dc_kclient_new("dynconf-fleet-bench");
  if (kc && !dc_kclient_connect(kc, target, 30000, err, sizeof(err)))
    return kc;
  fprintf(stderr, "fleet: connect %s: %s\n", target, err);
  dc_kclient_destroy(kc);
  return NULL;
}

static double cpu_s(pid_t pid) {
  return (double)bench_proc_ticks(pid) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of n samples (sorted here). */
static int64_t pct(int64_t *s, size_t n, double p) {
  if (!n)
    return -1;
  qsort(s, n, sizeof(*s), cmp_i64);
  size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
  return s[(k < 1 ? 1 : k > n ? n : k) - 1];
}

/* ---- the probe ------------------------------------------------------------ */

#define PROBE_MAX 200000
static struct {
  pthread_t th;
  const char *target;
  atomic_bool stop;
  atomic_size_t n;
  int64_t start_ms[PROBE_MAX], lat_us[PROBE_MAX];
} g_probe;

static void *probe_main(void *arg) {
  (void)arg;
  dc_kclient_t *kc = connect_to(g_probe.target);
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, "probe", -1, NULL};
  dc_describe_configs_req_t q = {1, &res, false, false, 0, false};
  while (kc && !atomic_load(&g_probe.stop)) {
    dc_arena_t a;
    dc_arena_init(&a);
    dc_rd_t rd;
    char err[256];
    int64_t t0 = dc_mono_us();
    bool done = !dc_kclient_request(kc, DC_API_DESCRIBE_CONFIGS, 1,
                                    enc_describe, &q, 600000, &rd, &a, err,
                                    sizeof(err));
    int64_t took = dc_mono_us() - t0;
    dc_arena_free(&a);
    size_t i = atomic_load(&g_probe.n);
    if (!done || i >= PROBE_MAX)
      break;
    g_probe.start_ms[i] = t0 / 1000;
    g_probe.lat_us[i] = took;
    atomic_store(&g_probe.n, i + 1);
    usleep(5000);
  }
  dc_kclient_destroy(kc);
  return NULL;
}

/* The probes that ran at some time in [from_ms, to_ms] (one blocked
 * throughout counts): p50 and p99 in ms. */
static void probe_pct(int64_t from_ms, int64_t to_ms, double *p50,
                      double *p99) {
  size_t n = atomic_load(&g_probe.n), k = 0;
  int64_t *v = malloc((n ? n : 1) * sizeof(*v));
  for (size_t i = 0; v && i < n; i++)
    if (g_probe.start_ms[i] <= to_ms &&
        g_probe.start_ms[i] + g_probe.lat_us[i] / 1000 >= from_ms)
      v[k++] = g_probe.lat_us[i];
  *p50 = v && k ? (double)pct(v, k, 50) / 1000 : -1;
  *p99 = v && k ? (double)pct(v, k, 99) / 1000 : -1;
  free(v);
}

/* A phase: wall time, dynconfd's CPU and the probe while it ran. */
typedef struct phase {
  int64_t t0_ms;
  double cpu0;
} phase_t;

static phase_t phase_begin(const cfg_t *c) {
  return (phase_t){dc_mono_ms(), cpu_s(c->pid)};
}

/* Waits (2 s at most) until the probe has a sample started at t_ms or
 * later: the one it had in flight is in. */
static void probe_catch_up(int64_t t_ms) {
  for (int64_t until = dc_mono_ms() + 2000; dc_mono_ms() < until;) {
    size_t n = atomic_load(&g_probe.n);
    if (n && g_probe.start_ms[n - 1] >= t_ms)
      return;
    usleep(1000);
  }
}

static void phase_end(const cfg_t *c, const phase_t *p, const char *name,
                      long count) {
  int64_t t1 = dc_mono_ms();
  double cpu = cpu_s(c->pid) - p->cpu0, p50, p99;
  probe_catch_up(t1);
  probe_pct(p->t0_ms, t1, &p50, &p99);
  printf("%-34s %8ld  wall %9.3f s  dynconfd CPU %8.3f s (%.3f ms each)  "
         "probe p50 %.1f ms p99 %.1f ms\n", name, count,
         (double)(t1 - p->t0_ms) / 1000, cpu,
         count ? cpu * 1000 / (double)count : 0.0, p50, p99);
  printf("RESULT phase=%s count=%ld wall_s=%.3f cpu_s=%.3f cpu_ms_each=%.4f "
         "probe_p50_ms=%.2f probe_p99_ms=%.2f\n", name, count,
         (double)(t1 - p->t0_ms) / 1000, cpu,
         count ? cpu * 1000 / (double)count : 0.0, p50, p99);
  fflush(stdout);
}

/* ---- reports ---------------------------------------------------------------- */

static void instance_id(const cfg_t *c, unsigned i, char *id, size_t size) {
  if (c->colliding) {
    fnv_collide(i, id, size);
    return;
  }
  int n = snprintf(id, size, "r%08u-%08x", i, i * 2654435761u);
  for (; c->fat && n > 0 && n < 64 && (size_t)n + 1 < size; n++)
    id[n] = 'p', id[n + 1] = '\0'; /* as long as dynconfd takes */
}

/* The fields of a report as long as dynconfd takes (--fat). */
static struct {
  char client[256], kind[65], soft[129], reason[2049];
} g_fat;

static void fat_init(void) {
  memset(g_fat.client, 'c', 255);
  memset(g_fat.kind, 'k', 64);
  memset(g_fat.soft, 's', 128);
  memset(g_fat.reason, 'r', 2048);
}

/* Reports of ids from..to-1, 8 in flight; how many were refused, -1 when
 * the connection failed. */
static long send_reports(const cfg_t *c, dc_kclient_t *kc, unsigned from,
                         unsigned to) {
  long refused = 0;
  unsigned sent = from, got = from;
  char err[256];
  while (got < to) {
    while (sent < to && dc_kclient_in_flight(kc) < DC_KCLIENT_MAX_INFLIGHT) {
      char id[80], client[32];
      instance_id(c, sent, id, sizeof(id));
      snprintf(client, sizeof(client), "bench-app-%03u", sent % 100);
      dc_client_report_req_t q = {client, id, "producer", "dynconf-bench",
                                  "1.0", "librdkafka/2.0.2", 1, 1,
                                  DC_OUTCOME_APPLIED, NULL};
      if (c->fat)
        q = (dc_client_report_req_t){g_fat.client, id, g_fat.kind,
                                     g_fat.soft, g_fat.soft, g_fat.soft, 1, 1,
                                     DC_OUTCOME_REJECTED, g_fat.reason};
      if (dc_kclient_send(kc, DC_API_CLIENT_REPORT, 0, enc_report, &q, 600000,
                          NULL, err, sizeof(err)))
        return -1;
      sent++;
    }
    dc_arena_t a;
    dc_arena_init(&a);
    dc_rd_t rd;
    dc_client_report_resp_t resp;
    bool ok = !dc_kclient_receive(kc, 600000, NULL, &rd, &a, err,
                                  sizeof(err)) &&
              !dc_client_report_resp_decode(&rd, 0, &resp);
    refused += ok && resp.error_code;
    dc_arena_free(&a);
    if (!ok)
      return -1;
    got++;
  }
  return refused;
}

static int cmd_reports(const cfg_t *c) {
  dc_kclient_t *kc = connect_to(c->target);
  if (!kc)
    return 1;
  const char *kind = c->colliding ? "colliding" : c->fat ? "fat" : "distinct";
  char name[64];
  fat_init();
  long rss0 = bench_proc_status(c->pid, "VmRSS");
  phase_t p = phase_begin(c);
  long refused = send_reports(c, kc, 0, (unsigned)c->n);
  snprintf(name, sizeof(name), "reports_%s", kind);
  phase_end(c, &p, name, c->n);
  if (refused == 0 && c->extra) {
    p = phase_begin(c);
    refused = send_reports(c, kc, (unsigned)c->n, (unsigned)(c->n + c->extra));
    snprintf(name, sizeof(name), "reports_%s_full", kind);
    phase_end(c, &p, name, c->extra);
  }
  long rss = bench_proc_status(c->pid, "VmRSS");
  printf("  dynconfd RSS %.1f MB before, %.1f MB after\nRESULT "
         "phase=%s_memory rss0_mb=%.1f rss_mb=%.1f\n", (double)rss0 / 1024,
         (double)rss / 1024, kind, (double)rss0 / 1024, (double)rss / 1024);
  dc_kclient_destroy(kc);
  if (refused)
    fprintf(stderr, "fleet: %ld reports failed or were refused\n", refused);
  return refused ? 1 : 0;
}

/* ---- pages ------------------------------------------------------------------ */

/* A DescribeFleet v1 page of one after a random cursor. */
static void page_req(unsigned i, dc_describe_fleet_req_t *q, char *ac,
                     char *ai) {
  snprintf(ac, 32, "bench-app-%03u", (i * 7919u) % 100);
  snprintf(ai, 32, "r%08u", (i * 104729u) % 100000);
  *q = (dc_describe_fleet_req_t){NULL, NULL, -1, 0, ac, ai, 1};
}

static bool page_answered(dc_kclient_t *kc) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_describe_fleet_resp_t r;
  bool ok = !dc_kclient_receive(kc, 600000, NULL, &rd, &a, err, sizeof(err)) &&
            !dc_describe_fleet_resp_decode(&rd, 1, &r) && !r.error_code &&
            r.n_clients <= 1; /* none: the cursor was past the last */
  dc_arena_free(&a);
  return ok;
}

static int pages_one_by_one(const cfg_t *c, dc_kclient_t *kc) {
  int64_t *lat = calloc((size_t)c->requests, sizeof(*lat));
  int bad = 0;
  phase_t p = phase_begin(c);
  for (int i = 0; lat && i < c->requests; i++) {
    char ac[32], ai[32], err[256];
    dc_describe_fleet_req_t q;
    page_req((unsigned)i, &q, ac, ai);
    int64_t t0 = dc_mono_us();
    bad += dc_kclient_send(kc, DC_API_DESCRIBE_FLEET, 1, enc_fleet, &q, 600000,
                           NULL, err, sizeof(err)) ||
           !page_answered(kc);
    lat[i] = dc_mono_us() - t0;
  }
  phase_end(c, &p, "page_of_1", c->requests);
  if (lat)
    printf("  page of 1: p50 %.3f ms, p99 %.3f ms\nRESULT phase=page_latency "
           "p50_ms=%.3f p99_ms=%.3f\n",
           (double)pct(lat, (size_t)c->requests, 50) / 1000,
           (double)pct(lat, (size_t)c->requests, 99) / 1000,
           (double)pct(lat, (size_t)c->requests, 50) / 1000,
           (double)pct(lat, (size_t)c->requests, 99) / 1000);
  free(lat);
  return bad;
}

static int pages_at_once(const cfg_t *c) {
  int nc = (c->pipeline + DC_KCLIENT_MAX_INFLIGHT - 1) / DC_KCLIENT_MAX_INFLIGHT;
  dc_kclient_t **kcs = calloc((size_t)nc, sizeof(*kcs));
  int bad = 0, sent = 0;
  for (int i = 0; kcs && i < nc; i++)
    bad += !(kcs[i] = connect_to(c->target));
  phase_t p = phase_begin(c);
  for (int i = 0; !bad && i < c->pipeline; i++, sent++) {
    char ac[32], ai[32], err[256];
    dc_describe_fleet_req_t q;
    page_req((unsigned)i + 7, &q, ac, ai);
    bad += dc_kclient_send(kcs[i / DC_KCLIENT_MAX_INFLIGHT],
                           DC_API_DESCRIBE_FLEET, 1, enc_fleet, &q, 600000,
                           NULL, err, sizeof(err)) != 0;
  }
  for (int i = 0; !bad && i < sent; i++)
    bad += !page_answered(kcs[i / DC_KCLIENT_MAX_INFLIGHT]);
  phase_end(c, &p, "pages_at_once", c->pipeline);
  for (int i = 0; kcs && i < nc; i++)
    dc_kclient_destroy(kcs[i]);
  free(kcs);
  return bad;
}

static int whole_v0(const cfg_t *c, dc_kclient_t *kc) {
  long rss0 = bench_proc_status(c->pid, "VmRSS");
  dc_describe_fleet_req_t q = {.since_seq = -1};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_describe_fleet_resp_t r;
  phase_t p = phase_begin(c);
  bool ok = !dc_kclient_request(kc, DC_API_DESCRIBE_FLEET, 0, enc_fleet, &q,
                                600000, &rd, &a, err, sizeof(err)) &&
            !dc_describe_fleet_resp_decode(&rd, 0, &r);
  phase_end(c, &p, "v0_whole_fleet", 1);
  long hwm = bench_proc_status(c->pid, "VmHWM");
  printf("  v0 of the whole fleet: %s (%s); dynconfd RSS %.1f MB before, "
         "peak %.1f MB after\nRESULT phase=v0_memory rss0_mb=%.1f "
         "hwm_mb=%.1f\n", ok ? "answered" : "failed",
         ok && r.error_message ? r.error_message : ok ? "listed" : err,
         (double)rss0 / 1024, (double)hwm / 1024, (double)rss0 / 1024,
         (double)hwm / 1024);
  dc_arena_free(&a);
  return !ok;
}

static int cmd_pages(const cfg_t *c) {
  dc_kclient_t *kc = connect_to(c->target);
  if (!kc)
    return 1;
  int bad = pages_one_by_one(c, kc) + pages_at_once(c) + whole_v0(c, kc);
  dc_kclient_destroy(kc);
  if (bad)
    fprintf(stderr, "fleet: %d page requests failed\n", bad);
  return bad ? 1 : 0;
}

/* ---- parked DescribeFleet ------------------------------------------------- */

/* An unlabelled gauge from dynconfd's /metrics, -1 when unreadable. */
static long gauge(const char *metrics, const char *name) {
  char host[256], line[160];
  const char *colon = strrchr(metrics, ':');
  if (!colon || (size_t)(colon - metrics) >= sizeof(host))
    return -1;
  memcpy(host, metrics, (size_t)(colon - metrics));
  host[colon - metrics] = '\0';
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(host, colon + 1, &hints, &ai))
    return -1;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  long v = -1;
  if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen)) {
    FILE *f = fdopen(fd, "r+");
    fd = -1;
    fputs("GET /metrics HTTP/1.0\r\n\r\n", f);
    fflush(f);
    size_t n = strlen(name);
    while (fgets(line, sizeof(line), f))
      if (!strncmp(line, name, n) && line[n] == ' ')
        v = strtol(line + n + 1, NULL, 10);
    fclose(f);
  }
  if (fd >= 0)
    close(fd);
  freeaddrinfo(ai);
  return v;
}

/* The next answer on kc: its error code, or -1. */
static int fleet_answer(dc_kclient_t *kc) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_describe_fleet_resp_t r;
  int rc = !dc_kclient_receive(kc, 600000, NULL, &rd, &a, err, sizeof(err)) &&
                   !dc_describe_fleet_resp_decode(&rd, 1, &r)
               ? r.error_code
               : -1;
  dc_arena_free(&a);
  return rc;
}

/* Takes the answers that arrive on kcs[*n] within ms, dropping the
 * answered from the array; how many answered with an error. */
static int take_answers(dc_kclient_t **kcs, int *n, int ms) {
  int errors = 0, i;
  while (*n && (i = dc_kclient_wait_any(kcs, *n, ms)) >= 0) {
    errors += fleet_answer(kcs[i]) != 0;
    dc_kclient_destroy(kcs[i]);
    kcs[i] = kcs[--*n];
    ms = 0;
  }
  return errors;
}

static int64_t fleet_seq(dc_kclient_t *kc) {
  dc_describe_fleet_req_t q = {.since_seq = -1, .max_clients = 1};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_describe_fleet_resp_t r;
  int64_t seq = !dc_kclient_request(kc, DC_API_DESCRIBE_FLEET, 1, enc_fleet,
                                    &q, 600000, &rd, &a, err, sizeof(err)) &&
                        !dc_describe_fleet_resp_decode(&rd, 1, &r)
                    ? r.fleet_seq
                    : -1;
  dc_arena_free(&a);
  return seq;
}

/* W connections park; returns how many dynconfd refused (-1 on failure),
 * once the parked and the refused add up to W. */
static int park_all(const cfg_t *c, dc_kclient_t **kcs, int *n, int64_t seq) {
  char err[256];
  for (int i = 0; i < c->waits; i++) {
    dc_describe_fleet_req_t q = {NULL, NULL, seq, 600000, NULL, NULL, c->max};
    if (!(kcs[i] = connect_to(c->target)) ||
        dc_kclient_send(kcs[i], DC_API_DESCRIBE_FLEET, 1, enc_fleet, &q,
                        600000, NULL, err, sizeof(err)))
      return -1;
    (*n)++;
  }
  int refused = 0;
  for (int64_t until = dc_mono_ms() + 600000; dc_mono_ms() < until;) {
    refused += take_answers(kcs, n, 50);
    if (gauge(c->metrics, "dynconfd_fleet_waits") + refused >= c->waits)
      return refused;
  }
  return -1;
}

static int cmd_waits(const cfg_t *c) {
  dc_kclient_t *ctl = connect_to(c->target);
  dc_kclient_t **kcs = calloc((size_t)c->waits, sizeof(*kcs));
  int64_t seq = ctl ? fleet_seq(ctl) : -1;
  int n = 0, refused = kcs && seq >= 0 ? park_all(c, kcs, &n, seq) : -1;
  int bad = refused < 0;
  if (!bad) {
    int parked = n;
    phase_t p = phase_begin(c);
    dc_client_report_req_t q = {"bench-app-000", "waker", "producer",
                                "dynconf-bench", "1.0", "librdkafka/2.0.2",
                                1, 1, DC_OUTCOME_APPLIED, NULL};
    dc_arena_t a;
    dc_arena_init(&a);
    dc_rd_t rd;
    char err[256];
    bad += dc_kclient_request(ctl, DC_API_CLIENT_REPORT, 0, enc_report, &q,
                              600000, &rd, &a, err, sizeof(err)) != 0;
    dc_arena_free(&a);
    while (!bad && n)
      bad += take_answers(kcs, &n, 600000);
    phase_end(c, &p, "waits_answered", parked);
    printf("  %d parked DescribeFleet (pages of %d), %d refused at once\n"
           "RESULT phase=waits parked=%d refused=%d\n", parked, c->max,
           refused, parked, refused);
  }
  for (int i = 0; i < n; i++)
    dc_kclient_destroy(kcs[i]);
  free(kcs);
  dc_kclient_destroy(ctl);
  return bad ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f) {
  fputs("usage: fleet reports|pages|waits --target H:P --pid PID\n"
        "         [--n N] [--extra M] [--colliding] [--fat] [--requests R]\n"
        "         [--pipeline P] [--metrics H:P] [--waits W] [--max M]\n",
        f);
}

static int parse(int argc, char **argv, cfg_t *c) {
  static const struct option opts[] = {
      {"target", 1, NULL, 't'},   {"pid", 1, NULL, 'p'},
      {"n", 1, NULL, 'n'},        {"extra", 1, NULL, 'e'},
      {"colliding", 0, NULL, 'c'}, {"requests", 1, NULL, 'r'},
      {"fat", 0, NULL, 'f'},
      {"pipeline", 1, NULL, 'P'}, {"metrics", 1, NULL, 'm'},
      {"waits", 1, NULL, 'w'},    {"max", 1, NULL, 'x'},
      {NULL, 0, NULL, 0}};
  *c = (cfg_t){.n = 100000, .requests = 50, .pipeline = 100, .waits = 100,
               .max = 100};
  if (argc < 2)
    return -1;
  c->cmd = argv[1];
  int o;
  while ((o = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1) {
    switch (o) {
    case 't': c->target = optarg; break;
    case 'p': c->pid = (pid_t)atol(optarg); break;
    case 'n': c->n = atoi(optarg); break;
    case 'e': c->extra = atoi(optarg); break;
    case 'c': c->colliding = true; break;
    case 'f': c->fat = true; break;
    case 'r': c->requests = atoi(optarg); break;
    case 'P': c->pipeline = atoi(optarg); break;
    case 'm': c->metrics = optarg; break;
    case 'w': c->waits = atoi(optarg); break;
    case 'x': c->max = atoi(optarg); break;
    default: return -1;
    }
  }
  return c->target && c->pid > 0 && c->n > 0 && c->requests > 0 &&
                 c->pipeline > 0 && c->waits > 0
             ? 0
             : -1;
}

int main(int argc, char **argv) {
  cfg_t c;
  if (parse(argc, argv, &c)) {
    usage(stderr);
    return 2;
  }
  g_probe.target = c.target;
  if (pthread_create(&g_probe.th, NULL, probe_main, NULL))
    return 1;
  int rc = 2;
  if (!strcmp(c.cmd, "reports"))
    rc = cmd_reports(&c);
  else if (!strcmp(c.cmd, "pages"))
    rc = cmd_pages(&c);
  else if (!strcmp(c.cmd, "waits") && c.metrics)
    rc = cmd_waits(&c);
  else
    usage(stderr);
  atomic_store(&g_probe.stop, true);
  pthread_join(g_probe.th, NULL);
  return rc;
}
