/* DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for the CLIENT
 * resource (SPEC §2-§4), plus the read-only BROKER resource. */
#include "broker/broker_int.h"
#include "common/schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ENTITY_NAME_MAX 255

static const char *type_error(int8_t type) {
  (void)type;
  return "dynconfd serves only CLIENT (9) and BROKER (4) config resources";
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

static int describe_client(dc_req_t *r, const dc_describe_configs_req_t *req,
                           const dc_describe_configs_req_resource_t *res,
                           dc_describe_configs_result_t *out) {
  size_t nlen = strlen(res->resource_name);
  if (nlen == 0 || nlen > ENTITY_NAME_MAX) {
    out->error_code = DYNCONF_ERR_INVALID_REQUEST;
    out->error_message = "client-id must be 1 to 255 bytes (use <default> "
                         "for the default entity)";
    return 0;
  }
  bool is_default = !strcmp(res->resource_name, DC_DEFAULT_ENTITY);
  const dc_entity_t *own =
      dc_configdb_get(r->b->db, DC_RES_CLIENT, res->resource_name);
  const dc_entity_t *def =
      is_default ? NULL
                 : dc_configdb_get(r->b->db, DC_RES_CLIENT, DC_DEFAULT_ENTITY);
  size_t no = own ? own->n : 0, nd = def ? def->n : 0;
  out->configs = dc_arena_alloc(r->arena, (no + nd) * sizeof(*out->configs));
  if (!out->configs)
    return DYNCONF_ERR__NOMEM;
  /* Merge the two sorted key lists. */
  size_t i = 0, j = 0;
  while (i < no || j < nd) {
    int c = i == no ? 1 : j == nd ? -1 : strcmp(own->keys[i], def->keys[j]);
    const char *key = c <= 0 ? own->keys[i] : def->keys[j];
    const char *ownv = c <= 0 ? own->values[i] : NULL;
    const char *defv = c >= 0 ? def->values[j] : NULL;
    if (c <= 0)
      i++;
    if (c >= 0)
      j++;
    if (!key_wanted(res, key))
      continue;
    dc_describe_configs_entry_t *e = &out->configs[out->n_configs++];
    fill_entry(r, req->include_documentation, e, key);
    /* The <default> entity's own values carry source 8 too. */
    int8_t own_src = is_default ? DC_SRC_DYNAMIC_DEFAULT : DC_SRC_DYNAMIC_CLIENT;
    e->value = (char *)(ownv ? ownv : defv);
    e->config_source = ownv ? own_src : DC_SRC_DYNAMIC_DEFAULT;
    e->is_default = !ownv;
    if (req->include_synonyms) {
      /* Kafka lists every synonym in precedence order, the winner first. */
      e->synonyms = dc_arena_alloc(r->arena, 2 * sizeof(*e->synonyms));
      if (!e->synonyms)
        return DYNCONF_ERR__NOMEM;
      if (ownv)
        e->synonyms[e->n_synonyms++] = (dc_describe_configs_synonym_t){
            (char *)key, (char *)ownv, own_src};
      if (defv)
        e->synonyms[e->n_synonyms++] = (dc_describe_configs_synonym_t){
            (char *)key, (char *)defv, DC_SRC_DYNAMIC_DEFAULT};
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
    if (res->resource_type == DC_RES_CLIENT)
      err = describe_client(r, &req, res, out);
    else if (res->resource_type == DC_RES_BROKER)
      err = describe_broker(r, &req, res, out);
    else {
      out->error_code = DYNCONF_ERR_INVALID_REQUEST;
      out->error_message = (char *)type_error(res->resource_type);
    }
    if (err)
      return err;
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

/* heartbeat.interval.ms must be below session.timeout.ms when both are
 * known. False (res filled) when they clash. */
static bool hb_below_session(const char *entity, const char *hv,
                             const char *sv, alter_result_t *res) {
  int64_t sms, hms;
  if (sv && hv && dc_parse_int64(sv, &sms) && dc_parse_int64(hv, &hms) &&
      hms >= sms) {
    fail(res, DYNCONF_ERR_INVALID_CONFIG,
         "heartbeat.interval.ms (%s) must be lower than session.timeout.ms "
         "(%s) for client-id '%s'",
         hv, sv, entity);
    return false;
  }
  return true;
}

struct default_check {
  const char *hv, *sv; /* the default's new values */
  alter_result_t *res;
};

static int check_client_vs_default(void *opaque, const dc_entity_t *e) {
  struct default_check *d = opaque;
  if (e->type != DC_RES_CLIENT || !strcmp(e->name, DC_DEFAULT_ENTITY))
    return 0;
  const char *ch = dc_entity_value(e, "heartbeat.interval.ms");
  const char *cs = dc_entity_value(e, "session.timeout.ms");
  if (ch && cs)
    return 0; /* the default does not reach this client's pair */
  if (!hb_below_session(e->name, ch ? ch : d->hv, cs ? cs : d->sv, d->res)) {
    char msg[sizeof(d->res->msg)];
    snprintf(msg, sizeof(msg), "this change to <default> would break "
             "client-id '%s', which overrides part of the pair: %.300s",
             e->name, d->res->msg);
    memcpy(d->res->msg, msg, sizeof(msg));
    return 1;
  }
  return 0;
}

/* Checks the values this request touched: schema, server bounds, and the
 * heartbeat/session rule on the entity's resolved values. */
static int16_t validate(dc_req_t *r, const char *entity, const kvset_t *s,
                        const dc_alter_resource_t *ar, alter_result_t *res) {
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
  /* heartbeat.interval.ms < session.timeout.ms, on resolved values. */
  bool touched = false;
  for (int32_t i = 0; i < ar->n_configs; i++)
    if (!strcmp(ar->configs[i].name, "session.timeout.ms") ||
        !strcmp(ar->configs[i].name, "heartbeat.interval.ms"))
      touched = true;
  if (!touched)
    return 0;
  int ks = kv_index(s, "session.timeout.ms"),
      kh = kv_index(s, "heartbeat.interval.ms");
  const char *sv = ks >= 0 ? s->values[ks] : NULL;
  const char *hv = kh >= 0 ? s->values[kh] : NULL;
  if (strcmp(entity, DC_DEFAULT_ENTITY)) {
    /* A client: its own values over the default's. */
    const dc_entity_t *def =
        dc_configdb_get(r->b->db, DC_RES_CLIENT, DC_DEFAULT_ENTITY);
    if (!hv)
      hv = dc_entity_value(def, "heartbeat.interval.ms");
    if (!sv)
      sv = dc_entity_value(def, "session.timeout.ms");
    return hb_below_session(entity, hv, sv, res) ? 0 : res->error;
  }
  /* The default: its own pair, then every client that inherits half of
   * the pair from it. */
  if (!hb_below_session(entity, hv, sv, res))
    return res->error;
  struct default_check dck = {hv, sv, res};
  dc_configdb_foreach(r->b->db, check_client_vs_default, &dck);
  return res->error;
}

/* Computes, validates and (unless validate_only) commits one resource. */
static int alter_one(dc_req_t *r, const dc_alter_resource_t *ar,
                     bool incremental, bool validate_only,
                     alter_result_t *res) {
  if (ar->resource_type == DC_RES_BROKER) {
    fail(res, DYNCONF_ERR_INVALID_REQUEST,
         "BROKER configs of dynconfd are read-only; set them with dynconfd's "
         "flags or --config file");
    return 0;
  }
  if (ar->resource_type != DC_RES_CLIENT) {
    fail(res, DYNCONF_ERR_INVALID_REQUEST, "%s", type_error(ar->resource_type));
    return 0;
  }
  const char *entity = ar->resource_name;
  size_t nlen = strlen(entity);
  if (nlen == 0 || nlen > ENTITY_NAME_MAX) {
    fail(res, DYNCONF_ERR_INVALID_REQUEST,
         "client-id must be 1 to %d bytes (use <default> for the default "
         "entity)",
         ENTITY_NAME_MAX);
    return 0;
  }
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

  const dc_entity_t *cur = dc_configdb_get(r->b->db, DC_RES_CLIENT, entity);
  const dc_entity_t *def =
      strcmp(entity, DC_DEFAULT_ENTITY)
          ? dc_configdb_get(r->b->db, DC_RES_CLIENT, DC_DEFAULT_ENTITY)
          : NULL;
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
      /* The list starts from what the client has now: its own value,
       * else the inherited default. */
      int k = kv_index(&s, c->name);
      const char *base = k >= 0 ? s.values[k] : dc_entity_value(def, c->name);
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
  if (validate(r, entity, &s, ar, res))
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
        .resource_type = DC_RES_CLIENT,
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
    char why[256] = "";
    if (dc_store_commit(r->b->store, &commit, why, sizeof(why))) {
      fail(res, DYNCONF_ERR_UNKNOWN_SERVER_ERROR,
           "the change could not be stored and was not applied: %s", why);
      return 0;
    }
  }
  if (dc_configdb_replace(r->b->db, DC_RES_CLIENT, entity, s.n, s.keys,
                          s.values))
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
