/* SPDX-License-Identifier: BSD-2-Clause */
#include "config.h"
#include "broker/net/server.h"
#include "broker/net/conn_rate.h"
#include "broker/net/http.h"
#include "broker/auth/login.h"
#include "broker/core/metrics.h"
#include "broker/net/process_metrics.h"

#include "codec/wire.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/errors.h"
#include "common/text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_LISTENERS 16
#define READ_CHUNK 65536

/* EP_DEAD: a connection closed during the current batch of events; its
 * struct is freed once the batch is over, so later events naming it are
 * recognised and skipped. */
enum { EP_LISTENER = 1, EP_CONN = 2, EP_WAKE = 3, EP_DEAD = 4, EP_WATCH = 5,
       EP_ANSWERS = 6, EP_HTTP = 7, EP_HANDSHAKES = 8 };

/* A drained buffer above this capacity is released rather than kept. */
#define KEEP_BUF 65536

typedef struct listener {
  int kind; /* EP_LISTENER; first member, for epoll data dispatch */
  int fd;
  char name[64];
  dc_sec_protocol_t protocol;
  dc_tls_ctx_t *tls; /* borrowed; NULL unless SSL/SASL_SSL */
  char adv_host[256];
  int adv_port;
  dc_rate_t rate;  /* max_connection_rate */
  bool paused;     /* not accepting until the rate allows */
  uint64_t pauses; /* times it paused */
} listener_t;

/* One client connection. Owned by the server's list; freed on close. */
typedef struct conn {
  int kind; /* EP_CONN */
  int fd;
  const listener_t *listener;
  dc_buf_t in;          /* unparsed input */
  dc_buf_t out;         /* encoded responses not yet sent */
  size_t out_off;       /* bytes of out already sent */
  int64_t last_active;  /* monotonic ms of the last read or write */
  int64_t frame_start;  /* when the pending partial frame began; 0 = none */
  bool closing;         /* close once out is flushed */
  bool paused;          /* not reading: too much unsent output */
  uint32_t events;      /* registered epoll events */
  SSL *ssl;             /* owned; NULL on plaintext listeners */
  bool tls_ready;       /* handshake finished */
  bool tls_want_write;  /* a read needs the socket writable first */
  bool tls_write_wants_read; /* a write waits for the peer (key update) */
  struct handshake *handshake; /* a TLS handshake step on the log-in
                                  thread: the connection is out of epoll
                                  and its SSL is the step's until then */
  int64_t auth_deadline; /* TLS handshake / SASL must finish by then; 0 = done */
  dc_conn_auth_t auth;  /* SASL state (state NONE without SASL) */
  void *pending;        /* a request answered later (dc_broker_answers):
                           no further request is read until then */
  void *fleet;          /* the reporting agent's fleet entry (broker's) */
  const char *principal; /* TLS principal, owned by ssl; NULL = none */
  char peer[64];
  size_t buffered;      /* in.cap + out.cap as last counted in the server */
  struct conn *prev, *next;
} conn_t;

struct dc_server {
  dc_broker_t *broker;
  dc_server_opts_t opts;
  int epfd;
  struct {
    int kind;
    int fd;
  } wake, watch, answers, parked, logins, handshakes, http;
  /* watch: opts.watch_fd (borrowed); answers, parked, logins: the broker's
   * forwarded, watch and log-in answers (borrowed); handshakes: TLS
   * handshake steps done on the log-in thread (borrowed); http: the
   * metrics endpoint */
  dc_login_t *login; /* the broker's log-in thread, borrowed; NULL = none */
  dc_http_t *metrics;  /* owned; NULL = no metrics endpoint */
  double start_time;   /* wall seconds, for process_start_time_seconds */
  int spare_fd; /* released to accept-and-close when out of descriptors */
  listener_t listeners[MAX_LISTENERS];
  int n_listeners;
  conn_t *conns;
  size_t n_conns;
  conn_t *dead;     /* closed during this batch; freed after it */
  dc_ip_rates_t *ip_rates; /* max_connection_rate_per_ip; owned */
  int64_t accept_resume_ms; /* a paused listener accepts again; 0 = none */
  uint64_t refused_max_conns, refused_ip_rate; /* connections closed at
                                 accept: max_connections, the address's rate */
  uint64_t ip_refused_unlogged; /* ip rate refusals since the last log line */
  char ip_refused_peer[64];     /* the last of them */
  int64_t next_session_end; /* earliest SASL session end of a connection
                               (monotonic ms), or later; 0 = none */
  size_t buffered;  /* sum of every connection's buffered bytes */
  volatile sig_atomic_t stop;
  volatile sig_atomic_t reload;
  dc_arena_t arena; /* request scratch, reset after every request */
  uint8_t rbuf[READ_CHUNK]; /* every read lands here first */
};

void dc_server_opts_init(dc_server_opts_t *o) {
  o->max_request_size = 1024 * 1024;
  o->out_high_water = 4 * 1024 * 1024;
  o->idle_timeout_ms = 600000;
  o->request_timeout_ms = 30000;
  o->max_connections = 100000;
  o->max_connection_rate = 0;
  o->max_connection_rate_per_ip = 0;
  o->auth_timeout_ms = 30000;
  dc_http_limits_init(&o->http);
  o->max_buffered = 256u * 1024 * 1024;
  o->on_reload = NULL;
  o->reload_opaque = NULL;
  o->watch_fd = -1;
  o->on_watch = NULL;
  o->watch_opaque = NULL;
}

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

dc_server_t *dc_server_new(dc_broker_t *broker, const dc_server_opts_t *opts,
                           char *errstr, size_t errstr_size) {
  dc_server_t *s = calloc(1, sizeof(*s));
  if (!s) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  s->broker = broker;
  s->opts = *opts;
  s->start_time = (double)dc_wall_ms() / 1000;
  s->wake.kind = EP_WAKE;
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  s->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  s->ip_rates = dc_ip_rates_new(opts->max_connection_rate_per_ip);
  dc_arena_init(&s->arena);
  if (!s->ip_rates) {
    dc_seterr(errstr, errstr_size, "out of memory");
    dc_server_destroy(s);
    return NULL;
  }
  if (s->epfd < 0 || s->wake.fd < 0) {
    dc_seterr(errstr, errstr_size, "cannot create event loop: %s",
             strerror(errno));
    dc_server_destroy(s);
    return NULL;
  }
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->wake};
  epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake.fd, &ev);
  s->watch.kind = EP_WATCH;
  s->watch.fd = opts->on_watch ? opts->watch_fd : -1;
  struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &s->watch};
  if (s->watch.fd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->watch.fd, &wev)) {
    dc_seterr(errstr, errstr_size, "cannot watch fd %d: %s", s->watch.fd,
             strerror(errno));
    dc_server_destroy(s);
    return NULL;
  }
  s->answers.kind = EP_ANSWERS;
  s->answers.fd = dc_broker_event_fd(broker);
  s->parked.kind = EP_ANSWERS;
  s->parked.fd = dc_broker_watch_fd(broker);
  s->logins.kind = EP_ANSWERS;
  s->logins.fd = dc_broker_login_fd(broker);
  struct epoll_event aev = {.events = EPOLLIN, .data.ptr = &s->answers};
  struct epoll_event pev = {.events = EPOLLIN, .data.ptr = &s->parked};
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &s->logins};
  s->login = dc_broker_login(broker);
  s->handshakes.kind = EP_HANDSHAKES;
  s->handshakes.fd = s->login ? dc_login_fd(s->login, DC_LOGIN_TLS) : -1;
  struct epoll_event hev = {.events = EPOLLIN, .data.ptr = &s->handshakes};
  if ((s->answers.fd >= 0 &&
       epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->answers.fd, &aev)) ||
      epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->parked.fd, &pev) ||
      (s->logins.fd >= 0 &&
       epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->logins.fd, &lev)) ||
      (s->handshakes.fd >= 0 &&
       epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->handshakes.fd, &hev))) {
    dc_seterr(errstr, errstr_size, "cannot watch forwarded answers: %s",
             strerror(errno));
    dc_server_destroy(s);
    return NULL;
  }
  return s;
}

/* ---- TLS handshakes on the log-in thread -------------------------------
 * A handshake step (the server's key exchange and signature, a client
 * certificate's verification) costs up to a few ms of CPU: it runs on the
 * broker's log-in thread. Meanwhile the connection is out of epoll (so an
 * error or hang-up on the socket is not reported over and over) and
 * nothing else touches its SSL; a connection closed meanwhile leaves the
 * SSL and the socket to the step, which frees them when it comes back. */
typedef struct handshake {
  dc_login_work_t work;
  SSL *ssl;
  int fd;
  conn_t *c;       /* NULL once abandoned */
  int rc, err;     /* SSL_do_handshake's result and SSL_get_error's */
  bool plain_eof;  /* the peer just hung up */
  char why[320];   /* the failure, in words */
} handshake_t;

static handshake_t *handshake_of(dc_login_work_t *w) {
  return (handshake_t *)((char *)w - offsetof(handshake_t, work));
}

static bool is_plain_eof(void);

/* Log-in thread: one step; the error queue is this thread's, so a
 * failure is put in words here. */
static void handshake_run(dc_login_work_t *w) {
  handshake_t *h = handshake_of(w);
  ERR_clear_error();
  h->rc = SSL_do_handshake(h->ssl);
  h->err = h->rc == 1 ? SSL_ERROR_NONE : SSL_get_error(h->ssl, h->rc);
  if (h->err != SSL_ERROR_NONE && h->err != SSL_ERROR_WANT_READ &&
      h->err != SSL_ERROR_WANT_WRITE) {
    h->plain_eof = h->err == SSL_ERROR_ZERO_RETURN || is_plain_eof();
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

static void handshake_abandon(handshake_t *h) { h->c = NULL; }

static void conn_close(dc_server_t *s, conn_t *c) {
  epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  if (c->pending)
    dc_broker_abandon(s->broker, c->pending);
  if (c->fleet)
    dc_broker_fleet_conn_closed(s->broker, c->fleet);
  if (c->handshake) {
    handshake_abandon(c->handshake); /* it frees the SSL and the socket */
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

static void free_dead(dc_server_t *s) {
  while (s->dead) {
    conn_t *c = s->dead;
    s->dead = c->next;
    free(c);
  }
}

/* Buffers a connection no longer needs at their size go back to the
 * allocator, and the server's total is brought up to date. */
static void account(dc_server_t *s, conn_t *c) {
  if (c->out.len == 0 && c->out.cap > KEEP_BUF)
    dc_buf_free(&c->out);
  if (c->in.len == 0 && c->in.cap > KEEP_BUF)
    dc_buf_free(&c->in);
  size_t now = c->in.cap + c->out.cap;
  s->buffered += now - c->buffered;
  c->buffered = now;
}

/* Over the cap on buffered bytes: close the connections holding the most
 * until the total is back under it, each with a log line. */
static void enforce_buffer_cap(dc_server_t *s) {
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
    conn_close(s, worst);
  }
}

void dc_server_destroy(dc_server_t *s) {
  if (!s)
    return;
  while (s->conns)
    conn_close(s, s->conns);
  free_dead(s);
  for (int i = 0; i < s->n_listeners; i++)
    close(s->listeners[i].fd);
  if (s->wake.fd >= 0)
    close(s->wake.fd);
  if (s->epfd >= 0)
    close(s->epfd);
  if (s->spare_fd >= 0)
    close(s->spare_fd);
  dc_http_destroy(s->metrics);
  dc_ip_rates_destroy(s->ip_rates);
  dc_arena_free(&s->arena);
  free(s);
}

size_t dc_server_connections(const dc_server_t *s) { return s->n_conns; }

static void wake(dc_server_t *s) {
  uint64_t one = 1;
  ssize_t r = write(s->wake.fd, &one, sizeof(one));
  (void)r;
}

void dc_server_stop(dc_server_t *s) {
  s->stop = 1;
  wake(s);
}

void dc_server_request_reload(dc_server_t *s) {
  s->reload = 1;
  wake(s);
}

static void addr_to_str(const struct sockaddr_storage *ss, char *host,
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
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  char h[INET6_ADDRSTRLEN];
  int p;
  addr_to_str(&ss, h, sizeof(h), &p);
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

static void set_events(dc_server_t *s, conn_t *c) {
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

static void resume_listeners(dc_server_t *s) {
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
    addr_to_str(ss, s->ip_refused_peer, sizeof(s->ip_refused_peer), &port);
    s->refused_ip_rate++;
    s->ip_refused_unlogged++;
    close(fd);
    return false;
  }
  return true;
}

static void do_accept(dc_server_t *s, listener_t *l) {
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
      if (errno == EMFILE || errno == ENFILE) {
        /* Out of descriptors: accept and close so the client is told. */
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
      return; /* EAGAIN or an error worth retrying on the next event */
    }
    dc_rate_take(&l->rate, now);
    if (!admit(s, fd, &ss, now))
      continue;
    conn_t *c = calloc(1, sizeof(*c));
    if (!c) {
      close(fd);
      continue;
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
        continue;
      }
    }
    if (l->protocol == DC_SEC_SASL_PLAINTEXT || l->protocol == DC_SEC_SASL_SSL)
      c->auth.state = DC_AUTH_HANDSHAKE;
    if (c->ssl || c->auth.state != DC_AUTH_NONE)
      c->auth_deadline = c->last_active + s->opts.auth_timeout_ms;
    char h[INET6_ADDRSTRLEN];
    int p;
    addr_to_str(&ss, h, sizeof(h), &p);
    snprintf(c->peer, sizeof(c->peer), "%s:%d", h, p);
    c->events = EPOLLIN;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
      close(fd);
      free(c);
      continue;
    }
    c->next = s->conns;
    if (s->conns)
      s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
  }
}

/* The TLS handshake just finished: take the certificate principal. */
static void tls_established(conn_t *c) {
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
static bool is_plain_eof(void) {
  unsigned long e = ERR_peek_error();
  return e == 0 || ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

/* Transport reads: bytes read (> 0), 0 = nothing now (would block), or -1 =
 * the connection is over (*eof: the peer closed in order). */
static ssize_t io_recv(conn_t *c, void *buf, size_t n, bool *eof) {
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
  ERR_clear_error();
  int r = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
  if (!c->tls_ready && SSL_is_init_finished(c->ssl))
    tls_established(c);
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
    if (is_plain_eof()) {
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
static ssize_t io_send(conn_t *c, const void *buf, size_t n) {
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
  ERR_clear_error();
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

/* Sends what it can. Returns false when the connection was closed. */
static bool conn_flush(dc_server_t *s, conn_t *c) {
  while (c->out_off < c->out.len) {
    ssize_t n = io_send(c, c->out.data + c->out_off, c->out.len - c->out_off);
    if (n == 0)
      break;
    if (n < 0) {
      conn_close(s, c);
      return false;
    }
    c->out_off += (size_t)n;
    c->last_active = dc_mono_ms();
  }
  if (c->out_off == c->out.len) {
    c->out.len = 0;
    c->out_off = 0;
    if (c->closing) {
      conn_close(s, c);
      return false;
    }
  }
  return true;
}

/* Authenticated (and TLS set up): no more deadline for it. */
static void auth_progress(conn_t *c) {
  if (c->auth.state == DC_AUTH_DONE && (!c->ssl || c->tls_ready))
    c->auth_deadline = 0;
}

/* Handles every complete frame in c->in, in order, while output is below
 * the high-water mark. */
static void conn_process(dc_server_t *s, conn_t *c) {
  size_t off = 0;
  char why[256];
  while (!c->closing && !c->pending &&
         c->out.len - c->out_off < s->opts.out_high_water) {
    int32_t size;
    int r = dc_frame_peek(c->in.data + off, c->in.len - off,
                          s->opts.max_request_size, &size);
    if (r < 0) {
      dc_log(DC_LOG_WARN, "closing connection from %s: %s (limit %zu bytes)",
             c->peer, dc_err_str(r), s->opts.max_request_size);
      c->closing = true;
      break;
    }
    if (r == 0)
      break;
    const char *principal = c->auth.state == DC_AUTH_DONE ? c->auth.principal
                            : c->principal               ? c->principal
                                                         : "User:ANONYMOUS";
    dc_conn_info_t info = {.peer = c->peer,
                           .principal = principal,
                           .listener = c->listener->name,
                           .advertised_host = c->listener->adv_host,
                           .advertised_port = c->listener->adv_port,
                           .auth = &c->auth,
                           .token = c,
                           .pending = &c->pending,
                           .fleet = &c->fleet};
    why[0] = '\0';
    int h = dc_broker_handle(s->broker, &info, c->in.data + off + 4,
                             (size_t)size, &s->arena, &c->out, why,
                             sizeof(why));
    dc_arena_reset(&s->arena);
    off += 4 + (size_t)size;
    auth_progress(c);
    if (h == DC_HANDLE_CLOSE) {
      dc_log(DC_LOG_WARN, "closing connection from %s: %s", c->peer, why);
      c->closing = true;
    }
  }
  if (off) {
    dc_buf_consume(&c->in, off);
    c->frame_start = 0;
  }
  if (c->in.len && !c->frame_start)
    c->frame_start = dc_mono_ms();
  c->paused = c->out.len - c->out_off >= s->opts.out_high_water;
  if (c->closing)
    c->in.len = 0; /* discard whatever else it sent */
}

/* KIP-368: a connection whose SASL session ended without a completed
 * re-authentication closes then, whatever it waits for: a parked Watch or
 * DescribeFleet must not outlive its session. */
static bool session_ended(const conn_t *c, int64_t now) {
  return c->auth.session_end_ms && now > c->auth.session_end_ms;
}

static void close_ended_session(dc_server_t *s, conn_t *c) {
  dc_log(DC_LOG_INFO, "closing connection from %s: the SASL session of %s "
         "ended (token expiry or connections.max.reauth.ms) without "
         "re-authentication%s", c->peer,
         c->auth.principal ? c->auth.principal : "?",
         c->pending ? "; its parked request is dropped" : "");
  conn_close(s, c);
}

/* Keeps the earliest session end known so the loop wakes for it. */
static void note_session(dc_server_t *s, const conn_t *c) {
  int64_t end = c->auth.session_end_ms;
  if (end && (!s->next_session_end || end < s->next_session_end))
    s->next_session_end = end;
}

/* Closes the connections whose session ended; the next check is at the
 * earliest end left, at most every 50 ms (one pass costs O(connections)). */
static void end_sessions(dc_server_t *s, int64_t now) {
  conn_t *next;
  int64_t earliest = 0;
  for (conn_t *c = s->conns; c; c = next) {
    next = c->next;
    if (session_ended(c, now))
      close_ended_session(s, c);
    else if (c->auth.session_end_ms &&
             (!earliest || c->auth.session_end_ms < earliest))
      earliest = c->auth.session_end_ms;
  }
  s->next_session_end = earliest && earliest < now + 50 ? now + 50 : earliest;
}

static void handshake_start(dc_server_t *s, conn_t *c);

static void conn_readable(dc_server_t *s, conn_t *c) {
  if (c->ssl && !c->tls_ready && s->login) {
    handshake_start(s, c);
    return;
  }
  c->tls_write_wants_read = false; /* input arrived: writes may go on */
  /* Bounded: never hold more than one maximal frame plus a chunk. */
  size_t limit = s->opts.max_request_size + 4 + READ_CHUNK;
  for (int i = 0; i < 16 && c->in.len < limit; i++) {
    /* Read into the shared chunk and keep only what arrived, so an idle
     * connection holds no input buffer. */
    bool eof;
    ssize_t n = io_recv(c, s->rbuf, READ_CHUNK, &eof);
    if (n < 0 && eof) {
      c->closing = true; /* peer closed: answer what we have, then close */
      break;
    }
    if (n < 0) {
      conn_close(s, c);
      return;
    }
    if (n == 0)
      break;
    dc_buf_append(&c->in, s->rbuf, (size_t)n);
    if (c->in.err) {
      dc_log(DC_LOG_ERR, "out of memory reading from %s", c->peer);
      conn_close(s, c);
      return;
    }
    c->last_active = dc_mono_ms();
    /* A short plaintext read drained the socket; TLS reads return one
     * record at a time, so keep going until it would block. */
    if (!c->ssl && (size_t)n < READ_CHUNK)
      break;
  }
  bool peer_closed = c->closing;
  c->closing = false;
  conn_process(s, c);
  note_session(s, c);
  if (peer_closed)
    c->closing = true;
  if (conn_flush(s, c))
    set_events(s, c);
}

static void conn_writable(dc_server_t *s, conn_t *c) {
  if (c->tls_want_write) {
    /* A TLS read was waiting for the socket to drain: retry it. */
    c->tls_want_write = false;
    conn_readable(s, c);
    return;
  }
  if (!conn_flush(s, c))
    return;
  if (c->paused) {
    /* Output drained below the mark: serve the frames we held back. */
    conn_process(s, c);
    if (!conn_flush(s, c))
      return;
  }
  set_events(s, c);
}

/* Hands the connection's next handshake step to the log-in thread. */
static void handshake_start(dc_server_t *s, conn_t *c) {
  handshake_t *h = calloc(1, sizeof(*h));
  if (!h) {
    dc_log(DC_LOG_ERR, "out of memory for the TLS handshake with %s",
           c->peer);
    conn_close(s, c);
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
    conn_close(s, c);
  } else if (h->err == SSL_ERROR_NONE) {
    tls_established(c);
    conn_readable(s, c); /* what came with the client's last flight */
  } else if (h->err == SSL_ERROR_WANT_READ ||
             h->err == SSL_ERROR_WANT_WRITE) {
    c->tls_want_write = h->err == SSL_ERROR_WANT_WRITE;
    set_events(s, c);
  } else {
    if (h->plain_eof)
      dc_log(DC_LOG_DEBUG, "connection from %s on listener %s closed "
                           "before the TLS handshake finished", c->peer,
             c->listener->name);
    else
      dc_log(DC_LOG_WARN, "TLS handshake with %s on listener %s failed: %s",
             c->peer, c->listener->name, h->why);
    conn_close(s, c);
  }
  if (c->kind == EP_CONN)
    account(s, c);
}

static void handshakes_done(dc_server_t *s) {
  dc_login_work_t *w;
  while ((w = dc_login_take_done(s->login, DC_LOGIN_TLS))) {
    handshake_t *h = handshake_of(w);
    if (h->c)
      handshake_done(s, h);
    handshake_free(h);
  }
}

/* A deferred answer for the connection token: sent, and the requests
 * that arrived meanwhile are served. */
static void on_answer(void *opaque, void *token, const uint8_t *frame,
                      size_t len) {
  dc_server_t *s = opaque;
  conn_t *c = token;
  c->pending = NULL;
  if (session_ended(c, dc_mono_ms())) {
    close_ended_session(s, c);
    return;
  }
  if (c->frame_start) /* what it sent behind the parked request waited */
    c->frame_start = dc_mono_ms();
  if (!frame) {
    dc_log(DC_LOG_WARN, "closing connection from %s: its forwarded request "
           "could not be answered", c->peer);
    c->closing = true;
  } else {
    dc_buf_append(&c->out, frame, len);
  }
  if (c->auth.failed) /* a log-in step's answer: the client is told, then
                         the connection closes */
    c->closing = true;
  auth_progress(c);
  conn_process(s, c);
  note_session(s, c);
  if (conn_flush(s, c))
    set_events(s, c);
  if (c->kind == EP_CONN)
    account(s, c);
}

static void sweep(dc_server_t *s, int64_t now) {
  if (s->ip_refused_unlogged) {
    dc_log(DC_LOG_WARN, "closed %llu new connection(s) over "
           "max.connection.creation.rate.per.ip (%g a second), the last "
           "from %s", (unsigned long long)s->ip_refused_unlogged,
           s->opts.max_connection_rate_per_ip, s->ip_refused_peer);
    s->ip_refused_unlogged = 0;
  }
  dc_ip_rates_forget_idle(s->ip_rates, now);
  conn_t *next;
  for (conn_t *c = s->conns; c; c = next) {
    next = c->next;
    if (c->auth_deadline && now > c->auth_deadline) {
      dc_log(DC_LOG_WARN,
             "closing connection from %s on listener %s: %s not completed "
             "within %d ms", c->peer, c->listener->name,
             c->ssl && !c->tls_ready ? "TLS handshake" : "SASL authentication",
             s->opts.auth_timeout_ms);
      conn_close(s, c);
    } else if (now - c->last_active > s->opts.idle_timeout_ms &&
               !c->pending) { /* a parked request is not idleness */
      dc_log(DC_LOG_INFO, "closing idle connection from %s", c->peer);
      conn_close(s, c);
    } else if (c->frame_start && !c->pending && /* parked: nothing read */
               now - c->frame_start > s->opts.request_timeout_ms) {
      dc_log(DC_LOG_WARN,
             "closing connection from %s: request not completed within %d ms",
             c->peer, s->opts.request_timeout_ms);
      conn_close(s, c);
    }
  }
}

/* ---- the metrics and health endpoint ------------------------------------ */

/* dynconfd_connections{listener,protocol}: open client connections. */
static void connection_metrics(const dc_server_t *s, dc_buf_t *out) {
  size_t open[MAX_LISTENERS] = {0};
  for (const conn_t *c = s->conns; c; c = c->next)
    open[c->listener - s->listeners]++;
  dc_metrics_head(out, "dynconfd_connections", "gauge",
                  "Open client connections, by listener.");
  for (int i = 0; i < s->n_listeners; i++)
    dc_buf_printf(out, "dynconfd_connections{listener=\"%s\",protocol=\"%s\"} "
                  "%zu\n", s->listeners[i].name,
                  dc_sec_protocol_name(s->listeners[i].protocol), open[i]);
  dc_metrics_head(out, "dynconfd_tls_certificate_expiry_seconds", "gauge",
                  "When each TLS listener's served certificate expires, "
                  "seconds since the Unix epoch (reloads included).");
  for (int i = 0; i < s->n_listeners; i++) {
    char subject[512];
    int64_t not_after = -1;
    if (!s->listeners[i].tls)
      continue;
    dc_tls_ctx_describe(s->listeners[i].tls, subject, sizeof(subject),
                        &not_after);
    if (not_after >= 0)
      dc_metrics_value(out, "dynconfd_tls_certificate_expiry_seconds",
                       "listener", s->listeners[i].name,
                       (double)not_after / 1000);
  }
  dc_metrics_head(out, "dynconfd_connections_refused_total", "counter",
                  "New connections closed at once: the server had "
                  "max.connections, or their address was over "
                  "max.connection.creation.rate.per.ip.");
  dc_buf_printf(out, "dynconfd_connections_refused_total{reason=\"max_"
                "connections\"} %llu\n", (unsigned long long)
                s->refused_max_conns);
  dc_buf_printf(out, "dynconfd_connections_refused_total{reason=\"ip_"
                "creation_rate\"} %llu\n", (unsigned long long)
                s->refused_ip_rate);
  dc_metrics_head(out, "dynconfd_listener_accept_pauses_total", "counter",
                  "Times a listener stopped accepting for a moment, at "
                  "max.connection.creation.rate.");
  for (int i = 0; i < s->n_listeners; i++)
    dc_buf_printf(out, "dynconfd_listener_accept_pauses_total{listener="
                  "\"%s\"} %llu\n", s->listeners[i].name,
                  (unsigned long long)s->listeners[i].pauses);
  dc_metrics_head(out, "dynconfd_buffered_bytes", "gauge",
                  "Bytes of every connection's input and output buffers.");
  dc_metrics_value(out, "dynconfd_buffered_bytes", NULL, NULL,
                   (double)s->buffered);
}

static int http_answer(void *opaque, const char *path, dc_buf_t *body,
                       const char **type) {
  dc_server_t *s = opaque;
  if (!strcmp(path, "/metrics")) {
    *type = "text/plain; version=0.0.4; charset=utf-8";
    dc_metrics_head(body, "dynconfd_build_info", "gauge",
                    "The dynconfd build serving, as a label.");
    dc_metrics_value(body, "dynconfd_build_info", "version", PACKAGE_VERSION,
                     1);
    dc_broker_metrics(s->broker, body);
    connection_metrics(s, body);
    dc_process_metrics(body, s->start_time);
    return 200;
  }
  if (!strcmp(path, "/healthz")) {
    dc_buf_printf(body, "ok\n");
    return 200;
  }
  if (!strcmp(path, "/readyz")) {
    bool ready = s->n_listeners > 0 && !s->stop;
    dc_buf_printf(body, ready ? "ready\n" : "not ready: %s\n",
                  s->stop ? "stopping" : "no listener open");
    return ready ? 200 : 503;
  }
  dc_buf_printf(body, "not found: try /metrics, /healthz or /readyz\n");
  return 404;
}

int dc_server_add_metrics(dc_server_t *s, const char *host, int port,
                          char *bound, size_t bound_size, char *errstr,
                          size_t errstr_size) {
  if (s->metrics) {
    dc_seterr(errstr, errstr_size, "one metrics listener only");
    return -1;
  }
  s->metrics = dc_http_new(host, port, &s->opts.http, http_answer, s, bound,
                           bound_size, errstr, errstr_size);
  if (!s->metrics)
    return -1;
  s->http.kind = EP_HTTP;
  s->http.fd = dc_http_fd(s->metrics);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->http};
  if (s->http.fd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->http.fd, &ev)) {
    dc_seterr(errstr, errstr_size, "cannot watch the metrics listener: %s",
             strerror(errno));
    dc_http_destroy(s->metrics);
    s->metrics = NULL;
    return -1;
  }
  return 0;
}

/* How long the loop may wait for events: until the next once-a-second
 * sweep, or less when a SASL session ends sooner, or the metrics endpoint
 * holds work or has a connection's timeout due before then. */
static int wait_ms(dc_server_t *s, int64_t last_sweep) {
  int64_t now = dc_mono_ms();
  int64_t left = last_sweep + 1000 - now;
  if (s->next_session_end && s->next_session_end + 1 - now < left)
    left = s->next_session_end + 1 - now;
  if (s->accept_resume_ms && s->accept_resume_ms - now < left)
    left = s->accept_resume_ms - now;
  int ms = left < 0 ? 0 : (int)left;
  int http = s->metrics ? dc_http_timeout_ms(s->metrics) : -1;
  return http >= 0 && http < ms ? http : ms;
}

/* One event other than the metrics endpoint's. */
static void dispatch(dc_server_t *s, struct epoll_event *ev) {
  int kind = *(int *)ev->data.ptr;
  if (kind == EP_WAKE) {
    uint64_t v;
    ssize_t r = read(s->wake.fd, &v, sizeof(v));
    (void)r;
    if (s->reload) {
      s->reload = 0;
      if (s->opts.on_reload)
        s->opts.on_reload(s->opts.reload_opaque);
    }
  } else if (kind == EP_WATCH) {
    s->opts.on_watch(s->opts.watch_opaque);
  } else if (kind == EP_ANSWERS) {
    dc_broker_answers(s->broker, on_answer, s);
    enforce_buffer_cap(s);
  } else if (kind == EP_HANDSHAKES) {
    handshakes_done(s);
    enforce_buffer_cap(s);
  } else if (kind == EP_LISTENER) {
    do_accept(s, ev->data.ptr);
  } else {
    conn_t *c = ev->data.ptr;
    if (c->kind == EP_DEAD)
      return; /* closed earlier in this batch */
    if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))
      conn_readable(s, c);
    else if (ev->events & EPOLLOUT)
      conn_writable(s, c);
    if (c->kind == EP_CONN)
      account(s, c);
    enforce_buffer_cap(s);
  }
}

int dc_server_run(dc_server_t *s) {
  struct epoll_event evs[256];
  int64_t last_sweep = dc_mono_ms();
  while (!s->stop) {
    int n = epoll_wait(s->epfd, evs, 256, wait_ms(s, last_sweep));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      dc_log(DC_LOG_ERR, "epoll_wait: %s", strerror(errno));
      return -1;
    }
    bool http_ready = false;
    for (int i = 0; i < n; i++) {
      if (*(int *)evs[i].data.ptr == EP_HTTP)
        http_ready = true;
      else
        dispatch(s, &evs[i]);
    }
    free_dead(s);
    /* Ready, or due: libmicrohttpd may hold work (a connection it has
     * more to read from) that no new event will announce. */
    if (s->metrics && (http_ready || !dc_http_timeout_ms(s->metrics)))
      dc_http_run(s->metrics);
    int64_t now = dc_mono_ms();
    if (s->accept_resume_ms && now >= s->accept_resume_ms)
      resume_listeners(s);
    if (s->next_session_end && now > s->next_session_end) {
      end_sessions(s, now);
      free_dead(s);
    }
    if (now - last_sweep >= 1000) {
      if (s->opts.on_tick)
        s->opts.on_tick(s->opts.tick_opaque);
      sweep(s, now);
      free_dead(s);
      last_sweep = now;
    }
  }
  return 0;
}
