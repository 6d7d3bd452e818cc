/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's life and its event loop; server_int.h names the files
 * that do the rest. */
#include "config.h"
#include "broker/net/server_int.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/errors.h"
#include "common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

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

/* The broker's answers (forwarded, parked, log-in) and the log-in
 * thread's TLS handshake steps wake the loop; -1 when one cannot be
 * watched (errno says why). */
static int watch_broker(dc_server_t *s, dc_broker_t *broker) {
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
       epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->handshakes.fd, &hev)))
    return -1;
  return 0;
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
  if (watch_broker(s, broker)) {
    dc_seterr(errstr, errstr_size, "cannot watch forwarded answers: %s",
             strerror(errno));
    dc_server_destroy(s);
    return NULL;
  }
  return s;
}

void dc_server_destroy(dc_server_t *s) {
  if (!s)
    return;
  while (s->conns)
    dc_srv_conn_close(s, s->conns);
  dc_srv_free_dead(s);
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

/* Input (or an error, or a hang-up): the next TLS handshake step when
 * the log-in thread does those, else the connection's requests. */
static void conn_readable(dc_server_t *s, conn_t *c) {
  if (c->ssl && !c->tls_ready && s->login)
    dc_srv_handshake_start(s, c);
  else
    dc_srv_conn_read(s, c);
}

static void conn_writable(dc_server_t *s, conn_t *c) {
  if (c->tls_want_write) {
    /* A TLS read was waiting for the socket to drain: retry it. */
    c->tls_want_write = false;
    conn_readable(s, c);
    return;
  }
  if (!dc_srv_conn_flush(s, c))
    return;
  if (c->paused) {
    /* Output drained below the mark: serve the frames we held back. */
    dc_srv_conn_process(s, c);
    if (!dc_srv_conn_flush(s, c))
      return;
  }
  dc_srv_set_events(s, c);
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
      dc_srv_conn_close(s, c);
    } else if (now - c->last_active > s->opts.idle_timeout_ms &&
               !c->pending) { /* a parked request is not idleness */
      dc_log(DC_LOG_INFO, "closing idle connection from %s", c->peer);
      dc_srv_conn_close(s, c);
    } else if (c->frame_start && !c->pending && /* parked: nothing read */
               now - c->frame_start > s->opts.request_timeout_ms) {
      dc_log(DC_LOG_WARN,
             "closing connection from %s: request not completed within %d ms",
             c->peer, s->opts.request_timeout_ms);
      dc_srv_conn_close(s, c);
    }
  }
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
    dc_broker_answers(s->broker, dc_srv_on_answer, s);
    dc_srv_enforce_buffer_cap(s);
  } else if (kind == EP_HANDSHAKES) {
    dc_srv_handshakes_done(s);
    dc_srv_enforce_buffer_cap(s);
  } else if (kind == EP_LISTENER) {
    dc_srv_accept(s, ev->data.ptr);
  } else {
    conn_t *c = ev->data.ptr;
    if (c->kind == EP_DEAD)
      return; /* closed earlier in this batch */
    if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))
      conn_readable(s, c);
    else if (ev->events & EPOLLOUT)
      conn_writable(s, c);
    if (c->kind == EP_CONN)
      dc_srv_account(s, c);
    dc_srv_enforce_buffer_cap(s);
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
    dc_srv_free_dead(s);
    /* Ready, or due: libmicrohttpd may hold work (a connection it has
     * more to read from) that no new event will announce. */
    if (s->metrics && (http_ready || !dc_http_timeout_ms(s->metrics)))
      dc_http_run(s->metrics);
    int64_t now = dc_mono_ms();
    if (s->accept_resume_ms && now >= s->accept_resume_ms)
      dc_srv_resume_listeners(s);
    if (s->next_session_end && now > s->next_session_end) {
      dc_srv_end_sessions(s, now);
      dc_srv_free_dead(s);
    }
    if (now - last_sweep >= 1000) {
      if (s->opts.on_tick)
        s->opts.on_tick(s->opts.tick_opaque);
      sweep(s, now);
      dc_srv_free_dead(s);
      last_sweep = now;
    }
  }
  return 0;
}
