/* SPDX-License-Identifier: BSD-2-Clause */
/* AlterConfigs and IncrementalAlterConfigs: each resource's changes
 * checked, applied to a staged override set, committed to the store in
 * one batch, and the snapshot brought along. */
#include "broker/api/config_apis.h"
#include "broker/auth/acl.h"
#include "broker/config/scope.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/schema.h"
#include "common/strset.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* An entity's override set under construction, in arena memory: keys in
 * first-seen order, a NULL value marks a deleted key, and an index finds
 * a key in constant time. */
typedef struct kvset {
  dc_strset_t idx;
  size_t n;
  const char **keys, **values;
} kvset_t;

static int kv_init(kvset_t *s, dc_arena_t *a, size_t cap) {
  s->n = 0;
  s->keys = dc_arena_alloc(a, (cap ? cap : 1) * sizeof(char *));
  s->values = dc_arena_alloc(a, (cap ? cap : 1) * sizeof(char *));
  return !s->keys || !s->values || dc_strset_init(&s->idx, a, cap) ? -1 : 0;
}

static const char *kv_get(const kvset_t *s, const char *key) {
  int32_t i = dc_strset_find(&s->idx, 0, key);
  return i >= 0 ? s->values[i] : NULL;
}

/* Sets key to value; NULL deletes it. */
static void kv_put(kvset_t *s, const char *key, const char *value) {
  int32_t i = dc_strset_add(&s->idx, 0, key, (int32_t)s->n);
  if (i >= 0) {
    s->values[i] = value;
    return;
  }
  s->keys[s->n] = key;
  s->values[s->n++] = value;
}

/* Copies the live pairs into keys/values (room for s->n); their count. */
static size_t kv_live(const kvset_t *s, const char **keys,
                      const char **values) {
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->values[i]) {
      keys[n] = s->keys[i];
      values[n++] = s->values[i];
    }
  return n;
}

/* Splits a comma list into NUL-terminated arena items (empty ones
 * dropped). 0 or -1 on OOM. */
static int split_list(dc_arena_t *a, const char *list, char ***items,
                      size_t *n) {
  size_t max = 1;
  for (const char *p = list; *p; p++)
    max += *p == ',';
  *items = dc_arena_alloc(a, max * sizeof(**items));
  char *copy = dc_arena_strdup(a, list);
  if (!*items || !copy)
    return -1;
  *n = 0;
  for (char *p = copy, *next; p; p = next) {
    next = strchr(p, ',');
    if (next)
      *next++ = '\0';
    if (*p)
      (*items)[(*n)++] = p;
  }
  return 0;
}

/* APPEND adds the items not yet present, SUBTRACT removes the given ones
 * (KIP-339); repeated items collapse to one. Linear in the two lists.
 * Returns an arena string, "" when nothing is left; NULL on OOM. */
static char *list_apply(dc_arena_t *a, const char *base, const char *arg,
                        bool append) {
  char **bi, **ai;
  size_t nb, na;
  dc_strset_t seen, drop;
  char *out = dc_arena_alloc(a, strlen(base) + strlen(arg) + 2);
  if (!out || split_list(a, base, &bi, &nb) || split_list(a, arg, &ai, &na) ||
      dc_strset_init(&seen, a, nb + na) || dc_strset_init(&drop, a, na))
    return NULL;
  if (!append)
    for (size_t i = 0; i < na; i++)
      dc_strset_add(&drop, 0, ai[i], (int32_t)i);
  size_t len = 0;
  int32_t kept = 0;
  for (int src = 0; src < (append ? 2 : 1); src++) {
    char **items = src ? ai : bi;
    for (size_t i = 0, n = src ? na : nb; i < n; i++) {
      if (dc_strset_find(&drop, 0, items[i]) >= 0 ||
          dc_strset_add(&seen, 0, items[i], kept) >= 0)
        continue;
      kept++;
      size_t l = strlen(items[i]);
      if (len)
        out[len++] = ',';
      memcpy(out + len, items[i], l);
      len += l;
    }
  }
  out[len] = '\0';
  return out;
}

typedef struct alter_result {
  int16_t error;
  char msg[512];
} alter_result_t;

/* Records why the resource is refused; returns 1 (refused). */
static int fail(alter_result_t *res, int16_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(alter_result_t *res, int16_t err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
  va_end(ap);
  res->error = err;
  return 1;
}

/* Checks the values this request touched: schema, server bounds, and the
 * heartbeat/session rule on the entity's resolved values (n live pairs). */
static int validate(dc_req_t *r, const dc_scope_ent_t *ent,
                        const kvset_t *s, size_t n, const char **keys,
                        const char **values, const dc_alter_resource_t *ar,
                        alter_result_t *res) {
  const dc_broker_opts_t *o = &r->b->opts;
  char why[256];
  for (int32_t i = 0; i < ar->n_configs; i++) {
    const char *key = ar->configs[i].name;
    const char *val = kv_get(s, key);
    if (!val)
      continue; /* deleted or emptied: nothing to check */
    const dc_schema_entry_t *e = dc_schema_find(key);
    if (!e) {
      if (o->allow_unknown_keys)
        continue;
      return fail(res, DC_ERR_INVALID_CONFIG,
                  "Unknown client config '%s' (dynconfd relays only keys in "
                  "its schema; see dynconfd --allow-unknown-keys)",
                  key);
    }
    if (!dc_schema_validate(e, val, why, sizeof(why)))
      return fail(res, DC_ERR_INVALID_CONFIG, "Invalid value: %s", why);
    if (!strcmp(key, "session.timeout.ms")) {
      int64_t ms;
      dc_parse_int64(val, &ms);
      if (ms < o->session_timeout_min_ms || ms > o->session_timeout_max_ms)
        return fail(res, DC_ERR_INVALID_CONFIG,
                    "session.timeout.ms=%s is outside this server's allowed "
                    "range %lld..%lld (group.min/max.session.timeout.ms)",
                    val, (long long)o->session_timeout_min_ms,
                    (long long)o->session_timeout_max_ms);
    }
  }
  const dc_entity_t *cur = dc_configdb_get(r->b->db, ent->type, ent->name);
  if (n > (size_t)o->max_entity_configs && n > (cur ? cur->n : 0))
    return fail(res, DC_ERR_INVALID_CONFIG,
                "the entity would hold %zu configs; this server keeps at most "
                "%d per entity (max.entity.configs)",
                n, (int)o->max_entity_configs);
  if (!cur && n && dc_configdb_count(r->b->db) >= (size_t)o->max_entities)
    return fail(res, DC_ERR_POLICY_VIOLATION,
                "this server already holds %zu entities, its limit "
                "(max.entities); remove unused ones or raise the limit",
                dc_configdb_count(r->b->db));
  /* heartbeat.interval.ms < session.timeout.ms for every (user,
   * client-id) pair this change reaches (scope.c). */
  if (!dc_scope_check_pair(r->b->db, ent, n, keys, values, res->msg,
                           sizeof(res->msg)))
    return (res->error = DC_ERR_INVALID_CONFIG) != 0;
  return 0;
}

/* Cheap per-config checks, before anything is computed: counts, repeats,
 * operations and sizes. Fills names (an index of the request's config
 * names). Returns 0 when fine, 1 with res set, or a negative error. */
static int check_configs(dc_req_t *r, const dc_alter_resource_t *ar,
                         dc_strset_t *names, alter_result_t *res) {
  const dc_broker_opts_t *o = &r->b->opts;
  if (ar->n_configs > o->max_request_configs)
    return fail(res, DC_ERR_INVALID_REQUEST,
                "the resource lists %d configs; this server accepts at most "
                "%d per resource (max.request.configs)",
                (int)ar->n_configs, (int)o->max_request_configs);
  if (dc_strset_init(names, r->arena, (size_t)(ar->n_configs > 0 ? ar->n_configs : 0)))
    return DC_ERR__NOMEM;
  for (int32_t i = 0; i < ar->n_configs; i++) {
    const dc_alter_config_t *c = &ar->configs[i];
    if (dc_strset_add(names, 0, c->name, i) >= 0)
      return fail(res, DC_ERR_INVALID_REQUEST,
                  "config '%.300s' appears more than once", c->name);
    if (c->op < DC_OP_SET || c->op > DC_OP_SUBTRACT)
      return fail(res, DC_ERR_INVALID_REQUEST,
                  "unknown operation %d for config '%.300s'", c->op,
                  c->name);
    if (!c->value && c->op != DC_OP_DELETE)
      return fail(res, DC_ERR_INVALID_REQUEST,
                  "config '%.300s' has a null value, allowed only with DELETE",
                  c->name);
    if (!*c->name)
      return fail(res, DC_ERR_INVALID_REQUEST, "empty config name");
    size_t nl = strlen(c->name);
    if (nl > DC_CONFIG_NAME_MAX)
      return fail(res, DC_ERR_INVALID_CONFIG,
                  "config name '%.40s...' is %zu bytes; at most %d are "
                  "accepted",
                  c->name, nl, DC_CONFIG_NAME_MAX);
    size_t vl = c->value ? strlen(c->value) : 0;
    size_t vmax = dc_schema_value_max(dc_schema_find(c->name));
    if (vl > vmax)
      return fail(res, DC_ERR_INVALID_CONFIG,
                  "the value of '%s' is %zu bytes; at most %zu are accepted",
                  c->name, vl, vmax);
  }
  return 0;
}

/* The request's operation on key, or dflt when the request names it not. */
static int8_t op_of(const dc_alter_resource_t *ar, const dc_strset_t *names,
                    const char *key, int8_t dflt) {
  int32_t j = dc_strset_find(names, 0, key);
  return j >= 0 ? ar->configs[j].op : dflt;
}

/* Applies the request's operations to s (which starts from cur when
 * incremental). 0, 1 with res set, or a negative error. */
static int apply_ops(dc_req_t *r, const dc_alter_resource_t *ar,
                     const dc_scope_ent_t *ent, kvset_t *s,
                     alter_result_t *res) {
  for (int32_t i = 0; i < ar->n_configs; i++) {
    const dc_alter_config_t *c = &ar->configs[i];
    if (c->op == DC_OP_SET) {
      kv_put(s, c->name, c->value);
    } else if (c->op == DC_OP_DELETE) {
      kv_put(s, c->name, NULL);
    } else {
      const dc_schema_entry_t *e = dc_schema_find(c->name);
      if (!e || e->type != DC_TYPE_LIST) {
        fail(res, DC_ERR_INVALID_CONFIG,
             "%s applies only to LIST configs; '%s' is not one",
             c->op == DC_OP_APPEND ? "APPEND" : "SUBTRACT", c->name);
        return 1;
      }
      /* The list starts from what the entity has now: its own value,
       * else what it inherits (scope.c). */
      const char *base = kv_get(s, c->name);
      if (!base)
        base = dc_scope_inherited(r->b->db, ent, c->name);
      char *nv = list_apply(r->arena, base ? base : "", c->value,
                            c->op == DC_OP_APPEND);
      if (!nv)
        return DC_ERR__NOMEM;
      kv_put(s, c->name, *nv ? nv : NULL); /* empty: back to the default */
    }
  }
  return 0;
}

/* Audit rows: every key whose value differs from cur. NULL on OOM. */
static dc_store_change_t *changes(dc_req_t *r, const dc_alter_resource_t *ar,
                                  const dc_strset_t *names,
                                  const dc_entity_t *cur, const kvset_t *s,
                                  size_t n, const char **keys,
                                  const char **values, size_t *nch) {
  size_t ncur = cur ? cur->n : 0;
  dc_store_change_t *ch = dc_arena_alloc(r->arena, (ncur + n + 1) * sizeof(*ch));
  if (!ch)
    return NULL;
  *nch = 0;
  for (size_t i = 0; i < n; i++) {
    const char *old = dc_entity_value(cur, keys[i]);
    if (old && !strcmp(old, values[i]))
      continue;
    ch[(*nch)++] = (dc_store_change_t){
        keys[i], op_of(ar, names, keys[i], DC_OP_SET), old, values[i]};
  }
  for (size_t i = 0; i < ncur; i++)
    if (!kv_get(s, cur->keys[i]))
      ch[(*nch)++] = (dc_store_change_t){
          cur->keys[i], op_of(ar, names, cur->keys[i], DC_OP_DELETE),
          cur->values[i], NULL};
  return ch;
}

/* Names and authorizes the resource. 0 when it may be altered, 1 with
 * res set otherwise. */
static int admit(dc_req_t *r, const dc_alter_resource_t *ar,
                 dc_scope_ent_t *ent, alter_result_t *res) {
  int8_t t = ar->resource_type;
  char why[700]; /* naming and authorization errors */
  if (t != DC_RES_CLIENT && t != DC_RES_USER && t != DC_RES_BROKER)
    return fail(res, DC_ERR_INVALID_REQUEST, "%s", dc_cfg_type_error(t));
  /* The entity is named and authorized before anything else is looked
   * at, so a denied principal learns nothing about its values. */
  if (t != DC_RES_BROKER &&
      dc_scope_ent_init(ent, t, ar->resource_name, why, sizeof(why)))
    return fail(res, DC_ERR_INVALID_REQUEST, "%s", why);
  if (!dc_broker_authorized(r, DC_ACL_ALTER, t, ar->resource_name, why,
                            sizeof(why)))
    return fail(res, DC_ERR_CLUSTER_AUTHORIZATION_FAILED, "%s", why);
  if (t == DC_RES_BROKER)
    return fail(res, DC_ERR_INVALID_REQUEST,
                "BROKER configs of dynconfd are read-only; set them with "
                "dynconfd's flags or --config file");
  return 0;
}

/* One resource's accepted alter: applied in memory, waiting for the
 * request's single store commit (or its undoing). */
typedef struct pending {
  int32_t index; /* in the request */
  dc_store_commit_t commit;
  dc_entity_t old; /* the entity's set before, in arena memory */
} pending_t;

/* An arena copy of e (NULL: an empty set named name); NULL on OOM. */
static bool snapshot(dc_arena_t *a, const dc_entity_t *e, int8_t type,
                     const char *name, dc_entity_t *out) {
  size_t n = e ? e->n : 0;
  *out = (dc_entity_t){type, dc_arena_strdup(a, name), n,
                       dc_arena_alloc(a, (n + 1) * sizeof(char *)),
                       dc_arena_alloc(a, (n + 1) * sizeof(char *))};
  if (!out->name || !out->keys || !out->values)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!(out->keys[i] = dc_arena_strdup(a, e->keys[i])) ||
        !(out->values[i] = dc_arena_strdup(a, e->values[i])))
      return false;
  return true;
}

/* A resource's new override set, built in arena memory and not yet
 * applied: s indexes it, keys/values hold its n live pairs. */
typedef struct staged {
  kvset_t s;
  size_t n;
  const char **keys, **values;
} staged_t;

/* Copies the entity's current set into cur, then builds the new set in
 * st: from the copy when incremental (else from nothing), with the
 * request's operations applied. The copy comes first because the new
 * set, its audit rows and an undo all point into it, and it outlives the
 * entity's replacement. 0, 1 with res set, or a negative error. */
static int stage_alter(dc_req_t *r, const dc_alter_resource_t *ar,
                       const dc_scope_ent_t *ent, bool incremental,
                       dc_entity_t *cur, staged_t *st, alter_result_t *res) {
  int8_t t = ar->resource_type;
  if (!snapshot(r->arena, dc_configdb_get(r->b->db, t, ent->name), t,
                ent->name, cur))
    return DC_ERR__NOMEM;
  size_t ncur = cur->n, cap = ncur + (size_t)ar->n_configs;
  st->keys = dc_arena_alloc(r->arena, (cap + 1) * sizeof(*st->keys));
  st->values = dc_arena_alloc(r->arena, (cap + 1) * sizeof(*st->values));
  if (!st->keys || !st->values || kv_init(&st->s, r->arena, cap))
    return DC_ERR__NOMEM;
  if (incremental)
    for (size_t i = 0; i < ncur; i++)
      kv_put(&st->s, cur->keys[i], cur->values[i]);
  int rc = apply_ops(r, ar, ent, &st->s, res);
  if (rc)
    return rc;
  st->n = kv_live(&st->s, st->keys, st->values);
  return 0;
}

/* Counts rows against the request's store-write budget (which bounds
 * the single commit every resource shares); refuses the resource, with
 * res set, when they do not fit. */
static bool within_write_budget(dc_req_t *r, size_t rows, size_t *writes,
                                alter_result_t *res) {
  size_t max = (size_t)r->b->opts.max_request_writes;
  if (*writes + rows > max) {
    fail(res, DC_ERR_INVALID_REQUEST,
         "this change would take the request past the %zu store writes it "
         "may make (max.request.writes); send it in a request of its own or "
         "with fewer resources",
         max);
    return false;
  }
  *writes += rows;
  return true;
}

/* Replaces the entity in memory with the staged set and describes the
 * store commit that will record it in p (p->old is the set before). A
 * resource that changes nothing commits nothing. 0 (refusals go to res)
 * or a negative error. */
static int apply_staged(dc_req_t *r, const dc_alter_resource_t *ar,
                        const dc_strset_t *names, bool incremental,
                        const staged_t *st, pending_t *p, size_t *writes,
                        alter_result_t *res) {
  const dc_entity_t *cur = &p->old;
  int8_t t = ar->resource_type;
  size_t nch;
  dc_store_change_t *ch = changes(r, ar, names, cur, &st->s, st->n, st->keys,
                                  st->values, &nch);
  if (!ch)
    return DC_ERR__NOMEM;
  if (nch == 0 ||
      !within_write_budget(r, cur->n + st->n + nch, writes, res))
    return 0;
  if (dc_configdb_replace(r->b->db, t, cur->name, st->n, st->keys,
                          st->values)) {
    fail(res, DC_ERR_UNKNOWN_SERVER_ERROR,
         "out of memory applying the change; nothing was changed");
    return 0;
  }
  p->commit = (dc_store_commit_t){
      .resource_type = t,
      .entity = cur->name,
      .principal = r->conn->principal ? r->conn->principal : "User:ANONYMOUS",
      .peer = r->conn->peer ? r->conn->peer : "",
      .api = incremental ? "IncrementalAlterConfigs" : "AlterConfigs",
      .n_configs = st->n,
      .keys = st->keys,
      .values = st->values,
      .n_changes = nch,
      .changes = ch,
  };
  return 0;
}

/* Computes and validates one resource; unless validate_only, applies it
 * in memory and describes its commit in *p (p->index stays -1 when there
 * is nothing to commit). */
static int alter_one(dc_req_t *r, const dc_alter_resource_t *ar,
                     bool incremental, bool validate_only,
                     alter_result_t *res, pending_t *p, size_t *writes) {
  dc_scope_ent_t ent;
  dc_strset_t names;
  staged_t st;
  int rc = admit(r, ar, &ent, res);
  if (!rc)
    rc = check_configs(r, ar, &names, res);
  if (!rc)
    rc = stage_alter(r, ar, &ent, incremental, &p->old, &st, res);
  if (rc)
    return rc < 0 ? rc : 0;
  if (validate(r, &ent, &st.s, st.n, st.keys, st.values, ar, res) ||
      validate_only)
    return 0;
  return apply_staged(r, ar, &names, incremental, &st, p, writes, res);
}

/* Stores every applied alter of the request in one commit. If the store
 * refuses, the alters are undone in memory (newest first) and each of
 * their resources answers why. */
static int commit_pending(dc_req_t *r, pending_t *p, size_t np,
                          dc_alter_configs_resp_t *resp) {
  if (!np || !r->b->store)
    return 0;
  dc_store_commit_t *c = dc_arena_alloc(r->arena, np * sizeof(*c));
  if (!c)
    return DC_ERR__NOMEM;
  for (size_t i = 0; i < np; i++)
    c[i] = p[i].commit;
  char why[512] = "", msg[700];
  int64_t t0 = dc_mono_us();
  int failed = dc_store_commit_many(r->b->store, c, np, why, sizeof(why));
  dc_histogram_observe(&r->b->metrics.store_commit,
                       (double)(dc_mono_us() - t0) / 1e6);
  if (!failed)
    return 0;
  r->b->metrics.store_commit_failed++;
  /* Another replica writes now: the client may retry there (nothing of
   * it was written). A commit that did not finish in time may still be
   * written: the client is told it does not know. */
  int16_t code = failed == DC_STORE_NOT_WRITER ? DC_ERR_NOT_CONTROLLER
                 : failed == DC_STORE_UNSURE   ? DC_ERR_REQUEST_TIMED_OUT
                                               : DC_ERR_UNKNOWN_SERVER_ERROR;
  snprintf(msg, sizeof(msg),
           failed == DC_STORE_UNSURE
               ? "the change may or may not have been applied: its store "
                 "may still write it, and it is served once that is known: %s"
               : "the change could not be stored and was not applied: %s",
           why);
  char *m = dc_arena_strdup(r->arena, msg);
  if (!m)
    return DC_ERR__NOMEM;
  for (size_t i = np; i-- > 0;) {
    const dc_entity_t *o = &p[i].old;
    if (dc_configdb_replace(r->b->db, o->type, o->name, o->n,
                            (const char *const *)o->keys,
                            (const char *const *)o->values))
      dc_log(DC_LOG_ERR, "out of memory undoing an unstored change of '%s'; "
                         "restart dynconfd to serve the stored configs",
             o->name);
    resp->responses[p[i].index].error_code = code;
    resp->responses[p[i].index].error_message = m;
  }
  return 0;
}

/* The metrics of an answered alter: resources applied or refused, and
 * the request's error (its first failing resource's). */
static void count_alters(dc_req_t *r, const dc_alter_configs_resp_t *resp,
                         bool validate_only) {
  for (int32_t i = 0; i < resp->n_responses; i++) {
    int16_t e = resp->responses[i].error_code;
    if (!r->error)
      r->error = e;
    if (e)
      r->b->metrics.alters_refused++;
    else if (!validate_only)
      r->b->metrics.alters_applied++;
  }
}

/* Marks every resource listed more than once (each occurrence). NULL on
 * OOM. */
static bool *repeated_resources(dc_req_t *r, const dc_alter_configs_req_t *req) {
  size_t n = (size_t)req->n_resources;
  bool *dup = dc_arena_alloc(r->arena, (n ? n : 1) * sizeof(*dup));
  dc_strset_t set;
  if (!dup || dc_strset_init(&set, r->arena, n))
    return NULL;
  for (size_t i = 0; i < n; i++) {
    const dc_alter_resource_t *ar = &req->resources[i];
    int32_t j = dc_strset_add(&set, ar->resource_type, ar->resource_name,
                              (int32_t)i);
    if (j >= 0)
      dup[i] = dup[j] = true;
  }
  return dup;
}

static int handle_alter(dc_req_t *r, bool incremental) {
  int16_t v = r->hdr->api_version;
  dc_alter_configs_req_t req = {0};
  int err = dc_broker_forward_alter(r);
  if (err < 0 || r->deferred)
    return err < 0 ? err : 0;
  err = incremental
                ? dc_incremental_alter_configs_req_decode(r->rd, v, &req)
                : dc_alter_configs_req_decode(r->rd, v, &req);
  if (err)
    return r->rd->err ? r->rd->err : err;
  size_t reserve = 16;
  for (int32_t i = 0; i < req.n_resources; i++)
    reserve += dc_cfg_error_result_bound(req.resources[i].resource_name);
  if ((err = dc_cfg_answer_fits(r, reserve)))
    return err;
  dc_alter_configs_resp_t resp = {0};
  resp.n_responses = req.n_resources;
  resp.responses = dc_arena_alloc(r->arena, (size_t)req.n_resources *
                                                sizeof(*resp.responses));
  /* Every resource answers the same error: too many, or fail_msg. */
  int16_t all_code = r->fail_msg ? r->fail_code : DC_ERR_INVALID_REQUEST;
  const char *too_many =
      r->fail_msg ? r->fail_msg : dc_cfg_too_many_resources(r, req.n_resources);
  bool *dup = too_many ? NULL : repeated_resources(r, &req);
  size_t np = 0, writes = 0;
  pending_t *pend = dc_arena_alloc(
      r->arena, (size_t)(req.n_resources ? req.n_resources : 1) * sizeof(*pend));
  if (!resp.responses || !pend || (!too_many && !dup))
    return DC_ERR__NOMEM;
  for (int32_t i = 0; i < req.n_resources; i++) {
    const dc_alter_resource_t *ar = &req.resources[i];
    dc_alter_result_t *out = &resp.responses[i];
    out->resource_type = ar->resource_type;
    out->resource_name = ar->resource_name;
    alter_result_t res = {0, ""};
    if (too_many)
      fail(&res, all_code, "%s", too_many);
    else if (dup[i])
      fail(&res, DC_ERR_INVALID_REQUEST,
           "resource listed more than once in one request");
    else if ((err = alter_one(r, ar, incremental, req.validate_only, &res,
                              &pend[np], &writes)))
      return err;
    else if (pend[np].commit.entity)
      pend[np++].index = i;
    out->error_code = res.error;
    if (res.error && !(out->error_message = dc_arena_strdup(r->arena, res.msg)))
      return DC_ERR__NOMEM;
  }
  if ((err = commit_pending(r, pend, np, &resp)))
    return err;
  if (np && !req.validate_only)
    dc_broker_watch_changed(r->b); /* wakes the clients it affects */
  count_alters(r, &resp, req.validate_only);
  return incremental
             ? dc_incremental_alter_configs_resp_encode(r->out, v, &resp)
             : dc_alter_configs_resp_encode(r->out, v, &resp);
}

int dc_handle_alter_configs(dc_req_t *r) { return handle_alter(r, false); }
int dc_handle_incremental_alter_configs(dc_req_t *r) {
  return handle_alter(r, true);
}
