/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the Kafka-topic store shared by its files, from the top:
 * store_kafka.c (commits, the vtable, opening), store_kafka_topic.c (the
 * topics at start-up), store_kafka_lead.c (heartbeats, the writer's
 * lease and claims), store_kafka_history.c (the audit history topic),
 * store_kafka_apply.c (applying the log to the cache),
 * store_kafka_replicas.c (the replica table), store_kafka_txn.c (the
 * writer's transactional producer, which Kafka fences) and
 * store_kafka_io.c (handles, produce, delivery reports).
 */
#ifndef DC_STORE_KAFKA_INT_H
#define DC_STORE_KAFKA_INT_H
#include "broker/store/store_kafka_opts.h"
#include "broker/store/store.h"
#include "broker/store/store_record.h"

#include <librdkafka/rdkafka.h>

#include <stdbool.h>
#include <stdint.h>

#define OFFSET_META "kafka.next_offset"
#define EPOCH_META "kafka.epoch"
#define EPOCH_NODE_META "kafka.epoch_node"

#define APPLY_BATCH 1000 /* records applied to the cache per transaction */
#define MAX_REPLICAS 64  /* servers tracked; heartbeats of more are logged */

/* A server as its latest heartbeat described it. */
typedef struct replica {
  int32_t node;
  int64_t seen;                  /* monotonic ms its heartbeat was applied */
  json_t *root;                  /* owns the listeners' strings */
  dc_store_listener_t *listeners; /* owned */
  size_t n_listeners;
  bool has_key;                  /* its replica key, as last published */
  uint8_t key[DC_REPLICA_KEY_LEN];
} replica_t;

/* What one produced record came to (the delivery report's opaque). Each
 * is its own allocation: a commit that gives up on a record marks it
 * abandoned and the delivery report, whenever it comes, frees it. */
typedef struct delivery {
  bool done, abandoned;
  rd_kafka_resp_err_t err;
  int64_t offset;
} delivery_t;

/* How a transactional step ended. */
typedef enum txn_outcome {
  TXN_DONE,    /* it completed */
  TXN_PENDING, /* not within the wait; it goes on, call again */
  TXN_ABORTED, /* the transaction was aborted: none of it was written */
  TXN_FENCED,  /* the producer is gone (fenced by a newer writer, or
                * failed for good): this store does not write */
} txn_outcome_t;

/* Where a claim is (store_kafka_lead.c). */
typedef enum claim_step {
  CLAIM_NONE,   /* not claiming */
  CLAIM_FENCE,  /* InitProducerId: fences every earlier writer */
  CLAIM_WRITE,  /* begin a transaction, produce the claim */
  CLAIM_COMMIT, /* commit it */
  CLAIM_READ,   /* read the log up to it: it leads, or lost to a higher epoch */
} claim_step_t;

/* Where applied records are told (the server's in-memory view), or
 * nothing (start-up, before the view is loaded from the cache). */
typedef struct notify {
  dc_store_apply_cb *cb;
  void *opaque;
} notify_t;

typedef struct kafka_store {
  dc_store_t base;
  dc_store_t *cache;         /* owned: the SQLite copy of the log */
  rd_kafka_t *producer;      /* owned; NULL for a read replica: heartbeats,
                              * history copies, admin requests */
  /* The writer's transactional producer (owned), while this store writes
   * or claims; NULL otherwise. Every replica of the topic uses one
   * transactional.id, so a claimant's InitProducerId makes the brokers
   * refuse every record of an earlier writer. */
  rd_kafka_t *txn;
  char *txn_id;              /* owned: that transactional.id */
  bool txn_aborting;         /* an abort goes on in the background */
  char *config_file;         /* owned copy, nullable: librdkafka properties */
  rd_kafka_t *consumer;      /* owned; assigned partition 0 */
  char *topic, *bootstrap;   /* owned */
  char *history_topic;       /* owned; NULL for a read replica */
  int timeout_ms;
  int session_ms;            /* a writer silent this long has lost its lease */
  int32_t node_id;
  /* This server's replica key (owned; NULL for a read replica): it signs
   * the alters the server forwards, its heartbeats publish it. */
  dc_replica_key_t *key;
  int64_t opened_at;         /* monotonic ms it began following the log */
  int64_t next_offset;       /* the next offset to apply */
  /* The consumer reached the end a read_committed reader may read (the
   * last stable offset: a transaction left open, by a writer that died,
   * ends there until a claimant's fencing aborts it) and nothing came
   * after. */
  bool at_end;
  /* The log's current writer: the highest claim applied (epoch 0 = none
   * yet, when every record is applied). Only records carrying this epoch
   * and node are applied; a fenced writer's are ignored everywhere. */
  int64_t epoch;
  int32_t epoch_node;
  int64_t my_epoch;          /* the epoch this store last claimed; 0 = none */
  int64_t writer_seen;       /* monotonic ms the writer was last heard of */
  int64_t next_lag_report;   /* monotonic ms */
  int lagging;               /* behind at the last report: 1, reported: 2 */
  /* A newer claim met while a commit read the log back: the commit stops
   * before it, and the next poll starts with it (owned). */
  rd_kafka_message_t *held;
  /* Why commits are refused ("" = they are not): until a restart when the
   * log holds what the server does not (diverged), or until the outcome
   * of a commit that did not finish in time is known (uncertain). */
  char stale[600];
  bool uncertain;
  /* Settling it: the commit is resumed from the tick. Once it committed,
   * writes resume when poll has applied its records (and told the
   * server, which had undone the change): up to settle_at. */
  delivery_t **unsure;       /* owned: the uncertain commit's records */
  size_t n_unsure;
  int64_t settle_at;         /* last offset to apply first; -1 = none */
  bool read_only;            /* a read replica: no producer, never writes */
  int event_pipe[2];         /* the consumer queue's io events */
  int timer_fd;              /* heartbeats and lease checks */
  int event_fd;              /* epoll over both: what the server watches */
  rd_kafka_queue_t *cq;      /* owned reference to the consumer queue */
  /* Heartbeats. */
  char *heartbeat;           /* this server's heartbeat value (owned) */
  delivery_t *hb;            /* the heartbeat in flight (owned), or NULL */
  bool hb_failing;           /* the last one failed (logged once) */
  /* The latest heartbeat Kafka acknowledged: when, and at which offset.
   * A replica claims only when it reaches the log (reaches_log). */
  int64_t hb_acked_at;       /* monotonic ms; 0 = never */
  int64_t hb_acked_offset;
  bool claim_held;           /* a claim held back for that (logged once) */
  bool hb_sent;              /* one was sent: say goodbye at close */
  int64_t next_heartbeat;    /* monotonic ms */
  claim_step_t claiming;     /* a claim in progress */
  delivery_t *claim;         /* its record (owned), CLAIM_WRITE..COMMIT */
  int64_t claim_at;          /* its offset once committed (CLAIM_READ) */
  int64_t next_claim;        /* no new claim before (monotonic ms) */
  /* The history topic: the writer copies every applied change's audit
   * rows there (from the cache, by log offset). */
  int64_t mirrored;          /* highest log offset read back from it */
  int64_t mirror_sent;       /* highest log offset produced to it */
  delivery_t **mirror;       /* those in flight (owned array) */
  size_t n_mirror;
  bool mirror_failing;       /* the last batch failed (logged once) */
  replica_t replicas[MAX_REPLICAS];
  size_t n_replicas;
  dc_store_replica_t live[MAX_REPLICAS]; /* dc_store_replicas' answer */
} kafka_store_t;

/* store_kafka_io.c */
/* Queues one record (value NULL = a tombstone) to the store's topic with
 * rk (k->producer or k->txn), stamped with this store's node and claimed
 * epoch; *dp gets its delivery (NULL when not queued). */
int dc_kstore_produce(kafka_store_t *k, rd_kafka_t *rk, const char *key,
                      const char *val, delivery_t **dp, char *errstr,
                      size_t errstr_size);
/* Waits for the delivery reports of d[0..n), sent with rk, until the
 * deadline. */
int dc_kstore_await(kafka_store_t *k, rd_kafka_t *rk, delivery_t **d, size_t n,
                    int64_t deadline, char *errstr, size_t errstr_size);
/* The caller is done with d[0..n): frees those reported, leaves the rest
 * to their delivery reports. */
void dc_kstore_release(delivery_t **d, size_t n);

/* A producer or consumer for the store's cluster; a transactional
 * producer when txn_id is not NULL. */
rd_kafka_t *dc_kstore_handle_new(const dc_kafka_store_opts_t *o,
                                 rd_kafka_type_t type, const char *txn_id,
                                 char *errstr, size_t errstr_size);
int dc_kstore_produce_to(kafka_store_t *k, rd_kafka_t *rk, const char *topic,
                         const char *key, const char *val, delivery_t **dp,
                         char *errstr, size_t errstr_size);

/* transaction.timeout.ms for a commit timeout (see store_kafka_io.c). */
int dc_kstore_txn_timeout_ms(int timeout_ms);

/* store_kafka_apply.c */
/* Applies the log up to (not including) `until` (or_end: or to the first
 * end of the partition, what read_committed readers may read now, if that
 * comes first) within the deadline, telling nt (nullable) each change.
 * Records at offsets[] are this store's own; *fenced (nullable) counts
 * those a newer claim made everyone ignore. With stop_at_claim, stops
 * before a claim newer than the current one and holds it for the next
 * poll. 0; DC_KSTORE_BEHIND with errstr when the log could not be read
 * that far in time (or the consumer failed): what was read is applied
 * and told by the next pass, nothing of the offsets[] records was
 * applied yet; -1 with errstr otherwise (the cache could not be written,
 * or some own records were applied before the pass ran out of time). */
#define DC_KSTORE_BEHIND 1
int dc_kstore_catch_up(kafka_store_t *k, int64_t until, bool or_end,
                       const int64_t *offsets, size_t n_ours, size_t *fenced,
                       const notify_t *nt, bool stop_at_claim,
                       int64_t deadline, char *errstr, size_t errstr_size);
/* The arrived records, without waiting: at most APPLY_BATCH a pass (the
 * store's pipe is written again when more may wait); each change told to
 * nt. 0, or -1 with errstr. */
int dc_kstore_apply_arrived(kafka_store_t *k, const notify_t *nt,
                            char *errstr, size_t errstr_size);
/* Frees what the pass read and did not apply (the store closes). */
void dc_kstore_apply_close(void);
/* A record header's integer value; def when absent or not a number. */
int64_t dc_kstore_header_int(const rd_kafka_message_t *m, const char *name,
                             int64_t def);

/* store_kafka_topic.c: the topics checked (created when missing), then
 * the log applied from the cache's offset to its end. */
int dc_kstore_check_topic(kafka_store_t *k, char *errstr, size_t errstr_size);
int dc_kstore_start_reading(kafka_store_t *k, char *errstr,
                            size_t errstr_size);

/* store_kafka_replicas.c */
/* A heartbeat read from the log (p's root and listeners are taken). */
void dc_kstore_heartbeat_seen(kafka_store_t *k, dc_log_record_t *p,
                              int32_t writer);
/* A claim was applied: its writer is alive as of now. */
void dc_kstore_claim_seen(kafka_store_t *k);
void dc_kstore_replicas_free(kafka_store_t *k);
const dc_replica_key_t *dc_kstore_own_key(dc_store_t *st);
int dc_kstore_replica_key(dc_store_t *st, int32_t node, const uint8_t **key);

/* store_kafka_txn.c: the writer's transactional producer. Each call
 * waits at most wait_ms; TXN_PENDING steps are resumed by calling again.
 * On TXN_FENCED the producer has been dropped (k->txn is NULL). */
int dc_kstore_txn_open(kafka_store_t *k, char *errstr, size_t errstr_size);
txn_outcome_t dc_kstore_txn_init(kafka_store_t *k, int wait_ms, char *errstr,
                                 size_t errstr_size);
txn_outcome_t dc_kstore_txn_begin(kafka_store_t *k, int wait_ms, char *errstr,
                                  size_t errstr_size);
txn_outcome_t dc_kstore_txn_commit(kafka_store_t *k, int wait_ms, char *errstr,
                                   size_t errstr_size);
/* Aborts the open transaction (what it produced is never read). */
txn_outcome_t dc_kstore_txn_abort(kafka_store_t *k, int wait_ms, char *errstr,
                                  size_t errstr_size);
/* Destroys the producer: this store no longer writes. */
void dc_kstore_txn_drop(kafka_store_t *k);

/* store_kafka_history.c */
/* The history topic's name for o. */
void dc_kstore_history_name(const dc_kafka_store_opts_t *o, char *buf,
                            size_t size);
/* Is m from the history topic? Then it is taken here (mirrored). */
bool dc_kstore_history_msg(kafka_store_t *k, const rd_kafka_message_t *m);
/* Writer: copies the audit rows past what the history topic holds,
 * unless copies are still in flight. Returns how many are in flight
 * afterwards (0: all copied), -1 while earlier ones are. */
int dc_kstore_mirror(kafka_store_t *k);
/* A writer stopping: copies what is left, waiting a few seconds at most. */
void dc_kstore_mirror_flush(kafka_store_t *k);
void dc_kstore_history_close(kafka_store_t *k);

/* store_kafka_lead.c */
/* Does this store hold the current claim (take writes)? */
bool dc_kstore_leading(const kafka_store_t *k);
/* Claims the log and waits until it leads, telling nt what it applies
 * on the way: fences earlier writers, commits a claim of the epoch after
 * the highest one read, reads it back. 0 (leading, or a newer writer
 * fenced this one meanwhile), or -1 with errstr. */
int dc_kstore_claim(kafka_store_t *k, const notify_t *nt, char *errstr,
                    size_t errstr_size);
/* Periodic work from poll: heartbeat when due; claim when the writer's
 * lease ran out and this store may write. */
void dc_kstore_tick(kafka_store_t *k);
/* The timer and the epoll set the server watches. */
int dc_kstore_events_open(kafka_store_t *k, char *errstr, size_t errstr_size);
/* Drains the timer. */
void dc_kstore_events_drain(kafka_store_t *k);
/* Says goodbye (a leaving heartbeat, so a successor need not wait out the
 * lease) and frees the replica table, timer and epoll set. */
void dc_kstore_lead_close(kafka_store_t *k);
int dc_kstore_advertise(dc_store_t *st, const dc_store_listener_t *l, size_t n,
                        char *errstr, size_t errstr_size);
size_t dc_kstore_replicas(dc_store_t *st, const dc_store_replica_t **out,
                          int32_t *leader);
#endif
