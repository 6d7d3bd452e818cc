/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The librdkafka plugin (libdynconf-plugin.so): internals shared by the
 * files of lib/plugin. The plugin sits above the agent (lib/agent), which
 * it uses only through the public API of dynconf.h; nothing below it
 * includes this folder.
 *
 *   conf_init.c  the exported conf_init()
 *   state.c      the per-conf state: dynconf.* properties, copies, frees,
 *                and the interceptors that carry it
 *   start.c      on_new / on_destroy: the agent of one client
 *   apply.c      writing the accepted values into the client's own conf
 *   log.c        log lines on stderr, in librdkafka's format
 *   host.c       the rd_kafka_* calls, into the librdkafka that loaded it
 */
#ifndef DC_PLUGIN_INT_H
#define DC_PLUGIN_INT_H
#include "dynconf.h"

#include <librdkafka/rdkafka.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* The name the plugin's interceptors are registered under (librdkafka
 * refuses a second interceptor of one name on one conf). */
#define DC_PLUGIN_IC_NAME "dynconf"

/* What one rd_kafka_conf_t carrying the plugin holds. Once rd_kafka_new()
 * succeeds the client's conf is a struct copy of the application's, so
 * the same state then belongs to the client (librdkafka calls
 * on_conf_destroy for it when the client is destroyed). */
/* The client's log callback (librdkafka's rd_kafka_conf_set_log_cb). */
typedef void(dc_client_log_cb_t)(const rd_kafka_t *rk, int level,
                                 const char *fac, const char *buf);

typedef struct dc_plugin {
  dynconf_conf_t *dconf; /* the dynconf.* properties set on this conf */
  dynconf_t *dc;         /* the agent of the client made from it, or NULL */
  char name[160];        /* "client.id#producer", for log lines */
  int log_level;         /* dynconf.log.level when the agent was made */
  bool in_new;           /* on_new is running (the agent's start-up) */
  /* Where the agent's later lines go: the client's log callback, once its
   * main thread runs (the handle is whole then), unless it queues its
   * logs (log.queue=true: for the application's poll only). */
  rd_kafka_t *rk;
  dc_client_log_cb_t *client_log;
  atomic_bool client_ready;
} dc_plugin_t;

/* ---- state.c ---------------------------------------------------------- */

/* A state with every dynconf.* property at its default, or a copy of
 * from's properties when from is not NULL (no agent); NULL on OOM. */
dc_plugin_t *dc_plugin_state_new(const dc_plugin_t *from);
/* Frees st and the agent it may still hold (NULL is a no-op). */
void dc_plugin_state_free(dc_plugin_t *st);

rd_kafka_conf_res_t dc_plugin_on_conf_set(rd_kafka_conf_t *conf,
                                          const char *name, const char *val,
                                          char *errstr, size_t errstr_size,
                                          void *ic_opaque);
rd_kafka_resp_err_t dc_plugin_on_conf_dup(rd_kafka_conf_t *new_conf,
                                          const rd_kafka_conf_t *old_conf,
                                          size_t filter_cnt,
                                          const char **filter,
                                          void *ic_opaque);
rd_kafka_resp_err_t dc_plugin_on_conf_destroy(void *ic_opaque);
/* Adds the plugin's interceptors to conf with st as their opaque.
 * RD_KAFKA_RESP_ERR__CONFLICT when conf carries them already (nothing is
 * added then); another error with errstr when librdkafka refused one. */
rd_kafka_resp_err_t dc_plugin_register(rd_kafka_conf_t *conf, dc_plugin_t *st,
                                       char *errstr, size_t errstr_size);

/* ---- start.c ------------------------------------------------------------ */

rd_kafka_resp_err_t dc_plugin_on_new(rd_kafka_t *rk,
                                     const rd_kafka_conf_t *conf,
                                     void *ic_opaque, char *errstr,
                                     size_t errstr_size);
rd_kafka_resp_err_t dc_plugin_on_destroy(rd_kafka_t *rk, void *ic_opaque);
rd_kafka_resp_err_t dc_plugin_on_thread_start(rd_kafka_t *rk,
                                              rd_kafka_thread_type_t type,
                                              const char *thread_name,
                                              void *ic_opaque);

/* ---- apply.c ------------------------------------------------------------ */

/* Writes every value the agent accepted from the config server into the
 * client's conf (see apply.c for why this is sound and which keys are
 * left out); each key applied or left out is logged. Returns the number
 * of values applied. */
int dc_plugin_apply(dc_plugin_t *st, rd_kafka_conf_t *client_conf);
/* Why a key cannot be set on a client's conf after
 * rd_kafka_conf_finalize(), or NULL when it can. */
const char *dc_plugin_key_unsafe(const char *key);

/* ---- log.c -------------------------------------------------------------- */

/* One line, when level is at most st's log level: through the client's
 * log callback once it is ready, else on stderr as librdkafka's default
 * logger prints it ("%LEVEL|SECONDS.MILLIS|FAC|NAME| message"). */
void dc_plugin_log(const dc_plugin_t *st, int level, const char *fac,
                   const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The agent's log callback: its lines through dc_plugin_log(). */
void dc_plugin_agent_log(const dynconf_t *dc, int level, const char *fac,
                         const char *msg);
/* The agent's change callback: one line per key of a change set that
 * the agent did not accept (pinned, rejected, ignored), with its reason. */
void dc_plugin_agent_change(dynconf_t *dc, const dynconf_event_t *ev,
                            void *opaque);
#endif
