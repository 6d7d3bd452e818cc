/* SPDX-License-Identifier: BSD-2-Clause */
/* Small text helpers; see text.h. */
#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>

void dc_vseterr(char *errstr, size_t size, const char *fmt, va_list ap) {
  if (errstr && size)
    vsnprintf(errstr, size, fmt, ap);
}

void dc_seterr(char *errstr, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dc_vseterr(errstr, size, fmt, ap);
  va_end(ap);
}
