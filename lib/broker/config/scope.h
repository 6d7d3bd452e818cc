/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Principal-scoped configs (KIP-649's later drafts): which stored entities
 * a DescribeConfigs resolves, and the cross-level heartbeat/session rule
 * for alters. Internal to lib/broker; the scheme is described at the top
 * of scope.c.
 *
 * Threading: loop thread (reads the configdb). No allocation: results
 * point into the configdb and stay valid until it next changes.
 */
#ifndef DC_SCOPE_H
#define DC_SCOPE_H
#include "broker/config/configdb.h"
#include "common/entity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A config entity a request addresses, in storage form. */
typedef struct dc_scope_ent {
  int8_t type; /* DC_RES_CLIENT or DC_RES_USER */
  /* Storage name: the client-id as sent, or the canonical type-10 name. */
  char name[DC_ENTITY_ENC_NAME_SIZE];
  /* Decoded parts. Type 9: user "", client = the client-id (or
   * "<default>"). Type 10: the user, and the client-id or "". */
  dc_user_entity_t parts;
} dc_scope_ent_t;

/* "client" for DC_RES_CLIENT, "user" for DC_RES_USER, NULL otherwise: the
 * entity types' names in exports and the Kafka store's records. */
const char *dc_scope_type_name(int8_t type);

/* Checks and canonicalises (type, name) for a describe or alter. type
 * must be DC_RES_CLIENT or DC_RES_USER. 0, or -1 with a sentence for the
 * client (INVALID_REQUEST) in errstr. */
int dc_scope_ent_init(dc_scope_ent_t *e, int8_t type, const char *name,
                      char *errstr, size_t errstr_size);

#define DC_SCOPE_MAX_LEVELS 4

/* One stored entity in a resolution, in precedence order. */
typedef struct dc_scope_level {
  const dc_entity_t *e; /* NULL: nothing stored there */
  int8_t source;        /* DC_SRC_* of values found here */
  bool is_default;      /* DescribeConfigs v0's is_default for them */
} dc_scope_level_t;

/* Fills out with the levels a DescribeConfigs of e by principal
 * ("User:NAME"; NULL = User:ANONYMOUS) resolves, highest first. Returns
 * how many (1..DC_SCOPE_MAX_LEVELS). */
int dc_scope_levels(const dc_configdb_t *db, const dc_scope_ent_t *e,
                    const char *principal,
                    dc_scope_level_t out[DC_SCOPE_MAX_LEVELS]);

/* The keys of a resolution, merged: every key once, in order, with the
 * value of each level that has it, highest first (vals[0] wins). */
typedef struct dc_scope_merge {
  const dc_scope_level_t *lv;
  int nl;
  size_t pos[DC_SCOPE_MAX_LEVELS];
} dc_scope_merge_t;

void dc_scope_merge_init(dc_scope_merge_t *m, const dc_scope_level_t *lv,
                         int nl);
/* The next key (NULL when done); vals[i] came from level have[i], *nh of
 * them. Pointers into the configdb, as dc_scope_levels'. */
const char *dc_scope_merge_next(dc_scope_merge_t *m,
                                const char *vals[DC_SCOPE_MAX_LEVELS],
                                int have[DC_SCOPE_MAX_LEVELS], int *nh);

/* The value an APPEND/SUBTRACT on e starts from when e has no own value
 * of key: what e inherits (NULL = nothing). */
const char *dc_scope_inherited(const dc_configdb_t *db,
                               const dc_scope_ent_t *e, const char *key);

/* heartbeat.interval.ms must stay below session.timeout.ms for every
 * (user, client-id) combination whose resolved pair changes when e's
 * override set becomes the n keys/values given (any order). True when
 * all hold (or the pair does not change); false with msg naming the
 * combination that would break. Reads the configdb's index instead of
 * walking every entity: O(log n) plus the terms the top of scope.c
 * names (the altered user's or client-id's user+client entities). */
bool dc_scope_check_pair(const dc_configdb_t *db, const dc_scope_ent_t *e,
                         size_t n, const char *const *keys,
                         const char *const *values, char *msg,
                         size_t msg_size);
#endif
