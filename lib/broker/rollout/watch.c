/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Watch (dynconf's API 20001): a client parks one request per connection
 * and is answered when the configuration that resolves for it (its
 * client-id, <default>, its user, its user + client-id) no longer has the
 * version it knows, or with "unchanged" at its timeout.
 *
 * Versions are resolved.c's: equal versions, equal configurations on
 * every replica. Parked watches cost nothing while nothing changes: they
 * wait in a heap by deadline. After each change of the configuration (an
 * alter, an entity applied from the replicated store) every parked
 * watch's version is looked up again, through a memo that resolves each
 * distinct configuration once, and those that differ are answered: a
 * change wakes exactly the clients it affects, and woken clients with
 * the same configuration share one encoded answer.
 * Answers leave through the broker's answer timer (pending.c: set at once
 * for woken watches, else at the earliest deadline), so they are sent from
 * the loop, never from inside another connection's request.
 *
 * Watch v1 carries the replicated store's position: every answer says how
 * far this server had applied the config log, and a client that has seen
 * a later position than this server's is not answered from the older
 * state: its watch parks (behind) until the store reaches that position,
 * then is judged like any other, or is answered REPLICA_NOT_AVAILABLE at
 * its deadline.
 *
 * Threads: loop thread only.
 */
#include "broker/auth/acl.h"
#include "broker/core/broker_int.h"
#include "broker/rollout/fleet.h"
#include "broker/config/resolved.h"
#include "broker/config/scope.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A parked request. kind comes first, as in dc_fwd_job_t: the broker
 * tells what a connection waits for by it. A watch is in the deadline
 * heap (at heap_i) until it is woken, then on the woken list. */
struct dc_watch {
  int kind; /* DC_PENDING_WATCH */
  size_t heap_i;
  struct dc_watch *prev, *next; /* the woken list */
  void *token;       /* the connection's */
  void **fleet;      /* the connection's fleet slot (fleet.c); NULL = none */
  char *client_id;   /* owned */
  char *principal;   /* owned */
  int64_t known;     /* the version the client has */
  int64_t min_position; /* the store position the client has seen */
  int64_t deadline_ms;
  int32_t correlation_id;
  int16_t api_version;
  bool woken;        /* its configuration changed: answer now */
};

int64_t dc_broker_config_version(dc_broker_t *b, const char *client_id,
                                 const char *principal) {
  dc_resolved_key_t k;
  if (dc_resolved_key(b->db, client_id, principal, &k))
    return -1;
  return dc_resolved_list(&k, NULL, NULL, NULL);
}

/* Is the client of w ahead of this server's store (at pos)? A store
 * without a log (pos -1) has no order to keep. */
static bool behind(const dc_watch_t *w, int64_t pos) {
  return pos >= 0 && w->min_position > pos;
}

/* ---- the set: a min-heap by deadline, and the woken ------------------- */

static void watch_free(dc_watch_t *w) {
  free(w->client_id);
  free(w->principal);
  free(w);
}

static void heap_set(dc_broker_t *b, size_t i, dc_watch_t *w) {
  b->watch_heap[i] = w;
  w->heap_i = i;
}

static void sift_up(dc_broker_t *b, size_t i) {
  dc_watch_t *w = b->watch_heap[i];
  while (i > 0) {
    size_t up = (i - 1) / 2;
    if (b->watch_heap[up]->deadline_ms <= w->deadline_ms)
      break;
    heap_set(b, i, b->watch_heap[up]);
    i = up;
  }
  heap_set(b, i, w);
}

static void sift_down(dc_broker_t *b, size_t i) {
  dc_watch_t *w = b->watch_heap[i];
  size_t n = b->n_heap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n &&
        b->watch_heap[c + 1]->deadline_ms < b->watch_heap[c]->deadline_ms)
      c++;
    if (w->deadline_ms <= b->watch_heap[c]->deadline_ms)
      break;
    heap_set(b, i, b->watch_heap[c]);
    i = c;
  }
  heap_set(b, i, w);
}

/* 0, or -1 without memory (w not added). */
static int heap_push(dc_broker_t *b, dc_watch_t *w) {
  if (b->n_heap == b->heap_cap) {
    size_t cap = b->heap_cap ? 2 * b->heap_cap : 64;
    dc_watch_t **h = realloc(b->watch_heap, cap * sizeof(*h));
    if (!h)
      return -1;
    b->watch_heap = h;
    b->heap_cap = cap;
  }
  heap_set(b, b->n_heap++, w);
  sift_up(b, w->heap_i);
  return 0;
}

static void heap_remove(dc_broker_t *b, dc_watch_t *w) {
  size_t i = w->heap_i;
  dc_watch_t *last = b->watch_heap[--b->n_heap];
  if (last == w)
    return;
  heap_set(b, i, last);
  if (i > 0 && b->watch_heap[(i - 1) / 2]->deadline_ms > last->deadline_ms)
    sift_up(b, i);
  else
    sift_down(b, i);
}

static void woken_push(dc_broker_t *b, dc_watch_t *w) {
  w->woken = true;
  w->prev = NULL;
  w->next = b->watch_woken;
  if (w->next)
    w->next->prev = w;
  b->watch_woken = w;
}

static void woken_unlink(dc_broker_t *b, dc_watch_t *w) {
  if (w->prev)
    w->prev->next = w->next;
  else
    b->watch_woken = w->next;
  if (w->next)
    w->next->prev = w->prev;
}

/* Takes w out of the set, wherever it is. */
static void unlink_watch(dc_broker_t *b, dc_watch_t *w) {
  if (w->min_position >= 0 && b->n_behind)
    b->n_behind--;
  if (w->woken)
    woken_unlink(b, w);
  else
    heap_remove(b, w);
  b->n_watches--;
}

void dc_broker_watch_free(dc_broker_t *b) {
  while (b->watch_woken) {
    dc_watch_t *w = b->watch_woken;
    woken_unlink(b, w);
    watch_free(w);
  }
  for (size_t i = 0; i < b->n_heap; i++)
    watch_free(b->watch_heap[i]);
  free(b->watch_heap);
  b->watch_heap = NULL;
  b->n_heap = b->heap_cap = 0;
  b->n_watches = 0;
}

int64_t dc_broker_watch_due(const dc_broker_t *b) {
  if (b->watch_woken)
    return 0;
  return b->n_heap ? b->watch_heap[0]->deadline_ms : -1;
}

/* Every parked watch's version is computed again, through a memo: a
 * change of <default> costs one resolution per distinct configuration,
 * plus a lookup of each watcher's levels. The woken leave the heap, which
 * is rebuilt from the rest in linear time. */
static void rejudge(dc_broker_t *b, bool changed);

void dc_broker_watch_changed(dc_broker_t *b) {
  dc_broker_fleet_moved(b); /* every client's state may have moved */
  rejudge(b, true);
}

void dc_broker_watch_position(dc_broker_t *b) {
  int64_t pos = dc_store_position(b->store);
  if (pos != b->position && b->n_behind)
    rejudge(b, false);
  b->position = pos;
}

/* Judges the parked watches again: all of them after a change of the
 * configuration (changed), else only those that were behind the store.
 * A watch whose client is still ahead of the store stays parked. */
static void rejudge(dc_broker_t *b, bool changed) {
  int64_t pos = b->position = dc_store_position(b->store);
  dc_resolved_memo_t memo;
  dc_resolved_memo_init(&memo, b->db, 0);
  size_t keep = 0, n = b->n_heap;
  b->n_behind = 0;
  for (size_t i = 0; i < n; i++) {
    dc_watch_t *w = b->watch_heap[i];
    bool judge = changed || w->min_position >= 0;
    int64_t v = -1;
    if (behind(w, pos)) {
      b->n_behind++;
    } else {
      if (judge)
        v = dc_resolved_memo_version(&memo, w->client_id, w->principal);
      w->min_position = -1; /* caught up: a watch like any other */
    }
    if (v >= 0 && v != w->known)
      woken_push(b, w);
    else
      heap_set(b, keep++, w);
  }
  dc_resolved_memo_free(&memo);
  if (keep == n)
    return;
  b->n_heap = keep;
  for (size_t i = keep / 2; i-- > 0;)
    sift_down(b, i);
  b->timer_stale = true;
}

bool dc_broker_watch_abandon(dc_broker_t *b, void *pending) {
  dc_watch_t *w = pending;
  if (w->kind != DC_PENDING_WATCH)
    return false;
  unlink_watch(b, w);
  watch_free(w); /* the timer may fire for nothing: harmless */
  return true;
}

/* ---- the request -------------------------------------------------------- */

/* Longest a watch may park: a client asking for more is answered then. */
#define WATCH_MAX_TIMEOUT_MS 600000

/* The answer for (client_id, principal) known at version known; one
 * that would pass max.response.bytes is replaced by an error saying so.
 * With unchanged set and the version still the one known, nothing is
 * written and *unchanged turns true: the caller parks the request. */
static int encode_answer(dc_broker_t *b, dc_buf_t *out, int16_t v,
                         const char *client_id, const char *principal,
                         int64_t known, dc_arena_t *arena, void **fleet,
                         bool *unchanged) {
  dc_resolved_key_t k;
  if (dc_resolved_key(b->db, client_id, principal, &k))
    return DC_ERR_INVALID_REQUEST; /* checked when it was asked */
  dc_watch_resp_t resp = {.position = dc_store_position(b->store)};
  resp.version = dc_resolved_list(&k, arena, &resp.configs, &resp.n_configs);
  if (unchanged && resp.version == known) {
    *unchanged = true;
    return 0;
  }
  dc_broker_fleet_served(fleet, resp.version);
  resp.changed = resp.version != known;
  if (!resp.configs)
    return DC_ERR__NOMEM;
  if (!resp.changed)
    resp.n_configs = 0;
  size_t start = out->len, max = b->opts.max_response_size;
  int err = dc_watch_resp_encode(out, v, &resp);
  if (err || !max || out->len - start <= max)
    return err;
  out->len = start;
  char msg[160];
  snprintf(msg, sizeof(msg), "the configuration of '%.40s' would take the "
           "answer past %zu bytes (max.response.bytes)", client_id, max);
  resp = (dc_watch_resp_t){.error_code = DC_ERR_INVALID_REQUEST,
                           .error_message = msg, .version = resp.version,
                           .position = resp.position};
  return dc_watch_resp_encode(out, v, &resp);
}

void dc_broker_behind_why(char *buf, size_t size, int64_t pos,
                          int64_t min_position) {
  snprintf(buf, size, "this server has applied the config log up to "
           "position %lld, behind position %lld this client has seen; ask "
           "another server or retry", (long long)pos,
           (long long)min_position);
}

/* The answer to a client ahead of this server: it is sent elsewhere
 * rather than answered from an older state. */
static int encode_behind(dc_broker_t *b, dc_buf_t *out, int16_t v,
                         int64_t min_position) {
  char msg[200];
  int64_t pos = dc_store_position(b->store);
  dc_broker_behind_why(msg, sizeof(msg), pos, min_position);
  dc_watch_resp_t resp = {.error_code = DC_ERR_REPLICA_NOT_AVAILABLE,
                          .error_message = msg, .version = -1,
                          .position = pos};
  return dc_watch_resp_encode(out, v, &resp);
}

static int park(dc_req_t *r, const dc_watch_req_t *req) {
  dc_watch_t *w = calloc(1, sizeof(*w));
  if (!w || !(w->client_id = strdup(req->client_id)) ||
      !(w->principal = strdup(r->conn->principal ? r->conn->principal
                                                 : "User:ANONYMOUS"))) {
    if (w)
      watch_free(w);
    return DC_ERR__NOMEM;
  }
  w->kind = DC_PENDING_WATCH;
  w->token = r->conn->token;
  w->fleet = r->conn->fleet;
  w->known = req->known_version;
  w->min_position = req->min_position;
  if (behind(w, dc_store_position(r->b->store)))
    r->b->n_behind++;
  else
    w->min_position = -1; /* only a watch behind the store keeps it */
  int32_t t = req->timeout_ms < WATCH_MAX_TIMEOUT_MS ? req->timeout_ms
                                                     : WATCH_MAX_TIMEOUT_MS;
  w->deadline_ms = dc_mono_ms() + t;
  w->correlation_id = r->hdr->correlation_id;
  w->api_version = r->hdr->api_version;
  if (heap_push(r->b, w)) {
    watch_free(w);
    return DC_ERR__NOMEM;
  }
  r->b->n_watches++;
  *r->conn->pending = w;
  r->deferred = true;
  if (r->b->watch_armed < 0 || w->deadline_ms < r->b->watch_armed)
    r->b->timer_stale = true;
  return 0;
}

int dc_handle_watch(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_watch_req_t req;
  if (dc_watch_req_decode(r->rd, v, &req))
    return r->rd->err;
  dc_watch_resp_t resp = {0};
  char why[512];
  dc_scope_ent_t ent;
  if (dc_scope_ent_init(&ent, DC_RES_CLIENT, req.client_id, why,
                        sizeof(why))) {
    resp.error_code = DC_ERR_INVALID_REQUEST;
  } else if (!dc_broker_authorized(r, DC_ACL_DESCRIBE, DC_RES_CLIENT,
                                   req.client_id, why, sizeof(why))) {
    resp.error_code = DC_ERR_CLUSTER_AUTHORIZATION_FAILED;
  }
  if (resp.error_code) {
    r->error = resp.error_code;
    resp.error_message = dc_arena_strdup(r->arena, why);
    return dc_watch_resp_encode(r->out, v, &resp);
  }
  bool can_park = req.timeout_ms > 0 && r->conn->pending;
  int64_t pos = dc_store_position(r->b->store);
  if (pos >= 0 && req.min_position > pos) /* the client is ahead */
    return can_park ? park(r, &req)
                    : encode_behind(r->b, r->out, v, req.min_position);
  bool unchanged = false;
  int err = encode_answer(r->b, r->out, v, req.client_id, r->conn->principal,
                          req.known_version, r->arena, r->conn->fleet,
                          req.known_version >= 0 && can_park ? &unchanged
                                                             : NULL);
  return err || !unchanged ? err : park(r, &req);
}

/* A woken watch's answer from the memo's shared body; false when the
 * memo has none for it (then it is encoded on its own). */
static bool answer_from_memo(dc_resolved_memo_t *memo, dc_watch_t *w,
                             dc_buf_t *out) {
  int64_t version;
  const dc_buf_t *body = dc_resolved_memo_answer(
      memo, w->client_id, w->principal, w->api_version, &version);
  if (!body || version == w->known) /* changed back: not a change */
    return false;
  dc_buf_append(out, body->data, body->len);
  dc_broker_fleet_served(w->fleet, version);
  return true;
}

/* One due watch's answer as a whole frame for cb; closes the connection
 * (a NULL frame) when it cannot be made. */
static void answer(dc_broker_t *b, dc_resolved_memo_t *memo, dc_watch_t *w,
                   dc_buf_t *out, dc_broker_answer_cb *cb, void *opaque) {
  dc_buf_clear(out);
  size_t frame = dc_wr_frame_begin(out);
  dc_resp_header_encode(out, DC_API_WATCH, w->api_version, w->correlation_id);
  int err = 0;
  if (behind(w, dc_store_position(b->store))) {
    err = encode_behind(b, out, w->api_version, w->min_position);
  } else if (!w->woken || !answer_from_memo(memo, w, out)) {
    dc_arena_t arena;
    dc_arena_init(&arena);
    err = encode_answer(b, out, w->api_version, w->client_id, w->principal,
                        w->known, &arena, w->fleet, NULL);
    dc_arena_free(&arena);
  }
  dc_wr_frame_end(out, frame);
  if (err || out->err)
    cb(opaque, w->token, NULL, 0);
  else
    cb(opaque, w->token, out->data, out->len);
}

/* Due watches are taken out of the set first: answering one serves its
 * connection's next requests, which may park a new watch or alter (the
 * memo then forgets what it knew). Woken watches whose configurations
 * are the same share one encoded body. */
void dc_broker_watch_answers(dc_broker_t *b, dc_broker_answer_cb *cb,
                             void *opaque) {
  int64_t now = dc_mono_ms();
  /* The woken first, then the timed out in deadline order. */
  dc_watch_t *due = b->watch_woken, **tail = &due, *next;
  b->watch_woken = NULL;
  for (; *tail; tail = &(*tail)->next) {
    b->n_watches--;
    b->watches_woken++;
  }
  while (b->n_heap && b->watch_heap[0]->deadline_ms <= now) {
    dc_watch_t *w = b->watch_heap[0];
    unlink_watch(b, w);
    b->watches_timed_out++;
    w->next = NULL;
    *tail = w;
    tail = &w->next;
  }
  dc_resolved_memo_t memo;
  dc_resolved_memo_init(&memo, b->db, b->opts.max_response_size);
  memo.position = dc_store_position(b->store);
  dc_buf_t out;
  dc_buf_init(&out);
  for (dc_watch_t *w = due; w; w = next) {
    next = w->next;
    answer(b, &memo, w, &out, cb, opaque);
    watch_free(w);
  }
  dc_buf_free(&out);
  dc_resolved_memo_free(&memo);
}
