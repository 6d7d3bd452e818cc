/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /metrics' agents per rollout state (dynconfd_fleet_clients), which the
 * broker keeps as the fleet changes instead of resolving every agent on
 * each scrape, against a full recount at every step, through
 * dc_broker_handle() with no sockets. At each step the counts scraped
 * (dc_broker_metrics' text) equal both the states a DescribeFleet v0 of
 * the whole fleet lists and each agent's state judged afresh (its
 * configuration resolved without a memo):
 *   - reports: applied, applied partly, rejected, restart needed (of the
 *     version that resolves now, and of another), of another version, of
 *     version -1;
 *   - alters of <default>, of one client-id, of a user, of a user's
 *     client-id, and an override deleted; configuration changes no
 *     request made (an entity replaced, as a store apply does, and one
 *     changed in place, as loading the store does);
 *   - an agent moving to another client-id, a connection reporting as
 *     another instance, an instance back on a new connection, connections
 *     closing, a refused report of another principal's instance id;
 *   - gone agents past fleet.retention.ms, and gone ones dropped to make
 *     room (fleet.max.bytes);
 *   - the work: a scrape with nothing changed judges no agent, a report
 *     judges its own, the first scrape after an alter judges each
 *     connected agent once; with 20,000 agents of distinct client-ids,
 *     the first scrape after their reports judges none.
 */
#include "broker/core/broker_int.h"
#include "broker/rollout/fleet.h"
#include "broker/core/broker.h"
#include "codec/proto.h"
#include "common/clock.h"
#include "../../bench/inproc.h"
#include "../tap.h"
#include "../testutil.h"

static dc_inproc_t g_ip;

static bool start(const dc_broker_opts_t *opts) {
  char err[256] = "";
  if (!dc_inproc_start(&g_ip, opts, err, sizeof(err)))
    diag("dc_broker_new: %s", err);
  return g_ip.b != NULL;
}

/* A report; the error code (-1: no answer). */
static int report(dc_inproc_peer_t *p, const char *inst, const char *client,
                  int8_t outcome, int64_t version) {
  dc_client_report_req_t q = {(char *)client, (char *)inst, "producer",
                              "dynconf-agent", "1.0", "librdkafka/2.0.2",
                              version, 1, outcome, NULL};
  dc_rd_t rd;
  dc_client_report_resp_t resp;
  if (dc_inproc_call(&g_ip, p, DC_API_CLIENT_REPORT, 0, dc_inproc_enc_report,
                     &q, &rd) != DC_HANDLE_OK ||
      dc_client_report_resp_decode(&rd, 0, &resp))
    return -1;
  return resp.error_code;
}

/* IncrementalAlterConfigs v1 of one key (value NULL: deleted); its
 * error code (-1: no answer). */
static int alter(int8_t type, const char *name, const char *key,
                 const char *value) {
  dc_inproc_peer_t admin;
  dc_inproc_peer_init(&admin, NULL);
  dc_alter_config_t c = {(char *)key, value ? DC_OP_SET : DC_OP_DELETE,
                         (char *)value};
  dc_alter_resource_t res = {type, (char *)name, 1, &c};
  dc_alter_configs_req_t q = {1, &res, false};
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  if (dc_inproc_call(&g_ip, &admin, DC_API_INCREMENTAL_ALTER_CONFIGS, 1,
                     dc_inproc_enc_alter, &q, &rd) != DC_HANDLE_OK ||
      dc_incremental_alter_configs_resp_decode(&rd, 1, &resp) ||
      resp.n_responses != 1)
    return -1;
  return resp.responses[0].error_code;
}

/* The version that resolves for client and principal now. */
static int64_t current(const char *client, const char *principal) {
  return dc_broker_config_version(g_ip.b, client, principal);
}

/* ---- the counts, fast and recounted ------------------------------------- */

#define N_ST DC_FLEET_N_STATES
static const char *const g_states[N_ST] = {"up_to_date", "behind", "rejected",
                                           "silent", "restart_needed"};

/* dynconfd_fleet_clients as a scrape of /metrics reads it; false when a
 * state is missing. */
static bool scraped(uint64_t n[N_ST]) {
  dc_buf_t text;
  dc_buf_init(&text);
  dc_broker_metrics(g_ip.b, &text);
  dc_buf_append(&text, "", 1);
  int found = 0;
  for (int i = 0; i < N_ST; i++) {
    char line[96];
    snprintf(line, sizeof(line), "\ndynconfd_fleet_clients{state=\"%s\"} ",
             g_states[i]);
    const char *at = text.err ? NULL : strstr((char *)text.data, line);
    if (at) {
      n[i] = strtoull(at + strlen(line), NULL, 10);
      found++;
    }
  }
  dc_buf_free(&text);
  return found == N_ST;
}

/* Every entry judged afresh, each configuration resolved on its own. */
static void recounted(uint64_t n[N_ST]) {
  memset(n, 0, N_ST * sizeof(*n));
  for (dc_avl_node_t *a = dc_avl_first(&g_ip.b->fleet->by_client); a;
       a = dc_avl_next(a)) {
    const dc_fleet_entry_t *e = dc_fleet_entry_of(a, false);
    n[dc_fleet_state(e, current(e->client_id, e->principal))]++;
  }
}

/* The states a DescribeFleet v0 of the whole fleet lists; false when it
 * is not answered. */
static bool listed(uint64_t n[N_ST]) {
  dc_inproc_peer_t admin;
  dc_inproc_peer_init(&admin, NULL);
  dc_describe_fleet_req_t q = {0};
  dc_rd_t rd;
  dc_describe_fleet_resp_t r;
  memset(n, 0, N_ST * sizeof(*n));
  if (dc_inproc_call(&g_ip, &admin, DC_API_DESCRIBE_FLEET, 0,
                     dc_inproc_enc_fleet, &q, &rd) != DC_HANDLE_OK ||
      dc_describe_fleet_resp_decode(&rd, 0, &r) || r.error_code)
    return false;
  for (int32_t i = 0; i < r.n_clients; i++)
    if (r.clients[i].state >= 0 && r.clients[i].state < N_ST)
      n[r.clients[i].state]++;
  return true;
}

/* The scraped counts equal both recounts (and want, when given). */
static bool check(const uint64_t *want, const char *what) {
  uint64_t s[N_ST] = {0}, r[N_ST], l[N_ST];
  bool got = scraped(s);
  recounted(r);
  bool answered = listed(l);
  bool same = got && answered && !memcmp(s, r, sizeof(s)) &&
              !memcmp(s, l, sizeof(s)) &&
              (!want || !memcmp(s, want, sizeof(s)));
  ok(same, "%s: scraped up_to_date %llu, behind %llu, rejected %llu, "
     "silent %llu, restart_needed %llu, as recounted", what,
     (unsigned long long)s[0], (unsigned long long)s[1],
     (unsigned long long)s[2], (unsigned long long)s[3],
     (unsigned long long)s[4]);
  if (!same)
    diag("  recounted %llu %llu %llu %llu %llu; listed %llu %llu %llu %llu "
         "%llu", (unsigned long long)r[0], (unsigned long long)r[1],
         (unsigned long long)r[2], (unsigned long long)r[3],
         (unsigned long long)r[4], (unsigned long long)l[0],
         (unsigned long long)l[1], (unsigned long long)l[2],
         (unsigned long long)l[3], (unsigned long long)l[4]);
  return same;
}

/* ---- a fleet through its changes ----------------------------------------- */

#define N_AGENTS 40

static dc_inproc_peer_t g_p[N_AGENTS];
static char g_inst[N_AGENTS][32], g_client[N_AGENTS][32];
static const char *const g_who[3] = {NULL, "User:alice", "User:bob"};

/* Agent i's principal, client-id (every fourth its own, the others two
 * shared) and instance id. */
static void agents_init(void) {
  for (int i = 0; i < N_AGENTS; i++) {
    dc_inproc_peer_init(&g_p[i], g_who[i % 3]);
    snprintf(g_inst[i], sizeof(g_inst[i]), "inst-%02d", i);
    if (i % 4 == 0)
      snprintf(g_client[i], sizeof(g_client[i]), "solo-%02d", i);
    else
      snprintf(g_client[i], sizeof(g_client[i]), "shared-%d", i % 2);
  }
}

/* Agent i reports with one of six outcomes (by i + shift): applied,
 * of another version, applied partly, version -1, rejected, restart
 * needed. */
static int report_agent(int i, int shift) {
  static const int8_t outcome[6] = {DC_OUTCOME_APPLIED, DC_OUTCOME_APPLIED,
                                    DC_OUTCOME_PARTLY,  DC_OUTCOME_APPLIED,
                                    DC_OUTCOME_REJECTED, DC_OUTCOME_RESTART};
  int k = (i + shift) % 6;
  int64_t now = current(g_client[i], g_p[i].conn.principal);
  int64_t version = k == 1 ? 12345 : k == 3 ? -1 : now;
  return report(&g_p[i], g_inst[i], g_client[i], outcome[k], version);
}

/* solo-00's agent reports the version that resolves now; the counts
 * then. */
static void solo_up(uint64_t was[N_ST]) {
  is_int(report(&g_p[0], g_inst[0], g_client[0], DC_OUTCOME_APPLIED,
                current(g_client[0], NULL)), 0, "solo-00's agent up to date");
  scraped(was);
}

/* After a change of solo-00 (rc 0) no request made: its agent behind. */
static void solo_behind(uint64_t was[N_ST], int rc, const char *what) {
  ok(!rc, "%s", what);
  was[DC_FLEET_UP_TO_DATE]--;
  was[DC_FLEET_BEHIND]++;
  check(was, "  solo-00's agent behind");
}

/* solo-00's agent, up to date, reports "restart needed": of the version
 * that resolves now it counts in restart_needed, of another as behind. */
static void test_restart(void) {
  uint64_t was[N_ST];
  solo_up(was);
  is_int(report(&g_p[0], g_inst[0], g_client[0], DC_OUTCOME_RESTART,
                current(g_client[0], NULL)), 0,
         "solo-00's agent needs a restart for the version now");
  was[DC_FLEET_UP_TO_DATE]--;
  was[DC_FLEET_RESTART]++;
  check(was, "  counted in restart_needed");
  is_int(report(&g_p[0], g_inst[0], g_client[0], DC_OUTCOME_RESTART, 12345),
         0, "  then for another version");
  was[DC_FLEET_RESTART]--;
  was[DC_FLEET_BEHIND]++;
  check(was, "  counted behind");
}

static void test_reports_and_alters(void) {
  uint64_t none[N_ST] = {0};
  check(none, "no agents");
  int refused = 0;
  for (int i = 0; i < N_AGENTS; i++)
    refused += report_agent(i, 0) != 0;
  is_int(refused, 0, "%d agents report", N_AGENTS);
  uint64_t first[N_ST] = {21, 7, 6, 0, 6};
  check(first, "  every outcome");
  is_int(alter(DC_RES_CLIENT, "<default>", "acks", "0"), 0, "alter <default>");
  uint64_t moved[N_ST] = {0, N_AGENTS, 0, 0, 0}; /* rejected ones too */
  check(moved, "  all behind");
  for (int i = 0; i < N_AGENTS; i += 2)
    refused += report_agent(i, 1) != 0;
  ok(!refused, "every other agent reports again");
  check(NULL, "  as recounted");
  is_int(alter(DC_RES_CLIENT, "shared-1", "linger.ms", "5"), 0,
         "alter one client-id");
  check(NULL, "  as recounted");
  is_int(alter(DC_RES_USER, "alice", "acks", "1"), 0, "alter user alice");
  check(NULL, "  as recounted");
  is_int(alter(DC_RES_USER, "bob/shared-0", "acks", "all"), 0,
         "alter bob's shared-0");
  check(NULL, "  as recounted");
  for (int i = 0; i < N_AGENTS; i++)
    refused += report_agent(i, 3) != 0;
  ok(!refused, "all report again");
  check(NULL, "  as recounted");
}

/* Changes of the configdb no request made: none tells the fleet. */
static void test_silent_changes(void) {
  const char *k[] = {"acks"}, *v[] = {"1"};
  uint64_t was[N_ST];
  solo_up(was);
  solo_behind(was, dc_configdb_replace(g_ip.b->db, DC_RES_CLIENT, "solo-00", 1,
                                       k, v),
              "a change no request made (as a store apply makes one)");
  solo_up(was);
  solo_behind(was, dc_configdb_set(g_ip.b->db, DC_RES_CLIENT, "solo-00", "acks",
                                   "0"),
              "an entity changed in place (as loading the store does)");
  is_int(alter(DC_RES_CLIENT, "<default>", "acks", NULL), 0,
         "<default>'s only override deleted");
  check(NULL, "  as recounted");
}

static void test_moves(void) {
  int64_t now = current("moved", "User:alice");
  is_int(report(&g_p[1], g_inst[1], "moved", DC_OUTCOME_APPLIED, now), 0,
         "an agent moves to another client-id");
  check(NULL, "  as recounted");
  now = current(g_client[2], "User:bob");
  is_int(report(&g_p[2], "other-02", g_client[2], DC_OUTCOME_APPLIED, now), 0,
         "a connection reports as another instance");
  check(NULL, "  the one before is silent");
  dc_inproc_peer_t back;
  dc_inproc_peer_init(&back, g_p[3].conn.principal);
  is_int(report(&back, g_inst[3], g_client[3], DC_OUTCOME_REJECTED,
                current(g_client[3], NULL)), 0,
         "an instance is back on a new connection");
  dc_inproc_peer_close(&g_ip, &g_p[3]);
  check(NULL, "  the old one's close leaves it connected");
  dc_inproc_peer_t mallory;
  dc_inproc_peer_init(&mallory, "User:bob");
  is_int(report(&mallory, g_inst[4], g_client[4], DC_OUTCOME_APPLIED, -1),
         DC_ERR_CLUSTER_AUTHORIZATION_FAILED,
         "bob's report of alice's instance id is refused");
  check(NULL, "  nothing moved");
  for (int i = 5; i < 15; i++)
    dc_inproc_peer_close(&g_ip, &g_p[i]);
  check(NULL, "ten connections close");
  dc_inproc_peer_close(&g_ip, &back);
  dc_inproc_peer_close(&g_ip, &mallory);
}

/* The judging work: none on a scrape without a change. */
static void test_work(void) {
  uint64_t n[N_ST];
  scraped(n);
  uint64_t before = g_ip.b->fleet->judged;
  scraped(n);
  scraped(n);
  is_int(g_ip.b->fleet->judged - before, 0, "two scrapes, nothing changed: no "
         "agent judged");
  report_agent(20, 0);
  scraped(n);
  is_int(g_ip.b->fleet->judged - before, 1,
         "  a report judges its agent alone");
  size_t live = 0;
  for (int i = 0; i < N_AGENTS; i++)
    live += g_p[i].fleet && dc_fleet_live(g_p[i].fleet);
  alter(DC_RES_CLIENT, "<default>", "linger.ms", "7");
  before = g_ip.b->fleet->judged;
  scraped(n);
  scraped(n);
  is_int(g_ip.b->fleet->judged - before, live, "  after an alter, two scrapes "
         "judge each of the %zu connected agents once", live);
  for (int i = 0; i < N_AGENTS; i++)
    dc_inproc_peer_close(&g_ip, &g_p[i]);
  uint64_t all_silent[N_ST] = {0, 0, 0, g_ip.b->fleet->n, 0};
  check(all_silent, "all connections closed");
}

static void test_fleet(void) {
  if (!ok(start(NULL), "a broker"))
    return;
  agents_init();
  test_reports_and_alters();
  test_restart();
  test_silent_changes();
  test_moves();
  test_work();
  dc_inproc_stop(&g_ip);
}

/* ---- entries leaving: retention and room -------------------------------- */

static void test_retention(void) {
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.fleet_retention_ms = 100;
  if (!ok(start(&o), "a broker with fleet.retention.ms 100"))
    return;
  agents_init();
  for (int i = 0; i < 10; i++)
    report_agent(i, 0);
  for (int i = 0; i < 6; i++)
    dc_inproc_peer_close(&g_ip, &g_p[i]);
  int64_t closed = dc_wall_ms();
  check(NULL, "10 agents, 6 gone within the retention");
  while (dc_wall_ms() <= closed + 100)
    dc_tu_sleep_ms(10);
  uint64_t n[N_ST];
  scraped(n);
  is_int(g_ip.b->fleet->n, 4, "  past it, the scrape drops the 6");
  check(NULL, "  and they leave the counts");
  for (int i = 6; i < 10; i++)
    dc_inproc_peer_close(&g_ip, &g_p[i]);
  dc_inproc_stop(&g_ip);
}

static void test_room(void) {
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.fleet_max_bytes = 12000;
  if (!ok(start(&o), "a broker with fleet.max.bytes 12000"))
    return;
  agents_init();
  int refused = 0;
  for (int i = 0; i < N_AGENTS; i++) {
    refused += report_agent(i, 0) != 0;
    if (i % 3) /* a third stay connected */
      dc_inproc_peer_close(&g_ip, &g_p[i]);
  }
  ok(!refused && g_ip.b->fleet->n < N_AGENTS,
     "%d agents, two thirds gone: %zu kept, gone ones dropped for room",
     N_AGENTS, g_ip.b->fleet->n);
  check(NULL, "  the dropped leave the counts");
  for (int i = 0; i < N_AGENTS; i++)
    dc_inproc_peer_close(&g_ip, &g_p[i]);
  dc_inproc_stop(&g_ip);
}

/* ---- many agents ------------------------------------------------------- */

#define N_MANY 20000

/* Agents of distinct client-ids, each on its own connection: a scrape
 * judges none of them until the configuration changes. */
static void test_many(void) {
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.max_response_size = 64u << 20; /* the v0 listing of them all */
  if (!ok(start(&o), "a broker"))
    return;
  dc_inproc_peer_t *p = calloc(N_MANY, sizeof(*p));
  int refused = 0;
  for (int i = 0; p && i < N_MANY; i++) {
    char inst[32], client[32];
    snprintf(inst, sizeof(inst), "many-%05d", i);
    snprintf(client, sizeof(client), "app-%05d", i);
    dc_inproc_peer_init(&p[i], NULL);
    refused += report(&p[i], inst, client, DC_OUTCOME_APPLIED,
                      i % 2 ? current(client, NULL) : 1) != 0;
  }
  ok(p && !refused, "%d agents of distinct client-ids report", N_MANY);
  uint64_t half[N_ST] = {N_MANY / 2, N_MANY / 2, 0, 0, 0}, n[N_ST];
  uint64_t before = g_ip.b->fleet->judged;
  int64_t t0 = dc_mono_us();
  scraped(n);
  int64_t took = dc_mono_us() - t0;
  is_int(g_ip.b->fleet->judged - before, 0, "  the first scrape judges none of "
         "them");
  diag("  (it took %lld us)", (long long)took);
  check(half, "  half up to date, half behind");
  is_int(alter(DC_RES_CLIENT, "<default>", "acks", "0"), 0,
         "  alter <default>");
  t0 = dc_mono_us();
  scraped(n);
  diag("  (the first scrape after it judged %llu of them in %lld us)",
       (unsigned long long)(g_ip.b->fleet->judged - before),
       (long long)(dc_mono_us() - t0));
  uint64_t behind[N_ST] = {0, N_MANY, 0, 0, 0};
  check(behind, "  after an alter of <default>, all behind");
  for (int i = 0; p && i < N_MANY; i++)
    dc_inproc_peer_close(&g_ip, &p[i]);
  free(p);
  dc_inproc_stop(&g_ip);
}

int main(void) {
  dc_inproc_init(&g_ip, "fleet-metrics-test");
  test_fleet();
  test_retention();
  test_room();
  test_many();
  dc_inproc_free(&g_ip);
  return done_testing();
}
