/*
 * TLS client context and connections (see tls_client.h).
 */
#include "client/tls_client.h"
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dc_tls_client_ctx {
  SSL_CTX *ctx; /* owned */
  bool no_verify, no_hostname_check;
};

struct dc_tls_conn {
  SSL *ssl; /* owned */
  char peer[300];
};


/* The most specific reason on OpenSSL's error queue (then cleared), or
 * fallback. *code (nullable) gets its reason code, 0 if none. */
static const char *ssl_reason_code(char *buf, size_t size,
                                   const char *fallback, int *code) {
  unsigned long e, last = 0;
  while ((e = ERR_get_error()))
    last = e;
  const char *r = last ? ERR_reason_error_string(last) : NULL;
  snprintf(buf, size, "%s", r ? r : fallback);
  if (code)
    *code = last ? ERR_GET_REASON(last) : 0;
  return buf;
}

static const char *ssl_reason(char *buf, size_t size, const char *fallback) {
  return ssl_reason_code(buf, size, fallback, NULL);
}

/* OpenSSL says "system lib" for a missing file: look first, for a
 * sentence with the real reason. */
static bool readable(const char *what, const char *path, char *errstr,
                     size_t errstr_size) {
  FILE *f = fopen(path, "r");
  if (!f) {
    dc_seterr(errstr, errstr_size, "cannot load %s %s: %s", what, path,
           strerror(errno));
    return false;
  }
  fclose(f);
  return true;
}

dc_tls_client_ctx_t *dc_tls_client_ctx_new(const dc_tls_client_conf_t *conf,
                                           char *errstr, size_t errstr_size) {
  char why[256];
  if ((conf->ca_file && !readable("CA file", conf->ca_file, errstr,
                                  errstr_size)) ||
      (conf->cert_file && !readable("client certificate", conf->cert_file,
                                    errstr, errstr_size)) ||
      (conf->key_file &&
       !readable("client key", conf->key_file, errstr, errstr_size)))
    return NULL;
  ERR_clear_error();
  dc_tls_client_ctx_t *c = calloc(1, sizeof(*c));
  if (!c || !(c->ctx = SSL_CTX_new(TLS_client_method()))) {
    dc_seterr(errstr, errstr_size, "cannot create a TLS context: %s",
           ssl_reason(why, sizeof(why), "out of memory"));
    free(c);
    return NULL;
  }
  c->no_verify = conf->no_verify;
  c->no_hostname_check = conf->no_hostname_check;
  SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(c->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(c->ctx, conf->no_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                     NULL);
  if (conf->ca_file) {
    if (SSL_CTX_load_verify_locations(c->ctx, conf->ca_file, NULL) != 1) {
      dc_seterr(errstr, errstr_size, "cannot load CA file %s: %s", conf->ca_file,
             ssl_reason(why, sizeof(why), "unreadable"));
      goto fail;
    }
  } else if (SSL_CTX_set_default_verify_paths(c->ctx) != 1) {
    dc_seterr(errstr, errstr_size, "cannot load the system trust store: %s",
           ssl_reason(why, sizeof(why), "unknown error"));
    goto fail;
  }
  if (conf->cert_file || conf->key_file) {
    if (!conf->cert_file || !conf->key_file) {
      dc_seterr(errstr, errstr_size, "a client certificate needs both a "
                                  "certificate file and a key file");
      goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(c->ctx, conf->cert_file) != 1) {
      dc_seterr(errstr, errstr_size, "cannot load client certificate %s: %s",
             conf->cert_file, ssl_reason(why, sizeof(why), "unreadable"));
      goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(c->ctx, conf->key_file,
                                    SSL_FILETYPE_PEM) != 1) {
      dc_seterr(errstr, errstr_size, "cannot load client key %s: %s",
             conf->key_file, ssl_reason(why, sizeof(why), "unreadable"));
      goto fail;
    }
    if (SSL_CTX_check_private_key(c->ctx) != 1) {
      dc_seterr(errstr, errstr_size,
             "client key %s does not match certificate %s", conf->key_file,
             conf->cert_file);
      goto fail;
    }
  }
  return c;
fail:
  ERR_clear_error();
  dc_tls_client_ctx_destroy(c);
  return NULL;
}

void dc_tls_client_ctx_destroy(dc_tls_client_ctx_t *ctx) {
  if (!ctx)
    return;
  SSL_CTX_free(ctx->ctx);
  free(ctx);
}

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

dc_err_t dc_tls_client_handshake(dc_tls_client_ctx_t *ctx, int fd,
                                 const char *host, const char *peer,
                                 int64_t deadline, int cancel_fd,
                                 dc_tls_conn_t **out, char *errstr,
                                 size_t errstr_size) {
  *out = NULL;
  char why[256];
  ERR_clear_error();
  dc_tls_conn_t *t = calloc(1, sizeof(*t));
  if (!t || !(t->ssl = SSL_new(ctx->ctx)) || SSL_set_fd(t->ssl, fd) != 1) {
    dc_seterr(errstr, errstr_size, "TLS setup for %s failed: %s", peer,
           ssl_reason(why, sizeof(why), "out of memory"));
    dc_tls_conn_destroy(t);
    return DC_ERR__NOMEM;
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
      return DC_ERR__TRANSPORT;
    }
  }
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
    long vr = SSL_get_verify_result(t->ssl);
    int saved_errno = errno, code = 0;
    ssl_reason_code(why, sizeof(why), "", &code);
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
    ssl_reason(why, sizeof(why), "");
    if (why[0])
      break;
    if (saved_errno == 0) /* EOF without close_notify */
      return 0;
    dc_seterr(errstr, errstr_size, "cannot %s %s: %s", what, t->peer,
           strerror(saved_errno));
    return -2;
  default:
    ssl_reason(why, sizeof(why), "TLS error");
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
  ssl_reason(buf, size, "");
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
