/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent with dynconfd's Watch (lib/agent/watch.c), against a real
 * dynconfd on loopback. Every agent refreshes once an hour, so a change
 * that arrives came by Watch, not by a fetch:
 *   - an alter of the client's own entity reaches the agent with no fetch
 *     (fetches.ok stays 1), once: one CHANGE event, one generation;
 *   - a <default> change wakes the agents that inherit the key and not one
 *     whose own value shadows it; another client's change wakes nobody;
 *   - twenty agents of one client-id all receive one alter, once each;
 *   - dynconf_refresh_now() ends a parked Watch (it would last an hour)
 *     and fetches; the fetch applies nothing twice, and watching resumes;
 *   - dynconfd restarted on its port: the agent reconnects by itself and
 *     an alter made after the restart arrives, with no refresh asked;
 *   - dynconf.watch=false: the agent never watches;
 *   - the agents report (ClientReport): dynconfd's fleet view shows a
 *     producer up to date with what it runs, a consumer whose own
 *     heartbeat.interval.ms makes it reject a session.timeout.ms as
 *     rejected with the reason, then up to date after a value it takes,
 *     and a destroyed agent as silent.
 * A server that does not list Watch, and servers that answer it wrongly,
 * are test_agent_hostile's; the requests on the wire, test_agent_wire's.
 *
 * Waits are "until a condition holds or a generous deadline passes".
 */
#include "../agentutil.h"

#define WAIT_MS 30000
#define FLEET 20

static char g_data[512], g_log[512];

/* A producer agent for client-id cid on dynconfd's port, refreshing once
 * an hour, with au_on_change(rec) and the NULL-terminated dynconf.* pairs
 * that follow. */
static dynconf_t *agent(int port, const char *cid, au_rec_t *rec, ...) {
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  rd_kafka_conf_t *app = au_app_conf(bs, cid, NULL);
  static const char *const base[] = {"dynconf.refresh.interval.ms", "3600000",
                                     "dynconf.startup.required", "true",
                                     NULL};
  memset(rec, 0, sizeof(*rec));
  rec->poller = pthread_self();
  va_list ap;
  va_start(ap, rec);
  dynconf_t *dc = au_agent_new_v(RD_KAFKA_PRODUCER, app, port, au_on_change,
                                 au_on_log, rec, base, ap);
  va_end(ap);
  rd_kafka_conf_destroy(app);
  return dc;
}

/* Polls the agents (serving their events) until each has seen want[i]
 * CHANGE events, or the deadline. true when all did. */
static bool wait_changes(dynconf_t **dcs, au_rec_t *recs, const int *want,
                         int n) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  for (;;) {
    bool all = true;
    for (int i = 0; i < n; i++) {
      dynconf_poll(dcs[i], 0);
      all = all && recs[i].n_change >= want[i];
    }
    if (all)
      return true;
    if (dc_tu_now_ms() > deadline)
      return false;
    dynconf_poll(dcs[0], 10);
  }
}

static bool wait_change(dynconf_t *dc, au_rec_t *rec, int want) {
  return wait_changes(&dc, rec, &want, 1);
}

/* Waits until the agent has a Watch parked (its first answer taken). */
static bool wait_watching(dynconf_t *dc) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (dc_tu_now_ms() < deadline) {
    char *s = dynconf_stats_json(dc);
    bool parked = s && strstr(s, "\"active\":true") &&
                  au_json_ll(s, "changes") >= 1;
    free(s);
    if (parked)
      return true;
    dynconf_poll(dc, 10);
  }
  return false;
}

/* ---- 1: pushed, once --------------------------------------------------- */

static void test_push(int port) {
  is_int(au_alter(port, "w-push", "acks=1"), 0, "push: acks=1 set");
  au_rec_t r;
  dynconf_t *dc = agent(port, "w-push", &r, NULL);
  if (!ok(dc, "push: agent created"))
    return;
  ok(au_eff_is(dc, "acks", "1", DYNCONF_SOURCE_CLIENT),
     "push: acks=1 from the first fetch");
  ok(wait_watching(dc), "push: the agent parks a Watch");
  long long changes0 = au_stat_ll(dc, "changes");
  is_int(au_alter(port, "w-push", "acks=0"), 0, "push: acks=0 set");
  ok(wait_change(dc, &r, 2), "push: a second CHANGE event arrives");
  ok(au_eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT),
     "push: acks=0 applied");
  is_int(au_stat_ll(dc, "ok"), 1, "push: by Watch: still one fetch");
  is_int(au_stat_ll(dc, "changes"), changes0 + 1,
         "push: one Watch answer for one alter");
  is_int(dynconf_generation(dc), 2, "push: generation 2");
  is_int(r.n_accepted, 2, "push: both accepted");

  /* A refresh ends the hour-long Watch: its fetch concludes, applies
   * nothing again, and the agent watches again afterwards. */
  ok(wait_watching(dc), "refresh: the agent is watching again");
  dynconf_refresh_now(dc);
  ok(au_wait_stat(dc, "ok", 2, WAIT_MS) == 2,
     "refresh: dynconf_refresh_now() ends the Watch and fetches");
  is_int(r.n_change, 2, "refresh: the fetch applies nothing twice");
  is_int(dynconf_generation(dc), 2, "refresh: generation still 2");
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "refresh: UP");
  is_int(au_stat_ll(dc, "failures"), 0,
         "refresh: an interrupted Watch is not the server's failure");
  ok(wait_watching(dc), "refresh: watching again");
  is_int(au_alter(port, "w-push", "acks=-1"), 0, "refresh: acks=-1 set");
  ok(wait_change(dc, &r, 3), "refresh: the next alter arrives by Watch");
  ok(au_eff_is(dc, "acks", "-1", DYNCONF_SOURCE_CLIENT),
     "refresh: acks=-1 applied");
  is_int(au_stat_ll(dc, "ok"), 2, "refresh: still by Watch (2 fetches)");
  is_int(r.n_other + r.n_wrong_thread, 0,
         "push: no error event, every callback on the polling thread");
  dynconf_destroy(dc);
}

/* ---- 2: who wakes --------------------------------------------------------- */

static void test_who_wakes(int port) {
  is_int(au_alter(port, "w-own", "acks=0"), 0, "who: w-own has acks=0");
  au_rec_t r[3];
  dynconf_t *dcs[3] = {agent(port, "w-own", &r[0], NULL),
                       agent(port, "w-inherit", &r[1], NULL),
                       agent(port, "w-other", &r[2], NULL)};
  if (!ok(dcs[0] && dcs[1] && dcs[2], "who: three agents")) {
    for (int i = 0; i < 3; i++)
      dynconf_destroy(dcs[i]);
    return;
  }
  long long c0[3];
  int e0[3]; /* CHANGE events so far: w-own's first fetch applied acks=0 */
  for (int i = 0; i < 3; i++) {
    ok(wait_watching(dcs[i]), "who: agent %d watching", i);
    c0[i] = au_stat_ll(dcs[i], "changes");
    dynconf_poll(dcs[i], 0);
    e0[i] = r[i].n_change;
  }
  is_int(e0[0], 1, "who: w-own applied its acks=0 at start");
  /* <default> acks=1: w-inherit and w-other inherit it, w-own shadows. */
  is_int(au_alter(port, "<default>", "acks=1"), 0, "who: <default> acks=1");
  int want[3] = {1, 1, 1};
  ok(wait_changes(dcs, r, want, 3), "who: the inheriting agents change");
  ok(au_eff_is(dcs[1], "acks", "1", DYNCONF_SOURCE_DEFAULT) &&
         au_eff_is(dcs[2], "acks", "1", DYNCONF_SOURCE_DEFAULT),
     "who: both apply acks=1 from <default>");
  /* Then w-other's own change: w-own's and w-inherit's next Watch answers
   * come from their own changes below, so a wrong wake before them would
   * show as one answer too many. */
  is_int(au_alter(port, "w-other", "acks=0"), 0, "who: w-other acks=0");
  want[2] = 2;
  ok(wait_changes(dcs, r, want, 3), "who: w-other changes again");
  is_int(au_alter(port, "w-own", "acks=-1"), 0, "who: w-own acks=-1");
  is_int(au_alter(port, "w-inherit", "acks=0"), 0, "who: w-inherit acks=0");
  want[0] = 2;
  want[1] = 2;
  ok(wait_changes(dcs, r, want, 3), "who: w-own and w-inherit change");
  static const char *const names[] = {"w-own", "w-inherit", "w-other"};
  for (int i = 0; i < 3; i++) {
    int woken = want[i] - e0[i];
    dynconf_poll(dcs[i], 0);
    is_int(au_stat_ll(dcs[i], "changes") - c0[i], woken,
           "who: %s woken exactly %d times", names[i], woken);
    is_int(r[i].n_change - e0[i], woken, "who: %s: %d CHANGE events",
           names[i], woken);
    is_int(au_stat_ll(dcs[i], "ok"), 1, "who: %s: no fetch but the first",
           names[i]);
  }
  for (int i = 0; i < 3; i++)
    dynconf_destroy(dcs[i]);
  is_int(au_alter(port, "<default>", "-acks"), 0, "who: <default> cleared");
}

/* ---- 3: a fleet on one entity --------------------------------------------- */

static void test_fleet(int port) {
  static dynconf_t *dcs[FLEET];
  static au_rec_t r[FLEET];
  int want[FLEET], made = 0;
  for (int i = 0; i < FLEET; i++) {
    dcs[i] = agent(port, "w-fleet", &r[i], NULL);
    made += dcs[i] != NULL;
    want[i] = 1;
  }
  if (ok(made == FLEET, "fleet: %d agents of w-fleet", made)) {
    int watching = 0;
    for (int i = 0; i < FLEET; i++)
      watching += wait_watching(dcs[i]);
    is_int(watching, FLEET, "fleet: all watching");
    is_int(au_alter(port, "w-fleet", "acks=0"), 0, "fleet: acks=0 set");
    ok(wait_changes(dcs, r, want, FLEET), "fleet: every agent changed");
    int once = 0, applied = 0, fetched = 0;
    for (int i = 0; i < FLEET; i++) {
      once += r[i].n_change == 1;
      applied += au_eff_is(dcs[i], "acks", "0", DYNCONF_SOURCE_CLIENT);
      fetched += au_stat_ll(dcs[i], "ok") == 1;
    }
    is_int(once, FLEET, "fleet: one CHANGE event each");
    is_int(applied, FLEET, "fleet: acks=0 everywhere");
    is_int(fetched, FLEET, "fleet: none needed a fetch");
  }
  for (int i = 0; i < FLEET; i++)
    dynconf_destroy(dcs[i]);
}

#define wait_fleet au_wait_fleet

/* ---- 4: dynconfd restarts under a parked Watch ---------------------------- */

static void test_restart(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  int port = dc_tu_closed_port();
  if (!ok(port > 0 && !dc_tu_daemon_start_port(&d, g_data, g_log, port, errstr,
                                               sizeof(errstr)),
          "restart: dynconfd on port %d", port)) {
    diag("%s", errstr);
    return;
  }
  is_int(au_alter(port, "w-restart", "acks=0"), 0, "restart: acks=0 set");
  au_rec_t r;
  dynconf_t *dc = agent(port, "w-restart", &r, "dynconf.retry.backoff.ms",
                        "100", "dynconf.retry.backoff.max.ms", "500", NULL);
  if (!ok(dc, "restart: agent created")) {
    dc_tu_daemon_stop(&d);
    return;
  }
  ok(wait_watching(dc), "restart: watching");
  is_int(dc_tu_daemon_stop(&d), 0, "restart: dynconfd stopped");
  if (!ok(!dc_tu_daemon_start_port(&d, g_data, g_log, port, errstr,
                                   sizeof(errstr)),
          "restart: dynconfd back on port %d", port)) {
    diag("%s", errstr);
    dynconf_destroy(dc);
    return;
  }
  au_fleet_client_t f;
  ok(wait_fleet(port, "w-restart", DC_FLEET_UP_TO_DATE, true, &f),
     "restart: the agent reconnects and reports to the new dynconfd");
  is_int(au_alter(port, "w-restart", "acks=-1"), 0,
         "restart: acks=-1 set after the restart");
  ok(wait_change(dc, &r, 2), "restart: the change arrives, no refresh asked");
  ok(au_eff_is(dc, "acks", "-1", DYNCONF_SOURCE_CLIENT),
     "restart: acks=-1 applied");
  is_int(r.n_change, 2, "restart: two CHANGE events in all");
  is_int(dynconf_generation(dc), 2, "restart: generation 2");
  ok(wait_watching(dc), "restart: watching the new dynconfd");
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "restart: UP");
  is_int(au_alter(port, "w-restart", "acks=1"), 0, "restart: acks=1 set");
  ok(wait_change(dc, &r, 3), "restart: and the next one by Watch");
  dynconf_destroy(dc);
  is_int(dc_tu_daemon_stop(&d), 0, "restart: dynconfd stops cleanly");
}

/* ---- 5: dynconf.watch=false ------------------------------------------------ */

static void test_off(int port) {
  au_rec_t r;
  dynconf_t *dc = agent(port, "w-off", &r, "dynconf.watch", "false", NULL);
  if (!ok(dc, "off: agent created"))
    return;
  is_int(au_alter(port, "w-off", "acks=0"), 0, "off: acks=0 set");
  dynconf_refresh_now(dc);
  ok(au_wait_stat(dc, "ok", 2, WAIT_MS) == 2, "off: a refresh fetches");
  ok(wait_change(dc, &r, 1), "off: the fetch brings the change");
  char *s = dynconf_stats_json(dc);
  ok(s && strstr(s, "\"watch\":{\"enabled\":false,\"active\":false,"
                    "\"version\":null,\"changes\":0,"),
     "off: the statistics say watch disabled, never used");
  if (s && !strstr(s, "\"enabled\":false"))
    diag("%.600s", s);
  free(s);
  dynconf_destroy(dc);
}

/* ---- 6: reporting back ---------------------------------------------------- */

/* Polls dynconfd's fleet view until client's one entry has state want
 * (and connected == conn); a copy in *out. */
static void test_report(int port) {
  au_rec_t r, rc;
  au_fleet_client_t f;
  dynconf_t *p = agent(port, "w-rep", &r, NULL);
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  rd_kafka_conf_t *app = au_app_conf(bs, "w-rej", "group.id", "g",
                                     "heartbeat.interval.ms", "8000", NULL);
  memset(&rc, 0, sizeof(rc));
  rc.poller = pthread_self();
  dynconf_t *c = au_agent_new_with(
      RD_KAFKA_CONSUMER, app, port, au_on_change, au_on_log, &rc,
      "dynconf.refresh.interval.ms", "3600000", "dynconf.startup.required",
      "true", NULL);
  rd_kafka_conf_destroy(app);
  if (!ok(p && c, "report: a producer and a consumer agent")) {
    dynconf_destroy(p);
    dynconf_destroy(c);
    return;
  }
  ok(wait_fleet(port, "w-rep", DC_FLEET_UP_TO_DATE, true, &f),
     "report: the producer is up to date in dynconfd's fleet view");
  ok(!strcmp(f.kind, "producer") && !strncmp(f.app, "librdkafka/", 11) &&
         !strncmp(f.agent, "dynconf-agent/", 14) && strlen(f.instance) == 32,
     "report:   as a producer on %s, %s, instance %s", f.app, f.agent,
     f.instance);
  is_int(au_alter(port, "w-rej", "session.timeout.ms=7000"), 0,
         "report: session.timeout.ms=7000 for w-rej (heartbeat 8000)");
  ok(wait_fleet(port, "w-rej", DC_FLEET_REJECTED, true, &f),
     "report: the consumer is shown rejecting it");
  ok(strstr(f.reason, "heartbeat.interval.ms") && !strcmp(f.kind, "consumer"),
     "report:   with the reason: %s", f.reason);
  is_int(au_alter(port, "w-rej", "session.timeout.ms=30000"), 0,
         "report: session.timeout.ms=30000 for w-rej");
  ok(wait_fleet(port, "w-rej", DC_FLEET_UP_TO_DATE, true, &f) &&
         f.generation == dynconf_generation(c),
     "report: then up to date, at its generation %lld", (long long)f.generation);
  dynconf_destroy(p);
  ok(wait_fleet(port, "w-rep", DC_FLEET_SILENT, false, &f),
     "report: a destroyed agent is shown silent (gone)");
  dynconf_destroy(c);
}

int main(void) {
  char dir[256], errstr[512];
  if (au_scratch(dir, sizeof(dir), g_data, sizeof(g_data), g_log,
                 sizeof(g_log)))
    return done_testing();
  dc_tu_daemon_t d;
  if (ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
         "dynconfd started")) {
    test_push(d.port);
    test_who_wakes(d.port);
    test_fleet(d.port);
    test_off(d.port);
    test_report(d.port);
    is_int(dc_tu_daemon_stop(&d), 0, "dynconfd stops cleanly");
  } else {
    diag("%s", errstr);
  }
  test_restart();
  if (tap_failed)
    dc_tu_log_tail(g_log, 30);
  dc_tu_rmrf(dir);
  return done_testing();
}
