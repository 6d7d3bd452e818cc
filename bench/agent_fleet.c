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
#include "agent_fleet_shared.h"
#include "proc.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
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

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* ---- parent ---------------------------------------------------------------- */

/* "ev AGENT VALUE ACCEPTED T_US": a delivery of the current alter, or not. */
static void handle_event(fleet_t *f, const char *args) {
  int idx, acc;
  char val[64];
  long long t;
  if (sscanf(args, "%d %63s %d %lld", &idx, val, &acc, &t) != 4 || idx < 0 ||
      idx >= f->o->agents)
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
}

/* "st AGENT OK ERRORS AVG_US LAST_US MAX_US STATE": an agent's last stats. */
static void handle_stats(fleet_t *f, const char *args) {
  int idx;
  long long ok, er, avg, last, mx;
  char state[32];
  if (sscanf(args, "%d %lld %lld %lld %lld %lld %31s", &idx, &ok, &er, &avg,
             &last, &mx, state) == 7 &&
      idx >= 0 && idx < f->o->agents) {
    f->ok[idx] = ok;
    f->err[idx] = er;
    f->avg_us[idx] = avg;
    f->last_us[idx] = last;
    f->max_us[idx] = mx;
    if (strcmp(state, "up"))
      f->st_bad++;
  }
}

static void handle_line(fleet_t *f, child_t *c, char *line) {
  if (!strncmp(line, "ev ", 3)) {
    handle_event(f, line + 3);
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
    handle_stats(f, line + 3);
  } else if (!strncmp(line, "done ", 5)) {
    c->done = true;
    sscanf(line + 5, "%lld %lld %d", &c->destroy_ms, &c->cpu_ms, &c->warnings);
  }
}

/* Reads what one worker sent and handles every whole line of it. */
static void read_child(fleet_t *f, child_t *c) {
  ssize_t r = read(c->up, c->buf + c->have, sizeof(c->buf) - 1 - c->have);
  if (r <= 0) {
    if (r < 0 && errno == EINTR)
      return;
    c->eof = true;
    return;
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
  for (int k = 0; k < n; k++)
    if (p[k].revents & (POLLIN | POLLHUP | POLLERR))
      read_child(f, &f->ch[map[k]]);
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

/* One option a with its value v into o; nonzero when either is bad. */
static int parse_opt(opts_t *o, const char *a, const char *v) {
  int bad = 0, pid = 0;
  if (!strcmp(a, "--bootstrap"))
    o->bootstrap = v;
  else if (!strcmp(a, "--configs-cli"))
    o->cli = v;
  else if (!strcmp(a, "--agents"))
    bad = parse_int(v, 1, &o->agents);
  else if (!strcmp(a, "--procs"))
    bad = parse_int(v, 0, &o->procs);
  else if (!strcmp(a, "--alters"))
    bad = parse_int(v, 1, &o->alters);
  else if (!strcmp(a, "--gap-ms"))
    bad = parse_int(v, 0, &o->gap_ms);
  else if (!strcmp(a, "--settle-ms"))
    bad = parse_int(v, 0, &o->settle_ms);
  else if (!strcmp(a, "--refresh-ms"))
    bad = parse_int(v, 10, &o->refresh_ms);
  else if (!strcmp(a, "--poll-sleep-ms"))
    bad = parse_int(v, 0, &o->poll_sleep_ms);
  else if (!strcmp(a, "--timeout-ms"))
    bad = parse_int(v, 1000, &o->timeout_ms);
  else if (!strcmp(a, "--stagger-ms"))
    bad = parse_int(v, 0, &o->stagger_ms);
  else if (!strcmp(a, "--cli-wait")) {
    o->cli_wait = !strcmp(v, "on");
    bad = !o->cli_wait && strcmp(v, "off");
  } else if (!strcmp(a, "--watch")) {
    o->watch = !strcmp(v, "on");
    bad = !o->watch && strcmp(v, "off");
  } else if (!strcmp(a, "--value-base"))
    bad = parse_int(v, 6000, &o->value_base);
  else if (!strcmp(a, "--daemon-pid")) {
    bad = parse_int(v, 1, &pid);
    o->daemon_pid = pid;
  } else
    bad = 1;
  return bad;
}

/* The command line into o, defaults filled in. Returns -1 to go on, else
 * the exit status (0 after --help, 2 on a usage error). */
static int parse_args(int argc, char **argv, opts_t *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!v) {
      usage(stderr);
      return 2;
    }
    if (parse_opt(o, a, v)) {
      fprintf(stderr, "agent_fleet: bad option %s %s\n", a, v);
      usage(stderr);
      return 2;
    }
    i++;
  }
  if (!o->bootstrap || !o->cli) {
    usage(stderr);
    return 2;
  }
  if ((long)o->value_base + (long)o->alters * 1000 > 300000) {
    fprintf(stderr, "agent_fleet: value-base + alters*1000 must stay <= 300000 "
            "(the agents' max.poll.interval.ms)\n");
    return 2;
  }
  if (o->stagger_ms < 0)
    o->stagger_ms = o->refresh_ms;
  if (!o->procs)
    o->procs = (o->agents + AGENTS_PER_PROC - 1) / AGENTS_PER_PROC;
  if (o->procs > o->agents)
    o->procs = o->agents;
  if (o->procs > 256)
    o->procs = 256;
  return -1;
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

/* The default jitter, read from a fresh conf (no librdkafka handle yet). */
static int default_jitter(void) {
  int jitter = 10;
  dynconf_conf_t *c = dynconf_conf_new();
  char b[32];
  size_t bs = sizeof(b);
  if (c && dynconf_conf_get(c, "dynconf.refresh.jitter.pct", b, &bs) ==
               DYNCONF_CONF_OK)
    jitter = atoi(b);
  dynconf_conf_destroy(c);
  return jitter;
}

static void fleet_free(fleet_t *f) {
  free(f->ch);
  free(f->delay_us);
  free(f->avg_us);
  free(f->last_us);
  free(f->max_us);
  free(f->ok);
  free(f->err);
  free(f->cli_us);
}

/* The parent's tables, sized by the options; -1 when out of memory. */
static int fleet_alloc(fleet_t *f, const opts_t *o) {
  memset(f, 0, sizeof(*f));
  f->o = o;
  f->cur_alter = -1;
  size_t na = (size_t)o->agents;
  f->ch = calloc((size_t)o->procs, sizeof(*f->ch));
  f->delay_us = malloc(sizeof(int64_t) * na * (size_t)o->alters);
  f->avg_us = malloc(sizeof(long long) * na);
  f->last_us = malloc(sizeof(long long) * na);
  f->max_us = malloc(sizeof(long long) * na);
  f->ok = calloc(na, sizeof(long long));
  f->err = calloc(na, sizeof(long long));
  f->cli_us = calloc((size_t)o->alters, sizeof(int64_t));
  if (!f->ch || !f->delay_us || !f->avg_us || !f->last_us || !f->max_us ||
      !f->ok || !f->err || !f->cli_us)
    return -1;
  for (size_t i = 0; i < na * (size_t)o->alters; i++)
    f->delay_us[i] = NO_DELAY;
  for (size_t i = 0; i < na; i++)
    f->avg_us[i] = f->last_us[i] = f->max_us[i] = -1;
  return 0;
}

/* Forks the workers, each with a pipe up and one down; 1 when one could
 * not be started (those started are in f->ch). */
static int start_workers(fleet_t *f) {
  const opts_t *o = f->o;
  for (int p = 0; p < o->procs; p++) {
    int up[2], down[2];
    if (pipe(up) || pipe(down)) {
      fprintf(stderr, "agent_fleet: pipe: %s\n", strerror(errno));
      return 1;
    }
    int first = (int)((long)o->agents * p / o->procs);
    int count = (int)((long)o->agents * (p + 1) / o->procs) - first;
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "agent_fleet: fork: %s\n", strerror(errno));
      return 1;
    }
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      for (int q = 0; q < p; q++) { /* siblings' pipes are not ours */
        close(f->ch[q].up);
        close(f->ch[q].down);
      }
      int wrc = fleet_worker(o, p, first, count, up[1], down[0]);
      close(up[1]);
      close(down[0]);
      fleet_free(f);
      exit(wrc);
    }
    close(up[1]);
    close(down[0]);
    f->ch[p].pid = pid;
    f->ch[p].up = up[0];
    f->ch[p].down = down[1];
    f->n_ch++;
  }
  return 0;
}

static int dead_workers(const fleet_t *f) {
  int dead = 0;
  for (int i = 0; i < f->n_ch; i++)
    dead += f->ch[i].eof;
  return dead;
}

/* Waits for every worker's agents; rc is start_workers' result. Returns 1
 * when start-up failed. */
static int wait_ready(fleet_t *f, int rc, int64_t start) {
  for (;;) {
    int ready = 0, dead = 0;
    for (int i = 0; i < f->n_ch; i++) {
      ready += f->ch[i].ready;
      dead += f->ch[i].eof;
    }
    if (rc || f->failed || dead || g_stop) {
      fprintf(stderr, "agent_fleet: start-up failed (%d of %d workers ready, "
              "%d exited)\n", ready, f->n_ch, dead);
      return 1;
    }
    if (ready == f->n_ch)
      return 0;
    if (mono_us() - start > (int64_t)f->o->timeout_ms * 1000 * 4) {
      fprintf(stderr, "agent_fleet: workers not ready after %d ms\n",
              f->o->timeout_ms * 4);
      return 1;
    }
    pump(f, 200);
  }
}

/* The alter window's CPU marks: at its start and at its end. */
typedef struct window {
  int64_t t0, t1;
  long long d_ticks0, d_ticks1; /* dynconfd's, -1 = not read */
} window_t;

/* Idles --settle-ms, then samples the workers and opens the window. */
static void settle(fleet_t *f, int64_t start, window_t *w) {
  const opts_t *o = f->o;
  printf("all %d agents up after %.1f s; idling %d ms before the first alter\n",
         o->agents, (double)(mono_us() - start) / 1e6, o->settle_ms);
  fflush(stdout);
  int64_t until = mono_us() + (int64_t)o->settle_ms * 1000;
  while (mono_us() < until && !g_stop)
    pump(f, 100);
  for (int i = 0; i < f->n_ch; i++) {
    f->ch[i].threads = bench_proc_status(f->ch[i].pid, "Threads");
    f->ch[i].rss_kib = bench_proc_status(f->ch[i].pid, "VmRSS");
    f->ch[i].fds = bench_proc_fds(f->ch[i].pid);
  }
  w->t0 = mono_us();
  for (int i = 0; i < f->n_ch; i++) {
    f->ch[i].ticks0 = bench_proc_ticks(f->ch[i].pid);
    f->ch[i].mticks0 = bench_thread_ticks(f->ch[i].pid, f->ch[i].pid);
  }
  if (o->daemon_pid)
    w->d_ticks0 = bench_proc_ticks(o->daemon_pid);
}

/* Alter k: runs the CLI, waits until every agent has it, then the gap.
 * Returns 1 when the alter failed or did not reach every agent. */
static int run_alter(fleet_t *f, int k) {
  const opts_t *o = f->o;
  int value = o->value_base + (k + 1) * 1000;
  f->cur_alter = k;
  f->cur_value = value;
  f->altering = true;
  f->got = 0;
  char out[1024];
  int64_t t0 = mono_us();
  int st = run_cli(o, value, out, sizeof(out));
  int64_t t1 = mono_us();
  /* Nothing is read from the workers while the CLI runs, so every
   * delivery of this alter is measured from t1 (a delivery that beat the
   * CLI's exit shows as a small negative delay). */
  f->cur_t_us = t1;
  f->cli_us[k] = t1 - t0;
  if (st != 0) {
    fprintf(stderr, "agent_fleet: dynconf-configs exited %d: %s\n", st, out);
    return 1;
  }
  while (f->got < o->agents && !g_stop) {
    if (mono_us() - t1 > (int64_t)o->timeout_ms * 1000)
      break;
    if (dead_workers(f))
      break;
    pump(f, 50);
  }
  printf("alter %d: session.timeout.ms=%d on <default>: CLI %.1f ms, %d of "
         "%d agents had it after %.1f ms\n", k + 1, value,
         (double)f->cli_us[k] / 1000, f->got, o->agents,
         (double)(mono_us() - t1) / 1000);
  fflush(stdout);
  if (f->got < o->agents) {
    int dead = dead_workers(f);
    if (dead)
      fprintf(stderr, "agent_fleet: %d worker process(es) died during alter "
              "%d\n", dead, k + 1);
    else
      fprintf(stderr, "agent_fleet: %d agents did not get alter %d within "
              "%d ms\n", o->agents - f->got, k + 1, o->timeout_ms);
    return 1;
  }
  f->cur_alter = -1;
  int64_t until = t1 + (int64_t)o->gap_ms * 1000;
  while (mono_us() < until && !g_stop)
    pump(f, 50);
  return 0;
}

/* Closes the window: the workers' and dynconfd's CPU at its end. */
static void close_window(fleet_t *f, window_t *w) {
  w->t1 = mono_us();
  for (int i = 0; i < f->n_ch; i++) {
    f->ch[i].ticks1 = bench_proc_ticks(f->ch[i].pid);
    f->ch[i].mticks1 = bench_thread_ticks(f->ch[i].pid, f->ch[i].pid);
  }
  if (f->o->daemon_pid)
    w->d_ticks1 = bench_proc_ticks(f->o->daemon_pid);
}

/* Stops the workers (closing their pipe is the signal), reads their last
 * lines and reaps them. Returns 1 when one failed. */
static int stop_workers(fleet_t *f) {
  int rc = 0;
  for (int i = 0; i < f->n_ch; i++) {
    close(f->ch[i].down);
    f->ch[i].down = -1;
  }
  int64_t stop_at = mono_us();
  for (;;) {
    int open = 0;
    for (int i = 0; i < f->n_ch; i++)
      open += !f->ch[i].eof;
    if (!open || mono_us() - stop_at > 120 * 1000000LL)
      break;
    pump(f, 200);
  }
  for (int i = 0; i < f->n_ch; i++) {
    int st;
    if (!f->ch[i].eof)
      kill(f->ch[i].pid, SIGKILL); /* hung: it had two minutes */
    waitpid(f->ch[i].pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) || !f->ch[i].done) {
      fprintf(stderr, "agent_fleet: worker %d (pid %d) %s %d\n", i,
              (int)f->ch[i].pid, WIFEXITED(st) ? "exited" : "killed by signal",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      rc = 1;
    }
    close(f->ch[i].up);
  }
  return rc;
}

/* CPU over the window in % of one core. */
static window_cpu_t window_cpu(const fleet_t *f, const window_t *w) {
  window_cpu_t c;
  c.win_s = (double)(w->t1 - w->t0) / 1e6;
  long hz = sysconf(_SC_CLK_TCK);
  long long wt = 0, mt = 0;
  for (int i = 0; i < f->n_ch; i++) {
    if (f->ch[i].ticks0 >= 0 && f->ch[i].ticks1 >= 0)
      wt += f->ch[i].ticks1 - f->ch[i].ticks0;
    if (f->ch[i].mticks0 >= 0 && f->ch[i].mticks1 >= 0)
      mt += f->ch[i].mticks1 - f->ch[i].mticks0;
  }
  c.workers_pct = c.win_s > 0 ? 100.0 * (double)wt / (double)hz / c.win_s : 0;
  c.poll_pct = c.win_s > 0 ? 100.0 * (double)mt / (double)hz / c.win_s : 0;
  c.daemon_pct = w->d_ticks0 >= 0 && w->d_ticks1 >= 0 && c.win_s > 0
                     ? 100.0 * (double)(w->d_ticks1 - w->d_ticks0) /
                           (double)hz / c.win_s
                     : -1;
  return c;
}

static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

/* Start-up, the alters, tear-down and the report; the exit status. */
static int run_fleet(fleet_t *f, int jitter) {
  const opts_t *o = f->o;
  printf("starting %d agents in %d processes against %s\n", o->agents,
         o->procs, o->bootstrap);
  fflush(stdout);
  int rc = start_workers(f);
  int64_t start = mono_us();
  window_t w = {0, 0, -1, -1};
  int done_alters = 0;
  rc = wait_ready(f, rc, start);
  if (!rc)
    settle(f, start, &w);
  for (int k = 0; !rc && k < o->alters && !g_stop; k++) {
    rc = run_alter(f, k);
    done_alters += !rc; /* only complete alters are reported */
  }
  if (g_stop)
    rc = 1;
  close_window(f, &w);
  if (stop_workers(f))
    rc = 1;
  if (done_alters) {
    window_cpu_t c = window_cpu(f, &w);
    fleet_report(f, done_alters, &c, jitter, rc != 0);
  }
  return rc;
}

int main(int argc, char **argv) {
  /* value-base: varies per run so that a re-used dynconfd never already
   * holds the first value (no change, no event). */
  opts_t o = {NULL, NULL, 2000, 0, 5, 3000, 3000, 1000, 5, 30000,
              10000 + (int)(time(NULL) % 100) * 2500, -1, 0, 0, 0};
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0)
    return rc;
  if (check_limits(&o))
    return 1;
  int jitter = default_jitter();
  install_signals();
  fleet_t f; /* owned by main, freed at the end */
  if (fleet_alloc(&f, &o)) {
    fprintf(stderr, "agent_fleet: out of memory\n");
    rc = 1;
  } else {
    rc = run_fleet(&f, jitter);
  }
  fleet_free(&f);
  return rc;
}
