/* SPDX-License-Identifier: BSD-2-Clause */
/* The heartbeat/session index (pairindex.h). */
#include "broker/config/pairindex.h"
#include "codec/proto.h"
#include "common/entity.h"
#include "common/schema.h"
#include "common/siphash.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HB "heartbeat.interval.ms"
#define ST "session.timeout.ms"
#define NGROUPS 3
#define NHEAPS 4

struct dc_pairidx_node {
  uint8_t group; /* dc_pix_group_t */
  uint8_t in;    /* bit h: member of heap h */
  /* Heap positions. A member is in at most two heaps and never in both
   * of HB_ALL and ST_ONLY nor both of ST_ALL and HB_ONLY, so those share. */
  uint32_t pos[2];
  const dc_entity_t *ent;
  int64_t hb, st; /* valid for the heaps the node is in */
};

/* The user (or client-id) half of user+client entities: the head of the
 * chain of those that set HB or ST. */
typedef struct chain_key {
  struct uc_node *head;
  char name[]; /* user encoded, client-id decoded */
} chain_key_t;

typedef struct uc_node {
  dc_pairidx_node_t n; /* first: a node pointer is a uc_node pointer */
  chain_key_t *u, *c;
  struct uc_node *uprev, *unext, *cprev, *cnext;
} uc_node_t;

typedef struct heap {
  dc_pairidx_node_t **a;
  uint32_t n, cap;
} heap_t;

/* chain_key_t by name: open addressing, backward-shift deletion. */
typedef struct keymap {
  chain_key_t **slots;
  size_t cap, count;
} keymap_t;

struct dc_pairidx {
  heap_t heaps[NGROUPS][NHEAPS];
  keymap_t users, clients;
};

/* ---- heaps ------------------------------------------------------------- */

static bool is_hb(int h) { return h == DC_PIX_HB_ALL || h == DC_PIX_HB_ONLY; }
static int slot_of(int h) { return h == DC_PIX_HB_ALL || h == DC_PIX_ST_ONLY ? 0 : 1; }

/* True when a belongs above b in heap h. */
static bool above(int h, const dc_pairidx_node_t *a,
                  const dc_pairidx_node_t *b) {
  return is_hb(h) ? a->hb > b->hb : a->st < b->st;
}

static void place(heap_t *hp, int h, uint32_t i, dc_pairidx_node_t *n) {
  hp->a[i] = n;
  n->pos[slot_of(h)] = i;
}

static uint32_t sift_up(heap_t *hp, int h, uint32_t i) {
  dc_pairidx_node_t *n = hp->a[i];
  while (i > 0 && above(h, n, hp->a[(i - 1) / 2])) {
    place(hp, h, i, hp->a[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  place(hp, h, i, n);
  return i;
}

static void sift_down(heap_t *hp, int h, uint32_t i) {
  dc_pairidx_node_t *n = hp->a[i];
  for (;;) {
    uint64_t c = 2 * (uint64_t)i + 1;
    if (c >= hp->n)
      break;
    if (c + 1 < hp->n && above(h, hp->a[c + 1], hp->a[c]))
      c++;
    if (!above(h, hp->a[c], n))
      break;
    place(hp, h, i, hp->a[c]);
    i = (uint32_t)c;
  }
  place(hp, h, i, n);
}

static int reserve(heap_t *hp) {
  if (hp->n < hp->cap)
    return 0;
  uint32_t ncap = hp->cap ? 2 * hp->cap : 16;
  dc_pairidx_node_t **na = realloc(hp->a, ncap * sizeof(*na));
  if (!na)
    return -1;
  hp->a = na;
  hp->cap = ncap;
  return 0;
}

static void push(heap_t *hp, int h, dc_pairidx_node_t *n) {
  place(hp, h, hp->n++, n);
  sift_up(hp, h, hp->n - 1);
}

static void pull(heap_t *hp, int h, dc_pairidx_node_t *n) {
  uint32_t i = n->pos[slot_of(h)];
  dc_pairidx_node_t *last = hp->a[--hp->n];
  if (i == hp->n)
    return;
  place(hp, h, i, last);
  sift_down(hp, h, sift_up(hp, h, i));
}

/* ---- chain keys ---------------------------------------------------------- */

/* Names are the alterers' choice: keyed hash. */
static uint64_t hash(const char *s) { return dc_hash_str(0, s); }

static size_t key_slot(const keymap_t *m, const char *name) {
  size_t i = hash(name) & (m->cap - 1);
  while (m->slots[i] && strcmp(m->slots[i]->name, name))
    i = (i + 1) & (m->cap - 1);
  return i;
}

static chain_key_t *key_find(const keymap_t *m, const char *name) {
  return m->cap ? m->slots[key_slot(m, name)] : NULL;
}

static int key_grow(keymap_t *m) {
  size_t ocap = m->cap, ncap = ocap ? 2 * ocap : 16;
  chain_key_t **old = m->slots, **ns = calloc(ncap, sizeof(*ns));
  if (!ns)
    return -1;
  m->slots = ns;
  m->cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i])
      m->slots[key_slot(m, old[i]->name)] = old[i];
  free(old);
  return 0;
}

/* The key for name, added (with an empty chain) when missing. */
static chain_key_t *key_get(keymap_t *m, const char *name) {
  chain_key_t *k = key_find(m, name);
  if (k)
    return k;
  if ((m->count + 1) * 2 > m->cap && key_grow(m))
    return NULL;
  size_t len = strlen(name);
  if (!(k = malloc(sizeof(*k) + len + 1)))
    return NULL;
  k->head = NULL;
  memcpy(k->name, name, len + 1);
  m->slots[key_slot(m, name)] = k;
  m->count++;
  return k;
}

/* Removes k when its chain is empty. */
static void key_put(keymap_t *m, chain_key_t *k) {
  if (!k || k->head)
    return;
  size_t i = key_slot(m, k->name), j = i;
  free(k);
  m->slots[i] = NULL;
  m->count--;
  for (;;) {
    j = (j + 1) & (m->cap - 1);
    chain_key_t *e = m->slots[j];
    if (!e)
      return;
    size_t home = hash(e->name) & (m->cap - 1);
    /* e may move to i if i lies cyclically in [home, j). */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      m->slots[i] = e;
      m->slots[j] = NULL;
      i = j;
    }
  }
}

static void key_free_all(keymap_t *m) {
  for (size_t i = 0; i < m->cap; i++)
    free(m->slots[i]);
  free(m->slots);
}

/* ---- nodes ----------------------------------------------------------------- */

/* Links u into the chains of its user and client-id. 0; 1 when name does
 * not parse (such an entity names no pair: not indexed); -1 on OOM. */
static int uc_link(dc_pairidx_t *ix, uc_node_t *u, const char *name) {
  dc_user_entity_t ue;
  if (dc_entity_user_parse(name, &ue, NULL, 0))
    return 1;
  char uenc[DC_ENTITY_ENC_NAME_SIZE];
  size_t ulen = (size_t)(strchr(name, '/') - name);
  memcpy(uenc, name, ulen);
  uenc[ulen] = '\0';
  chain_key_t *ku = key_get(&ix->users, uenc);
  chain_key_t *kc = ku ? key_get(&ix->clients, ue.client) : NULL;
  if (!kc) {
    key_put(&ix->users, ku);
    return -1;
  }
  u->u = ku;
  u->c = kc;
  u->uprev = u->cprev = NULL;
  if ((u->unext = ku->head))
    ku->head->uprev = u;
  if ((u->cnext = kc->head))
    kc->head->cprev = u;
  ku->head = kc->head = u;
  return 0;
}

static void uc_unlink(dc_pairidx_t *ix, uc_node_t *u) {
  if (u->uprev)
    u->uprev->unext = u->unext;
  else
    u->u->head = u->unext;
  if (u->unext)
    u->unext->uprev = u->uprev;
  if (u->cprev)
    u->cprev->cnext = u->cnext;
  else
    u->c->head = u->cnext;
  if (u->cnext)
    u->cnext->cprev = u->cprev;
  key_put(&ix->users, u->u);
  key_put(&ix->clients, u->c);
}

static void unheap(dc_pairidx_t *ix, dc_pairidx_node_t *n) {
  for (int h = 0; h < NHEAPS; h++)
    if (n->in & (1u << h))
      pull(&ix->heaps[n->group][h], h, n);
  n->in = 0;
}

static void enheap(dc_pairidx_t *ix, dc_pairidx_node_t *n, uint8_t want) {
  for (int h = 0; h < NHEAPS; h++)
    if (want & (1u << h))
      push(&ix->heaps[n->group][h], h, n);
  n->in = want;
}

static void drop(dc_pairidx_t *ix, dc_pairidx_node_t *n) {
  unheap(ix, n);
  if (n->group == DC_PIX_USER_CLIENTS)
    uc_unlink(ix, (uc_node_t *)n);
  free(n);
}

/* A new node for an entity of group g named name; NULL with *rc -1 on
 * OOM, 1 when the entity is not indexed. */
static dc_pairidx_node_t *node_new(dc_pairidx_t *ix, int g, const char *name,
                                   int *rc) {
  dc_pairidx_node_t *n = calloc(
      1, g == DC_PIX_USER_CLIENTS ? sizeof(uc_node_t) : sizeof(*n));
  *rc = -1;
  if (!n)
    return NULL;
  n->group = (uint8_t)g;
  if (g == DC_PIX_USER_CLIENTS && (*rc = uc_link(ix, (uc_node_t *)n, name))) {
    free(n);
    return NULL;
  }
  *rc = 0;
  return n;
}

/* The group an entity belongs to, or -1 (<default>, other types). */
static int group_of(const dc_entity_t *e) {
  if (e->type == DC_RES_CLIENT)
    return dc_entity_is_default(e->name) ? -1 : DC_PIX_CLIENTS;
  if (e->type == DC_RES_USER)
    return strchr(e->name, '/') ? DC_PIX_USER_CLIENTS : DC_PIX_USERS;
  return -1;
}

/* The heaps an entity setting hbs/sts (NULL: absent; *n: parses) is in. */
static uint8_t heaps_for(int g, const char *hbs, const char *sts, bool hbn,
                         bool stn) {
  uint8_t m = 0;
  if (g != DC_PIX_USER_CLIENTS) {
    if (hbn)
      m |= 1u << DC_PIX_HB_ALL;
    if (stn)
      m |= 1u << DC_PIX_ST_ALL;
  }
  if (hbn && !sts)
    m |= 1u << DC_PIX_HB_ONLY;
  if (stn && !hbs)
    m |= 1u << DC_PIX_ST_ONLY;
  return m;
}

int dc_pairidx_update(dc_pairidx_t *ix, dc_pairidx_node_t **node,
                      const dc_entity_t *e) {
  int g = e ? group_of(e) : -1;
  const char *hbs = g >= 0 ? dc_entity_value(e, HB) : NULL;
  const char *sts = g >= 0 ? dc_entity_value(e, ST) : NULL;
  int64_t hb = 0, st = 0;
  bool hbn = hbs && dc_parse_int64(hbs, &hb);
  bool stn = sts && dc_parse_int64(sts, &st);
  uint8_t want = heaps_for(g, hbs, sts, hbn, stn);
  /* User+client entities are chained whenever they set either key (they
   * shadow what is below them); the others only matter through heaps. */
  if (g < 0 || (!hbs && !sts) || (g != DC_PIX_USER_CLIENTS && !want)) {
    if (*node)
      drop(ix, *node);
    *node = NULL;
    return 0;
  }
  dc_pairidx_node_t *n = *node;
  int rc;
  if (!n && !(n = node_new(ix, g, e->name, &rc)))
    return rc < 0 ? -1 : 0;
  for (int h = 0; h < NHEAPS; h++)
    if ((want & ~n->in & (1u << h)) && reserve(&ix->heaps[g][h])) {
      if (!*node)
        drop(ix, n);
      return -1;
    }
  unheap(ix, n);
  n->hb = hb;
  n->st = st;
  enheap(ix, n, want);
  n->ent = e;
  *node = n;
  return 0;
}

/* ---- queries ----------------------------------------------------------------- */

static int emit(const dc_pairidx_node_t *n, dc_pix_cb cb, void *opaque) {
  if (n->group == DC_PIX_USER_CLIENTS) {
    const uc_node_t *u = (const uc_node_t *)n;
    return cb(opaque, u->u->name, u->c->name);
  }
  if (n->group == DC_PIX_USERS)
    return cb(opaque, n->ent->name, NULL);
  return cb(opaque, NULL, n->ent->name);
}

/* Depth-first from slot i: a subtree whose root does not reach bound
 * holds nothing that does (heap order). */
static int visit_at(const heap_t *hp, int h, uint64_t i, int64_t bound,
                    dc_pix_cb cb, void *opaque) {
  if (i >= hp->n)
    return 0;
  const dc_pairidx_node_t *n = hp->a[i];
  if (is_hb(h) ? n->hb < bound : n->st > bound)
    return 0;
  int r = emit(n, cb, opaque);
  if (!r)
    r = visit_at(hp, h, 2 * i + 1, bound, cb, opaque);
  return r ? r : visit_at(hp, h, 2 * i + 2, bound, cb, opaque);
}

int dc_pairidx_visit(const dc_pairidx_t *ix, dc_pix_group_t g,
                     dc_pix_heap_t h, int64_t bound, dc_pix_cb cb,
                     void *opaque) {
  return visit_at(&ix->heaps[g][h], h, 0, bound, cb, opaque);
}

int dc_pairidx_of_user(const dc_pairidx_t *ix, const char *uenc,
                       dc_pix_cb cb, void *opaque) {
  const chain_key_t *k = key_find(&ix->users, uenc);
  for (const uc_node_t *u = k ? k->head : NULL; u; u = u->unext) {
    int r = cb(opaque, u->u->name, u->c->name);
    if (r)
      return r;
  }
  return 0;
}

int dc_pairidx_of_client(const dc_pairidx_t *ix, const char *client,
                         dc_pix_cb cb, void *opaque) {
  const chain_key_t *k = key_find(&ix->clients, client);
  for (const uc_node_t *u = k ? k->head : NULL; u; u = u->cnext) {
    int r = cb(opaque, u->u->name, u->c->name);
    if (r)
      return r;
  }
  return 0;
}

size_t dc_pairidx_size(const dc_pairidx_t *ix, dc_pix_group_t g,
                       dc_pix_heap_t h) {
  return ix->heaps[g][h].n;
}

/* ---- lifetime -------------------------------------------------------------- */

dc_pairidx_t *dc_pairidx_new(void) { return calloc(1, sizeof(dc_pairidx_t)); }

void dc_pairidx_destroy(dc_pairidx_t *ix) {
  if (!ix)
    return;
  /* Every client or user node is in HB_ALL or ST_ALL; every user+client
   * node is in its user's chain. */
  for (int g = DC_PIX_CLIENTS; g <= DC_PIX_USERS; g++) {
    const heap_t *hb = &ix->heaps[g][DC_PIX_HB_ALL];
    const heap_t *st = &ix->heaps[g][DC_PIX_ST_ALL];
    for (uint32_t i = 0; i < st->n; i++)
      if (!(st->a[i]->in & (1u << DC_PIX_HB_ALL)))
        free(st->a[i]);
    for (uint32_t i = 0; i < hb->n; i++)
      free(hb->a[i]);
  }
  for (size_t i = 0; i < ix->users.cap; i++)
    for (uc_node_t *u = ix->users.slots[i] ? ix->users.slots[i]->head : NULL,
                   *next;
         u; u = next) {
      next = u->unext;
      free(u);
    }
  for (int g = 0; g < NGROUPS; g++)
    for (int h = 0; h < NHEAPS; h++)
      free(ix->heaps[g][h].a);
  key_free_all(&ix->users);
  key_free_all(&ix->clients);
  free(ix);
}
