/* SPDX-License-Identifier: BSD-2-Clause */
/* Lookups in one entity's sorted configs (entity_configs.h). */
#include "broker/config/entity_configs.h"

#include <string.h>

size_t dc_entity_key_pos(const dc_entity_t *e, const char *key, int *found) {
  size_t lo = 0, hi = e->n;
  *found = 0;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(e->keys[mid], key);
    if (!c) {
      *found = 1;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const char *dc_entity_value(const dc_entity_t *e, const char *key) {
  int found = 0;
  size_t p = e ? dc_entity_key_pos(e, key, &found) : 0;
  return found ? e->values[p] : NULL;
}
