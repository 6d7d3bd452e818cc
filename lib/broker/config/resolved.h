/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The configuration that resolves for a client (its client-id and
 * principal), its version, and a memo of both for passes over many
 * clients. Internal to lib/broker; the scheme is at the top of
 * resolved.c.
 *
 * Threading: loop thread (reads the configdb).
 */
#ifndef DC_RESOLVED_H
#define DC_RESOLVED_H
#include "broker/config/configdb.h"
#include "broker/config/scope.h"
#include "common/arena.h"
#include "common/buf.h"
#include "codec/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one resolution reads: the stored entities of its levels. */
typedef struct dc_resolved_key {
  const dc_entity_t *e[DC_SCOPE_MAX_LEVELS];
  int8_t source[DC_SCOPE_MAX_LEVELS];
  int nl;
} dc_resolved_key_t;

/* The levels that resolve for client_id and principal (NULL =
 * User:ANONYMOUS). 0, or -1 for a client-id no entity may have. */
int dc_resolved_key(const dc_configdb_t *db, const char *client_id,
                    const char *principal, dc_resolved_key_t *out);

/* The resolved (key, value, source) list of k into *out (arena; *np
 * entries; out NULL = only the version) and its version: never -1. */
int64_t dc_resolved_list(const dc_resolved_key_t *k, dc_arena_t *arena,
                         dc_watch_entry_t **out, int32_t *np);

/* Memo of versions and encoded "changed" Watch answers by key. It
 * forgets everything when the configdb changes (its keys are entity
 * pointers), so it may live across a change, as over a pass whose
 * answers serve requests that alter. */
typedef struct dc_resolved_memo {
  const dc_configdb_t *db;
  uint64_t generation; /* the configdb's, when the slots were made */
  size_t max_body;     /* max.response.bytes; 0 = no bound */
  int64_t position;    /* the store's, in the answers (-1 by default) */
  struct memo_slot *slots; /* owned */
  size_t cap, n;
} dc_resolved_memo_t;

void dc_resolved_memo_init(dc_resolved_memo_t *m, const dc_configdb_t *db,
                           size_t max_body);
void dc_resolved_memo_free(dc_resolved_memo_t *m);

/* The version for client_id and principal; -1 for a client-id no entity
 * may have. */
int64_t dc_resolved_memo_version(dc_resolved_memo_t *m, const char *client_id,
                                 const char *principal);

/* The body (after the response header) of a Watch v answer carrying the
 * configuration for client_id and principal with changed = true, and its
 * version in *version. NULL when it cannot be made (an invalid client-id,
 * no memory) or would pass max_body: the caller encodes that answer
 * itself. Owned by the memo. */
const dc_buf_t *dc_resolved_memo_answer(dc_resolved_memo_t *m,
                                        const char *client_id,
                                        const char *principal, int16_t v,
                                        int64_t *version);
#endif
