/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pieces shared by the codec tests (test_codec_basic.c, test_codec_sasl.c):
 * the deep-compare CHECK macro with its first-mismatch note, string
 * equality with NULLs, and the truncation check. Header-only; include it
 * once per test program, after tap.h.
 */
#ifndef DC_CODECTEST_H
#define DC_CODECTEST_H
#include "codec/proto.h"
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* First mismatch found by a deep compare, for the diagnostic. */
static const char *mismatch;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      if (!mismatch)                                                           \
        mismatch = #cond;                                                      \
      return 0;                                                                \
    }                                                                          \
  } while (0)

static inline int str_eq(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Decoding every strict prefix of p must fail (negative, equal to rd.err,
 * never 0). Each attempt gets a fresh reader and arena, and reads from an
 * exact-size heap copy so that valgrind/ASan flag any read past the end.
 * Returns the number of prefixes that did not fail, or -1 on no memory. */
typedef int (*decode_fn)(dc_rd_t *rd, int16_t v);

static inline int truncation_failures(decode_fn fn, int16_t v,
                                      const uint8_t *p, size_t len) {
  int bad = 0;
  for (size_t n = 0; n < len; n++) {
    dc_arena_t a;
    dc_arena_init(&a);
    uint8_t *copy = malloc(n ? n : 1); /* owned here, freed below */
    if (!copy) {
      dc_arena_free(&a);
      return -1;
    }
    memcpy(copy, p, n);
    dc_rd_t rd;
    dc_rd_init(&rd, copy, n, &a);
    int rc = fn(&rd, v);
    if (rc >= 0 || rc != rd.err) {
      if (!bad)
        diag("  prefix %zu of %zu decoded with rc %d", n, len, rc);
      bad++;
    }
    free(copy);
    dc_arena_free(&a);
  }
  return bad;
}
#endif
