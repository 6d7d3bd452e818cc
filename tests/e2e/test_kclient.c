/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client connection (lib/client/kclient_conn.c) against a real dynconfd:
 * pipelined requests answered in order with their correlation ids, the
 * in-flight bound, dc_kclient_request refusing to overtake answers still
 * due, the cancel fd ending waits at once, and the per-handle frame limit.
 */
#include "client/kclient.h"
#include "common/arena.h"
#include "../tap.h"
#include "../testutil.h"

#include <fcntl.h>

static char g_dir[PATH_MAX - 64];
static char g_bootstrap[64];
static dc_tu_daemon_t g_d;

static int enc_apiversions(dc_buf_t *b, int16_t v, const void *req) {
  return dc_apiversions_req_encode(b, v, req);
}

static int enc_describe(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_configs_req_encode(b, v, req);
}

static dc_kclient_t *connected(void) {
  char err[512];
  dc_kclient_t *kc = dc_kclient_new("test-kclient");
  if (kc && !dc_kclient_connect(kc, g_bootstrap, 10000, err, sizeof(err)))
    return kc;
  diag("connect: %s", err);
  dc_kclient_destroy(kc);
  return NULL;
}

static void test_pipelining(void) {
  dc_kclient_t *kc = connected();
  if (!ok(kc != NULL, "pipelining: connected"))
    return;
  char err[512];
  dc_apiversions_req_t av = {.client_software_name = "t",
                             .client_software_version = "1"};
  dc_describe_configs_req_resource_t res = {.resource_type = 9,
                                            .resource_name = "pipe",
                                            .n_configuration_keys = -1};
  dc_describe_configs_req_t dreq = {.n_resources = 1, .resources = &res};
  int32_t c1 = 0, c2 = 0, c3 = 0;
  bool sent =
      !dc_kclient_send(kc, DC_API_API_VERSIONS, 3, enc_apiversions, &av,
                       5000, &c1, err, sizeof(err)) &&
      !dc_kclient_send(kc, DC_API_DESCRIBE_CONFIGS, 4, enc_describe, &dreq,
                       5000, &c2, err, sizeof(err)) &&
      !dc_kclient_send(kc, DC_API_API_VERSIONS, 0, enc_apiversions, &av,
                       5000, &c3, err, sizeof(err));
  ok(sent, "pipelining: three requests sent before any answer (%s)",
     sent ? "" : err);
  is_int(dc_kclient_in_flight(kc), 3, "pipelining: three in flight");
  dc_rd_t rd;
  is_int(dc_kclient_request(kc, DC_API_API_VERSIONS, 3, enc_apiversions, &av,
                            5000, &rd, NULL, err, sizeof(err)),
         DC_ERR__INVALID_ARG,
         "pipelining: a blocking request cannot overtake answers due");
  ok(strstr(err, "await their answers") != NULL, "  and says why: %s", err);

  const int32_t want[3] = {c1, c2, c3};
  const int16_t key[3] = {DC_API_API_VERSIONS, DC_API_DESCRIBE_CONFIGS,
                          DC_API_API_VERSIONS};
  const int16_t ver[3] = {3, 4, 0};
  for (int i = 0; i < 3; i++) {
    dc_arena_t a;
    dc_arena_init(&a);
    int32_t got = -1;
    dc_err_t e = dc_kclient_receive(kc, 5000, &got, &rd, &a, err, sizeof(err));
    is_int(e, DC_ERR_NO_ERROR, "pipelining: answer %d received (%s)", i + 1,
           e ? err : "");
    is_int(got, want[i], "pipelining: answer %d is request %d's", i + 1,
           i + 1);
    int dec = -1;
    if (!e && key[i] == DC_API_API_VERSIONS) {
      dc_apiversions_resp_t r;
      dec = dc_apiversions_resp_decode(&rd, ver[i], &r);
    } else if (!e) {
      dc_describe_configs_resp_t r;
      dec = dc_describe_configs_resp_decode(&rd, ver[i], &r);
      if (!dec)
        dec = r.n_results == 1 && !strcmp(r.results[0].resource_name, "pipe")
                  ? 0
                  : -1;
    }
    is_int(dec, 0, "pipelining: answer %d decodes as its request's API", i + 1);
    dc_arena_free(&a);
  }
  is_int(dc_kclient_in_flight(kc), 0, "pipelining: nothing in flight after");
  is_int(dc_kclient_receive(kc, 100, NULL, &rd, NULL, err, sizeof(err)),
         DC_ERR__INVALID_ARG, "pipelining: receive with nothing due refused");

  int n = 0;
  while (!dc_kclient_send(kc, DC_API_API_VERSIONS, 3, enc_apiversions, &av,
                          5000, NULL, err, sizeof(err)))
    n++;
  is_int(n, DC_KCLIENT_MAX_INFLIGHT, "pipelining: at most %d in flight",
         DC_KCLIENT_MAX_INFLIGHT);
  ok(dc_kclient_connected(kc), "pipelining: the bound keeps the connection");
  dc_kclient_destroy(kc);
}

static void test_cancel(void) {
  dc_kclient_t *kc = connected();
  int p[2];
  if (!ok(kc != NULL && !pipe(p), "cancel: connected"))
    return;
  dc_kclient_set_cancel_fd(kc, p[0]);
  dc_apiversions_req_t av = {0};
  char err[512];
  dc_rd_t rd;
  dc_arena_t a;
  dc_arena_init(&a);
  ok(!dc_kclient_request(kc, DC_API_API_VERSIONS, 0, enc_apiversions, &av,
                         5000, &rd, &a, err, sizeof(err)),
     "cancel: a request works while the fd is quiet");
  /* A listener that never accepts or answers: the kernel completes the
   * connection, the request waits in its buffer. */
  int lfd = -1, port = 0, wake[2] = {-1, -1};
  char silent[64];
  if (!ok(!dc_tu_listen(&lfd, &port, wake), "cancel: a silent listener"))
    return;
  snprintf(silent, sizeof(silent), "127.0.0.1:%d", port);
  ok(!dc_kclient_connect(kc, silent, 5000, err, sizeof(err)),
     "cancel: connected to the silent listener");
  ok(write(p[1], "x", 1) == 1, "cancel: the fd is made readable");
  int64_t t0 = dc_tu_now_ms();
  dc_err_t e = dc_kclient_request(kc, DC_API_API_VERSIONS, 0,
                                  enc_apiversions, &av, 60000, &rd, &a, err,
                                  sizeof(err));
  int64_t took = dc_tu_now_ms() - t0;
  is_int(e, DC_ERR__TRANSPORT, "cancel: the waiting request ends");
  ok(strstr(err, "cancelled") != NULL, "cancel: it says so: %s", err);
  ok(took < 30000, "cancel: without waiting its timeout (%lld ms of 60000)",
     (long long)took);
  ok(!dc_kclient_connected(kc), "cancel: no connection afterwards");
  e = dc_kclient_connect(kc, silent, 60000, err, sizeof(err));
  ok(e == DC_ERR_NO_ERROR || strstr(err, "cancelled"),
     "cancel: a later connect is not held up either (%s)", e ? err : "ok");
  dc_tu_unlisten(&lfd, wake);
  dc_arena_free(&a);
  dc_kclient_destroy(kc);
  close(p[0]);
  close(p[1]);
}

static void test_frame_limit(void) {
  dc_kclient_t *kc = connected();
  if (!ok(kc != NULL, "frame limit: connected"))
    return;
  dc_kclient_set_max_frame(kc, 16);
  char err[512];
  dc_err_t e = dc_kclient_api_versions(kc, 5000, err, sizeof(err));
  is_int(e, DC_ERR__BAD_RESPONSE, "frame limit: a larger answer is refused");
  ok(strstr(err, "over the receive limit of 16 bytes") != NULL,
     "frame limit: the error names the limit: %s", err);
  ok(!dc_kclient_connected(kc), "frame limit: the connection is closed");
  dc_kclient_destroy(kc);
}

/* Empty entries in a bootstrap list (",a,", "a,,b") are skipped, as a
 * list rotated from one with a trailing comma has them; a list of nothing
 * else is an error that says so. */
static void test_bootstrap_entries(void) {
  char err[512], list[128];
  dc_kclient_t *kc = dc_kclient_new("test-kclient");
  if (!ok(kc != NULL, "bootstrap: a handle"))
    return;
  snprintf(list, sizeof(list), ",%s,,", g_bootstrap);
  err[0] = '\0';
  is_int(dc_kclient_connect(kc, list, 5000, err, sizeof(err)), 0,
         "bootstrap: '%s' connects (%s)", list, err);
  is_int(dc_kclient_connect(kc, " , ,", 5000, err, sizeof(err)),
         DC_ERR__INVALID_ARG, "bootstrap: only empty entries is an error");
  ok(strstr(err, "empty bootstrap server list") != NULL, "  saying so: %s",
     err);
  dc_kclient_destroy(kc);
}

int main(void) {
  char err[512];
  if (dc_tu_daemon_start_tmp(&g_d, g_dir, sizeof(g_dir), NULL, err,
                             sizeof(err))) {
    printf("Bail out! dynconfd did not start: %s\n", err);
    return 1;
  }
  snprintf(g_bootstrap, sizeof(g_bootstrap), "127.0.0.1:%d",
           dc_tu_daemon_port_of(&g_d, "PLAINTEXT"));
  test_pipelining();
  test_cancel();
  test_frame_limit();
  test_bootstrap_entries();
  ok(dc_tu_daemon_alive(&g_d), "dynconfd still running");
  dc_tu_daemon_stop(&g_d);
  dc_tu_rmrf(g_dir);
  return done_testing();
}
