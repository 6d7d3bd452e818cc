/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The librdkafka plugin (libdynconf-plugin.so) as an application that
 * knows nothing of dynconf uses it: only rd_kafka_conf_set() calls
 * (plugin.library.paths, then dynconf.* properties), rd_kafka_new(), and
 * the values read back from the handle's own conf (rd_kafka_conf(rk)).
 * This program calls no dynconf_* function and links no agent; dynconfd
 * is configured through the project's codec (au_alter).
 *
 * The plugin is $DC_BUILDDIR/.libs/libdynconf-plugin.so. Run with
 * LD_LIBRARY_PATH on a newer librdkafka by
 * tests/clients/test_librdkafka_newer.sh.
 */
#include "../agentutil.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

static char g_plugin[PATH_MAX];
static char g_bs[64];      /* dynconfd */
static char g_down_bs[64]; /* a port nobody listens on */
static char g_tmp[256];

/* ---- confs made with rd_kafka_conf_set only ------------------------------ */

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char e[512];
  if (rd_kafka_conf_set(c, k, v, e, sizeof(e)) != RD_KAFKA_CONF_OK)
    diag("conf_set %s=%s: %s", k, v, e);
}

/* NULL-terminated (key, value) pairs of ap on c. */
static void set_pairs(rd_kafka_conf_t *c, va_list ap) {
  for (const char *k; (k = va_arg(ap, const char *));)
    set(c, k, va_arg(ap, const char *));
}

enum { APP_FIRST, PLUGIN_FIRST };

/* A client conf for client_id: the application's own (key, value) pairs
 * (NULL-terminated, then the dynconf.* pairs, NULL-terminated) set before
 * or after plugin.library.paths and the dynconf.* properties. */
static rd_kafka_conf_t *app_conf(int order, const char *client_id,
                                 const char *bootstrap, ...) {
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  set(c, "client.id", client_id);
  set(c, "bootstrap.servers", "127.0.0.1:9"); /* never reached */
  set(c, "log_level", "0");                   /* nor said */
  va_list ap;
  va_start(ap, bootstrap);
  va_list app;
  va_copy(app, ap);
  if (order == APP_FIRST)
    set_pairs(c, app);
  else /* skip them */
    for (const char *k; (k = va_arg(ap, const char *));)
      (void)va_arg(ap, const char *);
  set(c, "plugin.library.paths", g_plugin);
  set(c, "dynconf.bootstrap.servers", bootstrap);
  set(c, "dynconf.log.level", getenv("AU_VERBOSE") ? "7" : "3");
  if (order == APP_FIRST)
    for (const char *k; (k = va_arg(ap, const char *));)
      (void)va_arg(ap, const char *);
  set_pairs(c, ap); /* the dynconf.* pairs */
  if (order == PLUGIN_FIRST)
    set_pairs(c, app);
  va_end(app);
  va_end(ap);
  return c;
}

/* A property of the client's own conf (global or default topic), as
 * librdkafka prints it. */
static const char *client_val(rd_kafka_t *rk, const char *name) {
  static char ring[8][256];
  static int next;
  char *v = ring[next++ % 8];
  au_conf_val(rd_kafka_conf(rk), name, v, 256);
  return v;
}

static rd_kafka_t *new_client(rd_kafka_type_t type, rd_kafka_conf_t *c,
                              int64_t *elapsed_ms) {
  char e[512] = "";
  int64_t t0 = dc_tu_now_ms();
  rd_kafka_t *rk = rd_kafka_new(type, c, e, sizeof(e));
  if (elapsed_ms)
    *elapsed_ms = dc_tu_now_ms() - t0;
  if (!rk) {
    diag("rd_kafka_new: %s", e);
    rd_kafka_conf_destroy(c);
  }
  return rk;
}

/* fd 2 into path until stderr_back(); returns the saved fd. */
static int stderr_to(const char *path) {
  fflush(stderr);
  int saved = dup(2);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    dup2(fd, 2);
    close(fd);
  }
  return saved;
}

static void stderr_back(int saved) {
  fflush(stderr);
  if (saved >= 0) {
    dup2(saved, 2);
    close(saved);
  }
}

/* ---- the tests ----------------------------------------------------------- */

/* The operator's acks and batch.num.messages reach the client whatever
 * order the application set things in; linger.ms, which librdkafka
 * derives from before plugins run, stays the application's. */
static void test_operator_values(int order) {
  const char *o = order == APP_FIRST ? "app first" : "plugin first";
  rd_kafka_conf_t *c = app_conf(
      order, "plug-a", g_bs, "acks", "all", "batch.num.messages", "5000",
      "linger.ms", "3", NULL, "dynconf.allow.keys",
      "acks,batch.num.messages,linger.ms", NULL);
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c, NULL);
  if (!ok(rk, "%s: rd_kafka_new succeeds", o))
    return;
  is_str(client_val(rk, "acks"), "0", "%s: acks is the operator's 0", o);
  is_str(client_val(rk, "batch.num.messages"), "777",
         "%s: batch.num.messages is the operator's 777", o);
  is_str(client_val(rk, "linger.ms"), "3",
         "%s: linger.ms stays the application's 3 (derived at finalize)", o);
  rd_kafka_destroy(rk);
}

/* The agent's rules hold: idempotence pins acks to all. */
static void test_rules(void) {
  rd_kafka_conf_t *c = app_conf(PLUGIN_FIRST, "plug-idem", g_bs,
                                "enable.idempotence", "true", NULL, NULL);
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c, NULL);
  if (!ok(rk, "idempotent: rd_kafka_new succeeds"))
    return;
  is_str(client_val(rk, "acks"), "-1",
         "idempotent: acks=1 from the operator refused, acks stays all");
  rd_kafka_destroy(rk);

  /* A consumer takes the group timeouts. */
  c = app_conf(APP_FIRST, "plug-c", g_bs, "group.id", "g", "session.timeout.ms",
               "45000", NULL, NULL);
  rk = new_client(RD_KAFKA_CONSUMER, c, NULL);
  if (!ok(rk, "consumer: rd_kafka_new succeeds"))
    return;
  is_str(client_val(rk, "session.timeout.ms"), "20000",
         "consumer: session.timeout.ms is the operator's");
  is_str(client_val(rk, "heartbeat.interval.ms"), "2000",
         "consumer: heartbeat.interval.ms is the operator's");
  rd_kafka_destroy(rk);
}

/* The config server is down: fail-open within the start-up timeout. */
static void test_fail_open(void) {
  rd_kafka_conf_t *c =
      app_conf(PLUGIN_FIRST, "plug-a", g_down_bs, "acks", "1", NULL,
               "dynconf.startup.timeout.ms", "1000", NULL);
  int64_t ms;
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c, &ms);
  if (!ok(rk, "dynconfd down: rd_kafka_new succeeds (fail-open)"))
    return;
  ok(ms < 1000 + 2000, "  within the start-up timeout of 1000 ms (%lld ms)",
     (long long)ms);
  is_str(client_val(rk, "acks"), "1", "  acks stays the application's 1");
  rd_kafka_destroy(rk);
}

/* startup.required=true cannot fail rd_kafka_new(): the client starts
 * with the application's values, and both the plugin and librdkafka say
 * so. */
static void test_required(void) {
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/required.err", g_tmp);
  rd_kafka_conf_t *c =
      app_conf(PLUGIN_FIRST, "plug-a", g_down_bs, "acks", "1", "log_level",
               "4", NULL, "dynconf.startup.timeout.ms", "500",
               "dynconf.startup.required", "true", NULL);
  int saved = stderr_to(path);
  int64_t ms;
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c, &ms);
  stderr_back(saved);
  const char *err = dc_tu_file_text(path);
  ok(rk, "startup.required=true, dynconfd down: rd_kafka_new still succeeds "
         "(librdkafka ignores on_new's error)");
  if (rk) {
    is_str(client_val(rk, "acks"), "1", "  acks stays the application's 1");
    rd_kafka_destroy(rk);
  }
  ok(ms < 500 + 2000, "  within the start-up timeout of 500 ms (%lld ms)",
     (long long)ms);
  ok(strstr(err, "dynconf.startup.required=true, but the first fetch failed"),
     "  the plugin logs an error saying so");
  ok(strstr(err, "%3|") != NULL, "  at level 3");
  ok(strstr(err, "Interceptor dynconf failed on_new"),
     "  and librdkafka logs on_new's error (ICFAIL)");
  if (tap_failed)
    diag("stderr: %s", err);
}

/* dynconf.* values are checked when they are set. */
static void test_bad_values(void) {
  char e[512] = "";
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  is_int(rd_kafka_conf_set(c, "dynconf.bootstrap.servers", "x", e, sizeof(e)),
         RD_KAFKA_CONF_UNKNOWN,
         "dynconf.* before plugin.library.paths: unknown to librdkafka");
  set(c, "plugin.library.paths", g_plugin);
  e[0] = '\0';
  is_int(rd_kafka_conf_set(c, "dynconf.startup.timeout.ms", "soon", e,
                           sizeof(e)),
         RD_KAFKA_CONF_INVALID, "a bad dynconf.* value: RD_KAFKA_CONF_INVALID");
  ok(strstr(e, "dynconf.startup.timeout.ms"), "  the reason names it: %s", e);
  e[0] = '\0';
  is_int(rd_kafka_conf_set(c, "dynconf.allow.keys", "acks,no.such.key", e,
                           sizeof(e)),
         RD_KAFKA_CONF_INVALID, "a bad dynconf.allow.keys: INVALID");
  ok(*e, "  with the agent's reason: %s", e);
  is_int(rd_kafka_conf_set(c, "dynconf.no.such.property", "1", e, sizeof(e)),
         RD_KAFKA_CONF_UNKNOWN, "an unknown dynconf.* property: UNKNOWN");
  is_int(rd_kafka_conf_set(c, "dynconf.startup.timeout.ms", "2000", e,
                           sizeof(e)),
         RD_KAFKA_CONF_OK, "a good one: OK");
  char v[64];
  size_t sz = sizeof(v);
  is_int(rd_kafka_conf_get(c, "dynconf.startup.timeout.ms", v, &sz),
         RD_KAFKA_CONF_UNKNOWN, "  and librdkafka does not store it");
  rd_kafka_conf_destroy(c);
}

static int g_dr, g_dr_err;
static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op) {
  (void)rk;
  (void)op;
  g_dr++;
  if (m->err) {
    g_dr_err++;
    diag("delivery: %s", rd_kafka_err2str(m->err));
  }
}

/* ProduceRequests sent and ProduceResponses received, from librdkafka's
 * protocol debug lines (its broker threads log through the callback). */
static int g_sent, g_received;
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static void on_rk_log(const rd_kafka_t *rk, int level, const char *fac,
                      const char *buf) {
  (void)rk;
  (void)level;
  (void)fac;
  pthread_mutex_lock(&g_log_lock);
  if (strstr(buf, "Sent ProduceRequest"))
    g_sent++;
  if (strstr(buf, "Received ProduceResponse"))
    g_received++;
  pthread_mutex_unlock(&g_log_lock);
}

/* The client works: a message reaches librdkafka's mock cluster, sent
 * with the operator's acks=0 (librdkafka expects no ProduceResponse). */
static void test_produce(void) {
  rd_kafka_conf_t *c = app_conf(PLUGIN_FIRST, "plug-a", g_bs,
                                "test.mock.num.brokers", "1", "debug",
                                "protocol", "log_level", "7", NULL, NULL);
  rd_kafka_conf_set_dr_msg_cb(c, on_dr);
  rd_kafka_conf_set_log_cb(c, on_rk_log);
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c, NULL);
  if (!ok(rk, "mock cluster: rd_kafka_new succeeds"))
    return;
  is_str(client_val(rk, "acks"), "0", "  acks is the operator's 0");
  rd_kafka_resp_err_t err =
      rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("plugin-topic"),
                        RD_KAFKA_V_VALUE("hello", 5),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  is_int(err, 0, "  produce enqueues");
  rd_kafka_flush(rk, 15000);
  is_int(g_dr, 1, "  one delivery report");
  is_int(g_dr_err, 0, "  and the message was delivered");
  rd_kafka_destroy(rk);
  pthread_mutex_lock(&g_log_lock);
  ok(g_sent >= 1, "  in a ProduceRequest (%d)", g_sent);
  is_int(g_received, 0, "  with acks=0 on the wire: no ProduceResponse");
  pthread_mutex_unlock(&g_log_lock);
}

/* rd_kafka_conf_dup() of a conf carrying the plugin keeps its dynconf.*
 * settings: a client made from the copy gets the operator's values. */
static void test_dup(void) {
  rd_kafka_conf_t *c = app_conf(PLUGIN_FIRST, "plug-a", g_bs, "acks", "all",
                                NULL, NULL);
  rd_kafka_conf_t *d = rd_kafka_conf_dup(c);
  rd_kafka_conf_destroy(c); /* the copy stands alone */
  rd_kafka_conf_t *d2 = rd_kafka_conf_dup(d);
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, d, NULL);
  if (ok(rk, "a copy of the conf makes a client")) {
    is_str(client_val(rk, "acks"), "0", "  that gets the operator's acks=0");
    rd_kafka_destroy(rk);
  }
  rk = new_client(RD_KAFKA_PRODUCER, d2, NULL);
  if (ok(rk, "a copy of the copy too")) {
    is_str(client_val(rk, "acks"), "0", "  with acks=0");
    rd_kafka_destroy(rk);
  }
}

/* Lines the plugin logs through the client's own log callback, once the
 * client is made (its facility and text). */
static char g_client_lines[8192];
static void on_client_log(const rd_kafka_t *rk, int level, const char *fac,
                          const char *buf) {
  (void)rk;
  (void)level;
  pthread_mutex_lock(&g_log_lock);
  size_t used = strlen(g_client_lines);
  snprintf(g_client_lines + used, sizeof(g_client_lines) - used, "%s| %s\n",
           fac, buf);
  pthread_mutex_unlock(&g_log_lock);
}

static bool client_logged(const char *what) {
  int64_t deadline = dc_tu_now_ms() + 30000;
  bool seen;
  do {
    pthread_mutex_lock(&g_log_lock);
    seen = strstr(g_client_lines, what) != NULL;
    pthread_mutex_unlock(&g_log_lock);
    if (!seen)
      dc_tu_sleep_ms(20);
  } while (!seen && dc_tu_now_ms() < deadline);
  return seen;
}

/* The client joins the fleet as a plugin client, naming the binding
 * that says it is one; a change made while it runs is reported as
 * restart needed, with the value that would apply, and told through the
 * client's log callback; changed back, it is up to date again. */
static void test_fleet(int port) {
  au_fleet_client_t f;
  is_int(au_alter(port, "plug-r", "acks=0"), 0, "fleet: plug-r acks=0");
  rd_kafka_conf_t *c = app_conf(PLUGIN_FIRST, "plug-r", g_bs,
                                "client.software.name", "test-binding",
                                "client.software.version", "9.9", "log_level",
                                "6", NULL, "dynconf.log.level", "6", NULL);
  rd_kafka_conf_set_log_cb(c, on_client_log);
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c, NULL);
  if (!ok(rk, "fleet: a client with the plugin"))
    return;
  ok(au_wait_fleet(port, "plug-r", DC_FLEET_UP_TO_DATE, true, &f),
     "fleet: it is listed, up to date");
  ok(!strncmp(f.agent, "dynconf-plugin/", 15), "  as dynconf-plugin: %s",
     f.agent);
  char want[128];
  snprintf(want, sizeof(want), "librdkafka/%s test-binding/9.9",
           rd_kafka_version_str());
  is_str(f.app, want, "  on librdkafka, with the binding it names");

  is_int(au_alter(port, "plug-r", "acks=1"), 0, "fleet: acks=1 while it runs");
  ok(au_wait_fleet(port, "plug-r", DC_FLEET_RESTART, true, &f),
     "  the client reports restart needed");
  is_int(f.outcome, DC_OUTCOME_RESTART, "  outcome restart needed");
  is_str(f.reason, "after a restart: acks=1", "  with the value that would "
         "apply");
  is_str(client_val(rk, "acks"), "0", "  the client runs on with acks=0");
  ok(client_logged("CHANGE| acks: 0 -> 1 (client-override) accepted; the "
                   "client takes it when it is restarted"),
     "  said through the client's log callback");

  is_int(au_alter(port, "plug-r", "acks=0"), 0, "fleet: acks=0 again");
  ok(au_wait_fleet(port, "plug-r", DC_FLEET_UP_TO_DATE, true, &f),
     "  up to date again: it runs what it started with");
  rd_kafka_destroy(rk);
}

/* The agent's one thread lives as long as the client, and goes with it. */
static void test_threads(void) {
  int before = dc_tu_thread_count();
  rd_kafka_conf_t *plain = rd_kafka_conf_new();
  set(plain, "client.id", "plug-a");
  set(plain, "bootstrap.servers", g_down_bs);
  set(plain, "log_level", "0");
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, plain, NULL);
  dc_tu_sleep_ms(200);
  int without = dc_tu_thread_count();
  rd_kafka_destroy(rk);
  dc_tu_thread_count_settled(before);

  rd_kafka_conf_t *c = app_conf(PLUGIN_FIRST, "plug-a", g_bs, NULL, NULL);
  set(c, "bootstrap.servers", g_down_bs);
  rk = new_client(RD_KAFKA_PRODUCER, c, NULL);
  dc_tu_sleep_ms(200);
  int with = dc_tu_thread_count();
  if (rk)
    rd_kafka_destroy(rk);
  int after = dc_tu_thread_count_settled(before);
  is_int(with - without, 1, "the plugin adds one thread to a client (%d vs %d)",
         with, without);
  is_int(after, before, "rd_kafka_destroy leaves no thread behind");
}

int main(void) {
  char dir[256], errstr[512];
  char rel[PATH_MAX];
  snprintf(rel, sizeof(rel), "%s/.libs/libdynconf-plugin.so", dc_tu_builddir());
  if (!ok(realpath(rel, g_plugin), "the plugin is built: %s", rel))
    return done_testing();
  dc_tu_daemon_t d;
  if (!ok(!dc_tu_daemon_start_tmp(&d, dir, sizeof(dir), NULL, errstr,
                                  sizeof(errstr)),
          "dynconfd started")) {
    diag("%s", errstr);
    return done_testing();
  }
  snprintf(g_tmp, sizeof(g_tmp), "%s", dir);
  snprintf(g_bs, sizeof(g_bs), "127.0.0.1:%d", d.port);
  snprintf(g_down_bs, sizeof(g_down_bs), "127.0.0.1:%d", dc_tu_closed_port());
  is_int(au_alter(d.port, "plug-a", "acks=0,batch.num.messages=777,linger.ms=7"),
         0, "plug-a configured on dynconfd");
  is_int(au_alter(d.port, "plug-idem", "acks=1"), 0, "plug-idem configured");
  is_int(au_alter(d.port, "plug-c",
                  "session.timeout.ms=20000,heartbeat.interval.ms=2000"),
         0, "plug-c configured");
  diag("librdkafka %s", rd_kafka_version_str());

  test_bad_values();
  test_operator_values(APP_FIRST);
  test_operator_values(PLUGIN_FIRST);
  test_rules();
  test_fail_open();
  test_required();
  test_produce();
  test_dup();
  test_fleet(d.port);
  test_threads();

  ok(dc_tu_daemon_alive(&d), "dynconfd still running");
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd stops cleanly");
  if (tap_failed)
    dc_tu_daemon_log_tail(&d, 30);
  dc_tu_file_texts_free();
  dc_tu_rmrf(dir);
  return done_testing();
}
