/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ReloadSecurity (key 20000) v0-1: dynconf's own targeted reload RPC
 * (seed 002). Layout in proto.h. Classic (non-flexible) encodings
 * throughout; the request is the same in both versions.
 */
#include "proto.h"

#include <stdio.h>
#include <string.h>

int dc_reload_req_decode(dc_rd_t *rd, int16_t v, dc_reload_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (v < 0 || v > 1) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->listener_name = dc_rd_str(rd, false, true);
  return rd->err;
}

int dc_reload_req_encode(dc_buf_t *b, int16_t v, const dc_reload_req_t *in) {
  if (v < 0 || v > 1)
    return DC_ERR__UNSUPPORTED_API;
  dc_wr_str(b, false, in->listener_name);
  return b->err;
}

static void decode_listeners(dc_rd_t *rd, dc_reload_resp_t *out) {
  /* name + error + message + subject + not_after, all minimal */
  int32_t n = dc_rd_array_len(rd, false, false, 2 + 2 + 2 + 2 + 8);
  out->listeners = dc_rd_alloc(rd, (size_t)n, sizeof(*out->listeners));
  if (rd->err)
    return;
  out->n_listeners = n;
  for (int32_t i = 0; i < n && !rd->err; i++) {
    dc_reload_listener_t *l = &out->listeners[i];
    l->listener_name = dc_rd_str(rd, false, false);
    l->error_code = dc_rd_i16(rd);
    l->error_message = dc_rd_str(rd, false, true);
    l->subject = dc_rd_str(rd, false, true);
    l->not_after_ms = dc_rd_i64(rd);
  }
}

static void decode_files(dc_rd_t *rd, dc_reload_resp_t *out) {
  /* what + path + error + message, all minimal */
  int32_t n = dc_rd_array_len(rd, false, false, 2 + 2 + 2 + 2);
  out->files = dc_rd_alloc(rd, (size_t)n, sizeof(*out->files));
  if (rd->err)
    return;
  out->n_files = n;
  for (int32_t i = 0; i < n && !rd->err; i++) {
    dc_reload_file_t *f = &out->files[i];
    f->what = dc_rd_str(rd, false, false);
    f->path = dc_rd_str(rd, false, true);
    f->error_code = dc_rd_i16(rd);
    f->error_message = dc_rd_str(rd, false, true);
  }
}

int dc_reload_resp_decode(dc_rd_t *rd, int16_t v, dc_reload_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (v < 0 || v > 1) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  out->throttle_time_ms = dc_rd_i32(rd);
  out->error_code = dc_rd_i16(rd);
  out->error_message = dc_rd_str(rd, false, true);
  decode_listeners(rd, out);
  if (v >= 1 && !rd->err)
    decode_files(rd, out);
  return rd->err;
}

int dc_reload_resp_encode(dc_buf_t *b, int16_t v, const dc_reload_resp_t *in) {
  if (v < 0 || v > 1)
    return DC_ERR__UNSUPPORTED_API;
  int32_t n = dc_nn_count(in->n_listeners);
  dc_wr_i32(b, in->throttle_time_ms);
  dc_wr_i16(b, in->error_code);
  dc_wr_str(b, false, in->error_message);
  dc_wr_array_len(b, false, n);
  for (int32_t i = 0; i < n; i++) {
    const dc_reload_listener_t *l = &in->listeners[i];
    dc_wr_str_nn(b, false, l->listener_name);
    dc_wr_i16(b, l->error_code);
    dc_wr_str(b, false, l->error_message);
    dc_wr_str(b, false, l->subject);
    dc_wr_i64(b, l->not_after_ms);
  }
  if (v < 1)
    return b->err;
  n = dc_nn_count(in->n_files);
  dc_wr_array_len(b, false, n);
  for (int32_t i = 0; i < n; i++) {
    const dc_reload_file_t *f = &in->files[i];
    dc_wr_str_nn(b, false, f->what);
    dc_wr_str(b, false, f->path);
    dc_wr_i16(b, f->error_code);
    dc_wr_str(b, false, f->error_message);
  }
  return b->err;
}

/* What a failed reload of each file leaves in force. */
static const char *kept(const char *what) {
  static const struct {
    const char *what, *kept;
  } words[] = {{DC_RELOAD_ACL, "old rules"},
               {DC_RELOAD_CREDENTIALS, "old credentials"},
               {DC_RELOAD_JWKS, "old keys"},
               {DC_RELOAD_KEYTAB, "old keys"}};
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
    if (what && !strcmp(what, words[i].what))
      return words[i].kept;
  return "old contents";
}

int dc_reload_file_say(char *out, size_t size, const char *what,
                       const char *path, const char *error) {
  const char *w = what ? what : "file", *p = path ? path : "(default)";
  if (!error)
    return snprintf(out, size, "reloaded %s %s", w, p);
  return snprintf(out, size, "%s %s: not reloaded, %s kept: %s", w, p,
                  kept(what), error);
}
