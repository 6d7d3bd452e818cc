/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Kafka-topic store (see store_kafka.h), with librdkafka: the
 * writer's commits (a transaction, then its records read back or applied
 * as written), the store's vtable, and opening it. The log is applied in
 * store_kafka_apply.c, the topics checked in store_kafka_topic.c, the
 * handles made in store_kafka_io.c.
 */
#include "broker/store/store_kafka.h"
#include "broker/store/store_kafka_int.h"
#include "broker/store/store_record.h"
#include "codec/proto.h"
#include "broker/config/scope.h"
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


/* ---- commits ------------------------------------------------------------- */

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
    int node = k->held ? (int)dc_kstore_header_int(k->held, DC_LOG_HDR_NODE, -1)
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

/* A pass between requests: what has arrived, without waiting, each change
 * told to cb once it is in the cache (a writer's own records were applied
 * by its commit already). At most APPLY_BATCH records a pass, so a long
 * backlog holds the server's loop for one batch at a time: when more may
 * be waiting, the pipe is written again and the loop comes back after
 * serving its connections. */
static int kafka_poll(dc_store_t *st, dc_store_apply_cb *cb, void *opaque,
                      char *errstr, size_t errstr_size) {
  kafka_store_t *k = (kafka_store_t *)st;
  notify_t nt = {cb, opaque};
  char drain[64];
  while (read(k->event_pipe[0], drain, sizeof(drain)) > 0)
    ;
  dc_kstore_events_drain(k);
  if (dc_kstore_apply_arrived(k, &nt, errstr, errstr_size))
    return -1;
  dc_kstore_tick(k);
  return 0;
}

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
  dc_kstore_apply_close();
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

/* A store of o's settings, nothing opened yet; NULL when out of memory. */
static kafka_store_t *kstore_new(const dc_kafka_store_opts_t *o, char *errstr,
                                 size_t errstr_size) {
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
    return NULL;
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
  return k;
}

int dc_store_open_kafka(const dc_kafka_store_opts_t *o, dc_store_t **out,
                        char *errstr, size_t errstr_size) {
  *out = NULL;
  kafka_store_t *k = kstore_new(o, errstr, errstr_size);
  if (!k)
    return -1;
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
  if (dc_kstore_check_topic(k, errstr, errstr_size) ||
      dc_kstore_start_reading(k, errstr, errstr_size) ||
      (!k->read_only && (k->epoch == 0 || k->epoch_node == k->node_id) &&
       dc_kstore_claim(k, NULL, errstr, errstr_size))) {
    kafka_close(&k->base);
    return -1;
  }
  *out = &k->base;
  return 0;
}
