/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Kafka store's record format (see store_record.h): pure, bytes and
 * commits in and out, no I/O.
 */
#include "broker/store/store_record.h"
#include "broker/config/scope.h"
#include "codec/proto.h"
#include "common/schema.h"
#include "common/text.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The record key of an entity, "client:NAME" / "user:NAME" (caller frees). */
char *dc_log_record_key(int8_t type, const char *entity) {
  size_t n = strlen(entity) + 8;
  char *k = malloc(n);
  if (k)
    snprintf(k, n, "%s:%s", dc_scope_type_name(type), entity);
  return k;
}

static json_t *opt_string(const char *s) {
  return s ? json_string(s) : json_null();
}

/* The record value of one commit (caller frees); NULL when a key or value
 * is not valid UTF-8 (JSON cannot carry it) or memory ran out. */
char *dc_log_record_value(const dc_store_commit_t *c, int64_t time_ms) {
  json_t *v = json_object(), *cfg = json_object(), *ch = json_array();
  bool bad = !v || !cfg || !ch;
  for (size_t i = 0; !bad && i < c->n_configs; i++)
    bad = json_object_set_new(cfg, c->keys[i], json_string(c->values[i]));
  for (size_t i = 0; !bad && i < c->n_changes; i++) {
    const dc_store_change_t *x = &c->changes[i];
    bad = json_array_append_new(
        ch, json_pack("{s:s,s:i,s:o,s:o}", "key", x->key, "op", x->op, "old",
                      opt_string(x->old_value), "new",
                      opt_string(x->new_value)));
  }
  char *out = NULL;
  if (!bad &&
      !json_object_set_new(v, "type", json_string(dc_scope_type_name(c->resource_type))) &&
      !json_object_set_new(v, "name", json_string(c->entity)) &&
      !json_object_set(v, "configs", cfg) &&
      !json_object_set_new(v, "time_ms", json_integer(time_ms)) &&
      !json_object_set_new(v, "principal", opt_string(c->principal)) &&
      !json_object_set_new(v, "peer", opt_string(c->peer)) &&
      !json_object_set_new(v, "api", opt_string(c->api)) &&
      !json_object_set(v, "changes", ch))
    out = json_dumps(v, JSON_COMPACT);
  json_decref(v);
  json_decref(cfg);
  json_decref(ch);
  return out;
}

static bool listener_ok(const char *name, const char *host, json_int_t port) {
  return *name && strlen(name) <= DC_LOG_LISTENER_NAME_MAX && *host &&
         strlen(host) <= DC_LOG_HOST_MAX && port > 0 && port < 65536;
}

char *dc_log_heartbeat_value(int32_t node, const dc_store_listener_t *l,
                             size_t n, const uint8_t *key, bool leaving) {
  if (n > DC_LOG_MAX_LISTENERS)
    return NULL;
  json_t *ls = json_array();
  bool bad = !ls;
  for (size_t i = 0; !bad && i < n; i++)
    bad = !listener_ok(l[i].name, l[i].host, l[i].port) ||
          json_array_append_new(ls, json_pack("{s:s,s:s,s:i}", "name",
                                              l[i].name, "host", l[i].host,
                                              "port", (int)l[i].port));
  json_t *v = bad ? NULL : json_pack("{s:i,s:O,s:b}", "node", (int)node,
                                     "listeners", ls, "leaving", leaving);
  char hex[DC_REPLICA_KEY_HEX_LEN + 1];
  if (v && key) {
    dc_replica_key_hex(key, hex);
    if (json_object_set_new(v, "key", json_string(hex))) {
      json_decref(v);
      v = NULL;
    }
  }
  char *out = v ? json_dumps(v, JSON_COMPACT) : NULL;
  json_decref(v);
  json_decref(ls);
  return out;
}

void dc_log_record_free(dc_log_record_t *p) {
  json_decref(p->root);
  free(p->name);
  free(p->keys);
  free(p->values);
  free(p->changes);
  free(p->listeners);
  memset(p, 0, sizeof(*p));
}

/* A tombstone: the key names the entity. */
static int parse_tombstone(const void *key, size_t key_len,
                           dc_log_record_t *p, char *why, size_t why_size) {
  const char *k = key;
  const char *colon = k ? memchr(k, ':', key_len) : NULL;
  if (!colon) {
    dc_seterr(why, why_size, "a tombstone without a \"type:name\" key");
    return -1;
  }
  size_t tl = (size_t)(colon - k);
  int8_t t = tl == 6 && !memcmp(k, "client", 6)   ? DC_RES_CLIENT
             : tl == 4 && !memcmp(k, "user", 4) ? DC_RES_USER
                                                : 0;
  p->name = strndup(colon + 1, key_len - tl - 1);
  if (!t || !p->name) {
    dc_seterr(why, why_size, "a tombstone for an unknown entity type");
    return -1;
  }
  p->c = (dc_store_commit_t){.resource_type = t, .entity = p->name};
  return 0;
}

/* The configs and changes arrays of a record value. */
static int parse_lists(json_t *cfg, json_t *ch, dc_log_record_t *p, char *why,
                       size_t why_size) {
  size_t n = json_object_size(cfg), m = json_array_size(ch);
  p->keys = calloc(n ? n : 1, sizeof(char *));
  p->values = calloc(n ? n : 1, sizeof(char *));
  p->changes = calloc(m ? m : 1, sizeof(*p->changes));
  if (!p->keys || !p->values || !p->changes) {
    dc_seterr(why, why_size, "out of memory");
    return -1;
  }
  const char *k;
  json_t *v;
  json_object_foreach(cfg, k, v) {
    char bad[200];
    if (!json_is_string(v)) {
      dc_seterr(why, why_size, "config '%.100s' is not a string", k);
      return -1;
    }
    if (!*k || strlen(k) > DC_CONFIG_NAME_MAX ||
        !dc_schema_validate(dc_schema_find(k), json_string_value(v), bad,
                            sizeof(bad))) {
      dc_seterr(why, why_size, "config '%.100s': %s", k,
               *k && strlen(k) <= DC_CONFIG_NAME_MAX ? bad : "bad key");
      return -1;
    }
    p->keys[p->c.n_configs] = k;
    p->values[p->c.n_configs++] = json_string_value(v);
  }
  for (size_t i = 0; i < m; i++) {
    json_t *e = json_array_get(ch, i), *old = NULL, *new_ = NULL;
    const char *key = NULL;
    int op = 0;
    if (json_unpack(e, "{s:s,s:i,s:o,s:o}", "key", &key, "op", &op, "old",
                    &old, "new", &new_) ||
        (!json_is_null(old) && !json_is_string(old)) ||
        (!json_is_null(new_) && !json_is_string(new_))) {
      dc_seterr(why, why_size, "change %zu is malformed", i);
      return -1;
    }
    p->changes[i] = (dc_store_change_t){.key = key, .op = (int8_t)op,
                                        .old_value = json_string_value(old),
                                        .new_value = json_string_value(new_)};
  }
  p->c.keys = p->keys;
  p->c.values = p->values;
  p->c.changes = p->changes;
  p->c.n_changes = m;
  return 0;
}

/* A heartbeat: its writer (header) must be the node it names. */
static int parse_heartbeat(const void *value, size_t value_len,
                           dc_log_record_t *p, char *why, size_t why_size) {
  json_error_t je;
  json_t *ls = NULL;
  const char *key = NULL;
  int node = -1, leaving = 0;
  p->heartbeat = true;
  p->root = value ? json_loadb(value, value_len, JSON_REJECT_DUPLICATES, &je)
                  : NULL;
  if (!p->root || json_unpack(p->root, "{s:i,s:o,s:b,s?s}", "node", &node,
                              "listeners", &ls, "leaving", &leaving, "key",
                              &key) ||
      !json_is_array(ls) || node != p->node || node < 0) {
    dc_seterr(why, why_size, "a heartbeat that is not node %d's own",
             (int)p->node);
    return -1;
  }
  if (key && dc_replica_key_unhex(key, p->key)) {
    dc_seterr(why, why_size, "node %d's key is not %d hex digits", node,
              DC_REPLICA_KEY_HEX_LEN);
    return -1;
  }
  p->has_key = key != NULL;
  size_t n = json_array_size(ls);
  if (n > DC_LOG_MAX_LISTENERS ||
      !(p->listeners = calloc(n ? n : 1, sizeof(*p->listeners)))) {
    dc_seterr(why, why_size, "a heartbeat with %zu listeners (at most %d)", n,
             DC_LOG_MAX_LISTENERS);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const char *name, *host;
    json_int_t port;
    if (json_unpack(json_array_get(ls, i), "{s:s,s:s,s:I}", "name", &name,
                    "host", &host, "port", &port) ||
        !listener_ok(name, host, port)) {
      dc_seterr(why, why_size, "node %d's listener %zu is malformed",
               (int)node, i);
      return -1;
    }
    p->listeners[i] = (dc_store_listener_t){name, host, (int32_t)port};
  }
  p->n_listeners = n;
  p->leaving = leaving;
  return 0;
}

/* A commit record: the JSON value of an entity's configs and changes. */
static int parse_commit(const void *value, size_t value_len,
                        dc_log_record_t *p, char *why, size_t why_size) {
  json_error_t je;
  p->root = json_loadb(value, value_len, JSON_REJECT_DUPLICATES, &je);
  const char *t = NULL, *name = NULL;
  json_t *cfg = NULL, *ch = NULL, *princ = NULL, *peer = NULL, *api = NULL;
  json_int_t time_ms = 0;
  if (!p->root) {
    dc_seterr(why, why_size, "not JSON (%s)", je.text);
    return -1;
  }
  if (json_unpack(p->root, "{s:s,s:s,s:o,s:I,s?o,s?o,s?o,s:o}", "type", &t,
                  "name", &name, "configs", &cfg, "time_ms", &time_ms,
                  "principal", &princ, "peer", &peer, "api", &api, "changes",
                  &ch) ||
      !json_is_object(cfg) || !json_is_array(ch)) {
    dc_seterr(why, why_size, "not a dynconf record");
    return -1;
  }
  int8_t rt = !strcmp(t, "client") ? DC_RES_CLIENT
              : !strcmp(t, "user") ? DC_RES_USER : 0;
  dc_scope_ent_t se;
  char ewhy[300];
  if (!rt || dc_scope_ent_init(&se, rt, name, ewhy, sizeof(ewhy)) ||
      strcmp(se.name, name)) {
    dc_seterr(why, why_size, "entity %.20s '%.100s' is not valid", t, name);
    return -1;
  }
  p->c = (dc_store_commit_t){.resource_type = rt, .entity = name,
                             .principal = json_string_value(princ),
                             .peer = json_string_value(peer),
                             .api = json_string_value(api),
                             .time_ms = time_ms};
  return parse_lists(cfg, ch, p, why, why_size);
}

int dc_log_record_parse(const void *key, size_t key_len, const void *value,
                        size_t value_len, int64_t epoch, int32_t node,
                        dc_log_record_t *p, char *why, size_t why_size) {
  memset(p, 0, sizeof(*p));
  p->epoch = epoch;
  p->node = node;
  if (key && key_len == strlen(DC_LOG_CLAIM_KEY) &&
      !memcmp(key, DC_LOG_CLAIM_KEY, key_len)) {
    p->claim = true;
    if (p->epoch > 0 && p->node >= 0)
      return 0;
    dc_seterr(why, why_size, "a claim without its epoch and node");
    return -1;
  }
  size_t np = strlen(DC_LOG_NODE_PREFIX);
  if (key && key_len > np && !memcmp(key, DC_LOG_NODE_PREFIX, np)) {
    char want[32];
    int wn = snprintf(want, sizeof(want), DC_LOG_NODE_PREFIX "%d", (int)node);
    if ((size_t)wn != key_len || memcmp(key, want, key_len)) {
      p->heartbeat = true;
      dc_seterr(why, why_size, "a heartbeat keyed for another node than its "
               "writer %d", (int)node);
      return -1;
    }
    return parse_heartbeat(value, value_len, p, why, why_size);
  }
  if (!value)
    return parse_tombstone(key, key_len, p, why, why_size);
  return parse_commit(value, value_len, p, why, why_size);
}

/* ---- the history topic --------------------------------------------------- */

static int8_t type_of(const char *t) {
  return !strcmp(t, "client") ? DC_RES_CLIENT
         : !strcmp(t, "user") ? DC_RES_USER : 0;
}

int dc_log_history_start(dc_log_history_t *h, const dc_audit_row_t *row) {
  h->offset = row->log_offset;
  h->changes = json_array();
  h->root = json_pack("{s:I,s:s,s:s,s:I,s:o,s:o,s:o}", "offset",
                      (json_int_t)row->log_offset, "type",
                      dc_scope_type_name(row->resource_type), "name",
                      row->entity, "time_ms", (json_int_t)row->time_ms,
                      "principal", opt_string(row->principal), "peer",
                      opt_string(row->peer), "api", opt_string(row->api));
  if (!h->root || !h->changes ||
      json_object_set(h->root, "changes", h->changes)) {
    dc_log_history_free(h);
    return -1;
  }
  return dc_log_history_add(h, row);
}

int dc_log_history_add(dc_log_history_t *h, const dc_audit_row_t *row) {
  return json_array_append_new(
      h->changes, json_pack("{s:s,s:i,s:o,s:o}", "key", row->key, "op",
                            row->op, "old", opt_string(row->old_value),
                            "new", opt_string(row->new_value)));
}

char *dc_log_history_value(const dc_log_history_t *h) {
  return json_dumps(h->root, JSON_COMPACT);
}

char *dc_log_history_key(const dc_log_history_t *h) {
  json_t *t = json_object_get(h->root, "type");
  return dc_log_record_key(type_of(json_string_value(t)),
                           json_string_value(json_object_get(h->root, "name")));
}

void dc_log_history_free(dc_log_history_t *h) {
  json_decref(h->root);
  json_decref(h->changes);
  h->root = h->changes = NULL;
}

int dc_log_history_parse(const void *value, size_t len, json_t **root,
                         dc_store_history_cb *cb, void *opaque, char *why,
                         size_t why_size) {
  json_error_t je;
  json_t *princ, *peer, *api, *ch;
  const char *t, *name;
  json_int_t off, time_ms;
  *root = value ? json_loadb(value, len, JSON_REJECT_DUPLICATES, &je) : NULL;
  if (!*root ||
      json_unpack(*root, "{s:I,s:s,s:s,s:I,s:o,s:o,s:o,s:o}", "offset", &off,
                  "type", &t, "name", &name, "time_ms", &time_ms,
                  "principal", &princ, "peer", &peer, "api", &api,
                  "changes", &ch) ||
      !type_of(t) || !json_is_array(ch)) {
    dc_seterr(why, why_size, "not a dynconf history record");
    return -1;
  }
  for (size_t i = 0; i < json_array_size(ch); i++) {
    json_t *old = NULL, *new_ = NULL;
    const char *key;
    int op;
    if (json_unpack(json_array_get(ch, i), "{s:s,s:i,s:o,s:o}", "key", &key,
                    "op", &op, "old", &old, "new", &new_)) {
      dc_seterr(why, why_size, "change %zu is malformed", i);
      return -1;
    }
    dc_audit_row_t row = {.seq = (int64_t)off, .time_ms = (int64_t)time_ms,
                          .principal = json_string_value(princ),
                          .peer = json_string_value(peer),
                          .api = json_string_value(api),
                          .resource_type = type_of(t), .entity = name,
                          .key = key, .op = (int8_t)op,
                          .old_value = json_string_value(old),
                          .new_value = json_string_value(new_),
                          .log_offset = (int64_t)off};
    int r = cb(opaque, &row);
    if (r)
      return r;
  }
  return 0;
}
