/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fleet's set (fleet.h): the hash by instance id, the gone list, the
 * two ordered trees and the byte count, kept in step. Every change is
 * O(log n) (a tree insert or remove, a chain of expected O(1) length).
 *
 * Threads: loop thread only.
 */
#include "broker/rollout/fleet.h"
#include "common/clock.h"
#include "common/siphash.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* malloc's header and rounding, about, per string an entry holds. */
#define ALLOC_OVERHEAD 16
#define N_STRINGS 9

/* ---- the trees ------------------------------------------------------------ */

dc_fleet_entry_t *dc_fleet_entry_of(const dc_avl_node_t *n, bool by_user) {
  size_t off = by_user ? offsetof(dc_fleet_entry_t, by_user)
                       : offsetof(dc_fleet_entry_t, by_client);
  return (dc_fleet_entry_t *)((char *)n - off);
}

/* Part i of e's key in the tree. */
static const char *part(const dc_fleet_entry_t *e, bool by_user, int i) {
  if (by_user)
    return i == 0 ? e->principal : i == 1 ? e->client_id : e->instance_id;
  return i == 0 ? e->client_id : e->instance_id;
}

static int cmp_entries(const dc_avl_node_t *a, const dc_avl_node_t *b,
                       bool by_user) {
  const dc_fleet_entry_t *x = dc_fleet_entry_of(a, by_user),
                         *y = dc_fleet_entry_of(b, by_user);
  for (int i = 0; i < (by_user ? 3 : 2); i++) {
    int c = strcmp(part(x, by_user, i), part(y, by_user, i));
    if (c)
      return c;
  }
  return 0;
}

static int cmp_client(const dc_avl_node_t *a, const dc_avl_node_t *b) {
  return cmp_entries(a, b, false);
}

static int cmp_user(const dc_avl_node_t *a, const dc_avl_node_t *b) {
  return cmp_entries(a, b, true);
}

/* Where pos lies against node: before (< 0) or after (> 0). A NULL part
 * is "", as a cursor without it means. */
static int pos_vs(const dc_fleet_pos_t *pos, const dc_avl_node_t *node,
                  bool by_user) {
  const dc_fleet_entry_t *e = dc_fleet_entry_of(node, by_user);
  for (int i = 0; i < pos->n; i++) {
    int c = strcmp(pos->parts[i] ? pos->parts[i] : "", part(e, by_user, i));
    if (c)
      return c < 0 ? -1 : 1;
  }
  return pos->after ? 1 : -1;
}

static int key_client(const void *key, const dc_avl_node_t *n) {
  return pos_vs(key, n, false);
}

static int key_user(const void *key, const dc_avl_node_t *n) {
  return pos_vs(key, n, true);
}

dc_avl_node_t *dc_fleet_seek(const dc_fleet_t *f, bool by_user,
                             const dc_fleet_pos_t *pos) {
  return by_user ? dc_avl_seek(&f->by_user, key_user, pos)
                 : dc_avl_seek(&f->by_client, key_client, pos);
}

bool dc_fleet_past(bool by_user, const dc_fleet_pos_t *pos,
                   const dc_avl_node_t *node) {
  return pos_vs(pos, node, by_user) < 0;
}

size_t dc_fleet_range(const dc_fleet_t *f, bool by_user,
                      const dc_fleet_pos_t *lo, const dc_fleet_pos_t *hi,
                      uint64_t *bytes) {
  const dc_avl_t *t = by_user ? &f->by_user : &f->by_client;
  dc_avl_key_fn *kf = by_user ? key_user : key_client;
  size_t n_lo = 0, n_hi = 0;
  uint64_t b_lo = lo ? dc_avl_sum_before(t, kf, lo, &n_lo) : 0;
  uint64_t b_hi = hi ? dc_avl_sum_before(t, kf, hi, &n_hi)
                     : dc_avl_sum(t);
  if (!hi)
    n_hi = t->n;
  *bytes = b_hi - b_lo;
  return n_hi - n_lo;
}

static void index_add(dc_fleet_t *f, dc_fleet_entry_t *e) {
  dc_avl_insert(&f->by_client, &e->by_client);
  dc_avl_insert(&f->by_user, &e->by_user);
}

static void index_remove(dc_fleet_t *f, dc_fleet_entry_t *e) {
  dc_avl_remove(&f->by_client, &e->by_client);
  dc_avl_remove(&f->by_user, &e->by_user);
}

/* ---- entries ---------------------------------------------------------------- */

void dc_fleet_fill(const dc_fleet_entry_t *e, dc_fleet_client_t *c) {
  *c = (dc_fleet_client_t){
      .instance_id = e->instance_id, .client_id = e->client_id,
      .principal = e->principal, .peer = e->peer, .listener = e->listener,
      .agent_software = e->agent_software, .app_software = e->app_software,
      .kind = e->kind, .first_seen_ms = e->first_seen_ms,
      .last_seen_ms = e->last_seen_ms, /* its last report, or its close */
      .connected = e->slot != NULL, .served_version = e->served_version,
      .reported_version = e->reported_version, .generation = e->generation,
      .outcome = e->outcome, .reason = *e->reason ? e->reason : NULL};
}

/* e's size as one client of an answer (its strings decide it). */
static size_t listed_size(dc_fleet_t *f, const dc_fleet_entry_t *e) {
  dc_fleet_client_t c;
  dc_fleet_fill(e, &c);
  dc_buf_clear(&f->scratch);
  dc_fleet_client_encode(&f->scratch, &c);
  if (!f->scratch.err)
    return f->scratch.len;
  size_t n = 64; /* no memory to encode: a bound instead */
  const char *s[] = {e->instance_id, e->client_id,      e->principal,
                     e->peer,        e->listener,       e->agent_software,
                     e->app_software, e->kind,          e->reason};
  for (int i = 0; i < N_STRINGS; i++)
    n += strlen(s[i]) + 5;
  return n;
}

/* Where e keeps its strings, in the order of new_strings(). */
static void strings(dc_fleet_entry_t *e, char **s[N_STRINGS]) {
  char **all[N_STRINGS] = {&e->instance_id,  &e->client_id, &e->principal,
                           &e->peer,         &e->listener,  &e->agent_software,
                           &e->app_software, &e->kind,      &e->reason};
  memcpy(s, all, sizeof(all));
}

static void entry_free(dc_fleet_entry_t *e) {
  char **s[N_STRINGS];
  strings(e, s);
  for (int i = 0; i < N_STRINGS; i++)
    free(*s[i]);
  if (e->slot)
    *e->slot = NULL;
  free(e);
}

/* "name/version" when both are set, else name (as agents have sent). */
static size_t software_len(const dc_fleet_fields_t *fs) {
  size_t n = fs->software_name ? strlen(fs->software_name) : 0;
  bool join = n && fs->software_version && *fs->software_version;
  return n + (join ? 1 + strlen(fs->software_version) : 0);
}

static size_t cost(const char *s) {
  return (s ? strlen(s) : 0) + 1 + ALLOC_OVERHEAD;
}

size_t dc_fleet_entry_bytes(const char *instance_id,
                            const dc_fleet_fields_t *fs) {
  return sizeof(dc_fleet_entry_t) + sizeof(dc_fleet_entry_t *) +
         cost(instance_id) + cost(fs->client_id) + cost(fs->principal) +
         cost(fs->peer) + cost(fs->listener) + software_len(fs) + 1 +
         ALLOC_OVERHEAD + cost(fs->app_software) + cost(fs->kind) +
         cost(fs->reason);
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

/* fs's strings, new, into v[1..] (v[0], the instance id, is left out);
 * false without memory (v freed). */
static bool new_strings(const dc_fleet_fields_t *fs, char *v[N_STRINGS]) {
  size_t sn = software_len(fs);
  v[0] = NULL;
  v[1] = dup_or_empty(fs->client_id);
  v[2] = dup_or_empty(fs->principal);
  v[3] = dup_or_empty(fs->peer);
  v[4] = dup_or_empty(fs->listener);
  if ((v[5] = malloc(sn + 1))) {
    size_t nn = fs->software_name ? strlen(fs->software_name) : 0;
    memcpy(v[5], fs->software_name ? fs->software_name : "", nn);
    if (sn > nn) {
      v[5][nn] = '/';
      memcpy(v[5] + nn + 1, fs->software_version, sn - nn - 1);
    }
    v[5][sn] = '\0';
  }
  v[6] = dup_or_empty(fs->app_software);
  v[7] = dup_or_empty(fs->kind);
  v[8] = dup_or_empty(fs->reason);
  for (int i = 1; i < N_STRINGS; i++)
    if (!v[i]) {
      for (int j = 1; j < N_STRINGS; j++)
        free(v[j]);
      return false;
    }
  return true;
}

/* ---- the counts by state ------------------------------------------------ */

bool dc_fleet_live(const dc_fleet_entry_t *e) {
  return e->slot && e->outcome != DC_OUTCOME_NONE;
}

int8_t dc_fleet_state(const dc_fleet_entry_t *e, int64_t current) {
  if (!dc_fleet_live(e))
    return DC_FLEET_SILENT;
  if (e->reported_version != current)
    return DC_FLEET_BEHIND;
  switch (e->outcome) {
  case DC_OUTCOME_REJECTED: return DC_FLEET_REJECTED;
  case DC_OUTCOME_RESTART: return DC_FLEET_RESTART;
  }
  return DC_FLEET_UP_TO_DATE;
}

void dc_fleet_count(dc_fleet_t *f, dc_fleet_entry_t *e, int8_t state) {
  f->counts[e->state]--;
  f->counts[state]++;
  e->state = state;
}

/* ---- the set ------------------------------------------------------------ */

static dc_fleet_entry_t **bucket(dc_fleet_t *f, const char *id) {
  return &f->buckets[dc_hash_str(0, id) & (f->n_buckets - 1)];
}

dc_fleet_entry_t *dc_fleet_find(dc_fleet_t *f, const char *id) {
  if (!f->n_buckets)
    return NULL;
  dc_fleet_entry_t *e = *bucket(f, id);
  for (; e && (f->probes++, strcmp(e->instance_id, id)); e = e->hnext)
    ;
  return e;
}

/* Doubles the table when it holds as many entries as buckets. */
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
      dc_fleet_entry_t **b = &nbk[dc_hash_str(0, e->instance_id) & (nb - 1)];
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

void dc_fleet_drop(dc_fleet_t *f, dc_fleet_entry_t *e) {
  for (dc_fleet_entry_t **p = bucket(f, e->instance_id); *p; p = &(*p)->hnext)
    if (*p == e) {
      *p = e->hnext;
      break;
    }
  gone_unlink(f, e);
  index_remove(f, e);
  f->n--;
  f->counts[e->state]--;
  f->bytes -= e->mem;
  f->seq++;
  entry_free(e);
}

bool dc_fleet_expire(dc_fleet_t *f, int64_t now) {
  bool any = false;
  while (f->gone_head && now - f->gone_head->last_seen_ms > f->retention_ms) {
    dc_fleet_drop(f, f->gone_head);
    any = true;
  }
  return any;
}

bool dc_fleet_make_room(dc_fleet_t *f, bool more_entries, size_t grow_by,
                        const dc_fleet_entry_t *keep) {
  dc_fleet_entry_t *e = f->gone_head;
  for (;;) {
    if ((!more_entries || f->n < DC_FLEET_MAX_CLIENTS) &&
        (!f->max_bytes || f->bytes + grow_by <= f->max_bytes))
      return true;
    while (e && e == keep)
      e = e->gnext;
    if (!e)
      return false;
    dc_fleet_entry_t *next = e->gnext;
    dc_fleet_drop(f, e);
    e = next;
  }
}

/* A new entry for id holding v, in the hash (not yet in the trees). */
static dc_fleet_entry_t *entry_new(dc_fleet_t *f, const char *id,
                                   char *v[N_STRINGS], int64_t now) {
  dc_fleet_entry_t *e = calloc(1, sizeof(*e));
  if (!e || grow(f) || !(v[0] = strdup(id))) {
    free(e);
    return NULL;
  }
  char **s[N_STRINGS];
  strings(e, s);
  for (int i = 0; i < N_STRINGS; i++)
    *s[i] = v[i];
  e->first_seen_ms = e->last_seen_ms = now;
  e->served_version = e->reported_version = -1;
  e->outcome = DC_OUTCOME_NONE;
  e->state = DC_FLEET_SILENT; /* never reported */
  f->counts[DC_FLEET_SILENT]++;
  dc_fleet_entry_t **b = bucket(f, id);
  e->hnext = *b;
  *b = e;
  f->n++;
  return e;
}

/* Swaps v[1..] into e, whose old strings go. When its key changes it
 * leaves the trees (false), else it is reweighed in place (true). */
static bool entry_set(dc_fleet_t *f, dc_fleet_entry_t *e, char *v[N_STRINGS]) {
  bool moves = strcmp(e->client_id, v[1]) || strcmp(e->principal, v[2]);
  if (moves)
    index_remove(f, e);
  char **s[N_STRINGS];
  strings(e, s);
  for (int i = 1; i < N_STRINGS; i++) {
    free(*s[i]);
    *s[i] = v[i];
  }
  if (moves)
    return false;
  size_t w = listed_size(f, e);
  dc_avl_reweigh(&e->by_client, w);
  dc_avl_reweigh(&e->by_user, w);
  return true;
}

dc_fleet_entry_t *dc_fleet_put(dc_fleet_t *f, dc_fleet_entry_t *e,
                               const char *instance_id,
                               const dc_fleet_fields_t *fs, int64_t now) {
  char *v[N_STRINGS];
  if (!new_strings(fs, v))
    return NULL;
  bool indexed = false;
  if (e) {
    f->bytes -= e->mem;
    indexed = entry_set(f, e, v);
  } else if (!(e = entry_new(f, instance_id, v, now))) {
    for (int j = 1; j < N_STRINGS; j++)
      free(v[j]);
    return NULL;
  }
  e->mem = dc_fleet_entry_bytes(instance_id, fs);
  f->bytes += e->mem;
  if (!indexed) {
    e->by_client.weight = e->by_user.weight = listed_size(f, e);
    index_add(f, e);
  }
  return e;
}

void dc_fleet_mark_gone(dc_fleet_t *f, dc_fleet_entry_t *e, int64_t now) {
  f->seq++;
  e->slot = NULL;
  e->last_seen_ms = now;
  gone_push(f, e);
  dc_fleet_count(f, e, DC_FLEET_SILENT);
}

void dc_fleet_attach(dc_fleet_t *f, dc_fleet_entry_t *e, void **slot,
                     int64_t now) {
  if (*slot && *slot != e) /* it reported as another instance before */
    dc_fleet_mark_gone(f, *slot, now);
  if (e->slot && e->slot != slot)
    *e->slot = NULL; /* the instance came back on a new connection */
  gone_unlink(f, e);
  e->slot = slot;
  *slot = e;
}

void dc_fleet_init(dc_fleet_t *f, int64_t retention_ms, size_t max_bytes) {
  memset(f, 0, sizeof(*f));
  f->retention_ms = retention_ms;
  f->max_bytes = max_bytes;
  f->seq = dc_wall_ms();
  dc_avl_init(&f->by_client, cmp_client);
  dc_avl_init(&f->by_user, cmp_user);
  dc_buf_init(&f->scratch);
}

void dc_fleet_free(dc_fleet_t *f) {
  for (size_t i = 0; i < f->n_buckets; i++)
    for (dc_fleet_entry_t *e = f->buckets[i], *next; e; e = next) {
      next = e->hnext;
      entry_free(e);
    }
  free(f->buckets);
  dc_buf_free(&f->scratch);
  dc_resolved_memo_free(&f->memo);
  memset(f, 0, sizeof(*f));
}

size_t dc_fleet_longest_chain(const dc_fleet_t *f) {
  size_t longest = 0;
  for (size_t i = 0; i < f->n_buckets; i++) {
    size_t n = 0;
    for (const dc_fleet_entry_t *e = f->buckets[i]; e; e = e->hnext)
      n++;
    longest = n > longest ? n : longest;
  }
  return longest;
}
