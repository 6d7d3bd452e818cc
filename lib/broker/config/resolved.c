/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A client's resolved configuration and its version: the first 63 bits of
 * the SHA-256 of the resolved (key, value, source) list, so equal versions
 * mean equal configurations on every replica, and no one who may alter a
 * configuration can make a change keep its version (an unkeyed fast hash
 * would let them; a keyed one would differ between replicas).
 *
 * A resolution reads at most DC_SCOPE_MAX_LEVELS stored entities and
 * nothing else, so clients whose levels are the same entities share it:
 * every client-id without an entity of its own, under a user without
 * one, inherits <default> alone. A pass over many clients (a Watch
 * fan-out, the fleet view) keys a memo by those entities and resolves and
 * encodes each distinct configuration once. Entity pointers are the key,
 * so a memo forgets everything when the configdb's generation moves.
 *
 * Threads: loop thread only.
 */
#include "broker/config/resolved.h"

#include <openssl/evp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dc_resolved_key(const dc_configdb_t *db, const char *client_id,
                    const char *principal, dc_resolved_key_t *out) {
  dc_scope_ent_t ent;
  char why[256];
  if (dc_scope_ent_init(&ent, DC_RES_CLIENT, client_id, why, sizeof(why)))
    return -1;
  dc_scope_level_t lv[DC_SCOPE_MAX_LEVELS];
  memset(out, 0, sizeof(*out));
  out->nl = dc_scope_levels(db, &ent, principal, lv);
  for (int i = 0; i < out->nl; i++) {
    out->e[i] = lv[i].e;
    out->source[i] = lv[i].source;
  }
  return 0;
}

/* SHA-256 fetched once: EVP_sha256() makes every EVP_DigestInit_ex fetch
 * it again, which costs more than digesting a small list. Freed at exit. */
static EVP_MD *g_sha256;

static void free_sha256(void) {
  EVP_MD_free(g_sha256);
}

static void fetch_sha256(void) {
  g_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
  if (g_sha256 && atexit(free_sha256)) {
    EVP_MD_free(g_sha256);
    g_sha256 = NULL;
  }
}

static const EVP_MD *sha256(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fetch_sha256);
  return g_sha256 ? g_sha256 : EVP_sha256();
}

/* A config source as the decimal text the version digests. */
static void source_text(int8_t src, char s[8]) {
  unsigned u = src < 0 ? (unsigned)(-(int)src) : (unsigned)src;
  char d[4];
  int n = 0;
  do {
    d[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  int i = 0;
  if (src < 0)
    s[i++] = '-';
  while (n)
    s[i++] = d[--n];
  s[i] = '\0';
}

/* s into the digest, its length first so no two lists read alike. */
static void digest_str(EVP_MD_CTX *md, const char *s) {
  size_t n = strlen(s);
  uint8_t len[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8),
                    (uint8_t)n};
  EVP_DigestUpdate(md, len, sizeof(len));
  EVP_DigestUpdate(md, s, n);
}

/* The version of the digest's list: 63 bits, so never -1 ("none"); 0
 * when the digest cannot be made (out of memory). */
static int64_t digest_version(EVP_MD_CTX *md) {
  uint8_t d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  if (!md || !EVP_DigestFinal_ex(md, d, &n) || n < 8)
    return 0;
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | d[i];
  return (int64_t)(v & INT64_MAX);
}

int64_t dc_resolved_list(const dc_resolved_key_t *k, dc_arena_t *arena,
                         dc_watch_entry_t **out, int32_t *np) {
  dc_scope_level_t lv[DC_SCOPE_MAX_LEVELS];
  size_t total = 0;
  for (int i = 0; i < k->nl; i++) {
    lv[i] = (dc_scope_level_t){k->e[i], k->source[i], false};
    total += k->e[i] ? k->e[i]->n : 0;
  }
  dc_watch_entry_t *es =
      out ? dc_arena_alloc(arena, (total + 1) * sizeof(*es)) : NULL;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (md && !EVP_DigestInit_ex(md, sha256(), NULL)) {
    EVP_MD_CTX_free(md);
    md = NULL;
  }
  int32_t n = 0;
  dc_scope_merge_t m;
  dc_scope_merge_init(&m, lv, k->nl);
  int have[DC_SCOPE_MAX_LEVELS], nh;
  const char *vals[DC_SCOPE_MAX_LEVELS], *key;
  while ((key = dc_scope_merge_next(&m, vals, have, &nh))) {
    int8_t src = lv[have[0]].source;
    char s[8];
    source_text(src, s);
    if (md) {
      digest_str(md, key);
      digest_str(md, vals[0]);
      digest_str(md, s);
    }
    if (es)
      es[n] = (dc_watch_entry_t){(char *)key, (char *)vals[0], src};
    n++;
  }
  if (out)
    *out = es;
  if (np)
    *np = n;
  int64_t version = digest_version(md);
  EVP_MD_CTX_free(md);
  return version;
}

/* ---- the memo ------------------------------------------------------------ */

struct memo_slot {
  bool used;
  dc_resolved_key_t key;
  int64_t version;
  int16_t body_v;   /* the Watch version body holds; -1 = none yet */
  bool no_body;     /* it cannot be made: past max_body, or no memory */
  dc_buf_t body;
};

void dc_resolved_memo_init(dc_resolved_memo_t *m, const dc_configdb_t *db,
                           size_t max_body) {
  *m = (dc_resolved_memo_t){.db = db,
                            .generation = dc_configdb_generation(db),
                            .max_body = max_body,
                            .position = -1};
}

void dc_resolved_memo_free(dc_resolved_memo_t *m) {
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].used)
      dc_buf_free(&m->slots[i].body);
  free(m->slots);
  m->slots = NULL;
  m->cap = m->n = 0;
}

/* Forgets what an older configdb resolved. */
static void follow_db(dc_resolved_memo_t *m) {
  uint64_t g = dc_configdb_generation(m->db);
  if (g == m->generation)
    return;
  dc_resolved_memo_free(m);
  m->generation = g;
}

static size_t key_hash(const dc_resolved_key_t *k) {
  uint64_t h = (uint64_t)k->nl;
  for (int i = 0; i < k->nl; i++)
    h = (h ^ (uint64_t)(uintptr_t)k->e[i] ^ (uint64_t)(uint8_t)k->source[i]) *
        0x9e3779b97f4a7c15ull;
  return (size_t)(h ^ (h >> 29));
}

static bool key_eq(const dc_resolved_key_t *a, const dc_resolved_key_t *b) {
  if (a->nl != b->nl)
    return false;
  for (int i = 0; i < a->nl; i++)
    if (a->e[i] != b->e[i] || a->source[i] != b->source[i])
      return false;
  return true;
}

/* The slot of k in a table of cap slots (a power of two): its own, or the
 * empty one it would take. */
static struct memo_slot *probe(struct memo_slot *t, size_t cap,
                               const dc_resolved_key_t *k) {
  size_t i = key_hash(k) & (cap - 1);
  while (t[i].used && !key_eq(&t[i].key, k))
    i = (i + 1) & (cap - 1);
  return &t[i];
}

/* Keeps the table at most half full. 0, or -1 without memory. */
static int grow(dc_resolved_memo_t *m) {
  if (2 * (m->n + 1) <= m->cap)
    return 0;
  size_t cap = m->cap ? 2 * m->cap : 64;
  struct memo_slot *t = calloc(cap, sizeof(*t));
  if (!t)
    return -1;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].used)
      *probe(t, cap, &m->slots[i].key) = m->slots[i];
  free(m->slots);
  m->slots = t;
  m->cap = cap;
  return 0;
}

/* The slot for (client_id, principal), made when new; NULL for an invalid
 * client-id or without memory (then *k is still filled when valid). */
static struct memo_slot *lookup(dc_resolved_memo_t *m, const char *client_id,
                                const char *principal, dc_resolved_key_t *k,
                                bool *valid) {
  follow_db(m);
  *valid = !dc_resolved_key(m->db, client_id, principal, k);
  if (!*valid || grow(m))
    return NULL;
  struct memo_slot *s = probe(m->slots, m->cap, k);
  if (!s->used) {
    *s = (struct memo_slot){.used = true, .key = *k, .body_v = -1};
    dc_buf_init(&s->body);
    s->version = dc_resolved_list(k, NULL, NULL, NULL);
    m->n++;
  }
  return s;
}

int64_t dc_resolved_memo_version(dc_resolved_memo_t *m, const char *client_id,
                                 const char *principal) {
  dc_resolved_key_t k;
  bool valid;
  struct memo_slot *s = lookup(m, client_id, principal, &k, &valid);
  if (s)
    return s->version;
  return valid ? dc_resolved_list(&k, NULL, NULL, NULL) : -1;
}

/* Encodes s's changed answer for Watch v into its body. */
static void encode_body(dc_resolved_memo_t *m, struct memo_slot *s,
                        int16_t v) {
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_watch_resp_t resp = {.changed = true, .position = m->position};
  resp.version = dc_resolved_list(&s->key, &arena, &resp.configs,
                                  &resp.n_configs);
  dc_buf_clear(&s->body);
  s->body_v = v;
  s->no_body = !resp.configs ||
               dc_watch_resp_encode(&s->body, v, &resp) || s->body.err ||
               (m->max_body && s->body.len > m->max_body);
  dc_arena_free(&arena);
}

const dc_buf_t *dc_resolved_memo_answer(dc_resolved_memo_t *m,
                                        const char *client_id,
                                        const char *principal, int16_t v,
                                        int64_t *version) {
  dc_resolved_key_t k;
  bool valid;
  struct memo_slot *s = lookup(m, client_id, principal, &k, &valid);
  if (!s)
    return NULL;
  *version = s->version;
  if (s->body_v != v)
    encode_body(m, s, v);
  return s->no_body ? NULL : &s->body;
}
