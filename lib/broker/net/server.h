/* SPDX-License-Identifier: BSD-2-Clause */
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
#include "broker/core/broker.h"
#include "broker/net/http.h"
#include "broker/net/tls_server.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dc_server_opts {
  size_t max_request_size;   /* default 100 MiB, like socket.request.max.bytes */
  size_t out_high_water;     /* default 4 MiB of unsent responses: a
                                connection's next request is not read
                                until its backlog is below this */
  size_t max_buffered;       /* default 256 MiB: input and output buffers
                                of all connections together; above it the
                                connections holding the most are closed */
  int idle_timeout_ms;       /* default 600000 (connections.max.idle.ms) */
  int request_timeout_ms;    /* a started frame must complete within this;
                                default 30000 (slow-drip guard) */
  int max_connections;       /* default 100000 */
  /* Connections accepted per second: on each listener (Kafka's
   * max.connection.creation.rate; past it accepting waits, new clients
   * wait in the listen backlog) and from one client address (past it the
   * connection is closed at once). 0 = no limit, the default. */
  double max_connection_rate;
  double max_connection_rate_per_ip;
  int auth_timeout_ms;       /* TLS handshake + SASL must finish within this
                                after accept; default 30000 */
  dc_http_limits_t http;     /* the metrics endpoint's; default
                                dc_http_limits_init's */
  /* Called on the loop thread after dc_server_request_reload() (SIGHUP). */
  void (*on_reload)(void *opaque);
  void *reload_opaque;
  /* Called on the loop thread about once a second (a watchdog's ping
   * proves the loop turns). */
  void (*on_tick)(void *opaque);
  void *tick_opaque;
  /* With on_watch set: called on the loop thread whenever watch_fd
   * (borrowed, e.g. the store's event fd) is readable; it must drain it. */
  int watch_fd;
  void (*on_watch)(void *opaque);
  void *watch_opaque;
} dc_server_opts_t;

void dc_server_opts_init(dc_server_opts_t *o);

typedef struct dc_server dc_server_t;

/* broker is borrowed and must outlive the server. NULL + errstr on error. */
dc_server_t *dc_server_new(dc_broker_t *broker, const dc_server_opts_t *opts,
                           char *errstr, size_t errstr_size);
void dc_server_destroy(dc_server_t *s);

/* Listener security, as Kafka's listener.security.protocol.map values. */
typedef enum {
  DC_SEC_PLAINTEXT = 0,
  DC_SEC_SSL,
  DC_SEC_SASL_PLAINTEXT,
  DC_SEC_SASL_SSL,
} dc_sec_protocol_t;
/* "PLAINTEXT" etc.; dc_sec_protocol_parse returns -1 for an unknown name. */
const char *dc_sec_protocol_name(dc_sec_protocol_t p);
int dc_sec_protocol_parse(const char *name);

typedef struct dc_listener_conf {
  const char *name;      /* e.g. "SASL_SSL" or "INTERNAL"; copied */
  dc_sec_protocol_t protocol;
  const char *host;      /* bind address; "" = any */
  int port;              /* 0 = any free port */
  const char *adv_host;  /* what Metadata returns; NULL/"" = bound host */
  int adv_port;          /* 0 = bound port */
  dc_tls_ctx_t *tls;     /* required for SSL and SASL_SSL; borrowed, must
                            outlive the server */
} dc_listener_conf_t;

/* Binds and listens. On success writes the bound "host:port" to bound and
 * returns 0; else -1 with errstr. */
int dc_server_add_listener(dc_server_t *s, const dc_listener_conf_t *lc,
                           char *bound, size_t bound_size, char *errstr,
                           size_t errstr_size);

/* A PLAINTEXT listener named "PLAINTEXT" (see dc_server_add_listener). */
int dc_server_listen(dc_server_t *s, const char *host, int port,
                     const char *adv_host, int adv_port, char *bound,
                     size_t bound_size, char *errstr, size_t errstr_size);

/* Serves GET /metrics (Prometheus text: the broker's metrics, open
 * connections per listener, build info, process_*), /healthz (alive)
 * and /readyz (listeners open, not stopping) on host:port over HTTP
 * (libmicrohttpd, run by this loop, within opts.http). The bound
 * "host:port" goes to bound.
 * 0, or -1 with errstr. */
int dc_server_add_metrics(dc_server_t *s, const char *host, int port,
                          char *bound, size_t bound_size, char *errstr,
                          size_t errstr_size);

/* Async-signal-safe: asks the loop to call opts.on_reload. */
void dc_server_request_reload(dc_server_t *s);

/* Serves until dc_server_stop(). Returns 0, or -1 on a fatal error. */
int dc_server_run(dc_server_t *s);
/* Async-signal-safe. */
void dc_server_stop(dc_server_t *s);
/* Number of open client connections (loop thread only). */
size_t dc_server_connections(const dc_server_t *s);
#endif
