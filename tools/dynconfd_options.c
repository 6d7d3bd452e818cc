/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's command line: --help, the option table, the config-file key
 * each settings option stands for, and argv into a cmdline_t.
 */
#include "config.h"
#include "dynconfd.h"

#include "broker/handlers.h"
#include "broker/store_kafka.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

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

void cmdline_init(cmdline_t *cl) {
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
bool parse_command_line(cmdline_t *cl, int argc, char **argv,
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
