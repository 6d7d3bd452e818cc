/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fleet: the client side of bench/run-fleet.sh (and of steps 1-3 and 7 of
 * bench/run-attacks.sh). Every command runs a probe beside its work
 * (bench/probe.h): one connection sending a DescribeConfigs every 5 ms,
 * whose latencies while the work runs are its p50/p99 (what a client of
 * the same dynconfd saw meanwhile), and dynconfd's RSS sampled with it.
 *
 *   fleet reports --target H:P --pid PID --n N [--extra M] [--colliding]
 *                 [--fat] [--client-ids K]
 *       N ClientReports of new instance ids on one connection, 8 in
 *       flight (each makes the one before gone), then M more once the
 *       fleet is full (each drops the longest gone). With --colliding the
 *       ids' FNV-1a hashes share their low 20 bits (bench/fnv_collide.h),
 *       else they are distinct counters; with --fat every field is as
 *       long as dynconfd takes. The reports cycle over K client-ids
 *       (default 100; 0: each report its own). Prints dynconfd's CPU for
 *       each, and its RSS after.
 *   fleet pages --target H:P --pid PID [--requests R] [--pipeline P]
 *               [--seconds S]
 *       R DescribeFleet v1 pages of one client after random cursors, one
 *       at a time (latency p50/p99), then P of them at once on
 *       ceil(P / 8) connections (until the last answer, and dynconfd's
 *       CPU), then one page without a count (max_clients 0: as many
 *       as max.response.bytes lets in; how many, and their bytes), then
 *       one v0 listing of the whole fleet (its answer, time,
 *       and dynconfd's RSS before and peak after). With S, each of the
 *       three goes on (pages after other cursors, rounds of P, v0 after
 *       v0) until it has run S seconds: a sustained attack the probe
 *       sees.
 *   fleet waits --target H:P --pid PID --metrics H:P [--waits W] [--max M]
 *       W connections park a DescribeFleet v1 (pages of M) at the fleet's
 *       seq; once dynconfd_fleet_waits and the refusals add up to W, one
 *       ClientReport moves the fleet: the time until every parked one is
 *       answered, and dynconfd's CPU for it ("waits_answered"; the
 *       probe and dynconfd's RSS over the whole command, but for the
 *       reads of /metrics: "waits_all").
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
#include "probe.h"
#include "proc.h"

#include <getopt.h>
#include <netdb.h>
#include <unistd.h>

typedef struct cfg {
  const char *cmd, *target, *metrics;
  pid_t pid;
  int n, extra, requests, pipeline, waits, max;
  int client_ids; /* reports cycle over this many; 0 = one each */
  double seconds;
  bool colliding, fat;
} cfg_t;

static int enc_report(dc_buf_t *b, int16_t v, const void *q) {
  return dc_client_report_req_encode(b, v, q);
}
static int enc_fleet(dc_buf_t *b, int16_t v, const void *q) {
  return dc_describe_fleet_req_encode(b, v, q);
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
      snprintf(client, sizeof(client), "bench-app-%03u",
               c->client_ids ? sent % (unsigned)c->client_ids : sent);
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
  bench_phase_t p = bench_phase_begin(c->pid);
  long refused = send_reports(c, kc, 0, (unsigned)c->n);
  snprintf(name, sizeof(name), "reports_%s", kind);
  bench_phase_end(&p, name, c->n);
  if (refused == 0 && c->extra) {
    p = bench_phase_begin(c->pid);
    refused = send_reports(c, kc, (unsigned)c->n, (unsigned)(c->n + c->extra));
    snprintf(name, sizeof(name), "reports_%s_full", kind);
    bench_phase_end(&p, name, c->extra);
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

/* Whether a part of `pages` that began at t0_ms and has run `done` times
 * goes on: until `want` times, and then until --seconds have passed. */
static bool again(const cfg_t *c, int64_t t0_ms, long done, long want) {
  return done < want || dc_mono_ms() - t0_ms < (int64_t)(c->seconds * 1000);
}

/* Appends v to *s (of *n, room for *cap); false when out of memory. */
static bool push(int64_t **s, size_t *n, size_t *cap, int64_t v) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 1024;
    int64_t *ns = realloc(*s, nc * sizeof(*ns));
    if (!ns)
      return false;
    *s = ns;
    *cap = nc;
  }
  (*s)[(*n)++] = v;
  return true;
}

static int pages_one_by_one(const cfg_t *c, dc_kclient_t *kc) {
  int64_t *lat = NULL; /* owned here */
  size_t n = 0, cap = 0;
  int bad = 0;
  bench_phase_t p = bench_phase_begin(c->pid);
  for (unsigned i = 0; !bad && again(c, p.t0_ms, (long)n, c->requests); i++) {
    char ac[32], ai[32], err[256];
    dc_describe_fleet_req_t q;
    page_req(i, &q, ac, ai);
    int64_t t0 = dc_mono_us();
    bad += dc_kclient_send(kc, DC_API_DESCRIBE_FLEET, 1, enc_fleet, &q, 600000,
                           NULL, err, sizeof(err)) ||
           !page_answered(kc);
    bad += !push(&lat, &n, &cap, dc_mono_us() - t0);
  }
  bench_phase_end(&p, "page_of_1", (long)n);
  if (lat) {
    double p50 = (double)bench_pct(lat, n, 50) / 1000;
    double p99 = (double)bench_pct(lat, n, 99) / 1000;
    printf("  page of 1: p50 %.3f ms, p99 %.3f ms\nRESULT phase=page_latency "
           "p50_ms=%.3f p99_ms=%.3f\n", p50, p99, p50, p99);
  }
  free(lat);
  return bad;
}

static int pages_at_once(const cfg_t *c) {
  int nc = (c->pipeline + DC_KCLIENT_MAX_INFLIGHT - 1) / DC_KCLIENT_MAX_INFLIGHT;
  dc_kclient_t **kcs = calloc((size_t)nc, sizeof(*kcs));
  int64_t *round_us = NULL; /* owned here: each round's time */
  size_t rounds = 0, cap = 0;
  int bad = 0;
  for (int i = 0; kcs && i < nc; i++)
    bad += !(kcs[i] = connect_to(c->target));
  bench_phase_t p = bench_phase_begin(c->pid);
  while (!bad && again(c, p.t0_ms, (long)rounds, 1)) {
    int64_t t0 = dc_mono_us();
    int sent = 0;
    for (int i = 0; !bad && i < c->pipeline; i++, sent++) {
      char ac[32], ai[32], err[256];
      dc_describe_fleet_req_t q;
      page_req((unsigned)(i + 7 + (int)rounds * c->pipeline), &q, ac, ai);
      bad += dc_kclient_send(kcs[i / DC_KCLIENT_MAX_INFLIGHT],
                             DC_API_DESCRIBE_FLEET, 1, enc_fleet, &q, 600000,
                             NULL, err, sizeof(err)) != 0;
    }
    for (int i = 0; !bad && i < sent; i++)
      bad += !page_answered(kcs[i / DC_KCLIENT_MAX_INFLIGHT]);
    bad += !push(&round_us, &rounds, &cap, dc_mono_us() - t0);
  }
  bench_phase_end(&p, "pages_at_once", c->pipeline * (long)rounds);
  if (round_us && rounds > 1) {
    double p50 = (double)bench_pct(round_us, rounds, 50) / 1000;
    double mx = (double)bench_pct(round_us, rounds, 100) / 1000;
    printf("  %zu rounds of %d at once: until the last answer p50 %.3f ms, "
           "max %.3f ms\nRESULT phase=pages_rounds rounds=%zu p50_ms=%.3f "
           "max_ms=%.3f\n", rounds, c->pipeline, p50, mx, rounds, p50, mx);
  }
  for (int i = 0; kcs && i < nc; i++)
    dc_kclient_destroy(kcs[i]);
  free(kcs);
  free(round_us);
  return bad;
}

/* One DescribeFleet v1 page from the start without a count (max_clients
 * 0): as many agents as max.response.bytes lets one answer hold. */
static int full_page(dc_kclient_t *kc) {
  dc_describe_fleet_req_t q = {NULL, NULL, -1, 0, NULL, NULL, 0};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_describe_fleet_resp_t r;
  bool ok = !dc_kclient_request(kc, DC_API_DESCRIBE_FLEET, 1, enc_fleet, &q,
                                600000, &rd, &a, err, sizeof(err)) &&
            !dc_describe_fleet_resp_decode(&rd, 1, &r) && !r.error_code;
  if (ok)
    printf("  a page without a count: %d agents in %zu bytes (%.0f bytes "
           "each), more after it: %s\nRESULT phase=full_page clients=%d "
           "bytes=%zu bytes_each=%.0f\n", (int)r.n_clients, rd.len,
           r.n_clients ? (double)rd.len / r.n_clients : 0.0,
           r.more ? "yes" : "no", (int)r.n_clients, rd.len,
           r.n_clients ? (double)rd.len / r.n_clients : 0.0);
  else
    fprintf(stderr, "fleet: a page without a count failed\n");
  dc_arena_free(&a);
  return !ok;
}

static int whole_v0(const cfg_t *c, dc_kclient_t *kc) {
  long rss0 = bench_proc_status(c->pid, "VmRSS");
  dc_describe_fleet_req_t q = {.since_seq = -1};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_describe_fleet_resp_t r;
  bool ok = true;
  snprintf(err, sizeof(err), "out of memory");
  int64_t *lat = NULL; /* owned here */
  size_t n = 0, cap = 0;
  bench_phase_t p = bench_phase_begin(c->pid);
  while (ok && again(c, p.t0_ms, (long)n, 1)) {
    dc_arena_reset(&a);
    int64_t t0 = dc_mono_us();
    ok = !dc_kclient_request(kc, DC_API_DESCRIBE_FLEET, 0, enc_fleet, &q,
                             600000, &rd, &a, err, sizeof(err)) &&
         !dc_describe_fleet_resp_decode(&rd, 0, &r);
    ok &= push(&lat, &n, &cap, dc_mono_us() - t0);
  }
  bench_phase_end(&p, "v0_whole_fleet", (long)n);
  long hwm = bench_proc_status(c->pid, "VmHWM");
  printf("  v0 of the whole fleet: %s (%s); dynconfd RSS %.1f MB before, "
         "peak %.1f MB after\nRESULT phase=v0_memory rss0_mb=%.1f "
         "hwm_mb=%.1f error=%s\n", ok ? "answered" : "failed",
         ok && r.error_message ? r.error_message : ok ? "listed" : err,
         (double)rss0 / 1024, (double)hwm / 1024, (double)rss0 / 1024,
         (double)hwm / 1024,
         !ok ? "failed" : r.error_code ? dc_err_name(r.error_code) : "NONE");
  if (ok && n > 1) {
    double p50 = (double)bench_pct(lat, n, 50) / 1000;
    double mx = (double)bench_pct(lat, n, 100) / 1000;
    printf("  %zu of them, one after another: p50 %.3f ms, max %.3f ms\n"
           "RESULT phase=v0_latency n=%zu p50_ms=%.3f max_ms=%.3f\n", n, p50,
           mx, n, p50, mx);
  }
  free(lat);
  dc_arena_free(&a);
  return !ok;
}

static int cmd_pages(const cfg_t *c) {
  dc_kclient_t *kc = connect_to(c->target);
  if (!kc)
    return 1;
  int bad = pages_one_by_one(c, kc) + pages_at_once(c) + full_page(kc) +
            whole_v0(c, kc);
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
 * once the parked and the refused add up to W. The refusals are taken
 * until none came for 100 ms; the reads of /metrics that then confirm
 * the count (each costs dynconfd a pass over the fleet) are left out of
 * the phase's probes. */
static int park_all(const cfg_t *c, dc_kclient_t **kcs, int *n, int64_t seq,
                    bench_phase_t *phase) {
  char err[256];
  for (int i = 0; i < c->waits; i++) {
    dc_describe_fleet_req_t q = {NULL, NULL, seq, 600000, NULL, NULL, c->max};
    if (!(kcs[i] = connect_to(c->target)) ||
        dc_kclient_send(kcs[i], DC_API_DESCRIBE_FLEET, 1, enc_fleet, &q,
                        600000, NULL, err, sizeof(err)))
      return -1;
    (*n)++;
  }
  int refused = 0, before;
  do {
    before = *n;
    refused += take_answers(kcs, n, 100);
  } while (*n < before);
  int64_t skip_from = dc_mono_ms();
  for (int64_t until = dc_mono_ms() + 600000; dc_mono_ms() < until;) {
    if (gauge(c->metrics, "dynconfd_fleet_waits") + refused >= c->waits) {
      bench_phase_skip(phase, skip_from, dc_mono_ms());
      return refused;
    }
    refused += take_answers(kcs, n, 50);
  }
  return -1;
}

static int cmd_waits(const cfg_t *c) {
  bench_phase_t all = bench_phase_begin(c->pid); /* parking included */
  dc_kclient_t *ctl = connect_to(c->target);
  dc_kclient_t **kcs = calloc((size_t)c->waits, sizeof(*kcs));
  int64_t seq = ctl ? fleet_seq(ctl) : -1;
  int n = 0,
      refused = kcs && seq >= 0 ? park_all(c, kcs, &n, seq, &all) : -1;
  int bad = refused < 0;
  if (!bad) {
    int parked = n;
    bench_phase_t p = bench_phase_begin(c->pid);
    /* A probe held up by the last read of /metrics may end in here. */
    bench_phase_skip(&p, all.skip_from_ms, all.skip_to_ms);
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
    bench_phase_end(&p, "waits_answered", parked);
    bench_phase_end(&all, "waits_all", c->waits);
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
        "         [--pipeline P] [--seconds S] [--metrics H:P] [--waits W]\n"
        "         [--max M] [--client-ids K]\n",
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
      {"seconds", 1, NULL, 's'},  {"client-ids", 1, NULL, 'i'},
      {NULL, 0, NULL, 0}};
  *c = (cfg_t){.n = 100000, .requests = 50, .pipeline = 100, .waits = 100,
               .max = 100, .client_ids = 100};
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
    case 's': c->seconds = atof(optarg); break;
    case 'i': c->client_ids = atoi(optarg); break;
    default: return -1;
    }
  }
  return c->target && c->pid > 0 && c->n > 0 && c->requests > 0 &&
                 c->client_ids >= 0 &&
                 c->pipeline > 0 && c->waits > 0 && c->seconds >= 0
             ? 0
             : -1;
}

int main(int argc, char **argv) {
  cfg_t c;
  if (parse(argc, argv, &c)) {
    usage(stderr);
    return 2;
  }
  if (bench_probe_start(c.target, c.pid))
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
  bench_probe_stop();
  return rc;
}
