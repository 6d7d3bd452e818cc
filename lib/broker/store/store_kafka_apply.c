/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Applying the Kafka-topic store's log to its cache: records parsed
 * (store_record.c's format), claims followed, heartbeats handed to the
 * replica table, a fenced writer's records ignored, batches committed to
 * the SQLite cache with the offset after them and told to the server.
 * One pass at a time.
 */
#include "broker/store/store_kafka_int.h"
#include "broker/store/store_record.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <librdkafka/rdkafka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- records (format in store_record.c) ------------------------------- */

/* A decimal header of m; def when absent or not a number. */
int64_t dc_kstore_header_int(const rd_kafka_message_t *m, const char *name,
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
                              dc_kstore_header_int(m, DC_LOG_HDR_EPOCH, 0),
                              (int32_t)dc_kstore_header_int(m, DC_LOG_HDR_NODE, -1), p,
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
         dc_kstore_header_int(m, DC_LOG_HDR_EPOCH, 0) > a->epoch;
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

/* Frees what a pass read and did not apply. */
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

/* The log's next message: first the one a pass held back (a newer claim
 * met while reading back a write), so every pass takes the log in order
 * and no later record is applied past a claim still unread. */
static rd_kafka_message_t *next_message(kafka_store_t *k, int timeout_ms) {
  rd_kafka_message_t *m = k->held;
  k->held = NULL;
  return m ? m : rd_kafka_consumer_poll(k->consumer, timeout_ms);
}

int dc_kstore_catch_up(kafka_store_t *k, int64_t until, bool or_end,
                       const int64_t *offsets, size_t n_ours, size_t *fenced,
                       const notify_t *nt, bool stop_at_claim,
                       int64_t deadline, char *errstr, size_t errstr_size) {
  applying_start(&pass, k, offsets, n_ours, nt, stop_at_claim);
  int64_t started = dc_mono_ms();
  bool eof = false;
  size_t late = 0; /* records taken past the deadline */
  while (pass.next < until && !(or_end && eof) && !pass.stopped) {
    /* Past the deadline, what has arrived already is still taken, one
     * batch at most: the caller's wait stays bounded. */
    int left = (int)(deadline - dc_mono_ms());
    rd_kafka_message_t *m =
        left > 0 || late++ < APPLY_BATCH
            ? next_message(k, left > 0 ? left : 0)
            : NULL;
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

void dc_kstore_apply_close(void) { applying_drop(&pass); }

int dc_kstore_apply_arrived(kafka_store_t *k, const notify_t *nt,
                            char *errstr, size_t errstr_size) {
  applying_t *a = &pass;
  applying_start(a, k, NULL, 0, nt, false);
  rd_kafka_message_t *m;
  size_t taken = 0;
  /* A pass carried over may hold records already: the batch bounds both. */
  while (taken < APPLY_BATCH && a->n < APPLY_BATCH &&
         (m = next_message(k, 0))) {
    int r = take_message(k, a, m, errstr, errstr_size);
    rd_kafka_message_destroy(m);
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
  return flush_batch(k, a, errstr, errstr_size);
}
