/* SPDX-License-Identifier: BSD-2-Clause */
/* What agent_fleet's parent, worker and report share (see agent_fleet.c). */
#ifndef DC_BENCH_AGENT_FLEET_SHARED_H
#define DC_BENCH_AGENT_FLEET_SHARED_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define NO_DELAY INT64_MIN /* an agent that has not got the alter yet */

typedef struct opts {
  const char *bootstrap, *cli;
  int agents, procs, alters, gap_ms, settle_ms, refresh_ms, poll_sleep_ms;
  int timeout_ms, value_base, stagger_ms;
  int watch; /* dynconf.watch: 1 = changes pushed by Watch, 0 = polling */
  int cli_wait; /* each alter with --wait: the CLI returns once all applied */
  pid_t daemon_pid;
} opts_t;

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
  int64_t *cli_us;   /* [alters]: each CLI run's time (owned) */
  int got;           /* agents that have the current alter */
  bool altering;     /* the first alter has started */
  int initial;       /* change events before it (state left by a prior run) */
  int errors, unexpected, rejected;
  /* per agent, from the final stats lines */
  long long *avg_us, *last_us, *max_us, *ok, *err; /* owned */
  int st_bad; /* agents not UP at the end */
  int failed;
} fleet_t;

/* CPU over the alter window, in % of one core; daemon_pct < 0 = unknown. */
typedef struct window_cpu {
  double win_s, daemon_pct, workers_pct, poll_pct;
} window_cpu_t;

/* Set by SIGINT/SIGTERM; the workers inherit the handler. */
extern volatile sig_atomic_t g_stop;

static inline int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Worker process wi: creates agents first..first+count-1, reports on upfd,
 * polls them until downfd closes. Returns its exit status. */
int fleet_worker(const opts_t *o, int wi, int first, int count, int upfd,
                 int downfd);

/* The per-alter table, the summary and the RESULT/ALTER lines. */
void fleet_report(const fleet_t *f, int done_alters, const window_cpu_t *w,
                  int jitter, bool failed);

#endif
