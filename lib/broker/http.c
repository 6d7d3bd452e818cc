/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The metrics and health endpoint over libmicrohttpd (see http.h).
 */
#include "broker/http.h"
#include "common/log.h"
#include "common/text.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HTTP_MAX_CONNECTIONS 64
#define HTTP_IDLE_SECONDS 10
#define HTTP_CONNECTION_MEMORY (32 * 1024)

struct dc_http {
  struct MHD_Daemon *d;
  dc_http_handler_fn *fn;
  void *opaque;
};

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char msg[512];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  msg[strcspn(msg, "\n")] = '\0';
  dc_log(DC_LOG_WARN, "metrics endpoint: %s", msg);
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

dc_http_t *dc_http_new(const char *host, int port, dc_http_handler_fn *fn,
                       void *opaque, char *bound, size_t bound_size,
                       char *errstr, size_t errstr_size) {
  struct sockaddr_storage ss;
  socklen_t len;
  if (resolve(host, port, &ss, &len, errstr, errstr_size))
    return NULL;
  dc_http_t *h = calloc(1, sizeof(*h));
  if (!h) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  h->fn = fn;
  h->opaque = opaque;
  unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                   (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  h->d = MHD_start_daemon(
      flags, (uint16_t)port, NULL, NULL, on_request, h,
      MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNECTIONS,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_SECONDS,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY,
      MHD_OPTION_END);
  const union MHD_DaemonInfo *port_info =
      h->d ? MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
  if (!port_info) {
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
    MHD_stop_daemon(h->d);
  free(h);
}

int dc_http_fd(const dc_http_t *h) {
  const union MHD_DaemonInfo *i =
      MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
  return i ? i->epoll_fd : -1;
}

void dc_http_run(dc_http_t *h) { MHD_run(h->d); }
