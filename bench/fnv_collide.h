/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Instance ids whose unseeded 64-bit FNV-1a hashes all end in the same
 * FNV_COLLIDE_BITS bits: in any table of up to 2^20 buckets indexed by
 * the hash's low bits, which is how dynconfd's fleet hashed them before
 * its hash was keyed, they all share one bucket. For bench/fleet and
 * tests/unit/test_fleet_limits.c.
 *
 * FNV-1a's low bits depend only on the low bits of what came before, and
 * its multiplier is odd, so a step can be undone: for every pair of last
 * characters the table below holds the state (low bits) that leads to the
 * target, and an id is a distinct prefix plus the first pair of middle
 * characters whose state is in the table (one try in 256 hits).
 */
#ifndef DC_BENCH_FNV_COLLIDE_H
#define DC_BENCH_FNV_COLLIDE_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FNV_COLLIDE_BITS 20
#define FNV_MASK ((1u << FNV_COLLIDE_BITS) - 1)
#define FNV_PRIME 0x100000001b3ull
#define FNV_BASIS 0xcbf29ce484222325ull

static const char fnv_alphabet[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";

static inline uint64_t fnv1a(const char *s) {
  uint64_t h = FNV_BASIS;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * FNV_PRIME;
  return h;
}

/* The target's low bits: those of fnv1a("target"). */
static inline uint32_t fnv_target(void) {
  return (uint32_t)(fnv1a("target") & FNV_MASK);
}

/* table[state] = 1 + the index of the last pair leading to the target. */
static inline uint16_t *fnv_table(void) {
  static uint16_t *table;
  if (table)
    return table;
  table = calloc((size_t)FNV_MASK + 1, sizeof(*table));
  if (!table)
    return NULL;
  uint64_t inv = FNV_PRIME; /* Newton's steps: FNV_PRIME's inverse */
  for (int i = 0; i < 6; i++)
    inv *= 2 - FNV_PRIME * inv;
  for (int a = 0; a < 64; a++)
    for (int b = 0; b < 64; b++) {
      uint64_t s1 = (fnv_target() * inv) ^ (unsigned char)fnv_alphabet[b];
      uint64_t s0 = (s1 * inv) ^ (unsigned char)fnv_alphabet[a];
      table[s0 & FNV_MASK] = (uint16_t)(1 + a * 64 + b);
    }
  return table;
}

/* The i-th colliding id into id[size] (size >= 24); false without
 * memory for the table. */
static inline bool fnv_collide(unsigned i, char *id, size_t size) {
  uint16_t *table = fnv_table();
  if (!table)
    return false;
  for (unsigned variant = 0;; variant++) {
    int n = snprintf(id, size, "h%07u%c-", i, fnv_alphabet[variant % 64]);
    uint64_t h = fnv1a(id);
    for (int a = 0; a < 64; a++)
      for (int b = 0; b < 64; b++) {
        uint64_t s = (((h ^ (unsigned char)fnv_alphabet[a]) * FNV_PRIME) ^
                      (unsigned char)fnv_alphabet[b]) * FNV_PRIME;
        uint16_t last = table[s & FNV_MASK];
        if (!last)
          continue;
        snprintf(id + n, size - (size_t)n, "%c%c%c%c", fnv_alphabet[a],
                 fnv_alphabet[b], fnv_alphabet[(last - 1) / 64],
                 fnv_alphabet[(last - 1) % 64]);
        return true;
      }
  }
}
#endif
