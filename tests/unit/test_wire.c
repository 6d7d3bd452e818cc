/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for lib/codec/wire.c (primitives, frames) and
 * lib/codec/header.c (API table, request/response headers).
 * Expected bytes are written out by hand from the Kafka protocol rules
 * (big-endian ints, LEB128 uvarints, classic int16/int32 lengths, compact
 * uvarint(len+1) lengths, tag sections).
 */
#include "codec/proto.h"
#include "../tap.h"

#include <stdint.h>
#include <string.h>

/* One arena and one buffer shared by the whole run; freed at the end. */
static dc_arena_t arena;
static dc_buf_t buf;

#define RD(rd, ...)                                                            \
  static const uint8_t rd##_bytes[] = {__VA_ARGS__};                           \
  dc_rd_t rd;                                                                  \
  dc_rd_init(&rd, rd##_bytes, sizeof(rd##_bytes), &arena)

#define BUF_IS(name, ...)                                                      \
  do {                                                                         \
    static const uint8_t want_[] = {__VA_ARGS__};                              \
    is_mem(buf.data, buf.len, want_, sizeof(want_), "%s", name);               \
  } while (0)

static void reset(void) {
  dc_buf_clear(&buf);
  dc_arena_reset(&arena);
}

/* ---- fixed-width integers ----------------------------------------------- */

static void test_ints(void) {
  reset();
  dc_wr_i8(&buf, -128);
  dc_wr_i8(&buf, 127);
  dc_wr_i16(&buf, -2);
  dc_wr_i16(&buf, 0x1234);
  dc_wr_i32(&buf, 0x01020304);
  dc_wr_i32(&buf, INT32_MIN);
  dc_wr_i64(&buf, INT64_C(0x0102030405060708));
  dc_wr_i64(&buf, -1);
  BUF_IS("ints: big-endian bytes", 0x80, 0x7f, 0xff, 0xfe, 0x12, 0x34, 0x01,
         0x02, 0x03, 0x04, 0x80, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04,
         0x05, 0x06, 0x07, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
         0xff);
  dc_rd_t rd;
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  is_int(dc_rd_i8(&rd), -128, "i8 min");
  is_int(dc_rd_i8(&rd), 127, "i8 max");
  is_int(dc_rd_i16(&rd), -2, "i16 -2");
  is_int(dc_rd_i16(&rd), 0x1234, "i16 0x1234");
  is_int(dc_rd_i32(&rd), 0x01020304, "i32");
  is_int(dc_rd_i32(&rd), INT32_MIN, "i32 min");
  ok(dc_rd_i64(&rd) == INT64_C(0x0102030405060708), "i64");
  ok(dc_rd_i64(&rd) == -1, "i64 -1");
  is_int(rd.err, 0, "no error");
  is_int(dc_rd_remaining(&rd), 0, "all consumed");

  /* Extremes of every width round-trip. */
  reset();
  dc_wr_i16(&buf, INT16_MIN);
  dc_wr_i16(&buf, INT16_MAX);
  dc_wr_i32(&buf, INT32_MAX);
  dc_wr_i64(&buf, INT64_MIN);
  dc_wr_i64(&buf, INT64_MAX);
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  is_int(dc_rd_i16(&rd), INT16_MIN, "i16 min round trip");
  is_int(dc_rd_i16(&rd), INT16_MAX, "i16 max round trip");
  is_int(dc_rd_i32(&rd), INT32_MAX, "i32 max round trip");
  ok(dc_rd_i64(&rd) == INT64_MIN, "i64 min round trip");
  ok(dc_rd_i64(&rd) == INT64_MAX, "i64 max round trip");
  is_int(rd.err, 0, "no error");
}

static void test_int_truncation(void) {
  static const uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int bad = 0;
  for (size_t n = 0; n < 8; n++) {
    dc_rd_t rd;
    dc_rd_init(&rd, b, n, &arena);
    if (n < 1) {
      if (dc_rd_i8(&rd) != 0 || rd.err != DC_ERR__TRUNCATED)
        bad++;
      dc_rd_init(&rd, b, n, &arena);
    }
    if (n < 2) {
      if (dc_rd_i16(&rd) != 0 || rd.err != DC_ERR__TRUNCATED)
        bad++;
      dc_rd_init(&rd, b, n, &arena);
    }
    if (n < 4) {
      if (dc_rd_i32(&rd) != 0 || rd.err != DC_ERR__TRUNCATED)
        bad++;
      dc_rd_init(&rd, b, n, &arena);
    }
    if (dc_rd_i64(&rd) != 0 || rd.err != DC_ERR__TRUNCATED)
      bad++;
    dc_rd_init(&rd, b, n, &arena);
    uint8_t u[16];
    dc_rd_uuid(&rd, u);
    if (rd.err != DC_ERR__TRUNCATED)
      bad++;
  }
  is_int(bad, 0, "every short fixed-width read is _TRUNCATED and yields 0");

  /* Errors are sticky: later reads fail too and the first error stays. */
  RD(rd, 0x02, 0x00, 0x00, 0x00, 0x00);
  dc_rd_bool(&rd);
  is_int(rd.err, DC_ERR__BAD_BOOL, "bool 2 fails");
  is_int(dc_rd_i32(&rd), 0, "read after error returns 0");
  is_int(rd.err, DC_ERR__BAD_BOOL, "first error is kept");
  is_int(dc_rd_remaining(&rd), 0, "remaining is 0 after an error");
  ok(dc_rd_str(&rd, false, true) == NULL, "string after error is NULL");
  is_int(dc_rd_array_len(&rd, false, true, 1), 0, "array after error is 0");
  ok(dc_rd_alloc(&rd, 1, 1) == NULL, "alloc after error is NULL");
}

/* ---- bool, uuid ------------------------------------------------------------ */

static void test_bool_uuid(void) {
  reset();
  dc_wr_bool(&buf, true);
  dc_wr_bool(&buf, false);
  BUF_IS("bools are 01 / 00", 0x01, 0x00);
  dc_rd_t rd;
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(dc_rd_bool(&rd) == true, "read true");
  ok(dc_rd_bool(&rd) == false, "read false");
  is_int(rd.err, 0, "no error");

  {
    RD(r2, 0x02);
    dc_rd_bool(&r2);
    is_int(r2.err, DC_ERR__BAD_BOOL, "bool 0x02 -> _BAD_BOOL");
  }
  {
    RD(r2, 0xff);
    dc_rd_bool(&r2);
    is_int(r2.err, DC_ERR__BAD_BOOL, "bool 0xff -> _BAD_BOOL");
  }
  {
    dc_rd_t r2;
    dc_rd_init(&r2, "", 0, &arena);
    dc_rd_bool(&r2);
    is_int(r2.err, DC_ERR__TRUNCATED, "bool from nothing -> _TRUNCATED");
  }

  uint8_t id[16], got[16];
  for (int i = 0; i < 16; i++)
    id[i] = (uint8_t)(0xf0 + i);
  reset();
  dc_wr_uuid(&buf, id);
  is_mem(buf.data, buf.len, id, 16, "uuid written verbatim");
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  dc_rd_uuid(&rd, got);
  is_mem(got, 16, id, 16, "uuid round trip");
}

/* ---- uvarint --------------------------------------------------------------- */

static void uvarint_case(uint32_t v, const uint8_t *want, size_t wn) {
  reset();
  dc_wr_uvarint(&buf, v);
  is_mem(buf.data, buf.len, want, wn, "uvarint %u encodes", (unsigned)v);
  dc_rd_t rd;
  dc_rd_init(&rd, want, wn, &arena);
  uint32_t got = dc_rd_uvarint(&rd);
  ok(got == v && rd.err == 0 && rd.pos == wn, "uvarint %u decodes", (unsigned)v);
  /* Every strict prefix is truncated. */
  int bad = 0;
  for (size_t n = 0; n < wn; n++) {
    dc_rd_init(&rd, want, n, &arena);
    if (dc_rd_uvarint(&rd) != 0 || rd.err != DC_ERR__TRUNCATED)
      bad++;
  }
  is_int(bad, 0, "uvarint %u: every prefix -> _TRUNCATED", (unsigned)v);
}

static void test_uvarint(void) {
  uvarint_case(0, (const uint8_t[]){0x00}, 1);
  uvarint_case(1, (const uint8_t[]){0x01}, 1);
  uvarint_case(127, (const uint8_t[]){0x7f}, 1);
  uvarint_case(128, (const uint8_t[]){0x80, 0x01}, 2);
  uvarint_case(300, (const uint8_t[]){0xac, 0x02}, 2);
  uvarint_case(16383, (const uint8_t[]){0xff, 0x7f}, 2);
  uvarint_case(16384, (const uint8_t[]){0x80, 0x80, 0x01}, 3);
  uvarint_case(0x0fffffff, (const uint8_t[]){0xff, 0xff, 0xff, 0x7f}, 4);
  uvarint_case(0x10000000, (const uint8_t[]){0x80, 0x80, 0x80, 0x80, 0x01}, 5);
  uvarint_case(UINT32_MAX, (const uint8_t[]){0xff, 0xff, 0xff, 0xff, 0x0f}, 5);

  {
    RD(rd, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
    is_int(dc_rd_uvarint(&rd), 0, "6-byte uvarint returns 0");
    is_int(rd.err, DC_ERR__BAD_VARINT, "6-byte uvarint -> _BAD_VARINT");
  }
  {
    RD(rd, 0xff, 0xff, 0xff, 0xff, 0x1f);
    dc_rd_uvarint(&rd);
    is_int(rd.err, DC_ERR__BAD_VARINT,
           "5th byte 0x1f (bit 32 set) -> _BAD_VARINT");
  }
  {
    RD(rd, 0x80, 0x80, 0x80, 0x80, 0x10);
    dc_rd_uvarint(&rd);
    is_int(rd.err, DC_ERR__BAD_VARINT, "5th byte 0x10 -> _BAD_VARINT");
  }
  {
    RD(rd, 0xff, 0xff, 0xff, 0xff, 0x8f, 0x00);
    dc_rd_uvarint(&rd);
    is_int(rd.err, DC_ERR__BAD_VARINT,
           "5th byte with continuation bit -> _BAD_VARINT");
  }
  {
    /* A compact string whose length varint is over-long. */
    RD(rd, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 'a');
    ok(dc_rd_str(&rd, true, true) == NULL, "string with bad varint length");
    is_int(rd.err, DC_ERR__BAD_VARINT, "-> _BAD_VARINT");
  }
}

/* ---- strings --------------------------------------------------------------- */

static void test_strings(void) {
  reset();
  dc_wr_str(&buf, false, "ab");
  BUF_IS("classic \"ab\" = 00 02 61 62", 0x00, 0x02, 'a', 'b');
  reset();
  dc_wr_str(&buf, true, "ab");
  BUF_IS("compact \"ab\" = 03 61 62", 0x03, 'a', 'b');
  reset();
  dc_wr_str(&buf, false, "");
  BUF_IS("classic \"\" = 00 00", 0x00, 0x00);
  reset();
  dc_wr_str(&buf, true, "");
  BUF_IS("compact \"\" = 01", 0x01);
  reset();
  dc_wr_str(&buf, false, NULL);
  BUF_IS("classic null = ff ff", 0xff, 0xff);
  reset();
  dc_wr_str(&buf, true, NULL);
  BUF_IS("compact null = 00", 0x00);
  reset();
  dc_wr_strn(&buf, true, "abcdef", 3);
  BUF_IS("strn writes only n bytes", 0x04, 'a', 'b', 'c');

  /* Round trips, classic and compact, including a 200-byte string whose
   * compact length needs two varint bytes. */
  char longs[201];
  memset(longs, 'x', 200);
  longs[200] = 0;
  const char *vals[] = {"", "a", "rdkafka", longs, NULL};
  for (int flex = 0; flex < 2; flex++) {
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
      reset();
      dc_wr_str(&buf, flex, vals[i]);
      dc_rd_t rd;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      char *got = dc_rd_str(&rd, flex, true);
      ok(rd.err == 0 && rd.pos == buf.len &&
             ((!got && !vals[i]) || (got && vals[i] && !strcmp(got, vals[i]))),
         "%s string #%zu round trip", flex ? "compact" : "classic", i);
      /* Every strict prefix is _TRUNCATED. */
      int bad = 0;
      for (size_t n = 0; n < buf.len; n++) {
        dc_rd_init(&rd, buf.data, n, &arena);
        if (dc_rd_str(&rd, flex, true) != NULL ||
            rd.err != DC_ERR__TRUNCATED)
          bad++;
      }
      is_int(bad, 0, "%s string #%zu: every prefix -> _TRUNCATED",
             flex ? "compact" : "classic", i);
    }
  }
  {
    RD(rd, 0x01);
    char *s = dc_rd_str(&rd, true, false);
    ok(s && !strcmp(s, ""), "compact empty string reads as \"\" (not NULL)");
  }

}

/* A string its length field cannot state is an error, never truncated. */
static void test_string_too_long(void) {
  static char big[40001];
  memset(big, 'y', 40000);

  /* 32,767 bytes: the longest classic string, encoded exactly. */
  reset();
  dc_wr_strn(&buf, false, big, INT16_MAX);
  ok(buf.err == 0 && buf.len == 2 + 32767 && buf.data[0] == 0x7f &&
         buf.data[1] == 0xff,
     "classic string of 32767 bytes: int16 length 7f ff and every byte");
  dc_rd_t rd;
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  char *got = dc_rd_str(&rd, false, false);
  ok(rd.err == 0 && got && strlen(got) == 32767 && rd.pos == buf.len,
     "classic string of 32767 bytes round-trips");

  /* 32,768 and 40,000 bytes: sticky _TOO_LONG; nothing of the string, nor
   * of any later field, is written. */
  static const size_t lens[] = {32768, 40000};
  for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
    reset();
    dc_wr_i32(&buf, 7);
    if (lens[i] == 40000)
      dc_wr_str(&buf, false, big);
    else
      dc_wr_strn(&buf, false, big, lens[i]);
    is_int(buf.err, DC_ERR__TOO_LONG, "classic string of %zu bytes -> "
           "_TOO_LONG", lens[i]);
    dc_wr_i16(&buf, 1);
    dc_wr_str(&buf, false, "after");
    BUF_IS("  only the field before it is in the buffer", 0, 0, 0, 7);
  }
  is_str(dc_err_name(DC_ERR__TOO_LONG), "TOO_LONG",
         "_TOO_LONG is in the error table");

  /* An earlier error is kept. */
  reset();
  buf.err = DC_ERR__NOMEM;
  dc_wr_strn(&buf, false, big, 32768);
  is_int(buf.err, DC_ERR__NOMEM, "an earlier buffer error is kept");
  reset();
  is_int(buf.err, 0, "dc_buf_clear resets _TOO_LONG");

  /* Compact strings carry any length up to UINT32_MAX - 1. */
  reset();
  dc_wr_str(&buf, true, big);
  ok(buf.err == 0 && buf.len == 3 + 40000 && buf.data[0] == 0xc1 &&
         buf.data[1] == 0xb8 && buf.data[2] == 0x02,
     "compact string of 40000 bytes: uvarint 40001, every byte");
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  got = dc_rd_str(&rd, true, false);
  ok(rd.err == 0 && got && strlen(got) == 40000,
     "compact string of 40000 bytes round-trips");
#if SIZE_MAX > UINT32_MAX
  /* Only the length is looked at before the refusal. */
  reset();
  dc_wr_strn(&buf, true, big, (size_t)UINT32_MAX);
  ok(buf.err == DC_ERR__TOO_LONG && buf.len == 0,
     "compact string of UINT32_MAX bytes -> _TOO_LONG, nothing written");
#endif
}

static void test_string_errors(void) {
  {
    RD(rd, 0xff, 0xff);
    ok(dc_rd_str(&rd, false, true) == NULL && rd.err == 0,
       "classic -1 nullable -> NULL, no error");
  }
  {
    RD(rd, 0xff, 0xff);
    dc_rd_str(&rd, false, false);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "classic -1 non-nullable -> _BAD_LENGTH");
  }
  {
    RD(rd, 0xff, 0xfe, 'a', 'b');
    dc_rd_str(&rd, false, true);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "classic -2 -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x80, 0x00);
    dc_rd_str(&rd, false, true);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "classic -32768 -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x00);
    ok(dc_rd_str(&rd, true, true) == NULL && rd.err == 0,
       "compact 0 nullable -> NULL, no error");
  }
  {
    RD(rd, 0x00);
    dc_rd_str(&rd, true, false);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "compact null non-nullable -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x00, 0x05, 'a', 'b', 'c');
    dc_rd_str(&rd, false, false);
    is_int(rd.err, DC_ERR__TRUNCATED, "classic length past the end -> _TRUNCATED");
  }
  {
    RD(rd, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a');
    dc_rd_str(&rd, true, false);
    is_int(rd.err, DC_ERR__TRUNCATED,
           "compact length UINT32_MAX-1 -> _TRUNCATED");
  }
  {
    RD(rd, 0x00, 0x03, 'a', 0x00, 'b');
    ok(dc_rd_str(&rd, false, false) == NULL, "embedded NUL -> NULL");
    is_int(rd.err, DC_ERR__BAD_STRING, "classic embedded NUL -> _BAD_STRING");
  }
  {
    RD(rd, 0x02, 0x00);
    dc_rd_str(&rd, true, true);
    is_int(rd.err, DC_ERR__BAD_STRING, "compact \"\\0\" -> _BAD_STRING");
  }
}

/* ---- bytes ----------------------------------------------------------------- */

static void test_bytes(void) {
  static const uint8_t data[] = {0x00, 0xff, 0x10};
  reset();
  dc_wr_bytes(&buf, false, data, 3);
  BUF_IS("classic bytes = int32 len + data", 0x00, 0x00, 0x00, 0x03, 0x00,
         0xff, 0x10);
  reset();
  dc_wr_bytes(&buf, true, data, 3);
  BUF_IS("compact bytes = uvarint(len+1) + data", 0x04, 0x00, 0xff, 0x10);
  reset();
  dc_wr_bytes(&buf, false, NULL, 0);
  BUF_IS("classic null bytes = ff ff ff ff", 0xff, 0xff, 0xff, 0xff);
  reset();
  dc_wr_bytes(&buf, true, NULL, 0);
  BUF_IS("compact null bytes = 00", 0x00);

  for (int flex = 0; flex < 2; flex++) {
    reset();
    dc_wr_bytes(&buf, flex, data, 3);
    dc_wr_bytes(&buf, flex, NULL, -1);
    dc_wr_bytes(&buf, flex, data, 0);
    dc_rd_t rd;
    dc_rd_init(&rd, buf.data, buf.len, &arena);
    int32_t n1, n2, n3;
    const uint8_t *p1 = dc_rd_bytes(&rd, flex, true, &n1);
    const uint8_t *p2 = dc_rd_bytes(&rd, flex, true, &n2);
    const uint8_t *p3 = dc_rd_bytes(&rd, flex, true, &n3);
    ok(rd.err == 0 && n1 == 3 && p1 && !memcmp(p1, data, 3),
       "%s bytes (binary, with NUL) round trip", flex ? "compact" : "classic");
    ok(p2 == NULL && n2 == -1, "%s null bytes -> NULL, -1",
       flex ? "compact" : "classic");
    ok(p3 != NULL && n3 == 0, "%s empty bytes -> non-NULL, 0",
       flex ? "compact" : "classic");
    /* Prefixes of the first field. */
    size_t first = flex ? 4 : 7;
    int bad = 0;
    for (size_t n = 0; n < first; n++) {
      dc_rd_init(&rd, buf.data, n, &arena);
      if (dc_rd_bytes(&rd, flex, true, &n1) != NULL ||
          rd.err != DC_ERR__TRUNCATED)
        bad++;
    }
    is_int(bad, 0, "%s bytes: every prefix -> _TRUNCATED",
           flex ? "compact" : "classic");
  }
  {
    RD(rd, 0xff, 0xff, 0xff, 0xfe);
    int32_t n;
    dc_rd_bytes(&rd, false, true, &n);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "classic bytes -2 -> _BAD_LENGTH");
  }
  {
    RD(rd, 0xff, 0xff, 0xff, 0xff);
    int32_t n;
    dc_rd_bytes(&rd, false, false, &n);
    is_int(rd.err, DC_ERR__BAD_LENGTH,
           "classic bytes -1 non-nullable -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x7f, 0xff, 0xff, 0xff, 0x01);
    int32_t n;
    size_t before = arena.total;
    dc_rd_bytes(&rd, false, false, &n);
    is_int(rd.err, DC_ERR__TRUNCATED, "bytes length 2^31-1 -> _TRUNCATED");
    is_int(arena.total, before, "... without allocating");
  }
}

/* ---- arrays ---------------------------------------------------------------- */

static void test_arrays(void) {
  reset();
  dc_wr_array_len(&buf, false, 3);
  dc_wr_array_len(&buf, false, -1);
  dc_wr_array_len(&buf, false, 0);
  BUF_IS("classic array lens 3, null, 0", 0x00, 0x00, 0x00, 0x03, 0xff, 0xff,
         0xff, 0xff, 0x00, 0x00, 0x00, 0x00);
  reset();
  dc_wr_array_len(&buf, true, 3);
  dc_wr_array_len(&buf, true, -1);
  dc_wr_array_len(&buf, true, 0);
  dc_wr_array_len(&buf, true, 200);
  BUF_IS("compact array lens 3, null, 0, 200", 0x04, 0x00, 0x01, 0xc9, 0x01);

  {
    /* count 2 with exactly 8 bytes left at 4 bytes/element fits. */
    RD(rd, 0x00, 0x00, 0x00, 0x02, 1, 2, 3, 4, 5, 6, 7, 8);
    is_int(dc_rd_array_len(&rd, false, false, 4), 2, "classic count 2 fits");
    is_int(rd.err, 0, "no error");
  }
  {
    RD(rd, 0x00, 0x00, 0x00, 0x03, 1, 2, 3, 4, 5, 6, 7, 8);
    dc_rd_array_len(&rd, false, false, 4);
    is_int(rd.err, DC_ERR__BAD_LENGTH,
           "count 3 x 4 bytes with 8 left -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x03, 1, 2);
    is_int(dc_rd_array_len(&rd, true, false, 0), 2,
           "compact count 2, min size 0 treated as 1");
  }
  {
    RD(rd, 0x04, 1, 2);
    dc_rd_array_len(&rd, true, false, 0);
    is_int(rd.err, DC_ERR__BAD_LENGTH,
           "compact count 3 with 2 bytes, min size 0 -> _BAD_LENGTH");
  }
  {
    RD(rd, 0xff, 0xff, 0xff, 0xff);
    is_int(dc_rd_array_len(&rd, false, true, 4), -1, "classic null nullable -> -1");
    is_int(rd.err, 0, "no error");
  }
  {
    RD(rd, 0xff, 0xff, 0xff, 0xff);
    dc_rd_array_len(&rd, false, false, 4);
    is_int(rd.err, DC_ERR__BAD_LENGTH,
           "classic -1 non-nullable -> _BAD_LENGTH");
  }
  {
    RD(rd, 0xff, 0xff, 0xff, 0xfe);
    dc_rd_array_len(&rd, false, true, 4);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "classic -2 -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x80, 0x00, 0x00, 0x00);
    dc_rd_array_len(&rd, false, true, 1);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "classic INT32_MIN -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x00);
    is_int(dc_rd_array_len(&rd, true, true, 4), -1, "compact 0 nullable -> -1");
  }
  {
    RD(rd, 0x00);
    dc_rd_array_len(&rd, true, false, 4);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "compact null non-nullable -> _BAD_LENGTH");
  }
  {
    dc_arena_reset(&arena);
    RD(rd, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6);
    dc_rd_array_len(&rd, false, false, 1);
    is_int(rd.err, DC_ERR__BAD_LENGTH,
           "classic count 0x7fffffff with 6 bytes left -> _BAD_LENGTH");
    ok(dc_rd_alloc(&rd, 0x7fffffff, 64) == NULL, "alloc after it refuses");
    is_int(arena.total, 0, "nothing was allocated");
  }
  {
    dc_arena_reset(&arena);
    RD(rd, 0xff, 0xff, 0xff, 0xff, 0x07, 1, 2, 3);
    dc_rd_array_len(&rd, true, false, 1);
    is_int(rd.err, DC_ERR__BAD_LENGTH,
           "compact count 0x7ffffffe with 3 bytes left -> _BAD_LENGTH");
    is_int(arena.total, 0, "nothing was allocated");
  }
  {
    RD(rd, 0x00, 0x00);
    dc_rd_array_len(&rd, false, false, 1);
    is_int(rd.err, DC_ERR__TRUNCATED, "classic count cut short -> _TRUNCATED");
  }
  {
    dc_rd_t rd;
    dc_rd_init(&rd, "", 0, &arena);
    ok(dc_rd_alloc(&rd, SIZE_MAX / 2, 4) == NULL && rd.err == DC_ERR__NOMEM,
       "dc_rd_alloc n*sz overflow -> _NOMEM");
    dc_rd_init(&rd, "", 0, &arena);
    ok(dc_rd_alloc(&rd, 0, 8) != NULL && rd.err == 0,
       "dc_rd_alloc of 0 elements is non-NULL");
  }
}

/* ---- tagged fields --------------------------------------------------------- */

static void test_tags(void) {
  reset();
  dc_wr_tags_empty(&buf);
  BUF_IS("empty tag section = 00", 0x00);
  {
    RD(rd, 0x00, 0x42);
    dc_rd_tags(&rd);
    ok(rd.err == 0 && rd.pos == 1, "empty tag section skipped");
  }
  {
    /* Two tags: 0 (1 byte), 5 (2 bytes), then a marker byte. */
    RD(rd, 0x02, 0x00, 0x01, 0xaa, 0x05, 0x02, 0xbb, 0xcc, 0x42);
    dc_rd_tags(&rd);
    ok(rd.err == 0 && rd.pos == 8, "two tags skipped");
    is_int(dc_rd_i8(&rd), 0x42, "next field read correctly");
  }
  {
    /* One tag with multi-byte varints: count 01, tag 300 = ac 02,
     * size 130 = 82 01, then 130 data bytes. */
    uint8_t raw[5 + 130];
    memcpy(raw, (const uint8_t[]){0x01, 0xac, 0x02, 0x82, 0x01}, 5);
    memset(raw + 5, 0xee, 130);
    dc_rd_t rd;
    dc_rd_init(&rd, raw, sizeof(raw), &arena);
    dc_rd_tags(&rd);
    ok(rd.err == 0 && rd.pos == sizeof(raw), "varint tag and size skipped");
  }
  {
    RD(rd, 0x02, 0x05, 0x00, 0x05, 0x00);
    dc_rd_tags(&rd);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "repeated tag -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x02, 0x05, 0x00, 0x01, 0x00);
    dc_rd_tags(&rd);
    is_int(rd.err, DC_ERR__BAD_LENGTH, "decreasing tags -> _BAD_LENGTH");
  }
  {
    RD(rd, 0x01, 0x00, 0x05, 0xaa, 0xbb);
    dc_rd_tags(&rd);
    is_int(rd.err, DC_ERR__TRUNCATED, "tag data past the end -> _TRUNCATED");
  }
  {
    RD(rd, 0x03, 0x00, 0x00);
    dc_rd_tags(&rd);
    is_int(rd.err, DC_ERR__TRUNCATED, "tag count past the end -> _TRUNCATED");
  }
  {
    RD(rd, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00);
    dc_rd_tags(&rd);
    is_int(rd.err, DC_ERR__BAD_VARINT, "over-long tag number -> _BAD_VARINT");
  }
  {
    dc_rd_t rd;
    dc_rd_init(&rd, "", 0, &arena);
    dc_rd_tags(&rd);
    is_int(rd.err, DC_ERR__TRUNCATED, "missing tag section -> _TRUNCATED");
  }
}

/* Tags whose bytes are kept (dc_rd_tags_find), and sections written
 * from several (dc_wr_tags). */
static void test_tags_bytes(void) {
  reset();
  static const uint8_t two[] = {0xaa, 0xbb};
  dc_tag_t w[] = {{5, two, 2}, {7, NULL, 0}, {300, two, 1}};
  dc_wr_tags(&buf, w, 3);
  BUF_IS("two tags written, the one without bytes left out", 0x02, 0x05,
         0x02, 0xaa, 0xbb, 0xac, 0x02, 0x01, 0xaa);
  dc_rd_t rd;
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  dc_tag_t t[] = {{.tag = 300}, {.tag = 7}, {.tag = 5}};
  dc_rd_tags_find(&rd, t, 3);
  ok(rd.err == 0 && rd.pos == buf.len, "the section is read through");
  ok(t[0].p && t[0].len == 1 && t[0].p[0] == 0xaa, "tag 300's byte is kept");
  ok(!t[1].p, "tag 7 is absent");
  ok(t[2].p && t[2].len == 2 && !memcmp(t[2].p, two, 2) &&
         (t[2].p < buf.data || t[2].p >= buf.data + buf.len),
     "tag 5's bytes are kept, copied out of the input");
  {
    RD(rd2, 0x02, 0x01, 0x00, 0x05, 0x01, 0xcc, 0x42);
    dc_tag_t z[] = {{.tag = 1}, {.tag = 9}};
    dc_rd_tags_find(&rd2, z, 2);
    ok(rd2.err == 0 && z[0].p && z[0].len == 0 && !z[1].p &&
           dc_rd_i8(&rd2) == 0x42,
       "an empty tag is present with no bytes; an unknown one is skipped");
  }
  {
    RD(rd3, 0x02, 0x05, 0x01, 0xcc, 0x05, 0x01, 0xdd);
    dc_tag_t z = {.tag = 5};
    dc_rd_tags_find(&rd3, &z, 1);
    ok(rd3.err == DC_ERR__BAD_LENGTH && !z.p,
       "a repeated tag -> _BAD_LENGTH, nothing kept");
  }
  {
    RD(rd4, 0x01, 0x05, 0x04, 0xcc);
    dc_tag_t z = {.tag = 5};
    dc_rd_tags_find(&rd4, &z, 1);
    ok(rd4.err == DC_ERR__TRUNCATED && !z.p, "tag bytes past the end");
  }
  reset();
  dc_tag_t bad[] = {{9, two, 1}, {5, two, 1}};
  dc_wr_tags(&buf, bad, 2);
  ok(buf.err == DC_ERR__BAD_LENGTH && buf.len == 0,
     "tags out of order are not written");
  buf.err = 0;
  dc_wr_tags(&buf, bad, 0);
  BUF_IS("no tags: an empty section", 0x00);
}

/* ---- writer errors, frames ------------------------------------------------ */

static void test_writer_sticky(void) {
  dc_buf_t b;
  dc_buf_init(&b);
  b.err = DC_ERR__NOMEM;
  dc_wr_i32(&b, 1);
  dc_wr_str(&b, true, "abc");
  ok(b.len == 0 && b.err == DC_ERR__NOMEM,
     "writes after a buffer error are dropped and the error stays");
  dc_buf_free(&b);
}

/* A frame whose size does not fit the int32 size field. Only the size
 * field is touched, so a 4-byte buffer stands in for 2 GiB. */
static void test_frame_too_long(void) {
  uint8_t four[4] = {0};
  dc_buf_t fb;
  memset(&fb, 0, sizeof(fb));
  fb.data = four;
  fb.len = fb.cap = 4 + (size_t)INT32_MAX;
  dc_wr_frame_end(&fb, 0);
  ok(fb.err == 0 && four[0] == 0x7f && four[3] == 0xff,
     "frame of INT32_MAX bytes: size patched");
  memset(four, 0, sizeof(four));
  fb.len = fb.cap = 4 + (size_t)INT32_MAX + 1;
  dc_wr_frame_end(&fb, 0);
  ok(fb.err == DC_ERR__TOO_LONG && !four[0] && !four[3],
     "frame of INT32_MAX + 1 bytes -> _TOO_LONG, size not patched");
}

static void test_frames(void) {
  reset();
  size_t off = dc_wr_frame_begin(&buf);
  dc_wr_i16(&buf, 0x0102);
  dc_wr_i8(&buf, 3);
  dc_wr_frame_end(&buf, off);
  BUF_IS("frame size patched (3 payload bytes)", 0x00, 0x00, 0x00, 0x03, 0x01,
         0x02, 0x03);

  /* A second frame appended to the same buffer gets its own size. */
  off = dc_wr_frame_begin(&buf);
  dc_wr_i8(&buf, 9);
  dc_wr_frame_end(&buf, off);
  ok(buf.len == 12 && off == 7 && buf.data[10] == 1 && buf.data[11] == 9,
     "second frame sized independently");

  int32_t sz = -7;
  ok(dc_frame_peek(buf.data, 0, 100, &sz) == 0, "peek: 0 bytes -> need more");
  ok(dc_frame_peek(buf.data, 3, 100, &sz) == 0, "peek: 3 bytes -> need more");
  ok(dc_frame_peek(buf.data, 6, 100, &sz) == 0, "peek: partial payload -> need more");
  ok(dc_frame_peek(buf.data, 7, 100, &sz) == 1 && sz == 3,
     "peek: complete frame -> 1, size 3");
  sz = -7;
  ok(dc_frame_peek(buf.data, 12, 100, &sz) == 1 && sz == 3,
     "peek: extra bytes after the frame are not counted");
  ok(dc_frame_peek(buf.data, 7, 3, &sz) == 1, "peek: size == max is allowed");
  is_int(dc_frame_peek(buf.data, 7, 2, &sz), DC_ERR__FRAME_TOO_LARGE,
         "peek: size > max -> _FRAME_TOO_LARGE");

  static const uint8_t neg[] = {0xff, 0xff, 0xff, 0xff};
  is_int(dc_frame_peek(neg, 4, 100, &sz), DC_ERR__BAD_LENGTH,
         "peek: size -1 -> _BAD_LENGTH");
  static const uint8_t negmin[] = {0x80, 0x00, 0x00, 0x00};
  is_int(dc_frame_peek(negmin, 4, 100, &sz), DC_ERR__BAD_LENGTH,
         "peek: size INT32_MIN -> _BAD_LENGTH");
  static const uint8_t huge[] = {0x7f, 0xff, 0xff, 0xff};
  is_int(dc_frame_peek(huge, 4, 100 * 1024 * 1024, &sz),
         DC_ERR__FRAME_TOO_LARGE,
         "peek: too large is reported from the size field alone");
  static const uint8_t empty[] = {0, 0, 0, 0};
  sz = -7;
  ok(dc_frame_peek(empty, 4, 100, &sz) == 1 && sz == 0,
     "peek: zero-size frame is complete");
}

/* ---- API table ------------------------------------------------------------- */

static void test_api_table(void) {
  static const struct {
    int16_t key, min, max, flex;
    const char *name;
  } want[] = {
      {3, 0, 12, 9, "Metadata"},
      {18, 0, 3, 3, "ApiVersions"},
      {32, 0, 4, 4, "DescribeConfigs"},
      {33, 0, 2, 2, "AlterConfigs"},
      {44, 0, 1, 1, "IncrementalAlterConfigs"},
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    const dc_api_info_t *a = dc_api_info(want[i].key);
    ok(a && a->key == want[i].key && a->min_version == want[i].min &&
           a->max_version == want[i].max && a->flexible_from == want[i].flex &&
           a->name && !strcmp(a->name, want[i].name),
       "api %d: %s %d-%d, flexible from %d", want[i].key, want[i].name,
       want[i].min, want[i].max, want[i].flex);
    int16_t k = want[i].key;
    ok(!dc_api_flexible(k, (int16_t)(want[i].flex - 1)) &&
           dc_api_flexible(k, want[i].flex) && dc_api_flexible(k, want[i].max),
       "api %d flexible boundary at v%d", k, want[i].flex);
    ok(dc_api_supported(k, want[i].min) && dc_api_supported(k, want[i].max) &&
           !dc_api_supported(k, -1) &&
           !dc_api_supported(k, (int16_t)(want[i].max + 1)),
       "api %d supported exactly %d-%d", k, want[i].min, want[i].max);
  }
  ok(dc_api_info(99) == NULL && dc_api_info(-1) == NULL && dc_api_info(0) == NULL,
     "unknown api keys have no info");
  ok(!dc_api_supported(99, 0) && !dc_api_flexible(99, 100),
     "unknown api is neither supported nor flexible");

  size_t n = 0;
  const dc_api_info_t *all = dc_api_all(&n);
  int consistent = n >= 5;
  for (size_t i = 0; i < n; i++) {
    if (dc_api_info(all[i].key) != &all[i] ||
        all[i].min_version > all[i].max_version)
      consistent = 0;
    for (size_t j = i + 1; j < n; j++)
      if (all[i].key == all[j].key)
        consistent = 0;
  }
  ok(consistent, "dc_api_all: %zu unique, consistent entries", n);
}

/* ---- headers --------------------------------------------------------------- */

static void req_header_case(const char *what, dc_req_header_t h,
                            const uint8_t *want, size_t wn) {
  reset();
  is_int(dc_req_header_encode(&buf, &h), 0, "%s: encode ok", what);
  is_mem(buf.data, buf.len, want, wn, "%s: bytes", what);
  dc_rd_t rd;
  dc_req_header_t got;
  dc_rd_init(&rd, want, wn, &arena);
  int rc = dc_req_header_decode(&rd, &got);
  ok(rc == 0 && rd.pos == wn && got.api_key == h.api_key &&
         got.api_version == h.api_version &&
         got.correlation_id == h.correlation_id &&
         ((!got.client_id && !h.client_id) ||
          (got.client_id && h.client_id && !strcmp(got.client_id, h.client_id))),
     "%s: decode round trip", what);
  /* Every strict prefix fails with _TRUNCATED (the fixed part is 8 bytes,
   * so the api key/version are known once there are 4). */
  int bad = 0;
  for (size_t n = 0; n < wn; n++) {
    dc_rd_init(&rd, want, n, &arena);
    if (dc_req_header_decode(&rd, &got) != DC_ERR__TRUNCATED)
      bad++;
  }
  is_int(bad, 0, "%s: every prefix -> _TRUNCATED", what);
}

static void test_headers(void) {
  req_header_case(
      "request header v1 (Metadata v4)",
      (dc_req_header_t){DC_API_METADATA, 4, 7, "rdkafka"},
      (const uint8_t[]){0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x07, 0x00,
                        0x07, 'r', 'd', 'k', 'a', 'f', 'k', 'a'},
      17);
  req_header_case(
      "request header v2 (Metadata v9): + empty tags",
      (dc_req_header_t){DC_API_METADATA, 9, 7, "rdkafka"},
      (const uint8_t[]){0x00, 0x03, 0x00, 0x09, 0x00, 0x00, 0x00, 0x07, 0x00,
                        0x07, 'r', 'd', 'k', 'a', 'f', 'k', 'a', 0x00},
      18);
  req_header_case(
      "request header v2 (ApiVersions v3), client_id stays classic",
      (dc_req_header_t){DC_API_API_VERSIONS, 3, 0x01020304, "c"},
      (const uint8_t[]){0x00, 0x12, 0x00, 0x03, 0x01, 0x02, 0x03, 0x04, 0x00,
                        0x01, 'c', 0x00},
      12);
  req_header_case(
      "request header v1 (ApiVersions v2)",
      (dc_req_header_t){DC_API_API_VERSIONS, 2, 1, "c"},
      (const uint8_t[]){0x00, 0x12, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00,
                        0x01, 'c'},
      11);
  req_header_case(
      "request header v1, null client_id",
      (dc_req_header_t){DC_API_DESCRIBE_CONFIGS, 1, -1, NULL},
      (const uint8_t[]){0x00, 0x20, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff,
                        0xff},
      10);
  req_header_case(
      "request header v2 (IncrementalAlterConfigs v1), null client_id",
      (dc_req_header_t){DC_API_INCREMENTAL_ALTER_CONFIGS, 1, 5, NULL},
      (const uint8_t[]){0x00, 0x2c, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0xff,
                        0xff, 0x00},
      11);
  req_header_case(
      "unknown api key uses header v1",
      (dc_req_header_t){99, 50, 5, "x"},
      (const uint8_t[]){0x00, 0x63, 0x00, 0x32, 0x00, 0x00, 0x00, 0x05, 0x00,
                        0x01, 'x'},
      11);

  {
    /* Header v2 with a non-empty tag section from a peer: skipped. */
    RD(rd, 0x00, 0x03, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01,
       0x02, 0x02, 0xaa, 0xbb, 0x42);
    dc_req_header_t h;
    ok(dc_req_header_decode(&rd, &h) == 0 && rd.pos == 15 && h.client_id &&
           !strcmp(h.client_id, ""),
       "request header v2 with a tagged field: tags skipped, body next");
  }
  {
    RD(rd, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0xff, 0xfe);
    dc_req_header_t h;
    is_int(dc_req_header_decode(&rd, &h), DC_ERR__BAD_LENGTH,
           "request header client_id length -2 -> _BAD_LENGTH");
  }

  /* Response headers. */
  static const struct {
    int16_t key, ver;
    size_t len;
    const char *what;
  } rh[] = {
      {DC_API_METADATA, 8, 4, "response header v0 (Metadata v8)"},
      {DC_API_METADATA, 9, 5, "response header v1 (Metadata v9)"},
      {DC_API_API_VERSIONS, 3, 4, "ApiVersions v3 response header is v0"},
      {DC_API_API_VERSIONS, 0, 4, "ApiVersions v0 response header v0"},
      {DC_API_DESCRIBE_CONFIGS, 3, 4, "response header v0 (DescribeConfigs v3)"},
      {DC_API_DESCRIBE_CONFIGS, 4, 5, "response header v1 (DescribeConfigs v4)"},
      {DC_API_ALTER_CONFIGS, 2, 5, "response header v1 (AlterConfigs v2)"},
      {99, 7, 4, "unknown api: response header v0"},
  };
  for (size_t i = 0; i < sizeof(rh) / sizeof(rh[0]); i++) {
    reset();
    is_int(dc_resp_header_encode(&buf, rh[i].key, rh[i].ver, 0x0a0b0c0d), 0,
           "%s: encode ok", rh[i].what);
    static const uint8_t want[] = {0x0a, 0x0b, 0x0c, 0x0d, 0x00};
    is_mem(buf.data, buf.len, want, rh[i].len, "%s: bytes", rh[i].what);
    dc_rd_t rd;
    int32_t corr = 0;
    dc_rd_init(&rd, want, sizeof(want), &arena);
    ok(dc_resp_header_decode(&rd, rh[i].key, rh[i].ver, &corr) == 0 &&
           corr == 0x0a0b0c0d && rd.pos == rh[i].len,
       "%s: decode", rh[i].what);
    dc_rd_init(&rd, want, rh[i].len - 1, &arena);
    is_int(dc_resp_header_decode(&rd, rh[i].key, rh[i].ver, &corr),
           DC_ERR__TRUNCATED, "%s: one byte short -> _TRUNCATED",
           rh[i].what);
  }
}

/* dc_arena_reset_to keeps what came before the mark, releases the rest,
 * and the arena goes on handing out memory from the mark. */
static void test_arena_mark(void) {
  dc_arena_t a = {0};
  char *keep = dc_arena_strdup(&a, "kept");
  dc_arena_mark_t m = dc_arena_mark(&a);
  size_t total = a.total;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 100; i++)
      dc_arena_alloc(&a, 1000); /* spills into new chunks */
    dc_arena_alloc(&a, 100000); /* one big chunk of its own */
    dc_arena_reset_to(&a, m);
  }
  ok(!strcmp(keep, "kept") && a.total == total,
     "arena: memory before the mark survives resets to it (total %zu)",
     a.total);
  ok(a.head == m.chunk, "arena: the chunk at the mark is the newest again");
  char *again = dc_arena_strdup(&a, "next");
  ok(again == keep + 16 && !strcmp(keep, "kept"),
     "arena: allocation resumes right after the mark");
  dc_arena_free(&a);
}

int main(void) {
  dc_arena_init(&arena);
  test_arena_mark();
  dc_buf_init(&buf);
  test_ints();
  test_int_truncation();
  test_bool_uuid();
  test_uvarint();
  test_strings();
  test_string_too_long();
  test_string_errors();
  test_bytes();
  test_arrays();
  test_tags();
  test_tags_bytes();
  test_writer_sticky();
  test_frames();
  test_frame_too_long();
  test_api_table();
  test_headers();
  dc_buf_free(&buf);
  dc_arena_free(&arena);
  return done_testing();
}
