/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The managed producer: one librdkafka producer handle at a time, rebuilt
 * from the agent's effective configuration whenever its generation moves,
 * without losing a message or a delivery report.
 *
 * Locking: produce calls hold `rw` for reading while they enqueue; a switch
 * takes it for writing (writer-preferring, so a busy producer cannot
 * starve it). Retiring handles are only touched by the polling thread.
 */
#include "agent/agent_int.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RETIRING 16

struct dynconf_producer_s {
  dynconf_t *dc; /* borrowed */
  dynconf_switch_policy_t policy;
  pthread_rwlock_t rw;
  rd_kafka_t *rk; /* current handle (owned) */
  int64_t gen;    /* agent generation rk was built from */
  bool transactional; /* the app set transactional.id */
  bool in_txn;        /* a transaction is open: switches wait for its end */
  unsigned long switcher; /* pthread_self() of a thread holding rw for an
                             ordered switch, 0 = none (atomic access) */
  /* Old handles still draining or waiting out a grace period (owned;
   * polling thread only). */
  struct retiring {
    rd_kafka_t *rk;
    int64_t not_before_ms; /* destroy no earlier than this */
  } retiring[MAX_RETIRING];
  int n_retiring;
  /* Topics produced to, so a new handle can be warmed up before it takes
   * over (guarded by topics_lock). */
  pthread_mutex_t topics_lock;
  char *topics[32];
  int n_topics;
  /* statistics, under stats_lock */
  pthread_mutex_t stats_lock;
  int64_t switches, switch_failures;
  int64_t drain_us_total, drain_us_max; /* ordered: writer lock held */
  int64_t blocked_calls, blocked_us_total, blocked_us_max, timed_out_calls;
};

static rd_kafka_t *new_handle(dynconf_producer_t *p, char *errstr,
                              size_t errstr_size) {
  rd_kafka_conf_t *conf = dynconf_effective_conf(p->dc);
  if (!conf) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, errstr_size);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return NULL;
  }
  if (p->transactional) {
    rd_kafka_error_t *e = rd_kafka_init_transactions(
        rk, p->dc->conf.producer_close_timeout_ms);
    if (e) {
      dc_seterr(errstr, errstr_size, "init_transactions: %s",
               rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
      rd_kafka_destroy(rk);
      return NULL;
    }
  }
  return rk;
}

dynconf_producer_t *dynconf_producer_new(dynconf_t *dc,
                                         dynconf_switch_policy_t policy,
                                         char *errstr, size_t errstr_size) {
  if (dc->type != RD_KAFKA_PRODUCER) {
    dc_seterr(errstr, errstr_size,
             "the agent was created for a consumer, not a producer");
    return NULL;
  }
  dynconf_producer_t *p = calloc(1, sizeof(*p));
  if (!p) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  p->dc = dc;
  p->policy = policy;
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init(&a);
  pthread_rwlockattr_setkind_np(&a,
                                PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&p->rw, &a);
  pthread_rwlockattr_destroy(&a);
  pthread_mutex_init(&p->stats_lock, NULL);
  pthread_mutex_init(&p->topics_lock, NULL);
  p->gen = dynconf_generation(dc);
  p->transactional = dc->app.transactional;
  p->rk = new_handle(p, errstr, errstr_size);
  if (!p->rk) {
    pthread_rwlock_destroy(&p->rw);
    pthread_mutex_destroy(&p->stats_lock);
    pthread_mutex_destroy(&p->topics_lock);
    free(p);
    return NULL;
  }
  return p;
}

static void remember_topic(dynconf_producer_t *p, const char *topic) {
  pthread_mutex_lock(&p->topics_lock);
  bool known = false;
  for (int i = 0; i < p->n_topics && !known; i++)
    known = !strcmp(p->topics[i], topic);
  if (!known && p->n_topics < (int)(sizeof(p->topics) / sizeof(p->topics[0]))) {
    char *t = strdup(topic);
    if (t)
      p->topics[p->n_topics++] = t;
  }
  pthread_mutex_unlock(&p->topics_lock);
}

/* A fresh librdkafka producer only learns a topic's leaders on its next
 * periodic scan (about a second) unless it is asked: look the known topics
 * up now, so the first message after a switch goes out at once. */
static void warm_up(dynconf_producer_t *p, rd_kafka_t *rk) {
  pthread_mutex_lock(&p->topics_lock);
  for (int i = 0; i < p->n_topics; i++) {
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, p->topics[i], NULL);
    if (t) {
      const struct rd_kafka_metadata *md = NULL;
      if (!rd_kafka_metadata(rk, 0, t, &md, 5000) && md)
        rd_kafka_metadata_destroy(md);
      rd_kafka_topic_destroy(t);
    }
  }
  pthread_mutex_unlock(&p->topics_lock);
}

/* With acks=0 a delivery report means "written to the socket": give the
 * broker a moment to read it before the connection is torn down. */
static int64_t grace_ms(rd_kafka_t *rk) {
  char v[16];
  size_t sz = sizeof(v);
  rd_kafka_topic_conf_t *tc =
      rd_kafka_conf_get_default_topic_conf((rd_kafka_conf_t *)rd_kafka_conf(rk));
  if (tc && rd_kafka_topic_conf_get(tc, "acks", v, &sz) == RD_KAFKA_CONF_OK &&
      !strcmp(v, "0"))
    return 500;
  return 0;
}

/* Hands an old handle to the retiring list (polling thread). */
static void retire(dynconf_producer_t *p, rd_kafka_t *old) {
  if (p->n_retiring == MAX_RETIRING) {
    rd_kafka_flush(old, -1); /* too many at once: drain this one now */
    rd_kafka_poll(old, (int)grace_ms(old));
    rd_kafka_destroy(old);
    return;
  }
  pthread_mutex_lock(&p->stats_lock);
  p->retiring[p->n_retiring].rk = old;
  p->retiring[p->n_retiring].not_before_ms = dc_mono_ms() + grace_ms(old);
  p->n_retiring++;
  pthread_mutex_unlock(&p->stats_lock);
}

rd_kafka_resp_err_t dynconf_producer_produce(dynconf_producer_t *p,
                                             const char *topic,
                                             int32_t partition,
                                             const void *payload, size_t len,
                                             const void *key, size_t keylen,
                                             void *msg_opaque) {
  /* A delivery report callback served by an ordered switch's flush may
   * produce again (a retry): that thread already holds the lock, and the
   * message joins the old handle, which the flush waits for too. */
  if (__atomic_load_n(&p->switcher, __ATOMIC_ACQUIRE) ==
      (unsigned long)pthread_self())
    return rd_kafka_producev(
        p->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE((void *)payload, len), RD_KAFKA_V_KEY(key, keylen),
        RD_KAFKA_V_OPAQUE(msg_opaque), RD_KAFKA_V_END);
  int64_t t0 = dc_mono_us();
  int r = pthread_rwlock_tryrdlock(&p->rw);
  if (r == EBUSY) {
    /* A switch is under way: wait for it, bounded. */
    int64_t at = dc_wall_ms() + p->dc->conf.producer_max_block_ms;
    struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000};
    r = pthread_rwlock_timedrdlock(&p->rw, &ts);
    int64_t waited = dc_mono_us() - t0;
    pthread_mutex_lock(&p->stats_lock);
    p->blocked_calls++;
    p->blocked_us_total += waited;
    if (waited > p->blocked_us_max)
      p->blocked_us_max = waited;
    if (r)
      p->timed_out_calls++;
    pthread_mutex_unlock(&p->stats_lock);
  }
  if (r)
    return RD_KAFKA_RESP_ERR__TIMED_OUT;
  remember_topic(p, topic);
  rd_kafka_resp_err_t err = rd_kafka_producev(
      p->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_VALUE((void *)payload, len), RD_KAFKA_V_KEY(key, keylen),
      RD_KAFKA_V_OPAQUE(msg_opaque), RD_KAFKA_V_END);
  pthread_rwlock_unlock(&p->rw);
  return err;
}

/* The partitions of the topics produced to, as librdkafka's metadata on
 * rk knows them (their offsets: -1, the latest). NULL when none. */
static rd_kafka_topic_partition_list_t *known_partitions(dynconf_producer_t *p,
                                                         rd_kafka_t *rk) {
  rd_kafka_topic_partition_list_t *parts =
      rd_kafka_topic_partition_list_new(16);
  pthread_mutex_lock(&p->topics_lock);
  for (int i = 0; i < p->n_topics; i++) {
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, p->topics[i], NULL);
    const struct rd_kafka_metadata *md = NULL;
    if (t && !rd_kafka_metadata(rk, 0, t, &md, 5000) && md)
      for (int j = 0; j < md->topic_cnt; j++)
        for (int k = 0; k < md->topics[j].partition_cnt; k++)
          rd_kafka_topic_partition_list_add(
              parts, md->topics[j].topic, md->topics[j].partitions[k].id)
              ->offset = -1;
    if (md)
      rd_kafka_metadata_destroy(md);
    if (t)
      rd_kafka_topic_destroy(t);
  }
  pthread_mutex_unlock(&p->topics_lock);
  if (!parts->cnt) {
    rd_kafka_topic_partition_list_destroy(parts);
    return NULL;
  }
  return parts;
}

/* With acks=0 a delivery report only says a request was written: a
 * drained handle's last requests may still wait in the broker while the
 * next handle's, on other connections, are appended first. A ListOffsets
 * to every leader, on the old handle's own connections, is answered only
 * once the broker has handled all that came before it on them: then the
 * old messages are in place. Bounded by 5 s; polling thread. */
static void acks0_barrier(dynconf_producer_t *p, rd_kafka_t *old) {
  if (!grace_ms(old))
    return; /* acknowledged: the drain was proof enough */
  rd_kafka_topic_partition_list_t *parts = known_partitions(p, old);
  if (!parts)
    return;
  rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(old, parts, 5000);
  if (err)
    dc_agent_log(p->dc, 4, "PRODUCER", "the acks=0 handle's last messages "
                 "could not be confirmed in place before the switch (%s): "
                 "their order against the next handle's is not known",
                 rd_kafka_err2str(err));
  rd_kafka_topic_partition_list_destroy(parts);
}

/* Builds the new handle and retires the old one. Polling thread. */
static void do_switch(dynconf_producer_t *p, int64_t gen) {
  char errstr[512];
  int64_t t0 = dc_mono_us();
  /* Build and warm the new handle while the old one keeps producing. */
  rd_kafka_t *nrk = new_handle(p, errstr, sizeof(errstr));
  if (!nrk)
    goto failed;
  warm_up(p, nrk);
  int64_t t1 = dc_mono_us();
  pthread_rwlock_wrlock(&p->rw);
  if (p->policy == DYNCONF_SWITCH_ORDERED) {
    /* No new message is sent until every old one has its delivery
     * report; each message ends within message.timeout.ms, so the loop
     * ends. Delivery reports are served here, on this thread. */
    __atomic_store_n(&p->switcher, (unsigned long)pthread_self(),
                     __ATOMIC_RELEASE);
    while (rd_kafka_flush(p->rk, 1000) == RD_KAFKA_RESP_ERR__TIMED_OUT)
      ;
    __atomic_store_n(&p->switcher, 0, __ATOMIC_RELEASE);
    acks0_barrier(p, p->rk);
  }
  rd_kafka_t *old = p->rk;
  p->rk = nrk;
  pthread_rwlock_unlock(&p->rw);
  retire(p, old);
  int64_t held = dc_mono_us() - t1; /* produce calls could wait this long */
  pthread_mutex_lock(&p->stats_lock);
  p->switches++;
  p->gen = gen;
  p->drain_us_total += held;
  if (held > p->drain_us_max)
    p->drain_us_max = held;
  pthread_mutex_unlock(&p->stats_lock);
  dc_agent_log(p->dc, 6, "PRODUCER",
               "switched to a new producer handle for generation %lld "
               "(%s switch: %.1f ms to build, %.1f ms with produce paused)",
               (long long)gen,
               p->policy == DYNCONF_SWITCH_FAST ? "fast" : "ordered",
               (double)(t1 - t0) / 1000.0, (double)held / 1000.0);
  return;
failed:
  /* Keep producing on the old handle; do not retry this generation. */
  pthread_mutex_lock(&p->stats_lock);
  p->gen = gen;
  p->switch_failures++;
  pthread_mutex_unlock(&p->stats_lock);
  dc_agent_log(p->dc, 3, "PRODUCER",
               "librdkafka refused the new configuration (generation %lld), "
               "keeping the current handle: %s",
               (long long)gen, errstr);
}

/* Serves the retiring handles and frees the drained ones. */
static void poll_retiring(dynconf_producer_t *p) {
  int64_t now = dc_mono_ms();
  for (int i = 0; i < p->n_retiring;) {
    rd_kafka_t *rk = p->retiring[i].rk;
    rd_kafka_poll(rk, 0);
    if (rd_kafka_outq_len(rk) == 0 && now >= p->retiring[i].not_before_ms) {
      rd_kafka_destroy(rk);
      pthread_mutex_lock(&p->stats_lock);
      p->retiring[i] = p->retiring[--p->n_retiring];
      pthread_mutex_unlock(&p->stats_lock);
    } else {
      i++;
    }
  }
}

int dynconf_producer_poll(dynconf_producer_t *p, int timeout_ms) {
  int served = dynconf_poll(p->dc, 0);
  int64_t gen = dynconf_generation(p->dc);
  if (gen != p->gen && !p->in_txn)
    do_switch(p, gen);
  poll_retiring(p);
  rd_kafka_poll(p->rk, timeout_ms);
  return served;
}

rd_kafka_resp_err_t dynconf_producer_flush(dynconf_producer_t *p,
                                           int timeout_ms) {
  int64_t deadline = dc_mono_ms() + (timeout_ms < 0 ? INT32_MAX : timeout_ms);
  for (int i = 0; i < p->n_retiring; i++) {
    int64_t left = deadline - dc_mono_ms();
    rd_kafka_flush(p->retiring[i].rk, left > 0 ? (int)left : 0);
    /* ...and wait out its grace period, within the deadline. */
    int64_t until = p->retiring[i].not_before_ms;
    if (until > deadline)
      until = deadline;
    int64_t wait = until - dc_mono_ms();
    if (wait > 0)
      rd_kafka_poll(p->retiring[i].rk, (int)wait);
  }
  poll_retiring(p);
  int64_t left = deadline - dc_mono_ms();
  rd_kafka_resp_err_t err = rd_kafka_flush(p->rk, left > 0 ? (int)left : 0);
  /* Retiring handles still waiting out a grace period have nothing left
   * to deliver; only undelivered messages make this a timeout. */
  for (int i = 0; !err && i < p->n_retiring; i++)
    if (rd_kafka_outq_len(p->retiring[i].rk) > 0)
      err = RD_KAFKA_RESP_ERR__TIMED_OUT;
  return err;
}

rd_kafka_t *dynconf_producer_handle(dynconf_producer_t *p) { return p->rk; }

rd_kafka_error_t *dynconf_producer_begin_transaction(dynconf_producer_t *p) {
  rd_kafka_error_t *e = rd_kafka_begin_transaction(p->rk);
  if (!e)
    p->in_txn = true;
  return e;
}

rd_kafka_error_t *dynconf_producer_commit_transaction(dynconf_producer_t *p,
                                                      int timeout_ms) {
  rd_kafka_error_t *e = rd_kafka_commit_transaction(p->rk, timeout_ms);
  if (!e)
    p->in_txn = false;
  return e;
}

rd_kafka_error_t *dynconf_producer_abort_transaction(dynconf_producer_t *p,
                                                     int timeout_ms) {
  rd_kafka_error_t *e = rd_kafka_abort_transaction(p->rk, timeout_ms);
  if (!e)
    p->in_txn = false;
  return e;
}

int64_t dynconf_producer_switches(dynconf_producer_t *p) {
  pthread_mutex_lock(&p->stats_lock);
  int64_t n = p->switches;
  pthread_mutex_unlock(&p->stats_lock);
  return n;
}

char *dynconf_producer_stats_json(dynconf_producer_t *p) {
  dc_buf_t b;
  dc_buf_init(&b);
  pthread_mutex_lock(&p->stats_lock);
  dc_buf_printf(&b,
                "{\"policy\":\"%s\",\"generation\":%lld,\"switches\":%lld,"
                "\"switch_failures\":%lld,\"switch_us_avg\":%lld,"
                "\"switch_us_max\":%lld,\"blocked_calls\":%lld,"
                "\"blocked_us_avg\":%lld,\"blocked_us_max\":%lld,"
                "\"timed_out_calls\":%lld,\"retiring_handles\":%d}",
                p->policy == DYNCONF_SWITCH_FAST ? "fast" : "ordered",
                (long long)p->gen, (long long)p->switches,
                (long long)p->switch_failures,
                (long long)(p->switches ? p->drain_us_total / p->switches : 0),
                (long long)p->drain_us_max, (long long)p->blocked_calls,
                (long long)(p->blocked_calls
                                ? p->blocked_us_total / p->blocked_calls
                                : 0),
                (long long)p->blocked_us_max, (long long)p->timed_out_calls,
                p->n_retiring);
  pthread_mutex_unlock(&p->stats_lock);
  dc_buf_append(&b, "", 1);
  if (b.err) {
    dc_buf_free(&b);
    return NULL;
  }
  return (char *)b.data;
}

/* Delivers what it can, then fails the rest with delivery reports. */
static void retire_now(rd_kafka_t *rk, int timeout_ms) {
  rd_kafka_flush(rk, timeout_ms);
  if (rd_kafka_outq_len(rk) > 0) {
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_flush(rk, 5000); /* serves the purge delivery reports */
  }
  int64_t g = grace_ms(rk);
  if (g)
    rd_kafka_poll(rk, (int)g);
  rd_kafka_destroy(rk);
}

void dynconf_producer_destroy(dynconf_producer_t *p) {
  if (!p)
    return;
  int t = p->dc->conf.producer_close_timeout_ms;
  for (int i = 0; i < p->n_retiring; i++)
    retire_now(p->retiring[i].rk, t);
  retire_now(p->rk, t);
  for (int i = 0; i < p->n_topics; i++)
    free(p->topics[i]);
  pthread_mutex_destroy(&p->topics_lock);
  pthread_rwlock_destroy(&p->rw);
  pthread_mutex_destroy(&p->stats_lock);
  free(p);
}
