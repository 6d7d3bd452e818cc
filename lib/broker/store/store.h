/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The config store: durable home of every entity's dynamic configs and the
 * audit history. A small vtable so a replicated backend (a Kafka topic) can
 * replace SQLite later without touching the handlers.
 *
 * Threading: a store is used by one thread at a time (dynconfd's event
 * loop); the history reader may run in another process at the same time.
 */
#ifndef DC_STORE_H
#define DC_STORE_H
#include "broker/auth/replica_key.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dc_store dc_store_t;

/* One audit row: what happened to one key. */
typedef struct dc_store_change {
  const char *key;
  int8_t op;             /* DC_OP_SET/DELETE/APPEND/SUBTRACT (proto.h) */
  const char *old_value; /* NULL = key was absent */
  const char *new_value; /* NULL = key is now absent */
} dc_store_change_t;

/* One accepted alter of one resource: the entity's complete new override
 * set plus the audit rows explaining it. Committed atomically. */
typedef struct dc_store_commit {
  int8_t resource_type;
  const char *entity;    /* client-id or "<default>" */
  const char *principal; /* authenticated principal, "User:ANONYMOUS" */
  const char *peer;      /* "host:port" of the connection */
  const char *api;       /* "AlterConfigs" or "IncrementalAlterConfigs" */
  int64_t time_ms;       /* the audit rows' time; 0 = now */
  size_t n_configs;      /* new full set, n_configs pairs */
  const char *const *keys;
  const char *const *values;
  size_t n_changes;
  const dc_store_change_t *changes;
  /* The offset of the record this commit came from in a replicated log;
   * kept with the audit rows by dc_store_sqlite_commit_meta only. */
  int64_t log_offset;
} dc_store_commit_t;

typedef struct dc_audit_row {
  int64_t seq;     /* strictly increasing */
  int64_t time_ms; /* unix epoch milliseconds */
  const char *principal, *peer, *api;
  int8_t resource_type;
  const char *entity, *key;
  int8_t op;
  const char *old_value, *new_value; /* NULL = absent */
  int64_t log_offset; /* the log record it came from; -1 = none */
} dc_audit_row_t;

/* Callbacks return 0 to continue, non-zero to stop (that value is then
 * returned by the iterating call). Strings are valid during the call only. */
typedef int(dc_store_load_cb)(void *opaque, int8_t resource_type,
                              const char *entity, const char *key,
                              const char *value);
typedef int(dc_store_history_cb)(void *opaque, const dc_audit_row_t *row);

/* Opens (creating if needed) the SQLite store in data_dir/dynconf.db: WAL
 * mode, synchronous=FULL, so a returned commit survives kill -9 and power
 * loss. The store is the data directory's only writer: it holds an
 * exclusive lock on data_dir/.lock (holding this process's pid) until
 * dc_store_close() or exit, and a second read-write open of the directory,
 * from this or another process, fails naming the holder's pid. Returns 0
 * or -1 with errstr. The caller owns *out and releases it with
 * dc_store_close(). */
int dc_store_open_sqlite(const char *data_dir, dc_store_t **out, char *errstr,
                         size_t errstr_size);
/* Opens an existing store read-only (for printing history while the
 * daemon runs); takes no lock. */
int dc_store_open_sqlite_ro(const char *data_dir, dc_store_t **out,
                            char *errstr, size_t errstr_size);
void dc_store_close(dc_store_t *st);

/* Calls cb for every stored (type, entity, key, value), ordered by type,
 * entity, key. 0, the callback's non-zero value, or -1 with errstr. */
int dc_store_load(dc_store_t *st, dc_store_load_cb *cb, void *opaque,
                  char *errstr, size_t errstr_size);
/* Atomically replaces the entity's override set and appends the audit
 * rows; durable when it returns 0. -1 with errstr on failure, in which
 * case nothing changed. */
int dc_store_commit(dc_store_t *st, const dc_store_commit_t *c, char *errstr,
                    size_t errstr_size);
/* Commits n alters (of n different entities) in one atomic, durable step:
 * all of them, or with -1 none. One request's alters cost one sync.
 * A replicated store that does not write (another server does, or a newer
 * writer fenced this one) answers DC_STORE_NOT_WRITER: nothing was
 * written, and the client may retry on the writer. DC_STORE_UNSURE: see
 * below. */
#define DC_STORE_NOT_WRITER (-3)
/* A replicated store's commit that did not finish in time and may still
 * be written: the caller cannot say whether it was stored. */
#define DC_STORE_UNSURE (-4)
int dc_store_commit_many(dc_store_t *st, const dc_store_commit_t *c, size_t n,
                         char *errstr, size_t errstr_size);
/* Audit rows in order; entity NULL = all entities. */
int dc_store_history(dc_store_t *st, const char *entity,
                     dc_store_history_cb *cb, void *opaque, char *errstr,
                     size_t errstr_size);

/* A named integer kept with the data (a log's applied offset, its
 * writer's epoch). */
typedef struct dc_store_meta {
  const char *name;
  int64_t value;
} dc_store_meta_t;

/* SQLite only, for a backend that keeps a local copy of a log (the Kafka
 * store's cache): commits c[0..n) and meta[0..n_meta) (either may be
 * empty) in one atomic, durable step. */
int dc_store_sqlite_commit_meta(dc_store_t *st, const dc_store_commit_t *c,
                                size_t n, const dc_store_meta_t *meta,
                                size_t n_meta, char *errstr,
                                size_t errstr_size);
/* SQLite only: up to max audit rows kept with a log offset above after,
 * in log order (offset, then row), to cb. 0, cb's non-zero, or -1. */
int dc_store_sqlite_audit_since(dc_store_t *st, int64_t after, size_t max,
                                dc_store_history_cb *cb, void *opaque,
                                char *errstr, size_t errstr_size);
/* Reads a named integer: 1 and *value when set, 0 when not, -1 with
 * errstr. */
int dc_store_sqlite_meta(dc_store_t *st, const char *name, int64_t *value,
                         char *errstr, size_t errstr_size);

/* A change another server wrote, as this store applied it: the entity's
 * whole new set (n == 0: the entity is gone). Strings are valid during
 * the call only. */
typedef void(dc_store_apply_cb)(void *opaque, int8_t resource_type,
                                const char *entity, size_t n,
                                const char *const *keys,
                                const char *const *values);

/* For a store that follows a log others write (a Kafka topic): an fd that
 * becomes readable when new records may be there, or -1 when the store
 * has none (SQLite). */
int dc_store_event_fd(dc_store_t *st);
/* Applies what has arrived without waiting, calling cb for each change
 * (the caller updates its in-memory view). 0, or -1 with errstr (the
 * records stay for the next call). */
int dc_store_poll(dc_store_t *st, dc_store_apply_cb *cb, void *opaque,
                  char *errstr, size_t errstr_size);

/* How far a store that follows a replicated log has applied it (the next
 * offset to apply): it only grows, and replicas at the same position hold
 * the same state. -1 for a store without a log (SQLite). */
int64_t dc_store_position(dc_store_t *st);

/* One listener of a server, as clients should reach it (Metadata). */
typedef struct dc_store_listener {
  const char *name; /* e.g. "PLAINTEXT", "SASL_SSL" */
  const char *host;
  int32_t port;
} dc_store_listener_t;

/* A live server of a replicated store (this one included). */
typedef struct dc_store_replica {
  int32_t node_id;
  size_t n_listeners;
  const dc_store_listener_t *listeners;
  /* The public half of its replica key (DC_REPLICA_KEY_LEN bytes) as its
   * latest heartbeat published it; NULL: none (an older server). */
  const uint8_t *key;
} dc_store_replica_t;

/* For a replicated store: tells the other servers how clients reach this
 * one (copied). 0, or -1 with errstr; a store without replicas ignores it. */
int dc_store_advertise(dc_store_t *st, const dc_store_listener_t *l, size_t n,
                       char *errstr, size_t errstr_size);
/* The servers of a replicated store known to be alive, in node id order,
 * valid until the next call into the store; *leader gets the node that
 * takes writes (-1 when none is known). A store without replicas returns
 * 0 with *leader = DC_STORE_NOT_REPLICATED. */
#define DC_STORE_NOT_REPLICATED (-2)
size_t dc_store_replicas(dc_store_t *st, const dc_store_replica_t **out,
                         int32_t *leader);
/* This server's own replica key, which signs the alters it forwards
 * (made at open, kept in memory only; its public half goes out in the
 * heartbeats); NULL for a read replica or a store without replicas. */
const dc_replica_key_t *dc_store_own_key(dc_store_t *st);
/* The public key node's latest heartbeat published, whether or not the
 * node is live (a goodbye forgets it): 1 with *key (valid until the next
 * call into the store); 0 when none is known; DC_STORE_NOT_YET when none
 * is known but this server has followed the log for less than a session
 * timeout (heartbeats it has not read yet may name one). */
#define DC_STORE_NOT_YET (-5)
int dc_store_replica_key(dc_store_t *st, int32_t node, const uint8_t **key);

/* Backend vtable (for implementers). event_fd, poll, advertise, replicas,
 * own_key, replica_key and position may be NULL. */
typedef struct dc_store_ops {
  void (*close)(dc_store_t *st);
  int (*load)(dc_store_t *st, dc_store_load_cb *cb, void *opaque, char *errstr,
              size_t errstr_size);
  int (*commit)(dc_store_t *st, const dc_store_commit_t *c, size_t n,
                char *errstr, size_t errstr_size);
  int (*history)(dc_store_t *st, const char *entity, dc_store_history_cb *cb,
                 void *opaque, char *errstr, size_t errstr_size);
  int (*event_fd)(dc_store_t *st);
  int (*poll)(dc_store_t *st, dc_store_apply_cb *cb, void *opaque,
              char *errstr, size_t errstr_size);
  int (*advertise)(dc_store_t *st, const dc_store_listener_t *l, size_t n,
                   char *errstr, size_t errstr_size);
  size_t (*replicas)(dc_store_t *st, const dc_store_replica_t **out,
                     int32_t *leader);
  const dc_replica_key_t *(*own_key)(dc_store_t *st);
  int (*replica_key)(dc_store_t *st, int32_t node, const uint8_t **key);
  int64_t (*position)(dc_store_t *st);
} dc_store_ops_t;

struct dc_store {
  const dc_store_ops_t *ops;
};
#endif
