/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * In-memory snapshot of every entity's dynamic configs: what reads are
 * served from (never the disk). An entity is (resource type, name); its
 * configs are kept sorted by key.
 *
 * Ownership: the db owns every entity and string in it. Pointers returned by
 * dc_configdb_get() stay valid until that entity is next replaced or set.
 * The db also keeps the heartbeat/session index (pairindex.h) current.
 * Threading: one owner thread (the event loop).
 */
#ifndef DC_CONFIGDB_H
#define DC_CONFIGDB_H
#include "broker/config/entity_configs.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dc_pairidx dc_pairidx_t;


typedef struct dc_configdb dc_configdb_t;

dc_configdb_t *dc_configdb_new(void);
void dc_configdb_destroy(dc_configdb_t *db);

/* NULL when the entity has no configs. */
const dc_entity_t *dc_configdb_get(const dc_configdb_t *db, int8_t type,
                                   const char *name);

/* Replaces the entity's whole set with copies of keys/values (any order,
 * unique keys); n == 0 removes the entity. 0, or -1 on OOM (db unchanged). */
int dc_configdb_replace(dc_configdb_t *db, int8_t type, const char *name,
                        size_t n, const char *const *keys,
                        const char *const *values);
/* Sets one key (used while loading the store), changing the entity in
 * place: O(keys) with one allocation or two, so loading a store of many
 * entities is linear. 0, or -1 on OOM (db unchanged). */
int dc_configdb_set(dc_configdb_t *db, int8_t type, const char *name,
                    const char *key, const char *value);
/* Calls cb for every entity (any order) until it returns non-zero, which
 * is then returned; 0 when all were visited. The db must not change
 * during the walk. */
int dc_configdb_foreach(const dc_configdb_t *db,
                        int (*cb)(void *opaque, const dc_entity_t *e),
                        void *opaque);
/* Changes with every replace or set (even one that fails): pointers from
 * dc_configdb_get() taken at the same generation are still valid. */
uint64_t dc_configdb_generation(const dc_configdb_t *db);
/* Number of entities. */
size_t dc_configdb_count(const dc_configdb_t *db);
/* The heartbeat/session index over the entities (pairindex.h). */
const dc_pairidx_t *dc_configdb_pairidx(const dc_configdb_t *db);
#endif
