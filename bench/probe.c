/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hostile-load benchmarks' probe (see probe.h).
 */
#include "probe.h"

#include "client/kclient.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "common/clock.h"
#include "proc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#define PROBE_MAX 200000 /* 1,000 s of samples */
#define PROBE_EVERY_US 5000

static struct {
  pthread_t th;
  bool started;
  pid_t pid;
  dc_kclient_t *kc; /* owned by the probe's thread once it runs */
  atomic_bool stop, failed;
  atomic_size_t n;
  int64_t start_ms[PROBE_MAX], lat_us[PROBE_MAX];
  long rss_kb[PROBE_MAX]; /* dynconfd's VmRSS just before the sample */
} g_probe;

static int enc_describe(dc_buf_t *b, int16_t v, const void *q) {
  return dc_describe_configs_req_encode(b, v, q);
}

static void *probe_main(void *arg) {
  (void)arg;
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, "probe", -1, NULL};
  dc_describe_configs_req_t q = {1, &res, false, false, 0, false};
  while (!atomic_load(&g_probe.stop)) {
    dc_arena_t a;
    dc_arena_init(&a);
    dc_rd_t rd;
    char err[256];
    long rss = bench_proc_status(g_probe.pid, "VmRSS");
    int64_t t0 = dc_mono_us();
    bool done = !dc_kclient_request(g_probe.kc, DC_API_DESCRIBE_CONFIGS, 1,
                                    enc_describe, &q, 600000, &rd, &a, err,
                                    sizeof(err));
    int64_t took = dc_mono_us() - t0;
    dc_arena_free(&a);
    size_t i = atomic_load(&g_probe.n);
    if (!done) {
      fprintf(stderr, "probe: %s\n", err);
      atomic_store(&g_probe.failed, true);
      break;
    }
    if (i >= PROBE_MAX)
      break;
    g_probe.start_ms[i] = t0 / 1000;
    g_probe.lat_us[i] = took;
    g_probe.rss_kb[i] = rss;
    atomic_store(&g_probe.n, i + 1);
    usleep(PROBE_EVERY_US);
  }
  return NULL;
}

int bench_probe_start(const char *target, pid_t pid) {
  char err[512] = "";
  g_probe.pid = pid;
  g_probe.kc = dc_kclient_new("dynconf-bench-probe");
  if (!g_probe.kc ||
      dc_kclient_connect(g_probe.kc, target, 30000, err, sizeof(err))) {
    fprintf(stderr, "probe: connect %s: %s\n", target,
            g_probe.kc ? err : "out of memory");
    dc_kclient_destroy(g_probe.kc);
    g_probe.kc = NULL;
    return -1;
  }
  if (pthread_create(&g_probe.th, NULL, probe_main, NULL)) {
    fprintf(stderr, "probe: cannot start its thread\n");
    dc_kclient_destroy(g_probe.kc);
    g_probe.kc = NULL;
    return -1;
  }
  g_probe.started = true;
  return 0;
}

void bench_probe_stop(void) {
  if (!g_probe.started)
    return;
  atomic_store(&g_probe.stop, true);
  pthread_join(g_probe.th, NULL);
  g_probe.started = false;
  dc_kclient_destroy(g_probe.kc);
  g_probe.kc = NULL;
}

int bench_probe_failed(void) { return atomic_load(&g_probe.failed); }

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int64_t bench_pct(int64_t *s, size_t n, double p) {
  if (!n)
    return -1;
  qsort(s, n, sizeof(*s), cmp_i64);
  size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
  return s[(k < 1 ? 1 : k > n ? n : k) - 1];
}

double bench_cpu_s(pid_t pid) {
  return (double)bench_proc_ticks(pid) / (double)sysconf(_SC_CLK_TCK);
}

/* Whether sample i ran at some time in [from_ms, to_ms]. */
static bool in_window(size_t i, int64_t from_ms, int64_t to_ms) {
  return g_probe.start_ms[i] <= to_ms &&
         g_probe.start_ms[i] + g_probe.lat_us[i] / 1000 >= from_ms;
}

/* p50 and p99 in ms of the probes in [from_ms, to_ms] and not in
 * [skip_from, skip_to] (when skip_to is set); -1 when none. */
static void probe_pct(int64_t from_ms, int64_t to_ms, int64_t skip_from,
                      int64_t skip_to, double *p50, double *p99,
                      size_t *np) {
  size_t n = atomic_load(&g_probe.n), k = 0;
  int64_t *v = malloc((n ? n : 1) * sizeof(*v)); /* owned here */
  for (size_t i = 0; v && i < n; i++)
    if (in_window(i, from_ms, to_ms) &&
        !(skip_to && in_window(i, skip_from, skip_to)))
      v[k++] = g_probe.lat_us[i];
  *p50 = v && k ? (double)bench_pct(v, k, 50) / 1000 : -1;
  *p99 = v && k ? (double)bench_pct(v, k, 99) / 1000 : -1;
  if (np)
    *np = v ? k : 0;
  free(v);
}

/* Waits (2 s at most) until the probe has a sample started at t_ms or
 * later, so the one it had in flight then is in. */
static void probe_catch_up(int64_t t_ms) {
  for (int64_t until = dc_mono_ms() + 2000; dc_mono_ms() < until;) {
    size_t n = atomic_load(&g_probe.n);
    if ((n && g_probe.start_ms[n - 1] >= t_ms) || !g_probe.started ||
        atomic_load(&g_probe.failed))
      return;
    usleep(1000);
  }
}

/* The highest VmRSS sampled by probes that started in [from_ms, to_ms];
 * -1 when none. */
static long rss_sampled_kb(int64_t from_ms, int64_t to_ms) {
  size_t n = atomic_load(&g_probe.n);
  long peak = -1;
  for (size_t i = 0; i < n; i++)
    if (g_probe.start_ms[i] >= from_ms && g_probe.start_ms[i] <= to_ms &&
        g_probe.rss_kb[i] > peak)
      peak = g_probe.rss_kb[i];
  return peak;
}

static long max_l(long a, long b) { return a > b ? a : b; }

bench_phase_t bench_phase_begin(pid_t pid) {
  return (bench_phase_t){pid, dc_mono_ms(), bench_cpu_s(pid),
                         bench_proc_status(pid, "VmRSS"),
                         bench_proc_status(pid, "VmHWM"), 0, 0};
}

void bench_phase_skip(bench_phase_t *p, int64_t from_ms, int64_t to_ms) {
  p->skip_from_ms = from_ms;
  p->skip_to_ms = to_ms;
}

bench_phase_result_t bench_phase_measure(const bench_phase_t *p) {
  int64_t t1 = dc_mono_ms();
  bench_phase_result_t r = {0};
  r.wall_s = (double)(t1 - p->t0_ms) / 1000;
  r.cpu_s = bench_cpu_s(p->pid) - p->cpu0;
  long hwm = bench_proc_status(p->pid, "VmHWM");
  long rss = bench_proc_status(p->pid, "VmRSS");
  probe_catch_up(t1);
  probe_pct(p->t0_ms, t1, p->skip_from_ms, p->skip_to_ms, &r.p50_ms,
            &r.p99_ms, &r.probes);
  r.rss0_kb = p->rss0_kb;
  r.rss_peak_kb = hwm > p->hwm0_kb
                      ? hwm
                      : max_l(max_l(p->rss0_kb, rss),
                              rss_sampled_kb(p->t0_ms, t1));
  return r;
}

bench_phase_result_t bench_phase_end(const bench_phase_t *p, const char *name,
                                     long count) {
  bench_phase_result_t r = bench_phase_measure(p);
  double each = count ? r.cpu_s * 1000 / (double)count : 0.0;
  printf("%-34s %8ld  wall %9.3f s  dynconfd CPU %8.3f s (%.3f ms each)  "
         "probe p50 %.1f ms p99 %.1f ms  RSS %.1f -> peak %.1f MB\n", name,
         count, r.wall_s, r.cpu_s, each, r.p50_ms, r.p99_ms,
         (double)r.rss0_kb / 1024, (double)r.rss_peak_kb / 1024);
  printf("RESULT phase=%s count=%ld wall_s=%.3f cpu_s=%.3f cpu_ms_each=%.4f "
         "probe_p50_ms=%.2f probe_p99_ms=%.2f probes=%zu rss0_mb=%.1f "
         "rss_peak_mb=%.1f\n", name, count, r.wall_s, r.cpu_s, each,
         r.p50_ms, r.p99_ms, r.probes, (double)r.rss0_kb / 1024,
         (double)r.rss_peak_kb / 1024);
  fflush(stdout);
  return r;
}
