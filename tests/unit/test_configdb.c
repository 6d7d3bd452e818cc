/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The in-memory snapshot (lib/broker/config/configdb.c): get/replace/set/remove
 * semantics, sorted keys, dc_entity_value()'s binary search, and a long
 * randomised run over 20,000 entities (forced growth, then random deletes
 * and re-inserts) checked against a trivial reference model after every
 * operation. The random run is what exercises the open-addressing table's
 * backward-shift deletion: a wrong shift loses or hides entities that
 * were in the same probe run.
 */
#include "broker/config/configdb.h"
#include "broker/config/pairindex.h"
#include "../tap.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fixed-seed xorshift64*: the run is identical every time. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}
static size_t rng_below(size_t n) { return (size_t)(rng() % n); }

/* True when e holds exactly the given sorted pairs. */
static bool entity_is(const dc_entity_t *e, size_t n, const char *const *k,
                      const char *const *v) {
  if (!e || e->n != n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (strcmp(e->keys[i], k[i]) || strcmp(e->values[i], v[i]))
      return false;
  return true;
}

static void test_basics(void) {
  dc_configdb_t *db = dc_configdb_new();
  if (!ok(db != NULL, "new"))
    return;
  is_int(dc_configdb_count(db), 0, "empty db has no entities");
  ok(dc_configdb_get(db, 9, "c1") == NULL, "get on empty db is NULL");
  ok(dc_entity_value(NULL, "acks") == NULL, "value in a NULL entity is NULL");

  /* Keys come in any order and are stored sorted; strings are copied. */
  char k0[] = "session.timeout.ms", k1[] = "acks", k2[] = "linger.ms";
  char v0[] = "30000", v1[] = "all", v2[] = "5";
  const char *keys[] = {k0, k1, k2}, *vals[] = {v0, v1, v2};
  is_int(dc_configdb_replace(db, 9, "c1", 3, keys, vals), 0, "replace c1");
  k1[0] = 'X';
  v1[0] = 'X';
  const dc_entity_t *e = dc_configdb_get(db, 9, "c1");
  static const char *const sk[] = {"acks", "linger.ms", "session.timeout.ms"};
  static const char *const sv[] = {"all", "5", "30000"};
  ok(entity_is(e, 3, sk, sv), "c1 holds sorted copies of its pairs");
  ok(e && e->type == 9 && !strcmp(e->name, "c1"), "entity type and name");
  is_int(dc_configdb_count(db), 1, "count 1");
  is_str(dc_entity_value(e, "acks"), "all", "value acks");
  is_str(dc_entity_value(e, "linger.ms"), "5", "value linger.ms");
  is_str(dc_entity_value(e, "session.timeout.ms"), "30000", "value session");
  ok(dc_entity_value(e, "a") == NULL, "absent key before the first");
  ok(dc_entity_value(e, "b") == NULL, "absent key between");
  ok(dc_entity_value(e, "z") == NULL, "absent key after the last");
  ok(dc_entity_value(e, "") == NULL, "empty key absent");
  ok(dc_entity_value(e, "acks2") == NULL, "key extending a present key");

  /* Type is part of the identity. */
  const char *bk[] = {"listeners"}, *bv[] = {"PLAINTEXT://:9092"};
  is_int(dc_configdb_replace(db, 4, "c1", 1, bk, bv), 0, "replace (4, c1)");
  is_int(dc_configdb_count(db), 2, "count 2: same name, other type");
  ok(dc_configdb_get(db, 9, "c1") == e, "(9, c1) untouched");
  ok(entity_is(dc_configdb_get(db, 4, "c1"), 1, bk, bv), "(4, c1) separate");
  ok(dc_configdb_get(db, 9, "c2") == NULL, "other name absent");
  ok(dc_configdb_get(db, 2, "c1") == NULL, "other type absent");

  /* Replace is a full replacement, not a merge. */
  const char *rk[] = {"debug"}, *rv[] = {"broker"};
  is_int(dc_configdb_replace(db, 9, "c1", 1, rk, rv), 0, "replace c1 again");
  e = dc_configdb_get(db, 9, "c1");
  ok(entity_is(e, 1, rk, rv), "c1 now holds only debug");
  ok(dc_entity_value(e, "acks") == NULL, "old key gone");
  is_int(dc_configdb_count(db), 2, "count unchanged by replacing");

  /* set: creates the entity, updates in place, inserts sorted. */
  is_int(dc_configdb_set(db, 9, "c2", "linger.ms", "1"), 0, "set creates c2");
  is_int(dc_configdb_count(db), 3, "count 3");
  is_int(dc_configdb_set(db, 9, "c2", "acks", "0"), 0, "set acks");
  is_int(dc_configdb_set(db, 9, "c2", "zz.last", "z"), 0, "set zz.last");
  is_int(dc_configdb_set(db, 9, "c2", "linger.ms", "2"), 0, "update linger");
  is_int(dc_configdb_set(db, 9, "c2", "b.mid", "m"), 0, "set b.mid");
  static const char *const c2k[] = {"acks", "b.mid", "linger.ms", "zz.last"};
  static const char *const c2v[] = {"0", "m", "2", "z"};
  ok(entity_is(dc_configdb_get(db, 9, "c2"), 4, c2k, c2v),
     "c2 = acks, b.mid, linger.ms (updated), zz.last, sorted");
  is_int(dc_configdb_count(db), 3, "count still 3");
  is_int(dc_configdb_set(db, 9, "c2", "v", ""), 0, "set an empty value");
  is_str(dc_entity_value(dc_configdb_get(db, 9, "c2"), "v"), "",
         "empty value kept, distinct from absent");

  /* n == 0 removes; removing an absent entity is a no-op. */
  is_int(dc_configdb_replace(db, 9, "c1", 0, NULL, NULL), 0, "replace n=0");
  ok(dc_configdb_get(db, 9, "c1") == NULL, "c1 removed");
  ok(dc_configdb_get(db, 4, "c1") != NULL, "(4, c1) survives");
  is_int(dc_configdb_count(db), 2, "count 2 after removal");
  is_int(dc_configdb_replace(db, 9, "nobody", 0, NULL, NULL), 0,
         "removing an absent entity succeeds");
  is_int(dc_configdb_count(db), 2, "count unchanged");
  is_int(dc_configdb_replace(db, 9, "c1", 0, NULL, NULL), 0,
         "removing it twice succeeds");
  is_int(dc_configdb_count(db), 2, "count unchanged");

  /* Names that only differ slightly are distinct entities. */
  is_int(dc_configdb_set(db, 9, "<default>", "acks", "1"), 0, "<default>");
  is_int(dc_configdb_set(db, 9, "<default> ", "acks", "2"), 0, "'<default> '");
  is_str(dc_entity_value(dc_configdb_get(db, 9, "<default>"), "acks"), "1",
         "<default> value");
  is_str(dc_entity_value(dc_configdb_get(db, 9, "<default> "), "acks"), "2",
         "'<default> ' value");
  dc_configdb_destroy(db);
  dc_configdb_destroy(NULL); /* allowed, like free(NULL) */
}

/* dc_entity_value's binary search over many keys, present and absent. */
static void test_many_keys(void) {
  enum { N = 257 };
  static char kbuf[N][16], vbuf[N][16];
  const char *k[N], *v[N];
  for (size_t i = 0; i < N; i++) {
    /* Scrambled insertion order; odd keys k001..k513, the even ones are
     * holes for absent lookups. */
    size_t j = (i * 101) % N;
    snprintf(kbuf[i], sizeof(kbuf[i]), "k%03zu", 2 * j + 1);
    snprintf(vbuf[i], sizeof(vbuf[i]), "v%zu", 2 * j + 1);
    k[i] = kbuf[i];
    v[i] = vbuf[i];
  }
  dc_configdb_t *db = dc_configdb_new();
  is_int(dc_configdb_replace(db, 9, "many", N, k, v), 0, "replace %d keys", N);
  const dc_entity_t *e = dc_configdb_get(db, 9, "many");
  int bad = 0;
  for (size_t i = 1; e && i < e->n; i++)
    if (strcmp(e->keys[i - 1], e->keys[i]) >= 0)
      bad++;
  ok(e && e->n == N && bad == 0, "keys strictly sorted");
  bad = 0;
  for (size_t x = 0; x <= 2 * N; x++) {
    char key[16], want[16];
    snprintf(key, sizeof(key), "k%03zu", x);
    snprintf(want, sizeof(want), "v%zu", x);
    const char *got = dc_entity_value(e, key);
    if (x % 2 ? !got || strcmp(got, want) : got != NULL) {
      diag("  %s -> %s", key, got ? got : "(null)");
      bad++;
    }
  }
  ok(bad == 0, "every present key found, every hole absent");
  dc_configdb_destroy(db);
}

/* ---- randomised run against a reference model -------------------------- */

enum { NENT = 20000 };

typedef struct model {
  int8_t type;
  char name[24];
  unsigned ver; /* 0 = absent; else the entity holds key(s) for ver */
  unsigned nkeys;
} model_t;

static model_t model[NENT];
static size_t model_count;

static void key_of(unsigned ver, unsigned i, char *k, size_t n) {
  snprintf(k, n, "key%u.%u", i, ver % 7);
}

/* Gives entity m a fresh random content (1..3 keys) in db and the model. */
static int model_put(dc_configdb_t *db, model_t *m, unsigned ver,
                     bool use_set) {
  unsigned nk = 1 + (unsigned)rng_below(3);
  char kb[3][32], vb[3][32];
  const char *k[3], *v[3];
  for (unsigned i = 0; i < nk; i++) {
    key_of(ver, i, kb[i], sizeof(kb[i]));
    snprintf(vb[i], sizeof(vb[i]), "%s=%u", m->name, ver);
    k[i] = kb[i];
    v[i] = vb[i];
  }
  int r;
  if (use_set && !m->ver) {
    /* Built key by key, the way the store is loaded. */
    r = 0;
    for (unsigned i = 0; i < nk && !r; i++)
      r = dc_configdb_set(db, m->type, m->name, k[i], v[i]);
  } else {
    r = dc_configdb_replace(db, m->type, m->name, nk, k, v);
  }
  if (!m->ver)
    model_count++;
  m->ver = ver;
  m->nkeys = nk;
  return r;
}

static void model_del(dc_configdb_t *db, model_t *m) {
  dc_configdb_replace(db, m->type, m->name, 0, NULL, NULL);
  if (m->ver)
    model_count--;
  m->ver = 0;
}

/* Does the db agree with the model about entity m? */
static bool model_check(const dc_configdb_t *db, const model_t *m) {
  const dc_entity_t *e = dc_configdb_get(db, m->type, m->name);
  if (!m->ver) {
    if (e)
      diag("  %d/%s present, should be absent", m->type, m->name);
    return e == NULL;
  }
  if (!e || e->n != m->nkeys || e->type != m->type || strcmp(e->name, m->name)) {
    diag("  %d/%s: %s", m->type, m->name, e ? "wrong content" : "missing");
    return false;
  }
  for (unsigned i = 0; i < m->nkeys; i++) {
    char k[32], v[48];
    key_of(m->ver, i, k, sizeof(k));
    snprintf(v, sizeof(v), "%s=%u", m->name, m->ver);
    const char *got = dc_entity_value(e, k);
    if (!got || strcmp(got, v)) {
      diag("  %d/%s %s = %s, want %s", m->type, m->name, k,
           got ? got : "(null)", v);
      return false;
    }
  }
  return true;
}

static int model_check_all(const dc_configdb_t *db) {
  int bad = 0;
  for (size_t i = 0; i < NENT; i++)
    if (!model_check(db, &model[i]) && ++bad > 5)
      break;
  if (dc_configdb_count(db) != model_count) {
    diag("  count %zu, model %zu", dc_configdb_count(db), model_count);
    bad++;
  }
  return bad;
}

static void test_random(void) {
  dc_configdb_t *db = dc_configdb_new();
  /* Entities 2k and 2k+1 share the name client-k, with types 9 and 4,
   * so (type, name) identity is exercised too. */
  for (size_t i = 0; i < NENT; i++) {
    model[i].type = (int8_t)(i % 2 ? 4 : 9);
    snprintf(model[i].name, sizeof(model[i].name), "client-%zu", i / 2);
    model[i].ver = 0;
  }

  /* Phase 1: insert everything, growing the table from 64 slots to over
   * 40,000; the pointer to the first entity must survive every growth. */
  unsigned ver = 1;
  int fails = 0;
  for (size_t i = 0; i < NENT; i++) {
    if (model_put(db, &model[i], ver++, i % 2 == 0))
      fails++;
    if (!model_check(db, &model[i]))
      fails++;
  }
  const dc_entity_t *first = dc_configdb_get(db, model[0].type, model[0].name);
  is_int(fails, 0, "insert %d entities (set and replace), each readable",
         NENT);
  is_int(model_check_all(db), 0, "after growth every entity matches");
  is_int(dc_configdb_count(db), NENT, "count %d", NENT);

  /* Phase 2: delete a random 3/4 of them, checking a neighbourhood of
   * entities after each delete (cheap) and everything every 1000 ops. */
  fails = 0;
  int full_bad = 0;
  size_t ops = 0;
  for (size_t round = 0; round < 3 * NENT / 4 * 2; round++) {
    model_t *m = &model[rng_below(NENT)];
    if (m == &model[0])
      continue; /* keep `first` alive to check pointer stability */
    model_del(db, m);
    if (!model_check(db, m))
      fails++;
    for (int s = 0; s < 4; s++)
      if (!model_check(db, &model[rng_below(NENT)]))
        fails++;
    if (++ops % 1000 == 0)
      full_bad += model_check_all(db);
  }
  is_int(fails, 0, "random deletes: spot checks agree");
  is_int(full_bad, 0, "random deletes: periodic full checks agree");
  is_int(model_check_all(db), 0, "after deletes every entity matches (%zu left)",
         model_count);
  ok(dc_configdb_get(db, model[0].type, model[0].name) == first,
     "entity pointer stable across growth and other entities' deletion");

  /* Phase 3: random mix of insert, re-insert (replace), set on absent,
   * and delete, so probe runs keep forming and breaking up. */
  fails = 0;
  full_bad = 0;
  for (size_t op = 1; op <= 60000; op++) {
    model_t *m = &model[1 + rng_below(NENT - 1)];
    unsigned what = (unsigned)rng_below(10);
    if (what < 4)
      model_del(db, m);
    else if (model_put(db, m, ver++, what == 9))
      fails++;
    if (!model_check(db, m))
      fails++;
    if (op % 2000 == 0)
      full_bad += model_check_all(db);
  }
  is_int(fails, 0, "mixed inserts/replaces/deletes: every op agrees");
  is_int(full_bad, 0, "mixed ops: periodic full checks agree");
  is_int(model_check_all(db), 0, "after the mixed run every entity matches");

  /* Phase 4: delete everything (in random order), then the table is
   * empty and reusable. */
  size_t order[NENT];
  for (size_t i = 0; i < NENT; i++)
    order[i] = i;
  for (size_t i = NENT - 1; i > 0; i--) {
    size_t j = rng_below(i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  fails = 0;
  for (size_t i = 0; i < NENT; i++) {
    model_del(db, &model[order[i]]);
    if (i % 500 == 0)
      fails += model_check_all(db);
  }
  is_int(fails, 0, "deleting everything: periodic full checks agree");
  is_int(dc_configdb_count(db), 0, "count 0 after deleting everything");
  is_int(model_check_all(db), 0, "nothing findable");
  is_int(model_put(db, &model[5], ver++, true), 0, "re-insert after emptying");
  ok(model_check(db, &model[5]) && dc_configdb_count(db) == 1,
     "table reusable");
  dc_configdb_destroy(db); /* frees what is left: valgrind checks */
}

/* Long probe runs, including runs that wrap from the last slot to the
 * first: at most 31 entities live at once, so the table keeps its initial
 * 64 slots (it grows at half full) and is crowded, while the live set is
 * drawn from a pool of 400 names so that, over the rounds, runs form in
 * every part of the table. Checked completely after every operation. */
static void test_small_table_runs(void) {
  enum { POOL = 400, LIVE = 31 };
  static char names[POOL][16];
  static bool present[POOL];
  size_t live = 0;
  dc_configdb_t *db = dc_configdb_new();
  for (int i = 0; i < POOL; i++)
    snprintf(names[i], sizeof(names[i]), "n%d", i);
  int bad = 0, ops = 0;
  for (int round = 0; round < 60000; round++) {
    size_t i = rng_below(POOL);
    if (present[i]) {
      dc_configdb_replace(db, 9, names[i], 0, NULL, NULL);
      present[i] = false;
      live--;
    } else if (live < LIVE) {
      const char *k = "k", *v = names[i];
      dc_configdb_replace(db, 9, names[i], 1, &k, &v);
      present[i] = true;
      live++;
    } else {
      continue;
    }
    ops++;
    for (size_t j = 0; j < POOL; j++) {
      const dc_entity_t *e = dc_configdb_get(db, 9, names[j]);
      if (present[j] != (e != NULL) ||
          (e && strcmp(dc_entity_value(e, "k"), names[j])))
        bad++;
    }
    if (live != dc_configdb_count(db))
      bad++;
  }
  ok(ops > 5000, "small table: %d inserts/deletes", ops);
  is_int(bad, 0, "small table: full check after each agrees");
  dc_configdb_destroy(db);
}

/* ---- the heartbeat/session index follows every change ------------------ */

/* Random replace/set/remove over clients, users and user+client entities
 * (and ones the index must ignore), then every heap visited at random
 * bounds and every chain walked, against a model. */

#define HBK "heartbeat.interval.ms"
#define STK "session.timeout.ms"
enum { NIXC = 200, NIXU = 20, NIXUC = 200, NIX = NIXC + NIXU + NIXUC + 3 };

typedef struct ixm {
  int8_t type;
  char name[24];
  int g;          /* dc_pix_group_t, or -1: not indexed */
  int u, c;       /* for user+client entities */
  char hb[8], st[8], acks[8]; /* "" = unset */
} ixm_t;

static ixm_t ixm[NIX];

static void ixm_init(void) {
  int i = 0;
  for (int c = 0; c < NIXC; c++, i++) {
    ixm[i] = (ixm_t){.type = 9, .g = DC_PIX_CLIENTS};
    sprintf(ixm[i].name, "c%d", c);
  }
  for (int u = 0; u < NIXU; u++, i++) {
    ixm[i] = (ixm_t){.type = 10, .g = DC_PIX_USERS};
    sprintf(ixm[i].name, "u%d", u);
  }
  for (int k = 0; k < NIXUC; k++, i++) {
    ixm[i] = (ixm_t){.type = 10, .g = DC_PIX_USER_CLIENTS, .u = k % NIXU,
                     .c = k / NIXU};
    sprintf(ixm[i].name, "u%d/c%d", k % NIXU, k / NIXU);
  }
  /* Not in any group: <default>, a broker, a name that does not parse. */
  ixm[i++] = (ixm_t){.type = 9, .name = "<default>", .g = -1};
  ixm[i++] = (ixm_t){.type = 4, .name = "c1", .g = -1};
  ixm[i++] = (ixm_t){.type = 10, .name = "u1/c1/x", .g = -1};
}

static void ix_value(char *out) {
  size_t r = rng_below(10);
  if (r < 3)
    out[0] = '\0';
  else if (r == 3)
    strcpy(out, "x");
  else
    sprintf(out, "%zu", rng_below(1000));
}

/* One random change to m, in the db and the model. */
static void ix_change(dc_configdb_t *db, ixm_t *m) {
  size_t op = rng_below(10);
  if (op == 0) {
    m->hb[0] = m->st[0] = m->acks[0] = '\0';
    dc_configdb_replace(db, m->type, m->name, 0, NULL, NULL);
  } else if (op < 4) { /* one key, in place */
    char *slot = op == 1 ? m->hb : op == 2 ? m->st : m->acks;
    sprintf(slot, "%zu", rng_below(1000));
    dc_configdb_set(db, m->type, m->name, op == 1 ? HBK : op == 2 ? STK : "acks",
                    slot);
  } else {
    ix_value(m->hb);
    ix_value(m->st);
    strcpy(m->acks, rng_below(2) ? "1" : "");
    const char *k[3], *v[3];
    size_t n = 0;
    const char *const keys[3] = {HBK, STK, "acks"}, *vals[3] = {m->hb, m->st, m->acks};
    for (int i = 0; i < 3; i++)
      if (*vals[i]) {
        k[n] = keys[i];
        v[n++] = vals[i];
      }
    dc_configdb_replace(db, m->type, m->name, n, k, v);
  }
}

static bool ix_num(const char *s, long *v) {
  char *end;
  *v = strtol(s, &end, 10);
  return *s && !*end;
}

/* Does model entity m belong in visit(g, h, bound)'s answer? */
static bool ix_want(const ixm_t *m, int g, int h, long bound) {
  long hb, st;
  bool hbn = ix_num(m->hb, &hb), stn = ix_num(m->st, &st);
  if (m->g != g)
    return false;
  switch (h) {
  case DC_PIX_HB_ALL:
    return g != DC_PIX_USER_CLIENTS && hbn && hb >= bound;
  case DC_PIX_ST_ALL:
    return g != DC_PIX_USER_CLIENTS && stn && st <= bound;
  case DC_PIX_HB_ONLY:
    return hbn && !*m->st && hb >= bound;
  default:
    return stn && !*m->hb && st <= bound;
  }
}

/* Collects "user|client" lines; returns 0 so the walk goes on. */
typedef struct seen {
  char lines[NIX][48];
  size_t n;
} seen_t;

static int seen_cb(void *opaque, const char *uenc, const char *client) {
  seen_t *s = opaque;
  if (s->n < NIX)
    snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s|%s", uenc ? uenc : "-",
             client ? client : "-");
  s->n++;
  return 0;
}

static int cmp_line(const void *a, const void *b) { return strcmp(a, b); }

/* The line seen_cb makes for model entity m. */
static void ix_line(const ixm_t *m, char *out, size_t size) {
  if (m->g == DC_PIX_CLIENTS)
    snprintf(out, size, "-|%s", m->name);
  else if (m->g == DC_PIX_USERS)
    snprintf(out, size, "%s|-", m->name);
  else
    snprintf(out, size, "u%d|c%d", m->u, m->c);
}

static bool seen_is(seen_t *got, seen_t *want) {
  if (got->n != want->n || got->n > NIX)
    return false;
  qsort(got->lines, got->n, sizeof(got->lines[0]), cmp_line);
  qsort(want->lines, want->n, sizeof(want->lines[0]), cmp_line);
  for (size_t i = 0; i < got->n; i++)
    if (strcmp(got->lines[i], want->lines[i]))
      return false;
  return true;
}

/* Every heap at a random bound, and every chain. */
static bool ix_agrees(const dc_configdb_t *db) {
  static seen_t got, want;
  const dc_pairidx_t *ix = dc_configdb_pairidx(db);
  for (int g = 0; g < 3; g++)
    for (int h = 0; h < 4; h++) {
      long bound = (long)rng_below(1000);
      got.n = want.n = 0;
      dc_pairidx_visit(ix, g, h, bound, seen_cb, &got);
      for (int i = 0; i < NIX; i++)
        if (ix_want(&ixm[i], g, h, bound))
          ix_line(&ixm[i], want.lines[want.n++], sizeof(want.lines[0]));
      if (!seen_is(&got, &want))
        return false;
    }
  for (int k = 0; k < NIXU + NIXUC / NIXU; k++) {
    bool by_user = k < NIXU;
    char key[16];
    sprintf(key, by_user ? "u%d" : "c%d", by_user ? k : k - NIXU);
    got.n = want.n = 0;
    if (by_user)
      dc_pairidx_of_user(ix, key, seen_cb, &got);
    else
      dc_pairidx_of_client(ix, key, seen_cb, &got);
    for (int i = 0; i < NIX; i++) {
      const ixm_t *m = &ixm[i];
      if (m->g == DC_PIX_USER_CLIENTS && (*m->hb || *m->st) &&
          (by_user ? m->u == k : m->c == k - NIXU))
        ix_line(m, want.lines[want.n++], sizeof(want.lines[0]));
    }
    if (!seen_is(&got, &want))
      return false;
  }
  return true;
}

/* A visit stops at the first non-zero answer and returns it. */
static int stop_cb(void *opaque, const char *uenc, const char *client) {
  (void)uenc;
  (void)client;
  return ++*(int *)opaque == 2 ? 7 : 0;
}

static void test_pair_index(void) {
  dc_configdb_t *db = dc_configdb_new();
  ixm_init();
  int bad = 0, checks = 0;
  for (int op = 1; op <= 20000; op++) {
    ix_change(db, &ixm[rng_below(NIX)]);
    if (op % 50 == 0) {
      checks++;
      if (!ix_agrees(db) && bad++ < 3)
        diag("  the index disagrees with the model after %d changes", op);
    }
  }
  ok(bad == 0, "index: %d checks of every heap and chain after random "
               "changes, %d disagree", checks, bad);
  const dc_pairidx_t *ix = dc_configdb_pairidx(db);
  int calls = 0;
  size_t n = dc_pairidx_size(ix, DC_PIX_CLIENTS, DC_PIX_HB_ALL);
  int r = dc_pairidx_visit(ix, DC_PIX_CLIENTS, DC_PIX_HB_ALL, INT64_MIN,
                           stop_cb, &calls);
  ok(n >= 2 && r == 7 && calls == 2,
     "a visit stops at the first non-zero answer and returns it");
  for (int i = 0; i < NIX; i++)
    dc_configdb_replace(db, ixm[i].type, ixm[i].name, 0, NULL, NULL);
  size_t left = 0;
  for (int g = 0; g < 3; g++)
    for (int h = 0; h < 4; h++)
      left += dc_pairidx_size(ix, g, h);
  calls = 0;
  dc_pairidx_of_user(ix, "u1", stop_cb, &calls);
  ok(left == 0 && calls == 0, "removing every entity empties the index");
  for (int i = 0; i < NIX / 2; i++) /* leave some for destroy to free */
    ix_change(db, &ixm[rng_below(NIX)]);
  dc_configdb_destroy(db);
}

int main(void) {
  test_basics();
  test_many_keys();
  test_small_table_runs();
  test_random();
  test_pair_index();
  return done_testing();
}
