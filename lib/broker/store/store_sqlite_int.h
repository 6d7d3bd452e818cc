/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the SQLite store shared by its files: store_sqlite_open.c
 * (the data directory, its lock, the schema, the prepared statements) and
 * store_sqlite.c (the store's operations, closing included).
 */
#ifndef DC_STORE_SQLITE_INT_H
#define DC_STORE_SQLITE_INT_H
#include "broker/store/store.h"
#include "common/text.h"

#include <sqlite3.h>
#include <stdarg.h>

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

typedef struct sqlite_store {
  dc_store_t base; /* first: dc_store_t * converts to sqlite_store_t * */
  sqlite3 *db;
  char *path;     /* owned: data_dir/dynconf.db, for error messages */
  int read_only;
  int lock_fd;    /* LOCK_FILE, flock()ed while open; -1 = none (read-only) */
  int in_cb;      /* a callback is running: refuse re-entry */
  sqlite3_stmt *stmt[S__COUNT];
} sqlite_store_t;

__attribute__((format(printf, 3, 4))) static inline int
set_err(char *errstr, size_t errstr_size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dc_vseterr(errstr, errstr_size, fmt, ap);
  va_end(ap);
  return -1;
}

static inline int db_err(sqlite_store_t *s, char *errstr,
                         size_t errstr_size, const char *what) {
  return set_err(errstr, errstr_size, "%s: %s: %s", s->path, what,
                 sqlite3_errmsg(s->db));
}

/* The store's operations; dc_sqlite_close frees a store at any stage of
 * its opening. */
extern const dc_store_ops_t dc_sqlite_ops;
void dc_sqlite_close(dc_store_t *st);
#endif
