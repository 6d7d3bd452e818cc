/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loadgen: a pipelined Kafka-protocol load generator.
 *
 * One thread, epoll, non-blocking sockets. Every connection keeps
 * --pipeline requests in flight; each request is a pre-encoded frame (the
 * codec's encoders build it once) whose correlation id is patched per send.
 * Responses are matched by correlation id (Kafka answers in order on a
 * connection, so a mismatch is an error), decoded with the codec and
 * checked for error codes. Latency is send->receive, recorded in an
 * HDR-style log-linear histogram (0.1 % precision, fixed memory).
 *
 * --mock starts librdkafka's mock cluster inside this process and targets
 * it (the baseline peer). Its broker thread then shares this process and the
 * machine's cores with the load generator.
 *
 * Security (bench/lg_tls.c, bench/lg_setup.c): --tls-ca makes every
 * connection TLS (SSL_read/SSL_write inside the same epoll loop), and
 * --sasl-mechanism authenticates each one (SaslHandshake + SaslAuthenticate)
 * while it is set up, before the load starts. --setup N measures set-up
 * itself instead: N connections one after another, each TCP [+ TLS
 * handshake] [+ SASL] + one ApiVersions round trip, then closed.
 *
 * Output: a human summary, then one machine-readable line starting with
 * "RESULT " (key=value pairs) for bench/run.sh and bench/run-security.sh.
 * Exit status: 0 when requests completed and there were no errors, else 1.
 */
#include "client/gssapi_client.h"
#include "codec/proto.h"
#include "lg_run.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (16u << 20) /* a response larger than this is an error */
#define DRAIN_TIMEOUT_NS (10ull * 1000000000ull)

static volatile sig_atomic_t g_interrupted;
static void on_signal(int sig) {
  (void)sig;
  g_interrupted = 1;
}

/* This process's CPU time (user + system) so far, in seconds. */
static double process_cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* errno as a sentence; EPROTO is a TLS error that lg_tls names. */
static const char *errno_str(int e) {
  return e == EPROTO ? lg_tls_last_error() : strerror(e);
}

/* The first few problems say what went wrong; the counters say the rest. */
static void log_problem(run_t *r, const char *fmt, const char *detail) {
  if (r->logged++ < 5) {
    fprintf(stderr, "loadgen: ");
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
  }
}

/* ---- requests ----------------------------------------------------------- */
/* One request frame for the client named in c into b; -1 after saying
 * why. */
static int build_one(const cfg_t *c, dc_buf_t *b) {
  dc_req_header_t h = {
      .api_key = lg_api_key(c->api),
      .api_version = c->version,
      .correlation_id = 0,
      .client_id = (char *)"dynconf-loadgen",
  };
  size_t off = dc_wr_frame_begin(b);
  int err = dc_req_header_encode(b, &h);
  if (!err)
    err = lg_api_encode(c, b);
  dc_wr_frame_end(b, off);
  if (err || b->err) {
    fprintf(stderr, "loadgen: cannot encode %s v%d: %s\n",
            lg_api_title(c->api), c->version,
            dc_err_str(err ? err : b->err));
    return -1;
  }
  return 0;
}

/* The request frames sent in turn: one, or one per client of --clients. */
static int build_templates(run_t *r) {
  int n = r->cfg.clients > 1 ? r->cfg.clients : 1;
  r->tmpls = calloc((size_t)n, sizeof(*r->tmpls));
  if (!r->tmpls)
    return -1;
  r->n_tmpls = n;
  for (int i = 0; i < n; i++) {
    cfg_t c = r->cfg;
    char name[300];
    if (n > 1) {
      snprintf(name, sizeof(name), "%s%07d", r->cfg.client_name, i);
      c.client_name = name;
    }
    dc_buf_init(&r->tmpls[i]);
    if (build_one(&c, &r->tmpls[i]))
      return -1;
  }
  return 0;
}

/* Correlation id sits after size(4), api_key(2), api_version(2). */
#define CORR_OFF 8

static bool may_send(const run_t *r) {
  if (r->stopping)
    return false;
  return r->cfg.requests == 0 || r->sent < r->cfg.requests;
}

/* Queue requests until the pipeline is full, then write what the socket
 * takes. Returns -1 when the connection failed. */
static int conn_fill_and_flush(run_t *r, conn_t *c) {
  uint64_t t = 0;
  while (c->inflight < r->cfg.pipeline && may_send(r)) {
    if (!t)
      t = now_ns();
    size_t at = c->out.len;
    const dc_buf_t *tmpl = /* no division on the one-request path */
        &r->tmpls[r->n_tmpls > 1 ? r->next_tmpl++ % (uint64_t)r->n_tmpls : 0];
    dc_buf_append(&c->out, tmpl->data, tmpl->len);
    if (c->out.err)
      return -1;
    uint32_t corr = c->next_corr++ & 0x7fffffffu; /* stay positive */
    uint8_t *p = c->out.data + at + CORR_OFF;
    p[0] = (uint8_t)(corr >> 24);
    p[1] = (uint8_t)(corr >> 16);
    p[2] = (uint8_t)(corr >> 8);
    p[3] = (uint8_t)corr;
    slot_t *s = &c->ring[(c->head + c->inflight) % r->cfg.pipeline];
    s->corr = (int32_t)corr;
    s->sent_ns = t;
    c->inflight++;
    r->sent++;
  }
  while (c->out_off < c->out.len) {
    /* TLS: WANT_READ/WANT_WRITE come back as EAGAIN. Every epoll event
     * (edge-triggered, both directions) runs conn_read and then this, so
     * the retry happens on the socket edge OpenSSL waits for. */
    ssize_t n = c->ssl ? lg_tls_send(c->ssl, c->out.data + c->out_off,
                                     c->out.len - c->out_off, NULL)
                       : send(c->fd, c->out.data + c->out_off,
                              c->out.len - c->out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c->out_off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      /* Drop the written prefix so the buffer stays pipeline-sized;
       * EPOLLOUT (edge-triggered) resumes us. */
      dc_buf_consume(&c->out, c->out_off);
      c->out_off = 0;
      return 0;
    }
    return -1;
  }
  c->out.len = 0;
  c->out_off = 0;
  return 0;
}

/* Checks one response body; returns true when it reports success. */
static bool response_ok(run_t *r, const uint8_t *p, size_t len) {
  dc_rd_t rd;
  int32_t corr;
  dc_rd_init(&rd, p, len, &r->arena);
  dc_resp_header_decode(&rd, lg_api_key(r->cfg.api), r->cfg.version, &corr);
  bool good = !rd.err && lg_api_answer_ok(&r->cfg, &rd);
  dc_arena_reset(&r->arena);
  return good;
}

static void conn_fail(run_t *r, conn_t *c, const char *why) {
  if (c->dead)
    return;
  c->dead = true;
  r->conn_failures++;
  log_problem(r, "connection failed: %s", why);
  /* Everything in flight on it is lost. */
  r->errors += (uint64_t)c->inflight;
  r->lost += (uint64_t)c->inflight;
  c->inflight = 0;
  lg_tls_close(c->ssl);
  c->ssl = NULL;
  close(c->fd);
  c->fd = -1;
}

/* Handles every complete response in c->in; *used gets the bytes they
 * took. False when the connection failed. */
static bool consume_responses(run_t *r, conn_t *c, hist_t *h, size_t *used) {
  uint64_t t = now_ns(); /* one clock read per batch of responses */
  size_t pos = 0;
  for (;;) {
    int32_t size;
    int pk = dc_frame_peek(c->in.data + pos, c->in.len - pos, MAX_FRAME,
                           &size);
    if (pk == 0)
      break;
    if (pk < 0 || size < 4) {
      conn_fail(r, c, "bad response frame");
      return false;
    }
    const uint8_t *f = c->in.data + pos + 4;
    int32_t corr = (int32_t)(((uint32_t)f[0] << 24) |
                             ((uint32_t)f[1] << 16) |
                             ((uint32_t)f[2] << 8) | f[3]);
    slot_t *s = &c->ring[c->head];
    if (c->inflight == 0 || s->corr != corr) {
      conn_fail(r, c, "response correlation id does not match");
      return false;
    }
    h_record(h, t - s->sent_ns);
    r->rx_bytes += 4 + (uint64_t)size;
    c->head = (c->head + 1) % r->cfg.pipeline;
    c->inflight--;
    r->done++;
    if (!response_ok(r, f, (size_t)size)) {
      r->resp_errors++;
      r->errors++;
      log_problem(r, "%s response carries an error or does not decode",
                  lg_api_title(r->cfg.api));
    }
    pos += 4 + (size_t)size;
  }
  *used = pos;
  return true;
}

/* Reads until EAGAIN and consumes every complete response. */
static void conn_read(run_t *r, conn_t *c, hist_t *h) {
  for (;;) {
    if (dc_buf_reserve(&c->in, 65536)) {
      conn_fail(r, c, "out of memory");
      return;
    }
    /* TLS: drained until WANT_READ (or WANT_WRITE: see the send path). */
    ssize_t n = c->ssl ? lg_tls_recv(c->ssl, c->in.data + c->in.len,
                                     c->in.cap - c->in.len, NULL)
                       : recv(c->fd, c->in.data + c->in.len,
                              c->in.cap - c->in.len, 0);
    if (n == 0) {
      conn_fail(r, c, "closed by peer");
      return;
    }
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        break;
      conn_fail(r, c, errno_str(errno));
      return;
    }
    c->in.len += (size_t)n;
    size_t pos;
    if (!consume_responses(r, c, h, &pos))
      return;
    dc_buf_consume(&c->in, pos);
  }
}

/* ---- setup -------------------------------------------------------------- */
static int connect_to(const char *target) {
  char host[256], port[32];
  if (lg_split_hostport(target, host, sizeof(host), port, sizeof(port))) {
    fprintf(stderr, "loadgen: bad target \"%s\" (want HOST:PORT)\n", target);
    return -1;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  int rc = getaddrinfo(host, port, &hints, &ai);
  if (rc) {
    fprintf(stderr, "loadgen: %s: %s\n", target, gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    /* Blocking connect keeps setup simple; loopback connects at once. */
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
      break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0) {
    fprintf(stderr, "loadgen: cannot connect to %s: %s\n", target,
            strerror(errno));
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    fprintf(stderr, "loadgen: fcntl: %s\n", strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

/* ---- the librdkafka mock cluster (baseline peer) ------------------------ */
typedef struct mock {
  rd_kafka_t *rk;                 /* owned: the handle the cluster needs */
  rd_kafka_mock_cluster_t *mcluster; /* owned */
  char target[256];
} mock_t;

static int mock_start(mock_t *m) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  /* A producer with no bootstrap servers: it only hosts the cluster. */
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
  m->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!m->rk) {
    rd_kafka_conf_destroy(conf);
    fprintf(stderr, "loadgen: rd_kafka_new: %s\n", errstr);
    return -1;
  }
  m->mcluster = rd_kafka_mock_cluster_new(m->rk, 1);
  if (!m->mcluster) {
    fprintf(stderr, "loadgen: rd_kafka_mock_cluster_new failed\n");
    rd_kafka_destroy(m->rk);
    m->rk = NULL;
    return -1;
  }
  /* "host:port[,host:port...]"; one broker, take the first. */
  const char *bs = rd_kafka_mock_cluster_bootstraps(m->mcluster);
  size_t n = strcspn(bs, ",");
  if (n >= sizeof(m->target))
    n = sizeof(m->target) - 1;
  memcpy(m->target, bs, n);
  m->target[n] = 0;
  return 0;
}

static void mock_stop(mock_t *m) {
  if (m->mcluster)
    rd_kafka_mock_cluster_destroy(m->mcluster);
  if (m->rk)
    rd_kafka_destroy(m->rk);
}

/* ---- connection security ------------------------------------------------ */
#define SETUP_TIMEOUT_NS (10ull * 1000000000ull)


/* Makes fd (connected to host) what the flags ask for: TLS handshake,
 * then SASL, then (with apiversions) one ApiVersions round trip. *ssl gets
 * the TLS session (caller owns; NULL on plaintext). -1 with errstr. */
static int secure_conn(run_t *r, int fd, const char *host, bool apiversions,
                       SSL **ssl, char *errstr, size_t errstr_size) {
  uint64_t deadline = now_ns() + SETUP_TIMEOUT_NS;
  *ssl = NULL;
  if (r->tls) {
    *ssl = lg_tls_connect(r->tls, fd, host, deadline, errstr, errstr_size);
    if (!*ssl)
      return -1;
  }
  if ((r->cfg.sasl.mechanism &&
       lg_sasl_authenticate(fd, *ssl, &r->cfg.sasl, deadline, NULL, errstr,
                            errstr_size)) ||
      (apiversions && lg_apiversions(fd, *ssl, deadline, errstr,
                                     errstr_size))) {
    lg_tls_close(*ssl);
    *ssl = NULL;
    return -1;
  }
  if (*ssl && !r->tls_desc[0])
    lg_tls_describe(*ssl, r->tls_desc, sizeof(r->tls_desc));
  return 0;
}

/* --setup: connections one after another, each set up, checked with one
 * ApiVersions round trip, and closed. The histogram gets each set-up time
 * (connect() to the ApiVersions answer); r->done counts the successes.
 * Stops after 10 failures: by then the cause is clear. */
static int run_setup(run_t *r, const char *target, uint64_t *elapsed_ns) {
  char host[256], port[32], why[512];
  if (lg_split_hostport(target, host, sizeof(host), port, sizeof(port))) {
    fprintf(stderr, "loadgen: bad target \"%s\" (want HOST:PORT)\n", target);
    return -1;
  }
  double cpu0 = process_cpu_s(); /* leaves out start-up (TLS init etc.) */
  uint64_t start = now_ns();
  uint64_t deadline = r->cfg.duration_set
                          ? start + (uint64_t)(r->cfg.duration_s * 1e9)
                          : 0;
  for (uint64_t i = 0; i < r->cfg.setup_count && !g_interrupted; i++) {
    if (deadline && now_ns() >= deadline)
      break;
    r->sent++;
    uint64_t t0 = now_ns();
    int fd = connect_to(target);
    SSL *ssl = NULL;
    if (fd < 0 || secure_conn(r, fd, host, true, &ssl, why, sizeof(why))) {
      if (fd >= 0)
        log_problem(r, "connection set-up failed: %s", why);
      r->errors++;
      r->conn_failures++;
    } else {
      h_record(r->hist, now_ns() - t0);
      r->done++;
    }
    lg_tls_close(ssl);
    if (fd >= 0)
      close(fd);
    if (r->errors >= 10)
      break;
  }
  *elapsed_ns = now_ns() - start;
  r->setup_cpu_s = process_cpu_s() - cpu0;
  return 0;
}

/* ---- main loop ---------------------------------------------------------- */

/* Opens every connection, set up as the flags ask, and adds it to epfd. */
static int open_conns(run_t *r, const char *target, int epfd) {
  const cfg_t *cfg = &r->cfg;
  r->conns = calloc((size_t)cfg->connections, sizeof(*r->conns));
  if (!r->conns)
    return -1;
  for (int i = 0; i < cfg->connections; i++)
    r->conns[i].fd = -1;
  for (int i = 0; i < cfg->connections; i++) {
    conn_t *c = &r->conns[i];
    c->ring = calloc((size_t)cfg->pipeline, sizeof(*c->ring));
    if (!c->ring)
      return -1;
    if ((c->fd = connect_to(target)) < 0)
      return -1;
    if (r->tls || cfg->sasl.mechanism) {
      char host[256], port[32], why[512];
      lg_split_hostport(target, host, sizeof(host), port, sizeof(port));
      if (secure_conn(r, c->fd, host, false, &c->ssl, why, sizeof(why))) {
        fprintf(stderr, "loadgen: connection %d to %s: %s\n", i, target, why);
        return -1;
      }
    }
    /* Edge-triggered: reads drain to EAGAIN, writes stop at EAGAIN. */
    struct epoll_event ev = {
        .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
      perror("loadgen: epoll_ctl");
      return -1;
    }
  }
  return 0;
}

/* At time t: whether the load is over (stopped and drained, every
 * connection dead, or the drain timed out); starts stopping at the
 * deadline, on an interrupt or once --requests are sent. */
static bool load_over(run_t *r, uint64_t t, uint64_t deadline,
                      uint64_t *stop_at) {
  if (!r->stopping && ((deadline && t >= deadline) || g_interrupted)) {
    r->stopping = true;
    *stop_at = t;
  }
  if (!r->stopping && !may_send(r)) { /* --requests: all sent */
    r->stopping = true;
    *stop_at = t;
  }
  uint64_t outstanding = r->sent - r->done - r->lost;
  int alive = 0;
  for (int i = 0; i < r->cfg.connections; i++)
    alive += !r->conns[i].dead;
  if ((r->stopping && outstanding == 0) || !alive)
    return true;
  if (r->stopping && t - *stop_at > DRAIN_TIMEOUT_NS) {
    log_problem(r, "%s", "responses still missing after the drain timeout");
    r->errors += outstanding;
    return true;
  }
  return false;
}

/* epoll_wait's timeout at time t: 100 ms, less to wake at the deadline. */
static int wait_ms(const run_t *r, uint64_t t, uint64_t deadline) {
  int timeout_ms = 100;
  if (deadline && !r->stopping && deadline > t &&
      (deadline - t) / 1000000 < (uint64_t)timeout_ms)
    timeout_ms = (int)((deadline - t) / 1000000) + 1;
  return timeout_ms;
}

static int run_load(run_t *r, const char *target, uint64_t *elapsed_ns) {
  const cfg_t *cfg = &r->cfg;
  int rc = -1;
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) {
    perror("loadgen: epoll_create1");
    return -1;
  }
  if (open_conns(r, target, epfd))
    goto out;
  uint64_t start = now_ns(), last = start, stop_at = 0;
  uint64_t deadline = cfg->requests && !cfg->duration_set
                          ? 0
                          : start + (uint64_t)(cfg->duration_s * 1e9);
  for (int i = 0; i < cfg->connections; i++)
    if (conn_fill_and_flush(r, &r->conns[i]))
      conn_fail(r, &r->conns[i], errno_str(errno));

  struct epoll_event evs[64];
  for (;;) {
    uint64_t t = now_ns();
    if (load_over(r, t, deadline, &stop_at))
      break;
    int n = epoll_wait(epfd, evs, 64, wait_ms(r, t, deadline));
    if (n < 0 && errno != EINTR) {
      perror("loadgen: epoll_wait");
      goto out;
    }
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      if (c->dead)
        continue;
      uint64_t before = r->done;
      conn_read(r, c, r->hist);
      if (r->done != before)
        last = now_ns();
      if (!c->dead && conn_fill_and_flush(r, c))
        conn_fail(r, c, errno_str(errno));
    }
  }
  /* Throughput window: start to the last response received. */
  *elapsed_ns = last - start;
  rc = 0;
out:
  close(epfd);
  return rc;
}

static void free_run(run_t *r) {
  if (r->conns) {
    for (int i = 0; i < r->cfg.connections; i++) {
      conn_t *c = &r->conns[i];
      lg_tls_close(c->ssl);
      if (c->fd >= 0)
        close(c->fd);
      dc_buf_free(&c->in);
      dc_buf_free(&c->out);
      free(c->ring);
    }
    free(r->conns);
  }
  dc_gssapi_creds_destroy(r->cfg.sasl.krb_creds);
  r->cfg.sasl.krb_creds = NULL;
  for (int i = 0; i < r->n_tmpls; i++)
    dc_buf_free(&r->tmpls[i]);
  free(r->tmpls);
  dc_arena_free(&r->arena);
  free(r->hist);
  lg_tls_destroy(r->tls);
}

/* The request template, the histogram and the TLS context; -1 after
 * saying why. */
static int run_init(run_t *r) {
  dc_arena_init(&r->arena);
  r->hist = calloc(1, sizeof(*r->hist));
  if (!r->hist || build_templates(r))
    return -1;
  if (r->cfg.tls_ca) {
    char why[512];
    r->tls = lg_tls_new(r->cfg.tls_ca, r->cfg.tls_cert, r->cfg.tls_key, why,
                        sizeof(why));
    if (!r->tls) {
      fprintf(stderr, "loadgen: %s\n", why);
      return -1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  run_t r;
  memset(&r, 0, sizeof(r));
  if (lg_parse_args(argc, argv, &r.cfg)) {
    lg_usage(stderr);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  if (run_init(&r)) {
    free_run(&r);
    return 2;
  }

  mock_t mock = {0};
  const char *target = r.cfg.target;
  if (r.cfg.mock) {
    if (mock_start(&mock)) {
      free_run(&r);
      return 2;
    }
    target = mock.target;
  }

  uint64_t elapsed = 0;
  int rc = r.cfg.setup_count ? run_setup(&r, target, &elapsed)
                             : run_load(&r, target, &elapsed);
  if (r.cfg.mock)
    mock_stop(&mock);
  if (rc) {
    free_run(&r);
    return 2;
  }

  /* This process's CPU time: the load generator, plus the mock cluster's
   * threads in a --mock run. Tells the reader who was the bottleneck. */
  double cpu = process_cpu_s();
  double secs = (double)elapsed / 1e9;
  int ret = r.cfg.setup_count ? lg_report_setup(&r, target, secs, r.setup_cpu_s)
                              : lg_report_load(&r, target, secs, cpu);
  free_run(&r);
  return ret;
}
