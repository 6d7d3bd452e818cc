/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Kafka-topic store: the config log lives in a one-partition topic on
 * a Kafka cluster; a local SQLite cache in the data directory holds what
 * has been applied and the offset it reached, in the same transaction, so
 * a restart resumes from that offset and an empty data directory rebuilds
 * from the topic. Reads (load, history, export) are served by the cache.
 *
 * Each record: key "client:NAME" or "user:NAME"; value the entity's whole
 * override set after the change plus the audit rows that explain it; an
 * entity left empty also gets a tombstone, so a compacted topic keeps
 * exactly the current state (format: store_record.h).
 *
 * One writer at a time, chosen through the log and fenced by the
 * brokers: every store that may write heartbeats (a record naming its
 * listeners) and claims the topic when the writer has not been heard of
 * for a session timeout, or at once when nobody ever wrote the topic or
 * it wrote it last itself. A claim first fences every earlier writer
 * (InitProducerId of the topic's one transactional.id), then commits a
 * claim record of the next epoch; claims and changes are written in
 * transactions and every store reads with read_committed, so the brokers
 * refuse whatever a fenced writer still sends and nobody ever reads it.
 * A fenced writer learns it at its next commit (refused with
 * DC_STORE_NOT_WRITER) and follows from then on (store_kafka_lead.c,
 * store_kafka_txn.c). Every record also carries its writer's epoch and
 * node, and every store applies only the latest claim's records: on a
 * cluster that does not fence (librdkafka's mock) that still keeps a
 * stale writer's later records out. dc_store_replicas lists the live
 * servers and the writer.
 *
 * Every store follows the topic as it grows (dc_store_event_fd and
 * dc_store_poll hand over what others write, and run the heartbeats and
 * the lease on a timer): read replicas (read_only) serve what the writer
 * wrote and never write, heartbeat or claim. The writer copies every
 * applied change's audit rows to the history topic
 * (store_kafka_history.c).
 *
 * A record of the current claim that this store did not write (two writers
 * with one node id), met while a commit reads the log back, is applied to
 * the cache and logged, and commits are refused until a restart re-reads
 * the topic. A commit that did not finish within the timeout goes on in
 * the background; commits are refused until Kafka tells how it ended and,
 * if it was written, poll has applied it like any record.
 */
#ifndef DC_STORE_KAFKA_H
#define DC_STORE_KAFKA_H
#include "broker/store/store.h"

#include <stdbool.h>
#include <stdint.h>

#include "broker/store/store_kafka_opts.h"

/* Opens the cache, connects, checks the topic (it must exist with exactly
 * one partition; it is created with one partition, cleanup.policy=compact
 * and min.insync.replicas=2 when the cluster lets us), and applies the
 * log from the cache's offset to its end. 0, or -1 with errstr naming the
 * topic and cluster. The caller owns *out (dc_store_close). */
int dc_store_open_kafka(const dc_kafka_store_opts_t *o, dc_store_t **out,
                        char *errstr, size_t errstr_size);

/* Reads the history topic named by o (no store opened, no lock taken):
 * each audit row once, in log order, entity NULL = all. 0, cb's
 * non-zero, or -1 with errstr. */
int dc_kafka_history(const dc_kafka_store_opts_t *o, const char *entity,
                     dc_store_history_cb *cb, void *opaque, char *errstr,
                     size_t errstr_size);
#endif
