/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fleet as DescribeFleet lists it: one walk of the ordered set
 * (fleet_set.c) from the page's start, O(page + log n), plus one seek
 * past each client-id the caller may not describe. Sizes are known before
 * encoding, so a page is cut, and a v0 listing too large refused, without
 * building the rest. Also the fleet's changes (seq) and the gone entries
 * leaving at fleet.retention.ms, which the parked listings (fleet_wait.c)
 * are woken by.
 *
 * Threads: loop thread only.
 */
#include "broker/auth/acl.h"
#include "broker/core/broker_int.h"
#include "broker/rollout/fleet.h"
#include "broker/config/resolved.h"
#include "common/clock.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ANONYMOUS "User:ANONYMOUS"

/* ---- the fleet's changes -------------------------------------------------- */

void dc_broker_fleet_moved(dc_broker_t *b) {
  b->fleet->seq++;
  if (b->fleet_waits)
    b->timer_stale = true;
}

/* Drops the entries past the retention; the waiters hear of it. */
void dc_broker_fleet_expire(dc_broker_t *b) {
  if (dc_fleet_expire(b->fleet, dc_wall_ms()))
    dc_broker_fleet_moved(b);
}

int64_t dc_broker_fleet_next_expiry(const dc_broker_t *b) {
  const dc_fleet_t *f = b->fleet;
  if (!f->gone_head)
    return -1;
  int64_t left = f->gone_head->last_seen_ms + f->retention_ms + 1 -
                 dc_wall_ms();
  return dc_mono_ms() + (left > 0 ? left : 0);
}

/* ---- DescribeFleet --------------------------------------------------------- */

/* What one answer lists: a range of one tree (by_user when the request
 * names a user), where its page starts, and the caller's view. */
typedef struct scan {
  dc_req_t *r;
  bool by_user, ranged, all_visible;
  dc_fleet_pos_t lo, hi; /* the range, when ranged */
  const char *principal; /* by_user: "User:" + the user asked for */
  const char *seen;      /* the last client-id judged, and whether the */
  bool seen_ok;          /* caller may describe it */
} scan_t;

static bool in_range(const scan_t *s, const dc_avl_node_t *n) {
  return n && (!s->ranged || !dc_fleet_past(s->by_user, &s->hi, n));
}

static bool visible(scan_t *s, const char *client_id) {
  if (s->all_visible)
    return true;
  if (!s->seen || strcmp(s->seen, client_id)) {
    char why[256];
    s->seen = client_id;
    s->seen_ok = dc_broker_authorized(s->r, DC_ACL_DESCRIBE, DC_RES_CLIENT,
                                      client_id, why, sizeof(why));
  }
  return s->seen_ok;
}

/* The first entry from n on, in range, that the caller may describe; a
 * client-id it may not is passed in one seek. */
static dc_avl_node_t *wanted_from(scan_t *s, dc_avl_node_t *n) {
  dc_fleet_t *f = s->r->b->fleet;
  while (in_range(s, n)) {
    const dc_fleet_entry_t *e = dc_fleet_entry_of(n, s->by_user);
    f->examined++;
    if (visible(s, e->client_id))
      return n;
    dc_fleet_pos_t past = {{e->client_id}, 1, true};
    if (s->by_user)
      past = (dc_fleet_pos_t){{e->principal, e->client_id}, 2, true};
    n = dc_fleet_seek(f, s->by_user, &past);
  }
  return NULL;
}

/* The range q asks for; 0 or DC_ERR__NOMEM. */
static int scan_init(dc_req_t *r, const dc_describe_fleet_req_t *q,
                     scan_t *s) {
  const char *me = r->conn->principal ? r->conn->principal : ANONYMOUS;
  *s = (scan_t){.r = r, .by_user = q->user != NULL,
                .all_visible = !r->b->acl || dc_acl_is_super_user(
                                                 r->b->opts.super_users, me)};
  if (q->user) {
    size_t n = strlen(q->user) + 6;
    char *p = dc_arena_alloc(r->arena, n);
    if (!p)
      return DC_ERR__NOMEM;
    snprintf(p, n, "User:%s", q->user);
    s->principal = p;
    s->lo = (dc_fleet_pos_t){{p, q->client_id}, q->client_id ? 2 : 1, false};
  } else if (q->client_id) {
    s->lo = (dc_fleet_pos_t){{q->client_id}, 1, false};
  }
  s->ranged = q->user || q->client_id;
  s->hi = s->lo;
  s->hi.after = true;
  return 0;
}

/* Where q's page starts: after its cursor, within the range. */
static dc_avl_node_t *page_start(const scan_t *s,
                                 const dc_describe_fleet_req_t *q) {
  const dc_fleet_t *f = s->r->b->fleet;
  dc_avl_node_t *lo = s->ranged ? dc_fleet_seek(f, s->by_user, &s->lo)
                                : dc_avl_first(s->by_user ? &f->by_user
                                                          : &f->by_client);
  if (!q->after_client_id && !q->after_instance_id)
    return lo;
  dc_fleet_pos_t cur = {{q->after_client_id, q->after_instance_id}, 2, true};
  if (s->by_user)
    cur = (dc_fleet_pos_t){
        {s->principal, q->after_client_id, q->after_instance_id}, 3, true};
  dc_avl_node_t *n = dc_fleet_seek(f, s->by_user, &cur);
  return n && s->ranged && !dc_fleet_past(s->by_user, &s->lo, n) ? lo : n;
}

/* A page: its first and last entries, how many and their bytes, and
 * whether a wanted entry follows it. */
typedef struct page {
  dc_avl_node_t *first, *last;
  int32_t n;
  uint64_t bytes;
  bool more;
} page_t;

/* Walks from start while the entries fit: at most max (0 = no count) and
 * budget bytes. */
static void measure(scan_t *s, dc_avl_node_t *start, int32_t max,
                    uint64_t budget, page_t *p) {
  *p = (page_t){0};
  for (dc_avl_node_t *n = wanted_from(s, start); n;
       n = wanted_from(s, dc_avl_next(n))) {
    if ((max && p->n == max) || p->bytes + n->weight > budget) {
      p->more = true;
      return;
    }
    if (!p->n)
      p->first = n;
    p->last = n;
    p->n++;
    p->bytes += n->weight;
  }
}

/* The page's clients, resolved through memo, into resp (arena). */
static int fill_page(scan_t *s, const page_t *p, dc_resolved_memo_t *memo,
                     dc_describe_fleet_resp_t *resp) {
  dc_req_t *r = s->r;
  resp->clients = dc_arena_alloc(r->arena, (p->n ? (size_t)p->n : 1) *
                                               sizeof(*resp->clients));
  if (!resp->clients)
    return DC_ERR__NOMEM;
  dc_avl_node_t *n = p->first;
  for (int32_t i = 0; i < p->n; i++) {
    if (i)
      n = wanted_from(s, dc_avl_next(n));
    const dc_fleet_entry_t *e = dc_fleet_entry_of(n, s->by_user);
    dc_fleet_client_t *c = &resp->clients[i];
    dc_fleet_fill(e, c);
    c->current_version =
        dc_resolved_memo_version(memo, e->client_id, e->principal);
    c->state = dc_fleet_state(e, c->current_version);
  }
  resp->n_clients = p->n;
  return 0;
}

int dc_broker_fleet_refuse(dc_req_t *r, int16_t code, const char *msg) {
  dc_describe_fleet_resp_t small = {
      .error_code = code,
      .error_message = dc_arena_strdup(r->arena, msg),
      .fleet_seq = r->b->fleet->seq};
  r->error = small.error_code;
  return dc_describe_fleet_resp_encode(r->out, r->hdr->api_version, &small);
}

/* Bytes of a response body besides its clients: throttle, error code,
 * a null message, seq, more, the array's length, tags. */
#define PAGE_OVERHEAD 32

/* v0 lists every wanted client: refused before anything is built when
 * their size as listed passes max (known from the trees when the caller
 * sees them all, else from a walk that only adds sizes up). 0 to go on,
 * 1 when refused (answered), or a negative dc_err_t. */
static int whole_listing(scan_t *s, dc_avl_node_t *start, uint64_t budget,
                         page_t *p) {
  dc_req_t *r = s->r;
  char msg[200];
  uint64_t bytes = 0;
  size_t n = s->all_visible
                 ? dc_fleet_range(r->b->fleet, s->by_user,
                                  s->ranged ? &s->lo : NULL,
                                  s->ranged ? &s->hi : NULL, &bytes)
                 : 0;
  if (s->all_visible && bytes > budget) {
    snprintf(msg, sizeof(msg), "the %zu clients would take the answer past "
             "%zu bytes (max.response.bytes); ask for one client-id or user",
             n, r->b->opts.max_response_size);
    int err = dc_broker_fleet_refuse(r, DC_ERR_INVALID_REQUEST, msg);
    return err ? err : 1;
  }
  measure(s, start, 0, budget, p);
  if (!p->more)
    return 0;
  snprintf(msg, sizeof(msg), "more than %d clients would take the answer "
           "past %zu bytes (max.response.bytes); ask for one client-id or "
           "user", (int)p->n, r->b->opts.max_response_size);
  int err = dc_broker_fleet_refuse(r, DC_ERR_INVALID_REQUEST, msg);
  return err ? err : 1;
}

int dc_broker_fleet_answer(dc_req_t *r, const dc_describe_fleet_req_t *q,
                           dc_resolved_memo_t *memo) {
  int16_t v = r->hdr->api_version;
  size_t max = r->b->opts.max_response_size;
  char msg[200];
  if (q->max_clients < 0)
    return dc_broker_fleet_refuse(r, DC_ERR_INVALID_REQUEST, "max_clients is negative");
  r->b->fleet->listings++;
  scan_t s;
  if (scan_init(r, q, &s))
    return DC_ERR__NOMEM;
  uint64_t budget = max ? (max > PAGE_OVERHEAD ? max - PAGE_OVERHEAD : 0)
                        : UINT64_MAX;
  page_t p;
  dc_avl_node_t *start = page_start(&s, q);
  if (v < 1) {
    int rc = whole_listing(&s, start, budget, &p);
    if (rc)
      return rc < 0 ? rc : 0; /* refused */
  } else {
    measure(&s, start, q->max_clients, budget, &p);
    if (!p.n && p.more) {
      const dc_fleet_entry_t *e = dc_fleet_entry_of(
          wanted_from(&s, start), s.by_user);
      snprintf(msg, sizeof(msg), "client '%.64s' alone would take the "
               "answer past %zu bytes (max.response.bytes)",
               e->instance_id, max);
      return dc_broker_fleet_refuse(r, DC_ERR_INVALID_REQUEST, msg);
    }
  }
  dc_describe_fleet_resp_t resp = {.fleet_seq = r->b->fleet->seq,
                                   .more = p.more};
  dc_resolved_memo_t own;
  if (!memo)
    dc_resolved_memo_init(memo = &own, r->b->db, 0);
  int err = fill_page(&s, &p, memo, &resp);
  if (memo == &own)
    dc_resolved_memo_free(&own);
  size_t start_len = r->out->len;
  if (err || (err = dc_describe_fleet_resp_encode(r->out, v, &resp)) ||
      !max || r->out->len - start_len <= max)
    return err;
  r->out->len = start_len; /* sizes are known: a safety net only */
  snprintf(msg, sizeof(msg), "the %d clients would take the answer past %zu "
           "bytes (max.response.bytes); ask for one client-id or user",
           (int)resp.n_clients, max);
  return dc_broker_fleet_refuse(r, DC_ERR_INVALID_REQUEST, msg);
}
