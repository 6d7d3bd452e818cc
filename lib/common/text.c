/* SPDX-License-Identifier: BSD-2-Clause */
/* Small text helpers; see text.h. */
#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>

void dc_seterr(char *errstr, size_t size, const char *fmt, ...) {
  if (!errstr || size == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errstr, size, fmt, ap);
  va_end(ap);
}
