/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fleet: every agent instance that reported to this server with
 * ClientReport (dynconf's API 20002), what it runs and what it did with
 * which configuration version; DescribeFleet (API 20003) lists them with
 * their rollout state against the version that resolves for each now.
 *
 * An entry is keyed by the agent's instance id, so an agent that
 * reconnects stays one entry; the id belongs to the principal that first
 * reported it, for as long as its entry is kept: a report of it by
 * another principal is refused and logged, the entry unchanged. While a
 * connection holds an entry, the connection's slot (dc_conn_info_t.fleet)
 * points at it and the entry remembers the slot, so either side can let
 * go of the other. An entry whose connection closed is "gone": kept for
 * fleet.retention.ms, the longest gone first out when the set is full
 * (DC_FLEET_MAX_CLIENTS entries, or fleet.max.bytes). Connected entries
 * are bounded by the connections, so the set never drops one.
 *
 * An answer is one walk of the ordered set (fleet_list.c).
 *
 * The agents per state (/metrics) are counted as they change, not on
 * each scrape (the metrics port is open to anyone): a report judges its
 * entry against the version that resolves for it (one lookup in a memo
 * kept until the configuration changes); going and being dropped need
 * none. A configuration change may move any entry, so the next scrape
 * after one judges them all again (each distinct principal and client-id
 * looked up once, each configuration resolved once): O(n) once per
 * change, O(1) per scrape otherwise.
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

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANONYMOUS "User:ANONYMOUS"

/* ---- the set as the broker keeps it --------------------------------------- */

void dc_broker_fleet_gone(dc_broker_t *b, void *entry) {
  dc_fleet_mark_gone(b->fleet, entry, dc_wall_ms());
  dc_broker_fleet_moved(b);
}

void dc_broker_fleet_served(void **slot, int64_t version) {
  if (slot && *slot)
    ((dc_fleet_entry_t *)*slot)->served_version = version;
}

void dc_broker_fleet_stats(dc_broker_t *b, dc_fleet_stats_t *out) {
  const dc_fleet_t *f = b->fleet;
  *out = (dc_fleet_stats_t){.entries = f->n,
                            .bytes = f->bytes,
                            .longest_chain = dc_fleet_longest_chain(f),
                            .probes = f->probes,
                            .examined = f->examined,
                            .listings = f->listings,
                            .waits = b->n_fleet_waits};
}

/* ---- the counts by state --------------------------------------------------- */

/* The version that resolves for client_id and principal now, through
 * the fleet's memo; -1 for a client-id no entity may have. */
static int64_t current_version(dc_broker_t *b, const char *client_id,
                               const char *principal) {
  dc_fleet_t *f = b->fleet;
  if (!f->memo.db)
    dc_resolved_memo_init(&f->memo, b->db, 0);
  return dc_resolved_memo_version(&f->memo, client_id, principal);
}

/* The counts are right at the configuration now. */
static void counts_fresh(dc_broker_t *b) {
  b->fleet->counts_gen = dc_configdb_generation(b->db);
  b->fleet->counts_ok = true;
}

/* Judges every entry again against the configuration now. In the
 * by-user order an agent's (principal, client-id) is its neighbour's
 * more often than not; other repeats meet in the memo. */
static void judge_all(dc_broker_t *b) {
  dc_fleet_t *f = b->fleet;
  const dc_fleet_entry_t *last = NULL; /* the last one resolved */
  int64_t current = -1;
  for (dc_avl_node_t *n = dc_avl_first(&f->by_user); n; n = dc_avl_next(n)) {
    dc_fleet_entry_t *e = dc_fleet_entry_of(n, true);
    if (dc_fleet_live(e)) {
      if (!last || strcmp(last->client_id, e->client_id) ||
          strcmp(last->principal, e->principal))
        current = current_version(b, e->client_id, e->principal);
      last = e;
      f->judged++;
    }
    dc_fleet_count(f, e, dc_fleet_state(e, current));
  }
}

void dc_broker_fleet_counts(dc_broker_t *b,
                            uint64_t counts[DC_FLEET_N_STATES]) {
  dc_fleet_t *f = b->fleet;
  dc_broker_fleet_expire(b);
  uint64_t gen = dc_configdb_generation(b->db);
  if (f->n && (!f->counts_ok || f->counts_gen != gen))
    judge_all(b);
  counts_fresh(b);
  memcpy(counts, f->counts, sizeof(f->counts));
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
  if (q->outcome < DC_OUTCOME_APPLIED || q->outcome > DC_OUTCOME_RESTART) {
    snprintf(why, why_size, "outcome %d is none of applied (0), applied "
             "partly (1), rejected (2), restart needed (3)", q->outcome);
    return false;
  }
  return true;
}

/* The version a report of -1 means: what this connection was served last,
 * else current, what resolves now. */
static int64_t report_version(const dc_client_report_req_t *q,
                              const dc_fleet_entry_t *e, int64_t current,
                              bool same_conn) {
  if (q->version >= 0)
    return q->version;
  if (same_conn && e->served_version >= 0)
    return e->served_version;
  return current;
}

/* Another principal reported e's instance id: refused, and logged at most
 * once a second (with how many went unlogged), so refusals cannot flood
 * the log. */
static int refuse_hijack(dc_req_t *r, const dc_fleet_entry_t *e,
                         const char *principal, char *why, size_t why_size) {
  dc_fleet_t *f = r->b->fleet;
  int64_t now = dc_mono_ms();
  if (now - f->hijack_logged_ms >= 1000) {
    char more[64] = "";
    if (f->hijack_unlogged)
      snprintf(more, sizeof(more), " (and %llu more since the last such "
               "line)", (unsigned long long)f->hijack_unlogged);
    dc_log(DC_LOG_WARN, "ClientReport from %s at %s refused: instance_id "
           "'%s' belongs to %s, which reported it first%s", principal,
           r->conn->peer ? r->conn->peer : "?", e->instance_id, e->principal,
           more);
    f->hijack_logged_ms = now;
    f->hijack_unlogged = 0;
  } else {
    f->hijack_unlogged++;
  }
  snprintf(why, why_size, "instance_id '%s' belongs to another principal, "
           "which reported it first; it is free again once that entry "
           "leaves the fleet (fleet.retention.ms after its connection "
           "closes)", e->instance_id);
  return DC_ERR_CLUSTER_AUTHORIZATION_FAILED;
}

/* The fleet is full of connected clients: which bound, in words. */
static int refuse_full(const dc_fleet_t *f, bool more_entries, size_t need,
                       char *why, size_t why_size) {
  if (more_entries && f->n >= DC_FLEET_MAX_CLIENTS)
    snprintf(why, why_size, "dynconfd keeps at most %d clients in its fleet "
             "and all are connected", DC_FLEET_MAX_CLIENTS);
  else
    snprintf(why, why_size, "the fleet holds %zu bytes of at most %zu "
             "(fleet.max.bytes), all of connected clients, and this report "
             "needs %zu more", f->bytes, f->max_bytes, need);
  return DC_ERR_POLICY_VIOLATION;
}

/* 0, a negative dc_err_t, or a Kafka error code with why. */
static int record(dc_req_t *r, const dc_client_report_req_t *q, char *why,
                  size_t why_size) {
  dc_fleet_t *f = r->b->fleet;
  int64_t now = dc_wall_ms();
  const char *principal = r->conn->principal ? r->conn->principal : ANONYMOUS;
  dc_fleet_entry_t *e = dc_fleet_find(f, q->instance_id);
  if (e && strcmp(e->principal, principal))
    return refuse_hijack(r, e, principal, why, why_size);
  dc_fleet_fields_t fs = {q->client_id,        principal,
                          r->conn->peer,       r->conn->listener,
                          q->software_name,    q->software_version,
                          q->client_library,   q->kind,
                          q->reason};
  size_t need = dc_fleet_entry_bytes(q->instance_id, &fs),
         have = e ? e->mem : 0, grow = need > have ? need - have : 0;
  if (!dc_fleet_make_room(f, !e, grow, e))
    return refuse_full(f, !e, grow, why, why_size);
  if (!f->n) /* an empty fleet's counts are right at any configuration */
    counts_fresh(r->b);
  bool same_conn = e && e->slot == r->conn->fleet;
  int64_t current = current_version(r->b, q->client_id, principal);
  int64_t reported = report_version(q, e, current, same_conn);
  if (!(e = dc_fleet_put(f, e, q->instance_id, &fs, now)))
    return DC_ERR__NOMEM;
  e->reported_version = reported;
  if (e->served_version < 0 || !same_conn)
    e->served_version = reported;
  e->generation = q->generation;
  e->outcome = q->outcome;
  e->last_seen_ms = now;
  dc_fleet_attach(f, e, r->conn->fleet, now);
  f->judged++;
  dc_fleet_count(f, e, dc_fleet_state(e, current));
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
    dc_broker_fleet_expire(r->b); /* an id past its retention is free */
    int64_t seq = r->b->fleet->seq;
    int rc = record(r, &q, why, sizeof(why));
    if (rc < 0)
      return rc;
    resp.error_code = (int16_t)rc;
    if (!rc || r->b->fleet->seq != seq) /* taken, or made room */
      dc_broker_fleet_moved(r->b);
  }
  if (resp.error_code) {
    r->error = resp.error_code;
    resp.error_message = dc_arena_strdup(r->arena, why);
  }
  return dc_client_report_resp_encode(r->out, v, &resp);
}

/* ---- DescribeFleet --------------------------------------------------------- */

int dc_handle_describe_fleet(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_describe_fleet_req_t q;
  if (dc_describe_fleet_req_decode(r->rd, v, &q))
    return r->rd->err;
  dc_fleet_t *f = r->b->fleet;
  dc_broker_fleet_expire(r->b);
  if (v >= 1 && q.since_seq == f->seq && q.timeout_ms > 0 &&
      q.max_clients >= 0 && r->conn->pending) {
    char why[300];
    if (!dc_broker_fleet_may_park(r, why, sizeof(why)))
      return dc_broker_fleet_refuse(r, DC_ERR_POLICY_VIOLATION, why);
    return dc_broker_fleet_park(r, &q);
  }
  return dc_broker_fleet_answer(r, &q, NULL);
}
