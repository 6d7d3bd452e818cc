/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small HTTP endpoint (GET only) for dynconfd's metrics and health,
 * served by libmicrohttpd in its external-epoll mode: no thread of its
 * own; the server's event loop watches dc_http_fd(), waits at most
 * dc_http_timeout_ms() and then calls dc_http_run(), so the handler runs
 * on the loop thread and may read everything the loop owns.
 */
#ifndef DC_HTTP_H
#define DC_HTTP_H
#include "common/buf.h"

#include <stddef.h>

/* The defaults: a handful of scrapers and probes need a few connections
 * each; the per-address bound keeps one client (a flood of partial
 * requests) from taking the rest; kubelet's probes give up after 1 s and
 * Prometheus sends its whole request at once, so 5 s of silence is a
 * client gone or stalling; real request headers are well under 1 KiB,
 * bearer tokens a few. */
#define DC_HTTP_MAX_CONNECTIONS 256
#define DC_HTTP_MAX_PER_ADDRESS 16
#define DC_HTTP_IDLE_TIMEOUT_S 5
#define DC_HTTP_MAX_HEADER_BYTES (32 * 1024)

/* Bounds on the endpoint's clients. */
typedef struct dc_http_limits {
  unsigned max_connections;  /* open at once; more wait in the backlog */
  unsigned max_per_address;  /* open from one address; more are closed */
  unsigned idle_timeout_s;   /* silent this long (reading a request, or
                                between requests): closed */
  size_t max_header_bytes;   /* a connection's memory for a request's
                                header; one that does not fit gets 431 */
} dc_http_limits_t;

/* The defaults above. */
void dc_http_limits_init(dc_http_limits_t *l);

typedef struct dc_http dc_http_t;

/* Answers a GET of path: fills body (and *content_type, a static
 * string), returns the HTTP status. Loop thread. */
typedef int(dc_http_handler_fn)(void *opaque, const char *path,
                                dc_buf_t *body, const char **content_type);

/* Listens on host:port (port 0 = any free port; the bound "host:port" goes
 * to bound) within limits (copied). NULL with errstr. */
dc_http_t *dc_http_new(const char *host, int port,
                       const dc_http_limits_t *limits, dc_http_handler_fn *fn,
                       void *opaque, char *bound, size_t bound_size,
                       char *errstr, size_t errstr_size);
void dc_http_destroy(dc_http_t *h);
/* Readable when there is work for dc_http_run (an epoll fd). */
int dc_http_fd(const dc_http_t *h);
/* Milliseconds until dc_http_run is due even if the fd stays quiet (0:
 * now, work is held), or -1: only when the fd is readable. */
int dc_http_timeout_ms(dc_http_t *h);
/* Serves what is ready, and connection timeouts; never blocks. */
void dc_http_run(dc_http_t *h);
#endif
