/* SPDX-License-Identifier: BSD-2-Clause */
/* Request dispatch (ApiKey -> handler with version range), ApiVersions,
 * Metadata and JoinGroup. Each API's handler lives with its subsystem:
 * config_describe.c, config_alter.c, sasl_apis.c, envelope.c, watch.c,
 * fleet.c. */
#include "broker/core/broker_int.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/schema.h"
#include "common/text.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    /* What clients send most comes first. */
    {DC_API_DESCRIBE_CONFIGS, dc_handle_describe_configs},
    {DC_API_WATCH, dc_handle_watch},
    {DC_API_METADATA, handle_metadata},
    {DC_API_API_VERSIONS, handle_api_versions},
    {DC_API_JOIN_GROUP, handle_join_group},
    {DC_API_CLIENT_REPORT, dc_handle_client_report},
    {DC_API_DESCRIBE_FLEET, dc_handle_describe_fleet},
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
  int rc = dc_broker_handle_as(b, conn, payload, len, arena, out, false, 0,
                               NULL, errstr, errstr_size);
  dc_broker_timer_settle(b);
  return rc;
}

/* The handler of the request hdr heads, when the connection may send it
 * now: a known API at a supported version, within the SASL session, and
 * nothing but the log-in before authentication. NULL with errstr: the
 * connection closes. */
static dc_handler_fn *admitted_handler(const dc_broker_t *b,
                                       const dc_conn_info_t *conn,
                                       int auth_state,
                                       const dc_req_header_t *hdr,
                                       char *errstr, size_t errstr_size) {
  dc_handler_fn *fn = NULL;
  for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]) && !fn; i++)
    if (handlers[i].api_key == hdr->api_key)
      fn = handlers[i].fn;
  if (hdr->api_key == DC_API_JOIN_GROUP && !b->gss)
    fn = NULL; /* not listed in ApiVersions either */
  /* ApiVersions answers any version itself (KIP-511); others must be in
   * range. Kafka closes the connection for anything it cannot parse. */
  if (!fn || (hdr->api_key != DC_API_API_VERSIONS &&
              !dc_api_supported(hdr->api_key, hdr->api_version))) {
    dc_seterr(errstr, errstr_size, "unsupported API key %d version %d",
             hdr->api_key, hdr->api_version);
    return NULL;
  }
  if (auth_state == DC_AUTH_DONE && session_over(conn->auth, hdr->api_key)) {
    dc_seterr(errstr, errstr_size,
              "the SASL session of %s ended (token expiry or "
              "connections.max.reauth.ms) without re-authentication",
              conn->auth->principal);
    return NULL;
  }
  if (auth_state != DC_AUTH_NONE && auth_state != DC_AUTH_DONE &&
      !allowed_before_auth(auth_state, hdr->api_key)) {
    const dc_api_info_t *ai = dc_api_info(hdr->api_key);
    dc_seterr(errstr, errstr_size,
             "%s request before SASL authentication completed",
             ai ? ai->name : "unknown");
    return NULL;
  }
  return fn;
}

/* The handler's answer framed in out; or, when the handler failed or the
 * answer could not be written whole, dropped (out back at start) with
 * errstr, and the connection closes. */
static int finish_answer(dc_buf_t *out, size_t start, size_t frame,
                         const dc_req_header_t *hdr, const dc_req_t *r,
                         int err, char *errstr, size_t errstr_size) {
  if (err || out->err) {
    out->len = start; /* drop the partial response */
    if (!err)
      err = out->err;
    out->err = 0;
    const dc_api_info_t *ai = dc_api_info(hdr->api_key);
    dc_seterr(errstr, errstr_size, "cannot process %s v%d request: %s",
             ai ? ai->name : "?", hdr->api_version,
             r->why[0] ? r->why : dc_err_str(err));
    return DC_HANDLE_CLOSE;
  }
  dc_wr_frame_end(out, frame);
  if (r->close_after) {
    dc_seterr(errstr, errstr_size, "%s", r->why);
    return DC_HANDLE_CLOSE;
  }
  return DC_HANDLE_OK;
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
  dc_handler_fn *fn =
      admitted_handler(b, conn, auth_state, &hdr, errstr, errstr_size);
  if (!fn)
    return DC_HANDLE_CLOSE;
  size_t start = out->len;
  size_t frame = dc_wr_frame_begin(out);
  int16_t hv = hdr.api_version;
  if (hdr.api_key == DC_API_API_VERSIONS && !dc_api_supported(hdr.api_key, hv))
    hv = 0;
  dc_resp_header_encode(out, hdr.api_key, hv, hdr.correlation_id);
  dc_req_t r;
  memset(&r, 0, offsetof(dc_req_t, why)); /* not the 256 bytes of why */
  r.why[0] = '\0';
  r.b = b, r.conn = conn, r.hdr = &hdr, r.rd = &rd, r.arena = arena;
  r.out = out, r.payload = payload, r.payload_len = len;
  r.forwarded = forwarded, r.fail_code = fail_code, r.fail_msg = fail_msg;
  int64_t t0 = dc_mono_us();
  int err = fn(&r);
  if (!err && r.deferred) {
    out->len = start; /* the answer comes later, whole */
    return DC_HANDLE_DEFER;
  }
  if (!err)
    dc_metrics_request(&b->metrics, hdr.api_key, hdr.api_version, r.error,
                       (double)(dc_mono_us() - t0) / 1e6);
  return finish_answer(out, start, frame, &hdr, &r, err, errstr,
                       errstr_size);
}
