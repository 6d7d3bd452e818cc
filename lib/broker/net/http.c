/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The metrics and health endpoint over libmicrohttpd (see http.h).
 */
#include "broker/net/http.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* One of libmicrohttpd's connections, watched for its peer's close (see
 * on_connection). Owned by the dc_http, from libmicrohttpd's notice that
 * the connection started to the one that it closed. */
typedef struct http_conn {
  struct MHD_Connection *c;
  int fd;                        /* libmicrohttpd's */
  bool hung_up;                  /* on the hung_up list */
  struct http_conn *prev, *next; /* that list */
} http_conn_t;

struct dc_http {
  struct MHD_Daemon *d;
  dc_http_handler_fn *fn;
  void *opaque;
  int ep;                 /* owned: libmicrohttpd's epoll fd, and the
                             connections' hang-up watches */
  http_conn_t *hung_up;   /* peers that closed, not yet seen closed */
  int64_t logged_at;      /* monotonic ms of the last library message */
  unsigned long unlogged; /* messages dropped since */
};

void dc_http_limits_init(dc_http_limits_t *l) {
  *l = (dc_http_limits_t){.max_connections = DC_HTTP_MAX_CONNECTIONS,
                          .max_per_address = DC_HTTP_MAX_PER_ADDRESS,
                          .idle_timeout_s = DC_HTTP_IDLE_TIMEOUT_S,
                          .max_header_bytes = DC_HTTP_MAX_HEADER_BYTES};
}

/* libmicrohttpd has a message for each client that misbehaves (closed
 * mid-request, refused at a limit, header too large): under a flood a
 * line per connection would flood the log, so one a second at most. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  dc_http_t *h = cls;
  int64_t now = dc_mono_ms();
  if (h->logged_at && now - h->logged_at < 1000) {
    h->unlogged++;
    return;
  }
  char msg[512];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  msg[strcspn(msg, "\n")] = '\0';
  if (h->unlogged)
    dc_log(DC_LOG_WARN, "metrics endpoint: %s (%lu messages before it not "
           "logged)", msg, h->unlogged);
  else
    dc_log(DC_LOG_WARN, "metrics endpoint: %s", msg);
  h->logged_at = now;
  h->unlogged = 0;
}

static enum MHD_Result respond(struct MHD_Connection *c, int status,
                               const void *body, size_t len,
                               const char *type) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      len, (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **state) {
  (void)version, (void)upload;
  dc_http_t *h = cls;
  static int first; /* marks the call that only saw the headers */
  if (!*state) {
    *state = &first;
    return MHD_YES;
  }
  if (*upload_size) { /* a body: not ours to take */
    *upload_size = 0;
    return MHD_YES;
  }
  if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
    static const char msg[] = "only GET\n";
    return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, msg, sizeof(msg) - 1,
                   "text/plain; charset=utf-8");
  }
  dc_buf_t body;
  dc_buf_init(&body);
  const char *type = "text/plain; charset=utf-8";
  int status = h->fn(h->opaque, url, &body, &type);
  enum MHD_Result ok =
      body.err ? MHD_NO : respond(c, status, body.data, body.len, type);
  dc_buf_free(&body);
  return ok;
}

/* host:port as a socket address. 0, or -1 with errstr. */
static int resolve(const char *host, int port, struct sockaddr_storage *ss,
                   socklen_t *len, char *errstr, size_t errstr_size) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  char ps[16];
  snprintf(ps, sizeof(ps), "%d", port);
  int e = getaddrinfo(*host ? host : NULL, ps, &hints, &ai);
  if (e || !ai) {
    dc_seterr(errstr, errstr_size, "metrics listener %s:%d: %s", host, port,
             e ? gai_strerror(e) : "no address");
    return -1;
  }
  memcpy(ss, ai->ai_addr, ai->ai_addrlen);
  *len = ai->ai_addrlen;
  freeaddrinfo(ai);
  return 0;
}

static void unlist(dc_http_t *h, http_conn_t *hc) {
  if (!hc->hung_up)
    return;
  if (hc->prev)
    hc->prev->next = hc->next;
  else
    h->hung_up = hc->next;
  if (hc->next)
    hc->next->prev = hc->prev;
  hc->hung_up = false;
}

/* libmicrohttpd's edge-triggered epoll set reports a request's last bytes
 * and the client's close, when they come together, as one edge; its read
 * takes the bytes and stops short of the end of stream, so the close
 * would be seen only at the idle timeout, the connection holding its
 * places until then. Each connection is also watched here, once, for its
 * peer's close (EPOLLRDHUP), and shown to libmicrohttpd again then. */
static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
                          enum MHD_ConnectionNotificationCode code) {
  dc_http_t *h = cls;
  http_conn_t *hc = *ctx;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    hc = i ? calloc(1, sizeof(*hc)) : NULL;
    if (!hc)
      return; /* unwatched: the idle timeout closes it */
    *hc = (http_conn_t){.c = c, .fd = i->connect_fd};
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT,
                             .data.ptr = hc};
    if (epoll_ctl(h->ep, EPOLL_CTL_ADD, hc->fd, &ev)) {
      free(hc);
      return;
    }
    *ctx = hc;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && hc) {
    epoll_ctl(h->ep, EPOLL_CTL_DEL, hc->fd, NULL);
    unlist(h, hc);
    free(hc);
    *ctx = NULL;
  }
}

/* The hang-ups reported since the last call go on the hung_up list. */
static void collect_hangups(dc_http_t *h) {
  struct epoll_event evs[64];
  int n;
  do {
    n = epoll_wait(h->ep, evs, 64, 0);
    for (int i = 0; i < n; i++) {
      http_conn_t *hc = evs[i].data.ptr;
      if (!hc || hc->hung_up) /* NULL: libmicrohttpd's own fd */
        continue;
      hc->hung_up = true;
      hc->prev = NULL;
      hc->next = h->hung_up;
      if (h->hung_up)
        h->hung_up->prev = hc;
      h->hung_up = hc;
    }
  } while (n == 64);
}

/* A connection whose peer has closed, once libmicrohttpd has read all it
 * sent and waits for (more of) a request, gets shutdown(SHUT_RD): that
 * changes nothing on a socket whose peer closed, but signals it again, so
 * libmicrohttpd's next run reads the end of stream and closes it. One
 * with bytes unread, or in the middle of a request, waits for a later
 * run (libmicrohttpd reads those bytes itself, or finishes the answer).
 * How many were signalled. */
static unsigned signal_hangups(dc_http_t *h) {
  unsigned n = 0;
  for (http_conn_t *hc = h->hung_up, *next; hc; hc = next) {
    next = hc->next;
    int unread = 0;
    if (MHD_get_connection_info(hc->c,
                                MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE) ||
        ioctl(hc->fd, FIONREAD, &unread) || unread > 0)
      continue;
    shutdown(hc->fd, SHUT_RD);
    unlist(h, hc);
    n++;
  }
  return n;
}

/* libmicrohttpd on the listening address, within limits. */
static struct MHD_Daemon *start_daemon(dc_http_t *h,
                                       const struct sockaddr_storage *ss,
                                       int port,
                                       const dc_http_limits_t *limits) {
  /* MHD_USE_TURBO: a new connection is read as it is accepted, so one
   * that sent a request and closed is done within the run. */
  unsigned flags = MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ERROR_LOG |
                   (ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  return MHD_start_daemon(
      flags, (uint16_t)port, NULL, NULL, on_request, h,
      MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
      MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
      MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
      MHD_OPTION_CONNECTION_LIMIT, limits->max_connections,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits->max_per_address,
      MHD_OPTION_CONNECTION_TIMEOUT, limits->idle_timeout_s,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits->max_header_bytes,
      MHD_OPTION_END);
}

/* h->ep: libmicrohttpd's epoll fd (data NULL) and, as they come, the
 * connections' watches. 0, or -1 with errno. */
static int watch_daemon(dc_http_t *h) {
  const union MHD_DaemonInfo *i =
      MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  if (!i) {
    errno = EINVAL;
    return -1;
  }
  return epoll_ctl(h->ep, EPOLL_CTL_ADD, i->epoll_fd, &ev);
}

dc_http_t *dc_http_new(const char *host, int port,
                       const dc_http_limits_t *limits, dc_http_handler_fn *fn,
                       void *opaque, char *bound, size_t bound_size,
                       char *errstr, size_t errstr_size) {
  struct sockaddr_storage ss;
  socklen_t len;
  if (resolve(host, port, &ss, &len, errstr, errstr_size))
    return NULL;
  dc_http_t *h = calloc(1, sizeof(*h));
  if (!h || (h->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
    dc_seterr(errstr, errstr_size, "cannot set up the metrics endpoint: %s",
              h ? strerror(errno) : "out of memory");
    free(h);
    return NULL;
  }
  h->fn = fn;
  h->opaque = opaque;
  h->d = start_daemon(h, &ss, port, limits);
  const union MHD_DaemonInfo *port_info =
      h->d ? MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
  if (!port_info || watch_daemon(h)) {
    dc_seterr(errstr, errstr_size, "cannot listen for metrics on %s:%d",
             host, port);
    dc_http_destroy(h);
    return NULL;
  }
  snprintf(bound, bound_size, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
           *host ? host : "0.0.0.0", (unsigned)port_info->port);
  return h;
}

void dc_http_destroy(dc_http_t *h) {
  if (!h)
    return;
  if (h->d)
    MHD_stop_daemon(h->d); /* its closing notices free the watches */
  close(h->ep);
  free(h);
}

int dc_http_fd(const dc_http_t *h) { return h->ep; }

int dc_http_timeout_ms(dc_http_t *h) {
  MHD_UNSIGNED_LONG_LONG ms;
  if (MHD_get_timeout(h->d, &ms) != MHD_YES)
    return -1;
  return ms > INT_MAX ? INT_MAX : (int)ms;
}

static unsigned connections(dc_http_t *h) {
  const union MHD_DaemonInfo *i =
      MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
  return i ? i->num_connections : 0;
}

/* One run of libmicrohttpd, and the hang-ups it left unseen signalled.
 * Whether it closed connections or signalled any. */
static bool run_once(dc_http_t *h) {
  unsigned before = connections(h);
  MHD_run(h->d);
  collect_hangups(h);
  return signal_hangups(h) > 0 || connections(h) < before;
}

void dc_http_run(dc_http_t *h) {
  /* A second run closes the connections just signalled before their
   * places count against the next clients (a flood of requests that are
   * closed unfinished stays within its address's places), and takes in
   * the clients waiting for places freed at the connection limit:
   * libmicrohttpd takes its listening socket out of its epoll set there,
   * and puts it back only when a run starts below the limit. */
  if (run_once(h))
    run_once(h);
}
