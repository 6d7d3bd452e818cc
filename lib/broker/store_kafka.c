/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Kafka-topic store (see store_kafka.h), with librdkafka: an
 * idempotent acks=all producer, and a consumer assigned the topic's only
 * partition from the cache's offset. The records' format is
 * store_record.c's.
 */
#include "broker/store_kafka_int.h"
#include "broker/store_record.h"
#include "codec/proto.h"
#include "broker/scope.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/kvfile.h"
#include "common/text.h"

#include <librdkafka/rdkafka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- configuration ----------------------------------------------------- */

/* Applies the key=value lines of path to conf. 0, or -1 with errstr. */
/* One librdkafka property of the store's config file (a dc_kvfile_cb_t;
 * opaque is the rd_kafka_conf_t). */
static int set_conf_prop(void *opaque, const char *key, const char *value,
                         int lineno, char *why, size_t why_size) {
  (void)lineno;
  return rd_kafka_conf_set(opaque, key, value, why, why_size) ==
                 RD_KAFKA_CONF_OK
             ? 0
             : -1;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque);

static void rk_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf) {
  (void)rk;
  if (level <= 4) /* warnings and worse; the rest is librdkafka's chatter */
    dc_log(DC_LOG_WARN, "kafka store: %s: %s", fac, buf);
}

/* The transactional producer's transaction.timeout.ms: bounds how long a
 * transaction a writer left open (it died mid-commit and nobody claimed
 * yet) holds back what read_committed readers see. At least the commit
 * timeout (librdkafka requires message.timeout.ms below it). */
static int txn_timeout_ms(int timeout_ms) {
  int t = timeout_ms < 5000 ? 10000 : 2 * timeout_ms;
  return t > 900000 ? 900000 : t;
}

/* The properties of a handle of type (txn_id: a transactional producer);
 * the properties file's come first, so these win. 0, or -1 with errstr. */
static int set_store_props(rd_kafka_conf_t *c, const dc_kafka_store_opts_t *o,
                           rd_kafka_type_t type, const char *txn_id,
                           char *errstr, size_t errstr_size) {
  char cid[64], gid[64], tmo[24], ttmo[24];
  snprintf(cid, sizeof(cid), "dynconfd-%d-store", (int)o->node_id);
  snprintf(tmo, sizeof(tmo), "%d", o->timeout_ms);
  snprintf(ttmo, sizeof(ttmo), "%d", txn_timeout_ms(o->timeout_ms));
  /* librdkafka wants a group.id to assign partitions; it is never
   * joined (no subscribe) and no offset is committed to it. */
  snprintf(gid, sizeof(gid), "dynconfd-%d-store-reader", (int)o->node_id);
  const char *const props[][2] = {
      {"bootstrap.servers", o->bootstrap},
      {"client.id", cid},
      /* producers */
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"linger.ms", "0"},
      {"message.timeout.ms", tmo},
      {"transactional.id", txn_id},
      {"transaction.timeout.ms", txn_id ? ttmo : NULL},
      /* the consumer: only committed records (a stale writer's never
       * commit), read from the offset the cache reached */
      {"enable.auto.commit", "false"},
      {"enable.partition.eof", "true"},
      {"auto.offset.reset", "error"},
      {"isolation.level", "read_committed"},
      {"group.id", gid},
  };
  bool p = type == RD_KAFKA_PRODUCER;
  for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
    bool mine = i < 2 || (p ? i < 8 : i >= 8);
    if (mine && props[i][1] &&
        rd_kafka_conf_set(c, props[i][0], props[i][1], errstr, errstr_size))
      return -1;
  }
  return 0;
}

/* A handle of type for the store. NULL with errstr. */
rd_kafka_t *dc_kstore_handle_new(const dc_kafka_store_opts_t *o,
                                 rd_kafka_type_t type, const char *txn_id,
                                 char *errstr, size_t errstr_size) {
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  /* A fetch that finds nothing new may wait this long on the broker; a
   * real Kafka broker answers as soon as a record arrives, librdkafka's
   * mock only at the end, so it bounds how long an alter waits to read its
   * own record back there. The properties file may change it. */
  if (type == RD_KAFKA_CONSUMER &&
      rd_kafka_conf_set(c, "fetch.wait.max.ms", "100", errstr, errstr_size))
    goto fail;
  /* A connection whose request goes unanswered (a silent partition) is
   * given up and made again after the store timeout, not librdkafka's
   * 60 s, and so is a connect that does not finish: once the network
   * heals, the store reads and writes again within about that long. */
  char tmo[24];
  snprintf(tmo, sizeof(tmo), "%d", o->timeout_ms);
  if (rd_kafka_conf_set(c, "socket.timeout.ms", tmo, errstr, errstr_size) ||
      rd_kafka_conf_set(c, "socket.connection.setup.timeout.ms", tmo, errstr,
                        errstr_size))
    goto fail;
  if (o->config_file && dc_kvfile_read(o->config_file, set_conf_prop, c, errstr, errstr_size))
    goto fail;
  if (set_store_props(c, o, type, txn_id, errstr, errstr_size))
    goto fail;
  rd_kafka_conf_set_log_cb(c, rk_log);
  if (type == RD_KAFKA_PRODUCER)
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
  rd_kafka_t *rk = rd_kafka_new(type, c, errstr, errstr_size);
  if (rk)
    return rk;
fail:
  rd_kafka_conf_destroy(c);
  return NULL;
}

/* ---- records (format in store_record.c) ------------------------------- */

/* A decimal header of m; def when absent or not a number. */
static int64_t header_int(const rd_kafka_message_t *m, const char *name,
                          int64_t def) {
  rd_kafka_headers_t *h = NULL;
  const void *v;
  size_t n;
  char buf[24];
  if (rd_kafka_message_headers(m, &h) ||
      rd_kafka_header_get_last(h, name, &v, &n) || !v || n == 0 ||
      n >= sizeof(buf))
    return def;
  memcpy(buf, v, n);
  buf[n] = '\0';
  char *end;
  long long x = strtoll(buf, &end, 10);
  return *end ? def : (int64_t)x;
}

/* Reads one consumed record into p. 0, or -1 with why (it is skipped). */
static int parse_record(const rd_kafka_message_t *m, dc_log_record_t *p, char *why,
                        size_t why_size) {
  int r = dc_log_record_parse(m->key, m->key_len, m->payload,
                              m->payload ? m->len : 0,
                              header_int(m, DC_LOG_HDR_EPOCH, 0),
                              (int32_t)header_int(m, DC_LOG_HDR_NODE, -1), p,
                              why, why_size);
  p->c.log_offset = m->offset;
  return r;
}

/* ---- applying the log -------------------------------------------------- */

/* What one pass over arriving records is doing. */
typedef struct applying {
  dc_log_record_t batch[APPLY_BATCH];
  size_t n;
  int64_t next;            /* offset after the last record seen */
  int64_t epoch;           /* the current claim as of that record */
  int32_t node;
  const int64_t *offsets;  /* the writer's own records, or NULL */
  size_t n_ours;
  size_t fenced_ours;      /* own records ignored: a newer claim came first */
  size_t ours_in_batch;    /* own records among batch[0..n) */
  size_t ours_flushed;     /* own records applied by this pass so far */
  bool stop_at_claim;      /* hold a newer claim back for the next poll */
  bool stopped;            /* ... and one was met */
  /* A pass that ran out of time keeps what it read (consumed, so never
   * read again) for the next pass to apply and tell. */
  bool carry;
  const notify_t *nt;
} applying_t;

/* The one pass at a time: a commit's read-back, a poll, a load. */
static applying_t pass;

static void applying_start(applying_t *a, const kafka_store_t *k,
                           const int64_t *offsets, size_t n_ours,
                           const notify_t *nt, bool stop_at_claim) {
  if (!a->carry) {
    a->n = 0;
    a->next = k->next_offset;
    a->epoch = k->epoch;
    a->node = k->epoch_node;
  }
  a->carry = false;
  a->ours_in_batch = 0;
  a->ours_flushed = 0;
  a->offsets = offsets;
  a->n_ours = n_ours;
  a->fenced_ours = 0;
  a->stop_at_claim = stop_at_claim;
  a->stopped = false;
  a->nt = nt;
}

/* Applies the pass so far to the cache with the offset and claim after it,
 * then tells the caller each change (only once it is durable here). */
static int flush_batch(kafka_store_t *k, applying_t *a, char *errstr,
                       size_t errstr_size) {
  static dc_store_commit_t c[APPLY_BATCH];
  if (a->n == 0 && a->next == k->next_offset && a->epoch == k->epoch)
    return 0; /* nothing new */
  for (size_t i = 0; i < a->n; i++)
    c[i] = a->batch[i].c;
  const dc_store_meta_t meta[] = {{OFFSET_META, a->next},
                                  {EPOCH_META, a->epoch},
                                  {EPOCH_NODE_META, a->node}};
  int r = dc_store_sqlite_commit_meta(k->cache, c, a->n, meta, 3, errstr,
                                      errstr_size);
  for (size_t i = 0; i < a->n; i++) {
    if (!r && a->nt && a->nt->cb)
      a->nt->cb(a->nt->opaque, c[i].resource_type, c[i].entity,
                c[i].n_configs, c[i].keys, c[i].values);
    dc_log_record_free(&a->batch[i]);
  }
  a->n = 0;
  a->ours_flushed += a->ours_in_batch;
  a->ours_in_batch = 0;
  if (!r) {
    k->next_offset = a->next;
    k->epoch = a->epoch;
    k->epoch_node = a->node;
  }
  return r;
}

/* A record stamped with this store's node and epoch that it did not write
 * (two servers with one node id): applied, but the server's memory does
 * not have it, so commits stop until a restart. */
static void foreign(kafka_store_t *k, int64_t offset, const char *why) {
  if (!k->stale[0])
    snprintf(k->stale, sizeof(k->stale), "the log holds a record at offset "
             "%lld this server did not write (%s); restart dynconfd to "
             "serve the topic's state, and run one dynconfd per topic",
             (long long)offset, why);
  dc_log(DC_LOG_ERR, "kafka store: %s", k->stale);
}

/* Is m one of ours (offsets[0..n))? */
static bool ours(const rd_kafka_message_t *m, const int64_t *offsets,
                 size_t n) {
  for (size_t i = 0; i < n; i++)
    if (offsets[i] == m->offset)
      return true;
  return false;
}

/* A claim: a newer one makes its writer the log's writer from here on. */
static void take_claim(kafka_store_t *k, applying_t *a, const dc_log_record_t *p) {
  if (p->epoch <= a->epoch)
    return;
  dc_kstore_claim_seen(k);
  dc_log(DC_LOG_INFO, "kafka store: node %d writes %s from epoch %lld on",
         (int)p->node, k->topic, (long long)p->epoch);
  a->epoch = p->epoch;
  a->node = p->node;
}

/* A change is applied when its writer holds the current claim (before any
 * claim, every change is). */
static bool by_current_writer(const applying_t *a, const dc_log_record_t *p) {
  return a->epoch == 0 || (p->epoch == a->epoch && p->node == a->node);
}

/* Is m a claim newer than the pass's current one? */
static bool newer_claim(const applying_t *a, const rd_kafka_message_t *m) {
  return m->key && m->key_len == strlen(DC_LOG_CLAIM_KEY) &&
         !memcmp(m->key, DC_LOG_CLAIM_KEY, m->key_len) &&
         header_int(m, DC_LOG_HDR_EPOCH, 0) > a->epoch;
}

/* Takes one consumed message into the pass. 0, 1 for end of partition,
 * 2 when it was held back (a newer claim, stop_at_claim), -1 with errstr
 * on a consumer error. */
static int take_message(kafka_store_t *k, applying_t *a,
                        rd_kafka_message_t *m, char *errstr,
                        size_t errstr_size) {
  if (dc_kstore_history_msg(k, m))
    return 0;
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    /* Everything before the end has been read, even where compaction
     * left no record at the last offsets. */
    if (m->offset > a->next)
      a->next = m->offset;
    k->at_end = true;
    return 1;
  }
  if (m->err) {
    dc_seterr(errstr, errstr_size, "reading topic %s at %s: %s", k->topic,
             k->bootstrap, rd_kafka_message_errstr(m));
    return -1;
  }
  k->at_end = false;
  if (m->offset < a->next)
    return 0; /* applied already (this writer's own, applied as written) */
  if (a->stop_at_claim && newer_claim(a, m)) {
    a->stopped = true;
    return 2;
  }
  char why[300];
  dc_log_record_t *p = &a->batch[a->n];
  bool mine = a->offsets && ours(m, a->offsets, a->n_ours);
  a->next = m->offset + 1;
  if (parse_record(m, p, why, sizeof(why))) {
    dc_log(DC_LOG_ERR, "kafka store: skipping the record at offset %lld of "
           "%s: %s", (long long)m->offset, k->topic, why);
    if (a->offsets && !mine && !p->heartbeat && p->node == k->node_id)
      foreign(k, m->offset, why);
  } else if (p->claim) {
    take_claim(k, a, p);
  } else if (p->heartbeat) {
    dc_kstore_heartbeat_seen(k, p, a->node);
  } else if (!by_current_writer(a, p)) {
    dc_log(DC_LOG_INFO, "kafka store: ignoring the record at offset %lld of "
           "%s: its writer (node %d, epoch %lld) was fenced by node %d "
           "(epoch %lld)", (long long)m->offset, k->topic, (int)p->node,
           (long long)p->epoch, (int)a->node, (long long)a->epoch);
    a->fenced_ours += mine;
  } else {
    if (a->offsets && !mine && p->node == k->node_id)
      foreign(k, m->offset, "written by another server");
    a->ours_in_batch += mine;
    a->n++;
    return 0;
  }
  dc_log_record_free(p);
  return 0;
}

/* Frees what a pass read and did not apply (the store closes). */
static void applying_drop(applying_t *a) {
  for (size_t i = 0; i < a->n; i++)
    dc_log_record_free(&a->batch[i]);
  a->n = 0;
  a->carry = false;
}

/* The pass ran out of time or met a consumer error: what it read is kept
 * for the next pass. */
static int fell_behind(applying_t *a) {
  a->carry = true;
  return a->ours_flushed ? -1 : DC_KSTORE_BEHIND;
}

int dc_kstore_catch_up(kafka_store_t *k, int64_t until, bool or_end,
                       const int64_t *offsets, size_t n_ours, size_t *fenced,
                       const notify_t *nt, bool stop_at_claim,
                       int64_t deadline, char *errstr, size_t errstr_size) {
  applying_start(&pass, k, offsets, n_ours, nt, stop_at_claim);
  int64_t started = dc_mono_ms();
  bool eof = false;
  while (pass.next < until && !(or_end && eof) && !pass.stopped) {
    /* Past the deadline, what has arrived already is still taken. */
    int left = (int)(deadline - dc_mono_ms());
    rd_kafka_message_t *m =
        rd_kafka_consumer_poll(k->consumer, left > 0 ? left : 0);
    if (!m && left > 0)
      continue;
    if (!m) {
      dc_seterr(errstr, errstr_size, "reading topic %s at %s: offset %lld "
               "not reached within %lld ms", k->topic, k->bootstrap,
               (long long)until, (long long)(dc_mono_ms() - started));
      return fell_behind(&pass);
    }
    int r = take_message(k, &pass, m, errstr, errstr_size);
    eof |= r == 1;
    if (r == 2)
      k->held = m;
    else
      rd_kafka_message_destroy(m);
    if (r < 0)
      return fell_behind(&pass);
    if (pass.n == APPLY_BATCH && flush_batch(k, &pass, errstr, errstr_size))
      return -1;
  }
  if (fenced) /* stopped: every own record lies behind the newer claim */
    *fenced = pass.stopped ? n_ours : pass.fenced_ours;
  return flush_batch(k, &pass, errstr, errstr_size);
}

/* A pass between requests: what has arrived, without waiting, each change
 * told to cb once it is in the cache (a writer's own records were applied
 * by its commit already). At most APPLY_BATCH records a pass, so a long
 * backlog holds the server's loop for one batch at a time: when more may
 * be waiting, the pipe is written again and the loop comes back after
 * serving its connections. */
static int kafka_poll(dc_store_t *st, dc_store_apply_cb *cb, void *opaque,
                      char *errstr, size_t errstr_size) {
  kafka_store_t *k = (kafka_store_t *)st;
  applying_t *a = &pass;
  notify_t nt = {cb, opaque};
  char drain[64];
  while (read(k->event_pipe[0], drain, sizeof(drain)) > 0)
    ;
  dc_kstore_events_drain(k);
  applying_start(a, k, NULL, 0, &nt, false);
  rd_kafka_message_t *m = k->held;
  size_t taken = 0;
  k->held = NULL;
  /* A pass carried over may hold records already: the batch bounds both. */
  while (taken < APPLY_BATCH && a->n < APPLY_BATCH &&
         (m || (m = rd_kafka_consumer_poll(k->consumer, 0)))) {
    int r = take_message(k, a, m, errstr, errstr_size);
    rd_kafka_message_destroy(m);
    m = NULL;
    taken++;
    if (r < 0) {
      char ferr[256];
      flush_batch(k, a, ferr, sizeof(ferr));
      return -1;
    }
  }
  if (taken == APPLY_BATCH || a->n == APPLY_BATCH) {
    ssize_t w = write(k->event_pipe[1], "1", 1);
    (void)w; /* a full pipe already wakes the loop */
  }
  if (flush_batch(k, a, errstr, errstr_size))
    return -1;
  dc_kstore_tick(k);
  return 0;
}

/* ---- the topic ----------------------------------------------------------- */

/* Creates topic with one partition and config (NULL-terminated
 * name/value pairs). */
static int create_topic(kafka_store_t *k, const char *topic, int brokers,
                        const char *const *config, char *errstr,
                        size_t errstr_size) {
  char why[512] = "";
  int rf = brokers < 3 ? brokers : 3;
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, rf, why,
                                                  sizeof(why));
  char misr[16];
  snprintf(misr, sizeof(misr), "%d", rf >= 3 ? 2 : 1);
  rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", misr);
  for (size_t i = 0; config[i]; i += 2)
    rd_kafka_NewTopic_set_config(nt, config[i], config[i + 1]);
  rd_kafka_AdminOptions_t *ao =
      rd_kafka_AdminOptions_new(k->producer, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_request_timeout(ao, k->timeout_ms, why,
                                            sizeof(why));
  rd_kafka_queue_t *q = rd_kafka_queue_new(k->producer);
  rd_kafka_CreateTopics(k->producer, &nt, 1, ao, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, k->timeout_ms + 2000);
  int rc = -1;
  const rd_kafka_CreateTopics_result_t *res =
      ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
  size_t n = 0;
  const rd_kafka_topic_result_t **tr =
      res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
  if (!ev)
    snprintf(why, sizeof(why), "no answer");
  else if (rd_kafka_event_error(ev))
    snprintf(why, sizeof(why), "%s", rd_kafka_event_error_string(ev));
  else if (n == 1 && rd_kafka_topic_result_error(tr[0]))
    snprintf(why, sizeof(why), "%s", rd_kafka_topic_result_error_string(tr[0]));
  else
    rc = 0;
  if (rc)
    dc_seterr(errstr, errstr_size, "store topic %s does not exist at %s and "
             "cannot be created (%s); create it with one partition and "
             "cleanup.policy=%s", topic, k->bootstrap, why, config[1]);
  else
    dc_log(DC_LOG_INFO, "kafka store: created topic %s (1 partition, "
           "replication factor %d, cleanup.policy=%s)", topic, rf, config[1]);
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(ao);
  rd_kafka_NewTopic_destroy(nt);
  return rc;
}

/* How the store's topics are made: the config log keeps every entity's
 * latest record; the history keeps everything for 90 days. */
static const char *const log_config[] = {"cleanup.policy", "compact", NULL};
static const char *const history_config[] = {
    "cleanup.policy", "delete", "retention.ms", "7776000000", NULL};

/* The partition count of topic in md, -1 when it does not exist. */
static int partitions_of(const rd_kafka_metadata_t *md, const char *topic) {
  for (int i = 0; i < md->topic_cnt; i++)
    if (!strcmp(md->topics[i].topic, topic) && !md->topics[i].err)
      return md->topics[i].partition_cnt;
  return -1;
}

/* Does the cluster have a controller that is one of its brokers? librdkafka's
 * mock cluster names controller 0, which is none, and cannot answer
 * admin requests. */
static bool real_controller(kafka_store_t *k, const rd_kafka_metadata_t *md) {
  int32_t c = rd_kafka_controllerid(k->producer, k->timeout_ms);
  for (int i = 0; c >= 0 && i < md->broker_cnt; i++)
    if (md->brokers[i].id == c)
      return true;
  return false;
}

/* topic's cleanup.policy from the cluster into buf ("" when it does not
 * say). 0, or -1 with why. */
static int cleanup_policy(kafka_store_t *k, const char *topic, char *buf,
                          size_t size, char *why, size_t why_size) {
  rd_kafka_ConfigResource_t *cr =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
  rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(
      k->producer, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  rd_kafka_AdminOptions_set_request_timeout(ao, k->timeout_ms, why, why_size);
  rd_kafka_queue_t *q = rd_kafka_queue_new(k->producer);
  rd_kafka_DescribeConfigs(k->producer, &cr, 1, ao, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, k->timeout_ms + 2000);
  const rd_kafka_DescribeConfigs_result_t *res =
      ev ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
  size_t n = 0, nc = 0;
  const rd_kafka_ConfigResource_t **rs =
      res ? rd_kafka_DescribeConfigs_result_resources(res, &n) : NULL;
  int rc = -1;
  buf[0] = '\0';
  if (!ev)
    dc_seterr(why, why_size, "no answer");
  else if (rd_kafka_event_error(ev))
    dc_seterr(why, why_size, "%s", rd_kafka_event_error_string(ev));
  else if (n != 1 || rd_kafka_ConfigResource_error(rs[0]))
    dc_seterr(why, why_size, "%s",
             n == 1 ? rd_kafka_ConfigResource_error_string(rs[0])
                    : "no result");
  else
    rc = 0;
  const rd_kafka_ConfigEntry_t **ce =
      rc ? NULL : rd_kafka_ConfigResource_configs(rs[0], &nc);
  for (size_t i = 0; i < nc; i++)
    if (!strcmp(rd_kafka_ConfigEntry_name(ce[i]), "cleanup.policy") &&
        rd_kafka_ConfigEntry_value(ce[i]))
      snprintf(buf, size, "%s", rd_kafka_ConfigEntry_value(ce[i]));
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(ao);
  rd_kafka_ConfigResource_destroy(cr);
  return rc;
}

/* An existing config log must be compacted only: with "delete" in its
 * policy, retention would drop entities' only records. */
static int check_policy(kafka_store_t *k, const rd_kafka_metadata_t *md,
                        char *errstr, size_t errstr_size) {
  char policy[128], why[512];
  if (!real_controller(k, md)) {
    dc_log(DC_LOG_INFO, "kafka store: the cluster at %s names no controller "
           "among its brokers (librdkafka's mock cluster?); cleanup.policy "
           "of %s not checked", k->bootstrap, k->topic);
    return 0;
  }
  if (cleanup_policy(k, k->topic, policy, sizeof(policy), why, sizeof(why))) {
    dc_seterr(errstr, errstr_size, "cannot read the configuration of store "
             "topic %s at %s: %s", k->topic, k->bootstrap, why);
    return -1;
  }
  if (!strcmp(policy, "compact"))
    return 0;
  dc_seterr(errstr, errstr_size, "store topic %s at %s has cleanup.policy=%s; "
           "the config log needs cleanup.policy=compact (or retention would "
           "delete entities' only records): kafka-configs.sh --alter "
           "--entity-type topics --entity-name %s --add-config "
           "cleanup.policy=compact", k->topic, k->bootstrap,
           policy[0] ? policy : "(unknown)", k->topic);
  return -1;
}

/* The topics exist, the log with one partition (each created when
 * missing). Asks for every topic's metadata, since asking for a missing
 * one by name makes some clusters create it with their default partition
 * count. */
static int check_topic(kafka_store_t *k, char *errstr, size_t errstr_size) {
  const rd_kafka_metadata_t *md = NULL;
  rd_kafka_resp_err_t e =
      rd_kafka_metadata(k->consumer, 1, NULL, &md, k->timeout_ms);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot reach the Kafka cluster at %s "
             "within %d ms: %s", k->bootstrap, k->timeout_ms,
             rd_kafka_err2str(e));
    return -1;
  }
  int parts = partitions_of(md, k->topic), brokers = md->broker_cnt;
  int hparts = k->history_topic ? partitions_of(md, k->history_topic) : 0;
  int policy = parts == 1 && k->producer
                   ? check_policy(k, md, errstr, errstr_size)
                   : 0;
  rd_kafka_metadata_destroy(md);
  if (policy)
    return -1;
  if (parts < 0 && k->read_only) {
    dc_seterr(errstr, errstr_size, "store topic %s does not exist at %s (a "
             "read replica does not create it; start the writer first)",
             k->topic, k->bootstrap);
    return -1;
  }
  if (parts > 1) {
    dc_seterr(errstr, errstr_size, "store topic %s at %s has %d partitions; "
             "the store needs exactly one (the log's order is the order of "
             "changes)", k->topic, k->bootstrap, parts);
    return -1;
  }
  if ((parts < 0 && create_topic(k, k->topic, brokers, log_config, errstr,
                                 errstr_size)) ||
      (hparts < 0 && create_topic(k, k->history_topic, brokers,
                                  history_config, errstr, errstr_size)))
    return -1;
  return 0;
}

/* Is e what a broker answers about a topic it does not know yet? A topic
 * just created reaches every broker's metadata a moment later. */
static bool not_known_yet(rd_kafka_resp_err_t e) {
  return e == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
         e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
         e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
         e == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
         e == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
}

/* The log's watermarks, asked again (for up to the timeout) while the
 * brokers do not know the topic yet. */
static rd_kafka_resp_err_t query_offsets(kafka_store_t *k, int64_t *lo,
                                         int64_t *hi) {
  int64_t deadline = dc_mono_ms() + k->timeout_ms;
  for (;;) {
    int left = (int)(deadline - dc_mono_ms());
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
        k->consumer, k->topic, 0, lo, hi, left > 0 ? left : 1);
    if (!e || !not_known_yet(e) || dc_mono_ms() >= deadline)
      return e;
    struct timespec backoff = {0, 50 * 1000000L};
    nanosleep(&backoff, NULL);
  }
}

/* Reads the cache's offset, assigns partition 0 there, applies the log to
 * its current end. */
static int start_reading(kafka_store_t *k, char *errstr, size_t errstr_size) {
  int64_t off = 0, lo = 0, hi = 0, node = -1;
  if (dc_store_sqlite_meta(k->cache, OFFSET_META, &off, errstr,
                           errstr_size) < 0 ||
      dc_store_sqlite_meta(k->cache, EPOCH_META, &k->epoch, errstr,
                           errstr_size) < 0 ||
      dc_store_sqlite_meta(k->cache, EPOCH_NODE_META, &node, errstr,
                           errstr_size) < 0)
    return -1;
  k->epoch_node = (int32_t)node;
  rd_kafka_resp_err_t e = query_offsets(k, &lo, &hi);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot read the offsets of %s at %s: %s",
             k->topic, k->bootstrap, rd_kafka_err2str(e));
    return -1;
  }
  if (lo > off) {
    dc_seterr(errstr, errstr_size, "topic %s at %s starts at offset %lld, "
             "past this cache's %lld: records were deleted (retention or "
             "DeleteRecords) before they were applied here, so the state "
             "cannot be rebuilt whole; the topic must keep every record "
             "(cleanup.policy=compact, no retention)", k->topic,
             k->bootstrap, (long long)lo, (long long)off);
    return -1;
  }
  if (off > hi) {
    dc_seterr(errstr, errstr_size, "this cache has applied topic %s up to "
             "offset %lld but the topic at %s ends at %lld: it is another "
             "topic or was recreated; start from an empty data directory",
             k->topic, (long long)off, k->bootstrap, (long long)hi);
    return -1;
  }
  k->next_offset = off;
  rd_kafka_topic_partition_list_t *a = rd_kafka_topic_partition_list_new(2);
  rd_kafka_topic_partition_list_add(a, k->topic, 0)->offset = off;
  /* The history's last record says how far it holds the changes. */
  if (k->history_topic)
    rd_kafka_topic_partition_list_add(a, k->history_topic, 0)->offset =
        RD_KAFKA_OFFSET_TAIL(1);
  e = rd_kafka_assign(k->consumer, a);
  rd_kafka_topic_partition_list_destroy(a);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot read %s: %s", k->topic,
             rd_kafka_err2str(e));
    return -1;
  }
  int64_t t0 = dc_mono_ms();
  /* To the high watermark, or to the end a read_committed reader sees if
   * that comes first: a transaction a writer left open (it died
   * mid-commit) holds it back until a claimant fences it, or at most
   * transaction.timeout.ms, which the wait allows for. (The end alone may
   * never be met while a writer commits without pause.) */
  if (dc_kstore_catch_up(k, hi, true, NULL, 0, NULL, NULL, false,
                         t0 + k->timeout_ms + txn_timeout_ms(k->timeout_ms) +
                             (hi - off) / 10,
                         errstr, errstr_size))
    return -1;
  dc_log(DC_LOG_INFO, "kafka store: applied %s from offset %lld to %lld in "
         "%lld ms", k->topic, (long long)off, (long long)k->next_offset,
         (long long)(dc_mono_ms() - t0));
  return 0;
}

/* ---- commits ------------------------------------------------------------- */

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque) {
  (void)rk, (void)opaque;
  delivery_t *d = m->_private;
  if (d->abandoned) {
    free(d);
    return;
  }
  d->done = true;
  d->err = m->err;
  d->offset = m->offset;
}

void dc_kstore_release(delivery_t **d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (d[i]->done)
      free(d[i]);
    else
      d[i]->abandoned = true;
  }
}

int dc_kstore_produce(kafka_store_t *k, rd_kafka_t *rk, const char *key,
                      const char *val, delivery_t **dp, char *errstr,
                      size_t errstr_size) {
  return dc_kstore_produce_to(k, rk, k->topic, key, val, dp, errstr,
                              errstr_size);
}

int dc_kstore_produce_to(kafka_store_t *k, rd_kafka_t *rk, const char *topic,
                         const char *key, const char *val, delivery_t **dp,
                         char *errstr, size_t errstr_size) {
  delivery_t *d = *dp = calloc(1, sizeof(*d));
  if (!d) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  char node[16], epoch[24];
  snprintf(node, sizeof(node), "%d", (int)k->node_id);
  snprintf(epoch, sizeof(epoch), "%lld", (long long)k->my_epoch);
  rd_kafka_resp_err_t e = rd_kafka_producev(
      rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_KEY(key, strlen(key)),
      RD_KAFKA_V_VALUE((void *)val, val ? strlen(val) : 0),
      RD_KAFKA_V_HEADER(DC_LOG_HDR_NODE, node, -1),
      RD_KAFKA_V_HEADER(DC_LOG_HDR_EPOCH, epoch, -1), RD_KAFKA_V_OPAQUE(d),
      RD_KAFKA_V_END);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot queue the record %s: %s", key,
             rd_kafka_err2str(e));
    free(d);
    *dp = NULL;
  }
  return e ? -1 : 0;
}

/* Produces one record per commit, and after the record of an entity left
 * without overrides a tombstone, so compaction drops it. 0, or -1 with
 * errstr (those queued are waited for by the caller). *queued counts the
 * records queued into d[]. */
static int produce_all(kafka_store_t *k, const dc_store_commit_t *c, size_t n,
                       int64_t now, delivery_t **d, size_t *queued,
                       char *errstr, size_t errstr_size) {
  for (size_t i = 0; i < n; i++) {
    char *key = dc_log_record_key(c[i].resource_type, c[i].entity);
    char *val = key ? dc_log_record_value(&c[i], now) : NULL;
    int r = -1;
    if (!val)
      dc_seterr(errstr, errstr_size, "cannot write %s '%.200s' to the log: "
               "%s", dc_scope_type_name(c[i].resource_type), c[i].entity,
               key ? "a key or value is not valid UTF-8 (JSON cannot carry "
                     "it), or out of memory" : "out of memory");
    else if (!(r = dc_kstore_produce(k, k->txn, key, val, &d[*queued],
                                     errstr, errstr_size)))
      ++*queued;
    if (!r && c[i].n_configs == 0 &&
        !(r = dc_kstore_produce(k, k->txn, key, NULL, &d[*queued], errstr,
                                errstr_size)))
      ++*queued;
    free(key);
    free(val);
    if (r)
      return -1;
  }
  return 0;
}

int dc_kstore_await(kafka_store_t *k, rd_kafka_t *rk, delivery_t **d, size_t n,
                    int64_t deadline, char *errstr, size_t errstr_size) {
  /* Past the deadline, reports due already are still served once. */
  for (bool last = false; !last;) {
    size_t done = 0;
    for (size_t i = 0; i < n; i++)
      done += d[i]->done;
    if (done == n)
      break;
    int left = (int)(deadline - dc_mono_ms());
    last = left <= 0;
    rd_kafka_poll(rk, last ? 0 : left < 100 ? left : 100);
  }
  for (size_t i = 0; i < n; i++)
    if (!d[i]->done || d[i]->err) {
      dc_seterr(errstr, errstr_size, "the Kafka store (topic %s at %s) did "
               "not take the change within %d ms: %s", k->topic, k->bootstrap,
               k->timeout_ms,
               d[i]->done ? rd_kafka_err2str(d[i]->err)
                          : "no acknowledgement");
      return -1;
    }
  return 0;
}

/* Do the new records directly follow what this store has applied? Then
 * nothing else (no claim) is between, and they take effect as written. */
static bool contiguous(const kafka_store_t *k, delivery_t *const *d,
                       size_t n) {
  for (size_t i = 0; i < n; i++)
    if (d[i]->offset != k->next_offset + (int64_t)i)
      return false;
  return true;
}

/* Applies this store's own commits to the cache as they were written,
 * with the offset after them (the consumer skips them when it reads them
 * later). */
static int apply_own(kafka_store_t *k, const dc_store_commit_t *c, size_t n,
                     delivery_t *const *d, int64_t time_ms, int64_t next,
                     char *errstr, size_t errstr_size) {
  dc_store_commit_t *cc = malloc(n * sizeof(*cc));
  if (!cc) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  /* d[] holds each commit's record, then a tombstone when it emptied
   * the entity (produce_all). */
  for (size_t i = 0, j = 0; i < n; i++) {
    cc[i] = c[i];
    cc[i].time_ms = time_ms;
    cc[i].log_offset = d[j]->offset;
    j += c[i].n_configs == 0 ? 2 : 1;
  }
  const dc_store_meta_t meta[] = {{OFFSET_META, next},
                                  {EPOCH_META, k->epoch},
                                  {EPOCH_NODE_META, k->epoch_node}};
  int r = dc_store_sqlite_commit_meta(k->cache, cc, n, meta, 3, errstr,
                                      errstr_size);
  free(cc);
  if (!r)
    k->next_offset = next;
  return r;
}

/* Why a store that does not write refuses a commit: the client may retry
 * on the writer (nothing of the change was written). */
static int not_leading(const kafka_store_t *k, char *errstr,
                       size_t errstr_size) {
  if (k->epoch > 0 && k->epoch_node >= 0 && k->epoch_node != k->node_id)
    dc_seterr(errstr, errstr_size, "this dynconfd (node %d) does not write "
             "topic %s: node %d does (epoch %lld); alter there", (int)k->node_id,
             k->topic, (int)k->epoch_node, (long long)k->epoch);
  else if (k->epoch > 0 && k->epoch_node == k->node_id)
    dc_seterr(errstr, errstr_size, "this dynconfd (node %d) does not write "
             "topic %s now: a newer writer fenced it, or it is claiming the "
             "topic; retry", (int)k->node_id, k->topic);
  else
    dc_seterr(errstr, errstr_size, "this dynconfd (node %d) does not write "
             "topic %s, and no server does yet", (int)k->node_id, k->topic);
  return DC_STORE_NOT_WRITER;
}

/* The brokers refused this writer: another server claimed the topic. */
static int fenced(const kafka_store_t *k, const char *why, char *errstr,
                  size_t errstr_size) {
  dc_log(DC_LOG_WARN, "kafka store: node %d no longer writes %s: %s",
         (int)k->node_id, k->topic, why);
  dc_seterr(errstr, errstr_size, "this dynconfd (node %d) no longer writes "
           "topic %s: a newer writer fenced it (%s); nothing of the change "
           "was written, retry", (int)k->node_id, k->topic, why);
  return DC_STORE_NOT_WRITER;
}

/* The commit did not finish in time: it goes on in the background and
 * may still land. Writes are refused until its outcome is known
 * (dc_kstore_tick settles it); the store keeps its records (d[0..n)). */
static void commit_unsure(kafka_store_t *k, delivery_t **d, size_t n,
                          const char *why) {
  snprintf(k->stale, sizeof(k->stale), "a change that did not finish in "
           "time may still be written (%s); writes resume once Kafka tells "
           "whether it was", why);
  k->uncertain = true;
  k->unsure = d;
  k->n_unsure = n;
  k->settle_at = -1;
}

/* Commits the open transaction, waiting until the deadline. */
static txn_outcome_t commit_until(kafka_store_t *k, int64_t deadline, char *why,
                                  size_t why_size) {
  int left = (int)(deadline - dc_mono_ms());
  return dc_kstore_txn_commit(k, left > 0 ? left : 0, why, why_size);
}

/* Committed, but the log could not be read back to the last record in
 * time: whether a newer claim came first is not known here yet. Writes
 * are refused until poll has read past it (and told the server, which
 * undoes the change meanwhile, if it counts). */
static int written_unread(kafka_store_t *k, int64_t last, char *errstr,
                          size_t errstr_size) {
  char why[400];
  snprintf(why, sizeof(why), "%s", errstr);
  snprintf(k->stale, sizeof(k->stale), "a change written at offset %lld "
           "could not be read back in time (%s); writes resume once this "
           "server has read the log past it", (long long)last, why);
  k->uncertain = true;
  k->settle_at = last;
  dc_seterr(errstr, errstr_size, "the change was written to topic %s, but "
           "this server could not read the log back to it within %d ms, so "
           "whether another server claimed the topic first is not known "
           "(%s)", k->topic, k->timeout_ms, why);
  return DC_STORE_UNSURE;
}

/* The committed records (d[0..n)) in the cache: as written when they
 * directly follow what this store applied, else by reading the log back
 * to them (other servers' heartbeats, transaction markers in between). */
static int apply_committed(kafka_store_t *k, const dc_store_commit_t *c,
                           size_t n, delivery_t **d, size_t queued,
                           int64_t now, int64_t deadline, char *errstr,
                           size_t errstr_size) {
  if (contiguous(k, d, queued))
    return apply_own(k, c, n, d, now, k->next_offset + (int64_t)queued, errstr,
                     errstr_size);
  int64_t *offsets = calloc(queued, sizeof(*offsets)), last = -1;
  if (!offsets) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < queued; i++) {
    offsets[i] = d[i]->offset;
    last = d[i]->offset > last ? d[i]->offset : last;
  }
  /* Read the log back up to our records: acknowledged only once applied
   * here, and only if no newer claim came first (the brokers fence a
   * stale writer; on a cluster that does not, the claim tells). */
  size_t lost = 0;
  int rc = dc_kstore_catch_up(k, last + 1, false, offsets, queued, &lost,
                              NULL, true, deadline, errstr, errstr_size);
  free(offsets);
  if (rc == DC_KSTORE_BEHIND)
    return written_unread(k, last, errstr, errstr_size);
  if (!rc && lost) {
    int node = k->held ? (int)header_int(k->held, DC_LOG_HDR_NODE, -1)
                       : (int)k->epoch_node;
    dc_seterr(errstr, errstr_size, "this dynconfd no longer writes topic %s: "
             "node %d claimed it before the change was written, so nobody "
             "applies it; alter on node %d", k->topic, node, node);
    return DC_STORE_NOT_WRITER;
  }
  return rc;
}

/* One transaction of the commits' records: begun, produced, committed
 * within the deadline. 0, DC_STORE_NOT_WRITER, or -1 with errstr; *unsure
 * when it went on past the deadline (the store kept d). */
static int write_txn(kafka_store_t *k, const dc_store_commit_t *c, size_t n,
                     int64_t now, delivery_t **d, size_t *queued,
                     int64_t deadline, bool *unsure, char *errstr,
                     size_t errstr_size) {
  char why[512] = "";
  txn_outcome_t o = dc_kstore_txn_begin(k, k->timeout_ms, why, sizeof(why));
  if (o == TXN_DONE && produce_all(k, c, n, now, d, queued, why,
                                   sizeof(why))) {
    char aerr[256];
    o = dc_kstore_txn_abort(k, k->timeout_ms, aerr, sizeof(aerr));
  } else if (o == TXN_DONE) {
    o = commit_until(k, deadline, why, sizeof(why));
  }
  switch (o) {
  case TXN_DONE:
    return dc_kstore_await(k, k->txn, d, *queued, deadline, errstr,
                           errstr_size);
  case TXN_FENCED:
    return fenced(k, why, errstr, errstr_size);
  case TXN_ABORTED:
    dc_seterr(errstr, errstr_size, "the Kafka store (topic %s at %s) did not "
             "take the change; nothing of it was written: %s", k->topic,
             k->bootstrap, why);
    return -1;
  case TXN_PENDING:
    break;
  }
  dc_seterr(errstr, errstr_size, "the Kafka store (topic %s at %s) did not "
           "take the change within %d ms: %s", k->topic, k->bootstrap,
           k->timeout_ms, why);
  *unsure = *queued > 0; /* the commit goes on (a begin that waits on an
                          * abort wrote nothing) */
  if (*unsure)
    commit_unsure(k, d, *queued, why);
  return *unsure ? DC_STORE_UNSURE : -1;
}

static int kafka_commit(dc_store_t *st, const dc_store_commit_t *c, size_t n,
                        char *errstr, size_t errstr_size) {
  kafka_store_t *k = (kafka_store_t *)st;
  if (k->read_only) {
    dc_seterr(errstr, errstr_size, "this dynconfd is a read replica of topic "
             "%s (--store-read-only); alter on the dynconfd that writes it",
             k->topic);
    return DC_STORE_NOT_WRITER;
  }
  if (!dc_kstore_leading(k))
    return not_leading(k, errstr, errstr_size);
  if (k->stale[0]) {
    dc_seterr(errstr, errstr_size, "the Kafka store refuses writes: %s",
             k->stale);
    /* Waiting for a commit's outcome passes (or another server writes
     * meanwhile): the client may retry, as with a fenced writer. */
    return k->uncertain ? DC_STORE_NOT_WRITER : -1;
  }
  if (n == 0)
    return 0;
  /* At most two records per commit: the change and a tombstone. */
  delivery_t **d = calloc(2 * n, sizeof(*d));
  size_t queued = 0;
  bool unsure = false;
  int64_t now = dc_wall_ms(), deadline = dc_mono_ms() + k->timeout_ms;
  if (!d) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  int rc = write_txn(k, c, n, now, d, &queued, deadline, &unsure, errstr,
                     errstr_size);
  if (!rc) {
    rc = apply_committed(k, c, n, d, queued, now, deadline, errstr,
                         errstr_size);
    if (rc == -1)
      snprintf(k->stale, sizeof(k->stale), "written records could not be "
               "applied to the cache (%s)", errstr);
  }
  if (k->stale[0] && rc)
    dc_log(DC_LOG_ERR, "kafka store: writes refused: %s", k->stale);
  if (!unsure) {
    dc_kstore_release(d, queued);
    free(d);
  }
  return rc;
}

/* ---- the rest of the vtable ---------------------------------------------- */

static int kafka_load(dc_store_t *st, dc_store_load_cb *cb, void *opaque,
                      char *errstr, size_t errstr_size) {
  return dc_store_load(((kafka_store_t *)st)->cache, cb, opaque, errstr,
                       errstr_size);
}

static int kafka_history(dc_store_t *st, const char *entity,
                         dc_store_history_cb *cb, void *opaque, char *errstr,
                         size_t errstr_size) {
  return dc_store_history(((kafka_store_t *)st)->cache, entity, cb, opaque,
                          errstr, errstr_size);
}

static void kafka_close(dc_store_t *st) {
  kafka_store_t *k = (kafka_store_t *)st;
  dc_kstore_lead_close(k);
  dc_kstore_txn_drop(k);
  if (k->unsure)
    dc_kstore_release(k->unsure, k->n_unsure);
  free(k->unsure);
  dc_kstore_history_close(k);
  applying_drop(&pass);
  if (k->held)
    rd_kafka_message_destroy(k->held);
  if (k->cq) {
    rd_kafka_queue_io_event_enable(k->cq, -1, NULL, 0);
    rd_kafka_queue_destroy(k->cq);
  }
  if (k->consumer) {
    rd_kafka_consumer_close(k->consumer);
    rd_kafka_destroy(k->consumer);
  }
  if (k->producer) {
    /* Serves the delivery reports still due (they free abandoned ones). */
    rd_kafka_flush(k->producer, k->timeout_ms);
    rd_kafka_purge(k->producer, RD_KAFKA_PURGE_F_QUEUE |
                                    RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(k->producer, 0);
    rd_kafka_destroy(k->producer);
  }
  dc_store_close(k->cache);
  for (int i = 0; i < 2; i++)
    if (k->event_pipe[i] >= 0)
      close(k->event_pipe[i]);
  free(k->topic);
  free(k->history_topic);
  free(k->bootstrap);
  free(k->txn_id);
  free(k->config_file);
  dc_replica_key_free(k->key);
  free(k);
}

static int kafka_event_fd(dc_store_t *st) {
  return ((kafka_store_t *)st)->event_fd;
}

static int64_t kafka_position(dc_store_t *st) {
  return ((kafka_store_t *)st)->next_offset;
}

static const dc_store_ops_t kafka_ops = {
    .close = kafka_close,
    .load = kafka_load,
    .commit = kafka_commit,
    .history = kafka_history,
    .event_fd = kafka_event_fd,
    .poll = kafka_poll,
    .advertise = dc_kstore_advertise,
    .replicas = dc_kstore_replicas,
    .own_key = dc_kstore_own_key,
    .replica_key = dc_kstore_replica_key,
    .position = kafka_position,
};

/* Every store learns of new records through a pipe the consumer queue
 * writes to, so the server's event loop can wait on it: read replicas
 * follow the writer, and a writer that another one fenced follows its
 * successor. */
static int watch_queue(kafka_store_t *k, char *errstr, size_t errstr_size) {
  if (pipe2(k->event_pipe, O_CLOEXEC | O_NONBLOCK) ||
      !(k->cq = rd_kafka_queue_get_consumer(k->consumer))) {
    dc_seterr(errstr, errstr_size, "cannot watch the store's consumer: %s",
             strerror(errno));
    return -1;
  }
  rd_kafka_queue_io_event_enable(k->cq, k->event_pipe[1], "1", 1);
  return 0;
}

/* One transactional.id per config topic, shared by all its replicas. */
static char *txn_id_of(const char *topic) {
  char *id;
  return asprintf(&id, "dynconfd-store-%s", topic) < 0 ? NULL : id;
}

int dc_store_open_kafka(const dc_kafka_store_opts_t *o, dc_store_t **out,
                        char *errstr, size_t errstr_size) {
  *out = NULL;
  kafka_store_t *k = calloc(1, sizeof(*k));
  char history[512];
  dc_kstore_history_name(o, history, sizeof(history));
  if (!k || !(k->topic = strdup(o->topic ? o->topic : DC_KAFKA_STORE_TOPIC)) ||
      !(k->bootstrap = strdup(o->bootstrap ? o->bootstrap : "")) ||
      (o->config_file && !(k->config_file = strdup(o->config_file))) ||
      !(k->txn_id = txn_id_of(k->topic)) ||
      (!o->read_only && !(k->history_topic = strdup(history)))) {
    if (k) {
      free(k->topic);
      free(k->bootstrap);
      free(k->config_file);
      free(k->txn_id);
    }
    free(k);
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  k->mirrored = k->mirror_sent = -1;
  k->base.ops = &kafka_ops;
  k->timeout_ms = o->timeout_ms;
  k->session_ms = o->session_timeout_ms > 0 ? o->session_timeout_ms
                                            : DC_KAFKA_STORE_SESSION_MS;
  k->node_id = o->node_id;
  k->read_only = o->read_only;
  k->event_pipe[0] = k->event_pipe[1] = -1;
  k->timer_fd = k->event_fd = -1;
  k->writer_seen = k->opened_at = dc_mono_ms();
  k->settle_at = -1;
  /* Heard of before it advertises listeners (dc_store_advertise), with
   * the key it signs forwarded alters with. */
  if (!k->read_only &&
      (!(k->key = dc_replica_key_new(errstr, errstr_size)) ||
       !(k->heartbeat = dc_log_heartbeat_value(
             k->node_id, NULL, 0, dc_replica_key_public(k->key), false)))) {
    if (k->key)
      dc_seterr(errstr, errstr_size, "out of memory");
    kafka_close(&k->base);
    return -1;
  }
  if (dc_store_open_sqlite(o->data_dir, &k->cache, errstr, errstr_size) ||
      (!k->read_only &&
       !(k->producer = dc_kstore_handle_new(o, RD_KAFKA_PRODUCER, NULL,
                                            errstr, errstr_size))) ||
      !(k->consumer = dc_kstore_handle_new(o, RD_KAFKA_CONSUMER, NULL, errstr,
                                           errstr_size)) ||
      watch_queue(k, errstr, errstr_size) ||
      dc_kstore_events_open(k, errstr, errstr_size)) {
    kafka_close(&k->base);
    return -1;
  }
  /* A writer claims at once when nobody ever wrote the topic or it wrote
   * it last itself (a restart); otherwise it follows, giving the writer
   * one session timeout to be heard of before claiming. */
  if (check_topic(k, errstr, errstr_size) ||
      start_reading(k, errstr, errstr_size) ||
      (!k->read_only && (k->epoch == 0 || k->epoch_node == k->node_id) &&
       dc_kstore_claim(k, NULL, errstr, errstr_size))) {
    kafka_close(&k->base);
    return -1;
  }
  *out = &k->base;
  return 0;
}
