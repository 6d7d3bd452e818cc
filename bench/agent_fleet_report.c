/* SPDX-License-Identifier: BSD-2-Clause */
/* agent_fleet's report: delays, fetch round trips, costs, RESULT line. */
#include "agent_fleet_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every figure of the report, worked out before anything is printed. */
typedef struct figures {
  int done_alters, jitter;
  bool failed;
  const window_cpu_t *w;
  size_t total; /* deliveries */
  double mn, p50, p99, mx, cli_avg;
  double rtt_avg, rtt_last_p50, rtt_last_p99;
  long long maxmax, fetch_ok, fetch_err;
  double bound, expect_p50, target;
  long long create_max, destroy_max, cpu_ms;
  long threads, fds, rss_kib;
} figures_t;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static int64_t pct_i64(const int64_t *v, size_t n, double p) {
  if (!n)
    return 0;
  size_t r = (size_t)(p / 100.0 * (double)n + 0.999999);
  if (r < 1)
    r = 1;
  return v[(r > n ? n : r) - 1];
}

/* One line per alter (table and ALTER); every delay goes into all, sorted
 * in the end. Returns how many there are. */
static size_t alter_table(const fleet_t *f, int done_alters, int64_t *all,
                          int64_t *one) {
  const opts_t *o = f->o;
  size_t na = (size_t)o->agents, total = 0;
  const int64_t *cli_us = f->cli_us;
  printf("\nper alter (delay from the CLI returning; the CLI itself took the "
         "'cli' time before that):\n");
  printf("  %-5s %-7s %9s %9s %9s %9s %9s %6s\n", "alter", "value", "cli ms",
         "min ms", "p50 ms", "p99 ms", "max ms", "got");
  for (int k = 0; k < done_alters; k++) {
    size_t m = 0;
    for (size_t i = 0; i < na; i++) {
      int64_t d = f->delay_us[(size_t)k * na + i];
      if (d != NO_DELAY)
        one[m++] = d;
    }
    qsort(one, m, sizeof(*one), cmp_i64);
    memcpy(all + total, one, m * sizeof(*one));
    total += m;
    printf("  %-5d %-7d %9.1f %9.1f %9.1f %9.1f %9.1f %6zu\n", k + 1,
           o->value_base + (k + 1) * 1000, (double)cli_us[k] / 1000,
           m ? (double)one[0] / 1000 : 0, (double)pct_i64(one, m, 50) / 1000,
           (double)pct_i64(one, m, 99) / 1000,
           m ? (double)one[m - 1] / 1000 : 0, m);
    printf("ALTER k=%d value=%d cli_ms=%.1f min_ms=%.1f p50_ms=%.1f p99_ms=%.1f "
           "max_ms=%.1f got=%zu\n", k + 1, o->value_base + (k + 1) * 1000,
           (double)cli_us[k] / 1000, m ? (double)one[0] / 1000 : 0,
           (double)pct_i64(one, m, 50) / 1000,
           (double)pct_i64(one, m, 99) / 1000,
           m ? (double)one[m - 1] / 1000 : 0, m);
  }
  qsort(all, total, sizeof(*all), cmp_i64);
  return total;
}

/* Delay percentiles over every delivery, and the CLI's mean time. */
static void delay_figures(const fleet_t *f, const int64_t *all, figures_t *g) {
  size_t total = g->total;
  g->p50 = (double)pct_i64(all, total, 50) / 1000;
  g->p99 = (double)pct_i64(all, total, 99) / 1000;
  g->mx = total ? (double)all[total - 1] / 1000 : 0;
  g->mn = total ? (double)all[0] / 1000 : 0;
  g->cli_avg = 0;
  for (int k = 0; k < g->done_alters; k++)
    g->cli_avg += (double)f->cli_us[k] / 1000;
  g->cli_avg = g->done_alters ? g->cli_avg / g->done_alters : 0;
}

/* Fetch round trips from the agents' own statistics, and what the
 * polling design bounds the delay to. */
static void fetch_figures(const fleet_t *f, long long *lasts, figures_t *g) {
  const opts_t *o = f->o;
  double avg_sum = 0;
  size_t nl = 0;
  for (size_t i = 0; i < (size_t)o->agents; i++) {
    if (f->avg_us[i] < 0)
      continue;
    avg_sum += (double)f->avg_us[i];
    lasts[nl++] = f->last_us[i];
    if (f->max_us[i] > g->maxmax)
      g->maxmax = f->max_us[i];
    g->fetch_ok += f->ok[i];
    g->fetch_err += f->err[i];
  }
  qsort(lasts, nl, sizeof(*lasts), cmp_ll);
  g->rtt_avg = nl ? avg_sum / (double)nl / 1000 : 0;
  g->rtt_last_p50 = nl ? (double)lasts[(nl - 1) / 2] / 1000 : 0;
  g->rtt_last_p99 =
      nl ? (double)lasts[(size_t)((double)(nl - 1) * 0.99)] / 1000 : 0;
  g->bound = o->refresh_ms + g->rtt_avg + o->poll_sleep_ms;
  /* Uniform phase over an interval shortened by 0..jitter%. */
  g->expect_p50 = o->refresh_ms * (1.0 - g->jitter / 200.0) / 2 + g->rtt_avg;
  /* Polling: the interval bounds the delay. Pushed: 50 ms, the goal. */
  g->target = o->watch ? 50.0 : 1.1 * o->refresh_ms + g->rtt_avg;
}

/* The workers' start-up, tear-down, CPU and footprint, summed. */
static void worker_figures(const fleet_t *f, figures_t *g) {
  for (int i = 0; i < f->n_ch; i++) {
    g->threads += f->ch[i].threads;
    g->fds += f->ch[i].fds;
    g->rss_kib += f->ch[i].rss_kib;
    if (f->ch[i].create_ms > g->create_max)
      g->create_max = f->ch[i].create_ms;
    if (f->ch[i].destroy_ms > g->destroy_max)
      g->destroy_max = f->ch[i].destroy_ms;
    g->cpu_ms += f->ch[i].cpu_ms;
  }
}

/* The summary's first part: the fleet, its delays, its fetches. */
static void print_delivery(const fleet_t *f, const figures_t *g) {
  const opts_t *o = f->o;
  printf("\nfleet: %d agents in %d processes, %s, refresh %d ms (jitter %d%%), "
         "%d alters, polling: one thread per process, dynconf_poll(dc, 0) over "
         "its agents then %d ms sleep\n",
         o->agents, f->n_ch, o->watch ? "changes pushed by Watch" : "polling",
         o->refresh_ms, g->jitter, g->done_alters, o->poll_sleep_ms);
  printf("  start-up: slowest process created its agents in %lld ms, "
         "spread over %d ms on purpose (first fetch is synchronous in "
         "dynconf_new)\n", g->create_max, o->stagger_ms);
  printf("  delivery delay over %zu deliveries: min %.1f  p50 %.1f  p99 %.1f  "
         "max %.1f ms (from CLI return; CLI took %.1f ms on average)\n",
         g->total, g->mn, g->p50, g->p99, g->mx, g->cli_avg);
  if (o->cli_wait)
    printf("  --wait: the CLI (alter, then waiting for the rollout) took %.1f "
           "ms on average; the last delivery was seen %.1f ms %s it returned "
           "(this loop sees a change event at its next sweep, up to %d ms "
           "and a sweep after the agent applied and reported it)\n",
           g->cli_avg, g->mx <= 0 ? -g->mx : g->mx,
           g->mx <= 0 ? "before" : "after", o->poll_sleep_ms);
  if (!o->watch)
    printf("  baseline: polling bound = refresh %d + fetch RTT %.2f + poll "
           "sleep %d = %.1f ms; expected p50 ~ %.1f ms\n",
           o->refresh_ms, g->rtt_avg, o->poll_sleep_ms, g->bound,
           g->expect_p50);
  printf("  fetch RTT from agents' stats: mean of avg_us %.2f ms, last_us p50 "
         "%.2f / p99 %.2f ms, worst max_us %.1f ms; %lld fetches ok, %lld "
         "failed\n", g->rtt_avg, g->rtt_last_p50, g->rtt_last_p99,
         (double)g->maxmax / 1000, g->fetch_ok, g->fetch_err);
}

/* The summary's second part: CPU, footprint, events, the target. */
static void print_costs(const fleet_t *f, const figures_t *g) {
  const opts_t *o = f->o;
  const window_cpu_t *w = g->w;
  char dpct[32] = "n/a (no --daemon-pid)";
  if (w->daemon_pct >= 0)
    snprintf(dpct, sizeof(dpct), "%.2f%%", w->daemon_pct);
  printf("  CPU over the %.1f s alter window: dynconfd %s of one core, "
         "agents (all workers) %.2f%% = %.4f%% per agent: the agents' own "
         "threads %.2f%% (%.4f%% per agent), the polling loops %.2f%%\n",
         w->win_s, dpct, w->workers_pct, w->workers_pct / o->agents,
         w->workers_pct - w->poll_pct,
         (w->workers_pct - w->poll_pct) / o->agents, w->poll_pct);
  printf("  worker processes (all %d, at the start of the window): %ld "
         "threads, %ld open fds, %ld KiB resident = %.2f threads, %.2f fds, "
         "%.1f KiB per agent\n", f->n_ch, g->threads, g->fds, g->rss_kib,
         (double)g->threads / o->agents, (double)g->fds / o->agents,
         (double)g->rss_kib / o->agents);
  printf("  events: %d error events, %d rejected change sets, %d unexpected, "
         "%d at start-up (state left on dynconfd); %d agents not UP at the "
         "end; destroying the slowest process's agents took %lld ms\n",
         f->errors, f->rejected, f->unexpected, f->initial, f->st_bad,
         g->destroy_max);
  if (g->failed)
    printf("  RUN FAILED: the figures above cover only the %d alters that "
           "reached every agent; target not judged\n", g->done_alters);
  else
    printf("  target p99 <= %s = %.1f ms: %s (p99 %.1f ms)\n",
           o->watch ? "50 ms (pushed)" : "1.1 x refresh + fetch RTT",
           g->target, g->p99 <= g->target ? "met" : "NOT met", g->p99);
}

static void print_result(const fleet_t *f, const figures_t *g) {
  const opts_t *o = f->o;
  const window_cpu_t *w = g->w;
  printf("RESULT fleet watch=%d agents=%d procs=%d alters=%d refresh_ms=%d "
         "jitter_pct=%d "
         "poll_sleep_ms=%d deliveries=%zu min_ms=%.1f p50_ms=%.1f p99_ms=%.1f "
         "max_ms=%.1f cli_ms=%.1f bound_ms=%.1f expect_p50_ms=%.1f "
         "rtt_avg_ms=%.3f rtt_last_p50_ms=%.3f rtt_last_p99_ms=%.3f "
         "rtt_max_ms=%.1f fetch_ok=%lld fetch_err=%lld window_s=%.1f "
         "daemon_cpu_pct=%.2f agents_cpu_pct=%.2f create_ms=%lld "
         "destroy_ms=%lld worker_cpu_ms=%lld errors=%d rejected=%d "
         "unexpected=%d not_up=%d target_met=%d failed=%d target_ms=%.1f "
         "poll_cpu_pct=%.2f agent_threads_cpu_pct=%.2f worker_threads=%ld "
         "worker_fds=%ld worker_rss_kib=%ld\n",
         o->watch, o->agents, f->n_ch, g->done_alters, o->refresh_ms,
         g->jitter, o->poll_sleep_ms, g->total, g->mn, g->p50, g->p99, g->mx,
         g->cli_avg, g->bound, g->expect_p50, g->rtt_avg, g->rtt_last_p50,
         g->rtt_last_p99, (double)g->maxmax / 1000, g->fetch_ok, g->fetch_err,
         w->win_s, w->daemon_pct, w->workers_pct, g->create_max,
         g->destroy_max, g->cpu_ms, f->errors, f->rejected, f->unexpected,
         f->st_bad, g->p99 <= g->target, g->failed, g->target, w->poll_pct,
         w->workers_pct - w->poll_pct, g->threads, g->fds, g->rss_kib);
}

void fleet_report(const fleet_t *f, int done_alters, const window_cpu_t *w,
                  int jitter, bool failed) {
  size_t na = (size_t)f->o->agents;
  int64_t *all = malloc(sizeof(int64_t) * na *
                        (size_t)(done_alters ? done_alters : 1));
  int64_t *one = malloc(sizeof(int64_t) * na);
  long long *lasts = malloc(sizeof(long long) * na);
  if (all && one && lasts) {
    figures_t g = {.done_alters = done_alters, .jitter = jitter,
                   .failed = failed, .w = w};
    g.total = alter_table(f, done_alters, all, one);
    delay_figures(f, all, &g);
    fetch_figures(f, lasts, &g);
    worker_figures(f, &g);
    print_delivery(f, &g);
    print_costs(f, &g);
    print_result(f, &g);
  }
  free(all);
  free(one);
  free(lasts);
}
