/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the example producer and consumer share (see common.h).
 */
#include "config.h"

#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_JEMALLOC
/* From jemalloc (linked into this program, so it is the process's malloc). */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
            size_t newlen);
#endif

/* ---- time and signals -------------------------------------------------- */

double ex_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void ex_sleep_ms(double ms) {
  if (ms <= 0)
    return;
  struct timespec ts = {(time_t)(ms / 1000),
                        (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
  nanosleep(&ts, NULL);
}

volatile sig_atomic_t ex_stop_requested;

static void on_signal(int sig) {
  (void)sig;
  ex_stop_requested = 1;
}

void ex_catch_signals(void) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* ---- the flags both programs take -------------------------------------- */

int ex_parse_num(const char *flag, const char *s, double min, double max,
                 double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || v < min || v > max) {
    fprintf(stderr, "%s: invalid value '%s'\n", flag, s);
    return -1;
  }
  *out = v;
  return 0;
}

/* A common flag with its value: 0 taken, -1 bad (said), 1 not common. */
static int common_flag(ex_opts_t *o, const char *f, const char *v) {
  double d;
  if (!strcmp(f, "--bootstrap"))
    o->bootstrap = v;
  else if (!strcmp(f, "--config-bootstrap"))
    o->config_bootstrap = v;
  else if (!strcmp(f, "--topic"))
    o->topic = v;
  else if (!strcmp(f, "--client-id"))
    o->client_id = v;
  else if (!strcmp(f, "--report"))
    o->report = v;
  else if (!strcmp(f, "--debug"))
    o->debug = v;
  else if (!strcmp(f, "--count")) {
    if (ex_parse_num(f, v, 1, 1e15, &d))
      return -1;
    o->count = (long long)d;
  } else if (!strcmp(f, "--duration")) {
    if (ex_parse_num(f, v, 0.001, 1e7, &o->duration))
      return -1;
  } else if (!strcmp(f, "--refresh-ms")) {
    if (ex_parse_num(f, v, 1, 86400000, &d))
      return -1;
    o->refresh_ms = (int)d;
  } else if (!strcmp(f, "--warmup-ms")) {
    if (ex_parse_num(f, v, 0, 3600000, &d))
      return -1;
    o->warmup_ms = (int)d;
  } else {
    return 1;
  }
  return 0;
}

int ex_parse_args(ex_opts_t *o, int argc, char **argv,
                  void (*usage)(FILE *fp, const char *argv0), ex_flag_fn *own,
                  void *app) {
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
      usage(stdout, argv[0]);
      exit(0);
    }
    if (!strcmp(f, "--verbose")) {
      o->verbose = true;
      continue;
    }
    if (!strcmp(f, "-X") && i + 1 < argc) {
      if (o->nx == 64 || !strchr(argv[i + 1], '=')) {
        fprintf(stderr, "-X wants key=value (at most 64)\n");
        return -1;
      }
      o->xprops[o->nx++] = argv[++i];
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: unknown flag or missing value: %s\n", argv[0], f);
      return -1;
    }
    const char *v = argv[++i];
    int r = common_flag(o, f, v);
    if (r == 1)
      r = own(app, f, v);
    if (r == 1) {
      fprintf(stderr, "%s: unknown flag %s\n", argv[0], f);
      return -1;
    }
    if (r)
      return -1;
  }
  if (!o->bootstrap) {
    fprintf(stderr, "%s: --bootstrap is required\n", argv[0]);
    return -1;
  }
  return 0;
}

/* Applies the -X properties to conf; -1 after saying which failed. */
static int apply_xprops(rd_kafka_conf_t *conf, const ex_opts_t *o) {
  char errstr[512];
  for (int i = 0; i < o->nx; i++) {
    char kv[512];
    snprintf(kv, sizeof(kv), "%s", o->xprops[i]);
    char *eq = strchr(kv, '=');
    *eq = '\0';
    if (rd_kafka_conf_set(conf, kv, eq + 1, errstr, sizeof(errstr))) {
      fprintf(stderr, "-X %s: %s\n", o->xprops[i], errstr);
      return -1;
    }
  }
  return 0;
}

/* ---- change events: one readable line each ------------------------------ */

const char *ex_source_text(dynconf_source_t s) {
  switch (s) {
  case DYNCONF_SOURCE_CLIENT:
    return "client override";
  case DYNCONF_SOURCE_DEFAULT:
    return "<default> entity";
  case DYNCONF_SOURCE_USER:
    return "user override";
  case DYNCONF_SOURCE_USER_CLIENT:
    return "user + client override";
  case DYNCONF_SOURCE_FILE:
    return "certificate file";
  case DYNCONF_SOURCE_APP:
    return "the app's own";
  }
  return "the app's own";
}

const char *ex_app_value(rd_kafka_conf_t *app_conf, const char *key,
                         char *buf, size_t n) {
  size_t sz = n;
  if (rd_kafka_conf_get(app_conf, key, buf, &sz) == RD_KAFKA_CONF_OK)
    return buf;
  /* Topic-level (acks): librdkafka's default unless the app set it. */
  rd_kafka_topic_conf_t *tc = rd_kafka_topic_conf_new();
  sz = n;
  if (rd_kafka_topic_conf_get(tc, key, buf, &sz) != RD_KAFKA_CONF_OK)
    snprintf(buf, n, "app default");
  rd_kafka_topic_conf_destroy(tc);
  return buf;
}

void ex_appendf(char *buf, size_t n, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= n)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
}

/* A refused change set: every key it asked for, then the culprit's
 * reason (the others only say "change set rejected"). */
static void format_rejected(const dynconf_event_t *ev, char *line, size_t n) {
  size_t cnt = dynconf_event_entry_count(ev);
  ex_appendf(line, n, " rejected");
  for (size_t i = 0; i < cnt; i++) {
    const char *v = dynconf_event_new_value(ev, i);
    ex_appendf(line, n, "%s %s=%s", i ? "," : "", dynconf_event_key(ev, i),
               v ? v : "(unset)");
  }
  const char *why = NULL;
  for (size_t i = 0; i < cnt && !why; i++) {
    const char *r = dynconf_event_reason(ev, i);
    if (r && strncmp(r, "change set rejected", 19))
      why = r;
  }
  if (!why && cnt)
    why = dynconf_event_reason(ev, 0);
  ex_appendf(line, n, ": %s", why ? why : "refused");
}

/* An accepted change set: the keys applied (old -> new value, the app's
 * own where the agent has none), then those pinned, then those ignored.
 * True when a key was applied. */
static bool format_outcomes(const ex_events_t *e, const dynconf_event_t *ev,
                            char *line, size_t n) {
  size_t cnt = dynconf_event_entry_count(ev);
  char vbuf[256];
  bool applied = false;
  const char *sep = " ";
  for (int pass = 0; pass < 3; pass++) {
    for (size_t i = 0; i < cnt; i++) {
      dynconf_outcome_t o = dynconf_event_outcome(ev, i);
      const char *k = dynconf_event_key(ev, i);
      const char *ov = dynconf_event_old_value(ev, i);
      const char *nv = dynconf_event_new_value(ev, i);
      const char *r = dynconf_event_reason(ev, i);
      if (pass == 0 && o == DYNCONF_OUTCOME_APPLIED) {
        char obuf[128];
        if (!ov)
          ov = ex_app_value(e->app_conf, k, obuf, sizeof(obuf));
        if (!nv)
          nv = ex_app_value(e->app_conf, k, vbuf, sizeof(vbuf));
        if (strcmp(ov, nv))
          ex_appendf(line, n, "%sapplied %s: %s -> %s (%s)", sep, k, ov, nv,
                     ex_source_text(dynconf_event_source(ev, i)));
        else /* same value, now from elsewhere */
          ex_appendf(line, n, "%sapplied %s: stays %s (now from %s)", sep, k,
                     nv, ex_source_text(dynconf_event_source(ev, i)));
        applied = true;
      } else if (pass == 1 && o == DYNCONF_OUTCOME_PINNED) {
        ex_appendf(line, n, "%spinned %s: %s", sep, k, r ? r : "");
      } else if (pass == 2 && o == DYNCONF_OUTCOME_IGNORED) {
        ex_appendf(line, n, "%signored %s=%s (%s)", sep, k, nv ? nv : "(unset)",
                   r ? r : "not applied");
      } else {
        continue;
      }
      sep = "; ";
    }
  }
  if (!cnt)
    ex_appendf(line, n, " configuration unchanged");
  return applied;
}

/* Formats a change event the way an operator wants to read it. */
static void format_change(const ex_events_t *e, const dynconf_event_t *ev,
                          char *line, size_t n, bool *applied) {
  snprintf(line, n, "[%s %s]", e->who, e->client_id);
  *applied = false;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE) {
    ex_appendf(line, n, " %s: %s (keeping the last good configuration)",
               dynconf_event_type(ev) == DYNCONF_EVENT_UNSUPPORTED
                   ? "config server has no client configs"
                   : "config fetch failed",
               dynconf_event_error_string(ev));
    return;
  }
  if (!dynconf_event_accepted(ev))
    format_rejected(ev, line, n);
  else
    *applied = format_outcomes(e, ev, line, n);
}

void ex_on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  ex_events_t *e = opaque;
  bool applied, first = !e->any_event;
  e->any_event = true;
  if (first && dynconf_event_type(ev) == DYNCONF_EVENT_CHANGE &&
      dynconf_event_accepted(ev) &&
      dynconf_event_generation(ev) <= e->initial_gen)
    return; /* dynconf_new()'s first fetch: the handle was built with it
               and the start line shows the values; not a change */
  if (e->pending[0]) { /* two events in one poll: print the first now */
    printf("%s\n", e->pending);
    e->pending[0] = '\0';
  }
  format_change(e, ev, e->pending, sizeof(e->pending), &applied);
  if (dynconf_event_type(ev) == DYNCONF_EVENT_CHANGE) {
    e->changes_seen++;
    if (!dynconf_event_accepted(ev))
      e->changes_rejected++;
    else if (applied)
      e->changes_applied++;
    else
      e->changes_other++;
  }
  e->pending_applied = applied;
}

bool ex_verbose_logs;

void ex_log(const char *who, const dynconf_t *dc, int level, const char *fac,
            const char *msg) {
  /* Warnings and errors always; the rest only with --verbose (a handle
   * switch or rebuild itself is reported on the change line). */
  static const char *lv[] = {"emerg", "alert", "crit", "error",
                             "warning", "notice", "info", "debug"};
  if (level <= 4 || ex_verbose_logs)
    fprintf(stderr, "[%s %s] %s %s: %s\n", who, dynconf_client_id(dc),
            lv[level & 7], fac, msg);
}

void ex_flush_pending(ex_events_t *ev, bool verbose, bool changed, bool had,
                      double took, const char *what, const char *after,
                      const char *none, const char *verbose_what) {
  if (!ev->pending[0]) {
    if (changed && verbose)
      printf("[%s %s] %s\n", ev->who, ev->client_id, verbose_what);
    return;
  }
  if (changed && had)
    ex_appendf(ev->pending, sizeof(ev->pending), "; %s in %.1f ms%s", what,
               took, after);
  else if (changed)
    ex_appendf(ev->pending, sizeof(ev->pending), "; %s%s", what, after);
  else if (ev->pending_applied)
    ex_appendf(ev->pending, sizeof(ev->pending), "; %s", none);
  printf("%s\n", ev->pending);
  fflush(stdout);
  ev->pending[0] = '\0';
}

int ex_agent_new(rd_kafka_type_t type, const char *who, const ex_opts_t *o,
                 rd_kafka_conf_t *app_conf, dynconf_log_cb_t *log_cb,
                 ex_events_t *ev, dynconf_t **dcp) {
  if (apply_xprops(app_conf, o))
    return 2;
  *ev = (ex_events_t){
      .who = who, .client_id = o->client_id, .app_conf = app_conf};
  char errstr[512];
  dynconf_conf_t *dconf = dynconf_conf_new();
  char refresh[32];
  snprintf(refresh, sizeof(refresh), "%d", o->refresh_ms);
  if ((o->config_bootstrap &&
       dynconf_conf_set(dconf, "dynconf.bootstrap.servers", o->config_bootstrap,
                        errstr, sizeof(errstr))) ||
      dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", refresh, errstr,
                       sizeof(errstr))) {
    fprintf(stderr, "%s\n", errstr);
    dynconf_conf_destroy(dconf);
    return 2;
  }
  dynconf_conf_set_change_cb(dconf, ex_on_change);
  dynconf_conf_set_log_cb(dconf, log_cb);
  dynconf_conf_set_opaque(dconf, ev);
  /* dconf is the agent's on success, still ours on failure. */
  *dcp = dynconf_new(type, app_conf, dconf, errstr, sizeof(errstr));
  if (!*dcp) {
    fprintf(stderr, "dynconf_new: %s\n", errstr);
    dynconf_conf_destroy(dconf);
    return 1;
  }
  return 0;
}

/* ---- resource samples and the report ----------------------------------- */

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

void ex_take_sample(ex_sample_t *s) {
  s->taken = true;
  s->rss_kb = -1;
  FILE *fp = fopen("/proc/self/statm", "r");
  long size, resident;
  if (fp) {
    if (fscanf(fp, "%ld %ld", &size, &resident) == 2)
      s->rss_kb = resident * (sysconf(_SC_PAGESIZE) / 1024);
    fclose(fp);
  }
  s->allocated = -1;
#ifdef HAVE_JEMALLOC
  uint64_t epoch = 1; /* refreshes jemalloc's statistics */
  size_t sz = sizeof(epoch);
  mallctl("epoch", &epoch, &sz, &epoch, sz);
  size_t allocated;
  sz = sizeof(allocated);
  if (!mallctl("stats.allocated", &allocated, &sz, NULL, 0))
    s->allocated = (long long)allocated;
#endif
  int fds = count_entries("/proc/self/fd");
  s->fds = fds > 0 ? fds - 1 : fds; /* minus opendir's own descriptor */
  s->threads = count_entries("/proc/self/task");
  s->names[0] = '\0';
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[300], comm[64] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    FILE *cf = fopen(path, "r");
    if (cf && fgets(comm, sizeof(comm), cf)) {
      comm[strcspn(comm, "\n")] = '\0';
      size_t len = strlen(s->names);
      snprintf(s->names + len, sizeof(s->names) - len, "%s%s",
               len ? "," : "", comm);
    }
    if (cf)
      fclose(cf);
  }
  if (d)
    closedir(d);
}

static void report_sample(FILE *fp, const char *when, const ex_sample_t *s) {
  fprintf(fp,
          "rss_kb_%s=%ld\nallocated_%s=%lld\nfds_%s=%d\nthreads_%s=%d\n"
          "thread_names_%s=%s\n",
          when, s->rss_kb, when, s->allocated, when, s->fds, when, s->threads,
          when, s->names);
}

bool ex_start_sample_due(const ex_sample_t *start, double first_ms,
                         int warmup_ms, double last_change_ms) {
  return !start->taken && first_ms && ex_now_ms() - first_ms >= warmup_ms &&
         ex_now_ms() - last_change_ms >= SETTLE_MS;
}

FILE *ex_report_open(const char *path, char *tmp, size_t tmp_size) {
  snprintf(tmp, tmp_size, "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  if (!fp)
    fprintf(stderr, "cannot write %s: %s\n", tmp, strerror(errno));
  return fp;
}

void ex_report_changes(FILE *fp, const ex_events_t *ev, dynconf_t *dc) {
  fprintf(fp, "changes_seen=%lld\nchanges_applied=%lld\nchanges_rejected=%lld\n"
              "changes_other=%lld\ngeneration=%lld\n",
          ev->changes_seen, ev->changes_applied, ev->changes_rejected,
          ev->changes_other, (long long)dynconf_generation(dc));
}

int ex_report_close(FILE *fp, const char *tmp, const char *path,
                    const ex_sample_t *start, const ex_sample_t *end) {
  report_sample(fp, "start", start);
  report_sample(fp, "end", end);
  if (fclose(fp) || rename(tmp, path)) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}
