/* SPDX-License-Identifier: BSD-2-Clause */
/* Request dispatch (ApiKey -> handler with version range), ApiVersions and
 * Metadata. The config APIs live in config_apis.c. */
#include "broker/broker_int.h"
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
  dc_fleet_init(&b->fleet, opts->fleet_retention_ms, opts->fleet_max_bytes);
  b->watch_fd = -1;
  b->watch_armed = -1;
  b->cluster_id = strdup(opts->cluster_id ? opts->cluster_id : "dynconf");
  b->db = dc_configdb_new();
  b->store = store;
  snprintf(b->node_name, sizeof(b->node_name), "%d", (int)opts->node_id);
  if (!b->cluster_id || !b->db) {
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
  if (dc_broker_security_init(b, errstr, errstr_size) ||
      dc_broker_forward_init(b, errstr, errstr_size) ||
      dc_broker_watch_init(b, errstr, errstr_size) ||
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
    dc_broker_watch_rearm(b);
  dc_broker_forward_writer_changed(b);
}

static int count_overrides(void *opaque, const dc_entity_t *e) {
  *(size_t *)opaque += e->n;
  return 0;
}

void dc_broker_metrics(dc_broker_t *b, dc_buf_t *out) {
  dc_metrics_render(&b->metrics, out);
  size_t overrides = 0;
  dc_configdb_foreach(b->db, count_overrides, &overrides);
  dc_metrics_head(out, "dynconfd_entities", "gauge",
                  "Entities (client-ids, <default>, users) with overrides.");
  dc_metrics_value(out, "dynconfd_entities", NULL, NULL,
                   (double)dc_configdb_count(b->db));
  dc_metrics_head(out, "dynconfd_overrides", "gauge",
                  "Overrides stored, over all entities.");
  dc_metrics_value(out, "dynconfd_overrides", NULL, NULL, (double)overrides);
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
  uint64_t fleet[4];
  static const char *const states[4] = {"up_to_date", "behind", "rejected",
                                        "silent"};
  dc_broker_fleet_counts(b, fleet);
  dc_metrics_head(out, "dynconfd_fleet_clients", "gauge",
                  "Agents in the fleet view, by rollout state.");
  for (int i = 0; i < 4; i++)
    dc_metrics_value(out, "dynconfd_fleet_clients", "state", states[i],
                     (double)fleet[i]);
  dc_metrics_head(out, "dynconfd_fleet_bytes", "gauge",
                  "Bytes the fleet view's agents hold (fleet.max.bytes "
                  "bounds it).");
  dc_metrics_value(out, "dynconfd_fleet_bytes", NULL, NULL,
                   (double)b->fleet.bytes);
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

void dc_broker_destroy(dc_broker_t *b) {
  if (!b)
    return;
  dc_broker_login_free(b);
  dc_broker_forward_free(b);
  dc_broker_watch_free(b);
  dc_broker_fleet_waits_free(b);
  dc_fleet_free(&b->fleet);
  dc_configdb_destroy(b->db);
  dc_broker_security_free(b);
  free(b->cluster_id);
  free(b);
}

/* Kafka's rule for ClientSoftwareName/Version (KIP-511). */
static bool valid_software_field(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9');
    if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '.')))
      return false;
  }
  return true;
}

static int handle_api_versions(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  size_t n;
  const dc_api_info_t *all = dc_api_all(&n);
  dc_api_range_t ranges[32]; /* the codec's table fits: checked below */
  dc_apiversions_resp_t resp = {0};
  size_t m = 0;
  for (size_t i = 0; i < n && m < sizeof(ranges) / sizeof(ranges[0]); i++) {
    if (all[i].key == DC_API_JOIN_GROUP && !r->b->gss)
      continue; /* only librdkafka's GSSAPI probe needs it */
    ranges[m].api_key = all[i].key;
    ranges[m].min_version = all[i].min_version;
    ranges[m++].max_version = all[i].max_version;
  }
  if (!dc_api_supported(DC_API_API_VERSIONS, v)) {
    /* Unknown version: answer in the v0 body so any client can read it,
     * with our own range for key 18 so it can retry. */
    const dc_api_info_t *self = dc_api_info(DC_API_API_VERSIONS);
    dc_api_range_t only = {self->key, self->min_version, self->max_version};
    resp.error_code = DC_ERR_UNSUPPORTED_VERSION;
    resp.n_api_keys = 1;
    resp.api_keys = &only;
    return dc_apiversions_resp_encode(r->out, 0, &resp);
  }
  dc_apiversions_req_t req = {0};
  if (dc_apiversions_req_decode(r->rd, v, &req))
    return r->rd->err;
  resp.n_api_keys = (int32_t)m;
  resp.api_keys = ranges;
  if (v >= 3 && (!valid_software_field(req.client_software_name) ||
                 !valid_software_field(req.client_software_version))) {
    resp.error_code = DC_ERR_INVALID_REQUEST;
    resp.n_api_keys = 0;
  }
  return dc_apiversions_resp_encode(r->out, v, &resp);
}

/* The brokers Metadata lists: this server, and with a replicated store
 * every live replica's listener of the same name as the one asked on
 * (as Kafka answers per listener); *controller gets the replica that
 * takes writes (-1 when none is known), else this server. */
static int metadata_brokers(dc_req_t *r, dc_metadata_broker_t **out,
                            int32_t *controller) {
  const dc_store_replica_t *reps;
  int32_t leader;
  size_t n = dc_store_replicas(r->b->store, &reps, &leader);
  dc_metadata_broker_t *bs = dc_arena_alloc(r->arena, (n + 1) * sizeof(*bs));
  if (!bs)
    return -1;
  int32_t self = r->b->opts.node_id, nb = 0;
  bs[nb++] = (dc_metadata_broker_t){.node_id = self,
                                    .host = (char *)r->conn->advertised_host,
                                    .port = r->conn->advertised_port};
  for (size_t i = 0; i < n && r->conn->listener; i++)
    for (size_t j = 0; reps[i].node_id != self && j < reps[i].n_listeners;
         j++) {
      const dc_store_listener_t *l = &reps[i].listeners[j];
      if (!strcmp(l->name, r->conn->listener)) {
        bs[nb++] = (dc_metadata_broker_t){.node_id = reps[i].node_id,
                                          .host = (char *)l->host,
                                          .port = l->port};
        break; /* one per replica, whatever its heartbeat repeats */
      }
    }
  *out = bs;
  *controller = leader == DC_STORE_NOT_REPLICATED ? self : leader;
  return nb;
}

static int handle_metadata(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_metadata_req_t req = {0};
  if (dc_metadata_req_decode(r->rd, v, &req))
    return r->rd->err;
  dc_metadata_resp_t resp = {
      .cluster_id = r->b->cluster_id,
      .cluster_authorized_operations = INT32_MIN,
  };
  resp.n_brokers = metadata_brokers(r, &resp.brokers, &resp.controller_id);
  if (resp.n_brokers < 0)
    return DC_ERR__NOMEM;
  /* dynconfd hosts no topics: every named topic is unknown. */
  if (req.n_topics > 0) {
    resp.topics = dc_arena_alloc(r->arena, (size_t)req.n_topics *
                                               sizeof(*resp.topics));
    if (!resp.topics)
      return DC_ERR__NOMEM;
    resp.n_topics = req.n_topics;
    for (int32_t i = 0; i < req.n_topics; i++) {
      dc_metadata_topic_t *t = &resp.topics[i];
      t->error_code = 3; /* UNKNOWN_TOPIC_OR_PARTITION */
      t->name = req.topics[i].name ? req.topics[i].name : "";
      memcpy(t->topic_id, req.topics[i].topic_id, 16);
      t->topic_authorized_operations = INT32_MIN;
    }
  }
  return dc_metadata_resp_encode(r->out, v, &resp);
}

/* librdkafka tries GSSAPI only with a server that lists JoinGroup (its
 * marker for Kafka 0.9), so a server with GSSAPI lists it; dynconfd
 * coordinates no group, which is what the answer says. */
static int handle_join_group(dc_req_t *r) {
  dc_join_group_req_t req;
  if (dc_join_group_req_decode(r->rd, r->hdr->api_version, &req))
    return r->rd->err;
  enum { NOT_COORDINATOR = 16 }; /* Kafka's code; no other use here */
  dc_join_group_resp_t resp = {.error_code = NOT_COORDINATOR,
                               .generation_id = -1,
                               .member_id = req.member_id};
  r->error = resp.error_code;
  return dc_join_group_resp_encode(r->out, r->hdr->api_version, &resp);
}

typedef int(dc_handler_fn)(dc_req_t *r);
static const struct {
  int16_t api_key;
  dc_handler_fn *fn;
} handlers[] = {
    {DC_API_API_VERSIONS, handle_api_versions},
    {DC_API_METADATA, handle_metadata},
    {DC_API_JOIN_GROUP, handle_join_group},
    {DC_API_WATCH, dc_handle_watch},
    {DC_API_CLIENT_REPORT, dc_handle_client_report},
    {DC_API_DESCRIBE_FLEET, dc_handle_describe_fleet},
    {DC_API_DESCRIBE_CONFIGS, dc_handle_describe_configs},
    {DC_API_ALTER_CONFIGS, dc_handle_alter_configs},
    {DC_API_INCREMENTAL_ALTER_CONFIGS, dc_handle_incremental_alter_configs},
    {DC_API_SASL_HANDSHAKE, dc_handle_sasl_handshake},
    {DC_API_SASL_AUTHENTICATE, dc_handle_sasl_authenticate},
    {DC_API_RELOAD_SECURITY, dc_handle_reload_security},
    {DC_API_ENVELOPE, dc_handle_envelope},
};

/* Before SASL authentication completes only these requests are served;
 * anything else closes the connection, as Kafka does. */
static bool allowed_before_auth(int state, int16_t api_key) {
  if (api_key == DC_API_API_VERSIONS)
    return true;
  if (state == DC_AUTH_HANDSHAKE)
    return api_key == DC_API_SASL_HANDSHAKE;
  if (state == DC_AUTH_AUTHENTICATE)
    return api_key == DC_API_SASL_AUTHENTICATE;
  return false;
}

/* KIP-368: once a session has ended, only ApiVersions and a
 * re-authentication's SaslHandshake are served; Kafka closes the
 * connection on anything else. */
static bool session_over(const dc_conn_auth_t *a, int16_t api_key) {
  return a->session_end_ms && dc_mono_ms() > a->session_end_ms &&
         api_key != DC_API_API_VERSIONS && api_key != DC_API_SASL_HANDSHAKE;
}

int dc_broker_handle(dc_broker_t *b, const dc_conn_info_t *conn,
                     const uint8_t *payload, size_t len, dc_arena_t *arena,
                     dc_buf_t *out, char *errstr, size_t errstr_size) {
  return dc_broker_handle_as(b, conn, payload, len, arena, out, false, 0,
                             NULL, errstr, errstr_size);
}

int dc_broker_handle_as(dc_broker_t *b, const dc_conn_info_t *conn,
                        const uint8_t *payload, size_t len, dc_arena_t *arena,
                        dc_buf_t *out, bool forwarded, int16_t fail_code,
                        const char *fail_msg, char *errstr,
                        size_t errstr_size) {
  char dummy[1];
  if (!errstr) {
    errstr = dummy;
    errstr_size = sizeof(dummy);
  }
  int auth_state = conn->auth ? conn->auth->state : DC_AUTH_NONE;
  if (auth_state == DC_AUTH_RAW)
    return dc_broker_handle_raw_token(b, conn, payload, len, out, errstr,
                                      errstr_size);
  dc_rd_t rd;
  dc_rd_init(&rd, payload, len, arena);
  dc_req_header_t hdr = {0};
  if (dc_req_header_decode(&rd, &hdr)) {
    dc_seterr(errstr, errstr_size, "malformed request header: %s",
             dc_err_str(rd.err));
    return DC_HANDLE_CLOSE;
  }
  dc_handler_fn *fn = NULL;
  for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
    if (handlers[i].api_key == hdr.api_key)
      fn = handlers[i].fn;
  if (hdr.api_key == DC_API_JOIN_GROUP && !b->gss)
    fn = NULL; /* not listed in ApiVersions either */
  /* ApiVersions answers any version itself (KIP-511); others must be in
   * range. Kafka closes the connection for anything it cannot parse. */
  if (!fn || (hdr.api_key != DC_API_API_VERSIONS &&
              !dc_api_supported(hdr.api_key, hdr.api_version))) {
    dc_seterr(errstr, errstr_size, "unsupported API key %d version %d",
             hdr.api_key, hdr.api_version);
    return DC_HANDLE_CLOSE;
  }
  if (auth_state == DC_AUTH_DONE && session_over(conn->auth, hdr.api_key)) {
    dc_seterr(errstr, errstr_size,
              "the SASL session of %s ended (token expiry or "
              "connections.max.reauth.ms) without re-authentication",
              conn->auth->principal);
    return DC_HANDLE_CLOSE;
  }
  if (auth_state != DC_AUTH_NONE && auth_state != DC_AUTH_DONE &&
      !allowed_before_auth(auth_state, hdr.api_key)) {
    const dc_api_info_t *ai = dc_api_info(hdr.api_key);
    dc_seterr(errstr, errstr_size,
             "%s request before SASL authentication completed",
             ai ? ai->name : "unknown");
    return DC_HANDLE_CLOSE;
  }
  size_t start = out->len;
  size_t frame = dc_wr_frame_begin(out);
  int16_t hv = hdr.api_version;
  if (hdr.api_key == DC_API_API_VERSIONS && !dc_api_supported(hdr.api_key, hv))
    hv = 0;
  dc_resp_header_encode(out, hdr.api_key, hv, hdr.correlation_id);
  dc_req_t r = {.b = b, .conn = conn, .hdr = &hdr, .rd = &rd,
               .arena = arena, .out = out, .payload = payload,
               .payload_len = len, .forwarded = forwarded,
               .fail_code = fail_code, .fail_msg = fail_msg};
  int64_t t0 = dc_mono_us();
  int err = fn(&r);
  if (!err && r.deferred) {
    out->len = start; /* the answer comes later, whole */
    return DC_HANDLE_DEFER;
  }
  if (!err)
    dc_metrics_request(&b->metrics, hdr.api_key, hdr.api_version, r.error,
                       (double)(dc_mono_us() - t0) / 1e6);
  if (err || out->err) {
    out->len = start; /* drop the partial response */
    if (!err)
      err = out->err;
    out->err = 0;
    const dc_api_info_t *ai = dc_api_info(hdr.api_key);
    dc_seterr(errstr, errstr_size, "cannot process %s v%d request: %s",
             ai ? ai->name : "?", hdr.api_version,
             r.why[0] ? r.why : dc_err_str(err));
    return DC_HANDLE_CLOSE;
  }
  dc_wr_frame_end(out, frame);
  if (r.close_after) {
    dc_seterr(errstr, errstr_size, "%s", r.why);
    return DC_HANDLE_CLOSE;
  }
  return DC_HANDLE_OK;
}
