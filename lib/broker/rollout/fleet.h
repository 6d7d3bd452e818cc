/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fleet view's set of agent instances (fleet_set.c), which fleet.c
 * (ClientReport, DescribeFleet) and fleet_wait.c (parked DescribeFleet)
 * work on. An entry is found by its instance id through a hash keyed
 * with the process's SipHash key (instance ids are the agents' choice),
 * and listed in order through two AVL trees: by (client-id, instance id),
 * the listing's order, and by (principal, client-id, instance id) for a
 * listing of one user. A tree node's weight is the entry's size as one
 * client of a DescribeFleet answer, so the size of any range of a listing
 * is known before anything is encoded.
 *
 * Bounds: at most DC_FLEET_MAX_CLIENTS entries and max_bytes bytes (as
 * entry_bytes counts them); gone entries make room, the longest gone
 * first.
 *
 * Every entry is counted in one DC_FLEET_* state (counts), so /metrics
 * reads them in O(1): the set counts an entry silent when it is made or
 * goes, and uncounts it when dropped; the broker judges it against the
 * version that resolves for it whenever a report changes it, and judges
 * every entry again once the configuration has changed (fleet.c).
 *
 * Threads: loop thread only.
 */
#ifndef DC_BROKER_FLEET_H
#define DC_BROKER_FLEET_H
#include "broker/config/resolved.h"
#include "codec/proto.h"
#include "common/avl.h"
#include "common/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most agent instances kept; gone ones make room, oldest first. */
#define DC_FLEET_MAX_CLIENTS 100000

typedef struct dc_fleet_entry {
  char *instance_id, *client_id, *principal, *peer, *listener;
  char *agent_software, *app_software, *kind, *reason; /* reason "" = none */
  int64_t first_seen_ms, last_seen_ms; /* wall clock */
  int64_t served_version, reported_version, generation;
  int8_t outcome;
  int8_t state;     /* the DC_FLEET_* state counts holds it in */
  void **slot;      /* the holding connection's slot; NULL = gone */
  size_t mem;       /* what it holds, as fleet.max.bytes counts it */
  struct dc_fleet_entry *hnext;         /* hash chain */
  struct dc_fleet_entry *gprev, *gnext; /* the gone list, oldest first */
  dc_avl_node_t by_client, by_user;     /* weight: its size as listed */
} dc_fleet_entry_t;

typedef struct dc_fleet {
  dc_fleet_entry_t **buckets; /* owned, with the entries */
  size_t n_buckets, n;
  dc_fleet_entry_t *gone_head, *gone_tail; /* connection closed, by age */
  dc_avl_t by_client, by_user;
  size_t bytes, max_bytes; /* entry_bytes over the entries, and its bound */
  int64_t retention_ms;    /* how long gone ones stay */
  /* Moves whenever a listing could differ: a report, a connection let
   * go, an entry dropped, the configuration changed (not an answer
   * served alone). It starts at the wall clock in ms, so a restarted
   * server does not meet a waiter's old number again. */
  int64_t seq;
  /* Entries by DC_FLEET_* state, as last judged; right while the
   * configuration's generation is counts_gen (and counts_ok). */
  uint64_t counts[DC_FLEET_N_STATES];
  uint64_t counts_gen;
  bool counts_ok;
  /* The versions reports were judged against (the broker's; it forgets
   * them when the configuration changes): a report resolves a
   * configuration new since then, and looks up the others. */
  dc_resolved_memo_t memo;
  dc_buf_t scratch; /* an entry encoded, to learn its size */
  /* Refused reports of another principal's instance id: when one was
   * last logged (monotonic ms), and how many since went unlogged. */
  int64_t hijack_logged_ms;
  uint64_t hijack_unlogged;
  /* Work done, for tests and benches: entries compared by lookups,
   * entries answers looked at, answers built, entries judged against a
   * resolved version for counts. */
  uint64_t probes, examined, listings, judged;
} dc_fleet_t;

/* The report's new values for an entry (borrowed strings). */
typedef struct dc_fleet_fields {
  const char *client_id, *principal, *peer, *listener;
  const char *software_name, *software_version, *app_software, *kind;
  const char *reason; /* NULL = none */
} dc_fleet_fields_t;

void dc_fleet_init(dc_fleet_t *f, int64_t retention_ms, size_t max_bytes);
void dc_fleet_free(dc_fleet_t *f);
dc_fleet_entry_t *dc_fleet_find(dc_fleet_t *f, const char *instance_id);
/* What an entry with these fields would hold (fleet.max.bytes counts
 * it). */
size_t dc_fleet_entry_bytes(const char *instance_id,
                            const dc_fleet_fields_t *fs);
/* Drops the gone entries past the retention at now (wall ms); true when
 * any went. */
bool dc_fleet_expire(dc_fleet_t *f, int64_t now);
/* Drops gone entries, the longest gone first and never keep, until one
 * more entry (more_entries) of grow more bytes fits; false when it does
 * not even then. */
bool dc_fleet_make_room(dc_fleet_t *f, bool more_entries, size_t grow,
                        const dc_fleet_entry_t *keep);
/* e (NULL: a new entry for instance_id, first seen now, added) with fs's
 * values; NULL without memory (then e is unchanged). Bounds are the
 * caller's to check first (dc_fleet_make_room). */
dc_fleet_entry_t *dc_fleet_put(dc_fleet_t *f, dc_fleet_entry_t *e,
                               const char *instance_id,
                               const dc_fleet_fields_t *fs, int64_t now);
void dc_fleet_drop(dc_fleet_t *f, dc_fleet_entry_t *e);
/* e's connection let go of it: gone (and silent) from now on. */
void dc_fleet_mark_gone(dc_fleet_t *f, dc_fleet_entry_t *e, int64_t now);
/* The connection with slot holds e from now on (and nothing else). The
 * caller judges e again (dc_fleet_count) once its report is in. */
void dc_fleet_attach(dc_fleet_t *f, dc_fleet_entry_t *e, void **slot,
                     int64_t now);
/* Whether e's state depends on the version that resolves for it: it is
 * connected and has reported. */
bool dc_fleet_live(const dc_fleet_entry_t *e);
/* e's state against current, the version that resolves for it now
 * (unread unless dc_fleet_live(e)). */
int8_t dc_fleet_state(const dc_fleet_entry_t *e, int64_t current);
/* counts holds e in state from now on. */
void dc_fleet_count(dc_fleet_t *f, dc_fleet_entry_t *e, int8_t state);
/* e as one client of an answer, without current_version and state. */
void dc_fleet_fill(const dc_fleet_entry_t *e, dc_fleet_client_t *c);
/* The entry a tree node belongs to. */
dc_fleet_entry_t *dc_fleet_entry_of(const dc_avl_node_t *n, bool by_user);

/* A place in one of the trees: before (or after) every entry whose key
 * starts with parts[0..n-1] (by_client: client-id, instance id; by_user:
 * principal, client-id, instance id). */
typedef struct dc_fleet_pos {
  const char *parts[3];
  int n;
  bool after;
} dc_fleet_pos_t;
/* The first entry after pos in the tree, or NULL. */
dc_avl_node_t *dc_fleet_seek(const dc_fleet_t *f, bool by_user,
                             const dc_fleet_pos_t *pos);
/* Whether node lies after pos. */
bool dc_fleet_past(bool by_user, const dc_fleet_pos_t *pos,
                   const dc_avl_node_t *node);
/* How many entries lie between lo and hi in the tree, and their size as
 * listed. */
size_t dc_fleet_range(const dc_fleet_t *f, bool by_user,
                      const dc_fleet_pos_t *lo, const dc_fleet_pos_t *hi,
                      uint64_t *bytes);
/* The longest hash chain (a walk over the buckets: tests and benches). */
size_t dc_fleet_longest_chain(const dc_fleet_t *f);
#endif
