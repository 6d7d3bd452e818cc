/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/loadgen's TLS client (see lg_tls.h).
 */
#include "lg_tls.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct lg_tls {
  SSL_CTX *ctx; /* owned */
};

static char g_last_error[256];

const char *lg_tls_last_error(void) { return g_last_error; }

/* The last reason on OpenSSL's error queue (then cleared), or fallback. */
static const char *ssl_reason(char *buf, size_t size, const char *fallback) {
  unsigned long e, last = 0;
  while ((e = ERR_get_error()))
    last = e;
  const char *r = last ? ERR_reason_error_string(last) : NULL;
  snprintf(buf, size, "%s", r ? r : fallback);
  return buf;
}

lg_tls_t *lg_tls_new(const char *ca_file, const char *cert_file,
                     const char *key_file, char *errstr, size_t errstr_size) {
  char why[256];
  if (!ca_file) {
    snprintf(errstr, errstr_size, "TLS needs a CA file (--tls-ca)");
    return NULL;
  }
  if (!cert_file != !key_file) {
    snprintf(errstr, errstr_size,
             "a client certificate needs both --tls-cert and --tls-key");
    return NULL;
  }
  lg_tls_t *t = calloc(1, sizeof(*t));
  ERR_clear_error();
  if (!t || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
    snprintf(errstr, errstr_size, "cannot create a TLS context: %s",
             ssl_reason(why, sizeof(why), "out of memory"));
    free(t);
    return NULL;
  }
  SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
  /* The epoll loop drops written bytes from the front of its buffer and
   * appends new requests, so a retried SSL_write may see the same pending
   * bytes at a new address, followed by more. */
  SSL_CTX_set_mode(t->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                               SSL_MODE_ENABLE_PARTIAL_WRITE);
  /* Every connection pays a full handshake (no resumption). */
  SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
  if (SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL) != 1) {
    snprintf(errstr, errstr_size, "cannot load CA file %s: %s", ca_file,
             ssl_reason(why, sizeof(why), "unreadable"));
    goto fail;
  }
  if (cert_file) {
    if (SSL_CTX_use_certificate_chain_file(t->ctx, cert_file) != 1) {
      snprintf(errstr, errstr_size, "cannot load client certificate %s: %s",
               cert_file, ssl_reason(why, sizeof(why), "unreadable"));
      goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM) != 1) {
      snprintf(errstr, errstr_size, "cannot load client key %s: %s", key_file,
               ssl_reason(why, sizeof(why), "unreadable"));
      goto fail;
    }
    if (SSL_CTX_check_private_key(t->ctx) != 1) {
      snprintf(errstr, errstr_size, "client key %s does not match %s", key_file,
               cert_file);
      goto fail;
    }
  }
  return t;
fail:
  ERR_clear_error();
  lg_tls_destroy(t);
  return NULL;
}

void lg_tls_destroy(lg_tls_t *t) {
  if (!t)
    return;
  SSL_CTX_free(t->ctx);
  free(t);
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 1 ready, 0 deadline passed, -1 error. */
static int wait_fd(int fd, short events, uint64_t deadline_ns) {
  struct pollfd pfd = {.fd = fd, .events = events};
  for (;;) {
    uint64_t now = mono_ns();
    if (now >= deadline_ns)
      return 0;
    uint64_t ms = (deadline_ns - now) / 1000000 + 1;
    int r = poll(&pfd, 1, ms > 60000 ? 60000 : (int)ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r != 0)
      return r < 0 ? -1 : 1;
  }
}

SSL *lg_tls_connect(lg_tls_t *t, int fd, const char *host, uint64_t deadline_ns,
                    char *errstr, size_t errstr_size) {
  char why[256];
  ERR_clear_error();
  SSL *ssl = SSL_new(t->ctx);
  if (!ssl || SSL_set_fd(ssl, fd) != 1) {
    snprintf(errstr, errstr_size, "TLS setup failed: %s",
             ssl_reason(why, sizeof(why), "out of memory"));
    SSL_free(ssl);
    return NULL;
  }
  unsigned char ipbuf[16];
  bool ip = inet_pton(AF_INET, host, ipbuf) == 1 ||
            inet_pton(AF_INET6, host, ipbuf) == 1;
  int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
              : SSL_set1_host(ssl, host);
  if (!ip)
    SSL_set_tlsext_host_name(ssl, host);
  if (ok != 1) {
    snprintf(errstr, errstr_size, "TLS setup failed: cannot check host '%s'",
             host);
    SSL_free(ssl);
    return NULL;
  }
  for (;;) {
    ERR_clear_error();
    errno = 0;
    int r = SSL_connect(ssl);
    if (r == 1)
      return ssl;
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      int w =
          wait_fd(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ns);
      if (w > 0)
        continue;
      snprintf(errstr, errstr_size, "TLS handshake %s",
               w == 0 ? "timed out" : strerror(errno));
      break;
    }
    int saved = errno;
    long vr = SSL_get_verify_result(ssl);
    ssl_reason(why, sizeof(why), "");
    if (vr != X509_V_OK)
      snprintf(errstr, errstr_size, "TLS handshake failed: %s",
               X509_verify_cert_error_string(vr));
    else if (why[0])
      snprintf(errstr, errstr_size, "TLS handshake failed: %s%s", why,
               strstr(why, "unexpected eof") ? " (is it a TLS listener?)" : "");
    else
      snprintf(errstr, errstr_size,
               "TLS handshake failed: %s (is it a TLS listener?)",
               saved ? strerror(saved) : "connection closed");
    break;
  }
  ERR_clear_error();
  SSL_free(ssl);
  return NULL;
}

void lg_tls_close(SSL *ssl) {
  if (!ssl)
    return;
  if (SSL_is_init_finished(ssl))
    SSL_shutdown(ssl); /* one try: the socket is non-blocking */
  ERR_clear_error();
  SSL_free(ssl);
}

/* Maps a failed SSL_read/SSL_write to the send()/recv() conventions. */
static ssize_t io_fail(SSL *ssl, int r, char *want) {
  int saved = errno;
  int e = SSL_get_error(ssl, r);
  char why[200];
  switch (e) {
  case SSL_ERROR_WANT_READ:
  case SSL_ERROR_WANT_WRITE:
    if (want)
      *want = e == SSL_ERROR_WANT_READ ? 'r' : 'w';
    errno = EAGAIN;
    return -1;
  case SSL_ERROR_ZERO_RETURN: /* close_notify */
    return 0;
  case SSL_ERROR_SYSCALL:
    ssl_reason(why, sizeof(why), "");
    if (!why[0]) {
      if (saved == 0) /* EOF without close_notify */
        return 0;
      errno = saved;
      return -1;
    }
    break;
  default:
    ssl_reason(why, sizeof(why), "TLS error");
    break;
  }
  snprintf(g_last_error, sizeof(g_last_error), "TLS error: %s", why);
  errno = EPROTO;
  return -1;
}

ssize_t lg_tls_send(SSL *ssl, const void *p, size_t n, char *want) {
  size_t done = 0;
  ERR_clear_error();
  errno = 0;
  if (SSL_write_ex(ssl, p, n, &done) == 1)
    return (ssize_t)done;
  ssize_t x = io_fail(ssl, 0, want);
  if (x == 0) { /* a write cannot "end": the peer is gone */
    errno = EPIPE;
    return -1;
  }
  return x;
}

ssize_t lg_tls_recv(SSL *ssl, void *p, size_t n, char *want) {
  size_t done = 0;
  ERR_clear_error();
  errno = 0;
  if (SSL_read_ex(ssl, p, n, &done) == 1)
    return (ssize_t)done;
  return io_fail(ssl, 0, want);
}

void lg_tls_describe(SSL *ssl, char *out, size_t out_size) {
  const char *c = SSL_get_cipher_name(ssl);
  snprintf(out, out_size, "%s %s", SSL_get_version(ssl), c ? c : "?");
}
