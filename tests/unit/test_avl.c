/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lib/common/avl.c against a sorted array, over random inserts, removes
 * and reweighs (a fixed seed, so a failure repeats):
 *   - the in-order walk (first, next) is the array's order;
 *   - every node is balanced (heights of its children differ by at most
 *     one), its height, subtree sum and size are right, its children point back
 *     at it; the height stays within 1.44 log2(n + 2);
 *   - seek finds the first node after a position, sum_before the weight
 *     and number of nodes before it, for positions before, between and after the nodes;
 *   - equal nodes are kept, in the order they came.
 */
#include "common/avl.h"
#include "../tap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define N 2000

typedef struct item {
  dc_avl_node_t node; /* first: a node pointer is an item pointer */
  int key, serial;
  bool in;
} item_t;

static int cmp(const dc_avl_node_t *a, const dc_avl_node_t *b) {
  int x = ((const item_t *)a)->key, y = ((const item_t *)b)->key;
  return (x > y) - (x < y);
}

/* A position: just before key (at) or just after it (after). */
typedef struct pos {
  int at;
  bool after;
} pos_t;

static int key_fn(const void *key, const dc_avl_node_t *n) {
  const pos_t *p = key;
  int k = ((const item_t *)n)->key;
  if (p->at != k)
    return p->at < k ? -1 : 1;
  return p->after ? 1 : -1;
}

static item_t items[N];
static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Checks the subtree at n; its height, or -1 when wrong. */
static int check(const dc_avl_node_t *n, const dc_avl_node_t *parent) {
  if (!n)
    return 0;
  if (n->parent != parent)
    return -1;
  int l = check(n->left, n), r = check(n->right, n);
  uint64_t s = n->weight + (n->left ? n->left->sum : 0) +
               (n->right ? n->right->sum : 0);
  size_t size = 1 + (n->left ? n->left->size : 0) +
                (n->right ? n->right->size : 0);
  int h = 1 + (l > r ? l : r);
  if (l < 0 || r < 0 || abs(l - r) > 1 || n->height != h || n->sum != s ||
      n->size != size)
    return -1;
  return h;
}

/* log2(x), rounded up. */
static double log2_up(size_t x) {
  double lg = 0;
  for (size_t m = 1; m < x; m *= 2)
    lg++;
  return lg;
}

static int cmp_items(const void *a, const void *b) {
  const item_t *x = *(item_t *const *)a, *y = *(item_t *const *)b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return (x->serial > y->serial) - (x->serial < y->serial);
}

/* The items in the tree, sorted as the tree should hold them. */
static size_t reference(item_t **v) {
  size_t n = 0;
  for (int i = 0; i < N; i++)
    if (items[i].in)
      v[n++] = &items[i];
  qsort(v, n, sizeof(*v), cmp_items);
  return n;
}

static bool walk_ok(const dc_avl_t *t, item_t **v, size_t n) {
  size_t i = 0;
  for (const dc_avl_node_t *x = dc_avl_first(t); x; x = dc_avl_next(x), i++)
    if (i >= n || (const item_t *)x != v[i])
      return false;
  return i == n && t->n == n;
}

/* seek and sum_before at every key's edges and a few keys not there. */
static bool positions_ok(const dc_avl_t *t, item_t **v, size_t n) {
  for (int at = -1; at <= 1001; at += 7)
    for (int after = 0; after < 2; after++) {
      pos_t p = {at, after};
      size_t first = 0;
      uint64_t before = 0;
      while (first < n && (v[first]->key < at ||
                           (after && v[first]->key == at)))
        before += v[first++]->node.weight;
      const dc_avl_node_t *s = dc_avl_seek(t, key_fn, &p);
      size_t count = 0;
      if (s != (first < n ? &v[first]->node : NULL) ||
          dc_avl_sum_before(t, key_fn, &p, &count) != before ||
          count != first)
        return false;
    }
  return true;
}

int main(void) {
  dc_avl_t t;
  dc_avl_init(&t, cmp);
  static item_t *v[N];
  int bad_walk = 0, bad_shape = 0, bad_pos = 0, too_high = 0, serial = 0;
  for (int step = 0; step < 20000; step++) {
    item_t *it = &items[next_rand() % N];
    int op = (int)(next_rand() % 10);
    if (!it->in && op < 6) {
      it->key = (int)(next_rand() % 1000); /* repeats: equal nodes */
      it->serial = serial++;
      it->node.weight = next_rand() % 5000;
      dc_avl_insert(&t, &it->node);
      it->in = true;
    } else if (it->in && op < 9) {
      dc_avl_remove(&t, &it->node);
      it->in = false;
    } else if (it->in) {
      dc_avl_reweigh(&it->node, next_rand() % 5000);
    }
    if (step % 97)
      continue;
    size_t n = reference(v);
    int h = check(t.root, NULL);
    bad_walk += !walk_ok(&t, v, n);
    bad_shape += h < 0;
    too_high += h > 1.44 * log2_up(n + 2);
    bad_pos += !positions_ok(&t, v, n);
  }
  is_int(bad_walk, 0, "the walk is the sorted order, equal keys as they came");
  is_int(bad_shape, 0, "balanced; heights, sums, sizes and parents right");
  is_int(too_high, 0, "height within 1.44 log2(n + 2)");
  is_int(bad_pos, 0, "seek and sum_before at every position");
  size_t left = t.n;
  for (int i = 0; i < N; i++)
    if (items[i].in)
      dc_avl_remove(&t, &items[i].node);
  ok(left > 0 && !t.root && !t.n && dc_avl_sum(&t) == 0 && !dc_avl_first(&t),
     "all %zu removed: empty", left);
  return done_testing();
}
