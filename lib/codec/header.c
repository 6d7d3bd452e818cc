/* SPDX-License-Identifier: BSD-2-Clause */
/* API version table and request/response headers. */
#include "proto.h"

static const dc_api_info_t apis[] = {
    {DC_API_METADATA, 0, 12, 9, "Metadata"},
    {DC_API_JOIN_GROUP, 0, 0, -1, "JoinGroup"},
    {DC_API_API_VERSIONS, 0, 3, 3, "ApiVersions"},
    {DC_API_DESCRIBE_CONFIGS, 0, 4, 4, "DescribeConfigs"},
    {DC_API_ALTER_CONFIGS, 0, 2, 2, "AlterConfigs"},
    {DC_API_INCREMENTAL_ALTER_CONFIGS, 0, 1, 1, "IncrementalAlterConfigs"},
    {DC_API_SASL_HANDSHAKE, 0, 1, -1, "SaslHandshake"},
    {DC_API_SASL_AUTHENTICATE, 0, 2, 2, "SaslAuthenticate"},
    {DC_API_ENVELOPE, 0, 0, 0, "Envelope"},
    {DC_API_RELOAD_SECURITY, 0, 1, -1, "ReloadSecurity"},
    {DC_API_WATCH, 0, 1, 0, "Watch"},
    {DC_API_CLIENT_REPORT, 0, 0, 0, "ClientReport"},
    {DC_API_DESCRIBE_FLEET, 0, 1, 0, "DescribeFleet"},
};

const dc_api_info_t *dc_api_all(size_t *np) {
  *np = sizeof(apis) / sizeof(apis[0]);
  return apis;
}

/* Every request looks its API up more than once: a switch, not a scan. */
const dc_api_info_t *dc_api_info(int16_t api_key) {
  switch (api_key) {
  case DC_API_METADATA: return &apis[0];
  case DC_API_JOIN_GROUP: return &apis[1];
  case DC_API_API_VERSIONS: return &apis[2];
  case DC_API_DESCRIBE_CONFIGS: return &apis[3];
  case DC_API_ALTER_CONFIGS: return &apis[4];
  case DC_API_INCREMENTAL_ALTER_CONFIGS: return &apis[5];
  case DC_API_SASL_HANDSHAKE: return &apis[6];
  case DC_API_SASL_AUTHENTICATE: return &apis[7];
  case DC_API_ENVELOPE: return &apis[8];
  case DC_API_RELOAD_SECURITY: return &apis[9];
  case DC_API_WATCH: return &apis[10];
  case DC_API_CLIENT_REPORT: return &apis[11];
  case DC_API_DESCRIBE_FLEET: return &apis[12];
  default: return NULL;
  }
}

bool dc_api_flexible(int16_t api_key, int16_t version) {
  const dc_api_info_t *a = dc_api_info(api_key);
  return a && a->flexible_from >= 0 && version >= a->flexible_from;
}

bool dc_api_supported(int16_t api_key, int16_t version) {
  const dc_api_info_t *a = dc_api_info(api_key);
  return a && version >= a->min_version && version <= a->max_version;
}

/* API key, version and correlation id, read in one step when all 8
 * bytes are there (every request's header starts so). */
static bool fixed_part(dc_rd_t *rd, dc_req_header_t *out) {
  if (rd->err || rd->len - rd->pos < 8)
    return false;
  const uint8_t *q = rd->p + rd->pos;
  out->api_key = (int16_t)(uint16_t)(q[0] << 8 | q[1]);
  out->api_version = (int16_t)(uint16_t)(q[2] << 8 | q[3]);
  out->correlation_id = (int32_t)((uint32_t)q[4] << 24 | (uint32_t)q[5] << 16 |
                                  (uint32_t)q[6] << 8 | q[7]);
  rd->pos += 8;
  return true;
}

int dc_req_header_decode(dc_rd_t *rd, dc_req_header_t *out) {
  if (!fixed_part(rd, out)) {
    out->api_key = dc_rd_i16(rd);
    out->api_version = dc_rd_i16(rd);
    out->correlation_id = dc_rd_i32(rd);
  }
  out->client_id = dc_rd_str(rd, false, true);
  if (!rd->err && dc_api_flexible(out->api_key, out->api_version))
    dc_rd_tags(rd);
  return rd->err;
}

int dc_req_header_encode(dc_buf_t *b, const dc_req_header_t *in) {
  dc_wr_i16(b, in->api_key);
  dc_wr_i16(b, in->api_version);
  dc_wr_i32(b, in->correlation_id);
  dc_wr_str(b, false, in->client_id);
  if (dc_api_flexible(in->api_key, in->api_version))
    dc_wr_tags_empty(b);
  return b->err;
}

static bool resp_header_v1(int16_t api_key, int16_t api_version) {
  return api_key != DC_API_API_VERSIONS && dc_api_flexible(api_key, api_version);
}

int dc_resp_header_decode(dc_rd_t *rd, int16_t api_key, int16_t api_version,
                          int32_t *correlation_id) {
  *correlation_id = dc_rd_i32(rd);
  if (resp_header_v1(api_key, api_version))
    dc_rd_tags(rd);
  return rd->err;
}

int dc_resp_header_encode(dc_buf_t *b, int16_t api_key, int16_t api_version,
                          int32_t correlation_id) {
  dc_wr_i32(b, correlation_id);
  if (resp_header_v1(api_key, api_version))
    dc_wr_tags_empty(b);
  return b->err;
}
