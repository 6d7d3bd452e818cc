/* SPDX-License-Identifier: BSD-2-Clause */
/* DescribeConfigs: each CLIENT or USER resource resolved through its
 * scopes, the read-only BROKER resource, each authorized on its own. */
#include "broker/api/answer_memo.h"
#include "broker/api/config_apis.h"
#include "broker/auth/acl.h"
#include "broker/config/scope.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/schema.h"
#include "common/strset.h"

#include <stdio.h>
#include <string.h>

/* The keys a resource asks for; NULL when it asks for all of them
 * (Kafka treats a null and an empty key list alike). */
static int wanted_keys(dc_req_t *r,
                       const dc_describe_configs_req_resource_t *res,
                       dc_strset_t *set, const dc_strset_t **out) {
  *out = NULL;
  if (res->n_configuration_keys <= 0)
    return 0;
  if (dc_strset_init(set, r->arena, (size_t)res->n_configuration_keys))
    return DC_ERR__NOMEM;
  for (int32_t i = 0; i < res->n_configuration_keys; i++)
    dc_strset_add(set, 0, res->configuration_keys[i], i);
  *out = set;
  return 0;
}

static bool key_wanted(const dc_strset_t *want, const char *key) {
  return !want || dc_strset_find(want, 0, key) >= 0;
}

static void fill_entry(bool docs, dc_describe_configs_entry_t *e,
                       const char *key) {
  const dc_schema_entry_t *s = dc_schema_find(key);
  e->name = (char *)key;
  e->config_type = (int8_t)(s ? s->type : DC_TYPE_STRING);
  if (docs && s)
    e->documentation = (char *)s->doc;
}

/* A classic (non-flexible) string carries at most 32,767 bytes. Stored
 * values are bounded far below that, but a longer one is an error for
 * its resource, never a truncated answer. */
static bool fits_classic(const char *s) {
  return !s || strlen(s) <= INT16_MAX;
}

/* Resolves one CLIENT or USER resource: the levels come from scope.c,
 * each a sorted key list; a merge emits every key once, valued from the
 * highest level that has it, with every level's value as a synonym. */
static int describe_scoped(dc_req_t *r, const dc_describe_configs_req_t *req,
                           const dc_strset_t *want, const dc_scope_ent_t *ent,
                           dc_describe_configs_result_t *out) {
  bool classic = !dc_api_flexible(DC_API_DESCRIBE_CONFIGS,
                                   r->hdr->api_version);
  dc_scope_level_t lv[DC_SCOPE_MAX_LEVELS];
  int nl = dc_scope_levels(r->b->db, ent, r->conn->principal, lv);
  size_t total = 0;
  for (int i = 0; i < nl; i++)
    total += lv[i].e ? lv[i].e->n : 0;
  out->configs = dc_arena_alloc(r->arena, total * sizeof(*out->configs));
  if (!out->configs)
    return DC_ERR__NOMEM;
  dc_scope_merge_t m;
  dc_scope_merge_init(&m, lv, nl);
  int have[DC_SCOPE_MAX_LEVELS], nh;
  const char *vals[DC_SCOPE_MAX_LEVELS], *key;
  while ((key = dc_scope_merge_next(&m, vals, have, &nh))) {
    bool fits = !classic || fits_classic(key);
    for (int j = 0; j < nh; j++)
      fits = fits && (!classic || fits_classic(vals[j]));
    if (!key_wanted(want, key))
      continue;
    if (!fits) {
      out->n_configs = 0;
      out->error_code = DC_ERR_INVALID_REQUEST;
      out->error_message = dc_arena_strdup(
          r->arena, "a stored name or value of this resource is longer than "
                    "the 32767 bytes this request version can carry; use "
                    "DescribeConfigs v4");
      return 0;
    }
    dc_describe_configs_entry_t *e = &out->configs[out->n_configs++];
    fill_entry(req->include_documentation, e, key);
    e->value = (char *)vals[0];
    e->config_source = lv[have[0]].source;
    e->is_default = lv[have[0]].is_default;
    if (req->include_synonyms) {
      /* Kafka lists every synonym in precedence order, the winner first. */
      e->synonyms = dc_arena_alloc(r->arena, (size_t)nh * sizeof(*e->synonyms));
      if (!e->synonyms)
        return DC_ERR__NOMEM;
      for (int j = 0; j < nh; j++)
        e->synonyms[j] = (dc_describe_configs_synonym_t){
            (char *)key, (char *)vals[j], lv[have[j]].source};
      e->n_synonyms = nh;
    }
  }
  return 0;
}

static int describe_broker(dc_req_t *r, const dc_describe_configs_req_t *req,
                           const dc_describe_configs_req_resource_t *res,
                           const dc_strset_t *want,
                           dc_describe_configs_result_t *out) {
  const dc_broker_opts_t *o = &r->b->opts;
  if (strcmp(res->resource_name, r->b->node_name)) {
    out->error_code = DC_ERR_INVALID_REQUEST;
    out->error_message = "BROKER resource name must be this server's node id";
    return 0;
  }
  out->configs = dc_arena_alloc(r->arena, o->n_static * sizeof(*out->configs));
  if (!out->configs)
    return DC_ERR__NOMEM;
  for (size_t i = 0; i < o->n_static; i++) {
    const char *key = o->static_keys[i];
    if (!key_wanted(want, key))
      continue;
    dc_describe_configs_entry_t *e = &out->configs[out->n_configs++];
    e->name = (char *)key;
    e->value = (char *)o->static_values[i];
    e->read_only = true;
    e->config_source = DC_SRC_STATIC_BROKER;
    e->config_type = DC_TYPE_STRING;
    if (req->include_synonyms) {
      e->synonyms = dc_arena_alloc(r->arena, sizeof(*e->synonyms));
      if (!e->synonyms)
        return DC_ERR__NOMEM;
      e->synonyms[0] = (dc_describe_configs_synonym_t){
          e->name, e->value, DC_SRC_STATIC_BROKER};
      e->n_synonyms = 1;
    }
  }
  return 0;
}

/* A dynconf agent that polls learns the version of the configuration it
 * was served (a Watch answer names it); the fleet view records it as this
 * connection's served version. */
static void say_version(dc_req_t *r, const char *client_id,
                        dc_describe_configs_result_t *out) {
  out->config_version =
      dc_broker_config_version(r->b, client_id, r->conn->principal);
  if (out->config_version > 0) {
    dc_broker_fleet_served(r->conn->fleet, out->config_version);
    r->served = out->config_version;
  }
}

/* Fills out for one resource: its configs, or an error. */
static int describe_one(dc_req_t *r, const dc_describe_configs_req_t *req,
                        const dc_describe_configs_req_resource_t *res,
                        dc_describe_configs_result_t *out) {
  char why[700];
  dc_scope_ent_t ent;
  dc_strset_t set;
  const dc_strset_t *want;
  int8_t t = res->resource_type;
  if (t != DC_RES_CLIENT && t != DC_RES_USER && t != DC_RES_BROKER) {
    out->error_code = DC_ERR_INVALID_REQUEST;
    out->error_message = (char *)dc_cfg_type_error(t);
    return 0;
  }
  if (res->n_configuration_keys > r->b->opts.max_request_configs) {
    snprintf(why, sizeof(why),
             "the resource names %d config keys; this server accepts at "
             "most %d (max.request.configs)",
             (int)res->n_configuration_keys,
             (int)r->b->opts.max_request_configs);
  } else if (t != DC_RES_BROKER &&
             dc_scope_ent_init(&ent, t, res->resource_name, why,
                               sizeof(why))) {
    /* why names the problem */
  } else if ((t != DC_RES_BROKER ||
              !strcmp(res->resource_name, r->b->node_name)) &&
             !dc_broker_authorized(r, DC_ACL_DESCRIBE, t, res->resource_name,
                                   why, sizeof(why))) {
    /* Nothing about a denied resource is revealed, not even emptiness. */
    out->error_code = DC_ERR_CLUSTER_AUTHORIZATION_FAILED;
    out->error_message = dc_arena_strdup(r->arena, why);
    return out->error_message ? 0 : DC_ERR__NOMEM;
  } else {
    int err = wanted_keys(r, res, &set, &want);
    if (err)
      return err;
    if (t == DC_RES_BROKER)
      return describe_broker(r, req, res, want, out);
    if ((err = describe_scoped(r, req, want, &ent, out)))
      return err;
    if (t == DC_RES_CLIENT && !out->error_code && req->ask_position)
      say_version(r, res->resource_name, out);
    return 0;
  }
  out->error_code = DC_ERR_INVALID_REQUEST;
  out->error_message = dc_arena_strdup(r->arena, why);
  return out->error_message ? 0 : DC_ERR__NOMEM;
}

/* Replaces a result that would take the response past its limit with an
 * error saying so. */
static int over_budget(dc_req_t *r, dc_describe_configs_result_t *out) {
  char msg[200];
  snprintf(msg, sizeof(msg),
           "the configs of this resource would take the response past %zu "
           "bytes (max.response.bytes); describe fewer resources or keys "
           "at a time",
           r->b->opts.max_response_size);
  out->error_code = DC_ERR_INVALID_REQUEST;
  out->error_message = dc_arena_strdup(r->arena, msg);
  out->n_configs = 0;
  out->configs = NULL;
  return out->error_message ? 0 : DC_ERR__NOMEM;
}

/* Why a server whose store has applied the log up to pos does not answer
 * a client that has seen min_position, or NULL when it may: it sends the
 * client elsewhere rather than answer from an older state. */
static const char *behind_client(dc_req_t *r, int64_t min_position,
                                 int64_t pos) {
  if (min_position <= 0 || pos < 0 || min_position <= pos)
    return NULL;
  char msg[200];
  dc_broker_behind_why(msg, sizeof(msg), pos, min_position);
  return dc_arena_strdup(r->arena, msg);
}

static int describe_configs(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_describe_configs_req_t req = {0};
  if (dc_describe_configs_req_decode(r->rd, v, &req))
    return r->rd->err;
  /* The response stays within max_response_size: room for an error result
   * is kept for every resource not yet answered, and a result that takes
   * the response past the limit is taken back and replaced by one. */
  size_t reserve = 16, used = 0;
  for (int32_t i = 0; i < req.n_resources; i++)
    reserve += dc_cfg_error_result_bound(req.resources[i].resource_name);
  int err = dc_cfg_answer_fits(r, reserve);
  if (err)
    return err;
  const char *too_many = dc_cfg_too_many_resources(r, req.n_resources);
  int64_t pos = dc_store_position(r->b->store);
  const char *behind = behind_client(r, req.min_position, pos);
  /* Each result is encoded as soon as it is built; its scratch memory is
   * then reused for the next. */
  dc_arena_mark_t mark = dc_arena_mark(r->arena);
  dc_describe_configs_resp_begin(r->out, v, 0, req.n_resources);
  for (int32_t i = 0; i < req.n_resources; i++) {
    const dc_describe_configs_req_resource_t *res = &req.resources[i];
    dc_describe_configs_result_t out = {0};
    out.resource_type = res->resource_type; /* echoed, as librdkafka needs */
    out.resource_name = res->resource_name;
    reserve -= dc_cfg_error_result_bound(res->resource_name);
    if (too_many) {
      out.error_code = DC_ERR_INVALID_REQUEST;
      out.error_message = (char *)too_many;
    } else if (behind) {
      out.error_code = DC_ERR_REPLICA_NOT_AVAILABLE;
      out.error_message = (char *)behind;
    } else if ((err = describe_one(r, &req, res, &out))) {
      return err;
    }
    size_t at = r->out->len;
    dc_describe_configs_result_encode(r->out, v, &out);
    if (used + (r->out->len - at) + reserve > r->b->opts.max_response_size) {
      r->out->len = at;
      if ((err = over_budget(r, &out)))
        return err;
      dc_describe_configs_result_encode(r->out, v, &out);
    }
    used += r->out->len - at;
    if (!r->error)
      r->error = out.error_code;
    dc_arena_reset_to(r->arena, mark);
  }
  /* The position is said to a client that sent the tag (0 when it has
   * seen none yet): only dynconf's own clients do. */
  return dc_describe_configs_resp_end(r->out, v,
                                      req.ask_position ? pos : -1);
}

/* The connection's last answer when the request and what it was made
 * from are unchanged (answer_memo.h); else a new one, kept when making it
 * counted no denial. */
int dc_handle_describe_configs(dc_req_t *r) {
  dc_answer_key_t key;
  bool memo = dc_answer_memo_key(r, &key);
  if (memo && dc_answer_memo_replay(r, &key))
    return 0;
  size_t body_start = r->out->len;
  uint64_t denied = r->b->metrics.authz_denied;
  int err = describe_configs(r);
  if (!err && memo && r->b->metrics.authz_denied == denied)
    dc_answer_memo_keep(r, &key, body_start, r->served);
  return err;
}
