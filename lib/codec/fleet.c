/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ClientReport (key 20002) v0 and DescribeFleet (key 20003) v0-v1,
 * dynconf's own, flexible throughout. Layouts in proto.h.
 */
#include "proto.h"

#include <string.h>

static bool up_to(dc_rd_t *rd, int16_t v, int16_t max) {
  if (v >= 0 && v <= max)
    return true;
  dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
  return false;
}

static bool v0_only(dc_rd_t *rd, int16_t v) { return up_to(rd, v, 0); }

#define FLEET_MAX_VERSION 1

int dc_client_report_req_decode(dc_rd_t *rd, int16_t v,
                                dc_client_report_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (!v0_only(rd, v))
    return rd->err;
  out->client_id = dc_rd_str(rd, true, false);
  out->instance_id = dc_rd_str(rd, true, false);
  out->kind = dc_rd_str(rd, true, false);
  out->software_name = dc_rd_str(rd, true, false);
  out->software_version = dc_rd_str(rd, true, false);
  out->client_library = dc_rd_str(rd, true, false);
  out->version = dc_rd_i64(rd);
  out->generation = dc_rd_i64(rd);
  out->outcome = dc_rd_i8(rd);
  out->reason = dc_rd_str(rd, true, true);
  dc_rd_tags(rd);
  return rd->err;
}

int dc_client_report_req_encode(dc_buf_t *b, int16_t v,
                                const dc_client_report_req_t *in) {
  if (v != 0)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_str_nn(b, true, in->client_id);
  dc_wr_str_nn(b, true, in->instance_id);
  dc_wr_str_nn(b, true, in->kind);
  dc_wr_str_nn(b, true, in->software_name);
  dc_wr_str_nn(b, true, in->software_version);
  dc_wr_str_nn(b, true, in->client_library);
  dc_wr_i64(b, in->version);
  dc_wr_i64(b, in->generation);
  dc_wr_i8(b, in->outcome);
  dc_wr_str(b, true, in->reason);
  dc_wr_tags_empty(b);
  return b->err;
}

int dc_client_report_resp_decode(dc_rd_t *rd, int16_t v,
                                 dc_client_report_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (!v0_only(rd, v))
    return rd->err;
  out->throttle_time_ms = dc_rd_i32(rd);
  out->error_code = dc_rd_i16(rd);
  out->error_message = dc_rd_str(rd, true, true);
  dc_rd_tags(rd);
  return rd->err;
}

int dc_client_report_resp_encode(dc_buf_t *b, int16_t v,
                                 const dc_client_report_resp_t *in) {
  if (v != 0)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_i32(b, in->throttle_time_ms);
  dc_wr_i16(b, in->error_code);
  dc_wr_str(b, true, in->error_message);
  dc_wr_tags_empty(b);
  return b->err;
}

int dc_describe_fleet_req_decode(dc_rd_t *rd, int16_t v,
                                 dc_describe_fleet_req_t *out) {
  memset(out, 0, sizeof(*out));
  out->since_seq = -1;
  if (!up_to(rd, v, FLEET_MAX_VERSION))
    return rd->err;
  out->client_id = dc_rd_str(rd, true, true);
  out->user = dc_rd_str(rd, true, true);
  if (v >= 1) {
    out->since_seq = dc_rd_i64(rd);
    out->timeout_ms = dc_rd_i32(rd);
    out->after_client_id = dc_rd_str(rd, true, true);
    out->after_instance_id = dc_rd_str(rd, true, true);
    out->max_clients = dc_rd_i32(rd);
  }
  dc_rd_tags(rd);
  return rd->err;
}

int dc_describe_fleet_req_encode(dc_buf_t *b, int16_t v,
                                 const dc_describe_fleet_req_t *in) {
  if (v < 0 || v > FLEET_MAX_VERSION)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_str(b, true, in->client_id);
  dc_wr_str(b, true, in->user);
  if (v >= 1) {
    dc_wr_i64(b, in->since_seq);
    dc_wr_i32(b, in->timeout_ms);
    dc_wr_str(b, true, in->after_client_id);
    dc_wr_str(b, true, in->after_instance_id);
    dc_wr_i32(b, in->max_clients);
  }
  dc_wr_tags_empty(b);
  return b->err;
}

static void client_decode(dc_rd_t *rd, dc_fleet_client_t *c) {
  c->instance_id = dc_rd_str(rd, true, false);
  c->client_id = dc_rd_str(rd, true, false);
  c->principal = dc_rd_str(rd, true, false);
  c->peer = dc_rd_str(rd, true, false);
  c->listener = dc_rd_str(rd, true, false);
  c->agent_software = dc_rd_str(rd, true, false);
  c->app_software = dc_rd_str(rd, true, false);
  c->kind = dc_rd_str(rd, true, false);
  c->first_seen_ms = dc_rd_i64(rd);
  c->last_seen_ms = dc_rd_i64(rd);
  c->connected = dc_rd_bool(rd);
  c->served_version = dc_rd_i64(rd);
  c->current_version = dc_rd_i64(rd);
  c->reported_version = dc_rd_i64(rd);
  c->generation = dc_rd_i64(rd);
  c->outcome = dc_rd_i8(rd);
  c->reason = dc_rd_str(rd, true, true);
  c->state = dc_rd_i8(rd);
  dc_rd_tags(rd);
}

int dc_describe_fleet_resp_decode(dc_rd_t *rd, int16_t v,
                                  dc_describe_fleet_resp_t *out) {
  memset(out, 0, sizeof(*out));
  out->fleet_seq = -1;
  if (!up_to(rd, v, FLEET_MAX_VERSION))
    return rd->err;
  out->throttle_time_ms = dc_rd_i32(rd);
  out->error_code = dc_rd_i16(rd);
  out->error_message = dc_rd_str(rd, true, true);
  if (v >= 1) {
    out->fleet_seq = dc_rd_i64(rd);
    out->more = dc_rd_bool(rd);
  }
  /* eight strings, six int64s, bool, two int8s, reason, tags: minimal */
  int32_t n = dc_rd_array_len(rd, true, false, 8 + 6 * 8 + 1 + 2 + 1 + 1);
  out->clients = dc_rd_alloc(rd, (size_t)n, sizeof(*out->clients));
  if (rd->err)
    return rd->err;
  out->n_clients = n;
  for (int32_t i = 0; i < n && !rd->err; i++)
    client_decode(rd, &out->clients[i]);
  dc_rd_tags(rd);
  return rd->err;
}

void dc_fleet_client_encode(dc_buf_t *b, const dc_fleet_client_t *c) {
  dc_wr_str_nn(b, true, c->instance_id);
  dc_wr_str_nn(b, true, c->client_id);
  dc_wr_str_nn(b, true, c->principal);
  dc_wr_str_nn(b, true, c->peer);
  dc_wr_str_nn(b, true, c->listener);
  dc_wr_str_nn(b, true, c->agent_software);
  dc_wr_str_nn(b, true, c->app_software);
  dc_wr_str_nn(b, true, c->kind);
  dc_wr_i64(b, c->first_seen_ms);
  dc_wr_i64(b, c->last_seen_ms);
  dc_wr_bool(b, c->connected);
  dc_wr_i64(b, c->served_version);
  dc_wr_i64(b, c->current_version);
  dc_wr_i64(b, c->reported_version);
  dc_wr_i64(b, c->generation);
  dc_wr_i8(b, c->outcome);
  dc_wr_str(b, true, c->reason);
  dc_wr_i8(b, c->state);
  dc_wr_tags_empty(b);
}

int dc_describe_fleet_resp_encode(dc_buf_t *b, int16_t v,
                                  const dc_describe_fleet_resp_t *in) {
  if (v < 0 || v > FLEET_MAX_VERSION)
    return DC_ERR__UNSUPPORTED_API;
  int32_t n = dc_nn_count(in->n_clients);
  dc_wr_i32(b, in->throttle_time_ms);
  dc_wr_i16(b, in->error_code);
  dc_wr_str(b, true, in->error_message);
  if (v >= 1) {
    dc_wr_i64(b, in->fleet_seq);
    dc_wr_bool(b, in->more);
  }
  dc_wr_array_len(b, true, n);
  for (int32_t i = 0; i < n; i++)
    dc_fleet_client_encode(b, &in->clients[i]);
  dc_wr_tags_empty(b);
  return b->err;
}
