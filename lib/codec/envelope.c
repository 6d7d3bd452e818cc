/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Envelope (key 58) v0, flexible (KIP-590): a request another server
 * forwards on a client's behalf, and its response. Layout in proto.h.
 */
#include "proto.h"

#include <string.h>

int dc_envelope_req_decode(dc_rd_t *rd, int16_t v, dc_envelope_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (v != 0) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->request_data = dc_rd_bytes(rd, true, false, &out->request_data_len);
  out->principal = dc_rd_bytes(rd, true, true, &out->principal_len);
  out->client_host = dc_rd_bytes(rd, true, false, &out->client_host_len);
  dc_rd_tags(rd);
  return rd->err;
}

int dc_envelope_req_encode(dc_buf_t *b, int16_t v, const dc_envelope_req_t *in) {
  if (v != 0)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_bytes(b, true, in->request_data ? in->request_data : (const uint8_t *)"",
              in->request_data_len);
  dc_wr_bytes(b, true, in->principal, in->principal_len);
  dc_wr_bytes(b, true, in->client_host ? in->client_host : (const uint8_t *)"",
              in->client_host_len);
  dc_wr_tags_empty(b);
  return b->err;
}

int dc_envelope_resp_decode(dc_rd_t *rd, int16_t v, dc_envelope_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (v != 0) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->response_data = dc_rd_bytes(rd, true, true, &out->response_data_len);
  out->error_code = dc_rd_i16(rd);
  out->position = dc_rd_tags_i64(rd, DC_TAG_STORE_POSITION, -1);
  return rd->err;
}

int dc_envelope_resp_encode(dc_buf_t *b, int16_t v,
                            const dc_envelope_resp_t *in) {
  if (v != 0)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_bytes(b, true, in->response_data, in->response_data_len);
  dc_wr_i16(b, in->error_code);
  if (in->position > 0)
    dc_wr_tag_i64(b, DC_TAG_STORE_POSITION, in->position);
  else
    dc_wr_tags_empty(b);
  return b->err;
}
