/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Backend-neutral store entry points: each forwards through st->ops so a
 * replicated backend (a Kafka topic) can replace SQLite without touching
 * callers. Backends own their state; dc_store_close() releases it all.
 */
#include "broker/store/store.h"
#include "common/text.h"

#include <stdio.h>

/* Shared by every entry point: a NULL store is a caller bug, but we report
 * it instead of crashing (the store never aborts). */
static int no_store(char *errstr, size_t errstr_size) {
  if (errstr && errstr_size)
    dc_seterr(errstr, errstr_size, "store is not open");
  return -1;
}

void dc_store_close(dc_store_t *st) {
  if (st && st->ops && st->ops->close)
    st->ops->close(st);
}

int dc_store_load(dc_store_t *st, dc_store_load_cb *cb, void *opaque,
                  char *errstr, size_t errstr_size) {
  if (!st || !st->ops || !st->ops->load)
    return no_store(errstr, errstr_size);
  return st->ops->load(st, cb, opaque, errstr, errstr_size);
}

int dc_store_commit(dc_store_t *st, const dc_store_commit_t *c, char *errstr,
                    size_t errstr_size) {
  return dc_store_commit_many(st, c, 1, errstr, errstr_size);
}

int dc_store_commit_many(dc_store_t *st, const dc_store_commit_t *c, size_t n,
                         char *errstr, size_t errstr_size) {
  if (!st || !st->ops || !st->ops->commit)
    return no_store(errstr, errstr_size);
  return st->ops->commit(st, c, n, errstr, errstr_size);
}

int dc_store_history(dc_store_t *st, const char *entity,
                     dc_store_history_cb *cb, void *opaque, char *errstr,
                     size_t errstr_size) {
  if (!st || !st->ops || !st->ops->history)
    return no_store(errstr, errstr_size);
  return st->ops->history(st, entity, cb, opaque, errstr, errstr_size);
}

int dc_store_event_fd(dc_store_t *st) {
  return st && st->ops && st->ops->event_fd ? st->ops->event_fd(st) : -1;
}

int dc_store_poll(dc_store_t *st, dc_store_apply_cb *cb, void *opaque,
                  char *errstr, size_t errstr_size) {
  if (!st || !st->ops)
    return no_store(errstr, errstr_size);
  return st->ops->poll ? st->ops->poll(st, cb, opaque, errstr, errstr_size)
                       : 0;
}

int dc_store_advertise(dc_store_t *st, const dc_store_listener_t *l, size_t n,
                       char *errstr, size_t errstr_size) {
  if (!st || !st->ops)
    return no_store(errstr, errstr_size);
  return st->ops->advertise
             ? st->ops->advertise(st, l, n, errstr, errstr_size)
             : 0;
}

int64_t dc_store_position(dc_store_t *st) {
  return st && st->ops && st->ops->position ? st->ops->position(st) : -1;
}

size_t dc_store_replicas(dc_store_t *st, const dc_store_replica_t **out,
                         int32_t *leader) {
  *out = NULL;
  *leader = DC_STORE_NOT_REPLICATED;
  return st && st->ops && st->ops->replicas ? st->ops->replicas(st, out, leader)
                                            : 0;
}

const dc_replica_key_t *dc_store_own_key(dc_store_t *st) {
  return st && st->ops && st->ops->own_key ? st->ops->own_key(st) : NULL;
}

int dc_store_replica_key(dc_store_t *st, int32_t node, const uint8_t **key) {
  *key = NULL;
  return st && st->ops && st->ops->replica_key
             ? st->ops->replica_key(st, node, key)
             : 0;
}
