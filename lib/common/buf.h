/* SPDX-License-Identifier: BSD-2-Clause */
/* Growable byte buffer. The buffer owns data; dc_buf_free() releases it.
 * Writes after an allocation failure are ignored and set err, so encoders
 * check once at the end. Not thread-safe: one owner. */
#ifndef DC_BUF_H
#define DC_BUF_H
#include <stddef.h>
#include <stdint.h>

typedef struct dc_buf {
  uint8_t *data;
  size_t len, cap;
  int err; /* sticky: 0, DC_ERR__NOMEM, or an encoder's error such as
              DC_ERR__TOO_LONG (codec/wire.h) */
} dc_buf_t;

void dc_buf_init(dc_buf_t *b);
void dc_buf_free(dc_buf_t *b);
/* Empty the buffer, keep its memory. */
static inline void dc_buf_clear(dc_buf_t *b) { b->len = 0; b->err = 0; }
/* Make room for n more bytes; 0 or -1 (and err set). */
int dc_buf_reserve(dc_buf_t *b, size_t n);
void dc_buf_append(dc_buf_t *b, const void *p, size_t n);
/* Drop the first n bytes (consumed input). */
void dc_buf_consume(dc_buf_t *b, size_t n);
/* printf-style append, for text output. */
void dc_buf_printf(dc_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#endif
