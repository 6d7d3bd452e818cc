/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the fleet view's work and memory are bounded by, through
 * dc_broker_handle() with no sockets, counted with the broker's fleet
 * counters (dc_broker_fleet_stats):
 *   - instance ids chosen so their unseeded FNV-1a hashes share the low
 *     20 bits (one bucket of any table up to 2^20) spread over the keyed
 *     hash: short chains, few probes per lookup;
 *   - a DescribeFleet v1 page looks at the entries it lists and one more
 *     (after a cursor, of one client-id, of one user), not the fleet;
 *     pages walked one after another list the fleet once, in order; under
 *     an ACL, client-ids the caller may not see cost a seek each;
 *   - a v0 listing past max.response.bytes is refused before an entry is
 *     looked at or a listing allocated;
 *   - parked DescribeFleet: per principal and in total, more are refused
 *     (POLICY_VIOLATION, naming the setting); the waiters a report wakes
 *     are answered from one listing per distinct request;
 *   - an instance id belongs to the principal that first reported it: a
 *     report of it by another is refused (CLUSTER_AUTHORIZATION_FAILED,
 *     saying why), the entry unchanged; once the owner's entry has left
 *     (fleet.retention.ms), the id is free;
 *   - fleet.max.bytes: the entries hold no more; gone ones make room,
 *     longest gone first; when all are connected, a report that needs
 *     room is refused naming the setting, its entry unchanged.
 */
#include "../../bench/fnv_collide.h"
#include "broker/core/broker_int.h"
#include "codec/proto.h"
#include "common/clock.h"
#include "../../bench/inproc.h"
#include "../tap.h"
#include "../testutil.h"

#include <limits.h>

static dc_inproc_t g_ip;

static bool start(const dc_broker_opts_t *opts) {
  char err[256] = "";
  if (!dc_inproc_start(&g_ip, opts, err, sizeof(err)))
    diag("dc_broker_new: %s", err);
  return g_ip.b != NULL;
}

static char g_msg[512];

/* A report of inst for client by p; the error code (-1: no answer). */
static int report_full(dc_inproc_peer_t *p, const char *inst,
                       const char *client, const char *kind,
                       const char *soft, const char *reason) {
  dc_client_report_req_t q = {(char *)client, (char *)inst, (char *)kind,
                              (char *)soft,   (char *)soft, (char *)soft,
                              1,              1,            DC_OUTCOME_APPLIED,
                              (char *)reason};
  dc_rd_t rd;
  dc_client_report_resp_t resp;
  g_msg[0] = '\0';
  if (dc_inproc_call(&g_ip, p, DC_API_CLIENT_REPORT, 0, dc_inproc_enc_report,
                     &q, &rd) != DC_HANDLE_OK ||
      dc_client_report_resp_decode(&rd, 0, &resp))
    return -1;
  snprintf(g_msg, sizeof(g_msg), "%s",
           resp.error_message ? resp.error_message : "");
  return resp.error_code;
}

static int report(dc_inproc_peer_t *p, const char *inst, const char *client,
                  const char *reason) {
  return report_full(p, inst, client, "producer", "x", reason);
}

/* DescribeFleet of version v: DC_HANDLE_*, the answer in *resp (g_ip's
 * resp arena). */
static int fleet(dc_inproc_peer_t *p, int16_t v,
                 const dc_describe_fleet_req_t *q,
                 dc_describe_fleet_resp_t *resp) {
  dc_rd_t rd;
  int rc = dc_inproc_call(&g_ip, p, DC_API_DESCRIBE_FLEET, v,
                          dc_inproc_enc_fleet, q, &rd);
  if (rc == DC_HANDLE_OK && dc_describe_fleet_resp_decode(&rd, v, resp))
    return -1;
  return rc;
}

/* A v1 page of max after (ac, ai), of client and user (nullable all). */
static bool page(dc_inproc_peer_t *p, const char *client, const char *user,
                 const char *ac, const char *ai, int32_t max,
                 dc_describe_fleet_resp_t *resp) {
  dc_describe_fleet_req_t q = {(char *)client, (char *)user, -1, 0,
                               (char *)ac,     (char *)ai,   max};
  return fleet(p, 1, &q, resp) == DC_HANDLE_OK && !resp->error_code;
}

static dc_fleet_stats_t stats(void) {
  dc_fleet_stats_t s;
  dc_broker_fleet_stats(g_ip.b, &s);
  return s;
}

/* ---- finding: colliding instance ids ------------------------------------ */

#define N_COLLIDE 3000

static void test_hash(void) {
  if (!ok(start(NULL), "a broker"))
    return;
  static char ids[N_COLLIDE][32];
  int apart = 0, refused = 0;
  for (unsigned i = 0; i < N_COLLIDE; i++) {
    fnv_collide(i, ids[i], sizeof(ids[i]));
    apart += (fnv1a(ids[i]) & FNV_MASK) != fnv_target();
  }
  is_int(apart, 0, "%d instance ids whose FNV-1a hashes end in the same 20 "
         "bits", N_COLLIDE);
  dc_inproc_peer_t a;
  dc_inproc_peer_init(&a, "User:agent");
  for (int i = 0; i < N_COLLIDE; i++)
    refused += report(&a, ids[i], "hash-app", NULL) != 0;
  is_int(refused, 0, "  all reported");
  dc_fleet_stats_t s = stats();
  ok(s.entries == N_COLLIDE && s.longest_chain <= 12,
     "  the longest hash chain holds %zu of them (12 at most)",
     s.longest_chain);
  uint64_t probes = s.probes;
  for (int i = 0; i < N_COLLIDE; i++)
    refused += report(&a, ids[i], "hash-app", "again") != 0;
  s = stats();
  double per = (double)(s.probes - probes) / N_COLLIDE;
  ok(!refused && per <= 3, "  reported again: %.2f entries compared per "
     "lookup (3 at most)", per);
  dc_inproc_peer_close(&g_ip, &a);
  dc_inproc_stop(&g_ip);
}

/* ---- finding: pages cost the page --------------------------------------- */

#define N_FLEET 5000
static const char *const g_users[] = {"User:u0", "User:u1", "User:u2",
                                      "User:u3", "User:u4"};

/* N_FLEET instances i-NNNNN of 100 client-ids app-NNN (i % 100), five
 * users (i % 5), each reported on its user's connection. */
static int fill_fleet(dc_inproc_peer_t *peers) {
  int refused = 0;
  for (int i = 0; i < N_FLEET; i++) {
    char inst[16], client[16];
    snprintf(inst, sizeof(inst), "i-%05d", i);
    snprintf(client, sizeof(client), "app-%03d", i % 100);
    refused += report(&peers[i % 5], inst, client, NULL) != 0;
  }
  return refused;
}

/* The page's clients are exactly "client/instance" want[n], in order. */
static bool listed(const dc_describe_fleet_resp_t *r, const char *const *want,
                   int n) {
  bool same = r->n_clients == n;
  for (int i = 0; same && i < n; i++) {
    char k[80];
    snprintf(k, sizeof(k), "%s/%s", r->clients[i].client_id,
             r->clients[i].instance_id);
    same = !strcmp(k, want[i]);
  }
  return same;
}

static uint64_t g_examined;
/* Entries looked at since the last call. */
static uint64_t examined(void) {
  uint64_t now = stats().examined, d = now - g_examined;
  g_examined = now;
  return d;
}

/* Every page of max after the one before, as p sees them: how many
 * clients in all, whether in order and once each, into *n, *sorted. */
static int walk(dc_inproc_peer_t *p, int32_t max, int *n, bool *sorted) {
  dc_describe_fleet_resp_t r;
  char ac[80] = "", ai[80] = "", prev[160] = "";
  int pages = 0;
  *n = 0;
  *sorted = true;
  do {
    if (!page(p, NULL, NULL, pages ? ac : NULL, pages ? ai : NULL, max, &r))
      return -1;
    for (int32_t i = 0; i < r.n_clients; i++) {
      char k[160];
      snprintf(k, sizeof(k), "%s\t%s", r.clients[i].client_id,
               r.clients[i].instance_id);
      *sorted &= strcmp(prev, k) < 0;
      snprintf(prev, sizeof(prev), "%s", k);
    }
    *n += r.n_clients;
    if (r.n_clients) {
      snprintf(ac, sizeof(ac), "%s", r.clients[r.n_clients - 1].client_id);
      snprintf(ai, sizeof(ai), "%s", r.clients[r.n_clients - 1].instance_id);
    }
    pages++;
  } while (r.more && r.n_clients);
  return pages;
}

static void pages_open(dc_inproc_peer_t *v) {
  dc_describe_fleet_resp_t r;
  examined();
  bool got = page(v, NULL, NULL, "app-050", "i-00050", 1, &r);
  uint64_t ex = examined();
  ok(got && listed(&r, (const char *[]){"app-050/i-00150"}, 1) && r.more,
     "a page of 1 after app-050/i-00050: the next one, more follow");
  ok(ex <= 3, "  %llu entries looked at, of %d (twice the page and one at "
     "most)", (unsigned long long)ex, N_FLEET);
  got = page(v, "app-007", NULL, NULL, NULL, 3, &r);
  ex = examined();
  ok(got && r.more && listed(&r, (const char *[]){"app-007/i-00007",
                               "app-007/i-00107", "app-007/i-00207"}, 3),
     "client-id app-007, a page of 3: its first three");
  ok(ex <= 7, "  %llu entries looked at (7 at most)", (unsigned long long)ex);
  got = page(v, NULL, "u3", "app-013", "i-00013", 2, &r);
  ex = examined();
  ok(got && r.more && listed(&r, (const char *[]){"app-013/i-00113",
                               "app-013/i-00213"}, 2),
     "user u3 after app-013/i-00013, a page of 2: the next two");
  ok(ex <= 5, "  %llu entries looked at (5 at most)", (unsigned long long)ex);
  int n = 0;
  bool sorted = false;
  int pages = walk(v, 700, &n, &sorted);
  ex = examined();
  ok(pages == 8 && n == N_FLEET && sorted,
     "pages of 700 one after another: all %d, in order, once each (%d "
     "pages)", n, pages);
  ok(ex <= 2 * (N_FLEET + (uint64_t)pages),
     "  %llu entries looked at in all (twice the fleet at most: a page is "
     "measured, then filled)", (unsigned long long)ex);
}

/* An ACL lets viewer see app-09* only. */
static void pages_acl(void) {
  dc_inproc_peer_t v;
  dc_inproc_peer_init(&v, "User:viewer");
  dc_describe_fleet_resp_t r;
  examined();
  bool got = page(&v, NULL, NULL, NULL, NULL, 3, &r);
  uint64_t ex = examined();
  ok(got && r.more && listed(&r, (const char *[]){"app-090/i-00090",
                               "app-090/i-00190", "app-090/i-00290"}, 3),
     "under an ACL allowing app-09*: the first page starts at app-090");
  ok(ex <= 100, "  %llu entries looked at: one per client-id passed (100 "
     "at most)", (unsigned long long)ex);
  int n = 0;
  bool sorted = false;
  int pages = walk(&v, 64, &n, &sorted);
  ok(pages > 0 && n == 500 && sorted,
     "  its pages list the 500 of app-09*, in order (%d pages)", pages);
}

static void test_pages(void) {
  char dir[PATH_MAX - 64], acl[PATH_MAX];
  if (dc_tu_tmpdir(dir, sizeof(dir)))
    return;
  dc_tu_put_file(dir, "acl", "allow User:u0 describe client:*\n"
                             "allow User:u1 describe client:*\n"
                             "allow User:u2 describe client:*\n"
                             "allow User:u3 describe client:*\n"
                             "allow User:u4 describe client:*\n"
                             "allow User:viewer describe client:app-09*\n",
                 acl, sizeof(acl));
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.acl_path = acl;
  o.super_users = "User:admin";
  dc_inproc_peer_t peers[5], admin;
  for (int i = 0; i < 5; i++)
    dc_inproc_peer_init(&peers[i], g_users[i]);
  dc_inproc_peer_init(&admin, "User:admin");
  if (ok(start(&o), "a broker with an ACL") &&
      ok(!fill_fleet(peers), "%d instances of 100 client-ids, 5 users",
         N_FLEET)) {
    pages_open(&admin);
    pages_acl();
  }
  for (int i = 0; i < 5; i++)
    dc_inproc_peer_close(&g_ip, &peers[i]);
  if (g_ip.b)
    dc_inproc_stop(&g_ip);
  dc_tu_rmrf(dir);
}

/* ---- finding: v0 past max.response.bytes ---------------------------------- */

static void test_v0(void) {
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.max_response_size = 65536;
  dc_inproc_peer_t peers[5];
  for (int i = 0; i < 5; i++)
    dc_inproc_peer_init(&peers[i], g_users[i]);
  if (!ok(start(&o), "a broker with max.response.bytes 65536") ||
      !ok(!fill_fleet(peers), "%d instances", N_FLEET)) {
    if (g_ip.b)
      dc_inproc_stop(&g_ip);
    return;
  }
  dc_describe_fleet_req_t q = {.since_seq = -1};
  dc_describe_fleet_resp_t r;
  examined();
  int rc = fleet(&peers[0], 0, &q, &r);
  uint64_t ex = examined();
  ok(rc == DC_HANDLE_OK && r.error_code == DC_ERR_INVALID_REQUEST &&
         strstr(r.error_message, "the 5000 clients would take the answer "
                                 "past 65536 bytes (max.response.bytes)"),
     "v0, all of them: refused, saying why (%s)",
     r.error_message ? r.error_message : "");
  ok(ex == 0 && g_ip.scratch_used < 4096,
     "  before an entry was looked at (%llu) or a listing allocated (%zu "
     "bytes of scratch)", (unsigned long long)ex, g_ip.scratch_used);
  q.client_id = "app-042";
  rc = fleet(&peers[0], 0, &q, &r);
  ok(rc == DC_HANDLE_OK && !r.error_code && r.n_clients == 50 &&
         !strcmp(r.clients[0].instance_id, "i-00042"),
     "v0 of client-id app-042: its 50, answered");
  for (int i = 0; i < 5; i++)
    dc_inproc_peer_close(&g_ip, &peers[i]);
  dc_inproc_stop(&g_ip);
}

/* ---- finding: parked DescribeFleet ------------------------------------ */

static int g_answered;
static void on_answer(void *opaque, void *token, const uint8_t *frame,
                      size_t len) {
  (void)opaque;
  dc_inproc_peer_t *p = token;
  p->pending = NULL;
  p->answers++;
  g_answered += frame && len > 8;
}

/* Parks a DescribeFleet of p at seq (client-id filter nullable): its
 * DC_HANDLE_*; an answer's error code into *code. */
static int park(dc_inproc_peer_t *p, int64_t seq, const char *client,
                int16_t *code) {
  dc_describe_fleet_req_t q = {(char *)client, NULL, seq, 60000, NULL, NULL, 0};
  dc_describe_fleet_resp_t r;
  int rc = fleet(p, 1, &q, &r);
  *code = rc == DC_HANDLE_OK ? r.error_code : 0;
  g_msg[0] = '\0';
  if (rc == DC_HANDLE_OK && r.error_message)
    snprintf(g_msg, sizeof(g_msg), "%s", r.error_message);
  return rc;
}

static void waits_capped(dc_inproc_peer_t *w, int64_t seq) {
  int16_t code = 0;
  int parked = 0;
  parked += park(&w[0], seq, NULL, &code) == DC_HANDLE_DEFER;
  parked += park(&w[1], seq, NULL, &code) == DC_HANDLE_DEFER;
  ok(parked == 2 && park(&w[2], seq, NULL, &code) == DC_HANDLE_OK &&
         code == DC_ERR_POLICY_VIOLATION &&
         strstr(g_msg, "fleet.max.waits.per.principal"),
     "User:ops parks 2; a third is refused, naming "
     "fleet.max.waits.per.principal (%s)", g_msg);
  parked += park(&w[3], seq, "app-x", &code) == DC_HANDLE_DEFER;
  parked += park(&w[4], seq, "app-x", &code) == DC_HANDLE_DEFER;
  parked += park(&w[5], seq, NULL, &code) == DC_HANDLE_DEFER;
  ok(parked == 5 && park(&w[6], seq, NULL, &code) == DC_HANDLE_OK &&
         code == DC_ERR_POLICY_VIOLATION && strstr(g_msg, "fleet.max.waits"),
     "User:dev parks 2, ANONYMOUS 1: 5 in all; a sixth is refused, naming "
     "fleet.max.waits (%s)", g_msg);
  is_int((int)stats().waits, 5, "  5 parked");
}

static void test_waits(void) {
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.fleet_max_waits = 5;
  o.fleet_max_waits_per_principal = 2;
  if (!ok(start(&o), "a broker parking at most 5, 2 per principal"))
    return;
  dc_inproc_peer_t agent, w[7];
  dc_inproc_peer_init(&agent, "User:agent");
  const char *who[] = {"User:ops", "User:ops", "User:ops", "User:dev",
                       "User:dev", NULL, NULL};
  for (int i = 0; i < 7; i++)
    dc_inproc_peer_init(&w[i], who[i]);
  report(&agent, "a-1", "app-x", NULL);
  dc_describe_fleet_resp_t r;
  int64_t seq = page(&agent, NULL, NULL, NULL, NULL, 0, &r) ? r.fleet_seq : -1;
  waits_capped(w, seq);
  uint64_t listings = stats().listings;
  g_answered = 0;
  is_int(report(&agent, "a-2", "app-x", NULL), 0, "a report moves the fleet");
  dc_broker_answers(g_ip.b, on_answer, NULL);
  is_int(g_answered, 5, "  all 5 parked requests are answered");
  ok(stats().listings - listings == 2,
     "  from 2 listings: one per distinct request, not one per waiter "
     "(%llu)", (unsigned long long)(stats().listings - listings));
  int16_t code = 0;
  ok(!stats().waits && park(&w[2], seq + 1000, NULL, &code) == DC_HANDLE_OK &&
         !code,
     "  none parked now: a request at another seq is answered at once");
  int64_t now = page(&agent, NULL, NULL, NULL, NULL, 0, &r) ? r.fleet_seq : -1;
  ok(park(&w[2], now, NULL, &code) == DC_HANDLE_DEFER,
     "  and the third of User:ops may park");
  dc_inproc_peer_close(&g_ip, &agent);
  for (int i = 0; i < 7; i++)
    dc_inproc_peer_close(&g_ip, &w[i]);
  dc_inproc_stop(&g_ip);
}

/* ---- finding: an instance id is its first principal's ------------------ */

/* The listing's entry of inst, or NULL. */
static const dc_fleet_client_t *entry(dc_inproc_peer_t *p, const char *inst,
                                      dc_describe_fleet_resp_t *r) {
  if (!page(p, NULL, NULL, NULL, NULL, 0, r))
    return NULL;
  for (int32_t i = 0; i < r->n_clients; i++)
    if (!strcmp(r->clients[i].instance_id, inst))
      return &r->clients[i];
  return NULL;
}

static void test_binding(void) {
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.fleet_retention_ms = 0;
  if (!ok(start(&o), "a broker with fleet.retention.ms 0"))
    return;
  dc_inproc_peer_t alice, alice2, mallory;
  dc_inproc_peer_init(&alice, "User:alice");
  dc_inproc_peer_init(&alice2, "User:alice");
  dc_inproc_peer_init(&mallory, "User:mallory");
  dc_describe_fleet_resp_t r;
  is_int(report(&alice, "inst-A", "app-a", "fine"), 0, "alice reports inst-A");
  int rc = report(&mallory, "inst-A", "app-m", "rejected: pwned");
  ok(rc == DC_ERR_CLUSTER_AUTHORIZATION_FAILED &&
         strstr(g_msg, "instance_id 'inst-A' belongs to another principal"),
     "mallory reports inst-A: refused, saying why (%s)", g_msg);
  const dc_fleet_client_t *e = entry(&alice, "inst-A", &r);
  ok(e && !strcmp(e->principal, "User:alice") &&
         !strcmp(e->client_id, "app-a") && e->reason &&
         !strcmp(e->reason, "fine") && e->connected && r.n_clients == 1,
     "  the entry is alice's, unchanged");
  ok(!mallory.fleet, "  mallory's connection holds no entry");
  is_int(report(&alice2, "inst-A", "app-a", "moved"), 0,
         "alice reports inst-A on another connection: taken");
  dc_inproc_peer_close(&g_ip, &alice);
  dc_inproc_peer_close(&g_ip, &alice2);
  int64_t closed = dc_wall_ms();
  while (dc_wall_ms() <= closed) /* retention 0: gone past the next ms */
    ;
  is_int(report(&mallory, "inst-A", "app-m", "mine now"), 0,
         "alice's entry gone past its retention: the id is free, mallory's");
  e = entry(&mallory, "inst-A", &r);
  ok(e && !strcmp(e->principal, "User:mallory") && e->connected,
     "  the entry is mallory's");
  dc_inproc_peer_close(&g_ip, &mallory);
  dc_inproc_stop(&g_ip);
}

/* ---- finding: the fleet's memory ---------------------------------------- */

static char g_reason[2049], g_soft[129], g_kind[65], g_long[65];

static void test_bytes_gone(void) {
  char inst[80];
  dc_inproc_peer_t a;
  dc_inproc_peer_init(&a, "User:agent");
  int refused = 0;
  size_t most = 0;
  for (int i = 0; i < 300; i++) {
    snprintf(inst, sizeof(inst), "%.50s%05d", g_long, i);
    refused += report_full(&a, inst, "big-app", g_kind, g_soft, g_reason) != 0;
    most = stats().bytes > most ? stats().bytes : most;
  }
  dc_fleet_stats_t s = stats();
  ok(!refused && most <= 200000 && s.entries < 300,
     "300 largest reports, each new instance on one connection: all taken, "
     "%zu entries kept, never over 200000 bytes (%zu at most)", s.entries,
     most);
  dc_describe_fleet_resp_t r;
  snprintf(inst, sizeof(inst), "%.50s%05d", g_long, 299);
  bool last = entry(&a, inst, &r) != NULL;
  snprintf(inst, sizeof(inst), "%.50s%05d", g_long, 0);
  ok(last && !entry(&a, inst, &r),
     "  the longest gone made room: the first is dropped, the last kept");
  dc_inproc_peer_close(&g_ip, &a);
}

#define N_CONN 600

static void test_bytes_connected(void) {
  static dc_inproc_peer_t p[N_CONN];
  char inst[32];
  int taken = 0, refused = 0, other = 0;
  for (int i = 0; i < N_CONN; i++) {
    dc_inproc_peer_init(&p[i], "User:agent");
    snprintf(inst, sizeof(inst), "conn-%03d", i);
    int rc = report(&p[i], inst, "small-app", NULL);
    taken += !rc;
    refused += rc == DC_ERR_POLICY_VIOLATION && strstr(g_msg, "fleet.max.bytes");
    other += rc && rc != DC_ERR_POLICY_VIOLATION;
  }
  ok(taken > 0 && refused > 0 && !other && stats().bytes <= 200000,
     "%d connected agents: %d taken, %d refused naming fleet.max.bytes (%s)",
     N_CONN, taken, refused, g_msg);
  dc_describe_fleet_resp_t r;
  int rc = report_full(&p[0], "conn-000", "small-app", g_kind, g_soft,
                       g_reason);
  const dc_fleet_client_t *e = entry(&p[0], "conn-000", &r);
  ok(rc == DC_ERR_POLICY_VIOLATION && e && !e->reason &&
         !strcmp(e->kind, "producer"),
     "  a report that would grow a connected entry past it: refused, the "
     "entry unchanged");
  for (int i = 0; i < N_CONN; i++)
    dc_inproc_peer_close(&g_ip, &p[i]);
}

static void test_bytes(void) {
  memset(g_reason, 'r', 2048);
  memset(g_soft, 's', 128);
  memset(g_kind, 'k', 64);
  memset(g_long, 'i', 64);
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  o.fleet_max_bytes = 200000;
  if (!ok(start(&o), "a broker with fleet.max.bytes 200000"))
    return;
  test_bytes_gone();
  dc_inproc_stop(&g_ip);
  o.fleet_retention_ms = 0;
  if (!ok(start(&o), "again, fleet.retention.ms 0"))
    return;
  test_bytes_connected();
  dc_inproc_stop(&g_ip);
}

int main(void) {
  dc_inproc_init(&g_ip, "fleet-test");
  test_hash();
  test_pages();
  test_v0();
  test_waits();
  test_binding();
  test_bytes();
  dc_inproc_free(&g_ip);
  return done_testing();
}
