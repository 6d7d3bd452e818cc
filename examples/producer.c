/* SPDX-License-Identifier: BSD-2-Clause */
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
#include "common.h"

#include <dynconf.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEQ_BITS 40 /* msg_opaque = partition << SEQ_BITS | sequence */

/* ---- state ------------------------------------------------------------- */

typedef struct app {
  /* options */
  ex_opts_t o;
  double rate;      /* messages/s, 0 = as fast as the queue takes them */
  int partitions;   /* 0 = ask the cluster */
  dynconf_switch_policy_t policy;
  char producer_id[128];

  rd_kafka_conf_t *app_conf; /* the app's own settings (owned) */
  dynconf_t *dc;             /* owned */
  dynconf_producer_t *p;     /* owned */
  ex_events_t ev;            /* change lines and counters */

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
  double first_dr_ms;
  double last_switch_ms; /* a new handle's threads settle after a switch */
  double switch_ms_max;  /* longest poll call that switched (wall time) */
  ex_sample_t start, end;
} app_t;

/* ---- agent logs -------------------------------------------------------- */

static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  ex_log("producer", dc, level, fac, msg);
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
              a->o.client_id, part, (long long)seq, rd_kafka_err2str(m->err));
    return;
  }
  a->delivered++;
  if (!a->first_dr_ms)
    a->first_dr_ms = ex_now_ms();
  if (part >= 0 && part < MAX_PARTITIONS) {
    if (seq <= a->last_dr_seq[part])
      a->dr_order_violations++;
    a->last_dr_seq[part] = seq;
  }
}

/* ---- the producer thread ------------------------------------------------ */

/* Produces the next message: the next sequence of partition sent % P.
 * Nothing was enqueued unless it returns 0. */
static rd_kafka_resp_err_t produce_next(app_t *a, long long sent) {
  int part = (int)(sent % a->partitions);
  int64_t seq = a->next_seq[part];
  char payload[192];
  int len = snprintf(payload, sizeof(payload), "%s %d %" PRId64,
                     a->producer_id, part, seq);
  void *op = (void *)(uintptr_t)(((uint64_t)part << SEQ_BITS) |
                                 (uint64_t)seq);
  double w0 = ex_now_ms();
  rd_kafka_resp_err_t err = dynconf_producer_produce(
      a->p, a->o.topic, part, payload, (size_t)len, NULL, 0, op);
  long long waited = (long long)((ex_now_ms() - w0) * 1000);
  if (waited > atomic_load(&a->max_wait_us))
    atomic_store(&a->max_wait_us, waited);
  if (!err) {
    a->next_seq[part]++;
    atomic_fetch_add(&a->produced, 1);
  }
  return err;
}

/* Counts a produce call that enqueued nothing; the same sequence is tried
 * again. True when the thread gives up (100 errors in a row). */
static bool produce_failed(app_t *a, rd_kafka_resp_err_t err,
                           int *consecutive_errors) {
  if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL ||
      err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
    atomic_fetch_add(&a->produce_retries, 1);
    return false;
  }
  atomic_fetch_add(&a->produce_errors, 1);
  if (++*consecutive_errors <= 3)
    fprintf(stderr, "[producer %s] produce failed: %s\n", a->o.client_id,
            rd_kafka_err2str(err));
  if (*consecutive_errors >= 100) {
    fprintf(stderr, "[producer %s] giving up after 100 errors\n",
            a->o.client_id);
    atomic_store(&a->stop_producing, true);
    return true;
  }
  return false;
}

/* Produces until *sent reaches due (or --count); true when a produce call
 * failed and the loop should back off a moment. */
static bool produce_due(app_t *a, double due, long long *sent,
                        int *consecutive_errors) {
  while (*sent < due && (!a->o.count || *sent < a->o.count) &&
         !atomic_load(&a->stop_producing)) {
    rd_kafka_resp_err_t err = produce_next(a, *sent);
    if (!err) {
      (*sent)++;
      *consecutive_errors = 0;
      continue;
    }
    return !produce_failed(a, err, consecutive_errors);
  }
  return false;
}

static void *produce_loop(void *arg) {
  app_t *a = arg;
  double t0 = ex_now_ms();
  long long sent = 0;
  int consecutive_errors = 0;
  while (!atomic_load(&a->stop_producing)) {
    double elapsed = ex_now_ms() - t0;
    if (a->o.duration > 0 && elapsed >= a->o.duration * 1000)
      break;
    if (a->o.count > 0 && sent >= a->o.count)
      break;
    double due = a->rate > 0 ? elapsed / 1000.0 * a->rate + 1 : sent + 1000;
    if (produce_due(a, due, &sent, &consecutive_errors)) {
      ex_sleep_ms(5);
    } else if (a->rate > 0) {
      double next = t0 + (double)sent / a->rate * 1000.0;
      double d = next - ex_now_ms();
      ex_sleep_ms(d > 10 ? 10 : d > 0.2 ? d : 0.2);
    }
  }
  atomic_store(&a->producing_done, true);
  /* Stay alive (idle) until main has taken its end sample, so both
   * samples see the same set of application threads. */
  while (!atomic_load(&a->thread_exit))
    ex_sleep_ms(5);
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

/* The producer's own flags (ex_flag_fn). */
static int own_flag(void *app, const char *f, const char *v) {
  app_t *a = app;
  double d;
  if (!strcmp(f, "--rate")) {
    if (ex_parse_num(f, v, 0, 1e7, &a->rate))
      return -1;
  } else if (!strcmp(f, "--partitions")) {
    if (ex_parse_num(f, v, 1, MAX_PARTITIONS, &d))
      return -1;
    a->partitions = (int)d;
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
    return 1;
  }
  return 0;
}

/* Asks the cluster how many partitions the topic has. */
static int topic_partitions(app_t *a) {
  const struct rd_kafka_metadata *md;
  rd_kafka_t *rk = dynconf_producer_handle(a->p);
  rd_kafka_topic_t *t = rd_kafka_topic_new(rk, a->o.topic, NULL);
  int n = -1;
  for (int attempt = 0; attempt < 10 && n < 0 && !ex_stop_requested;
       attempt++) {
    if (rd_kafka_metadata(rk, 0, t, &md, 2000))
      continue;
    if (md->topic_cnt == 1 && !md->topics[0].err &&
        md->topics[0].partition_cnt > 0)
      n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    if (n < 0)
      ex_sleep_ms(200);
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
  dynconf_poll(a->dc, 0); /* change callbacks: fills a->ev.pending */
  bool had = a->ev.pending[0] != '\0';
  int64_t sw0 = dynconf_producer_switches(a->p);
  double t0 = ex_now_ms();
  /* With a change pending, poll without waiting so the time measured is
   * the switch's (its own flush of the old handle included). */
  dynconf_producer_poll(a->p, had ? 0 : timeout_ms);
  double took = ex_now_ms() - t0;
  bool switched = dynconf_producer_switches(a->p) != sw0;
  if (switched) {
    a->last_switch_ms = ex_now_ms();
    if (had && took > a->switch_ms_max)
      a->switch_ms_max = took;
  }
  ex_flush_pending(&a->ev, a->o.verbose, switched, had, took,
                   "switched handle", "", "no switch needed",
                   "switched handle");
}

static int write_report(app_t *a, const char *path, const char *pstats,
                        double secs) {
  char tmp[4096];
  FILE *fp = ex_report_open(path, tmp, sizeof(tmp));
  if (!fp)
    return -1;
  fprintf(fp, "role=producer\nclient_id=%s\nproducer_id=%s\ntopic=%s\n"
              "partitions=%d\npolicy=%s\n",
          a->o.client_id, a->producer_id, a->o.topic, a->partitions,
          a->policy == DYNCONF_SWITCH_FAST ? "fast" : "ordered");
  fprintf(fp, "produced=%lld\ndelivered=%lld\nfailed=%lld\n"
              "dr_order_violations=%lld\nproduce_errors=%lld\n"
              "produce_retries=%lld\n",
          (long long)atomic_load(&a->produced), a->delivered, a->failed,
          a->dr_order_violations, (long long)atomic_load(&a->produce_errors),
          (long long)atomic_load(&a->produce_retries));
  for (int i = 0; i < a->partitions; i++)
    fprintf(fp, "produced.%d=%" PRId64 "\n", i, a->next_seq[i]);
  ex_report_changes(fp, &a->ev, a->dc);
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
  return ex_report_close(fp, tmp, path, &a->start, &a->end);
}

/* The application's own configuration, the agent and the managed
 * producer: 0, or the exit status after saying why not. */
static int start_producer(app_t *a) {
  char errstr[512];
  a->app_conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(a->app_conf, "bootstrap.servers", a->o.bootstrap,
                        errstr, sizeof(errstr)) ||
      rd_kafka_conf_set(a->app_conf, "client.id", a->o.client_id, errstr,
                        sizeof(errstr)) ||
      (a->o.debug && rd_kafka_conf_set(a->app_conf, "debug", a->o.debug,
                                       errstr, sizeof(errstr)))) {
    fprintf(stderr, "%s\n", errstr);
    rd_kafka_conf_destroy(a->app_conf);
    return 2;
  }
  rd_kafka_conf_set_dr_msg_cb(a->app_conf, on_delivery);
  rd_kafka_conf_set_opaque(a->app_conf, a);
  int rc = ex_agent_new(RD_KAFKA_PRODUCER, "producer", &a->o, a->app_conf,
                        on_log, &a->ev, &a->dc);
  if (rc) {
    rd_kafka_conf_destroy(a->app_conf);
    return rc;
  }
  a->p = dynconf_producer_new(a->dc, a->policy, errstr, sizeof(errstr));
  if (!a->p) {
    fprintf(stderr, "dynconf_producer_new: %s\n", errstr);
    dynconf_destroy(a->dc);
    rd_kafka_conf_destroy(a->app_conf);
    return 1;
  }
  a->ev.initial_gen = dynconf_generation(a->dc);
  return 0;
}

/* One line: where it produces, how fast, and acks with its source. */
static void announce(app_t *a) {
  char errstr[512];
  char eff[64] = "", rate[32] = "max";
  dynconf_source_t src = DYNCONF_SOURCE_APP;
  dynconf_effective_get(a->dc, "acks", eff, sizeof(eff), &src);
  if (a->rate > 0)
    snprintf(rate, sizeof(rate), "%.0f", a->rate);
  printf("[producer %s] producing to %s (%d partitions) at %s msg/s, acks=%s "
         "(%s), %s switch policy\n",
         a->o.client_id, a->o.topic, a->partitions, rate,
         eff[0] ? eff
                : ex_app_value(a->app_conf, "acks", errstr, sizeof(errstr)),
         ex_source_text(src),
         a->policy == DYNCONF_SWITCH_FAST ? "fast" : "ordered");
  fflush(stdout);
}

/* Runs the producer thread while this one polls, until it is done or a
 * signal came; then waits for every delivery report and takes the end
 * sample. *secs: the time it ran. 0, or 1 when the thread cannot start. */
static int run(app_t *a, double *secs) {
  double t_start = ex_now_ms();
  pthread_t thr;
  if (pthread_create(&thr, NULL, produce_loop, a)) {
    fprintf(stderr, "pthread_create failed\n");
    return 1;
  }
  while (!ex_stop_requested && !atomic_load(&a->producing_done)) {
    poll_once(a, 20);
    if (ex_start_sample_due(&a->start, a->first_dr_ms, a->o.warmup_ms,
                            a->last_switch_ms))
      ex_take_sample(&a->start);
  }
  atomic_store(&a->stop_producing, true);
  while (!atomic_load(&a->producing_done))
    poll_once(a, 5);

  /* Drain: every message gets its delivery report before the summary. */
  double flush_deadline = ex_now_ms() + 60000;
  while (ex_now_ms() < flush_deadline &&
         a->delivered + a->failed < atomic_load(&a->produced)) {
    poll_once(a, 0);
    dynconf_producer_flush(a->p, 200);
  }
  poll_once(a, 0);
  if (!a->start.taken) { /* no quiet moment after the warm-up */
    fprintf(stderr, "[producer %s] no start sample was taken (run shorter "
                    "than the warm-up, or switching all the time)\n",
            a->o.client_id);
    ex_take_sample(&a->start);
  }
  ex_take_sample(&a->end);
  *secs = (ex_now_ms() - t_start) / 1000.0;
  atomic_store(&a->thread_exit, true);
  pthread_join(thr, NULL);
  return 0;
}

/* Destroys the managed producer (what is left fails with delivery
 * reports, served before it returns), prints the summary and writes the
 * report when the run got as far as producing. The exit status. */
static int finish(app_t *a, int rc, double secs) {
  char *pstats = dynconf_producer_stats_json(a->p);
  long long paused_max = json_num(pstats, "switch_us_max");
  dynconf_producer_destroy(a->p);
  long long produced = atomic_load(&a->produced);
  if (a->partitions) {
    printf("[producer %s] done: produced %lld, delivered %lld, failed %lld; "
           "%lld change(s) seen, %lld applied, %lld rejected; %lld handle "
           "switch(es), longest %.1f ms (produce paused at most %.1f ms); "
           "longest produce call %.1f ms\n",
           a->o.client_id, produced, a->delivered, a->failed,
           a->ev.changes_seen, a->ev.changes_applied, a->ev.changes_rejected,
           json_num(pstats, "switches"),
           a->switch_ms_max, paused_max > 0 ? (double)paused_max / 1000.0 : 0.0,
           (double)atomic_load(&a->max_wait_us) / 1000.0);
    if (a->o.report && write_report(a, a->o.report, pstats, secs))
      rc = 1;
  }
  free(pstats);
  if (a->failed || a->delivered != produced)
    rc = 1;
  dynconf_destroy(a->dc);
  rd_kafka_conf_destroy(a->app_conf);
  return rc;
}

int main(int argc, char **argv) {
  static app_t a; /* large (sequence tables); zeroed */
  a.o.topic = "orders";
  a.o.client_id = "example-producer";
  a.rate = 100;
  a.o.refresh_ms = 1000;
  a.o.warmup_ms = 2000;
  a.policy = DYNCONF_SWITCH_ORDERED;
  for (int i = 0; i < MAX_PARTITIONS; i++)
    a.last_dr_seq[i] = -1;
  setvbuf(stdout, NULL, _IOLBF, 0); /* one line per event, even in pipes */
  if (ex_parse_args(&a.o, argc, argv, usage, own_flag, &a)) {
    usage(stderr, argv[0]);
    return 2;
  }
  ex_verbose_logs = a.o.verbose;
  snprintf(a.producer_id, sizeof(a.producer_id), "%s.%ld", a.o.client_id,
           (long)getpid());
  int rc = start_producer(&a);
  if (rc)
    return rc;
  ex_catch_signals();

  double secs = 0;
  if (!a.partitions)
    a.partitions = topic_partitions(&a);
  if (a.partitions < 1) {
    fprintf(stderr, "[producer %s] cannot learn the partitions of %s\n",
            a.o.client_id, a.o.topic);
    a.partitions = 0;
    rc = 1;
  } else {
    announce(&a);
    rc = run(&a, &secs);
  }
  return finish(&a, rc, secs);
}
