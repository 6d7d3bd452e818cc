/* DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for the CLIENT
 * resource (SPEC §2-§4), the principal-scoped USER resource (type 10; the
 * scheme is described in scope.c), and the read-only BROKER resource.
 * Every resource is authorized on its own (acl.h): a denied one gets
 * CLUSTER_AUTHORIZATION_FAILED and is neither described nor changed,
 * while the others in the same request proceed. */
#include "broker/acl.h"
#include "broker/broker_int.h"
#include "broker/scope.h"
#include "common/schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *type_error(int8_t type) {
  (void)type;
  return "dynconfd serves only CLIENT (9), USER (10) and BROKER (4) config "
         "resources";
}

/* ---- DescribeConfigs ------------------------------------------------- */

static bool key_wanted(const dc_describe_configs_req_resource_t *res,
                       const char *key) {
  /* Kafka treats a null and an empty key list alike: all keys. */
  if (res->n_configuration_keys <= 0)
    return true;
  for (int32_t i = 0; i < res->n_configuration_keys; i++)
    if (!strcmp(res->configuration_keys[i], key))
      return true;
  return false;
}

static void fill_entry(dc_req_t *r, bool docs, dc_describe_configs_entry_t *e,
                       const char *key) {
  const dc_schema_entry_t *s = dc_schema_find(key);
  e->name = (char *)key;
  e->config_type = (int8_t)(s ? s->type : DC_TYPE_STRING);
  if (docs && s)
    e->documentation = (char *)s->doc;
  (void)r;
}

/* Resolves one CLIENT or USER resource: the levels come from scope.c,
 * each a sorted key list; a merge emits every key once, valued from the
 * highest level that has it, with every level's value as a synonym. */
static int describe_scoped(dc_req_t *r, const dc_describe_configs_req_t *req,
                           const dc_describe_configs_req_resource_t *res,
                           const dc_scope_ent_t *ent,
                           dc_describe_configs_result_t *out) {
  dc_scope_level_t lv[DC_SCOPE_MAX_LEVELS];
  int nl = dc_scope_levels(r->b->db, ent, r->conn->principal, lv);
  size_t pos[DC_SCOPE_MAX_LEVELS] = {0}, total = 0;
  for (int i = 0; i < nl; i++)
    total += lv[i].e ? lv[i].e->n : 0;
  out->configs = dc_arena_alloc(r->arena, total * sizeof(*out->configs));
  if (!out->configs)
    return DYNCONF_ERR__NOMEM;
  for (;;) {
    const char *key = NULL;
    for (int i = 0; i < nl; i++)
      if (lv[i].e && pos[i] < lv[i].e->n &&
          (!key || strcmp(lv[i].e->keys[pos[i]], key) < 0))
        key = lv[i].e->keys[pos[i]];
    if (!key)
      break;
    int have[DC_SCOPE_MAX_LEVELS], nh = 0;
    const char *vals[DC_SCOPE_MAX_LEVELS];
    for (int i = 0; i < nl; i++)
      if (lv[i].e && pos[i] < lv[i].e->n &&
          !strcmp(lv[i].e->keys[pos[i]], key)) {
        have[nh] = i;
        vals[nh++] = lv[i].e->values[pos[i]++];
      }
    if (!key_wanted(res, key))
      continue;
    dc_describe_configs_entry_t *e = &out->configs[out->n_configs++];
    fill_entry(r, req->include_documentation, e, key);
    e->value = (char *)vals[0];
    e->config_source = lv[have[0]].source;
    e->is_default = lv[have[0]].is_default;
    if (req->include_synonyms) {
      /* Kafka lists every synonym in precedence order, the winner first. */
      e->synonyms = dc_arena_alloc(r->arena, (size_t)nh * sizeof(*e->synonyms));
      if (!e->synonyms)
        return DYNCONF_ERR__NOMEM;
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
                           dc_describe_configs_result_t *out) {
  const dc_broker_opts_t *o = &r->b->opts;
  if (strcmp(res->resource_name, r->b->node_name)) {
    out->error_code = DYNCONF_ERR_INVALID_REQUEST;
    out->error_message = "BROKER resource name must be this server's node id";
    return 0;
  }
  out->configs = dc_arena_alloc(r->arena, o->n_static * sizeof(*out->configs));
  if (!out->configs)
    return DYNCONF_ERR__NOMEM;
  for (size_t i = 0; i < o->n_static; i++) {
    const char *key = o->static_keys[i];
    if (!key_wanted(res, key))
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
        return DYNCONF_ERR__NOMEM;
      e->synonyms[0] = (dc_describe_configs_synonym_t){
          e->name, e->value, DC_SRC_STATIC_BROKER};
      e->n_synonyms = 1;
    }
  }
  return 0;
}

int dc_handle_describe_configs(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_describe_configs_req_t req = {0};
  if (dc_describe_configs_req_decode(r->rd, v, &req))
    return r->rd->err;
  dc_describe_configs_resp_t resp = {0};
  resp.n_results = req.n_resources;
  resp.results =
      dc_arena_alloc(r->arena, (size_t)req.n_resources * sizeof(*resp.results));
  if (!resp.results)
    return DYNCONF_ERR__NOMEM;
  for (int32_t i = 0; i < req.n_resources; i++) {
    const dc_describe_configs_req_resource_t *res = &req.resources[i];
    dc_describe_configs_result_t *out = &resp.results[i];
    out->resource_type = res->resource_type; /* echoed, as librdkafka needs */
    out->resource_name = res->resource_name;
    int err = 0;
    char why[700];
    dc_scope_ent_t ent;
    int8_t t = res->resource_type;
    if (t != DC_RES_CLIENT && t != DC_RES_USER && t != DC_RES_BROKER) {
      out->error_code = DYNCONF_ERR_INVALID_REQUEST;
      out->error_message = (char *)type_error(t);
    } else if (t != DC_RES_BROKER &&
               dc_scope_ent_init(&ent, t, res->resource_name, why,
                                 sizeof(why))) {
      out->error_code = DYNCONF_ERR_INVALID_REQUEST;
      out->error_message = dc_arena_strdup(r->arena, why);
    } else if ((t != DC_RES_BROKER ||
                !strcmp(res->resource_name, r->b->node_name)) &&
               !dc_broker_authorized(r, DC_ACL_DESCRIBE, t,
                                     res->resource_name, why, sizeof(why))) {
      /* Nothing about a denied resource is revealed, not even emptiness. */
      out->error_code = DYNCONF_ERR_CLUSTER_AUTHORIZATION_FAILED;
      out->error_message = dc_arena_strdup(r->arena, why);
    } else if (t == DC_RES_BROKER) {
      err = describe_broker(r, &req, res, out);
    } else {
      err = describe_scoped(r, &req, res, &ent, out);
    }
    if (err)
      return err;
    if (out->error_code && !out->error_message)
      return DYNCONF_ERR__NOMEM;
  }
  return dc_describe_configs_resp_encode(r->out, v, &resp);
}

/* ---- AlterConfigs / IncrementalAlterConfigs ------------------------- */

/* An entity's override set under construction, in arena memory. */
typedef struct kvset {
  size_t n, cap;
  const char **keys, **values;
} kvset_t;

static int kv_index(const kvset_t *s, const char *key) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->keys[i], key))
      return (int)i;
  return -1;
}

static void kv_set(kvset_t *s, const char *key, const char *value) {
  int i = kv_index(s, key);
  if (i >= 0) {
    s->values[i] = value;
    return;
  }
  s->keys[s->n] = key;
  s->values[s->n++] = value;
}

static void kv_del(kvset_t *s, const char *key) {
  int i = kv_index(s, key);
  if (i < 0)
    return;
  s->keys[i] = s->keys[s->n - 1];
  s->values[i] = s->values[s->n - 1];
  s->n--;
}

static bool list_has(const char *list, const char *item, size_t n) {
  for (const char *p = list; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && !strncmp(p, item, n))
      return true;
    p = comma ? comma + 1 : NULL;
  }
  return false;
}

/* APPEND adds the items not yet present, SUBTRACT removes the given ones
 * (KIP-339). Returns an arena string, "" when nothing is left. */
static char *list_apply(dc_arena_t *a, const char *base, const char *arg,
                        bool append) {
  size_t cap = strlen(base) + strlen(arg) + 2;
  char *out = dc_arena_alloc(a, cap);
  if (!out)
    return NULL;
  size_t len = 0;
  const char *sources[2] = {base, append ? arg : NULL};
  for (int s = 0; s < 2 && sources[s]; s++) {
    for (const char *p = sources[s]; *p;) {
      const char *comma = strchr(p, ',');
      size_t n = comma ? (size_t)(comma - p) : strlen(p);
      bool keep = n > 0 && !(len && list_has(out, p, n));
      if (keep && !append && list_has(arg, p, n))
        keep = false;
      if (keep) {
        if (len)
          out[len++] = ',';
        memcpy(out + len, p, n);
        len += n;
        out[len] = '\0';
      }
      if (!comma)
        break;
      p = comma + 1;
    }
  }
  return out;
}

typedef struct alter_result {
  int16_t error;
  char msg[512];
} alter_result_t;

static int16_t fail(alter_result_t *res, int16_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int16_t fail(alter_result_t *res, int16_t err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
  va_end(ap);
  res->error = err;
  return err;
}

/* Checks the values this request touched: schema, server bounds, and the
 * heartbeat/session rule on the entity's resolved values. */
static int16_t validate(dc_req_t *r, const dc_scope_ent_t *ent,
                        const kvset_t *s, const dc_alter_resource_t *ar,
                        alter_result_t *res) {
  const dc_broker_opts_t *o = &r->b->opts;
  char why[256];
  for (int32_t i = 0; i < ar->n_configs; i++) {
    const char *key = ar->configs[i].name;
    int k = kv_index(s, key);
    if (k < 0)
      continue; /* deleted or emptied: nothing to check */
    const char *val = s->values[k];
    const dc_schema_entry_t *e = dc_schema_find(key);
    if (!e) {
      if (o->allow_unknown_keys)
        continue;
      return fail(res, DYNCONF_ERR_INVALID_CONFIG,
                  "Unknown client config '%s' (dynconfd relays only keys in "
                  "its schema; see dynconfd --allow-unknown-keys)",
                  key);
    }
    if (!dc_schema_validate(e, val, why, sizeof(why)))
      return fail(res, DYNCONF_ERR_INVALID_CONFIG, "Invalid value: %s", why);
    if (!strcmp(key, "session.timeout.ms")) {
      int64_t ms;
      dc_parse_int64(val, &ms);
      if (ms < o->session_timeout_min_ms || ms > o->session_timeout_max_ms)
        return fail(res, DYNCONF_ERR_INVALID_CONFIG,
                    "session.timeout.ms=%s is outside this server's allowed "
                    "range %lld..%lld (group.min/max.session.timeout.ms)",
                    val, (long long)o->session_timeout_min_ms,
                    (long long)o->session_timeout_max_ms);
    }
  }
  /* heartbeat.interval.ms < session.timeout.ms for every (user,
   * client-id) pair this change reaches (scope.c). */
  if (!dc_scope_check_pair(r->b->db, ent, s->n, s->keys, s->values,
                           res->msg, sizeof(res->msg)))
    return res->error = DYNCONF_ERR_INVALID_CONFIG;
  return 0;
}

/* Computes, validates and (unless validate_only) commits one resource. */
static int alter_one(dc_req_t *r, const dc_alter_resource_t *ar,
                     bool incremental, bool validate_only,
                     alter_result_t *res) {
  int8_t t = ar->resource_type;
  char why[700]; /* naming and authorization errors */
  if (t != DC_RES_CLIENT && t != DC_RES_USER && t != DC_RES_BROKER) {
    fail(res, DYNCONF_ERR_INVALID_REQUEST, "%s", type_error(t));
    return 0;
  }
  /* The entity is named and authorized before anything else is looked
   * at, so a denied principal learns nothing about its values. */
  dc_scope_ent_t ent;
  if (t != DC_RES_BROKER &&
      dc_scope_ent_init(&ent, t, ar->resource_name, why, sizeof(why))) {
    fail(res, DYNCONF_ERR_INVALID_REQUEST, "%s", why);
    return 0;
  }
  if (!dc_broker_authorized(r, DC_ACL_ALTER, t, ar->resource_name, why,
                            sizeof(why))) {
    fail(res, DYNCONF_ERR_CLUSTER_AUTHORIZATION_FAILED, "%s", why);
    return 0;
  }
  if (t == DC_RES_BROKER) {
    fail(res, DYNCONF_ERR_INVALID_REQUEST,
         "BROKER configs of dynconfd are read-only; set them with dynconfd's "
         "flags or --config file");
    return 0;
  }
  const char *entity = ent.name;
  for (int32_t i = 0; i < ar->n_configs; i++) {
    const dc_alter_config_t *c = &ar->configs[i];
    for (int32_t j = 0; j < i; j++)
      if (!strcmp(ar->configs[j].name, c->name)) {
        fail(res, DYNCONF_ERR_INVALID_REQUEST,
             "config '%s' appears more than once", c->name);
        return 0;
      }
    if (c->op < DC_OP_SET || c->op > DC_OP_SUBTRACT) {
      fail(res, DYNCONF_ERR_INVALID_REQUEST,
           "unknown operation %d for config '%s'", c->op, c->name);
      return 0;
    }
    if (!c->value && c->op != DC_OP_DELETE) {
      fail(res, DYNCONF_ERR_INVALID_REQUEST,
           "config '%s' has a null value, allowed only with DELETE", c->name);
      return 0;
    }
    if (!*c->name) {
      fail(res, DYNCONF_ERR_INVALID_REQUEST, "empty config name");
      return 0;
    }
  }

  const dc_entity_t *cur = dc_configdb_get(r->b->db, t, entity);
  size_t ncur = cur ? cur->n : 0;
  kvset_t s = {0, ncur + (size_t)ar->n_configs, NULL, NULL};
  s.keys = dc_arena_alloc(r->arena, s.cap * sizeof(char *));
  s.values = dc_arena_alloc(r->arena, s.cap * sizeof(char *));
  if (!s.keys || !s.values)
    return DYNCONF_ERR__NOMEM;
  if (incremental)
    for (size_t i = 0; i < ncur; i++)
      kv_set(&s, cur->keys[i], cur->values[i]);

  for (int32_t i = 0; i < ar->n_configs; i++) {
    const dc_alter_config_t *c = &ar->configs[i];
    if (c->op == DC_OP_SET) {
      kv_set(&s, c->name, c->value);
    } else if (c->op == DC_OP_DELETE) {
      kv_del(&s, c->name);
    } else {
      const dc_schema_entry_t *e = dc_schema_find(c->name);
      if (!e || e->type != DC_TYPE_LIST) {
        fail(res, DYNCONF_ERR_INVALID_CONFIG,
             "%s applies only to LIST configs; '%s' is not one",
             c->op == DC_OP_APPEND ? "APPEND" : "SUBTRACT", c->name);
        return 0;
      }
      /* The list starts from what the entity has now: its own value,
       * else what it inherits (scope.c). */
      int k = kv_index(&s, c->name);
      const char *base =
          k >= 0 ? s.values[k] : dc_scope_inherited(r->b->db, &ent, c->name);
      char *nv = list_apply(r->arena, base ? base : "", c->value,
                            c->op == DC_OP_APPEND);
      if (!nv)
        return DYNCONF_ERR__NOMEM;
      if (*nv)
        kv_set(&s, c->name, nv);
      else
        kv_del(&s, c->name); /* nothing left: revert to the default */
    }
  }
  if (validate(r, &ent, &s, ar, res))
    return 0;

  /* Audit rows: every key whose value differs. */
  dc_store_change_t *ch = dc_arena_alloc(
      r->arena, (ncur + s.n) * sizeof(*ch));
  if (!ch)
    return DYNCONF_ERR__NOMEM;
  size_t nch = 0;
  for (size_t i = 0; i < s.n; i++) {
    const char *old = dc_entity_value(cur, s.keys[i]);
    if (old && !strcmp(old, s.values[i]))
      continue;
    int8_t op = DC_OP_SET;
    for (int32_t j = 0; j < ar->n_configs; j++)
      if (!strcmp(ar->configs[j].name, s.keys[i]))
        op = ar->configs[j].op;
    ch[nch++] = (dc_store_change_t){s.keys[i], op, old, s.values[i]};
  }
  for (size_t i = 0; i < ncur; i++)
    if (kv_index(&s, cur->keys[i]) < 0) {
      int8_t op = DC_OP_DELETE;
      for (int32_t j = 0; j < ar->n_configs; j++)
        if (!strcmp(ar->configs[j].name, cur->keys[i]))
          op = ar->configs[j].op;
      ch[nch++] = (dc_store_change_t){cur->keys[i], op, cur->values[i], NULL};
    }
  if (validate_only || nch == 0)
    return 0;

  if (r->b->store) {
    dc_store_commit_t commit = {
        .resource_type = t,
        .entity = entity,
        .principal = r->conn->principal ? r->conn->principal : "User:ANONYMOUS",
        .peer = r->conn->peer ? r->conn->peer : "",
        .api = incremental ? "IncrementalAlterConfigs" : "AlterConfigs",
        .n_configs = s.n,
        .keys = s.keys,
        .values = s.values,
        .n_changes = nch,
        .changes = ch,
    };
    why[0] = '\0';
    if (dc_store_commit(r->b->store, &commit, why, sizeof(why))) {
      fail(res, DYNCONF_ERR_UNKNOWN_SERVER_ERROR,
           "the change could not be stored and was not applied: %s", why);
      return 0;
    }
  }
  if (dc_configdb_replace(r->b->db, t, entity, s.n, s.keys, s.values))
    fail(res, DYNCONF_ERR_UNKNOWN_SERVER_ERROR,
         "out of memory applying a stored change; it takes effect on restart");
  return 0;
}

static int handle_alter(dc_req_t *r, bool incremental) {
  int16_t v = r->hdr->api_version;
  dc_alter_configs_req_t req = {0};
  int err = incremental
                ? dc_incremental_alter_configs_req_decode(r->rd, v, &req)
                : dc_alter_configs_req_decode(r->rd, v, &req);
  if (err)
    return r->rd->err ? r->rd->err : err;
  dc_alter_configs_resp_t resp = {0};
  resp.n_responses = req.n_resources;
  resp.responses = dc_arena_alloc(r->arena, (size_t)req.n_resources *
                                                sizeof(*resp.responses));
  if (!resp.responses)
    return DYNCONF_ERR__NOMEM;
  for (int32_t i = 0; i < req.n_resources; i++) {
    const dc_alter_resource_t *ar = &req.resources[i];
    dc_alter_result_t *out = &resp.responses[i];
    out->resource_type = ar->resource_type;
    out->resource_name = ar->resource_name;
    alter_result_t res = {0, ""};
    bool dup = false;
    for (int32_t j = 0; j < req.n_resources; j++)
      if (j != i && req.resources[j].resource_type == ar->resource_type &&
          !strcmp(req.resources[j].resource_name, ar->resource_name))
        dup = true;
    if (dup)
      fail(&res, DYNCONF_ERR_INVALID_REQUEST,
           "resource listed more than once in one request");
    else if ((err = alter_one(r, ar, incremental, req.validate_only, &res)))
      return err;
    out->error_code = res.error;
    if (res.error)
      out->error_message = dc_arena_strdup(r->arena, res.msg);
  }
  return incremental
             ? dc_incremental_alter_configs_resp_encode(r->out, v, &resp)
             : dc_alter_configs_resp_encode(r->out, v, &resp);
}

int dc_handle_alter_configs(dc_req_t *r) { return handle_alter(r, false); }
int dc_handle_incremental_alter_configs(dc_req_t *r) {
  return handle_alter(r, true);
}
