/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd internals, shared by its files, each calling only the ones
 * below it:
 *   dynconfd.c            main(), start-up, signals and reloads, serving
 *   dynconfd_options.c    --help, the option table, the command line
 *   dynconfd_modes.c      --history, --export, --import, --add-user
 *   dynconfd_forward.c    where a replica forwards alters, and how
 *   dynconfd_listeners.c  listener specs, protocols and addresses
 *   dynconfd_settings.c   the settings by config-file key, the --config
 *                         file, the checks across settings
 * Everything says what is wrong on stderr (or in the log) itself.
 */
#ifndef DYNCONF_TOOLS_DYNCONFD_H
#define DYNCONF_TOOLS_DYNCONFD_H

#include "broker/core/broker.h"
#include "broker/net/server.h"
#include "broker/store/store.h"
#include "broker/store/store_kafka.h"
#include "client/client_props.h"
#include "client/kclient.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_USAGE 2  /* a bad option or setting; 1 is a runtime failure */
#define MAX_LISTEN 16

/* What the settings options and the --config file set. Strings are owned
 * (settings_free). */
typedef struct settings {
  char *listen[MAX_LISTEN];
  int n_listen;
  char *advertise[MAX_LISTEN];
  int n_advertise;
  char *protocol_map; /* NAME:PROTO,... */
  char *data_dir;
  char *ssl_cert, *ssl_key, *ssl_ca;
  int ssl_client_auth; /* dc_tls_client_auth_t */
  char *credentials, *sasl_mechanisms, *acl_file, *super_users;
  /* OAUTHBEARER (Kafka's sasl.oauthbearer.* names where Kafka has one). */
  char *oauth_jwks, *oauth_issuer, *oauth_audience, *oauth_claim;
  bool oauth_unsecured;
  int64_t oauth_skew_s;
  /* GSSAPI (Kafka's sasl.kerberos.* names). */
  char *krb_service, *krb_keytab, *krb_rules;
  int64_t reauth_ms; /* KIP-368 connections.max.reauth.ms; 0 = none */
  int32_t node_id;
  int64_t st_min, st_max;
  bool allow_unknown;
  int64_t max_req_resources, max_req_configs, max_entity_configs,
      max_req_writes, max_entities, max_response;
  int64_t fleet_retention_ms; /* fleet.retention.ms */
  /* fleet.max.bytes, fleet.max.waits, fleet.max.waits.per.principal */
  int64_t fleet_max_bytes, fleet_max_waits, fleet_max_waits_pp;
  int64_t failed_auth_delay_ms; /* connection.failed.authentication.delay.ms */
  dc_server_opts_t srv;
  bool verbose;
  /* The store: "sqlite" (default) or "kafka" and the latter's settings. */
  char *store, *store_bootstrap, *store_topic, *store_config;
  int64_t store_timeout_ms;
  bool store_read_only;
  int64_t store_session_ms;
  char *forward_listener;
  char *forward_config; /* the forward connection's client properties */
  char *store_history_topic;
  char *metrics_listen;
  bool log_json;
} settings_t;

/* What the reload hooks need: the shared TLS context and which listeners
 * use it. Owned by serve(). */
typedef struct reload_ctx {
  dc_tls_ctx_t *tls;
  int n;
  char names[MAX_LISTEN][64];
  bool is_tls[MAX_LISTEN];
  dc_broker_t *broker;
} reload_ctx_t;

/* Forwarding as decided before anything opens. */
typedef struct forward_plan {
  const char *listener; /* the writer's listener; NULL: no forwarding */
  const dc_kclient_security_t *security; /* NULL: PLAINTEXT */
  dc_kclient_security_t sec; /* what security points to */
  dc_client_props_t props;   /* --forward-config, which sec points into */
} forward_plan_t;

/* The command line: the settings, and what a mode that runs once and
 * exits instead of serving needs. */
typedef struct cmdline {
  settings_t st;
  bool history;
  const char *entity, *new_user;
  const char *export_to, *import_from;
  int iterations;
} cmdline_t;

/* ---- dynconfd_options.c ---------------------------------------------- */

/* The defaults, before any option. */
void cmdline_init(cmdline_t *cl);
/* Fills cl from argv. False when the run ends here, with *exit_code: 0
 * after --help or --version, EXIT_USAGE after a bad option (said). */
bool parse_command_line(cmdline_t *cl, int argc, char **argv,
                        int *exit_code);

/* ---- dynconfd_modes.c ------------------------------------------------ */
/* Each returns the exit status. */

int run_history(const settings_t *st, const char *entity);
int export_store(const char *dir, const char *path);
int import_store(const settings_t *st, const char *path);
int add_user(const char *path, const char *user, int iterations);

/* ---- dynconfd_forward.c ---------------------------------------------- */

/* Fills fp from the settings. Non-zero: a usage error, printed. */
int forwarding(const settings_t *st, const reload_ctx_t *rc,
               forward_plan_t *fp);
/* The plan into the broker's options. */
void apply_forwarding(const settings_t *st, const forward_plan_t *fp,
                      dc_broker_opts_t *bo);

/* ---- dynconfd_listeners.c -------------------------------------------- */

/* Splits "host:port" or "[v6]:port". */
bool listen_addr_split(const char *s, char *host, size_t hsz, int *port);
/* "NAME://HOST:PORT" -> name and the address; a bare "HOST:PORT" is a
 * PLAINTEXT listener. NULL for a bad name. */
const char *split_listener(const char *spec, char *name, size_t nsz);
/* The protocol of listener NAME (a dc_sec_protocol_t): from the map, else
 * NAME itself; -1 if neither gives one. */
int listener_protocol(const char *map, const char *name);
/* Fills rc's names and TLS flags from the listeners; false after a usage
 * error. */
bool name_listeners(const settings_t *st, reload_ctx_t *rc, bool *any_tls,
                    bool *any_sasl);
/* Tells a replicated store how clients reach this server. */
int advertise_to_store(dc_store_t *store, const settings_t *st,
                       char names[][64], char bound[][300], char *errstr,
                       size_t errstr_size);

/* ---- dynconfd_settings.c --------------------------------------------- */
/* The bool ones return false after saying what is wrong on stderr. */

/* An integer in min..max; what names it in the message. */
bool parse_num(const char *what, const char *v, int64_t min, int64_t max,
               int64_t *out);
/* One setting by its config-file name. */
bool apply_setting(settings_t *st, const char *key, const char *val);
/* --config FILE: its settings, in order. */
bool load_config_file(settings_t *st, const char *path);
void settings_free(settings_t *st);
/* The Kafka store's options from the settings: 0, or -1 with errstr. */
int kafka_opts(const settings_t *st, dc_kafka_store_opts_t *o, char *errstr,
               size_t errstr_size);
/* Settings valid one by one that cannot work together. */
bool limits_consistent(const settings_t *st);
/* The SASL mechanisms offered by default once configured. */
bool resolve_mechanisms(settings_t *st);
/* Whether GSSAPI is configured: by a keytab, or by naming it. */
bool kerberos_enabled(const settings_t *st);

#endif
