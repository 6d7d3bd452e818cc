/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * agent_fleet: how fast one operator change reaches a fleet of agents.
 *
 *   agent_fleet --bootstrap HOST:PORT --configs-cli PATH/dynconf-configs
 *               [--agents 2000] [--procs P] [--alters 5] [--gap-ms 3000]
 *               [--settle-ms 3000] [--refresh-ms 1000] [--poll-sleep-ms 5]
 *               [--timeout-ms 30000] [--daemon-pid PID] [--value-base N]
 *               [--stagger-ms REFRESH] [--watch on|off] [--cli-wait on|off]
 *
 * The parent forks P worker processes (default: one per 500 agents) before
 * it touches librdkafka. Worker i creates its share of real libdynconf
 * agents with dynconf_new(RD_KAFKA_CONSUMER, ...), each with its own
 * client.id fleet-K (the app conf also sets group.id), all polling dynconfd
 * at dynconf.refresh.interval.ms (default jitter); with --watch on
 * (dynconf.watch=true) they wait for changes with dynconfd's Watch between
 * fetches, with --watch off (the default) they only poll. With --cli-wait
 * on, each alter runs with --wait: the CLI returns once every agent has
 * reported the change, so every delay (counted from its return) is <= 0
 * and the CLI time is what an operator waits for the whole rollout. Agent creation is spread
 * evenly over --stagger-ms (default: one refresh interval; 0 = all at once)
 * so the fleet's polling phases are spread. One thread per worker
 * polls all of its agents with dynconf_poll(dc, 0) and then sleeps
 * --poll-sleep-ms, so the polling cadence adds at most that much (plus one
 * pass over the agents) to each delivery. The change callback stamps
 * CLOCK_MONOTONIC (system-wide, so comparable across processes) and sends
 * "ev AGENT VALUE ACCEPTED T_US" up a pipe to the parent.
 *
 * Once every worker reports ready and --settle-ms have passed, the parent
 * runs --alters times
 *   dynconf-configs --bootstrap-server B --entity-type clients
 *                   --entity-default --alter --add-config session.timeout.ms=V
 * (V = value-base + k*1000; value-base defaults to a per-run value in
 * 10000..257500 so a re-used dynconfd never holds it already; every V
 * stays within dynconfd's bounds and below the app's default
 * max.poll.interval.ms 300000, so each change set is accepted), stamping the clock just before the CLI is
 * started and right after it exits 0. Delays are measured from the moment
 * the CLI returned (the change is durable on dynconfd then); the CLI's own
 * time is reported next to them. The next alter waits until every agent
 * has the current one and --gap-ms have passed since it.
 *
 * CPU over the alter window [after settle, after the last gap]: dynconfd's
 * from /proc/PID/stat (with --daemon-pid), the workers' from theirs, split
 * into each worker's main thread (the polling loop: dynconf_poll over its
 * agents, the callbacks, the pipe writes) and all its other threads (the
 * ones the agents started). The workers' threads, open fds and RSS are
 * read from /proc at the start of that window. Fetch round trips come from
 * each agent's statistics JSON (avg_us, last_us).
 *
 * Target printed (never enforced): p99 delay <= 1.1 x the refresh interval
 * + the mean fetch round trip.
 *
 * Output: a readable report, then "RESULT fleet key=value ..." and one
 * "ALTER k=... " line per alter for scripts. Exit status: 0 ok; 1 a run
 * failure (a worker crashed or failed to start, the CLI failed, an agent
 * did not get an alter within --timeout-ms); 2 usage. Never on targets.
 */
#include <dynconf.h>
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AGENTS_PER_PROC 500 /* default split: 2,000 agents in 4 processes */
#define NO_DELAY INT64_MIN   /* an agent that has not got the alter yet */

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

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Writes a whole line; the pipe is the only channel to the parent. */
static void put_line(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put_line(int fd, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof(buf))
    n = sizeof(buf) - 1;
  for (int off = 0; off < n;) {
    ssize_t w = write(fd, buf + off, (size_t)(n - off));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    off += (int)w;
  }
}

/* Value of "key":NUMBER in a JSON document; -1 if absent. */
static long long json_num(const char *js, const char *key) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = js ? strstr(js, pat) : NULL;
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}


typedef struct opts {
  const char *bootstrap, *cli;
  int agents, procs, alters, gap_ms, settle_ms, refresh_ms, poll_sleep_ms;
  int timeout_ms, value_base, stagger_ms;
  int watch; /* dynconf.watch: 1 = changes pushed by Watch, 0 = polling */
  int cli_wait; /* each alter with --wait: the CLI returns once all applied */
  pid_t daemon_pid;
} opts_t;

/* ---- worker process -------------------------------------------------------- */

typedef struct wagent {
  int idx;   /* fleet-wide index: client.id fleet-idx */
  int upfd;  /* the pipe to the parent */
  dynconf_t *dc;
} wagent_t;

static void w_on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  int64_t t = mono_us(); /* first thing: the delivery instant */
  const wagent_t *a = opaque;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE) {
    put_line(a->upfd, "err %d %d %lld %s\n", a->idx, (int)dynconf_event_type(ev),
             (long long)t, dynconf_event_error_string(ev));
    return;
  }
  const char *v = NULL;
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++)
    if (!strcmp(dynconf_event_key(ev, i), "session.timeout.ms"))
      v = dynconf_event_new_value(ev, i);
  put_line(a->upfd, "ev %d %s %d %lld\n", a->idx, v ? v : "-",
           dynconf_event_accepted(ev), (long long)t);
}

static int g_warnings; /* per worker; the log callback has no opaque */
static void w_on_log(const dynconf_t *dc, int level, const char *fac,
                     const char *msg) {
  if (level > 4)
    return; /* change logs at info: an application would not print them */
  if (g_warnings++ < 5)
    fprintf(stderr, "agent_fleet: [%s] %s: %s\n", dynconf_client_id(dc), fac,
            msg);
}

static int worker(const opts_t *o, int wi, int first, int count, int upfd,
                  int downfd) {
  /* Each agent holds a few sockets and wake-up fds. */
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  wagent_t *ag = calloc((size_t)count, sizeof(*ag)); /* owned here */
  if (!ag)
    return 1;
  char err[512], rs[32];
  snprintf(rs, sizeof(rs), "%d", o->refresh_ms);
  int rc = 0, made = 0;
  int64_t t0 = mono_us();
  for (int i = 0; i < count && !g_stop; i++) {
    /* Staggered start: the fleet's agents are created at evenly spread
     * instants over --stagger-ms (workers interleaved), so their polling
     * phases are spread as in a fleet that did not start at one instant. */
    int64_t slot = (int64_t)i * o->procs + wi;
    int64_t at = t0 + slot * o->stagger_ms * 1000 / o->agents;
    for (int64_t left; !g_stop && (left = at - mono_us()) > 0;)
      sleep_ms(left > 50000 ? 50 : (int)(left / 1000) + 1);
    ag[i].idx = first + i;
    ag[i].upfd = upfd;
    char cid[32];
    snprintf(cid, sizeof(cid), "fleet-%d", first + i);
    rd_kafka_conf_t *app = rd_kafka_conf_new();
    rd_kafka_conf_set(app, "bootstrap.servers", o->bootstrap, err, sizeof(err));
    rd_kafka_conf_set(app, "client.id", cid, err, sizeof(err));
    rd_kafka_conf_set(app, "group.id", "fleet", err, sizeof(err));
    dynconf_conf_t *dconf = dynconf_conf_new();
    dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", rs, err, sizeof(err));
    dynconf_conf_set(dconf, "dynconf.watch", o->watch ? "true" : "false", err,
                     sizeof(err));
    /* A fleet member that cannot reach dynconfd is a broken run here. */
    dynconf_conf_set(dconf, "dynconf.startup.required", "true", err, sizeof(err));
    dynconf_conf_set(dconf, "dynconf.startup.timeout.ms", "30000", err,
                     sizeof(err));
    dynconf_conf_set_change_cb(dconf, w_on_change);
    dynconf_conf_set_log_cb(dconf, w_on_log);
    dynconf_conf_set_opaque(dconf, &ag[i]);
    ag[i].dc = dynconf_new(RD_KAFKA_CONSUMER, app, dconf, err, sizeof(err));
    rd_kafka_conf_destroy(app);
    if (!ag[i].dc) {
      dynconf_conf_destroy(dconf);
      put_line(upfd, "fail agent %d: %s\n", first + i, err);
      rc = 1;
      break;
    }
    made++;
  }
  if (!rc && !g_stop)
    put_line(upfd, "ready %lld\n", (long long)((mono_us() - t0) / 1000));

  /* Poll every agent, then sleep; until the parent closes our pipe. */
  while (!rc && !g_stop) {
    for (int i = 0; i < made; i++)
      dynconf_poll(ag[i].dc, 0);
    struct pollfd p = {downfd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) {
      char b[64];
      if (read(downfd, b, sizeof(b)) <= 0)
        break;
    }
    sleep_ms(o->poll_sleep_ms);
  }

  for (int i = 0; i < made; i++) {
    char *js = dynconf_stats_json(ag[i].dc);
    put_line(upfd, "st %d %lld %lld %lld %lld %lld %s\n", ag[i].idx,
             json_num(js, "ok"), json_num(js, "errors"), json_num(js, "avg_us"),
             json_num(js, "last_us"), json_num(js, "max_us"),
             dynconf_state_name(dynconf_state(ag[i].dc)));
    free(js);
  }
  int64_t d0 = mono_us();
  for (int i = 0; i < made; i++)
    dynconf_destroy(ag[i].dc);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  put_line(upfd, "done %lld %lld %d\n", (long long)((mono_us() - d0) / 1000),
           (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000,
           g_warnings);
  free(ag);
  return rc;
}

/* ---- parent ---------------------------------------------------------------- */

typedef struct child {
  pid_t pid;
  int up, down; /* read end of its pipe, write end of ours (-1 = closed) */
  char buf[8192];
  size_t have;
  bool ready, done, eof;
  long long create_ms, destroy_ms, cpu_ms;
  long long ticks0, ticks1;   /* all threads, over the alter window */
  long long mticks0, mticks1; /* the main (polling) thread */
  long threads, fds, rss_kib; /* at the start of the window */
  int warnings;
} child_t;

typedef struct fleet {
  const opts_t *o;
  child_t *ch;
  int n_ch;
  int cur_alter;     /* index of the alter being waited for, -1 = none */
  int cur_value;
  int64_t cur_t_us;  /* when the CLI returned */
  int64_t *delay_us; /* [alters][agents], NO_DELAY = not yet (owned) */
  int got;           /* agents that have the current alter */
  bool altering;     /* the first alter has started */
  int initial;       /* change events before it (state left by a prior run) */
  int errors, unexpected, rejected;
  /* per agent, from the final stats lines */
  long long *avg_us, *last_us, *max_us, *ok, *err; /* owned */
  int st_bad; /* agents not UP at the end */
  int failed;
} fleet_t;

static void handle_line(fleet_t *f, child_t *c, char *line) {
  if (!strncmp(line, "ev ", 3)) {
    int idx, acc;
    char val[64];
    long long t;
    if (sscanf(line + 3, "%d %63s %d %lld", &idx, val, &acc, &t) != 4 ||
        idx < 0 || idx >= f->o->agents)
      return;
    if (!f->altering) {
      f->initial++;
      return;
    }
    if (!acc)
      f->rejected++;
    if (f->cur_alter >= 0 && atoi(val) == f->cur_value) {
      int64_t *d = &f->delay_us[(size_t)f->cur_alter * (size_t)f->o->agents + (size_t)idx];
      if (*d == NO_DELAY) {
        /* May be slightly negative: the server commits before the CLI
         * has exited and been reaped. Kept as measured. */
        *d = t - f->cur_t_us;
        f->got++;
        return;
      }
    }
    f->unexpected++;
  } else if (!strncmp(line, "err ", 4)) {
    f->errors++;
    if (f->errors <= 5)
      fprintf(stderr, "agent_fleet: error event: %s\n", line + 4);
  } else if (!strncmp(line, "ready ", 6)) {
    c->ready = true;
    c->create_ms = atoll(line + 6);
  } else if (!strncmp(line, "fail ", 5)) {
    fprintf(stderr, "agent_fleet: worker %d: %s\n", (int)c->pid, line + 5);
    f->failed = 1;
  } else if (!strncmp(line, "st ", 3)) {
    int idx;
    long long ok, er, avg, last, mx;
    char state[32];
    if (sscanf(line + 3, "%d %lld %lld %lld %lld %lld %31s", &idx, &ok, &er,
               &avg, &last, &mx, state) == 7 &&
        idx >= 0 && idx < f->o->agents) {
      f->ok[idx] = ok;
      f->err[idx] = er;
      f->avg_us[idx] = avg;
      f->last_us[idx] = last;
      f->max_us[idx] = mx;
      if (strcmp(state, "up"))
        f->st_bad++;
    }
  } else if (!strncmp(line, "done ", 5)) {
    c->done = true;
    sscanf(line + 5, "%lld %lld %d", &c->destroy_ms, &c->cpu_ms, &c->warnings);
  }
}

/* Reads whatever the workers sent within timeout_ms. */
static void pump(fleet_t *f, int timeout_ms) {
  struct pollfd p[256];
  int map[256], n = 0;
  for (int i = 0; i < f->n_ch && n < 256; i++)
    if (!f->ch[i].eof) {
      p[n].fd = f->ch[i].up;
      p[n].events = POLLIN;
      map[n++] = i;
    }
  if (!n) {
    sleep_ms(timeout_ms);
    return;
  }
  if (poll(p, (nfds_t)n, timeout_ms) <= 0)
    return;
  for (int k = 0; k < n; k++) {
    if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
      continue;
    child_t *c = &f->ch[map[k]];
    ssize_t r = read(c->up, c->buf + c->have, sizeof(c->buf) - 1 - c->have);
    if (r <= 0) {
      if (r < 0 && errno == EINTR)
        continue;
      c->eof = true;
      continue;
    }
    c->have += (size_t)r;
    c->buf[c->have] = '\0';
    char *s = c->buf, *nl;
    while ((nl = strchr(s, '\n'))) {
      *nl = '\0';
      handle_line(f, c, s);
      s = nl + 1;
    }
    c->have -= (size_t)(s - c->buf);
    memmove(c->buf, s, c->have);
    if (c->have == sizeof(c->buf) - 1)
      c->have = 0; /* a line longer than the buffer: not ours, drop it */
  }
}

/* Runs the CLI; returns its exit status (-1 if it could not run). */
static int run_cli(const opts_t *o, int value, char *out, size_t outsz) {
  char kv[64];
  snprintf(kv, sizeof(kv), "session.timeout.ms=%d", value);
  char tmpl[] = "/tmp/agent_fleet_cli.XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0)
    return -1;
  unlink(tmpl);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd);
    return -1;
  }
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    if (o->cli_wait)
      execl(o->cli, o->cli, "--bootstrap-server", o->bootstrap,
            "--entity-type", "clients", "--entity-default", "--alter",
            "--add-config", kv, "--wait", "--timeout-ms", "60000",
            (char *)NULL);
    else
      execl(o->cli, o->cli, "--bootstrap-server", o->bootstrap,
            "--entity-type", "clients", "--entity-default", "--alter",
            "--add-config", kv, (char *)NULL);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  ssize_t n = pread(fd, out, outsz - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  close(fd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

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

static void report(fleet_t *f, int64_t *cli_us, int done_alters,
                   double win_s, double daemon_pct, double workers_pct,
                   double poll_pct, int jitter, bool failed) {
  const opts_t *o = f->o;
  size_t na = (size_t)o->agents, total = 0;
  int64_t *all = malloc(sizeof(int64_t) * na * (size_t)(done_alters ? done_alters : 1));
  int64_t *one = malloc(sizeof(int64_t) * na);
  long long *lasts = malloc(sizeof(long long) * na);
  if (!all || !one || !lasts) {
    free(all);
    free(one);
    free(lasts);
    return;
  }
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
  double p50 = (double)pct_i64(all, total, 50) / 1000;
  double p99 = (double)pct_i64(all, total, 99) / 1000;
  double mx = total ? (double)all[total - 1] / 1000 : 0;
  double mn = total ? (double)all[0] / 1000 : 0;
  double cli_avg = 0;
  for (int k = 0; k < done_alters; k++)
    cli_avg += (double)cli_us[k] / 1000;
  cli_avg = done_alters ? cli_avg / done_alters : 0;

  /* Fetch round trips from the agents' own statistics. */
  double avg_sum = 0;
  long long maxmax = 0, fetch_ok = 0, fetch_err = 0;
  size_t nl = 0;
  for (size_t i = 0; i < na; i++) {
    if (f->avg_us[i] < 0)
      continue;
    avg_sum += (double)f->avg_us[i];
    lasts[nl++] = f->last_us[i];
    if (f->max_us[i] > maxmax)
      maxmax = f->max_us[i];
    fetch_ok += f->ok[i];
    fetch_err += f->err[i];
  }
  qsort(lasts, nl, sizeof(*lasts), cmp_ll);
  double rtt_avg = nl ? avg_sum / (double)nl / 1000 : 0;
  double rtt_last_p50 = nl ? (double)lasts[(nl - 1) / 2] / 1000 : 0;
  double rtt_last_p99 = nl ? (double)lasts[(size_t)((double)(nl - 1) * 0.99)] / 1000 : 0;
  double bound = o->refresh_ms + rtt_avg + o->poll_sleep_ms;
  /* Uniform phase over an interval shortened by 0..jitter%. */
  double expect_p50 = o->refresh_ms * (1.0 - jitter / 200.0) / 2 + rtt_avg;
  /* Polling: the interval bounds the delay. Pushed: 50 ms, the goal. */
  double target = o->watch ? 50.0 : 1.1 * o->refresh_ms + rtt_avg;
  long long create_max = 0, destroy_max = 0, cpu_ms = 0;
  long threads = 0, fds = 0, rss_kib = 0;
  for (int i = 0; i < f->n_ch; i++) {
    threads += f->ch[i].threads;
    fds += f->ch[i].fds;
    rss_kib += f->ch[i].rss_kib;
    if (f->ch[i].create_ms > create_max)
      create_max = f->ch[i].create_ms;
    if (f->ch[i].destroy_ms > destroy_max)
      destroy_max = f->ch[i].destroy_ms;
    cpu_ms += f->ch[i].cpu_ms;
  }

  printf("\nfleet: %d agents in %d processes, %s, refresh %d ms (jitter %d%%), "
         "%d alters, polling: one thread per process, dynconf_poll(dc, 0) over "
         "its agents then %d ms sleep\n",
         o->agents, f->n_ch, o->watch ? "changes pushed by Watch" : "polling",
         o->refresh_ms, jitter, done_alters, o->poll_sleep_ms);
  printf("  start-up: slowest process created its agents in %lld ms, "
         "spread over %d ms on purpose (first fetch is synchronous in "
         "dynconf_new)\n", create_max, o->stagger_ms);
  printf("  delivery delay over %zu deliveries: min %.1f  p50 %.1f  p99 %.1f  "
         "max %.1f ms (from CLI return; CLI took %.1f ms on average)\n",
         total, mn, p50, p99, mx, cli_avg);
  if (o->cli_wait)
    printf("  --wait: the CLI (alter, then waiting for the rollout) took %.1f "
           "ms on average; the last delivery was seen %.1f ms %s it returned "
           "(this loop sees a change event at its next sweep, up to %d ms "
           "and a sweep after the agent applied and reported it)\n",
           cli_avg, mx <= 0 ? -mx : mx, mx <= 0 ? "before" : "after",
           o->poll_sleep_ms);
  if (!o->watch)
    printf("  baseline: polling bound = refresh %d + fetch RTT %.2f + poll "
           "sleep %d = %.1f ms; expected p50 ~ %.1f ms\n",
           o->refresh_ms, rtt_avg, o->poll_sleep_ms, bound, expect_p50);
  printf("  fetch RTT from agents' stats: mean of avg_us %.2f ms, last_us p50 "
         "%.2f / p99 %.2f ms, worst max_us %.1f ms; %lld fetches ok, %lld "
         "failed\n", rtt_avg, rtt_last_p50, rtt_last_p99, (double)maxmax / 1000,
         fetch_ok, fetch_err);
  char dpct[32] = "n/a (no --daemon-pid)";
  if (daemon_pct >= 0)
    snprintf(dpct, sizeof(dpct), "%.2f%%", daemon_pct);
  printf("  CPU over the %.1f s alter window: dynconfd %s of one core, "
         "agents (all workers) %.2f%% = %.4f%% per agent: the agents' own "
         "threads %.2f%% (%.4f%% per agent), the polling loops %.2f%%\n",
         win_s, dpct, workers_pct, workers_pct / o->agents,
         workers_pct - poll_pct, (workers_pct - poll_pct) / o->agents,
         poll_pct);
  printf("  worker processes (all %d, at the start of the window): %ld "
         "threads, %ld open fds, %ld KiB resident = %.2f threads, %.2f fds, "
         "%.1f KiB per agent\n", f->n_ch, threads, fds, rss_kib,
         (double)threads / o->agents, (double)fds / o->agents,
         (double)rss_kib / o->agents);
  printf("  events: %d error events, %d rejected change sets, %d unexpected, "
         "%d at start-up (state left on dynconfd); %d agents not UP at the "
         "end; destroying the slowest process's agents took %lld ms\n",
         f->errors, f->rejected, f->unexpected, f->initial, f->st_bad,
         destroy_max);
  if (failed)
    printf("  RUN FAILED: the figures above cover only the %d alters that "
           "reached every agent; target not judged\n", done_alters);
  else
    printf("  target p99 <= %s = %.1f ms: %s (p99 %.1f ms)\n",
           o->watch ? "50 ms (pushed)" : "1.1 x refresh + fetch RTT", target,
           p99 <= target ? "met" : "NOT met", p99);
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
         o->watch, o->agents, f->n_ch, done_alters, o->refresh_ms, jitter,
         o->poll_sleep_ms, total, mn, p50, p99, mx, cli_avg, bound, expect_p50,
         rtt_avg, rtt_last_p50, rtt_last_p99, (double)maxmax / 1000, fetch_ok,
         fetch_err, win_s, daemon_pct, workers_pct, create_max, destroy_max,
         cpu_ms, f->errors, f->rejected, f->unexpected, f->st_bad,
         p99 <= target, failed, target, poll_pct, workers_pct - poll_pct,
         threads, fds, rss_kib);
  free(all);
  free(one);
  free(lasts);
}

static void usage(FILE *fp) {
  fprintf(fp,
          "Usage: agent_fleet --bootstrap HOST:PORT --configs-cli PATH\n"
          "         [--agents 2000] [--procs P] [--alters 5] [--gap-ms 3000]\n"
          "         [--settle-ms 3000] [--refresh-ms 1000] [--poll-sleep-ms 5]\n"
          "         [--timeout-ms 30000] [--daemon-pid PID] [--value-base N]\n"
          "         [--stagger-ms REFRESH] [--watch on|off] [--cli-wait on|off]\n");
}

static int parse_int(const char *s, int min, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end || v < min || v > 100000000)
    return -1;
  *out = (int)v;
  return 0;
}

/* Checks that the machine can hold the fleet; prints what it found. */
static int check_limits(const opts_t *o) {
  struct rlimit nof, nproc;
  getrlimit(RLIMIT_NOFILE, &nof);
  getrlimit(RLIMIT_NPROC, &nproc);
  long threads_max = -1;
  FILE *fp = fopen("/proc/sys/kernel/threads-max", "r");
  if (fp) {
    if (fscanf(fp, "%ld", &threads_max) != 1)
      threads_max = -1;
    fclose(fp);
  }
  int per = (o->agents + o->procs - 1) / o->procs;
  /* Generous: enough for an agent with its own librdkafka handle (~4
   * threads: its thread, rdk:main, two broker threads; ~12 fds: sockets,
   * wake-up pipes), more than one with a single connection needs (1
   * thread, ~3 fds). */
  long need_thr = (long)o->agents * 5 + 64, need_fd = (long)per * 16 + 64;
  printf("limits: RLIMIT_NOFILE soft %llu hard %llu (need ~%ld per process), "
         "RLIMIT_NPROC %s%llu, threads-max %ld (need ~%ld threads)\n",
         (unsigned long long)nof.rlim_cur, (unsigned long long)nof.rlim_max,
         need_fd, nproc.rlim_cur == RLIM_INFINITY ? "unlimited " : "",
         nproc.rlim_cur == RLIM_INFINITY ? 0ull
                                         : (unsigned long long)nproc.rlim_cur,
         threads_max, need_thr);
  if ((rlim_t)need_fd > nof.rlim_max) {
    fprintf(stderr, "agent_fleet: RLIMIT_NOFILE hard limit %llu is below the "
            "~%ld fds %d agents per process need: use more --procs\n",
            (unsigned long long)nof.rlim_max, need_fd, per);
    return -1;
  }
  if ((nproc.rlim_cur != RLIM_INFINITY && (rlim_t)need_thr > nproc.rlim_cur) ||
      (threads_max > 0 && need_thr > threads_max)) {
    fprintf(stderr, "agent_fleet: not enough threads allowed for %d agents\n",
            o->agents);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  /* value-base: varies per run so that a re-used dynconfd never already
   * holds the first value (no change, no event). */
  opts_t o = {NULL, NULL, 2000, 0, 5, 3000, 3000, 1000, 5, 30000,
              10000 + (int)(time(NULL) % 100) * 2500, -1, 0, 0, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0, pid = 0;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!v) {
      usage(stderr);
      return 2;
    }
    if (!strcmp(a, "--bootstrap"))
      o.bootstrap = v;
    else if (!strcmp(a, "--configs-cli"))
      o.cli = v;
    else if (!strcmp(a, "--agents"))
      bad = parse_int(v, 1, &o.agents);
    else if (!strcmp(a, "--procs"))
      bad = parse_int(v, 0, &o.procs);
    else if (!strcmp(a, "--alters"))
      bad = parse_int(v, 1, &o.alters);
    else if (!strcmp(a, "--gap-ms"))
      bad = parse_int(v, 0, &o.gap_ms);
    else if (!strcmp(a, "--settle-ms"))
      bad = parse_int(v, 0, &o.settle_ms);
    else if (!strcmp(a, "--refresh-ms"))
      bad = parse_int(v, 10, &o.refresh_ms);
    else if (!strcmp(a, "--poll-sleep-ms"))
      bad = parse_int(v, 0, &o.poll_sleep_ms);
    else if (!strcmp(a, "--timeout-ms"))
      bad = parse_int(v, 1000, &o.timeout_ms);
    else if (!strcmp(a, "--stagger-ms"))
      bad = parse_int(v, 0, &o.stagger_ms);
    else if (!strcmp(a, "--cli-wait")) {
      o.cli_wait = !strcmp(v, "on");
      bad = !o.cli_wait && strcmp(v, "off");
    } else if (!strcmp(a, "--watch")) {
      o.watch = !strcmp(v, "on");
      bad = !o.watch && strcmp(v, "off");
    }
    else if (!strcmp(a, "--value-base"))
      bad = parse_int(v, 6000, &o.value_base);
    else if (!strcmp(a, "--daemon-pid")) {
      bad = parse_int(v, 1, &pid);
      o.daemon_pid = pid;
    } else
      bad = 1;
    if (bad) {
      fprintf(stderr, "agent_fleet: bad option %s %s\n", a, v);
      usage(stderr);
      return 2;
    }
    i++;
  }
  if (!o.bootstrap || !o.cli) {
    usage(stderr);
    return 2;
  }
  if ((long)o.value_base + (long)o.alters * 1000 > 300000) {
    fprintf(stderr, "agent_fleet: value-base + alters*1000 must stay <= 300000 "
            "(the agents' max.poll.interval.ms)\n");
    return 2;
  }
  if (o.stagger_ms < 0)
    o.stagger_ms = o.refresh_ms;
  if (!o.procs)
    o.procs = (o.agents + AGENTS_PER_PROC - 1) / AGENTS_PER_PROC;
  if (o.procs > o.agents)
    o.procs = o.agents;
  if (o.procs > 256)
    o.procs = 256;
  if (check_limits(&o))
    return 1;
  /* The default jitter, read from a fresh conf (no librdkafka handle yet). */
  int jitter = 10;
  {
    dynconf_conf_t *c = dynconf_conf_new();
    char b[32];
    size_t bs = sizeof(b);
    if (c && dynconf_conf_get(c, "dynconf.refresh.jitter.pct", b, &bs) ==
                 DYNCONF_CONF_OK)
      jitter = atoi(b);
    dynconf_conf_destroy(c);
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  /* Everything below is owned by main and freed at the end. */
  fleet_t f;
  memset(&f, 0, sizeof(f));
  f.o = &o;
  f.cur_alter = -1;
  size_t na = (size_t)o.agents;
  f.ch = calloc((size_t)o.procs, sizeof(*f.ch));
  f.delay_us = malloc(sizeof(int64_t) * na * (size_t)o.alters);
  f.avg_us = malloc(sizeof(long long) * na);
  f.last_us = malloc(sizeof(long long) * na);
  f.max_us = malloc(sizeof(long long) * na);
  f.ok = calloc(na, sizeof(long long));
  f.err = calloc(na, sizeof(long long));
  int64_t *cli_us = calloc((size_t)o.alters, sizeof(int64_t));
  int rc = 0;
  if (!f.ch || !f.delay_us || !f.avg_us || !f.last_us || !f.max_us || !f.ok ||
      !f.err || !cli_us) {
    fprintf(stderr, "agent_fleet: out of memory\n");
    rc = 1;
    goto out;
  }
  for (size_t i = 0; i < na * (size_t)o.alters; i++)
    f.delay_us[i] = NO_DELAY;
  for (size_t i = 0; i < na; i++)
    f.avg_us[i] = f.last_us[i] = f.max_us[i] = -1;

  printf("starting %d agents in %d processes against %s\n", o.agents, o.procs,
         o.bootstrap);
  fflush(stdout);
  for (int p = 0; p < o.procs; p++) {
    int up[2], down[2];
    if (pipe(up) || pipe(down)) {
      fprintf(stderr, "agent_fleet: pipe: %s\n", strerror(errno));
      rc = 1;
      break;
    }
    int first = (int)((long)o.agents * p / o.procs);
    int count = (int)((long)o.agents * (p + 1) / o.procs) - first;
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "agent_fleet: fork: %s\n", strerror(errno));
      rc = 1;
      break;
    }
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      for (int q = 0; q < p; q++) { /* siblings' pipes are not ours */
        close(f.ch[q].up);
        close(f.ch[q].down);
      }
      int wrc = worker(&o, p, first, count, up[1], down[0]);
      close(up[1]);
      close(down[0]);
      free(f.ch);
      free(f.delay_us);
      free(f.avg_us);
      free(f.last_us);
      free(f.max_us);
      free(f.ok);
      free(f.err);
      free(cli_us);
      exit(wrc);
    }
    close(up[1]);
    close(down[0]);
    f.ch[p].pid = pid;
    f.ch[p].up = up[0];
    f.ch[p].down = down[1];
    f.n_ch++;
  }

  /* Wait for every worker's agents. */
  int64_t start = mono_us(), window0 = 0;
  int done_alters = 0;
  long long d_ticks0 = -1, d_ticks1 = -1;
  for (;;) {
    int ready = 0, dead = 0;
    for (int i = 0; i < f.n_ch; i++) {
      ready += f.ch[i].ready;
      dead += f.ch[i].eof;
    }
    if (rc || f.failed || dead || g_stop) {
      fprintf(stderr, "agent_fleet: start-up failed (%d of %d workers ready, "
              "%d exited)\n", ready, f.n_ch, dead);
      rc = 1;
      break;
    }
    if (ready == f.n_ch)
      break;
    if (mono_us() - start > (int64_t)o.timeout_ms * 1000 * 4) {
      fprintf(stderr, "agent_fleet: workers not ready after %d ms\n",
              o.timeout_ms * 4);
      rc = 1;
      break;
    }
    pump(&f, 200);
  }
  if (!rc) {
    printf("all %d agents up after %.1f s; idling %d ms before the first alter\n",
           o.agents, (double)(mono_us() - start) / 1e6, o.settle_ms);
    fflush(stdout);
    int64_t until = mono_us() + (int64_t)o.settle_ms * 1000;
    while (mono_us() < until && !g_stop)
      pump(&f, 100);
    for (int i = 0; i < f.n_ch; i++) {
      f.ch[i].threads = bench_proc_status(f.ch[i].pid, "Threads");
      f.ch[i].rss_kib = bench_proc_status(f.ch[i].pid, "VmRSS");
      f.ch[i].fds = bench_proc_fds(f.ch[i].pid);
    }
    window0 = mono_us();
    for (int i = 0; i < f.n_ch; i++) {
      f.ch[i].ticks0 = bench_proc_ticks(f.ch[i].pid);
      f.ch[i].mticks0 = bench_thread_ticks(f.ch[i].pid, f.ch[i].pid);
    }
    if (o.daemon_pid)
      d_ticks0 = bench_proc_ticks(o.daemon_pid);
  }

  for (int k = 0; !rc && k < o.alters && !g_stop; k++) {
    int value = o.value_base + (k + 1) * 1000;
    f.cur_alter = k;
    f.cur_value = value;
    f.altering = true;
    f.got = 0;
    char out[1024];
    int64_t t0 = mono_us();
    int st = run_cli(&o, value, out, sizeof(out));
    int64_t t1 = mono_us();
    /* Nothing is read from the workers while the CLI runs, so every
     * delivery of this alter is measured from t1 (a delivery that beat the
     * CLI's exit shows as a small negative delay). */
    f.cur_t_us = t1;
    cli_us[k] = t1 - t0;
    if (st != 0) {
      fprintf(stderr, "agent_fleet: dynconf-configs exited %d: %s\n", st, out);
      rc = 1;
      break;
    }
    while (f.got < o.agents && !g_stop) {
      if (mono_us() - t1 > (int64_t)o.timeout_ms * 1000)
        break;
      int dead = 0;
      for (int i = 0; i < f.n_ch; i++)
        dead += f.ch[i].eof;
      if (dead)
        break;
      pump(&f, 50);
    }
    printf("alter %d: session.timeout.ms=%d on <default>: CLI %.1f ms, %d of "
           "%d agents had it after %.1f ms\n", k + 1, value,
           (double)cli_us[k] / 1000, f.got, o.agents,
           (double)(mono_us() - t1) / 1000);
    fflush(stdout);
    if (f.got < o.agents) {
      int dead = 0;
      for (int i = 0; i < f.n_ch; i++)
        dead += f.ch[i].eof;
      if (dead)
        fprintf(stderr, "agent_fleet: %d worker process(es) died during alter "
                "%d\n", dead, k + 1);
      else
        fprintf(stderr, "agent_fleet: %d agents did not get alter %d within "
                "%d ms\n", o.agents - f.got, k + 1, o.timeout_ms);
      rc = 1;
      break;
    }
    done_alters++; /* only complete alters are reported */
    f.cur_alter = -1;
    int64_t until = t1 + (int64_t)o.gap_ms * 1000;
    while (mono_us() < until && !g_stop)
      pump(&f, 50);
  }
  if (g_stop)
    rc = 1;
  int64_t window1 = mono_us();
  for (int i = 0; i < f.n_ch; i++) {
    f.ch[i].ticks1 = bench_proc_ticks(f.ch[i].pid);
    f.ch[i].mticks1 = bench_thread_ticks(f.ch[i].pid, f.ch[i].pid);
  }
  if (o.daemon_pid)
    d_ticks1 = bench_proc_ticks(o.daemon_pid);

  /* Stop the workers: closing their pipe is the signal. */
  for (int i = 0; i < f.n_ch; i++) {
    close(f.ch[i].down);
    f.ch[i].down = -1;
  }
  int64_t stop_at = mono_us();
  for (;;) {
    int open = 0;
    for (int i = 0; i < f.n_ch; i++)
      open += !f.ch[i].eof;
    if (!open || mono_us() - stop_at > 120 * 1000000LL)
      break;
    pump(&f, 200);
  }
  for (int i = 0; i < f.n_ch; i++) {
    int st;
    if (!f.ch[i].eof)
      kill(f.ch[i].pid, SIGKILL); /* hung: it had two minutes */
    waitpid(f.ch[i].pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) || !f.ch[i].done) {
      fprintf(stderr, "agent_fleet: worker %d (pid %d) %s %d\n", i,
              (int)f.ch[i].pid, WIFEXITED(st) ? "exited" : "killed by signal",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      rc = 1;
    }
    close(f.ch[i].up);
  }

  if (done_alters) {
    double win_s = (double)(window1 - window0) / 1e6;
    long hz = sysconf(_SC_CLK_TCK);
    long long wt = 0, mt = 0;
    for (int i = 0; i < f.n_ch; i++) {
      if (f.ch[i].ticks0 >= 0 && f.ch[i].ticks1 >= 0)
        wt += f.ch[i].ticks1 - f.ch[i].ticks0;
      if (f.ch[i].mticks0 >= 0 && f.ch[i].mticks1 >= 0)
        mt += f.ch[i].mticks1 - f.ch[i].mticks0;
    }
    double workers_pct = win_s > 0 ? 100.0 * (double)wt / (double)hz / win_s : 0;
    double poll_pct = win_s > 0 ? 100.0 * (double)mt / (double)hz / win_s : 0;
    double daemon_pct = d_ticks0 >= 0 && d_ticks1 >= 0 && win_s > 0
                            ? 100.0 * (double)(d_ticks1 - d_ticks0) / (double)hz / win_s
                            : -1;
    report(&f, cli_us, done_alters, win_s, daemon_pct, workers_pct, poll_pct,
           jitter, rc != 0);
  }
out:
  free(f.ch);
  free(f.delay_us);
  free(f.avg_us);
  free(f.last_us);
  free(f.max_us);
  free(f.ok);
  free(f.err);
  free(cli_us);
  return rc;
}
