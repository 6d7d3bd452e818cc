/* SPDX-License-Identifier: BSD-2-Clause */
/* Opening the SQLite store: the data directory (created and synced), the
 * writer's lock on it, the database in WAL mode with synchronous=FULL,
 * the schema created or upgraded, and every statement prepared. */
#include "config.h"
#include "broker/store/store_sqlite_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>


#define DB_FILE "dynconf.db"
/* The read-write opener's exclusive lock; holds the owner's pid. */
#define LOCK_FILE ".lock"
/* PRAGMA user_version of the schema this code writes. Bump it and add a
 * step to migrate() when the schema changes; 0 means "empty database". */
#define SCHEMA_VERSION 3
#define BUSY_TIMEOUT_MS 5000

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

/* The data directory is there: created (and its entry synced) for a
 * writer; a reader only refuses a path that is not a directory. */
static int check_data_dir(const char *data_dir, int read_only, char *errstr,
                          size_t errstr_size) {
  struct stat sb;
  if (!read_only && ensure_dir(data_dir, errstr, errstr_size))
    return -1;
  if (read_only && stat(data_dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
    return set_err(errstr, errstr_size,
                   "data directory %s exists and is not a directory",
                   data_dir);
  return 0;
}

/* A store not yet open, naming its database file; NULL with errstr. */
static sqlite_store_t *store_new(const char *data_dir, int read_only,
                                 char *errstr, size_t errstr_size) {
  sqlite_store_t *s;
  if (!(s = calloc(1, sizeof(*s)))) {
    set_err(errstr, errstr_size, "store open: out of memory");
    return NULL;
  }
  s->base.ops = &dc_sqlite_ops;
  s->read_only = read_only;
  s->lock_fd = -1;
  size_t n = strlen(data_dir) + sizeof("/" DB_FILE);
  if (!(s->path = malloc(n))) {
    free(s);
    set_err(errstr, errstr_size, "store open: out of memory");
    return NULL;
  }
  snprintf(s->path, n, "%s/" DB_FILE, data_dir);
  return s;
}

/* The database opened: a writer first takes the directory's lock, a
 * reader needs the file to exist. */
static int open_db(sqlite_store_t *s, const char *data_dir, char *errstr,
                   size_t errstr_size) {
  struct stat sb;
  if (!s->read_only && lock_dir(s, data_dir, errstr, errstr_size))
    return -1;

  if (s->read_only && stat(s->path, &sb) != 0)
    return set_err(errstr, errstr_size, "no store in %s (%s: %s)", data_dir,
                   s->path, strerror(errno));

  int flags = s->read_only ? SQLITE_OPEN_READONLY
                           : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(s->path, &s->db, flags, NULL) != SQLITE_OK) {
    if (s->db)
      return db_err(s, errstr, errstr_size, "opening database");
    return set_err(errstr, errstr_size,
                   "%s: opening database: out of memory", s->path);
  }
  sqlite3_extended_result_codes(s->db, 1);
  sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
  return 0;
}

/* A writer's durability: WAL journal mode and synchronous=FULL, each read
 * back, since the durability promise rests on them. */
static int set_durability(sqlite_store_t *s, char *errstr,
                          size_t errstr_size) {
  char mode[32];
  /* journal_mode answers with the mode actually in force; anything but
   * "wal" (e.g. a filesystem without shared memory) is an error, since
   * the reader-while-writing and durability story depends on it. */
  if (pragma_text(s, "PRAGMA journal_mode=WAL", mode, sizeof(mode), errstr,
                  errstr_size))
    return -1;
  if (strcmp(mode, "wal") != 0)
    return set_err(errstr, errstr_size,
                   "%s: could not enable WAL journal mode (got \"%s\")",
                   s->path, mode);
  /* Per connection, not stored in the file: set it on every open and
   * read it back (2 = FULL) since the durability promise rests on it. */
  if (sqlite3_exec(s->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL) !=
      SQLITE_OK)
    return db_err(s, errstr, errstr_size, "setting synchronous=FULL");
  if (pragma_text(s, "PRAGMA synchronous", mode, sizeof(mode), errstr,
                  errstr_size))
    return -1;
  if (strcmp(mode, "2") != 0)
    return set_err(errstr, errstr_size,
                   "%s: could not set synchronous=FULL (got \"%s\")",
                   s->path, mode);
  return 0;
}

static int prepare_all(sqlite_store_t *s, char *errstr, size_t errstr_size) {
  for (int i = 0; i < S__COUNT; i++) {
    if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                           &s->stmt[i], NULL) != SQLITE_OK) {
      char what[160];
      snprintf(what, sizeof(what), "preparing \"%.120s\"", stmt_sql[i]);
      return db_err(s, errstr, errstr_size, what);
    }
  }
  return 0;
}

static int open_common(const char *data_dir, int read_only, dc_store_t **out,
                       char *errstr, size_t errstr_size) {
  if (out)
    *out = NULL;
  if (!data_dir || !*data_dir || !out)
    return set_err(errstr, errstr_size, "store open: no data directory");
  if (check_data_dir(data_dir, read_only, errstr, errstr_size))
    return -1;
  sqlite_store_t *s = store_new(data_dir, read_only, errstr, errstr_size);
  if (!s)
    return -1;
  int rc = open_db(s, data_dir, errstr, errstr_size);
  if (!rc && !read_only)
    rc = set_durability(s, errstr, errstr_size) ||
         migrate(s, errstr, errstr_size);
  else if (!rc)
    rc = check_schema_ro(s, errstr, errstr_size);
  if (!rc)
    rc = prepare_all(s, errstr, errstr_size);
  if (rc) {
    dc_sqlite_close(&s->base);
    return -1;
  }
  *out = &s->base;
  return 0;
}

int dc_store_open_sqlite(const char *data_dir, dc_store_t **out, char *errstr,
                         size_t errstr_size) {
  return open_common(data_dir, 0, out, errstr, errstr_size);
}

int dc_store_open_sqlite_ro(const char *data_dir, dc_store_t **out,
                            char *errstr, size_t errstr_size) {
  return open_common(data_dir, 1, out, errstr, errstr_size);
}
