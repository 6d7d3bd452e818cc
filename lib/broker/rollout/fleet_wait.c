/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parked DescribeFleet requests (v1 with since_seq): "answer when the
 * fleet's change sequence is no longer since_seq, or at the timeout".
 * `dynconf-configs --alter --wait` parks one per replica, so it learns of
 * each report within a round trip instead of polling.
 *
 * They are few: at most one per connection, fleet.max.waits.per.principal
 * of one principal and fleet.max.waits in all (more are refused with
 * POLICY_VIOLATION), so they sit on a plain list and each pass looks at
 * all of them. A gone client passing fleet.retention.ms moves the fleet
 * too: the timer is also set for that. Answers leave through the watch
 * timer (watch.c), which is armed at once when the fleet moves: every
 * report taken in one pass of the event loop wakes a waiter once. The
 * listing is made at answer time with the requester's principal, as the
 * request itself would have been; waiters answered in one pass that
 * asked alike (and, under an ACL, are the same caller) share one listing
 * and its encoded body.
 *
 * Threads: loop thread only.
 */
#include "broker/core/broker_int.h"
#include "broker/rollout/fleet.h"
#include "broker/config/resolved.h"
#include "common/clock.h"

#include <stdio.h>
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

static const char *principal_of(const char *p) {
  return p ? p : "User:ANONYMOUS";
}

bool dc_broker_fleet_may_park(const dc_req_t *r, char *why,
                              size_t why_size) {
  const dc_broker_opts_t *o = &r->b->opts;
  const char *me = principal_of(r->conn->principal);
  size_t mine = 0;
  for (const dc_fleet_wait_t *w = r->b->fleet_waits; w; w = w->next)
    mine += !strcmp(principal_of(w->principal), me);
  if (o->fleet_max_waits_per_principal &&
      mine >= (size_t)o->fleet_max_waits_per_principal) {
    snprintf(why, why_size, "%.200s has %zu DescribeFleet requests parked, "
             "the most one principal may (fleet.max.waits.per.principal); "
             "ask with since_seq -1, or once one is answered", me, mine);
    return false;
  }
  if (o->fleet_max_waits &&
      r->b->n_fleet_waits >= (size_t)o->fleet_max_waits) {
    snprintf(why, why_size, "%zu DescribeFleet requests are parked, the "
             "most this server keeps (fleet.max.waits); ask with since_seq "
             "-1, or later", r->b->n_fleet_waits);
    return false;
  }
  return true;
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
  r->b->timer_stale = true;
  return 0;
}

static bool wait_due(const dc_broker_t *b, const dc_fleet_wait_t *w,
                     int64_t now) {
  return w->q.since_seq != b->fleet->seq || w->deadline_ms <= now;
}

int64_t dc_broker_fleet_waits_due(const dc_broker_t *b) {
  if (!b->fleet_waits)
    return -1;
  int64_t due = dc_broker_fleet_next_expiry(b); /* that moves the fleet */
  for (const dc_fleet_wait_t *w = b->fleet_waits; w; w = w->next) {
    if (w->q.since_seq != b->fleet->seq)
      return 0; /* now */
    if (due < 0 || w->deadline_ms < due)
      due = w->deadline_ms;
  }
  return due;
}

/* NULL (not asked) sorts before any string. */
static int cmp_str(const char *a, const char *b) {
  if (!a || !b)
    return (a != NULL) - (b != NULL);
  return strcmp(a, b);
}

/* Waiters whose answers are the same body compare equal: the same
 * version and request and, when an ACL decides what each may see, the
 * same principal and header client-id. */
static int cmp_waits(const void *pa, const void *pb, void *acl) {
  const dc_fleet_wait_t *a = *(dc_fleet_wait_t *const *)pa,
                        *b = *(dc_fleet_wait_t *const *)pb;
  int c = (a->api_version > b->api_version) - (a->api_version < b->api_version);
  const char *sa[] = {a->q.client_id, a->q.user, a->q.after_client_id,
                      a->q.after_instance_id, acl ? a->principal : NULL,
                      acl ? a->hdr_client_id : NULL};
  const char *sb[] = {b->q.client_id, b->q.user, b->q.after_client_id,
                      b->q.after_instance_id, acl ? b->principal : NULL,
                      acl ? b->hdr_client_id : NULL};
  for (size_t i = 0; !c && i < sizeof(sa) / sizeof(sa[0]); i++)
    c = cmp_str(sa[i], sb[i]);
  if (!c)
    c = (a->q.max_clients > b->q.max_clients) -
        (a->q.max_clients < b->q.max_clients);
  return c;
}

/* The body (after the response header) w's answer has, into body; 0,
 * or a negative dc_err_t. */
static int answer_body(dc_broker_t *b, dc_fleet_wait_t *w,
                       dc_resolved_memo_t *memo, dc_buf_t *body) {
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_conn_info_t conn = {.principal = w->principal};
  dc_req_header_t hdr = {.api_key = DC_API_DESCRIBE_FLEET,
                         .api_version = w->api_version,
                         .correlation_id = w->correlation_id,
                         .client_id = w->hdr_client_id};
  dc_req_t r = {.b = b, .conn = &conn, .hdr = &hdr, .arena = &arena,
                .out = body};
  dc_buf_clear(body);
  int err = dc_broker_fleet_answer(&r, &w->q, memo);
  dc_arena_free(&arena);
  return err ? err : body->err;
}

/* w's answer as a whole frame for cb (body NULL: the connection closes,
 * the answer could not be made). */
static void answer(dc_fleet_wait_t *w, const dc_buf_t *body, dc_buf_t *out,
                   dc_broker_answer_cb *cb, void *opaque) {
  if (!body) {
    cb(opaque, w->token, NULL, 0);
    return;
  }
  dc_buf_clear(out);
  size_t frame = dc_wr_frame_begin(out);
  dc_resp_header_encode(out, DC_API_DESCRIBE_FLEET, w->api_version,
                        w->correlation_id);
  dc_buf_append(out, body->data, body->len);
  dc_wr_frame_end(out, frame);
  if (out->err)
    cb(opaque, w->token, NULL, 0);
  else
    cb(opaque, w->token, out->data, out->len);
}

/* Takes the due waiters off the list, into an array (*n of them); NULL
 * when none, or without memory (then they stay, for the next pass). */
static dc_fleet_wait_t **take_due(dc_broker_t *b, size_t *n) {
  int64_t now = dc_mono_ms();
  size_t due = 0;
  for (dc_fleet_wait_t *w = b->fleet_waits; w; w = w->next)
    due += wait_due(b, w, now);
  dc_fleet_wait_t **v = due ? malloc(due * sizeof(*v)) : NULL;
  *n = 0;
  if (!v)
    return NULL;
  for (dc_fleet_wait_t *w = b->fleet_waits, *next; w; w = next) {
    next = w->next;
    if (wait_due(b, w, now)) {
      unlink_wait(b, w);
      v[(*n)++] = w;
    }
  }
  return v;
}

/* The due ones leave the list before any is answered: an answer serves
 * its connection's next request, which may park again. Alike waiters,
 * next to each other once sorted, share the body made for the first. */
void dc_broker_fleet_waits_answer(dc_broker_t *b, dc_broker_answer_cb *cb,
                                  void *opaque) {
  if (!b->fleet_waits)
    return;
  dc_broker_fleet_expire(b); /* the seq moves for what retention dropped */
  size_t n;
  dc_fleet_wait_t **v = take_due(b, &n);
  if (!v)
    return;
  void *acl = b->acl; /* an answer may reload it: group as sorted */
  qsort_r(v, n, sizeof(*v), cmp_waits, acl);
  dc_resolved_memo_t memo;
  dc_resolved_memo_init(&memo, b->db, 0);
  dc_buf_t body, out;
  dc_buf_init(&body);
  dc_buf_init(&out);
  bool made = false;
  for (size_t i = 0; i < n; i++) {
    if (!i || cmp_waits(&v[i - 1], &v[i], acl))
      made = !answer_body(b, v[i], &memo, &body);
    answer(v[i], made ? &body : NULL, &out, cb, opaque);
    if (i)
      wait_free(v[i - 1]);
  }
  wait_free(v[n - 1]);
  free(v);
  dc_buf_free(&out);
  dc_buf_free(&body);
  dc_resolved_memo_free(&memo);
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
