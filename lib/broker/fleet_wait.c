/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parked DescribeFleet requests (v1 with since_seq): "answer when the
 * fleet's change sequence is no longer since_seq, or at the timeout".
 * `dynconf-configs --alter --wait` parks one per replica, so it learns of
 * each report within a round trip instead of polling.
 *
 * They are few (operators' commands, at most one per connection), so
 * they sit on a plain list and each pass looks at all of them. A gone
 * client passing fleet.retention.ms moves the fleet too: the timer is
 * also set for that. Answers
 * leave through the watch timer (watch.c), which is armed at once when
 * the fleet moves: every report taken in one pass of the event loop
 * wakes a waiter once. The listing is made at answer time with the
 * requester's principal, as the request itself would have been.
 *
 * Threads: loop thread only.
 */
#include "broker/broker_int.h"
#include "common/clock.h"

#include <stdlib.h>
#include <string.h>

struct dc_fleet_wait {
  int kind; /* DC_PENDING_FLEET */
  struct dc_fleet_wait *prev, *next;
  void *token;                      /* the connection's */
  char *principal, *hdr_client_id;  /* who asked, for the ACLs */
  dc_describe_fleet_req_t q;        /* its strings owned */
  int64_t deadline_ms;
  int32_t correlation_id;
  int16_t api_version;
};

/* Longest a DescribeFleet may park (as a Watch). */
#define FLEET_WAIT_MAX_MS 600000

static void wait_free(dc_fleet_wait_t *w) {
  char *s[] = {w->principal,          w->hdr_client_id, w->q.client_id,
               w->q.user,             w->q.after_client_id,
               w->q.after_instance_id};
  for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
    free(s[i]);
  free(w);
}

/* *dst = a copy of src (NULL stays NULL); false without memory. */
static bool dup_into(char **dst, const char *src) {
  *dst = src ? strdup(src) : NULL;
  return !src || *dst;
}

static void unlink_wait(dc_broker_t *b, dc_fleet_wait_t *w) {
  if (w->prev)
    w->prev->next = w->next;
  else
    b->fleet_waits = w->next;
  if (w->next)
    w->next->prev = w->prev;
  b->n_fleet_waits--;
}

int dc_broker_fleet_park(dc_req_t *r, const dc_describe_fleet_req_t *q) {
  dc_fleet_wait_t *w = calloc(1, sizeof(*w));
  if (!w)
    return DC_ERR__NOMEM;
  w->q = *q;
  w->q.client_id = w->q.user = NULL;
  w->q.after_client_id = w->q.after_instance_id = NULL;
  if (!dup_into(&w->principal, r->conn->principal) ||
      !dup_into(&w->hdr_client_id, r->hdr->client_id) ||
      !dup_into(&w->q.client_id, q->client_id) ||
      !dup_into(&w->q.user, q->user) ||
      !dup_into(&w->q.after_client_id, q->after_client_id) ||
      !dup_into(&w->q.after_instance_id, q->after_instance_id)) {
    wait_free(w);
    return DC_ERR__NOMEM;
  }
  w->kind = DC_PENDING_FLEET;
  w->token = r->conn->token;
  int32_t t = q->timeout_ms < FLEET_WAIT_MAX_MS ? q->timeout_ms
                                                : FLEET_WAIT_MAX_MS;
  w->deadline_ms = dc_mono_ms() + t;
  w->correlation_id = r->hdr->correlation_id;
  w->api_version = r->hdr->api_version;
  w->next = r->b->fleet_waits;
  if (w->next)
    w->next->prev = w;
  r->b->fleet_waits = w;
  r->b->n_fleet_waits++;
  *r->conn->pending = w;
  r->deferred = true;
  dc_broker_watch_rearm(r->b);
  return 0;
}

static bool wait_due(const dc_broker_t *b, const dc_fleet_wait_t *w,
                     int64_t now) {
  return w->q.since_seq != b->fleet.seq || w->deadline_ms <= now;
}

int64_t dc_broker_fleet_waits_due(const dc_broker_t *b) {
  if (!b->fleet_waits)
    return -1;
  int64_t due = dc_broker_fleet_next_expiry(b); /* that moves the fleet */
  for (const dc_fleet_wait_t *w = b->fleet_waits; w; w = w->next) {
    if (w->q.since_seq != b->fleet.seq)
      return 0; /* now */
    if (due < 0 || w->deadline_ms < due)
      due = w->deadline_ms;
  }
  return due;
}

void dc_broker_fleet_moved(dc_broker_t *b) {
  b->fleet.seq++;
  if (b->fleet_waits)
    dc_broker_watch_rearm(b);
}

/* The listing for w, as a whole frame for cb; a NULL frame (the
 * connection closes) when it cannot be made. */
static void answer(dc_broker_t *b, dc_fleet_wait_t *w,
                   dc_broker_answer_cb *cb, void *opaque) {
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_buf_t out;
  dc_buf_init(&out);
  dc_conn_info_t conn = {.principal = w->principal};
  dc_req_header_t hdr = {.api_key = DC_API_DESCRIBE_FLEET,
                         .api_version = w->api_version,
                         .correlation_id = w->correlation_id,
                         .client_id = w->hdr_client_id};
  dc_req_t r = {.b = b, .conn = &conn, .hdr = &hdr, .arena = &arena,
                .out = &out};
  size_t frame = dc_wr_frame_begin(&out);
  dc_resp_header_encode(&out, DC_API_DESCRIBE_FLEET, w->api_version,
                        w->correlation_id);
  int err = dc_broker_fleet_answer(&r, &w->q);
  dc_wr_frame_end(&out, frame);
  if (err || out.err)
    cb(opaque, w->token, NULL, 0);
  else
    cb(opaque, w->token, out.data, out.len);
  dc_buf_free(&out);
  dc_arena_free(&arena);
}

/* The due ones leave the list before any is answered: an answer serves
 * its connection's next request, which may park again. */
void dc_broker_fleet_waits_answer(dc_broker_t *b, dc_broker_answer_cb *cb,
                                  void *opaque) {
  if (!b->fleet_waits)
    return;
  dc_broker_fleet_expire(b); /* the seq moves for what retention dropped */
  int64_t now = dc_mono_ms();
  dc_fleet_wait_t *due = NULL, *next;
  for (dc_fleet_wait_t *w = b->fleet_waits; w; w = next) {
    next = w->next;
    if (!wait_due(b, w, now))
      continue;
    unlink_wait(b, w);
    w->next = due;
    due = w;
  }
  for (dc_fleet_wait_t *w = due; w; w = next) {
    next = w->next;
    answer(b, w, cb, opaque);
    wait_free(w);
  }
}

bool dc_broker_fleet_wait_abandon(dc_broker_t *b, void *pending) {
  dc_fleet_wait_t *w = pending;
  if (w->kind != DC_PENDING_FLEET)
    return false;
  unlink_wait(b, w);
  wait_free(w);
  return true;
}

void dc_broker_fleet_waits_free(dc_broker_t *b) {
  while (b->fleet_waits) {
    dc_fleet_wait_t *w = b->fleet_waits;
    unlink_wait(b, w);
    wait_free(w);
  }
}
