/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's own connection to dynconfd, secured, end to end: every
 * source of connection security the agent reads from the application's
 * rd_kafka_conf_t (or its dynconf.* override) reaches a real dynconfd, and
 * every refusal is reported at once and in words.
 *
 * Three daemons run: A (SSL, SASL_PLAINTEXT, SASL_SSL on 127.0.0.1 and an
 * SSL listener on 127.0.0.2, which the server certificate does not name;
 * client certificates requested; all three SASL mechanisms; an ACL file),
 * B (SSL with client certificates required; SASL_PLAINTEXT with only
 * SCRAM-SHA-256 and PLAIN enabled) and C (SASL_PLAINTEXT with unsigned
 * OAUTHBEARER tokens and 2.5 s SASL sessions: KIP-368's
 * connections.max.reauth.ms). All have their PLAINTEXT listener, through
 * which the operator's values are set.
 *
 * Failures run fail-closed (dynconf.startup.required=true) with a 30 s
 * start-up timeout: dynconf_new() must return NULL well before it (within
 * one round trip of the refusal) with the reason in errstr. Successes must
 * reach state UP with the operator's acks applied (source CLIENT).
 *
 * Certificates are made at run time (tests/gen_certs.sh and
 * tests/gen_tls_sources.sh, which need openssl).
 */
#include "../agentutil.h"
#include "client/oauth_client.h"
#include "../tap.h"
#include "../testutil.h"

#include "dynconf.h"

#include <librdkafka/rdkafka.h>

/* The start-up timeout of every agent, and the bound a refusal must beat:
 * "within one round trip of the refusal, not after the timeout", with a
 * wide margin for slow (sanitizer) builds. */
#define STARTUP_TIMEOUT "30000"
#define PROMPT_MS 15000
/* Deadline of every wait for a condition. */
#define WAIT_MS 20000

static char g_dir[PATH_MAX - 64], g_certs[PATH_MAX - 32];
static dc_tu_daemon_t g_a, g_b, g_c;
/* Listener ports: daemon A's SSL, SASL_PLAINTEXT, SASL_SSL and its SSL on
 * 127.0.0.2; daemon B's SSL (client certificate required) and
 * SASL_PLAINTEXT (SCRAM-SHA-512 disabled). */
static int g_a_ssl, g_a_sasl, g_a_sasl_ssl, g_a_alt, g_b_ssl, g_b_sasl;
/* Daemon C's SASL_PLAINTEXT listener, where a SASL session lasts
 * C_SESSION_MS (--connections-max-reauth-ms). */
static int g_c_sasl;
#define C_SESSION_MS 2500
#define C_SESSION_MS_STR "2500"
/* A loopback port bound but not listening: connecting is refused. */
static int g_closed_fd = -1, g_closed_port;
/* dynconf_conf_set() refusals of the test's own properties. */
static int g_conf_errors;

/* ---- files ------------------------------------------------------------ */

/* The path of a file in the certificate directory (dc_tu_path()). */
static const char *cert(const char *name) { return dc_tu_path(g_certs, name); }

/* The content of a file in the certificate directory (dc_tu_file_text()). */
static const char *text(const char *name) {
  return dc_tu_file_text(cert(name));
}

/* "127.0.0.1:port" in one of a ring of buffers. */
static const char *addr(const char *host, int port) {
  static char ring[8][64];
  static int next;
  char *p = ring[next++ % 8];
  snprintf(p, 64, "%s:%d", host, port);
  return p;
}

static const char *local(int port) { return addr("127.0.0.1", port); }

/* ---- agents ------------------------------------------------------------- */

/* One agent start: where the application points, its own settings, the
 * agent's dynconf.* properties. */
typedef struct agent_opts {
  const char *bootstrap, *client_id;
  const char *const *app;   /* NULL-terminated (key, value) pairs */
  const char *const *agent; /* dynconf.* pairs, NULL-terminated */
  bool fail_open;           /* dynconf.startup.required=false */
  dynconf_change_cb_t *change_cb;
  dynconf_log_cb_t *log_cb;
  void *opaque;
  dynconf_oauthbearer_token_refresh_cb_t *oauth_cb;
} agent_opts_t;

static void quiet_log(const dynconf_t *dc, int level, const char *fac,
                      const char *msg) {
  if (getenv("AU_VERBOSE"))
    diag("agent log %d %s %s: %s", level, dynconf_client_id(dc), fac, msg);
}

static void set_dconf(dynconf_conf_t *dconf, const char *k, const char *v) {
  char e[512];
  if (dynconf_conf_set(dconf, k, v, e, sizeof(e)) != DYNCONF_CONF_OK) {
    diag("dynconf conf %s: %s", k, e);
    g_conf_errors++;
  }
}

/* dynconf_new() for o; *ms gets how long it took, errstr its reason when
 * it returns NULL. The caller destroys the agent. */
static dynconf_t *start(const agent_opts_t *o, char *errstr,
                        size_t errstr_size, int64_t *ms) {
  char e[512], name[160];
  rd_kafka_conf_t *app = rd_kafka_conf_new();
  dynconf_conf_t *dconf = dynconf_conf_new();
  rd_kafka_conf_set(app, "bootstrap.servers", o->bootstrap, e, sizeof(e));
  rd_kafka_conf_set(app, "client.id", o->client_id, e, sizeof(e));
  rd_kafka_conf_set(app, "log_level", "3", e, sizeof(e));
  for (size_t i = 0; o->app && o->app[i]; i += 2) {
    if (rd_kafka_conf_set(app, o->app[i], o->app[i + 1], e, sizeof(e)) ==
        RD_KAFKA_CONF_OK)
      continue;
    /* A librdkafka that validates a property when it is set (a file that
     * must exist, a feature not compiled in) refuses it here: the agent
     * reads the same setting from its dynconf.-prefixed override. */
    diag("librdkafka refuses %s in the application's conf (%s): given as "
         "dynconf.%s instead", o->app[i], e, o->app[i]);
    snprintf(name, sizeof(name), "dynconf.%s", o->app[i]);
    set_dconf(dconf, name, o->app[i + 1]);
  }
  set_dconf(dconf, "dynconf.startup.timeout.ms", STARTUP_TIMEOUT);
  set_dconf(dconf, "dynconf.startup.required", o->fail_open ? "false" : "true");
  for (size_t i = 0; o->agent && o->agent[i]; i += 2)
    set_dconf(dconf, o->agent[i], o->agent[i + 1]);
  dynconf_conf_set_oauthbearer_token_refresh_cb(dconf, o->oauth_cb);
  int64_t t0 = dc_tu_now_ms();
  dynconf_t *dc = au_dynconf_new(RD_KAFKA_PRODUCER, app, dconf, o->change_cb,
                                 o->log_cb ? o->log_cb : quiet_log, o->opaque,
                                 errstr, errstr_size);
  *ms = dc_tu_now_ms() - t0;
  rd_kafka_conf_destroy(app);
  return dc;
}

/* Fail-closed start that must be refused promptly with an errstr holding
 * want (and want2 unless NULL). Returns the errstr's buffer for further
 * checks (static, valid until the next call). */
static const char *refused(const char *label, const agent_opts_t *o,
                           const char *want, const char *want2) {
  static char err[1024];
  int64_t ms;
  dynconf_t *dc = start(o, err, sizeof(err), &ms);
  ok(dc == NULL, "%s: dynconf_new() returns NULL (fail-closed)", label);
  ok(ms < PROMPT_MS, "... after %lld ms, not the %s ms start-up timeout",
     (long long)ms, STARTUP_TIMEOUT);
  ok(strstr(err, want) && (!want2 || strstr(err, want2)),
     "... errstr says \"%s\"%s%s%s", want, want2 ? " and \"" : "",
     want2 ? want2 : "", want2 ? "\"" : "");
  diag("  errstr: %s", err);
  dynconf_destroy(dc);
  return err;
}

/* The operator sets acks=1 for o's client-id on the dynconfd whose
 * PLAINTEXT listener is admin_port; then a fail-closed agent must start,
 * be UP, and apply it with source CLIENT. */
static void works(const char *label, int admin_port, const agent_opts_t *o) {
  char err[1024], val[64] = "";
  int64_t ms;
  is_int(au_alter(admin_port, o->client_id, "acks=1"), 0,
         "%s: the operator sets acks=1 for client '%s'", label, o->client_id);
  dynconf_t *dc = start(o, err, sizeof(err), &ms);
  if (!ok(dc != NULL, "%s: the agent starts (first fetch required)", label))
    diag("  errstr: %s", err);
  is_str(dc ? dynconf_state_name(dynconf_state(dc)) : "(no agent)", "up",
         "... in state UP");
  dynconf_source_t src = DYNCONF_SOURCE_APP;
  if (dc)
    dynconf_effective_get(dc, "acks", val, sizeof(val), &src);
  is_str(val, "1", "... with the operator's acks");
  is_str(dynconf_source_name(src), dynconf_source_name(DYNCONF_SOURCE_CLIENT),
         "... from the client-id override");
  dynconf_destroy(dc);
}

/* ---- the cases ------------------------------------------------------------ */

static void test_sasl_refusals(void) {
  char want[256];
  agent_opts_t o = {
      .bootstrap = local(g_a_sasl),
      .client_id = "as-wrong-password",
      .app = (const char *const[]){"security.protocol", "SASL_PLAINTEXT",
                                   "sasl.mechanisms", "SCRAM-SHA-256",
                                   "sasl.username", "alice",
                                   "sasl.password", "not-alice-secret", NULL}};
  const char *err = refused("SCRAM-SHA-256 with a wrong password", &o,
                            "SASL authentication failed", "invalid credentials");
  ok(!strstr(err, "not-alice-secret"), "... and does not repeat the password");

  o.client_id = "as-unknown-user";
  o.app = (const char *const[]){"security.protocol", "SASL_PLAINTEXT",
                                "sasl.mechanisms", "SCRAM-SHA-256",
                                "sasl.username", "mallory",
                                "sasl.password", "whatever", NULL};
  refused("SCRAM-SHA-256 as a user dynconfd does not know", &o,
          "SASL authentication failed", "invalid credentials");

  o.bootstrap = local(g_a_sasl);
  o.client_id = "as-plain-wrong";
  o.app = (const char *const[]){"security.protocol", "SASL_PLAINTEXT",
                                "sasl.mechanisms", "PLAIN",
                                "sasl.username", "bob",
                                "sasl.password", "alice-secret", NULL};
  refused("PLAIN with a wrong password", &o, "SASL authentication failed",
          "Invalid username or password");

  o.bootstrap = local(g_b_sasl);
  o.client_id = "as-mech-disabled";
  o.app = (const char *const[]){"security.protocol", "SASL_PLAINTEXT",
                                "sasl.mechanisms", "SCRAM-SHA-512",
                                "sasl.username", "alice",
                                "sasl.password", "alice-secret", NULL};
  snprintf(want, sizeof(want), "SASL mechanism SCRAM-SHA-512 is not enabled "
           "on 127.0.0.1:%d (enabled: ", g_b_sasl);
  err = refused("SCRAM-SHA-512 where dynconfd enables only SCRAM-SHA-256 and "
                "PLAIN", &o, want, NULL);
  const char *list = strstr(err, "(enabled: ");
  ok(list && strstr(list, "SCRAM-SHA-256") && strstr(list, "PLAIN") &&
         !strstr(list, "SCRAM-SHA-512"),
     "... listing the mechanisms the server does enable");
}

static void test_tls_refusals(void) {
  char want[256];
  agent_opts_t o = {
      .bootstrap = local(g_a_ssl),
      .client_id = "as-untrusted",
      .app = (const char *const[]){"security.protocol", "SSL",
                                   "ssl.ca.location", cert("rogue-ca.pem"),
                                   NULL}};
  snprintf(want, sizeof(want), "TLS handshake with 127.0.0.1:%d failed: ",
           g_a_ssl);
  refused("a server certificate from a CA the client does not trust", &o,
          want, "certificate verify failed");

  /* 127.0.0.2 is loopback too, but not among the certificate's names. */
  o.bootstrap = addr("127.0.0.2", g_a_alt);
  o.client_id = "as-hostname";
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.location", cert("ca.pem"),
                                "ssl.endpoint.identification.algorithm",
                                "https", NULL};
  snprintf(want, sizeof(want), "TLS handshake with 127.0.0.2:%d failed: ",
           g_a_alt);
  const char *err = refused("ssl.endpoint.identification.algorithm=https, "
                            "an address the certificate does not name", &o,
                            want, "certificate verify failed");
  ok(strstr(err, "IP address mismatch") || strstr(err, "hostname mismatch"),
     "... naming the mismatch");
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.location", cert("ca.pem"),
                                "ssl.endpoint.identification.algorithm",
                                "none", NULL};
  works("the same server with ssl.endpoint.identification.algorithm=none",
        g_a.port, &o);

  /* B requires a client certificate. */
  o.bootstrap = local(g_b_ssl);
  o.client_id = "as-no-client-cert";
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.location", cert("ca.pem"), NULL};
  snprintf(want, sizeof(want), "127.0.0.1:%d", g_b_ssl);
  refused("no client certificate where dynconfd requires one", &o, want,
          "certificate required");

  o.client_id = "as-keystore-wrong";
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.location", cert("ca.pem"),
                                "ssl.keystore.location", cert("alice.p12"),
                                "ssl.keystore.password", "wrong-pw", NULL};
  snprintf(want, sizeof(want), "PKCS#12 keystore %s", cert("alice.p12"));
  err = refused("a PKCS#12 keystore with a wrong password", &o, want,
                "ssl.keystore.password");
  ok(!strstr(err, "wrong-pw"), "... and does not repeat the password");
}

static void test_connection_refused(void) {
  char want[128];
  agent_opts_t o = {.bootstrap = local(g_closed_port),
                    .client_id = "as-refused"};
  snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%d: Connection "
           "refused", g_closed_port);
  refused("nothing listens on the port", &o, want, NULL);
}

static void test_acl_refusal(void) {
  agent_opts_t o = {
      .bootstrap = local(g_a_sasl),
      .client_id = "bob-locked",
      .app = (const char *const[]){"security.protocol", "SASL_PLAINTEXT",
                                   "sasl.mechanisms", "SCRAM-SHA-256",
                                   "sasl.username", "bob",
                                   "sasl.password", "bob-secret", NULL}};
  refused("bob, authenticated, may not describe client 'bob-locked'", &o,
          "CLUSTER_AUTHORIZATION_FAILED",
          "User:bob is not authorized to describe client 'bob-locked'");
  /* The same user on a client-id the rules leave alone. */
  o.client_id = "as-bob-free";
  works("bob on a client-id no rule denies", g_a.port, &o);
}

static void test_unspeakable_mechanism(void) {
  static const char *const mechs[] = {"AWS_MSK_IAM"};
  for (size_t i = 0; i < sizeof(mechs) / sizeof(mechs[0]); i++) {
    char label[128], want[96];
    const char *const app[] = {"security.protocol", "SASL_PLAINTEXT",
                               "sasl.mechanisms", mechs[i], NULL};
    agent_opts_t o = {.bootstrap = local(g_a_sasl),
                      .client_id = "as-unspeakable",
                      .app = app};
    snprintf(label, sizeof(label), "the application's sasl.mechanisms=%s",
             mechs[i]);
    snprintf(want, sizeof(want), "cannot authenticate with SASL mechanism %s",
             mechs[i]);
    refused(label, &o, want, "dynconf.sasl.mechanisms");
  }
  const char *const app[] = {"security.protocol", "SASL_PLAINTEXT",
                             "sasl.mechanisms", "GSSAPI", NULL};
  agent_opts_t o = {
      .bootstrap = local(g_a_sasl),
      .client_id = "as-unspeakable",
      .app = app,
      .agent = (const char *const[]){"dynconf.sasl.mechanisms", "SCRAM-SHA-256",
                                     "dynconf.sasl.username", "alice",
                                     "dynconf.sasl.password", "alice-secret",
                                     NULL}};
  works("GSSAPI in the application's conf, SCRAM-SHA-256 in dynconf.sasl.*",
        g_a.port, &o);
}

/* OAUTHBEARER with unsigned tokens made from sasl.oauthbearer.config, on
 * a server that takes them (A runs --sasl-oauthbearer-unsecured). */
static void test_oauthbearer(void) {
  const char *const plain[] = {"security.protocol", "SASL_PLAINTEXT",
                               "sasl.mechanisms", "OAUTHBEARER",
                               "sasl.oauthbearer.config", "principal=olga",
                               NULL};
  agent_opts_t o = {.bootstrap = local(g_a_sasl), .client_id = "as-oauth",
                    .app = plain};
  refused("OAUTHBEARER without enable.sasl.oauthbearer.unsecure.jwt", &o,
          "OAUTHBEARER token", "dynconf.enable.sasl.oauthbearer.unsecure.jwt");
  const char *const unsecure[] = {"security.protocol", "SASL_PLAINTEXT",
                                  "sasl.mechanisms", "OAUTHBEARER",
                                  "sasl.oauthbearer.config", "principal=olga",
                                  "enable.sasl.oauthbearer.unsecure.jwt",
                                  "true", NULL};
  o.app = unsecure;
  works("OAUTHBEARER with an unsigned token for principal=olga", g_a.port,
        &o);
  o.agent = (const char *const[]){"dynconf.sasl.oauthbearer.config",
                                  "principal=olga lifeSeconds=0", NULL};
  refused("dynconf.sasl.oauthbearer.config with lifeSeconds=0", &o,
          "lifeSeconds", "(from dynconf.sasl.oauthbearer.config)");
}

/* What the token refresh callback saw, and what it hands back. */
typedef struct oauth_rec {
  pthread_t thread;      /* the thread it must run on */
  int calls, wrong_thread;
  char config[128];      /* the sasl.oauthbearer.config it was given */
  int life_s;            /* the tokens' life; 0 = say it failed */
  dynconf_err_t set_err; /* what dynconf_oauthbearer_set_token said */
} oauth_rec_t;

static void oauth_cb(dynconf_t *dc, const char *config, void *opaque) {
  oauth_rec_t *r = opaque;
  r->calls++;
  r->wrong_thread += !pthread_equal(pthread_self(), r->thread);
  snprintf(r->config, sizeof(r->config), "%s", config ? config : "(null)");
  if (!r->life_s) {
    dynconf_oauthbearer_set_token_failure(dc, "the identity provider is down");
    return;
  }
  char cfg[160], e[256];
  snprintf(cfg, sizeof(cfg), "principal=carl lifeSeconds=%d", r->life_s);
  char *tok = dc_oauth_unsecured_token(cfg, (int64_t)time(NULL), e, sizeof(e));
  r->set_err = dynconf_oauthbearer_set_token(
      dc, tok, (int64_t)time(NULL) * 1000 + r->life_s * 1000, "carl", e,
      sizeof(e));
  free(tok);
}

/* The application's own tokens through the refresh callback. */
static void test_oauth_callback(void) {
  const char *const app[] = {"security.protocol", "SASL_PLAINTEXT",
                             "sasl.mechanisms", "OAUTHBEARER",
                             "sasl.oauthbearer.config", "scope=cfg", NULL};
  oauth_rec_t rec = {.thread = pthread_self(), .life_s = 0};
  agent_opts_t o = {.bootstrap = local(g_a_sasl), .client_id = "as-oauth-cb",
                    .app = app, .oauth_cb = oauth_cb, .opaque = &rec,
                    .agent = (const char *const[]){
                        "dynconf.refresh.interval.ms", "200", NULL}};
  refused("a refresh callback that has no token", &o, "no OAUTHBEARER token",
          "the identity provider is down");
  is_int(rec.calls, 1, "... the callback was asked once, in dynconf_new()");
  is_str(rec.config, "scope=cfg", "... with sasl.oauthbearer.config");

  memset(&rec, 0, sizeof(rec));
  rec.thread = pthread_self();
  rec.life_s = 2;
  char err[512];
  int64_t ms;
  is_int(au_alter(g_a.port, o.client_id, "acks=1"), 0,
         "the operator sets acks=1 for '%s'", o.client_id);
  dynconf_t *dc = start(&o, err, sizeof(err), &ms);
  if (!ok(dc, "a callback handing 2 s tokens: the agent starts")) {
    diag("  errstr: %s", err);
    return;
  }
  is_int(rec.set_err, DYNCONF_ERR_NO_ERROR,
         "... dynconf_oauthbearer_set_token took the token");
  /* 80 % of 2 s: dynconf_poll() asks again; past the first token's end
   * (and dynconfd's session with it) fetches go on with the new one. */
  int64_t until = dc_tu_now_ms() + 8000;
  long long ok0 = au_fetches(dc), err0 = au_stat_ll(dc, "errors");
  while (dc_tu_now_ms() < until &&
         (rec.calls < 3 || au_fetches(dc) < ok0 + 3))
    dynconf_poll(dc, 100);
  ok(rec.calls >= 3, "... dynconf_poll() asked for fresh tokens (%d calls)",
     rec.calls);
  is_int(rec.wrong_thread, 0, "... always on the application's thread");
  ok(au_fetches(dc) >= ok0 + 3,
     "... and the agent kept fetching past the first token's end, when "
     "dynconfd ends its session");
  is_int(au_stat_ll(dc, "errors"), err0,
         "... without a failed fetch (a new connection, the new token)");
  char path[4200];
  static char logbuf[1 << 20];
  logbuf[0] = '\0';
  snprintf(path, sizeof(path), "%s/dynconfd-a.log", g_dir);
  FILE *lf = fopen(path, "r");
  if (lf) {
    logbuf[fread(logbuf, 1, sizeof(logbuf) - 1, lf)] = '\0';
    fclose(lf);
  }
  ok(strstr(logbuf, "the SASL session of User:carl ended"),
     "... dynconfd did end the first token's session (its log says so)");
  is_str(dynconf_state_name(dynconf_state(dc)), "up", "... state UP");
  char e[256];
  is_int(dynconf_oauthbearer_set_token(dc, "a b", dc_tu_now_ms() + 60000,
                                       "carl", e, sizeof(e)),
         DYNCONF_ERR__INVALID_ARG, "a token with a space is refused");
  is_int(dynconf_oauthbearer_set_token(dc, "x.y.", 1000, "carl", e, sizeof(e)),
         DYNCONF_ERR__INVALID_ARG, "a lifetime in the past is refused");
  ok(strstr(e, "lifetime"), "... saying so: %s", e);
  dynconf_destroy(dc);
}

/* Whether dc's effective key is want, silently (polled). */
static bool eff_value_is(dynconf_t *dc, const char *key, const char *want) {
  char v[128] = "";
  return dynconf_effective_get(dc, key, v, sizeof(v), NULL) >= 0 &&
         !strcmp(v, want);
}

/* A number of the agent's "watch" statistics (stats.c), or -1. */
static long long watch_stat(dynconf_t *dc, const char *key) {
  char *s = dynconf_stats_json(dc); /* ours, freed below */
  const char *w = s ? strstr(s, "\"watch\":{") : NULL;
  long long v = w ? au_json_ll(w, key) : -1;
  free(s);
  return v;
}

/* KIP-368 and the Watch: on C a SASL session lasts C_SESSION_MS, and
 * dynconfd closes a connection when its session ends, a parked Watch
 * included. A watching agent must end each Watch before its session does
 * and connect again (a new session), never park past the end: a Watch
 * that loses its connection is a strike, and DC_AGENT_WATCH_STRIKES (3)
 * of them make the agent poll until its next fetch, here 600 s away. So
 * after several session ends a change must still come within moments. */
static void test_watch_across_sessions(void) {
  char err[1024];
  int64_t ms;
  agent_opts_t o = {
      .bootstrap = local(g_c_sasl),
      .client_id = "as-watch-sessions",
      .app = (const char *const[]){"security.protocol", "SASL_PLAINTEXT",
                                   "sasl.mechanisms", "OAUTHBEARER",
                                   "sasl.oauthbearer.config",
                                   "principal=wendy",
                                   "enable.sasl.oauthbearer.unsecure.jwt",
                                   "true", NULL},
      /* Only the Watch (or a fetch on a new session) brings a change
       * before the next periodic fetch, 600 s away (no jitter). */
      .agent = (const char *const[]){"dynconf.watch", "true",
                                     "dynconf.refresh.interval.ms", "600000",
                                     "dynconf.refresh.jitter.pct", "0",
                                     NULL}};
  is_int(au_alter(g_c.port, o.client_id, "acks=1"), 0,
         "sessions of " C_SESSION_MS_STR " ms: the operator sets acks=1 for "
         "'%s'", o.client_id);
  dynconf_t *dc = start(&o, err, sizeof(err), &ms);
  if (!ok(dc != NULL, "... an OAUTHBEARER agent with dynconf.watch=true "
                      "starts")) {
    diag("  errstr: %s", err);
    return;
  }
  int64_t t0 = dc_tu_now_ms();
  ok(au_eff_is(dc, "acks", "1", DYNCONF_SOURCE_CLIENT),
     "... with the operator's acks=1");
  long long ok0 = au_fetches(dc);
  /* A time precondition, not a condition: four session lengths pass
   * (its first session began before dynconf_new() returned), so at least
   * three of the agent's sessions end meanwhile, as many as the strikes
   * that would make it poll. */
  int64_t until = t0 + 4 * C_SESSION_MS;
  while (dc_tu_now_ms() < until)
    dynconf_poll(dc, 100);
  long long renewed = au_fetches(dc) - ok0;
  /* With a 600 s refresh interval a fetch comes only with a new
   * connection: one per session that ended. */
  ok(renewed >= 3, "... in %d ms the agent connected again for new "
     "sessions (%lld fetches since the first)", 4 * C_SESSION_MS, renewed);
  is_str(dynconf_state_name(dynconf_state(dc)), "up", "... state UP");

  int64_t t_alter = dc_tu_now_ms();
  is_int(au_alter(g_c.port, o.client_id, "acks=0"), 0,
         "the operator sets acks=0 for '%s'", o.client_id);
  int64_t deadline = t_alter + 15000;
  bool applied = false;
  while (!(applied = eff_value_is(dc, "acks", "0")) &&
         dc_tu_now_ms() < deadline)
    dynconf_poll(dc, 20);
  int64_t took = dc_tu_now_ms() - t_alter;
  ok(au_eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT),
     "... the agent applies it long before its next fetch (600 s): the "
     "Watch, or a new session's fetch, brought it");
  if (applied)
    diag("  applied %lld ms after the alter", (long long)took);
  else
    diag("  not applied %lld ms after the alter", (long long)took);
  /* Every Watch ended before its session, normally: a failed one (the
   * connection closed under it) is what the session limit must not
   * cause. Not even one is legitimate here: the agent ends each Watch
   * SESSION_MARGIN_MS (1 s) before the session does. */
  is_int(watch_stat(dc, "failures"), 0,
         "... no Watch failed (none outlived its SASL session)");
  is_int(watch_stat(dc, "refusals"), 0, "... none was refused");
  long long answers = watch_stat(dc, "changes") + watch_stat(dc, "unchanged");
  ok(answers >= 3, "... and the Watch was in use across the sessions (%lld "
     "answers: %lld changes, %lld unchanged)", answers,
     watch_stat(dc, "changes"), watch_stat(dc, "unchanged"));
  is_str(dynconf_state_name(dynconf_state(dc)), "up", "... state UP");
  dynconf_destroy(dc);
}

static void test_trust_sources(void) {
  agent_opts_t o = {.bootstrap = local(g_a_ssl), .client_id = "as-ca-file",
                    .app = (const char *const[]){"security.protocol", "SSL",
                                                 "ssl.ca.location",
                                                 cert("ca.pem"), NULL}};
  works("SSL, ssl.ca.location a CA file", g_a.port, &o);
  o.client_id = "as-ca-dir";
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.location", cert("cadir"), NULL};
  works("SSL, ssl.ca.location a hashed directory", g_a.port, &o);
  o.client_id = "as-ca-pem";
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.pem", text("ca.pem"), NULL};
  works("SSL, ssl.ca.pem as PEM text", g_a.port, &o);
}

static void test_client_certificates(void) {
  agent_opts_t o = {
      .bootstrap = local(g_b_ssl),
      .client_id = "as-mtls-files",
      .app = (const char *const[]){"security.protocol", "SSL",
                                   "ssl.ca.location", cert("ca.pem"),
                                   "ssl.certificate.location",
                                   cert("alice.pem"),
                                   "ssl.key.location", cert("alice.key"),
                                   NULL}};
  works("mTLS, certificate and key files", g_b.port, &o);
  o.client_id = "as-mtls-pem";
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.location", cert("ca.pem"),
                                "ssl.certificate.pem", text("alice.pem"),
                                "ssl.key.pem", text("alice.key"), NULL};
  works("mTLS, ssl.certificate.pem and ssl.key.pem text", g_b.port, &o);
  o.client_id = "as-mtls-enc";
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.location", cert("ca.pem"),
                                "ssl.certificate.location", cert("alice.pem"),
                                "ssl.key.location", cert("alice.enc.key"),
                                "ssl.key.password", "key-pw", NULL};
  works("mTLS, an encrypted key with ssl.key.password", g_b.port, &o);
  o.client_id = "as-mtls-p12";
  o.app = (const char *const[]){"security.protocol", "SSL",
                                "ssl.ca.location", cert("ca.pem"),
                                "ssl.keystore.location", cert("alice.p12"),
                                "ssl.keystore.password", "ks-pw", NULL};
  works("mTLS, a PKCS#12 keystore", g_b.port, &o);
}

static void test_sasl_ssl(void) {
  agent_opts_t o = {
      .bootstrap = local(g_a_sasl_ssl),
      .client_id = "as-sasl-ssl-512",
      .app = (const char *const[]){"security.protocol", "SASL_SSL",
                                   "ssl.ca.location", cert("ca.pem"),
                                   "sasl.mechanisms", "SCRAM-SHA-512",
                                   "sasl.username", "alice",
                                   "sasl.password", "alice-secret", NULL}};
  works("SASL_SSL, SCRAM-SHA-512", g_a.port, &o);
  o.client_id = "as-sasl-ssl-plain";
  o.app = (const char *const[]){"security.protocol", "SASL_SSL",
                                "ssl.ca.location", cert("ca.pem"),
                                "sasl.mechanisms", "PLAIN",
                                "sasl.username", "bob",
                                "sasl.password", "bob-secret", NULL};
  works("SASL_SSL, PLAIN", g_a.port, &o);
}

/* The data plane is plaintext (here: an address nobody serves); the config
 * server sits behind a SASL_SSL listener named only by overrides. */
static void test_overrides(void) {
  agent_opts_t o = {
      .bootstrap = local(g_closed_port),
      .client_id = "as-overrides",
      .app = (const char *const[]){"security.protocol", "PLAINTEXT", NULL},
      .agent = (const char *const[]){
          "dynconf.bootstrap.servers", local(g_a_sasl_ssl),
          "dynconf.security.protocol", "SASL_SSL",
          "dynconf.ssl.ca.location", cert("ca.pem"),
          "dynconf.sasl.mechanisms", "SCRAM-SHA-256",
          "dynconf.sasl.username", "alice",
          "dynconf.sasl.password", "alice-secret", NULL}};
  works("PLAINTEXT application, dynconf.* overrides to a SASL_SSL listener",
        g_a.port, &o);
}

/* ---- fail-open: one ERROR event per outage ----------------------------- */

typedef struct events {
  int n_error, n_other;
  dynconf_err_t err;
  char errstr[1024];
  int n_warnings; /* log lines at level <= 4 holding the same sentence */
} events_t;

static void on_event(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  events_t *e = opaque;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_ERROR) {
    e->n_other++;
    return;
  }
  e->n_error++;
  e->err = dynconf_event_error(ev);
  snprintf(e->errstr, sizeof(e->errstr), "%s",
           dynconf_event_error_string(ev) ? dynconf_event_error_string(ev)
                                          : "");
}

static events_t g_fo_events;

static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  quiet_log(dc, level, fac, msg);
  if (level <= 4 && strstr(msg, "SASL authentication failed"))
    g_fo_events.n_warnings++;
}

static void test_fail_open(void) {
  events_t *e = &g_fo_events;
  memset(e, 0, sizeof(*e));
  char err[1024];
  int64_t ms;
  agent_opts_t o = {
      .bootstrap = local(g_a_sasl),
      .client_id = "as-fail-open",
      .app = (const char *const[]){"security.protocol", "SASL_PLAINTEXT",
                                   "sasl.mechanisms", "SCRAM-SHA-256",
                                   "sasl.username", "alice",
                                   "sasl.password", "not-alice-secret", NULL},
      .agent = (const char *const[]){"dynconf.retry.backoff.ms", "20",
                                     "dynconf.retry.backoff.max.ms", "50",
                                     NULL},
      .fail_open = true,
      .change_cb = on_event,
      .log_cb = on_log,
      .opaque = e};
  dynconf_t *dc = start(&o, err, sizeof(err), &ms);
  if (!ok(dc != NULL, "fail-open, wrong password: dynconf_new() returns an "
                      "agent"))
    diag("  errstr: %s", err);
  if (!dc)
    return;
  ok(ms < PROMPT_MS, "... after %lld ms", (long long)ms);
  is_str(dynconf_state_name(dynconf_state(dc)), "degraded",
         "... in state DEGRADED");
  int64_t end = dc_tu_now_ms() + WAIT_MS;
  while (e->n_error == 0 && dc_tu_now_ms() < end)
    dynconf_poll(dc, 100);
  is_int(e->n_error, 1, "... one ERROR event reaches the change callback");
  is_int(e->err, DYNCONF_ERR_SASL_AUTHENTICATION_FAILED,
         "... carrying SASL_AUTHENTICATION_FAILED (%s)",
         dynconf_err_name(e->err));
  if (!ok(strstr(e->errstr, "SASL authentication failed") &&
              strstr(e->errstr, "invalid credentials"),
          "... and the server's reason in words"))
    diag("  event: %s", e->errstr);
  long long errors0 = au_stat_ll(dc, "errors");
  long long errors = au_wait_stat(dc, "errors", errors0 + 3, WAIT_MS);
  ok(errors >= errors0 + 3, "three more refreshes fail (fetches.errors %lld "
                            "-> %lld)", errors0, errors);
  dynconf_poll(dc, 0);
  is_int(e->n_error, 1, "... and still only one ERROR event");
  is_int(e->n_other, 0, "... and no other event");
  is_int(e->n_warnings, 1, "... and one warning in the log");
  is_str(dynconf_state_name(dynconf_state(dc)), "degraded",
         "... still DEGRADED");
  dynconf_destroy(dc);
}

/* ---- set-up ------------------------------------------------------------ */

static int setup(void) {
  char cmd[PATH_MAX * 3], err[512], data[PATH_MAX], log[PATH_MAX];
  char creds[PATH_MAX], acl[PATH_MAX];
  const char *src = getenv("DC_SRCDIR") ? getenv("DC_SRCDIR") : ".";
  snprintf(g_certs, sizeof(g_certs), "%s/certs", g_dir);
  snprintf(cmd, sizeof(cmd), "sh %s/tests/gen_certs.sh %s && sh "
           "%s/tests/gen_tls_sources.sh %s", src, g_certs, src, g_certs);
  if (dc_tu_system(cmd)) {
    printf("Bail out! cannot make test certificates (openssl)\n");
    return -1;
  }
  snprintf(creds, sizeof(creds), "%s/users.creds", g_dir);
  snprintf(cmd, sizeof(cmd),
           "printf 'alice-secret\\n' | %s/dynconfd --credentials %s "
           "--add-user alice --iterations 4096 >/dev/null && "
           "printf 'bob-secret\\n' | %s/dynconfd --credentials %s "
           "--add-user bob --iterations 4096 >/dev/null",
           dc_tu_builddir(), creds, dc_tu_builddir(), creds);
  if (dc_tu_system(cmd)) {
    printf("Bail out! dynconfd --add-user failed\n");
    return -1;
  }
  /* The operator's alters come in over PLAINTEXT, as User:ANONYMOUS. */
  snprintf(acl, sizeof(acl), "%s/acl", g_dir);
  FILE *f = fopen(acl, "w");
  if (!f) {
    printf("Bail out! cannot write %s\n", acl);
    return -1;
  }
  fputs("allow User:ANONYMOUS alter client:*\n"
        "deny User:bob describe client:bob-locked\n", f);
  fclose(f);

  snprintf(data, sizeof(data), "%s/data-a", g_dir);
  snprintf(log, sizeof(log), "%s/dynconfd-a.log", g_dir);
  const char *extra_a[] = {
      "--listeners",
      "SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
      "SASL_SSL://127.0.0.1:0,ALT://127.0.0.2:0",
      "--listener-security-protocol-map", "ALT:SSL",
      "--ssl-cert", cert("server.pem"), "--ssl-key", cert("server.key"),
      "--ssl-ca", cert("ca.pem"), "--ssl-client-auth", "requested",
      "--credentials", creds, "--acl-file", acl,
      "--sasl-oauthbearer-unsecured",
      /* KIP-368: a session ends exactly with its token */
      "--sasl-oauthbearer-clock-skew-seconds", "0", NULL};
  if (dc_tu_daemon_start(&g_a, data, log, extra_a, err, sizeof(err))) {
    printf("Bail out! dynconfd A: %s\n", err);
    return -1;
  }
  g_a_ssl = dc_tu_daemon_port_of(&g_a, "SSL");
  g_a_sasl = dc_tu_daemon_port_of(&g_a, "SASL_PLAINTEXT");
  g_a_sasl_ssl = dc_tu_daemon_port_of(&g_a, "SASL_SSL");
  g_a_alt = dc_tu_daemon_port_of(&g_a, "ALT");

  snprintf(data, sizeof(data), "%s/data-b", g_dir);
  snprintf(log, sizeof(log), "%s/dynconfd-b.log", g_dir);
  const char *extra_b[] = {
      "--listeners", "SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
      "--ssl-cert", cert("server.pem"), "--ssl-key", cert("server.key"),
      "--ssl-ca", cert("ca.pem"), "--ssl-client-auth", "required",
      "--credentials", creds,
      "--sasl-enabled-mechanisms", "SCRAM-SHA-256,PLAIN", NULL};
  if (dc_tu_daemon_start(&g_b, data, log, extra_b, err, sizeof(err))) {
    printf("Bail out! dynconfd B: %s\n", err);
    return -1;
  }
  g_b_ssl = dc_tu_daemon_port_of(&g_b, "SSL");
  g_b_sasl = dc_tu_daemon_port_of(&g_b, "SASL_PLAINTEXT");

  snprintf(data, sizeof(data), "%s/data-c", g_dir);
  snprintf(log, sizeof(log), "%s/dynconfd-c.log", g_dir);
  const char *extra_c[] = {
      "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
      "--sasl-oauthbearer-unsecured",
      /* KIP-368: every SASL session ends after this long */
      "--connections-max-reauth-ms", C_SESSION_MS_STR, NULL};
  if (dc_tu_daemon_start(&g_c, data, log, extra_c, err, sizeof(err))) {
    printf("Bail out! dynconfd C: %s\n", err);
    return -1;
  }
  g_c_sasl = dc_tu_daemon_port_of(&g_c, "SASL_PLAINTEXT");
  ok(g_a_ssl > 0 && g_a_sasl > 0 && g_a_sasl_ssl > 0 && g_a_alt > 0 &&
         g_b_ssl > 0 && g_b_sasl > 0 && g_c_sasl > 0,
     "the dynconfd report their listeners (A: SSL %d, SASL_PLAINTEXT %d, "
     "SASL_SSL %d, 127.0.0.2 SSL %d; B: SSL %d, SASL_PLAINTEXT %d; "
     "C: SASL_PLAINTEXT %d)",
     g_a_ssl, g_a_sasl, g_a_sasl_ssl, g_a_alt, g_b_ssl, g_b_sasl, g_c_sasl);

  /* Bound, never listening: the kernel refuses connections to it. */
  g_closed_fd = dc_tu_loopback_socket(0, -1, &g_closed_port);
  if (g_closed_fd < 0) {
    printf("Bail out! cannot bind a loopback port\n");
    return -1;
  }
  return 0;
}

int main(void) {
  if (dc_tu_tmpdir(g_dir, sizeof(g_dir))) {
    printf("Bail out! no temp dir\n");
    return 1;
  }
  if (setup()) {
    dc_tu_daemon_stop(&g_a);
    dc_tu_daemon_stop(&g_b);
    dc_tu_daemon_stop(&g_c);
    dc_tu_rmrf(g_dir);
    return 1;
  }
  int64_t t0 = dc_tu_now_ms();

  test_sasl_refusals();
  test_tls_refusals();
  test_connection_refused();
  test_acl_refusal();
  test_unspeakable_mechanism();
  test_oauthbearer();
  test_oauth_callback();
  test_watch_across_sessions();
  test_trust_sources();
  test_client_certificates();
  test_sasl_ssl();
  test_overrides();
  test_fail_open();

  is_int(g_conf_errors, 0, "every dynconf.* property the test set was "
                           "accepted");
  diag("cases ran in %lld ms", (long long)(dc_tu_now_ms() - t0));
  ok(dc_tu_daemon_alive(&g_a) && dc_tu_daemon_alive(&g_b) &&
         dc_tu_daemon_alive(&g_c),
     "the three dynconfd are still running");
  if (tap_failed) {
    dc_tu_daemon_log_tail(&g_a, 30);
    dc_tu_daemon_log_tail(&g_b, 30);
    dc_tu_daemon_log_tail(&g_c, 30);
  }
  is_int(dc_tu_daemon_stop(&g_a), 0, "dynconfd A stops cleanly");
  is_int(dc_tu_daemon_stop(&g_b), 0, "dynconfd B stops cleanly");
  is_int(dc_tu_daemon_stop(&g_c), 0, "dynconfd C stops cleanly");
  if (g_closed_fd >= 0)
    close(g_closed_fd);
  dc_tu_file_texts_free();
  dc_tu_rmrf(g_dir);
  return done_testing();
}
