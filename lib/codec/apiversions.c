/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ApiVersions (key 18), versions 0-3, per apache/kafka
 * ApiVersionsRequest.json / ApiVersionsResponse.json.
 *
 *   request  v0-2: empty body
 *            v3:   client_software_name, client_software_version (compact
 *                  strings), tags
 *   response v0:   error_code, [api_key, min_version, max_version]
 *            v1-2: + throttle_time_ms
 *            v3:   compact array, tags after each entry and after the body
 *
 * The v3 response's tagged fields (supported/finalized features) are never
 * written and are skipped when read. Decoded strings and arrays live in
 * rd->arena.
 */
#include "proto.h"

#include <string.h>

#define AV_MIN 0
#define AV_MAX 3
#define AV_FLEX 3

static bool av_version_ok(int16_t v) { return v >= AV_MIN && v <= AV_MAX; }

int dc_apiversions_req_decode(dc_rd_t *rd, int16_t v, dc_apiversions_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (!av_version_ok(v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  if (v >= AV_FLEX) {
    out->client_software_name = dc_rd_str(rd, true, false);
    out->client_software_version = dc_rd_str(rd, true, false);
    dc_rd_tags(rd);
  }
  return rd->err;
}

int dc_apiversions_req_encode(dc_buf_t *b, int16_t v,
                              const dc_apiversions_req_t *in) {
  if (!av_version_ok(v))
    return DC_ERR__UNSUPPORTED_API;
  if (v >= AV_FLEX) {
    /* Both strings are non-nullable: a NULL goes out as "". */
    const char *name = in->client_software_name;
    const char *ver = in->client_software_version;
    dc_wr_str(b, true, name ? name : "");
    dc_wr_str(b, true, ver ? ver : "");
    dc_wr_tags_empty(b);
  }
  return b->err;
}

int dc_apiversions_resp_decode(dc_rd_t *rd, int16_t v,
                               dc_apiversions_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (!av_version_ok(v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  bool flex = v >= AV_FLEX;
  out->error_code = dc_rd_i16(rd);
  /* Each entry is three int16 (+ an empty tag section when flexible). */
  int32_t n = dc_rd_array_len(rd, flex, false, flex ? 7 : 6);
  out->api_keys = dc_rd_alloc(rd, (size_t)n, sizeof(*out->api_keys));
  if (rd->err)
    return rd->err;
  out->n_api_keys = n;
  for (int32_t i = 0; i < n && !rd->err; i++) {
    dc_api_range_t *r = &out->api_keys[i];
    r->api_key = dc_rd_i16(rd);
    r->min_version = dc_rd_i16(rd);
    r->max_version = dc_rd_i16(rd);
    if (flex)
      dc_rd_tags(rd);
  }
  if (v >= 1)
    out->throttle_time_ms = dc_rd_i32(rd);
  if (flex)
    dc_rd_tags(rd);
  return rd->err;
}

int dc_apiversions_resp_encode(dc_buf_t *b, int16_t v,
                               const dc_apiversions_resp_t *in) {
  if (!av_version_ok(v))
    return DC_ERR__UNSUPPORTED_API;
  bool flex = v >= AV_FLEX;
  int32_t n = in->n_api_keys > 0 ? in->n_api_keys : 0; /* not nullable */
  dc_wr_i16(b, in->error_code);
  dc_wr_array_len(b, flex, n);
  for (int32_t i = 0; i < n; i++) {
    const dc_api_range_t *r = &in->api_keys[i];
    dc_wr_i16(b, r->api_key);
    dc_wr_i16(b, r->min_version);
    dc_wr_i16(b, r->max_version);
    if (flex)
      dc_wr_tags_empty(b);
  }
  if (v >= 1)
    dc_wr_i32(b, in->throttle_time_ms);
  if (flex)
    dc_wr_tags_empty(b);
  return b->err;
}
