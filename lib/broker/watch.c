/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Watch (dynconf's API 20001): a client parks one request per connection
 * and is answered when the configuration that resolves for it (its
 * client-id, <default>, its user, its user + client-id) no longer has the
 * version it knows, or with "unchanged" at its timeout.
 *
 * A version is a 64-bit FNV-1a hash of the resolved (key, value, source)
 * list, so equal versions mean equal configurations on every replica.
 * Parked watches cost nothing while nothing changes; after each change of
 * the configuration (an alter, an entity applied from the replicated
 * store) every parked watch's version is computed again and those that
 * differ are answered: a change wakes exactly the clients it affects.
 * Answers leave through a timerfd the event loop watches (armed at once
 * for woken watches, else at the earliest deadline), so they are sent from
 * the loop, never from inside another connection's request.
 *
 * Threads: loop thread only.
 */
#include "broker/acl.h"
#include "broker/broker_int.h"
#include "broker/scope.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* A parked request. kind comes first, as in dc_fwd_job_t: the broker
 * tells what a connection waits for by it. */
struct dc_watch {
  int kind; /* DC_PENDING_WATCH */
  struct dc_watch *prev, *next;
  void *token;       /* the connection's */
  void **fleet;      /* the connection's fleet slot (fleet.c); NULL = none */
  char *client_id;   /* owned */
  char *principal;   /* owned */
  int64_t known;     /* the version the client has */
  int64_t deadline_ms;
  int32_t correlation_id;
  int16_t api_version;
  bool woken;        /* its configuration changed: answer now */
};

static uint64_t fnv(uint64_t h, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    h = (h ^ *p) * 0x100000001b3ull;
  return (h ^ 0xff) * 0x100000001b3ull; /* a separator no string holds */
}

/* The resolved configuration of client_id for principal into out (arena;
 * n in *np, may be NULL to only count) and its version. */
static int64_t resolve(const dc_broker_t *b, const dc_scope_ent_t *ent,
                       const char *principal, dc_arena_t *arena,
                       dc_watch_entry_t **out, int32_t *np) {
  dc_scope_level_t lv[DC_SCOPE_MAX_LEVELS];
  int nl = dc_scope_levels(b->db, ent, principal, lv);
  size_t total = 0;
  for (int i = 0; i < nl; i++)
    total += lv[i].e ? lv[i].e->n : 0;
  dc_watch_entry_t *es = out ? dc_arena_alloc(arena, (total + 1) *
                                                         sizeof(*es))
                             : NULL;
  uint64_t h = 0xcbf29ce484222325ull;
  int32_t n = 0;
  dc_scope_merge_t m;
  dc_scope_merge_init(&m, lv, nl);
  int have[DC_SCOPE_MAX_LEVELS], nh;
  const char *vals[DC_SCOPE_MAX_LEVELS], *key;
  while ((key = dc_scope_merge_next(&m, vals, have, &nh))) {
    const char *val = vals[0];
    int8_t src = lv[have[0]].source;
    char s[8];
    snprintf(s, sizeof(s), "%d", src);
    h = fnv(fnv(fnv(h, key), val), s);
    if (es)
      es[n] = (dc_watch_entry_t){(char *)key, (char *)val, src};
    n++;
  }
  if (out)
    *out = es;
  if (np)
    *np = n;
  return (int64_t)(h & INT64_MAX); /* never -1: "none" */
}

int64_t dc_broker_config_version(dc_broker_t *b, const char *client_id,
                                 const char *principal) {
  dc_scope_ent_t ent;
  char why[256];
  if (dc_scope_ent_init(&ent, DC_RES_CLIENT, client_id, why, sizeof(why)))
    return -1;
  return resolve(b, &ent, principal, NULL, NULL, NULL);
}

/* ---- the set ----------------------------------------------------------- */

int dc_broker_watch_init(dc_broker_t *b, char *errstr, size_t errstr_size) {
  b->watch_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (b->watch_fd < 0) {
    dc_seterr(errstr, errstr_size, "cannot make the watch timer: %s",
              strerror(errno));
    return -1;
  }
  return 0;
}

static void watch_free(dc_watch_t *w) {
  free(w->client_id);
  free(w->principal);
  free(w);
}

static void unlink_watch(dc_broker_t *b, dc_watch_t *w) {
  if (w->prev)
    w->prev->next = w->next;
  else
    b->watches = w->next;
  if (w->next)
    w->next->prev = w->prev;
  b->n_watches--;
}

void dc_broker_watch_free(dc_broker_t *b) {
  while (b->watches) {
    dc_watch_t *w = b->watches;
    unlink_watch(b, w);
    watch_free(w);
  }
  if (b->watch_fd >= 0)
    close(b->watch_fd);
  b->watch_fd = -1;
}

int dc_broker_watch_fd(const dc_broker_t *b) { return b->watch_fd; }

/* Sets the timer to fire at due (monotonic ms; -1 disarms). */
static void arm_at(dc_broker_t *b, int64_t due) {
  struct itimerspec its = {0};
  int64_t now = dc_mono_ms();
  if (due >= 0) {
    int64_t in = due > now ? due - now : 0;
    its.it_value.tv_sec = in / 1000;
    its.it_value.tv_nsec = (long)(in % 1000) * 1000000 + 1; /* 0 disarms */
  }
  timerfd_settime(b->watch_fd, 0, &its, NULL);
  b->watch_armed = due;
}

/* Arms the timer for the first thing due: a woken watch now, else the
 * earliest deadline (nothing parked: disarmed). */
static void arm(dc_broker_t *b) {
  int64_t first = -1, now = dc_mono_ms();
  for (dc_watch_t *w = b->watches; w; w = w->next) {
    int64_t due = w->woken ? now : w->deadline_ms;
    if (first < 0 || due < first)
      first = due;
  }
  arm_at(b, first);
}

void dc_broker_watch_changed(dc_broker_t *b) {
  bool any = false;
  dc_arena_t scratch;
  dc_arena_init(&scratch);
  for (dc_watch_t *w = b->watches; w; w = w->next) {
    dc_scope_ent_t ent;
    char why[256];
    if (w->woken ||
        dc_scope_ent_init(&ent, DC_RES_CLIENT, w->client_id, why,
                          sizeof(why)))
      continue;
    if (resolve(b, &ent, w->principal, &scratch, NULL, NULL) != w->known)
      any = w->woken = true;
  }
  dc_arena_free(&scratch);
  if (any)
    arm(b);
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
 * that would pass max.response.bytes is replaced by an error saying so. */
static int encode_answer(dc_broker_t *b, dc_buf_t *out, int16_t v,
                         const dc_scope_ent_t *ent, const char *principal,
                         int64_t known, dc_arena_t *arena, void **fleet) {
  dc_watch_resp_t resp = {0};
  resp.version = resolve(b, ent, principal, arena, &resp.configs,
                         &resp.n_configs);
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
           "answer past %zu bytes (max.response.bytes)", ent->name, max);
  resp = (dc_watch_resp_t){.error_code = DC_ERR_INVALID_REQUEST,
                           .error_message = msg, .version = resp.version};
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
  int32_t t = req->timeout_ms < WATCH_MAX_TIMEOUT_MS ? req->timeout_ms
                                                     : WATCH_MAX_TIMEOUT_MS;
  w->deadline_ms = dc_mono_ms() + t;
  w->correlation_id = r->hdr->correlation_id;
  w->api_version = r->hdr->api_version;
  w->next = r->b->watches;
  if (w->next)
    w->next->prev = w;
  r->b->watches = w;
  r->b->n_watches++;
  *r->conn->pending = w;
  r->deferred = true;
  if (r->b->watch_armed < 0 || w->deadline_ms < r->b->watch_armed)
    arm_at(r->b, w->deadline_ms);
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
  if (req.known_version < 0 || req.timeout_ms <= 0 || !r->conn->pending ||
      resolve(r->b, &ent, r->conn->principal, r->arena, NULL, NULL) !=
          req.known_version)
    return encode_answer(r->b, r->out, v, &ent, r->conn->principal,
                         req.known_version, r->arena, r->conn->fleet);
  return park(r, &req);
}

/* One due watch's answer as a whole frame for cb; closes the connection
 * (a NULL frame) when it cannot be made. */
static void answer(dc_broker_t *b, dc_watch_t *w, dc_broker_answer_cb *cb,
                   void *opaque) {
  dc_buf_t out;
  dc_arena_t arena;
  dc_buf_init(&out);
  dc_arena_init(&arena);
  dc_scope_ent_t ent;
  char why[256];
  size_t frame = dc_wr_frame_begin(&out);
  dc_resp_header_encode(&out, DC_API_WATCH, w->api_version, w->correlation_id);
  int err = dc_scope_ent_init(&ent, DC_RES_CLIENT, w->client_id, why,
                              sizeof(why));
  if (!err)
    err = encode_answer(b, &out, w->api_version, &ent, w->principal, w->known,
                        &arena, w->fleet);
  dc_wr_frame_end(&out, frame);
  if (err || out.err)
    cb(opaque, w->token, NULL, 0);
  else
    cb(opaque, w->token, out.data, out.len);
  dc_buf_free(&out);
  dc_arena_free(&arena);
}

/* Due watches are taken out of the set first: answering one serves its
 * connection's next requests, which may park a new watch. */
void dc_broker_watch_answers(dc_broker_t *b, dc_broker_answer_cb *cb,
                             void *opaque) {
  uint64_t fired;
  ssize_t rd = read(b->watch_fd, &fired, sizeof(fired));
  (void)rd; /* EAGAIN too: the loop may call without the timer firing */
  int64_t now = dc_mono_ms();
  dc_watch_t *due = NULL, *next;
  for (dc_watch_t *w = b->watches; w; w = next) {
    next = w->next;
    if (!w->woken && w->deadline_ms > now)
      continue;
    unlink_watch(b, w);
    if (w->woken)
      b->watches_woken++;
    else
      b->watches_timed_out++;
    w->next = due;
    due = w;
  }
  arm(b);
  for (dc_watch_t *w = due; w; w = next) {
    next = w->next;
    answer(b, w, cb, opaque);
    watch_free(w);
  }
}
