/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd: the dynconf config broker. Serves KIP-649 CLIENT configs over
 * the Kafka wire protocol, stores them in SQLite, prints its audit history.
 */
#include "config.h"
#include "broker/auth/credentials.h"
#include "broker/core/broker.h"
#include "broker/net/server.h"
#include "broker/store/store.h"
#include "broker/store/store_kafka.h"
#include "broker/store/transfer.h"
#include "client/client_props.h"
#include "client/kclient.h"
#include "codec/proto.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/schema.h"
#include "common/errors.h"
#include "common/kvfile.h"
#include "common/text.h"

#include <systemd/sd-daemon.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define MAX_LISTEN 16

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

static dc_server_t *g_server;

/* What the reload hooks need: the shared TLS context and which listeners
 * use it. Owned by serve(). */
typedef struct reload_ctx {
  dc_tls_ctx_t *tls;
  int n;
  char names[MAX_LISTEN][64];
  bool is_tls[MAX_LISTEN];
  dc_broker_t *broker;
} reload_ctx_t;

/* --help: the synopsis and the listener and security options. */
static void usage_listeners(FILE *f) {
  fputs(
"Usage: dynconfd [OPTIONS]\n"
"       dynconfd --data-dir DIR --history [--entity NAME]\n"
"       dynconfd --data-dir DIR --export FILE|-\n"
"       dynconfd --data-dir DIR --import FILE [--allow-unknown-keys]\n"
"\n"
"The dynconf config broker: serves dynamic client configs (KIP-649 CLIENT\n"
"resource, type 9) to librdkafka agents and any Kafka admin client.\n"
"\n"
"  --listen HOST:PORT        a PLAINTEXT listener, repeatable (default\n"
"                            127.0.0.1:9092; port 0 picks a free port)\n"
"  --listeners LIST          NAME://HOST:PORT[,...] like Kafka's listeners\n"
"  --listener-security-protocol-map MAP\n"
"                            NAME:PROTOCOL[,...]; PROTOCOL is PLAINTEXT, SSL,\n"
"                            SASL_PLAINTEXT or SASL_SSL (a listener named after\n"
"                            a protocol uses it by default)\n"
"  --ssl-cert FILE --ssl-key FILE --ssl-ca FILE\n"
"                            PEM certificate chain, key and CA for TLS listeners\n"
"  --ssl-client-auth MODE    none (default), requested or required; a client\n"
"                            certificate's subject becomes the principal\n"
"  --credentials FILE        hashed SASL/SCRAM credentials (see --add-user)\n"
"  --sasl-enabled-mechanisms LIST  default SCRAM-SHA-256,SCRAM-SHA-512,PLAIN\n"
"                            (and OAUTHBEARER and GSSAPI when configured)\n"
"  --sasl-oauthbearer-jwks FILE  OAUTHBEARER: accept tokens (RS256, ES256)\n"
"                            signed by a key of this JWKS file (reloaded on\n"
"                            SIGHUP and ReloadSecurity)\n"
"  --sasl-oauthbearer-unsecured  OAUTHBEARER: also accept unsigned tokens\n"
"                            (alg none; for tests only)\n"
"  --sasl-oauthbearer-expected-issuer ISS  required \"iss\" of tokens\n"
"  --sasl-oauthbearer-expected-audience AUD  required in a token's \"aud\"\n"
"  --sasl-oauthbearer-sub-claim-name NAME  the claim naming the principal\n"
"                            (default sub)\n"
"  --sasl-oauthbearer-clock-skew-seconds N  allowed clock skew (default 30)\n"
"  --sasl-kerberos-keytab FILE  GSSAPI: accept Kerberos tickets for the\n"
"                            service with a key in this keytab (reloaded on\n"
"                            SIGHUP and ReloadSecurity)\n"
"  --sasl-kerberos-service-name NAME  GSSAPI: the service's principal is\n"
"                            NAME/HOST@REALM (default kafka)\n"
"  --sasl-kerberos-principal-to-local-rules RULES  GSSAPI: Kafka's rules\n"
"                            mapping a principal to User:NAME (default\n"
"                            DEFAULT: alice/host@REALM is User:alice)\n"
"  --add-user NAME           with --credentials: store NAME with the password\n"
"                            read from stdin's first line, then exit\n"
"  --iterations N            SCRAM iterations for --add-user (default 8192)\n"
"  --acl-file FILE           enable authorization with these rules (README)\n"
"  --super-users LIST        principals that pass every check, e.g. User:admin\n"
"  --advertise HOST:PORT     address Metadata returns for the listener with the\n"
"                            same position (default: the bound address)\n", f);
}

/* --help: where the data lives and how the server runs. */
static void usage_store(FILE *f) {
  fputs(
"  --data-dir DIR            SQLite store directory (default ./dynconfd-data);\n"
"                            with --store kafka, the local cache of the topic\n"
"  --store sqlite|kafka      where the configs live (default sqlite)\n"
"  --store-bootstrap LIST    HOST:PORT,... of the Kafka cluster (--store kafka)\n"
"  --store-topic NAME        the config log topic (default _dynconf_configs)\n"
"  --store-history-topic NAME  the audit history topic (default: the config\n"
"                            topic's name + \"_history\")\n"
"  --store-config FILE       librdkafka properties for the store's connection\n"
"                            (security.protocol, ssl.*, sasl.*)\n"
"  --store-timeout-ms N      bound on one alter's write to Kafka and on each\n"
"                            start-up step (default 10000)\n"
"  --store-read-only         a read replica: follow the topic, serve what the\n"
"                            writer wrote, refuse alters\n"
"  --store-session-timeout-ms N  a writer not heard of this long loses the\n"
"                            topic to another replica (default 6000)\n"
"  --forward-listener NAME   the writer's listener a replica forwards alters\n"
"                            to (default: the first one --forward-config\n"
"                            speaks; without it the first PLAINTEXT or SSL)\n"
"  --forward-config FILE     Kafka client properties for forwarding: this\n"
"                            replica's credentials for a SASL listener\n"
"                            (security.protocol, sasl.*, ssl.*)\n"
"  --node-id N               broker node id (default 1)\n"
"  --metrics-listen HOST:PORT  serve /metrics (Prometheus), /healthz and\n"
"                            /readyz over HTTP there (default: off)\n"
"  --metrics-max-connections N  HTTP connections open at once; more wait\n"
"                            (default 256)\n"
"  --metrics-max-connections-per-ip N  HTTP connections from one address;\n"
"                            more are closed at once (default 16)\n"
"  --metrics-idle-timeout-seconds N  close an HTTP connection silent this\n"
"                            long, mid-request or between requests (default 5)\n"
"  --metrics-max-header-bytes N  memory for one HTTP request's header; a\n"
"                            larger header gets 431 (default 32768)\n"
"  --log-format text|json    log lines as text (default) or one JSON object\n"
"                            each, for log shippers\n"
"  --config FILE             read settings from FILE (key=value lines, see README);\n"
"                            flags after it override it\n", f);
}

/* --help: the bounds on sessions, connections and requests. */
static void usage_limits(FILE *f) {
  fputs(
"  --session-timeout-min-ms N  lowest session.timeout.ms accepted (default 6000)\n"
"  --session-timeout-max-ms N  highest session.timeout.ms accepted (default 1800000)\n"
"  --allow-unknown-keys      relay config keys outside the schema\n"
"  --max-request-size BYTES  largest request frame accepted (default 1048576)\n"
"  --idle-timeout-ms N       close connections idle this long (default 600000)\n"
"  --connection-failed-authentication-delay-ms N  a failed SASL log-in is\n"
"                            answered N ms late, then closed (default 100)\n"
"  --connections-max-reauth-ms N  a SASL session lasts at most N ms without\n"
"                            re-authenticating (KIP-368; default 0 = until an\n"
"                            OAUTHBEARER token expires, else unlimited)\n"
"  --max-connections N       refuse connections beyond N (default 100000)\n"
"  --max-connection-creation-rate N  connections each listener accepts a\n"
"                            second; past it new ones wait (default 0 = no\n"
"                            limit)\n"
"  --max-connection-creation-rate-per-ip N  connections one client address\n"
"                            may open a second; past it they are closed at\n"
"                            once (default 0 = no limit)\n"
"  --max-request-resources N resources one request may name (default 1000)\n"
"  --max-request-configs N   config keys per resource in one request\n"
"                            (default 1000)\n"
"  --max-entity-configs N    config keys one entity may hold (default 1000)\n"
"  --max-entities N          entities the server may hold; an alter creating\n"
"                            one more is refused (default 2000000)\n"
"  --max-request-writes N    store rows one alter request may write: each\n"
"                            changed entity's old and new set and one audit\n"
"                            row per change (default 5000)\n"
"  --max-response-bytes N    largest DescribeConfigs response (default\n"
"                            4194304); results past it get an error\n"
"  --max-buffered-bytes N    input and output buffered for all connections\n"
"                            together (default 268435456); above it the\n"
"                            connections holding the most are closed\n"
"  --fleet-retention-ms N    how long an agent that disconnected stays in the\n"
"                            fleet view (default 3600000)\n"
"  --fleet-max-bytes N       memory the fleet view's agents may hold; past it\n"
"                            the longest gone leave, else reports are\n"
"                            refused (default 67108864)\n"
"  --fleet-max-waits N       DescribeFleet requests parked at once (default 64)\n"
"  --fleet-max-waits-per-principal N  of them, parked by one principal\n"
"                            (default 8)\n", f);
}

/* --help: the modes that run once, and the exit status. */
static void usage_modes(FILE *f) {
  fputs(
"  --history                 print the audit history of changes and exit\n"
"                            (with --store kafka: from the history topic)\n"
"  --entity NAME             with --history: only this client-id\n"
"  --export FILE             write every entity and its configs as JSON to\n"
"                            FILE (- = stdout) and exit; works while the\n"
"                            server runs\n"
"  --import FILE             fill an empty data directory from an --export\n"
"                            file (all or nothing) and exit\n"
"  -v, --verbose             debug logging\n"
"  -h, --help                this help\n"
"  -V, --version             print the version\n"
"\n"
"Prints 'listening on HOST:PORT (NAME PROTOCOL)' on stdout for each listener\n"
"once it accepts connections; logs go to stderr. SIGTERM or SIGINT stops it\n"
"cleanly; SIGHUP reloads the TLS files, the ACL file and the credentials.\n"
"Exit status: 0 clean stop, 1 runtime failure, 2 usage error.\n", f);
}

static void usage(FILE *f) {
  usage_listeners(f);
  usage_store(f);
  usage_limits(f);
  usage_modes(f);
}

static void on_signal(int sig) {
  if (!g_server)
    return;
  if (sig == SIGHUP)
    dc_server_request_reload(g_server);
  else
    dc_server_stop(g_server);
}

/* ReloadSecurity's TLS part: rebuilds the shared context once and reports
 * for each TLS listener (or the one named). -1: no such TLS listener. */
static int reload_tls(void *opaque, const char *listener,
                      dc_reload_report_t *reports, int max) {
  reload_ctx_t *rc = opaque;
  bool found = false;
  for (int i = 0; i < rc->n; i++)
    found |= rc->is_tls[i] && (!listener || !strcmp(listener, rc->names[i]));
  if (!found)
    return listener ? -1 : 0;
  char err[512] = "";
  int failed = dc_tls_ctx_reload(rc->tls, err, sizeof(err));
  char subject[512];
  int64_t not_after;
  dc_tls_ctx_describe(rc->tls, subject, sizeof(subject), &not_after);
  int n = 0;
  for (int i = 0; i < rc->n && n < max; i++) {
    if (!rc->is_tls[i] || (listener && strcmp(listener, rc->names[i])))
      continue;
    dc_reload_report_t *r = &reports[n++];
    snprintf(r->listener, sizeof(r->listener), "%s", rc->names[i]);
    r->error_code = failed ? DC_ERR_UNKNOWN_SERVER_ERROR : 0;
    snprintf(r->message, sizeof(r->message), "%s",
             failed ? err : "");
    snprintf(r->subject, sizeof(r->subject), "%s", subject);
    r->not_after_ms = not_after;
  }
  if (failed)
    dc_log(DC_LOG_ERR, "TLS reload failed, still serving the previous "
                       "certificate (%s): %s", subject, err);
  else
    dc_log(DC_LOG_INFO, "TLS reloaded: new connections get %s", subject);
  return n;
}

/* SIGHUP: everything, from the same paths. */
static void on_reload(void *opaque) {
  reload_ctx_t *rc = opaque;
  dc_reload_report_t rep[MAX_LISTEN];
  if (rc->tls)
    reload_tls(rc, NULL, rep, MAX_LISTEN);
  dc_reload_file_report_t files[DC_RELOAD_FILES_MAX];
  int n = dc_broker_reload_security(rc->broker, files);
  char line[4096];
  int bad = dc_reload_files_say(files, n, false, line, sizeof(line));
  if (n)
    dc_log(bad ? DC_LOG_ERR : DC_LOG_INFO, "security reload: %s", line);
}

static bool set_str(char **dst, const char *v) {
  free(*dst);
  *dst = strdup(v);
  return *dst != NULL;
}

/* Splits "host:port" or "[v6]:port". */
static bool split_hostport(const char *s, char *host, size_t hsz, int *port) {
  const char *colon = strrchr(s, ':');
  if (!colon)
    return false;
  const char *h = s;
  size_t hl = (size_t)(colon - s);
  if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  }
  if (hl >= hsz)
    return false;
  memcpy(host, h, hl);
  host[hl] = '\0';
  int64_t p;
  if (!dc_parse_int64(colon + 1, &p) || p < 0 || p > 65535)
    return false;
  *port = (int)p;
  return true;
}

/* A key with two values, no and yes (e.g. "false", "true"): *out = the
 * value is yes. False, said, for anything else. */
static bool parse_choice(const char *key, const char *v, const char *no,
                         const char *yes, bool *out) {
  if (strcmp(v, no) && strcmp(v, yes)) {
    fprintf(stderr, "dynconfd: %s must be %s or %s\n", key, yes, no);
    return false;
  }
  *out = !strcmp(v, yes);
  return true;
}

static bool parse_num(const char *what, const char *v, int64_t min,
                      int64_t max, int64_t *out) {
  if (!dc_parse_int64(v, out) || *out < min || *out > max) {
    fprintf(stderr, "dynconfd: %s must be an integer in %lld..%lld, not '%s'\n",
            what, (long long)min, (long long)max, v);
    return false;
  }
  return true;
}

/* The store.* settings; false (with a message) for a bad value, and
 * *known false for a key that is not one of them. */
static bool apply_store_setting(settings_t *st, const char *key,
                                const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "store")) {
    if (strcmp(val, "sqlite") && strcmp(val, "kafka")) {
      fprintf(stderr, "dynconfd: store must be sqlite or kafka, not '%s'\n",
              val);
      return false;
    }
    return set_str(&st->store, val);
  }
  if (!strcmp(key, "store.bootstrap.servers"))
    return set_str(&st->store_bootstrap, val);
  if (!strcmp(key, "store.topic"))
    return set_str(&st->store_topic, val);
  if (!strcmp(key, "store.config.file"))
    return set_str(&st->store_config, val);
  if (!strcmp(key, "store.timeout.ms"))
    return parse_num(key, val, 100, 3600000, &st->store_timeout_ms);
  if (!strcmp(key, "log.format"))
    return parse_choice(key, val, "text", "json", &st->log_json);
  if (!strcmp(key, "metrics.listen"))
    return set_str(&st->metrics_listen, val);
  if (!strcmp(key, "store.history.topic"))
    return set_str(&st->store_history_topic, val);
  if (!strcmp(key, "forward.listener"))
    return set_str(&st->forward_listener, val);
  if (!strcmp(key, "forward.config"))
    return set_str(&st->forward_config, val);
  if (!strcmp(key, "store.session.timeout.ms"))
    return parse_num(key, val, 1000, 3600000, &st->store_session_ms);
  if (!strcmp(key, "store.read.only"))
    return parse_choice(key, val, "false", "true", &st->store_read_only);
  *known = false;
  return false;
}

/* An unsigned setting in min..max; false (with a message) when not. */
static bool parse_unsigned(const char *key, const char *v, unsigned min,
                           unsigned max, unsigned *out) {
  int64_t n;
  if (!parse_num(key, v, min, max, &n))
    return false;
  *out = (unsigned)n;
  return true;
}

/* The metrics endpoint's bounds, as apply_listener_setting. */
static bool apply_metrics_setting(settings_t *st, const char *key,
                                  const char *val, bool *known) {
  dc_http_limits_t *l = &st->srv.http;
  unsigned bytes;
  *known = true;
  if (!strcmp(key, "metrics.max.connections"))
    return parse_unsigned(key, val, 1, 65536, &l->max_connections);
  if (!strcmp(key, "metrics.max.connections.per.ip"))
    return parse_unsigned(key, val, 1, 65536, &l->max_per_address);
  if (!strcmp(key, "metrics.idle.timeout.seconds"))
    return parse_unsigned(key, val, 1, 3600, &l->idle_timeout_s);
  if (!strcmp(key, "metrics.max.header.bytes")) {
    if (!parse_unsigned(key, val, 4096, 1024 * 1024, &bytes))
      return false;
    l->max_header_bytes = bytes;
    return true;
  }
  *known = false;
  return false;
}

/* The listener settings; false (with a message) for a bad value, and
 * *known false for a key that is not one of them. */
static bool apply_listener_setting(settings_t *st, const char *key,
                                   const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "listeners") || !strcmp(key, "listen")) {
    char *copy = strdup(val), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (st->n_listen == MAX_LISTEN) {
        fprintf(stderr, "dynconfd: at most %d listeners\n", MAX_LISTEN);
        free(copy);
        return false;
      }
      st->listen[st->n_listen++] = strdup(t);
    }
    free(copy);
    return true;
  }
  if (!strcmp(key, "advertised.listeners") || !strcmp(key, "advertise")) {
    char *copy = strdup(val), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
      if (st->n_advertise < MAX_LISTEN)
        st->advertise[st->n_advertise++] = strdup(t);
    free(copy);
    return true;
  }
  if (!strcmp(key, "listener.security.protocol.map"))
    return set_str(&st->protocol_map, val);
  *known = false;
  return false;
}

/* sasl.oauthbearer.*, as apply_listener_setting. */
static bool apply_oauth_setting(settings_t *st, const char *key,
                                const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "sasl.oauthbearer.jwks.file"))
    return set_str(&st->oauth_jwks, val);
  if (!strcmp(key, "sasl.oauthbearer.unsecured"))
    return parse_choice(key, val, "false", "true", &st->oauth_unsecured);
  if (!strcmp(key, "sasl.oauthbearer.expected.issuer"))
    return set_str(&st->oauth_issuer, val);
  if (!strcmp(key, "sasl.oauthbearer.expected.audience"))
    return set_str(&st->oauth_audience, val);
  if (!strcmp(key, "sasl.oauthbearer.sub.claim.name"))
    return set_str(&st->oauth_claim, val);
  if (!strcmp(key, "sasl.oauthbearer.clock.skew.seconds"))
    return parse_num(key, val, 0, 3600, &st->oauth_skew_s);
  *known = false;
  return false;
}

/* The TLS, SASL and authorization settings, as apply_listener_setting. */
static bool apply_security_setting(settings_t *st, const char *key,
                                   const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "ssl.certificate.location"))
    return set_str(&st->ssl_cert, val);
  if (!strcmp(key, "ssl.key.location"))
    return set_str(&st->ssl_key, val);
  if (!strcmp(key, "ssl.ca.location"))
    return set_str(&st->ssl_ca, val);
  if (!strcmp(key, "ssl.client.auth")) {
    if (!strcmp(val, "none"))
      st->ssl_client_auth = DC_TLS_CLIENT_AUTH_NONE;
    else if (!strcmp(val, "requested"))
      st->ssl_client_auth = DC_TLS_CLIENT_AUTH_REQUESTED;
    else if (!strcmp(val, "required"))
      st->ssl_client_auth = DC_TLS_CLIENT_AUTH_REQUIRED;
    else {
      fprintf(stderr, "dynconfd: %s must be none, requested or required, not "
                      "'%s'\n", key, val);
      return false;
    }
    return true;
  }
  if (!strcmp(key, "sasl.credentials.file"))
    return set_str(&st->credentials, val);
  if (!strcmp(key, "sasl.enabled.mechanisms"))
    return set_str(&st->sasl_mechanisms, val);
  if (!strcmp(key, "acl.file"))
    return set_str(&st->acl_file, val);
  if (!strncmp(key, "sasl.oauthbearer.", 17))
    return apply_oauth_setting(st, key, val, known);
  if (!strcmp(key, "sasl.kerberos.service.name"))
    return set_str(&st->krb_service, val);
  if (!strcmp(key, "sasl.kerberos.keytab")) { /* empty: none */
    free(st->krb_keytab);
    st->krb_keytab = NULL;
    return !*val || set_str(&st->krb_keytab, val);
  }
  if (!strcmp(key, "sasl.kerberos.principal.to.local.rules"))
    return set_str(&st->krb_rules, val);
  if (!strcmp(key, "super.users"))
    return set_str(&st->super_users, val);
  *known = false;
  return false;
}

/* The bounds on sessions, connections, requests and entities, as
 * apply_listener_setting. */
static bool apply_limit_setting(settings_t *st, const char *key,
                                const char *val, bool *known) {
  int64_t n;
  *known = true;
  if (!strcmp(key, "group.min.session.timeout.ms"))
    return parse_num(key, val, 1, 3600000, &st->st_min);
  if (!strcmp(key, "group.max.session.timeout.ms"))
    return parse_num(key, val, 1, 3600000, &st->st_max);
  if (!strcmp(key, "socket.request.max.bytes")) {
    if (!parse_num(key, val, 64, 100 * 1024 * 1024, &n))
      return false;
    st->srv.max_request_size = (size_t)n;
    return true;
  }
  if (!strcmp(key, "connections.max.reauth.ms"))
    return parse_num(key, val, 0, INT64_C(86400000) * 365, &st->reauth_ms);
  if (!strcmp(key, "connections.max.idle.ms")) {
    if (!parse_num(key, val, 100, INT32_MAX, &n))
      return false;
    st->srv.idle_timeout_ms = (int)n;
    return true;
  }
  if (!strcmp(key, "max.request.resources"))
    return parse_num(key, val, 1, 1000000, &st->max_req_resources);
  if (!strcmp(key, "max.request.configs"))
    return parse_num(key, val, 1, 1000000, &st->max_req_configs);
  if (!strcmp(key, "max.entity.configs"))
    return parse_num(key, val, 1, 1000000, &st->max_entity_configs);
  if (!strcmp(key, "max.entities"))
    return parse_num(key, val, 1, INT64_MAX / 2, &st->max_entities);
  if (!strcmp(key, "max.request.writes"))
    return parse_num(key, val, 3000, 100000000, &st->max_req_writes);
  if (!strcmp(key, "fleet.retention.ms"))
    return parse_num(key, val, 0, INT64_C(86400000) * 30,
                     &st->fleet_retention_ms);
  if (!strcmp(key, "fleet.max.bytes"))
    return parse_num(key, val, 1024 * 1024, INT64_MAX / 2,
                     &st->fleet_max_bytes);
  if (!strcmp(key, "fleet.max.waits"))
    return parse_num(key, val, 1, 100000, &st->fleet_max_waits);
  if (!strcmp(key, "fleet.max.waits.per.principal"))
    return parse_num(key, val, 1, 100000, &st->fleet_max_waits_pp);
  if (!strcmp(key, "connection.failed.authentication.delay.ms"))
    return parse_num(key, val, 0, 60000, &st->failed_auth_delay_ms);
  if (!strcmp(key, "max.response.bytes"))
    return parse_num(key, val, 65536, 1024 * 1024 * 1024, &st->max_response);
  if (!strcmp(key, "max.buffered.bytes")) {
    if (!parse_num(key, val, 16 * 1024 * 1024, INT64_MAX / 2, &n))
      return false;
    st->srv.max_buffered = (size_t)n;
    return true;
  }
  if (!strcmp(key, "max.connections")) {
    if (!parse_num(key, val, 1, 10000000, &n))
      return false;
    st->srv.max_connections = (int)n;
    return true;
  }
  if (!strcmp(key, "max.connection.creation.rate") ||
      !strcmp(key, "max.connection.creation.rate.per.ip")) {
    if (!parse_num(key, val, 0, 10000000, &n))
      return false;
    if (strstr(key, "per.ip"))
      st->srv.max_connection_rate_per_ip = (double)n;
    else
      st->srv.max_connection_rate = (double)n;
    return true;
  }
  *known = false;
  return false;
}

/* Applies one setting by its config-file name. Strings are duplicated and
 * owned by settings (freed at exit). */
static bool apply_setting(settings_t *st, const char *key, const char *val) {
  int64_t n;
  if (!strcmp(key, "data.dir")) {
    free(st->data_dir);
    st->data_dir = strdup(val);
    return true;
  }
  if (!strcmp(key, "node.id")) {
    if (!parse_num(key, val, 0, INT32_MAX, &n))
      return false;
    st->node_id = (int32_t)n;
    return true;
  }
  if (!strcmp(key, "allow.unknown.configs"))
    return parse_choice(key, val, "false", "true", &st->allow_unknown);
  /* The other keys belong to one group each; the first that knows the
   * key applies it. */
  static bool (*const groups[])(settings_t *, const char *, const char *,
                                bool *) = {
      apply_listener_setting, apply_security_setting, apply_limit_setting,
      apply_store_setting, apply_metrics_setting};
  for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
    bool known;
    bool ok = groups[i](st, key, val, &known);
    if (known)
      return ok;
  }
  fprintf(stderr, "dynconfd: unknown setting '%s'\n", key);
  return false;
}

/* One setting of the --config file (a dc_kvfile_cb_t; opaque is the
 * settings). apply_setting() has said what is wrong on stderr. */
static int config_file_setting(void *opaque, const char *key,
                               const char *value, int lineno, char *why,
                               size_t why_size) {
  (void)lineno;
  if (apply_setting(opaque, key, value))
    return 0;
  dc_seterr(why, why_size, "the setting '%s' was refused (see above)", key);
  return -1;
}

static bool load_config_file(settings_t *st, const char *path) {
  char err[1600];
  if (dc_kvfile_read(path, config_file_setting, st, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return false;
  }
  return true;
}

static const char *op_name(int8_t op) {
  switch (op) {
  case DC_OP_SET: return "SET";
  case DC_OP_DELETE: return "DELETE";
  case DC_OP_APPEND: return "APPEND";
  case DC_OP_SUBTRACT: return "SUBTRACT";
  }
  return "?";
}

static int print_row(void *opaque, const dc_audit_row_t *r) {
  (void)opaque;
  time_t secs = (time_t)(r->time_ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  printf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s %s %s %s:%s %s %s %s -> %s\n",
         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
         tm.tm_sec, (int)(r->time_ms % 1000), r->principal, r->peer, r->api,
         r->resource_type == DC_RES_CLIENT ? "client"
         : r->resource_type == DC_RES_USER ? "user"
                                           : "resource",
         r->entity, r->key, op_name(r->op),
         r->old_value ? r->old_value : "(unset)",
         r->new_value ? r->new_value : "(unset)");
  return 0;
}

static int print_history(const char *dir, const char *entity) {
  char err[512] = "";
  dc_store_t *store;
  if (dc_store_open_sqlite_ro(dir, &store, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  int r = dc_store_history(store, entity, print_row, NULL, err, sizeof(err));
  dc_store_close(store);
  if (r) {
    fprintf(stderr, "dynconfd: cannot read history: %s\n", err);
    return 1;
  }
  return 0;
}

/* The store has new records from another server: apply them. */
static void on_store_event(void *opaque) { dc_broker_store_poll(opaque); }

/* The Kafka store's options from the settings. */
static int kafka_opts(const settings_t *st, dc_kafka_store_opts_t *o,
                      char *errstr, size_t errstr_size) {
  if (!st->store_bootstrap) {
    dc_seterr(errstr, errstr_size, "--store kafka needs --store-bootstrap "
             "HOST:PORT,...");
    return -1;
  }
  *o = (dc_kafka_store_opts_t){.data_dir = st->data_dir,
                               .bootstrap = st->store_bootstrap,
                               .topic = st->store_topic,
                               .history_topic = st->store_history_topic,
                               .config_file = st->store_config,
                               .timeout_ms = (int)st->store_timeout_ms,
                               .node_id = st->node_id,
                               .read_only = st->store_read_only,
                               .session_timeout_ms =
                                   (int)st->store_session_ms};
  return 0;
}

/* The configured store: SQLite in the data directory, or the Kafka topic
 * with its cache there. */
static int open_store(const settings_t *st, dc_store_t **out, char *errstr,
                      size_t errstr_size) {
  if (!st->store || !strcmp(st->store, "sqlite"))
    return dc_store_open_sqlite(st->data_dir, out, errstr, errstr_size);
  dc_kafka_store_opts_t o;
  return kafka_opts(st, &o, errstr, errstr_size) ||
         dc_store_open_kafka(&o, out, errstr, errstr_size);
}

/* --history with --store kafka: from the history topic, which holds every
 * change (a replica's cache has those it applied). */
static int print_kafka_history(const settings_t *st, const char *entity) {
  char err[1024] = "";
  dc_kafka_store_opts_t o;
  if (kafka_opts(st, &o, err, sizeof(err)) ||
      dc_kafka_history(&o, entity, print_row, NULL, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: cannot read history: %s\n", err);
    return 1;
  }
  return 0;
}

/* --export: the store's entities as the export document, to a file
 * (written whole, then renamed into place) or "-" (stdout). */
static int export_store(const char *dir, const char *path) {
  char err[3 * PATH_MAX] = "", tmp[PATH_MAX];
  dc_store_t *store;
  if (dc_store_open_sqlite_ro(dir, &store, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  bool to_stdout = !strcmp(path, "-");
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = to_stdout ? stdout : fopen(tmp, "w");
  int r = f ? dc_transfer_export(store, f, err, sizeof(err)) : -1;
  if (!f)
    snprintf(err, sizeof(err), "cannot create %s: %s", tmp, strerror(errno));
  dc_store_close(store);
  if (!to_stdout && f) {
    if (!r && (fflush(f) || fsync(fileno(f)))) {
      snprintf(err, sizeof(err), "cannot write %s: %s", tmp, strerror(errno));
      r = -1;
    }
    fclose(f);
    if (!r && rename(tmp, path)) {
      snprintf(err, sizeof(err), "cannot rename %s to %s: %s", tmp, path,
               strerror(errno));
      r = -1;
    }
    if (r)
      unlink(tmp);
  }
  if (r) {
    fprintf(stderr, "dynconfd: export failed: %s\n", err);
    return 1;
  }
  return 0;
}

/* --import: fills an empty store from an export document. */
static int import_store(const settings_t *st, const char *path) {
  char err[768] = "";
  dc_store_t *store;
  if (dc_store_open_sqlite(st->data_dir, &store, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  dc_import_opts_t o = {.allow_unknown_keys = st->allow_unknown,
                        .max_entity_configs = (size_t)st->max_entity_configs,
                        .source = path};
  size_t n_ent = 0, n_cfg = 0;
  int r = dc_transfer_import(store, path, &o, &n_ent, &n_cfg, err,
                             sizeof(err));
  dc_store_close(store);
  if (r) {
    fprintf(stderr, "dynconfd: import from %s failed, nothing written: %s\n",
            path, err);
    return 1;
  }
  printf("imported %zu entities (%zu configs) from %s into %s\n", n_ent, n_cfg,
         path, st->data_dir);
  return 0;
}

static void raise_fd_limit(void) {
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

static void settings_free(settings_t *st) {
  for (int i = 0; i < st->n_listen; i++)
    free(st->listen[i]);
  for (int i = 0; i < st->n_advertise; i++)
    free(st->advertise[i]);
  free(st->data_dir);
  free(st->store);
  free(st->store_bootstrap);
  free(st->store_topic);
  free(st->store_config);
  free(st->protocol_map);
  free(st->forward_listener);
  free(st->forward_config);
  free(st->store_history_topic);
  free(st->metrics_listen);
  free(st->ssl_cert);
  free(st->ssl_key);
  free(st->ssl_ca);
  free(st->credentials);
  free(st->sasl_mechanisms);
  free(st->oauth_jwks);
  free(st->oauth_issuer);
  free(st->oauth_audience);
  free(st->oauth_claim);
  free(st->krb_service);
  free(st->krb_keytab);
  free(st->krb_rules);
  free(st->acl_file);
  free(st->super_users);
}

/* "NAME://HOST:PORT" -> name and the address; a bare "HOST:PORT" is a
 * PLAINTEXT listener. */
static const char *split_listener(const char *spec, char *name, size_t nsz) {
  const char *sep = strstr(spec, "://");
  if (!sep) {
    snprintf(name, nsz, "PLAINTEXT");
    return spec;
  }
  size_t n = (size_t)(sep - spec);
  if (n == 0 || n >= nsz)
    return NULL;
  memcpy(name, spec, n);
  name[n] = '\0';
  return sep + 3;
}

/* The protocol of listener NAME: from the map, else NAME itself. */
static int listener_protocol(const char *map, const char *name) {
  if (map) {
    size_t nl = strlen(name);
    for (const char *p = map; *p;) {
      size_t len = strcspn(p, ",");
      const char *colon = memchr(p, ':', len);
      if (colon && (size_t)(colon - p) == nl && !strncasecmp(p, name, nl)) {
        char proto[32];
        size_t pl = len - nl - 1;
        if (pl >= sizeof(proto))
          return -1;
        memcpy(proto, colon + 1, pl);
        proto[pl] = '\0';
        return dc_sec_protocol_parse(proto);
      }
      p += len;
      p += *p == ',';
    }
  }
  return dc_sec_protocol_parse(name);
}

/* --add-user: the password is the first line of stdin. */
static int add_user(const char *path, const char *user, int iterations) {
  if (!path) {
    fprintf(stderr, "dynconfd: --add-user needs --credentials FILE\n");
    return EXIT_USAGE;
  }
  char pw[1024];
  if (isatty(0))
    fprintf(stderr, "password for %s: ", user);
  if (!fgets(pw, sizeof(pw), stdin)) {
    fprintf(stderr, "dynconfd: --add-user reads the password from stdin; "
                    "got nothing\n");
    return EXIT_USAGE;
  }
  pw[strcspn(pw, "\r\n")] = '\0';
  char err[512] = "";
  int r = dc_credentials_add(path, user, pw, iterations, err, sizeof(err));
  memset(pw, 0, sizeof(pw));
  if (r) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  printf("stored SCRAM-SHA-256 and SCRAM-SHA-512 credentials for '%s' in %s\n",
         user, path);
  return 0;
}

/* With the Kafka store, alters reaching this server while another writes
 * are forwarded to the writer's listener of the same name as
 * --forward-listener (default: the first one the forward connection can
 * speak). --forward-config, Kafka client properties, sets that
 * connection's security: this replica's credentials for a SASL listener.
 * Over TLS the replica's own --ssl-ca, --ssl-cert and --ssl-key serve
 * where the file names none. */

static bool is_sasl(int proto) {
  return proto == DC_SEC_SASL_PLAINTEXT || proto == DC_SEC_SASL_SSL;
}

/* Can a forward connection set up by fc (NULL: none) speak proto? The
 * file's security.protocol if it gives one; else a file with a SASL
 * mechanism speaks SASL, and no file or one without speaks PLAINTEXT or
 * SSL. */
static bool forward_speaks(const dc_client_props_t *fc, int proto) {
  if (fc && fc->sec.protocol)
    return dc_sec_protocol_parse(fc->sec.protocol) == proto;
  return is_sasl(proto) == (fc && fc->sec.sasl_mechanism);
}

/* Why --forward-listener's listener (of protocol proto) cannot be used
 * with fc; a usage error, said. */
static void say_unspoken(const settings_t *st, int proto,
                         const dc_client_props_t *fc) {
  const char *pname = dc_sec_protocol_name((dc_sec_protocol_t)proto);
  if (fc && fc->sec.protocol)
    fprintf(stderr, "dynconfd: --forward-listener %s is a %s listener but "
            "--forward-config %s says security.protocol=%s\n",
            st->forward_listener, pname, st->forward_config,
            fc->sec.protocol);
  else if (is_sasl(proto))
    fprintf(stderr, "dynconfd: --forward-listener %s is a %s listener: "
            "forwarding over it authenticates as this replica, which needs "
            "its credentials in --forward-config FILE (sasl.mechanism and "
            "its sasl.username/sasl.password, keytab or token file)\n",
            st->forward_listener, pname);
  else
    fprintf(stderr, "dynconfd: --forward-listener %s is a %s listener but "
            "--forward-config %s has SASL credentials (set "
            "security.protocol=%s there to forward over it anyway)\n",
            st->forward_listener, pname, st->forward_config, pname);
}

/* The listener to forward over and its protocol, or -1 with *why set:
 * 'n' no listener of that name, 'p' it cannot be spoken, 0 none can. */
static int pick_forward_listener(const settings_t *st, const reload_ctx_t *rc,
                                 const dc_client_props_t *fc, int *proto,
                                 char *why) {
  for (int i = 0; i < rc->n; i++) {
    int p = listener_protocol(st->protocol_map, rc->names[i]);
    bool named = st->forward_listener &&
                 !strcmp(st->forward_listener, rc->names[i]);
    if (named && !forward_speaks(fc, p)) {
      *proto = p;
      *why = 'p';
      return -1;
    }
    if (named || (!st->forward_listener && forward_speaks(fc, p))) {
      *proto = p;
      return i;
    }
  }
  *why = st->forward_listener ? 'n' : 0;
  return -1;
}

/* The forward connection's security for a listener of protocol proto:
 * the file's, with this server's own TLS material where it names none. */
static void forward_security(const settings_t *st, const dc_client_props_t *fc,
                             int proto, dc_kclient_security_t *sec) {
  *sec = fc ? fc->sec : (dc_kclient_security_t){0};
  sec->protocol = dc_sec_protocol_name((dc_sec_protocol_t)proto);
  if (proto != DC_SEC_SSL && proto != DC_SEC_SASL_SSL)
    return;
  if (!sec->ssl_ca && !sec->ssl_ca_pem)
    sec->ssl_ca = st->ssl_ca;
  if (!sec->ssl_cert && !sec->ssl_cert_pem && !sec->ssl_keystore) {
    sec->ssl_cert = st->ssl_cert;
    sec->ssl_key = st->ssl_key;
  }
  /* Replicas reach each other at advertised addresses, often IPs. */
  if (!fc || !fc->hostname_check_given)
    sec->ssl_no_hostname_check = true;
}

/* --forward-config into *fc, checked as the forwarder will use it: 0, or
 * -1 after a usage error naming the option. */
static int load_forward_config(const settings_t *st, dc_client_props_t *fc) {
  char err[1600];
  if (dc_client_props_load(fc, st->forward_config, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: --forward-config: %s\n", err);
    return -1;
  }
  if (fc->sec.protocol && dc_sec_protocol_parse(fc->sec.protocol) < 0) {
    fprintf(stderr, "dynconfd: --forward-config %s: unknown "
            "security.protocol '%s' (PLAINTEXT, SSL, SASL_PLAINTEXT or "
            "SASL_SSL)\n", st->forward_config, fc->sec.protocol);
    return -1;
  }
  return 0;
}

/* What the forwarder will be given, tried now so that a file it cannot
 * use (a missing CA, a mechanism without its password) is a usage error
 * naming the option. 0, or -1 said. */
static int check_forward_security(const settings_t *st,
                                  const dc_kclient_security_t *sec) {
  char err[512];
  dc_kclient_t *kc = dc_kclient_new(NULL);
  int rc = kc ? dc_kclient_set_security(kc, sec, err, sizeof(err)) : 0;
  dc_kclient_destroy(kc);
  if (rc)
    fprintf(stderr, "dynconfd: --forward-config %s: %s\n",
            st->forward_config, err);
  return rc ? -1 : 0;
}

/* Forwarding as decided before anything opens. */
typedef struct forward_plan {
  const char *listener; /* the writer's listener; NULL: no forwarding */
  const dc_kclient_security_t *security; /* NULL: PLAINTEXT */
  dc_kclient_security_t sec; /* what security points to */
  dc_client_props_t props;   /* --forward-config, which sec points into */
} forward_plan_t;

/* No listener to forward over: a usage error when one was asked for
 * (said), else only a warning. Non-zero for the usage error. */
static int no_forward_listener(const settings_t *st,
                               const dc_client_props_t *use, int proto,
                               char why) {
  if (why == 'p')
    say_unspoken(st, proto, use);
  else if (why == 'n')
    fprintf(stderr, "dynconfd: --forward-listener %s: no listener has that "
            "name\n", st->forward_listener);
  else if (use)
    fprintf(stderr, "dynconfd: --forward-config %s: no listener has a "
            "protocol it speaks (%s)\n", st->forward_config,
            use->sec.protocol ? use->sec.protocol
            : use->sec.sasl_mechanism ? "SASL_PLAINTEXT or SASL_SSL"
                                      : "PLAINTEXT or SSL");
  else
    dc_log(DC_LOG_WARN, "no PLAINTEXT or SSL listener: alters reaching "
           "this replica while another writes are refused, not forwarded "
           "(to forward over a SASL listener, give this replica's "
           "credentials with --forward-config FILE)");
  return why || use;
}

/* Fills fp from the settings. Non-zero: a usage error, printed. */
static int forwarding(const settings_t *st, const reload_ctx_t *rc,
                      forward_plan_t *fp) {
  if (!st->store || strcmp(st->store, "kafka") || st->store_read_only)
    return 0;
  if (st->forward_config && load_forward_config(st, &fp->props))
    return -1;
  const dc_client_props_t *use = st->forward_config ? &fp->props : NULL;
  int proto = -1;
  char why = 0;
  int pick = pick_forward_listener(st, rc, use, &proto, &why);
  if (pick < 0)
    return no_forward_listener(st, use, proto, why);
  fp->listener = rc->names[pick];
  if (use || rc->is_tls[pick]) {
    forward_security(st, use, proto, &fp->sec);
    fp->security = &fp->sec;
  }
  return use ? check_forward_security(st, &fp->sec) : 0;
}

/* The plan into the broker's options. */
static void apply_forwarding(const settings_t *st, const forward_plan_t *fp,
                             dc_broker_opts_t *bo) {
  if (!fp->listener)
    return;
  bo->forward = true;
  bo->forward_listener = fp->listener;
  bo->forward_timeout_ms = (int)(2 * st->store_timeout_ms + 2000);
  bo->forward_security = fp->security;
}

/* Under systemd (Type=notify): ready once the listeners are open; the
 * watchdog, if WatchdogSec= asks for it, pinged from the event loop's
 * tick (so it stops when the loop does). No-ops elsewhere. */
static uint64_t g_watchdog_usec;
static int64_t g_last_ping;

static void watchdog_tick(void *opaque) {
  (void)opaque;
  int64_t now = dc_mono_ms();
  if (now - g_last_ping >= (int64_t)(g_watchdog_usec / 2000)) {
    sd_notify(0, "WATCHDOG=1");
    g_last_ping = now;
  }
}

static void notify_ready(char bound[][300], int n) {
  char status[400];
  snprintf(status, sizeof(status), "READY=1\nSTATUS=serving on %.300s%s",
           n ? bound[0] : "(no listener)", n > 1 ? " and more" : "");
  sd_notify(0, status);
}

/* --metrics-listen: the HTTP endpoint, its bound address printed like
 * the listeners'. */
static int start_metrics(const settings_t *st, char *errstr,
                         size_t errstr_size) {
  char host[256], bound[300];
  int port;
  if (!split_hostport(st->metrics_listen, host, sizeof(host), &port)) {
    dc_seterr(errstr, errstr_size, "--metrics-listen must be HOST:PORT, not "
             "'%s'", st->metrics_listen);
    return -1;
  }
  if (dc_server_add_metrics(g_server, host, port, bound, sizeof(bound),
                            errstr, errstr_size))
    return -1;
  printf("metrics on %s\n", bound);
  return 0;
}

/* Tells a replicated store how clients reach this server: each
 * listener's advertised address, else the address it bound. */
static int advertise_to_store(dc_store_t *store, const settings_t *st,
                              char names[][64], char bound[][300],
                              char *errstr, size_t errstr_size) {
  dc_store_listener_t l[MAX_LISTEN];
  char host[MAX_LISTEN][256], name[64];
  for (int i = 0; i < st->n_listen; i++) {
    int port = 0;
    const char *addr = i < st->n_advertise
                           ? split_listener(st->advertise[i], name,
                                            sizeof(name))
                           : bound[i];
    if (!addr || !split_hostport(addr, host[i], sizeof(host[i]), &port)) {
      dc_seterr(errstr, errstr_size, "cannot tell the store listener %s's "
               "address", names[i]);
      return -1;
    }
    l[i] = (dc_store_listener_t){names[i], host[i], port};
  }
  return dc_store_advertise(store, l, (size_t)st->n_listen, errstr,
                            errstr_size);
}

/* The BROKER resource's keys: this server's own settings, read-only. */
static const char *const broker_keys[] = {
    "node.id", "listeners", "advertised.listeners",
    "data.dir", "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "allow.unknown.configs", "socket.request.max.bytes",
    "connections.max.idle.ms", "max.connections",
    "listener.security.protocol.map", "ssl.client.auth",
    "sasl.enabled.mechanisms", "acl.file",
    "max.request.resources", "max.request.configs",
    "max.entity.configs", "max.request.writes",
    "max.entities",
    "max.response.bytes",
    "max.buffered.bytes", "dynconf.version"};
#define N_BROKER_KEYS (sizeof(broker_keys) / sizeof(broker_keys[0]))

/* The BROKER resource's values as text, one per broker_keys entry. The
 * broker borrows them; listeners and adv are filled as the listeners
 * bind, after the broker exists. */
typedef struct broker_values {
  char node[16], stmin[24], stmax[24], maxreq[24], idle[24], maxconn[24];
  char maxres[24], maxcfg[24], maxent[24], maxwr[24], maxresp[24], maxbuf[24],
      maxents[24];
  char listeners[1024], adv[1024], pmap[1024];
  const char *vals[N_BROKER_KEYS];
} broker_values_t;

/* The server from start-up to shutdown. The broker borrows the options,
 * the BROKER values, the reload context and the forwarding security, so
 * they live here, as long as it does. */
typedef struct serve_ctx {
  settings_t *st;
  reload_ctx_t rctx;
  dc_store_t *store;
  dc_broker_t *broker;
  dc_broker_opts_t bo;
  forward_plan_t fwd;
  broker_values_t values;
  char bound[MAX_LISTEN][300];
  char err[512];
} serve_ctx_t;

/* Settings valid one by one that cannot work together. */
static bool limits_consistent(const settings_t *st) {
  if (st->st_min > st->st_max) {
    fprintf(stderr, "dynconfd: session timeout minimum %lld is above the "
                    "maximum %lld\n",
            (long long)st->st_min, (long long)st->st_max);
    return false;
  }
  if (st->max_req_writes < 3 * st->max_entity_configs) {
    /* One entity's largest change: its old set, its new set, an audit
     * row per key. */
    fprintf(stderr, "dynconfd: max.request.writes (%lld) must be at least "
                    "three times max.entity.configs (%lld), or an entity "
                    "could hold more than one request may rewrite\n",
            (long long)st->max_req_writes, (long long)st->max_entity_configs);
    return false;
  }
  return true;
}

/* Logging as asked, room for many connections, and a peer's close is an
 * error on the write rather than a SIGPIPE. */
static void setup_process(const settings_t *st) {
  if (st->verbose)
    dc_log_set_level(DC_LOG_DEBUG);
  if (st->log_json)
    dc_log_set_format(DC_LOG_JSON);
  raise_fd_limit();
  signal(SIGPIPE, SIG_IGN);
}

/* Each listener's name and whether it uses TLS or SASL, before anything
 * opens: a typo is a usage error. */
/* GSSAPI is configured by a keytab, or by naming it (the default keytab). */
static bool kerberos_enabled(const settings_t *st) {
  const char *m = st->sasl_mechanisms;
  for (size_t n; m && *m; m += n) {
    m += strspn(m, ", ");
    n = strcspn(m, ", ");
    if (n == 6 && !strncmp(m, "GSSAPI", 6))
      return true;
  }
  return st->krb_keytab != NULL;
}

static bool name_listeners(const settings_t *st, reload_ctx_t *rc,
                           bool *any_tls, bool *any_sasl) {
  for (int i = 0; i < st->n_listen; i++) {
    char name[64];
    if (!split_listener(st->listen[i], name, sizeof(name))) {
      fprintf(stderr, "dynconfd: bad listener '%s' (want NAME://HOST:PORT)\n",
              st->listen[i]);
      return false;
    }
    int proto = listener_protocol(st->protocol_map, name);
    if (proto < 0) {
      fprintf(stderr, "dynconfd: listener %s has no security protocol: name it "
                      "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, or map it "
                      "with --listener-security-protocol-map\n", name);
      return false;
    }
    snprintf(rc->names[i], sizeof(rc->names[i]), "%s", name);
    rc->is_tls[i] = proto == DC_SEC_SSL || proto == DC_SEC_SASL_SSL;
    *any_tls |= rc->is_tls[i];
    *any_sasl |= proto == DC_SEC_SASL_PLAINTEXT || proto == DC_SEC_SASL_SSL;
  }
  rc->n = st->n_listen;
  return true;
}

/* The listeners' names and the TLS context they share; EXIT_USAGE if
 * either is wrong. */
static int prepare_listeners(serve_ctx_t *s) {
  const settings_t *st = s->st;
  bool any_tls = false, any_sasl = false;
  if (!name_listeners(st, &s->rctx, &any_tls, &any_sasl))
    return EXIT_USAGE;
  if (any_tls) {
    s->rctx.tls = dc_tls_ctx_new(st->ssl_cert, st->ssl_key, st->ssl_ca,
                                 (dc_tls_client_auth_t)st->ssl_client_auth,
                                 s->err, sizeof(s->err));
    if (!s->rctx.tls) {
      dc_log(DC_LOG_ERR, "%s", s->err);
      return EXIT_USAGE;
    }
  }
  if (any_sasl && !st->credentials && !st->oauth_jwks &&
      !st->oauth_unsecured && !kerberos_enabled(st))
    dc_log(DC_LOG_WARN, "SASL listener without --credentials, OAUTHBEARER "
                        "or GSSAPI: nobody can authenticate");
  return 0;
}

/* The BROKER resource's values known before the listeners bind. */
static void format_broker_values(broker_values_t *v, const settings_t *st,
                                 const reload_ctx_t *rc) {
  snprintf(v->node, sizeof(v->node), "%d", (int)st->node_id);
  snprintf(v->stmin, sizeof(v->stmin), "%lld", (long long)st->st_min);
  snprintf(v->stmax, sizeof(v->stmax), "%lld", (long long)st->st_max);
  snprintf(v->maxreq, sizeof(v->maxreq), "%zu", st->srv.max_request_size);
  snprintf(v->idle, sizeof(v->idle), "%d", st->srv.idle_timeout_ms);
  snprintf(v->maxconn, sizeof(v->maxconn), "%d", st->srv.max_connections);
  snprintf(v->maxres, sizeof(v->maxres), "%lld",
           (long long)st->max_req_resources);
  snprintf(v->maxcfg, sizeof(v->maxcfg), "%lld",
           (long long)st->max_req_configs);
  snprintf(v->maxent, sizeof(v->maxent), "%lld",
           (long long)st->max_entity_configs);
  snprintf(v->maxwr, sizeof(v->maxwr), "%lld", (long long)st->max_req_writes);
  snprintf(v->maxents, sizeof(v->maxents), "%lld", (long long)st->max_entities);
  snprintf(v->maxresp, sizeof(v->maxresp), "%lld", (long long)st->max_response);
  snprintf(v->maxbuf, sizeof(v->maxbuf), "%zu", st->srv.max_buffered);
  static const char *const cauth[] = {"none", "requested", "required"};
  for (int i = 0; i < rc->n; i++) {
    size_t used = strlen(v->pmap);
    snprintf(v->pmap + used, sizeof(v->pmap) - used, "%s%s:%s", i ? "," : "",
             rc->names[i],
             dc_sec_protocol_name((dc_sec_protocol_t)listener_protocol(
                 st->protocol_map, rc->names[i])));
  }
  const char *vals[] = {v->node, v->listeners, v->adv, st->data_dir, v->stmin,
                        v->stmax, st->allow_unknown ? "true" : "false",
                        v->maxreq, v->idle, v->maxconn, v->pmap,
                        cauth[st->ssl_client_auth],
                        st->sasl_mechanisms ? st->sasl_mechanisms
                                            : DC_SASL_DEFAULT_MECHANISMS,
                        st->acl_file ? st->acl_file : "",
                        v->maxres, v->maxcfg, v->maxent, v->maxwr, v->maxents,
                        v->maxresp, v->maxbuf,
                        PACKAGE_VERSION};
  _Static_assert(sizeof(vals) / sizeof(vals[0]) == N_BROKER_KEYS,
                 "one BROKER value per key");
  memcpy(v->vals, vals, sizeof(vals));
}

/* The broker's options from the settings, the reload hook included. */
static void init_broker_opts(serve_ctx_t *s) {
  const settings_t *st = s->st;
  dc_broker_opts_t *bo = &s->bo;
  dc_broker_opts_init(bo);
  bo->node_id = st->node_id;
  bo->session_timeout_min_ms = st->st_min;
  bo->session_timeout_max_ms = st->st_max;
  bo->allow_unknown_keys = st->allow_unknown;
  bo->max_request_resources = (int32_t)st->max_req_resources;
  bo->max_request_configs = (int32_t)st->max_req_configs;
  bo->max_entity_configs = (int32_t)st->max_entity_configs;
  bo->max_request_writes = (int32_t)st->max_req_writes;
  bo->max_entities = st->max_entities;
  bo->max_response_size = (size_t)st->max_response;
  bo->fleet_retention_ms = st->fleet_retention_ms;
  bo->fleet_max_bytes = (size_t)st->fleet_max_bytes;
  bo->fleet_max_waits = (int32_t)st->fleet_max_waits;
  bo->fleet_max_waits_per_principal = (int32_t)st->fleet_max_waits_pp;
  bo->failed_auth_delay_ms = (int32_t)st->failed_auth_delay_ms;
  bo->n_static = N_BROKER_KEYS;
  bo->static_keys = broker_keys;
  bo->static_values = s->values.vals;
  bo->acl_path = st->acl_file;
  bo->super_users = st->super_users;
  bo->credentials_path = st->credentials;
  bo->sasl_enabled_mechanisms = st->sasl_mechanisms;
  bo->oauth_jwks_path = st->oauth_jwks;
  bo->oauth_unsecured = st->oauth_unsecured;
  bo->oauth_issuer = st->oauth_issuer;
  bo->oauth_audience = st->oauth_audience;
  bo->oauth_principal_claim = st->oauth_claim;
  bo->oauth_clock_skew_s = st->oauth_skew_s;
  bo->connections_max_reauth_ms = st->reauth_ms;
  bo->kerberos = kerberos_enabled(st);
  bo->kerberos_service_name = st->krb_service;
  bo->kerberos_keytab = st->krb_keytab;
  bo->kerberos_rules = st->krb_rules;
  bo->reload_tls = reload_tls;
  bo->reload_opaque = &s->rctx;
}

/* The broker over the open store: 1 if it cannot start. */
static int start_broker(serve_ctx_t *s) {
  format_broker_values(&s->values, s->st, &s->rctx);
  init_broker_opts(s);
  apply_forwarding(s->st, &s->fwd, &s->bo);
  s->broker = dc_broker_new(&s->bo, s->store, s->err, sizeof(s->err));
  /* The forwarder has its own copy of the credentials: wiped here. */
  s->bo.forward_security = s->fwd.security = NULL;
  s->fwd.sec = (dc_kclient_security_t){0};
  dc_client_props_free(&s->fwd.props);
  if (!s->broker) {
    dc_log(DC_LOG_ERR, "cannot start: %s", s->err);
    return 1;
  }
  s->rctx.broker = s->broker;
  return 0;
}

/* The event loop's hooks: SIGHUP's reload, the systemd watchdog's ping
 * and, for a store others write, following it. */
static void install_server_hooks(serve_ctx_t *s) {
  dc_server_opts_t *srv = &s->st->srv;
  srv->on_reload = on_reload;
  srv->reload_opaque = &s->rctx;
  if (sd_watchdog_enabled(0, &g_watchdog_usec) > 0) {
    if (g_watchdog_usec < 2000000)
      dc_log(DC_LOG_WARN, "WatchdogSec below 2 s: the watchdog is pinged "
             "once a second");
    srv->on_tick = watchdog_tick;
  }
  if (dc_store_event_fd(s->store) >= 0) { /* a store others write: follow it */
    srv->watch_fd = dc_store_event_fd(s->store);
    srv->on_watch = on_store_event;
    srv->watch_opaque = s->broker;
  }
}

/* Opens listener i, keeps the address it bound and adds it to the
 * BROKER values. 1 if it cannot bind, EXIT_USAGE for a bad address. */
static int add_listener(serve_ctx_t *s, int i) {
  const settings_t *st = s->st;
  char host[256], ahost[256] = "", name[64];
  int port, aport = 0;
  const char *addr = split_listener(st->listen[i], name, sizeof(name));
  if (!split_hostport(addr, host, sizeof(host), &port)) {
    fprintf(stderr, "dynconfd: listen address must be HOST:PORT, not '%s'\n",
            st->listen[i]);
    return EXIT_USAGE;
  }
  const char *aaddr = NULL;
  if (i < st->n_advertise)
    aaddr = split_listener(st->advertise[i], name, sizeof(name));
  if (i < st->n_advertise &&
      (!aaddr || !split_hostport(aaddr, ahost, sizeof(ahost), &aport))) {
    fprintf(stderr, "dynconfd: advertise address must be HOST:PORT, not '%s'\n",
            st->advertise[i]);
    return EXIT_USAGE;
  }
  dc_listener_conf_t lc = {
      .name = s->rctx.names[i],
      .protocol = (dc_sec_protocol_t)listener_protocol(st->protocol_map,
                                                       s->rctx.names[i]),
      .host = host,
      .port = port,
      .adv_host = ahost,
      .adv_port = aport,
      .tls = s->rctx.is_tls[i] ? s->rctx.tls : NULL};
  if (dc_server_add_listener(g_server, &lc, s->bound[i], sizeof(s->bound[i]),
                             s->err, sizeof(s->err))) {
    dc_log(DC_LOG_ERR, "%s", s->err);
    return 1;
  }
  /* BROKER resource values: the addresses actually bound. */
  broker_values_t *v = &s->values;
  size_t lused = strlen(v->listeners);
  snprintf(v->listeners + lused, sizeof(v->listeners) - lused, "%s%s://%.300s",
           i ? "," : "", s->rctx.names[i], s->bound[i]);
  size_t used = strlen(v->adv);
  snprintf(v->adv + used, sizeof(v->adv) - used, "%s%.300s", i ? "," : "",
           i < st->n_advertise ? st->advertise[i] : s->bound[i]);
  return 0;
}

static void install_signal_handlers(void) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

/* Ready: a line per listener on stdout (what scripts wait for), then
 * systemd told and the start logged. */
static void announce_listeners(serve_ctx_t *s) {
  const settings_t *st = s->st;
  for (int i = 0; i < st->n_listen; i++)
    printf("listening on %s (%s %s)\n", s->bound[i], s->rctx.names[i],
           dc_sec_protocol_name((dc_sec_protocol_t)listener_protocol(
               st->protocol_map, s->rctx.names[i])));
  fflush(stdout);
  notify_ready(s->bound, st->n_listen);
  dc_log(DC_LOG_INFO, "dynconfd %s node %d serving from %s",
         PACKAGE_VERSION, (int)st->node_id, st->data_dir);
}

/* Everything from the settings to an announced, listening server: 0, or
 * the exit status (1 runtime failure, EXIT_USAGE bad settings). */
static int start_server(serve_ctx_t *s) {
  int rc = prepare_listeners(s);
  if (rc)
    return rc;
  if (forwarding(s->st, &s->rctx, &s->fwd))
    return EXIT_USAGE;
  if (open_store(s->st, &s->store, s->err, sizeof(s->err))) {
    dc_log(DC_LOG_ERR, "cannot open the store: %s", s->err);
    return 1;
  }
  if ((rc = start_broker(s)))
    return rc;
  install_server_hooks(s);
  g_server = dc_server_new(s->broker, &s->st->srv, s->err, sizeof(s->err));
  if (!g_server) {
    dc_log(DC_LOG_ERR, "%s", s->err);
    return 1;
  }
  for (int i = 0; i < s->st->n_listen; i++)
    if ((rc = add_listener(s, i)))
      return rc;
  if (s->st->metrics_listen && start_metrics(s->st, s->err, sizeof(s->err))) {
    dc_log(DC_LOG_ERR, "cannot start: %s", s->err);
    return 1;
  }
  if (advertise_to_store(s->store, s->st, s->rctx.names, s->bound, s->err,
                         sizeof(s->err))) {
    dc_log(DC_LOG_ERR, "cannot start: %s", s->err);
    return 1;
  }
  install_signal_handlers();
  announce_listeners(s);
  return 0;
}

/* Closes what start_server opened; each part may be missing. */
static void stop_server(serve_ctx_t *s) {
  dc_server_destroy(g_server);
  g_server = NULL;
  dc_broker_destroy(s->broker);
  dc_client_props_free(&s->fwd.props);
  dc_tls_ctx_destroy(s->rctx.tls);
  if (s->store)
    dc_store_close(s->store);
}

/* OAUTHBEARER and GSSAPI are offered by default once configured (GSSAPI
 * by its keytab), and OAUTHBEARER never unconfigured. False after a
 * usage error. */
static bool resolve_mechanisms(settings_t *st) {
  bool oauth = st->oauth_jwks || st->oauth_unsecured;
  if (!st->sasl_mechanisms && (oauth || st->krb_keytab)) {
    char list[128];
    snprintf(list, sizeof(list), "%s%s%s", DC_SASL_DEFAULT_MECHANISMS,
             oauth ? ",OAUTHBEARER" : "", st->krb_keytab ? ",GSSAPI" : "");
    return set_str(&st->sasl_mechanisms, list);
  }
  if (st->sasl_mechanisms && !oauth &&
      strstr(st->sasl_mechanisms, "OAUTHBEARER")) {
    fprintf(stderr, "dynconfd: OAUTHBEARER is enabled but neither "
                    "--sasl-oauthbearer-jwks nor --sasl-oauthbearer-unsecured "
                    "is set\n");
    return false;
  }
  return true;
}

/* The server, until SIGTERM or SIGINT: 0 for a clean stop, 1 for a
 * runtime failure, EXIT_USAGE for bad settings. */
static int serve(settings_t *st) {
  if (!limits_consistent(st) || !resolve_mechanisms(st))
    return EXIT_USAGE;
  if (st->n_listen == 0)
    st->listen[st->n_listen++] = strdup("127.0.0.1:9092");
  setup_process(st);
  serve_ctx_t s = {.st = st};
  int rc = start_server(&s);
  if (!rc) {
    rc = dc_server_run(g_server) ? 1 : 0;
    sd_notify(0, "STOPPING=1");
    dc_log(DC_LOG_INFO, "shutting down");
  }
  stop_server(&s);
  return rc;
}

/* The long options; settings options share apply_setting with the
 * config file through option_keys. */
enum long_option {
  O_LISTEN = 256, O_ADV, O_DATA, O_NODE, O_CONFIG, O_STMIN, O_STMAX,
  O_UNKNOWN, O_MAXREQ, O_IDLE, O_MAXCONN, O_CONN_RATE, O_CONN_RATE_IP,
  O_HISTORY, O_ENTITY,
  O_LISTENERS, O_PMAP, O_SSL_CERT, O_SSL_KEY, O_SSL_CA, O_SSL_CAUTH,
  O_CREDS, O_MECHS, O_ACL, O_SUPER, O_ADD_USER, O_ITER, O_MAXRES,
  O_MAXCFG, O_MAXENT, O_MAXRESP, O_MAXBUF, O_MAXWR, O_MAXENTS,
  O_EXPORT, O_IMPORT, O_STORE, O_STORE_BS, O_STORE_TOPIC,
  O_STORE_CONFIG, O_STORE_TIMEOUT, O_STORE_RO, O_STORE_SESSION,
  O_FORWARD, O_STORE_HISTORY, O_METRICS, O_LOG_FORMAT, O_OAUTH_JWKS,
  O_OAUTH_UNSECURED, O_OAUTH_ISS, O_OAUTH_AUD, O_OAUTH_CLAIM, O_OAUTH_SKEW,
  O_REAUTH, O_KRB_SERVICE, O_KRB_KEYTAB, O_KRB_RULES, O_FLEET_RETENTION,
  O_FLEET_BYTES, O_FLEET_WAITS, O_FLEET_WAITS_PP, O_AUTH_DELAY,
  O_METRICS_MAXCONN, O_METRICS_PER_IP, O_METRICS_IDLE, O_METRICS_HEADER,
  O_FORWARD_CONFIG
};

static const struct option longopts[] = {
    {"listen", required_argument, NULL, O_LISTEN},
    {"advertise", required_argument, NULL, O_ADV},
    {"data-dir", required_argument, NULL, O_DATA},
    {"node-id", required_argument, NULL, O_NODE},
    {"config", required_argument, NULL, O_CONFIG},
    {"session-timeout-min-ms", required_argument, NULL, O_STMIN},
    {"session-timeout-max-ms", required_argument, NULL, O_STMAX},
    {"allow-unknown-keys", no_argument, NULL, O_UNKNOWN},
    {"max-request-size", required_argument, NULL, O_MAXREQ},
    {"idle-timeout-ms", required_argument, NULL, O_IDLE},
    {"connections-max-reauth-ms", required_argument, NULL, O_REAUTH},
    {"connection-failed-authentication-delay-ms", required_argument, NULL,
     O_AUTH_DELAY},
    {"max-connections", required_argument, NULL, O_MAXCONN},
    {"max-connection-creation-rate", required_argument, NULL, O_CONN_RATE},
    {"max-connection-creation-rate-per-ip", required_argument, NULL,
     O_CONN_RATE_IP},
    {"history", no_argument, NULL, O_HISTORY},
    {"export", required_argument, NULL, O_EXPORT},
    {"import", required_argument, NULL, O_IMPORT},
    {"store", required_argument, NULL, O_STORE},
    {"store-bootstrap", required_argument, NULL, O_STORE_BS},
    {"store-topic", required_argument, NULL, O_STORE_TOPIC},
    {"store-config", required_argument, NULL, O_STORE_CONFIG},
    {"store-timeout-ms", required_argument, NULL, O_STORE_TIMEOUT},
    {"store-read-only", no_argument, NULL, O_STORE_RO},
    {"store-session-timeout-ms", required_argument, NULL, O_STORE_SESSION},
    {"forward-listener", required_argument, NULL, O_FORWARD},
    {"forward-config", required_argument, NULL, O_FORWARD_CONFIG},
    {"store-history-topic", required_argument, NULL, O_STORE_HISTORY},
    {"metrics-listen", required_argument, NULL, O_METRICS},
    {"metrics-max-connections", required_argument, NULL, O_METRICS_MAXCONN},
    {"metrics-max-connections-per-ip", required_argument, NULL,
     O_METRICS_PER_IP},
    {"metrics-idle-timeout-seconds", required_argument, NULL, O_METRICS_IDLE},
    {"metrics-max-header-bytes", required_argument, NULL, O_METRICS_HEADER},
    {"log-format", required_argument, NULL, O_LOG_FORMAT},
    {"entity", required_argument, NULL, O_ENTITY},
    {"listeners", required_argument, NULL, O_LISTENERS},
    {"listener-security-protocol-map", required_argument, NULL, O_PMAP},
    {"ssl-cert", required_argument, NULL, O_SSL_CERT},
    {"ssl-key", required_argument, NULL, O_SSL_KEY},
    {"ssl-ca", required_argument, NULL, O_SSL_CA},
    {"ssl-client-auth", required_argument, NULL, O_SSL_CAUTH},
    {"credentials", required_argument, NULL, O_CREDS},
    {"sasl-enabled-mechanisms", required_argument, NULL, O_MECHS},
    {"sasl-oauthbearer-jwks", required_argument, NULL, O_OAUTH_JWKS},
    {"sasl-kerberos-service-name", required_argument, NULL, O_KRB_SERVICE},
    {"sasl-kerberos-keytab", required_argument, NULL, O_KRB_KEYTAB},
    {"sasl-kerberos-principal-to-local-rules", required_argument, NULL,
     O_KRB_RULES},
    {"sasl-oauthbearer-unsecured", no_argument, NULL, O_OAUTH_UNSECURED},
    {"sasl-oauthbearer-expected-issuer", required_argument, NULL,
     O_OAUTH_ISS},
    {"sasl-oauthbearer-expected-audience", required_argument, NULL,
     O_OAUTH_AUD},
    {"sasl-oauthbearer-sub-claim-name", required_argument, NULL,
     O_OAUTH_CLAIM},
    {"sasl-oauthbearer-clock-skew-seconds", required_argument, NULL,
     O_OAUTH_SKEW},
    {"acl-file", required_argument, NULL, O_ACL},
    {"super-users", required_argument, NULL, O_SUPER},
    {"add-user", required_argument, NULL, O_ADD_USER},
    {"iterations", required_argument, NULL, O_ITER},
    {"max-request-resources", required_argument, NULL, O_MAXRES},
    {"max-request-configs", required_argument, NULL, O_MAXCFG},
    {"max-entity-configs", required_argument, NULL, O_MAXENT},
    {"max-request-writes", required_argument, NULL, O_MAXWR},
    {"max-entities", required_argument, NULL, O_MAXENTS},
    {"max-response-bytes", required_argument, NULL, O_MAXRESP},
    {"fleet-retention-ms", required_argument, NULL, O_FLEET_RETENTION},
    {"fleet-max-bytes", required_argument, NULL, O_FLEET_BYTES},
    {"fleet-max-waits", required_argument, NULL, O_FLEET_WAITS},
    {"fleet-max-waits-per-principal", required_argument, NULL,
     O_FLEET_WAITS_PP},
    {"max-buffered-bytes", required_argument, NULL, O_MAXBUF},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

/* The config-file key each settings option stands for. */
static const char *const option_keys[] = {
    [O_LISTEN - 256] = "listen",
    [O_ADV - 256] = "advertise",
    [O_DATA - 256] = "data.dir",
    [O_NODE - 256] = "node.id",
    [O_STMIN - 256] = "group.min.session.timeout.ms",
    [O_STMAX - 256] = "group.max.session.timeout.ms",
    [O_MAXREQ - 256] = "socket.request.max.bytes",
    [O_IDLE - 256] = "connections.max.idle.ms",
    [O_FLEET_RETENTION - 256] = "fleet.retention.ms",
    [O_FLEET_BYTES - 256] = "fleet.max.bytes",
    [O_FLEET_WAITS - 256] = "fleet.max.waits",
    [O_FLEET_WAITS_PP - 256] = "fleet.max.waits.per.principal",
    [O_REAUTH - 256] = "connections.max.reauth.ms",
    [O_AUTH_DELAY - 256] = "connection.failed.authentication.delay.ms",
    [O_MAXCONN - 256] = "max.connections",
    [O_CONN_RATE - 256] = "max.connection.creation.rate",
    [O_CONN_RATE_IP - 256] = "max.connection.creation.rate.per.ip",
    [O_LISTENERS - 256] = "listeners",
    [O_PMAP - 256] = "listener.security.protocol.map",
    [O_SSL_CERT - 256] = "ssl.certificate.location",
    [O_SSL_KEY - 256] = "ssl.key.location",
    [O_SSL_CA - 256] = "ssl.ca.location",
    [O_SSL_CAUTH - 256] = "ssl.client.auth",
    [O_CREDS - 256] = "sasl.credentials.file",
    [O_MECHS - 256] = "sasl.enabled.mechanisms",
    [O_ACL - 256] = "acl.file",
    [O_SUPER - 256] = "super.users",
    [O_MAXRES - 256] = "max.request.resources",
    [O_MAXCFG - 256] = "max.request.configs",
    [O_MAXENT - 256] = "max.entity.configs",
    [O_MAXWR - 256] = "max.request.writes",
    [O_MAXENTS - 256] = "max.entities",
    [O_MAXRESP - 256] = "max.response.bytes",
    [O_MAXBUF - 256] = "max.buffered.bytes",
    [O_STORE - 256] = "store",
    [O_STORE_BS - 256] = "store.bootstrap.servers",
    [O_STORE_TOPIC - 256] = "store.topic",
    [O_STORE_CONFIG - 256] = "store.config.file",
    [O_STORE_TIMEOUT - 256] = "store.timeout.ms",
    [O_STORE_SESSION - 256] = "store.session.timeout.ms",
    [O_FORWARD - 256] = "forward.listener",
    [O_FORWARD_CONFIG - 256] = "forward.config",
    [O_STORE_HISTORY - 256] = "store.history.topic",
    [O_METRICS - 256] = "metrics.listen",
    [O_METRICS_MAXCONN - 256] = "metrics.max.connections",
    [O_METRICS_PER_IP - 256] = "metrics.max.connections.per.ip",
    [O_METRICS_IDLE - 256] = "metrics.idle.timeout.seconds",
    [O_METRICS_HEADER - 256] = "metrics.max.header.bytes",
    [O_LOG_FORMAT - 256] = "log.format",
    [O_OAUTH_JWKS - 256] = "sasl.oauthbearer.jwks.file",
    [O_OAUTH_ISS - 256] = "sasl.oauthbearer.expected.issuer",
    [O_OAUTH_AUD - 256] = "sasl.oauthbearer.expected.audience",
    [O_OAUTH_CLAIM - 256] = "sasl.oauthbearer.sub.claim.name",
    [O_OAUTH_SKEW - 256] = "sasl.oauthbearer.clock.skew.seconds",
    [O_KRB_SERVICE - 256] = "sasl.kerberos.service.name",
    [O_KRB_KEYTAB - 256] = "sasl.kerberos.keytab",
    [O_KRB_RULES - 256] = "sasl.kerberos.principal.to.local.rules",
};

/* The command line: the settings, and what a mode that runs once and
 * exits instead of serving needs. */
typedef struct cmdline {
  settings_t st;
  bool history;
  const char *entity, *new_user;
  const char *export_to, *import_from;
  int iterations;
} cmdline_t;

static void cmdline_init(cmdline_t *cl) {
  *cl = (cmdline_t){
      .st = {.node_id = 1,
             .st_min = 6000,
             .st_max = 1800000,
             .max_req_resources = DC_DEFAULT_MAX_REQUEST_RESOURCES,
             .max_req_configs = DC_DEFAULT_MAX_REQUEST_CONFIGS,
             .max_entity_configs = DC_DEFAULT_MAX_ENTITY_CONFIGS,
             .max_req_writes = DC_DEFAULT_MAX_REQUEST_WRITES,
             .max_entities = DC_DEFAULT_MAX_ENTITIES,
             .max_response = DC_DEFAULT_MAX_RESPONSE_SIZE,
             .fleet_retention_ms = 3600000,
             .fleet_max_bytes = DC_DEFAULT_FLEET_MAX_BYTES,
             .fleet_max_waits = DC_DEFAULT_FLEET_MAX_WAITS,
             .fleet_max_waits_pp = DC_DEFAULT_FLEET_MAX_WAITS_PER_PRINCIPAL,
             .failed_auth_delay_ms = DC_DEFAULT_FAILED_AUTH_DELAY_MS,
             .store_timeout_ms = 10000,
             .store_session_ms = DC_KAFKA_STORE_SESSION_MS,
             .oauth_skew_s = 30},
      .iterations = 8192};
  dc_server_opts_init(&cl->st.srv);
}

typedef enum { OPTION_OK, OPTION_BAD, OPTION_EXIT } option_result_t;

/* One command-line option. OPTION_BAD: said why; OPTION_EXIT: --help or
 * --version printed, nothing more to do. */
static option_result_t apply_option(cmdline_t *cl, int opt, const char *arg) {
  bool ok = true;
  switch (opt) {
  case 'h':
    usage(stdout);
    return OPTION_EXIT;
  case 'V':
    printf("dynconfd %s\n", PACKAGE_VERSION);
    return OPTION_EXIT;
  case 'v':
    cl->st.verbose = true;
    break;
  case O_CONFIG:
    ok = load_config_file(&cl->st, arg);
    break;
  case O_UNKNOWN:
    cl->st.allow_unknown = true;
    break;
  case O_HISTORY:
    cl->history = true;
    break;
  case O_EXPORT:
    cl->export_to = arg;
    break;
  case O_IMPORT:
    cl->import_from = arg;
    break;
  case O_STORE_RO:
    cl->st.store_read_only = true;
    break;
  case O_OAUTH_UNSECURED:
    cl->st.oauth_unsecured = true;
    break;
  case O_ENTITY:
    cl->entity = arg;
    break;
  case O_ADD_USER:
    cl->new_user = arg;
    break;
  case O_ITER: {
    int64_t it;
    ok = parse_num("--iterations", arg, 4096, 1000000, &it);
    cl->iterations = (int)it;
    break;
  }
  case '?':
    ok = false;
    break;
  default:
    ok = apply_setting(&cl->st, option_keys[opt - 256], arg);
  }
  return ok ? OPTION_OK : OPTION_BAD;
}

/* Fills cl from argv. False when the run ends here, with *exit_code: 0
 * after --help or --version, EXIT_USAGE after a bad option (said). */
static bool parse_command_line(cmdline_t *cl, int argc, char **argv,
                               int *exit_code) {
  int opt;
  while ((opt = getopt_long(argc, argv, "vhV", longopts, NULL)) != -1) {
    option_result_t r = apply_option(cl, opt, optarg);
    if (r == OPTION_EXIT) {
      *exit_code = 0;
      return false;
    }
    if (r == OPTION_BAD) {
      fprintf(stderr, "dynconfd: see --help\n");
      *exit_code = EXIT_USAGE;
      return false;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "dynconfd: unexpected argument '%s'; see --help\n",
            argv[optind]);
    *exit_code = EXIT_USAGE;
    return false;
  }
  if (!cl->st.data_dir)
    cl->st.data_dir = strdup("dynconfd-data");
  return true;
}

/* --history: from the data directory, or with --store kafka the history
 * topic. */
static int run_history(const settings_t *st, const char *entity) {
  return st->store && !strcmp(st->store, "kafka")
             ? print_kafka_history(st, entity)
             : print_history(st->data_dir, entity);
}

/* The mode the command line asks for; serving when none of the modes
 * that run once. */
static int run_mode(cmdline_t *cl) {
  if (cl->history)
    return run_history(&cl->st, cl->entity);
  if (cl->export_to)
    return export_store(cl->st.data_dir, cl->export_to);
  if (cl->import_from)
    return import_store(&cl->st, cl->import_from);
  if (cl->new_user)
    return add_user(cl->st.credentials, cl->new_user, cl->iterations);
  return serve(&cl->st);
}

int main(int argc, char **argv) {
  cmdline_t cl;
  cmdline_init(&cl);
  int rc;
  if (parse_command_line(&cl, argc, argv, &rc))
    rc = run_mode(&cl);
  settings_free(&cl.st);
  return rc;
}
