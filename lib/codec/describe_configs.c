/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DescribeConfigs (key 32), versions 0-4, per apache/kafka
 * DescribeConfigsRequest.json / DescribeConfigsResponse.json.
 *
 *   request:  [resource_type i8, resource_name, configuration_keys
 *             (nullable [string])], include_synonyms (v1+),
 *             include_documentation (v3+)
 *   response: throttle_time_ms, [error_code, error_message?, resource_type,
 *             resource_name, [name, value?, read_only, is_default (v0 only),
 *             config_source (v1+), is_sensitive, synonyms (v1+) [name,
 *             value?, source], config_type (v3+), documentation? (v3+)]]
 *
 * v4 is flexible: compact strings and arrays, and an (always empty, when we
 * write it) tagged-field section ending every struct and the body.
 *
 * Encoders write a NULL non-nullable string as "" and a negative count of a
 * non-nullable array as an empty array, so we never emit bytes a peer must
 * reject (librdkafka crashes on a null config name). Decoded strings and
 * arrays are owned by rd->arena.
 */
#include "proto.h"

#include <string.h>

#define API DC_API_DESCRIBE_CONFIGS


/* ---- request ------------------------------------------------------------ */

int dc_describe_configs_req_decode(dc_rd_t *rd, int16_t v,
                                   dc_describe_configs_req_t *out) {
  memset(out, 0, sizeof(*out));
  if (!dc_api_supported(API, v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return DC_ERR__UNSUPPORTED_API;
  }
  bool f = dc_api_flexible(API, v);

  /* type + name + keys array + tags */
  out->n_resources =
      dc_rd_array_len(rd, f, false, 1 + dc_str_min(f) + dc_arr_min(f) + dc_tags_min(f));
  out->resources =
      dc_rd_alloc(rd, (size_t)out->n_resources, sizeof(*out->resources));
  for (int32_t i = 0; i < out->n_resources && !rd->err; i++) {
    dc_describe_configs_req_resource_t *r = &out->resources[i];
    r->resource_type = dc_rd_i8(rd);
    r->resource_name = dc_rd_str(rd, f, false);
    r->n_configuration_keys = dc_rd_array_len(rd, f, true, dc_str_min(f));
    if (r->n_configuration_keys >= 0) {
      r->configuration_keys = dc_rd_alloc(rd, (size_t)r->n_configuration_keys,
                                          sizeof(*r->configuration_keys));
      for (int32_t k = 0; k < r->n_configuration_keys && !rd->err; k++)
        r->configuration_keys[k] = dc_rd_str(rd, f, false);
    }
    if (f)
      dc_rd_tags(rd);
  }
  if (v >= 1)
    out->include_synonyms = dc_rd_bool(rd);
  if (v >= 3)
    out->include_documentation = dc_rd_bool(rd);
  out->min_position = f ? dc_rd_tags_i64(rd, DC_TAG_STORE_POSITION, -1) : -1;
  out->ask_position = out->min_position >= 0;
  return rd->err;
}

int dc_describe_configs_req_encode(dc_buf_t *b, int16_t v,
                                   const dc_describe_configs_req_t *in) {
  if (!dc_api_supported(API, v))
    return DC_ERR__UNSUPPORTED_API;
  bool f = dc_api_flexible(API, v);

  int32_t n = dc_nn_count(in->n_resources);
  dc_wr_array_len(b, f, n);
  for (int32_t i = 0; i < n; i++) {
    const dc_describe_configs_req_resource_t *r = &in->resources[i];
    dc_wr_i8(b, r->resource_type);
    dc_wr_str_nn(b, f, r->resource_name);
    /* Nullable: a negative count is the null "all keys" list. */
    int32_t nk = r->n_configuration_keys < 0 ? -1 : r->n_configuration_keys;
    dc_wr_array_len(b, f, nk);
    for (int32_t k = 0; k < nk; k++)
      dc_wr_str_nn(b, f, r->configuration_keys[k]);
    if (f)
      dc_wr_tags_empty(b);
  }
  if (v >= 1)
    dc_wr_bool(b, in->include_synonyms);
  if (v >= 3)
    dc_wr_bool(b, in->include_documentation);
  if (f && (in->min_position > 0 || in->ask_position))
    dc_wr_tag_i64(b, DC_TAG_STORE_POSITION,
                  in->min_position > 0 ? in->min_position : 0);
  else if (f)
    dc_wr_tags_empty(b);
  return b->err;
}

/* ---- response ----------------------------------------------------------- */

/* Smallest encoding of one config entry at version v. */
static size_t entry_min(int16_t v, bool f) {
  size_t n = 2 * dc_str_min(f) + 1 /* read_only */ + 1 /* is_sensitive */;
  if (v == 0)
    n += 1; /* is_default */
  if (v >= 1)
    n += 1 /* config_source */ + dc_arr_min(f) /* synonyms */;
  if (v >= 3)
    n += 1 /* config_type */ + dc_str_min(f) /* documentation */;
  return n + dc_tags_min(f);
}

static void entry_decode(dc_rd_t *rd, int16_t v, bool f,
                         dc_describe_configs_entry_t *e) {
  /* Schema defaults for fields this version lacks. */
  e->config_source = -1;
  e->config_type = 0;

  e->name = dc_rd_str(rd, f, false);
  e->value = dc_rd_str(rd, f, true);
  e->read_only = dc_rd_bool(rd);
  if (v == 0)
    e->is_default = dc_rd_bool(rd);
  if (v >= 1)
    e->config_source = dc_rd_i8(rd);
  e->is_sensitive = dc_rd_bool(rd);
  if (v >= 1) {
    /* name + value + source + tags */
    e->n_synonyms =
        dc_rd_array_len(rd, f, false, 2 * dc_str_min(f) + 1 + dc_tags_min(f));
    e->synonyms = dc_rd_alloc(rd, (size_t)e->n_synonyms, sizeof(*e->synonyms));
    for (int32_t i = 0; i < e->n_synonyms && !rd->err; i++) {
      dc_describe_configs_synonym_t *s = &e->synonyms[i];
      s->name = dc_rd_str(rd, f, false);
      s->value = dc_rd_str(rd, f, true);
      s->source = dc_rd_i8(rd);
      if (f)
        dc_rd_tags(rd);
    }
  }
  if (v >= 3) {
    e->config_type = dc_rd_i8(rd);
    e->documentation = dc_rd_str(rd, f, true);
  }
  if (f)
    dc_rd_tags(rd);
}

int dc_describe_configs_resp_decode(dc_rd_t *rd, int16_t v,
                                    dc_describe_configs_resp_t *out) {
  memset(out, 0, sizeof(*out));
  if (!dc_api_supported(API, v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return DC_ERR__UNSUPPORTED_API;
  }
  bool f = dc_api_flexible(API, v);

  out->throttle_time_ms = dc_rd_i32(rd);
  /* error_code + message + type + name + configs array + tags */
  out->n_results = dc_rd_array_len(
      rd, f, false, 2 + dc_str_min(f) + 1 + dc_str_min(f) + dc_arr_min(f) + dc_tags_min(f));
  out->results = dc_rd_alloc(rd, (size_t)out->n_results, sizeof(*out->results));
  for (int32_t i = 0; i < out->n_results && !rd->err; i++) {
    dc_describe_configs_result_t *r = &out->results[i];
    r->error_code = dc_rd_i16(rd);
    r->error_message = dc_rd_str(rd, f, true);
    r->resource_type = dc_rd_i8(rd);
    r->resource_name = dc_rd_str(rd, f, false);
    r->n_configs = dc_rd_array_len(rd, f, false, entry_min(v, f));
    r->configs = dc_rd_alloc(rd, (size_t)r->n_configs, sizeof(*r->configs));
    for (int32_t k = 0; k < r->n_configs && !rd->err; k++)
      entry_decode(rd, v, f, &r->configs[k]);
    r->config_version = f ? dc_rd_tags_i64(rd, DC_TAG_CONFIG_VERSION, -1) : -1;
  }
  out->position = f ? dc_rd_tags_i64(rd, DC_TAG_STORE_POSITION, -1) : -1;
  return rd->err;
}

static void entry_encode(dc_buf_t *b, int16_t v, bool f,
                         const dc_describe_configs_entry_t *e) {
  dc_wr_str_nn(b, f, e->name);
  dc_wr_str(b, f, e->value);
  dc_wr_bool(b, e->read_only);
  if (v == 0)
    dc_wr_bool(b, e->is_default);
  if (v >= 1)
    dc_wr_i8(b, e->config_source);
  dc_wr_bool(b, e->is_sensitive);
  if (v >= 1) {
    int32_t n = dc_nn_count(e->n_synonyms);
    dc_wr_array_len(b, f, n);
    for (int32_t i = 0; i < n; i++) {
      const dc_describe_configs_synonym_t *s = &e->synonyms[i];
      dc_wr_str_nn(b, f, s->name);
      dc_wr_str(b, f, s->value);
      dc_wr_i8(b, s->source);
      if (f)
        dc_wr_tags_empty(b);
    }
  }
  if (v >= 3) {
    dc_wr_i8(b, e->config_type);
    dc_wr_str(b, f, e->documentation);
  }
  if (f)
    dc_wr_tags_empty(b);
}

void dc_describe_configs_resp_begin(dc_buf_t *b, int16_t v,
                                    int32_t throttle_time_ms,
                                    int32_t n_results) {
  dc_wr_i32(b, throttle_time_ms);
  dc_wr_array_len(b, dc_api_flexible(API, v), dc_nn_count(n_results));
}

void dc_describe_configs_result_encode(dc_buf_t *b, int16_t v,
                                       const dc_describe_configs_result_t *r) {
  bool f = dc_api_flexible(API, v);
  dc_wr_i16(b, r->error_code);
  dc_wr_str(b, f, r->error_message);
  dc_wr_i8(b, r->resource_type);
  dc_wr_str_nn(b, f, r->resource_name);
  int32_t nc = dc_nn_count(r->n_configs);
  dc_wr_array_len(b, f, nc);
  for (int32_t k = 0; k < nc; k++)
    entry_encode(b, v, f, &r->configs[k]);
  if (f && r->config_version > 0)
    dc_wr_tag_i64(b, DC_TAG_CONFIG_VERSION, r->config_version);
  else if (f)
    dc_wr_tags_empty(b);
}

int dc_describe_configs_resp_end(dc_buf_t *b, int16_t v, int64_t position) {
  if (dc_api_flexible(API, v) && position > 0)
    dc_wr_tag_i64(b, DC_TAG_STORE_POSITION, position);
  else if (dc_api_flexible(API, v))
    dc_wr_tags_empty(b);
  return b->err;
}

int dc_describe_configs_resp_encode(dc_buf_t *b, int16_t v,
                                    const dc_describe_configs_resp_t *in) {
  if (!dc_api_supported(API, v))
    return DC_ERR__UNSUPPORTED_API;
  dc_describe_configs_resp_begin(b, v, in->throttle_time_ms, in->n_results);
  for (int32_t i = 0; i < dc_nn_count(in->n_results); i++)
    dc_describe_configs_result_encode(b, v, &in->results[i]);
  return dc_describe_configs_resp_end(b, v, in->position);
}
