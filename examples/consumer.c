/* SPDX-License-Identifier: BSD-2-Clause */
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
#include "common.h"

#include <dynconf.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PRODUCERS 16

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
  /* options; o.count: stop after this many unique messages */
  ex_opts_t o;
  const char *group, *instance_id, *expect;
  double catchup_s; /* after --expect appears */

  rd_kafka_conf_t *app_conf; /* the app's own settings (owned) */
  dynconf_t *dc;             /* owned */
  dynconf_consumer_t *c;     /* owned */
  ex_events_t ev;            /* change lines and counters */

  producer_track_t *prod[MAX_PRODUCERS]; /* owned */
  int nprod;
  long long consumed, unique, corrupt, foreign, errors;
  /* --expect: the producer's report */
  bool expect_loaded;
  char expect_id[128];
  int expect_parts;
  int64_t expected[MAX_PARTITIONS];
  double expect_seen_ms;

  long long assignments, revocations;
  double rebuild_ms_max, resume_ms_max, rebuilt_at;
  /* The consumption pause around a rebuild: from the last message before
   * it to the first after it (what a change costs the application). */
  double last_msg_ms, pause_ms_max;
  double first_msg_ms;
  double last_rebuild_ms; /* a new handle's threads settle after a rebuild */
  ex_sample_t start, end;
} app_t;

/* Rebuilds whose commit of processed offsets failed (the only way a
 * rebuild redelivers messages); counted from the managed consumer's
 * warning, as the log callback has no opaque. */
static long long rebuild_commit_failures;

static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  if (level <= 4 && !strcmp(fac, "CONSUMER") && strstr(msg, "committing"))
    rebuild_commit_failures++;
  ex_log("consumer", dc, level, fac, msg);
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
    if (!a->assignments || a->o.verbose) {
      char list[512] = "";
      for (int i = 0; i < parts->cnt; i++)
        ex_appendf(list, sizeof(list), "%s%d", i ? "," : "",
                   parts->elems[i].partition);
      printf("[consumer %s] joined group %s: assigned %s [%s]\n",
             a->o.client_id, a->group, a->o.topic, list);
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
  a->expect_seen_ms = ex_now_ms();
  if (a->expect_loaded)
    printf("[consumer %s] the producer has finished; catching up\n",
           a->o.client_id);
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

/* The consumer's own flags (ex_flag_fn). */
static int own_flag(void *app, const char *f, const char *v) {
  app_t *a = app;
  if (!strcmp(f, "--group"))
    a->group = v;
  else if (!strcmp(f, "--instance-id"))
    a->instance_id = v;
  else if (!strcmp(f, "--expect"))
    a->expect = v;
  else if (!strcmp(f, "--catchup-timeout")) {
    if (ex_parse_num(f, v, 0, 1e7, &a->catchup_s))
      return -1;
  } else {
    return 1;
  }
  return 0;
}

/* Serves events and returns the next message (or NULL); prints a pending
 * change line with the time the rebuild took when one happened here. */
static rd_kafka_message_t *poll_once(app_t *a, int timeout_ms) {
  dynconf_poll(a->dc, 0); /* change callbacks: fills a->ev.pending */
  bool had = a->ev.pending[0] != '\0';
  int64_t r0 = dynconf_consumer_rebuilds(a->c);
  double t0 = ex_now_ms();
  /* With a change pending, poll without waiting so the time measured is
   * the rebuild's: commit, close (the revoke), new handle, subscribe. */
  rd_kafka_message_t *m = dynconf_consumer_poll(a->c, had ? 0 : timeout_ms);
  double took = ex_now_ms() - t0;
  bool rebuilt = dynconf_consumer_rebuilds(a->c) != r0;
  if (rebuilt) {
    a->rebuilt_at = a->last_rebuild_ms = ex_now_ms();
    if (had && took > a->rebuild_ms_max)
      a->rebuild_ms_max = took;
  }
  ex_flush_pending(&a->ev, a->o.verbose, rebuilt, had, took,
                   "rebuilt consumer", ", rejoining", "no rebuild needed",
                   "rebuilt handle");
  return m;
}

static int write_report(app_t *a, const char *path, const totals_t *t,
                        double secs, size_t tb_start, size_t tb_end) {
  char tmp[4096];
  FILE *fp = ex_report_open(path, tmp, sizeof(tmp));
  if (!fp)
    return -1;
  fprintf(fp, "role=consumer\nclient_id=%s\ngroup=%s\ninstance_id=%s\n"
              "topic=%s\n",
          a->o.client_id, a->group, a->instance_id ? a->instance_id : "",
          a->o.topic);
  fprintf(fp, "consumed=%lld\nunique=%lld\nduplicates=%lld\n"
              "order_violations=%lld\nmissing=%lld\nmissing_basis=%s\n"
              "corrupt=%lld\nforeign=%lld\nerrors=%lld\nproducers_seen=%d\n",
          a->consumed, t->unique, t->dups, t->order_violations, t->missing,
          a->expect_loaded ? "producer-report" : "highest-seen", a->corrupt,
          a->foreign, a->errors, a->nprod);
  ex_report_changes(fp, &a->ev, a->dc);
  fprintf(fp, "rebuilds=%lld\n"
              "rebuild_ms_max=%.1f\nresume_ms_max=%.1f\nassignments=%lld\n"
              "revocations=%lld\nrebuild_commit_failures=%lld\n",
          (long long)dynconf_consumer_rebuilds(a->c), a->rebuild_ms_max,
          a->resume_ms_max, a->assignments, a->revocations,
          rebuild_commit_failures);
  fprintf(fp, "pause_ms_max=%.1f\n", a->pause_ms_max);
  fprintf(fp, "duration_s=%.1f\ntracker_bytes_start=%zu\ntracker_bytes_end=%zu\n",
          secs, tb_start, tb_end);
  return ex_report_close(fp, tmp, path, &a->start, &a->end);
}

static int set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char errstr[512];
  if (rd_kafka_conf_set(c, k, v, errstr, sizeof(errstr)) == RD_KAFKA_CONF_OK)
    return 0;
  fprintf(stderr, "%s: %s\n", k, errstr);
  return -1;
}

/* The application's own configuration, the agent and the managed
 * consumer: 0, or the exit status after saying why not. */
static int start_consumer(app_t *a) {
  a->app_conf = rd_kafka_conf_new();
  if (set(a->app_conf, "bootstrap.servers", a->o.bootstrap) ||
      set(a->app_conf, "client.id", a->o.client_id) ||
      set(a->app_conf, "group.id", a->group) ||
      set(a->app_conf, "auto.offset.reset", "earliest") ||
      (a->instance_id &&
       set(a->app_conf, "group.instance.id", a->instance_id)) ||
      (a->o.debug && set(a->app_conf, "debug", a->o.debug))) {
    rd_kafka_conf_destroy(a->app_conf);
    return 2;
  }
  rd_kafka_conf_set_rebalance_cb(a->app_conf, on_rebalance);
  rd_kafka_conf_set_opaque(a->app_conf, a);
  int rc = ex_agent_new(RD_KAFKA_CONSUMER, "consumer", &a->o, a->app_conf,
                        on_log, &a->ev, &a->dc);
  if (rc) {
    rd_kafka_conf_destroy(a->app_conf);
    return rc;
  }
  char errstr[512];
  a->c = dynconf_consumer_new(a->dc, errstr, sizeof(errstr));
  if (!a->c) {
    fprintf(stderr, "dynconf_consumer_new: %s\n", errstr);
    dynconf_destroy(a->dc);
    rd_kafka_conf_destroy(a->app_conf);
    return 1;
  }
  a->ev.initial_gen = dynconf_generation(a->dc);
  return 0;
}

/* Subscribes to the topic: 0, or 1 after saying why not. */
static int subscribe(app_t *a) {
  rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, a->o.topic, RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = dynconf_consumer_subscribe(a->c, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (err) {
    fprintf(stderr, "subscribe: %s\n", rd_kafka_err2str(err));
    return 1;
  }
  return 0;
}

/* One line: what it consumes, and the two settings an operator changes
 * with their sources. */
static void announce(app_t *a) {
  char st[32] = "", hb[32] = "";
  dynconf_source_t ss = DYNCONF_SOURCE_APP, hs = DYNCONF_SOURCE_APP;
  dynconf_effective_get(a->dc, "session.timeout.ms", st, sizeof(st), &ss);
  dynconf_effective_get(a->dc, "heartbeat.interval.ms", hb, sizeof(hb), &hs);
  printf("[consumer %s] consuming %s in group %s%s%s, session.timeout.ms=%s "
         "(%s), heartbeat.interval.ms=%s (%s)\n",
         a->o.client_id, a->o.topic, a->group,
         a->instance_id ? " as static member " : "",
         a->instance_id ? a->instance_id : "", st, ex_source_text(ss), hb,
         ex_source_text(hs));
  fflush(stdout);
}

/* Whether the run is over before the next poll: --duration passed, or
 * (--expect) every message the producer reported arrived or catching up
 * took too long. Loads the producer's report once it exists. */
static bool run_over(app_t *a, double t_start, double *last_expect_check) {
  double now = ex_now_ms();
  if (a->o.duration > 0 && now - t_start >= a->o.duration * 1000)
    return true;
  if (a->expect && !a->expect_loaded && now - *last_expect_check >= 250) {
    *last_expect_check = now;
    load_expect(a);
  }
  if (a->expect_loaded) {
    if (caught_up(a))
      return true;
    if (now - a->expect_seen_ms >= a->catchup_s * 1000) {
      printf("[consumer %s] gave up catching up after %.0f s\n",
             a->o.client_id, a->catchup_s);
      return true;
    }
  }
  return false;
}

/* The first message after a rebuild: how long consuming took to resume,
 * and how long it paused. */
static void note_resumed(app_t *a, double now_msg) {
  double r = ex_now_ms() - a->rebuilt_at;
  if (r > a->resume_ms_max)
    a->resume_ms_max = r;
  a->rebuilt_at = 0;
  printf("[consumer %s] rejoined: consuming again %.1f s after the "
         "rebuild\n",
         a->o.client_id, r / 1000.0);
  if (a->last_msg_ms) { /* a message came before the rebuild */
    double p = now_msg - a->last_msg_ms;
    if (p > a->pause_ms_max)
      a->pause_ms_max = p;
    printf("[consumer %s] consumption paused %.1f ms (from the last "
           "message before the rebuild to the first after it)\n",
           a->o.client_id, p);
  }
}

/* Records one message (or counts an error) and destroys it. False for
 * an error, which does not count towards --count. */
static bool consume_message(app_t *a, rd_kafka_message_t *m) {
  if (m->err) {
    if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && ++a->errors <= 10)
      fprintf(stderr, "[consumer %s] %s\n", a->o.client_id,
              rd_kafka_message_errstr(m));
    rd_kafka_message_destroy(m);
    return false;
  }
  a->consumed++;
  double now_msg = ex_now_ms();
  if (!a->first_msg_ms)
    a->first_msg_ms = now_msg;
  if (a->rebuilt_at) /* first message after a rebuild */
    note_resumed(a, now_msg);
  a->last_msg_ms = now_msg;
  if (!record(a, m))
    a->corrupt++;
  rd_kafka_message_destroy(m);
  return true;
}

/* Consumes until a signal, --count, --duration or --expect ends the run;
 * *tb_start: the tracker's size at the start sample. */
static void consume(app_t *a, double t_start, size_t *tb_start) {
  double last_expect_check = 0;
  while (!ex_stop_requested && !run_over(a, t_start, &last_expect_check)) {
    rd_kafka_message_t *m = poll_once(a, 100);
    if (ex_start_sample_due(&a->start, a->first_msg_ms, a->o.warmup_ms,
                            a->last_rebuild_ms)) {
      ex_take_sample(&a->start);
      *tb_start = tracker_bytes(a);
    }
    if (m && consume_message(a, m) && a->o.count && a->unique >= a->o.count)
      break;
  }
}

/* After the run: the producer's report if it came late, a change served
 * last, and the samples (the start one too if the run never had one). */
static void wind_down(app_t *a, size_t *tb_start, size_t *tb_end) {
  if (a->expect && !a->expect_loaded)
    load_expect(a); /* stopped by a signal after the producer finished */
  poll_once(a, 0); /* print a change served last */
  if (!a->start.taken) { /* no quiet moment after the warm-up */
    fprintf(stderr, "[consumer %s] no start sample was taken (run shorter "
                    "than the warm-up, or rebuilding all the time)\n",
            a->o.client_id);
    ex_take_sample(&a->start);
    *tb_start = tracker_bytes(a);
  }
  ex_take_sample(&a->end);
  *tb_end = tracker_bytes(a);
}

/* The summary line and the report; the exit status (rc, or 1 when a
 * message is missing, out of order or corrupt). */
static int summarize(app_t *a, int rc, double secs, size_t tb_start,
                     size_t tb_end) {
  totals_t t;
  totals(a, &t);
  printf("[consumer %s] done: consumed %lld (%lld unique, %lld duplicates), "
         "%lld missing, %lld order violations; %lld change(s) seen, %lld "
         "applied, %lld rejected; %lld rebuild(s), longest %.1f ms\n",
         a->o.client_id, a->consumed, t.unique, t.dups, t.missing,
         t.order_violations, a->ev.changes_seen, a->ev.changes_applied,
         a->ev.changes_rejected, (long long)dynconf_consumer_rebuilds(a->c),
         a->rebuild_ms_max);
  if (a->o.report && write_report(a, a->o.report, &t, secs, tb_start, tb_end))
    rc = 1;
  if (t.missing || t.order_violations || a->corrupt)
    rc = rc ? rc : 1;
  return rc;
}

/* Closes the consumer (it commits and, unless static, leaves the group)
 * and frees everything. */
static void close_app(app_t *a) {
  dynconf_consumer_close(a->c);
  dynconf_consumer_destroy(a->c);
  dynconf_destroy(a->dc);
  rd_kafka_conf_destroy(a->app_conf);
  for (int i = 0; i < a->nprod; i++) {
    for (int j = 0; j < MAX_PARTITIONS; j++) {
      if (a->prod[i]->parts[j])
        free(a->prod[i]->parts[j]->bits);
      free(a->prod[i]->parts[j]);
    }
    free(a->prod[i]);
  }
}

int main(int argc, char **argv) {
  static app_t a; /* large (tables); zeroed */
  a.o.topic = "orders";
  a.group = "example-group";
  a.o.client_id = "example-consumer";
  a.o.refresh_ms = 1000;
  a.o.warmup_ms = 2000;
  a.catchup_s = 30;
  setvbuf(stdout, NULL, _IOLBF, 0); /* one line per event, even in pipes */
  if (ex_parse_args(&a.o, argc, argv, usage, own_flag, &a)) {
    usage(stderr, argv[0]);
    return 2;
  }
  ex_verbose_logs = a.o.verbose;
  int rc = start_consumer(&a);
  if (rc)
    return rc;
  rc = subscribe(&a);
  ex_catch_signals();
  announce(&a);

  double t_start = ex_now_ms();
  size_t tb_start = 0, tb_end;
  if (!rc)
    consume(&a, t_start, &tb_start);
  wind_down(&a, &tb_start, &tb_end);
  rc = summarize(&a, rc, (ex_now_ms() - t_start) / 1000.0, tb_start, tb_end);
  close_app(&a);
  return rc;
}
