/* SPDX-License-Identifier: BSD-2-Clause */
#include "common/strset.h"
#include "common/siphash.h"

#include <string.h>

/* Keys come from requests: keyed hash. */
static uint64_t hash(int8_t tag, const char *key) {
  return dc_hash_str((uint8_t)tag, key);
}

int dc_strset_init(dc_strset_t *s, dc_arena_t *a, size_t max) {
  memset(s, 0, sizeof(*s));
  size_t cap = 16;
  while (cap < 2 * max)
    cap *= 2;
  s->cap = cap;
  s->slot = dc_arena_alloc(a, cap * sizeof(*s->slot));
  /* Members are indexed by the caller's idx, which is below max. */
  s->key = dc_arena_alloc(a, (max ? max : 1) * sizeof(*s->key));
  s->tag = dc_arena_alloc(a, (max ? max : 1) * sizeof(*s->tag));
  return s->slot && s->key && s->tag ? 0 : -1;
}

static size_t probe(const dc_strset_t *s, int8_t tag, const char *key) {
  size_t i = hash(tag, key) & (s->cap - 1);
  for (;;) {
    int32_t m = s->slot[i];
    if (!m || (s->tag[m - 1] == tag && !strcmp(s->key[m - 1], key)))
      return i;
    i = (i + 1) & (s->cap - 1);
  }
}

int32_t dc_strset_add(dc_strset_t *s, int8_t tag, const char *key,
                      int32_t idx) {
  size_t i = probe(s, tag, key);
  if (s->slot[i])
    return s->slot[i] - 1;
  s->slot[i] = idx + 1;
  s->key[idx] = key;
  s->tag[idx] = tag;
  return -1;
}

int32_t dc_strset_find(const dc_strset_t *s, int8_t tag, const char *key) {
  if (!s->cap)
    return -1;
  int32_t m = s->slot[probe(s, tag, key)];
  return m ? m - 1 : -1;
}
