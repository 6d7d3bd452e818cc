/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The records of the Kafka-topic store's log (store_kafka.c), pure: bytes
 * and commits in and out, no I/O.
 *
 *   key "client:NAME" / "user:NAME", value (JSON):
 *     {"type":"client","name":"app-1","configs":{"acks":"1"},
 *      "time_ms":1700000000000,"principal":"User:alice","peer":"10.0.0.1:5",
 *      "api":"IncrementalAlterConfigs",
 *      "changes":[{"key":"acks","op":0,"old":null,"new":"1"}]}
 *   or no value (a tombstone: the entity named by the key has nothing);
 *   key "claim": a writer claiming the log (headers only).
 *   key "node:ID": a server's heartbeat, written by that server:
 *     {"node":2,"listeners":[{"name":"PLAINTEXT","host":"10.0.0.2",
 *      "port":9092}],"leaving":false,"key":"<64 hex digits>"}
 *   ("leaving": it is stopping cleanly and no longer serves; "key": the
 *   public half of its replica key, replica_key.h, which servers that
 *   may write publish and older ones lack).
 * Headers: DC_LOG_HDR_EPOCH and DC_LOG_HDR_NODE, the writer's epoch and
 * node id, in decimal.
 */
#ifndef DC_STORE_RECORD_H
#define DC_STORE_RECORD_H
#include "broker/auth/replica_key.h"
#include "broker/store/store.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DC_LOG_CLAIM_KEY "claim"
#define DC_LOG_HDR_EPOCH "dynconf-epoch"
#define DC_LOG_HDR_NODE "dynconf-node"
#define DC_LOG_NODE_PREFIX "node:"
/* Bounds on a heartbeat's listeners (more are refused when read). */
#define DC_LOG_MAX_LISTENERS 16
#define DC_LOG_LISTENER_NAME_MAX 63
#define DC_LOG_HOST_MAX 255

/* One record read back: the commit it stands for, its strings owned by
 * root (or by name for a tombstone). */
typedef struct dc_log_record {
  bool claim;     /* a writer's claim, not a change */
  bool heartbeat; /* a server's heartbeat (node = that server) */
  bool leaving;   /* heartbeat: the server is stopping */
  size_t n_listeners;                  /* heartbeat: its listeners, */
  dc_store_listener_t *listeners;      /* strings owned by root */
  bool has_key;                        /* heartbeat: it published a key */
  uint8_t key[DC_REPLICA_KEY_LEN];
  int64_t epoch;  /* its writer's epoch (0 = none) */
  int32_t node;   /* its writer's node (-1 = none) */
  dc_store_commit_t c;
  json_t *root;
  char *name;     /* tombstone: the entity from the key (owned) */
  const char **keys, **values;
  dc_store_change_t *changes;
} dc_log_record_t;

/* The key of an entity's records (caller frees; NULL on OOM). */
char *dc_log_record_key(int8_t type, const char *entity);
/* The value of one commit (caller frees); NULL when a key or value is not
 * valid UTF-8 (JSON cannot carry it) or memory ran out. */
char *dc_log_record_value(const dc_store_commit_t *c, int64_t time_ms);
/* The value of node's heartbeat, with its replica key (nullable: none)
 * (caller frees; NULL on OOM or a listener past the bounds above). Its
 * record key is DC_LOG_NODE_PREFIX + the node id. */
char *dc_log_heartbeat_value(int32_t node, const dc_store_listener_t *l,
                             size_t n, const uint8_t *key, bool leaving);
/* Reads one record (value NULL = a tombstone) written by (epoch, node)
 * into p: an entity of a known type with a canonical name, every config a
 * string an alter would accept, every change well formed. 0, or -1 with
 * why (p is then to be freed, and the record skipped). */
int dc_log_record_parse(const void *key, size_t key_len, const void *value,
                        size_t value_len, int64_t epoch, int32_t node,
                        dc_log_record_t *p, char *why, size_t why_size);
void dc_log_record_free(dc_log_record_t *p);

/* The history topic: one record per change the log applied, keyed like
 * the change, its value the audit rows of the log record at `offset`:
 *   {"offset":12,"type":"client","name":"app-1","time_ms":...,
 *    "principal":...,"peer":...,"api":...,"changes":[...]}
 * A builder collects the rows of one offset (all of one entity). */
typedef struct dc_log_history {
  json_t *root, *changes;
  int64_t offset;
} dc_log_history_t;
/* Starts a record with row's offset, entity and who; 0 or -1 (OOM). */
int dc_log_history_start(dc_log_history_t *h, const dc_audit_row_t *row);
int dc_log_history_add(dc_log_history_t *h, const dc_audit_row_t *row);
/* The value (caller frees; NULL on OOM), and the key (caller frees). */
char *dc_log_history_value(const dc_log_history_t *h);
char *dc_log_history_key(const dc_log_history_t *h);
void dc_log_history_free(dc_log_history_t *h);
/* Reads a history record into *root (caller json_decref()s) and calls cb
 * with each of its rows (strings owned by *root). 0, cb's non-zero, or
 * -1 with why when it is malformed. */
int dc_log_history_parse(const void *value, size_t len, json_t **root,
                         dc_store_history_cb *cb, void *opaque, char *why,
                         size_t why_size);
#endif
