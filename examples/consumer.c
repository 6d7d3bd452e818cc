/*
 * consumer: an example application on dynconf's managed consumer.
 *
 * Consumes the example producer's numbered messages and records every one
 * (producer id, partition, sequence), so at exit it can say what arrived:
 * consumed, unique, duplicates, per-partition order violations among first
 * deliveries, and missing sequences (against the producer's --report file
 * when given with --expect, else against the highest sequence seen). When
 * an operator changes session.timeout.ms or heartbeat.interval.ms with
 * dynconf-configs, the managed consumer commits what was processed,
 * rebuilds its librdkafka handle and rejoins; every change prints one line.
 *
 *   consumer --bootstrap HOST:PORT --config-bootstrap HOST:PORT \
 *            --topic orders --group orders --client-id orders-c \
 *            --instance-id orders-c-1 --expect producer.report
 */
#include "config.h"

#include <dynconf.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
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
#define MAX_PRODUCERS 16
#define SETTLE_MS 1500 /* quiet time after a rebuild before sampling */

/* ---- resource samples (same code in producer.c) ------------------------ */

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

/* What arrived from one producer on one partition. */
typedef struct ptrack {
  uint8_t *bits;  /* bit s = sequence s seen (owned) */
  int64_t nbits;  /* capacity in bits */
  int64_t max_seq, max_first; /* highest seen; highest first delivery */
  long long unique, dups, order_violations;
} ptrack_t;

typedef struct producer_track {
  char id[128];
  ptrack_t *parts[MAX_PARTITIONS]; /* owned, NULL until seen */
} producer_track_t;

typedef struct app {
  /* options */
  const char *bootstrap, *config_bootstrap, *topic, *group, *client_id;
  const char *instance_id, *report, *expect, *debug;
  long long count;  /* stop after this many unique messages, 0 = no */
  double duration;  /* seconds, 0 = no limit */
  double catchup_s; /* after --expect appears */
  int refresh_ms, warmup_ms;
  bool verbose;
  const char *xprops[64]; /* -X key=value, applied in order (borrowed) */
  int nx;

  rd_kafka_conf_t *app_conf; /* the app's own settings (owned) */
  dynconf_t *dc;             /* owned */
  dynconf_consumer_t *c;     /* owned */

  producer_track_t *prod[MAX_PRODUCERS]; /* owned */
  int nprod;
  long long consumed, unique, corrupt, foreign, errors;
  /* --expect: the producer's report */
  bool expect_loaded;
  char expect_id[128];
  int expect_parts;
  int64_t expected[MAX_PARTITIONS];
  double expect_seen_ms;

  long long changes_seen, changes_applied, changes_rejected, changes_other;
  long long assignments, revocations;
  double rebuild_ms_max, resume_ms_max, rebuilt_at;
  char pending[2048];
  bool pending_applied;
  bool any_event;      /* an agent event was served already */
  int64_t initial_gen; /* generation the first handle was built from */
  double first_msg_ms;
  double last_rebuild_ms; /* a new handle's threads settle after a rebuild */
  sample_t start, end;
} app_t;

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
 * with producer.c (same code). */
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
  format_change(a, "consumer", ev, a->pending, sizeof(a->pending), &applied);
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

/* Rebuilds whose commit of processed offsets failed (the only way a
 * rebuild redelivers messages); counted from the managed consumer's
 * warning, as the log callback has no opaque. */
static long long rebuild_commit_failures;

/* --verbose: the log callback has no opaque, so this is a global. */
static bool verbose_logs;

static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  if (level <= 4 && !strcmp(fac, "CONSUMER") && strstr(msg, "committing"))
    rebuild_commit_failures++;
  static const char *lv[] = {"emerg", "alert", "crit", "error",
                             "warning", "notice", "info", "debug"};
  if (level <= 4 || verbose_logs)
    fprintf(stderr, "[consumer %s] %s %s: %s\n", dynconf_client_id(dc),
            lv[level & 7], fac, msg);
}

/* The application's own rebalance callback: the managed consumer keeps it
 * on every handle it builds, so a rebuild shows up here as a revoke and a
 * new assignment. */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts,
                         void *opaque) {
  app_t *a = opaque;
  bool coop = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
  rd_kafka_error_t *e = NULL;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    if (!a->assignments || a->verbose) {
      char list[512] = "";
      for (int i = 0; i < parts->cnt; i++)
        appendf(list, sizeof(list), "%s%d", i ? "," : "",
                parts->elems[i].partition);
      printf("[consumer %s] joined group %s: assigned %s [%s]\n",
             a->client_id, a->group, a->topic, list);
      fflush(stdout);
    }
    a->assignments++;
    if (coop)
      e = rd_kafka_incremental_assign(rk, parts);
    else
      rd_kafka_assign(rk, parts);
  } else {
    a->revocations++;
    if (coop)
      e = rd_kafka_incremental_unassign(rk, parts);
    else
      rd_kafka_assign(rk, NULL);
  }
  if (e)
    rd_kafka_error_destroy(e);
}

/* ---- the record of what arrived ----------------------------------------- */

static producer_track_t *find_producer(app_t *a, const char *id, bool add) {
  for (int i = 0; i < a->nprod; i++)
    if (!strcmp(a->prod[i]->id, id))
      return a->prod[i];
  if (!add || a->nprod == MAX_PRODUCERS)
    return NULL;
  producer_track_t *p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  snprintf(p->id, sizeof(p->id), "%s", id);
  a->prod[a->nprod++] = p;
  return p;
}

static size_t tracker_bytes(const app_t *a) {
  size_t n = 0;
  for (int i = 0; i < a->nprod; i++)
    for (int j = 0; j < MAX_PARTITIONS; j++)
      if (a->prod[i]->parts[j])
        n += sizeof(ptrack_t) + (size_t)(a->prod[i]->parts[j]->nbits / 8);
  return n;
}

/* Records one message; false when it could not be parsed. */
static bool record(app_t *a, const rd_kafka_message_t *m) {
  char id[128];
  int part;
  long long seq;
  char buf[256];
  size_t len = m->len < sizeof(buf) - 1 ? m->len : sizeof(buf) - 1;
  memcpy(buf, m->payload, len);
  buf[len] = '\0';
  if (sscanf(buf, "%127s %d %lld", id, &part, &seq) != 3 || seq < 0 ||
      part != m->partition || part < 0 || part >= MAX_PARTITIONS)
    return false;
  producer_track_t *p = find_producer(a, id, true);
  if (!p) {
    a->foreign++;
    return true;
  }
  ptrack_t *t = p->parts[part];
  if (!t) {
    if (!(t = p->parts[part] = calloc(1, sizeof(*t))))
      return false;
    t->max_seq = t->max_first = -1;
  }
  if (seq >= t->nbits) {
    int64_t nb = t->nbits ? t->nbits : 8192;
    while (nb <= seq)
      nb *= 2;
    uint8_t *nbuf = realloc(t->bits, (size_t)(nb / 8));
    if (!nbuf)
      return false;
    memset(nbuf + t->nbits / 8, 0, (size_t)((nb - t->nbits) / 8));
    t->bits = nbuf;
    t->nbits = nb;
  }
  uint8_t mask = (uint8_t)(1u << (seq % 8));
  if (t->bits[seq / 8] & mask) {
    t->dups++;
  } else {
    t->bits[seq / 8] |= mask;
    t->unique++;
    a->unique++;
    /* A first delivery below an earlier first delivery: the partition's
     * order was broken (a redelivery of an old message is a duplicate). */
    if (seq < t->max_first)
      t->order_violations++;
    else
      t->max_first = seq;
  }
  if (seq > t->max_seq)
    t->max_seq = seq;
  return true;
}

typedef struct totals {
  long long unique, dups, order_violations, missing;
} totals_t;

static void totals(const app_t *a, totals_t *t) {
  memset(t, 0, sizeof(*t));
  for (int i = 0; i < a->nprod; i++) {
    const producer_track_t *p = a->prod[i];
    bool expected = a->expect_loaded && !strcmp(p->id, a->expect_id);
    for (int j = 0; j < MAX_PARTITIONS; j++) {
      const ptrack_t *pt = p->parts[j];
      if (pt) {
        t->unique += pt->unique;
        t->dups += pt->dups;
        t->order_violations += pt->order_violations;
      }
      /* Missing: what the producer says it sent, or else every sequence
       * below the highest one seen. */
      int64_t want = expected ? (j < a->expect_parts ? a->expected[j] : 0)
                              : (pt ? pt->max_seq + 1 : 0);
      for (int64_t s = 0; s < want; s++)
        if (!pt || s >= pt->nbits || !(pt->bits[s / 8] & (1u << (s % 8))))
          t->missing++;
    }
  }
  if (a->expect_loaded && !find_producer((app_t *)a, a->expect_id, false))
    for (int j = 0; j < a->expect_parts; j++)
      t->missing += a->expected[j];
}

/* Loads the producer's report once it exists (it is written atomically). */
static void load_expect(app_t *a) {
  FILE *fp = fopen(a->expect, "r");
  if (!fp)
    return;
  char line[512];
  while (fgets(line, sizeof(line), fp)) {
    line[strcspn(line, "\n")] = '\0';
    int part;
    long long n;
    if (!strncmp(line, "producer_id=", 12))
      snprintf(a->expect_id, sizeof(a->expect_id), "%.127s", line + 12);
    else if (sscanf(line, "produced.%d=%lld", &part, &n) == 2 && part >= 0 &&
             part < MAX_PARTITIONS) {
      a->expected[part] = n;
      if (part + 1 > a->expect_parts)
        a->expect_parts = part + 1;
    }
  }
  fclose(fp);
  a->expect_loaded = a->expect_id[0] != '\0';
  a->expect_seen_ms = now_ms();
  if (a->expect_loaded)
    printf("[consumer %s] the producer has finished; catching up\n",
           a->client_id);
}

/* Every message the producer reported has arrived. */
static bool caught_up(app_t *a) {
  const producer_track_t *p = find_producer(a, a->expect_id, false);
  for (int j = 0; j < a->expect_parts; j++) {
    if (!a->expected[j])
      continue;
    const ptrack_t *pt = p ? p->parts[j] : NULL;
    if (!pt || pt->unique < a->expected[j])
      return false;
  }
  return true;
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *fp, const char *argv0) {
  fprintf(fp,
      "Usage: %s --bootstrap HOST:PORT [options]\n"
      "\n"
      "An example consumer on dynconf's managed consumer: consumes the example\n"
      "producer's numbered messages, applies the operator's changes\n"
      "(session.timeout.ms, heartbeat.interval.ms) by rebuilding its handle\n"
      "and rejoining, and checks at exit that nothing was lost.\n"
      "\n"
      "  --bootstrap HOST:PORT         Kafka brokers (data plane)\n"
      "  --config-bootstrap HOST:PORT  dynconfd (dynconf.bootstrap.servers);\n"
      "                                default: the Kafka brokers\n"
      "  --topic NAME                  topic (default orders)\n"
      "  --group ID                    group.id (default example-group)\n"
      "  --client-id ID                client.id = the dynconf entity\n"
      "                                (default example-consumer)\n"
      "  --instance-id ID              group.instance.id (static membership:\n"
      "                                on a real broker a rebuild causes no\n"
      "                                rebalance)\n"
      "  --count N                     stop after N distinct messages\n"
      "  --duration SECONDS            stop after SECONDS\n"
      "  --expect FILE                 the producer's --report file: once it\n"
      "                                exists, stop when every message it\n"
      "                                lists has arrived, and count missing\n"
      "                                ones against it\n"
      "  --catchup-timeout SECONDS     give up catching up after SECONDS\n"
      "                                (default 30)\n"
      "  --refresh-ms MS               dynconf.refresh.interval.ms (default 1000)\n"
      "  --warmup-ms MS                first resource sample MS after the\n"
      "                                first message (default 2000)\n"
      "  --report FILE                 write the summary as key=value lines\n"
      "  --debug CONTEXTS              librdkafka debug contexts (e.g. cgrp)\n"
      "  -X KEY=VALUE                  the app's own librdkafka property\n"
      "                                (repeatable), e.g. -X linger.ms=10\n"
      "  --verbose                     also print rebalances and agent logs\n"
      "  --help                        this text\n"
      "\n"
      "Runs until SIGINT/SIGTERM, --count, --duration or --expect. Exit\n"
      "status: 0 when nothing is missing and no order was broken.\n",
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
    else if (!strcmp(f, "--group"))
      a->group = v;
    else if (!strcmp(f, "--client-id"))
      a->client_id = v;
    else if (!strcmp(f, "--instance-id"))
      a->instance_id = v;
    else if (!strcmp(f, "--report"))
      a->report = v;
    else if (!strcmp(f, "--debug"))
      a->debug = v;
    else if (!strcmp(f, "--expect"))
      a->expect = v;
    else if (!strcmp(f, "--count")) {
      if (parse_num(f, v, 1, 1e15, &d))
        return -1;
      a->count = (long long)d;
    } else if (!strcmp(f, "--duration")) {
      if (parse_num(f, v, 0.001, 1e7, &a->duration))
        return -1;
    } else if (!strcmp(f, "--catchup-timeout")) {
      if (parse_num(f, v, 0, 1e7, &a->catchup_s))
        return -1;
    } else if (!strcmp(f, "--refresh-ms")) {
      if (parse_num(f, v, 1, 86400000, &d))
        return -1;
      a->refresh_ms = (int)d;
    } else if (!strcmp(f, "--warmup-ms")) {
      if (parse_num(f, v, 0, 3600000, &d))
        return -1;
      a->warmup_ms = (int)d;
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

/* Serves events and returns the next message (or NULL); prints a pending
 * change line with the time the rebuild took when one happened here. */
static rd_kafka_message_t *poll_once(app_t *a, int timeout_ms) {
  dynconf_poll(a->dc, 0); /* change callbacks: fills a->pending */
  bool had = a->pending[0] != '\0';
  int64_t r0 = dynconf_consumer_rebuilds(a->c);
  double t0 = now_ms();
  /* With a change pending, poll without waiting so the time measured is
   * the rebuild's: commit, close (the revoke), new handle, subscribe. */
  rd_kafka_message_t *m = dynconf_consumer_poll(a->c, had ? 0 : timeout_ms);
  double took = now_ms() - t0;
  bool rebuilt = dynconf_consumer_rebuilds(a->c) != r0;
  if (rebuilt) {
    a->rebuilt_at = a->last_rebuild_ms = now_ms();
    if (had && took > a->rebuild_ms_max)
      a->rebuild_ms_max = took;
  }
  if (!a->pending[0]) {
    if (rebuilt && a->verbose)
      printf("[consumer %s] rebuilt handle\n", a->client_id);
    return m;
  }
  if (rebuilt && had)
    appendf(a->pending, sizeof(a->pending),
            "; rebuilt consumer in %.1f ms, rejoining", took);
  else if (rebuilt)
    appendf(a->pending, sizeof(a->pending), "; rebuilt consumer, rejoining");
  else if (a->pending_applied)
    appendf(a->pending, sizeof(a->pending), "; no rebuild needed");
  printf("%s\n", a->pending);
  fflush(stdout);
  a->pending[0] = '\0';
  return m;
}

static int write_report(app_t *a, const char *path, const totals_t *t,
                        double secs, size_t tb_start, size_t tb_end) {
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  if (!fp) {
    fprintf(stderr, "cannot write %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  fprintf(fp, "role=consumer\nclient_id=%s\ngroup=%s\ninstance_id=%s\n"
              "topic=%s\n",
          a->client_id, a->group, a->instance_id ? a->instance_id : "",
          a->topic);
  fprintf(fp, "consumed=%lld\nunique=%lld\nduplicates=%lld\n"
              "order_violations=%lld\nmissing=%lld\nmissing_basis=%s\n"
              "corrupt=%lld\nforeign=%lld\nerrors=%lld\nproducers_seen=%d\n",
          a->consumed, t->unique, t->dups, t->order_violations, t->missing,
          a->expect_loaded ? "producer-report" : "highest-seen", a->corrupt,
          a->foreign, a->errors, a->nprod);
  fprintf(fp, "changes_seen=%lld\nchanges_applied=%lld\nchanges_rejected=%lld\n"
              "changes_other=%lld\ngeneration=%lld\nrebuilds=%lld\n"
              "rebuild_ms_max=%.1f\nresume_ms_max=%.1f\nassignments=%lld\n"
              "revocations=%lld\nrebuild_commit_failures=%lld\n",
          a->changes_seen, a->changes_applied, a->changes_rejected,
          a->changes_other, (long long)dynconf_generation(a->dc),
          (long long)dynconf_consumer_rebuilds(a->c), a->rebuild_ms_max,
          a->resume_ms_max, a->assignments, a->revocations,
          rebuild_commit_failures);
  fprintf(fp, "duration_s=%.1f\ntracker_bytes_start=%zu\ntracker_bytes_end=%zu\n",
          secs, tb_start, tb_end);
  report_sample(fp, "start", &a->start);
  report_sample(fp, "end", &a->end);
  if (fclose(fp) || rename(tmp, path)) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char errstr[512];
  if (rd_kafka_conf_set(c, k, v, errstr, sizeof(errstr)) == RD_KAFKA_CONF_OK)
    return 0;
  fprintf(stderr, "%s: %s\n", k, errstr);
  return -1;
}

int main(int argc, char **argv) {
  static app_t a; /* large (tables); zeroed */
  a.topic = "orders";
  a.group = "example-group";
  a.client_id = "example-consumer";
  a.refresh_ms = 1000;
  a.warmup_ms = 2000;
  a.catchup_s = 30;
  setvbuf(stdout, NULL, _IOLBF, 0); /* one line per event, even in pipes */
  if (parse_args(&a, argc, argv)) {
    usage(stderr, argv[0]);
    return 2;
  }
  if (a.verbose)
    verbose_logs = true;

  char errstr[512];
  a.app_conf = rd_kafka_conf_new();
  if (set(a.app_conf, "bootstrap.servers", a.bootstrap) ||
      set(a.app_conf, "client.id", a.client_id) ||
      set(a.app_conf, "group.id", a.group) ||
      set(a.app_conf, "auto.offset.reset", "earliest") ||
      (a.instance_id && set(a.app_conf, "group.instance.id", a.instance_id)) ||
      (a.debug && set(a.app_conf, "debug", a.debug))) {
    rd_kafka_conf_destroy(a.app_conf);
    return 2;
  }
  rd_kafka_conf_set_rebalance_cb(a.app_conf, on_rebalance);
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
  a.dc = dynconf_new(RD_KAFKA_CONSUMER, a.app_conf, dconf, errstr,
                     sizeof(errstr));
  if (!a.dc) {
    fprintf(stderr, "dynconf_new: %s\n", errstr);
    dynconf_conf_destroy(dconf);
    rd_kafka_conf_destroy(a.app_conf);
    return 1;
  }
  a.c = dynconf_consumer_new(a.dc, errstr, sizeof(errstr));
  if (!a.c) {
    fprintf(stderr, "dynconf_consumer_new: %s\n", errstr);
    dynconf_destroy(a.dc);
    rd_kafka_conf_destroy(a.app_conf);
    return 1;
  }
  a.initial_gen = dynconf_generation(a.dc);
  rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, a.topic, RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = dynconf_consumer_subscribe(a.c, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  int rc = 0;
  if (err) {
    fprintf(stderr, "subscribe: %s\n", rd_kafka_err2str(err));
    rc = 1;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  char st[32] = "", hb[32] = "";
  dynconf_source_t ss = DYNCONF_SOURCE_APP, hs = DYNCONF_SOURCE_APP;
  dynconf_effective_get(a.dc, "session.timeout.ms", st, sizeof(st), &ss);
  dynconf_effective_get(a.dc, "heartbeat.interval.ms", hb, sizeof(hb), &hs);
  printf("[consumer %s] consuming %s in group %s%s%s, session.timeout.ms=%s "
         "(%s), heartbeat.interval.ms=%s (%s)\n",
         a.client_id, a.topic, a.group,
         a.instance_id ? " as static member " : "",
         a.instance_id ? a.instance_id : "", st, source_text(ss), hb,
         source_text(hs));
  fflush(stdout);

  double t_start = now_ms(), last_expect_check = 0;
  size_t tb_start = 0;
  while (!rc && !stop_requested) {
    double now = now_ms();
    if (a.duration > 0 && now - t_start >= a.duration * 1000)
      break;
    if (a.expect && !a.expect_loaded && now - last_expect_check >= 250) {
      last_expect_check = now;
      load_expect(&a);
    }
    if (a.expect_loaded) {
      if (caught_up(&a))
        break;
      if (now - a.expect_seen_ms >= a.catchup_s * 1000) {
        printf("[consumer %s] gave up catching up after %.0f s\n",
               a.client_id, a.catchup_s);
        break;
      }
    }
    rd_kafka_message_t *m = poll_once(&a, 100);
    /* The first sample after the warm-up, and not within 1.5 s of a
     * rebuild: a new handle starts with a bootstrap broker thread and
     * connection that it retires once it has learnt the cluster. */
    if (!a.start.taken && a.first_msg_ms &&
        now_ms() - a.first_msg_ms >= a.warmup_ms &&
        now_ms() - a.last_rebuild_ms >= SETTLE_MS) {
      take_sample(&a.start);
      tb_start = tracker_bytes(&a);
    }
    if (!m)
      continue;
    if (m->err) {
      if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && ++a.errors <= 10)
        fprintf(stderr, "[consumer %s] %s\n", a.client_id,
                rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      continue;
    }
    a.consumed++;
    if (!a.first_msg_ms)
      a.first_msg_ms = now_ms();
    if (a.rebuilt_at) { /* first message after a rebuild */
      double r = now_ms() - a.rebuilt_at;
      if (r > a.resume_ms_max)
        a.resume_ms_max = r;
      a.rebuilt_at = 0;
      printf("[consumer %s] rejoined: consuming again %.1f s after the "
             "rebuild\n",
             a.client_id, r / 1000.0);
    }
    if (!record(&a, m))
      a.corrupt++;
    rd_kafka_message_destroy(m);
    if (a.count && a.unique >= a.count)
      break;
  }
  if (a.expect && !a.expect_loaded)
    load_expect(&a); /* stopped by a signal after the producer finished */
  poll_once(&a, 0); /* print a change served last */
  if (!a.start.taken) { /* no quiet moment after the warm-up */
    fprintf(stderr, "[consumer %s] no start sample was taken (run shorter "
                    "than the warm-up, or rebuilding all the time)\n",
            a.client_id);
    take_sample(&a.start);
    tb_start = tracker_bytes(&a);
  }
  take_sample(&a.end);
  size_t tb_end = tracker_bytes(&a);
  double secs = (now_ms() - t_start) / 1000.0;
  totals_t t;
  totals(&a, &t);
  printf("[consumer %s] done: consumed %lld (%lld unique, %lld duplicates), "
         "%lld missing, %lld order violations; %lld change(s) seen, %lld "
         "applied, %lld rejected; %lld rebuild(s), longest %.1f ms\n",
         a.client_id, a.consumed, t.unique, t.dups, t.missing,
         t.order_violations, a.changes_seen, a.changes_applied,
         a.changes_rejected, (long long)dynconf_consumer_rebuilds(a.c),
         a.rebuild_ms_max);
  if (a.report && write_report(&a, a.report, &t, secs, tb_start, tb_end))
    rc = 1;
  if (t.missing || t.order_violations || a.corrupt)
    rc = rc ? rc : 1;
  dynconf_consumer_close(a.c); /* commits, leaves (unless static) */
  dynconf_consumer_destroy(a.c);
  dynconf_destroy(a.dc);
  rd_kafka_conf_destroy(a.app_conf);
  for (int i = 0; i < a.nprod; i++) {
    for (int j = 0; j < MAX_PARTITIONS; j++) {
      if (a.prod[i]->parts[j])
        free(a.prod[i]->parts[j]->bits);
      free(a.prod[i]->parts[j]);
    }
    free(a.prod[i]);
  }
  return rc;
}
