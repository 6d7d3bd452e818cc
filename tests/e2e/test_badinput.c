/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end robustness: hostile and clumsy connections against one real
 * dynconfd (garbage, bad frame sizes, truncation, unknown APIs, malformed
 * bodies, a slow-drip sender, 200 idle connections) while a well-behaved
 * client, built on our own codec, keeps getting correct answers. Also
 * request pipelining and the ApiVersions unsupported-version fallback, and
 * DescribeConfigs v0's is_default (no real client we have speaks v0 to us).
 *
 * Every read has a deadline, so a server that hangs fails the test instead
 * of hanging it.
 */
#include "../tap.h"
#include "../testutil.h"

#include "codec/proto.h"

#define IO_TIMEOUT_MS 5000
#define MAX_RESP (1 << 20)
#define N_IDLE 200
#define N_PIPELINE 50
#define PROBE_CLIENT "probe-client"
#define MAX_REQ 65536 /* passed as --max-request-size */

static dc_tu_daemon_t dd;
static int32_t next_corr = 1;

/* ---- request builders: one size-prefixed frame appended to b ---------- */

static void hdr(dc_buf_t *b, int16_t key, int16_t v, int32_t corr) {
  dc_req_header_t h = {key, v, corr, "dynconf-badinput"};
  dc_req_header_encode(b, &h);
}

static void req_apiversions(dc_buf_t *b, int16_t v, int32_t corr) {
  size_t off = dc_wr_frame_begin(b);
  hdr(b, DC_API_API_VERSIONS, v, corr);
  dc_apiversions_req_t r = {"dynconf-test", "1.0"};
  dc_apiversions_req_encode(b, v, &r);
  dc_wr_frame_end(b, off);
}

static void req_describe(dc_buf_t *b, int16_t v, int32_t corr,
                         const char *client) {
  size_t off = dc_wr_frame_begin(b);
  hdr(b, DC_API_DESCRIBE_CONFIGS, v, corr);
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, (char *)client, -1,
                                            NULL};
  dc_describe_configs_req_t r = {1, &res, true, false, 0, false};
  dc_describe_configs_req_encode(b, v, &r);
  dc_wr_frame_end(b, off);
}

/* AlterConfigs v0 of one CLIENT entity with one key. */
static void req_alter(dc_buf_t *b, int32_t corr, const char *entity,
                      const char *key, const char *value) {
  size_t off = dc_wr_frame_begin(b);
  hdr(b, DC_API_ALTER_CONFIGS, 0, corr);
  dc_alter_config_t c = {(char *)key, DC_OP_SET, (char *)value};
  dc_alter_resource_t res = {DC_RES_CLIENT, (char *)entity, 1, &c};
  dc_alter_configs_req_t r = {1, &res, false};
  dc_alter_configs_req_encode(b, 0, &r);
  dc_wr_frame_end(b, off);
}

/* Reads one frame and checks its correlation id; rd is then positioned at
 * the response body. 1 = ok, 0 = closed, -1 = timeout/garbage. */
static int read_resp(int fd, int16_t key, int16_t v, int32_t corr,
                     dc_buf_t *in, dc_rd_t *rd, dc_arena_t *a) {
  int r = dc_tu_read_frame(fd, IO_TIMEOUT_MS, MAX_RESP, in);
  if (r != 1)
    return r;
  dc_rd_init(rd, in->data, in->len, a);
  int32_t got;
  if (dc_resp_header_decode(rd, key, v, &got) || got != corr) {
    diag("response correlation id %d, expected %d", (int)got, (int)corr);
    return -1;
  }
  return 1;
}

/* ---- the well-behaved client ------------------------------------------- */

/* Checks a DescribeConfigs v1 response body for PROBE_CLIENT: acks=1 own
 * (source 7), session.timeout.ms=45000 inherited (source 8). */
static bool check_probe_describe(dc_rd_t *rd) {
  dc_describe_configs_resp_t resp;
  if (dc_describe_configs_resp_decode(rd, 1, &resp) || resp.n_results != 1)
    return false;
  const dc_describe_configs_result_t *r = &resp.results[0];
  if (r->error_code || r->resource_type != DC_RES_CLIENT ||
      !r->resource_name || strcmp(r->resource_name, PROBE_CLIENT) ||
      r->n_configs != 2)
    return false;
  int seen = 0;
  for (int i = 0; i < r->n_configs; i++) {
    const dc_describe_configs_entry_t *e = &r->configs[i];
    if (!strcmp(e->name, "acks") && e->value && !strcmp(e->value, "1") &&
        e->config_source == DC_SRC_DYNAMIC_CLIENT)
      seen |= 1;
    if (!strcmp(e->name, "session.timeout.ms") && e->value &&
        !strcmp(e->value, "45000") && e->config_source == DC_SRC_DYNAMIC_DEFAULT)
      seen |= 2;
  }
  return seen == 3;
}

/* One ApiVersions v0 and one DescribeConfigs v1 round trip on fd, with
 * correct answers. Diagnoses what went wrong. */
static bool probe_fd(int fd) {
  dc_buf_t out, in;
  dc_arena_t a;
  dc_rd_t rd;
  bool good = false;
  dc_buf_init(&out);
  dc_buf_init(&in);
  dc_arena_init(&a);
  int32_t c1 = next_corr++, c2 = next_corr++;
  req_apiversions(&out, 0, c1);
  if (dc_tu_write_all(fd, out.data, out.len)) {
    diag("probe: write failed: %s", strerror(errno));
    goto done;
  }
  if (read_resp(fd, DC_API_API_VERSIONS, 0, c1, &in, &rd, &a) != 1) {
    diag("probe: no ApiVersions answer");
    goto done;
  }
  dc_apiversions_resp_t av;
  if (dc_apiversions_resp_decode(&rd, 0, &av) || av.error_code) {
    diag("probe: bad ApiVersions answer (decode %d, error %d)", rd.err,
         av.error_code);
    goto done;
  }
  bool has_dc = false;
  for (int i = 0; i < av.n_api_keys; i++)
    has_dc |= av.api_keys[i].api_key == DC_API_DESCRIBE_CONFIGS &&
              av.api_keys[i].max_version >= 1;
  if (!has_dc) {
    diag("probe: ApiVersions lacks DescribeConfigs v1");
    goto done;
  }
  dc_buf_clear(&out);
  dc_arena_reset(&a);
  req_describe(&out, 1, c2, PROBE_CLIENT);
  if (dc_tu_write_all(fd, out.data, out.len) ||
      read_resp(fd, DC_API_DESCRIBE_CONFIGS, 1, c2, &in, &rd, &a) != 1) {
    diag("probe: no DescribeConfigs answer");
    goto done;
  }
  good = check_probe_describe(&rd);
  if (!good)
    diag("probe: DescribeConfigs answer is wrong (decode err %d)", rd.err);
done:
  dc_buf_free(&out);
  dc_buf_free(&in);
  dc_arena_free(&a);
  return good;
}

/* The same on a brand-new connection, so a wedged accept loop shows too. */
static bool probe_new(void) {
  int fd = dc_tu_connect(dd.port);
  if (fd < 0) {
    diag("probe: connect failed: %s", strerror(errno));
    return false;
  }
  bool good = probe_fd(fd);
  close(fd);
  return good;
}

static int good_fd = -1; /* the long-lived well-behaved connection */

static void probe(const char *after) {
  ok(probe_fd(good_fd), "well-behaved client (kept connection) answered after %s",
     after);
  ok(probe_new(), "well-behaved client (new connection) answered after %s",
     after);
}

/* Sets up what the probe expects, and checks DescribeConfigs v0. */
static void setup_and_v0(void) {
  dc_buf_t out, in;
  dc_arena_t a;
  dc_rd_t rd;
  dc_buf_init(&out);
  dc_buf_init(&in);
  dc_arena_init(&a);
  int fd = dc_tu_connect(dd.port);
  int32_t c1 = next_corr++, c2 = next_corr++, c3 = next_corr++;
  req_alter(&out, c1, "<default>", "session.timeout.ms", "45000");
  req_alter(&out, c2, PROBE_CLIENT, "acks", "1");
  ok(fd >= 0 && !dc_tu_write_all(fd, out.data, out.len), "setup alters sent");
  for (int i = 0; i < 2; i++) {
    dc_alter_configs_resp_t resp;
    dc_arena_reset(&a);
    int r = read_resp(fd, DC_API_ALTER_CONFIGS, 0, i ? c2 : c1, &in, &rd, &a);
    ok(r == 1 && !dc_alter_configs_resp_decode(&rd, 0, &resp) &&
           resp.n_responses == 1 && resp.responses[0].error_code == 0,
       "setup alter %d accepted", i + 1);
  }

  /* v0 has is_default instead of a source: true exactly when inherited. */
  dc_buf_clear(&out);
  dc_arena_reset(&a);
  req_describe(&out, 0, c3, PROBE_CLIENT);
  dc_describe_configs_resp_t resp;
  memset(&resp, 0, sizeof(resp));
  memset(&rd, 0, sizeof(rd));
  int r = -1;
  if (!dc_tu_write_all(fd, out.data, out.len))
    r = read_resp(fd, DC_API_DESCRIBE_CONFIGS, 0, c3, &in, &rd, &a);
  ok(r == 1 && !dc_describe_configs_resp_decode(&rd, 0, &resp) &&
         resp.n_results == 1 && resp.results[0].error_code == 0 &&
         resp.results[0].n_configs == 2,
     "DescribeConfigs v0: 2 entries");
  int acks_def = -1, sess_def = -1;
  for (int i = 0; r == 1 && !rd.err && resp.n_results == 1 &&
                  i < resp.results[0].n_configs;
       i++) {
    const dc_describe_configs_entry_t *e = &resp.results[0].configs[i];
    if (!strcmp(e->name, "acks"))
      acks_def = e->is_default;
    if (!strcmp(e->name, "session.timeout.ms"))
      sess_def = e->is_default;
  }
  is_int(acks_def, 0, "v0: own acks has is_default false");
  is_int(sess_def, 1, "v0: inherited session.timeout.ms has is_default true");
  if (fd >= 0)
    close(fd);
  dc_buf_free(&out);
  dc_buf_free(&in);
  dc_arena_free(&a);
}

/* ---- hostile connections ----------------------------------------------- */

static int connect_send(const void *p, size_t n) {
  int fd = dc_tu_connect(dd.port);
  if (fd >= 0 && n)
    dc_tu_write_all(fd, p, n); /* may fail if the server already closed */
  return fd;
}

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* A frame with a valid header (key, v, corr) and the given raw body. */
static void raw_frame(dc_buf_t *b, int16_t key, int16_t v, int32_t corr,
                      const void *body, size_t n) {
  size_t off = dc_wr_frame_begin(b);
  hdr(b, key, v, corr);
  dc_buf_append(b, body, n);
  dc_wr_frame_end(b, off);
}

/* Sends one frame on a new connection; the server must either answer with
 * the right correlation id or close. Returns 1 answered, 0 closed, -1 hung
 * or garbage. */
static int answer_or_close(dc_buf_t *frame, int16_t key, int16_t v,
                           int32_t corr) {
  dc_buf_t in;
  dc_arena_t a;
  dc_rd_t rd;
  dc_buf_init(&in);
  dc_arena_init(&a);
  int fd = connect_send(frame->data, frame->len);
  int r = fd < 0 ? -1 : read_resp(fd, key, v, corr, &in, &rd, &a);
  if (fd >= 0)
    close(fd);
  dc_buf_free(&in);
  dc_arena_free(&a);
  return r;
}

static void test_hostile(void) {
  dc_buf_t b;
  dc_buf_init(&b);
  srand(649);

  /* Random garbage: the server may close or wait; it must not fall over. */
  uint8_t junk[4096];
  for (size_t i = 0; i < sizeof(junk); i++)
    junk[i] = (uint8_t)rand();
  int fd_garbage = connect_send(junk, sizeof(junk));
  ok(fd_garbage >= 0, "garbage connection opened");

  /* Negative frame size: nothing to answer, so close. */
  uint8_t neg[8] = {0xff, 0xff, 0xff, 0xf0, 0, 1, 2, 3};
  int fd = connect_send(neg, sizeof(neg));
  ok(fd >= 0 && dc_tu_wait_closed(fd, IO_TIMEOUT_MS, NULL) == 1,
     "negative frame size: server closes the connection");
  if (fd >= 0)
    close(fd);

  /* 200 MiB frame: above the request size limit, close without reading it. */
  uint8_t big[1028];
  memset(big, 0, sizeof(big));
  put32(big, 200u << 20);
  fd = connect_send(big, sizeof(big));
  ok(fd >= 0 && dc_tu_wait_closed(fd, IO_TIMEOUT_MS, NULL) == 1,
     "200 MiB frame size: server closes the connection");
  if (fd >= 0)
    close(fd);

  /* Truncated frame, then we hang up. */
  dc_buf_clear(&b);
  req_describe(&b, 1, 4242, PROBE_CLIENT);
  fd = connect_send(b.data, b.len / 2);
  ok(fd >= 0, "truncated frame sent");
  if (fd >= 0)
    close(fd);

  /* A frame of size 0: complete, but with no header to answer to. */
  uint8_t zero[4] = {0, 0, 0, 0};
  fd = connect_send(zero, sizeof(zero));
  size_t nb = 0;
  ok(fd >= 0 && dc_tu_wait_closed(fd, IO_TIMEOUT_MS, &nb) == 1,
     "empty frame (size 0): server closes the connection");
  if (fd >= 0)
    close(fd);

  /* Unknown API key: Kafka closes without answering. */
  dc_buf_clear(&b);
  raw_frame(&b, 1000, 0, 77, NULL, 0);
  fd = connect_send(b.data, b.len);
  nb = 0;
  ok(fd >= 0 && dc_tu_wait_closed(fd, IO_TIMEOUT_MS, &nb) == 1,
     "unknown API key: server closes the connection");
  is_int(nb, 0, "unknown API key: no bytes answered");
  if (fd >= 0)
    close(fd);

  /* Unsupported version of a known API: an error or a close, no hang. */
  dc_buf_clear(&b);
  raw_frame(&b, DC_API_DESCRIBE_CONFIGS, 99, 78, NULL, 0);
  fd = connect_send(b.data, b.len);
  nb = 0;
  int closed = fd >= 0 ? dc_tu_wait_closed(fd, IO_TIMEOUT_MS, &nb) : 0;
  ok(closed == 1 || nb > 0,
     "DescribeConfigs v99: an error answer or a closed connection");
  if (fd >= 0)
    close(fd);

  /* Malformed bodies: answer with an error or close, never hang. */
  uint8_t huge_count[4];
  put32(huge_count, 0x7fffffff);
  dc_buf_clear(&b);
  raw_frame(&b, DC_API_DESCRIBE_CONFIGS, 1, 79, huge_count, sizeof(huge_count));
  ok(answer_or_close(&b, DC_API_DESCRIBE_CONFIGS, 1, 79) >= 0,
     "DescribeConfigs count 0x7fffffff: error answer or close");

  uint8_t bad_varint[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  dc_buf_clear(&b);
  raw_frame(&b, DC_API_DESCRIBE_CONFIGS, 4, 80, bad_varint, sizeof(bad_varint));
  ok(answer_or_close(&b, DC_API_DESCRIBE_CONFIGS, 4, 80) >= 0,
     "DescribeConfigs v4 with an over-long varint: error answer or close");

  uint8_t neg_str[] = {0, 0, 0, 1, 9, 0xff, 0xf0, 0, 0, 0, 0};
  dc_buf_clear(&b);
  raw_frame(&b, DC_API_DESCRIBE_CONFIGS, 1, 81, neg_str, sizeof(neg_str));
  ok(answer_or_close(&b, DC_API_DESCRIBE_CONFIGS, 1, 81) >= 0,
     "DescribeConfigs with a negative name length: error answer or close");

  uint8_t alter_bad[] = {0, 0, 0, 1, 9, 0, 1, 'x', 0x7f, 0xff, 0xff, 0xff};
  dc_buf_clear(&b);
  raw_frame(&b, DC_API_ALTER_CONFIGS, 0, 82, alter_bad, sizeof(alter_bad));
  ok(answer_or_close(&b, DC_API_ALTER_CONFIGS, 0, 82) >= 0,
     "AlterConfigs with a huge config count: error answer or close");

  /* Random bodies behind valid DescribeConfigs/AlterConfigs headers. */
  int fuzz_ok = 1;
  for (int i = 0; i < 40; i++) {
    uint8_t body[64];
    size_t n = (size_t)(rand() % (int)sizeof(body));
    for (size_t k = 0; k < n; k++)
      body[k] = (uint8_t)rand();
    int16_t key = i % 2 ? DC_API_ALTER_CONFIGS : DC_API_DESCRIBE_CONFIGS;
    int16_t v = (int16_t)(i % 2 ? i % 3 : i % 5);
    dc_buf_clear(&b);
    raw_frame(&b, key, v, 100 + i, body, n);
    if (answer_or_close(&b, key, v, 100 + i) < 0) {
      diag("random body %d (api %d v%d, %zu bytes): hang or bad answer", i,
           key, v, n);
      fuzz_ok = 0;
    }
  }
  ok(fuzz_ok, "40 random request bodies each get an answer or a close");

  probe("garbage, bad sizes, truncation, unknown APIs and malformed bodies");
  ok(dc_tu_daemon_alive(&dd), "dynconfd is still running");
  if (fd_garbage >= 0)
    close(fd_garbage);
  dc_buf_free(&b);
}

/* A valid request, one byte every 50 ms; the server keeps serving others
 * meanwhile and answers the slow one correctly at the end. */
static void test_slow_drip(void) {
  dc_buf_t b, in;
  dc_arena_t a;
  dc_rd_t rd;
  dc_buf_init(&b);
  dc_buf_init(&in);
  dc_arena_init(&a);
  int32_t corr = next_corr++;
  req_describe(&b, 1, corr, PROBE_CLIENT);
  int fd = dc_tu_connect(dd.port);
  int sent_ok = fd >= 0, probes_ok = 1;
  for (size_t i = 0; sent_ok && i < b.len; i++) {
    sent_ok = !dc_tu_write_all(fd, b.data + i, 1);
    dc_tu_sleep_ms(50);
    if (i % 8 == 4 && !probe_fd(good_fd)) {
      diag("probe failed while the slow client was at byte %zu", i);
      probes_ok = 0;
    }
  }
  ok(sent_ok, "slow client sent its %zu bytes one at a time", b.len);
  ok(probes_ok, "well-behaved client answered throughout the slow drip");
  ok(sent_ok && read_resp(fd, DC_API_DESCRIBE_CONFIGS, 1, corr, &in, &rd, &a) == 1 &&
         check_probe_describe(&rd),
     "slow client gets the correct answer");
  if (fd >= 0)
    close(fd);
  dc_buf_free(&b);
  dc_buf_free(&in);
  dc_arena_free(&a);
}

/* 50 requests in one write; 50 answers in order. */
static void test_pipelining(void) {
  dc_buf_t b, in;
  dc_arena_t a;
  dc_rd_t rd;
  dc_buf_init(&b);
  dc_buf_init(&in);
  dc_arena_init(&a);
  for (int i = 0; i < N_PIPELINE; i++)
    req_describe(&b, 1, 5000 + i, PROBE_CLIENT);
  int fd = dc_tu_connect(dd.port);
  ok(fd >= 0 && !dc_tu_write_all(fd, b.data, b.len),
     "%d DescribeConfigs requests sent in one write", N_PIPELINE);
  int in_order = 0, correct = 0;
  for (int i = 0; fd >= 0 && i < N_PIPELINE; i++) {
    dc_arena_reset(&a);
    if (read_resp(fd, DC_API_DESCRIBE_CONFIGS, 1, 5000 + i, &in, &rd, &a) != 1) {
      diag("pipelined response %d missing or out of order", i);
      break;
    }
    in_order++;
    correct += check_probe_describe(&rd);
  }
  is_int(in_order, N_PIPELINE, "all pipelined responses arrived in order");
  is_int(correct, N_PIPELINE, "all pipelined responses are correct");
  if (fd >= 0)
    close(fd);
  dc_buf_free(&b);
  dc_buf_free(&in);
  dc_arena_free(&a);
}

/* Frames right at and just over --max-request-size (MAX_REQ below): a
 * valid DescribeConfigs padded with trailing bytes, which Kafka ignores. */
static void test_size_limit(void) {
  dc_buf_t b, in;
  dc_arena_t a;
  dc_rd_t rd;
  dc_buf_init(&b);
  dc_buf_init(&in);
  dc_arena_init(&a);
  for (int over = 0; over <= 1; over++) {
    int32_t corr = next_corr++;
    dc_buf_clear(&b);
    size_t off = dc_wr_frame_begin(&b);
    hdr(&b, DC_API_DESCRIBE_CONFIGS, 1, corr);
    dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, PROBE_CLIENT, -1,
                                              NULL};
    dc_describe_configs_req_t r = {1, &res, true, false, 0, false};
    dc_describe_configs_req_encode(&b, 1, &r);
    while (b.len - off - 4 < (size_t)MAX_REQ + (size_t)over)
      dc_wr_i8(&b, 0);
    dc_wr_frame_end(&b, off);
    int fd = dc_tu_connect(dd.port);
    if (fd >= 0)
      dc_tu_write_all(fd, b.data, b.len);
    if (!over) {
      dc_arena_reset(&a);
      ok(fd >= 0 &&
             read_resp(fd, DC_API_DESCRIBE_CONFIGS, 1, corr, &in, &rd, &a) == 1 &&
             check_probe_describe(&rd),
         "a request of exactly --max-request-size bytes is answered");
    } else {
      size_t nb = 0;
      ok(fd >= 0 && dc_tu_wait_closed(fd, IO_TIMEOUT_MS, &nb) == 1 && nb == 0,
         "a request one byte over --max-request-size: closed, unanswered");
    }
    if (fd >= 0)
      close(fd);
  }
  dc_buf_free(&b);
  dc_buf_free(&in);
  dc_arena_free(&a);
}

/* Many short-lived connections, some hanging up mid-request. */
static void test_churn(void) {
  dc_buf_t b;
  dc_buf_init(&b);
  req_describe(&b, 1, 1, PROBE_CLIENT);
  int opened = 0;
  for (int i = 0; i < 300; i++) {
    int fd = dc_tu_connect(dd.port);
    if (fd < 0)
      continue;
    opened++;
    if (i % 3 == 1)
      dc_tu_write_all(fd, b.data, b.len / 2);
    else if (i % 3 == 2)
      dc_tu_write_all(fd, b.data, b.len); /* gone before the answer */
    close(fd);
  }
  is_int(opened, 300, "300 short-lived connections, hanging up at random points");
  probe("connection churn");
  dc_buf_free(&b);
}

/* A client that pipelines N_FLOOD requests without reading: the server must
 * keep serving others while that client's socket is full, then deliver
 * every answer in order once it reads. */
#define N_FLOOD 20000
static void test_nonreading_client(void) {
  dc_buf_t b, in;
  dc_arena_t a;
  dc_buf_init(&b);
  dc_buf_init(&in);
  dc_arena_init(&a);
  for (int i = 0; i < N_FLOOD; i++)
    req_describe(&b, 1, 100000 + i, PROBE_CLIENT);
  /* Small socket buffers, so both directions back up quickly. */
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int rcvbuf = 4096;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)dd.port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 &&
      (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) == -1 ||
       setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &rcvbuf, sizeof(rcvbuf)) == -1 ||
       connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)) {
    close(fd);
    fd = -1;
  }
  if (fd < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) == -1) {
    ok(0, "flood connection");
    goto out;
  }
  /* Write until the socket pushes back (or everything is out). */
  size_t sent = 0;
  while (sent < b.len) {
    ssize_t w = send(fd, b.data + sent, b.len - sent, MSG_NOSIGNAL);
    if (w <= 0)
      break;
    sent += (size_t)w;
  }
  diag("flood: %zu of %zu request bytes accepted before reading", sent, b.len);
  probe("a client flooded requests without reading its answers");

  /* Now read everything, writing the rest as the socket allows. */
  int next = 0, in_order = 1;
  int64_t deadline = dc_tu_now_ms() + 60000;
  while (next < N_FLOOD && dc_tu_now_ms() < deadline) {
    struct pollfd pfd = {fd, (short)(POLLIN | (sent < b.len ? POLLOUT : 0)), 0};
    if (poll(&pfd, 1, 1000) <= 0)
      continue;
    if (pfd.revents & POLLOUT) {
      ssize_t w = send(fd, b.data + sent, b.len - sent, MSG_NOSIGNAL);
      if (w > 0)
        sent += (size_t)w;
    }
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
      if (dc_buf_reserve(&in, 65536))
        break;
      ssize_t k = recv(fd, in.data + in.len, 65536, 0);
      if (k <= 0 && !(k < 0 && errno == EAGAIN))
        break;
      if (k > 0)
        in.len += (size_t)k;
      int32_t size;
      while (dc_frame_peek(in.data, in.len, MAX_RESP, &size) == 1) {
        dc_rd_t rd;
        int32_t corr;
        dc_arena_reset(&a);
        dc_rd_init(&rd, in.data + 4, (size_t)size, &a);
        dc_resp_header_decode(&rd, DC_API_DESCRIBE_CONFIGS, 1, &corr);
        if (corr != 100000 + next || !check_probe_describe(&rd))
          in_order = 0;
        next++;
        dc_buf_consume(&in, 4 + (size_t)size);
      }
    }
  }
  is_int(next, N_FLOOD, "the flooding client gets all %d answers", N_FLOOD);
  ok(in_order, "in order and correct");
out:
  if (fd >= 0)
    close(fd);
  dc_buf_free(&b);
  dc_buf_free(&in);
  dc_arena_free(&a);
}

/* ApiVersions v7: answered in the v0 body format with error 35 and key
 * 18's range, so a newer client can retry with a version we speak. */
static void test_apiversions_fallback(void) {
  dc_buf_t b, in;
  dc_arena_t a;
  dc_rd_t rd;
  dc_buf_init(&b);
  dc_buf_init(&in);
  dc_arena_init(&a);
  /* Our encoder refuses v7, so write the v3-shaped body by hand (compact
   * strings and an empty tag section), as a newer client would. */
  size_t off = dc_wr_frame_begin(&b);
  hdr(&b, DC_API_API_VERSIONS, 7, 700);
  dc_wr_str(&b, true, "future-client");
  dc_wr_str(&b, true, "9.9");
  dc_wr_tags_empty(&b);
  dc_wr_frame_end(&b, off);
  int fd = dc_tu_connect(dd.port);
  int r = -1;
  if (fd >= 0 && !dc_tu_write_all(fd, b.data, b.len))
    r = read_resp(fd, DC_API_API_VERSIONS, 0, 700, &in, &rd, &a);
  ok(r == 1, "ApiVersions v7 is answered (header v0, same correlation id)");
  dc_apiversions_resp_t av;
  memset(&av, 0, sizeof(av));
  int dec = r == 1 ? dc_apiversions_resp_decode(&rd, 0, &av) : -1;
  ok(dec == 0, "the answer decodes as an ApiVersions v0 body");
  is_int(dc_rd_remaining(&rd), 0, "and has nothing after the v0 body");
  is_int(av.error_code, 35, "error UNSUPPORTED_VERSION (35)");
  int found = 0;
  for (int i = 0; dec == 0 && i < av.n_api_keys; i++)
    if (av.api_keys[i].api_key == DC_API_API_VERSIONS) {
      found = 1;
      is_int(av.api_keys[i].min_version, 0, "key 18 min version 0");
      is_int(av.api_keys[i].max_version, 3, "key 18 max version 3");
    }
  ok(found, "the answer lists key 18's range");
  /* The connection stays usable: the client retries with v3. */
  dc_buf_clear(&b);
  req_apiversions(&b, 3, 701);
  dc_arena_reset(&a);
  r = -1;
  if (fd >= 0 && !dc_tu_write_all(fd, b.data, b.len))
    r = read_resp(fd, DC_API_API_VERSIONS, 3, 701, &in, &rd, &a);
  ok(r == 1 && !dc_apiversions_resp_decode(&rd, 3, &av) && av.error_code == 0,
     "retry with ApiVersions v3 on the same connection succeeds");
  if (fd >= 0)
    close(fd);
  dc_buf_free(&b);
  dc_buf_free(&in);
  dc_arena_free(&a);
}

int main(void) {
  char tmp[512], data_dir[600], log_path[600];
  char errstr[256];
  int idle[N_IDLE];
  if (dc_tu_tmpdir(tmp, sizeof(tmp))) {
    printf("Bail out! cannot create a scratch dir\n");
    return 1;
  }
  snprintf(data_dir, sizeof(data_dir), "%s/data", tmp);
  snprintf(log_path, sizeof(log_path), "%s/dynconfd.log", tmp);
  mkdir(data_dir, 0700);
  static const char *const args[] = {"--max-request-size", "65536", NULL};
  if (!ok(dc_tu_daemon_start(&dd, data_dir, log_path, args, errstr,
                             sizeof(errstr)) == 0,
          "dynconfd starts")) {
    diag("%s", errstr);
    dc_tu_daemon_log_tail(&dd, 20);
    dc_tu_rmrf(tmp);
    return done_testing();
  }

  int n_idle = 0;
  for (int i = 0; i < N_IDLE; i++)
    if ((idle[i] = dc_tu_connect(dd.port)) >= 0)
      n_idle++;
  is_int(n_idle, N_IDLE, "%d idle connections opened and held", N_IDLE);

  good_fd = dc_tu_connect(dd.port);
  ok(good_fd >= 0, "well-behaved client connected");
  setup_and_v0();
  probe("setup, with 200 idle connections open");

  test_hostile();
  test_slow_drip();
  test_pipelining();
  test_size_limit();
  test_churn();
  test_nonreading_client();
  test_apiversions_fallback();

  /* An idle connection held through all of it still works. */
  ok(idle[N_IDLE - 1] >= 0 && probe_fd(idle[N_IDLE - 1]),
     "a connection idle since the start is still served");
  for (int i = 0; i < N_IDLE; i++)
    if (idle[i] >= 0)
      close(idle[i]);
  probe("everything");
  ok(dc_tu_daemon_alive(&dd), "dynconfd is still running at the end");
  if (good_fd >= 0)
    close(good_fd);
  is_int(dc_tu_daemon_stop(&dd), 0, "SIGTERM: dynconfd exits 0");
  if (tap_failed)
    dc_tu_daemon_log_tail(&dd, 30);
  dc_tu_rmrf(tmp);
  return done_testing();
}
