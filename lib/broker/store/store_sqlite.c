/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SQLite backend of the config store: data_dir/dynconf.db in WAL mode with
 * synchronous=FULL, so a commit that returned survives kill -9 and power
 * loss, and a read-only reader in another process (history printing) never
 * blocks the writer. One read-write opener per data directory: it holds an
 * exclusive flock on data_dir/.lock (which names its pid) until close.
 *
 * Ownership: dc_store_open_sqlite*() allocates one sqlite_store_t holding
 * the connection and every prepared statement; sqlite_close() finalizes
 * and frees all of it. Strings handed to callbacks belong to SQLite and
 * are valid during the call only.
 */
#include "broker/store/store.h"
#include "common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define DB_FILE "dynconf.db"
/* The read-write opener's exclusive lock; holds the owner's pid. */
#define LOCK_FILE ".lock"
/* PRAGMA user_version of the schema this code writes. Bump it and add a
 * step to migrate() when the schema changes; 0 means "empty database". */
#define SCHEMA_VERSION 3
#define BUSY_TIMEOUT_MS 5000

/* Prepared statements, kept for the store's lifetime. Index into stmt[]. */
enum {
  S_BEGIN,
  S_COMMIT,
  S_ROLLBACK,
  S_DELETE,
  S_INSERT,
  S_AUDIT,
  S_LOAD,
  S_HIST_ALL,
  S_HIST_ENTITY,
  S_META_GET,
  S_META_SET,
  S_AUDIT_SINCE,
  S__COUNT
};

static const char *const stmt_sql[S__COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_DELETE] = "DELETE FROM configs WHERE resource_type = ?1 AND entity = ?2",
    [S_INSERT] = "INSERT INTO configs (resource_type, entity, key, value) "
                 "VALUES (?1, ?2, ?3, ?4)",
    [S_AUDIT] = "INSERT INTO audit (time_ms, principal, peer, api, "
                "resource_type, entity, key, op, old_value, new_value, "
                "log_offset) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [S_LOAD] = "SELECT resource_type, entity, key, value FROM configs "
               "ORDER BY resource_type, entity, key",
    [S_HIST_ALL] = "SELECT seq, time_ms, principal, peer, api, resource_type, "
                   "entity, key, op, old_value, new_value FROM audit "
                   "ORDER BY seq",
    [S_HIST_ENTITY] = "SELECT seq, time_ms, principal, peer, api, "
                      "resource_type, entity, key, op, old_value, new_value "
                      "FROM audit WHERE entity = ?1 ORDER BY seq",
    [S_META_GET] = "SELECT value FROM meta WHERE name = ?1",
    [S_META_SET] = "INSERT INTO meta (name, value) VALUES (?1, ?2) "
                   "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    [S_AUDIT_SINCE] = "SELECT seq, time_ms, principal, peer, api, "
                      "resource_type, entity, key, op, old_value, new_value, "
                      "log_offset FROM audit WHERE log_offset > ?1 "
                      "ORDER BY log_offset, seq LIMIT ?2",
};

/* Version 3 keeps, for a replicated backend's copy, the log offset of the
 * record each audit row came from. */
static const char schema_v3[] =
    "ALTER TABLE audit ADD COLUMN log_offset INTEGER;"
    "CREATE INDEX IF NOT EXISTS audit_log_offset ON audit (log_offset) "
    "WHERE log_offset IS NOT NULL;";

/* Version 2 adds named integers kept with the data in the same
 * transactions (a replicated backend's applied log offset). */
static const char schema_v2[] =
    "CREATE TABLE IF NOT EXISTS meta ("
    " name TEXT PRIMARY KEY,"
    " value INTEGER NOT NULL);";

/* Version 1 schema. The configs primary key doubles as the load order. */
static const char schema_v1[] =
    "CREATE TABLE IF NOT EXISTS configs ("
    " resource_type INTEGER NOT NULL,"
    " entity TEXT NOT NULL,"
    " key TEXT NOT NULL,"
    " value TEXT NOT NULL,"
    " PRIMARY KEY (resource_type, entity, key));"
    "CREATE TABLE IF NOT EXISTS audit ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " time_ms INTEGER NOT NULL,"
    " principal TEXT,"
    " peer TEXT,"
    " api TEXT,"
    " resource_type INTEGER NOT NULL,"
    " entity TEXT NOT NULL,"
    " key TEXT NOT NULL,"
    " op INTEGER NOT NULL,"
    " old_value TEXT,"
    " new_value TEXT);"
    "CREATE INDEX IF NOT EXISTS audit_entity ON audit (entity, seq);";

typedef struct sqlite_store {
  dc_store_t base; /* first: dc_store_t * converts to sqlite_store_t * */
  sqlite3 *db;
  char *path;     /* owned: data_dir/dynconf.db, for error messages */
  int read_only;
  int lock_fd;    /* LOCK_FILE, flock()ed while open; -1 = none (read-only) */
  int in_cb;      /* a callback is running: refuse re-entry */
  sqlite3_stmt *stmt[S__COUNT];
} sqlite_store_t;

__attribute__((format(printf, 3, 4))) static int
set_err(char *errstr, size_t errstr_size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dc_vseterr(errstr, errstr_size, fmt, ap);
  va_end(ap);
  return -1;
}

static int db_err(sqlite_store_t *s, char *errstr, size_t errstr_size,
                  const char *what) {
  return set_err(errstr, errstr_size, "%s: %s: %s", s->path, what,
                 sqlite3_errmsg(s->db));
}

/* Steps a non-query statement once, then resets it and drops its bindings
 * (bound strings are SQLITE_STATIC and belong to the caller). */
static int exec_stmt(sqlite_store_t *s, int idx, const char *what,
                     char *errstr, size_t errstr_size) {
  sqlite3_stmt *stmt = s->stmt[idx];
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    db_err(s, errstr, errstr_size, what); /* before reset: keeps the message */
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

/* Runs a single-row pragma and copies its text answer into out. */
static int pragma_text(sqlite_store_t *s, const char *sql, char *out,
                       size_t out_size, char *errstr, size_t errstr_size) {
  sqlite3_stmt *stmt = NULL;
  int rc = sqlite3_prepare_v2(s->db, sql, -1, &stmt, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(stmt);
  if (rc != SQLITE_ROW) {
    db_err(s, errstr, errstr_size, sql);
    sqlite3_finalize(stmt);
    return -1;
  }
  const unsigned char *t = sqlite3_column_text(stmt, 0);
  snprintf(out, out_size, "%s", t ? (const char *)t : "");
  sqlite3_finalize(stmt);
  return 0;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const dc_store_ops_t sqlite_ops;

/* ---- vtable ---------------------------------------------------------- */

static void sqlite_close(dc_store_t *st) {
  sqlite_store_t *s = (sqlite_store_t *)st;
  for (int i = 0; i < S__COUNT; i++)
    sqlite3_finalize(s->stmt[i]);
  /* Last connection closing checkpoints the WAL and removes it. */
  sqlite3_close_v2(s->db);
  if (s->lock_fd >= 0)
    close(s->lock_fd); /* releases the lock, after the last write */
  free(s->path);
  free(s);
}

/* Text column; *err set if SQLite could not produce a non-NULL value. */
static const char *col_text(sqlite3_stmt *stmt, int i, int *err) {
  if (sqlite3_column_type(stmt, i) == SQLITE_NULL)
    return NULL;
  const char *t = (const char *)sqlite3_column_text(stmt, i);
  if (!t)
    *err = 1; /* out of memory converting the value */
  return t;
}

/* What an iteration calls per row: exactly one of load/history is set.
 * A struct instead of a void * so function pointers stay typed. */
typedef struct iter_cb {
  dc_store_load_cb *load;
  dc_store_history_cb *history;
  void *opaque;
} iter_cb_t;

static int load_row(sqlite3_stmt *stmt, const iter_cb_t *it, int *err) {
  int8_t type = (int8_t)sqlite3_column_int(stmt, 0);
  const char *entity = col_text(stmt, 1, err);
  const char *key = col_text(stmt, 2, err);
  const char *value = col_text(stmt, 3, err);
  if (*err)
    return -1;
  return it->load(it->opaque, type, entity, key, value);
}

static int history_row(sqlite3_stmt *stmt, const iter_cb_t *it, int *err) {
  dc_audit_row_t row;
  row.seq = sqlite3_column_int64(stmt, 0);
  row.time_ms = sqlite3_column_int64(stmt, 1);
  row.principal = col_text(stmt, 2, err);
  row.peer = col_text(stmt, 3, err);
  row.api = col_text(stmt, 4, err);
  row.resource_type = (int8_t)sqlite3_column_int(stmt, 5);
  row.entity = col_text(stmt, 6, err);
  row.key = col_text(stmt, 7, err);
  row.op = (int8_t)sqlite3_column_int(stmt, 8);
  row.old_value = col_text(stmt, 9, err);
  row.new_value = col_text(stmt, 10, err);
  row.log_offset = sqlite3_column_count(stmt) > 11 &&
                           sqlite3_column_type(stmt, 11) != SQLITE_NULL
                       ? sqlite3_column_int64(stmt, 11)
                       : -1;
  if (*err)
    return -1;
  return it->history(it->opaque, &row);
}

/* Drives a query statement, one callback per row. Common to load and
 * history so reset and re-entry handling live in one place. */
static int iterate(sqlite_store_t *s, int idx, const iter_cb_t *it,
                   const char *what, char *errstr, size_t errstr_size) {
  sqlite3_stmt *stmt = s->stmt[idx];
  int ret = 0, rc, err = 0;
  s->in_cb = 1;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    ret = it->load ? load_row(stmt, it, &err) : history_row(stmt, it, &err);
    if (err) {
      ret = set_err(errstr, errstr_size, "%s: %s: out of memory reading row",
                    s->path, what);
      break;
    }
    if (ret != 0)
      break;
  }
  if (!err && ret == 0 && rc != SQLITE_DONE)
    ret = db_err(s, errstr, errstr_size, what);
  s->in_cb = 0;
  sqlite3_reset(stmt); /* ends the implicit read transaction */
  sqlite3_clear_bindings(stmt);
  return ret;
}

static int reentered(sqlite_store_t *s, char *errstr, size_t errstr_size) {
  if (!s->in_cb)
    return 0;
  return set_err(errstr, errstr_size,
                 "store called from inside its own iteration callback");
}

static int sqlite_load(dc_store_t *st, dc_store_load_cb *cb, void *opaque,
                       char *errstr, size_t errstr_size) {
  sqlite_store_t *s = (sqlite_store_t *)st;
  if (!cb)
    return set_err(errstr, errstr_size, "store load: no callback");
  if (reentered(s, errstr, errstr_size))
    return -1;
  iter_cb_t it = {.load = cb, .opaque = opaque};
  return iterate(s, S_LOAD, &it, "loading configs", errstr, errstr_size);
}

static int sqlite_history(dc_store_t *st, const char *entity,
                          dc_store_history_cb *cb, void *opaque, char *errstr,
                          size_t errstr_size) {
  sqlite_store_t *s = (sqlite_store_t *)st;
  int idx = entity ? S_HIST_ENTITY : S_HIST_ALL;
  if (!cb)
    return set_err(errstr, errstr_size, "store history: no callback");
  if (reentered(s, errstr, errstr_size))
    return -1;
  if (entity &&
      sqlite3_bind_text(s->stmt[idx], 1, entity, -1, SQLITE_STATIC) !=
          SQLITE_OK)
    return db_err(s, errstr, errstr_size, "binding history filter");
  iter_cb_t it = {.history = cb, .opaque = opaque};
  return iterate(s, idx, &it, "reading history", errstr, errstr_size);
}

static int check_commit_args(const dc_store_commit_t *c, char *errstr,
                             size_t errstr_size) {
  if (!c || !c->entity)
    return set_err(errstr, errstr_size, "store commit: no entity given");
  if (c->n_configs && (!c->keys || !c->values))
    return set_err(errstr, errstr_size,
                   "store commit: %zu configs but no key/value arrays",
                   c->n_configs);
  for (size_t i = 0; i < c->n_configs; i++)
    if (!c->keys[i] || !c->values[i])
      return set_err(errstr, errstr_size,
                     "store commit: config %zu of \"%s\" has a NULL %s", i,
                     c->entity, !c->keys[i] ? "key" : "value");
  if (c->n_changes && !c->changes)
    return set_err(errstr, errstr_size,
                   "store commit: %zu changes but no change array",
                   c->n_changes);
  for (size_t i = 0; i < c->n_changes; i++)
    if (!c->changes[i].key)
      return set_err(errstr, errstr_size,
                     "store commit: change %zu of \"%s\" has a NULL key", i,
                     c->entity);
  return 0;
}

/* Binds NULL-or-text; SQLITE_STATIC because every statement is stepped and
 * its bindings cleared before the caller's strings can go away. */
static int bind_opt_text(sqlite3_stmt *stmt, int i, const char *v) {
  return v ? sqlite3_bind_text(stmt, i, v, -1, SQLITE_STATIC)
           : sqlite3_bind_null(stmt, i);
}

/* The body of one commit transaction: everything between BEGIN and COMMIT.
 * Leaves the transaction open; the caller commits or rolls back. */
static int commit_body(sqlite_store_t *s, const dc_store_commit_t *c,
                       bool keep_offset, char *errstr, size_t errstr_size) {
  sqlite3_stmt *del = s->stmt[S_DELETE], *ins = s->stmt[S_INSERT],
               *aud = s->stmt[S_AUDIT];
  int64_t t = c->time_ms ? c->time_ms : now_ms();
  int rc;

  rc = sqlite3_bind_int(del, 1, c->resource_type);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_text(del, 2, c->entity, -1, SQLITE_STATIC);
  if (rc != SQLITE_OK) {
    sqlite3_clear_bindings(del);
    return db_err(s, errstr, errstr_size, "binding delete");
  }
  if (exec_stmt(s, S_DELETE, "deleting old configs", errstr, errstr_size))
    return -1;

  for (size_t i = 0; i < c->n_configs; i++) {
    rc = sqlite3_bind_int(ins, 1, c->resource_type);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_text(ins, 2, c->entity, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_text(ins, 3, c->keys[i], -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_text(ins, 4, c->values[i], -1, SQLITE_STATIC);
    if (rc != SQLITE_OK) {
      sqlite3_clear_bindings(ins);
      return db_err(s, errstr, errstr_size, "binding config insert");
    }
    char what[128];
    snprintf(what, sizeof(what), "inserting config \"%.80s\"", c->keys[i]);
    if (exec_stmt(s, S_INSERT, what, errstr, errstr_size))
      return -1;
  }

  for (size_t i = 0; i < c->n_changes; i++) {
    const dc_store_change_t *ch = &c->changes[i];
    rc = sqlite3_bind_int64(aud, 1, t);
    if (rc == SQLITE_OK)
      rc = bind_opt_text(aud, 2, c->principal);
    if (rc == SQLITE_OK)
      rc = bind_opt_text(aud, 3, c->peer);
    if (rc == SQLITE_OK)
      rc = bind_opt_text(aud, 4, c->api);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_int(aud, 5, c->resource_type);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_text(aud, 6, c->entity, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_text(aud, 7, ch->key, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_int(aud, 8, ch->op);
    if (rc == SQLITE_OK)
      rc = bind_opt_text(aud, 9, ch->old_value);
    if (rc == SQLITE_OK)
      rc = bind_opt_text(aud, 10, ch->new_value);
    if (rc == SQLITE_OK)
      rc = keep_offset && c->log_offset >= 0
               ? sqlite3_bind_int64(aud, 11, c->log_offset)
               : sqlite3_bind_null(aud, 11);
    if (rc != SQLITE_OK) {
      sqlite3_clear_bindings(aud);
      return db_err(s, errstr, errstr_size, "binding audit insert");
    }
    if (exec_stmt(s, S_AUDIT, "inserting audit row", errstr, errstr_size))
      return -1;
  }
  return 0;
}

/* Writes meta name = value inside the open transaction. */
static int meta_set(sqlite_store_t *s, const char *name, int64_t value,
                    char *errstr, size_t errstr_size) {
  sqlite3_stmt *st = s->stmt[S_META_SET];
  if (sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) != SQLITE_OK ||
      sqlite3_bind_int64(st, 2, value) != SQLITE_OK) {
    sqlite3_clear_bindings(st);
    return db_err(s, errstr, errstr_size, "binding meta");
  }
  return exec_stmt(s, S_META_SET, "writing meta", errstr, errstr_size);
}

/* c[0..n) and meta[0..n_meta) in one transaction. */
static int commit_txn(sqlite_store_t *s, const dc_store_commit_t *c, size_t n,
                      const dc_store_meta_t *meta, size_t n_meta,
                      bool keep_offset, char *errstr, size_t errstr_size) {
  if (s->read_only)
    return set_err(errstr, errstr_size,
                   "%s: store is open read-only; commit refused", s->path);
  if (reentered(s, errstr, errstr_size))
    return -1;
  for (size_t i = 0; i < n; i++)
    if (check_commit_args(&c[i], errstr, errstr_size))
      return -1;

  if (exec_stmt(s, S_BEGIN, "starting transaction", errstr, errstr_size))
    return -1;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = commit_body(s, &c[i], keep_offset, errstr, errstr_size);
  for (size_t i = 0; i < n_meta && rc == 0; i++)
    rc = meta_set(s, meta[i].name, meta[i].value, errstr, errstr_size);
  if (rc == 0 && exec_stmt(s, S_COMMIT, "committing transaction", errstr,
                           errstr_size) == 0)
    return 0;

  /* errstr already says what failed. Some errors (I/O, full disk) roll
   * the transaction back by themselves; only roll back if still open. */
  if (!sqlite3_get_autocommit(s->db)) {
    char rb_err[256];
    if (exec_stmt(s, S_ROLLBACK, "rolling back", rb_err, sizeof(rb_err))) {
      size_t used = errstr && errstr_size ? strlen(errstr) : 0;
      if (errstr && used + 1 < errstr_size)
        snprintf(errstr + used, errstr_size - used, "; then %s", rb_err);
    }
  }
  return -1;
}

static int sqlite_commit(dc_store_t *st, const dc_store_commit_t *c,
                         size_t n, char *errstr, size_t errstr_size) {
  return commit_txn((sqlite_store_t *)st, c, n, NULL, 0, false, errstr,
                    errstr_size);
}

int dc_store_sqlite_commit_meta(dc_store_t *st, const dc_store_commit_t *c,
                                size_t n, const dc_store_meta_t *meta,
                                size_t n_meta, char *errstr,
                                size_t errstr_size) {
  if (!st || st->ops != &sqlite_ops)
    return set_err(errstr, errstr_size, "not a SQLite store");
  return commit_txn((sqlite_store_t *)st, c, n, meta, n_meta, true, errstr,
                    errstr_size);
}

int dc_store_sqlite_audit_since(dc_store_t *st, int64_t after, size_t max,
                                dc_store_history_cb *cb, void *opaque,
                                char *errstr, size_t errstr_size) {
  if (!st || st->ops != &sqlite_ops)
    return set_err(errstr, errstr_size, "not a SQLite store");
  sqlite_store_t *s = (sqlite_store_t *)st;
  if (reentered(s, errstr, errstr_size))
    return -1;
  sqlite3_stmt *q = s->stmt[S_AUDIT_SINCE];
  if (sqlite3_bind_int64(q, 1, after) != SQLITE_OK ||
      sqlite3_bind_int64(q, 2, (sqlite3_int64)max) != SQLITE_OK) {
    sqlite3_clear_bindings(q);
    return db_err(s, errstr, errstr_size, "binding audit query");
  }
  iter_cb_t it = {.history = cb, .opaque = opaque};
  return iterate(s, S_AUDIT_SINCE, &it, "reading audit rows", errstr,
                 errstr_size);
}

static const dc_store_ops_t sqlite_ops = {
    .close = sqlite_close,
    .load = sqlite_load,
    .commit = sqlite_commit,
    .history = sqlite_history,
};

int dc_store_sqlite_meta(dc_store_t *st, const char *name, int64_t *value,
                         char *errstr, size_t errstr_size) {
  if (!st || st->ops != &sqlite_ops)
    return set_err(errstr, errstr_size, "not a SQLite store");
  sqlite_store_t *s = (sqlite_store_t *)st;
  sqlite3_stmt *q = s->stmt[S_META_GET];
  if (sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC) != SQLITE_OK) {
    sqlite3_clear_bindings(q);
    return db_err(s, errstr, errstr_size, "binding meta");
  }
  int rc = sqlite3_step(q), found = 0;
  if (rc == SQLITE_ROW) {
    *value = sqlite3_column_int64(q, 0);
    found = 1;
  } else if (rc != SQLITE_DONE) {
    db_err(s, errstr, errstr_size, "reading meta");
    found = -1;
  }
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return found;
}

/* ---- opening --------------------------------------------------------- */

/* Creates the schema on an empty database, refuses a newer one. Runs in
 * one IMMEDIATE transaction so two openers cannot both create it. */
static int migrate(sqlite_store_t *s, char *errstr, size_t errstr_size) {
  char ver[32];
  char *msg = NULL;
  if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
    return db_err(s, errstr, errstr_size, "starting schema transaction");
  if (pragma_text(s, "PRAGMA user_version", ver, sizeof(ver), errstr,
                  errstr_size))
    goto fail;
  long v = strtol(ver, NULL, 10);
  if (v > SCHEMA_VERSION) {
    set_err(errstr, errstr_size,
            "%s: schema version %ld is newer than this program's %d", s->path,
            v, SCHEMA_VERSION);
    goto fail;
  }
  /* Each version's step, in order, from the one after the file's. */
  static const char *const steps[SCHEMA_VERSION] = {schema_v1, schema_v2,
                                                    schema_v3};
  for (long to = v + 1; to <= SCHEMA_VERSION; to++) {
    char set_version[64];
    snprintf(set_version, sizeof(set_version), "PRAGMA user_version = %ld",
             to);
    if (sqlite3_exec(s->db, steps[to - 1], NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(s->db, set_version, NULL, NULL, &msg) != SQLITE_OK) {
      set_err(errstr, errstr_size, "%s: %s schema %ld: %s", s->path,
              to == 1 ? "creating" : "upgrading to", to,
              msg ? msg : sqlite3_errmsg(s->db));
      sqlite3_free(msg);
      goto fail;
    }
  }
  if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    db_err(s, errstr, errstr_size, "committing schema");
    goto fail;
  }
  return 0;
fail:
  if (!sqlite3_get_autocommit(s->db))
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return -1;
}

/* A read-only opener cannot create the schema; check it is there. */
static int check_schema_ro(sqlite_store_t *s, char *errstr,
                           size_t errstr_size) {
  char ver[32];
  if (pragma_text(s, "PRAGMA user_version", ver, sizeof(ver), errstr,
                  errstr_size))
    return -1;
  long v = strtol(ver, NULL, 10);
  if (v < 1)
    return set_err(errstr, errstr_size, "%s is not a dynconf store (empty)",
                   s->path);
  if (v > SCHEMA_VERSION)
    return set_err(errstr, errstr_size,
                   "%s: schema version %ld is newer than this program's %d",
                   s->path, v, SCHEMA_VERSION);
  return 0;
}

/* A new directory entry is durable only once its parent is fsynced;
 * without this a power loss right after the first commit could lose the
 * whole data dir even though the commit itself was synced. */
static int sync_parent(const char *dir, char *errstr, size_t errstr_size) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') /* ignore trailing slashes */
    n--;
  while (n > 0 && dir[n - 1] != '/')
    n--;
  while (n > 1 && dir[n - 1] == '/')
    n--;
  char *parent = n ? strndup(dir, n) : strdup(".");
  if (!parent)
    return set_err(errstr, errstr_size, "store open: out of memory");
  int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
  if (rc)
    set_err(errstr, errstr_size, "cannot sync directory %s: %s", parent,
            strerror(errno));
  if (fd >= 0)
    close(fd);
  free(parent);
  return rc;
}

static int ensure_dir(const char *dir, char *errstr, size_t errstr_size) {
  struct stat sb;
  if (mkdir(dir, 0700) == 0)
    return sync_parent(dir, errstr, errstr_size);
  int e = errno;
  if (e != EEXIST)
    return set_err(errstr, errstr_size, "cannot create data directory %s: %s",
                   dir, strerror(e));
  if (stat(dir, &sb) != 0)
    return set_err(errstr, errstr_size, "cannot stat data directory %s: %s",
                   dir, strerror(errno));
  if (!S_ISDIR(sb.st_mode))
    return set_err(errstr, errstr_size,
                   "data directory %s exists and is not a directory", dir);
  return 0;
}

/* The pid the lock holder wrote into the lock file, or 0 if unreadable
 * (not written yet, or not a pid). */
static long lock_holder(int fd) {
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  char *end;
  long pid = strtol(buf, &end, 10);
  return pid > 0 && (*end == '\n' || !*end) ? pid : 0;
}

/* Makes this store the data directory's only writer: an exclusive flock on
 * LOCK_FILE held until close, which the kernel also drops when the process
 * dies. Two writers would each serve their own snapshot and overwrite each
 * other's acknowledged changes. */
static int lock_dir(sqlite_store_t *s, const char *data_dir, char *errstr,
                    size_t errstr_size) {
  size_t n = strlen(data_dir) + sizeof("/" LOCK_FILE);
  char *path = malloc(n);
  if (!path)
    return set_err(errstr, errstr_size, "store open: out of memory");
  snprintf(path, n, "%s/" LOCK_FILE, data_dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    set_err(errstr, errstr_size, "cannot open lock file %s: %s", path,
            strerror(errno));
  } else if (flock(fd, LOCK_EX | LOCK_NB)) {
    int e = errno;
    long pid = e == EWOULDBLOCK ? lock_holder(fd) : 0;
    if (e != EWOULDBLOCK)
      set_err(errstr, errstr_size, "cannot lock %s: %s", path, strerror(e));
    else if (pid)
      set_err(errstr, errstr_size,
              "data directory %s is in use by another dynconfd (pid %ld); "
              "two servers on one store would lose writes", data_dir, pid);
    else
      set_err(errstr, errstr_size,
              "data directory %s is in use by another dynconfd (its pid is "
              "not in %s yet); two servers on one store would lose writes",
              data_dir, path);
    close(fd);
    fd = -1;
  } else {
    char pid[32];
    int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)len, 0) != len) {
      set_err(errstr, errstr_size, "cannot write %s: %s", path,
              strerror(errno));
      close(fd);
      fd = -1;
    }
  }
  free(path);
  s->lock_fd = fd;
  return fd >= 0 ? 0 : -1;
}

static int open_common(const char *data_dir, int read_only, dc_store_t **out,
                       char *errstr, size_t errstr_size) {
  sqlite_store_t *s;
  struct stat sb;
  char mode[32];

  if (out)
    *out = NULL;
  if (!data_dir || !*data_dir || !out)
    return set_err(errstr, errstr_size, "store open: no data directory");
  if (!read_only && ensure_dir(data_dir, errstr, errstr_size))
    return -1;
  if (read_only && stat(data_dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
    return set_err(errstr, errstr_size,
                   "data directory %s exists and is not a directory",
                   data_dir);

  if (!(s = calloc(1, sizeof(*s))))
    return set_err(errstr, errstr_size, "store open: out of memory");
  s->base.ops = &sqlite_ops;
  s->read_only = read_only;
  s->lock_fd = -1;
  size_t n = strlen(data_dir) + sizeof("/" DB_FILE);
  if (!(s->path = malloc(n))) {
    free(s);
    return set_err(errstr, errstr_size, "store open: out of memory");
  }
  snprintf(s->path, n, "%s/" DB_FILE, data_dir);
  if (!read_only && lock_dir(s, data_dir, errstr, errstr_size))
    goto fail;

  if (read_only && stat(s->path, &sb) != 0) {
    set_err(errstr, errstr_size, "no store in %s (%s: %s)", data_dir,
            s->path, strerror(errno));
    goto fail;
  }

  int flags = read_only ? SQLITE_OPEN_READONLY
                        : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(s->path, &s->db, flags, NULL) != SQLITE_OK) {
    if (s->db)
      db_err(s, errstr, errstr_size, "opening database");
    else
      set_err(errstr, errstr_size, "%s: opening database: out of memory",
              s->path);
    goto fail;
  }
  sqlite3_extended_result_codes(s->db, 1);
  sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);

  if (!read_only) {
    /* journal_mode answers with the mode actually in force; anything but
     * "wal" (e.g. a filesystem without shared memory) is an error, since
     * the reader-while-writing and durability story depends on it. */
    if (pragma_text(s, "PRAGMA journal_mode=WAL", mode, sizeof(mode), errstr,
                    errstr_size))
      goto fail;
    if (strcmp(mode, "wal") != 0) {
      set_err(errstr, errstr_size,
              "%s: could not enable WAL journal mode (got \"%s\")", s->path,
              mode);
      goto fail;
    }
    /* Per connection, not stored in the file: set it on every open and
     * read it back (2 = FULL) since the durability promise rests on it. */
    if (sqlite3_exec(s->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL) !=
        SQLITE_OK) {
      db_err(s, errstr, errstr_size, "setting synchronous=FULL");
      goto fail;
    }
    if (pragma_text(s, "PRAGMA synchronous", mode, sizeof(mode), errstr,
                    errstr_size))
      goto fail;
    if (strcmp(mode, "2") != 0) {
      set_err(errstr, errstr_size,
              "%s: could not set synchronous=FULL (got \"%s\")", s->path,
              mode);
      goto fail;
    }
    if (migrate(s, errstr, errstr_size))
      goto fail;
  } else if (check_schema_ro(s, errstr, errstr_size)) {
    goto fail;
  }

  for (int i = 0; i < S__COUNT; i++) {
    if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                           &s->stmt[i], NULL) != SQLITE_OK) {
      char what[160];
      snprintf(what, sizeof(what), "preparing \"%.120s\"", stmt_sql[i]);
      db_err(s, errstr, errstr_size, what);
      goto fail;
    }
  }
  *out = &s->base;
  return 0;

fail:
  sqlite_close(&s->base);
  return -1;
}

int dc_store_open_sqlite(const char *data_dir, dc_store_t **out, char *errstr,
                         size_t errstr_size) {
  return open_common(data_dir, 0, out, errstr, errstr_size);
}

int dc_store_open_sqlite_ro(const char *data_dir, dc_store_t **out,
                            char *errstr, size_t errstr_size) {
  return open_common(data_dir, 1, out, errstr, errstr_size);
}
