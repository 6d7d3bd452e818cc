/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A set of (tag, string) pairs in arena memory, for finding repeats and
 * looking names up in one request in linear time. Each member carries the
 * caller's index. Strings are borrowed and must outlive the set.
 *
 * Ownership: everything lives in the arena given to dc_strset_init.
 * Threading: one owner.
 */
#ifndef DC_STRSET_H
#define DC_STRSET_H
#include "common/arena.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dc_strset {
  size_t cap;        /* slots; a power of two, at least twice max items */
  int32_t *slot;     /* member index + 1; 0 = empty */
  const char **key;  /* member strings, by member index */
  int8_t *tag;       /* member tags, by member index */
} dc_strset_t;

/* Room for up to max members. 0, or -1 on OOM. */
int dc_strset_init(dc_strset_t *s, dc_arena_t *a, size_t max);
/* Adds (tag, key) as member idx unless an equal member exists. Returns
 * the existing member's index, or -1 when added. At most max adds. */
int32_t dc_strset_add(dc_strset_t *s, int8_t tag, const char *key,
                      int32_t idx);
/* Index of the member equal to (tag, key), or -1. */
int32_t dc_strset_find(const dc_strset_t *s, int8_t tag, const char *key);
#endif
