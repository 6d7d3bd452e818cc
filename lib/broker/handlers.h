/*
 * Request dispatch: one complete request frame in, one complete response
 * frame out. No sockets here (the event loop in server.c owns I/O), which is
 * what lets the fuzz target drive this directly.
 *
 * Threading: a dc_broker_t belongs to one thread (the event loop).
 */
#ifndef DC_HANDLERS_H
#define DC_HANDLERS_H
#include "common/arena.h"
#include "common/buf.h"
#include "broker/store.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct dc_broker_opts {
  int32_t node_id;                 /* default 1 */
  const char *cluster_id;          /* Metadata v2+; default "dynconf" */
  int64_t session_timeout_min_ms;  /* server bounds on session.timeout.ms, */
  int64_t session_timeout_max_ms;  /* default 6000..1800000 */
  bool allow_unknown_keys;         /* relay keys outside the schema */
  /* The server's own settings, served read-only as the BROKER resource.
   * n_static pairs; borrowed, must outlive the broker. */
  size_t n_static;
  const char *const *static_keys;
  const char *const *static_values;
} dc_broker_opts_t;

/* Fills opts with the defaults above. */
void dc_broker_opts_init(dc_broker_opts_t *opts);

typedef struct dc_broker dc_broker_t;

/* Creates a broker serving the snapshot loaded from store (borrowed; must
 * outlive the broker; NULL = memory only, nothing persisted). Returns NULL
 * with errstr on failure. Caller owns the result. */
dc_broker_t *dc_broker_new(const dc_broker_opts_t *opts, dc_store_t *store,
                           char *errstr, size_t errstr_size);
void dc_broker_destroy(dc_broker_t *b);

/* Who sent a request and on which listener. */
typedef struct dc_conn_info {
  const char *peer;      /* "ip:port" of the client, for the audit log */
  const char *principal; /* "User:ANONYMOUS" until security lands */
  const char *advertised_host; /* this listener's advertised address, */
  int32_t advertised_port;     /* returned by Metadata */
} dc_conn_info_t;

enum {
  DC_HANDLE_OK = 0,    /* response (if any) appended to out */
  DC_HANDLE_CLOSE = 1, /* flush out, then close the connection */
};

/* Handles one request: payload is the frame without its 4-byte size.
 * Appends the size-prefixed response frame to out. Scratch memory comes
 * from arena, which the caller resets after the call. Returns DC_HANDLE_*.
 * On close, errstr (if non-NULL) says why, for the server's log. */
int dc_broker_handle(dc_broker_t *b, const dc_conn_info_t *conn,
                     const uint8_t *payload, size_t len, dc_arena_t *arena,
                     dc_buf_t *out, char *errstr, size_t errstr_size);
#endif
