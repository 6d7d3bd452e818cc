/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the server shared by its files, from the top: server_loop.c
 * (its life and the event loop), server_metrics.c (the metrics and health
 * endpoint), server_accept.c (listeners and accepting), server_handshake.c
 * (TLS handshakes on the log-in thread), server_frames.c (reading
 * requests, writing answers, SASL session ends), server_transport.c
 * (plaintext and TLS reads and writes) and server_conn.c (a connection's
 * opening, closing and buffers).
 */
#ifndef DC_SERVER_INT_H
#define DC_SERVER_INT_H
#include "broker/net/server.h"
#include "broker/net/conn_rate.h"
#include "broker/net/http.h"
#include "broker/auth/login.h"

#include "common/arena.h"
#include "common/buf.h"

#include <openssl/ssl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

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
  struct dc_answer_memo *memo; /* its last DescribeConfigs answer (broker's) */
  const char *principal; /* TLS principal, owned by ssl; NULL = none */
  char peer[64];
  size_t buffered;      /* in.cap + out.cap + the memo's bytes, as last
                           counted in the server */
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

/* A TLS handshake step on the log-in thread (server_handshake.c). */
typedef struct handshake {
  dc_login_work_t work;
  SSL *ssl;
  int fd;
  conn_t *c;       /* NULL once abandoned */
  int rc, err;     /* SSL_do_handshake's result and SSL_get_error's */
  bool plain_eof;  /* the peer just hung up */
  char why[320];   /* the failure, in words */
} handshake_t;

/* ---- server_conn.c ---- */

/* A connection just accepted on l from ss: set up (TLS, SASL state, the
 * log-in deadline), watched and listed; when it cannot be, its socket is
 * closed. */
void dc_srv_conn_open(dc_server_t *s, listener_t *l, int fd,
                      const struct sockaddr_storage *ss);
void dc_srv_conn_close(dc_server_t *s, conn_t *c);
void dc_srv_free_dead(dc_server_t *s);
void dc_srv_account(dc_server_t *s, conn_t *c);
void dc_srv_enforce_buffer_cap(dc_server_t *s);
void dc_srv_set_events(dc_server_t *s, conn_t *c);
void dc_srv_addr_to_str(const struct sockaddr_storage *ss, char *host,
                        size_t hsz, int *port);

/* ---- server_transport.c ---- */

void dc_srv_tls_established(conn_t *c);
bool dc_srv_is_plain_eof(void);
ssize_t dc_srv_recv(conn_t *c, void *buf, size_t n, bool *eof);
ssize_t dc_srv_send(conn_t *c, const void *buf, size_t n);

/* ---- server_frames.c ---- */

/* Reads what the connection sent, serves its complete frames and sends
 * what it can. */
void dc_srv_conn_read(dc_server_t *s, conn_t *c);
bool dc_srv_conn_flush(dc_server_t *s, conn_t *c);
void dc_srv_conn_process(dc_server_t *s, conn_t *c);
void dc_srv_end_sessions(dc_server_t *s, int64_t now);
void dc_srv_on_answer(void *opaque, void *token, const uint8_t *frame,
                      size_t len);

/* ---- server_handshake.c ---- */

void dc_srv_handshake_start(dc_server_t *s, conn_t *c);
void dc_srv_handshakes_done(dc_server_t *s);

/* ---- server_accept.c ---- */

void dc_srv_accept(dc_server_t *s, listener_t *l);
void dc_srv_resume_listeners(dc_server_t *s);
#endif
