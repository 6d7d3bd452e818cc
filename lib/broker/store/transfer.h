/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Moving a store's contents between stores: every entity and its
 * overrides as one JSON document (the README's "Export format"), written
 * from one store and read into another, so an operator can move from one
 * backend to another and back with nothing lost.
 *
 *   {"format": "dynconf-export", "version": 1, "entities": [
 *     {"type": "client", "name": "<default>", "configs": {"acks": "all"}},
 *     {"type": "user", "name": "alice/app-1", "configs": {...}}]}
 *
 * "type" is "client" (ConfigResource 9) or "user" (10, names as
 * dynconf-configs writes them); "configs" maps each key to its value,
 * always a string. Entities come sorted by type and name, keys by name,
 * one entity per line: the same store exports the same bytes.
 */
#ifndef DC_TRANSFER_H
#define DC_TRANSFER_H
#include "broker/store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Writes every entity of st to f. 0, or -1 with errstr (a store or write
 * error). */
int dc_transfer_export(dc_store_t *st, FILE *f, char *errstr,
                       size_t errstr_size);

typedef struct dc_import_opts {
  bool allow_unknown_keys;    /* keys outside the schema are kept */
  size_t max_entity_configs;  /* more keys on one entity is refused */
  const char *source;         /* recorded as the audit rows' peer */
} dc_import_opts_t;

/* Reads the document at path and, when every entity in it is valid (a
 * known type, a well-formed name, each key and value as an alter would
 * accept them), writes them all into st in one atomic step, with an audit
 * row per key (api "Import"). st must hold no entity yet: an import fills
 * an empty store, so nothing already there is merged or lost. *n_entities
 * and *n_configs (nullable) get what was written. 0, or -1 with errstr
 * naming the entity, key and reason, or the line and column of a JSON
 * error; nothing is written then. */
int dc_transfer_import(dc_store_t *st, const char *path,
                       const dc_import_opts_t *opts, size_t *n_entities,
                       size_t *n_configs, char *errstr, size_t errstr_size);
#endif
