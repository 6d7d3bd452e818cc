/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Watch (key 20001) v0-1, dynconf's own, flexible throughout. Layout in
 * proto.h.
 */
#include "proto.h"

#include <string.h>

int dc_watch_req_decode(dc_rd_t *rd, int16_t v, dc_watch_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (v < 0 || v > 1) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->client_id = dc_rd_str(rd, true, false);
  out->known_version = dc_rd_i64(rd);
  out->timeout_ms = dc_rd_i32(rd);
  out->min_position = v >= 1 ? dc_rd_i64(rd) : -1;
  dc_rd_tags(rd);
  return rd->err;
}

int dc_watch_req_encode(dc_buf_t *b, int16_t v, const dc_watch_req_t *in) {
  if (v < 0 || v > 1)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_str_nn(b, true, in->client_id);
  dc_wr_i64(b, in->known_version);
  dc_wr_i32(b, in->timeout_ms);
  if (v >= 1)
    dc_wr_i64(b, in->min_position);
  dc_wr_tags_empty(b);
  return b->err;
}

int dc_watch_resp_decode(dc_rd_t *rd, int16_t v, dc_watch_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (v < 0 || v > 1) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->position = -1;
  out->throttle_time_ms = dc_rd_i32(rd);
  out->error_code = dc_rd_i16(rd);
  out->error_message = dc_rd_str(rd, true, true);
  out->changed = dc_rd_bool(rd);
  out->version = dc_rd_i64(rd);
  /* name + value + source + tags, all minimal */
  int32_t n = dc_rd_array_len(rd, true, false, 1 + 1 + 1 + 1);
  out->configs = dc_rd_alloc(rd, (size_t)n, sizeof(*out->configs));
  if (rd->err)
    return rd->err;
  out->n_configs = n;
  for (int32_t i = 0; i < n && !rd->err; i++) {
    dc_watch_entry_t *e = &out->configs[i];
    e->name = dc_rd_str(rd, true, false);
    e->value = dc_rd_str(rd, true, true);
    e->source = dc_rd_i8(rd);
    dc_rd_tags(rd);
  }
  if (v >= 1)
    out->position = dc_rd_i64(rd);
  dc_rd_tags(rd);
  return rd->err;
}

int dc_watch_resp_encode(dc_buf_t *b, int16_t v, const dc_watch_resp_t *in) {
  if (v < 0 || v > 1)
    return DC_ERR__UNSUPPORTED_API;
  int32_t n = dc_nn_count(in->n_configs);
  dc_wr_i32(b, in->throttle_time_ms);
  dc_wr_i16(b, in->error_code);
  dc_wr_str(b, true, in->error_message);
  dc_wr_bool(b, in->changed);
  dc_wr_i64(b, in->version);
  dc_wr_array_len(b, true, n);
  for (int32_t i = 0; i < n; i++) {
    const dc_watch_entry_t *e = &in->configs[i];
    dc_wr_str_nn(b, true, e->name);
    dc_wr_str(b, true, e->value);
    dc_wr_i8(b, e->source);
    dc_wr_tags_empty(b);
  }
  if (v >= 1)
    dc_wr_i64(b, in->position);
  dc_wr_tags_empty(b);
  return b->err;
}
