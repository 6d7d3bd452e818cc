/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd: the dynconf config broker. Serves KIP-649 CLIENT configs over
 * the Kafka wire protocol, stores them in SQLite, prints its audit history.
 *
 * This file: main(), the mode dispatch, and serving: start-up, signals
 * and reloads, systemd's readiness and watchdog, the serve loop. The
 * other parts are listed in dynconfd.h.
 */
#include "config.h"
#include "dynconfd.h"

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/text.h"

#include <systemd/sd-daemon.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static dc_server_t *g_server;

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

/* The store has new records from another server: apply them. */
static void on_store_event(void *opaque) { dc_broker_store_poll(opaque); }

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

static void raise_fd_limit(void) {
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
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
  if (!listen_addr_split(st->metrics_listen, host, sizeof(host), &port)) {
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
  if (!listen_addr_split(addr, host, sizeof(host), &port)) {
    fprintf(stderr, "dynconfd: listen address must be HOST:PORT, not '%s'\n",
            st->listen[i]);
    return EXIT_USAGE;
  }
  const char *aaddr = NULL;
  if (i < st->n_advertise)
    aaddr = split_listener(st->advertise[i], name, sizeof(name));
  if (i < st->n_advertise &&
      (!aaddr || !listen_addr_split(aaddr, ahost, sizeof(ahost), &aport))) {
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
