/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Who writes the Kafka store's log, decided through the log itself and
 * enforced by the brokers.
 *
 * Every server (but read replicas) writes a heartbeat record every third
 * of the session timeout, naming its listeners; every server reads them,
 * so each knows the live replicas. The writer is the node of the latest
 * claim. When a server has read nothing from the writer (heartbeat or
 * claim) for a whole session timeout, while it has read the log to its
 * end, it claims the topic: its transactional producer's InitProducerId
 * fences every earlier writer (the brokers refuse their records and abort
 * their open transaction), then it commits a claim of the epoch after the
 * highest one it has read, and leads once it reads that claim back. A
 * claim whose epoch is not above the current one is ignored by everyone;
 * since no earlier writer can commit anything once fenced, the claimant
 * then has read every claim there is and claims again, above them all.
 * Clocks only decide when to claim, never whose records count.
 */
#include "broker/store/store_kafka_int.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

bool dc_kstore_leading(const kafka_store_t *k) {
  return k->txn && k->claiming == CLAIM_NONE && k->my_epoch > 0 &&
         k->epoch == k->my_epoch && k->epoch_node == k->node_id;
}

static void log_claim_outcome(const kafka_store_t *k) {
  if (dc_kstore_leading(k))
    dc_log(DC_LOG_INFO, "kafka store: writing %s as node %d, epoch %lld",
           k->topic, (int)k->node_id, (long long)k->my_epoch);
  else
    dc_log(DC_LOG_WARN, "kafka store: node %d writes topic %s (epoch %lld); "
           "this server follows it", (int)k->epoch_node, k->topic,
           (long long)k->epoch);
}

/* A claim starts with a new producer: one kept from an earlier term as
 * the writer has been initialized already, and only a new InitProducerId
 * fences the writer since. */
static void claim_begin(kafka_store_t *k) {
  dc_kstore_txn_drop(k);
  k->claiming = CLAIM_FENCE;
}

/* Produces, in a new transaction, a claim of the epoch after the highest
 * one read. */
static txn_outcome_t write_claim(kafka_store_t *k, int wait_ms, char *errstr,
                                 size_t errstr_size) {
  char val[96];
  txn_outcome_t o = dc_kstore_txn_begin(k, wait_ms, errstr, errstr_size);
  if (o != TXN_DONE)
    return o;
  k->my_epoch = k->epoch + 1;
  snprintf(val, sizeof(val), "{\"claim\":{\"epoch\":%lld,\"node\":%d}}",
           (long long)k->my_epoch, (int)k->node_id);
  if (!dc_kstore_produce(k, k->txn, DC_LOG_CLAIM_KEY, val, &k->claim, errstr,
                         errstr_size))
    return TXN_DONE;
  char why[256];
  return dc_kstore_txn_abort(k, wait_ms, why, sizeof(why));
}

/* The claim was read back: it leads, or a claim of its epoch or above
 * came first and, unfenced, it claims again above it. */
static claim_step_t claim_read(kafka_store_t *k) {
  if (k->next_offset <= k->claim_at)
    return CLAIM_READ;
  if (k->epoch == k->my_epoch && k->epoch_node == k->node_id)
    return CLAIM_NONE;
  return k->txn ? CLAIM_WRITE : CLAIM_NONE;
}

/* Moves a claim on as far as it goes, waiting up to wait_ms for each
 * transactional step. 0 (claiming, or done), or -1 with errstr: this
 * attempt failed and the store does not write. */
static int claim_advance(kafka_store_t *k, int wait_ms, char *errstr,
                         size_t errstr_size) {
  txn_outcome_t o = TXN_DONE;
  switch (k->claiming) {
  case CLAIM_NONE:
    return 0;
  case CLAIM_FENCE:
    if (dc_kstore_txn_open(k, errstr, errstr_size))
      return -1;
    if ((o = dc_kstore_txn_init(k, wait_ms, errstr, errstr_size)) != TXN_DONE)
      break;
    k->claiming = CLAIM_WRITE;
    /* fall through */
  case CLAIM_WRITE:
    if ((o = write_claim(k, wait_ms, errstr, errstr_size)) != TXN_DONE)
      break;
    k->claiming = CLAIM_COMMIT;
    /* fall through */
  case CLAIM_COMMIT:
    if ((o = dc_kstore_txn_commit(k, wait_ms, errstr, errstr_size)) !=
        TXN_DONE)
      break;
    if (!k->claim->done) { /* the commit flushed it: served by this poll */
      rd_kafka_poll(k->txn, 0);
      if (!k->claim->done) {
        dc_seterr(errstr, errstr_size, "the claim's delivery report is "
                 "missing after its commit");
        o = TXN_ABORTED;
        break;
      }
    }
    k->claim_at = k->claim->offset;
    dc_kstore_release(&k->claim, 1);
    k->claim = NULL;
    k->claiming = CLAIM_READ;
    /* fall through */
  case CLAIM_READ:
    k->claiming = claim_read(k);
    if (k->claiming == CLAIM_WRITE)
      return claim_advance(k, wait_ms, errstr, errstr_size);
    if (k->claiming == CLAIM_NONE)
      log_claim_outcome(k);
    return 0;
  }
  if (o == TXN_PENDING)
    return 0;
  if (k->claim) {
    dc_kstore_release(&k->claim, 1);
    k->claim = NULL;
  }
  k->claiming = CLAIM_NONE;
  dc_kstore_txn_drop(k);
  return -1;
}

int dc_kstore_claim(kafka_store_t *k, const notify_t *nt, char *errstr,
                    size_t errstr_size) {
  int64_t deadline = dc_mono_ms() + k->timeout_ms;
  claim_begin(k);
  while (k->claiming != CLAIM_NONE) {
    int left = (int)(deadline - dc_mono_ms());
    if (left <= 0) {
      dc_seterr(errstr, errstr_size, "cannot claim topic %s at %s within %d "
               "ms (fencing earlier writers, committing the claim)", k->topic,
               k->bootstrap, k->timeout_ms);
      return -1;
    }
    if (claim_advance(k, left, errstr, errstr_size))
      return -1;
    if (k->claiming == CLAIM_READ &&
        dc_kstore_catch_up(k, k->claim_at + 1, false, &k->claim_at, 1, NULL,
                           nt, false, deadline + k->timeout_ms, errstr,
                           errstr_size))
      return -1;
  }
  return 0;
}

/* ---- heartbeats ------------------------------------------------------------ */

/* The heartbeat in flight came back: say when they start or stop failing. */
static void heartbeat_settle(kafka_store_t *k) {
  if (!k->hb || !k->hb->done)
    return;
  if (k->hb->err && !k->hb_failing)
    dc_log(DC_LOG_WARN, "kafka store: heartbeat to %s failed (%s); other "
           "servers will stop listing this one", k->bootstrap,
           rd_kafka_err2str(k->hb->err));
  else if (!k->hb->err && k->hb_failing)
    dc_log(DC_LOG_INFO, "kafka store: heartbeats to %s work again",
           k->bootstrap);
  k->hb_failing = k->hb->err != 0;
  if (!k->hb->err) {
    k->hb_acked_at = dc_mono_ms();
    k->hb_acked_offset = k->hb->offset;
  }
  free(k->hb);
  k->hb = NULL;
}

static void heartbeat_send(kafka_store_t *k, int64_t now) {
  char key[32], err[256];
  k->hb_sent = true;
  snprintf(key, sizeof(key), DC_LOG_NODE_PREFIX "%d", (int)k->node_id);
  if (dc_kstore_produce(k, k->producer, key, k->heartbeat, &k->hb, err,
                        sizeof(err)))
    dc_log(DC_LOG_WARN, "kafka store: %s", err);
  k->next_heartbeat = now + k->session_ms / 3;
}

/* The highest offset of the records d[0..n) that were written, -1 none. */
static int64_t last_written(delivery_t *const *d, size_t n) {
  int64_t last = -1;
  for (size_t i = 0; i < n; i++)
    if (d[i]->done && !d[i]->err && d[i]->offset > last)
      last = d[i]->offset;
  return last;
}

/* After a commit that did not finish in time: it is resumed until Kafka
 * says how it ended. Committed, its records are applied (and told to the
 * server, which had undone the change) like any record, and writes go on
 * once poll has read past them; aborted, or fenced, nothing of it counts. */
static void settle_uncertain(kafka_store_t *k) {
  if (k->settle_at < 0) {
    char why[512] = "";
    txn_outcome_t o = k->txn ? dc_kstore_txn_commit(k, 1, why, sizeof(why))
                             : TXN_FENCED;
    if (o == TXN_PENDING)
      return;
    k->settle_at = o == TXN_DONE ? last_written(k->unsure, k->n_unsure) : 0;
    dc_log(DC_LOG_INFO, "kafka store: the change that did not finish in time "
           "was %s%s%s", o == TXN_DONE ? "written" : "not written",
           why[0] ? ": " : "", why);
    dc_kstore_release(k->unsure, k->n_unsure);
    free(k->unsure);
    k->unsure = NULL;
    k->n_unsure = 0;
  }
  if (k->next_offset <= k->settle_at)
    return;
  dc_log(DC_LOG_INFO, "kafka store: %s answers again and this server has "
         "read the log past its uncertain change; writes resume",
         k->bootstrap);
  k->stale[0] = '\0';
  k->uncertain = false;
  k->settle_at = -1;
}

/* How much longer than the session this replica waits before it claims:
 * half a session for every live replica with a lower node id (the writer
 * aside). The lowest claims first and the others read its claim before
 * their turn: the claimant whose InitProducerId comes last wins, so two
 * claiming at once would fence each other rather than share the topic. */
static int64_t claim_delay(const kafka_store_t *k, int64_t now) {
  int64_t rank = 0;
  for (size_t i = 0; i < k->n_replicas; i++) {
    const replica_t *r = &k->replicas[i];
    rank += r->node < k->node_id && r->node != k->epoch_node &&
            now - r->seen < k->session_ms;
  }
  return rank * (k->session_ms / 2);
}

/* This replica reaches the log now, not only before the writer went
 * silent: a heartbeat of its own was acknowledged at least half a session
 * after the writer was last heard of (so a live writer would have
 * heartbeated before it), and its consumer has fetched past it (the log's
 * high watermark, from the fetches, is beyond it; the last stable offset
 * may stay behind an open transaction of a dead writer) and has applied
 * what came. A replica cut off from Kafka cannot tell a dead writer from
 * its own isolation, and its claim would depose a live writer as soon as
 * the network heals. */
static bool reaches_log(const kafka_store_t *k) {
  int64_t lo = 0, hi = -1;
  if (!k->hb_acked_at ||
      (k->epoch && k->hb_acked_at < k->writer_seen + k->session_ms / 2))
    return false;
  rd_kafka_get_watermark_offsets(k->consumer, k->topic, 0, &lo, &hi);
  return hi > k->hb_acked_offset && rd_kafka_queue_length(k->cq) == 0;
}

/* The writer's lease ran out but this replica does not reach the log
 * either: it holds its claim (said once per lapse), and heartbeats at
 * once if none is in flight (the proof it needs). */
static void claim_hold(kafka_store_t *k) {
  if (!k->hb)
    k->next_heartbeat = 0;
  if (!k->claim_held)
    dc_log(DC_LOG_WARN, "kafka store: node %d (epoch %lld) not heard of, "
           "but node %d does not yet show that it reaches %s itself (a "
           "heartbeat of its own acknowledged and fetched past since): not "
           "claiming until it does", (int)k->epoch_node, (long long)k->epoch,
           (int)k->node_id, k->bootstrap);
  k->claim_held = true;
}

/* The writer's lease ran out: claim. The claim goes on from each tick
 * without blocking the server's loop, and takes effect when poll reads it
 * back. */
static void claim_start(kafka_store_t *k, int64_t now) {
  if (now < k->next_claim)
    return;
  if (k->epoch)
    dc_log(DC_LOG_WARN, "kafka store: node %d (epoch %lld) not heard of for "
           "%lld ms; node %d claims topic %s (after %lld ms more for the "
           "live replicas with lower node ids)", (int)k->epoch_node,
           (long long)k->epoch, (long long)(now - k->writer_seen),
           (int)k->node_id, k->topic, (long long)claim_delay(k, now));
  claim_begin(k);
  k->next_claim = now + k->session_ms / 3;
}

/* Every LAG_REPORT_MS: how far behind the log this server is, when it
 * was behind at the last report too (a moment's lag is normal). */
#define LAG_REPORT_MS 30000
static void report_lag(kafka_store_t *k, int64_t now) {
  int64_t lo = 0, hi = 0;
  if (now < k->next_lag_report)
    return;
  k->next_lag_report = now + LAG_REPORT_MS;
  rd_kafka_get_watermark_offsets(k->consumer, k->topic, 0, &lo, &hi);
  int64_t lag = hi > k->next_offset ? hi - k->next_offset : 0;
  if (lag && k->lagging)
    dc_log(DC_LOG_WARN, "kafka store: %lld records behind %s (applied up to "
           "offset %lld, the log ends at %lld)", (long long)lag, k->topic,
           (long long)k->next_offset, (long long)hi);
  else if (!lag && k->lagging == 2)
    dc_log(DC_LOG_INFO, "kafka store: caught up with %s", k->topic);
  k->lagging = lag ? (k->lagging ? 2 : 1) : 0;
}

void dc_kstore_tick(kafka_store_t *k) {
  int64_t now = dc_mono_ms();
  char err[512];
  report_lag(k, now);
  if (!k->producer)
    return; /* a read replica neither heartbeats nor claims */
  rd_kafka_poll(k->producer, 0); /* serves delivery reports */
  if (k->txn)
    rd_kafka_poll(k->txn, 0);
  heartbeat_settle(k);
  if (k->uncertain)
    settle_uncertain(k);
  if (k->heartbeat && !k->hb && now >= k->next_heartbeat)
    heartbeat_send(k, now);
  bool expired = k->epoch == 0 ||
                 now - k->writer_seen >= k->session_ms + claim_delay(k, now);
  if (!expired)
    k->claim_held = false;
  if (dc_kstore_leading(k)) {
    dc_kstore_mirror(k);
  } else if (!k->claiming && expired && k->at_end) {
    if (reaches_log(k)) {
      k->claim_held = false;
      claim_start(k, now);
    } else {
      claim_hold(k);
    }
  }
  if (k->claiming && claim_advance(k, 1, err, sizeof(err)))
    dc_log(DC_LOG_WARN, "kafka store: claiming %s failed: %s", k->topic, err);
}

/* ---- the timer and the events the server watches ---------------------- */

int dc_kstore_events_open(kafka_store_t *k, char *errstr, size_t errstr_size) {
  int period = k->session_ms / 6 < 250 ? k->session_ms / 6 : 250;
  struct itimerspec its = {
      .it_interval = {period / 1000, (long)(period % 1000) * 1000000},
      .it_value = {period / 1000, (long)(period % 1000) * 1000000}};
  struct epoll_event pe = {.events = EPOLLIN}, te = {.events = EPOLLIN};
  k->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  k->event_fd = epoll_create1(EPOLL_CLOEXEC);
  pe.data.fd = k->event_pipe[0];
  te.data.fd = k->timer_fd;
  if (k->timer_fd < 0 || k->event_fd < 0 ||
      timerfd_settime(k->timer_fd, 0, &its, NULL) ||
      epoll_ctl(k->event_fd, EPOLL_CTL_ADD, k->event_pipe[0], &pe) ||
      epoll_ctl(k->event_fd, EPOLL_CTL_ADD, k->timer_fd, &te)) {
    dc_seterr(errstr, errstr_size, "cannot set up the store's timer: %s",
             strerror(errno));
    return -1;
  }
  return 0;
}

void dc_kstore_events_drain(kafka_store_t *k) {
  uint64_t n;
  ssize_t r = read(k->timer_fd, &n, sizeof(n));
  (void)r; /* EAGAIN: it had not fired */
}

/* Tells the others this server stops serving, so a successor need not
 * wait out the lease. Waits a little for it to be written. */
static void say_goodbye(kafka_store_t *k) {
  char key[32], err[256];
  delivery_t *d = NULL;
  char *bye = dc_log_heartbeat_value(k->node_id, NULL, 0, NULL, true);
  snprintf(key, sizeof(key), DC_LOG_NODE_PREFIX "%d", (int)k->node_id);
  if (bye && !dc_kstore_produce(k, k->producer, key, bye, &d, err,
                                sizeof(err))) {
    int wait = k->timeout_ms < 2000 ? k->timeout_ms : 2000;
    if (dc_kstore_await(k, k->producer, &d, 1, dc_mono_ms() + wait, err,
                        sizeof(err)))
      dc_log(DC_LOG_WARN, "kafka store: cannot say goodbye: %s", err);
    dc_kstore_release(&d, 1);
  }
  free(bye);
}

/* Frees a delivery now, or leaves it to its delivery report. */
static void delivery_drop(delivery_t **d) {
  if (*d)
    dc_kstore_release(d, 1);
  *d = NULL;
}

void dc_kstore_lead_close(kafka_store_t *k) {
  if (k->producer && dc_kstore_leading(k))
    dc_kstore_mirror_flush(k);
  if (k->producer && k->hb_sent)
    say_goodbye(k);
  delivery_drop(&k->hb);
  delivery_drop(&k->claim);
  free(k->heartbeat);
  k->heartbeat = NULL;
  dc_kstore_replicas_free(k);
  if (k->timer_fd >= 0)
    close(k->timer_fd);
  if (k->event_fd >= 0)
    close(k->event_fd);
  k->timer_fd = k->event_fd = -1;
}

/* ---- what the server asks ---------------------------------------------- */

int dc_kstore_advertise(dc_store_t *st, const dc_store_listener_t *l, size_t n,
                        char *errstr, size_t errstr_size) {
  kafka_store_t *k = (kafka_store_t *)st;
  if (k->read_only)
    return 0; /* not listed: it takes no writes */
  char *v = dc_log_heartbeat_value(k->node_id, l, n,
                                   dc_replica_key_public(k->key), false);
  if (!v) {
    dc_seterr(errstr, errstr_size, "cannot advertise %zu listeners (at most "
             "%d, names up to %d bytes, hosts up to %d)", n,
             DC_LOG_MAX_LISTENERS, DC_LOG_LISTENER_NAME_MAX, DC_LOG_HOST_MAX);
    return -1;
  }
  free(k->heartbeat);
  k->heartbeat = v;
  k->next_heartbeat = 0; /* at the next tick */
  return 0;
}

size_t dc_kstore_replicas(dc_store_t *st, const dc_store_replica_t **out,
                          int32_t *leader) {
  kafka_store_t *k = (kafka_store_t *)st;
  int64_t now = dc_mono_ms();
  size_t n = 0;
  bool writer_live = dc_kstore_leading(k);
  for (size_t i = 0; i < k->n_replicas; i++) {
    const replica_t *r = &k->replicas[i];
    if (r->node != k->node_id && now - r->seen >= k->session_ms)
      continue; /* silent for a whole session */
    writer_live |= r->node == k->epoch_node && k->epoch > 0;
    k->live[n++] = (dc_store_replica_t){r->node, r->n_listeners,
                                         r->listeners,
                                         r->has_key ? r->key : NULL};
  }
  for (size_t i = 1; i < n; i++) /* node id order */
    for (size_t j = i; j > 0 && k->live[j - 1].node_id > k->live[j].node_id;
         j--) {
      dc_store_replica_t t = k->live[j];
      k->live[j] = k->live[j - 1];
      k->live[j - 1] = t;
    }
  /* Itself the writer by the log, but fenced or still claiming: nobody
   * known writes now. */
  if (k->epoch_node == k->node_id && !dc_kstore_leading(k))
    writer_live = false;
  *out = k->live;
  *leader = writer_live ? k->epoch_node : -1;
  return n;
}
