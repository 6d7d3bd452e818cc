#include "configdb.h"

#include <stdlib.h>
#include <string.h>

/* Open hash table of entities keyed by (type, name); linear probing,
 * tombstone-free deletion by backward shift. */
struct dc_configdb {
  dc_entity_t **slots;
  size_t cap, count;
};

static uint64_t hash(int8_t type, const char *name) {
  uint64_t h = 1469598103934665603ull ^ (uint8_t)type; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  return h;
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
  if (!db->slots) {
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

const dc_entity_t *dc_configdb_get(const dc_configdb_t *db, int8_t type,
                                   const char *name) {
  return db->slots[find_slot(db, type, name)];
}

const char *dc_entity_value(const dc_entity_t *e, const char *key) {
  if (!e)
    return NULL;
  size_t lo = 0, hi = e->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(e->keys[mid], key);
    if (!c)
      return e->values[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

size_t dc_configdb_count(const dc_configdb_t *db) { return db->count; }

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

int dc_configdb_replace(dc_configdb_t *db, int8_t type, const char *name,
                        size_t n, const char *const *keys,
                        const char *const *values) {
  size_t i = find_slot(db, type, name);
  if (n == 0) {
    if (db->slots[i])
      remove_slot(db, i);
    return 0;
  }
  /* Build the new entity completely before touching the table. */
  dc_entity_t *e = calloc(1, sizeof(*e));
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
  if (db->slots[i]) {
    entity_free(db->slots[i]);
    db->slots[i] = e;
    return 0;
  }
  if ((db->count + 1) * 2 > db->cap) {
    if (grow(db)) {
      entity_free(e);
      return -1;
    }
    i = find_slot(db, type, name);
  }
  db->slots[i] = e;
  db->count++;
  return 0;
oom:
  free(order);
  entity_free(e);
  return -1;
}

int dc_configdb_set(dc_configdb_t *db, int8_t type, const char *name,
                    const char *key, const char *value) {
  const dc_entity_t *e = dc_configdb_get(db, type, name);
  size_t n = e ? e->n : 0;
  const char **k = malloc((n + 1) * sizeof(*k));
  const char **v = malloc((n + 1) * sizeof(*v));
  if (!k || !v) {
    free(k);
    free(v);
    return -1;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(e->keys[i], key)) {
      k[m] = e->keys[i];
      v[m++] = e->values[i];
    }
  }
  k[m] = key;
  v[m++] = value;
  int r = dc_configdb_replace(db, type, name, m, k, v);
  free(k);
  free(v);
  return r;
}
