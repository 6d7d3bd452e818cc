/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SQLite backend of the config store: data_dir/dynconf.db in WAL mode with
 * synchronous=FULL, so a commit that returned survives kill -9 and power
 * loss, and a read-only reader in another process (history printing) never
 * blocks the writer. One read-write opener per data directory: it holds an
 * exclusive flock on data_dir/.lock (which names its pid) until close.
 *
 * Ownership: dc_store_open_sqlite*() allocates one sqlite_store_t holding
 * the connection and every prepared statement (store_sqlite_open.c);
 * dc_sqlite_close() finalizes and frees all of it. Strings handed to
 * callbacks belong to SQLite and are valid during the call only.
 */
#include "config.h"
#include "broker/store/store_sqlite_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- vtable ---------------------------------------------------------- */

void dc_sqlite_close(dc_store_t *st) {
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

/* The entity's rows replaced by the commit's configs. */
static int replace_configs(sqlite_store_t *s, const dc_store_commit_t *c,
                           char *errstr, size_t errstr_size) {
  sqlite3_stmt *del = s->stmt[S_DELETE], *ins = s->stmt[S_INSERT];
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
  return 0;
}

/* One audit row: change ch of commit c, made at t. */
static int insert_audit(sqlite_store_t *s, const dc_store_commit_t *c,
                        const dc_store_change_t *ch, int64_t t,
                        bool keep_offset, char *errstr, size_t errstr_size) {
  sqlite3_stmt *aud = s->stmt[S_AUDIT];
  int rc = sqlite3_bind_int64(aud, 1, t);
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
  return exec_stmt(s, S_AUDIT, "inserting audit row", errstr, errstr_size);
}

/* The body of one commit transaction: everything between BEGIN and COMMIT.
 * Leaves the transaction open; the caller commits or rolls back. */
static int commit_body(sqlite_store_t *s, const dc_store_commit_t *c,
                       bool keep_offset, char *errstr, size_t errstr_size) {
  int64_t t = c->time_ms ? c->time_ms : now_ms();
  if (replace_configs(s, c, errstr, errstr_size))
    return -1;
  for (size_t i = 0; i < c->n_changes; i++)
    if (insert_audit(s, c, &c->changes[i], t, keep_offset, errstr,
                     errstr_size))
      return -1;
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
  if (!st || st->ops != &dc_sqlite_ops)
    return set_err(errstr, errstr_size, "not a SQLite store");
  return commit_txn((sqlite_store_t *)st, c, n, meta, n_meta, true, errstr,
                    errstr_size);
}

int dc_store_sqlite_audit_since(dc_store_t *st, int64_t after, size_t max,
                                dc_store_history_cb *cb, void *opaque,
                                char *errstr, size_t errstr_size) {
  if (!st || st->ops != &dc_sqlite_ops)
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

const dc_store_ops_t dc_sqlite_ops = {
    .close = dc_sqlite_close,
    .load = sqlite_load,
    .commit = sqlite_commit,
    .history = sqlite_history,
};

int dc_store_sqlite_meta(dc_store_t *st, const char *name, int64_t *value,
                         char *errstr, size_t errstr_size) {
  if (!st || st->ops != &dc_sqlite_ops)
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
