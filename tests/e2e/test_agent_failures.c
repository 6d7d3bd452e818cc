/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent when things go wrong: dynconfd killed and restarted on the same
 * port, fail-open and fail-closed startup, a server without CLIENT configs
 * (UNSUPPORTED), an unreachable server (backoff, no thread or memory
 * growth), prompt destroy (1-hour interval; in-flight fetch to a server
 * that never answers), and create/destroy loops leaving no threads.
 *
 * No timing assertions: waits are "until a condition or a generous
 * deadline". The only elapsed-time checks are liveness bounds on
 * dynconf_destroy() (seconds where the work is a signal and a join).
 */
#include "../agentutil.h"

#include <malloc.h>

#define WAIT_MS 30000

static char g_data[512], g_log[512];

/* ---- helpers ----------------------------------------------------------------- */

/* Heap in use: mallinfo2's allocated bytes, or the resident set when the
 * allocator does not report (valgrind). *heap says which. */
static long long mem_in_use(bool *heap) {
  struct mallinfo2 mi = mallinfo2();
  if (mi.uordblks > 0) {
    *heap = true;
    return (long long)(mi.uordblks + mi.hblkhd); /* + mmapped chunks */
  }
  *heap = false;
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
      rss = 0;
    fclose(f);
  }
  return (long long)rss * sysconf(_SC_PAGESIZE);
}

/* What one agent reported through its callbacks. */
typedef struct rec {
  int n_change, n_error, n_unsupported;
  char last_error[300];
  char change_key[64], change_new[64]; /* first entry of the last CHANGE */
  int change_accepted;
} rec_t;

static void on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  rec_t *r = opaque;
  switch (dynconf_event_type(ev)) {
  case DYNCONF_EVENT_CHANGE:
    r->n_change++;
    r->change_accepted = dynconf_event_accepted(ev);
    snprintf(r->change_key, sizeof(r->change_key), "%s",
             dynconf_event_entry_count(ev) ? dynconf_event_key(ev, 0) : "");
    snprintf(r->change_new, sizeof(r->change_new), "%s",
             dynconf_event_entry_count(ev) && dynconf_event_new_value(ev, 0)
                 ? dynconf_event_new_value(ev, 0)
                 : "(app)");
    break;
  case DYNCONF_EVENT_ERROR:
    r->n_error++;
    snprintf(r->last_error, sizeof(r->last_error), "%s",
             dynconf_event_error_string(ev));
    break;
  case DYNCONF_EVENT_UNSUPPORTED:
    r->n_unsupported++;
    snprintf(r->last_error, sizeof(r->last_error), "%s",
             dynconf_event_error_string(ev));
    break;
  case DYNCONF_EVENT_CERT_ERROR: /* no ssl files in these tests */
    break;
  }
}

/* Logs of every agent: counted per level class. */
static int g_logs, g_warn_logs;
static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  g_logs++;
  if (level <= 4) {
    g_warn_logs++;
    diag("agent log %d %s %s: %s", level, dynconf_client_id(dc), fac, msg);
  }
}

/* An agent with rec's callbacks. app: client.id and bootstrap.servers
 * "127.0.0.1:<app_port>"; then NULL-terminated dynconf.* pairs. On failure
 * returns NULL with errstr (the dconf is freed here). */
static dynconf_t *agent_new(rd_kafka_type_t type, const char *cid,
                            int app_port, rec_t *rec, char *errstr,
                            size_t errstr_size, ...) {
  char e[512], bs[64];
  rd_kafka_conf_t *app = rd_kafka_conf_new();
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", app_port);
  rd_kafka_conf_set(app, "bootstrap.servers", bs, e, sizeof(e));
  rd_kafka_conf_set(app, "client.id", cid, e, sizeof(e));
  if (type == RD_KAFKA_CONSUMER)
    rd_kafka_conf_set(app, "group.id", "failures", e, sizeof(e));
  dynconf_conf_t *dconf = dynconf_conf_new();
  va_list ap;
  va_start(ap, errstr_size);
  au_dconf_set_pairs(dconf, ap);
  va_end(ap);
  dynconf_t *dc = au_dynconf_new(type, app, dconf, on_change, on_log, rec,
                                 errstr, errstr_size);
  rd_kafka_conf_destroy(app);
  return dc;
}

/* Polls the agents until cond(dcs) holds or the deadline. */
typedef bool(cond_fn)(dynconf_t **dcs, int n, void *arg);
static bool poll_until(dynconf_t **dcs, int n, cond_fn *cond, void *arg,
                       int timeout_ms) {
  int64_t deadline = dc_tu_now_ms() + timeout_ms;
  for (;;) {
    for (int i = 0; i < n; i++)
      dynconf_poll(dcs[i], 0);
    if (cond(dcs, n, arg))
      return true;
    if (dc_tu_now_ms() > deadline)
      return false;
    dc_tu_sleep_ms(20);
  }
}

static bool all_state(dynconf_t **dcs, int n, void *arg) {
  for (int i = 0; i < n; i++)
    if (dynconf_state(dcs[i]) != *(dynconf_state_t *)arg)
      return false;
  return true;
}

static bool all_failures_at_least(dynconf_t **dcs, int n, void *arg) {
  for (int i = 0; i < n; i++)
    if (au_stat_ll(dcs[i], "consecutive_failures") < *(long long *)arg)
      return false;
  return true;
}

static bool all_ok_at_least(dynconf_t **dcs, int n, void *arg) {
  for (int i = 0; i < n; i++)
    if (au_stat_ll(dcs[i], "ok") < ((long long *)arg)[i])
      return false;
  return true;
}

static bool unsupported_at_least(dynconf_t **dcs, int n, void *arg) {
  (void)n;
  return au_stat_ll(dcs[0], "unsupported") >= *(long long *)arg;
}

static bool rec_change_at_least(dynconf_t **dcs, int n, void *arg) {
  (void)dcs;
  (void)n;
  rec_t *r = arg;
  return r->n_change >= 2;
}

/* Starts dynconfd with an extra listener on 127.0.0.1:port. 0 or -1. */
static int daemon_on_port(dc_tu_daemon_t *d, int port, char *errstr,
                          size_t errstr_size) {
  return dc_tu_daemon_start_port(d, g_data, g_log, port, errstr, errstr_size);
}

/* ---- scenarios ------------------------------------------------------------------ */

/* dynconfd killed, then restarted on the same port. */
static void test_outage_and_restart(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "outage: dynconfd started")) {
    diag("%s", errstr);
    return;
  }
  int port = d.port;
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  is_int(au_alter(port, "fail-p", "acks=1"), 0, "acks=1 for fail-p");
  is_int(au_alter(port, "fail-c", "session.timeout.ms=20000"), 0,
         "session.timeout.ms=20000 for fail-c");
  rec_t rp = {0}, rc = {0};
  dynconf_t *dcs[2];
  dcs[0] = agent_new(RD_KAFKA_PRODUCER, "fail-p", port, &rp, errstr,
                     sizeof(errstr), "dynconf.refresh.interval.ms", "300",
                     "dynconf.request.timeout.ms", "1000",
                     "dynconf.retry.backoff.ms", "100",
                     "dynconf.retry.backoff.max.ms", "1000", NULL);
  dcs[1] = agent_new(RD_KAFKA_CONSUMER, "fail-c", port, &rc, errstr,
                     sizeof(errstr), "dynconf.refresh.interval.ms", "300",
                     "dynconf.request.timeout.ms", "1000",
                     "dynconf.retry.backoff.ms", "100",
                     "dynconf.retry.backoff.max.ms", "1000", NULL);
  if (!ok(dcs[0] && dcs[1], "outage: two agents running")) {
    diag("%s", errstr);
    dynconf_destroy(dcs[0]);
    dynconf_destroy(dcs[1]);
    dc_tu_daemon_stop(&d);
    return;
  }
  dynconf_poll(dcs[0], 0);
  dynconf_poll(dcs[1], 0);
  is_int(rp.n_change + rc.n_change, 2, "outage: one change event each");

  g_warn_logs = 0;
  is_int(dc_tu_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL,
         "outage: dynconfd SIGKILLed");
  dynconf_state_t degraded = DYNCONF_STATE_DEGRADED;
  ok(poll_until(dcs, 2, all_state, &degraded, WAIT_MS),
     "outage: both agents DEGRADED");
  long long three = 3;
  ok(poll_until(dcs, 2, all_failures_at_least, &three, WAIT_MS),
     "outage: three failed fetches in a row each");
  is_int(rp.n_error, 1, "outage: exactly one ERROR event (producer)");
  is_int(rc.n_error, 1, "outage: exactly one ERROR event (consumer)");
  diag("error event: %s", rp.last_error);
  ok(au_eff_is(dcs[0], "acks", "1", DYNCONF_SOURCE_CLIENT),
     "outage: last good acks=1 kept");
  ok(au_eff_is(dcs[1], "session.timeout.ms", "20000", DYNCONF_SOURCE_CLIENT),
     "outage: last good session.timeout.ms kept");
  is_int(dynconf_generation(dcs[0]), 1, "outage: generation unchanged");
  rd_kafka_conf_t *eff = dynconf_effective_conf(dcs[0]);
  char v[64];
  size_t sz = sizeof(v);
  rd_kafka_conf_get(eff, "acks", v, &sz);
  is_str(v, "1", "outage: effective conf still carries acks=1");
  rd_kafka_conf_destroy(eff);

  /* Restart on the same port (an extra listener; the ephemeral one the
   * helper always adds is harmless). The port may need a moment. */
  if (!ok(!daemon_on_port(&d, port, errstr, sizeof(errstr)),
          "outage: dynconfd restarted on port %d", port)) {
    diag("%s", errstr);
  } else {
    dynconf_state_t up = DYNCONF_STATE_UP;
    ok(poll_until(dcs, 2, all_state, &up, WAIT_MS), "outage: both agents UP");
    is_int(rp.n_error, 1, "outage: still one ERROR event (producer)");
    is_int(rc.n_error, 1, "outage: still one ERROR event (consumer)");
    is_int(rp.n_change, 1, "outage: recovery with the same config is no change");
    is_int(au_alter(port, "fail-p", "acks=0"), 0,
           "outage: acks=0 after the restart");
    dynconf_refresh_now(dcs[0]);
    ok(poll_until(dcs, 2, rec_change_at_least, &rp, WAIT_MS),
       "outage: the change made after the restart arrives");
    is_str(rp.change_key, "acks", "outage: change key acks");
    is_str(rp.change_new, "0", "outage: new value 0");
    ok(au_eff_is(dcs[0], "acks", "0", DYNCONF_SOURCE_CLIENT),
       "outage: effective acks=0");
    long long want[2] = {au_stat_ll(dcs[0], "ok") + 2,
                         au_stat_ll(dcs[1], "ok") + 2};
    ok(poll_until(dcs, 2, all_ok_at_least, want, WAIT_MS),
       "outage: fetching again");
    is_int(rc.n_change, 1, "outage: the consumer saw no change");
    is_int(rp.n_error + rc.n_error, 2, "outage: no further errors");
    is_int(au_stat_ll(dcs[0], "consecutive_failures"), 0,
           "outage: consecutive_failures back to 0");
    is_int(g_warn_logs, 2, "outage: one warning per agent for the whole "
                           "outage (librdkafka's connection errors stay "
                           "quiet)");
  }
  dynconf_destroy(dcs[0]);
  dynconf_destroy(dcs[1]);
  is_int(dc_tu_daemon_stop(&d), 0, "outage: dynconfd stops cleanly");
}

/* Startup against a closed port: fail-open, then fail-closed. */
static void test_startup(void) {
  char errstr[512];
  int port = dc_tu_closed_port();
  rec_t r = {0};
  g_warn_logs = 0;
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, "fail-open", port, &r, errstr,
                            sizeof(errstr), "dynconf.startup.timeout.ms", "1000",
                            "dynconf.refresh.interval.ms", "300", NULL);
  if (ok(dc, "fail-open: dynconf_new returns an agent")) {
    is_int(dynconf_state(dc), DYNCONF_STATE_DEGRADED, "fail-open: DEGRADED");
    is_int(dynconf_poll(dc, 0), 1, "fail-open: first poll serves one event");
    is_int(r.n_error, 1, "fail-open: it is an ERROR event");
    diag("error: %s", r.last_error);
    is_int(g_warn_logs, 1, "fail-open: one warning logged");
    is_int(dynconf_generation(dc), 0, "fail-open: generation 0");
    char v[64];
    dynconf_source_t s;
    dynconf_effective_get(dc, "acks", v, sizeof(v), &s);
    is_int(s, DYNCONF_SOURCE_APP, "fail-open: acks from the application");
    /* The effective conf is the application's own, property by property. */
    rd_kafka_conf_t *app = rd_kafka_conf_new();
    char bs[64];
    snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
    rd_kafka_conf_set(app, "bootstrap.servers", bs, errstr, sizeof(errstr));
    rd_kafka_conf_set(app, "client.id", "fail-open", errstr, sizeof(errstr));
    rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
    size_t na, ne;
    const char **da = rd_kafka_conf_dump(app, &na);
    const char **de = rd_kafka_conf_dump(eff, &ne);
    bool same = na == ne;
    for (size_t i = 0; same && i < na; i++)
      if (strcmp(da[i], de[i])) {
        diag("  differs at %s: %s vs %s", da[i & ~(size_t)1],
             da[i], de[i]);
        same = false;
      }
    ok(same, "fail-open: effective conf equals the application's (%zu "
             "entries)", na / 2);
    rd_kafka_conf_dump_free(da, na);
    rd_kafka_conf_dump_free(de, ne);
    rd_kafka_conf_destroy(eff);
    rd_kafka_conf_destroy(app);
    dynconf_destroy(dc);
  } else {
    diag("%s", errstr);
  }

  errstr[0] = '\0';
  dc = agent_new(RD_KAFKA_PRODUCER, "fail-closed", port, &r, errstr,
                 sizeof(errstr), "dynconf.startup.timeout.ms", "500",
                 "dynconf.startup.required", "true", NULL);
  ok(!dc, "fail-closed: dynconf_new returns NULL");
  dynconf_destroy(dc);
  diag("errstr: %s", errstr);
  ok(strstr(errstr, "startup.required") && strstr(errstr, "fail-closed") &&
         strstr(errstr, "failed"),
     "fail-closed: errstr names the setting, the client and the failure");
}

static bool state_up(dynconf_t **dcs, int n, void *arg) {
  (void)n;
  (void)arg;
  return dynconf_state(dcs[0]) == DYNCONF_STATE_UP;
}

/* Fail-open at startup, then the server appears: the agent catches up. */
static void test_failopen_then_recovers(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "late server: dynconfd started to store a config")) {
    diag("%s", errstr);
    return;
  }
  is_int(au_alter(d.port, "fail-late", "acks=1"), 0, "acks=1 for fail-late");
  is_int(dc_tu_daemon_stop(&d), 0, "late server: dynconfd stopped");
  int port = dc_tu_closed_port();
  rec_t r = {0};
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, "fail-late", port, &r, errstr,
                            sizeof(errstr), "dynconf.startup.timeout.ms", "500",
                            "dynconf.refresh.interval.ms", "300",
                            "dynconf.retry.backoff.ms", "100",
                            "dynconf.retry.backoff.max.ms", "1000", NULL);
  if (!ok(dc, "late server: agent created (fail-open)")) {
    diag("%s", errstr);
    return;
  }
  is_int(dynconf_state(dc), DYNCONF_STATE_DEGRADED, "late server: DEGRADED");
  ok(au_eff_is(dc, "acks", "-1", DYNCONF_SOURCE_APP),
     "late server: the application's acks meanwhile");
  if (ok(!daemon_on_port(&d, port, errstr, sizeof(errstr)),
         "late server: dynconfd now listens on port %d", port)) {
    ok(poll_until(&dc, 1, state_up, NULL, WAIT_MS), "late server: agent UP");
    dynconf_poll(dc, 0);
    is_int(r.n_error, 1, "late server: one ERROR event");
    is_int(r.n_change, 1, "late server: one CHANGE event");
    is_str(r.change_key, "acks", "late server: for acks");
    is_str(r.change_new, "1", "late server: new value 1");
    ok(au_eff_is(dc, "acks", "1", DYNCONF_SOURCE_CLIENT),
       "late server: acks=1 effective");
    is_int(dynconf_generation(dc), 1, "late server: generation 1");
    dynconf_destroy(dc);
    is_int(dc_tu_daemon_stop(&d), 0, "late server: dynconfd stops cleanly");
  } else {
    diag("%s", errstr);
    dynconf_destroy(dc);
  }
}

/* A server that does not serve CLIENT configs: dynconfd asked for TOPIC. */
static void test_unsupported(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "unsupported: dynconfd started")) {
    diag("%s", errstr);
    return;
  }
  rec_t r = {0};
  g_logs = g_warn_logs = 0;
  dynconf_t *dc = agent_new(RD_KAFKA_CONSUMER, "fail-unsup", d.port, &r, errstr,
                            sizeof(errstr), "dynconf.resource.type", "2",
                            "dynconf.unsupported.reprobe.ms", "1000",
                            "dynconf.refresh.interval.ms", "300", NULL);
  if (ok(dc, "unsupported: agent created")) {
    is_int(dynconf_state(dc), DYNCONF_STATE_UNSUPPORTED, "unsupported: state");
    long long four = 4;
    ok(poll_until(&dc, 1, unsupported_at_least, &four, WAIT_MS),
       "unsupported: re-probed (4 probes)");
    dynconf_poll(dc, 0);
    is_int(dynconf_state(dc), DYNCONF_STATE_UNSUPPORTED,
           "unsupported: still UNSUPPORTED");
    is_int(r.n_unsupported, 1, "unsupported: exactly one UNSUPPORTED event");
    diag("unsupported: %s", r.last_error);
    is_int(r.n_error, 0, "unsupported: no ERROR events");
    is_int(r.n_change, 0, "unsupported: no CHANGE events");
    is_int(g_warn_logs, 1, "unsupported: exactly one warning log line");
    is_int(dynconf_generation(dc), 0, "unsupported: generation 0");
    char v[64];
    dynconf_source_t s;
    dynconf_effective_get(dc, "session.timeout.ms", v, sizeof(v), &s);
    is_int(s, DYNCONF_SOURCE_APP, "unsupported: the application's config");
    is_str(v, "45000", "unsupported: session.timeout.ms is librdkafka's default");
    dynconf_destroy(dc);
  } else {
    diag("%s", errstr);
  }
  is_int(dc_tu_daemon_stop(&d), 0, "unsupported: dynconfd stops cleanly");
}

static bool stat_at_least(dynconf_t **dcs, int n, void *arg) {
  (void)n;
  const long long *want = arg; /* [0] = which stat (0 errors, 1 unsupported) */
  return au_stat_ll(dcs[0], want[0] ? "unsupported" : "errors") >= want[1];
}

/* An UNSUPPORTED agent whose server goes away twice: one ERROR event per
 * outage, as for any agent. */
static void test_unsupported_outages(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "unsupported outages: dynconfd started")) {
    diag("%s", errstr);
    return;
  }
  int port = d.port;
  rec_t r = {0};
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, "fail-unsup2", port, &r,
                            errstr, sizeof(errstr), "dynconf.resource.type",
                            "2", "dynconf.unsupported.reprobe.ms", "1000",
                            "dynconf.request.timeout.ms", "500",
                            "dynconf.retry.backoff.ms", "100",
                            "dynconf.retry.backoff.max.ms", "500", NULL);
  if (!ok(dc, "unsupported outages: agent created")) {
    diag("%s", errstr);
    dc_tu_daemon_stop(&d);
    return;
  }
  dynconf_poll(dc, 0);
  is_int(r.n_unsupported, 1, "unsupported outages: UNSUPPORTED event");
  for (int outage = 1; outage <= 2; outage++) {
    dc_tu_daemon_signal_wait(&d, SIGKILL);
    long long want_err[2] = {0, au_stat_ll(dc, "errors") + 2};
    ok(poll_until(&dc, 1, stat_at_least, want_err, WAIT_MS),
       "unsupported outages: outage %d: fetches fail", outage);
    dynconf_poll(dc, 0);
    if (!ok(r.n_error == outage,
            "unsupported outages: outage %d: one ERROR event for it (%d in "
            "all)", outage, r.n_error))
      diag("  regression (agent.c record): an UNSUPPORTED answer must "
           "reset dc->failures, or a later outage emits no ERROR event "
           "(consecutive_failures=%lld)",
           au_stat_ll(dc, "consecutive_failures"));
    if (!ok(!daemon_on_port(&d, port, errstr, sizeof(errstr)),
            "unsupported outages: outage %d: dynconfd back", outage)) {
      diag("%s", errstr);
      break;
    }
    long long want_uns[2] = {1, au_stat_ll(dc, "unsupported") + 1};
    ok(poll_until(&dc, 1, stat_at_least, want_uns, WAIT_MS),
       "unsupported outages: outage %d: re-probed after it", outage);
    dynconf_poll(dc, 0);
    is_int(dynconf_state(dc), DYNCONF_STATE_UNSUPPORTED,
           "unsupported outages: outage %d: UNSUPPORTED again", outage);
  }
  is_int(r.n_unsupported, 1, "unsupported outages: still one UNSUPPORTED event");
  dynconf_destroy(dc);
  dc_tu_daemon_stop(&d);
}

/* Unreachable server: backoff grows; no thread or memory growth. */
static void test_unreachable(void) {
  char errstr[512];
  int port = dc_tu_closed_port();
  rec_t r = {0};
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, "fail-backoff", port, &r, errstr,
                            sizeof(errstr), "dynconf.startup.timeout.ms", "200",
                            "dynconf.request.timeout.ms", "200",
                            "dynconf.retry.backoff.ms", "100",
                            "dynconf.retry.backoff.max.ms", "3000",
                            "dynconf.refresh.jitter.pct", "0", NULL);
  if (ok(dc, "backoff: agent created")) {
    long long max_next[16] = {0};
    long long last_cf = 0;
    bool monotonic = true;
    int64_t deadline = dc_tu_now_ms() + 60000;
    while (last_cf < 6 && dc_tu_now_ms() < deadline) {
      dynconf_poll(dc, 0);
      char *st = dynconf_stats_json(dc);
      const char *p = strstr(st, "\"consecutive_failures\":");
      const char *q = strstr(st, "\"next_fetch_in_ms\":");
      long long cf = p ? strtoll(p + 23, NULL, 10) : -1;
      long long nx = q ? strtoll(q + 19, NULL, 10) : -1;
      free(st);
      if (cf < last_cf)
        monotonic = false;
      last_cf = cf;
      if (cf >= 0 && cf < 16 && nx > max_next[cf])
        max_next[cf] = nx;
      dc_tu_sleep_ms(5);
    }
    ok(last_cf >= 6, "backoff: consecutive_failures grows (%lld)", last_cf);
    ok(monotonic, "backoff: consecutive_failures never went down");
    for (int i = 1; i <= 6; i++)
      diag("  max next_fetch_in_ms after %d failures: %lld", i, max_next[i]);
    ok(max_next[1] <= 100, "backoff: after one failure next fetch within the "
                           "first backoff (%lld <= 100)", max_next[1]);
    ok(max_next[5] > 100 || max_next[6] > 100,
       "backoff: after five failures the wait exceeds the first backoff");
    bool capped = true;
    for (int i = 0; i < 16; i++)
      capped &= max_next[i] <= 3000;
    ok(capped, "backoff: never above retry.backoff.max.ms");
    is_int(r.n_error, 1, "backoff: one ERROR event for the whole outage");
    is_int(dynconf_state(dc), DYNCONF_STATE_DEGRADED, "backoff: DEGRADED");
    dynconf_destroy(dc);
  } else {
    diag("%s", errstr);
  }

  /* Many fast failures: threads and heap must not grow. */
  memset(&r, 0, sizeof(r));
  g_warn_logs = 0;
  dc = agent_new(RD_KAFKA_PRODUCER, "fail-leak", port, &r, errstr,
                 sizeof(errstr), "dynconf.startup.timeout.ms", "100",
                 "dynconf.request.timeout.ms", "20",
                 "dynconf.retry.backoff.ms", "1",
                 "dynconf.retry.backoff.max.ms", "5", NULL);
  if (ok(dc, "growth: agent created")) {
    long long n0 = 30, n1 = 330;
    ok(poll_until(&dc, 1, all_failures_at_least, &n0, WAIT_MS),
       "growth: warmed up (%lld failures)", n0);
    int t0 = dc_tu_thread_count();
    bool heap0, heap1;
    long long m0 = mem_in_use(&heap0);
    ok(poll_until(&dc, 1, all_failures_at_least, &n1, 120000),
       "growth: %lld failures in a row", n1);
    int t1 = dc_tu_thread_count();
    long long m1 = mem_in_use(&heap1);
    diag("threads %d -> %d; %s %lld -> %lld (%+lld bytes)", t0, t1,
         heap0 ? "heap" : "rss", m0, m1, m1 - m0);
    ok(t0 > 0 && t1 <= t0, "growth: no new threads (%d -> %d)", t0, t1);
    /* Generous: 300 failures leaking even 1 KiB each would exceed it. */
    long long bound = heap0 && heap1 ? 256 * 1024 : 8 * 1024 * 1024;
    ok(m1 - m0 < bound, "growth: memory grew by %lld bytes (< %lld)", m1 - m0,
       bound);
    is_int(r.n_error, 1, "growth: one ERROR event");
    is_int(g_warn_logs, 1, "growth: one warning log line in all");
    dynconf_destroy(dc);
  } else {
    diag("%s", errstr);
  }
}

/* dynconf_destroy returns promptly: 1-hour interval, and an in-flight
 * fetch to a server that never answers. 5 s is a liveness bound. */
static void test_prompt_destroy(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
         "destroy: dynconfd started")) {
    rec_t r = {0};
    dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, "fail-hour", d.port, &r,
                              errstr, sizeof(errstr),
                              "dynconf.refresh.interval.ms", "3600000", NULL);
    if (ok(dc, "destroy: agent with a 1-hour interval")) {
      is_int(dynconf_state(dc), DYNCONF_STATE_UP, "destroy: state up");
      dynconf_poll(dc, 0);
      int64_t t0 = dc_tu_now_ms();
      dynconf_destroy(dc);
      int64_t took = dc_tu_now_ms() - t0;
      ok(took < 5000, "destroy: returned in %lld ms with a 1-hour interval",
         (long long)took);
    } else {
      diag("%s", errstr);
    }
    dc_tu_daemon_stop(&d);
  } else {
    diag("%s", errstr);
  }

  /* Listening, never accepting: the kernel completes connections, nobody
   * ever answers. */
  int port = -1;
  int sfd = dc_tu_loopback_socket(0, 16, &port);
  if (!ok(sfd >= 0, "destroy: silent server listening"))
    return;
  rec_t r = {0};
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, "fail-silent", port, &r, errstr,
                            sizeof(errstr), "dynconf.startup.timeout.ms", "300",
                            "dynconf.request.timeout.ms", "3600000",
                            "dynconf.retry.backoff.ms", "1",
                            "dynconf.refresh.interval.ms", "3600000", NULL);
  if (ok(dc, "destroy: agent against a server that never answers")) {
    is_int(dynconf_state(dc), DYNCONF_STATE_DEGRADED,
           "destroy: first fetch timed out (fail-open)");
    /* The background fetch starts 1 ms later and would wait an hour. */
    for (int i = 0; i < 10; i++)
      dynconf_poll(dc, 50);
    is_int(au_stat_ll(dc, "total"), 1,
           "destroy: the second fetch is still in flight");
    int64_t t0 = dc_tu_now_ms();
    dynconf_destroy(dc);
    int64_t took = dc_tu_now_ms() - t0;
    ok(took < 5000, "destroy: returned in %lld ms during an in-flight fetch",
       (long long)took);
  } else {
    diag("%s", errstr);
  }
  close(sfd);
}

/* 20 agents created and destroyed leave no threads behind. */
static void test_create_destroy_loop(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "loop: dynconfd started")) {
    diag("%s", errstr);
    return;
  }
  int t0 = dc_tu_thread_count();
  int created = 0;
  for (int i = 0; i < 20; i++) {
    rec_t r = {0};
    dynconf_t *dc = agent_new(i % 2 ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER,
                              "fail-loop", d.port, &r, errstr, sizeof(errstr),
                              "dynconf.refresh.interval.ms", "50", NULL);
    if (!dc) {
      diag("agent %d: %s", i, errstr);
      continue;
    }
    created += dynconf_state(dc) == DYNCONF_STATE_UP;
    dynconf_refresh_now(dc);
    dynconf_poll(dc, 20);
    dynconf_destroy(dc);
  }
  is_int(created, 20, "loop: 20 agents created, each UP");
  int t1 = dc_tu_thread_count_settled(t0);
  is_int(t1, t0, "loop: thread count back to %d", t0);
  is_int(dc_tu_daemon_stop(&d), 0, "loop: dynconfd stops cleanly");
}

int main(void) {
  char dir[256];
  if (au_scratch(dir, sizeof(dir), g_data, sizeof(g_data), g_log,
                 sizeof(g_log)))
    return done_testing();
  int threads = dc_tu_thread_count();

  test_outage_and_restart();
  test_startup();
  test_failopen_then_recovers();
  test_unsupported();
  test_unsupported_outages();
  test_unreachable();
  test_prompt_destroy();
  test_create_destroy_loop();

  is_int(dc_tu_thread_count_settled(threads), threads,
         "no threads left at the end");
  if (tap_failed)
    dc_tu_log_tail(g_log, 30);
  dc_tu_rmrf(dir);
  return done_testing();
}
