/* SPDX-License-Identifier: BSD-2-Clause */
/* dynconfd holds 10,000 concurrent connections and answers on every one. */
#include "codec/proto.h"
#include "../tap.h"
#include "../testutil.h"

#include <sys/resource.h>

#define N_CONNS 10000

static void apiversions_frame(dc_buf_t *b, int32_t corr) {
  size_t f = dc_wr_frame_begin(b);
  dc_req_header_t h = {DC_API_API_VERSIONS, 0, corr, "conn-test"};
  dc_req_header_encode(b, &h);
  dc_apiversions_req_t req = {0};
  dc_apiversions_req_encode(b, 0, &req);
  dc_wr_frame_end(b, f);
}

int main(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  getrlimit(RLIMIT_NOFILE, &rl);
  /* The machine must allow the test itself N_CONNS sockets; anything less
   * is a failed environment, not a pass. */
  if (!ok(rl.rlim_cur >= N_CONNS + 100, "fd limit %llu allows %d connections",
          (unsigned long long)rl.rlim_cur, N_CONNS))
    return done_testing();

  char dir[256], err[512] = "";
  dc_tu_tmpdir(dir, sizeof(dir));
  dc_tu_daemon_t d;
  if (!ok(dc_tu_daemon_start(&d, dir, NULL, NULL, err, sizeof(err)) == 0,
          "dynconfd starts: %s", err))
    return done_testing();

  static int fds[N_CONNS];
  int opened = 0;
  for (int i = 0; i < N_CONNS; i++) {
    fds[i] = dc_tu_connect(d.port);
    if (fds[i] < 0)
      break;
    opened++;
  }
  is_int(opened, N_CONNS, "opened %d concurrent connections", N_CONNS);

  /* One request on every connection, all in flight at once. */
  dc_buf_t b;
  dc_buf_init(&b);
  int sent = 0;
  for (int i = 0; i < opened; i++) {
    dc_buf_clear(&b);
    apiversions_frame(&b, i);
    if (dc_tu_write_all(fds[i], b.data, b.len) == 0)
      sent++;
  }
  is_int(sent, opened, "sent a request on every connection");

  size_t n_apis;
  dc_api_all(&n_apis);
  n_apis--; /* JoinGroup is listed only by a server with GSSAPI */
  int answered = 0;
  for (int i = 0; i < opened; i++) {
    dc_buf_clear(&b);
    if (dc_tu_read_frame(fds[i], 10000, 1 << 20, &b) != 1)
      continue;
    dc_arena_t a = {0};
    dc_rd_t rd;
    dc_rd_init(&rd, b.data, b.len, &a);
    int32_t corr;
    dc_apiversions_resp_t resp;
    if (!dc_resp_header_decode(&rd, DC_API_API_VERSIONS, 0, &corr) &&
        !dc_apiversions_resp_decode(&rd, 0, &resp) && corr == i &&
        resp.error_code == 0 && resp.n_api_keys == (int32_t)n_apis)
      answered++;
    dc_arena_free(&a);
  }
  is_int(answered, opened, "every connection got its own correct answer");
  for (int i = 0; i < opened; i++)
    close(fds[i]);

  /* Still serving after all of them are gone. */
  int fd = dc_tu_connect(d.port);
  dc_buf_clear(&b);
  apiversions_frame(&b, 77);
  ok(fd >= 0 && dc_tu_write_all(fd, b.data, b.len) == 0 &&
         dc_tu_read_frame(fd, 10000, 1 << 20, &b) == 1,
     "a new connection is served afterwards");
  if (fd >= 0)
    close(fd);
  ok(dc_tu_daemon_alive(&d), "dynconfd is still running");
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd exits 0 on SIGTERM");
  dc_buf_free(&b);
  dc_tu_rmrf(dir);
  return done_testing();
}
