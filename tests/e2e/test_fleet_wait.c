/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DescribeFleet (API 20003) v1 against a real dynconfd: since_seq -1
 * answers at once; pages of max_clients, or of max.response.bytes, after
 * a (client_id, instance_id) cursor make up the listing; a request at the
 * fleet's seq parks until a report, an alter or a reporting connection's
 * close (not a Watch answer), holding back what its connection sent
 * behind it, or until its timeout (seq unchanged); other requests are
 * answered at once; a parked request's close drops it; a parked answer
 * is listed with the requester's ACLs; a gone client passing the
 * retention wakes a parked request; a report of "restart needed" wakes
 * one, the client listed in that state.
 */
#include "client/kclient.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "../tap.h"
#include "../testutil.h"

#include <limits.h>

#define MAXN 64     /* clients one page_t keeps */
#define MAX_KEYS 96 /* clients one walk_t keeps */

static char g_bs[64];

#define ENCODER(name, fn)                                                      \
  static int name(dc_buf_t *b, int16_t v, const void *q) { return fn(b, v, q); }
ENCODER(enc_fleet, dc_describe_fleet_req_encode)
ENCODER(enc_report, dc_client_report_req_encode)
ENCODER(enc_watch, dc_watch_req_encode)
ENCODER(enc_alter, dc_incremental_alter_configs_req_encode)

/* A connection whose request headers carry client_id (for the ACLs). */
static dc_kclient_t *connected_as(const char *bs, const char *client_id) {
  char err[512] = "";
  dc_kclient_t *kc = dc_kclient_new(client_id);
  if (kc && !dc_kclient_connect(kc, bs, 10000, err, sizeof(err)))
    return kc;
  diag("connect: %s", err);
  dc_kclient_destroy(kc);
  return NULL;
}

/* One v0 request on kc; the answer's body in *rd (arena a, to free). */
static bool call(dc_kclient_t *kc, int16_t api, dc_kclient_encode_fn *enc,
                 const void *q, dc_rd_t *rd, dc_arena_t *a) {
  char err[256] = "";
  dc_arena_init(a);
  if (kc && !dc_kclient_request(kc, api, 0, enc, q, 10000, rd, a, err,
                                sizeof(err)))
    return true;
  diag("request %d: %s", api, err);
  return false;
}

/* ClientReport q: the answer's error code, -1 when the request failed. */
static int send_report(dc_kclient_t *kc, const dc_client_report_req_t *q) {
  dc_arena_t a;
  dc_rd_t rd;
  dc_client_report_resp_t resp;
  int rc = call(kc, DC_API_CLIENT_REPORT, enc_report, q, &rd, &a) &&
                   !dc_client_report_resp_decode(&rd, 0, &resp)
               ? resp.error_code
               : -1;
  dc_arena_free(&a);
  return rc;
}

/* ClientReport of inst for client, applied, of version 1. soft is all
 * three software fields; reason nullable. */
static int report(dc_kclient_t *kc, const char *inst, const char *client,
                  const char *kind, const char *soft, const char *reason) {
  dc_client_report_req_t q = {
      (char *)client, (char *)inst, (char *)kind, (char *)soft, (char *)soft,
      (char *)soft,   1,            1,            DC_OUTCOME_APPLIED,
      (char *)reason};
  return send_report(kc, &q);
}

static int rep(dc_kclient_t *kc, const char *inst, const char *client) {
  return report(kc, inst, client, "producer", "x", NULL);
}

/* Sets key=val on client in one IncrementalAlterConfigs: its error code,
 * -1 when the request failed. */
static int alter(const char *client, const char *key, const char *val) {
  dc_alter_config_t op = {(char *)key, DC_OP_SET, (char *)val};
  dc_alter_resource_t res = {DC_RES_CLIENT, (char *)client, 1, &op};
  dc_alter_configs_req_t q = {.n_resources = 1, .resources = &res};
  dc_kclient_t *kc = connected_as(g_bs, "fleet-wait-admin");
  dc_arena_t a;
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  bool done = call(kc, DC_API_INCREMENTAL_ALTER_CONFIGS, enc_alter, &q, &rd,
                   &a) &&
              !dc_incremental_alter_configs_resp_decode(&rd, 0, &resp) &&
              resp.n_responses == 1;
  int rc = done ? resp.responses[0].error_code : -1;
  dc_arena_free(&a);
  dc_kclient_destroy(kc);
  return rc;
}

/* One DescribeFleet answer, copied out of the arena. */
typedef struct page {
  int rc, n; /* rc: 0, or the client's error */
  int16_t error;
  bool more, conn[MAXN];
  int8_t state[MAXN];
  int64_t seq;
  size_t body; /* the response body's bytes */
  char msg[256], cl[MAXN][72], in[MAXN][72];
} page_t;

/* Sends a DescribeFleet of version v (answer it with take()). */
static bool send_fleet(dc_kclient_t *kc, int16_t v, int64_t since,
                       int32_t timeout_ms, const char *after_c,
                       const char *after_i, int32_t max) {
  dc_describe_fleet_req_t q = {NULL,          NULL,     since, timeout_ms,
                               (char *)after_c, (char *)after_i, max};
  char err[256] = "";
  if (kc && !dc_kclient_send(kc, DC_API_DESCRIBE_FLEET, v, enc_fleet, &q,
                             10000, NULL, err, sizeof(err)))
    return true;
  diag("DescribeFleet send: %s", err);
  return false;
}

static void copy(page_t *p, const dc_describe_fleet_resp_t *r) {
  p->error = r->error_code;
  snprintf(p->msg, sizeof(p->msg), "%s",
           r->error_message ? r->error_message : "");
  p->seq = r->fleet_seq;
  p->more = r->more;
  p->n = r->n_clients;
  for (int i = 0; i < r->n_clients && i < MAXN; i++) {
    snprintf(p->cl[i], sizeof(p->cl[i]), "%s", r->clients[i].client_id);
    snprintf(p->in[i], sizeof(p->in[i]), "%s", r->clients[i].instance_id);
    p->conn[i] = r->clients[i].connected;
    p->state[i] = r->clients[i].state;
  }
}

/* The next answer on kc, into p (p->rc set on failure). */
static void take(dc_kclient_t *kc, int16_t v, int timeout_ms, page_t *p) {
  memset(p, 0, sizeof(*p));
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  char err[256] = "";
  dc_describe_fleet_resp_t r;
  p->rc = dc_kclient_receive(kc, timeout_ms, NULL, &rd, &a, err, sizeof(err));
  if (!p->rc) {
    p->body = dc_rd_remaining(&rd);
    p->rc = dc_describe_fleet_resp_decode(&rd, v, &r);
  }
  if (p->rc)
    diag("DescribeFleet answer: %d %s", p->rc, err);
  else
    copy(p, &r);
  dc_arena_free(&a);
}

/* An immediate page (since_seq -1) of version v. */
static void ask_v(dc_kclient_t *kc, int16_t v, const char *after_c,
                  const char *after_i, int32_t max, page_t *p) {
  if (send_fleet(kc, v, -1, 0, after_c, after_i, max))
    take(kc, v, 10000, p);
  else
    p->rc = -1;
}
#define ask(kc, ac, ai, max, p) ask_v(kc, 1, ac, ai, max, p)

static int64_t seq_now(dc_kclient_t *kc) {
  static page_t p;
  ask(kc, NULL, NULL, 0, &p);
  return p.rc || p.error ? -1 : p.seq;
}

/* Parks a whole-listing request on kc (sent only). */
static bool park(dc_kclient_t *kc, int64_t since, int32_t timeout_ms) {
  return send_fleet(kc, 1, since, timeout_ms, NULL, NULL, 0);
}

/* Nothing (no answer, no close) arrives on kc for ms. */
static bool quiet(dc_kclient_t *kc, int ms) {
  return dc_kclient_wait_any(&kc, 1, ms) < 0;
}

/* An answer, no error, arrives on kc within wait_ms, into p. */
static bool woke_in(dc_kclient_t *kc, int wait_ms, page_t *p) {
  memset(p, 0, sizeof(*p));
  p->rc = -1;
  if (dc_kclient_wait_any(&kc, 1, wait_ms) == 0)
    take(kc, 1, 1000, p);
  return !p->rc && !p->error;
}

static bool woke(dc_kclient_t *kc, page_t *p) { return woke_in(kc, 10000, p); }

static int find(const page_t *p, const char *cl, const char *in) {
  for (int i = 0; i < p->n && i < MAXN; i++)
    if (!strcmp(p->cl[i], cl) && !strcmp(p->in[i], in))
      return i;
  return -1;
}

/* Pages of max clients each, following the cursor while more is set. */
typedef struct walk {
  int err, n_pages, n;
  bool empty_page;
  size_t body[16];
  int len[16];
  char key[MAX_KEYS][150]; /* "client\tinstance" */
} walk_t;

static void walk(dc_kclient_t *kc, int32_t max, walk_t *w) {
  static page_t p;
  memset(w, 0, sizeof(*w));
  do { /* the cursor is read out of p before the next answer lands in it */
    ask(kc, w->n_pages ? p.cl[p.n - 1] : NULL,
        w->n_pages ? p.in[p.n - 1] : NULL, max, &p);
    if (p.rc || p.error || p.n > MAXN || w->n_pages == 16) {
      w->err = p.rc ? p.rc : p.error ? p.error : -1;
      diag("page %d: %s", w->n_pages, p.msg);
      return;
    }
    w->empty_page |= !p.n;
    w->body[w->n_pages] = p.body;
    w->len[w->n_pages++] = p.n;
    for (int i = 0; i < p.n && w->n < MAX_KEYS; i++)
      snprintf(w->key[w->n++], sizeof(w->key[0]), "%s\t%s", p.cl[i], p.in[i]);
  } while (p.more && p.n);
}

/* w's keys are keys[n], in order (and so without a duplicate). */
static bool walk_is(const walk_t *w, char (*keys)[150], int n) {
  bool same = !w->err && w->n == n;
  for (int i = 0; same && i < n; i++)
    same = !strcmp(w->key[i], keys[i]) && (!i || strcmp(keys[i - 1], keys[i]) < 0);
  return same;
}

/* dynconfd with extra arguments, its bootstrap in bs[64]; 0 or -1. */
static int start(dc_tu_daemon_t *d, char *dir, const char *const *extra,
                 char *bs) {
  char err[512] = "";
  if (dc_tu_daemon_start_tmp(d, dir, PATH_MAX - 64, extra, err, sizeof(err))) {
    diag("dynconfd did not start: %s", err);
    return -1;
  }
  snprintf(bs, 64, "127.0.0.1:%d", dc_tu_daemon_port_of(d, "PLAINTEXT"));
  return 0;
}

/* ---- the cases ----------------------------------------------------------- */

static const char *const g_order[][2] = { /* as the listing sorts them */
    {"app-a", "a1"}, {"app-a", "a2"}, {"app-a", "a3"}, {"app-b", "b1"},
    {"app-b", "b2"}, {"app-c", "c1"}, {"app-c", "c2"}};
#define N_ORDER 7

static void test_immediate(dc_kclient_t *r, dc_kclient_t *v) {
  static const int scrambled[N_ORDER] = {6, 1, 3, 0, 5, 4, 2};
  static page_t p;
  int bad = 0;
  for (int i = 0; i < N_ORDER; i++)
    bad += rep(r, g_order[scrambled[i]][1], g_order[scrambled[i]][0]) != 0;
  is_int(bad, 0, "7 instances of 3 client-ids report");
  ask(v, NULL, NULL, 0, &p);
  bool in_order = p.n == N_ORDER;
  for (int i = 0; in_order && i < N_ORDER; i++)
    in_order = !strcmp(p.cl[i], g_order[i][0]) &&
               !strcmp(p.in[i], g_order[i][1]);
  ok(!p.rc && !p.error && in_order,
     "since -1: all 7 at once, by client-id then instance");
  ok(p.seq > 1600000000000LL && !p.more,
     "  fleet_seq set (%lld, from the wall clock), more = false",
     (long long)p.seq);
}

static void test_paging(dc_kclient_t *v) {
  static walk_t w;
  static char keys[N_ORDER][150];
  static page_t p;
  for (int i = 0; i < N_ORDER; i++)
    snprintf(keys[i], sizeof(keys[i]), "%s\t%s", g_order[i][0], g_order[i][1]);
  walk(v, 3, &w);
  ok(walk_is(&w, keys, N_ORDER),
     "pages of 3 after the cursor: the listing, in order, once each");
  ok(w.n_pages == 3 && w.len[0] == 3 && w.len[1] == 3 && w.len[2] == 1,
     "  3 pages, of 3, 3 and 1, more on all but the last (%d)", w.n_pages);
  ask(v, "app-b", NULL, 3, &p);
  ok(!p.rc && p.n == 3 && !strcmp(p.in[0], "b1") && !strcmp(p.in[2], "c1") &&
         p.more,
     "a cursor of client-id app-b alone: from its first instance, more");
  ask(v, "app-c", "c2", 3, &p);
  ok(!p.rc && !p.error && p.n == 0 && !p.more,
     "a cursor at the last client (or past it): empty, more = false");
  ask(v, NULL, NULL, -1, &p);
  ok(!p.rc && p.error == DC_ERR_INVALID_REQUEST &&
         strstr(p.msg, "max_clients is negative") && p.n == 0,
     "max_clients -1: refused (%s)", p.msg);
  ask(v, NULL, NULL, 0, &p);
  ok(!p.rc && p.n == N_ORDER, "  the connection serves on");
}

/* Parked at the seq now: not woken by a Watch answer, woken by a report
 * on another connection, then by that connection's close; the request
 * sent behind it waits for it. */
static void test_park_report(dc_kclient_t *v, dc_kclient_t *r) {
  static page_t p, q;
  int64_t s = seq_now(v);
  ok(park(v, s, 30000) && send_fleet(v, 1, -1, 0, NULL, NULL, 0),
     "parked at the seq now, an immediate request behind it");
  dc_watch_req_t wq = {"app-a", -1, 1000, -1};
  dc_arena_t a;
  dc_rd_t rd;
  ok(call(r, DC_API_WATCH, enc_watch, &wq, &rd, &a),
     "  a Watch is answered on the reporting connection");
  dc_arena_free(&a);
  ok(quiet(v, 300), "  no answer while only that happened");
  dc_kclient_t *n = connected_as(g_bs, "fleet-wait-test");
  is_int(rep(n, "new-1", "app-n"), 0, "a new instance reports");
  ok(woke(v, &p) && p.seq != s && find(&p, "app-n", "new-1") >= 0 &&
         p.n == N_ORDER + 1,
     "  the parked request is answered: another seq, the new instance");
  take(v, 1, 10000, &q);
  ok(!q.rc && q.seq == p.seq && q.n == p.n,
     "  then the request behind it, at the same seq");
  s = p.seq;
  ok(park(v, s, 30000), "parked again");
  dc_kclient_destroy(n); /* its entry goes gone */
  int i = -1;
  ok(woke(v, &p) && p.seq != s && (i = find(&p, "app-n", "new-1")) >= 0 &&
         !p.conn[i],
     "  woken by the reporting connection's close: new-1 not connected");
}

static void test_park_alter(dc_kclient_t *v) {
  static page_t p;
  int64_t s = seq_now(v);
  ok(park(v, s, 30000), "parked at the seq now");
  is_int(alter("app-a", "acks", "0"), 0, "alter app-a acks=0");
  ok(woke(v, &p) && p.seq != s && p.n == N_ORDER + 1,
     "  the alter wakes it, with the listing");
}

static void test_timeout(dc_kclient_t *v) {
  static page_t p;
  int64_t s = seq_now(v), t0 = dc_tu_now_ms();
  ok(send_fleet(v, 1, s, 200, "app-a", "a1", 2),
     "parked for 200 ms, a page of 2 after app-a/a1");
  ok(woke(v, &p) && p.seq == s, "  answered with the seq unchanged");
  int64_t took = dc_tu_now_ms() - t0;
  ok(took >= 195 && took < 5000, "  at the timeout (%lld ms)", (long long)took);
  ok(p.n == 2 && !strcmp(p.in[0], "a2") && !strcmp(p.in[1], "a3") && p.more,
     "  the page asked for: a2, a3, more");
}

/* Answered at once (within 5 s of a 30 s timeout). */
static void test_at_once(dc_kclient_t *v) {
  static page_t p;
  int64_t s = seq_now(v);
  const struct {
    int64_t since;
    int32_t timeout, max;
    const char *what;
  } c[] = {{s - 1, 30000, 0, "since = seq - 1"},
           {s + 1000, 30000, 0, "since past the seq"},
           {12345, 30000, 0, "since 12345"},
           {s, 0, 0, "since = seq, timeout 0"},
           {s, 30000, -1, "since = seq, max_clients -1"}};
  for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
    bool now = send_fleet(v, 1, c[i].since, c[i].timeout, NULL, NULL,
                          c[i].max) &&
               (woke_in(v, 5000, &p) || p.error);
    ok(now && p.seq == s &&
           (c[i].max < 0 ? p.error == DC_ERR_INVALID_REQUEST
                         : !p.error && p.n == N_ORDER + 1),
       "%s: answered at once", c[i].what);
  }
}

/* x (which reported) and v park; x closes: v wakes to x's entry gone, so
 * the server saw x's parked request (sent before) and its close. A
 * report after that wakes v again, and dynconfd serves on. */
static void test_parked_close(dc_kclient_t *v, dc_tu_daemon_t *d) {
  static page_t p;
  dc_kclient_t *x = connected_as(g_bs, "fleet-wait-test");
  is_int(rep(x, "closer", "app-x"), 0, "x reports");
  int64_t s = seq_now(v);
  ok(park(x, s, 30000) && park(v, s, 30000), "x and v park at the seq now");
  dc_kclient_destroy(x);
  int i = -1;
  ok(woke(v, &p) && (i = find(&p, "app-x", "closer")) >= 0 && !p.conn[i],
     "  x closes: v is woken, x's entry gone");
  dc_kclient_t *y = connected_as(g_bs, "fleet-wait-test");
  ok(park(v, p.seq, 30000) && rep(y, "after", "app-y") == 0 &&
         woke(v, &p) && find(&p, "app-y", "after") >= 0,
     "  a report after it wakes v again");
  ask(y, NULL, NULL, 0, &p);
  bool alive = dc_tu_daemon_alive(d);
  ok(!p.rc && p.n == N_ORDER + 3 && alive, "  dynconfd serves on (%d clients)",
     p.n);
  dc_kclient_destroy(y);
}

/* An instance up to date (version -1: the one that resolves now) reports
 * "restart needed" for it while v is parked: v wakes, the instance
 * listed as needing a restart. */
static void test_park_restart(dc_kclient_t *v) {
  static page_t p;
  dc_kclient_t *k = connected_as(g_bs, "fleet-wait-test");
  dc_client_report_req_t q = {"app-k", "kept", "producer", "x", "x", "x", -1,
                              1, DC_OUTCOME_APPLIED, NULL};
  is_int(send_report(k, &q), 0, "an instance reports it applied the "
         "version now");
  int64_t s = seq_now(v);
  int i = -1;
  ok(park(v, s, 30000), "parked at the seq now");
  q.outcome = DC_OUTCOME_RESTART;
  q.reason = "acks=0";
  is_int(send_report(k, &q), 0, "  it reports restart needed");
  ok(woke(v, &p) && p.seq != s && (i = find(&p, "app-k", "kept")) >= 0 &&
         p.state[i] == DC_FLEET_RESTART,
     "  the parked request is answered, the instance restart needed");
  dc_kclient_destroy(k);
}

/* ---- a small max.response.bytes ---------------------------------------- */

#define N_BIG 60
#define LIMIT 65536 /* the least max.response.bytes dynconfd takes */

/* N_BIG instances of as many client-ids report, each about 2.6 kB as
 * listed, in a scrambled order; keys[] as the listing sorts them. */
static int report_big(dc_kclient_t *r, char (*keys)[150]) {
  static char reason[2049], soft[129], kind[65];
  memset(reason, 'r', 2048);
  memset(soft, 's', 128);
  memset(kind, 'k', 64);
  int bad = 0;
  for (int i = 0; i < N_BIG; i++) {
    char c[16], in[16];
    int k = i * 37 % N_BIG;
    snprintf(c, sizeof(c), "big-%02d", k);
    snprintf(in, sizeof(in), "i-%02d", k);
    snprintf(keys[k], sizeof(keys[k]), "%s\t%s", c, in);
    bad += report(r, in, c, kind, soft, reason) != 0;
  }
  return bad;
}

static void test_bytes(void) {
  char dir[PATH_MAX - 64], bs[64];
  const char *extra[] = {"--max-response-bytes", "65536", NULL};
  static char keys[N_BIG][150];
  static walk_t w;
  static page_t p;
  dc_tu_daemon_t d;
  if (!ok(!start(&d, dir, extra, bs), "dynconfd --max-response-bytes 65536"))
    return;
  dc_kclient_t *r = connected_as(bs, "fleet-wait-test");
  is_int(report_big(r, keys), 0, "%d instances report, long fields", N_BIG);
  walk(r, 0, &w);
  ok(walk_is(&w, keys, N_BIG),
     "pages of as many as fit: all %d, in order, once each (%d pages)", N_BIG,
     w.n_pages);
  bool under = !w.empty_page && w.n_pages >= 3, full = true;
  for (int i = 0; i < w.n_pages; i++) {
    under &= w.body[i] <= LIMIT;
    if (i < w.n_pages - 1) /* cut with less than two clients' room left */
      full &= w.len[i] && w.body[i] > LIMIT - 2 * (w.body[i] / w.len[i]);
    diag("page %d: %d clients, %zu bytes", i, w.len[i], w.body[i]);
  }
  ok(under, "  every page non-empty and within 65536 bytes");
  ok(full, "  and cut only when the next client would not fit");
  ask_v(r, 0, NULL, NULL, 0, &p);
  ok(!p.rc && p.error == DC_ERR_INVALID_REQUEST &&
         strstr(p.msg, "max.response.bytes"),
     "v0 (no pages): refused, naming max.response.bytes (%s)", p.msg);
  dc_kclient_destroy(r);
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd exits 0");
  dc_tu_rmrf(dir);
}

/* ---- ACLs --------------------------------------------------------------- */

/* The ACL allows open-*; a client may describe its own client-id. */
static void acl_parked(const char *bs) {
  static page_t p, q;
  dc_kclient_t *o = connected_as(bs, "open-x");
  dc_kclient_t *sc = connected_as(bs, "secret-app");
  dc_kclient_t *view = connected_as(bs, "viewer");
  dc_kclient_t *sv = connected_as(bs, "secret-app");
  is_int(rep(o, "o1", "open-x"), 0, "open-x reports");
  is_int(rep(sc, "s1", "secret-app"), 0, "secret-app reports");
  ask(view, NULL, NULL, 0, &p);
  ok(!p.rc && p.n == 1 && !strcmp(p.in[0], "o1"), "viewer lists only o1");
  int64_t s = seq_now(view);
  ok(park(view, s, 30000) && park(sv, s, 30000),
     "viewer and secret-app park at the seq now");
  is_int(rep(sc, "s2", "secret-app"), 0, "secret-app reports s2");
  bool w1 = woke(view, &p), w2 = woke(sv, &q);
  ok(w1 && p.seq != s && p.n == 1 && !strcmp(p.in[0], "o1"),
     "  viewer's parked answer: still only o1 (%d clients)", p.n);
  ok(w2 && q.seq != s && q.n == 3 && find(&q, "secret-app", "s1") >= 0 &&
         find(&q, "secret-app", "s2") >= 0 && find(&q, "open-x", "o1") >= 0,
     "  secret-app's: its own two and o1 (%d clients)", q.n);
  dc_kclient_t *all[] = {o, sc, view, sv};
  for (int i = 0; i < 4; i++)
    dc_kclient_destroy(all[i]);
}

static void test_acl(void) {
  char dir[PATH_MAX - 64], acl[PATH_MAX], sdir[PATH_MAX - 64], bs[64];
  if (dc_tu_tmpdir(dir, sizeof(dir)))
    return;
  dc_tu_put_file(dir, "acl", "allow User:ANONYMOUS describe client:open-*\n",
                 acl, sizeof(acl));
  const char *extra[] = {"--acl-file", acl, NULL};
  dc_tu_daemon_t d;
  if (ok(!start(&d, sdir, extra, bs), "dynconfd with an ACL")) {
    acl_parked(bs);
    is_int(dc_tu_daemon_stop(&d), 0, "dynconfd exits 0");
    dc_tu_rmrf(sdir);
  }
  dc_tu_rmrf(dir);
}

/* A gone client passing fleet.retention.ms moves the fleet: a request
 * parked before is answered (before its 30 s), without the client. */
static void test_retention(void) {
  char dir[PATH_MAX - 64], bs[64];
  const char *extra[] = {"--fleet-retention-ms", "1000", NULL};
  static page_t p;
  dc_tu_daemon_t d;
  if (!ok(!start(&d, dir, extra, bs), "dynconfd --fleet-retention-ms 1000"))
    return;
  dc_kclient_t *r = connected_as(bs, "fleet-wait-test");
  dc_kclient_t *v = connected_as(bs, "fleet-wait-view");
  is_int(rep(r, "old-1", "app-o"), 0, "an instance reports");
  dc_kclient_destroy(r); /* gone from now on */
  int64_t s = -1;
  for (int i = 0; i < 1000 && s < 0; i++) { /* until its close is seen */
    ask(v, NULL, NULL, 0, &p);
    if (!p.rc && p.n == 1 && !p.conn[0])
      s = p.seq;
    else
      dc_tu_sleep_ms(10);
  }
  ok(s >= 0 && park(v, s, 30000), "listed as gone; parked at that seq");
  ok(woke_in(v, 20000, &p) && p.seq != s && p.n == 0,
     "  its retention passing answers it, the instance dropped");
  dc_kclient_destroy(v);
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd exits 0");
  dc_tu_rmrf(dir);
}

int main(void) {
  char dir[PATH_MAX - 64];
  dc_tu_daemon_t d;
  if (start(&d, dir, NULL, g_bs)) {
    printf("Bail out! dynconfd did not start\n");
    return 1;
  }
  dc_kclient_t *r = connected_as(g_bs, "fleet-wait-test");
  dc_kclient_t *v = connected_as(g_bs, "fleet-wait-view");
  if (ok(r && v, "connected")) {
    test_immediate(r, v);
    test_paging(v);
    test_park_report(v, r);
    test_park_alter(v);
    test_timeout(v);
    test_at_once(v);
    test_parked_close(v, &d);
    test_park_restart(v);
  }
  dc_kclient_destroy(r);
  dc_kclient_destroy(v);
  ok(dc_tu_daemon_alive(&d), "dynconfd still running");
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd exits 0");
  dc_tu_rmrf(dir);
  test_bytes();
  test_acl();
  test_retention();
  return done_testing();
}
