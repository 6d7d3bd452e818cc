/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's reading of one DescribeConfigs answer: pure (a response
 * body in, a normalized set or a sentence out, no I/O), so that whatever
 * a server sends is judged here and can be fuzzed (tests/fuzz).
 */
#include "agent/agent_int.h"
#include "codec/proto.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One entry of either answer (DescribeConfigs or Watch), as read. */
typedef struct entry_view {
  const char *name, *value;
  int source;
} entry_view_t;

/* An entry no server may send: no name, or a source no DescribeConfigs
 * version defines (0-8 in Kafka, 9-10 dynconfd's user sources). */
static bool entry_malformed(const entry_view_t *e, char *errstr,
                            size_t errstr_size) {
  if (!e->name)
    dc_seterr(errstr, errstr_size, "server answered a config without a name");
  else if (e->source < DC_SRC_UNKNOWN || e->source > DC_SRC_DYNAMIC_USER_CLIENT)
    dc_seterr(errstr, errstr_size, "server answered config '%.100s' with "
             "source %d, which no DescribeConfigs version defines", e->name,
             e->source);
  else
    return false;
  return true;
}

/* Copies the entries the agent may apply into *out and normalizes it.
 * The caller has bounded n by DC_AGENT_MAX_ENTRIES. */
static dc_fetch_res_t copy_entries(const entry_view_t *ev, size_t n,
                                   dc_fetched_set_t *out, dynconf_err_t *errp,
                                   char *errstr, size_t errstr_size) {
  for (size_t i = 0; i < n; i++)
    if (entry_malformed(&ev[i], errstr, errstr_size)) {
      *errp = DYNCONF_ERR__BAD_RESPONSE;
      return FETCH_ERROR;
    }
  out->v = calloc(n ? n : 1, sizeof(*out->v));
  for (size_t i = 0; out->v && i < n; i++) {
    const entry_view_t *e = &ev[i];
    dynconf_source_t src;
    if (!e->value || !dc_source_from_wire(e->source, &src))
      continue;
    dc_fetched_t *f = &out->v[out->n++];
    f->key = strdup(e->name);
    f->value = strdup(e->value);
    f->source = src;
    if (!f->key || !f->value)
      break;
  }
  if (!out->v || (out->n && (!out->v[out->n - 1].key ||
                             !out->v[out->n - 1].value))) {
    dc_fetched_set_free(out);
    *errp = DYNCONF_ERR__NOMEM;
    dc_seterr(errstr, errstr_size, "out of memory");
    return FETCH_ERROR;
  }
  if (dc_fetched_set_normalize(out, DC_AGENT_MAX_ENTRIES, errstr,
                               errstr_size)) {
    dc_fetched_set_free(out);
    *errp = DYNCONF_ERR__BAD_RESPONSE;
    return FETCH_ERROR;
  }
  return FETCH_OK;
}

/* The count check comes before anything is copied: the agent's work stays
 * bounded whatever count the server claims. Views live in arena. */
static entry_view_t *views_alloc(int32_t n, dc_arena_t *arena,
                                 dynconf_err_t *errp, char *errstr,
                                 size_t errstr_size) {
  if (dc_fetched_count_check(n > 0 ? (size_t)n : 0, DC_AGENT_MAX_ENTRIES,
                             errstr, errstr_size)) {
    *errp = DYNCONF_ERR__BAD_RESPONSE;
    return NULL;
  }
  entry_view_t *v = dc_arena_alloc(arena, (n > 0 ? (size_t)n : 1) *
                                              sizeof(*v));
  if (!v) {
    *errp = DYNCONF_ERR__NOMEM;
    dc_seterr(errstr, errstr_size, "out of memory");
  }
  return v;
}

static dc_fetch_res_t copy_described(const dc_describe_configs_result_t *r,
                                     dc_arena_t *arena, dc_fetched_set_t *out,
                                     dynconf_err_t *errp, char *errstr,
                                     size_t errstr_size) {
  entry_view_t *v = views_alloc(r->n_configs, arena, errp, errstr,
                                errstr_size);
  if (!v)
    return FETCH_ERROR;
  for (int32_t i = 0; i < r->n_configs; i++)
    v[i] = (entry_view_t){r->configs[i].name, r->configs[i].value,
                          r->configs[i].config_source};
  return copy_entries(v, (size_t)r->n_configs, out, errp, errstr,
                      errstr_size);
}

/* Judges a decoded answer: one result, for the resource asked about. */
static dc_fetch_res_t judge_answer(const dc_agent_answer_t *want,
                                   const dc_describe_configs_resp_t *resp,
                                   dc_arena_t *arena, dc_fetched_set_t *out,
                                   dynconf_err_t *errp, char *errstr,
                                   size_t errstr_size) {
  const char *peer = want->peer;
  if (resp->n_results != 1) {
    *errp = DYNCONF_ERR__BAD_RESPONSE;
    dc_seterr(errstr, errstr_size, "%s answered %d resources, not 1", peer,
             (int)resp->n_results);
    return FETCH_ERROR;
  }
  const dc_describe_configs_result_t *r = &resp->results[0];
  if (r->error_code) {
    *errp = (dynconf_err_t)r->error_code;
    dc_seterr(errstr, errstr_size, "%s: %s", dynconf_err_name(*errp),
             r->error_message && *r->error_message
                 ? r->error_message
                 : dynconf_err_str(*errp));
    /* What a real Kafka broker answers for a type it does not know. */
    return r->error_code == DC_ERR_INVALID_REQUEST ||
                   r->error_code == DC_ERR_UNSUPPORTED_VERSION
               ? FETCH_UNSUPPORTED
               : FETCH_ERROR;
  }
  if (r->resource_type != want->resource_type || !r->resource_name ||
      strcmp(r->resource_name, want->resource_name)) {
    *errp = DYNCONF_ERR__BAD_RESPONSE;
    dc_seterr(errstr, errstr_size, "%s answered for resource %d '%.100s', not "
             "%d '%.100s'", peer, r->resource_type,
             r->resource_name ? r->resource_name : "(null)",
             want->resource_type, want->resource_name);
    return FETCH_ERROR;
  }
  return copy_described(r, arena, out, errp, errstr, errstr_size);
}

/* An answer's store position against the one the agent has seen: true
 * (with why) when the server answered from an older state; -1 is none
 * said. */
static bool older_than_seen(int64_t position, int64_t seen, const char *peer,
                            char *errstr, size_t errstr_size) {
  if (position < 0 || position >= seen)
    return false;
  dc_seterr(errstr, errstr_size, "%s answered from store position %lld, "
            "older than position %lld the agent has seen", peer,
            (long long)position, (long long)seen);
  return true;
}

dc_fetch_res_t dc_agent_answer_read(dc_rd_t *rd, dc_agent_answer_t *want,
                                    dc_fetched_set_t *out, dynconf_err_t *errp,
                                    bool *undecodable, char *errstr,
                                    size_t errstr_size) {
  dc_describe_configs_resp_t resp;
  memset(out, 0, sizeof(*out));
  *undecodable = false;
  want->position = want->config_version = -1;
  if (dc_describe_configs_resp_decode(rd, want->version, &resp)) {
    *undecodable = true;
    *errp = DYNCONF_ERR__BAD_RESPONSE;
    dc_seterr(errstr, errstr_size, "malformed DescribeConfigs v%d response "
             "from %s: %s", want->version, want->peer,
             dynconf_err_str((dynconf_err_t)rd->err));
    return FETCH_ERROR;
  }
  want->position = resp.position;
  if (resp.n_results == 1)
    want->config_version = resp.results[0].config_version;
  if (older_than_seen(resp.position, want->min_position, want->peer, errstr,
                      errstr_size)) {
    *errp = DYNCONF_ERR__BAD_RESPONSE;
    return FETCH_ERROR;
  }
  return judge_answer(want, &resp, rd->arena, out, errp, errstr,
                      errstr_size);
}

dc_watch_res_t dc_agent_watch_answer_read(dc_rd_t *rd, const char *peer,
                                          dc_watch_ask_t *ask,
                                          dc_fetched_set_t *out,
                                          dynconf_err_t *errp,
                                          bool *undecodable, char *errstr,
                                          size_t errstr_size) {
  dc_watch_resp_t resp;
  int64_t known = ask->known;
  memset(out, 0, sizeof(*out));
  *undecodable = false;
  *errp = DYNCONF_ERR__BAD_RESPONSE;
  ask->position = -1;
  if (dc_watch_resp_decode(rd, ask->v, &resp)) {
    *undecodable = true;
    dc_seterr(errstr, errstr_size, "malformed Watch v%d response from %s: %s",
              ask->v, peer, dynconf_err_str((dynconf_err_t)rd->err));
    return WATCH_FAILED;
  }
  ask->position = resp.position;
  if (resp.error_code) {
    *errp = (dynconf_err_t)resp.error_code;
    dc_seterr(errstr, errstr_size, "%s refused Watch: %s: %s", peer,
              dynconf_err_name(*errp),
              resp.error_message && *resp.error_message
                  ? resp.error_message
                  : dynconf_err_str(*errp));
    return *errp == DYNCONF_ERR_REPLICA_NOT_AVAILABLE ? WATCH_FAILED
                                                      : WATCH_REFUSED;
  }
  if (older_than_seen(ask->position, ask->min_position, peer, errstr,
                      errstr_size))
    return WATCH_FAILED;
  ask->version = resp.version;
  if (!resp.changed) {
    if (resp.version == known)
      return WATCH_UNCHANGED;
    dc_seterr(errstr, errstr_size, "%s answered Watch unchanged at version "
              "%lld, but the agent watched version %lld", peer,
              (long long)resp.version, (long long)known);
    return WATCH_FAILED;
  }
  if (resp.version == known) {
    dc_seterr(errstr, errstr_size, "%s answered Watch changed with the "
              "version the agent watched (%lld)", peer, (long long)known);
    return WATCH_FAILED;
  }
  entry_view_t *v = views_alloc(resp.n_configs, rd->arena, errp, errstr,
                                errstr_size);
  if (!v)
    return WATCH_FAILED;
  for (int32_t i = 0; i < resp.n_configs; i++)
    v[i] = (entry_view_t){resp.configs[i].name, resp.configs[i].value,
                          resp.configs[i].source};
  if (copy_entries(v, (size_t)resp.n_configs, out, errp, errstr,
                   errstr_size) != FETCH_OK)
    return WATCH_FAILED;
  *errp = DYNCONF_ERR_NO_ERROR;
  return WATCH_CHANGED;
}
