/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's listeners: opened, accepting at their rate, and the
 * connections they accept admitted or refused. */
#include "config.h"
#include "broker/net/server_int.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

const char *dc_sec_protocol_name(dc_sec_protocol_t p) {
  static const char *const names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT",
                                      "SASL_SSL"};
  return (unsigned)p < 4 ? names[p] : "?";
}

int dc_sec_protocol_parse(const char *name) {
  for (int i = 0; i < 4; i++)
    if (!strcasecmp(name, dc_sec_protocol_name((dc_sec_protocol_t)i)))
      return i;
  return -1;
}

int dc_server_listen(dc_server_t *s, const char *host, int port,
                     const char *adv_host, int adv_port, char *bound,
                     size_t bound_size, char *errstr, size_t errstr_size) {
  dc_listener_conf_t lc = {.name = "PLAINTEXT",
                           .protocol = DC_SEC_PLAINTEXT,
                           .host = host,
                           .port = port,
                           .adv_host = adv_host,
                           .adv_port = adv_port};
  return dc_server_add_listener(s, &lc, bound, bound_size, errstr,
                                errstr_size);
}

/* A listening socket bound to host:port, or -1 (errstr says why). */
static int open_listen_socket(const char *host, int port, char *errstr,
                              size_t errstr_size) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                  *ai = NULL;
  char portstr[16];
  snprintf(portstr, sizeof(portstr), "%d", port);
  int gai = getaddrinfo(*host ? host : NULL, portstr, &hints, &ai);
  if (gai) {
    dc_seterr(errstr, errstr_size, "cannot resolve listen address %s: %s",
             host, gai_strerror(gai));
    return -1;
  }
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0)
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) ||
      listen(fd, 4096)) {
    dc_seterr(errstr, errstr_size, "cannot listen on %s:%d: %s", host, port,
             strerror(errno));
    if (fd >= 0)
      close(fd);
    freeaddrinfo(ai);
    return -1;
  }
  freeaddrinfo(ai);
  return fd;
}

int dc_server_add_listener(dc_server_t *s, const dc_listener_conf_t *lc,
                           char *bound, size_t bound_size, char *errstr,
                           size_t errstr_size) {
  const char *host = lc->host ? lc->host : "";
  int port = lc->port;
  const char *adv_host = lc->adv_host;
  int adv_port = lc->adv_port;
  bool tls = lc->protocol == DC_SEC_SSL || lc->protocol == DC_SEC_SASL_SSL;
  if (tls && !lc->tls) {
    dc_seterr(errstr, errstr_size,
             "listener %s (%s) needs TLS settings (--ssl-cert, --ssl-key)",
             lc->name, dc_sec_protocol_name(lc->protocol));
    return -1;
  }
  if (s->n_listeners == MAX_LISTENERS) {
    dc_seterr(errstr, errstr_size, "at most %d listeners", MAX_LISTENERS);
    return -1;
  }
  int fd = open_listen_socket(host, port, errstr, errstr_size);
  if (fd < 0)
    return -1;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  char h[INET6_ADDRSTRLEN];
  int p;
  dc_srv_addr_to_str(&ss, h, sizeof(h), &p);
  listener_t *l = &s->listeners[s->n_listeners++];
  l->kind = EP_LISTENER;
  l->fd = fd;
  snprintf(l->name, sizeof(l->name), "%s", lc->name ? lc->name : "PLAINTEXT");
  l->protocol = lc->protocol;
  l->tls = tls ? lc->tls : NULL;
  snprintf(l->adv_host, sizeof(l->adv_host), "%s",
           adv_host && *adv_host ? adv_host : h);
  l->adv_port = adv_port > 0 ? adv_port : p;
  dc_rate_init(&l->rate, s->opts.max_connection_rate, dc_mono_ms());
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
  epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
  snprintf(bound, bound_size, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d",
           h, p);
  return 0;
}

/* The listener's rate is spent: it stops accepting (new clients wait in
 * the listen backlog) until its next token. */
static void pause_listener(dc_server_t *s, listener_t *l, int64_t now) {
  struct epoll_event ev = {.events = 0, .data.ptr = l};
  epoll_ctl(s->epfd, EPOLL_CTL_MOD, l->fd, &ev);
  l->paused = true;
  l->pauses++;
  int64_t at = dc_rate_next_ms(&l->rate, now);
  if (!s->accept_resume_ms || at < s->accept_resume_ms)
    s->accept_resume_ms = at;
}

void dc_srv_resume_listeners(dc_server_t *s) {
  s->accept_resume_ms = 0;
  for (int i = 0; i < s->n_listeners; i++) {
    listener_t *l = &s->listeners[i];
    if (!l->paused)
      continue;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
    epoll_ctl(s->epfd, EPOLL_CTL_MOD, l->fd, &ev);
    l->paused = false;
  }
}

/* May a connection just accepted from ss stay? Closed (and counted) when
 * the server is full or its address is over its rate. */
static bool admit(dc_server_t *s, int fd, const struct sockaddr_storage *ss,
                  int64_t now) {
  if (s->n_conns >= (size_t)s->opts.max_connections) {
    s->refused_max_conns++;
    close(fd);
    return false;
  }
  if (!dc_ip_rates_take(s->ip_rates, ss, now)) {
    int port;
    dc_srv_addr_to_str(ss, s->ip_refused_peer, sizeof(s->ip_refused_peer),
                       &port);
    s->refused_ip_rate++;
    s->ip_refused_unlogged++;
    close(fd);
    return false;
  }
  return true;
}

/* Out of descriptors: accept and close so the client is told. */
static void refuse_out_of_fds(dc_server_t *s, listener_t *l) {
  dc_log(DC_LOG_WARN, "out of file descriptors with %zu connections; "
                      "refusing new ones (raise ulimit -n)",
         s->n_conns);
  if (s->spare_fd >= 0) {
    close(s->spare_fd);
    int t = accept(l->fd, NULL, NULL);
    if (t >= 0)
      close(t);
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
}

void dc_srv_accept(dc_server_t *s, listener_t *l) {
  for (;;) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int64_t now = dc_mono_ms();
    if (!dc_rate_ready(&l->rate, now)) {
      pause_listener(s, l, now);
      return;
    }
    int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE)
        refuse_out_of_fds(s, l);
      return; /* EAGAIN or an error worth retrying on the next event */
    }
    dc_rate_take(&l->rate, now);
    if (admit(s, fd, &ss, now))
      dc_srv_conn_open(s, l, fd, &ss);
  }
}
