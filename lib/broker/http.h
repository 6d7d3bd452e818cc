/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small HTTP endpoint (GET only) for dynconfd's metrics and health,
 * served by libmicrohttpd in its external-epoll mode: no thread of its
 * own; the server's event loop watches dc_http_fd() and calls
 * dc_http_run(), so the handler runs on the loop thread and may read
 * everything the loop owns.
 */
#ifndef DC_HTTP_H
#define DC_HTTP_H
#include "common/buf.h"

#include <stddef.h>

typedef struct dc_http dc_http_t;

/* Answers a GET of path: fills body (and *content_type, a static
 * string), returns the HTTP status. Loop thread. */
typedef int(dc_http_handler_fn)(void *opaque, const char *path,
                                dc_buf_t *body, const char **content_type);

/* Listens on host:port (port 0 = any free port; the bound "host:port" goes
 * to bound). At most 64 connections, 10 s idle. NULL with errstr. */
dc_http_t *dc_http_new(const char *host, int port, dc_http_handler_fn *fn,
                       void *opaque, char *bound, size_t bound_size,
                       char *errstr, size_t errstr_size);
void dc_http_destroy(dc_http_t *h);
/* Readable when there is work for dc_http_run (an epoll fd). */
int dc_http_fd(const dc_http_t *h);
/* Serves what is ready, and connection timeouts; never blocks. */
void dc_http_run(dc_http_t *h);
#endif
