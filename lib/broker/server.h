/*
 * dynconfd's network front end: an epoll event loop over non-blocking
 * sockets. Frames are cut out of each connection's input and handed to
 * dc_broker_handle() in arrival order, so pipelined requests are answered in
 * order. Per-connection buffers are bounded: input by the maximum request
 * size, output by a high-water mark above which the connection is not read
 * until the client drains its responses.
 *
 * Threading: dc_server_run() runs on one thread and owns everything;
 * dc_server_stop() may be called from any thread or a signal handler.
 */
#ifndef DC_SERVER_H
#define DC_SERVER_H
#include "broker/handlers.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dc_server_opts {
  size_t max_request_size;   /* default 100 MiB, like socket.request.max.bytes */
  size_t out_high_water;     /* default 4 MiB of unsent responses */
  int idle_timeout_ms;       /* default 600000 (connections.max.idle.ms) */
  int request_timeout_ms;    /* a started frame must complete within this;
                                default 30000 (slow-drip guard) */
  int max_connections;       /* default 100000 */
} dc_server_opts_t;

void dc_server_opts_init(dc_server_opts_t *o);

typedef struct dc_server dc_server_t;

/* broker is borrowed and must outlive the server. NULL + errstr on error. */
dc_server_t *dc_server_new(dc_broker_t *broker, const dc_server_opts_t *opts,
                           char *errstr, size_t errstr_size);
void dc_server_destroy(dc_server_t *s);

/* Binds and listens on host:port (port 0 = any free port). The advertised
 * address (NULL/0 = the bound one) is what Metadata returns on this
 * listener. On success writes the bound "host:port" to bound and returns 0. */
int dc_server_listen(dc_server_t *s, const char *host, int port,
                     const char *adv_host, int adv_port, char *bound,
                     size_t bound_size, char *errstr, size_t errstr_size);

/* Serves until dc_server_stop(). Returns 0, or -1 on a fatal error. */
int dc_server_run(dc_server_t *s);
/* Async-signal-safe. */
void dc_server_stop(dc_server_t *s);
/* Number of open client connections (loop thread only). */
size_t dc_server_connections(const dc_server_t *s);
#endif
