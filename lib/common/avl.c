/* SPDX-License-Identifier: BSD-2-Clause */
/* The AVL tree (avl.h). Every change retraces from the lowest node it
 * touched to the root, fixing heights and sums and rotating where the
 * heights of two siblings differ by two. */
#include "common/avl.h"

static int height(const dc_avl_node_t *n) { return n ? n->height : 0; }
static uint64_t sum(const dc_avl_node_t *n) { return n ? n->sum : 0; }
static size_t size(const dc_avl_node_t *n) { return n ? n->size : 0; }

static void fix(dc_avl_node_t *n) {
  int l = height(n->left), r = height(n->right);
  n->height = 1 + (l > r ? l : r);
  n->sum = n->weight + sum(n->left) + sum(n->right);
  n->size = 1 + size(n->left) + size(n->right);
}

/* Puts c where old was under p (NULL p: the root). */
static void replace_child(dc_avl_t *t, dc_avl_node_t *p, dc_avl_node_t *old,
                          dc_avl_node_t *c) {
  if (!p)
    t->root = c;
  else if (p->left == old)
    p->left = c;
  else
    p->right = c;
  if (c)
    c->parent = p;
}

static dc_avl_node_t *rotate_left(dc_avl_t *t, dc_avl_node_t *x) {
  dc_avl_node_t *y = x->right;
  replace_child(t, x->parent, x, y);
  x->right = y->left;
  if (x->right)
    x->right->parent = x;
  y->left = x;
  x->parent = y;
  fix(x);
  fix(y);
  return y;
}

static dc_avl_node_t *rotate_right(dc_avl_t *t, dc_avl_node_t *x) {
  dc_avl_node_t *y = x->left;
  replace_child(t, x->parent, x, y);
  x->left = y->right;
  if (x->left)
    x->left->parent = x;
  y->right = x;
  x->parent = y;
  fix(x);
  fix(y);
  return y;
}

/* Fixes n and rotates it back into balance: the subtree's new root. */
static dc_avl_node_t *balance(dc_avl_t *t, dc_avl_node_t *n) {
  fix(n);
  int bf = height(n->left) - height(n->right);
  if (bf > 1) {
    if (height(n->left->left) < height(n->left->right))
      rotate_left(t, n->left);
    return rotate_right(t, n);
  }
  if (bf < -1) {
    if (height(n->right->right) < height(n->right->left))
      rotate_right(t, n->right);
    return rotate_left(t, n);
  }
  return n;
}

static void retrace(dc_avl_t *t, dc_avl_node_t *n) {
  for (; n; n = n->parent)
    n = balance(t, n);
}

void dc_avl_init(dc_avl_t *t, dc_avl_cmp_fn *cmp) {
  *t = (dc_avl_t){.cmp = cmp};
}

void dc_avl_insert(dc_avl_t *t, dc_avl_node_t *n) {
  dc_avl_node_t *p = NULL, **link = &t->root;
  while (*link) {
    p = *link;
    link = t->cmp(n, p) < 0 ? &p->left : &p->right;
  }
  n->left = n->right = NULL;
  n->parent = p;
  n->height = 1;
  n->sum = n->weight;
  n->size = 1;
  *link = n;
  t->n++;
  retrace(t, p);
}

void dc_avl_remove(dc_avl_t *t, dc_avl_node_t *n) {
  dc_avl_node_t *from; /* the lowest node whose subtree changed */
  if (n->left && n->right) { /* its successor s takes its place */
    dc_avl_node_t *s = n->right;
    while (s->left)
      s = s->left;
    from = s->parent == n ? s : s->parent;
    if (s->parent != n) {
      replace_child(t, s->parent, s, s->right);
      s->right = n->right;
      s->right->parent = s;
    }
    s->left = n->left;
    s->left->parent = s;
    replace_child(t, n->parent, n, s);
  } else {
    from = n->parent;
    replace_child(t, n->parent, n, n->left ? n->left : n->right);
  }
  n->left = n->right = n->parent = NULL;
  t->n--;
  retrace(t, from);
}

dc_avl_node_t *dc_avl_first(const dc_avl_t *t) {
  dc_avl_node_t *n = t->root;
  while (n && n->left)
    n = n->left;
  return n;
}

dc_avl_node_t *dc_avl_next(const dc_avl_node_t *n) {
  if (n->right) {
    n = n->right;
    while (n->left)
      n = n->left;
    return (dc_avl_node_t *)n;
  }
  while (n->parent && n->parent->right == n)
    n = n->parent;
  return n->parent;
}

dc_avl_node_t *dc_avl_seek(const dc_avl_t *t, dc_avl_key_fn *f,
                           const void *key) {
  dc_avl_node_t *n = t->root, *best = NULL;
  while (n)
    if (f(key, n) < 0) {
      best = n;
      n = n->left;
    } else {
      n = n->right;
    }
  return best;
}

uint64_t dc_avl_sum_before(const dc_avl_t *t, dc_avl_key_fn *f,
                           const void *key, size_t *count) {
  uint64_t before = 0;
  size_t nodes = 0;
  for (dc_avl_node_t *n = t->root; n;)
    if (f(key, n) < 0) {
      n = n->left;
    } else {
      before += sum(n->left) + n->weight;
      nodes += size(n->left) + 1;
      n = n->right;
    }
  if (count)
    *count = nodes;
  return before;
}

void dc_avl_reweigh(dc_avl_node_t *n, uint64_t weight) {
  n->weight = weight;
  for (; n; n = n->parent)
    n->sum = n->weight + sum(n->left) + sum(n->right);
}
