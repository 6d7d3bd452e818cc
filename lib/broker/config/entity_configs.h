/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One entity's dynamic configs as the in-memory snapshot (configdb.h)
 * holds them: keys sorted and unique, values parallel. Lookups only; the
 * snapshot owns and changes them.
 */
#ifndef DC_ENTITY_CONFIGS_H
#define DC_ENTITY_CONFIGS_H
#include <stddef.h>
#include <stdint.h>

typedef struct dc_entity {
  int8_t type;
  char *name;
  size_t n;
  char **keys;   /* sorted, unique */
  char **values; /* parallel to keys, never NULL */
} dc_entity_t;

/* Where key is or would go in e's sorted keys; *found says which. */
size_t dc_entity_key_pos(const dc_entity_t *e, const char *key, int *found);
/* Value of key in e (e may be NULL); NULL when absent. */
const char *dc_entity_value(const dc_entity_t *e, const char *key);
#endif
