/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Envelope (KIP-590), the writer's side of forwarding (forward.c is the
 * follower's): an alter another replica of the store forwarded, trusted
 * only when that replica signed it (forward_auth.c), handled as the
 * principal and address inside, answered with this server's store
 * position so the forwarding replica can hold the answer until it has
 * applied as much (read your writes).
 */
#include "broker/core/broker_int.h"
#include "common/log.h"

#include <string.h>

/* An Envelope's bytes as a string: NULL when they hold a NUL or pass max. */
static char *bytes_str(dc_arena_t *a, const uint8_t *p, int32_t n, size_t max) {
  if (n < 0 || (size_t)n > max || (n && memchr(p, 0, (size_t)n)))
    return NULL;
  return dc_arena_strndup(a, (const char *)p, (size_t)n);
}

/* Handles the request inside; 0 with resp set, or an error code. */
static int16_t unwrap(dc_req_t *r, const dc_envelope_req_t *req,
                      dc_buf_t *inner, dc_envelope_resp_t *resp) {
  dc_rd_t ird;
  dc_req_header_t h;
  char why[256];
  dc_rd_init(&ird, req->request_data, (size_t)req->request_data_len,
             r->arena);
  char *principal = req->principal_len < 0
                        ? "User:ANONYMOUS"
                        : bytes_str(r->arena, req->principal,
                                    req->principal_len, DC_PRINCIPAL_MAX);
  char *host = bytes_str(r->arena, req->client_host, req->client_host_len,
                         300);
  if (dc_req_header_decode(&ird, &h) || !principal || !host ||
      (h.api_key != DC_API_ALTER_CONFIGS &&
       h.api_key != DC_API_INCREMENTAL_ALTER_CONFIGS))
    return DC_ERR_INVALID_REQUEST; /* only alters are forwarded */
  dc_conn_info_t conn = {.peer = host,
                         .principal = principal,
                         .listener = r->conn->listener,
                         .advertised_host = r->conn->advertised_host,
                         .advertised_port = r->conn->advertised_port};
  if (r->b->handle_as(r->b, &conn, req->request_data,
                          (size_t)req->request_data_len, r->arena, inner,
                          true, 0, NULL, why, sizeof(why)) != DC_HANDLE_OK ||
      inner->len < 4) {
    dc_log(DC_LOG_WARN, "forwarded request from %s (for %s at %s) refused: "
           "%s", r->conn->peer, principal, host, why);
    return DC_ERR_INVALID_REQUEST;
  }
  resp->response_data = inner->data + 4; /* without the size */
  resp->response_data_len = (int32_t)(inner->len - 4);
  return 0;
}

int dc_handle_envelope(dc_req_t *r) {
  dc_envelope_req_t req;
  if (dc_envelope_req_decode(r->rd, r->hdr->api_version, &req))
    return r->rd->err;
  dc_envelope_resp_t resp = {.response_data_len = -1};
  dc_buf_t inner;
  dc_buf_init(&inner);
  const dc_store_replica_t *reps;
  int32_t writer;
  dc_store_replicas(r->b->store, &reps, &writer);
  if (r->forwarded || writer == DC_STORE_NOT_REPLICATED) {
    /* An Envelope in an Envelope, or a server without replicas: nobody
     * forwards to it, so nobody may act for others through it. */
    resp.error_code = DC_ERR_INVALID_REQUEST;
  } else if (!(resp.error_code = dc_broker_envelope_check(r, &req))) {
    resp.error_code = unwrap(r, &req, &inner, &resp);
  }
  resp.position = dc_store_position(r->b->store);
  int rc = inner.err ? DC_ERR__NOMEM
                     : dc_envelope_resp_encode(r->out, 0, &resp);
  dc_buf_free(&inner);
  return rc;
}
