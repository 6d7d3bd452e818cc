/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * JoinGroup (key 11) v0, classic encoding. Layout in proto.h.
 */
#include "proto.h"

#include <string.h>

int dc_join_group_req_decode(dc_rd_t *rd, int16_t v,
                             dc_join_group_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (v != 0) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->group_id = dc_rd_str(rd, false, false);
  out->session_timeout_ms = dc_rd_i32(rd);
  out->member_id = dc_rd_str(rd, false, false);
  out->protocol_type = dc_rd_str(rd, false, false);
  /* name + metadata, both minimal */
  int32_t n = dc_rd_array_len(rd, false, false, 2 + 4);
  for (int32_t i = 0; i < n && !rd->err; i++) {
    (void)dc_rd_str(rd, false, false);
    int32_t len;
    (void)dc_rd_bytes(rd, false, false, &len);
  }
  out->n_protocols = rd->err ? 0 : n;
  return rd->err;
}

int dc_join_group_resp_encode(dc_buf_t *b, int16_t v,
                              const dc_join_group_resp_t *in) {
  if (v != 0)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_i16(b, in->error_code);
  dc_wr_i32(b, in->generation_id);
  dc_wr_str_nn(b, false, in->protocol_name);
  dc_wr_str_nn(b, false, in->leader);
  dc_wr_str_nn(b, false, in->member_id);
  dc_wr_array_len(b, false, 0);
  return b->err;
}
