/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The broker called in process, with no sockets: a request framed as a
 * client frames it, handed to dc_broker_handle() on a connection of our
 * own, its answer's response header decoded. For the tests and benchmarks
 * that drive the broker this way (tests/unit/test_fleet_limits.c,
 * tests/unit/test_fleet_metrics.c, bench/fleet_scrape.c).
 *
 * One dc_inproc_t holds the broker and the buffers that calls share; a
 * program keeps one and may start and stop brokers on it in turn. An
 * answer read through dc_inproc_call()'s reader lives in the state's resp
 * arena until the next call.
 *
 * Header-only: every function is static inline so a program that uses
 * only some of them builds with -Werror. No TAP here: the bench uses it;
 * it lives in bench/ so the tests include the bench, never the reverse.
 */
#ifndef DC_INPROC_H
#define DC_INPROC_H

#include "broker/core/broker.h"
#include "codec/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct dc_inproc {
  dc_broker_t *b;          /* NULL between dc_inproc_stop and _start */
  dc_arena_t scratch;      /* the handler's, reset after each call */
  dc_arena_t resp;         /* the last answer's decoded fields */
  dc_buf_t out;            /* the last answer's frame */
  int32_t corr;            /* the next request's correlation id */
  const char *client_id;   /* every request's header client-id */
  size_t scratch_used;     /* handler scratch the last call took */
  int hdr_err;             /* the last answer's response header: 0 when it
                              decoded */
} dc_inproc_t;

/* A connection as the broker sees it. */
typedef struct dc_inproc_peer {
  dc_conn_info_t conn;
  void *fleet, *pending;
  int answers; /* frames answered later, for a dc_broker_answers callback
                  to count (conn.token is the peer) */
} dc_inproc_peer_t;

/* Encodes request q of version v into b, as the codec's *_req_encode. */
typedef int(dc_inproc_enc_fn)(dc_buf_t *b, int16_t v, const void *q);

static inline int dc_inproc_enc_report(dc_buf_t *b, int16_t v, const void *q) {
  return dc_client_report_req_encode(b, v, q);
}
static inline int dc_inproc_enc_fleet(dc_buf_t *b, int16_t v, const void *q) {
  return dc_describe_fleet_req_encode(b, v, q);
}
static inline int dc_inproc_enc_alter(dc_buf_t *b, int16_t v, const void *q) {
  return dc_incremental_alter_configs_req_encode(b, v, q);
}

/* ip with no broker yet; its requests name client_id (kept, not copied).
 * Correlation ids start at 1 and run on across brokers. */
static inline void dc_inproc_init(dc_inproc_t *ip, const char *client_id) {
  memset(ip, 0, sizeof(*ip));
  dc_arena_init(&ip->scratch);
  dc_arena_init(&ip->resp);
  dc_buf_init(&ip->out);
  ip->corr = 1;
  ip->client_id = client_id;
}

/* Frees ip's buffers; the broker is the caller's to stop first. */
static inline void dc_inproc_free(dc_inproc_t *ip) {
  dc_arena_free(&ip->scratch);
  dc_arena_free(&ip->resp);
  dc_buf_free(&ip->out);
}

/* A new broker of opts (NULL: the defaults) into ip->b; false, with err
 * saying why, when it cannot be made. */
static inline bool dc_inproc_start(dc_inproc_t *ip,
                                   const dc_broker_opts_t *opts, char *err,
                                   size_t err_size) {
  dc_broker_opts_t def;
  if (!opts) {
    dc_broker_opts_init(&def);
    opts = &def;
  }
  ip->b = dc_broker_new(opts, NULL, err, err_size);
  return ip->b != NULL;
}

static inline void dc_inproc_stop(dc_inproc_t *ip) {
  dc_broker_destroy(ip->b);
  ip->b = NULL;
}

/* p as a new PLAINTEXT connection of principal (NULL: none said). */
static inline void dc_inproc_peer_init(dc_inproc_peer_t *p,
                                       const char *principal) {
  memset(p, 0, sizeof(*p));
  p->conn = (dc_conn_info_t){.peer = "127.0.0.1:40000",
                             .principal = principal,
                             .listener = "PLAINTEXT",
                             .token = p,
                             .pending = &p->pending,
                             .fleet = &p->fleet};
}

/* p closes: what it waits for and its fleet entry are let go, as the
 * server does when a connection closes. */
static inline void dc_inproc_peer_close(dc_inproc_t *ip, dc_inproc_peer_t *p) {
  if (p->pending)
    dc_broker_abandon(ip->b, p->pending);
  if (p->fleet)
    dc_broker_fleet_conn_closed(ip->b, p->fleet);
  p->pending = p->fleet = NULL;
}

/* One request q of p (api, version v, encoded by enc): the handler's
 * DC_HANDLE_*. On DC_HANDLE_OK *rd holds the body, past the response
 * header (ip->hdr_err says whether that decoded). */
static inline int dc_inproc_call(dc_inproc_t *ip, dc_inproc_peer_t *p,
                                 int16_t api, int16_t v,
                                 dc_inproc_enc_fn *enc, const void *q,
                                 dc_rd_t *rd) {
  dc_buf_t req;
  dc_buf_init(&req);
  size_t off = dc_wr_frame_begin(&req);
  dc_req_header_t h = {api, v, ip->corr++, (char *)ip->client_id};
  dc_req_header_encode(&req, &h);
  enc(&req, v, q);
  dc_wr_frame_end(&req, off);
  dc_buf_clear(&ip->out);
  char err[256];
  int rc = dc_broker_handle(ip->b, &p->conn, req.data + 4, req.len - 4,
                            &ip->scratch, &ip->out, err, sizeof(err));
  ip->scratch_used = ip->scratch.total;
  dc_arena_reset(&ip->scratch);
  dc_buf_free(&req);
  if (rc != DC_HANDLE_OK)
    return rc;
  dc_arena_reset(&ip->resp);
  dc_rd_init(rd, ip->out.data + 4, ip->out.len - 4, &ip->resp);
  int32_t corr;
  ip->hdr_err = dc_resp_header_decode(rd, api, v, &corr);
  return rc;
}

#endif
