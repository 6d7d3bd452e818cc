/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small text helpers shared by the library layers.
 *
 * dc_seterr: formats an error sentence into a caller's errstr buffer
 * (librdkafka-style char *errstr, size_t errstr_size); a NULL buffer or
 * size 0 is a no-op, so callers need not check. dc_vseterr takes a
 * va_list, for helpers that add to the sentence or return a code.
 * dc_hexval: the value of one hex digit, or -1.
 * Any thread.
 */
#ifndef DC_TEXT_H
#define DC_TEXT_H
#include <stdarg.h>
#include <stddef.h>

void dc_seterr(char *errstr, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void dc_vseterr(char *errstr, size_t size, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static inline int dc_hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}
#endif
