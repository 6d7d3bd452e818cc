/*
 * producer: an example application on dynconf's managed producer.
 *
 * A producer thread sends messages at a steady rate to explicit partitions;
 * each payload carries (producer id, partition, per-partition sequence
 * number) so the example consumer can check that nothing was lost or
 * reordered. The main thread polls: it serves delivery reports and the
 * agent's change events, and the managed producer switches librdkafka
 * handles there when an operator changes acks with dynconf-configs.
 * Every change prints one line; at exit a summary (and, with --report, the
 * same as key=value lines in a file).
 *
 *   producer --bootstrap HOST:PORT --config-bootstrap HOST:PORT \
 *            --topic orders --client-id orders-p --rate 200 --duration 30
 */
#include "config.h"

#include <dynconf.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_JEMALLOC
/* From jemalloc (linked into this program, so it is the process's malloc). */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
            size_t newlen);
#endif

#define MAX_PARTITIONS 1024
#define SEQ_BITS 40
#define SETTLE_MS 1500 /* quiet time after a switch before sampling */ /* msg_opaque = partition << SEQ_BITS | sequence */

/* ---- resource samples (same code in consumer.c) ------------------------ */

typedef struct sample {
  bool taken;
  long rss_kb;
  long long allocated; /* jemalloc stats.allocated, -1 without jemalloc */
  int fds, threads;
  char names[1024]; /* thread names, to explain a difference in count */
} sample_t;

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

static void take_sample(sample_t *s) {
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

static void report_sample(FILE *fp, const char *when, const sample_t *s) {
  fprintf(fp,
          "rss_kb_%s=%ld\nallocated_%s=%lld\nfds_%s=%d\nthreads_%s=%d\n"
          "thread_names_%s=%s\n",
          when, s->rss_kb, when, s->allocated, when, s->fds, when, s->threads,
          when, s->names);
}

/* ---- state ------------------------------------------------------------- */

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms) {
  if (ms <= 0)
    return;
  struct timespec ts = {(time_t)(ms / 1000),
                        (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
  nanosleep(&ts, NULL);
}

typedef struct app {
  /* options */
  const char *bootstrap, *config_bootstrap, *topic, *client_id, *report;
  const char *debug; /* librdkafka debug contexts */
  double rate;      /* messages/s, 0 = as fast as the queue takes them */
  long long count;  /* 0 = no limit */
  double duration;  /* seconds, 0 = no limit */
  int partitions;   /* 0 = ask the cluster */
  dynconf_switch_policy_t policy;
  int refresh_ms, warmup_ms;
  bool verbose;
  const char *xprops[64]; /* -X key=value, applied in order (borrowed) */
  int nx;
  char producer_id[128];

  rd_kafka_conf_t *app_conf; /* the app's own settings (owned) */
  dynconf_t *dc;             /* owned */
  dynconf_producer_t *p;     /* owned */

  /* producer thread: sequences; produced counts are atomics for main */
  int64_t next_seq[MAX_PARTITIONS];
  atomic_llong produced;
  atomic_llong produce_errors, produce_retries;
  atomic_llong max_wait_us;
  atomic_bool producing_done, stop_producing, thread_exit;

  /* main thread only */
  long long delivered, failed;
  long long dr_order_violations;
  int64_t last_dr_seq[MAX_PARTITIONS];
  long long changes_seen, changes_applied, changes_rejected, changes_other;
  char pending[2048]; /* the current change line, printed after the poll */
  bool pending_applied;
  bool any_event;      /* an agent event was served already */
  int64_t initial_gen; /* generation the first handle was built from */
  double first_dr_ms;
  double last_switch_ms; /* a new handle's threads settle after a switch */
  double switch_ms_max;  /* longest poll call that switched (wall time) */
  sample_t start, end;
} app_t;

/* ---- change events: one readable line each ------------------------------ */

static const char *source_text(dynconf_source_t s) {
  switch (s) {
  case DYNCONF_SOURCE_CLIENT:
    return "client override";
  case DYNCONF_SOURCE_DEFAULT:
    return "<default> entity";
  default:
    return "the app's own";
  }
}

/* The application's own value of key, for "NULL = the app's own". */
static const char *app_value(app_t *a, const char *key, char *buf, size_t n) {
  size_t sz = n;
  if (rd_kafka_conf_get(a->app_conf, key, buf, &sz) == RD_KAFKA_CONF_OK)
    return buf;
  /* Topic-level (acks): librdkafka's default unless the app set it. */
  rd_kafka_topic_conf_t *tc = rd_kafka_topic_conf_new();
  sz = n;
  if (rd_kafka_topic_conf_get(tc, key, buf, &sz) != RD_KAFKA_CONF_OK)
    snprintf(buf, n, "app default");
  rd_kafka_topic_conf_destroy(tc);
  return buf;
}

static void appendf(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t n, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= n)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
}

/* Formats a change event the way an operator wants to read it. Shared
 * with consumer.c (same code). */
static void format_change(app_t *a, const char *who, const dynconf_event_t *ev,
                          char *line, size_t n, bool *applied) {
  snprintf(line, n, "[%s %s]", who, a->client_id);
  *applied = false;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE) {
    appendf(line, n, " %s: %s (keeping the last good configuration)",
            dynconf_event_type(ev) == DYNCONF_EVENT_UNSUPPORTED
                ? "config server has no client configs"
                : "config fetch failed",
            dynconf_event_error_string(ev));
    return;
  }
  size_t cnt = dynconf_event_entry_count(ev);
  char vbuf[256];
  if (!dynconf_event_accepted(ev)) {
    appendf(line, n, " rejected");
    for (size_t i = 0; i < cnt; i++) {
      const char *v = dynconf_event_new_value(ev, i);
      appendf(line, n, "%s %s=%s", i ? "," : "", dynconf_event_key(ev, i),
              v ? v : "(unset)");
    }
    /* The culprit's reason; the others only say "change set rejected". */
    const char *why = NULL;
    for (size_t i = 0; i < cnt && !why; i++) {
      const char *r = dynconf_event_reason(ev, i);
      if (r && strncmp(r, "change set rejected", 19))
        why = r;
    }
    if (!why && cnt)
      why = dynconf_event_reason(ev, 0);
    appendf(line, n, ": %s", why ? why : "refused");
    return;
  }
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
          ov = app_value(a, k, obuf, sizeof(obuf));
        if (!nv)
          nv = app_value(a, k, vbuf, sizeof(vbuf));
        if (strcmp(ov, nv))
          appendf(line, n, "%sapplied %s: %s -> %s (%s)", sep, k, ov, nv,
                  source_text(dynconf_event_source(ev, i)));
        else /* same value, now from elsewhere */
          appendf(line, n, "%sapplied %s: stays %s (now from %s)", sep, k,
                  nv, source_text(dynconf_event_source(ev, i)));
        *applied = true;
      } else if (pass == 1 && o == DYNCONF_OUTCOME_PINNED) {
        appendf(line, n, "%spinned %s: %s", sep, k, r ? r : "");
      } else if (pass == 2 && o == DYNCONF_OUTCOME_IGNORED) {
        appendf(line, n, "%signored %s=%s (%s)", sep, k, nv ? nv : "(unset)",
                r ? r : "not applied");
      } else {
        continue;
      }
      sep = "; ";
    }
  }
  if (!cnt)
    appendf(line, n, " configuration unchanged");
}

static void on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  app_t *a = opaque;
  bool applied, first = !a->any_event;
  a->any_event = true;
  if (first && dynconf_event_type(ev) == DYNCONF_EVENT_CHANGE &&
      dynconf_event_accepted(ev) &&
      dynconf_event_generation(ev) <= a->initial_gen)
    return; /* dynconf_new()'s first fetch: the handle was built with it
               and the start line shows the values; not a change */
  if (a->pending[0]) { /* two events in one poll: print the first now */
    printf("%s\n", a->pending);
    a->pending[0] = '\0';
  }
  format_change(a, "producer", ev, a->pending, sizeof(a->pending), &applied);
  if (dynconf_event_type(ev) == DYNCONF_EVENT_CHANGE) {
    a->changes_seen++;
    if (!dynconf_event_accepted(ev))
      a->changes_rejected++;
    else if (applied)
      a->changes_applied++;
    else
      a->changes_other++;
  }
  a->pending_applied = applied;
}

/* --verbose: the log callback has no opaque, so this is a global. */
static bool verbose_logs;

static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  /* Warnings and errors always; the rest only with --verbose (the switch
   * itself is reported on the change line). */
  static const char *lv[] = {"emerg", "alert", "crit", "error",
                             "warning", "notice", "info", "debug"};
  if (level <= 4 || verbose_logs)
    fprintf(stderr, "[producer %s] %s %s: %s\n", dynconf_client_id(dc),
            lv[level & 7], fac, msg);
}

/* ---- delivery reports (main thread, inside dynconf_producer_poll) ------- */

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque) {
  (void)rk;
  app_t *a = opaque;
  uint64_t o = (uint64_t)(uintptr_t)m->_private;
  int part = (int)(o >> SEQ_BITS);
  int64_t seq = (int64_t)(o & ((UINT64_C(1) << SEQ_BITS) - 1));
  if (m->err) {
    a->failed++;
    if (a->failed <= 10)
      fprintf(stderr, "[producer %s] delivery failed (partition %d seq %lld): %s\n",
              a->client_id, part, (long long)seq, rd_kafka_err2str(m->err));
    return;
  }
  a->delivered++;
  if (!a->first_dr_ms)
    a->first_dr_ms = now_ms();
  if (part >= 0 && part < MAX_PARTITIONS) {
    if (seq <= a->last_dr_seq[part])
      a->dr_order_violations++;
    a->last_dr_seq[part] = seq;
  }
}

/* ---- the producer thread ------------------------------------------------ */

static void *produce_loop(void *arg) {
  app_t *a = arg;
  double t0 = now_ms();
  long long sent = 0;
  int consecutive_errors = 0;
  while (!atomic_load(&a->stop_producing)) {
    double elapsed = now_ms() - t0;
    if (a->duration > 0 && elapsed >= a->duration * 1000)
      break;
    if (a->count > 0 && sent >= a->count)
      break;
    double due = a->rate > 0 ? elapsed / 1000.0 * a->rate + 1 : sent + 1000;
    bool backoff = false;
    while (sent < due && (!a->count || sent < a->count) &&
           !atomic_load(&a->stop_producing)) {
      int part = (int)(sent % a->partitions);
      int64_t seq = a->next_seq[part];
      char payload[192];
      int len = snprintf(payload, sizeof(payload), "%s %d %" PRId64,
                         a->producer_id, part, seq);
      void *op = (void *)(uintptr_t)(((uint64_t)part << SEQ_BITS) |
                                     (uint64_t)seq);
      double w0 = now_ms();
      rd_kafka_resp_err_t err = dynconf_producer_produce(
          a->p, a->topic, part, payload, (size_t)len, NULL, 0, op);
      long long waited = (long long)((now_ms() - w0) * 1000);
      if (waited > atomic_load(&a->max_wait_us))
        atomic_store(&a->max_wait_us, waited);
      if (!err) {
        a->next_seq[part]++;
        sent++;
        atomic_fetch_add(&a->produced, 1);
        consecutive_errors = 0;
        continue;
      }
      /* Nothing was enqueued: try the same sequence again. */
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL ||
          err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
        atomic_fetch_add(&a->produce_retries, 1);
      } else {
        atomic_fetch_add(&a->produce_errors, 1);
        if (++consecutive_errors <= 3)
          fprintf(stderr, "[producer %s] produce failed: %s\n", a->client_id,
                  rd_kafka_err2str(err));
        if (consecutive_errors >= 100) {
          fprintf(stderr, "[producer %s] giving up after 100 errors\n",
                  a->client_id);
          atomic_store(&a->stop_producing, true);
          break;
        }
      }
      backoff = true;
      break;
    }
    if (backoff) {
      sleep_ms(5);
    } else if (a->rate > 0) {
      double next = t0 + (double)sent / a->rate * 1000.0;
      double d = next - now_ms();
      sleep_ms(d > 10 ? 10 : d > 0.2 ? d : 0.2);
    }
  }
  atomic_store(&a->producing_done, true);
  /* Stay alive (idle) until main has taken its end sample, so both
   * samples see the same set of application threads. */
  while (!atomic_load(&a->thread_exit))
    sleep_ms(5);
  return NULL;
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *fp, const char *argv0) {
  fprintf(fp,
      "Usage: %s --bootstrap HOST:PORT [options]\n"
      "\n"
      "An example producer on dynconf's managed producer: sends numbered\n"
      "messages at a steady rate and applies the operator's changes (acks)\n"
      "by switching librdkafka handles without losing or reordering any.\n"
      "\n"
      "  --bootstrap HOST:PORT         Kafka brokers (data plane)\n"
      "  --config-bootstrap HOST:PORT  dynconfd (dynconf.bootstrap.servers);\n"
      "                                default: the Kafka brokers\n"
      "  --topic NAME                  topic (default orders)\n"
      "  --client-id ID                client.id = the dynconf entity\n"
      "                                (default example-producer)\n"
      "  --rate N                      messages per second (default 100;\n"
      "                                0 = as fast as possible)\n"
      "  --count N                     stop after N messages\n"
      "  --duration SECONDS            stop after SECONDS (default: until\n"
      "                                SIGINT/SIGTERM or --count)\n"
      "  --partitions P                spread over partitions 0..P-1\n"
      "                                (default: all of the topic's)\n"
      "  --policy ordered|fast         handle switch policy (default ordered:\n"
      "                                per-partition order kept)\n"
      "  --refresh-ms MS               dynconf.refresh.interval.ms (default 1000)\n"
      "  --warmup-ms MS                first resource sample MS after the\n"
      "                                first delivery (default 2000)\n"
      "  --report FILE                 write the summary as key=value lines\n"
      "  --debug CONTEXTS              librdkafka debug contexts (e.g. cgrp)\n"
      "  -X KEY=VALUE                  the app's own librdkafka property\n"
      "                                (repeatable), e.g. -X linger.ms=10\n"
      "  --verbose                     also print the agent's info logs\n"
      "  --help                        this text\n"
      "\n"
      "Each payload is \"PRODUCER-ID PARTITION SEQUENCE\"; the producer id is\n"
      "CLIENT-ID.PID. Exit status: 0 when every message was delivered.\n",
      argv0);
}

static int parse_num(const char *flag, const char *s, double min, double max,
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

static int parse_args(app_t *a, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
      usage(stdout, argv[0]);
      exit(0);
    }
    if (!strcmp(f, "--verbose")) {
      a->verbose = true;
      continue;
    }
    if (!strcmp(f, "-X") && i + 1 < argc) {
      if (a->nx == 64 || !strchr(argv[i + 1], '=')) {
        fprintf(stderr, "-X wants key=value (at most 64)\n");
        return -1;
      }
      a->xprops[a->nx++] = argv[++i];
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: unknown flag or missing value: %s\n", argv[0], f);
      return -1;
    }
    const char *v = argv[++i];
    double d;
    if (!strcmp(f, "--bootstrap"))
      a->bootstrap = v;
    else if (!strcmp(f, "--config-bootstrap"))
      a->config_bootstrap = v;
    else if (!strcmp(f, "--topic"))
      a->topic = v;
    else if (!strcmp(f, "--client-id"))
      a->client_id = v;
    else if (!strcmp(f, "--report"))
      a->report = v;
    else if (!strcmp(f, "--debug"))
      a->debug = v;
    else if (!strcmp(f, "--rate")) {
      if (parse_num(f, v, 0, 1e7, &a->rate))
        return -1;
    } else if (!strcmp(f, "--count")) {
      if (parse_num(f, v, 1, 1e15, &d))
        return -1;
      a->count = (long long)d;
    } else if (!strcmp(f, "--duration")) {
      if (parse_num(f, v, 0.001, 1e7, &a->duration))
        return -1;
    } else if (!strcmp(f, "--partitions")) {
      if (parse_num(f, v, 1, MAX_PARTITIONS, &d))
        return -1;
      a->partitions = (int)d;
    } else if (!strcmp(f, "--refresh-ms")) {
      if (parse_num(f, v, 1, 86400000, &d))
        return -1;
      a->refresh_ms = (int)d;
    } else if (!strcmp(f, "--warmup-ms")) {
      if (parse_num(f, v, 0, 3600000, &d))
        return -1;
      a->warmup_ms = (int)d;
    } else if (!strcmp(f, "--policy")) {
      if (!strcmp(v, "ordered"))
        a->policy = DYNCONF_SWITCH_ORDERED;
      else if (!strcmp(v, "fast"))
        a->policy = DYNCONF_SWITCH_FAST;
      else {
        fprintf(stderr, "--policy: ordered or fast, not '%s'\n", v);
        return -1;
      }
    } else {
      fprintf(stderr, "%s: unknown flag %s\n", argv[0], f);
      return -1;
    }
  }
  if (!a->bootstrap) {
    fprintf(stderr, "%s: --bootstrap is required\n", argv[0]);
    return -1;
  }
  return 0;
}

/* Asks the cluster how many partitions the topic has. */
static int topic_partitions(app_t *a) {
  const struct rd_kafka_metadata *md;
  rd_kafka_t *rk = dynconf_producer_handle(a->p);
  rd_kafka_topic_t *t = rd_kafka_topic_new(rk, a->topic, NULL);
  int n = -1;
  for (int attempt = 0; attempt < 10 && n < 0 && !stop_requested; attempt++) {
    if (rd_kafka_metadata(rk, 0, t, &md, 2000))
      continue;
    if (md->topic_cnt == 1 && !md->topics[0].err &&
        md->topics[0].partition_cnt > 0)
      n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    if (n < 0)
      sleep_ms(200);
  }
  rd_kafka_topic_destroy(t);
  return n;
}

/* Pulls `"key":NUMBER` out of a stats JSON document; -1 if absent. */
static long long json_num(const char *json, const char *key) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = json ? strstr(json, pat) : NULL;
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Serves events and delivery reports once; prints a pending change line
 * with the time the handle switch took when one happened in this call:
 * building and warming the new handle, draining the old one (ordered
 * policy; produce calls wait only for this part) and handing over. */
static void poll_once(app_t *a, int timeout_ms) {
  dynconf_poll(a->dc, 0); /* change callbacks: fills a->pending */
  bool had = a->pending[0] != '\0';
  int64_t sw0 = dynconf_producer_switches(a->p);
  double t0 = now_ms();
  /* With a change pending, poll without waiting so the time measured is
   * the switch's (its own flush of the old handle included). */
  dynconf_producer_poll(a->p, had ? 0 : timeout_ms);
  double took = now_ms() - t0;
  bool switched = dynconf_producer_switches(a->p) != sw0;
  if (switched) {
    a->last_switch_ms = now_ms();
    if (had && took > a->switch_ms_max)
      a->switch_ms_max = took;
  }
  if (!a->pending[0]) {
    if (switched && a->verbose)
      printf("[producer %s] switched handle\n", a->client_id);
    return;
  }
  if (switched && had)
    appendf(a->pending, sizeof(a->pending), "; switched handle in %.1f ms",
            took);
  else if (switched)
    appendf(a->pending, sizeof(a->pending), "; switched handle");
  else if (a->pending_applied)
    appendf(a->pending, sizeof(a->pending), "; no switch needed");
  printf("%s\n", a->pending);
  fflush(stdout);
  a->pending[0] = '\0';
}

static int write_report(app_t *a, const char *path, const char *pstats,
                        double secs) {
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  if (!fp) {
    fprintf(stderr, "cannot write %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  fprintf(fp, "role=producer\nclient_id=%s\nproducer_id=%s\ntopic=%s\n"
              "partitions=%d\npolicy=%s\n",
          a->client_id, a->producer_id, a->topic, a->partitions,
          a->policy == DYNCONF_SWITCH_FAST ? "fast" : "ordered");
  fprintf(fp, "produced=%lld\ndelivered=%lld\nfailed=%lld\n"
              "dr_order_violations=%lld\nproduce_errors=%lld\n"
              "produce_retries=%lld\n",
          (long long)atomic_load(&a->produced), a->delivered, a->failed,
          a->dr_order_violations, (long long)atomic_load(&a->produce_errors),
          (long long)atomic_load(&a->produce_retries));
  for (int i = 0; i < a->partitions; i++)
    fprintf(fp, "produced.%d=%" PRId64 "\n", i, a->next_seq[i]);
  fprintf(fp, "changes_seen=%lld\nchanges_applied=%lld\nchanges_rejected=%lld\n"
              "changes_other=%lld\ngeneration=%lld\n",
          a->changes_seen, a->changes_applied, a->changes_rejected,
          a->changes_other, (long long)dynconf_generation(a->dc));
  /* paused_us_*: the managed producer's own figures (switch_us_* in its
   * statistics) for the time produce calls were held off per switch. */
  fprintf(fp, "switches=%lld\nswitch_failures=%lld\nswitch_ms_max=%.1f\n"
              "paused_us_avg=%lld\npaused_us_max=%lld\nblocked_calls=%lld\n"
              "blocked_us_max=%lld\ntimed_out_calls=%lld\n"
              "max_produce_wait_us=%lld\n",
          json_num(pstats, "switches"), json_num(pstats, "switch_failures"),
          a->switch_ms_max, json_num(pstats, "switch_us_avg"),
          json_num(pstats, "switch_us_max"),
          json_num(pstats, "blocked_calls"), json_num(pstats, "blocked_us_max"),
          json_num(pstats, "timed_out_calls"),
          (long long)atomic_load(&a->max_wait_us));
  fprintf(fp, "duration_s=%.1f\nrate_target=%.0f\n", secs, a->rate);
  report_sample(fp, "start", &a->start);
  report_sample(fp, "end", &a->end);
  if (fclose(fp) || rename(tmp, path)) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  static app_t a; /* large (sequence tables); zeroed */
  a.topic = "orders";
  a.client_id = "example-producer";
  a.rate = 100;
  a.refresh_ms = 1000;
  a.warmup_ms = 2000;
  a.policy = DYNCONF_SWITCH_ORDERED;
  for (int i = 0; i < MAX_PARTITIONS; i++)
    a.last_dr_seq[i] = -1;
  setvbuf(stdout, NULL, _IOLBF, 0); /* one line per event, even in pipes */
  if (parse_args(&a, argc, argv)) {
    usage(stderr, argv[0]);
    return 2;
  }
  if (a.verbose)
    verbose_logs = true;
  snprintf(a.producer_id, sizeof(a.producer_id), "%s.%ld", a.client_id,
           (long)getpid());

  char errstr[512];
  a.app_conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(a.app_conf, "bootstrap.servers", a.bootstrap, errstr,
                        sizeof(errstr)) ||
      rd_kafka_conf_set(a.app_conf, "client.id", a.client_id, errstr,
                        sizeof(errstr)) ||
      (a.debug && rd_kafka_conf_set(a.app_conf, "debug", a.debug, errstr,
                                    sizeof(errstr)))) {
    fprintf(stderr, "%s\n", errstr);
    rd_kafka_conf_destroy(a.app_conf);
    return 2;
  }
  rd_kafka_conf_set_dr_msg_cb(a.app_conf, on_delivery);
  rd_kafka_conf_set_opaque(a.app_conf, &a);
  for (int i = 0; i < a.nx; i++) {
    char kv[512];
    snprintf(kv, sizeof(kv), "%s", a.xprops[i]);
    char *eq = strchr(kv, '=');
    *eq = '\0';
    if (rd_kafka_conf_set(a.app_conf, kv, eq + 1, errstr, sizeof(errstr))) {
      fprintf(stderr, "-X %s: %s\n", a.xprops[i], errstr);
      rd_kafka_conf_destroy(a.app_conf);
      return 2;
    }
  }

  dynconf_conf_t *dconf = dynconf_conf_new();
  char refresh[32];
  snprintf(refresh, sizeof(refresh), "%d", a.refresh_ms);
  if ((a.config_bootstrap &&
       dynconf_conf_set(dconf, "dynconf.bootstrap.servers", a.config_bootstrap,
                        errstr, sizeof(errstr))) ||
      dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", refresh, errstr,
                       sizeof(errstr))) {
    fprintf(stderr, "%s\n", errstr);
    dynconf_conf_destroy(dconf);
    rd_kafka_conf_destroy(a.app_conf);
    return 2;
  }
  dynconf_conf_set_change_cb(dconf, on_change);
  dynconf_conf_set_log_cb(dconf, on_log);
  dynconf_conf_set_opaque(dconf, &a);
  a.dc = dynconf_new(RD_KAFKA_PRODUCER, a.app_conf, dconf, errstr,
                     sizeof(errstr));
  if (!a.dc) {
    fprintf(stderr, "dynconf_new: %s\n", errstr);
    dynconf_conf_destroy(dconf);
    rd_kafka_conf_destroy(a.app_conf);
    return 1;
  }
  a.p = dynconf_producer_new(a.dc, a.policy, errstr, sizeof(errstr));
  if (!a.p) {
    fprintf(stderr, "dynconf_producer_new: %s\n", errstr);
    dynconf_destroy(a.dc);
    rd_kafka_conf_destroy(a.app_conf);
    return 1;
  }
  a.initial_gen = dynconf_generation(a.dc);
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  int rc = 0;
  double secs = 0;
  if (!a.partitions) {
    a.partitions = topic_partitions(&a);
    if (a.partitions < 1) {
      fprintf(stderr, "[producer %s] cannot learn the partitions of %s\n",
              a.client_id, a.topic);
      a.partitions = 0;
      rc = 1;
      goto out;
    }
  }
  char eff[64] = "", rate[32] = "max";
  dynconf_source_t src = DYNCONF_SOURCE_APP;
  dynconf_effective_get(a.dc, "acks", eff, sizeof(eff), &src);
  if (a.rate > 0)
    snprintf(rate, sizeof(rate), "%.0f", a.rate);
  printf("[producer %s] producing to %s (%d partitions) at %s msg/s, acks=%s "
         "(%s), %s switch policy\n",
         a.client_id, a.topic, a.partitions, rate,
         eff[0] ? eff : app_value(&a, "acks", errstr, sizeof(errstr)),
         source_text(src),
         a.policy == DYNCONF_SWITCH_FAST ? "fast" : "ordered");
  fflush(stdout);

  double t_start = now_ms();
  pthread_t thr;
  if (pthread_create(&thr, NULL, produce_loop, &a)) {
    fprintf(stderr, "pthread_create failed\n");
    rc = 1;
    goto out;
  }
  while (!stop_requested && !atomic_load(&a.producing_done)) {
    poll_once(&a, 20);
    /* The first sample after the warm-up, and not within 1.5 s of a
     * switch: a new handle starts with a bootstrap broker thread and
     * connection that it retires once it has learnt the cluster. */
    if (!a.start.taken && a.first_dr_ms &&
        now_ms() - a.first_dr_ms >= a.warmup_ms &&
        now_ms() - a.last_switch_ms >= SETTLE_MS)
      take_sample(&a.start);
  }
  atomic_store(&a.stop_producing, true);
  while (!atomic_load(&a.producing_done))
    poll_once(&a, 5);

  /* Drain: every message gets its delivery report before the summary. */
  double flush_deadline = now_ms() + 60000;
  while (now_ms() < flush_deadline &&
         a.delivered + a.failed < atomic_load(&a.produced)) {
    poll_once(&a, 0);
    dynconf_producer_flush(a.p, 200);
  }
  poll_once(&a, 0);
  if (!a.start.taken) { /* no quiet moment after the warm-up */
    fprintf(stderr, "[producer %s] no start sample was taken (run shorter "
                    "than the warm-up, or switching all the time)\n",
            a.client_id);
    take_sample(&a.start);
  }
  take_sample(&a.end);
  secs = (now_ms() - t_start) / 1000.0;
  atomic_store(&a.thread_exit, true);
  pthread_join(thr, NULL);

out:;
  char *pstats = dynconf_producer_stats_json(a.p);
  long long paused_max = json_num(pstats, "switch_us_max");
  /* Fails what is left with delivery reports, served before it returns. */
  dynconf_producer_destroy(a.p);
  long long produced = atomic_load(&a.produced);
  if (a.partitions) {
    printf("[producer %s] done: produced %lld, delivered %lld, failed %lld; "
           "%lld change(s) seen, %lld applied, %lld rejected; %lld handle "
           "switch(es), longest %.1f ms (produce paused at most %.1f ms); "
           "longest produce call %.1f ms\n",
           a.client_id, produced, a.delivered, a.failed, a.changes_seen,
           a.changes_applied, a.changes_rejected, json_num(pstats, "switches"),
           a.switch_ms_max, paused_max > 0 ? (double)paused_max / 1000.0 : 0.0,
           (double)atomic_load(&a.max_wait_us) / 1000.0);
    if (a.report && write_report(&a, a.report, pstats, secs))
      rc = 1;
  }
  free(pstats);
  if (a.failed || a.delivered != produced)
    rc = 1;
  dynconf_destroy(a.dc);
  rd_kafka_conf_destroy(a.app_conf);
  return rc;
}
