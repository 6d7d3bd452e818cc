/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The SQLite config store: round trip, full-set replacement, separation of
 * entities and types, persistence, audit history, read-only readers, error
 * paths, and atomicity under kill -9 of a committing process.
 * Everything happens under one mkdtemp() directory removed at the end.
 */
#include "broker/store/store.h"
#include "codec/proto.h"
#include "../tap.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[64]; /* the temp dir; everything lives below it */

static const char *path_in(const char *name) {
  static char p[2][256]; /* two live results so calls can be nested */
  static int which;
  which ^= 1;
  snprintf(p[which], sizeof(p[which]), "%s/%s", root, name);
  return p[which];
}

static int rm_entry(const char *p, const struct stat *sb, int flag,
                    struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- collectors -------------------------------------------------------- */

/* load results as "type|entity|key=value\n" lines. */
typedef struct {
  char text[4096];
  int rows;
  int stop_after; /* return 7 after this many rows; 0 = never */
} load_t;

static int load_cb(void *opaque, int8_t type, const char *entity,
                   const char *key, const char *value) {
  load_t *l = opaque;
  size_t n = strlen(l->text);
  snprintf(l->text + n, sizeof(l->text) - n, "%d|%s|%s=%s\n", type, entity,
           key, value);
  l->rows++;
  return l->stop_after && l->rows >= l->stop_after ? 7 : 0;
}

static int load_all(dc_store_t *st, load_t *l) {
  char err[256] = "";
  memset(l, 0, sizeof(*l));
  int r = dc_store_load(st, load_cb, l, err, sizeof(err));
  if (r)
    diag("load: %d %s", r, err);
  return r;
}

/* history rows as one line each; NULL strings shown as ~, others quoted
 * so NULL and "" stay distinguishable. */
typedef struct {
  char text[8192];
  int rows;
  int stop_after;
  int64_t last_seq, min_time, max_time;
  int seq_ok;
  char last_new[64];
} hist_t;

static const char *q(const char *s, char *b, size_t n) {
  if (!s)
    return "~";
  snprintf(b, n, "'%s'", s);
  return b;
}

static int hist_cb(void *opaque, const dc_audit_row_t *r) {
  hist_t *h = opaque;
  char b[6][96];
  size_t n = strlen(h->text);
  snprintf(h->text + n, sizeof(h->text) - n, "%s %s %s %d %s %s %d %s %s\n",
           q(r->principal, b[0], 96), q(r->peer, b[1], 96),
           q(r->api, b[2], 96), r->resource_type, q(r->entity, b[3], 96),
           q(r->key, b[4], 96), r->op, q(r->old_value, b[5], 96),
           r->new_value ? r->new_value : "~");
  if (r->seq <= h->last_seq)
    h->seq_ok = 0;
  h->last_seq = r->seq;
  if (!h->rows || r->time_ms < h->min_time)
    h->min_time = r->time_ms;
  if (!h->rows || r->time_ms > h->max_time)
    h->max_time = r->time_ms;
  snprintf(h->last_new, sizeof(h->last_new), "%s",
           r->new_value ? r->new_value : "~");
  h->rows++;
  return h->stop_after && h->rows >= h->stop_after ? 3 : 0;
}

static int hist_all(dc_store_t *st, const char *entity, hist_t *h) {
  char err[256] = "";
  memset(h, 0, sizeof(*h));
  h->seq_ok = 1;
  int r = dc_store_history(st, entity, hist_cb, h, err, sizeof(err));
  if (r)
    diag("history: %d %s", r, err);
  return r;
}

/* One commit with up to 4 configs and 4 changes, from flat arrays. */
static int commit(dc_store_t *st, int8_t type, const char *entity, size_t n,
                  const char *const *kv, size_t nch,
                  const dc_store_change_t *ch, char *err, size_t errsz) {
  const char *keys[8], *vals[8];
  for (size_t i = 0; i < n; i++) {
    keys[i] = kv[2 * i];
    vals[i] = kv[2 * i + 1];
  }
  dc_store_commit_t c = {.resource_type = type,
                         .entity = entity,
                         .principal = "User:ANONYMOUS",
                         .peer = "127.0.0.1:40000",
                         .api = "IncrementalAlterConfigs",
                         .n_configs = n,
                         .keys = keys,
                         .values = vals,
                         .n_changes = nch,
                         .changes = ch};
  err[0] = '\0';
  return dc_store_commit(st, &c, err, errsz);
}

static int file_exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

/* ---- tests ------------------------------------------------------------- */

static void test_basic(void) {
  dc_store_t *st = NULL;
  char err[512] = "";
  load_t l;
  hist_t h;
  struct stat sb;
  int64_t t0 = wall_ms();

  is_int(dc_store_open_sqlite(path_in("d1"), &st, err, sizeof(err)), 0,
         "open creates a new store");
  if (!st) {
    diag("%s", err);
    return;
  }
  ok(stat(path_in("d1"), &sb) == 0 && S_ISDIR(sb.st_mode) &&
         (sb.st_mode & 0777) == 0700,
     "data dir created with mode 0700");
  is_int(load_all(st, &l), 0, "load of empty store succeeds");
  is_int(l.rows, 0, "empty store has no rows");
  is_int(hist_all(st, NULL, &h), 0, "history of empty store succeeds");
  is_int(h.rows, 0, "empty store has no history");

  static const char *const kv1[] = {"linger.ms", "5", "acks", "all"};
  dc_store_change_t ch1[] = {{"linger.ms", DC_OP_SET, NULL, "5"},
                             {"acks", DC_OP_SET, NULL, "all"}};
  is_int(commit(st, 9, "app1", 2, kv1, 2, ch1, err, sizeof(err)), 0,
         "first commit");
  load_all(st, &l);
  is_str(l.text, "9|app1|acks=all\n9|app1|linger.ms=5\n",
         "load returns the set, ordered by key");
  ok(file_exists(path_in("d1/dynconf.db-wal")),
     "WAL file exists after a commit (journal_mode=wal)");

  /* Full replacement: linger.ms is not in the new set. */
  static const char *const kv2[] = {"acks", "1"};
  dc_store_change_t ch2[] = {{"acks", DC_OP_SET, "all", "1"},
                             {"linger.ms", DC_OP_DELETE, "5", NULL}};
  is_int(commit(st, 9, "app1", 1, kv2, 2, ch2, err, sizeof(err)), 0,
         "second commit");
  load_all(st, &l);
  is_str(l.text, "9|app1|acks=1\n", "commit replaces the whole set");

  /* Other entities and types stay apart. */
  static const char *const kvd[] = {"acks", "0"};
  static const char *const kv3[] = {"x", "1"};
  static const char *const kv4[] = {"foo", "bar"};
  dc_store_change_t chd[] = {{"acks", DC_OP_SET, NULL, "0"}};
  dc_store_change_t ch3[] = {{"x", DC_OP_APPEND, "", "1"}};
  dc_store_change_t ch4[] = {{"foo", DC_OP_SET, NULL, "bar"}};
  is_int(commit(st, 9, "<default>", 1, kvd, 1, chd, err, sizeof(err)), 0,
         "commit <default>");
  is_int(commit(st, 9, "app2", 1, kv3, 1, ch3, err, sizeof(err)), 0,
         "commit app2");
  is_int(commit(st, 4, "app1", 1, kv4, 1, ch4, err, sizeof(err)), 0,
         "commit app1 under another resource type");
  load_all(st, &l);
  is_str(l.text,
         "4|app1|foo=bar\n9|<default>|acks=0\n9|app1|acks=1\n9|app2|x=1\n",
         "entities and types kept apart, ordered by type, entity, key");

  /* An empty set removes the entity; the same name under type 4 stays. */
  dc_store_change_t ch5[] = {{"x", DC_OP_DELETE, "1", NULL}};
  is_int(commit(st, 9, "app2", 0, NULL, 1, ch5, err, sizeof(err)), 0,
         "commit an empty set");
  static const char *const kv6[] = {"baz", "q"};
  dc_store_change_t ch6[] = {{"baz", DC_OP_SET, NULL, "q"}};
  is_int(commit(st, 4, "app2", 1, kv6, 1, ch6, err, sizeof(err)), 0,
         "commit app2 type 4");
  is_int(commit(st, 9, "app1", 1, kv2, 0, NULL, err, sizeof(err)), 0,
         "commit with no audit rows");
  load_all(st, &l);
  is_str(l.text,
         "4|app1|foo=bar\n4|app2|baz=q\n9|<default>|acks=0\n9|app1|acks=1\n",
         "empty set removed app2 under type 9 only");

  /* Audit history: all fields, NULL vs "" preserved, strictly ordered. */
  is_int(hist_all(st, NULL, &h), 0, "history");
  const char *want_all =
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 9 "
      "'app1' 'linger.ms' 0 ~ 5\n"
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 9 "
      "'app1' 'acks' 0 ~ all\n"
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 9 "
      "'app1' 'acks' 0 'all' 1\n"
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 9 "
      "'app1' 'linger.ms' 1 '5' ~\n"
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 9 "
      "'<default>' 'acks' 0 ~ 0\n"
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 9 "
      "'app2' 'x' 2 '' 1\n"
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 4 "
      "'app1' 'foo' 0 ~ bar\n"
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 9 "
      "'app2' 'x' 1 '1' ~\n"
      "'User:ANONYMOUS' '127.0.0.1:40000' 'IncrementalAlterConfigs' 4 "
      "'app2' 'baz' 0 ~ q\n";
  is_str(h.text, want_all, "audit rows in order with all fields");
  ok(h.seq_ok, "audit seq strictly increasing");
  int64_t t1 = wall_ms();
  ok(h.min_time >= t0 && h.max_time <= t1,
     "audit time_ms is the commit's epoch ms");
  hist_all(st, "app2", &h);
  is_int(h.rows, 3, "history filtered by entity (both types of app2)");
  ok(strstr(h.text, "'app1'") == NULL && strstr(h.text, "'baz'") != NULL,
     "filtered history holds only that entity");
  hist_all(st, "nobody", &h);
  is_int(h.rows, 0, "history of an unknown entity is empty");

  /* Callbacks returning non-zero stop iteration. */
  memset(&l, 0, sizeof(l));
  l.stop_after = 2;
  is_int(dc_store_load(st, load_cb, &l, err, sizeof(err)), 7,
         "load returns the callback's value");
  is_int(l.rows, 2, "load stopped after the callback said so");
  memset(&h, 0, sizeof(h));
  h.seq_ok = 1;
  h.stop_after = 1;
  is_int(dc_store_history(st, NULL, hist_cb, &h, err, sizeof(err)), 3,
         "history returns the callback's value");
  is_int(h.rows, 1, "history stopped after the callback said so");
  is_int(load_all(st, &l), 0, "a stopped iteration leaves the store usable");
  is_int(l.rows, 4, "full load after a stopped one");

  dc_store_close(st);

  /* Persistence. */
  st = NULL;
  is_int(dc_store_open_sqlite(path_in("d1"), &st, err, sizeof(err)), 0,
         "reopen");
  if (!st)
    return;
  load_all(st, &l);
  is_str(l.text,
         "4|app1|foo=bar\n4|app2|baz=q\n9|<default>|acks=0\n9|app1|acks=1\n",
         "reopened store has every config");
  hist_all(st, NULL, &h);
  is_str(h.text, want_all, "reopened store has the whole history");
  dc_store_close(st);
}

/* Failed commits change nothing and leave the store usable. */
static int reenter_cb(void *opaque, int8_t type, const char *entity,
                      const char *key, const char *value) {
  dc_store_t *st = opaque;
  char err[256] = "";
  static const char *const kv[] = {"k", "v"};
  (void)type, (void)entity, (void)key, (void)value;
  int r = commit(st, 9, "re", 1, kv, 0, NULL, err, sizeof(err));
  is_int(r, -1, "commit from inside a load callback is refused");
  ok(strstr(err, "callback") != NULL, "re-entry error says why: %s", err);
  return 1;
}

static void test_failures(void) {
  dc_store_t *st = NULL;
  char err[512] = "";
  load_t l, l2;
  hist_t h, h2;

  if (dc_store_open_sqlite(path_in("d2"), &st, err, sizeof(err))) {
    ok(0, "open d2: %s", err);
    return;
  }
  static const char *const kv[] = {"a", "1", "b", "2"};
  dc_store_change_t ch[] = {{"a", DC_OP_SET, NULL, "1"},
                            {"b", DC_OP_SET, NULL, "2"}};
  commit(st, 9, "e", 2, kv, 2, ch, err, sizeof(err));
  load_all(st, &l);
  hist_all(st, NULL, &h);

  /* Duplicate key: the second insert violates the primary key after the
   * delete and first insert already ran, so this exercises ROLLBACK. */
  static const char *const dup[] = {"c", "3", "c", "4"};
  dc_store_change_t chd[] = {{"c", DC_OP_SET, NULL, "3"}};
  is_int(commit(st, 9, "e", 2, dup, 1, chd, err, sizeof(err)), -1,
         "commit with a duplicate key fails");
  ok(strstr(err, "inserting config") && strstr(err, "UNIQUE"),
     "error says what failed: %s", err);
  load_all(st, &l2);
  is_str(l2.text, l.text, "failed commit left the configs untouched");
  hist_all(st, NULL, &h2);
  is_str(h2.text, h.text, "failed commit added no audit rows");

  const char *keys[] = {"a"}, *vals[] = {NULL};
  dc_store_commit_t c = {.resource_type = 9, .entity = "e", .n_configs = 1,
                         .keys = keys, .values = vals};
  is_int(dc_store_commit(st, &c, err, sizeof(err)), -1,
         "commit with a NULL value fails");
  ok(strstr(err, "NULL value") != NULL, "error names it: %s", err);
  c.entity = NULL;
  is_int(dc_store_commit(st, &c, err, sizeof(err)), -1,
         "commit without an entity fails");
  is_int(dc_store_commit(st, NULL, err, sizeof(err)), -1,
         "commit of NULL fails");
  is_int(dc_store_commit(st, NULL, NULL, 0), -1,
         "errors with no errstr buffer do not crash");

  /* NULL principal/peer/api are stored as NULL. */
  dc_store_change_t cha[] = {{"a", DC_OP_SET, "1", "9"}};
  keys[0] = "a", vals[0] = "9";
  c = (dc_store_commit_t){.resource_type = 9, .entity = "e", .n_configs = 1,
                          .keys = keys, .values = vals, .n_changes = 1,
                          .changes = cha};
  is_int(dc_store_commit(st, &c, err, sizeof(err)), 0,
         "commit after failures works");
  load_all(st, &l2);
  is_str(l2.text, "9|e|a=9\n", "and is applied");
  hist_all(st, NULL, &h2);
  ok(strstr(h2.text, "~ ~ ~ 9 'e' 'a' 0 '1' 9\n") != NULL,
     "NULL principal, peer, api stay NULL");

  int r = dc_store_load(st, reenter_cb, st, err, sizeof(err));
  is_int(r, 1, "load returned the re-entering callback's value");
  load_all(st, &l2);
  is_str(l2.text, "9|e|a=9\n", "refused re-entrant commit changed nothing");

  is_int(dc_store_load(st, NULL, NULL, err, sizeof(err)), -1,
         "load without a callback fails");
  dc_store_close(st);

  is_int(dc_store_load(NULL, load_cb, &l, err, sizeof(err)), -1,
         "load on a NULL store fails");
  ok(strstr(err, "not open") != NULL, "NULL store error: %s", err);
  dc_store_close(NULL); /* must not crash (ASan would say) */
}

static void test_open_errors(void) {
  dc_store_t *st = (dc_store_t *)&st; /* must be reset to NULL on failure */
  char err[512] = "";
  int fd;

  fd = open(path_in("plainfile"), O_CREAT | O_WRONLY, 0600);
  ok(fd >= 0, "created a regular file");
  if (fd >= 0)
    close(fd);
  is_int(dc_store_open_sqlite(path_in("plainfile"), &st, err, sizeof(err)),
         -1, "opening a regular file as data dir fails");
  ok(strstr(err, "not a directory") != NULL, "clear error: %s", err);
  ok(st == NULL, "out is NULL after a failed open");
  is_int(dc_store_open_sqlite_ro(path_in("plainfile"), &st, err, sizeof(err)),
         -1, "read-only open of a regular file fails");
  ok(strstr(err, "not a directory") != NULL, "clear error: %s", err);

  is_int(dc_store_open_sqlite(path_in("missing/sub"), &st, err, sizeof(err)),
         -1, "open below a missing parent fails");
  ok(strstr(err, "cannot create data directory") != NULL, "clear error: %s",
     err);

  is_int(dc_store_open_sqlite_ro(path_in("nothere"), &st, err, sizeof(err)),
         -1, "read-only open of a missing dir fails");
  ok(strstr(err, "no store in") != NULL, "clear error: %s", err);
  ok(!file_exists(path_in("nothere")), "read-only open created nothing");
  mkdir(path_in("emptydir"), 0700);
  is_int(dc_store_open_sqlite_ro(path_in("emptydir"), &st, err, sizeof(err)),
         -1, "read-only open of a dir without a db fails");
  ok(strstr(err, "no store in") != NULL, "clear error: %s", err);
  ok(!file_exists(path_in("emptydir/dynconf.db")),
     "read-only open created no db");

  is_int(dc_store_open_sqlite("", &st, err, sizeof(err)), -1,
         "empty data dir name fails");

  /* Garbage where the db should be. */
  mkdir(path_in("garbage"), 0700);
  fd = open(path_in("garbage/dynconf.db"), O_CREAT | O_WRONLY, 0600);
  if (fd >= 0) {
    char junk[4096];
    memset(junk, 'x', sizeof(junk));
    ok(write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk),
       "wrote a garbage db");
    close(fd);
  }
  is_int(dc_store_open_sqlite(path_in("garbage"), &st, err, sizeof(err)), -1,
         "a non-database file is refused");
  ok(strstr(err, "not a database") != NULL, "clear error: %s", err);

  /* A schema newer than this program: refused, not silently used. */
  if (dc_store_open_sqlite(path_in("newer"), &st, err, sizeof(err)) == 0)
    dc_store_close(st);
  sqlite3 *db = NULL;
  ok(sqlite3_open(path_in("newer/dynconf.db"), &db) == SQLITE_OK &&
         sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL) ==
             SQLITE_OK,
     "bumped user_version behind the store's back");
  sqlite3_close(db);
  is_int(dc_store_open_sqlite(path_in("newer"), &st, err, sizeof(err)), -1,
         "a newer schema version is refused");
  ok(strstr(err, "newer") != NULL, "clear error: %s", err);
  is_int(dc_store_open_sqlite_ro(path_in("newer"), &st, err, sizeof(err)), -1,
         "read-only open refuses a newer schema too");

  /* The schema version is set on creation. */
  if (dc_store_open_sqlite(path_in("ver"), &st, err, sizeof(err)) == 0)
    dc_store_close(st);
  db = NULL;
  sqlite3_stmt *s = NULL;
  int ver = -1;
  if (sqlite3_open_v2(path_in("ver/dynconf.db"), &db, SQLITE_OPEN_READONLY,
                      NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) ==
          SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    ver = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  s = NULL;
  char jm[16] = "";
  if (sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL) ==
          SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    snprintf(jm, sizeof(jm), "%s", (const char *)sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  is_int(ver, 3, "new store has schema version 3");
  is_str(jm, "wal", "journal mode is persisted as wal");
}

static void test_read_only(void) {
  dc_store_t *w = NULL, *ro = NULL;
  char err[512] = "";
  load_t l;
  hist_t h;

  if (dc_store_open_sqlite(path_in("d3"), &w, err, sizeof(err))) {
    ok(0, "open d3: %s", err);
    return;
  }
  static const char *const kv1[] = {"acks", "all"};
  dc_store_change_t ch1[] = {{"acks", DC_OP_SET, NULL, "all"}};
  commit(w, 9, "app", 1, kv1, 1, ch1, err, sizeof(err));

  is_int(dc_store_open_sqlite_ro(path_in("d3"), &ro, err, sizeof(err)), 0,
         "read-only open while the writer is open");
  if (!ro) {
    diag("%s", err);
    dc_store_close(w);
    return;
  }
  load_all(ro, &l);
  is_str(l.text, "9|app|acks=all\n", "reader sees the writer's data");

  static const char *const kv2[] = {"acks", "0"};
  dc_store_change_t ch2[] = {{"acks", DC_OP_SET, "all", "0"}};
  is_int(commit(w, 9, "app", 1, kv2, 1, ch2, err, sizeof(err)), 0,
         "writer commits while the reader is open");
  load_all(ro, &l);
  is_str(l.text, "9|app|acks=0\n", "reader sees the new commit");
  hist_all(ro, "app", &h);
  is_int(h.rows, 2, "reader sees the history");

  is_int(commit(ro, 9, "app", 1, kv1, 1, ch1, err, sizeof(err)), -1,
         "commit on a read-only store fails");
  ok(strstr(err, "read-only") != NULL, "clear error: %s", err);
  load_all(w, &l);
  is_str(l.text, "9|app|acks=0\n", "refused commit changed nothing");
  dc_store_close(ro);
  dc_store_close(w);

  /* With the writer gone (WAL checkpointed and removed) a reader still
   * works: history printing with the daemon stopped. */
  ro = NULL;
  is_int(dc_store_open_sqlite_ro(path_in("d3"), &ro, err, sizeof(err)), 0,
         "read-only open with no writer running");
  if (ro) {
    load_all(ro, &l);
    is_str(l.text, "9|app|acks=0\n", "reader sees the data");
    hist_all(ro, NULL, &h);
    is_int(h.rows, 2, "reader sees the history");
    dc_store_close(ro);
  } else {
    diag("%s", err);
  }
}

/* ---- crash atomicity --------------------------------------------------- */

/* Child: commit a=N, b=N for N = stored+1, stored+2, ... and write one
 * byte to the pipe after each commit returned. Never returns. */
static void crash_child(int wfd) {
  dc_store_t *st = NULL;
  char err[512];
  load_t l;
  if (dc_store_open_sqlite(path_in("crash"), &st, err, sizeof(err)))
    _exit(2);
  memset(&l, 0, sizeof(l));
  if (dc_store_load(st, load_cb, &l, err, sizeof(err)))
    _exit(3);
  long n = 0;
  const char *p = strstr(l.text, "|a=");
  if (p)
    n = strtol(p + 3, NULL, 10);
  for (;;) {
    char old[32], cur[32];
    snprintf(old, sizeof(old), "%ld", n);
    snprintf(cur, sizeof(cur), "%ld", n + 1);
    const char *kv[] = {"a", cur, "b", cur};
    dc_store_change_t ch[] = {{"a", DC_OP_SET, n ? old : NULL, cur},
                              {"b", DC_OP_SET, n ? old : NULL, cur}};
    if (commit(st, 9, "crashy", 2, kv, 2, ch, err, sizeof(err)))
      _exit(4);
    n++;
    if (write(wfd, "x", 1) != 1)
      _exit(5);
  }
}

static void test_crash(void) {
  long acked_total = 0;
  for (int round = 1; round <= 3; round++) {
    int pfd[2];
    if (pipe(pfd)) {
      ok(0, "pipe: %s", strerror(errno));
      return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
      ok(0, "fork: %s", strerror(errno));
      return;
    }
    if (pid == 0) {
      close(pfd[0]);
      crash_child(pfd[1]);
    }
    close(pfd[1]);

    /* Let it commit a while, then kill it wherever it happens to be. The
     * varying extra delay lands the kill at different points. */
    char c;
    long acked = 0;
    while (acked < 20 * round && read(pfd[0], &c, 1) == 1)
      acked++;
    usleep((useconds_t)(round * 1700));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    while (read(pfd[0], &c, 1) == 1) /* commits acked before death */
      acked++;
    close(pfd[0]);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
       "round %d: writer died by SIGKILL (status 0x%x)", round, status);
    acked_total += acked;

    dc_store_t *st = NULL;
    char err[512] = "";
    load_t l;
    hist_t h;
    is_int(dc_store_open_sqlite(path_in("crash"), &st, err, sizeof(err)), 0,
           "round %d: reopen after kill -9", round);
    if (!st) {
      diag("%s", err);
      return;
    }
    load_all(st, &l);
    long a = -1, b = -2;
    const char *pa = strstr(l.text, "|a="), *pb = strstr(l.text, "|b=");
    if (pa && pb) {
      a = strtol(pa + 3, NULL, 10);
      b = strtol(pb + 3, NULL, 10);
    }
    is_int(l.rows, 2, "round %d: exactly keys a and b stored", round);
    ok(a == b, "round %d: a == b (%ld, %ld): never half-applied", round, a,
       b);
    ok(a >= acked_total,
       "round %d: every acked commit is durable (stored %ld, acked %ld)",
       round, a, acked_total);
    ok(a <= acked_total + 1,
       "round %d: at most one unacked commit landed (stored %ld)", round, a);
    hist_all(st, "crashy", &h);
    is_int(h.rows, 2 * a, "round %d: audit rows == 2 * commits", round);
    char want[32];
    snprintf(want, sizeof(want), "%ld", a);
    is_str(h.last_new, want, "round %d: last audit row matches the value",
           round);
    ok(h.seq_ok, "round %d: audit seq strictly increasing", round);
    dc_store_close(st);
    acked_total = a; /* the next child continues from the stored value */
  }
}

/* Named integers kept in the same transaction as the data (a log
 * backend's applied offset), audit times given by the caller, and a
 * version-1 store upgraded in place with its data. */
static void test_meta(void) {
  dc_store_t *st = NULL;
  char err[512];
  if (!ok(!dc_store_open_sqlite(path_in("meta"), &st, err, sizeof(err)),
          "meta: open (%s)", err))
    return;
  int64_t v = -1;
  is_int(dc_store_sqlite_meta(st, "offset", &v, err, sizeof(err)), 0,
         "meta: unset at first");
  const char *keys[] = {"acks"}, *vals[] = {"1"};
  dc_store_change_t ch = {.key = "acks", .op = 0, .new_value = "1"};
  dc_store_commit_t c = {.resource_type = 9, .entity = "m", .principal = "p",
                         .peer = "x", .api = "Log", .time_ms = 1234567,
                         .n_configs = 1, .keys = keys, .values = vals,
                         .n_changes = 1, .changes = &ch};
  is_int(dc_store_sqlite_commit_meta(st, &c, 1,
                                     &(dc_store_meta_t){"offset", 41}, 1, err,
                                     sizeof(err)), 0,
         "meta: data and offset in one commit");
  is_int(dc_store_sqlite_meta(st, "offset", &v, err, sizeof(err)), 1,
         "meta: set");
  is_int(v, 41, "meta: value 41");
  is_int(dc_store_sqlite_commit_meta(st, NULL, 0,
                                     (dc_store_meta_t[]){{"offset", 42},
                                                         {"epoch", 7}},
                                     2, err,
                                     sizeof(err)), 0,
         "meta: the offset alone");
  dc_store_sqlite_meta(st, "offset", &v, err, sizeof(err));
  is_int(v, 42, "meta: moved to 42");
  dc_store_sqlite_meta(st, "epoch", &v, err, sizeof(err));
  is_int(v, 7, "meta: two values in one commit");
  /* A failing data row takes the offset back with it. */
  dc_store_commit_t bad = c;
  bad.keys = (const char *[]){NULL};
  is_int(dc_store_sqlite_commit_meta(st, &bad, 1,
                                     &(dc_store_meta_t){"offset", 99}, 1, err,
                                     sizeof(err)), -1,
         "meta: a bad commit fails");
  dc_store_sqlite_meta(st, "offset", &v, err, sizeof(err));
  is_int(v, 42, "meta: and the offset did not move");
  hist_t h;
  hist_all(st, "m", &h);
  ok(h.rows == 1 && h.min_time == 1234567, "meta: the audit row has the "
     "given time (%lld)", (long long)h.min_time);
  dc_store_close(st);

  /* A version-1 store: no meta table, no log offsets. Reopening
   * upgrades it. */
  sqlite3 *db = NULL;
  ok(sqlite3_open(path_in("meta/dynconf.db"), &db) == SQLITE_OK &&
         sqlite3_exec(db, "DROP TABLE meta; DROP INDEX audit_log_offset; "
                      "ALTER TABLE audit DROP COLUMN log_offset; "
                      "PRAGMA user_version = 1", NULL, NULL,
                      NULL) == SQLITE_OK,
     "meta: made the store a version-1 one");
  sqlite3_close(db);
  if (!ok(!dc_store_open_sqlite(path_in("meta"), &st, err, sizeof(err)),
          "meta: a version-1 store opens (%s)", err))
    return;
  load_t l;
  load_all(st, &l);
  is_str(l.text, "9|m|acks=1\n", "meta: its data is still there");
  is_int(dc_store_sqlite_meta(st, "offset", &v, err, sizeof(err)), 0,
         "meta: and it has the meta table, empty");
  c.log_offset = 41;
  ok(!dc_store_sqlite_commit_meta(st, &c, 1, NULL, 0, err, sizeof(err)),
     "meta: and log offsets (%s)", err);
  h = (hist_t){0};
  is_int(dc_store_sqlite_audit_since(st, 40, 100, hist_cb, &h, err,
                                     sizeof(err)), 0, "meta: rows since 40");
  ok(h.rows == 1, "meta: the row at log offset 41 (%d rows)", h.rows);
  h = (hist_t){0};
  dc_store_sqlite_audit_since(st, 41, 100, hist_cb, &h, err, sizeof(err));
  ok(h.rows == 0, "meta: none after it (%d rows)", h.rows);
  dc_store_close(st);
}

int main(void) {
  snprintf(root, sizeof(root), "/tmp/dc-store-XXXXXX");
  if (!mkdtemp(root)) {
    ok(0, "mkdtemp: %s", strerror(errno));
    return done_testing();
  }
  diag("temp dir %s", root);
  test_basic();
  test_failures();
  test_open_errors();
  test_read_only();
  test_crash();
  test_meta();
  ok(nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0,
     "removed the temp dir");
  return done_testing();
}
