/* SPDX-License-Identifier: BSD-2-Clause */
/* A connection's transport: plaintext or TLS reads and writes. */
#include "config.h"
#include "broker/net/server_int.h"

#include "common/log.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

/* The TLS handshake just finished: take the certificate principal. */
void dc_srv_tls_established(conn_t *c) {
  c->tls_ready = true;
  c->principal = dc_tls_peer_principal(c->ssl);
  if (c->auth.state == DC_AUTH_NONE)
    c->auth_deadline = 0;
  dc_log(DC_LOG_DEBUG, "TLS connection from %s on listener %s: %s, %s",
         c->peer, c->listener->name, SSL_get_version(c->ssl),
         c->principal ? c->principal : "no client certificate");
}

static void tls_failed(conn_t *c, const char *during) {
  char why[320];
  dc_tls_last_error(c->ssl, why, sizeof(why));
  dc_log(DC_LOG_WARN, "TLS %s with %s on listener %s failed: %s", during,
         c->peer, c->listener->name, why);
}

/* True when the pending TLS error is just the peer hanging up. */
bool dc_srv_is_plain_eof(void) {
  unsigned long e = ERR_peek_error();
  return e == 0 || ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

/* SSL_get_error needs an empty error queue before each TLS call; it
 * nearly always is, and emptying an empty queue walks all its slots. */
static void clear_tls_errors(void) {
  if (ERR_peek_error())
    ERR_clear_error();
}

/* Transport reads: bytes read (> 0), 0 = nothing now (would block), or -1 =
 * the connection is over (*eof: the peer closed in order). */
ssize_t dc_srv_recv(conn_t *c, void *buf, size_t n, bool *eof) {
  *eof = false;
  if (!c->ssl) {
    for (;;) {
      ssize_t r = recv(c->fd, buf, n, 0);
      if (r > 0)
        return r;
      if (r == 0) {
        *eof = true;
        return -1;
      }
      if (errno == EINTR)
        continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
  }
  clear_tls_errors();
  int r = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
  if (!c->tls_ready && SSL_is_init_finished(c->ssl))
    dc_srv_tls_established(c);
  if (r > 0)
    return r;
  switch (SSL_get_error(c->ssl, r)) {
  case SSL_ERROR_WANT_READ:
    return 0;
  case SSL_ERROR_WANT_WRITE:
    c->tls_want_write = true;
    return 0;
  case SSL_ERROR_ZERO_RETURN:
    *eof = true;
    return -1;
  default:
    if (dc_srv_is_plain_eof()) {
      /* Closed without close_notify (many clients do): an ordinary close,
       * or a probe that never spoke TLS. */
      ERR_clear_error();
      if (!c->tls_ready)
        dc_log(DC_LOG_DEBUG, "connection from %s on listener %s closed "
                             "before the TLS handshake finished", c->peer,
               c->listener->name);
      *eof = true;
    } else {
      tls_failed(c, c->tls_ready ? "read" : "handshake");
    }
    return -1;
  }
}

/* Transport writes: bytes sent (> 0), 0 = would block, -1 = error. */
ssize_t dc_srv_send(conn_t *c, const void *buf, size_t n) {
  if (!c->ssl) {
    for (;;) {
      ssize_t r = send(c->fd, buf, n, MSG_NOSIGNAL);
      if (r >= 0)
        return r;
      if (errno == EINTR)
        continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
  }
  clear_tls_errors();
  int r = SSL_write(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
  if (r > 0)
    return r;
  int e = SSL_get_error(c->ssl, r);
  if (e == SSL_ERROR_WANT_READ) {
    /* Not writable until the peer sends (TLS 1.3 key update): wait for
     * input instead of spinning on EPOLLOUT. */
    c->tls_write_wants_read = true;
    return 0;
  }
  if (e == SSL_ERROR_WANT_WRITE)
    return 0;
  tls_failed(c, "write");
  return -1;
}
