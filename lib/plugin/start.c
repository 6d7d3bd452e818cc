/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent of one client: made in on_new, inside rd_kafka_new(), and
 * destroyed in on_destroy.
 *
 * Where on_new runs (checked in librdkafka's v2.0.2 and v2.15.0 source,
 * src/rdkafka.c, rd_kafka_new()): after rd_kafka_conf_finalize() and the
 * struct copy of the application's conf into the handle (rk->rk_conf),
 * and before the handle's first thread: the background thread and the
 * main thread (thrd_create(&rk->rk_thread, ...)) are started further
 * down, and the brokers' threads by the main thread. So the one thread a
 * client with the plugin gains is the agent's, started here.
 *
 * What on_new's return value does: rd_kafka_interceptors_on_new() logs
 * a failing interceptor (ICFAIL, "Interceptor dynconf failed on_new")
 * and goes on; rd_kafka_new() succeeds all the same, in 2.0.2 and in
 * 2.15.0. A plugin cannot fail rd_kafka_new(), so
 * dynconf.startup.required=true cannot be fail-closed here: when the
 * first fetch failed, the client starts with the application's values,
 * an error is logged, and on_new returns an error so librdkafka logs it
 * too.
 */
#include "plugin/plugin_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A dynconf.* property of st's conf as text; "" when it cannot be read. */
static void prop(const dc_plugin_t *st, const char *name, char *out,
                 size_t size) {
  size_t sz = size;
  if (dynconf_conf_get(st->dconf, name, out, &sz) != DYNCONF_CONF_OK ||
      sz > size)
    out[0] = '\0';
}

/* "client.id#producer": the client's name in the plugin's log lines
 * (librdkafka names the handle only after on_new). */
static void name_client(dc_plugin_t *st, rd_kafka_type_t type,
                        const rd_kafka_conf_t *conf) {
  char cid[128];
  size_t sz = sizeof(cid);
  if (rd_kafka_conf_get(conf, "client.id", cid, &sz) != RD_KAFKA_CONF_OK ||
      sz > sizeof(cid))
    snprintf(cid, sizeof(cid), "rdkafka");
  snprintf(st->name, sizeof(st->name), "%s#%s", cid,
           type == RD_KAFKA_CONSUMER ? "consumer" : "producer");
}

/* The client's agent, fail-open whatever dynconf.startup.required says:
 * fail-closed is not ours to do (see above), and an agent that keeps
 * trying is there when the config server comes back. NULL with errstr
 * when there is none. */
static dynconf_t *start_agent(dc_plugin_t *st, rd_kafka_type_t type,
                              const rd_kafka_conf_t *conf, char *errstr,
                              size_t errstr_size) {
  /* The client takes its configuration here only: later changes are
   * reported as restart needed, and logged as they come. */
  static const char *const fixed[][2] = {
      {"dynconf.startup.required", "false"},
      {"dynconf.apply.live", "false"},
      {"dynconf.log.queue", "false"},
      {"dynconf.software.name", "dynconf-plugin"}};
  dynconf_conf_t *dconf = dynconf_conf_dup(st->dconf);
  for (size_t i = 0; dconf && i < sizeof(fixed) / sizeof(fixed[0]); i++)
    if (dynconf_conf_set(dconf, fixed[i][0], fixed[i][1], errstr,
                         errstr_size) != DYNCONF_CONF_OK) {
      dynconf_conf_destroy(dconf);
      dconf = NULL;
    }
  if (!dconf) {
    snprintf(errstr, errstr_size, "out of memory");
    return NULL;
  }
  dynconf_conf_set_log_cb(dconf, dc_plugin_agent_log);
  dynconf_conf_set_change_cb(dconf, dc_plugin_agent_change);
  dynconf_conf_set_opaque(dconf, st);
  /* The agent copies the finalized conf (rd_kafka_conf_dup) for the
   * client.id, the client's settings its rules check, and the security
   * settings of its own connection. */
  dynconf_t *dc = dynconf_new(type, conf, dconf, errstr, errstr_size);
  if (!dc)
    dynconf_conf_destroy(dconf);
  return dc;
}

/* The first fetch brought nothing: the client starts with the
 * application's values, said at the level dynconf.startup.required asks
 * for. Returns on_new's answer. */
static rd_kafka_resp_err_t no_config(dc_plugin_t *st, bool required,
                                     dynconf_state_t state, char *errstr,
                                     size_t errstr_size) {
  if (!required) {
    dc_plugin_log(st, 4, "DYNCONF",
                  "no configuration from the config server (state %s): the "
                  "client starts with the application's configuration",
                  dynconf_state_name(state));
    return RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  dc_plugin_log(st, 3, "DYNCONF",
                "dynconf.startup.required=true, but the first fetch failed "
                "(state %s): a librdkafka plugin cannot fail rd_kafka_new(), "
                "so the client starts with the application's configuration",
                dynconf_state_name(state));
  snprintf(errstr, errstr_size,
           "dynconf.startup.required=true and no configuration from the "
           "config server (state %s): the client runs with the "
           "application's configuration",
           dynconf_state_name(state));
  return RD_KAFKA_RESP_ERR__STATE;
}

/* The client's log callback, as librdkafka's conf prints a pointer
 * property ("%p"); none when the client queues its logs for its own poll
 * (log.queue=true), which a plugin cannot feed. */
static void find_client_log(dc_plugin_t *st, rd_kafka_t *rk,
                            const rd_kafka_conf_t *conf) {
  char v[64];
  size_t sz = sizeof(v);
  void *p = NULL;
  st->rk = rk;
  st->client_log = NULL;
  atomic_store(&st->client_ready, false);
  if (rd_kafka_conf_get(conf, "log.queue", v, &sz) == RD_KAFKA_CONF_OK &&
      !strcmp(v, "true"))
    return;
  sz = sizeof(v);
  if (rd_kafka_conf_get(conf, "log_cb", v, &sz) == RD_KAFKA_CONF_OK &&
      sscanf(v, "%p", &p) == 1 && p)
    memcpy(&st->client_log, &p, sizeof(p));
}

/* The client's main thread starts once rd_kafka_new() has named the
 * handle: from then on the client's log callback may be called. */
rd_kafka_resp_err_t dc_plugin_on_thread_start(rd_kafka_t *rk,
                                              rd_kafka_thread_type_t type,
                                              const char *thread_name,
                                              void *ic_opaque) {
  (void)rk;
  (void)thread_name;
  dc_plugin_t *st = ic_opaque;
  if (type == RD_KAFKA_THREAD_MAIN && st->client_log)
    atomic_store(&st->client_ready, true);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t dc_plugin_on_new(rd_kafka_t *rk,
                                     const rd_kafka_conf_t *conf,
                                     void *ic_opaque, char *errstr,
                                     size_t errstr_size) {
  dc_plugin_t *st = ic_opaque;
  rd_kafka_type_t type = rd_kafka_type(rk);
  char v[32], e[512];
  /* on_destroy is an interceptor of the handle, added to it here. */
  rd_kafka_resp_err_t err = rd_kafka_interceptor_add_on_destroy(
      rk, DC_PLUGIN_IC_NAME, dc_plugin_on_destroy, st);
  if (err) {
    snprintf(errstr, errstr_size, "dynconf plugin: adding on_destroy: %s",
             rd_kafka_err2str(err));
    return err; /* no agent: nothing would stop it */
  }
  err = rd_kafka_interceptor_add_on_thread_start(
      rk, DC_PLUGIN_IC_NAME, dc_plugin_on_thread_start, st);
  if (err) {
    snprintf(errstr, errstr_size, "dynconf plugin: adding on_thread_start: "
             "%s", rd_kafka_err2str(err));
    return err;
  }
  name_client(st, type, conf);
  find_client_log(st, rk, conf);
  prop(st, "dynconf.log.level", v, sizeof(v));
  st->log_level = *v ? atoi(v) : 6;
  prop(st, "dynconf.startup.required", v, sizeof(v));
  bool required = !strcmp(v, "true");

  /* A conf whose rd_kafka_new() failed after on_new had its agent
   * destroyed by on_destroy; none is left here. */
  dynconf_destroy(st->dc);
  st->in_new = true;
  st->dc = start_agent(st, type, conf, e, sizeof(e));
  if (!st->dc) {
    st->in_new = false;
    dc_plugin_log(st, 3, "DYNCONF",
                  "no agent: %s; the client keeps the application's "
                  "configuration",
                  e);
    snprintf(errstr, errstr_size, "dynconf plugin: %s", e);
    return RD_KAFKA_RESP_ERR__INVALID_ARG;
  }
  /* The first change set's pinned and rejected keys, and an error of the
   * first fetch, are logged now, on the thread that made the agent. */
  dynconf_poll(st->dc, 0);
  st->in_new = false;
  dynconf_state_t state = dynconf_state(st->dc);
  if (state != DYNCONF_STATE_UP)
    return no_config(st, required, state, errstr, errstr_size);
  /* conf is the handle's own rk->rk_conf: see apply.c for why writing to
   * it here is sound. */
  dc_plugin_apply(st, (rd_kafka_conf_t *)conf);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* Called from rd_kafka_destroy() on the application's thread (and from a
 * rd_kafka_new() that failed after on_new): the agent's thread stops. */
rd_kafka_resp_err_t dc_plugin_on_destroy(rd_kafka_t *rk, void *ic_opaque) {
  (void)rk;
  dc_plugin_t *st = ic_opaque;
  dynconf_destroy(st->dc); /* its thread logs no more */
  st->dc = NULL;
  atomic_store(&st->client_ready, false);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}
