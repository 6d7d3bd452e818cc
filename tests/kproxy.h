/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kproxy: a small threaded TCP proxy for tests, placed in front of ONE
 * Kafka broker (e.g. a librdkafka mock broker). It forwards bytes both ways
 * and sniffs frames with our codec:
 *   - group requests (OffsetCommit, JoinGroup, Heartbeat, LeaveGroup,
 *     SyncGroup) go into a log with their client id and version; a
 *     JoinGroup also with its group id, session and rebalance timeouts,
 *     member id and group.instance.id, so a test can check what went on
 *     the wire. Every request is also counted per api key;
 *   - Metadata (3) and FindCoordinator (10) responses: rewrites every
 *     advertised broker/coordinator address to the proxy's own, so the
 *     client keeps talking through the proxy after bootstrapping.
 * Responses are matched to requests by correlation id per connection.
 * kproxy_start_observed() also hands every request frame to the test's
 * own function (to decode what kproxy does not); kproxy_set_upstream()
 * sends new connections elsewhere and kproxy_drop() closes every proxied
 * connection, as a server closing idle connections would.
 *
 * Header-only (static inline functions). One thread serves every
 * connection with poll(); writes are blocking, which is fine on loopback
 * with peers (librdkafka, its mock broker) that always read.
 *
 * Ownership: the caller owns the kproxy_t (static storage: it is large);
 * kproxy_start() allocates sockets, buffers and the thread, kproxy_stop()
 * frees them all. The log and counters are read under the lock through
 * the query functions, from any thread; after kproxy_stop() directly.
 *
 * TLS: tests/tlsproxy.h puts a TLS-terminating front in front of a kproxy;
 * kproxy_start_advertising() then makes the rewritten addresses name the
 * front's port, so clients stay on TLS.
 */
#ifndef DC_KPROXY_H
#define DC_KPROXY_H

#include "testutil.h"

#include "codec/proto.h"

#include <pthread.h>

#define KP_MAX_CONNS 64
#define KP_MAX_LOG 8192
#define KP_MAX_FRAME (64 * 1024 * 1024)
#define KP_API_OFFSET_COMMIT 8
#define KP_API_FIND_COORDINATOR 10
#define KP_API_JOIN_GROUP 11
#define KP_API_HEARTBEAT 12
#define KP_API_LEAVE_GROUP 13
#define KP_API_SYNC_GROUP 14

/* One group request as seen on the wire. */
typedef struct kp_req {
  int16_t key, version;
  char client_id[128];
  /* JoinGroup only (when it decoded) */
  char group_id[128];
  char member_id[128];
  char instance_id[96]; /* "" when absent (v < 5) or null */
  bool has_instance_id;
  int32_t session_timeout_ms;   /* -1 when not a JoinGroup */
  int32_t rebalance_timeout_ms; /* v1+; -1 for v0 */
} kp_req_t;

/* A request waiting for its response (what to decode it as). */
typedef struct kp_inflight {
  int32_t corr;
  int16_t key, ver;
} kp_inflight_t;

typedef struct kp_conn {
  int cfd, sfd;       /* client side, upstream side; -1 = free slot */
  int id, n_req;      /* accept number (from 1); requests so far */
  dc_buf_t cin, sin;  /* bytes read and not yet forwarded (owned) */
  kp_inflight_t *inf; /* owned, n_inf used of cap_inf */
  size_t n_inf, cap_inf;
} kp_conn_t;

/* Sees one client request frame before it is forwarded, on the proxy
 * thread: conn is the connection's accept number (from 1), seq the
 * request's position on it (from 0), p the frame without its size field
 * (n bytes, valid during the call only). */
typedef void kp_request_fn(void *opaque, int conn, int seq, const uint8_t *p,
                           size_t n);

typedef struct kproxy {
  int lfd, port;      /* our listening socket and its port */
  int advertise_port; /* what rewritten addresses name (default: port) */
  int wake[2];        /* self-pipe: kproxy_stop() and kproxy_drop() */
  pthread_t thread;
  bool started;
  kp_request_fn *on_request; /* NULL = none */
  void *on_request_opaque;
  kp_conn_t conns[KP_MAX_CONNS]; /* proxy thread only */

  pthread_mutex_t lock; /* guards everything below */
  int upstream_port;    /* the broker we front (127.0.0.1) */
  bool stop;            /* kproxy_stop() asked */
  int drop_asked, drop_done; /* generations of kproxy_drop() requests */
  kp_req_t log[KP_MAX_LOG];
  int n_log, n_log_dropped;
  int n_accepted, n_metadata_rewritten, n_findcoord_rewritten;
  int n_dropped;        /* connections closed by kproxy_drop() */
  int n_rewrite_errors; /* responses we could not decode (forwarded as-is) */
  int n_api_requests[64]; /* requests seen per api key (keys < 64) */
  int n_unanswered; /* requests of open connections not answered yet */
} kproxy_t;

static inline void kp_conn_close(kproxy_t *kp, kp_conn_t *c) {
  pthread_mutex_lock(&kp->lock);
  kp->n_unanswered -= (int)c->n_inf;
  pthread_mutex_unlock(&kp->lock);
  if (c->cfd >= 0)
    close(c->cfd);
  if (c->sfd >= 0)
    close(c->sfd);
  c->cfd = c->sfd = -1;
  dc_buf_free(&c->cin);
  dc_buf_free(&c->sin);
  free(c->inf);
  c->inf = NULL;
  c->n_inf = c->cap_inf = 0;
}

/* JoinGroup's body after the header: group_id, session_timeout_ms,
 * rebalance_timeout_ms (v1+), member_id, group_instance_id (v5+,
 * nullable), ... into r (left as it was when it does not decode). */
static inline void kp_sniff_join(dc_rd_t *rd, int16_t ver, kp_req_t *r) {
  /* Our codec does not know key 11, so it read the v1 header; from v6
   * (flexible) a tag section follows the client id. */
  bool flex = ver >= 6;
  if (flex)
    dc_rd_tags(rd);
  char *gid = dc_rd_str(rd, flex, false);
  int32_t session = dc_rd_i32(rd);
  int32_t rebalance = ver >= 1 ? dc_rd_i32(rd) : -1;
  char *member = dc_rd_str(rd, flex, false);
  char *inst = ver >= 5 ? dc_rd_str(rd, flex, true) : NULL;
  if (rd->err)
    return;
  snprintf(r->group_id, sizeof(r->group_id), "%s", gid);
  snprintf(r->member_id, sizeof(r->member_id), "%s", member);
  r->has_instance_id = inst != NULL;
  snprintf(r->instance_id, sizeof(r->instance_id), "%s", inst ? inst : "");
  r->session_timeout_ms = session;
  r->rebalance_timeout_ms = rebalance;
}

/* A client request frame (payload without the size field): show it to
 * the test's function, remember its key for the response, count it, and
 * log it when it is a group request. */
static inline void kp_sniff_request(kproxy_t *kp, kp_conn_t *c,
                                    const uint8_t *p, size_t n) {
  int seq = c->n_req++;
  if (kp->on_request)
    kp->on_request(kp->on_request_opaque, c->id, seq, p, n);
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, p, n, &a);
  dc_req_header_t h;
  if (dc_req_header_decode(&rd, &h)) {
    dc_arena_free(&a);
    return;
  }
  if (c->n_inf == c->cap_inf) {
    size_t cap = c->cap_inf ? c->cap_inf * 2 : 16;
    kp_inflight_t *ni = realloc(c->inf, cap * sizeof(*ni));
    if (ni) {
      c->inf = ni;
      c->cap_inf = cap;
    }
  }
  bool tracked = c->n_inf < c->cap_inf;
  if (tracked)
    c->inf[c->n_inf++] =
        (kp_inflight_t){h.correlation_id, h.api_key, h.api_version};
  bool group =
      h.api_key == KP_API_OFFSET_COMMIT ||
      (h.api_key >= KP_API_JOIN_GROUP && h.api_key <= KP_API_SYNC_GROUP);
  kp_req_t r;
  if (group) {
    memset(&r, 0, sizeof(r));
    r.key = h.api_key;
    r.version = h.api_version;
    r.session_timeout_ms = r.rebalance_timeout_ms = -1;
    snprintf(r.client_id, sizeof(r.client_id), "%s",
             h.client_id ? h.client_id : "");
    if (h.api_key == KP_API_JOIN_GROUP)
      kp_sniff_join(&rd, h.api_version, &r);
  }
  pthread_mutex_lock(&kp->lock);
  if (h.api_key >= 0 && h.api_key < 64)
    kp->n_api_requests[h.api_key]++;
  if (tracked)
    kp->n_unanswered++;
  if (group && kp->n_log < KP_MAX_LOG)
    kp->log[kp->n_log++] = r;
  else if (group)
    kp->n_log_dropped++;
  pthread_mutex_unlock(&kp->lock);
  dc_arena_free(&a);
}

/* Re-encodes a Metadata response with every broker at the proxy's address.
 * Returns 0 with the whole new frame in out, or -1. */
static inline int kp_rewrite_metadata(kproxy_t *kp, int16_t ver,
                                      const uint8_t *p, size_t n,
                                      dc_buf_t *out) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, p, n, &a);
  int32_t corr;
  dc_metadata_resp_t m;
  int rc = -1;
  if (dc_resp_header_decode(&rd, DC_API_METADATA, ver, &corr) ||
      dc_metadata_resp_decode(&rd, ver, &m))
    goto out;
  for (int32_t i = 0; i < m.n_brokers; i++) {
    m.brokers[i].host = "127.0.0.1";
    m.brokers[i].port = kp->advertise_port;
  }
  size_t off = dc_wr_frame_begin(out);
  if (dc_resp_header_encode(out, DC_API_METADATA, ver, corr) ||
      dc_metadata_resp_encode(out, ver, &m))
    goto out;
  dc_wr_frame_end(out, off);
  rc = out->err ? -1 : 0;
out:
  dc_arena_free(&a);
  return rc;
}

/* FindCoordinator v0-2 (non-flexible): v0 error_code, node_id, host, port;
 * v1+ put throttle_time_ms first and error_message after error_code. */
static inline int kp_rewrite_findcoord(kproxy_t *kp, int16_t ver,
                                       const uint8_t *p, size_t n,
                                       dc_buf_t *out) {
  if (ver > 2)
    return -1; /* flexible or multi-key: not needed for librdkafka 2.0.2 */
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, p, n, &a);
  int32_t corr = dc_rd_i32(&rd);
  int32_t throttle = ver >= 1 ? dc_rd_i32(&rd) : 0;
  int16_t err = dc_rd_i16(&rd);
  char *msg = ver >= 1 ? dc_rd_str(&rd, false, true) : NULL;
  int32_t node = dc_rd_i32(&rd);
  (void)dc_rd_str(&rd, false, false);
  (void)dc_rd_i32(&rd);
  int rc = -1;
  if (!rd.err) {
    size_t off = dc_wr_frame_begin(out);
    dc_wr_i32(out, corr);
    if (ver >= 1)
      dc_wr_i32(out, throttle);
    dc_wr_i16(out, err);
    if (ver >= 1)
      dc_wr_str(out, false, msg);
    dc_wr_i32(out, node);
    dc_wr_str(out, false, "127.0.0.1");
    dc_wr_i32(out, kp->advertise_port);
    dc_wr_frame_end(out, off);
    rc = out->err ? -1 : 0;
  }
  dc_arena_free(&a);
  return rc;
}

/* An upstream response frame (payload p, n bytes): forward it, rewritten
 * when it advertises addresses. 0 or -1 (client gone). */
static inline int kp_forward_response(kproxy_t *kp, kp_conn_t *c,
                                      const uint8_t *frame, size_t n) {
  const uint8_t *p = frame + 4;
  int16_t key = -1, ver = 0;
  if (n >= 4) {
    int32_t corr = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
                             ((uint32_t)p[2] << 8) | p[3]);
    for (size_t i = 0; i < c->n_inf; i++)
      if (c->inf[i].corr == corr) {
        key = c->inf[i].key;
        ver = c->inf[i].ver;
        c->inf[i] = c->inf[--c->n_inf];
        pthread_mutex_lock(&kp->lock);
        kp->n_unanswered--;
        pthread_mutex_unlock(&kp->lock);
        break;
      }
  }
  if (key == DC_API_METADATA || key == KP_API_FIND_COORDINATOR) {
    dc_buf_t out;
    dc_buf_init(&out);
    int r = key == DC_API_METADATA ? kp_rewrite_metadata(kp, ver, p, n, &out)
                                   : kp_rewrite_findcoord(kp, ver, p, n, &out);
    pthread_mutex_lock(&kp->lock);
    if (r)
      kp->n_rewrite_errors++;
    else if (key == DC_API_METADATA)
      kp->n_metadata_rewritten++;
    else
      kp->n_findcoord_rewritten++;
    pthread_mutex_unlock(&kp->lock);
    if (!r) {
      int w = dc_tu_write_all(c->cfd, out.data, out.len);
      dc_buf_free(&out);
      return w;
    }
    dc_buf_free(&out);
  }
  return dc_tu_write_all(c->cfd, frame, n + 4);
}

/* Reads what is available on one side and forwards complete frames.
 * Returns -1 when the connection should be closed. */
static inline int kp_pump(kproxy_t *kp, kp_conn_t *c, bool from_client) {
  dc_buf_t *in = from_client ? &c->cin : &c->sin;
  int fd = from_client ? c->cfd : c->sfd;
  if (dc_buf_reserve(in, 65536))
    return -1;
  ssize_t k = recv(fd, in->data + in->len, 65536, 0);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (k <= 0)
    return -1;
  in->len += (size_t)k;
  for (;;) {
    int32_t size;
    int r = dc_frame_peek(in->data, in->len, KP_MAX_FRAME, &size);
    if (r < 0)
      return -1;
    if (r == 0)
      return 0;
    size_t flen = 4 + (size_t)size;
    if (from_client) {
      kp_sniff_request(kp, c, in->data + 4, (size_t)size);
      if (dc_tu_write_all(c->sfd, in->data, flen))
        return -1;
    } else if (kp_forward_response(kp, c, in->data, (size_t)size)) {
      return -1;
    }
    dc_buf_consume(in, flen);
  }
}

static inline void kp_accept(kproxy_t *kp) {
  int cfd = accept4(kp->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (cfd < 0)
    return;
  int slot = -1;
  for (int i = 0; i < KP_MAX_CONNS && slot < 0; i++)
    if (kp->conns[i].cfd < 0)
      slot = i;
  pthread_mutex_lock(&kp->lock);
  int up = kp->upstream_port;
  pthread_mutex_unlock(&kp->lock);
  int sfd = slot >= 0 ? dc_tu_connect(up) : -1;
  if (sfd < 0) {
    close(cfd);
    return;
  }
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  kp_conn_t *c = &kp->conns[slot];
  c->cfd = cfd;
  c->sfd = sfd;
  c->n_req = 0;
  dc_buf_init(&c->cin);
  dc_buf_init(&c->sin);
  pthread_mutex_lock(&kp->lock);
  c->id = ++kp->n_accepted;
  pthread_mutex_unlock(&kp->lock);
}

/* The self-pipe woke the thread: 1 when kproxy_stop() asks it to end;
 * else kproxy_drop() did, and every connection is closed here (0). */
static inline int kp_woken(kproxy_t *kp) {
  char sink[64];
  ssize_t r = read(kp->wake[0], sink, sizeof(sink));
  (void)r;
  pthread_mutex_lock(&kp->lock);
  bool stop = kp->stop;
  int asked = kp->drop_asked;
  pthread_mutex_unlock(&kp->lock);
  if (stop)
    return 1;
  int dropped = 0;
  for (int i = 0; i < KP_MAX_CONNS; i++)
    if (kp->conns[i].cfd >= 0) {
      kp_conn_close(kp, &kp->conns[i]);
      dropped++;
    }
  pthread_mutex_lock(&kp->lock);
  kp->n_dropped += dropped;
  kp->drop_done = asked;
  pthread_mutex_unlock(&kp->lock);
  return 0;
}

static inline void *kp_thread(void *arg) {
  kproxy_t *kp = arg;
  struct pollfd pfd[2 + 2 * KP_MAX_CONNS];
  int owner[2 + 2 * KP_MAX_CONNS]; /* conn index for each pollfd */
  for (;;) {
    int n = 0;
    pfd[n] = (struct pollfd){kp->wake[0], POLLIN, 0};
    owner[n++] = -1;
    pfd[n] = (struct pollfd){kp->lfd, POLLIN, 0};
    owner[n++] = -1;
    for (int i = 0; i < KP_MAX_CONNS; i++)
      if (kp->conns[i].cfd >= 0) {
        pfd[n] = (struct pollfd){kp->conns[i].cfd, POLLIN, 0};
        owner[n++] = i;
        pfd[n] = (struct pollfd){kp->conns[i].sfd, POLLIN, 0};
        owner[n++] = i;
      }
    if (poll(pfd, (nfds_t)n, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (pfd[0].revents) {
      if (kp_woken(kp))
        break;
      continue; /* connections dropped: the pollfd set is stale */
    }
    if (pfd[1].revents & POLLIN)
      kp_accept(kp);
    for (int k = 2; k < n; k++) {
      kp_conn_t *c = &kp->conns[owner[k]];
      if (!pfd[k].revents || c->cfd < 0)
        continue; /* closed earlier in this round */
      if (kp_pump(kp, c, pfd[k].fd == c->cfd))
        kp_conn_close(kp, c);
    }
  }
  for (int i = 0; i < KP_MAX_CONNS; i++)
    if (kp->conns[i].cfd >= 0)
      kp_conn_close(kp, &kp->conns[i]);
  return NULL;
}

static inline int kp_start(kproxy_t *kp, int upstream_port, int advertise_port,
                           kp_request_fn *on_request, void *opaque,
                           char *errstr, size_t errstr_size) {
  memset(kp, 0, sizeof(*kp));
  for (int i = 0; i < KP_MAX_CONNS; i++)
    kp->conns[i].cfd = kp->conns[i].sfd = -1;
  kp->upstream_port = upstream_port;
  kp->on_request = on_request;
  kp->on_request_opaque = opaque;
  if (dc_tu_listen(&kp->lfd, &kp->port, kp->wake)) {
    snprintf(errstr, errstr_size, "kproxy: %s", strerror(errno));
    return -1;
  }
  kp->advertise_port = advertise_port ? advertise_port : kp->port;
  pthread_mutex_init(&kp->lock, NULL);
  if (pthread_create(&kp->thread, NULL, kp_thread, kp)) {
    snprintf(errstr, errstr_size, "kproxy: cannot start its thread");
    dc_tu_unlisten(&kp->lfd, kp->wake);
    pthread_mutex_destroy(&kp->lock);
    return -1;
  }
  kp->started = true;
  return 0;
}

/* Starts a proxy on 127.0.0.1:<ephemeral> in front of 127.0.0.1:
 * upstream_port whose rewritten Metadata/FindCoordinator answers name
 * 127.0.0.1:advertise_port (0 = the proxy's own port). 0, or -1 with
 * errstr. */
static inline int kproxy_start_advertising(kproxy_t *kp, int upstream_port,
                                           int advertise_port, char *errstr,
                                           size_t errstr_size) {
  return kp_start(kp, upstream_port, advertise_port, NULL, NULL, errstr,
                  errstr_size);
}

/* Starts a proxy on 127.0.0.1:<ephemeral> in front of 127.0.0.1:
 * upstream_port. 0, or -1 with errstr. */
static inline int kproxy_start(kproxy_t *kp, int upstream_port, char *errstr,
                               size_t errstr_size) {
  return kp_start(kp, upstream_port, 0, NULL, NULL, errstr, errstr_size);
}

/* kproxy_start() that also hands every client request frame to
 * on_request(opaque, ...) on the proxy thread. */
static inline int kproxy_start_observed(kproxy_t *kp, int upstream_port,
                                        kp_request_fn *on_request, void *opaque,
                                        char *errstr, size_t errstr_size) {
  return kp_start(kp, upstream_port, 0, on_request, opaque, errstr,
                  errstr_size);
}

/* Stops the thread, closes every connection and frees everything. */
static inline void kproxy_stop(kproxy_t *kp) {
  if (!kp->started)
    return;
  pthread_mutex_lock(&kp->lock);
  kp->stop = true;
  pthread_mutex_unlock(&kp->lock);
  dc_tu_wake(kp->wake[1]);
  pthread_join(kp->thread, NULL);
  dc_tu_unlisten(&kp->lfd, kp->wake);
  pthread_mutex_destroy(&kp->lock);
  kp->started = false;
}

/* New connections go to 127.0.0.1:port from now on (any thread). */
static inline void kproxy_set_upstream(kproxy_t *kp, int port) {
  pthread_mutex_lock(&kp->lock);
  kp->upstream_port = port;
  pthread_mutex_unlock(&kp->lock);
}

/* Closes every proxied connection, both sides (any thread); 1 once the
 * proxy thread has, 0 if it has not within timeout_ms. */
static inline int kproxy_drop(kproxy_t *kp, int timeout_ms) {
  pthread_mutex_lock(&kp->lock);
  int gen = ++kp->drop_asked;
  pthread_mutex_unlock(&kp->lock);
  dc_tu_wake(kp->wake[1]);
  int64_t deadline = dc_tu_now_ms() + timeout_ms;
  for (;;) {
    pthread_mutex_lock(&kp->lock);
    bool done = kp->drop_done >= gen;
    pthread_mutex_unlock(&kp->lock);
    if (done)
      return 1;
    if (dc_tu_now_ms() > deadline)
      return 0;
    dc_tu_sleep_ms(5);
  }
}

/* ---- queries (any thread) ------------------------------------------------ */

/* Number of log records so far: a position for the queries below. */
static inline int kproxy_mark(kproxy_t *kp) {
  pthread_mutex_lock(&kp->lock);
  int n = kp->n_log;
  pthread_mutex_unlock(&kp->lock);
  return n;
}

/* How many requests of api `key` client_id sent at or after mark `from`
 * (group requests only: those are the ones logged). */
static inline int kproxy_requests(kproxy_t *kp, const char *client_id,
                                  int16_t key, int from) {
  int cnt = 0;
  pthread_mutex_lock(&kp->lock);
  for (int i = from < 0 ? 0 : from; i < kp->n_log; i++)
    if (kp->log[i].key == key && !strcmp(kp->log[i].client_id, client_id))
      cnt++;
  pthread_mutex_unlock(&kp->lock);
  return cnt;
}

/* The first JoinGroup sent by client_id at or after mark `from`: 1 and
 * *out, or 0 if none. */
static inline int kproxy_first_join(kproxy_t *kp, const char *client_id,
                                    int from, kp_req_t *out) {
  int found = 0;
  pthread_mutex_lock(&kp->lock);
  for (int i = from < 0 ? 0 : from; i < kp->n_log && !found; i++)
    if (kp->log[i].key == KP_API_JOIN_GROUP &&
        !strcmp(kp->log[i].client_id, client_id)) {
      *out = kp->log[i];
      found = 1;
    }
  pthread_mutex_unlock(&kp->lock);
  return found;
}

/* Counters, read under the lock. */
static inline int kproxy_count(kproxy_t *kp, const int *field) {
  pthread_mutex_lock(&kp->lock);
  int v = *field;
  pthread_mutex_unlock(&kp->lock);
  return v;
}

/* Waits until every request of the open connections has its response
 * forwarded (any thread); 1 then, 0 if not within timeout_ms. A request
 * still on its way to the proxy is not seen. */
static inline int kproxy_wait_answered(kproxy_t *kp, int timeout_ms) {
  int64_t deadline = dc_tu_now_ms() + timeout_ms;
  for (;;) {
    if (kproxy_count(kp, &kp->n_unanswered) == 0)
      return 1;
    if (dc_tu_now_ms() > deadline)
      return 0;
    dc_tu_sleep_ms(5);
  }
}

#endif
