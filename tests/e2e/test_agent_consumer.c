/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The heart of KIP-649: a consumer whose session timeout is set centrally.
 *
 * dynconfd holds session.timeout.ms / heartbeat.interval.ms for a client
 * id; the agent fetches them synchronously in dynconf_new(); the
 * application builds its consumer from dynconf_effective_conf() and joins a
 * group on librdkafka's mock cluster. A kproxy (tests/kproxy.h) sits in
 * front of the mock broker and records every group request, so the
 * test sees the session timeout that actually went on the wire.
 *
 * Control case: a client id with no dynamic values joins with the
 * application's own session timeout, so the test can fail.
 */
#include "../tap.h"
#include "../testutil.h"

#include "client/kclient.h"
#include "dynconf.h"
#include "../kproxy.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define WAIT_MS 30000
#define APP_SESSION "41000"   /* the application's own session timeout */
#define DYN_SESSION "25000"   /* set on dynconfd (within its bounds) */
#define DYN_HEARTBEAT "2500"
#define DEF_SESSION "30000"   /* on the <default> entity */
#define TOPIC "kip649-topic"

static int g_port;         /* dynconfd */
static kproxy_t g_proxy;   /* in front of the mock broker */

static int enc_incremental(dc_buf_t *b, int16_t v, const void *req) {
  return dc_incremental_alter_configs_req_encode(b, v, req);
}

/* Sets key=value pairs (NULL-terminated) on a client entity in one
 * IncrementalAlterConfigs request. Returns the per-resource error code or
 * -1 when the request failed. */
static int alter_set(const char *entity, ...) {
  dc_alter_config_t ops[8];
  int32_t n = 0;
  va_list ap;
  va_start(ap, entity);
  for (const char *k; n < 8 && (k = va_arg(ap, const char *));) {
    ops[n++] = (dc_alter_config_t){.name = (char *)k, .op = DC_OP_SET,
                                   .value = va_arg(ap, char *)};
  }
  va_end(ap);
  dc_alter_resource_t r = {.resource_type = DC_RES_CLIENT,
                           .resource_name = (char *)entity,
                           .n_configs = n,
                           .configs = ops};
  dc_alter_configs_req_t req = {.n_resources = 1, .resources = &r};
  char bs[64], errstr[512] = "";
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", g_port);
  dc_kclient_t *kc = dc_kclient_new("agent-consumer-admin"); /* freed below */
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  int16_t v;
  int rc = -1;
  if (kc && !dc_kclient_connect(kc, bs, 5000, errstr, sizeof(errstr)) &&
      !dc_kclient_api_versions(kc, 5000, errstr, sizeof(errstr)) &&
      (v = dc_kclient_pick_version(kc, DC_API_INCREMENTAL_ALTER_CONFIGS)) >= 0 &&
      !dc_kclient_request(kc, DC_API_INCREMENTAL_ALTER_CONFIGS, v,
                          enc_incremental, &req, 5000, &rd, &arena, errstr,
                          sizeof(errstr)) &&
      !dc_incremental_alter_configs_resp_decode(&rd, v, &resp) &&
      resp.n_responses == 1) {
    rc = resp.responses[0].error_code;
    if (rc && resp.responses[0].error_message)
      diag("alter %s: %s", entity, resp.responses[0].error_message);
  } else {
    diag("alter %s failed: %s", entity, errstr);
  }
  dc_arena_free(&arena);
  dc_kclient_destroy(kc);
  return rc;
}

static int g_n_change;
static void on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  (void)opaque;
  if (dynconf_event_type(ev) == DYNCONF_EVENT_CHANGE)
    g_n_change++;
  else
    diag("agent event %d: %s", (int)dynconf_event_type(ev),
         dynconf_event_error_string(ev));
}

static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  if (level <= 5)
    diag("agent log %d %s %s: %s", level, dynconf_client_id(dc), fac, msg);
}

static void conf_str(const rd_kafka_conf_t *c, const char *name, char *out,
                     size_t n) {
  size_t sz = n;
  if (rd_kafka_conf_get(c, name, out, &sz) != RD_KAFKA_CONF_OK)
    snprintf(out, n, "(unset)");
}

/* One managed consumer: agent, effective conf, consumer joining the group
 * through the proxy. Checks its conf and its JoinGroup. want_* are the
 * values that must reach librdkafka and the wire. */
static void run_consumer(const char *cid, const char *group,
                         const char *want_session, const char *want_heartbeat,
                         dynconf_source_t want_src) {
  char e[512], bs[64], v[64];
  rd_kafka_conf_t *app = rd_kafka_conf_new(); /* ours; the agent copies it */
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", g_proxy.port);
  rd_kafka_conf_set(app, "bootstrap.servers", bs, e, sizeof(e));
  rd_kafka_conf_set(app, "client.id", cid, e, sizeof(e));
  rd_kafka_conf_set(app, "group.id", group, e, sizeof(e));
  rd_kafka_conf_set(app, "session.timeout.ms", APP_SESSION, e, sizeof(e));
  rd_kafka_conf_set(app, "auto.offset.reset", "earliest", e, sizeof(e));

  dynconf_conf_t *dconf = dynconf_conf_new();
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", g_port);
  dynconf_conf_set(dconf, "dynconf.bootstrap.servers", bs, e, sizeof(e));
  dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", "500", e, sizeof(e));
  dynconf_conf_set_change_cb(dconf, on_change);
  dynconf_conf_set_log_cb(dconf, on_log);
  g_n_change = 0;
  dynconf_t *dc = dynconf_new(RD_KAFKA_CONSUMER, app, dconf, e, sizeof(e));
  rd_kafka_conf_destroy(app);
  if (!ok(dc, "%s: agent created", cid)) {
    diag("dynconf_new: %s", e);
    dynconf_conf_destroy(dconf);
    return;
  }
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "%s: state up", cid);
  dynconf_source_t src;
  dynconf_effective_get(dc, "session.timeout.ms", v, sizeof(v), &src);
  is_str(v, want_session, "%s: agent's effective session.timeout.ms", cid);
  is_int(src, want_src, "%s: its source is %s", cid, dynconf_source_name(want_src));

  int from = kproxy_mark(&g_proxy); /* requests before this consumer */
  rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, eff, e, sizeof(e));
  if (!ok(rk, "%s: consumer created from dynconf_effective_conf()", cid)) {
    diag("rd_kafka_new: %s", e);
    rd_kafka_conf_destroy(eff);
    dynconf_destroy(dc);
    return;
  }
  /* (a) the consumer's own configuration. */
  conf_str(rd_kafka_conf(rk), "session.timeout.ms", v, sizeof(v));
  is_str(v, want_session, "%s: consumer's session.timeout.ms", cid);
  conf_str(rd_kafka_conf(rk), "heartbeat.interval.ms", v, sizeof(v));
  is_str(v, want_heartbeat, "%s: consumer's heartbeat.interval.ms", cid);

  /* (b) the wire: subscribe and wait for the JoinGroup the proxy saw. */
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *topics =
      rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, TOPIC, RD_KAFKA_PARTITION_UA);
  is_int(rd_kafka_subscribe(rk, topics), 0, "%s: subscribe", cid);
  rd_kafka_topic_partition_list_destroy(topics);
  kp_req_t j;
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  int seen = 0;
  /* The FIRST JoinGroup matters: the agent fetched before rd_kafka_new. */
  while (!(seen = kproxy_first_join(&g_proxy, cid, from, &j)) &&
         dc_tu_now_ms() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    if (m)
      rd_kafka_message_destroy(m);
    dynconf_poll(dc, 0);
  }
  if (ok(seen, "%s: the proxy saw a JoinGroup", cid)) {
    is_int(j.session_timeout_ms, atoi(want_session),
           "%s: first JoinGroup (v%d) carries session_timeout_ms %s", cid, j.version,
           want_session);
    is_str(j.group_id, group, "%s: JoinGroup group id", cid);
    ok(j.version >= 0 && j.version <= 5, "%s: JoinGroup v%d (0-5)", cid,
       j.version);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  dynconf_poll(dc, 0);
  is_int(g_n_change, want_src == DYNCONF_SOURCE_APP ? 0 : 1,
         "%s: change events", cid);
  dynconf_destroy(dc);
}

int main(void) {
  char dir[256], errstr[512];
  dc_tu_daemon_t d;
  if (!ok(!dc_tu_daemon_start_tmp(&d, dir, sizeof(dir), NULL, errstr,
                                  sizeof(errstr)),
          "dynconfd started")) {
    diag("%s", errstr);
    return done_testing();
  }
  g_port = d.port;
  is_int(alter_set("kip649-consumer", "session.timeout.ms", DYN_SESSION,
                   "heartbeat.interval.ms", DYN_HEARTBEAT, NULL),
         0, "dynamic session.timeout.ms=%s heartbeat.interval.ms=%s set",
         DYN_SESSION, DYN_HEARTBEAT);

  rd_kafka_conf_t *mc = rd_kafka_conf_new();
  rd_kafka_conf_set(mc, "log_level", "0", errstr, sizeof(errstr));
  rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mc, errstr, sizeof(errstr));
  rd_kafka_mock_cluster_t *mcl = mrk ? rd_kafka_mock_cluster_new(mrk, 1) : NULL;
  if (!ok(mcl, "mock cluster with one broker")) {
    if (mrk)
      rd_kafka_destroy(mrk);
    else
      rd_kafka_conf_destroy(mc);
    dc_tu_daemon_stop(&d);
    dc_tu_rmrf(dir);
    return done_testing();
  }
  rd_kafka_mock_topic_create(mcl, TOPIC, 1, 1);
  const char *mbs = rd_kafka_mock_cluster_bootstraps(mcl);
  const char *colon = strrchr(mbs, ':');
  int mport = colon ? atoi(colon + 1) : 0;
  diag("mock broker at %s", mbs);
  if (!ok(mport > 0 && !kproxy_start(&g_proxy, mport, errstr, sizeof(errstr)),
          "proxy in front of the mock broker")) {
    diag("%s", errstr);
  } else {
    run_consumer("kip649-consumer", "kip649-group", DYN_SESSION, DYN_HEARTBEAT,
                 DYNCONF_SOURCE_CLIENT);
    run_consumer("kip649-control", "kip649-control-group", APP_SESSION, "3000",
                 DYNCONF_SOURCE_APP);
    /* The <default> entity reaches a client with no override of its own
     * (set after the control ran, which must not see it). */
    is_int(alter_set("<default>", "session.timeout.ms", DEF_SESSION, NULL), 0,
           "default entity session.timeout.ms=%s", DEF_SESSION);
    run_consumer("kip649-defaulted", "kip649-default-group", DEF_SESSION,
                 "3000", DYNCONF_SOURCE_DEFAULT);
    /* ... and the client override still wins over it. */
    run_consumer("kip649-consumer", "kip649-group-2", DYN_SESSION,
                 DYN_HEARTBEAT, DYNCONF_SOURCE_CLIENT);
    ok(kproxy_count(&g_proxy, &g_proxy.n_metadata_rewritten) > 0,
       "proxy rewrote Metadata responses (%d)",
       kproxy_count(&g_proxy, &g_proxy.n_metadata_rewritten));
    ok(kproxy_count(&g_proxy, &g_proxy.n_findcoord_rewritten) > 0,
       "proxy rewrote FindCoordinator responses (%d)",
       kproxy_count(&g_proxy, &g_proxy.n_findcoord_rewritten));
    is_int(kproxy_count(&g_proxy, &g_proxy.n_rewrite_errors), 0,
           "no response the proxy could not decode");
    ok(kproxy_count(&g_proxy, &g_proxy.n_api_requests[KP_API_JOIN_GROUP]) >= 4,
       "JoinGroup requests went through the proxy");
    kproxy_stop(&g_proxy);
  }
  rd_kafka_mock_cluster_destroy(mcl);
  rd_kafka_destroy(mrk);
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd stops cleanly");
  if (tap_failed)
    dc_tu_daemon_log_tail(&d, 30);
  dc_tu_rmrf(dir);
  return done_testing();
}
