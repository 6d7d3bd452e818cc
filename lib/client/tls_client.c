/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TLS client connections (see tls_client.h): the handshake, reads and
 * writes. The context they are made from is in tls_client_ctx.c.
 */
#include "client/tls_client_int.h"
#include "common/text.h"
#include "common/clock.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct dc_tls_conn {
  SSL *ssl; /* owned */
  char peer[300];
};

/* OpenSSL writes to the socket with write(), which raises SIGPIPE when the
 * peer has gone; a CLI must get EPIPE instead. Block SIGPIPE in this
 * thread around each SSL call and swallow one we caused (as libpq does). */
typedef struct nosigpipe {
  sigset_t old;
  bool pending_before;
} nosigpipe_t;

static void nosigpipe_begin(nosigpipe_t *s) {
  sigset_t set, pend;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, &s->old);
  s->pending_before = sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE);
}

static void nosigpipe_end(nosigpipe_t *s) {
  sigset_t set, pend;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  if (!s->pending_before && sigpending(&pend) == 0 &&
      sigismember(&pend, SIGPIPE)) {
    struct timespec zero = {0, 0};
    sigtimedwait(&set, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &s->old, NULL);
}

static bool is_ip_literal(const char *host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host, buf) == 1 ||
         inet_pton(AF_INET6, host, buf) == 1;
}

/* Waits for fd; 1 ready, 0 deadline passed, -1 error, -2 cancel_fd
 * readable. */
static int wait_fd(int fd, short events, int64_t deadline, int cancel_fd) {
  struct pollfd pfd[2] = {{.fd = fd, .events = events},
                          {.fd = cancel_fd, .events = POLLIN}};
  for (;;) {
    int64_t left = deadline - dc_mono_ms();
    int ms = left < 0 ? 0 : left > 0x7fffffff ? 0x7fffffff : (int)left;
    int r = poll(pfd, cancel_fd >= 0 ? 2 : 1, ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r > 0 && cancel_fd >= 0 && pfd[1].revents)
      return -2;
    return r < 0 ? -1 : r;
  }
}

/* A connection over fd for host: SNI and, unless turned off, the name
 * or address the certificate must show. NULL with errstr set and *errp
 * the error. */
static dc_tls_conn_t *conn_new(const dc_tls_client_ctx_t *ctx, int fd,
                               const char *host, const char *peer,
                               dc_err_t *errp, char *errstr,
                               size_t errstr_size) {
  char why[256];
  ERR_clear_error();
  dc_tls_conn_t *t = calloc(1, sizeof(*t));
  if (!t || !(t->ssl = SSL_new(ctx->ctx)) || SSL_set_fd(t->ssl, fd) != 1) {
    dc_seterr(errstr, errstr_size, "TLS setup for %s failed: %s", peer,
           dc_tls_reason(why, sizeof(why), "out of memory"));
    dc_tls_conn_destroy(t);
    *errp = DC_ERR__NOMEM;
    return NULL;
  }
  snprintf(t->peer, sizeof(t->peer), "%s", peer);
  bool ip = is_ip_literal(host);
  if (!ip)
    SSL_set_tlsext_host_name(t->ssl, host);
  if (!ctx->no_verify && !ctx->no_hostname_check) {
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host)
                : SSL_set1_host(t->ssl, host);
    if (ok != 1) {
      dc_seterr(errstr, errstr_size, "TLS setup for %s failed: cannot check "
                                  "host name '%s'", peer, host);
      dc_tls_conn_destroy(t);
      *errp = DC_ERR__TRANSPORT;
      return NULL;
    }
  }
  return t;
}

/* Says why SSL_connect failed (e: its SSL_get_error) in errstr; errno is
 * still the one the failure left. */
static void handshake_failed(dc_tls_conn_t *t, int e, const char *peer,
                             char *errstr, size_t errstr_size) {
  char why[256];
  long vr = SSL_get_verify_result(t->ssl);
  int saved_errno = errno, code = 0;
  dc_tls_reason_code(why, sizeof(why), "", &code);
  if (code == SSL_R_UNEXPECTED_EOF_WHILE_READING)
    why[0] = '\0', saved_errno = 0; /* closed: say so below */
  if (vr != X509_V_OK)
    dc_seterr(errstr, errstr_size, "TLS handshake with %s failed: %s (%s)",
           peer, why[0] ? why : "certificate verify failed",
           X509_verify_cert_error_string(vr));
  else if (why[0])
    dc_seterr(errstr, errstr_size, "TLS handshake with %s failed: %s", peer,
           why);
  else if (e == SSL_ERROR_SYSCALL && saved_errno)
    dc_seterr(errstr, errstr_size, "TLS handshake with %s failed: %s", peer,
           strerror(saved_errno));
  else
    dc_seterr(errstr, errstr_size,
           "TLS handshake with %s failed: connection closed by the server "
           "(is it a TLS listener?)", peer);
}

dc_err_t dc_tls_client_handshake(dc_tls_client_ctx_t *ctx, int fd,
                                 const char *host, const char *peer,
                                 int64_t deadline, int cancel_fd,
                                 dc_tls_conn_t **out, char *errstr,
                                 size_t errstr_size) {
  *out = NULL;
  dc_err_t err = DC_ERR_NO_ERROR;
  dc_tls_conn_t *t = conn_new(ctx, fd, host, peer, &err, errstr, errstr_size);
  if (!t)
    return err;
  for (;;) {
    ERR_clear_error();
    errno = 0;
    nosigpipe_t np;
    nosigpipe_begin(&np);
    int r = SSL_connect(t->ssl);
    int saved = errno;
    nosigpipe_end(&np);
    errno = saved;
    if (r == 1)
      break;
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      int w = wait_fd(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
                      deadline, cancel_fd);
      if (w > 0)
        continue;
      if (w == -2) {
        dc_seterr(errstr, errstr_size, "TLS handshake with %s cancelled",
                  peer);
        dc_tls_conn_destroy(t);
        return DC_ERR__TRANSPORT;
      }
      if (w == 0) {
        dc_seterr(errstr, errstr_size, "TLS handshake with %s timed out", peer);
        dc_tls_conn_destroy(t);
        return DC_ERR__TIMED_OUT;
      }
    }
    handshake_failed(t, e, peer, errstr, errstr_size);
    dc_tls_conn_destroy(t);
    return DC_ERR__TRANSPORT;
  }
  *out = t;
  return DC_ERR_NO_ERROR;
}

void dc_tls_conn_destroy(dc_tls_conn_t *t) {
  if (!t)
    return;
  if (t->ssl) {
    /* Only after a completed handshake; a failed write just goes nowhere
     * (the socket is non-blocking). */
    if (SSL_is_init_finished(t->ssl)) {
      nosigpipe_t np;
      nosigpipe_begin(&np);
      SSL_shutdown(t->ssl);
      nosigpipe_end(&np);
    }
    SSL_free(t->ssl);
  }
  ERR_clear_error();
  free(t);
}

/* Shared tail of read/write: classifies SSL_get_error. */
static ssize_t io_result(dc_tls_conn_t *t, int r, const char *what,
                         short *wait, char *errstr, size_t errstr_size) {
  int e = SSL_get_error(t->ssl, r);
  int saved_errno = errno;
  char why[256];
  switch (e) {
  case SSL_ERROR_WANT_READ:
    *wait = POLLIN;
    return -1;
  case SSL_ERROR_WANT_WRITE:
    *wait = POLLOUT;
    return -1;
  case SSL_ERROR_ZERO_RETURN:
    return 0;
  case SSL_ERROR_SYSCALL:
    dc_tls_reason(why, sizeof(why), "");
    if (why[0])
      break;
    if (saved_errno == 0) /* EOF without close_notify */
      return 0;
    dc_seterr(errstr, errstr_size, "cannot %s %s: %s", what, t->peer,
           strerror(saved_errno));
    return -2;
  default:
    dc_tls_reason(why, sizeof(why), "TLS error");
    break;
  }
  dc_seterr(errstr, errstr_size, "cannot %s %s: %s", what, t->peer, why);
  return -2;
}

/* Reads what is left on a dying connection for a TLS alert; true with its
 * text when there was one. */
static bool pending_alert(dc_tls_conn_t *t, char *buf, size_t size) {
  uint8_t scratch[256];
  size_t got = 0;
  ERR_clear_error();
  nosigpipe_t np;
  nosigpipe_begin(&np);
  int r = SSL_read_ex(t->ssl, scratch, sizeof(scratch), &got);
  nosigpipe_end(&np);
  if (r == 1 || SSL_get_error(t->ssl, r) != SSL_ERROR_SSL)
    return false;
  dc_tls_reason(buf, size, "");
  return buf[0] != '\0';
}

ssize_t dc_tls_write(dc_tls_conn_t *t, const void *p, size_t n, short *wait,
                     char *errstr, size_t errstr_size) {
  ERR_clear_error();
  errno = 0;
  size_t done = 0;
  nosigpipe_t np;
  nosigpipe_begin(&np);
  int r = SSL_write_ex(t->ssl, p, n, &done);
  int saved = errno;
  nosigpipe_end(&np);
  errno = saved;
  if (r == 1)
    return (ssize_t)done;
  if (saved == EPIPE || saved == ECONNRESET) {
    /* The server may have said why before hanging up (TLS 1.3 rejects a
     * client certificate after our side of the handshake is done). */
    char alert[256] = "";
    if (pending_alert(t, alert, sizeof(alert))) {
      dc_seterr(errstr, errstr_size, "cannot send to %s: the server ended the "
             "TLS session: %s", t->peer, alert);
      return -2;
    }
    errno = saved;
  }
  ssize_t x = io_result(t, r, "send to", wait, errstr, errstr_size);
  if (x == 0) {
    dc_seterr(errstr, errstr_size, "connection closed by %s", t->peer);
    return -2;
  }
  return x;
}

ssize_t dc_tls_read(dc_tls_conn_t *t, void *p, size_t n, short *wait,
                    char *errstr, size_t errstr_size) {
  ERR_clear_error();
  errno = 0;
  size_t done = 0;
  nosigpipe_t np;
  nosigpipe_begin(&np); /* a read may write (alerts, key updates) */
  int r = SSL_read_ex(t->ssl, p, n, &done);
  int saved = errno;
  nosigpipe_end(&np);
  errno = saved;
  if (r == 1)
    return (ssize_t)done;
  return io_result(t, r, "read from", wait, errstr, errstr_size);
}

bool dc_tls_pending(const dc_tls_conn_t *t) { return SSL_pending(t->ssl) > 0; }
