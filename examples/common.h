/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the example producer and consumer share: their common flags, the
 * change line each prints for an agent event, resource samples and the
 * key=value report file. Everything here runs on the program's main
 * thread (the one that calls dynconf_poll), except ex_now_ms() and
 * ex_sleep_ms(), which any thread may call.
 */
#ifndef DYNCONF_EXAMPLES_COMMON_H
#define DYNCONF_EXAMPLES_COMMON_H

#include <dynconf.h>

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_PARTITIONS 1024
#define SETTLE_MS 1500 /* quiet time after a switch/rebuild before sampling */

/* ---- time and signals -------------------------------------------------- */

double ex_now_ms(void); /* monotonic */
void ex_sleep_ms(double ms);

/* Set by SIGINT/SIGTERM once ex_catch_signals() has run. */
extern volatile sig_atomic_t ex_stop_requested;
void ex_catch_signals(void);

/* ---- the flags both programs take -------------------------------------- */

typedef struct ex_opts {
  const char *bootstrap, *config_bootstrap, *topic, *client_id, *report;
  const char *debug; /* librdkafka debug contexts */
  long long count;   /* 0 = no limit */
  double duration;   /* seconds, 0 = no limit */
  int refresh_ms, warmup_ms;
  bool verbose;
  const char *xprops[64]; /* -X key=value, applied in order (borrowed) */
  int nx;
} ex_opts_t;

/* A program's own flag with its value: 0 taken, -1 bad (said on stderr),
 * 1 not one of its flags. */
typedef int(ex_flag_fn)(void *app, const char *flag, const char *value);

/* Parses a number in [min, max] into *out; -1 after saying why. */
int ex_parse_num(const char *flag, const char *s, double min, double max,
                 double *out);
/* Parses argv: the common flags into o, the rest through own(app, ...).
 * --help prints usage(stdout, argv[0]) and exits 0. Returns 0, or -1
 * after saying what is wrong (argv strings are borrowed by o). */
int ex_parse_args(ex_opts_t *o, int argc, char **argv,
                  void (*usage)(FILE *fp, const char *argv0), ex_flag_fn *own,
                  void *app);

/* ---- change events: one readable line each ------------------------------ */

typedef struct ex_events {
  const char *who;           /* "producer" or "consumer" */
  const char *client_id;     /* borrowed */
  rd_kafka_conf_t *app_conf; /* the app's own settings (borrowed) */
  long long changes_seen, changes_applied, changes_rejected, changes_other;
  char pending[2048]; /* the current change line, printed after the poll */
  bool pending_applied;
  bool any_event;      /* an agent event was served already */
  int64_t initial_gen; /* generation the first handle was built from */
} ex_events_t;

/* --verbose for the log callback, which has no opaque. */
extern bool ex_verbose_logs;

const char *ex_source_text(dynconf_source_t s);
/* The application's own value of key, for "NULL = the app's own";
 * returns buf. */
const char *ex_app_value(rd_kafka_conf_t *app_conf, const char *key,
                         char *buf, size_t n);
/* snprintf at the end of buf (silently truncated). */
void ex_appendf(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* dynconf change callback; opaque is the ex_events_t. Formats the event
 * into ev->pending (printing an earlier pending line first) and counts
 * it. */
void ex_on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque);
/* Prints a log line: warnings and errors always, the rest with
 * --verbose. */
void ex_log(const char *who, const dynconf_t *dc, int level, const char *fac,
            const char *msg);
/* After a poll: finishes and prints the pending change line with what the
 * poll did to the handle (`what`, e.g. "switched handle", then `took` ms
 * when a change was pending before the poll (`had`), then `after`), or
 * `none` when an applied change needed nothing. Without a pending line, a
 * handle change prints "[who id] <verbose_what>" with --verbose only. */
void ex_flush_pending(ex_events_t *ev, bool verbose, bool changed, bool had,
                      double took, const char *what, const char *after,
                      const char *none, const char *verbose_what);
/* Applies the -X flags to app_conf, sets ev up for `who` and builds the
 * agent (--config-bootstrap, --refresh-ms) with ex_on_change(ev) and
 * log_cb. Returns 0, or the exit status (2 bad settings, 1 dynconf_new
 * failed) after saying why. app_conf stays the caller's; *dcp is the
 * caller's on success. */
int ex_agent_new(rd_kafka_type_t type, const char *who, const ex_opts_t *o,
                 rd_kafka_conf_t *app_conf, dynconf_log_cb_t *log_cb,
                 ex_events_t *ev, dynconf_t **dcp);

/* ---- resource samples and the report ----------------------------------- */

typedef struct ex_sample {
  bool taken;
  long rss_kb;
  long long allocated; /* jemalloc stats.allocated, -1 without jemalloc */
  int fds, threads;
  char names[1024]; /* thread names, to explain a difference in count */
} ex_sample_t;

void ex_take_sample(ex_sample_t *s);
/* The start sample is due: warmup_ms after the first message, and not
 * within SETTLE_MS of a handle change (a new handle starts with a
 * bootstrap broker thread and connection that it retires once it has
 * learnt the cluster). */
bool ex_start_sample_due(const ex_sample_t *start, double first_ms,
                         int warmup_ms, double last_change_ms);

/* Opens PATH.tmp (name into tmp) for a report written atomically; NULL
 * after saying why. */
FILE *ex_report_open(const char *path, char *tmp, size_t tmp_size);
/* The change counters and the agent's generation, as report lines. */
void ex_report_changes(FILE *fp, const ex_events_t *ev, dynconf_t *dc);
/* Appends both samples, closes fp and renames tmp to path; 0, or -1
 * after saying why. */
int ex_report_close(FILE *fp, const char *tmp, const char *path,
                    const ex_sample_t *start, const ex_sample_t *end);

#endif
