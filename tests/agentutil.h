/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the agent end-to-end tests that run a real dynconfd
 * and librdkafka (test_agent_e2e.c, test_agent_failures.c,
 * test_agent_wire.c, test_agent_security.c, test_managed_producer.c,
 * test_managed_consumer.c, test_cert_rotation.c, ...):
 *   - setting client configs on dynconfd with IncrementalAlterConfigs
 *     through our codec (one request per change set, so the agent sees a
 *     whole set in one fetch);
 *   - application confs, agents (with a counting change/log callback, or
 *     the test's own);
 *   - reading librdkafka conf values, numbers out of stats JSON and an
 *     agent's effective values; waiting for an agent's statistics;
 *   - the librdkafka mock cluster.
 * A proxy that records group requests in front of a mock broker is
 * tests/kproxy.h.
 *
 * Header-only: every function is static inline so a test that uses only
 * some of them builds with -Werror.
 * Ownership: au_* functions that return allocated objects say so.
 */
#ifndef DC_AGENTUTIL_H
#define DC_AGENTUTIL_H

#include "tap.h"
#include "testutil.h"

#include "codec/proto.h"
#include "client/kclient.h"
#include "dynconf.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <stdarg.h>

/* ---- dynconfd ------------------------------------------------------------ */

/* dc_tu_scratch() for a test program that starts its own dynconfds; a
 * failure is reported as a failing check "tmpdir" (-1). */
static inline int au_scratch(char *dir, size_t dir_size, char *data,
                             size_t data_size, char *log, size_t log_size) {
  if (!dc_tu_scratch(dir, dir_size, data, data_size, log, log_size))
    return 0;
  ok(0, "tmpdir");
  return -1;
}

static inline int au_enc_incremental_(dc_buf_t *b, int16_t v, const void *req) {
  return dc_incremental_alter_configs_req_encode(b, v, req);
}

/* Alters one client entity ("<default>" = the default entity) of the
 * dynconfd on 127.0.0.1:port in ONE IncrementalAlterConfigs request.
 * spec: "k=v" sets, "-k" deletes, comma separated. Returns the
 * per-resource error code (0 = done), -1 when the request failed. */
static inline int au_alter(int port, const char *entity, const char *spec) {
  char bs[64], errstr[512] = "", buf[1024];
  dc_alter_config_t ops[16];
  int32_t n = 0;
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  snprintf(buf, sizeof(buf), "%s", spec);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t && n < 16;
       t = strtok_r(NULL, ",", &save)) {
    if (*t == '-') {
      ops[n++] = (dc_alter_config_t){.name = t + 1, .op = DC_OP_DELETE};
      continue;
    }
    char *eq = strchr(t, '=');
    if (!eq)
      return -1;
    *eq = '\0';
    ops[n++] = (dc_alter_config_t){.name = t, .op = DC_OP_SET, .value = eq + 1};
  }
  dc_alter_resource_t r = {.resource_type = DC_RES_CLIENT,
                           .resource_name = (char *)entity,
                           .n_configs = n,
                           .configs = ops};
  dc_alter_configs_req_t req = {.n_resources = 1, .resources = &r};
  dc_kclient_t *kc = dc_kclient_new("dynconf-test-admin"); /* freed below */
  dc_arena_t arena;
  dc_arena_init(&arena);
  int rc = -1;
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  int16_t v = -1;
  if (!kc || dc_kclient_connect(kc, bs, 5000, errstr, sizeof(errstr)) ||
      dc_kclient_api_versions(kc, 5000, errstr, sizeof(errstr)) ||
      (v = dc_kclient_pick_version(kc, DC_API_INCREMENTAL_ALTER_CONFIGS)) < 0 ||
      dc_kclient_request(kc, DC_API_INCREMENTAL_ALTER_CONFIGS, v,
                         au_enc_incremental_, &req, 5000, &rd, &arena, errstr,
                         sizeof(errstr))) {
    diag("alter %s %s: %s", entity, spec, errstr);
    goto out;
  }
  if (dc_incremental_alter_configs_resp_decode(&rd, v, &resp) ||
      resp.n_responses != 1) {
    diag("alter %s %s: bad response", entity, spec);
    goto out;
  }
  rc = resp.responses[0].error_code;
  if (rc)
    diag("alter %s %s: error %d %s", entity, spec, rc,
         resp.responses[0].error_message ? resp.responses[0].error_message
                                         : "");
out:
  dc_arena_free(&arena);
  dc_kclient_destroy(kc);
  return rc;
}

/* ---- librdkafka confs ------------------------------------------------------
 */

/* Value of a (global or topic-level) property in a librdkafka conf, or
 * "(unset)". acks lives in the default topic conf. */
static inline void au_conf_val(const rd_kafka_conf_t *c, const char *name,
                               char *out, size_t n) {
  size_t sz = n;
  if (rd_kafka_conf_get(c, name, out, &sz) == RD_KAFKA_CONF_OK)
    return;
  const rd_kafka_topic_conf_t *tc =
      rd_kafka_conf_get_default_topic_conf((rd_kafka_conf_t *)c);
  rd_kafka_topic_conf_t *tmp = tc ? NULL : rd_kafka_topic_conf_new();
  sz = n;
  if (rd_kafka_topic_conf_get(tc ? tc : tmp, name, out, &sz) !=
      RD_KAFKA_CONF_OK)
    snprintf(out, n, "(unset)");
  if (tmp)
    rd_kafka_topic_conf_destroy(tmp);
}

/* acks as librdkafka prints it: "all" and "-1" are the same setting. */
static inline const char *au_acks_norm(const char *v) {
  return !strcmp(v, "all") ? "-1" : v;
}

/* Sets the NULL-terminated (key, value) pairs of ap on c; a refused one is
 * reported with diag(). */
static inline void au_conf_set_pairs(rd_kafka_conf_t *c, va_list ap) {
  char e[256];
  for (const char *k; (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    if (rd_kafka_conf_set(c, k, v, e, sizeof(e)) != RD_KAFKA_CONF_OK)
      diag("app conf %s=%s: %s", k, v, e);
  }
}

/* Application config: bootstrap.servers, client.id, log_level (NULL =
 * librdkafka's default) plus ap's NULL-terminated (key, value) pairs.
 * Caller owns it. */
static inline rd_kafka_conf_t *au_app_conf_v(const char *bootstrap,
                                             const char *client_id,
                                             const char *log_level,
                                             va_list ap) {
  char e[256];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, e, sizeof(e));
  rd_kafka_conf_set(c, "client.id", client_id, e, sizeof(e));
  if (log_level)
    rd_kafka_conf_set(c, "log_level", log_level, e, sizeof(e));
  au_conf_set_pairs(c, ap);
  return c;
}

/* Application config: bootstrap.servers, client.id, log_level 3 plus
 * NULL-terminated (key, value) pairs. Caller owns it. */
static inline rd_kafka_conf_t *au_app_conf(const char *bootstrap,
                                           const char *client_id, ...) {
  va_list ap;
  va_start(ap, client_id);
  rd_kafka_conf_t *c = au_app_conf_v(bootstrap, client_id, "3", ap);
  va_end(ap);
  return c;
}

/* ---- agents
 * ------------------------------------------------------------------ */

/* What a test's change callback saw. Reset with memset before use. */
typedef struct au_rec {
  pthread_t poller; /* the thread that must run the callbacks */
  int n_change, n_accepted, n_rejected, n_other;
  int n_pinned_entries, n_applied_entries, n_ignored_entries;
  int n_wrong_thread;
  int64_t last_generation;
} au_rec_t;

static inline void au_on_change(dynconf_t *dc, const dynconf_event_t *ev,
                                void *opaque) {
  (void)dc;
  au_rec_t *r = opaque;
  if (!pthread_equal(pthread_self(), r->poller))
    r->n_wrong_thread++;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE) {
    r->n_other++;
    diag("agent %s event %d: %s", dynconf_client_id(dc),
         (int)dynconf_event_type(ev), dynconf_event_error_string(ev));
    return;
  }
  r->n_change++;
  if (dynconf_event_accepted(ev))
    r->n_accepted++;
  else
    r->n_rejected++;
  r->last_generation = dynconf_event_generation(ev);
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++) {
    switch (dynconf_event_outcome(ev, i)) {
    case DYNCONF_OUTCOME_PINNED:
      r->n_pinned_entries++;
      break;
    case DYNCONF_OUTCOME_APPLIED:
      r->n_applied_entries++;
      break;
    case DYNCONF_OUTCOME_IGNORED:
      r->n_ignored_entries++;
      break;
    default:
      diag("agent %s: %s %s: %s", dynconf_client_id(dc),
           dynconf_event_key(ev, i),
           dynconf_outcome_name(dynconf_event_outcome(ev, i)),
           dynconf_event_reason(ev, i) ? dynconf_event_reason(ev, i) : "");
    }
  }
}

/* Warnings and errors the agents logged (this test program's agents). */
static int au_n_warnings;

static inline void au_on_log(const dynconf_t *dc, int level, const char *fac,
                             const char *msg) {
  if (level <= 4)
    au_n_warnings++;
  if (level <= 4 || getenv("AU_VERBOSE"))
    diag("agent log %d %s %s: %s", level, dynconf_client_id(dc), fac, msg);
}

/* Sets the NULL-terminated (key, value) pairs of ap on dconf; a refused
 * one is reported with diag(). */
static inline void au_dconf_set_pairs(dynconf_conf_t *dconf, va_list ap) {
  char e[512];
  for (const char *k; (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    if (dynconf_conf_set(dconf, k, v, e, sizeof(e)) != DYNCONF_CONF_OK)
      diag("dynconf conf %s=%s: %s", k, v, e);
  }
}

/* dynconf_new(type, app, dconf) with the given callbacks and opaque set
 * on dconf first. app stays the caller's; dconf is the agent's, or freed
 * here when it returns NULL (the reason in errstr). */
static inline dynconf_t *au_dynconf_new(rd_kafka_type_t type,
                                        const rd_kafka_conf_t *app,
                                        dynconf_conf_t *dconf,
                                        dynconf_change_cb_t *change_cb,
                                        dynconf_log_cb_t *log_cb, void *opaque,
                                        char *errstr, size_t errstr_size) {
  dynconf_conf_set_change_cb(dconf, change_cb);
  dynconf_conf_set_log_cb(dconf, log_cb);
  dynconf_conf_set_opaque(dconf, opaque);
  errstr[0] = '\0';
  dynconf_t *dc = dynconf_new(type, app, dconf, errstr, errstr_size);
  if (!dc)
    dynconf_conf_destroy(dconf);
  return dc;
}

/* An agent of `type` for app (borrowed) fetching from dynconfd on
 * 127.0.0.1:port, with the given callbacks and opaque, and dynconf.*
 * (key, value) pairs: first those of `pairs` (NULL-terminated, may be
 * NULL), then ap's (NULL-terminated). The caller owns the agent; NULL on
 * failure (said with diag()). */
static inline dynconf_t *au_agent_new_v(rd_kafka_type_t type,
                                        const rd_kafka_conf_t *app, int port,
                                        dynconf_change_cb_t *change_cb,
                                        dynconf_log_cb_t *log_cb, void *opaque,
                                        const char *const *pairs, va_list ap) {
  char e[512], bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  dynconf_conf_t *dconf = dynconf_conf_new();
  dynconf_conf_set(dconf, "dynconf.bootstrap.servers", bs, e, sizeof(e));
  for (; pairs && pairs[0]; pairs += 2)
    if (dynconf_conf_set(dconf, pairs[0], pairs[1], e, sizeof(e)) !=
        DYNCONF_CONF_OK)
      diag("dynconf conf %s=%s: %s", pairs[0], pairs[1], e);
  au_dconf_set_pairs(dconf, ap);
  dynconf_t *dc =
      au_dynconf_new(type, app, dconf, change_cb, log_cb, opaque, e, sizeof(e));
  if (!dc)
    diag("dynconf_new: %s", e);
  return dc;
}

/* au_agent_new_v() with only NULL-terminated (key, value) pairs. */
static inline dynconf_t *au_agent_new_with(rd_kafka_type_t type,
                                           const rd_kafka_conf_t *app,
                                           int port,
                                           dynconf_change_cb_t *change_cb,
                                           dynconf_log_cb_t *log_cb,
                                           void *opaque, ...) {
  va_list ap;
  va_start(ap, opaque);
  dynconf_t *dc =
      au_agent_new_v(type, app, port, change_cb, log_cb, opaque, NULL, ap);
  va_end(ap);
  return dc;
}

/* An agent of `type` for app (borrowed) fetching from dynconfd on
 * 127.0.0.1:port every 200 ms, required at start-up, with au_on_change(rec)
 * and au_on_log and NULL-terminated extra dynconf.* pairs. The caller owns
 * the agent. */
static inline dynconf_t *au_agent_new(rd_kafka_type_t type,
                                      const rd_kafka_conf_t *app, int port,
                                      au_rec_t *rec, ...) {
  static const char *const base[] = {"dynconf.refresh.interval.ms", "200",
                                     "dynconf.startup.required", "true", NULL};
  va_list ap;
  va_start(ap, rec);
  dynconf_t *dc = au_agent_new_v(type, app, port, au_on_change, au_on_log,
                                 rec, base, ap);
  va_end(ap);
  return dc;
}

/* The number after the first "\"key\":" in a JSON document, or -1. */
static inline long long au_json_ll(const char *json, const char *key) {
  char pat[80];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = json ? strstr(json, pat) : NULL;
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* The number after the first "\"key\":" in an agent's statistics, or -1. */
static inline long long au_stat_ll(dynconf_t *dc, const char *key) {
  char *s = dynconf_stats_json(dc); /* ours, freed below */
  long long v = au_json_ll(s, key);
  free(s);
  return v;
}

/* Successful fetches of an agent so far (its stats' "ok"). */
static inline long long au_fetches(dynconf_t *dc) {
  return au_stat_ll(dc, "ok");
}

/* Polls dc until the number after "\"key\":" in its statistics reaches
 * want, or for timeout_ms. Returns the last value read. */
static inline long long au_wait_stat(dynconf_t *dc, const char *key,
                                     long long want, int timeout_ms) {
  int64_t deadline = dc_tu_now_ms() + timeout_ms;
  long long v;
  while ((v = au_stat_ll(dc, key)) < want && dc_tu_now_ms() < deadline)
    dynconf_poll(dc, 10);
  dynconf_poll(dc, 0);
  return v;
}

/* Whether dc's effective key is want (acks "all" and "-1" alike) from
 * source want_src; says what it is instead with diag(). */
static inline bool au_eff_is(dynconf_t *dc, const char *key, const char *want,
                             dynconf_source_t want_src) {
  char v[128];
  dynconf_source_t s;
  if (dynconf_effective_get(dc, key, v, sizeof(v), &s) < 0) {
    diag("  %s is not an allowed key", key);
    return false;
  }
  bool same = !strcmp(au_acks_norm(v), au_acks_norm(want)) && s == want_src;
  if (!same)
    diag("  effective %s = \"%s\" (%s), want \"%s\" (%s)", key, v,
         dynconf_source_name(s), want, dynconf_source_name(want_src));
  return same;
}

/* ---- dynconfd's fleet view (DescribeFleet) -------------------------------- */

static inline int au_enc_fleet_(dc_buf_t *b, int16_t v, const void *q) {
  return dc_describe_fleet_req_encode(b, v, q);
}

/* One client as DescribeFleet lists it, copied out of the arena. */
typedef struct au_fleet_client {
  char instance[80], client[80], principal[80], listener[40], agent[80];
  char app[80], kind[20], reason[2100];
  bool connected, peer_set;
  int64_t served, current, reported, generation;
  int outcome, state;
} au_fleet_client_t;

static inline void au_fleet_copy_(au_fleet_client_t *s, const dc_fleet_client_t *c) {
  snprintf(s->instance, sizeof(s->instance), "%s", c->instance_id);
  snprintf(s->client, sizeof(s->client), "%s", c->client_id);
  snprintf(s->principal, sizeof(s->principal), "%s", c->principal);
  snprintf(s->listener, sizeof(s->listener), "%s", c->listener);
  snprintf(s->agent, sizeof(s->agent), "%s", c->agent_software);
  snprintf(s->app, sizeof(s->app), "%s", c->app_software);
  snprintf(s->kind, sizeof(s->kind), "%s", c->kind);
  snprintf(s->reason, sizeof(s->reason), "%s", c->reason ? c->reason : "");
  s->connected = c->connected;
  s->peer_set = c->peer && strchr(c->peer, ':');
  s->served = c->served_version;
  s->current = c->current_version;
  s->reported = c->reported_version;
  s->generation = c->generation;
  s->outcome = c->outcome;
  s->state = c->state;
}

/* DescribeFleet on kc with the filters (NULL = any); up to max clients
 * into out; the count, or -1 when the request failed or answered an
 * error. */
static inline int au_fleet(dc_kclient_t *kc, const char *client, const char *user,
                 au_fleet_client_t *out, int max) {
  dc_describe_fleet_req_t q = {.client_id = (char *)client,
                               .user = (char *)user};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_describe_fleet_resp_t resp;
  int n = -1;
  if (!dc_kclient_request(kc, DC_API_DESCRIBE_FLEET, 0, au_enc_fleet_, &q, 10000,
                          &rd, &a, err, sizeof(err)) &&
      !dc_describe_fleet_resp_decode(&rd, 0, &resp) && !resp.error_code) {
    n = resp.n_clients;
    for (int i = 0; i < n && i < max; i++)
      au_fleet_copy_(&out[i], &resp.clients[i]);
  } else {
    diag("DescribeFleet: %s", err);
  }
  dc_arena_free(&a);
  return n;
}

/* Asks dynconfd on port for client's entry until its state is want and
 * its connection conn, for up to 30 s; the last entry in *out. */
static inline bool au_wait_fleet(int port, const char *client, int want,
                                 bool conn, au_fleet_client_t *out) {
  char bs[64], err[256];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  memset(out, 0, sizeof(*out));
  dc_kclient_t *kc = dc_kclient_new("fleet-reader");
  bool got = false;
  if (kc && !dc_kclient_connect(kc, bs, 10000, err, sizeof(err))) {
    int64_t deadline = dc_tu_now_ms() + 30000;
    do {
      int n = au_fleet(kc, client, NULL, out, 1);
      got = n == 1 && out->state == want && out->connected == conn;
      if (!got)
        dc_tu_sleep_ms(20);
    } while (!got && dc_tu_now_ms() < deadline);
    if (!got)
      diag("  fleet: %s state %d connected %d, want %d %d", client,
           out->state, out->connected, want, conn);
  }
  dc_kclient_destroy(kc);
  return got;
}

/* ---- the mock cluster
 * ---------------------------------------------------------- */

/* A mock cluster of nbrokers on its own quiet producer handle (*mrkp,
 * which the caller destroys after rd_kafka_mock_cluster_destroy()). Its
 * bootstrap list goes to bs. NULL on failure (nothing left allocated). */
static inline rd_kafka_mock_cluster_t *
au_mock_new(int nbrokers, rd_kafka_t **mrkp, char *bs, size_t bs_size) {
  char e[512];
  rd_kafka_conf_t *mc = rd_kafka_conf_new();
  rd_kafka_conf_set(mc, "log_level", "0", e, sizeof(e));
  if (getenv("AU_MOCK_DEBUG")) { /* the mock's own story, while debugging */
    rd_kafka_conf_set(mc, "log_level", "7", e, sizeof(e));
    rd_kafka_conf_set(mc, "debug", "mock", e, sizeof(e));
  }
  rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mc, e, sizeof(e));
  if (!mrk) {
    rd_kafka_conf_destroy(mc);
    return NULL;
  }
  rd_kafka_mock_cluster_t *mcl = rd_kafka_mock_cluster_new(mrk, nbrokers);
  if (!mcl) {
    rd_kafka_destroy(mrk);
    return NULL;
  }
  snprintf(bs, bs_size, "%s", rd_kafka_mock_cluster_bootstraps(mcl));
  *mrkp = mrk;
  return mcl;
}

#endif
