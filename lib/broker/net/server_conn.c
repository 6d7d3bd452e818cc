/* SPDX-License-Identifier: BSD-2-Clause */
/* A connection's life in the server: opened at accept, its buffers
 * accounted, closed. */
#include "config.h"
#include "broker/net/server_int.h"

#include "common/clock.h"
#include "common/log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

void dc_srv_addr_to_str(const struct sockaddr_storage *ss, char *host,
                        size_t hsz, int *port) {
  if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const void *)ss;
    inet_ntop(AF_INET6, &a->sin6_addr, host, (socklen_t)hsz);
    *port = ntohs(a->sin6_port);
  } else {
    const struct sockaddr_in *a = (const void *)ss;
    inet_ntop(AF_INET, &a->sin_addr, host, (socklen_t)hsz);
    *port = ntohs(a->sin_port);
  }
}

void dc_srv_conn_open(dc_server_t *s, listener_t *l, int fd,
                      const struct sockaddr_storage *ss) {
  conn_t *c = calloc(1, sizeof(*c));
  if (!c) {
    close(fd);
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  c->kind = EP_CONN;
  c->fd = fd;
  c->listener = l;
  c->last_active = dc_mono_ms();
  if (l->tls) {
    c->ssl = dc_tls_new_conn(l->tls, fd);
    if (!c->ssl) {
      dc_log(DC_LOG_ERR, "cannot start TLS on a new connection");
      close(fd);
      free(c);
      return;
    }
  }
  if (l->protocol == DC_SEC_SASL_PLAINTEXT || l->protocol == DC_SEC_SASL_SSL)
    c->auth.state = DC_AUTH_HANDSHAKE;
  if (c->ssl || c->auth.state != DC_AUTH_NONE)
    c->auth_deadline = c->last_active + s->opts.auth_timeout_ms;
  char h[INET6_ADDRSTRLEN];
  int p;
  dc_srv_addr_to_str(ss, h, sizeof(h), &p);
  snprintf(c->peer, sizeof(c->peer), "%s:%d", h, p);
  c->events = EPOLLIN;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
  if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
    close(fd);
    free(c);
    return;
  }
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  s->n_conns++;
}

void dc_srv_conn_close(dc_server_t *s, conn_t *c) {
  epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  if (c->pending)
    dc_broker_abandon(s->broker, c->pending);
  if (c->fleet)
    dc_broker_fleet_conn_closed(s->broker, c->fleet);
  dc_broker_memo_free(c->memo);
  if (c->handshake) {
    c->handshake->c = NULL; /* abandoned: the step frees the SSL and the
                               socket */
  } else if (c->ssl) {
    if (c->tls_ready)
      SSL_shutdown(c->ssl); /* best effort close_notify; never waits */
    SSL_free(c->ssl);
    ERR_clear_error();
  }
  dc_conn_auth_clear(&c->auth);
  if (!c->handshake)
    close(c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  s->n_conns--;
  s->buffered -= c->buffered;
  dc_buf_free(&c->in);
  dc_buf_free(&c->out);
  c->kind = EP_DEAD;
  c->next = s->dead;
  s->dead = c;
}

void dc_srv_free_dead(dc_server_t *s) {
  while (s->dead) {
    conn_t *c = s->dead;
    s->dead = c->next;
    free(c);
  }
}

/* Buffers a connection no longer needs at their size go back to the
 * allocator, and the server's total is brought up to date. */
void dc_srv_account(dc_server_t *s, conn_t *c) {
  if (c->out.len == 0 && c->out.cap > KEEP_BUF)
    dc_buf_free(&c->out);
  if (c->in.len == 0 && c->in.cap > KEEP_BUF)
    dc_buf_free(&c->in);
  size_t now = c->in.cap + c->out.cap + dc_broker_memo_bytes(c->memo);
  s->buffered += now - c->buffered;
  c->buffered = now;
}

/* Over the cap on buffered bytes: close the connections holding the most
 * until the total is back under it, each with a log line. */
void dc_srv_enforce_buffer_cap(dc_server_t *s) {
  while (s->buffered > s->opts.max_buffered) {
    conn_t *worst = NULL;
    for (conn_t *c = s->conns; c; c = c->next)
      if (!worst || c->buffered > worst->buffered)
        worst = c;
    if (!worst || !worst->buffered)
      return;
    dc_log(DC_LOG_WARN,
           "closing connection from %s: it holds %zu bytes (%zu of them "
           "unread responses) and all connections together hold %zu, over "
           "the limit of %zu (max.buffered.bytes)",
           worst->peer, worst->buffered, worst->out.len - worst->out_off,
           s->buffered, s->opts.max_buffered);
    dc_srv_conn_close(s, worst);
  }
}

void dc_srv_set_events(dc_server_t *s, conn_t *c) {
  bool want_out = (c->out.len > c->out_off && !c->tls_write_wants_read) ||
                  c->tls_want_write;
  /* A TLS write waiting for the peer needs input even when paused. */
  bool want_in = !(c->paused || c->closing) || c->tls_write_wants_read;
  uint32_t ev = (want_in ? EPOLLIN : 0) | (want_out ? EPOLLOUT : 0);
  if (ev == c->events)
    return;
  struct epoll_event e = {.events = ev, .data.ptr = c};
  epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &e);
  c->events = ev;
}
