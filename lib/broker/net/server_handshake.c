/* SPDX-License-Identifier: BSD-2-Clause */
#include "config.h"
#include "broker/net/server_int.h"

#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* TLS handshakes on the log-in thread.
 * A handshake step (the server's key exchange and signature, a client
 * certificate's verification) costs up to a few ms of CPU: it runs on the
 * broker's log-in thread. Meanwhile the connection is out of epoll (so an
 * error or hang-up on the socket is not reported over and over) and
 * nothing else touches its SSL; a connection closed meanwhile leaves the
 * SSL and the socket to the step, which frees them when it comes back. */

static handshake_t *handshake_of(dc_login_work_t *w) {
  return (handshake_t *)((char *)w - offsetof(handshake_t, work));
}

/* Log-in thread: one step; the error queue is this thread's, so a
 * failure is put in words here. */
static void handshake_run(dc_login_work_t *w) {
  handshake_t *h = handshake_of(w);
  ERR_clear_error();
  h->rc = SSL_do_handshake(h->ssl);
  h->err = h->rc == 1 ? SSL_ERROR_NONE : SSL_get_error(h->ssl, h->rc);
  if (h->err != SSL_ERROR_NONE && h->err != SSL_ERROR_WANT_READ &&
      h->err != SSL_ERROR_WANT_WRITE) {
    h->plain_eof = h->err == SSL_ERROR_ZERO_RETURN || dc_srv_is_plain_eof();
    dc_tls_last_error(h->ssl, h->why, sizeof(h->why));
  }
  ERR_clear_error();
}

static void handshake_free(handshake_t *h) {
  if (!h->c) { /* abandoned: the connection left these to the step */
    SSL_free(h->ssl);
    close(h->fd);
  }
  free(h);
}

static void handshake_drop(dc_login_work_t *w) {
  handshake_t *h = handshake_of(w);
  h->c = NULL;
  handshake_free(h);
}

/* Hands the connection's next handshake step to the log-in thread. */
void dc_srv_handshake_start(dc_server_t *s, conn_t *c) {
  handshake_t *h = calloc(1, sizeof(*h));
  if (!h) {
    dc_log(DC_LOG_ERR, "out of memory for the TLS handshake with %s",
           c->peer);
    dc_srv_conn_close(s, c);
    return;
  }
  h->work.run = handshake_run;
  h->work.drop = handshake_drop;
  h->work.sink = DC_LOGIN_TLS;
  h->ssl = c->ssl;
  h->fd = c->fd;
  h->c = c;
  epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  c->events = 0;
  c->tls_want_write = false;
  c->handshake = h;
  dc_login_submit(s->login, &h->work);
}

/* A step back from the log-in thread: the connection is watched again,
 * and set up, waits for the peer, or closes. */
static void handshake_done(dc_server_t *s, handshake_t *h) {
  conn_t *c = h->c;
  c->handshake = NULL;
  c->last_active = dc_mono_ms();
  c->events = EPOLLIN;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
  if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
    dc_log(DC_LOG_ERR, "cannot watch the connection from %s: %s", c->peer,
           strerror(errno));
    dc_srv_conn_close(s, c);
  } else if (h->err == SSL_ERROR_NONE) {
    dc_srv_tls_established(c);
    dc_srv_conn_read(s, c); /* what came with the client's last flight */
  } else if (h->err == SSL_ERROR_WANT_READ ||
             h->err == SSL_ERROR_WANT_WRITE) {
    c->tls_want_write = h->err == SSL_ERROR_WANT_WRITE;
    dc_srv_set_events(s, c);
  } else {
    if (h->plain_eof)
      dc_log(DC_LOG_DEBUG, "connection from %s on listener %s closed "
                           "before the TLS handshake finished", c->peer,
             c->listener->name);
    else
      dc_log(DC_LOG_WARN, "TLS handshake with %s on listener %s failed: %s",
             c->peer, c->listener->name, h->why);
    dc_srv_conn_close(s, c);
  }
  if (c->kind == EP_CONN)
    dc_srv_account(s, c);
}

void dc_srv_handshakes_done(dc_server_t *s) {
  dc_login_work_t *w;
  while ((w = dc_login_take_done(s->login, DC_LOGIN_TLS))) {
    handshake_t *h = handshake_of(w);
    if (h->c)
      handshake_done(s, h);
    handshake_free(h);
  }
}
