/* SPDX-License-Identifier: BSD-2-Clause */
#include "wire.h"

#include <string.h>

void dc_rd_init(dc_rd_t *rd, const void *p, size_t len, dc_arena_t *arena) {
  rd->p = p;
  rd->len = len;
  rd->pos = 0;
  rd->err = 0;
  rd->arena = arena;
}

void dc_rd_fail(dc_rd_t *rd, int err) {
  if (!rd->err)
    rd->err = err;
}

/* Returns a pointer to n readable bytes and advances, or NULL. */
static const uint8_t *take(dc_rd_t *rd, size_t n) {
  if (rd->err)
    return NULL;
  if (rd->len - rd->pos < n) {
    rd->err = DC_ERR__TRUNCATED;
    return NULL;
  }
  const uint8_t *q = rd->p + rd->pos;
  rd->pos += n;
  return q;
}

int8_t dc_rd_i8(dc_rd_t *rd) {
  const uint8_t *q = take(rd, 1);
  return q ? (int8_t)q[0] : 0;
}

int16_t dc_rd_i16(dc_rd_t *rd) {
  const uint8_t *q = take(rd, 2);
  return q ? (int16_t)(uint16_t)((q[0] << 8) | q[1]) : 0;
}

int32_t dc_rd_i32(dc_rd_t *rd) {
  const uint8_t *q = take(rd, 4);
  if (!q)
    return 0;
  return (int32_t)(((uint32_t)q[0] << 24) | ((uint32_t)q[1] << 16) |
                   ((uint32_t)q[2] << 8) | q[3]);
}

int64_t dc_rd_i64(dc_rd_t *rd) {
  const uint8_t *q = take(rd, 8);
  if (!q)
    return 0;
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = (v << 8) | q[i];
  return (int64_t)v;
}

bool dc_rd_bool(dc_rd_t *rd) {
  const uint8_t *q = take(rd, 1);
  if (!q)
    return false;
  if (q[0] > 1) {
    dc_rd_fail(rd, DC_ERR__BAD_BOOL);
    return false;
  }
  return q[0] == 1;
}

uint32_t dc_rd_uvarint(dc_rd_t *rd) {
  uint32_t v = 0;
  for (int i = 0; i < 5; i++) {
    const uint8_t *q = take(rd, 1);
    if (!q)
      return 0;
    /* The fifth byte may carry only the top 4 bits of a uint32. */
    if (i == 4 && (q[0] & 0xf0)) {
      dc_rd_fail(rd, DC_ERR__BAD_VARINT);
      return 0;
    }
    v |= (uint32_t)(q[0] & 0x7f) << (7 * i);
    if (!(q[0] & 0x80))
      return v;
  }
  dc_rd_fail(rd, DC_ERR__BAD_VARINT);
  return 0;
}

void dc_rd_uuid(dc_rd_t *rd, uint8_t out[16]) {
  const uint8_t *q = take(rd, 16);
  if (q)
    memcpy(out, q, 16);
  else
    memset(out, 0, 16);
}

/* Length of a string/bytes field: -1 null, else >= 0; -2 on error. */
static int64_t rd_len(dc_rd_t *rd, bool flexible, bool wide, bool nullable) {
  int64_t n;
  if (flexible)
    n = (int64_t)dc_rd_uvarint(rd) - 1;
  else
    n = wide ? dc_rd_i32(rd) : dc_rd_i16(rd);
  if (rd->err)
    return -2;
  if (n < -1 || (n == -1 && !nullable)) {
    dc_rd_fail(rd, DC_ERR__BAD_LENGTH);
    return -2;
  }
  if (n > 0 && (uint64_t)n > rd->len - rd->pos) {
    dc_rd_fail(rd, DC_ERR__TRUNCATED);
    return -2;
  }
  return n;
}

char *dc_rd_str(dc_rd_t *rd, bool flexible, bool nullable) {
  int64_t n = rd_len(rd, flexible, false, nullable);
  if (n < 0)
    return NULL;
  const uint8_t *q = take(rd, (size_t)n);
  if (!q)
    return NULL;
  if (n && memchr(q, 0, (size_t)n)) {
    dc_rd_fail(rd, DC_ERR__BAD_STRING);
    return NULL;
  }
  char *s = dc_arena_strndup(rd->arena, (const char *)q, (size_t)n);
  if (!s)
    dc_rd_fail(rd, DC_ERR__NOMEM);
  return s;
}

const uint8_t *dc_rd_bytes(dc_rd_t *rd, bool flexible, bool nullable,
                           int32_t *lenp) {
  int64_t n = rd_len(rd, flexible, true, nullable);
  *lenp = n < 0 ? -1 : (int32_t)n;
  if (n < 0)
    return NULL;
  const uint8_t *q = take(rd, (size_t)n);
  if (!q)
    return NULL;
  uint8_t *d = dc_arena_alloc(rd->arena, (size_t)n);
  if (!d) {
    dc_rd_fail(rd, DC_ERR__NOMEM);
    return NULL;
  }
  memcpy(d, q, (size_t)n);
  return d;
}

int32_t dc_rd_array_len(dc_rd_t *rd, bool flexible, bool nullable,
                        size_t min_elem_size) {
  int64_t n = flexible ? (int64_t)dc_rd_uvarint(rd) - 1 : dc_rd_i32(rd);
  if (rd->err)
    return 0;
  if (n < -1 || (n == -1 && !nullable)) {
    dc_rd_fail(rd, DC_ERR__BAD_LENGTH);
    return 0;
  }
  if (n > 0 && (uint64_t)n * (min_elem_size ? min_elem_size : 1) >
                   rd->len - rd->pos) {
    dc_rd_fail(rd, DC_ERR__BAD_LENGTH);
    return 0;
  }
  return (int32_t)n;
}

void *dc_rd_alloc(dc_rd_t *rd, size_t n, size_t sz) {
  if (rd->err)
    return NULL;
  if (sz && n > SIZE_MAX / sz) {
    dc_rd_fail(rd, DC_ERR__NOMEM);
    return NULL;
  }
  void *p = dc_arena_alloc(rd->arena, n * sz);
  if (!p)
    dc_rd_fail(rd, DC_ERR__NOMEM);
  return p;
}

/* Reads a tag section; the fields of t[0..n) found point at their bytes
 * in the input (copy: in the arena), the others are skipped. */
static void tags_scan(dc_rd_t *rd, dc_tag_t *t, size_t n, bool copy) {
  for (size_t i = 0; i < n; i++)
    t[i].p = NULL;
  uint32_t count = dc_rd_uvarint(rd);
  int64_t last = -1;
  for (uint32_t i = 0; i < count && !rd->err; i++) {
    uint32_t tag = dc_rd_uvarint(rd);
    uint32_t size = dc_rd_uvarint(rd);
    if (rd->err)
      return;
    /* Kafka requires strictly increasing tags. */
    if ((int64_t)tag <= last) {
      dc_rd_fail(rd, DC_ERR__BAD_LENGTH);
      return;
    }
    last = tag;
    const uint8_t *q = take(rd, size);
    for (size_t j = 0; q && j < n; j++) {
      if (t[j].tag != tag)
        continue;
      uint8_t *d = copy ? dc_arena_alloc(rd->arena, size ? size : 1) : NULL;
      if (copy && !d) {
        dc_rd_fail(rd, DC_ERR__NOMEM);
        return;
      }
      if (d)
        memcpy(d, q, size);
      t[j].p = copy ? d : q;
      t[j].len = size;
    }
  }
}

int64_t dc_rd_tags_i64(dc_rd_t *rd, uint32_t want, int64_t def) {
  dc_tag_t t = {.tag = want};
  tags_scan(rd, &t, 1, false);
  if (rd->err || !t.p || t.len != 8)
    return def;
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = (v << 8) | t.p[i];
  return (int64_t)v;
}

void dc_rd_tags_find(dc_rd_t *rd, dc_tag_t *t, size_t n) {
  tags_scan(rd, t, n, true);
  for (size_t i = 0; rd->err && i < n; i++)
    t[i].p = NULL;
}

void dc_rd_tags(dc_rd_t *rd) { tags_scan(rd, NULL, 0, false); }

/* Inlined with a constant n when there is room: a fixed-size write is a
 * store, not a call. */
static inline void put(dc_buf_t *b, const uint8_t *q, size_t n) {
  if (!b->err && b->cap - b->len >= n) {
    memcpy(b->data + b->len, q, n);
    b->len += n;
  } else {
    dc_buf_append(b, q, n);
  }
}

void dc_wr_i8(dc_buf_t *b, int8_t v) {
  uint8_t q = (uint8_t)v;
  put(b, &q, 1);
}

void dc_wr_i16(dc_buf_t *b, int16_t v) {
  uint16_t u = (uint16_t)v;
  uint8_t q[2] = {(uint8_t)(u >> 8), (uint8_t)u};
  put(b, q, 2);
}

void dc_wr_i32(dc_buf_t *b, int32_t v) {
  uint32_t u = (uint32_t)v;
  uint8_t q[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8),
                  (uint8_t)u};
  put(b, q, 4);
}

void dc_wr_i64(dc_buf_t *b, int64_t v) {
  uint64_t u = (uint64_t)v;
  uint8_t q[8];
  for (int i = 7; i >= 0; i--) {
    q[i] = (uint8_t)u;
    u >>= 8;
  }
  put(b, q, 8);
}

void dc_wr_bool(dc_buf_t *b, bool v) { dc_wr_i8(b, v ? 1 : 0); }

void dc_wr_uvarint(dc_buf_t *b, uint32_t v) {
  uint8_t q[5];
  size_t n = 0;
  while (v >= 0x80) {
    q[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  q[n++] = (uint8_t)v;
  put(b, q, n);
}

void dc_wr_uuid(dc_buf_t *b, const uint8_t v[16]) { put(b, v, 16); }

/* Records err unless an error is already recorded; later writes are then
 * dropped (dc_buf_reserve refuses them). */
static void wr_fail(dc_buf_t *b, int err) {
  if (!b->err)
    b->err = err;
}

void dc_wr_strn(dc_buf_t *b, bool flexible, const char *s, size_t n) {
  if (!s) {
    if (flexible)
      dc_wr_uvarint(b, 0);
    else
      dc_wr_i16(b, -1);
    return;
  }
  /* A string its length field cannot describe is an error, never a
   * truncated string: a shorter value would be just as well-formed. */
  if (flexible ? n >= UINT32_MAX : n > INT16_MAX) {
    wr_fail(b, DC_ERR__TOO_LONG);
    return;
  }
  if (flexible)
    dc_wr_uvarint(b, (uint32_t)n + 1);
  else
    dc_wr_i16(b, (int16_t)n);
  put(b, (const uint8_t *)s, n);
}

void dc_wr_str(dc_buf_t *b, bool flexible, const char *s) {
  dc_wr_strn(b, flexible, s, s ? strlen(s) : 0);
}

void dc_wr_bytes(dc_buf_t *b, bool flexible, const void *p, int32_t n) {
  if (!p || n < 0) {
    if (flexible)
      dc_wr_uvarint(b, 0);
    else
      dc_wr_i32(b, -1);
    return;
  }
  if (flexible)
    dc_wr_uvarint(b, (uint32_t)n + 1);
  else
    dc_wr_i32(b, n);
  put(b, p, (size_t)n);
}

void dc_wr_array_len(dc_buf_t *b, bool flexible, int32_t n) {
  if (flexible)
    dc_wr_uvarint(b, n < 0 ? 0 : (uint32_t)n + 1);
  else
    dc_wr_i32(b, n < 0 ? -1 : n);
}

void dc_wr_tags_empty(dc_buf_t *b) { dc_wr_uvarint(b, 0); }

void dc_wr_tag_i64(dc_buf_t *b, uint32_t tag, int64_t v) {
  dc_wr_uvarint(b, 1);
  dc_wr_uvarint(b, tag);
  dc_wr_uvarint(b, 8);
  dc_wr_i64(b, v);
}

void dc_wr_tags(dc_buf_t *b, const dc_tag_t *t, size_t n) {
  uint32_t count = 0;
  int64_t last = -1;
  for (size_t i = 0; i < n; i++) {
    if (!t[i].p)
      continue;
    if ((int64_t)t[i].tag <= last) {
      wr_fail(b, DC_ERR__BAD_LENGTH);
      return;
    }
    last = t[i].tag;
    count++;
  }
  dc_wr_uvarint(b, count);
  for (size_t i = 0; i < n; i++) {
    if (!t[i].p)
      continue;
    dc_wr_uvarint(b, t[i].tag);
    dc_wr_uvarint(b, t[i].len);
    put(b, t[i].p, t[i].len);
  }
}

size_t dc_wr_frame_begin(dc_buf_t *b) {
  size_t off = b->len;
  dc_wr_i32(b, 0);
  return off;
}

void dc_wr_frame_end(dc_buf_t *b, size_t off) {
  if (b->err || off + 4 > b->len)
    return;
  if (b->len - off - 4 > INT32_MAX) { /* the size field is an int32 */
    wr_fail(b, DC_ERR__TOO_LONG);
    return;
  }
  uint32_t n = (uint32_t)(b->len - off - 4);
  b->data[off] = (uint8_t)(n >> 24);
  b->data[off + 1] = (uint8_t)(n >> 16);
  b->data[off + 2] = (uint8_t)(n >> 8);
  b->data[off + 3] = (uint8_t)n;
}

int dc_frame_peek(const uint8_t *p, size_t avail, size_t max, int32_t *sizep) {
  if (avail < 4)
    return 0;
  int32_t n = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
                        ((uint32_t)p[2] << 8) | p[3]);
  if (n < 0)
    return DC_ERR__BAD_LENGTH;
  if ((size_t)n > max)
    return DC_ERR__FRAME_TOO_LARGE;
  *sizep = n;
  return avail - 4 >= (size_t)n ? 1 : 0;
}
