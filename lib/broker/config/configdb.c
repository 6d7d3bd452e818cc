/* SPDX-License-Identifier: BSD-2-Clause */
#include "broker/config/configdb.h"
#include "broker/config/pairindex.h"
#include "common/siphash.h"

#include <stdlib.h>
#include <string.h>

/* An entity with its node in the heartbeat/session index (NULL when it
 * is not indexed). Slots point at .e, the first member. */
typedef struct stored {
  dc_entity_t e;
  dc_pairidx_node_t *node;
} stored_t;

/* Open hash table of entities keyed by (type, name); linear probing,
 * tombstone-free deletion by backward shift. Names are the alterers'
 * choice: they hash with the process's SipHash key. */
struct dc_configdb {
  dc_entity_t **slots;
  size_t cap, count;
  dc_pairidx_t *ix;
  uint64_t generation; /* bumped by every change */
};

static uint64_t hash(int8_t type, const char *name) {
  return dc_hash_str((uint8_t)type, name);
}

static void entity_free(dc_entity_t *e) {
  if (!e)
    return;
  for (size_t i = 0; i < e->n; i++) {
    free(e->keys[i]);
    free(e->values[i]);
  }
  free(e->keys);
  free(e->values);
  free(e->name);
  free(e);
}

dc_configdb_t *dc_configdb_new(void) {
  dc_configdb_t *db = calloc(1, sizeof(*db));
  if (!db)
    return NULL;
  db->cap = 64;
  db->slots = calloc(db->cap, sizeof(*db->slots));
  db->ix = dc_pairidx_new();
  if (!db->slots || !db->ix) {
    free(db->slots);
    dc_pairidx_destroy(db->ix);
    free(db);
    return NULL;
  }
  return db;
}

void dc_configdb_destroy(dc_configdb_t *db) {
  if (!db)
    return;
  for (size_t i = 0; i < db->cap; i++)
    entity_free(db->slots[i]);
  free(db->slots);
  dc_pairidx_destroy(db->ix); /* frees the nodes */
  free(db);
}

static size_t find_slot(const dc_configdb_t *db, int8_t type,
                        const char *name) {
  size_t i = hash(type, name) & (db->cap - 1);
  while (db->slots[i] &&
         (db->slots[i]->type != type || strcmp(db->slots[i]->name, name)))
    i = (i + 1) & (db->cap - 1);
  return i;
}

uint64_t dc_configdb_generation(const dc_configdb_t *db) {
  return db->generation;
}

const dc_entity_t *dc_configdb_get(const dc_configdb_t *db, int8_t type,
                                   const char *name) {
  return db->slots[find_slot(db, type, name)];
}

size_t dc_configdb_count(const dc_configdb_t *db) { return db->count; }

const dc_pairidx_t *dc_configdb_pairidx(const dc_configdb_t *db) {
  return db->ix;
}

int dc_configdb_foreach(const dc_configdb_t *db,
                        int (*cb)(void *opaque, const dc_entity_t *e),
                        void *opaque) {
  for (size_t i = 0; i < db->cap; i++)
    if (db->slots[i]) {
      int r = cb(opaque, db->slots[i]);
      if (r)
        return r;
    }
  return 0;
}

static int grow(dc_configdb_t *db) {
  size_t ncap = db->cap * 2;
  dc_entity_t **ns = calloc(ncap, sizeof(*ns));
  if (!ns)
    return -1;
  dc_entity_t **old = db->slots;
  size_t ocap = db->cap;
  db->slots = ns;
  db->cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i])
      db->slots[find_slot(db, old[i]->type, old[i]->name)] = old[i];
  free(old);
  return 0;
}

/* Removes slot i, shifting later members of its probe run back. */
static void remove_slot(dc_configdb_t *db, size_t i) {
  dc_pairidx_update(db->ix, &((stored_t *)db->slots[i])->node, NULL);
  entity_free(db->slots[i]);
  db->slots[i] = NULL;
  db->count--;
  size_t j = i;
  for (;;) {
    j = (j + 1) & (db->cap - 1);
    dc_entity_t *e = db->slots[j];
    if (!e)
      return;
    size_t home = hash(e->type, e->name) & (db->cap - 1);
    /* e may move to i if i lies cyclically in [home, j). */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      db->slots[i] = e;
      db->slots[j] = NULL;
      i = j;
    }
  }
}

static int cmp_idx_keys(const void *a, const void *b, void *keys) {
  const char *const *k = keys;
  return strcmp(k[*(const size_t *)a], k[*(const size_t *)b]);
}

/* A new entity holding copies of keys/values, sorted; NULL on OOM. */
static dc_entity_t *entity_new(int8_t type, const char *name, size_t n,
                               const char *const *keys,
                               const char *const *values) {
  stored_t *s = calloc(1, sizeof(*s));
  dc_entity_t *e = s ? &s->e : NULL;
  size_t *order = malloc(n * sizeof(*order));
  if (!e || !order)
    goto oom;
  e->type = type;
  e->name = strdup(name);
  e->keys = calloc(n, sizeof(char *));
  e->values = calloc(n, sizeof(char *));
  if (!e->name || !e->keys || !e->values)
    goto oom;
  for (size_t k = 0; k < n; k++)
    order[k] = k;
  qsort_r(order, n, sizeof(*order), cmp_idx_keys, (void *)keys);
  for (size_t k = 0; k < n; k++, e->n++) {
    e->keys[k] = strdup(keys[order[k]]);
    e->values[k] = strdup(values[order[k]]);
    if (!e->keys[k] || !e->values[k]) {
      e->n++;
      goto oom;
    }
  }
  free(order);
  return e;
oom:
  free(order);
  entity_free(e);
  return NULL;
}

/* Stores e (new, not yet in the table) at slot i, the slot of its name,
 * in place of what is there; the index node moves to e. 0, or -1 on OOM
 * with e freed and the db unchanged. */
static int install(dc_configdb_t *db, size_t i, dc_entity_t *e) {
  stored_t *old = (stored_t *)db->slots[i];
  if (!old && (db->count + 1) * 2 > db->cap) {
    if (grow(db))
      goto oom;
    i = find_slot(db, e->type, e->name);
  }
  dc_pairidx_node_t *node = old ? old->node : NULL;
  if (dc_pairidx_update(db->ix, &node, e))
    goto oom;
  ((stored_t *)e)->node = node;
  if (old)
    entity_free(&old->e);
  else
    db->count++;
  db->slots[i] = e;
  return 0;
oom:
  entity_free(e);
  return -1;
}

int dc_configdb_replace(dc_configdb_t *db, int8_t type, const char *name,
                        size_t n, const char *const *keys,
                        const char *const *values) {
  db->generation++;
  size_t i = find_slot(db, type, name);
  if (n == 0) {
    if (db->slots[i])
      remove_slot(db, i);
    return 0;
  }
  /* Build the new entity completely before touching the table. */
  dc_entity_t *e = entity_new(type, name, n, keys, values);
  return e ? install(db, i, e) : -1;
}

/* Adds key=value to e at position p (room for one more is there); undone
 * (and -1) when the index cannot follow. */
static int insert_key(dc_configdb_t *db, dc_entity_t *e, size_t p, char *k,
                      char *v) {
  memmove(e->keys + p + 1, e->keys + p, (e->n - p) * sizeof(char *));
  memmove(e->values + p + 1, e->values + p, (e->n - p) * sizeof(char *));
  e->keys[p] = k;
  e->values[p] = v;
  e->n++;
  if (!dc_pairidx_update(db->ix, &((stored_t *)e)->node, e))
    return 0;
  e->n--;
  memmove(e->keys + p, e->keys + p + 1, (e->n - p) * sizeof(char *));
  memmove(e->values + p, e->values + p + 1, (e->n - p) * sizeof(char *));
  return -1;
}

/* Changes an existing entity in place: loading sets keys one at a time,
 * and rebuilding the entity for each would copy it over and over. */
int dc_configdb_set(dc_configdb_t *db, int8_t type, const char *name,
                    const char *key, const char *value) {
  db->generation++;
  size_t i = find_slot(db, type, name);
  dc_entity_t *e = db->slots[i];
  if (!e) {
    e = entity_new(type, name, 1, &key, &value);
    return e ? install(db, i, e) : -1;
  }
  int found;
  size_t p = dc_entity_key_pos(e, key, &found);
  char *v = strdup(value);
  if (!v)
    return -1;
  if (found) {
    char *old = e->values[p];
    e->values[p] = v;
    if (!dc_pairidx_update(db->ix, &((stored_t *)e)->node, e)) {
      free(old);
      return 0;
    }
    e->values[p] = old;
    free(v);
    return -1;
  }
  char *k = strdup(key);
  char **nk = k ? realloc(e->keys, (e->n + 1) * sizeof(char *)) : NULL;
  if (nk)
    e->keys = nk;
  char **nv = nk ? realloc(e->values, (e->n + 1) * sizeof(char *)) : NULL;
  if (nv)
    e->values = nv;
  if (nv && !insert_key(db, e, p, k, v))
    return 0;
  free(k);
  free(v);
  return -1;
}
