/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* explicit_bzero */
#endif
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct dc_arena_chunk {
  dc_arena_chunk_t *next;
  size_t size, used;
  _Alignas(16) unsigned char mem[];
};

#define DC_ARENA_CHUNK 4096

void dc_arena_init(dc_arena_t *a) { memset(a, 0, sizeof(*a)); }

void *dc_arena_alloc(dc_arena_t *a, size_t n) {
  size_t need = (n + 15) & ~(size_t)15;
  if (need < n)
    return NULL;
  dc_arena_chunk_t *c = a->head;
  if (!c || c->size - c->used < need) {
    size_t sz = need > DC_ARENA_CHUNK ? need : DC_ARENA_CHUNK;
    if (sz > SIZE_MAX - sizeof(*c))
      return NULL;
    c = malloc(sizeof(*c) + sz);
    if (!c)
      return NULL;
    c->size = sz;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->mem + c->used;
  c->used += need;
  a->total += need;
  memset(p, 0, need ? need : 0);
  return p;
}

char *dc_arena_strndup(dc_arena_t *a, const char *s, size_t n) {
  char *d = dc_arena_alloc(a, n + 1);
  if (!d)
    return NULL;
  if (n)
    memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *dc_arena_strdup(dc_arena_t *a, const char *s) {
  return dc_arena_strndup(a, s, strlen(s));
}

void dc_arena_reset(dc_arena_t *a) {
  /* Keep the oldest chunk (the tail) so steady-state requests never malloc. */
  dc_arena_chunk_t *c = a->head, *keep = NULL;
  while (c) {
    dc_arena_chunk_t *next = c->next;
    if (!next && c->size == DC_ARENA_CHUNK)
      keep = c;
    else
      free(c);
    c = next;
  }
  if (keep)
    keep->used = 0;
  a->head = keep;
  a->total = 0;
}

dc_arena_mark_t dc_arena_mark(const dc_arena_t *a) {
  return (dc_arena_mark_t){a->head, a->head ? a->head->used : 0, a->total};
}

void dc_arena_reset_to(dc_arena_t *a, dc_arena_mark_t m) {
  while (a->head && a->head != m.chunk) {
    dc_arena_chunk_t *next = a->head->next;
    free(a->head);
    a->head = next;
  }
  if (a->head)
    a->head->used = m.used;
  a->total = m.total;
}

void dc_arena_free(dc_arena_t *a) {
  dc_arena_chunk_t *c = a->head;
  while (c) {
    dc_arena_chunk_t *next = c->next;
    free(c);
    c = next;
  }
  a->head = NULL;
  a->total = 0;
}

void dc_arena_free_wiped(dc_arena_t *a) {
  for (dc_arena_chunk_t *c = a->head; c; c = c->next)
    explicit_bzero(c->mem, c->size);
  dc_arena_free(a);
}
