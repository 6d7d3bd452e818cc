/* SPDX-License-Identifier: BSD-2-Clause */
#include "buf.h"

#include "common/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dc_buf_init(dc_buf_t *b) { memset(b, 0, sizeof(*b)); }

void dc_buf_free(dc_buf_t *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

int dc_buf_reserve(dc_buf_t *b, size_t n) {
  if (b->err)
    return -1;
  if (b->cap - b->len >= n)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < n) {
    if (cap > SIZE_MAX / 2) {
      b->err = DC_ERR__NOMEM;
      return -1;
    }
    cap *= 2;
  }
  uint8_t *d = realloc(b->data, cap);
  if (!d) {
    b->err = DC_ERR__NOMEM;
    return -1;
  }
  b->data = d;
  b->cap = cap;
  return 0;
}

void dc_buf_append(dc_buf_t *b, const void *p, size_t n) {
  if (n == 0 || dc_buf_reserve(b, n))
    return;
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

void dc_buf_consume(dc_buf_t *b, size_t n) {
  if (n >= b->len) {
    b->len = 0;
    return;
  }
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
}

void dc_buf_printf(dc_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || dc_buf_reserve(b, (size_t)n + 1))
    return;
  va_start(ap, fmt);
  vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}
