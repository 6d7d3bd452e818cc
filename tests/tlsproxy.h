/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tlsproxy: a TLS-terminating TCP front for tests. It accepts TLS
 * (OpenSSL; server certificate and key; client certificates verified
 * against a CA, required unless told otherwise) on 127.0.0.1:<ephemeral>
 * and forwards the plaintext both ways to 127.0.0.1:upstream.
 *
 * Per accepted connection it records the handshake outcome, the client
 * certificate's subject (RFC 2253) and CN, and the client id of the first
 * Kafka request, so a test can tell which certificate each new connection
 * of which client presented.
 *
 * For a Kafka broker (librdkafka's mock cluster speaks plaintext only, and
 * a plaintext dynconfd) use tlsproxy_start_kafka(): it puts a kproxy
 * (tests/kproxy.h) between this front and the broker, whose rewritten
 * Metadata/FindCoordinator answers name this front's port, so clients
 * stay on TLS:  client --TLS--> tlsproxy --> kproxy --> broker.
 *
 * Header-only (static inline). One thread serves every connection with
 * poll(): client sockets are non-blocking (the TLS state machine), writes
 * upstream are blocking, which is fine on loopback with peers that read.
 * Session tickets are off, so every connection presents its certificate.
 *
 * Ownership: the caller owns the tlsproxy_t (static storage: it is large);
 * tlsproxy_start*() allocate the TLS context, sockets, buffers and threads,
 * tlsproxy_stop() frees them all. Records are read under the lock through
 * the query functions, from any thread.
 */
#ifndef DC_TLSPROXY_H
#define DC_TLSPROXY_H

#include "kproxy.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>

#define TP_MAX_CONNS 64
#define TP_MAX_RECORDS 2048
#define TP_WRITE_TIMEOUT_MS 30000 /* a TLS peer that stops reading */

/* One accepted connection. */
typedef struct tp_record {
  int seq;           /* accept order, from 0 */
  bool handshake_ok; /* TLS established (client certificate verified) */
  bool closed;
  char subject[256];   /* client certificate subject, RFC 2253; "" = none */
  char cn[128];        /* its CN; "" = none */
  char client_id[128]; /* client id of the first request; "" = not yet */
  char error[256];     /* why the handshake failed; "" */
  /* The client hung up mid-handshake, without an alert: it went away (a
   * handle destroyed while connecting), it did not refuse anything. */
  bool abandoned;
} tp_record_t;

typedef struct tp_conn {
  int cfd, sfd; /* TLS client side, plaintext upstream; -1 = free slot */
  SSL *ssl;     /* owned */
  bool handshaking, want_write;
  int rec;                 /* index into records, -1 = not recorded */
  unsigned char head[256]; /* the first request's first bytes */
  size_t head_len;
  bool head_done;
} tp_conn_t;

typedef struct tlsproxy {
  int lfd, port;     /* our TLS listening socket and its port */
  int upstream_port; /* 127.0.0.1 */
  int wake[2];
  pthread_t thread;
  bool started;
  SSL_CTX *ctx;
  tp_conn_t conns[TP_MAX_CONNS]; /* proxy thread only */
  kproxy_t kp;                   /* tlsproxy_start_kafka() only */
  bool with_kp;

  pthread_mutex_t lock; /* guards what follows */
  tp_record_t rec[TP_MAX_RECORDS];
  int n_rec, n_dropped;
} tlsproxy_t;

/* ---- connections ---------------------------------------------------------- */

static inline void tp_conn_close(tlsproxy_t *tp, tp_conn_t *c) {
  if (c->ssl) {
    if (!c->handshaking)
      SSL_shutdown(c->ssl); /* best effort, non-blocking */
    SSL_free(c->ssl);
  }
  if (c->cfd >= 0)
    close(c->cfd);
  if (c->sfd >= 0)
    close(c->sfd);
  if (c->rec >= 0) {
    pthread_mutex_lock(&tp->lock);
    tp->rec[c->rec].closed = true;
    pthread_mutex_unlock(&tp->lock);
  }
  memset(c, 0, sizeof(*c));
  c->cfd = c->sfd = c->rec = -1;
  ERR_clear_error();
}

/* Records why the TLS handshake of c failed (ssl_error: SSL_get_error's
 * answer). */
static inline void tp_handshake_failed(tlsproxy_t *tp, tp_conn_t *c,
                                       int ssl_error) {
  char e[160] = "";
  unsigned long ee = ERR_peek_last_error();
  if (ee)
    ERR_error_string_n(ee, e, sizeof(e));
  long vr = SSL_get_verify_result(c->ssl);
  /* A refusal arrives as an alert (SSL_ERROR_SSL with its reason); a
   * bare end of stream is a client that closed its socket. */
  bool eof = (ssl_error == SSL_ERROR_SYSCALL && !ee) ||
             (ERR_GET_LIB(ee) == ERR_LIB_SSL &&
              ERR_GET_REASON(ee) == SSL_R_UNEXPECTED_EOF_WHILE_READING);
  if (c->rec < 0)
    return;
  pthread_mutex_lock(&tp->lock);
  tp->rec[c->rec].abandoned = eof && vr == X509_V_OK;
  snprintf(tp->rec[c->rec].error, sizeof(tp->rec[c->rec].error), "%s%s%s",
           e[0] ? e : "handshake failed", vr != X509_V_OK ? ": " : "",
           vr != X509_V_OK ? X509_verify_cert_error_string(vr) : "");
  pthread_mutex_unlock(&tp->lock);
}

/* The handshake is done: record the client certificate. */
static inline void tp_handshake_done(tlsproxy_t *tp, tp_conn_t *c) {
  char subject[256] = "", cn[128] = "";
  X509 *x = SSL_get1_peer_certificate(c->ssl);
  if (x) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio) {
      X509_NAME_print_ex(bio, X509_get_subject_name(x), 0, XN_FLAG_RFC2253);
      char *p;
      long n = BIO_get_mem_data(bio, &p);
      snprintf(subject, sizeof(subject), "%.*s", (int)(n > 0 ? n : 0), p);
      BIO_free(bio);
    }
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName,
                                  cn, sizeof(cn)) < 0)
      cn[0] = '\0';
    X509_free(x);
  }
  if (c->rec < 0)
    return;
  pthread_mutex_lock(&tp->lock);
  tp->rec[c->rec].handshake_ok = true;
  snprintf(tp->rec[c->rec].subject, sizeof(tp->rec[c->rec].subject), "%s",
           subject);
  snprintf(tp->rec[c->rec].cn, sizeof(tp->rec[c->rec].cn), "%s", cn);
  pthread_mutex_unlock(&tp->lock);
}

/* Collects the first request's header (size, key, version, correlation id,
 * client id as an int16-length string) and records the client id. */
static inline void tp_sniff(tlsproxy_t *tp, tp_conn_t *c, const uint8_t *p,
                            size_t n) {
  if (c->head_done)
    return;
  size_t take = sizeof(c->head) - c->head_len;
  if (take > n)
    take = n;
  memcpy(c->head + c->head_len, p, take);
  c->head_len += take;
  if (c->head_len < 14)
    return;
  int16_t len = (int16_t)((c->head[12] << 8) | c->head[13]);
  size_t have = c->head_len - 14;
  if (len >= 0 && (size_t)len > have && c->head_len < sizeof(c->head))
    return; /* more to come */
  c->head_done = true;
  if (c->rec < 0)
    return;
  size_t cl = len < 0 ? 0 : (size_t)len < have ? (size_t)len : have;
  pthread_mutex_lock(&tp->lock);
  snprintf(tp->rec[c->rec].client_id, sizeof(tp->rec[c->rec].client_id),
           "%.*s", (int)cl, (const char *)c->head + 14);
  pthread_mutex_unlock(&tp->lock);
}

/* Reads all the TLS side has (decrypted) and forwards it upstream.
 * -1 = close the connection. */
static inline int tp_from_client(tlsproxy_t *tp, tp_conn_t *c) {
  uint8_t buf[16384];
  for (;;) {
    int n = SSL_read(c->ssl, buf, (int)sizeof(buf));
    if (n > 0) {
      tp_sniff(tp, c, buf, (size_t)n);
      if (dc_tu_write_all(c->sfd, buf, (size_t)n))
        return -1;
      continue;
    }
    int e = SSL_get_error(c->ssl, n);
    if (e == SSL_ERROR_WANT_READ)
      return 0;
    if (e == SSL_ERROR_WANT_WRITE) {
      c->want_write = true;
      return 0;
    }
    return -1; /* close_notify, reset, error */
  }
}

/* Writes n bytes to the TLS side, waiting (bounded) when the socket is
 * full. 0 or -1. */
static inline int tp_tls_write_all(tp_conn_t *c, const uint8_t *p, size_t n) {
  while (n) {
    int w = SSL_write(c->ssl, p, (int)(n > 65536 ? 65536 : n));
    if (w > 0) {
      p += w;
      n -= (size_t)w;
      continue;
    }
    int e = SSL_get_error(c->ssl, w);
    short ev = e == SSL_ERROR_WANT_WRITE ? POLLOUT
               : e == SSL_ERROR_WANT_READ ? POLLIN
                                          : 0;
    if (!ev)
      return -1;
    struct pollfd pfd = {c->cfd, ev, 0};
    int r;
    do
      r = poll(&pfd, 1, TP_WRITE_TIMEOUT_MS);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
      return -1;
  }
  return 0;
}

static inline int tp_from_upstream(tp_conn_t *c) {
  uint8_t buf[65536];
  ssize_t k = recv(c->sfd, buf, sizeof(buf), 0);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (k <= 0)
    return -1;
  return tp_tls_write_all(c, buf, (size_t)k);
}

/* One step of the server handshake; -1 = failed (close). */
static inline int tp_handshake(tlsproxy_t *tp, tp_conn_t *c) {
  int r = SSL_accept(c->ssl);
  if (r == 1) {
    c->handshaking = false;
    c->want_write = false;
    tp_handshake_done(tp, c);
    return tp_from_client(tp, c); /* data may have come with it */
  }
  int e = SSL_get_error(c->ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    c->want_write = e == SSL_ERROR_WANT_WRITE;
    return 0;
  }
  tp_handshake_failed(tp, c, e);
  return -1;
}

static inline void tp_accept(tlsproxy_t *tp) {
  int cfd = accept4(tp->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (cfd < 0)
    return;
  int slot = -1;
  for (int i = 0; i < TP_MAX_CONNS && slot < 0; i++)
    if (tp->conns[i].cfd < 0)
      slot = i;
  int sfd = slot >= 0 ? dc_tu_connect(tp->upstream_port) : -1;
  SSL *ssl = sfd >= 0 ? SSL_new(tp->ctx) : NULL;
  if (!ssl || !SSL_set_fd(ssl, cfd)) {
    SSL_free(ssl);
    if (sfd >= 0)
      close(sfd);
    close(cfd);
    return;
  }
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  SSL_set_accept_state(ssl);
  tp_conn_t *c = &tp->conns[slot];
  memset(c, 0, sizeof(*c));
  c->cfd = cfd;
  c->sfd = sfd;
  c->ssl = ssl;
  c->handshaking = true;
  c->rec = -1;
  pthread_mutex_lock(&tp->lock);
  if (tp->n_rec < TP_MAX_RECORDS) {
    c->rec = tp->n_rec++;
    memset(&tp->rec[c->rec], 0, sizeof(tp->rec[c->rec]));
    tp->rec[c->rec].seq = c->rec;
  } else {
    tp->n_dropped++;
  }
  pthread_mutex_unlock(&tp->lock);
}

static inline void *tp_thread(void *arg) {
  tlsproxy_t *tp = arg;
  struct pollfd pfd[2 + 2 * TP_MAX_CONNS];
  int owner[2 + 2 * TP_MAX_CONNS];
  for (;;) {
    int n = 0;
    pfd[n] = (struct pollfd){tp->wake[0], POLLIN, 0};
    owner[n++] = -1;
    pfd[n] = (struct pollfd){tp->lfd, POLLIN, 0};
    owner[n++] = -1;
    for (int i = 0; i < TP_MAX_CONNS; i++) {
      tp_conn_t *c = &tp->conns[i];
      if (c->cfd < 0)
        continue;
      pfd[n] = (struct pollfd){
          c->cfd, (short)(POLLIN | (c->want_write ? POLLOUT : 0)), 0};
      owner[n++] = i;
      if (!c->handshaking) {
        pfd[n] = (struct pollfd){c->sfd, POLLIN, 0};
        owner[n++] = i;
      }
    }
    if (poll(pfd, (nfds_t)n, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (pfd[0].revents)
      break; /* tlsproxy_stop() */
    if (pfd[1].revents & POLLIN)
      tp_accept(tp);
    for (int k = 2; k < n; k++) {
      tp_conn_t *c = &tp->conns[owner[k]];
      if (!pfd[k].revents || c->cfd < 0 || pfd[k].fd < 0)
        continue; /* closed earlier in this round */
      int r;
      if (pfd[k].fd == c->cfd) {
        c->want_write = false;
        r = c->handshaking ? tp_handshake(tp, c) : tp_from_client(tp, c);
      } else {
        r = tp_from_upstream(c);
      }
      /* A write may have pulled records in: serve them now, poll() will
       * not say so. */
      if (!r && !c->handshaking && SSL_has_pending(c->ssl))
        r = tp_from_client(tp, c);
      if (r)
        tp_conn_close(tp, c);
    }
  }
  for (int i = 0; i < TP_MAX_CONNS; i++)
    if (tp->conns[i].cfd >= 0)
      tp_conn_close(tp, &tp->conns[i]);
  return NULL;
}

/* ---- start and stop ------------------------------------------------------ */

/* The TLS server context: cert (chain) + key, clients verified against ca;
 * require_client_cert = ssl.client.auth=required, else requested. */
static inline SSL_CTX *tp_ctx_new(const char *cert, const char *key,
                                  const char *ca, bool require_client_cert,
                                  char *errstr, size_t errstr_size) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  const char *step = "SSL_CTX_new";
  if (!ctx)
    goto fail;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  step = cert;
  if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
    goto fail;
  step = key;
  if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1)
    goto fail;
  step = ca;
  if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
    goto fail;
  STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);
  if (names)
    SSL_CTX_set_client_CA_list(ctx, names); /* the context owns names */
  SSL_CTX_set_verify(ctx,
                     SSL_VERIFY_PEER |
                         (require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                              : 0),
                     NULL);
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  /* No resumption: each connection shows its own certificate. */
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(ctx, 0);
  return ctx;
fail:;
  char e[160] = "";
  ERR_error_string_n(ERR_peek_last_error(), e, sizeof(e));
  snprintf(errstr, errstr_size, "tlsproxy: %s: %s", step, e);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return NULL;
}

/* Undoes tp_listen(). */
static inline void tp_unlisten(tlsproxy_t *tp) {
  dc_tu_unlisten(&tp->lfd, tp->wake);
  pthread_mutex_destroy(&tp->lock);
  SSL_CTX_free(tp->ctx);
  tp->ctx = NULL;
}

/* Binds the listening socket (the port is known from here on). */
static inline int tp_listen(tlsproxy_t *tp, const char *cert, const char *key,
                            const char *ca, bool require_client_cert,
                            char *errstr, size_t errstr_size) {
  memset(tp, 0, sizeof(*tp));
  tp->lfd = tp->wake[0] = tp->wake[1] = -1;
  for (int i = 0; i < TP_MAX_CONNS; i++)
    tp->conns[i].cfd = tp->conns[i].sfd = tp->conns[i].rec = -1;
  /* SSL_write() to a peer that went away must not kill the test. */
  struct sigaction sa_ign;
  memset(&sa_ign, 0, sizeof(sa_ign));
  sa_ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa_ign, NULL);
  if (!(tp->ctx = tp_ctx_new(cert, key, ca, require_client_cert, errstr,
                             errstr_size)))
    return -1;
  if (dc_tu_listen(&tp->lfd, &tp->port, tp->wake)) {
    snprintf(errstr, errstr_size, "tlsproxy: %s", strerror(errno));
    SSL_CTX_free(tp->ctx);
    tp->ctx = NULL;
    return -1;
  }
  pthread_mutex_init(&tp->lock, NULL);
  return 0;
}

static inline int tp_run(tlsproxy_t *tp, int upstream_port, char *errstr,
                         size_t errstr_size) {
  tp->upstream_port = upstream_port;
  if (pthread_create(&tp->thread, NULL, tp_thread, tp)) {
    snprintf(errstr, errstr_size, "tlsproxy: cannot start its thread");
    tp_unlisten(tp);
    if (tp->with_kp)
      kproxy_stop(&tp->kp);
    return -1;
  }
  tp->started = true;
  return 0;
}

/* A TLS front on 127.0.0.1:<ephemeral> forwarding to 127.0.0.1:
 * upstream_port as is. cert/key: the server's PEM files; ca: the CA that
 * client certificates must chain to. 0, or -1 with errstr. */
static inline int tlsproxy_start(tlsproxy_t *tp, int upstream_port,
                                 const char *cert, const char *key,
                                 const char *ca, bool require_client_cert,
                                 char *errstr, size_t errstr_size) {
  if (tp_listen(tp, cert, key, ca, require_client_cert, errstr, errstr_size))
    return -1;
  return tp_run(tp, upstream_port, errstr, errstr_size);
}

/* A TLS front for a Kafka broker on 127.0.0.1:broker_port: TLS front ->
 * kproxy (tp->kp, addresses rewritten to the front) -> broker. */
static inline int tlsproxy_start_kafka(tlsproxy_t *tp, int broker_port,
                                       const char *cert, const char *key,
                                       const char *ca,
                                       bool require_client_cert, char *errstr,
                                       size_t errstr_size) {
  if (tp_listen(tp, cert, key, ca, require_client_cert, errstr, errstr_size))
    return -1;
  if (kproxy_start_advertising(&tp->kp, broker_port, tp->port, errstr,
                               errstr_size)) {
    tp_unlisten(tp);
    return -1;
  }
  tp->with_kp = true;
  return tp_run(tp, tp->kp.port, errstr, errstr_size);
}

/* Stops the thread(s), closes every connection, frees everything. */
static inline void tlsproxy_stop(tlsproxy_t *tp) {
  if (!tp->started)
    return;
  dc_tu_wake(tp->wake[1]);
  pthread_join(tp->thread, NULL);
  tp_unlisten(tp);
  if (tp->with_kp)
    kproxy_stop(&tp->kp);
  tp->started = false;
}

/* ---- queries (any thread) ------------------------------------------------ */

/* Records so far: a position for the queries below. */
static inline int tlsproxy_mark(tlsproxy_t *tp) {
  pthread_mutex_lock(&tp->lock);
  int n = tp->n_rec;
  pthread_mutex_unlock(&tp->lock);
  return n;
}

/* Record i: 1 and *out, or 0. */
static inline int tlsproxy_record(tlsproxy_t *tp, int i, tp_record_t *out) {
  pthread_mutex_lock(&tp->lock);
  int found = i >= 0 && i < tp->n_rec;
  if (found)
    *out = tp->rec[i];
  pthread_mutex_unlock(&tp->lock);
  return found;
}

/* Established connections at or after mark `from` whose first request
 * came from client_id (NULL = any, even before a request) and whose
 * certificate CN is cn (NULL = any). */
static inline int tlsproxy_count(tlsproxy_t *tp, const char *client_id,
                                 const char *cn, int from) {
  int cnt = 0;
  pthread_mutex_lock(&tp->lock);
  for (int i = from < 0 ? 0 : from; i < tp->n_rec; i++) {
    const tp_record_t *r = &tp->rec[i];
    cnt += r->handshake_ok && (!client_id || !strcmp(r->client_id, client_id)) &&
           (!cn || !strcmp(r->cn, cn));
  }
  pthread_mutex_unlock(&tp->lock);
  return cnt;
}

/* Handshakes that failed at or after mark `from`, those the client
 * abandoned aside; the last one's error into err (may be NULL). */
static inline int tlsproxy_failures(tlsproxy_t *tp, int from, char *err,
                                    size_t err_size) {
  int cnt = 0;
  pthread_mutex_lock(&tp->lock);
  for (int i = from < 0 ? 0 : from; i < tp->n_rec; i++)
    if (!tp->rec[i].handshake_ok && tp->rec[i].error[0] &&
        !tp->rec[i].abandoned) {
      cnt++;
      if (err)
        snprintf(err, err_size, "%s", tp->rec[i].error);
    }
  pthread_mutex_unlock(&tp->lock);
  return cnt;
}

/* Handshakes the client abandoned (closed mid-way, no alert) at or after
 * mark `from`. */
static inline int tlsproxy_abandoned(tlsproxy_t *tp, int from) {
  int cnt = 0;
  pthread_mutex_lock(&tp->lock);
  for (int i = from < 0 ? 0 : from; i < tp->n_rec; i++)
    cnt += tp->rec[i].abandoned;
  pthread_mutex_unlock(&tp->lock);
  return cnt;
}

/* The latest established connection of client_id: 1 and *out, or 0. */
static inline int tlsproxy_last(tlsproxy_t *tp, const char *client_id,
                                tp_record_t *out) {
  int found = 0;
  pthread_mutex_lock(&tp->lock);
  for (int i = tp->n_rec - 1; i >= 0 && !found; i--)
    if (tp->rec[i].handshake_ok && !strcmp(tp->rec[i].client_id, client_id)) {
      *out = tp->rec[i];
      found = 1;
    }
  pthread_mutex_unlock(&tp->lock);
  return found;
}

#endif
