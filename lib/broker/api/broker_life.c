/* SPDX-License-Identifier: BSD-2-Clause */
/* The broker's life: options, creating it from the store's snapshot,
 * what other servers wrote applied to it, its metrics, destroying it. */
#include "broker/core/broker_int.h"
#include "broker/rollout/fleet.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/schema.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dc_broker_opts_init(dc_broker_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->node_id = 1;
  o->cluster_id = "dynconf";
  o->session_timeout_min_ms = 6000;
  o->session_timeout_max_ms = 1800000;
  o->max_request_resources = DC_DEFAULT_MAX_REQUEST_RESOURCES;
  o->max_request_configs = DC_DEFAULT_MAX_REQUEST_CONFIGS;
  o->max_entity_configs = DC_DEFAULT_MAX_ENTITY_CONFIGS;
  o->max_request_writes = DC_DEFAULT_MAX_REQUEST_WRITES;
  o->max_entities = DC_DEFAULT_MAX_ENTITIES;
  o->max_response_size = DC_DEFAULT_MAX_RESPONSE_SIZE;
  o->fleet_retention_ms = 3600000;
  o->fleet_max_bytes = DC_DEFAULT_FLEET_MAX_BYTES;
  o->fleet_max_waits = DC_DEFAULT_FLEET_MAX_WAITS;
  o->fleet_max_waits_per_principal = DC_DEFAULT_FLEET_MAX_WAITS_PER_PRINCIPAL;
  o->failed_auth_delay_ms = DC_DEFAULT_FAILED_AUTH_DELAY_MS;
}

static int load_cb(void *opaque, int8_t type, const char *entity,
                   const char *key, const char *value) {
  return dc_configdb_set(opaque, type, entity, key, value) ? -1 : 0;
}

/* Stored values that no longer pass the schema (written by an older,
 * laxer server) are still served, but agents refuse them: say so once at
 * start-up, naming the first few. */
static int stale_cb(void *opaque, const dc_entity_t *e) {
  size_t *stale = opaque; /* how many found so far */
  char why[256];
  for (size_t i = 0; i < e->n; i++) {
    const dc_schema_entry_t *s = dc_schema_find(e->keys[i]);
    if (s && dc_schema_validate(s, e->values[i], why, sizeof(why)))
      continue;
    if (!s && strlen(e->values[i]) <= DC_CONFIG_VALUE_MAX &&
        strlen(e->keys[i]) <= DC_CONFIG_NAME_MAX)
      continue;
    if ((*stale)++ < 10)
      dc_log(DC_LOG_WARN, "stored config %s of %s '%.300s' fails today's "
                          "validation (%s); agents will refuse it until it "
                          "is set again",
             e->keys[i], e->type == DC_RES_USER ? "user" : "client", e->name,
             s ? why : "name or value too long");
  }
  return 0;
}

static void warn_stale(const dc_configdb_t *db) {
  size_t stale = 0;
  dc_configdb_foreach(db, stale_cb, &stale);
  if (stale > 10)
    dc_log(DC_LOG_WARN, "%zu stored configs in all fail today's validation",
           stale);
}

dc_broker_t *dc_broker_new(const dc_broker_opts_t *opts, dc_store_t *store,
                           char *errstr, size_t errstr_size) {
  if (errstr_size)
    errstr[0] = '\0';
  dc_broker_t *b = calloc(1, sizeof(*b));
  if (!b) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  b->opts = *opts;
  b->fleet = calloc(1, sizeof(*b->fleet));
  if (b->fleet)
    dc_fleet_init(b->fleet, opts->fleet_retention_ms, opts->fleet_max_bytes);
  b->watch_fd = -1;
  b->watch_armed = -1;
  b->cluster_id = strdup(opts->cluster_id ? opts->cluster_id : "dynconf");
  b->db = dc_configdb_new();
  b->store = store;
  snprintf(b->node_name, sizeof(b->node_name), "%d", (int)opts->node_id);
  if (!b->cluster_id || !b->db || !b->fleet) {
    dc_seterr(errstr, errstr_size, "out of memory");
    dc_broker_destroy(b);
    return NULL;
  }
  if (store) {
    int r = dc_store_load(store, load_cb, b->db, errstr, errstr_size);
    if (r) {
      if (!*errstr) /* our callback failed */
        dc_seterr(errstr, errstr_size, "out of memory loading the store");
      dc_broker_destroy(b);
      return NULL;
    }
    warn_stale(b->db);
  }
  b->handle_as = dc_broker_handle_as;
  if (dc_broker_security_init(b, errstr, errstr_size) ||
      dc_broker_forward_init(b, errstr, errstr_size) ||
      dc_broker_timer_init(b, errstr, errstr_size) ||
      dc_broker_login_init(b, errstr, errstr_size)) {
    dc_broker_destroy(b);
    return NULL;
  }
  return b;
}

static void apply_stored(void *opaque, int8_t type, const char *entity,
                         size_t n, const char *const *keys,
                         const char *const *values) {
  dc_broker_t *b = opaque;
  if (dc_configdb_replace(b->db, type, entity, n, keys, values))
    dc_log(DC_LOG_ERR, "out of memory applying %s from the store; restart "
           "to serve it", entity);
  else
    dc_log(DC_LOG_DEBUG, "applied %s from the store (%zu configs)", entity, n);
  b->store_applied = true;
}

void dc_broker_store_poll(dc_broker_t *b) {
  char err[512];
  b->store_applied = false;
  if (b->store && dc_store_poll(b->store, apply_stored, b, err, sizeof(err)))
    dc_log(DC_LOG_ERR, "reading the store: %s", err);
  if (b->store_applied) /* each replica wakes its own watches */
    dc_broker_watch_changed(b);
  else /* the log moved on: watches of clients ahead of it may catch up */
    dc_broker_watch_position(b);
  if (b->fwd_held) /* and held forwarded answers may go */
    b->timer_stale = true;
  dc_broker_forward_writer_changed(b);
  dc_broker_timer_settle(b);
}

static int count_overrides(void *opaque, const dc_entity_t *e) {
  *(size_t *)opaque += e->n;
  return 0;
}

/* The configuration held. */
static void config_metrics(dc_broker_t *b, dc_buf_t *out) {
  size_t overrides = 0;
  dc_configdb_foreach(b->db, count_overrides, &overrides);
  dc_metrics_head(out, "dynconfd_entities", "gauge",
                  "Entities (client-ids, <default>, users) with overrides.");
  dc_metrics_value(out, "dynconfd_entities", NULL, NULL,
                   (double)dc_configdb_count(b->db));
  dc_metrics_head(out, "dynconfd_overrides", "gauge",
                  "Overrides stored, over all entities.");
  dc_metrics_value(out, "dynconfd_overrides", NULL, NULL, (double)overrides);
}

/* The parked requests and the fleet view. */
static void rollout_metrics(dc_broker_t *b, dc_buf_t *out) {
  dc_metrics_head(out, "dynconfd_watches", "gauge",
                  "Watch requests parked now.");
  dc_metrics_value(out, "dynconfd_watches", NULL, NULL,
                   (double)b->n_watches);
  dc_metrics_head(out, "dynconfd_watch_answers_total", "counter",
                  "Parked watches answered, by why.");
  dc_metrics_value(out, "dynconfd_watch_answers_total", "reason", "changed",
                   (double)b->watches_woken);
  dc_metrics_value(out, "dynconfd_watch_answers_total", "reason", "timeout",
                   (double)b->watches_timed_out);
  dc_metrics_head(out, "dynconfd_fleet_waits", "gauge",
                  "DescribeFleet requests parked until the fleet moves "
                  "(dynconf-configs --wait).");
  dc_metrics_value(out, "dynconfd_fleet_waits", NULL, NULL,
                   (double)b->n_fleet_waits);
  uint64_t fleet[DC_FLEET_N_STATES];
  static const char *const states[DC_FLEET_N_STATES] = {
      "up_to_date", "behind", "rejected", "silent", "restart_needed"};
  dc_broker_fleet_counts(b, fleet);
  dc_metrics_head(out, "dynconfd_fleet_clients", "gauge",
                  "Agents in the fleet view, by rollout state.");
  for (int i = 0; i < DC_FLEET_N_STATES; i++)
    dc_metrics_value(out, "dynconfd_fleet_clients", "state", states[i],
                     (double)fleet[i]);
  dc_metrics_head(out, "dynconfd_fleet_bytes", "gauge",
                  "Bytes the fleet view's agents hold (fleet.max.bytes "
                  "bounds it).");
  dc_metrics_value(out, "dynconfd_fleet_bytes", NULL, NULL,
                   (double)b->fleet->bytes);
}

/* The replicated store: replicas, the writer, forwarding. */
static void replica_metrics(dc_broker_t *b, dc_buf_t *out) {
  const dc_store_replica_t *reps;
  int32_t writer;
  size_t n = dc_store_replicas(b->store, &reps, &writer);
  if (writer == DC_STORE_NOT_REPLICATED)
    return;
  dc_metrics_head(out, "dynconfd_store_replicas", "gauge",
                  "Replicas of the Kafka-topic store heard of within the "
                  "session timeout, this one included.");
  dc_metrics_value(out, "dynconfd_store_replicas", NULL, NULL, (double)n);
  dc_metrics_head(out, "dynconfd_store_writer", "gauge",
                  "1 when this replica writes the config topic.");
  dc_metrics_value(out, "dynconfd_store_writer", NULL, NULL,
                   writer == b->opts.node_id);
  dc_metrics_head(out, "dynconfd_forwarded_total", "counter",
                  "Alters forwarded to the writer, by result.");
  dc_metrics_value(out, "dynconfd_forwarded_total", "result", "answered",
                   (double)b->forwarded_ok);
  dc_metrics_value(out, "dynconfd_forwarded_total", "result", "failed",
                   (double)b->forwarded_failed);
  dc_metrics_head(out, "dynconfd_envelopes_refused_total", "counter",
                  "Envelopes refused as not coming from another replica of "
                  "the store (unsigned, unknown signer, clock, signature).");
  dc_metrics_value(out, "dynconfd_envelopes_refused_total", NULL, NULL,
                   (double)b->envelopes_refused);
}

void dc_broker_metrics(dc_broker_t *b, dc_buf_t *out) {
  dc_metrics_render(&b->metrics, out);
  config_metrics(b, out);
  rollout_metrics(b, out);
  replica_metrics(b, out);
}

void dc_broker_destroy(dc_broker_t *b) {
  if (!b)
    return;
  dc_broker_login_free(b);
  dc_broker_forward_free(b);
  dc_broker_watch_free(b);
  dc_broker_timer_free(b);
  dc_broker_fleet_waits_free(b);
  if (b->fleet)
    dc_fleet_free(b->fleet);
  free(b->fleet);
  dc_configdb_destroy(b->db);
  dc_broker_security_free(b);
  free(b->cluster_id);
  free(b);
}
