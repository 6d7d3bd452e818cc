/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fleet: every agent instance that reported to this server with
 * ClientReport (dynconf's API 20002), what it runs and what it did with
 * which configuration version; DescribeFleet (API 20003) lists them with
 * their rollout state against the version that resolves for each now.
 *
 * An entry is keyed by the agent's instance id, so an agent that
 * reconnects (or comes back after a restart of this server's peer side)
 * stays one entry. While a connection holds an entry, the connection's
 * slot (dc_conn_info_t.fleet) points at it and the entry remembers the
 * slot, so either side can let go of the other. An entry whose connection
 * closed is "gone": kept for fleet.retention.ms, oldest first out when the
 * set is full. Connected entries are bounded by the connections, so the
 * set never needs to drop one.
 *
 * Threads: loop thread only.
 */
#include "broker/acl.h"
#include "broker/broker_int.h"
#include "broker/resolved.h"
#include "broker/scope.h"
#include "common/clock.h"
#include "common/text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dc_fleet_entry {
  char *instance_id, *client_id, *principal, *peer, *listener;
  char *agent_software, *app_software, *kind, *reason;
  int64_t first_seen_ms, last_seen_ms; /* wall clock */
  int64_t served_version, reported_version, generation;
  int8_t outcome;
  void **slot; /* the holding connection's slot; NULL = gone */
  struct dc_fleet_entry *hnext;        /* hash chain */
  struct dc_fleet_entry *gprev, *gnext; /* the gone list, oldest first */
};

/* ---- the set ------------------------------------------------------------ */

static uint64_t hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static void entry_free(dc_fleet_entry_t *e) {
  char **f[] = {&e->instance_id, &e->client_id,      &e->principal,
                &e->peer,        &e->listener,       &e->agent_software,
                &e->app_software, &e->kind,          &e->reason};
  for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
    free(*f[i]);
  if (e->slot)
    *e->slot = NULL;
  free(e);
}

static dc_fleet_entry_t **bucket(dc_fleet_t *f, const char *id) {
  return &f->buckets[hash(id) & (f->n_buckets - 1)];
}

static dc_fleet_entry_t *find(dc_fleet_t *f, const char *id) {
  if (!f->n_buckets)
    return NULL;
  dc_fleet_entry_t *e = *bucket(f, id);
  while (e && strcmp(e->instance_id, id))
    e = e->hnext;
  return e;
}

/* Doubles the table when it holds more entries than buckets. */
static int grow(dc_fleet_t *f) {
  if (f->n < f->n_buckets)
    return 0;
  size_t nb = f->n_buckets ? f->n_buckets * 2 : 64;
  dc_fleet_entry_t **nbk = calloc(nb, sizeof(*nbk));
  if (!nbk)
    return -1;
  for (size_t i = 0; i < f->n_buckets; i++)
    for (dc_fleet_entry_t *e = f->buckets[i], *next; e; e = next) {
      next = e->hnext;
      dc_fleet_entry_t **b = &nbk[hash(e->instance_id) & (nb - 1)];
      e->hnext = *b;
      *b = e;
    }
  free(f->buckets);
  f->buckets = nbk;
  f->n_buckets = nb;
  return 0;
}

static void gone_unlink(dc_fleet_t *f, dc_fleet_entry_t *e) {
  if (e->gprev)
    e->gprev->gnext = e->gnext;
  else if (f->gone_head == e)
    f->gone_head = e->gnext;
  if (e->gnext)
    e->gnext->gprev = e->gprev;
  else if (f->gone_tail == e)
    f->gone_tail = e->gprev;
  e->gprev = e->gnext = NULL;
}

static void gone_push(dc_fleet_t *f, dc_fleet_entry_t *e) {
  e->gprev = f->gone_tail;
  if (f->gone_tail)
    f->gone_tail->gnext = e;
  else
    f->gone_head = e;
  f->gone_tail = e;
}

static void drop(dc_fleet_t *f, dc_fleet_entry_t *e) {
  for (dc_fleet_entry_t **p = bucket(f, e->instance_id); *p; p = &(*p)->hnext)
    if (*p == e) {
      *p = e->hnext;
      break;
    }
  gone_unlink(f, e);
  f->n--;
  f->seq++;
  entry_free(e);
}

/* Drops gone entries past the retention window, and the oldest gone one
 * when room is wanted. */
static void expire(dc_fleet_t *f, int64_t now, bool want_room) {
  while (f->gone_head &&
         (now - f->gone_head->last_seen_ms > f->retention_ms ||
          (want_room && f->n >= DC_FLEET_MAX_CLIENTS)))
    drop(f, f->gone_head);
}

/* expire() for a listing; the waiters hear of what it dropped. */
void dc_broker_fleet_expire(dc_broker_t *b) {
  int64_t seq = b->fleet.seq;
  expire(&b->fleet, dc_wall_ms(), false);
  if (b->fleet.seq != seq)
    dc_broker_fleet_moved(b);
}

int64_t dc_broker_fleet_next_expiry(const dc_broker_t *b) {
  const dc_fleet_t *f = &b->fleet;
  if (!f->gone_head)
    return -1;
  int64_t left = f->gone_head->last_seen_ms + f->retention_ms + 1 -
                 dc_wall_ms();
  return dc_mono_ms() + (left > 0 ? left : 0);
}

void dc_fleet_init(dc_fleet_t *f, int64_t retention_ms) {
  memset(f, 0, sizeof(*f));
  f->retention_ms = retention_ms;
  f->seq = dc_wall_ms();
}

void dc_fleet_free(dc_fleet_t *f) {
  for (size_t i = 0; i < f->n_buckets; i++)
    for (dc_fleet_entry_t *e = f->buckets[i], *next; e; e = next) {
      next = e->hnext;
      entry_free(e);
    }
  free(f->buckets);
  memset(f, 0, sizeof(*f));
}

/* Its connection let go of e (closed, or reports another instance). */
static void mark_gone(dc_fleet_t *f, dc_fleet_entry_t *e) {
  f->seq++;
  e->slot = NULL;
  e->last_seen_ms = dc_wall_ms();
  gone_push(f, e);
}

void dc_broker_fleet_conn_closed(dc_broker_t *b, void *entry) {
  mark_gone(&b->fleet, entry);
  dc_broker_fleet_moved(b);
}

void dc_broker_fleet_served(void **slot, int64_t version) {
  if (slot && *slot)
    ((dc_fleet_entry_t *)*slot)->served_version = version;
}

/* ---- ClientReport -------------------------------------------------------- */

/* Bounds on what one report stores (it is kept per entry). */
#define ID_MAX 64
#define SOFTWARE_MAX 128
#define REASON_MAX 2048

static bool field_ok(const char *what, const char *s, size_t max, bool empty,
                     char *why, size_t why_size) {
  size_t n = s ? strlen(s) : 0;
  if (n <= max && (empty || n))
    return true;
  snprintf(why, why_size, "%s %s (at most %zu bytes)", what,
           n ? "is too long" : "is empty", max);
  return false;
}

static bool report_ok(const dc_client_report_req_t *q, char *why,
                      size_t why_size) {
  if (!field_ok("instance_id", q->instance_id, ID_MAX, false, why, why_size) ||
      !field_ok("kind", q->kind, ID_MAX, false, why, why_size) ||
      !field_ok("software_name", q->software_name, SOFTWARE_MAX, true, why,
                why_size) ||
      !field_ok("software_version", q->software_version, SOFTWARE_MAX, true,
                why, why_size) ||
      !field_ok("client_library", q->client_library, SOFTWARE_MAX, true, why,
                why_size) ||
      !field_ok("reason", q->reason, REASON_MAX, true, why, why_size))
    return false;
  if (q->outcome < DC_OUTCOME_APPLIED || q->outcome > DC_OUTCOME_REJECTED) {
    snprintf(why, why_size, "outcome %d is none of applied (0), applied "
             "partly (1), rejected (2)", q->outcome);
    return false;
  }
  return true;
}

/* *dst becomes a copy of a, or of "a SEP b" when sep and both are set. */
static int set_str(char **dst, const char *a, const char *sep, const char *b) {
  a = a ? a : "";
  bool join = sep && *a && b && *b;
  size_t n = strlen(a) + (join ? strlen(sep) + strlen(b) : 0) + 1;
  char *d = malloc(n);
  if (!d)
    return -1;
  snprintf(d, n, "%s%s%s", a, join ? sep : "", join ? b : "");
  free(*dst);
  *dst = d;
  return 0;
}

/* The entry of q's instance, made when new (may drop the oldest gone). */
static dc_fleet_entry_t *entry_for(dc_fleet_t *f, const char *id,
                                   int64_t now, bool *full) {
  dc_fleet_entry_t *e = find(f, id);
  if (e)
    return e;
  expire(f, now, true);
  if ((*full = f->n >= DC_FLEET_MAX_CLIENTS))
    return NULL;
  if (grow(f) || !(e = calloc(1, sizeof(*e))) ||
      !(e->instance_id = strdup(id))) {
    free(e);
    return NULL;
  }
  e->first_seen_ms = now;
  e->served_version = e->reported_version = -1;
  e->outcome = DC_OUTCOME_NONE;
  dc_fleet_entry_t **b = bucket(f, id);
  e->hnext = *b;
  *b = e;
  f->n++;
  return e;
}

/* The connection holds e from now on (and nothing else). */
static void attach(dc_fleet_t *f, dc_fleet_entry_t *e, void **slot) {
  if (*slot && *slot != e) /* it reported as another instance before */
    mark_gone(f, *slot);
  if (e->slot && e->slot != slot)
    *e->slot = NULL; /* the instance came back on a new connection */
  gone_unlink(f, e);
  e->slot = slot;
  *slot = e;
}

/* The version a report of -1 means: what this connection was served last,
 * else what resolves now. */
static int64_t report_version(dc_broker_t *b, const dc_client_report_req_t *q,
                              const dc_fleet_entry_t *e, const char *principal,
                              bool same_conn) {
  if (q->version >= 0)
    return q->version;
  if (same_conn && e->served_version >= 0)
    return e->served_version;
  return dc_broker_config_version(b, q->client_id, principal);
}

/* 0, a negative dc_err_t, or 1 with why when the set is full. */
static int record(dc_req_t *r, const dc_client_report_req_t *q, char *why,
                  size_t why_size) {
  dc_fleet_t *f = &r->b->fleet;
  int64_t now = dc_wall_ms();
  bool full = false;
  dc_fleet_entry_t *e = entry_for(f, q->instance_id, now, &full);
  if (full) {
    snprintf(why, why_size, "dynconfd keeps at most %d clients in its fleet "
             "and all are connected", DC_FLEET_MAX_CLIENTS);
    return 1;
  }
  if (!e)
    return DC_ERR__NOMEM;
  bool same_conn = e->slot == r->conn->fleet;
  const char *principal = r->conn->principal ? r->conn->principal
                                             : "User:ANONYMOUS";
  e->reported_version = report_version(r->b, q, e, principal, same_conn);
  if (e->served_version < 0 || !same_conn)
    e->served_version = e->reported_version;
  if (set_str(&e->client_id, q->client_id, NULL, NULL) ||
      set_str(&e->principal, principal, NULL, NULL) ||
      set_str(&e->peer, r->conn->peer, NULL, NULL) ||
      set_str(&e->listener, r->conn->listener, NULL, NULL) ||
      set_str(&e->agent_software, q->software_name, "/",
              q->software_version) ||
      set_str(&e->app_software, q->client_library, NULL, NULL) ||
      set_str(&e->kind, q->kind, NULL, NULL) ||
      set_str(&e->reason, q->reason ? q->reason : "", NULL, NULL))
    return DC_ERR__NOMEM;
  e->generation = q->generation;
  e->outcome = q->outcome;
  e->last_seen_ms = now;
  attach(f, e, r->conn->fleet);
  return 0;
}

int dc_handle_client_report(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_client_report_req_t q;
  if (dc_client_report_req_decode(r->rd, v, &q))
    return r->rd->err;
  dc_client_report_resp_t resp = {0};
  char why[512];
  dc_scope_ent_t ent;
  if (dc_scope_ent_init(&ent, DC_RES_CLIENT, q.client_id, why, sizeof(why)) ||
      !report_ok(&q, why, sizeof(why)) || !r->conn->fleet) {
    resp.error_code = DC_ERR_INVALID_REQUEST;
    if (!r->conn->fleet)
      snprintf(why, sizeof(why), "reports are taken on client connections");
  } else if (!dc_broker_authorized(r, DC_ACL_DESCRIBE, DC_RES_CLIENT,
                                   q.client_id, why, sizeof(why))) {
    resp.error_code = DC_ERR_CLUSTER_AUTHORIZATION_FAILED;
  } else {
    int rc = record(r, &q, why, sizeof(why));
    if (rc < 0)
      return rc;
    if (rc)
      resp.error_code = DC_ERR_POLICY_VIOLATION;
    else
      dc_broker_fleet_moved(r->b);
  }
  if (resp.error_code) {
    r->error = resp.error_code;
    resp.error_message = dc_arena_strdup(r->arena, why);
  }
  return dc_client_report_resp_encode(r->out, v, &resp);
}

/* ---- DescribeFleet --------------------------------------------------------- */

static int8_t state_of(const dc_fleet_entry_t *e, int64_t current) {
  if (!e->slot || e->outcome == DC_OUTCOME_NONE)
    return DC_FLEET_SILENT;
  if (e->reported_version != current)
    return DC_FLEET_BEHIND;
  return e->outcome == DC_OUTCOME_REJECTED ? DC_FLEET_REJECTED
                                           : DC_FLEET_UP_TO_DATE;
}

void dc_broker_fleet_counts(dc_broker_t *b, uint64_t counts[4]) {
  dc_fleet_t *f = &b->fleet;
  dc_broker_fleet_expire(b);
  memset(counts, 0, 4 * sizeof(*counts));
  dc_resolved_memo_t memo; /* agents sharing a configuration: one resolve */
  dc_resolved_memo_init(&memo, b->db, 0);
  for (size_t i = 0; i < f->n_buckets; i++)
    for (dc_fleet_entry_t *e = f->buckets[i]; e; e = e->hnext)
      if (e->client_id)
        counts[state_of(e, dc_resolved_memo_version(&memo, e->client_id,
                                                    e->principal))]++;
  dc_resolved_memo_free(&memo);
}

/* "User:NAME" is the filter's user NAME. */
static bool user_matches(const char *principal, const char *user) {
  return !strncmp(principal, "User:", 5) && !strcmp(principal + 5, user);
}

static bool wanted(dc_req_t *r, const dc_describe_fleet_req_t *q,
                   const dc_fleet_entry_t *e) {
  char why[256];
  return e->client_id && (!q->client_id || !strcmp(e->client_id, q->client_id)) &&
         (!q->user || user_matches(e->principal, q->user)) &&
         dc_broker_authorized(r, DC_ACL_DESCRIBE, DC_RES_CLIENT, e->client_id,
                              why, sizeof(why));
}

static void fill(dc_resolved_memo_t *memo, const dc_fleet_entry_t *e,
                 dc_fleet_client_t *c) {
  *c = (dc_fleet_client_t){
      .instance_id = e->instance_id, .client_id = e->client_id,
      .principal = e->principal, .peer = e->peer, .listener = e->listener,
      .agent_software = e->agent_software, .app_software = e->app_software,
      .kind = e->kind, .first_seen_ms = e->first_seen_ms,
      .last_seen_ms = e->last_seen_ms, /* its last report, or its close */
      .connected = e->slot != NULL, .served_version = e->served_version,
      .reported_version = e->reported_version, .generation = e->generation,
      .outcome = e->outcome, .reason = *e->reason ? e->reason : NULL};
  c->current_version =
      dc_resolved_memo_version(memo, e->client_id, e->principal);
  c->state = state_of(e, c->current_version);
}

static int cmp_ids(const char *ca, const char *ia, const char *cb,
                   const char *ib) {
  int c = strcmp(ca ? ca : "", cb ? cb : "");
  return c ? c : strcmp(ia ? ia : "", ib ? ib : "");
}

static int cmp_client(const void *a, const void *b) {
  const dc_fleet_client_t *x = a, *y = b;
  return cmp_ids(x->client_id, x->instance_id, y->client_id, y->instance_id);
}

/* The first of the sorted v[n] past q's cursor. */
static int32_t page_start(const dc_fleet_client_t *v, int32_t n,
                          const dc_describe_fleet_req_t *q) {
  if (!q->after_client_id && !q->after_instance_id)
    return 0;
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (cmp_ids(v[mid].client_id, v[mid].instance_id, q->after_client_id,
                q->after_instance_id) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Bytes of a response body besides its clients: throttle, error code,
 * a null message, seq, more, the array's length, tags. */
#define PAGE_OVERHEAD 32

/* How many of v[n] make one page: at most max (0 = no count), and no more
 * than fit in budget bytes once encoded. */
static int32_t page_length(const dc_fleet_client_t *v, int32_t n,
                           int32_t max, size_t budget) {
  dc_buf_t one;
  dc_buf_init(&one);
  size_t used = 0;
  int32_t k = 0;
  for (; k < n && (!max || k < max); k++) {
    dc_buf_clear(&one);
    dc_fleet_client_encode(&one, &v[k]);
    if (one.err || used + one.len > budget)
      break;
    used += one.len;
  }
  dc_buf_free(&one);
  return k;
}

/* The wanted clients, sorted, into resp (arena). */
static int list_wanted(dc_req_t *r, const dc_describe_fleet_req_t *q,
                       dc_describe_fleet_resp_t *resp) {
  dc_fleet_t *f = &r->b->fleet;
  resp->clients = dc_arena_alloc(r->arena, (f->n ? f->n : 1) *
                                               sizeof(*resp->clients));
  if (!resp->clients)
    return DC_ERR__NOMEM;
  dc_resolved_memo_t memo;
  dc_resolved_memo_init(&memo, r->b->db, 0);
  for (size_t i = 0; i < f->n_buckets; i++)
    for (dc_fleet_entry_t *e = f->buckets[i]; e; e = e->hnext)
      if (wanted(r, q, e))
        fill(&memo, e, &resp->clients[resp->n_clients++]);
  dc_resolved_memo_free(&memo);
  qsort(resp->clients, (size_t)resp->n_clients, sizeof(*resp->clients),
        cmp_client);
  return 0;
}

/* An answer that names what is wrong instead of the clients. */
static int refuse(dc_req_t *r, const char *msg) {
  dc_describe_fleet_resp_t small = {
      .error_code = DC_ERR_INVALID_REQUEST,
      .error_message = dc_arena_strdup(r->arena, msg),
      .fleet_seq = r->b->fleet.seq};
  r->error = small.error_code;
  return dc_describe_fleet_resp_encode(r->out, r->hdr->api_version, &small);
}

int dc_broker_fleet_answer(dc_req_t *r, const dc_describe_fleet_req_t *q) {
  int16_t v = r->hdr->api_version;
  size_t max = r->b->opts.max_response_size;
  char msg[200];
  if (q->max_clients < 0)
    return refuse(r, "max_clients is negative");
  dc_describe_fleet_resp_t resp = {0};
  int err = list_wanted(r, q, &resp);
  if (err)
    return err;
  resp.fleet_seq = r->b->fleet.seq;
  if (v >= 1) { /* one page: past the cursor, as many as asked and fit */
    int32_t from = page_start(resp.clients, resp.n_clients, q);
    size_t budget = max ? (max > PAGE_OVERHEAD ? max - PAGE_OVERHEAD : 0)
                        : SIZE_MAX;
    int32_t k = page_length(resp.clients + from, resp.n_clients - from,
                            q->max_clients, budget);
    if (!k && from < resp.n_clients) {
      snprintf(msg, sizeof(msg), "client '%.64s' alone would take the "
               "answer past %zu bytes (max.response.bytes)",
               resp.clients[from].instance_id, max);
      return refuse(r, msg);
    }
    resp.more = from + k < resp.n_clients;
    resp.clients += from;
    resp.n_clients = k;
  }
  size_t start = r->out->len;
  err = dc_describe_fleet_resp_encode(r->out, v, &resp);
  if (err || !max || r->out->len - start <= max)
    return err;
  r->out->len = start;
  snprintf(msg, sizeof(msg), "the %d clients would take the answer past %zu "
           "bytes (max.response.bytes); ask for one client-id or user",
           (int)resp.n_clients, max);
  return refuse(r, msg);
}

int dc_handle_describe_fleet(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_describe_fleet_req_t q;
  if (dc_describe_fleet_req_decode(r->rd, v, &q))
    return r->rd->err;
  dc_fleet_t *f = &r->b->fleet;
  dc_broker_fleet_expire(r->b);
  if (v >= 1 && q.since_seq == f->seq && q.timeout_ms > 0 &&
      q.max_clients >= 0 && r->conn->pending)
    return dc_broker_fleet_park(r, &q);
  return dc_broker_fleet_answer(r, &q);
}
