/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An ordered set as an AVL tree of nodes the caller embeds in its own
 * structs (intrusive: the tree allocates nothing). Each node carries a
 * weight, and the tree keeps the count and the weight of every subtree,
 * so how many nodes lie before a position, and their weight, are known
 * in O(log n) too. Insert, remove,
 * seek and a sum are O(log n); the next node is O(1) amortized over a
 * walk.
 *
 * A position between nodes (for dc_avl_seek and dc_avl_sum_before) is
 * given by a key and a function telling whether the key lies before a
 * node (< 0) or after it (> 0); it never lies on one.
 *
 * Ownership: the caller owns the nodes; a node is in at most one tree.
 * Threads: one owner.
 */
#ifndef DC_AVL_H
#define DC_AVL_H
#include <stddef.h>
#include <stdint.h>

typedef struct dc_avl_node {
  struct dc_avl_node *left, *right, *parent;
  uint64_t weight; /* the node's own: set it before inserting */
  uint64_t sum;    /* weight over the node's subtree */
  size_t size;     /* nodes in the subtree */
  int height;
} dc_avl_node_t;

/* < 0, 0, > 0 as a sorts before, with, after b. */
typedef int(dc_avl_cmp_fn)(const dc_avl_node_t *a, const dc_avl_node_t *b);
/* < 0 when the position key names lies before n, > 0 after it. */
typedef int(dc_avl_key_fn)(const void *key, const dc_avl_node_t *n);

typedef struct dc_avl {
  dc_avl_node_t *root;
  dc_avl_cmp_fn *cmp;
  size_t n;
} dc_avl_t;

void dc_avl_init(dc_avl_t *t, dc_avl_cmp_fn *cmp);
/* Adds n (after any node equal to it). */
void dc_avl_insert(dc_avl_t *t, dc_avl_node_t *n);
/* Takes n, which is in t, out of it. */
void dc_avl_remove(dc_avl_t *t, dc_avl_node_t *n);
/* The first node, or NULL. */
dc_avl_node_t *dc_avl_first(const dc_avl_t *t);
/* The node after n, or NULL. */
dc_avl_node_t *dc_avl_next(const dc_avl_node_t *n);
/* The first node after the position key names, or NULL. */
dc_avl_node_t *dc_avl_seek(const dc_avl_t *t, dc_avl_key_fn *f,
                           const void *key);
/* The weight of the nodes before the position key names; their number
 * into *count (nullable). */
uint64_t dc_avl_sum_before(const dc_avl_t *t, dc_avl_key_fn *f,
                           const void *key, size_t *count);
/* The weight of every node. */
static inline uint64_t dc_avl_sum(const dc_avl_t *t) {
  return t->root ? t->root->sum : 0;
}
/* Sets the weight of n, which is in a tree, and the sums above it. */
void dc_avl_reweigh(dc_avl_node_t *n, uint64_t weight);
#endif
