/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * AlterConfigs (key 33, v0-2, flexible from v2) and IncrementalAlterConfigs
 * (key 44, v0-1, flexible from v1), per apache/kafka AlterConfigs* and
 * IncrementalAlterConfigs* {Request,Response}.json.
 *
 *   request:  [resource_type i8, resource_name, [name, config_operation i8
 *             (incremental only), value?]], validate_only
 *   response: throttle_time_ms, [error_code, error_message?, resource_type,
 *             resource_name]
 *
 * The two APIs differ only in the op byte and their version ranges, so one
 * pair of static codecs serves both, keyed by the API. AlterConfigs decodes
 * every entry as DC_OP_SET. A decoded op byte is kept as sent: rejecting an
 * unknown op is the handler's job (INVALID_REQUEST), not a framing error.
 *
 * As in the other encoders, a NULL non-nullable string goes out as "" and a
 * negative count of a (never nullable) array as an empty array. Decoded
 * strings and arrays are owned by rd->arena.
 */
#include "proto.h"

#include <string.h>


/* ---- request ------------------------------------------------------------ */

static int req_decode(dc_rd_t *rd, int16_t api, int16_t v,
                      dc_alter_configs_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (!dc_api_supported(api, v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return DC_ERR__UNSUPPORTED_API;
  }
  bool f = dc_api_flexible(api, v);
  bool incremental = api == DC_API_INCREMENTAL_ALTER_CONFIGS;
  /* name + (op) + value + tags */
  size_t cfg_min = 2 * dc_str_min(f) + (incremental ? 1 : 0) + dc_tags_min(f);

  /* type + name + configs array + tags */
  out->n_resources =
      dc_rd_array_len(rd, f, false, 1 + dc_str_min(f) + dc_arr_min(f) + dc_tags_min(f));
  out->resources =
      dc_rd_alloc(rd, (size_t)out->n_resources, sizeof(*out->resources));
  for (int32_t i = 0; i < out->n_resources && !rd->err; i++) {
    dc_alter_resource_t *r = &out->resources[i];
    r->resource_type = dc_rd_i8(rd);
    r->resource_name = dc_rd_str(rd, f, false);
    r->n_configs = dc_rd_array_len(rd, f, false, cfg_min);
    r->configs = dc_rd_alloc(rd, (size_t)r->n_configs, sizeof(*r->configs));
    for (int32_t k = 0; k < r->n_configs && !rd->err; k++) {
      dc_alter_config_t *c = &r->configs[k];
      c->name = dc_rd_str(rd, f, false);
      c->op = incremental ? dc_rd_i8(rd) : (int8_t)DC_OP_SET;
      c->value = dc_rd_str(rd, f, true);
      if (f)
        dc_rd_tags(rd);
    }
    if (f)
      dc_rd_tags(rd);
  }
  out->validate_only = dc_rd_bool(rd);
  if (f)
    dc_rd_tags(rd);
  return rd->err;
}

static int req_encode(dc_buf_t *b, int16_t api, int16_t v,
                      const dc_alter_configs_req_t *in) {
  if (!dc_api_supported(api, v))
    return DC_ERR__UNSUPPORTED_API;
  bool f = dc_api_flexible(api, v);
  bool incremental = api == DC_API_INCREMENTAL_ALTER_CONFIGS;

  int32_t n = dc_nn_count(in->n_resources);
  dc_wr_array_len(b, f, n);
  for (int32_t i = 0; i < n; i++) {
    const dc_alter_resource_t *r = &in->resources[i];
    dc_wr_i8(b, r->resource_type);
    dc_wr_str_nn(b, f, r->resource_name);
    int32_t nc = dc_nn_count(r->n_configs);
    dc_wr_array_len(b, f, nc);
    for (int32_t k = 0; k < nc; k++) {
      const dc_alter_config_t *c = &r->configs[k];
      dc_wr_str_nn(b, f, c->name);
      if (incremental)
        dc_wr_i8(b, c->op);
      dc_wr_str(b, f, c->value);
      if (f)
        dc_wr_tags_empty(b);
    }
    if (f)
      dc_wr_tags_empty(b);
  }
  dc_wr_bool(b, in->validate_only);
  if (f)
    dc_wr_tags_empty(b);
  return b->err;
}

/* ---- response ----------------------------------------------------------- */

static int resp_decode(dc_rd_t *rd, int16_t api, int16_t v,
                       dc_alter_configs_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (!dc_api_supported(api, v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return DC_ERR__UNSUPPORTED_API;
  }
  bool f = dc_api_flexible(api, v);

  out->throttle_time_ms = dc_rd_i32(rd);
  /* error_code + message + type + name + tags */
  out->n_responses = dc_rd_array_len(
      rd, f, false, 2 + dc_str_min(f) + 1 + dc_str_min(f) + dc_tags_min(f));
  out->responses =
      dc_rd_alloc(rd, (size_t)out->n_responses, sizeof(*out->responses));
  for (int32_t i = 0; i < out->n_responses && !rd->err; i++) {
    dc_alter_result_t *r = &out->responses[i];
    r->error_code = dc_rd_i16(rd);
    r->error_message = dc_rd_str(rd, f, true);
    r->resource_type = dc_rd_i8(rd);
    r->resource_name = dc_rd_str(rd, f, false);
    if (f)
      dc_rd_tags(rd);
  }
  if (f)
    dc_rd_tags(rd);
  return rd->err;
}

static int resp_encode(dc_buf_t *b, int16_t api, int16_t v,
                       const dc_alter_configs_resp_t *in) {
  if (!dc_api_supported(api, v))
    return DC_ERR__UNSUPPORTED_API;
  bool f = dc_api_flexible(api, v);

  dc_wr_i32(b, in->throttle_time_ms);
  int32_t n = dc_nn_count(in->n_responses);
  dc_wr_array_len(b, f, n);
  for (int32_t i = 0; i < n; i++) {
    const dc_alter_result_t *r = &in->responses[i];
    dc_wr_i16(b, r->error_code);
    dc_wr_str(b, f, r->error_message);
    dc_wr_i8(b, r->resource_type);
    dc_wr_str_nn(b, f, r->resource_name);
    if (f)
      dc_wr_tags_empty(b);
  }
  if (f)
    dc_wr_tags_empty(b);
  return b->err;
}

/* ---- public entry points ------------------------------------------------ */

int dc_alter_configs_req_decode(dc_rd_t *rd, int16_t v,
                                dc_alter_configs_req_t *out) {
  return req_decode(rd, DC_API_ALTER_CONFIGS, v, out);
}

int dc_alter_configs_req_encode(dc_buf_t *b, int16_t v,
                                const dc_alter_configs_req_t *in) {
  return req_encode(b, DC_API_ALTER_CONFIGS, v, in);
}

int dc_alter_configs_resp_decode(dc_rd_t *rd, int16_t v,
                                 dc_alter_configs_resp_t *out) {
  return resp_decode(rd, DC_API_ALTER_CONFIGS, v, out);
}

int dc_alter_configs_resp_encode(dc_buf_t *b, int16_t v,
                                 const dc_alter_configs_resp_t *in) {
  return resp_encode(b, DC_API_ALTER_CONFIGS, v, in);
}

int dc_incremental_alter_configs_req_decode(dc_rd_t *rd, int16_t v,
                                            dc_alter_configs_req_t *out) {
  return req_decode(rd, DC_API_INCREMENTAL_ALTER_CONFIGS, v, out);
}

int dc_incremental_alter_configs_req_encode(dc_buf_t *b, int16_t v,
                                            const dc_alter_configs_req_t *in) {
  return req_encode(b, DC_API_INCREMENTAL_ALTER_CONFIGS, v, in);
}

int dc_incremental_alter_configs_resp_decode(dc_rd_t *rd, int16_t v,
                                             dc_alter_configs_resp_t *out) {
  return resp_decode(rd, DC_API_INCREMENTAL_ALTER_CONFIGS, v, out);
}

int dc_incremental_alter_configs_resp_encode(
    dc_buf_t *b, int16_t v, const dc_alter_configs_resp_t *in) {
  return resp_encode(b, DC_API_INCREMENTAL_ALTER_CONFIGS, v, in);
}
