/* SPDX-License-Identifier: BSD-2-Clause */
/* Minimal TAP producer for C tests: ok(), is_int(), is_str(), is_mem(),
 * diag(), done_testing(). Header-only; each test program includes it once. */
#ifndef DC_TAP_H
#define DC_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

__attribute__((format(printf, 2, 3))) static int tap_ok(int cond, const char *fmt, ...) {
  va_list ap;
  tap_n++;
  if (!cond)
    tap_failed++;
  printf("%sok %d - ", cond ? "" : "not ", tap_n);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  if (!cond) { /* prove shows stderr: a failure's words reach the CI log */
    fprintf(stderr, "not ok %d - ", tap_n);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
  }
  return cond;
}
#define ok(cond, ...) tap_ok(!!(cond), __VA_ARGS__)
#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))
#define is_int(got, want, ...)                                                 \
  do {                                                                         \
    long long g_ = (long long)(got), w_ = (long long)(want);                   \
    if (!ok(g_ == w_, __VA_ARGS__))                                            \
      diag("  got %lld, want %lld (%s:%d)", g_, w_, __FILE__, __LINE__);       \
  } while (0)
#define is_str(got, want, ...)                                                 \
  do {                                                                         \
    const char *g_ = (got), *w_ = (want);                                      \
    int eq_ = (g_ == NULL && w_ == NULL) || (g_ && w_ && !strcmp(g_, w_));     \
    if (!ok(eq_, __VA_ARGS__))                                                 \
      diag("  got \"%s\", want \"%s\" (%s:%d)", g_ ? g_ : "(null)",            \
           w_ ? w_ : "(null)", __FILE__, __LINE__);                            \
  } while (0)
#define is_mem(got, glen, want, wlen, ...)                                     \
  do {                                                                         \
    const unsigned char *g_ = (const unsigned char *)(got),                    \
                        *w_ = (const unsigned char *)(want);                   \
    size_t gl_ = (glen), wl_ = (wlen);                                         \
    int eq_ = gl_ == wl_ && (gl_ == 0 || !memcmp(g_, w_, gl_));                \
    if (!ok(eq_, __VA_ARGS__)) {                                               \
      printf("#   got  %zu bytes:", gl_);                                      \
      for (size_t i_ = 0; i_ < gl_; i_++)                                      \
        printf(" %02x", g_[i_]);                                               \
      printf("\n#   want %zu bytes:", wl_);                                    \
      for (size_t i_ = 0; i_ < wl_; i_++)                                      \
        printf(" %02x", w_[i_]);                                               \
      printf(" (%s:%d)\n", __FILE__, __LINE__);                                \
    }                                                                          \
  } while (0)
static inline int done_testing(void) {
  printf("1..%d\n", tap_n);
  return tap_failed ? 1 : 0;
}
#endif
