/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * agent_overhead: what one dynconf agent adds to an application process.
 *
 *   agent_overhead --serve-mock
 *       Runs librdkafka's mock cluster (1 broker, topic "bench") in this
 *       process, prints "mock bootstrap HOST:PORT" and serves until
 *       SIGTERM/SIGINT or until its parent exits. Kept in its own process
 *       so that the mock broker's CPU and memory never count against the
 *       process being measured.
 *
 *   agent_overhead --mode baseline|agent --bootstrap MOCK [--dynconf H:P]
 *                  [--seconds 30] [--warmup 5] [--rate 1000] [--size 100]
 *                  [--client-id overhead-bench] [--refresh-ms 1000]
 *       The measured process: one librdkafka PRODUCER sending --rate
 *       messages/s of --size bytes to the mock cluster, serving delivery
 *       reports with rd_kafka_poll(rk, 0) on a 10 ms tick. In agent mode
 *       the producer is built from dynconf_effective_conf() of an agent
 *       (refresh every --refresh-ms against the real dynconfd at
 *       --dynconf) and dynconf_poll(dc, 0) runs on the same tick. Both
 *       modes set acks=1, so with the override acks=1 stored on dynconfd
 *       the producer's configuration is identical in both.
 *
 * Run the two modes as two separate processes (bench/run-agent.sh does) so
 * neither pollutes the other's heap or thread list. Measured from
 * /proc/self: VmRSS and VmHWM, VmRSS's private part (RssAnon: heap,
 * stacks) and its file-backed part (RssFile: pages of the program and its
 * shared libraries, shared with every process that maps them), the thread
 * list (/proc/self/task, grouped by thread name), CPU from
 * getrusage(RUSAGE_SELF) over the steady-state window [end of warm-up,
 * end], and per-thread CPU time (schedstat) over the same window, grouped
 * by thread name, to show where the time goes.
 * In agent mode the threads dynconf_new() started (there between the
 * samples around it) are also summed on their own: the agent's CPU
 * without the producer's run-to-run noise (dynconf_poll() on the main
 * thread is timed call by call and added for agent_cpu_pct, the agent's
 * whole cost to the process).
 *
 * Output: readable lines, then machine-readable ones:
 *   RESULT mode=M key=value ...
 *   THREADS mode=M name=count ...
 *   THREADCPU mode=M name=us ...     (CPU microseconds over the window)
 *   AGENTTHREADS mode=M name=count:us ... (only the threads dynconf_new
 *                                          started that still run at the
 *                                          end, by their name then)
 * Exit status: 0 ok, 1 a run failure (delivery failed, agent not in step
 * with dynconfd, librdkafka handle could not be created), 2 usage.
 * Never fails on the numbers themselves.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "proc.h"

#include <dynconf.h>
#include <librdkafka/rdkafka_mock.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 10
#define MAX_THREADS 256

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_until_us(int64_t at) {
  struct timespec ts = {(time_t)(at / 1000000), (long)(at % 1000000) * 1000};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
         !g_stop)
    ;
}

/* ---- /proc/self sampling ------------------------------------------------- */

/* A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 if absent. */
static long status_kib(const char *field) {
  return bench_proc_status(getpid(), field);
}

typedef struct thr {
  int tid;
  char name[32];
  long long cpu_ns; /* schedstat run time; utime+stime ticks as fallback */
} thr_t;

typedef struct sample {
  int64_t mono_us;
  int64_t cpu_us; /* user + system, all threads */
  long rss_kib, hwm_kib;
  long anon_kib, file_kib; /* VmRSS = RssAnon + RssFile + RssShmem */
  size_t nthr;
  thr_t thr[MAX_THREADS];
} sample_t;

/* Reads one thread's name and CPU ticks; 0 on success. */
static int read_thread(int tid, thr_t *t) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1; /* the thread just exited */
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
  if (!lp || !rp || rp < lp)
    return -1;
  size_t nl = (size_t)(rp - lp - 1);
  if (nl >= sizeof(t->name))
    nl = sizeof(t->name) - 1;
  memcpy(t->name, lp + 1, nl);
  t->name[nl] = '\0';
  for (char *c = t->name; *c; c++) /* keep "name=count" parseable */
    if (*c == ' ' || *c == '=')
      *c = '_';
  /* After ")": field 3 (state) ... field 14 utime, 15 stime. */
  unsigned long ut = 0, st = 0;
  if (sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
             &ut, &st) != 2)
    return -1;
  t->tid = tid;
  t->cpu_ns = (long long)(ut + st) * (1000000000LL / sysconf(_SC_CLK_TCK));
  /* schedstat's first field is the thread's run time in ns: fine enough
   * to see a thread that wakes once a second. */
  snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
  if ((f = fopen(path, "r"))) {
    long long ns;
    if (fscanf(f, "%lld", &ns) == 1)
      t->cpu_ns = ns;
    fclose(f);
  }
  return 0;
}

static void take_sample(sample_t *s) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  s->mono_us = mono_us();
  s->cpu_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
              (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
  s->rss_kib = status_kib("VmRSS");
  s->hwm_kib = status_kib("VmHWM");
  s->anon_kib = status_kib("RssAnon");
  s->file_kib = status_kib("RssFile");
  s->nthr = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) && s->nthr < MAX_THREADS) {
    if (e->d_name[0] == '.')
      continue;
    if (!read_thread(atoi(e->d_name), &s->thr[s->nthr]))
      s->nthr++;
  }
  closedir(d);
}

/* Distinct thread names of a sample, with a count and the CPU time each
 * name used since `base` (threads absent from base count from zero). */
typedef struct name_row {
  char name[32];
  int count;
  long long ns;
} name_row_t;

static size_t group_threads(const sample_t *s, const sample_t *base,
                            name_row_t *rows) {
  size_t n = 0;
  for (size_t i = 0; i < s->nthr; i++) {
    long long before = 0;
    for (size_t j = 0; base && j < base->nthr; j++)
      if (base->thr[j].tid == s->thr[i].tid)
        before = base->thr[j].cpu_ns;
    size_t r = 0;
    while (r < n && strcmp(rows[r].name, s->thr[i].name))
      r++;
    if (r == n) {
      snprintf(rows[n].name, sizeof(rows[n].name), "%s", s->thr[i].name);
      rows[n].count = 0;
      rows[n].ns = 0;
      n++;
    }
    rows[r].count++;
    rows[r].ns += s->thr[i].cpu_ns - before;
  }
  return n;
}

static const thr_t *find_tid(const sample_t *s, int tid) {
  for (size_t i = 0; i < s->nthr; i++)
    if (s->thr[i].tid == tid)
      return &s->thr[i];
  return NULL;
}

/* The threads dynconf_new() started that still run at the end: present
 * after it (s_agent), not before it (s_start) and in s_end, grouped by
 * the name they have at the end (a thread may name itself after
 * dynconf_new returned) with their CPU time over [warm, end]. Measured
 * per thread, so the producer's own run-to-run noise does not enter it.
 * Returns the number of rows; *total_ns and *nthreads sum them;
 * *nexited counts the ones started there and gone by the end. */
static size_t agent_threads(const sample_t *s_start, const sample_t *s_agent,
                            const sample_t *s_warm, const sample_t *s_end,
                            name_row_t *rows, long long *total_ns,
                            int *nthreads, int *nexited) {
  size_t n = 0;
  *total_ns = 0;
  *nthreads = 0;
  *nexited = 0;
  for (size_t i = 0; i < s_agent->nthr; i++) {
    const thr_t *t = &s_agent->thr[i];
    if (find_tid(s_start, t->tid))
      continue;
    const thr_t *w = find_tid(s_warm, t->tid), *e = find_tid(s_end, t->tid);
    if (!e) {
      (*nexited)++;
      continue;
    }
    long long ns = e->cpu_ns - (w ? w->cpu_ns : 0);
    size_t r = 0;
    while (r < n && strcmp(rows[r].name, e->name))
      r++;
    if (r == n) {
      snprintf(rows[n].name, sizeof(rows[n].name), "%s", e->name);
      rows[n].count = 0;
      rows[n].ns = 0;
      n++;
    }
    rows[r].count++;
    rows[r].ns += ns;
    *total_ns += ns;
    (*nthreads)++;
  }
  return n;
}

/* ---- the mock cluster process -------------------------------------------- */

static int serve_mock(void) {
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!rk) {
    fprintf(stderr, "agent_overhead: mock handle: %s\n", err);
    rd_kafka_conf_destroy(conf);
    return 1;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
  if (!mc || rd_kafka_mock_topic_create(mc, "bench", 4, 1)) {
    fprintf(stderr, "agent_overhead: cannot start the mock cluster\n");
    if (mc)
      rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 1;
  }
  printf("mock bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);
  /* Serve until told to stop, or until the script that started us is
   * gone (we are re-parented) so a killed run leaves nothing behind. */
  pid_t parent = getppid();
  while (!g_stop && getppid() == parent)
    poll(NULL, 0, 200);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}

/* ---- the measured process ------------------------------------------------ */

typedef struct counters {
  long delivered, failed;
  char first_err[256];
} counters_t;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  counters_t *c = opaque;
  if (m->err) {
    if (!c->failed++)
      snprintf(c->first_err, sizeof(c->first_err), "%s",
               rd_kafka_err2str(m->err));
  } else {
    c->delivered++;
  }
}

typedef struct agent_counts {
  int changes, errors, warnings;
} agent_counts_t;

static void on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  agent_counts_t *ac = opaque;
  if (dynconf_event_type(ev) == DYNCONF_EVENT_CHANGE)
    ac->changes++;
  else
    ac->errors++;
}

static agent_counts_t *g_ac; /* the log callback has no opaque */
static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  if (level > 4)
    return; /* info/debug: an application would not print them either */
  if (g_ac && g_ac->warnings++ < 5)
    fprintf(stderr, "agent_overhead: [%s] %s: %s\n", dynconf_client_id(dc), fac,
            msg);
}

/* Value of "key":NUMBER in a flat part of a JSON document; -1 if absent. */
static long long json_num(const char *js, const char *key) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = js ? strstr(js, pat) : NULL;
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

typedef struct opts {
  const char *mode, *bootstrap, *dynconf, *client_id;
  int seconds, warmup, rate, size, refresh_ms;
} opts_t;

static void usage(FILE *f) {
  fprintf(f,
          "Usage: agent_overhead --serve-mock\n"
          "       agent_overhead --mode baseline|agent --bootstrap MOCK_HOST:PORT\n"
          "                      [--dynconf HOST:PORT] [--seconds 30] [--warmup 5]\n"
          "                      [--rate 1000] [--size 100] [--client-id ID]\n"
          "                      [--refresh-ms 1000]\n");
}

static int measure(const opts_t *o) {
  bool agent = !strcmp(o->mode, "agent");
  char err[512];
  int rc = 0;
  sample_t *s0 = calloc(4, sizeof(*s0)); /* start, after agent, warm, end */
  char *payload = calloc(1, (size_t)o->size + 1);
  if (!s0 || !payload) {
    free(s0);
    free(payload);
    fprintf(stderr, "agent_overhead: out of memory\n");
    return 1;
  }
  sample_t *s_agent = &s0[1], *s_warm = &s0[2], *s_end = &s0[3];
  memset(payload, 'x', (size_t)o->size);
  counters_t cnt = {0, 0, ""};
  agent_counts_t ac = {0, 0, 0};
  g_ac = &ac;

  take_sample(s0);
  rd_kafka_conf_t *app = rd_kafka_conf_new();
  if (rd_kafka_conf_set(app, "bootstrap.servers", o->bootstrap, err, sizeof(err)) ||
      rd_kafka_conf_set(app, "client.id", o->client_id, err, sizeof(err)) ||
      rd_kafka_conf_set(app, "acks", "1", err, sizeof(err)) ||
      rd_kafka_conf_set(app, "linger.ms", "5", err, sizeof(err))) {
    fprintf(stderr, "agent_overhead: %s\n", err);
    rd_kafka_conf_destroy(app);
    free(s0);
    free(payload);
    return 1;
  }
  rd_kafka_conf_set_dr_msg_cb(app, dr_cb);
  rd_kafka_conf_set_opaque(app, &cnt);

  dynconf_t *dc = NULL;
  rd_kafka_conf_t *pconf; /* handed to rd_kafka_new */
  if (agent) {
    dynconf_conf_t *dconf = dynconf_conf_new();
    char rs[32];
    snprintf(rs, sizeof(rs), "%d", o->refresh_ms);
    if (dynconf_conf_set(dconf, "dynconf.bootstrap.servers", o->dynconf, err,
                         sizeof(err)) ||
        dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", rs, err,
                         sizeof(err)) ||
        dynconf_conf_set(dconf, "dynconf.startup.required", "true", err,
                         sizeof(err))) {
      fprintf(stderr, "agent_overhead: %s\n", err);
      dynconf_conf_destroy(dconf);
      rd_kafka_conf_destroy(app);
      free(s0);
      free(payload);
      return 1;
    }
    dynconf_conf_set_change_cb(dconf, on_change);
    dynconf_conf_set_log_cb(dconf, on_log);
    dynconf_conf_set_opaque(dconf, &ac);
    dc = dynconf_new(RD_KAFKA_PRODUCER, app, dconf, err, sizeof(err));
    if (!dc) {
      fprintf(stderr, "agent_overhead: dynconf_new: %s\n", err);
      dynconf_conf_destroy(dconf);
      rd_kafka_conf_destroy(app);
      free(s0);
      free(payload);
      return 1;
    }
    pconf = dynconf_effective_conf(dc);
    rd_kafka_conf_destroy(app);
  } else {
    pconf = app;
  }
  take_sample(s_agent);
  rd_kafka_t *rk = pconf ? rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof(err))
                         : NULL;
  if (!rk) {
    fprintf(stderr, "agent_overhead: rd_kafka_new: %s\n", pconf ? err : "no conf");
    if (pconf)
      rd_kafka_conf_destroy(pconf);
    dynconf_destroy(dc);
    free(s0);
    free(payload);
    return 1;
  }
  char acks[16] = "?";
  if (dc)
    dynconf_effective_get(dc, "acks", acks, sizeof(acks), NULL);

  /* The workload: a fixed message rate on a 10 ms tick. */
  long sent = 0, queue_full = 0, n_poll = 0, n_stalls = 0;
  int64_t max_poll_us = 0, sum_poll_us = 0, max_late_us = 0;
  int64_t t0 = mono_us();
  int64_t warm_at = t0 + (int64_t)o->warmup * 1000000;
  int64_t end_at = warm_at + (int64_t)o->seconds * 1000000;
  bool warm = false;
  for (int64_t tick = t0; !g_stop;) {
    int64_t now = mono_us();
    if (!warm && now >= warm_at) {
      take_sample(s_warm);
      warm = true;
    }
    if (now >= end_at)
      break;
    long due = (long)((now - t0) * o->rate / 1000000);
    while (sent < due) {
      if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("bench"),
                            RD_KAFKA_V_VALUE(payload, (size_t)o->size),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_END)) {
        queue_full++;
        break;
      }
      sent++;
    }
    rd_kafka_poll(rk, 0);
    if (dc) {
      /* What the agent costs the application's own thread per call. */
      int64_t p0 = mono_us();
      dynconf_poll(dc, 0);
      int64_t took = mono_us() - p0;
      if (warm && took > max_poll_us)
        max_poll_us = took;
      sum_poll_us += warm ? took : 0;
      n_poll += warm;
    }
    /* How late this tick started: stalls of the loop, whatever the cause
     * (our code, librdkafka, or the shared machine's scheduler). */
    if (warm && now - tick > max_late_us)
      max_late_us = now - tick;
    if (warm && now - tick > 100000) {
      n_stalls++;
      fprintf(stderr, "agent_overhead: the loop stalled: tick at +%.2f s "
              "started %.1f ms late\n", (double)(tick - t0) / 1e6,
              (double)(now - tick) / 1000);
    }
    /* Missed ticks are skipped, not caught up in a burst. */
    tick += TICK_MS * 1000;
    int64_t after = mono_us();
    if (tick < after)
      tick = after;
    sleep_until_us(tick);
  }
  take_sample(s_end);
  if (!warm) {
    fprintf(stderr, "agent_overhead: interrupted during warm-up\n");
    rc = 1;
    *s_warm = *s_agent;
  }
  rd_kafka_flush(rk, 10000);
  long unflushed = rd_kafka_outq_len(rk);

  /* Agent health: it must have stayed in step with dynconfd throughout. */
  long long fetch_ok = 0, fetch_err = 0, avg_us = 0;
  const char *state = "-";
  if (dc) {
    char *js = dynconf_stats_json(dc);
    fetch_ok = json_num(js, "ok");
    fetch_err = json_num(js, "errors");
    avg_us = json_num(js, "avg_us");
    free(js);
    state = dynconf_state_name(dynconf_state(dc));
    if (dynconf_state(dc) != DYNCONF_STATE_UP || fetch_err > 0 ||
        fetch_ok < 2) {
      fprintf(stderr, "agent_overhead: the agent was not in step with %s "
              "(state %s, %lld fetches ok, %lld failed)\n",
              o->dynconf, state, fetch_ok, fetch_err);
      rc = 1;
    }
  }
  if (cnt.failed || unflushed || cnt.delivered != sent) {
    fprintf(stderr, "agent_overhead: %ld of %ld messages delivered, %ld failed "
            "(%s), %ld not flushed\n", cnt.delivered, sent, cnt.failed,
            cnt.first_err, unflushed);
    rc = 1;
  }

  double win_s = (double)(s_end->mono_us - s_warm->mono_us) / 1e6;
  int n_agent_thr, n_agent_exited;
  long long agent_ns;
  name_row_t arows[MAX_THREADS];
  size_t nar = agent_threads(s0, s_agent, s_warm, s_end, arows, &agent_ns,
                             &n_agent_thr, &n_agent_exited);
  double agent_thr_pct = win_s > 0 ? 100.0 * (double)agent_ns / 1e9 / win_s : 0;
  double cpu_pct = win_s > 0 ? 100.0 * (double)(s_end->cpu_us - s_warm->cpu_us) /
                                   ((double)(s_end->mono_us - s_warm->mono_us))
                             : 0;
  printf("mode %s: producer %d msg/s x %d B to %s for %.1f s after %d s warm-up\n",
         o->mode, o->rate, o->size, o->bootstrap, win_s, o->warmup);
  if (dc)
    printf("  agent: client.id %s, refresh %d ms, state %s, %lld fetches ok, "
           "%lld failed, avg fetch %lld us, effective acks=%s\n",
           o->client_id, o->refresh_ms, state, fetch_ok, fetch_err, avg_us, acks);
  printf("  RSS: start %ld KiB, after agent %ld KiB, warm %ld KiB, end %ld KiB, "
         "peak %ld KiB\n", s0->rss_kib, s_agent->rss_kib, s_warm->rss_kib,
         s_end->rss_kib, s_end->hwm_kib);
  printf("  of which private (RssAnon): start %ld KiB, after agent %ld KiB, "
         "end %ld KiB; file-backed (RssFile): start %ld KiB, after agent %ld "
         "KiB, end %ld KiB\n", s0->anon_kib, s_agent->anon_kib,
         s_end->anon_kib, s0->file_kib, s_agent->file_kib, s_end->file_kib);
  printf("  threads: %zu, CPU %.3f%% of one core", s_end->nthr, cpu_pct);
  if (dc)
    printf(" (the agent's own %d threads: %.4f%%; %d more it started were "
           "gone by the end)", n_agent_thr, agent_thr_pct, n_agent_exited);
  printf("\n");
  printf("  messages: %ld sent, %ld delivered, %ld queue-full retries; "
         "latest tick start %.1f ms late, %ld stalls > 100 ms\n", sent,
         cnt.delivered, queue_full, (double)max_late_us / 1000, n_stalls);
  if (dc)
    printf("  dynconf_poll(dc, 0) on the app thread: %ld calls, mean %.2f us, "
           "max %lld us\n", n_poll,
           n_poll ? (double)sum_poll_us / (double)n_poll : 0.0,
           (long long)max_poll_us);

  printf("RESULT mode=%s seconds=%.1f rss_start_kib=%ld rss_after_agent_kib=%ld "
         "rss_warm_kib=%ld rss_end_kib=%ld hwm_kib=%ld threads_after_agent=%zu "
         "threads=%zu cpu_pct=%.4f sent=%ld delivered=%ld fetch_ok=%lld "
         "fetch_err=%lld fetch_avg_us=%lld changes=%d agent_threads=%d "
         "agent_threads_cpu_pct=%.4f poll_calls=%ld poll_mean_us=%.2f "
         "poll_max_us=%lld max_tick_late_ms=%.1f stalls=%ld "
         "agent_cpu_pct=%.4f agent_threads_exited=%d anon_start_kib=%ld "
         "anon_after_agent_kib=%ld anon_end_kib=%ld file_start_kib=%ld "
         "file_after_agent_kib=%ld file_end_kib=%ld\n",
         o->mode, win_s, s0->rss_kib, s_agent->rss_kib, s_warm->rss_kib,
         s_end->rss_kib, s_end->hwm_kib, s_agent->nthr, s_end->nthr, cpu_pct,
         sent, cnt.delivered, fetch_ok, fetch_err, avg_us, ac.changes,
         n_agent_thr, agent_thr_pct, n_poll,
         n_poll ? (double)sum_poll_us / (double)n_poll : 0.0,
         (long long)max_poll_us, (double)max_late_us / 1000, n_stalls,
         agent_thr_pct + (win_s > 0 ? 100.0 * (double)sum_poll_us / 1e6 / win_s
                                    : 0),
         n_agent_exited, s0->anon_kib, s_agent->anon_kib, s_end->anon_kib,
         s0->file_kib, s_agent->file_kib, s_end->file_kib);
  name_row_t rows[MAX_THREADS];
  size_t nr = group_threads(s_end, s_warm, rows);
  printf("THREADS mode=%s", o->mode);
  for (size_t i = 0; i < nr; i++)
    printf(" %s=%d", rows[i].name, rows[i].count);
  printf("\nTHREADCPU mode=%s", o->mode);
  for (size_t i = 0; i < nr; i++)
    printf(" %s=%lld", rows[i].name, rows[i].ns / 1000);
  printf("\nAGENTTHREADS mode=%s", o->mode);
  for (size_t i = 0; i < nar; i++)
    printf(" %s=%d:%lld", arows[i].name, arows[i].count, arows[i].ns / 1000);
  printf("\n");
  fflush(stdout);

  rd_kafka_destroy(rk);
  dynconf_destroy(dc);
  free(s0);
  free(payload);
  return rc;
}

static int parse_int(const char *s, int min, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end || v < min || v > 1000000000)
    return -1;
  *out = (int)v;
  return 0;
}

int main(int argc, char **argv) {
  opts_t o = {NULL, NULL, NULL, "overhead-bench", 30, 5, 1000, 100, 1000};
  bool mock = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp(a, "--serve-mock")) {
      mock = true;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!v) {
      usage(stderr);
      return 2;
    }
    if (!strcmp(a, "--mode"))
      o.mode = v;
    else if (!strcmp(a, "--bootstrap"))
      o.bootstrap = v;
    else if (!strcmp(a, "--dynconf"))
      o.dynconf = v;
    else if (!strcmp(a, "--client-id"))
      o.client_id = v;
    else if (!strcmp(a, "--seconds"))
      bad = parse_int(v, 1, &o.seconds);
    else if (!strcmp(a, "--warmup"))
      bad = parse_int(v, 0, &o.warmup);
    else if (!strcmp(a, "--rate"))
      bad = parse_int(v, 0, &o.rate);
    else if (!strcmp(a, "--size"))
      bad = parse_int(v, 1, &o.size);
    else if (!strcmp(a, "--refresh-ms"))
      bad = parse_int(v, 10, &o.refresh_ms);
    else
      bad = 1;
    if (bad) {
      fprintf(stderr, "agent_overhead: bad option %s %s\n", a, v);
      usage(stderr);
      return 2;
    }
    i++;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  if (mock)
    return serve_mock();
  if (!o.mode || !o.bootstrap ||
      (strcmp(o.mode, "baseline") && strcmp(o.mode, "agent")) ||
      (!strcmp(o.mode, "agent") && !o.dynconf)) {
    fprintf(stderr, "agent_overhead: need --mode baseline|agent, --bootstrap "
            "and (agent mode) --dynconf\n");
    usage(stderr);
    return 2;
  }
  return measure(&o);
}
