/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SaslHandshake (key 17) v0-1 and SaslAuthenticate (key 36) v0-2, per
 * apache/kafka SaslHandshake{Request,Response}.json and
 * SaslAuthenticate{Request,Response}.json.
 *
 *   SaslHandshake    request:  mechanism
 *                    response: error_code, [mechanisms]
 *                    (v1 has the v0 layout; it only changes what follows)
 *   SaslAuthenticate request:  auth_bytes
 *                    response: error_code, error_message (nullable),
 *                              auth_bytes, session_lifetime_ms (v1+)
 *                    v2 is flexible (compact encodings, tag sections).
 */
#include "proto.h"

#include <string.h>

static bool hs_version_ok(int16_t v) { return v >= 0 && v <= 1; }
static bool sa_version_ok(int16_t v) { return v >= 0 && v <= 2; }

int dc_sasl_handshake_req_decode(dc_rd_t *rd, int16_t v,
                                 dc_sasl_handshake_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (!hs_version_ok(v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->mechanism = dc_rd_str(rd, false, false);
  return rd->err;
}

int dc_sasl_handshake_req_encode(dc_buf_t *b, int16_t v,
                                 const dc_sasl_handshake_req_t *in) {
  if (!hs_version_ok(v))
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_str_nn(b, false, in->mechanism);
  return b->err;
}

int dc_sasl_handshake_resp_decode(dc_rd_t *rd, int16_t v,
                                  dc_sasl_handshake_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (!hs_version_ok(v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->error_code = dc_rd_i16(rd);
  int32_t n = dc_rd_array_len(rd, false, false, dc_str_min(false));
  out->mechanisms = dc_rd_alloc(rd, (size_t)n, sizeof(char *));
  if (rd->err)
    return rd->err;
  out->n_mechanisms = n;
  for (int32_t i = 0; i < n && !rd->err; i++)
    out->mechanisms[i] = dc_rd_str(rd, false, false);
  return rd->err;
}

int dc_sasl_handshake_resp_encode(dc_buf_t *b, int16_t v,
                                  const dc_sasl_handshake_resp_t *in) {
  if (!hs_version_ok(v))
    return DC_ERR__UNSUPPORTED_API;
  int32_t n = dc_nn_count(in->n_mechanisms);
  dc_wr_i16(b, in->error_code);
  dc_wr_array_len(b, false, n);
  for (int32_t i = 0; i < n; i++)
    dc_wr_str_nn(b, false, in->mechanisms[i]);
  return b->err;
}

int dc_sasl_authenticate_req_decode(dc_rd_t *rd, int16_t v,
                                    dc_sasl_authenticate_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (!sa_version_ok(v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  bool flex = v >= 2;
  out->auth_bytes = dc_rd_bytes(rd, flex, false, &out->n_auth_bytes);
  if (flex)
    dc_rd_tags(rd);
  return rd->err;
}

int dc_sasl_authenticate_req_encode(dc_buf_t *b, int16_t v,
                                    const dc_sasl_authenticate_req_t *in) {
  if (!sa_version_ok(v))
    return DC_ERR__UNSUPPORTED_API;
  bool flex = v >= 2;
  /* Not nullable: a NULL pointer goes out as empty bytes. */
  dc_wr_bytes(b, flex, in->auth_bytes ? in->auth_bytes : (const uint8_t *)"",
              in->auth_bytes ? in->n_auth_bytes : 0);
  if (flex)
    dc_wr_tags_empty(b);
  return b->err;
}

int dc_sasl_authenticate_resp_decode(dc_rd_t *rd, int16_t v,
                                     dc_sasl_authenticate_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (!sa_version_ok(v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  bool flex = v >= 2;
  out->error_code = dc_rd_i16(rd);
  out->error_message = dc_rd_str(rd, flex, true);
  out->auth_bytes = dc_rd_bytes(rd, flex, false, &out->n_auth_bytes);
  if (v >= 1)
    out->session_lifetime_ms = dc_rd_i64(rd);
  if (flex)
    dc_rd_tags(rd);
  return rd->err;
}

int dc_sasl_authenticate_resp_encode(dc_buf_t *b, int16_t v,
                                     const dc_sasl_authenticate_resp_t *in) {
  if (!sa_version_ok(v))
    return DC_ERR__UNSUPPORTED_API;
  bool flex = v >= 2;
  dc_wr_i16(b, in->error_code);
  dc_wr_str(b, flex, in->error_message);
  dc_wr_bytes(b, flex, in->auth_bytes ? in->auth_bytes : (const uint8_t *)"",
              in->auth_bytes ? in->n_auth_bytes : 0);
  if (v >= 1)
    dc_wr_i64(b, in->session_lifetime_ms);
  if (flex)
    dc_wr_tags_empty(b);
  return b->err;
}
