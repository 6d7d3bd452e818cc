/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Kafka-topic store's replica table: the other servers as their
 * latest heartbeats describe them (listeners, the key they sign
 * forwarded alters with), and when the writer was last heard of.
 */
#include "broker/store/store_kafka_int.h"
#include "common/clock.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

static replica_t *replica_find(kafka_store_t *k, int32_t node) {
  for (size_t i = 0; i < k->n_replicas; i++)
    if (k->replicas[i].node == node)
      return &k->replicas[i];
  return NULL;
}

static void replica_free(replica_t *r) {
  json_decref(r->root);
  free(r->listeners);
  r->root = NULL;
  r->listeners = NULL;
  r->n_listeners = 0;
}

static void replica_remove(kafka_store_t *k, replica_t *r) {
  replica_free(r);
  *r = k->replicas[--k->n_replicas];
}

void dc_kstore_heartbeat_seen(kafka_store_t *k, dc_log_record_t *p,
                              int32_t writer) {
  int64_t now = dc_mono_ms();
  if (p->node == writer && p->node != k->node_id)
    k->writer_seen = p->leaving ? now - k->session_ms : now;
  replica_t *r = replica_find(k, p->node);
  if (p->leaving) {
    if (r) {
      dc_log(DC_LOG_INFO, "kafka store: node %d left", (int)p->node);
      replica_remove(k, r);
    }
    return;
  }
  if (!r && k->n_replicas == MAX_REPLICAS) {
    dc_log(DC_LOG_WARN, "kafka store: ignoring node %d's heartbeat: %d "
           "servers are tracked already", (int)p->node, MAX_REPLICAS);
    return;
  }
  if (!r) {
    r = &k->replicas[k->n_replicas++];
    *r = (replica_t){.node = p->node};
    dc_log(DC_LOG_INFO, "kafka store: node %d is a replica", (int)p->node);
  }
  replica_free(r);
  r->seen = now;
  r->root = p->root;
  r->listeners = p->listeners;
  r->n_listeners = p->n_listeners;
  r->has_key = p->has_key;
  memcpy(r->key, p->key, sizeof(r->key));
  p->root = NULL; /* taken */
  p->listeners = NULL;
}

void dc_kstore_claim_seen(kafka_store_t *k) { k->writer_seen = dc_mono_ms(); }

void dc_kstore_replicas_free(kafka_store_t *k) {
  for (size_t i = 0; i < k->n_replicas; i++)
    replica_free(&k->replicas[i]);
  k->n_replicas = 0;
}

const dc_replica_key_t *dc_kstore_own_key(dc_store_t *st) {
  return ((kafka_store_t *)st)->key;
}

int dc_kstore_replica_key(dc_store_t *st, int32_t node, const uint8_t **key) {
  kafka_store_t *k = (kafka_store_t *)st;
  const replica_t *r = replica_find(k, node);
  *key = r && r->has_key ? r->key : NULL;
  if (*key)
    return 1;
  /* Every live replica heartbeats within a session: until this server
   * has read one, a replica it has not heard of may still be live. */
  return dc_mono_ms() - k->opened_at < k->session_ms ? DC_STORE_NOT_YET : 0;
}
