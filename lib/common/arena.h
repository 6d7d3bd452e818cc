/* SPDX-License-Identifier: BSD-2-Clause */
/* Bump allocator: many small allocations freed together. Used for decoded
 * messages, whose strings and arrays all die with the request. */
#ifndef DC_ARENA_H
#define DC_ARENA_H
#include <stddef.h>

typedef struct dc_arena_chunk dc_arena_chunk_t;

/* Zero-initialise (dc_arena_t a = {0}) or dc_arena_init(). The arena owns
 * every chunk; dc_arena_reset() keeps the first chunk for reuse,
 * dc_arena_free() releases everything. Not thread-safe: one owner. */
typedef struct dc_arena {
  dc_arena_chunk_t *head;
  size_t total; /* bytes handed out since the last reset */
} dc_arena_t;

void dc_arena_init(dc_arena_t *a);
/* Zeroed, 16-byte-aligned memory; NULL on OOM. n == 0 returns a valid
 * non-NULL pointer. */
void *dc_arena_alloc(dc_arena_t *a, size_t n);
/* Copy of s[0..n) plus a terminating NUL; NULL on OOM. */
char *dc_arena_strndup(dc_arena_t *a, const char *s, size_t n);
char *dc_arena_strdup(dc_arena_t *a, const char *s);
void dc_arena_reset(dc_arena_t *a);

/* A point to return to: dc_arena_reset_to() releases everything allocated
 * after dc_arena_mark() returned it, and keeps what came before. */
typedef struct dc_arena_mark {
  dc_arena_chunk_t *chunk;
  size_t used, total;
} dc_arena_mark_t;
dc_arena_mark_t dc_arena_mark(const dc_arena_t *a);
void dc_arena_reset_to(dc_arena_t *a, dc_arena_mark_t m);
void dc_arena_free(dc_arena_t *a);
/* dc_arena_free() after zeroing every chunk, for an arena that held
 * secrets (passwords, keys): freed memory keeps no copy of them. */
void dc_arena_free_wiped(dc_arena_t *a);
#endif
