/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The writer's transactional producer. Every replica of a config topic
 * uses the same transactional.id, so the InitProducerId of a server that
 * claims the topic bumps the id's epoch: the brokers then refuse every
 * record and commit of an earlier writer (PRODUCER_FENCED), and abort the
 * transaction it had open. Replicas read with read_committed, so a record
 * a writer produced but could not commit is never read anywhere: a stale
 * writer cannot get a change applied, whatever it believes.
 *
 * librdkafka's transactional calls are resumable: one that does not finish
 * within its wait goes on in the background and is called again, so the
 * server's loop never blocks on them for long.
 */
#include "broker/store/store_kafka_int.h"
#include "common/log.h"
#include "common/text.h"

#include <librdkafka/rdkafka.h>

#include <stdio.h>
#include <stdlib.h>

int dc_kstore_txn_open(kafka_store_t *k, char *errstr, size_t errstr_size) {
  if (k->txn)
    return 0;
  const dc_kafka_store_opts_t o = {.bootstrap = k->bootstrap,
                                   .config_file = k->config_file,
                                   .timeout_ms = k->timeout_ms,
                                   .node_id = k->node_id};
  k->txn = dc_kstore_handle_new(&o, RD_KAFKA_PRODUCER, k->txn_id, errstr,
                                errstr_size);
  k->txn_aborting = false;
  return k->txn ? 0 : -1;
}

void dc_kstore_txn_drop(kafka_store_t *k) {
  if (!k->txn)
    return;
  /* Purged records get their delivery reports at once; serving them marks
   * their deliveries done (their owners free them) or frees the abandoned
   * ones, which nothing would free once the handle is gone. */
  rd_kafka_purge(k->txn, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_flush(k->txn, 1000);
  rd_kafka_destroy(k->txn);
  k->txn = NULL;
  k->my_epoch = 0;
}

/* What an error of a transactional call means for this store. A fatal
 * one (fenced by a newer writer, or the producer broke for good) drops
 * the producer; one that requires an abort aborts; a retriable one goes
 * on in the background. */
static txn_outcome_t txn_error(kafka_store_t *k, rd_kafka_error_t *e,
                               const char *what, bool committing, int wait_ms,
                               char *errstr, size_t errstr_size) {
  txn_outcome_t o;
  dc_seterr(errstr, errstr_size, "%s: %s", what, rd_kafka_error_string(e));
  if (rd_kafka_error_is_fatal(e)) {
    o = TXN_FENCED;
  } else if (rd_kafka_error_txn_requires_abort(e) && committing) {
    /* librdkafka 2.0.2 may still be in its committing state when a resumed
     * commit reports an abortable error, and an abort then trips its state
     * assertion: the producer is dropped instead. The transaction never
     * commits; the next claimant's fencing (or transaction.timeout.ms)
     * aborts it. This store writes again once it has claimed anew. */
    dc_kstore_txn_drop(k);
    o = TXN_ABORTED;
  } else if (rd_kafka_error_txn_requires_abort(e)) {
    char why[256];
    o = dc_kstore_txn_abort(k, wait_ms, why, sizeof(why)) == TXN_FENCED
            ? TXN_FENCED
            : TXN_ABORTED;
  } else if (rd_kafka_error_is_retriable(e)) {
    o = TXN_PENDING;
  } else {
    o = TXN_FENCED; /* a state this store does not expect: start over */
  }
  rd_kafka_error_destroy(e);
  if (o == TXN_FENCED)
    dc_kstore_txn_drop(k);
  return o;
}

txn_outcome_t dc_kstore_txn_init(kafka_store_t *k, int wait_ms, char *errstr,
                                 size_t errstr_size) {
  rd_kafka_error_t *e = rd_kafka_init_transactions(k->txn, wait_ms);
  return e ? txn_error(k, e, "fencing earlier writers (InitProducerId)",
                       false, wait_ms, errstr, errstr_size)
           : TXN_DONE;
}

txn_outcome_t dc_kstore_txn_begin(kafka_store_t *k, int wait_ms, char *errstr,
                                  size_t errstr_size) {
  if (k->txn_aborting) { /* the last abort went on in the background */
    txn_outcome_t o = dc_kstore_txn_abort(k, wait_ms, errstr, errstr_size);
    if (o == TXN_FENCED || k->txn_aborting)
      return o == TXN_FENCED ? o : TXN_PENDING;
  }
  rd_kafka_error_t *e = rd_kafka_begin_transaction(k->txn);
  return e ? txn_error(k, e, "beginning a transaction", false, wait_ms,
                       errstr, errstr_size)
           : TXN_DONE;
}

txn_outcome_t dc_kstore_txn_commit(kafka_store_t *k, int wait_ms, char *errstr,
                                   size_t errstr_size) {
  rd_kafka_error_t *e = rd_kafka_commit_transaction(k->txn, wait_ms);
  return e ? txn_error(k, e, "committing", true, wait_ms, errstr,
                       errstr_size)
           : TXN_DONE;
}

txn_outcome_t dc_kstore_txn_abort(kafka_store_t *k, int wait_ms, char *errstr,
                                  size_t errstr_size) {
  rd_kafka_error_t *e = rd_kafka_abort_transaction(k->txn, wait_ms);
  k->txn_aborting = false;
  if (!e)
    return TXN_ABORTED;
  dc_seterr(errstr, errstr_size, "aborting: %s", rd_kafka_error_string(e));
  /* A retriable abort goes on in the background (the transaction will not
   * commit); the next begin resumes it first. */
  txn_outcome_t o = rd_kafka_error_is_retriable(e) ? TXN_ABORTED : TXN_FENCED;
  k->txn_aborting = o == TXN_ABORTED;
  rd_kafka_error_destroy(e);
  if (o == TXN_FENCED)
    dc_kstore_txn_drop(k);
  return o;
}
