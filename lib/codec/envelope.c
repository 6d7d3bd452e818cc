/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Envelope (key 58) v0, flexible (KIP-590): a request another server
 * forwards on a client's behalf, and its response. Layout in proto.h.
 */
#include "proto.h"

#include <string.h>

/* n big-endian bytes at p. */
static uint64_t get_be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}

int dc_envelope_req_decode(dc_rd_t *rd, int16_t v, dc_envelope_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (v != 0) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->request_data = dc_rd_bytes(rd, true, false, &out->request_data_len);
  out->principal = dc_rd_bytes(rd, true, true, &out->principal_len);
  out->client_host = dc_rd_bytes(rd, true, false, &out->client_host_len);
  dc_tag_t t[2] = {{.tag = DC_TAG_STORE_POSITION},
                   {.tag = DC_TAG_REPLICA_SIGNATURE}};
  dc_rd_tags_find(rd, t, 2);
  out->position = -1;
  if (t[0].p && t[0].len == 8)
    out->position = (int64_t)get_be(t[0].p, 8);
  if (t[1].p && t[1].len == DC_ENVELOPE_SIG_TAG_LEN) {
    out->has_signature = true;
    out->signer = (int32_t)(uint32_t)get_be(t[1].p, 4);
    out->signed_ms = (int64_t)get_be(t[1].p + 4, 8);
    memcpy(out->signature, t[1].p + 12, DC_ENVELOPE_SIG_LEN);
  }
  return rd->err;
}

/* v as n big-endian bytes at p. */
static void put_be(uint8_t *p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--, v >>= 8)
    p[i] = (uint8_t)v;
}

int dc_envelope_req_encode(dc_buf_t *b, int16_t v, const dc_envelope_req_t *in) {
  if (v != 0)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_bytes(b, true, in->request_data ? in->request_data : (const uint8_t *)"",
              in->request_data_len);
  dc_wr_bytes(b, true, in->principal, in->principal_len);
  dc_wr_bytes(b, true, in->client_host ? in->client_host : (const uint8_t *)"",
              in->client_host_len);
  uint8_t pos[8], sig[DC_ENVELOPE_SIG_TAG_LEN];
  put_be(pos, (uint64_t)in->position, 8);
  put_be(sig, (uint32_t)in->signer, 4);
  put_be(sig + 4, (uint64_t)in->signed_ms, 8);
  memcpy(sig + 12, in->signature, DC_ENVELOPE_SIG_LEN);
  dc_tag_t t[2] = {
      {DC_TAG_STORE_POSITION, in->position > 0 ? pos : NULL, sizeof(pos)},
      {DC_TAG_REPLICA_SIGNATURE, in->has_signature ? sig : NULL,
       sizeof(sig)}};
  dc_wr_tags(b, t, 2);
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
