/* SPDX-License-Identifier: BSD-2-Clause */
/* A connection's requests and answers: frames read and handed to the
 * broker, answers (now or later) sent, and SASL sessions that end. */
#include "config.h"
#include "broker/net/server_int.h"

#include "codec/wire.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/errors.h"

/* Sends what it can. Returns false when the connection was closed. */
bool dc_srv_conn_flush(dc_server_t *s, conn_t *c) {
  while (c->out_off < c->out.len) {
    ssize_t n =
        dc_srv_send(c, c->out.data + c->out_off, c->out.len - c->out_off);
    if (n == 0)
      break;
    if (n < 0) {
      dc_srv_conn_close(s, c);
      return false;
    }
    c->out_off += (size_t)n;
    c->last_active = dc_mono_ms();
  }
  if (c->out_off == c->out.len) {
    c->out.len = 0;
    c->out_off = 0;
    if (c->closing) {
      dc_srv_conn_close(s, c);
      return false;
    }
  }
  return true;
}

/* Authenticated (and TLS set up): no more deadline for it. */
static void auth_progress(conn_t *c) {
  if (c->auth.state == DC_AUTH_DONE && (!c->ssl || c->tls_ready))
    c->auth_deadline = 0;
}

/* Handles every complete frame in c->in, in order, while output is below
 * the high-water mark. */
void dc_srv_conn_process(dc_server_t *s, conn_t *c) {
  size_t off = 0;
  char why[256];
  dc_conn_info_t info = {.peer = c->peer,
                         .listener = c->listener->name,
                         .advertised_host = c->listener->adv_host,
                         .advertised_port = c->listener->adv_port,
                         .auth = &c->auth,
                         .token = c,
                         .pending = &c->pending,
                         .fleet = &c->fleet,
                         .memo = &c->memo};
  while (!c->closing && !c->pending &&
         c->out.len - c->out_off < s->opts.out_high_water) {
    int32_t size;
    int r = dc_frame_peek(c->in.data + off, c->in.len - off,
                          s->opts.max_request_size, &size);
    if (r < 0) {
      dc_log(DC_LOG_WARN, "closing connection from %s: %s (limit %zu bytes)",
             c->peer, dc_err_str(r), s->opts.max_request_size);
      c->closing = true;
      break;
    }
    if (r == 0)
      break;
    /* A log-in among these frames changes the principal. */
    info.principal = c->auth.state == DC_AUTH_DONE ? c->auth.principal
                     : c->principal                ? c->principal
                                                   : "User:ANONYMOUS";
    why[0] = '\0';
    int h = dc_broker_handle(s->broker, &info, c->in.data + off + 4,
                             (size_t)size, &s->arena, &c->out, why,
                             sizeof(why));
    dc_arena_reset(&s->arena);
    off += 4 + (size_t)size;
    auth_progress(c);
    if (h == DC_HANDLE_CLOSE) {
      dc_log(DC_LOG_WARN, "closing connection from %s: %s", c->peer, why);
      c->closing = true;
    }
  }
  if (off) {
    dc_buf_consume(&c->in, off);
    c->frame_start = 0;
  }
  if (c->in.len && !c->frame_start)
    c->frame_start = dc_mono_ms();
  c->paused = c->out.len - c->out_off >= s->opts.out_high_water;
  if (c->closing)
    c->in.len = 0; /* discard whatever else it sent */
}

/* KIP-368: a connection whose SASL session ended without a completed
 * re-authentication closes then, whatever it waits for: a parked Watch or
 * DescribeFleet must not outlive its session. */
static bool session_ended(const conn_t *c, int64_t now) {
  return c->auth.session_end_ms && now > c->auth.session_end_ms;
}

static void close_ended_session(dc_server_t *s, conn_t *c) {
  dc_log(DC_LOG_INFO, "closing connection from %s: the SASL session of %s "
         "ended (token expiry or connections.max.reauth.ms) without "
         "re-authentication%s", c->peer,
         c->auth.principal ? c->auth.principal : "?",
         c->pending ? "; its parked request is dropped" : "");
  dc_srv_conn_close(s, c);
}

/* Keeps the earliest session end known so the loop wakes for it. */
static void note_session(dc_server_t *s, const conn_t *c) {
  int64_t end = c->auth.session_end_ms;
  if (end && (!s->next_session_end || end < s->next_session_end))
    s->next_session_end = end;
}

/* Closes the connections whose session ended; the next check is at the
 * earliest end left, at most every 50 ms (one pass costs O(connections)). */
void dc_srv_end_sessions(dc_server_t *s, int64_t now) {
  conn_t *next;
  int64_t earliest = 0;
  for (conn_t *c = s->conns; c; c = next) {
    next = c->next;
    if (session_ended(c, now))
      close_ended_session(s, c);
    else if (c->auth.session_end_ms &&
             (!earliest || c->auth.session_end_ms < earliest))
      earliest = c->auth.session_end_ms;
  }
  s->next_session_end = earliest && earliest < now + 50 ? now + 50 : earliest;
}

void dc_srv_conn_read(dc_server_t *s, conn_t *c) {
  c->tls_write_wants_read = false; /* input arrived: writes may go on */
  /* Bounded: never hold more than one maximal frame plus a chunk. */
  size_t limit = s->opts.max_request_size + 4 + READ_CHUNK;
  for (int i = 0; i < 16 && c->in.len < limit; i++) {
    /* Read into the shared chunk and keep only what arrived, so an idle
     * connection holds no input buffer. */
    bool eof;
    ssize_t n = dc_srv_recv(c, s->rbuf, READ_CHUNK, &eof);
    if (n < 0 && eof) {
      c->closing = true; /* peer closed: answer what we have, then close */
      break;
    }
    if (n < 0) {
      dc_srv_conn_close(s, c);
      return;
    }
    if (n == 0)
      break;
    dc_buf_append(&c->in, s->rbuf, (size_t)n);
    if (c->in.err) {
      dc_log(DC_LOG_ERR, "out of memory reading from %s", c->peer);
      dc_srv_conn_close(s, c);
      return;
    }
    c->last_active = dc_mono_ms();
    /* A short plaintext read drained the socket; TLS reads return one
     * record at a time, so keep going until it would block. */
    if (!c->ssl && (size_t)n < READ_CHUNK)
      break;
  }
  bool peer_closed = c->closing;
  c->closing = false;
  dc_srv_conn_process(s, c);
  note_session(s, c);
  if (peer_closed)
    c->closing = true;
  if (dc_srv_conn_flush(s, c))
    dc_srv_set_events(s, c);
}

/* A deferred answer for the connection token: sent, and the requests
 * that arrived meanwhile are served. */
void dc_srv_on_answer(void *opaque, void *token, const uint8_t *frame,
                      size_t len) {
  dc_server_t *s = opaque;
  conn_t *c = token;
  c->pending = NULL;
  if (session_ended(c, dc_mono_ms())) {
    close_ended_session(s, c);
    return;
  }
  if (c->frame_start) /* what it sent behind the parked request waited */
    c->frame_start = dc_mono_ms();
  if (!frame) {
    dc_log(DC_LOG_WARN, "closing connection from %s: its forwarded request "
           "could not be answered", c->peer);
    c->closing = true;
  } else {
    dc_buf_append(&c->out, frame, len);
  }
  if (c->auth.failed) /* a log-in step's answer: the client is told, then
                         the connection closes */
    c->closing = true;
  auth_progress(c);
  dc_srv_conn_process(s, c);
  note_session(s, c);
  if (dc_srv_conn_flush(s, c))
    dc_srv_set_events(s, c);
  if (c->kind == EP_CONN)
    dc_srv_account(s, c);
}
