/* SPDX-License-Identifier: BSD-2-Clause */
/* loadgen's latency histogram, inline: it is on every response's path. */
#ifndef LG_HIST_H
#define LG_HIST_H

#include <stddef.h>
#include <stdint.h>

/* Values in nanoseconds. Below 2*SUB exact; above, SUB linear sub-buckets
 * per power of two, so the relative error stays under 1/SUB. */
#define H_SUB_BITS 10
#define H_SUB (1u << H_SUB_BITS)
#define H_MAX_BITS 40 /* values are clamped to 2^40 ns (~18 min) */
#define H_BUCKETS (2 * H_SUB + (H_MAX_BITS - H_SUB_BITS) * H_SUB)

typedef struct hist {
  uint64_t count[H_BUCKETS];
  uint64_t total, max;
} hist_t;

static inline size_t h_index(uint64_t v) {
  if (v >= (1ull << H_MAX_BITS))
    v = (1ull << H_MAX_BITS) - 1;
  if (v < 2 * H_SUB)
    return (size_t)v;
  int msb = 63 - __builtin_clzll(v);
  int s = msb - H_SUB_BITS; /* >= 1: v >> s lies in [SUB, 2*SUB) */
  return 2 * H_SUB + (size_t)(s - 1) * H_SUB + (size_t)((v >> s) - H_SUB);
}

/* Highest value that maps to bucket i. */
static inline uint64_t h_value(size_t i) {
  if (i < 2 * H_SUB)
    return i;
  size_t s = (i - 2 * H_SUB) / H_SUB + 1;
  uint64_t m = (i - 2 * H_SUB) % H_SUB + H_SUB;
  return ((m + 1) << s) - 1;
}

static inline void h_record(hist_t *h, uint64_t v) {
  h->count[h_index(v)]++;
  h->total++;
  if (v > h->max)
    h->max = v;
}

static inline uint64_t h_percentile(const hist_t *h, double p) {
  if (!h->total)
    return 0;
  uint64_t want = (uint64_t)(p / 100.0 * (double)h->total + 0.999999);
  if (want < 1)
    want = 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < H_BUCKETS; i++) {
    seen += h->count[i];
    if (seen >= want)
      return h_value(i) < h->max ? h_value(i) : h->max;
  }
  return h->max;
}

#endif
