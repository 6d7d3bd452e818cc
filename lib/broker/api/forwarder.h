/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Forwarding requests to another server, off the event loop: a thread
 * with one kept connection (lib/client) that wraps each job's request in
 * an Envelope (KIP-590), signed with this replica's key just before it
 * goes (replica_key.h), sends it to the job's address and hands the
 * answer back through an fd the event loop watches. Jobs are answered in
 * the order they were submitted.
 *
 * Threads: submit, take_done and destroy on the loop thread; the
 * forwarder's own thread does the I/O.
 */
#ifndef DC_FORWARDER_H
#define DC_FORWARDER_H
#include "broker/auth/replica_key.h"
#include "client/kclient.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dc_fwd_job {
  int kind; /* 0: what the broker waits for is a forward (broker_int.h) */
  /* In (owned by the job): */
  void *token;           /* the caller's, returned as is */
  char *addr;            /* "host:port" to forward to */
  int32_t node;          /* the server there, for messages */
  uint8_t *request;      /* the client's request (header and body) */
  size_t request_len;
  char *principal;       /* on whose behalf */
  char *client_host;     /* the client's "ip:port" */
  int64_t from_position; /* this server's store position at submit */
  /* Out: the response (header and body, no size prefix; owned), or
   * error set to why there is none. */
  uint8_t *response;
  size_t response_len;
  int16_t error_code;    /* the Envelope's error, or 0 */
  char error[512];
  int64_t position;      /* the writer's store position after it; -1 */
  int64_t hold_until;    /* an answer held for read your writes: until */
  bool abandoned;        /* the caller no longer wants the answer */
  struct dc_fwd_job *next;
} dc_fwd_job_t;

typedef struct dc_forwarder dc_forwarder_t;

/* sec (nullable = PLAINTEXT) is copied; timeout_ms bounds each forward
 * (connecting included); Envelopes are signed as node with key (borrowed:
 * it outlives the forwarder; NULL = unsigned, which writers refuse). NULL
 * with errstr on failure. */
dc_forwarder_t *dc_forwarder_new(const char *client_id,
                                 const dc_kclient_security_t *sec,
                                 int timeout_ms, const dc_replica_key_t *key,
                                 int32_t node, char *errstr,
                                 size_t errstr_size);
void dc_forwarder_destroy(dc_forwarder_t *f);
/* Readable when answers are waiting (dc_forwarder_take_done drains it). */
int dc_forwarder_event_fd(const dc_forwarder_t *f);
/* The job being forwarded, if any, gives up at once (its answer says the
 * writer changed): for when the server it went to no longer writes. */
void dc_forwarder_interrupt(dc_forwarder_t *f);
/* Queues job (the forwarder owns it until take_done hands it back). */
void dc_forwarder_submit(dc_forwarder_t *f, dc_fwd_job_t *job);
/* A finished job (the caller owns it; dc_fwd_job_free), or NULL. */
dc_fwd_job_t *dc_forwarder_take_done(dc_forwarder_t *f);
void dc_fwd_job_free(dc_fwd_job_t *job);
#endif
