/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kafka wire primitives: a bounds-checked reader over a byte slice and a
 * writer into a dc_buf_t. Pure: no sockets, no globals.
 *
 * Reader errors are sticky: the first failure sets rd->err (a negative
 * dc_err_t) and every later read returns 0/NULL, so a decoder reads
 * straight through and checks rd->err once. Decoded strings and arrays are
 * allocated in rd->arena and live until that arena is reset.
 */
#ifndef DC_WIRE_H
#define DC_WIRE_H

#include "../common/arena.h"
#include "../common/buf.h"
#include "../common/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dc_rd {
  const uint8_t *p;
  size_t len;
  size_t pos;
  int err;           /* 0 or negative dc_err_t, sticky */
  dc_arena_t *arena; /* owner of decoded strings and arrays */
} dc_rd_t;

void dc_rd_init(dc_rd_t *rd, const void *p, size_t len, dc_arena_t *arena);
static inline size_t dc_rd_remaining(const dc_rd_t *rd) {
  return rd->err ? 0 : rd->len - rd->pos;
}
/* Record an error unless one is already recorded. */
void dc_rd_fail(dc_rd_t *rd, int err);

int8_t dc_rd_i8(dc_rd_t *rd);
int16_t dc_rd_i16(dc_rd_t *rd);
int32_t dc_rd_i32(dc_rd_t *rd);
int64_t dc_rd_i64(dc_rd_t *rd);
/* 0 -> false, 1 -> true, anything else -> DC_ERR__BAD_BOOL. */
bool dc_rd_bool(dc_rd_t *rd);
/* Unsigned LEB128 of at most 5 bytes (fits uint32). */
uint32_t dc_rd_uvarint(dc_rd_t *rd);
void dc_rd_uuid(dc_rd_t *rd, uint8_t out[16]);
/* String: classic (int16 length) or compact (uvarint length+1).
 * Returns a NUL-terminated arena copy, or NULL for a null string (only
 * accepted when nullable; otherwise _BAD_LENGTH). Embedded NUL bytes give
 * _BAD_STRING. */
char *dc_rd_str(dc_rd_t *rd, bool flexible, bool nullable);
/* Bytes: classic (int32 length) or compact. *lenp = -1 for null. The result
 * points into the arena. */
const uint8_t *dc_rd_bytes(dc_rd_t *rd, bool flexible, bool nullable,
                           int32_t *lenp);
/* Array length: classic (int32) or compact (uvarint n+1). Returns -1 for a
 * null array (only when nullable), else the count. A count that cannot fit
 * in the remaining input at min_elem_size bytes per element is
 * _BAD_LENGTH, which bounds every allocation by the input size. */
int32_t dc_rd_array_len(dc_rd_t *rd, bool flexible, bool nullable,
                        size_t min_elem_size);
/* Allocate n zeroed elements of size sz in the arena (n may be 0). */
void *dc_rd_alloc(dc_rd_t *rd, size_t n, size_t sz);
/* Skip a tagged-field section (flexible versions only): unknown tags are
 * ignored, as Kafka does. */
void dc_rd_tags(dc_rd_t *rd);
/* The same, keeping the int64 of tag `want` (def when it is absent or is
 * not 8 bytes long). */
int64_t dc_rd_tags_i64(dc_rd_t *rd, uint32_t want, int64_t def);
/* One tagged field: its tag and its bytes (p NULL = absent). */
typedef struct dc_tag {
  uint32_t tag;
  const uint8_t *p;
  uint32_t len;
} dc_tag_t;
/* The same, keeping the bytes of each tag asked for in t[0..n) (t[i].tag
 * set by the caller): p points into the arena, or is NULL when the tag is
 * absent. Other tags are skipped. */
void dc_rd_tags_find(dc_rd_t *rd, dc_tag_t *t, size_t n);

/* Writer: appends big-endian fields to b. Errors are sticky in b->err:
 * _NOMEM from the buffer, or _TOO_LONG for a string longer than its length
 * field can state (classic: INT16_MAX bytes; compact: UINT32_MAX - 1) or a
 * frame above INT32_MAX bytes. Nothing is written for the failing field or
 * after it, so a response is never silently cut short. */
void dc_wr_i8(dc_buf_t *b, int8_t v);
void dc_wr_i16(dc_buf_t *b, int16_t v);
void dc_wr_i32(dc_buf_t *b, int32_t v);
void dc_wr_i64(dc_buf_t *b, int64_t v);
void dc_wr_bool(dc_buf_t *b, bool v);
void dc_wr_uvarint(dc_buf_t *b, uint32_t v);
void dc_wr_uuid(dc_buf_t *b, const uint8_t v[16]);
/* s == NULL writes a null string. */
void dc_wr_str(dc_buf_t *b, bool flexible, const char *s);
void dc_wr_strn(dc_buf_t *b, bool flexible, const char *s, size_t n);
/* p == NULL writes null bytes. */
void dc_wr_bytes(dc_buf_t *b, bool flexible, const void *p, int32_t n);
/* n == -1 writes a null array. */
void dc_wr_array_len(dc_buf_t *b, bool flexible, int32_t n);
/* An empty tagged-field section (the only kind we send: librdkafka 2.0.2
 * mis-skips non-empty ones). */
void dc_wr_tags_empty(dc_buf_t *b);
/* A tagged-field section of one int64 field, tag `tag`: only for peers
 * that are dynconf's own (a dynconfd forwarding to another). */
void dc_wr_tag_i64(dc_buf_t *b, uint32_t tag, int64_t v);
/* A tagged-field section of the fields in t[0..n) whose p is set, in
 * strictly increasing tag order (as Kafka requires; out of order is
 * _BAD_LENGTH and nothing is written): dynconf's own peers only. */
void dc_wr_tags(dc_buf_t *b, const dc_tag_t *t, size_t n);

/* Helpers shared by the message codecs. */
/* Smallest encodings of a string, an array and a tag section: decoders
 * bound array counts by the remaining input with them. */
static inline size_t dc_str_min(bool flexible) { return flexible ? 1 : 2; }
static inline size_t dc_arr_min(bool flexible) { return flexible ? 1 : 4; }
static inline size_t dc_tags_min(bool flexible) { return flexible ? 1 : 0; }
/* A non-nullable string: NULL goes out as "" rather than an invalid null. */
static inline void dc_wr_str_nn(dc_buf_t *b, bool flexible, const char *s) {
  dc_wr_str(b, flexible, s ? s : "");
}
/* A non-nullable array's count: negative goes out as empty. */
static inline int32_t dc_nn_count(int32_t n) { return n < 0 ? 0 : n; }

/* Frames: int32 size (excluding itself), then header and body. */
/* Start a frame: reserves the size field, returns its offset. */
size_t dc_wr_frame_begin(dc_buf_t *b);
/* Patch the size field written at off (_TOO_LONG above INT32_MAX). */
void dc_wr_frame_end(dc_buf_t *b, size_t off);
/* Look at buffered input: 0 = need more bytes, 1 = a complete frame whose
 * payload size is *sizep (payload starts 4 bytes in), or a negative error:
 * _BAD_LENGTH for a negative size, _FRAME_TOO_LARGE above max. */
int dc_frame_peek(const uint8_t *p, size_t avail, size_t max, int32_t *sizep);

#endif
