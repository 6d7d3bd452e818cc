/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Client certificate rotation end to end: a managed producer
 * (ordered switch policy) sending continuously and a managed consumer, both
 * with security.protocol=SSL through a TLS-terminating proxy
 * (tests/tlsproxy.h, client certificates required) to librdkafka's
 * plaintext mock cluster; their agents fetch from dynconfd over mutual TLS
 * too: dynconfd's own SSL listener (--ssl-client-auth required) when it
 * has --listeners, else a second TLS proxy in front of it.
 *
 * The client certificate files the application's configuration names are
 * rotated in place, each file atomically (written aside, renamed):
 *  - the key first: the agents wait (certificate and key do not match),
 *    nothing rebuilds; then the certificate: exactly one rotation event per
 *    agent, the producer switches once and the consumer rebuilds once, new
 *    connections present the new CN (alice -> alice2), the agents' own
 *    connections too, and no message is lost or duplicated (every delivery
 *    report exactly once, the consumer reads every message once);
 *  - a key that stays mismatched: one CERT_ERROR after three checks, never
 *    a rebuild; put back: quiet, still no rebuild; the same for a key file
 *    that is gone (deleted, not yet written);
 *  - a garbage certificate file: one CERT_ERROR, the old certificate stays
 *    in use (messages keep flowing), no rebuild;
 *  - a new CA bundle (the rogue CA added in front of the real one): one
 *    rotation with only an ssl.ca.location entry, one more switch and
 *    rebuild, still no loss.
 * Also: the new dynconf.ssl.check.interval.ms property, and no polling
 * when no ssl files are configured (or the interval is 0).
 *
 * Nothing asserts on timing: every wait is "until a condition holds or a
 * generous deadline passes". Everything runs on the main thread, which is
 * also the one polling (callbacks must arrive there).
 */
#include "../agentutil.h"
#include "../tlsproxy.h"

#include "agent/agent_int.h" /* DC_CW_MISMATCH_CHECKS */

#include <sys/stat.h>

#define WAIT_MS 120000 /* deadline for any condition (mock rebalances) */
#define NPART 3
#define TOPIC "rot-topic"
#define GROUP "rot-group"
#define MAXMSG 200000
#define PCID "rot-producer"
#define CCID "rot-consumer"
#define CHECK_MS "50" /* dynconf.ssl.check.interval.ms in this test */

static char g_dir[512], g_certs[600], g_app[600];
static char g_cert[700], g_key[700], g_ca[700];
static tlsproxy_t g_data; /* TLS front of the mock broker */
static tlsproxy_t g_cfg;  /* TLS front of dynconfd, without SSL listeners */
static bool g_cfg_proxied;
static dc_tu_daemon_t g_d;
static int g_cfg_port;   /* where the agents fetch, over TLS */
static char g_dlog[700];
static pthread_t g_main;

static const char *certf(const char *name) { return dc_tu_path(g_certs, name); }

/* Writes data to path atomically: a temporary file renamed over it. */
static int write_atomic(const char *path, const void *data, size_t n) {
  char tmp[PATH_MAX + 96];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return -1;
  int rc = fwrite(data, 1, n, f) == n && !fflush(f) && !fsync(fileno(f)) ? 0
                                                                          : -1;
  if (fclose(f) || rc || rename(tmp, path)) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* Copies src over dst atomically. */
static int install(const char *src, const char *dst) {
  FILE *f = fopen(src, "rb");
  if (!f)
    return -1;
  char buf[65536];
  size_t n = fread(buf, 1, sizeof(buf), f);
  fclose(f);
  return n == 0 || n == sizeof(buf) ? -1 : write_atomic(dst, buf, n);
}

/* Lines of dynconfd's log containing needle (its debug log names the
 * principal of every TLS connection). */
static int log_count(const char *needle) {
  FILE *f = fopen(g_dlog, "r");
  if (!f)
    return 0;
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof(line), f))
    n += strstr(line, "TLS connection from") && strstr(line, needle);
  fclose(f);
  return n;
}

/* ---- what the agents told the application ------------------------------- */

typedef struct agent_rec {
  int n_change, n_rotation, n_cert_error, n_other, wrong_thread;
  int rot_bad_entries; /* rotation entries not FILE/APPLIED */
  bool rot_key_entry, rot_ca_entry, rot_accepted;
  int64_t rot_gen;
  char rot_cert_old[512], rot_cert_new[512]; /* "" = no such entry */
  char rot_ca_old[512], rot_ca_new[512];
  char cert_error[512];
} agent_rec_t;

static void on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  agent_rec_t *r = opaque;
  if (!pthread_equal(pthread_self(), g_main))
    r->wrong_thread++;
  switch (dynconf_event_type(ev)) {
  case DYNCONF_EVENT_CHANGE:
    break;
  case DYNCONF_EVENT_CERT_ERROR:
    r->n_cert_error++;
    snprintf(r->cert_error, sizeof(r->cert_error), "%s",
             dynconf_event_error_string(ev));
    diag("%s: CERT_ERROR %s: %s", dynconf_client_id(dc),
         dynconf_err_name(dynconf_event_error(ev)), r->cert_error);
    return;
  default:
    r->n_other++;
    diag("%s: event %d: %s", dynconf_client_id(dc), (int)dynconf_event_type(ev),
         dynconf_event_error_string(ev));
    return;
  }
  r->n_change++;
  bool file = false;
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++)
    file |= dynconf_event_source(ev, i) == DYNCONF_SOURCE_FILE;
  if (!file) {
    diag("%s: a change event that is no rotation", dynconf_client_id(dc));
    return;
  }
  r->n_rotation++;
  r->rot_key_entry = r->rot_ca_entry = false;
  r->rot_cert_old[0] = r->rot_cert_new[0] = '\0';
  r->rot_ca_old[0] = r->rot_ca_new[0] = '\0';
  r->rot_gen = dynconf_event_generation(ev);
  r->rot_accepted = dynconf_event_accepted(ev);
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++) {
    const char *k = dynconf_event_key(ev, i);
    const char *o = dynconf_event_old_value(ev, i),
               *n = dynconf_event_new_value(ev, i);
    diag("%s: rotation entry %s: %s -> %s (%s, %s)", dynconf_client_id(dc), k,
         o ? o : "(null)", n ? n : "(null)",
         dynconf_source_name(dynconf_event_source(ev, i)),
         dynconf_outcome_name(dynconf_event_outcome(ev, i)));
    if (dynconf_event_source(ev, i) != DYNCONF_SOURCE_FILE ||
        dynconf_event_outcome(ev, i) != DYNCONF_OUTCOME_APPLIED)
      r->rot_bad_entries++;
    if (!strcmp(k, "ssl.certificate.location")) {
      snprintf(r->rot_cert_old, sizeof(r->rot_cert_old), "%s", o ? o : "");
      snprintf(r->rot_cert_new, sizeof(r->rot_cert_new), "%s", n ? n : "");
    } else if (!strcmp(k, "ssl.key.location")) {
      r->rot_key_entry = true;
    } else if (!strcmp(k, "ssl.ca.location")) {
      r->rot_ca_entry = true;
      snprintf(r->rot_ca_old, sizeof(r->rot_ca_old), "%s", o ? o : "");
      snprintf(r->rot_ca_new, sizeof(r->rot_ca_new), "%s", n ? n : "");
    }
  }
}

/* An agent for app (borrowed) fetching from 127.0.0.1:port every 200 ms,
 * checking the ssl files every check_ms. The caller owns the agent. */
static dynconf_t *agent_new(rd_kafka_type_t type, const rd_kafka_conf_t *app,
                            int port, agent_rec_t *rec, const char *check_ms) {
  return au_agent_new_with(type, app, port, on_change, au_on_log, rec,
                           "dynconf.refresh.interval.ms", "200",
                           "dynconf.startup.required", "true",
                           "dynconf.ssl.check.interval.ms", check_ms, NULL);
}

/* A JSON number that follows `after` in the agent's statistics, or -1. */
static long long stat_after(dynconf_t *dc, const char *after,
                            const char *key) {
  char *s = dynconf_stats_json(dc); /* ours, freed below */
  const char *p = s ? strstr(s, after) : NULL;
  long long v = p ? au_json_ll(p, key) : -1;
  free(s);
  return v;
}

static bool stats_has(dynconf_t *dc, const char *needle) {
  char *s = dynconf_stats_json(dc);
  bool r = s && strstr(s, needle);
  if (!r && getenv("AU_VERBOSE"))
    diag("stats: %s", s ? s : "(null)");
  free(s);
  return r;
}

/* ---- the application: messages and clients ------------------------------ */

static int g_dr[MAXMSG], g_seen[MAXMSG];
static int g_dr_total, g_dr_err, g_dr_bad, g_dr_wrong_thread;
static rd_kafka_resp_err_t g_first_dr_err;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (!pthread_equal(pthread_self(), g_main))
    g_dr_wrong_thread++;
  uintptr_t o = (uintptr_t)m->_private;
  if (o == 0 || o > MAXMSG) {
    g_dr_bad++;
    return;
  }
  g_dr[o - 1]++;
  g_dr_total++;
  if (m->err && !g_dr_err++)
    g_first_dr_err = m->err;
}

static struct world {
  dynconf_t *pdc, *cdc;
  agent_rec_t prec, crec;
  dynconf_producer_t *p;
  dynconf_consumer_t *c;
  bool producing;
  int produced; /* ids [0, produced) were enqueued */
  int consumed; /* distinct ids read */
  int dups, bad;
} W;

/* One round of the application's loop: produce what is due, serve the
 * producer (delivery reports, switches), poll the consumer (rebuilds). */
static void pump(void) {
  /* About 500 messages a second, whatever the loop's pace. */
  static int64_t t0;
  if (!t0)
    t0 = dc_tu_now_ms();
  int due = (int)((dc_tu_now_ms() - t0) / 2);
  for (int i = 0; W.producing && i < 4 && W.produced < due &&
                  W.produced < MAXMSG;
       i++) {
    char val[32], key[16];
    int id = W.produced;
    int vl = snprintf(val, sizeof(val), "%d", id);
    int kl = snprintf(key, sizeof(key), "k%d", id % 8);
    rd_kafka_resp_err_t err = dynconf_producer_produce(
        W.p, TOPIC, RD_KAFKA_PARTITION_UA, val, (size_t)vl, key, (size_t)kl,
        (void *)(uintptr_t)(id + 1));
    if (err) {
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
        diag("produce %d: %s", id, rd_kafka_err2str(err));
      break; /* the id was not used: the next call reuses it */
    }
    W.produced++;
  }
  dynconf_producer_poll(W.p, 0);
  rd_kafka_message_t *m = dynconf_consumer_poll(W.c, 10);
  if (!m)
    return;
  if (m->err) {
    if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
      diag("consumer: %s", rd_kafka_message_errstr(m));
  } else {
    char buf[32];
    size_t n = m->len < sizeof(buf) - 1 ? m->len : sizeof(buf) - 1;
    memcpy(buf, m->payload, n);
    buf[n] = '\0';
    char *end;
    long id = strtol(buf, &end, 10);
    if (*end || id < 0 || id >= MAXMSG)
      W.bad++;
    else if (g_seen[id]++)
      W.dups++;
    else
      W.consumed++;
  }
  rd_kafka_message_destroy(m);
}

/* Runs the application's loop until cond() holds; false at the deadline. */
static bool wait_for(bool (*cond)(void), const char *what) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (!cond()) {
    if (dc_tu_now_ms() > deadline) {
      diag("timed out waiting for %s", what);
      return false;
    }
    pump();
  }
  return true;
}

static rd_kafka_conf_t *ssl_app_conf(const char *cid, ...) {
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", g_data.port);
  rd_kafka_conf_t *c = au_app_conf(
      bs, cid, "security.protocol", "ssl", "ssl.ca.location", g_ca,
      "ssl.certificate.location", g_cert, "ssl.key.location", g_key,
      "reconnect.backoff.max.ms", "500", NULL);
  va_list ap;
  va_start(ap, cid);
  au_conf_set_pairs(c, ap);
  va_end(ap);
  return c;
}

/* ---- conditions for wait_for() ------------------------------------------- */

static int g_target;
static long long g_pfetch0, g_cfetch0;
static int g_cfg_mark, g_log_alice2_0;
static int g_cert_errors0[2];

static bool cond_flowing(void) {
  return W.consumed >= g_target && g_dr_total >= g_target;
}
static bool cond_both_mismatch(void) {
  return stat_after(W.pdc, "\"pending\":{", "checks") >= 1 &&
         stat_after(W.cdc, "\"pending\":{", "checks") >= 1;
}
static bool cond_rebuilt(void) {
  return W.prec.n_rotation >= 1 && W.crec.n_rotation >= 1 &&
         dynconf_producer_switches(W.p) >= 1 &&
         dynconf_consumer_rebuilds(W.c) >= 1;
}
/* The agents' own connections came back with alice2 and fetch again. */
static bool cond_agents_reconnected(void) {
  bool seen = g_cfg_proxied
                  ? tlsproxy_count(&g_cfg, PCID, "alice2", g_cfg_mark) >= 1 &&
                        tlsproxy_count(&g_cfg, CCID, "alice2", g_cfg_mark) >= 1
                  : log_count("User:CN=alice2,O=dynconf-test") >=
                        g_log_alice2_0 + 2;
  return seen && au_fetches(W.pdc) > g_pfetch0 + 1 &&
         au_fetches(W.cdc) > g_cfetch0 + 1;
}
static bool cond_stuck_mismatch(void) {
  return stat_after(W.pdc, "\"pending\":{", "checks") >=
             DC_CW_MISMATCH_CHECKS &&
         stat_after(W.cdc, "\"pending\":{", "checks") >=
             DC_CW_MISMATCH_CHECKS &&
         W.prec.n_cert_error > g_cert_errors0[0] &&
         W.crec.n_cert_error > g_cert_errors0[1];
}
static bool cond_quiet(void) {
  return stats_has(W.pdc, "\"pending\":null") &&
         stats_has(W.cdc, "\"pending\":null");
}
static bool cond_cert_errors(void) {
  return W.prec.n_cert_error > g_cert_errors0[0] &&
         W.crec.n_cert_error > g_cert_errors0[1];
}
static bool cond_all_read(void) { return W.consumed >= W.produced; }

/* ---- scenarios ------------------------------------------------------------- */

static void test_conf_property(void) {
  char v[32], e[256];
  size_t sz = sizeof(v);
  dynconf_conf_t *c = dynconf_conf_new();
  ok(dynconf_conf_get(c, "dynconf.ssl.check.interval.ms", v, &sz) ==
             DYNCONF_CONF_OK &&
         !strcmp(v, "10000"),
     "dynconf.ssl.check.interval.ms defaults to 10000 (got %s)", v);
  is_int(dynconf_conf_set(c, "dynconf.ssl.check.interval.ms", "0", e,
                          sizeof(e)),
         DYNCONF_CONF_OK, "0 (off) is accepted");
  is_int(dynconf_conf_set(c, "dynconf.ssl.check.interval.ms", "-1", e,
                          sizeof(e)),
         DYNCONF_CONF_INVALID, "-1 is refused");
  ok(strstr(e, "dynconf.ssl.check.interval.ms"), "the error names it: %s", e);
  is_int(dynconf_conf_set(c, "dynconf.ssl.check.interval.ms", "soon", e,
                          sizeof(e)),
         DYNCONF_CONF_INVALID, "a word is refused");
  dynconf_conf_destroy(c);
}

/* No ssl files (PLAINTEXT), or the interval 0: the agent never checks. */
static void test_not_watching(void) {
  char bs[64];
  agent_rec_t rec;
  memset(&rec, 0, sizeof(rec));
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", g_d.port);
  rd_kafka_conf_t *app = au_app_conf(bs, "plain-app", NULL);
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, app, g_d.port, &rec, "10");
  rd_kafka_conf_destroy(app);
  if (!ok(dc, "plaintext agent"))
    return;
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (au_fetches(dc) < 4 && dc_tu_now_ms() < deadline)
    dynconf_poll(dc, 50);
  ok(au_fetches(dc) >= 4, "plaintext agent fetched a few times");
  ok(stats_has(dc, "\"ssl\":{\"watching\":false"),
     "plaintext: the stats say the ssl files are not watched");
  is_int(stat_after(dc, "\"ssl\":", "checks"), 0,
         "plaintext: not a single check with a 10 ms interval");
  dynconf_destroy(dc);

  memset(&rec, 0, sizeof(rec));
  app = ssl_app_conf("off-app", NULL);
  dc = agent_new(RD_KAFKA_PRODUCER, app, g_cfg_port, &rec, "0");
  rd_kafka_conf_destroy(app);
  if (!ok(dc, "SSL agent with dynconf.ssl.check.interval.ms=0"))
    return;
  deadline = dc_tu_now_ms() + WAIT_MS;
  while (au_fetches(dc) < 3 && dc_tu_now_ms() < deadline)
    dynconf_poll(dc, 50);
  ok(au_fetches(dc) >= 3, "SSL agent fetched over TLS");
  ok(stats_has(dc, "\"ssl\":{\"watching\":false"),
     "interval 0: the ssl files are not watched");
  dynconf_destroy(dc);
}

static bool start_clients(void) {
  char e[512];
  rd_kafka_conf_t *pc = ssl_app_conf(PCID, "linger.ms", "5", NULL);
  rd_kafka_conf_set_dr_msg_cb(pc, on_dr);
  rd_kafka_conf_t *cc =
      ssl_app_conf(CCID, "group.id", GROUP, "auto.offset.reset", "earliest",
                   "session.timeout.ms", "6000", "heartbeat.interval.ms",
                   "1000", NULL);
  W.pdc = agent_new(RD_KAFKA_PRODUCER, pc, g_cfg_port, &W.prec, CHECK_MS);
  W.cdc = agent_new(RD_KAFKA_CONSUMER, cc, g_cfg_port, &W.crec, CHECK_MS);
  rd_kafka_conf_destroy(pc);
  rd_kafka_conf_destroy(cc);
  if (!ok(W.pdc && W.cdc,
          "agents up: their first fetch went over mutual TLS (alice)"))
    return false;
  if (g_cfg_proxied)
    ok(tlsproxy_count(&g_cfg, PCID, "alice", 0) >= 1 &&
           tlsproxy_count(&g_cfg, CCID, "alice", 0) >= 1,
       "the agents' own connections presented CN=alice at the proxy");
  else
    ok(log_count("User:CN=alice,O=dynconf-test") >= 2,
       "dynconfd saw the agents' connections as User:CN=alice,O=dynconf-test");
  ok(stats_has(W.pdc, "\"subject\":\"CN=alice,O=dynconf-test\"") &&
         stats_has(W.cdc, "\"subject\":\"CN=alice,O=dynconf-test\""),
     "stats show the certificate in use (CN=alice)");
  ok(stats_has(W.pdc, "\"watching\":true") &&
         stats_has(W.pdc, "\"rotations\":0") &&
         stats_has(W.pdc, "\"fingerprint_sha256\":\""),
     "stats: watching, no rotation yet, a fingerprint");
  W.p = dynconf_producer_new(W.pdc, DYNCONF_SWITCH_ORDERED, e, sizeof(e));
  if (!ok(W.p, "managed producer (ordered)")) {
    diag("%s", e);
    return false;
  }
  W.c = dynconf_consumer_new(W.cdc, e, sizeof(e));
  if (!ok(W.c, "managed consumer")) {
    diag("%s", e);
    return false;
  }
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, TOPIC, RD_KAFKA_PARTITION_UA);
  is_int(dynconf_consumer_subscribe(W.c, t), 0, "subscribed");
  rd_kafka_topic_partition_list_destroy(t);
  W.producing = true;
  g_target = 100;
  ok(wait_for(cond_flowing, "messages to flow"),
     "messages flow over TLS: %d produced, %d reported, %d consumed",
     W.produced, g_dr_total, W.consumed);
  ok(tlsproxy_count(&g_data, PCID, "alice", 0) >= 1 &&
         tlsproxy_count(&g_data, CCID, "alice", 0) >= 1,
     "the producer's and the consumer's connections presented CN=alice");
  is_int(tlsproxy_count(&g_data, NULL, NULL, 0),
         tlsproxy_count(&g_data, NULL, "alice", 0),
         "every data-plane connection so far presented CN=alice");
  return true;
}

static void test_rotation(void) {
  char cmd[PATH_MAX * 2];
  snprintf(cmd, sizeof(cmd), "sh %s/tests/gen_certs.sh %s leaf alice2",
           getenv("DC_SRCDIR") ? getenv("DC_SRCDIR") : ".", g_certs);
  if (!ok(!dc_tu_system(cmd), "minted alice2"))
    return;
  int64_t pg = dynconf_generation(W.pdc), cg = dynconf_generation(W.cdc);
  int data_mark = tlsproxy_mark(&g_data);
  g_cfg_mark = g_cfg_proxied ? tlsproxy_mark(&g_cfg) : 0;
  g_log_alice2_0 = g_cfg_proxied ? 0 : log_count("User:CN=alice2,");

  /* Step 1, the key: certificate and key do not match. */
  ok(!install(certf("alice2.key"), g_key), "new key written (renamed)");
  ok(wait_for(cond_both_mismatch, "the agents to see the mismatch"),
     "both agents saw the new key and wait for its certificate");
  ok(stats_has(W.pdc, "\"waiting\":true") &&
         stats_has(W.pdc, "do not match"),
     "stats: pending, certificate and key do not match");
  is_int(dynconf_generation(W.pdc), pg, "producer agent: generation kept");
  is_int(dynconf_generation(W.cdc), cg, "consumer agent: generation kept");
  is_int(W.prec.n_rotation + W.crec.n_rotation, 0, "no rotation event yet");
  is_int(dynconf_producer_switches(W.p), 0, "no producer switch yet");
  is_int(dynconf_consumer_rebuilds(W.c), 0, "no consumer rebuild yet");
  is_int(tlsproxy_count(&g_data, NULL, "alice2", 0), 0,
         "nobody presented alice2 yet");

  /* Step 2, the certificate: a whole valid set. */
  g_pfetch0 = au_fetches(W.pdc);
  g_cfetch0 = au_fetches(W.cdc);
  ok(!install(certf("alice2.pem"), g_cert), "new certificate written");
  ok(wait_for(cond_rebuilt, "the rotation"),
     "both agents rotated; the producer switched, the consumer rebuilt");
  g_target = W.produced + 200;
  ok(wait_for(cond_flowing, "messages after the rotation"),
     "messages flow after the rotation (%d consumed)", W.consumed);
  ok(wait_for(cond_agents_reconnected, "the agents' own connections"),
     "the agents' own connections to dynconfd came back with CN=alice2 and "
     "fetch again");

  for (int i = 0; i < 2; i++) {
    agent_rec_t *r = i ? &W.crec : &W.prec;
    const char *who = i ? "consumer agent" : "producer agent";
    is_int(r->n_rotation, 1, "%s: exactly one rotation event", who);
    ok(r->rot_accepted, "%s: the rotation is applied", who);
    is_int(r->rot_gen, (i ? cg : pg) + 1, "%s: generation moved by one", who);
    is_int(dynconf_generation(i ? W.cdc : W.pdc), (i ? cg : pg) + 1,
           "%s: dynconf_generation agrees", who);
    is_int(r->rot_bad_entries, 0, "%s: entries are source FILE, APPLIED", who);
    ok(strstr(r->rot_cert_old, "CN=alice,O=dynconf-test") &&
           strstr(r->rot_cert_old, "SHA-256") &&
           strstr(r->rot_cert_old, "expires"),
       "%s: old value describes alice's certificate: %s", who,
       r->rot_cert_old);
    ok(strstr(r->rot_cert_new, "CN=alice2,O=dynconf-test") &&
           strstr(r->rot_cert_new, "expires"),
       "%s: new value describes alice2's certificate: %s", who,
       r->rot_cert_new);
    ok(r->rot_key_entry, "%s: an entry for ssl.key.location", who);
    ok(!r->rot_ca_entry, "%s: no entry for the unchanged CA", who);
    dynconf_t *dc = i ? W.cdc : W.pdc;
    ok(stats_has(dc, "\"rotations\":1") &&
           stats_has(dc, "\"subject\":\"CN=alice2,O=dynconf-test\"") &&
           stats_has(dc, "\"pending\":null"),
       "%s: stats show the rotation and alice2", who);
  }
  is_int(dynconf_producer_switches(W.p), 1, "the producer switched once");
  is_int(dynconf_consumer_rebuilds(W.c), 1, "the consumer rebuilt once");
  ok(tlsproxy_count(&g_data, PCID, "alice2", data_mark) >= 1,
     "the new producer connections present CN=alice2 (%d)",
     tlsproxy_count(&g_data, PCID, "alice2", data_mark));
  ok(tlsproxy_count(&g_data, CCID, "alice2", data_mark) >= 1,
     "the new consumer connections present CN=alice2 (%d)",
     tlsproxy_count(&g_data, CCID, "alice2", data_mark));
  tp_record_t lp, lc;
  ok(tlsproxy_last(&g_data, PCID, &lp) && !strcmp(lp.cn, "alice2") &&
         tlsproxy_last(&g_data, CCID, &lc) && !strcmp(lc.cn, "alice2"),
     "the latest connection of each client presents alice2");
  diag("connections since the rotation started: %d alice2, %d alice (old "
       "handles reconnecting)",
       tlsproxy_count(&g_data, NULL, "alice2", data_mark),
       tlsproxy_count(&g_data, NULL, "alice", data_mark));
  char *s = dynconf_producer_stats_json(W.p);
  diag("producer: %s", s ? s : "");
  free(s);
}

/* A key that stays mismatched: reported once it persists, never applied. */
static void test_stuck_mismatch(void) {
  int64_t pg = dynconf_generation(W.pdc), cg = dynconf_generation(W.cdc);
  int64_t sw = dynconf_producer_switches(W.p),
          rb = dynconf_consumer_rebuilds(W.c);
  int rot = W.prec.n_rotation + W.crec.n_rotation;
  int drs = g_dr_total;
  g_cert_errors0[0] = W.prec.n_cert_error;
  g_cert_errors0[1] = W.crec.n_cert_error;
  ok(!install(certf("bob.key"), g_key), "bob's key written over alice2's");
  ok(wait_for(cond_stuck_mismatch, "the mismatch to persist"),
     "the mismatch persisted for %d checks and was reported",
     DC_CW_MISMATCH_CHECKS);
  is_int(W.prec.n_cert_error - g_cert_errors0[0], 1,
         "producer agent: one CERT_ERROR");
  is_int(W.crec.n_cert_error - g_cert_errors0[1], 1,
         "consumer agent: one CERT_ERROR");
  ok(strstr(W.prec.cert_error, "do not match") &&
         strstr(W.prec.cert_error, "stay in use"),
     "it says the pair does not match and the old one stays: %s",
     W.prec.cert_error);
  g_target = W.consumed + 100;
  ok(wait_for(cond_flowing, "messages during the mismatch"),
     "messages keep flowing meanwhile");
  ok(g_dr_total > drs, "delivery reports keep coming");
  is_int(dynconf_generation(W.pdc), pg, "producer agent: generation kept");
  is_int(dynconf_generation(W.cdc), cg, "consumer agent: generation kept");
  is_int(W.prec.n_rotation + W.crec.n_rotation, rot, "no rotation event");
  is_int(dynconf_producer_switches(W.p), sw, "no producer switch");
  is_int(dynconf_consumer_rebuilds(W.c), rb, "no consumer rebuild");

  ok(!install(certf("alice2.key"), g_key), "alice2's key put back");
  ok(wait_for(cond_quiet, "the agents to calm down"),
     "the agents see the files in use again (nothing pending)");
  is_int(dynconf_generation(W.pdc), pg, "still the same generation");
  is_int(W.prec.n_rotation + W.crec.n_rotation, rot,
         "putting the same files back is no rotation");
  is_int(dynconf_producer_switches(W.p), sw, "still no producer switch");
}

/* The key file is gone for a while: waited for like a mismatch. */
static void test_missing(void) {
  int64_t pg = dynconf_generation(W.pdc);
  int64_t sw = dynconf_producer_switches(W.p),
          rb = dynconf_consumer_rebuilds(W.c);
  int rot = W.prec.n_rotation + W.crec.n_rotation;
  g_cert_errors0[0] = W.prec.n_cert_error;
  g_cert_errors0[1] = W.crec.n_cert_error;
  ok(!unlink(g_key), "the key file deleted");
  ok(wait_for(cond_stuck_mismatch, "the missing key to be reported"),
     "a key still missing after %d checks is reported", DC_CW_MISMATCH_CHECKS);
  ok(stats_has(W.pdc, "\"waiting\":true") &&
         stats_has(W.pdc, "No such file"),
     "stats: pending, waiting for the file");
  is_int(W.prec.n_cert_error - g_cert_errors0[0], 1,
         "producer agent: one CERT_ERROR");
  ok(strstr(W.prec.cert_error, g_key) && strstr(W.prec.cert_error, "No such"),
     "it names the missing file: %s", W.prec.cert_error);
  ok(!install(certf("alice2.key"), g_key), "the key file is back");
  ok(wait_for(cond_quiet, "the agents to calm down"),
     "nothing pending once the file is back");
  is_int(dynconf_generation(W.pdc), pg, "generation kept");
  is_int(W.prec.n_rotation + W.crec.n_rotation, rot, "no rotation event");
  is_int(dynconf_producer_switches(W.p), sw, "no producer switch");
  is_int(dynconf_consumer_rebuilds(W.c), rb, "no consumer rebuild");
}

/* A garbage certificate file: reported, the one in memory stays in use. */
static void test_garbage(void) {
  int64_t pg = dynconf_generation(W.pdc), cg = dynconf_generation(W.cdc);
  int64_t sw = dynconf_producer_switches(W.p),
          rb = dynconf_consumer_rebuilds(W.c);
  int rot = W.prec.n_rotation + W.crec.n_rotation;
  g_cert_errors0[0] = W.prec.n_cert_error;
  g_cert_errors0[1] = W.crec.n_cert_error;
  static const char junk[] = "this is not a certificate\n";
  ok(!write_atomic(g_cert, junk, sizeof(junk) - 1),
     "garbage written over the certificate");
  ok(wait_for(cond_cert_errors, "the garbage to be reported"),
     "both agents reported the garbage");
  ok(strstr(W.prec.cert_error, "holds no PEM certificate") &&
         strstr(W.prec.cert_error, g_cert),
     "the report names the file and the problem: %s", W.prec.cert_error);
  ok(stats_has(W.pdc, "\"waiting\":false") &&
         stats_has(W.pdc, "holds no PEM certificate"),
     "stats: pending, with the reason");
  int from = W.produced;
  g_target = W.consumed + 200;
  ok(wait_for(cond_flowing, "messages with the garbage on disk"),
     "the certificate in use keeps working: %d more produced and consumed",
     W.produced - from);
  /* Still reported once: the same content is not reported again. */
  is_int(W.prec.n_cert_error - g_cert_errors0[0], 1,
         "producer agent: exactly one CERT_ERROR");
  is_int(W.crec.n_cert_error - g_cert_errors0[1], 1,
         "consumer agent: exactly one CERT_ERROR");
  is_int(dynconf_generation(W.pdc), pg, "producer agent: generation kept");
  is_int(dynconf_generation(W.cdc), cg, "consumer agent: generation kept");
  is_int(W.prec.n_rotation + W.crec.n_rotation, rot, "no rotation event");
  is_int(dynconf_producer_switches(W.p), sw, "no producer switch");
  is_int(dynconf_consumer_rebuilds(W.c), rb, "no consumer rebuild");
  ok(!install(certf("alice2.pem"), g_cert), "alice2's certificate put back");
  ok(wait_for(cond_quiet, "the agents to calm down"),
     "nothing pending once the file is good again");
  is_int(W.prec.n_rotation + W.crec.n_rotation, rot,
         "the same certificate back is no rotation");
}

static int g_rot0[2];
static int64_t g_sw0, g_rb0;
static bool cond_rotated_again(void) {
  return W.prec.n_rotation > g_rot0[0] && W.crec.n_rotation > g_rot0[1] &&
         dynconf_producer_switches(W.p) > g_sw0 &&
         dynconf_consumer_rebuilds(W.c) > g_rb0;
}

/* The application's CA file gets a second CA: a rotation of its own. */
static void test_ca_rotation(void) {
  int64_t pg = dynconf_generation(W.pdc), cg = dynconf_generation(W.cdc);
  g_sw0 = dynconf_producer_switches(W.p);
  g_rb0 = dynconf_consumer_rebuilds(W.c);
  g_rot0[0] = W.prec.n_rotation;
  g_rot0[1] = W.crec.n_rotation;
  char bundle[16384];
  size_t n = 0;
  const char *parts[] = {certf("rogue-ca.pem"), certf("ca.pem")};
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(parts[i], "rb");
    if (f) {
      n += fread(bundle + n, 1, sizeof(bundle) - n, f);
      fclose(f);
    }
  }
  ok(n > 0 && !write_atomic(g_ca, bundle, n),
     "CA bundle (rogue CA, then the real one) written over the app's CA");
  ok(wait_for(cond_rotated_again, "the CA rotation"),
     "both agents rotated; the producer switched, the consumer rebuilt");
  g_target = W.consumed + 200;
  ok(wait_for(cond_flowing, "messages after the CA rotation"),
     "messages flow after the CA rotation");
  for (int i = 0; i < 2; i++) {
    agent_rec_t *r = i ? &W.crec : &W.prec;
    const char *who = i ? "consumer agent" : "producer agent";
    is_int(r->n_rotation - g_rot0[i], 1, "%s: exactly one more rotation", who);
    is_int(r->rot_gen, (i ? cg : pg) + 1, "%s: generation moved by one", who);
    ok(r->rot_ca_entry && !r->rot_key_entry && !r->rot_cert_new[0],
       "%s: only an ssl.ca.location entry", who);
    ok(strstr(r->rot_ca_old, "CN=dynconf test CA") &&
           strstr(r->rot_ca_new, "CN=rogue CA"),
       "%s: CA %s -> %s", who, r->rot_ca_old, r->rot_ca_new);
    ok(stats_has(i ? W.cdc : W.pdc, "\"rotations\":2"),
       "%s: stats count two rotations", who);
  }
  is_int(dynconf_producer_switches(W.p), g_sw0 + 1, "one more switch");
  is_int(dynconf_consumer_rebuilds(W.c), g_rb0 + 1, "one more rebuild");
}

/* A client that hangs up in the middle of its handshake (as a handle
 * destroyed while connecting does) is told apart from a refused
 * certificate: abandoned, not failed. */
static void test_abandoned_handshake(void) {
  int mark = tlsproxy_mark(&g_data);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)g_data.port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  /* A handshake record's header that promises more than comes. */
  static const unsigned char hello[] = {0x16, 0x03, 0x01, 0x00, 0x80, 0x01};
  bool sent = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
              write(fd, hello, sizeof(hello)) == (ssize_t)sizeof(hello);
  if (fd >= 0)
    close(fd);
  ok(sent, "a client starts a handshake at the data plane, then hangs up");
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (tlsproxy_abandoned(&g_data, mark) < 1 && dc_tu_now_ms() < deadline)
    usleep(10000);
  is_int(tlsproxy_abandoned(&g_data, mark), 1,
         "the proxy counts that handshake as abandoned");
  is_int(tlsproxy_failures(&g_data, mark, NULL, 0), 0,
         "  and not as a failed one");
}

/* Stops producing, waits for every report and every message. */
static void test_no_loss(void) {
  W.producing = false;
  is_int(dynconf_producer_flush(W.p, 60000), 0, "producer flushed");
  ok(wait_for(cond_all_read, "the consumer to read everything"),
     "the consumer read all %d messages", W.produced);
  int missing_dr = 0, double_dr = 0, unread = 0;
  for (int id = 0; id < W.produced; id++) {
    missing_dr += g_dr[id] == 0;
    double_dr += g_dr[id] > 1;
    if (!g_seen[id] && unread++ < 5)
      diag("message %d never read", id);
  }
  int dr_beyond = 0;
  for (int id = W.produced; id < MAXMSG; id++)
    dr_beyond += g_dr[id];
  ok(W.produced > 500, "%d messages over the whole run", W.produced);
  is_int(missing_dr, 0, "every message got a delivery report");
  is_int(double_dr, 0, "no message got two");
  is_int(dr_beyond, 0, "no report for a message that was not produced");
  is_int(g_dr_err, 0, "no delivery error%s%s", g_dr_err ? ": " : "",
         g_dr_err ? rd_kafka_err2str(g_first_dr_err) : "");
  is_int(g_dr_bad, 0, "every report carried our opaque");
  is_int(unread, 0, "every message was read");
  is_int(W.dups, 0, "no message was read twice");
  is_int(W.bad, 0, "every payload was ours");
  is_int(g_dr_wrong_thread, 0, "reports ran on the polling thread");
  is_int(W.prec.wrong_thread + W.crec.wrong_thread, 0,
         "events ran on the polling thread");
  is_int(W.prec.n_other + W.crec.n_other, 0,
         "no ERROR/UNSUPPORTED event from the agents");
  char err[300] = "";
  diag("data plane: %d handshake(s) abandoned by clients that closed "
       "mid-way (handles destroyed while connecting)",
       tlsproxy_abandoned(&g_data, 0));
  is_int(tlsproxy_failures(&g_data, 0, err, sizeof(err)), 0,
         "no TLS handshake failed at the data plane%s%s", *err ? ": " : "",
         err);
}

/* dynconfd with its own SSL listener (client certificates required) when
 * it has --listeners; else plaintext dynconfd behind a TLS proxy. */
static bool start_dynconfd(const char *data) {
  char cmd[PATH_MAX + 64], err[512];
  snprintf(cmd, sizeof(cmd), "%s/dynconfd --help 2>&1 | grep -q -- --listeners",
           dc_tu_builddir());
  bool native = !dc_tu_system(cmd) && !getenv("ROT_PROXY_CFG");
  const char *native_args[] = {"-v",
                               "--listeners",
                               "SSL://127.0.0.1:0",
                               "--ssl-cert",
                               certf("server.pem"),
                               "--ssl-key",
                               certf("server.key"),
                               "--ssl-ca",
                               certf("ca.pem"),
                               "--ssl-client-auth",
                               "required",
                               NULL};
  if (dc_tu_daemon_start(&g_d, data, g_dlog, native ? native_args : NULL, err,
                         sizeof(err))) {
    ok(0, "dynconfd started: %s", err);
    return false;
  }
  if (native) {
    g_cfg_port = dc_tu_daemon_port_of(&g_d, "SSL");
    ok(g_cfg_port > 0, "dynconfd has an SSL listener (client auth required)");
    diag("agents fetch from dynconfd's own SSL listener on %d", g_cfg_port);
    return g_cfg_port > 0;
  }
  if (!ok(!tlsproxy_start_kafka(&g_cfg, g_d.port, certf("server.pem"),
                                certf("server.key"), certf("ca.pem"), true,
                                err, sizeof(err)),
          "TLS proxy in front of dynconfd")) {
    diag("%s", err);
    return false;
  }
  g_cfg_proxied = true;
  g_cfg_port = g_cfg.port;
  diag("agents fetch through a TLS proxy on %d (ROT_PROXY_CFG, or no "
       "--listeners in dynconfd)",
       g_cfg_port);
  return true;
}

int main(void) {
  g_main = pthread_self();
  char data[700], cmd[PATH_MAX * 2], err[512];
  if (dc_tu_tmpdir(g_dir, sizeof(g_dir))) {
    printf("Bail out! no temporary directory\n");
    return 1;
  }
  snprintf(g_certs, sizeof(g_certs), "%s/certs", g_dir);
  snprintf(g_app, sizeof(g_app), "%s/app", g_dir);
  snprintf(g_dlog, sizeof(g_dlog), "%s/dynconfd.log", g_dir);
  snprintf(data, sizeof(data), "%s/data", g_dir);
  mkdir(g_app, 0700);
  mkdir(data, 0700);
  snprintf(cmd, sizeof(cmd), "sh %s/tests/gen_certs.sh %s",
           getenv("DC_SRCDIR") ? getenv("DC_SRCDIR") : ".", g_certs);
  if (dc_tu_system(cmd)) {
    printf("Bail out! cannot make test certificates (openssl)\n");
    dc_tu_rmrf(g_dir);
    return 1;
  }
  /* The application's own copies, which get rotated in place. */
  snprintf(g_cert, sizeof(g_cert), "%s/client.pem", g_app);
  snprintf(g_key, sizeof(g_key), "%s/client.key", g_app);
  snprintf(g_ca, sizeof(g_ca), "%s/ca.pem", g_app);
  if (install(certf("alice.pem"), g_cert) ||
      install(certf("alice.key"), g_key) || install(certf("ca.pem"), g_ca)) {
    printf("Bail out! cannot copy the client certificate\n");
    dc_tu_rmrf(g_dir);
    return 1;
  }

  test_conf_property();
  rd_kafka_t *mrk = NULL;
  char mbs[256];
  rd_kafka_mock_cluster_t *mcl = au_mock_new(1, &mrk, mbs, sizeof(mbs));
  const char *colon = strrchr(mbs, ':');
  if (!ok(mcl && colon, "mock cluster") ||
      !start_dynconfd(data)) {
    if (mcl) {
      rd_kafka_mock_cluster_destroy(mcl);
      rd_kafka_destroy(mrk);
    }
    if (g_d.pid)
      dc_tu_daemon_stop(&g_d);
    dc_tu_rmrf(g_dir);
    return done_testing();
  }
  rd_kafka_mock_topic_create(mcl, TOPIC, NPART, 1);
  if (!ok(!tlsproxy_start_kafka(&g_data, atoi(colon + 1), certf("server.pem"),
                                certf("server.key"), certf("ca.pem"), true,
                                err, sizeof(err)),
          "TLS proxy in front of the mock broker"))
    diag("%s", err);
  else {
    test_not_watching();
    if (start_clients()) {
      test_rotation();
      test_stuck_mismatch();
      test_missing();
      test_garbage();
      test_ca_rotation();
      test_no_loss();
      test_abandoned_handshake();
    }
    dynconf_consumer_destroy(W.c);
    dynconf_producer_destroy(W.p);
    dynconf_destroy(W.pdc);
    dynconf_destroy(W.cdc);
    tlsproxy_stop(&g_data);
  }
  if (g_cfg_proxied)
    tlsproxy_stop(&g_cfg);
  rd_kafka_mock_cluster_destroy(mcl);
  rd_kafka_destroy(mrk);
  ok(dc_tu_daemon_alive(&g_d), "dynconfd still running");
  is_int(dc_tu_daemon_stop(&g_d), 0, "dynconfd stops cleanly");
  if (tap_failed)
    dc_tu_daemon_log_tail(&g_d, 30);
  dc_tu_rmrf(g_dir);
  return done_testing();
}
