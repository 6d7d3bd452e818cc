/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Alters on a replica that does not write the store: forwarded to the one
 * that does (the writer's side is envelope.c), in an Envelope (KIP-590) carrying the client's principal and
 * address, signed with this replica's key, and answered to the client as
 * the writer answered them. The writer trusts an Envelope only when it is
 * signed by another replica of the store (forward_auth.c), and, with an
 * authorizer, comes from a super user's connection, as Kafka trusts only
 * its brokers; its ACLs then decide for the principal inside. A server
 * without replicas refuses Envelopes.
 *
 * Read your writes: the writer's Envelope answer says how far it had
 * applied the config log (its store position) after the alter, and the
 * forwarding server holds the client's OK until its own store has applied
 * as much, so the client reading from it next sees its change. The hold
 * lasts at most the forward timeout; past it the answer goes (the change
 * is stored) and the lag is logged.
 */
#include "broker/core/broker_int.h"
#include "broker/api/forwarder.h"
#include "common/clock.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORWARD_TIMEOUT_MS 30000
/* Requests waiting to be forwarded hold their bytes; past this, alters on
 * a follower are refused (retriable) until some are answered. */
#define FORWARD_MAX_BYTES (64u * 1024 * 1024)

static int forward_timeout_ms(const dc_broker_t *b) {
  return b->opts.forward_timeout_ms > 0 ? b->opts.forward_timeout_ms
                                        : FORWARD_TIMEOUT_MS;
}

int dc_broker_forward_init(dc_broker_t *b, char *errstr, size_t errstr_size) {
  if (!b->opts.forward)
    return 0;
  char cid[64];
  snprintf(cid, sizeof(cid), "dynconfd-%d-forward", (int)b->opts.node_id);
  b->fwd = dc_forwarder_new(cid, b->opts.forward_security,
                            forward_timeout_ms(b), dc_store_own_key(b->store),
                            b->opts.node_id, errstr, errstr_size);
  return b->fwd ? 0 : -1;
}

void dc_broker_forward_free(dc_broker_t *b) {
  dc_forwarder_destroy(b->fwd);
  b->fwd = NULL;
  while (b->fwd_held) {
    dc_fwd_job_t *job = b->fwd_held;
    b->fwd_held = job->next;
    dc_fwd_job_free(job);
  }
}

void dc_broker_forward_writer_changed(dc_broker_t *b) {
  const dc_store_replica_t *reps;
  int32_t writer;
  if (!b->fwd)
    return;
  dc_store_replicas(b->store, &reps, &writer);
  if (writer != b->writer) /* a forward to the old one would wait in vain */
    dc_forwarder_interrupt(b->fwd);
  b->writer = writer;
}

int dc_broker_event_fd(const dc_broker_t *b) {
  return b->fwd ? dc_forwarder_event_fd(b->fwd) : -1;
}

void dc_broker_forward_abandon(void *pending) {
  ((dc_fwd_job_t *)pending)->abandoned = true;
}

/* The writer's listener to forward to, or NULL. */
static const dc_store_listener_t *writer_listener(const dc_store_replica_t *reps,
                                                  size_t n, int32_t writer,
                                                  const char *name) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; reps[i].node_id == writer && j < reps[i].n_listeners;
         j++)
      if (name && !strcmp(reps[i].listeners[j].name, name))
        return &reps[i].listeners[j];
  return NULL;
}

static dc_fwd_job_t *job_new(const dc_req_t *r, int32_t writer,
                             const dc_store_listener_t *l) {
  dc_fwd_job_t *job = calloc(1, sizeof(*job));
  size_t an = strlen(l->host) + 16;
  if (!job || !(job->addr = malloc(an)) ||
      !(job->request = malloc(r->payload_len ? r->payload_len : 1)) ||
      !(job->principal = strdup(r->conn->principal ? r->conn->principal
                                                   : "User:ANONYMOUS")) ||
      !(job->client_host = strdup(r->conn->peer ? r->conn->peer : ""))) {
    dc_fwd_job_free(job);
    return NULL;
  }
  bool v6 = strchr(l->host, ':') != NULL;
  snprintf(job->addr, an, v6 ? "[%s]:%d" : "%s:%d", l->host, (int)l->port);
  memcpy(job->request, r->payload, r->payload_len);
  job->request_len = r->payload_len;
  job->kind = DC_PENDING_FORWARD;
  job->token = r->conn->token;
  job->node = writer;
  job->from_position = dc_store_position(r->b->store);
  return job;
}

/* Has this server read its own heartbeat back, with the key it signs
 * with? Only then can the writer have read it (it may still be behind:
 * the Envelope's position tells it so, and it answers retriably). */
static bool key_published(dc_broker_t *b) {
  const dc_replica_key_t *own = dc_store_own_key(b->store);
  const uint8_t *pub;
  if (!own)
    return true; /* nothing to wait for: the writer says why it refuses */
  return dc_store_replica_key(b->store, b->opts.node_id, &pub) == 1 &&
         !memcmp(pub, dc_replica_key_public(own), DC_REPLICA_KEY_LEN);
}

/* A forwarded alter reached a server that does not write (it lost the
 * topic, or has not read its own claim back yet): the client retries. */
static int not_writing(dc_req_t *r, int32_t writer) {
  char msg[300];
  r->fail_code = DC_ERR_NOT_CONTROLLER;
  if (writer >= 0)
    snprintf(msg, sizeof(msg), "node %d does not write the config topic "
             "(node %d does); retry", (int)r->b->opts.node_id, (int)writer);
  else
    snprintf(msg, sizeof(msg), "node %d does not write the config topic "
             "(no server does now); retry", (int)r->b->opts.node_id);
  return (r->fail_msg = dc_arena_strdup(r->arena, msg)) ? 1 : DC_ERR__NOMEM;
}

int dc_broker_forward_alter(dc_req_t *r) {
  if (!r->b->fwd || r->fail_msg)
    return 0;
  const dc_store_replica_t *reps;
  int32_t writer;
  size_t n = dc_store_replicas(r->b->store, &reps, &writer);
  if (writer == DC_STORE_NOT_REPLICATED || writer == r->b->opts.node_id)
    return 0;
  if (r->forwarded) /* never forwarded twice */
    return not_writing(r, writer);
  if (!r->conn->pending)
    return 0;
  char msg[300];
  r->fail_code = DC_ERR_NOT_CONTROLLER;
  if (writer < 0) {
    r->fail_msg = "no server writes the config topic now (none has been "
                  "heard of within the store's session timeout); retry";
    return 1;
  }
  const char *name = r->b->opts.forward_listener ? r->b->opts.forward_listener
                                                 : r->conn->listener;
  const dc_store_listener_t *l = writer_listener(reps, n, writer, name);
  if (!l) {
    snprintf(msg, sizeof(msg), "node %d writes the config topic but "
             "advertises no listener named %s to forward to; alter there",
             (int)writer, name ? name : "(none)");
    return (r->fail_msg = dc_arena_strdup(r->arena, msg)) ? 1 : DC_ERR__NOMEM;
  }
  if (!key_published(r->b)) {
    r->fail_msg = "this replica has not yet read back the heartbeat that "
                  "publishes its key, with which it signs forwarded alters; "
                  "retry";
    return 1;
  }
  if (r->b->fwd_bytes + r->payload_len > FORWARD_MAX_BYTES) {
    r->fail_msg = "too many alters are waiting to be forwarded to the "
                  "writer (64 MiB); retry";
    return 1;
  }
  dc_fwd_job_t *job = job_new(r, writer, l);
  if (!job)
    return DC_ERR__NOMEM;
  r->b->fwd_bytes += job->request_len;
  r->fail_code = 0;
  dc_forwarder_submit(r->b->fwd, job);
  *r->conn->pending = job;
  r->deferred = true;
  return 1;
}

/* The answer to a job: the writer's response, or an error for each of
 * the request's resources saying why it was not forwarded. */
static void answer(dc_broker_t *b, dc_fwd_job_t *job, dc_broker_answer_cb *cb,
                   void *opaque) {
  dc_buf_t out;
  dc_arena_t arena = {0};
  char why[256];
  dc_buf_init(&out);
  if (job->response) {
    uint8_t size[4] = {(uint8_t)(job->response_len >> 24),
                       (uint8_t)(job->response_len >> 16),
                       (uint8_t)(job->response_len >> 8),
                       (uint8_t)job->response_len};
    dc_buf_append(&out, size, 4);
    dc_buf_append(&out, job->response, job->response_len);
  } else {
    dc_log(DC_LOG_WARN, "alter from %s not forwarded: %s", job->client_host,
           job->error);
    dc_conn_info_t conn = {.peer = job->client_host,
                           .principal = job->principal};
    int16_t code = job->error_code ? job->error_code : DC_ERR_NOT_CONTROLLER;
    if (b->handle_as(b, &conn, job->request, job->request_len, &arena,
                            &out, true, code, job->error, why,
                            sizeof(why)) != DC_HANDLE_OK)
      out.len = 0;
  }
  if (out.err || !out.len)
    cb(opaque, job->token, NULL, 0); /* cannot answer: close */
  else
    cb(opaque, job->token, out.data, out.len);
  dc_buf_free(&out);
  dc_arena_free(&arena);
}

static bool caught_up(const dc_broker_t *b, const dc_fwd_job_t *job) {
  return job->position < 0 || dc_store_position(b->store) >= job->position;
}

int64_t dc_broker_fwd_held_due(const dc_broker_t *b) {
  int64_t due = -1;
  for (const dc_fwd_job_t *job = b->fwd_held; job; job = job->next) {
    if (job->abandoned || caught_up(b, job))
      return 0;
    if (due < 0 || job->hold_until < due)
      due = job->hold_until;
  }
  return due;
}

/* Answers the held forwards whose server has caught up, or whose hold
 * ran out; drops those whose client left. */
static void release_held(dc_broker_t *b, dc_broker_answer_cb *cb,
                         void *opaque) {
  int64_t now = dc_mono_ms();
  for (dc_fwd_job_t **p = &b->fwd_held; *p;) {
    dc_fwd_job_t *job = *p;
    bool ready = caught_up(b, job);
    if (!job->abandoned && !ready && now < job->hold_until) {
      p = &job->next;
      continue;
    }
    *p = job->next;
    if (!job->abandoned && !ready)
      dc_log(DC_LOG_WARN, "answering the alter from %s forwarded to node %d "
             "although this server has applied the config log up to "
             "position %lld only, not the writer's %lld", job->client_host,
             (int)job->node, (long long)dc_store_position(b->store),
             (long long)job->position);
    if (!job->abandoned)
      answer(b, job, cb, opaque);
    dc_fwd_job_free(job);
  }
}

void dc_broker_forward_answers(dc_broker_t *b, dc_broker_answer_cb *cb,
                               void *opaque) {
  dc_fwd_job_t *job;
  while (b->fwd && (job = dc_forwarder_take_done(b->fwd))) {
    b->fwd_bytes -= job->request_len;
    if (job->response)
      b->forwarded_ok++;
    else
      b->forwarded_failed++;
    if (!job->abandoned && job->response && !caught_up(b, job)) {
      job->hold_until = dc_mono_ms() + forward_timeout_ms(b);
      job->next = b->fwd_held;
      b->fwd_held = job;
      continue;
    }
    if (!job->abandoned)
      answer(b, job, cb, opaque);
    dc_fwd_job_free(job);
  }
  release_held(b, cb, opaque);
}
