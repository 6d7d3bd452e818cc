/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Watch (dynconf's API 20001) against a real dynconfd: an immediate
 * answer for an unknown version, "unchanged" at the timeout, a parked
 * watch woken by its client-id's change and by a <default> change that
 * reaches it, not by one its own override shadows nor by another
 * client's; versions name contents; a parked watch whose connection
 * closes is dropped; bad names and ACL refusals answered at once.
 */
#include "agentutil.h"
#include "client/kclient.h"
#include "common/arena.h"
#include "tap.h"
#include "testutil.h"

static char g_dir[PATH_MAX - 64];
static char g_bootstrap[64];
static dc_tu_daemon_t g_d;
static int g_port;

static int enc_watch(dc_buf_t *b, int16_t v, const void *req) {
  return dc_watch_req_encode(b, v, req);
}

static dc_kclient_t *connected(const char *bootstrap) {
  char err[512];
  dc_kclient_t *kc = dc_kclient_new("watcher");
  if (kc && !dc_kclient_connect(kc, bootstrap, 10000, err, sizeof(err)))
    return kc;
  diag("connect: %s", err);
  dc_kclient_destroy(kc);
  return NULL;
}

/* A watch answer, copied out of the arena for the checks. */
typedef struct answer {
  int rc; /* 0, or the kclient error */
  int16_t error;
  char message[256];
  bool changed;
  int64_t version;
  char configs[512]; /* "k=v@source;" each */
} answer_t;

static void take(answer_t *a, dc_rd_t *rd) {
  dc_watch_resp_t r;
  if (dc_watch_resp_decode(rd, 0, &r)) {
    a->rc = -1;
    return;
  }
  a->error = r.error_code;
  snprintf(a->message, sizeof(a->message), "%s",
           r.error_message ? r.error_message : "");
  a->changed = r.changed;
  a->version = r.version;
  size_t n = 0;
  for (int32_t i = 0; i < r.n_configs && n < sizeof(a->configs); i++)
    n += (size_t)snprintf(a->configs + n, sizeof(a->configs) - n, "%s=%s@%d;",
                          r.configs[i].name,
                          r.configs[i].value ? r.configs[i].value : "null",
                          r.configs[i].source);
}

static void park(dc_kclient_t *kc, const char *client, int64_t known,
                 int32_t timeout_ms) {
  dc_watch_req_t req = {(char *)client, known, timeout_ms};
  char err[256];
  if (dc_kclient_send(kc, DC_API_WATCH, 0, enc_watch, &req, 5000, NULL, err,
                      sizeof(err)))
    diag("send: %s", err);
}

static answer_t await_answer(dc_kclient_t *kc, int timeout_ms) {
  answer_t a = {0};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  char err[256];
  a.rc = dc_kclient_receive(kc, timeout_ms, NULL, &rd, &arena, err,
                            sizeof(err));
  if (!a.rc)
    take(&a, &rd);
  else
    diag("receive: %s", err);
  dc_arena_free(&arena);
  return a;
}

static answer_t watch_now(dc_kclient_t *kc, const char *client, int64_t known) {
  park(kc, client, known, 10000);
  return await_answer(kc, 10000);
}

static void test_basics(dc_kclient_t *a) {
  int16_t lo = -1, hi = -1;
  ok(dc_kclient_api_versions(a, 5000, NULL, 0) == 0 &&
         dc_kclient_api_range(a, DC_API_WATCH, &lo, &hi) && lo == 0 &&
         hi == 0,
     "ApiVersions lists Watch v0");
  answer_t x = watch_now(a, "w1", -1);
  ok(!x.rc && !x.error && x.changed && x.version >= 0 && !x.configs[0],
     "version -1: answered at once with the (empty) configuration");
  answer_t y = watch_now(a, "fresh-b", -1);
  is_int(y.version == x.version, 1,
         "two client-ids resolving to the same configuration share a version");
  park(a, "w1", x.version, 300);
  answer_t z = await_answer(a, 10000);
  ok(!z.rc && !z.changed && z.version == x.version && !z.configs[0],
     "known version: \"unchanged\" at the timeout, no configuration");
  answer_t bad = watch_now(a, "", -1);
  ok(!bad.rc && bad.error == DC_ERR_INVALID_REQUEST && bad.message[0],
     "an empty client-id: INVALID_REQUEST at once (%s)", bad.message);
}

static void test_wake(dc_kclient_t *a, dc_kclient_t *c) {
  int64_t v1 = watch_now(a, "w1", -1).version;
  park(a, "w1", v1, 60000);
  is_int(au_alter(g_port, "w1", "acks=all"), 0, "alter w1 acks=all");
  answer_t x = await_answer(a, 20000);
  ok(!x.rc && x.changed && x.version != v1 && !strcmp(x.configs, "acks=all@7;"),
     "a parked watch is woken by its client-id's change (%s)", x.configs);
  /* w2 overrides linger.ms; a <default> linger.ms reaches w1 only. */
  is_int(au_alter(g_port, "w2", "linger.ms=9"), 0, "alter w2 linger.ms=9");
  int64_t w1v = x.version, w2v = watch_now(c, "w2", -1).version;
  park(a, "w1", w1v, 60000);
  park(c, "w2", w2v, 1500);
  is_int(au_alter(g_port, "<default>", "linger.ms=5"), 0,
         "alter <default> linger.ms=5");
  x = await_answer(a, 20000);
  ok(!x.rc && x.changed && strstr(x.configs, "linger.ms=5@8;"),
     "the <default> change wakes w1, which inherits it (%s)", x.configs);
  answer_t y = await_answer(c, 20000);
  ok(!y.rc && !y.changed && y.version == w2v,
     "w2, whose own linger.ms shadows it, stays parked until its timeout");
  park(a, "w1", x.version, 1500);
  is_int(au_alter(g_port, "someone-else", "acks=1"), 0,
         "alter another client-id");
  x = await_answer(a, 20000);
  ok(!x.rc && !x.changed, "  which does not wake w1");
}

static void test_closed_watcher(dc_kclient_t *a) {
  dc_kclient_t *d = connected(g_bootstrap);
  if (!ok(d != NULL, "a second watcher connects"))
    return;
  int64_t v = watch_now(d, "w1", -1).version;
  park(d, "w1", v, 60000);
  dc_kclient_destroy(d); /* gone while parked */
  is_int(au_alter(g_port, "w1", "acks=0"), 0,
         "w1 changes after its watcher left");
  answer_t x = watch_now(a, "w1", v);
  ok(!x.rc && x.changed && strstr(x.configs, "acks=0@7;"),
     "the server dropped the closed watch and serves on");
}

static void test_acl(void) {
  char dir[PATH_MAX - 64], acl[PATH_MAX], err[512];
  dc_tu_daemon_t d;
  if (dc_tu_tmpdir(dir, sizeof(dir)))
    return;
  snprintf(acl, sizeof(acl), "%s/acl", dir);
  FILE *f = fopen(acl, "w");
  if (f) {
    fputs("allow User:ANONYMOUS describe client:open-*\n", f);
    fclose(f);
  }
  const char *extra[] = {"--acl-file", acl, NULL};
  char sdir[PATH_MAX - 64];
  if (!ok(!dc_tu_daemon_start_tmp(&d, sdir, sizeof(sdir), extra, err,
                                  sizeof(err)),
          "dynconfd with an ACL file starts (%s)", err))
    return;
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", dc_tu_daemon_port_of(&d, "PLAINTEXT"));
  dc_kclient_t *kc = connected(bs);
  if (kc) {
    answer_t x = watch_now(kc, "closed-app", -1);
    ok(!x.rc && x.error == DC_ERR_CLUSTER_AUTHORIZATION_FAILED &&
           strstr(x.message, "not authorized"),
       "a watch the ACL denies: CLUSTER_AUTHORIZATION_FAILED at once (%s)",
       x.message);
    x = watch_now(kc, "open-app", -1);
    ok(!x.rc && !x.error && x.changed, "  one it allows is answered");
  }
  dc_kclient_destroy(kc);
  dc_tu_daemon_stop(&d);
  dc_tu_rmrf(sdir);
  dc_tu_rmrf(dir);
}

/* A parked Watch keeps its connection out of the idle sweep; an idle
 * connection beside it is closed (the sweep ran while the Watch waited). */
static void test_not_idle(void) {
  char sdir[PATH_MAX - 64], err[512];
  dc_tu_daemon_t d;
  const char *extra[] = {"--idle-timeout-ms", "100", NULL};
  if (!ok(!dc_tu_daemon_start_tmp(&d, sdir, sizeof(sdir), extra, err,
                                  sizeof(err)),
          "dynconfd with --idle-timeout-ms 100 starts (%s)", err))
    return;
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", dc_tu_daemon_port_of(&d, "PLAINTEXT"));
  dc_kclient_t *w = connected(bs), *idle = connected(bs);
  if (ok(w && idle, "idle: two connections")) {
    answer_t x = watch_now(w, "idle-w", -1);
    park(w, "idle-w", x.version, 2500);
    answer_t y = await_answer(w, 10000);
    ok(!y.rc && !y.error && !y.changed && y.version == x.version,
       "idle: a 2.5 s Watch is answered unchanged, its connection kept past "
       "the 100 ms idle timeout");
    char e[256];
    ok(dc_kclient_api_versions(idle, 5000, e, sizeof(e)) != 0,
       "idle: the connection without a Watch was closed meanwhile (%s)", e);
  }
  dc_kclient_destroy(w);
  dc_kclient_destroy(idle);
  dc_tu_daemon_stop(&d);
  dc_tu_rmrf(sdir);
}

int main(void) {
  char err[512];
  if (dc_tu_daemon_start_tmp(&g_d, g_dir, sizeof(g_dir), NULL, err,
                             sizeof(err))) {
    printf("Bail out! dynconfd did not start: %s\n", err);
    return 1;
  }
  g_port = dc_tu_daemon_port_of(&g_d, "PLAINTEXT");
  snprintf(g_bootstrap, sizeof(g_bootstrap), "127.0.0.1:%d", g_port);
  dc_kclient_t *a = connected(g_bootstrap), *c = connected(g_bootstrap);
  if (ok(a && c, "two watchers connect")) {
    test_basics(a);
    test_wake(a, c);
    test_closed_watcher(a);
  }
  dc_kclient_destroy(a);
  dc_kclient_destroy(c);
  ok(dc_tu_daemon_alive(&g_d), "dynconfd still running");
  is_int(dc_tu_daemon_stop(&g_d), 0, "dynconfd exits 0");
  dc_tu_rmrf(g_dir);
  test_acl();
  test_not_idle();
  return done_testing();
}
