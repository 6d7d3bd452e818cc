/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's fleet view, on the wire against a real dynconfd: ClientReport
 * (API 20002) and DescribeFleet (API 20003).
 *   - both listed in ApiVersions;
 *   - a report makes an entry with what the agent said and where it is
 *     (principal, peer, listener); its state against the version that
 *     resolves now: up to date, behind after an alter, rejected, and up to
 *     date again; "restart needed" of the version that resolves now (its
 *     own state, with the values a restart would apply), of another
 *     version behind;
 *   - version -1 means the version a Watch last served the connection;
 *   - filters by client-id and user;
 *   - an instance that reports from a new connection stays one entry, and
 *     the old connection's close does not make it gone; the new one's
 *     close does (silent, still listed within the retention, dropped with
 *     --fleet-retention-ms 0);
 *   - reports no agent sends (empty or long fields, an undefined outcome
 *     (the message names the known ones), an empty client-id) are refused
 *     with a sentence, the connection kept;
 *   - ACLs: a report needs describe on the client-id, and DescribeFleet
 *     leaves out clients the caller may not describe;
 *   - two SASL users: mallory reporting alice's instance id is refused
 *     (CLUSTER_AUTHORIZATION_FAILED, saying why), alice's entry stays as
 *     it was, and dynconfd logs the refusal.
 */
#include "../agentutil.h" /* au_alter */

#include <limits.h>

static int enc_report(dc_buf_t *b, int16_t v, const void *q) {
  return dc_client_report_req_encode(b, v, q);
}
static int enc_watch(dc_buf_t *b, int16_t v, const void *q) {
  return dc_watch_req_encode(b, v, q);
}

static dc_kclient_t *connected(const char *bs) {
  char err[512];
  dc_kclient_t *kc = dc_kclient_new("fleet-test");
  if (kc && !dc_kclient_connect(kc, bs, 10000, err, sizeof(err)))
    return kc;
  diag("connect: %s", err);
  dc_kclient_destroy(kc);
  return NULL;
}

/* A report of (instance, client, outcome, version); the answer's error
 * code, message in msg; -1 when the request failed. */
static int report(dc_kclient_t *kc, const char *inst, const char *client,
                  int8_t outcome, int64_t version, const char *reason,
                  char *msg, size_t msg_size) {
  dc_client_report_req_t q = {
      .client_id = (char *)client, .instance_id = (char *)inst,
      .kind = "producer", .software_name = "dynconf-agent",
      .software_version = "9.9", .client_library = "librdkafka/2.0.2",
      .version = version, .generation = 3, .outcome = outcome,
      .reason = (char *)reason};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_client_report_resp_t resp;
  int rc = -1;
  if (!dc_kclient_request(kc, DC_API_CLIENT_REPORT, 0, enc_report, &q, 10000,
                          &rd, &a, err, sizeof(err)) &&
      !dc_client_report_resp_decode(&rd, 0, &resp)) {
    rc = resp.error_code;
    snprintf(msg, msg_size, "%s", resp.error_message ? resp.error_message : "");
  } else {
    snprintf(msg, msg_size, "%s", err);
  }
  dc_arena_free(&a);
  return rc;
}

/* The version that resolves for client now, from an immediate Watch. */
static int64_t version_of(dc_kclient_t *kc, const char *client) {
  dc_watch_req_t q = {(char *)client, -1, 1000, -1};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256];
  dc_watch_resp_t resp;
  int64_t v = -1;
  if (!dc_kclient_request(kc, DC_API_WATCH, 0, enc_watch, &q, 10000, &rd, &a,
                          err, sizeof(err)) &&
      !dc_watch_resp_decode(&rd, 0, &resp))
    v = resp.version;
  dc_arena_free(&a);
  return v;
}

static char g_bs[64];
static int g_port;

static const au_fleet_client_t *find(const au_fleet_client_t *v, int n, const char *inst) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i].instance, inst))
      return &v[i];
  return NULL;
}

/* Polls DescribeFleet until inst is listed with connected == want (or,
 * gone == true, not listed at all), up to 10 s. */
static bool wait_for(dc_kclient_t *kc, const char *inst, bool want,
                     bool gone) {
  int64_t deadline = dc_tu_now_ms() + 10000;
  do {
    au_fleet_client_t v[8];
    int n = au_fleet(kc, NULL, NULL, v, 8);
    const au_fleet_client_t *e = find(v, n < 8 ? n : 8, inst);
    if (gone ? n >= 0 && !e : e && e->connected == want)
      return true;
    dc_tu_sleep_ms(20);
  } while (dc_tu_now_ms() < deadline);
  return false;
}

static void test_listed(dc_kclient_t *a) {
  int16_t lo = -1, hi = -1, lo2 = -1, hi2 = -1;
  ok(!dc_kclient_api_versions(a, 5000, NULL, 0) &&
         dc_kclient_api_range(a, DC_API_CLIENT_REPORT, &lo, &hi) &&
         dc_kclient_api_range(a, DC_API_DESCRIBE_FLEET, &lo2, &hi2) &&
         lo == 0 && hi == 0 && lo2 == 0 && hi2 == 1,
     "ApiVersions lists ClientReport v0 and DescribeFleet v0-v1");
}

/* One agent's entry through a rollout: up to date, behind, rejected. */
static void test_states(dc_kclient_t *a) {
  char msg[512];
  au_fleet_client_t v[8];
  int64_t v1 = version_of(a, "f1");
  is_int(report(a, "inst-1", "f1", DC_OUTCOME_APPLIED, v1, NULL, msg,
                sizeof(msg)), 0, "a report is taken (%s)", msg);
  int n = au_fleet(a, NULL, NULL, v, 8);
  const au_fleet_client_t *e = find(v, n, "inst-1");
  ok(n == 1 && e, "one client in the fleet");
  if (!e)
    return;
  ok(!strcmp(e->client, "f1") && !strcmp(e->principal, "User:ANONYMOUS") &&
         !strcmp(e->listener, "PLAINTEXT") && e->peer_set && e->connected,
     "  its client-id, principal, listener and peer, connected");
  ok(!strcmp(e->agent, "dynconf-agent/9.9") &&
         !strcmp(e->app, "librdkafka/2.0.2") && !strcmp(e->kind, "producer") &&
         e->generation == 3,
     "  what it runs and its generation, as reported");
  ok(e->reported == v1 && e->current == v1 && e->served == v1 &&
         e->state == DC_FLEET_UP_TO_DATE && e->outcome == DC_OUTCOME_APPLIED,
     "  up to date: it applied the version that resolves now");
  is_int(au_alter(g_port, "f1", "acks=0"), 0, "alter f1 acks=0");
  n = au_fleet(a, NULL, NULL, v, 8);
  e = find(v, n, "inst-1");
  ok(e && e->state == DC_FLEET_BEHIND && e->current != v1 &&
         e->reported == v1,
     "  behind after the alter: another version resolves now");
  int64_t v2 = version_of(a, "f1");
  is_int(report(a, "inst-1", "f1", DC_OUTCOME_REJECTED, v2,
                "session.timeout.ms=7000 (heartbeat too close)", msg,
                sizeof(msg)), 0, "a rejection is reported");
  n = au_fleet(a, NULL, NULL, v, 8);
  e = find(v, n, "inst-1");
  ok(e && e->state == DC_FLEET_REJECTED && e->reported == v2 &&
         strstr(e->reason, "heartbeat too close"),
     "  rejected, with its reason");
  is_int(report(a, "inst-1", "f1", DC_OUTCOME_PARTLY, -1, "acks pinned", msg,
                sizeof(msg)), 0, "version -1: the version served last");
  n = au_fleet(a, NULL, NULL, v, 8);
  e = find(v, n, "inst-1");
  ok(e && e->reported == v2 && e->state == DC_FLEET_UP_TO_DATE &&
         e->outcome == DC_OUTCOME_PARTLY,
     "  up to date (applied partly) at the version the Watch served");
  static char longest[2050];
  memset(longest, 'r', 2048);
  is_int(report(a, "inst-1", "f1", DC_OUTCOME_REJECTED, v2, longest, msg,
                sizeof(msg)), 0, "a 2048-byte reason is taken");
  n = au_fleet(a, NULL, NULL, v, 8);
  e = find(v, n, "inst-1");
  ok(e && strlen(e->reason) == 2048, "  and kept whole");
  longest[2048] = 'r';
  ok(report(a, "inst-1", "f1", DC_OUTCOME_REJECTED, v2, longest, msg,
            sizeof(msg)) == DC_ERR_INVALID_REQUEST &&
         strstr(msg, "reason is too long (at most 2048 bytes)"),
     "  one byte more is refused, saying so (%s)", msg);
  is_int(report(a, "inst-1", "f1", DC_OUTCOME_PARTLY, v2, "acks pinned", msg,
                sizeof(msg)), 0, "  (back to applied partly)");
}

/* inst-1 (applied partly, up to date) reports "restart needed": for the
 * version that resolves now its own state, for another one behind. */
static void test_restart(dc_kclient_t *a) {
  char msg[512];
  au_fleet_client_t v[8];
  int64_t now = version_of(a, "f1");
  is_int(report(a, "inst-1", "f1", DC_OUTCOME_RESTART, now,
                "acks=0; session.timeout.ms=30000", msg, sizeof(msg)),
         0, "\"restart needed\" is taken (%s)", msg);
  int n = au_fleet(a, NULL, NULL, v, 8);
  const au_fleet_client_t *e = find(v, n, "inst-1");
  ok(e && e->state == DC_FLEET_RESTART && e->outcome == DC_OUTCOME_RESTART &&
         e->reported == now && e->current == now &&
         !strcmp(e->reason, "acks=0; session.timeout.ms=30000"),
     "  restart needed, with the values a restart would apply");
  is_int(report(a, "inst-1", "f1", DC_OUTCOME_RESTART, now + 1, "acks=0",
                msg, sizeof(msg)), 0, "  then of another version");
  n = au_fleet(a, NULL, NULL, v, 8);
  e = find(v, n, "inst-1");
  ok(e && e->state == DC_FLEET_BEHIND && e->outcome == DC_OUTCOME_RESTART &&
         e->reported == now + 1,
     "  behind: its report is not of the version that resolves now");
  is_int(report(a, "inst-1", "f1", DC_OUTCOME_PARTLY, now, "acks pinned",
                msg, sizeof(msg)), 0, "  (back to applied partly)");
}

/* Filters, a second instance, moving and leaving connections. */
static void test_connections(dc_kclient_t *a) {
  char msg[512];
  au_fleet_client_t v[8];
  dc_kclient_t *b = connected(g_bs), *c = connected(g_bs);
  if (!ok(b && c, "two more connections")) {
    dc_kclient_destroy(b);
    dc_kclient_destroy(c);
    return;
  }
  is_int(report(b, "inst-2", "f2", DC_OUTCOME_APPLIED, version_of(b, "f2"),
                NULL, msg, sizeof(msg)), 0, "inst-2 reports for f2");
  is_int(au_fleet(a, NULL, NULL, v, 8), 2, "two clients");
  int nf = au_fleet(a, "f2", NULL, v, 8);
  ok(nf == 1 && !strcmp(v[0].instance, "inst-2"), "client-id filter: f2 only");
  is_int(au_fleet(a, NULL, "ANONYMOUS", v, 8), 2, "user filter: both");
  is_int(au_fleet(a, NULL, "bob", v, 8), 0, "user bob: none");
  is_int(au_fleet(a, "f2", "bob", v, 8), 0, "f2 and bob: none");
  /* inst-2 comes back on c before b is closed. */
  is_int(report(c, "inst-2", "f2", DC_OUTCOME_APPLIED, version_of(c, "f2"),
                NULL, msg, sizeof(msg)), 0, "inst-2 reports again on a new "
                                            "connection");
  /* A probe closed right after b: once the server saw it go, it has
   * seen b's close too (one event loop, closes read in order). */
  dc_kclient_t *probe = connected(g_bs);
  report(probe, "inst-probe", "f9", 0, 1, NULL, msg, sizeof(msg));
  dc_kclient_destroy(b);
  dc_kclient_destroy(probe);
  ok(wait_for(a, "inst-probe", false, false), "the probe is gone");
  int n = au_fleet(a, NULL, NULL, v, 8);
  const au_fleet_client_t *e = find(v, n, "inst-2");
  ok(n == 3 && e && e->connected && e->state == DC_FLEET_UP_TO_DATE,
     "  inst-2: one entry, still connected after the old connection closed");
  dc_kclient_destroy(c);
  ok(wait_for(a, "inst-2", false, false), "  gone once its connection closed");
  n = au_fleet(a, NULL, NULL, v, 8);
  e = find(v, n, "inst-2");
  ok(n == 3 && e && e->state == DC_FLEET_SILENT,
     "  silent, kept within the retention");
}

static void test_refused(dc_kclient_t *a) {
  static const struct {
    const char *inst, *client, *want;
    int8_t outcome;
  } bad[] = {
      {"", "f1", "instance_id is empty", 0},
      {"0123456789012345678901234567890123456789012345678901234567890123x",
       "f1", "instance_id is too long", 0},
      {"inst-x", "f1", "outcome 7", 7},
      {"inst-x", "f1",
       "outcome 4 is none of applied (0), applied partly (1), rejected (2), "
       "restart needed (3)", 4},
      {"inst-x", "", "", 0},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char msg[512];
    int rc = report(a, bad[i].inst, bad[i].client, bad[i].outcome, 1, NULL,
                    msg, sizeof(msg));
    ok(rc == DC_ERR_INVALID_REQUEST && msg[0] && strstr(msg, bad[i].want),
       "refused: %s (%s)", bad[i].want[0] ? bad[i].want : "an empty client-id",
       msg);
  }
  au_fleet_client_t v[8];
  ok(au_fleet(a, NULL, NULL, v, 8) == 3 && !find(v, 3, "inst-x"),
     "  nothing recorded, the connection serves on");
}

static void test_acl_and_retention(void) {
  char dir[PATH_MAX - 64], acl[PATH_MAX], err[512], sdir[PATH_MAX - 64];
  if (dc_tu_tmpdir(dir, sizeof(dir)))
    return;
  dc_tu_put_file(dir, "acl", "allow User:ANONYMOUS describe client:open-*\n",
                 acl, sizeof(acl));
  const char *extra[] = {"--acl-file", acl, "--fleet-retention-ms", "0", NULL};
  dc_tu_daemon_t d;
  if (!ok(!dc_tu_daemon_start_tmp(&d, sdir, sizeof(sdir), extra, err,
                                  sizeof(err)),
          "dynconfd with an ACL and --fleet-retention-ms 0 (%s)", err))
    return;
  char bs[64], msg[512];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", dc_tu_daemon_port_of(&d, "PLAINTEXT"));
  dc_kclient_t *a = connected(bs), *b = connected(bs);
  au_fleet_client_t v[4];
  if (a && b) {
    ok(report(a, "i-closed", "closed-app", 0, 1, NULL, msg, sizeof(msg)) ==
               DC_ERR_CLUSTER_AUTHORIZATION_FAILED && msg[0],
       "a report for a client-id the ACL denies: refused (%s)", msg);
    is_int(report(a, "i-open", "open-app", 0, 1, NULL, msg, sizeof(msg)), 0,
           "  one it allows is taken");
    is_int(report(b, "i-gone", "open-b", 0, 1, NULL, msg, sizeof(msg)), 0,
           "a second instance reports");
    dc_kclient_destroy(b);
    b = NULL;
    ok(wait_for(a, "i-gone", false, true),
       "retention 0: the gone instance is dropped at once");
    int n = au_fleet(a, NULL, NULL, v, 4);
    ok(n == 1 && !strcmp(v[0].instance, "i-open"), "  the other stays");
  }
  dc_kclient_destroy(a);
  dc_kclient_destroy(b);
  dc_tu_daemon_stop(&d);
  dc_tu_rmrf(sdir);
  dc_tu_rmrf(dir);
}

/* A connection as user (SASL PLAIN) to the SASL_PLAINTEXT listener. */
static dc_kclient_t *connected_as(int port, const char *user,
                                  const char *password) {
  char bs[64], err[512] = "";
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  dc_kclient_security_t sec = {.protocol = "SASL_PLAINTEXT",
                               .sasl_mechanism = "PLAIN",
                               .sasl_username = user,
                               .sasl_password = password};
  dc_kclient_t *kc = dc_kclient_new("fleet-test");
  if (kc && !dc_kclient_set_security(kc, &sec, err, sizeof(err)) &&
      !dc_kclient_connect(kc, bs, 10000, err, sizeof(err)))
    return kc;
  diag("connect as %s: %s", user, err);
  dc_kclient_destroy(kc);
  return NULL;
}

static void hijack_refused(int port, const char *log) {
  char msg[512];
  au_fleet_client_t v[4];
  dc_kclient_t *alice = connected_as(port, "alice", "alice-secret"),
               *mallory = connected_as(port, "mallory", "mallory-secret");
  if (ok(alice && mallory, "alice and mallory log in")) {
    is_int(report(alice, "inst-alice", "pay-app", DC_OUTCOME_APPLIED, 1,
                  "all good", msg, sizeof(msg)), 0, "alice reports inst-alice");
    int rc = report(mallory, "inst-alice", "pay-app", DC_OUTCOME_REJECTED, 1,
                    "rejected: pwned", msg, sizeof(msg));
    ok(rc == DC_ERR_CLUSTER_AUTHORIZATION_FAILED &&
           strstr(msg, "instance_id 'inst-alice' belongs to another "
                       "principal"),
       "mallory reports inst-alice: refused, saying why (%s)", msg);
    int n = au_fleet(alice, NULL, NULL, v, 4);
    const au_fleet_client_t *e = find(v, n < 4 ? n : 4, "inst-alice");
    ok(n == 1 && e && !strcmp(e->principal, "User:alice") &&
           !strcmp(e->reason, "all good") &&
           e->outcome == DC_OUTCOME_APPLIED && e->connected,
       "  the entry is alice's, as she reported it");
    const char *text = dc_tu_file_text(log);
    ok(text && strstr(text, "ClientReport from User:mallory at ") &&
           strstr(text, "refused: instance_id 'inst-alice' belongs to "
                        "User:alice"),
       "  dynconfd logs the refusal");
  }
  dc_kclient_destroy(alice);
  dc_kclient_destroy(mallory);
  dc_tu_file_texts_free();
}

static void test_hijack(void) {
  char dir[PATH_MAX - 64], creds[PATH_MAX], cmd[3 * PATH_MAX], err[512] = "";
  if (dc_tu_tmpdir(dir, sizeof(dir)))
    return;
  snprintf(creds, sizeof(creds), "%s/creds", dir);
  snprintf(cmd, sizeof(cmd),
           "printf 'alice-secret\\n' | %s/dynconfd --credentials %s "
           "--add-user alice --iterations 4096 >/dev/null && "
           "printf 'mallory-secret\\n' | %s/dynconfd --credentials %s "
           "--add-user mallory --iterations 4096 >/dev/null",
           dc_tu_builddir(), creds, dc_tu_builddir(), creds);
  char sdir[PATH_MAX - 64];
  const char *extra[] = {"--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
                         "--credentials", creds, NULL};
  dc_tu_daemon_t d;
  if (ok(dc_tu_system(cmd) == 0, "users alice and mallory") &&
      ok(!dc_tu_daemon_start_tmp(&d, sdir, sizeof(sdir), extra, err,
                                 sizeof(err)),
         "dynconfd with a SASL_PLAINTEXT listener (%s)", err)) {
    hijack_refused(dc_tu_daemon_port_of(&d, "SASL_PLAINTEXT"),
                   dc_tu_path(sdir, "dynconfd.log"));
    is_int(dc_tu_daemon_stop(&d), 0, "dynconfd exits 0");
    dc_tu_rmrf(sdir);
  }
  dc_tu_rmrf(dir);
}

int main(void) {
  char dir[PATH_MAX - 64], err[512];
  dc_tu_daemon_t d;
  if (dc_tu_daemon_start_tmp(&d, dir, sizeof(dir), NULL, err, sizeof(err))) {
    printf("Bail out! dynconfd did not start: %s\n", err);
    return 1;
  }
  g_port = dc_tu_daemon_port_of(&d, "PLAINTEXT");
  snprintf(g_bs, sizeof(g_bs), "127.0.0.1:%d", g_port);
  dc_kclient_t *a = connected(g_bs);
  if (ok(a != NULL, "connected")) {
    test_listed(a);
    test_states(a);
    test_restart(a);
    test_connections(a);
    test_refused(a);
  }
  dc_kclient_destroy(a);
  ok(dc_tu_daemon_alive(&d), "dynconfd still running");
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd exits 0");
  dc_tu_rmrf(dir);
  test_acl_and_retention();
  test_hijack();
  return done_testing();
}
