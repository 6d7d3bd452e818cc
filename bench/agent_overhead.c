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

/* One measured run: its samples, its handles and what the workload saw. */
typedef struct meas {
  const opts_t *o;
  sample_t *s0, *s_agent, *s_warm, *s_end; /* s0[0..3], owned via s0 */
  char *payload;                           /* owned */
  counters_t cnt;
  agent_counts_t ac;
  dynconf_t *dc;  /* owned; NULL in baseline mode */
  rd_kafka_t *rk; /* owned */
  char acks[16];
  long sent, queue_full, n_poll, n_stalls, unflushed;
  int64_t max_poll_us, sum_poll_us, max_late_us;
  bool warm;
  long long fetch_ok, fetch_err, avg_us; /* the agent's stats */
  const char *state;
} meas_t;

/* The application's producer conf; NULL after saying why. */
static rd_kafka_conf_t *app_conf(meas_t *m, char *err, size_t err_size) {
  const opts_t *o = m->o;
  rd_kafka_conf_t *app = rd_kafka_conf_new();
  if (rd_kafka_conf_set(app, "bootstrap.servers", o->bootstrap, err, err_size) ||
      rd_kafka_conf_set(app, "client.id", o->client_id, err, err_size) ||
      rd_kafka_conf_set(app, "acks", "1", err, err_size) ||
      rd_kafka_conf_set(app, "linger.ms", "5", err, err_size)) {
    fprintf(stderr, "agent_overhead: %s\n", err);
    rd_kafka_conf_destroy(app);
    return NULL;
  }
  rd_kafka_conf_set_dr_msg_cb(app, dr_cb);
  rd_kafka_conf_set_opaque(app, &m->cnt);
  return app;
}

/* The agent built on app (always consumed): m->dc, and the conf the
 * producer gets into *pconf. -1 after saying why. */
static int new_agent(meas_t *m, rd_kafka_conf_t *app, rd_kafka_conf_t **pconf,
                     char *err, size_t err_size) {
  const opts_t *o = m->o;
  dynconf_conf_t *dconf = dynconf_conf_new();
  char rs[32];
  snprintf(rs, sizeof(rs), "%d", o->refresh_ms);
  if (dynconf_conf_set(dconf, "dynconf.bootstrap.servers", o->dynconf, err,
                       err_size) ||
      dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", rs, err,
                       err_size) ||
      dynconf_conf_set(dconf, "dynconf.startup.required", "true", err,
                       err_size)) {
    fprintf(stderr, "agent_overhead: %s\n", err);
    dynconf_conf_destroy(dconf);
    rd_kafka_conf_destroy(app);
    return -1;
  }
  dynconf_conf_set_change_cb(dconf, on_change);
  dynconf_conf_set_log_cb(dconf, on_log);
  dynconf_conf_set_opaque(dconf, &m->ac);
  m->dc = dynconf_new(RD_KAFKA_PRODUCER, app, dconf, err, err_size);
  if (!m->dc) {
    fprintf(stderr, "agent_overhead: dynconf_new: %s\n", err);
    dynconf_conf_destroy(dconf);
    rd_kafka_conf_destroy(app);
    return -1;
  }
  *pconf = dynconf_effective_conf(m->dc);
  rd_kafka_conf_destroy(app);
  return 0;
}

/* The producer (after the agent in agent mode), sampled before and after
 * the agent. -1 after saying why; nothing is left to free then. */
static int start_producer(meas_t *m) {
  char err[512];
  take_sample(m->s0);
  rd_kafka_conf_t *app = app_conf(m, err, sizeof(err));
  if (!app)
    return -1;
  rd_kafka_conf_t *pconf = app; /* handed to rd_kafka_new */
  if (!strcmp(m->o->mode, "agent") &&
      new_agent(m, app, &pconf, err, sizeof(err)))
    return -1;
  take_sample(m->s_agent);
  m->rk = pconf ? rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof(err))
                : NULL;
  if (!m->rk) {
    fprintf(stderr, "agent_overhead: rd_kafka_new: %s\n", pconf ? err : "no conf");
    if (pconf)
      rd_kafka_conf_destroy(pconf);
    dynconf_destroy(m->dc);
    m->dc = NULL;
    return -1;
  }
  snprintf(m->acks, sizeof(m->acks), "?");
  if (m->dc)
    dynconf_effective_get(m->dc, "acks", m->acks, sizeof(m->acks), NULL);
  return 0;
}

/* One tick: the messages due by now, the producer's and the agent's
 * polls. */
static void tick_work(meas_t *m, int64_t now, int64_t t0) {
  long due = (long)((now - t0) * m->o->rate / 1000000);
  while (m->sent < due) {
    if (rd_kafka_producev(m->rk, RD_KAFKA_V_TOPIC("bench"),
                          RD_KAFKA_V_VALUE(m->payload, (size_t)m->o->size),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_END)) {
      m->queue_full++;
      break;
    }
    m->sent++;
  }
  rd_kafka_poll(m->rk, 0);
  if (m->dc) {
    /* What the agent costs the application's own thread per call. */
    int64_t p0 = mono_us();
    dynconf_poll(m->dc, 0);
    int64_t took = mono_us() - p0;
    if (m->warm && took > m->max_poll_us)
      m->max_poll_us = took;
    m->sum_poll_us += m->warm ? took : 0;
    m->n_poll += m->warm;
  }
}

/* The workload: a fixed message rate on a 10 ms tick, warm-up then the
 * window; the warm and end samples. 1 when interrupted in the warm-up. */
static int run_workload(meas_t *m) {
  const opts_t *o = m->o;
  int64_t t0 = mono_us();
  int64_t warm_at = t0 + (int64_t)o->warmup * 1000000;
  int64_t end_at = warm_at + (int64_t)o->seconds * 1000000;
  for (int64_t tick = t0; !g_stop;) {
    int64_t now = mono_us();
    if (!m->warm && now >= warm_at) {
      take_sample(m->s_warm);
      m->warm = true;
    }
    if (now >= end_at)
      break;
    tick_work(m, now, t0);
    /* How late this tick started: stalls of the loop, whatever the cause
     * (our code, librdkafka, or the shared machine's scheduler). */
    if (m->warm && now - tick > m->max_late_us)
      m->max_late_us = now - tick;
    if (m->warm && now - tick > 100000) {
      m->n_stalls++;
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
  take_sample(m->s_end);
  if (m->warm)
    return 0;
  fprintf(stderr, "agent_overhead: interrupted during warm-up\n");
  *m->s_warm = *m->s_agent;
  return 1;
}

/* Delivery and agent health after the run; 1 when either failed. */
static int check_run(meas_t *m) {
  int rc = 0;
  rd_kafka_flush(m->rk, 10000);
  m->unflushed = rd_kafka_outq_len(m->rk);
  /* Agent health: it must have stayed in step with dynconfd throughout. */
  m->state = "-";
  if (m->dc) {
    char *js = dynconf_stats_json(m->dc);
    m->fetch_ok = json_num(js, "ok");
    m->fetch_err = json_num(js, "errors");
    m->avg_us = json_num(js, "avg_us");
    free(js);
    m->state = dynconf_state_name(dynconf_state(m->dc));
    if (dynconf_state(m->dc) != DYNCONF_STATE_UP || m->fetch_err > 0 ||
        m->fetch_ok < 2) {
      fprintf(stderr, "agent_overhead: the agent was not in step with %s "
              "(state %s, %lld fetches ok, %lld failed)\n",
              m->o->dynconf, m->state, m->fetch_ok, m->fetch_err);
      rc = 1;
    }
  }
  if (m->cnt.failed || m->unflushed || m->cnt.delivered != m->sent) {
    fprintf(stderr, "agent_overhead: %ld of %ld messages delivered, %ld failed "
            "(%s), %ld not flushed\n", m->cnt.delivered, m->sent,
            m->cnt.failed, m->cnt.first_err, m->unflushed);
    rc = 1;
  }
  return rc;
}

/* The figures over the window that the report prints. */
typedef struct window {
  double win_s, cpu_pct, agent_thr_pct;
  int n_agent_thr, n_agent_exited;
  size_t nar; /* rows of arows */
  name_row_t arows[MAX_THREADS];
} window_t;

static void window_figures(const meas_t *m, window_t *w) {
  long long agent_ns;
  w->win_s = (double)(m->s_end->mono_us - m->s_warm->mono_us) / 1e6;
  w->nar = agent_threads(m->s0, m->s_agent, m->s_warm, m->s_end, w->arows,
                         &agent_ns, &w->n_agent_thr, &w->n_agent_exited);
  w->agent_thr_pct =
      w->win_s > 0 ? 100.0 * (double)agent_ns / 1e9 / w->win_s : 0;
  w->cpu_pct = w->win_s > 0
                   ? 100.0 * (double)(m->s_end->cpu_us - m->s_warm->cpu_us) /
                         ((double)(m->s_end->mono_us - m->s_warm->mono_us))
                   : 0;
}

/* The readable lines. */
static void print_summary(const meas_t *m, const window_t *w) {
  const opts_t *o = m->o;
  const sample_t *s0 = m->s0, *s_agent = m->s_agent, *s_end = m->s_end;
  printf("mode %s: producer %d msg/s x %d B to %s for %.1f s after %d s warm-up\n",
         o->mode, o->rate, o->size, o->bootstrap, w->win_s, o->warmup);
  if (m->dc)
    printf("  agent: client.id %s, refresh %d ms, state %s, %lld fetches ok, "
           "%lld failed, avg fetch %lld us, effective acks=%s\n",
           o->client_id, o->refresh_ms, m->state, m->fetch_ok, m->fetch_err,
           m->avg_us, m->acks);
  printf("  RSS: start %ld KiB, after agent %ld KiB, warm %ld KiB, end %ld KiB, "
         "peak %ld KiB\n", s0->rss_kib, s_agent->rss_kib, m->s_warm->rss_kib,
         s_end->rss_kib, s_end->hwm_kib);
  printf("  of which private (RssAnon): start %ld KiB, after agent %ld KiB, "
         "end %ld KiB; file-backed (RssFile): start %ld KiB, after agent %ld "
         "KiB, end %ld KiB\n", s0->anon_kib, s_agent->anon_kib,
         s_end->anon_kib, s0->file_kib, s_agent->file_kib, s_end->file_kib);
  printf("  threads: %zu, CPU %.3f%% of one core", s_end->nthr, w->cpu_pct);
  if (m->dc)
    printf(" (the agent's own %d threads: %.4f%%; %d more it started were "
           "gone by the end)", w->n_agent_thr, w->agent_thr_pct,
           w->n_agent_exited);
  printf("\n");
  printf("  messages: %ld sent, %ld delivered, %ld queue-full retries; "
         "latest tick start %.1f ms late, %ld stalls > 100 ms\n", m->sent,
         m->cnt.delivered, m->queue_full, (double)m->max_late_us / 1000,
         m->n_stalls);
  if (m->dc)
    printf("  dynconf_poll(dc, 0) on the app thread: %ld calls, mean %.2f us, "
           "max %lld us\n", m->n_poll,
           m->n_poll ? (double)m->sum_poll_us / (double)m->n_poll : 0.0,
           (long long)m->max_poll_us);
}

static void print_result(const meas_t *m, const window_t *w) {
  const sample_t *s0 = m->s0, *s_agent = m->s_agent, *s_end = m->s_end;
  printf("RESULT mode=%s seconds=%.1f rss_start_kib=%ld rss_after_agent_kib=%ld "
         "rss_warm_kib=%ld rss_end_kib=%ld hwm_kib=%ld threads_after_agent=%zu "
         "threads=%zu cpu_pct=%.4f sent=%ld delivered=%ld fetch_ok=%lld "
         "fetch_err=%lld fetch_avg_us=%lld changes=%d agent_threads=%d "
         "agent_threads_cpu_pct=%.4f poll_calls=%ld poll_mean_us=%.2f "
         "poll_max_us=%lld max_tick_late_ms=%.1f stalls=%ld "
         "agent_cpu_pct=%.4f agent_threads_exited=%d anon_start_kib=%ld "
         "anon_after_agent_kib=%ld anon_end_kib=%ld file_start_kib=%ld "
         "file_after_agent_kib=%ld file_end_kib=%ld\n",
         m->o->mode, w->win_s, s0->rss_kib, s_agent->rss_kib,
         m->s_warm->rss_kib, s_end->rss_kib, s_end->hwm_kib, s_agent->nthr,
         s_end->nthr, w->cpu_pct, m->sent, m->cnt.delivered, m->fetch_ok,
         m->fetch_err, m->avg_us, m->ac.changes, w->n_agent_thr,
         w->agent_thr_pct, m->n_poll,
         m->n_poll ? (double)m->sum_poll_us / (double)m->n_poll : 0.0,
         (long long)m->max_poll_us, (double)m->max_late_us / 1000, m->n_stalls,
         w->agent_thr_pct + (w->win_s > 0 ? 100.0 * (double)m->sum_poll_us /
                                                1e6 / w->win_s
                                          : 0),
         w->n_agent_exited, s0->anon_kib, s_agent->anon_kib, s_end->anon_kib,
         s0->file_kib, s_agent->file_kib, s_end->file_kib);
}

/* THREADS, THREADCPU and AGENTTHREADS lines. */
static void print_threads(const meas_t *m, const window_t *w) {
  const char *mode = m->o->mode;
  name_row_t rows[MAX_THREADS];
  size_t nr = group_threads(m->s_end, m->s_warm, rows);
  printf("THREADS mode=%s", mode);
  for (size_t i = 0; i < nr; i++)
    printf(" %s=%d", rows[i].name, rows[i].count);
  printf("\nTHREADCPU mode=%s", mode);
  for (size_t i = 0; i < nr; i++)
    printf(" %s=%lld", rows[i].name, rows[i].ns / 1000);
  printf("\nAGENTTHREADS mode=%s", mode);
  for (size_t i = 0; i < w->nar; i++)
    printf(" %s=%d:%lld", w->arows[i].name, w->arows[i].count,
           w->arows[i].ns / 1000);
  printf("\n");
  fflush(stdout);
}

static int measure(const opts_t *o) {
  meas_t m = {.o = o};
  m.s0 = calloc(4, sizeof(*m.s0)); /* start, after agent, warm, end */
  m.payload = calloc(1, (size_t)o->size + 1);
  if (!m.s0 || !m.payload) {
    free(m.s0);
    free(m.payload);
    fprintf(stderr, "agent_overhead: out of memory\n");
    return 1;
  }
  m.s_agent = &m.s0[1];
  m.s_warm = &m.s0[2];
  m.s_end = &m.s0[3];
  memset(m.payload, 'x', (size_t)o->size);
  g_ac = &m.ac;
  int rc = 1;
  if (!start_producer(&m)) {
    rc = run_workload(&m);
    rc |= check_run(&m);
    window_t w;
    window_figures(&m, &w);
    print_summary(&m, &w);
    print_result(&m, &w);
    print_threads(&m, &w);
    rd_kafka_destroy(m.rk);
    dynconf_destroy(m.dc);
  }
  free(m.s0);
  free(m.payload);
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

/* One option a with its value v into o; nonzero when either is bad. */
static int parse_opt(opts_t *o, const char *a, const char *v) {
  if (!strcmp(a, "--mode"))
    o->mode = v;
  else if (!strcmp(a, "--bootstrap"))
    o->bootstrap = v;
  else if (!strcmp(a, "--dynconf"))
    o->dynconf = v;
  else if (!strcmp(a, "--client-id"))
    o->client_id = v;
  else if (!strcmp(a, "--seconds"))
    return parse_int(v, 1, &o->seconds);
  else if (!strcmp(a, "--warmup"))
    return parse_int(v, 0, &o->warmup);
  else if (!strcmp(a, "--rate"))
    return parse_int(v, 0, &o->rate);
  else if (!strcmp(a, "--size"))
    return parse_int(v, 1, &o->size);
  else if (!strcmp(a, "--refresh-ms"))
    return parse_int(v, 10, &o->refresh_ms);
  else
    return 1;
  return 0;
}

int main(int argc, char **argv) {
  opts_t o = {NULL, NULL, NULL, "overhead-bench", 30, 5, 1000, 100, 1000};
  bool mock = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
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
    if (parse_opt(&o, a, v)) {
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
