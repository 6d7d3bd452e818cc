/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SaslHandshake (v0-1), SaslAuthenticate (v0-2) and ReloadSecurity (v0-1)
 * codecs (lib/codec/sasl.c, lib/codec/reload.c):
 *  - byte-exact vectors derived by hand from apache/kafka's
 *    SaslHandshake{Request,Response}.json and
 *    SaslAuthenticate{Request,Response}.json, and from the ReloadSecurity
 *    layout documented in lib/codec/proto.h;
 *  - round trips (encode, decode, compare every field the version carries
 *    and the schema default for the rest, re-encode to identical bytes) for
 *    every version;
 *  - truncation at every byte: every strict prefix of every encoding must
 *    fail with a negative error;
 *  - out-of-range versions, null where not nullable, hostile counts.
 */
#include "codec/proto.h"
#include "../codectest.h"
#include "../tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Shared for the whole run; freed at the end of main. */
static dc_arena_t arena;
static dc_buf_t buf, buf2;

static void reset(void) {
  dc_buf_clear(&buf);
  dc_buf_clear(&buf2);
  dc_arena_reset(&arena);
}

/* A NULL pointer with length 0 and an empty buffer are the same bytes. */
static int bytes_eq(const uint8_t *a, int32_t na, const uint8_t *b, int32_t nb) {
  if (na != nb)
    return 0;
  return na <= 0 || (a && b && !memcmp(a, b, (size_t)na));
}

static int dec_hs_req(dc_rd_t *rd, int16_t v) {
  dc_sasl_handshake_req_t m;
  return dc_sasl_handshake_req_decode(rd, v, &m);
}
static int dec_hs_resp(dc_rd_t *rd, int16_t v) {
  dc_sasl_handshake_resp_t m;
  return dc_sasl_handshake_resp_decode(rd, v, &m);
}
static int dec_sa_req(dc_rd_t *rd, int16_t v) {
  dc_sasl_authenticate_req_t m;
  return dc_sasl_authenticate_req_decode(rd, v, &m);
}
static int dec_sa_resp(dc_rd_t *rd, int16_t v) {
  dc_sasl_authenticate_resp_t m;
  return dc_sasl_authenticate_resp_decode(rd, v, &m);
}
static int dec_rl_req(dc_rd_t *rd, int16_t v) {
  dc_reload_req_t m;
  return dc_reload_req_decode(rd, v, &m);
}
static int dec_rl_resp(dc_rd_t *rd, int16_t v) {
  dc_reload_resp_t m;
  return dc_reload_resp_decode(rd, v, &m);
}

/* ====================================================================== */
/* API table                                                               */
/* ====================================================================== */

static void api_table(void) {
  const dc_api_info_t *hs = dc_api_info(DC_API_SASL_HANDSHAKE);
  ok(hs && hs->min_version == 0 && hs->max_version == 1 &&
         hs->flexible_from == -1,
     "api table: SaslHandshake 0-1, never flexible");
  const dc_api_info_t *sa = dc_api_info(DC_API_SASL_AUTHENTICATE);
  ok(sa && sa->min_version == 0 && sa->max_version == 2 &&
         sa->flexible_from == 2,
     "api table: SaslAuthenticate 0-2, flexible from 2");
  const dc_api_info_t *rl = dc_api_info(DC_API_RELOAD_SECURITY);
  ok(rl && rl->min_version == 0 && rl->max_version == 1 &&
         rl->flexible_from == -1,
     "api table: ReloadSecurity (20000) 0-1, never flexible");
  ok(!dc_api_flexible(DC_API_SASL_AUTHENTICATE, 1) &&
         dc_api_flexible(DC_API_SASL_AUTHENTICATE, 2) &&
         !dc_api_flexible(DC_API_SASL_HANDSHAKE, 1) &&
         !dc_api_flexible(DC_API_RELOAD_SECURITY, 0) &&
         !dc_api_flexible(DC_API_RELOAD_SECURITY, 1),
     "dc_api_flexible agrees for keys 17, 36, 20000");
  ok(dc_api_supported(DC_API_SASL_HANDSHAKE, 1) &&
         !dc_api_supported(DC_API_SASL_HANDSHAKE, 2) &&
         dc_api_supported(DC_API_SASL_AUTHENTICATE, 2) &&
         !dc_api_supported(DC_API_SASL_AUTHENTICATE, 3) &&
         dc_api_supported(DC_API_RELOAD_SECURITY, 1) &&
         !dc_api_supported(DC_API_RELOAD_SECURITY, 2),
     "dc_api_supported agrees for keys 17, 36, 20000");
}

/* ====================================================================== */
/* SaslHandshake                                                           */
/* ====================================================================== */

static void hs_vectors(void) {
  dc_rd_t rd;
  /* Request: mechanism (classic string); v1 has the v0 layout. */
  dc_sasl_handshake_req_t req = {"SCRAM-SHA-256"};
  static const uint8_t rq[] = {0x00, 0x0d, 'S', 'C', 'R', 'A', 'M', '-', 'S',
                               'H',  'A',  '-', '2', '5', '6'};
  for (int16_t v = 0; v <= 1; v++) {
    reset();
    is_int(dc_sasl_handshake_req_encode(&buf, v, &req), 0, "hs req v%d encode", v);
    is_mem(buf.data, buf.len, rq, sizeof(rq), "hs req v%d bytes", v);
    dc_sasl_handshake_req_t got;
    dc_rd_init(&rd, rq, sizeof(rq), &arena);
    ok(dc_sasl_handshake_req_decode(&rd, v, &got) == 0 &&
           str_eq(got.mechanism, "SCRAM-SHA-256") && rd.pos == sizeof(rq),
       "hs req v%d vector decodes", v);
  }

  /* Response: error_code, mechanisms (classic array of classic strings). */
  char *mechs[] = {"PLAIN", "SCRAM-SHA-512"};
  dc_sasl_handshake_resp_t resp = {DC_ERR_UNSUPPORTED_SASL_MECHANISM, 2,
                                   mechs};
  static const uint8_t rs[] = {
      0x00, 0x21,                                   /* error 33 */
      0x00, 0x00, 0x00, 0x02,                       /* 2 mechanisms */
      0x00, 0x05, 'P', 'L', 'A', 'I', 'N',          /* PLAIN */
      0x00, 0x0d, 'S', 'C', 'R', 'A', 'M', '-', 'S', 'H', 'A', '-', '5',
      '1', '2',                                     /* SCRAM-SHA-512 */
  };
  for (int16_t v = 0; v <= 1; v++) {
    reset();
    is_int(dc_sasl_handshake_resp_encode(&buf, v, &resp), 0,
           "hs resp v%d encode", v);
    is_mem(buf.data, buf.len, rs, sizeof(rs), "hs resp v%d bytes", v);
    dc_sasl_handshake_resp_t got;
    dc_rd_init(&rd, rs, sizeof(rs), &arena);
    ok(dc_sasl_handshake_resp_decode(&rd, v, &got) == 0 &&
           got.error_code == 33 && got.n_mechanisms == 2 &&
           str_eq(got.mechanisms[0], "PLAIN") &&
           str_eq(got.mechanisms[1], "SCRAM-SHA-512") && rd.pos == sizeof(rs),
       "hs resp v%d vector decodes", v);
  }

  /* Success with an empty list, and a NULL list with count -1 written as
   * an empty array (the field is not nullable). */
  dc_sasl_handshake_resp_t none = {0, -1, NULL};
  reset();
  dc_sasl_handshake_resp_encode(&buf, 0, &none);
  static const uint8_t rse[] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  is_mem(buf.data, buf.len, rse, sizeof(rse),
         "hs resp v0 count -1 written as an empty array");

  /* A NULL mechanism goes out as "" (not nullable). */
  dc_sasl_handshake_req_t nreq = {NULL};
  reset();
  dc_sasl_handshake_req_encode(&buf, 1, &nreq);
  is_mem(buf.data, buf.len, "\0\0", 2, "hs req NULL mechanism written as \"\"");

  /* Trailing bytes after the body are ignored (as Kafka does). */
  static const uint8_t trail[] = {0x00, 0x01, 'X', 0xde, 0xad};
  dc_sasl_handshake_req_t got;
  dc_rd_init(&rd, trail, sizeof(trail), &arena);
  ok(dc_sasl_handshake_req_decode(&rd, 0, &got) == 0 &&
         str_eq(got.mechanism, "X") && rd.pos == 3,
     "hs req trailing bytes ignored");
}

static int hs_resp_eq(const dc_sasl_handshake_resp_t *w,
                      const dc_sasl_handshake_resp_t *g) {
  CHECK(g->error_code == w->error_code);
  CHECK(g->n_mechanisms == dc_nn_count(w->n_mechanisms));
  for (int32_t i = 0; i < g->n_mechanisms; i++)
    CHECK(str_eq(g->mechanisms[i], w->mechanisms[i]));
  return 1;
}

static void hs_roundtrips(void) {
  char *three[] = {"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"};
  char *odd[] = {"", "x"};
  dc_sasl_handshake_resp_t cases[] = {
      {0, 3, three},
      {DC_ERR_UNSUPPORTED_SASL_MECHANISM, 3, three},
      {DC_ERR_ILLEGAL_SASL_STATE, 0, NULL},
      {-1, 2, odd},
  };
  const char *mechs[] = {"PLAIN", "SCRAM-SHA-512", "", "GSSAPI"};
  for (int16_t v = 0; v <= 1; v++) {
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
      reset();
      is_int(dc_sasl_handshake_resp_encode(&buf, v, &cases[c]), 0,
             "hs resp v%d case %zu encode", v, c);
      dc_rd_t rd;
      dc_sasl_handshake_resp_t got;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      int rc = dc_sasl_handshake_resp_decode(&rd, v, &got);
      mismatch = NULL;
      ok(rc == 0 && rd.pos == buf.len && hs_resp_eq(&cases[c], &got),
         "hs resp v%d case %zu decode matches", v, c);
      if (mismatch)
        diag("  mismatch: %s", mismatch);
      dc_sasl_handshake_resp_encode(&buf2, v, &got);
      is_mem(buf2.data, buf2.len, buf.data, buf.len,
             "hs resp v%d case %zu re-encodes identically", v, c);
      is_int(truncation_failures(dec_hs_resp, v, buf.data, buf.len), 0,
             "hs resp v%d case %zu: every prefix fails", v, c);
    }
    for (size_t c = 0; c < sizeof(mechs) / sizeof(mechs[0]); c++) {
      dc_sasl_handshake_req_t req = {(char *)mechs[c]};
      reset();
      is_int(dc_sasl_handshake_req_encode(&buf, v, &req), 0,
             "hs req v%d \"%s\" encode", v, mechs[c]);
      dc_rd_t rd;
      dc_sasl_handshake_req_t got;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      ok(dc_sasl_handshake_req_decode(&rd, v, &got) == 0 &&
             rd.pos == buf.len && str_eq(got.mechanism, mechs[c]),
         "hs req v%d \"%s\" decode matches", v, mechs[c]);
      dc_sasl_handshake_req_encode(&buf2, v, &got);
      is_mem(buf2.data, buf2.len, buf.data, buf.len,
             "hs req v%d \"%s\" re-encodes identically", v, mechs[c]);
      is_int(truncation_failures(dec_hs_req, v, buf.data, buf.len), 0,
             "hs req v%d \"%s\": every prefix fails", v, mechs[c]);
    }
  }
}

/* ====================================================================== */
/* SaslAuthenticate                                                        */
/* ====================================================================== */

/* The PLAIN token "\0alice\0pw": embedded NULs must survive as bytes. */
static const uint8_t PLAIN_TOK[] = {0x00, 'a', 'l', 'i', 'c', 'e', 0x00, 'p', 'w'};

static void sa_vectors(void) {
  dc_rd_t rd;
  dc_sasl_authenticate_req_t req = {PLAIN_TOK, (int32_t)sizeof(PLAIN_TOK)};

  /* v0/v1 request: classic bytes (int32 length). */
  static const uint8_t rq0[] = {0x00, 0x00, 0x00, 0x09, 0x00, 'a', 'l',
                                'i',  'c',  'e',  0x00, 'p',  'w'};
  for (int16_t v = 0; v <= 1; v++) {
    reset();
    is_int(dc_sasl_authenticate_req_encode(&buf, v, &req), 0,
           "sa req v%d encode", v);
    is_mem(buf.data, buf.len, rq0, sizeof(rq0), "sa req v%d bytes", v);
    dc_sasl_authenticate_req_t got;
    dc_rd_init(&rd, rq0, sizeof(rq0), &arena);
    ok(dc_sasl_authenticate_req_decode(&rd, v, &got) == 0 &&
           bytes_eq(got.auth_bytes, got.n_auth_bytes, PLAIN_TOK,
                    sizeof(PLAIN_TOK)) &&
           rd.pos == sizeof(rq0),
       "sa req v%d vector decodes (embedded NULs kept)", v);
  }

  /* v2 request: compact bytes (uvarint length+1), then body tags. */
  static const uint8_t rq2[] = {0x0a, 0x00, 'a', 'l', 'i', 'c',
                                'e',  0x00, 'p', 'w', 0x00};
  reset();
  is_int(dc_sasl_authenticate_req_encode(&buf, 2, &req), 0, "sa req v2 encode");
  is_mem(buf.data, buf.len, rq2, sizeof(rq2), "sa req v2 bytes");
  dc_sasl_authenticate_req_t gotq;
  dc_rd_init(&rd, rq2, sizeof(rq2), &arena);
  ok(dc_sasl_authenticate_req_decode(&rd, 2, &gotq) == 0 &&
         bytes_eq(gotq.auth_bytes, gotq.n_auth_bytes, PLAIN_TOK,
                  sizeof(PLAIN_TOK)) &&
         rd.pos == sizeof(rq2),
     "sa req v2 vector decodes");

  /* v2 request with a 200-byte token: a two-byte uvarint length (201 =
   * 0xc9 0x01). */
  uint8_t big[200];
  for (size_t i = 0; i < sizeof(big); i++)
    big[i] = (uint8_t)(i * 7);
  dc_sasl_authenticate_req_t bigreq = {big, (int32_t)sizeof(big)};
  reset();
  dc_sasl_authenticate_req_encode(&buf, 2, &bigreq);
  ok(buf.len == 2 + 200 + 1 && buf.data[0] == 0xc9 && buf.data[1] == 0x01 &&
         !memcmp(buf.data + 2, big, 200) && buf.data[202] == 0x00,
     "sa req v2 200-byte token: length uvarint c9 01, bytes, tags");

  /* A NULL token goes out as empty bytes (not nullable). */
  dc_sasl_authenticate_req_t nreq = {NULL, 5};
  reset();
  dc_sasl_authenticate_req_encode(&buf, 0, &nreq);
  is_mem(buf.data, buf.len, "\0\0\0\0", 4, "sa req v0 NULL token -> empty bytes");
  reset();
  dc_sasl_authenticate_req_encode(&buf, 2, &nreq);
  is_mem(buf.data, buf.len, "\x01\x00", 2, "sa req v2 NULL token -> empty bytes");

  /* Responses. A success with server-final bytes and a null message. */
  static const uint8_t srv[] = {'v', '=', 'x', 'y'};
  dc_sasl_authenticate_resp_t ok_resp = {0, NULL, srv, 4, 3600000};
  reset();
  is_int(dc_sasl_authenticate_resp_encode(&buf, 0, &ok_resp), 0,
         "sa resp v0 encode");
  static const uint8_t rs0[] = {
      0x00, 0x00,             /* error 0 */
      0xff, 0xff,             /* message null */
      0x00, 0x00, 0x00, 0x04, 'v', '=', 'x', 'y', /* auth_bytes */
  };
  is_mem(buf.data, buf.len, rs0, sizeof(rs0), "sa resp v0 bytes (no lifetime)");

  reset();
  dc_sasl_authenticate_resp_encode(&buf, 1, &ok_resp);
  static const uint8_t rs1[] = {
      0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x04, 'v', '=', 'x', 'y',
      0x00, 0x00, 0x00, 0x00, 0x00, 0x36, 0xee, 0x80, /* lifetime 3600000 */
  };
  is_mem(buf.data, buf.len, rs1, sizeof(rs1), "sa resp v1 bytes (+ session_lifetime_ms)");

  reset();
  dc_sasl_authenticate_resp_encode(&buf, 2, &ok_resp);
  static const uint8_t rs2[] = {
      0x00, 0x00,                /* error 0 */
      0x00,                      /* message null (compact 0) */
      0x05, 'v', '=', 'x', 'y', /* compact bytes 4 (+1) */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x36, 0xee, 0x80,
      0x00, /* body tags */
  };
  is_mem(buf.data, buf.len, rs2, sizeof(rs2), "sa resp v2 bytes (flexible)");

  /* Failure 58 with a message and no bytes. */
  dc_sasl_authenticate_resp_t fail = {DC_ERR_SASL_AUTHENTICATION_FAILED,
                                      "bad pw", NULL, 0, 0};
  reset();
  dc_sasl_authenticate_resp_encode(&buf, 0, &fail);
  static const uint8_t rf0[] = {0x00, 0x3a, 0x00, 0x06, 'b', 'a', 'd',
                                ' ',  'p',  'w',  0x00, 0x00, 0x00, 0x00};
  is_mem(buf.data, buf.len, rf0, sizeof(rf0), "sa resp v0 error 58 bytes");
  reset();
  dc_sasl_authenticate_resp_encode(&buf, 1, &fail);
  static const uint8_t rf1[] = {0x00, 0x3a, 0x00, 0x06, 'b', 'a', 'd', ' ',
                                'p',  'w',  0x00, 0x00, 0x00, 0x00, 0, 0,
                                0,    0,    0,    0,    0,    0};
  is_mem(buf.data, buf.len, rf1, sizeof(rf1), "sa resp v1 error 58 bytes");
  reset();
  dc_sasl_authenticate_resp_encode(&buf, 2, &fail);
  static const uint8_t rf2[] = {0x00, 0x3a, 0x07, 'b', 'a', 'd', ' ', 'p',
                                'w',  0x01, 0,    0,   0,   0,   0,   0,
                                0,    0,    0x00};
  is_mem(buf.data, buf.len, rf2, sizeof(rf2), "sa resp v2 error 58 bytes");

  /* Decoding the vectors: null message is NULL (not ""), lifetime only
   * from v1, default 0. */
  const struct {
    int16_t v;
    const uint8_t *p;
    size_t n;
    int64_t lifetime;
  } dv[] = {{0, rs0, sizeof(rs0), 0},
            {1, rs1, sizeof(rs1), 3600000},
            {2, rs2, sizeof(rs2), 3600000}};
  for (size_t i = 0; i < 3; i++) {
    dc_sasl_authenticate_resp_t got;
    dc_rd_init(&rd, dv[i].p, dv[i].n, &arena);
    ok(dc_sasl_authenticate_resp_decode(&rd, dv[i].v, &got) == 0 &&
           got.error_code == 0 && got.error_message == NULL &&
           bytes_eq(got.auth_bytes, got.n_auth_bytes, srv, 4) &&
           got.session_lifetime_ms == dv[i].lifetime && rd.pos == dv[i].n,
       "sa resp v%d vector decodes: message NULL, lifetime %lld", dv[i].v,
       (long long)dv[i].lifetime);
  }
  const struct {
    int16_t v;
    const uint8_t *p;
    size_t n;
  } fv[] = {{0, rf0, sizeof(rf0)}, {1, rf1, sizeof(rf1)}, {2, rf2, sizeof(rf2)}};
  for (size_t i = 0; i < 3; i++) {
    dc_sasl_authenticate_resp_t got;
    dc_rd_init(&rd, fv[i].p, fv[i].n, &arena);
    ok(dc_sasl_authenticate_resp_decode(&rd, fv[i].v, &got) == 0 &&
           got.error_code == 58 && str_eq(got.error_message, "bad pw") &&
           got.n_auth_bytes == 0 && rd.pos == fv[i].n,
       "sa resp v%d error vector decodes", fv[i].v);
  }

  /* An empty (non-null) message stays "" and is distinct from null. */
  dc_sasl_authenticate_resp_t empty_msg = {58, "", NULL, 0, 0};
  for (int16_t v = 0; v <= 2; v++) {
    reset();
    dc_sasl_authenticate_resp_encode(&buf, v, &empty_msg);
    dc_sasl_authenticate_resp_t got;
    dc_rd_init(&rd, buf.data, buf.len, &arena);
    ok(dc_sasl_authenticate_resp_decode(&rd, v, &got) == 0 &&
           got.error_message != NULL && got.error_message[0] == '\0',
       "sa resp v%d empty message decodes as \"\", not NULL", v);
  }

  /* v2 response with unknown tagged fields: skipped. */
  static const uint8_t rs2tags[] = {
      0x00, 0x00, 0x00, 0x01,                   /* error, null msg, no bytes */
      0, 0, 0, 0, 0, 0, 0, 7,                   /* lifetime 7 */
      0x02, 0x05, 0x02, 0xaa, 0xbb, 0x09, 0x00, /* tags 5 (2 bytes), 9 (0) */
      0x55,                                     /* trailing byte */
  };
  dc_sasl_authenticate_resp_t gt;
  dc_rd_init(&rd, rs2tags, sizeof(rs2tags), &arena);
  ok(dc_sasl_authenticate_resp_decode(&rd, 2, &gt) == 0 &&
         gt.session_lifetime_ms == 7 && gt.error_message == NULL &&
         rd.pos == sizeof(rs2tags) - 1,
     "sa resp v2 with unknown tagged fields: skipped");
  static const uint8_t rq2tags[] = {0x02, 'x', 0x01, 0x00, 0x01, 0x7f};
  dc_rd_init(&rd, rq2tags, sizeof(rq2tags), &arena);
  ok(dc_sasl_authenticate_req_decode(&rd, 2, &gotq) == 0 &&
         bytes_eq(gotq.auth_bytes, gotq.n_auth_bytes, (const uint8_t *)"x", 1) &&
         rd.pos == sizeof(rq2tags),
     "sa req v2 with an unknown tagged field: skipped");
}

static int sa_resp_eq(int16_t v, const dc_sasl_authenticate_resp_t *w,
                      const dc_sasl_authenticate_resp_t *g) {
  CHECK(g->error_code == w->error_code);
  CHECK(str_eq(g->error_message, w->error_message));
  CHECK(bytes_eq(g->auth_bytes, g->n_auth_bytes, w->auth_bytes,
                 w->auth_bytes ? w->n_auth_bytes : 0));
  CHECK(g->session_lifetime_ms == (v >= 1 ? w->session_lifetime_ms : 0));
  return 1;
}

static void sa_roundtrips(void) {
  static uint8_t big[300];
  for (size_t i = 0; i < sizeof(big); i++)
    big[i] = (uint8_t)(255 - i);
  static const uint8_t first[] = "n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL";
  dc_sasl_authenticate_resp_t resps[] = {
      {0, NULL, NULL, 0, 0},
      {0, NULL, big, (int32_t)sizeof(big), INT64_MAX},
      {DC_ERR_SASL_AUTHENTICATION_FAILED,
       "Authentication failed: invalid credentials for user alice", NULL, 0, 0},
      {DC_ERR_ILLEGAL_SASL_STATE, "", PLAIN_TOK,
       (int32_t)sizeof(PLAIN_TOK), -1},
      {-1, NULL, first, (int32_t)sizeof(first) - 1, 1},
  };
  dc_sasl_authenticate_req_t reqs[] = {
      {PLAIN_TOK, (int32_t)sizeof(PLAIN_TOK)},
      {first, (int32_t)sizeof(first) - 1},
      {big, (int32_t)sizeof(big)},
      {NULL, 0},
  };
  for (int16_t v = 0; v <= 2; v++) {
    for (size_t c = 0; c < sizeof(resps) / sizeof(resps[0]); c++) {
      reset();
      is_int(dc_sasl_authenticate_resp_encode(&buf, v, &resps[c]), 0,
             "sa resp v%d case %zu encode", v, c);
      dc_rd_t rd;
      dc_sasl_authenticate_resp_t got;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      int rc = dc_sasl_authenticate_resp_decode(&rd, v, &got);
      mismatch = NULL;
      ok(rc == 0 && rd.pos == buf.len && sa_resp_eq(v, &resps[c], &got),
         "sa resp v%d case %zu decode matches", v, c);
      if (mismatch)
        diag("  mismatch: %s", mismatch);
      dc_sasl_authenticate_resp_encode(&buf2, v, &got);
      is_mem(buf2.data, buf2.len, buf.data, buf.len,
             "sa resp v%d case %zu re-encodes identically", v, c);
      is_int(truncation_failures(dec_sa_resp, v, buf.data, buf.len), 0,
             "sa resp v%d case %zu: every prefix fails", v, c);
    }
    for (size_t c = 0; c < sizeof(reqs) / sizeof(reqs[0]); c++) {
      reset();
      is_int(dc_sasl_authenticate_req_encode(&buf, v, &reqs[c]), 0,
             "sa req v%d case %zu encode", v, c);
      dc_rd_t rd;
      dc_sasl_authenticate_req_t got;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      ok(dc_sasl_authenticate_req_decode(&rd, v, &got) == 0 &&
             rd.pos == buf.len &&
             bytes_eq(got.auth_bytes, got.n_auth_bytes, reqs[c].auth_bytes,
                      reqs[c].n_auth_bytes),
         "sa req v%d case %zu decode matches", v, c);
      dc_sasl_authenticate_req_encode(&buf2, v, &got);
      is_mem(buf2.data, buf2.len, buf.data, buf.len,
             "sa req v%d case %zu re-encodes identically", v, c);
      is_int(truncation_failures(dec_sa_req, v, buf.data, buf.len), 0,
             "sa req v%d case %zu: every prefix fails", v, c);
    }
  }
}

/* ====================================================================== */
/* ReloadSecurity                                                          */
/* ====================================================================== */

static void rl_vectors(void) {
  dc_rd_t rd;
  dc_reload_req_t all = {NULL}, one = {"SSL"};
  reset();
  is_int(dc_reload_req_encode(&buf, 0, &all), 0, "rl req null listener encode");
  is_mem(buf.data, buf.len, "\xff\xff", 2, "rl req null listener bytes ff ff");
  reset();
  is_int(dc_reload_req_encode(&buf, 0, &one), 0, "rl req SSL encode");
  is_mem(buf.data, buf.len, "\x00\x03SSL", 5, "rl req \"SSL\" bytes");
  dc_reload_req_t got;
  dc_rd_init(&rd, "\xff\xff", 2, &arena);
  ok(dc_reload_req_decode(&rd, 0, &got) == 0 && got.listener_name == NULL &&
         rd.pos == 2,
     "rl req null listener decodes as NULL");
  dc_rd_init(&rd, "\x00\x00", 2, &arena);
  ok(dc_reload_req_decode(&rd, 0, &got) == 0 && got.listener_name &&
         got.listener_name[0] == '\0',
     "rl req empty listener decodes as \"\" (not NULL)");
  dc_rd_init(&rd, "\x00\x03SSL", 5, &arena);
  ok(dc_reload_req_decode(&rd, 0, &got) == 0 &&
         str_eq(got.listener_name, "SSL") && rd.pos == 5,
     "rl req \"SSL\" decodes");

  dc_reload_listener_t ls[] = {
      {"SSL", 0, NULL, "CN=localhost", 1700000000000LL},
      {"SASL_SSL", DC_ERR_INVALID_CONFIG, "bad key", NULL, -1},
  };
  dc_reload_resp_t resp = {0, 0, NULL, 2, ls, 0, NULL};
  reset();
  is_int(dc_reload_resp_encode(&buf, 0, &resp), 0, "rl resp encode");
  static const uint8_t rs[] = {
      0x00, 0x00, 0x00, 0x00, /* throttle */
      0x00, 0x00,             /* error */
      0xff, 0xff,             /* message null */
      0x00, 0x00, 0x00, 0x02, /* 2 listeners */
      0x00, 0x03, 'S', 'S', 'L', 0x00, 0x00, 0xff, 0xff, 0x00, 0x0c, 'C', 'N',
      '=', 'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't',
      0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, /* 1700000000000 */
      0x00, 0x08, 'S', 'A', 'S', 'L', '_', 'S', 'S', 'L',
      0x00, 0x28,                            /* error 40 */
      0x00, 0x07, 'b', 'a', 'd', ' ', 'k', 'e', 'y',
      0xff, 0xff,                            /* subject null */
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* -1 */
  };
  is_mem(buf.data, buf.len, rs, sizeof(rs), "rl resp bytes");
  dc_reload_resp_t gr;
  dc_rd_init(&rd, rs, sizeof(rs), &arena);
  ok(dc_reload_resp_decode(&rd, 0, &gr) == 0 && rd.pos == sizeof(rs) &&
         gr.error_message == NULL && gr.n_listeners == 2 &&
         str_eq(gr.listeners[0].listener_name, "SSL") &&
         gr.listeners[0].error_message == NULL &&
         str_eq(gr.listeners[0].subject, "CN=localhost") &&
         gr.listeners[0].not_after_ms == 1700000000000LL &&
         gr.listeners[1].error_code == 40 &&
         str_eq(gr.listeners[1].error_message, "bad key") &&
         gr.listeners[1].subject == NULL && gr.listeners[1].not_after_ms == -1,
     "rl resp vector decodes (null message/subject as NULL)");

  /* A top-level error (e.g. authorization) with no listeners. */
  dc_reload_resp_t denied = {5, DC_ERR_CLUSTER_AUTHORIZATION_FAILED,
                             "no", 0, NULL, 0, NULL};
  reset();
  dc_reload_resp_encode(&buf, 0, &denied);
  static const uint8_t rd31[] = {0x00, 0x00, 0x00, 0x05, 0x00, 0x1f, 0x00, 0x02,
                                 'n',  'o',  0x00, 0x00, 0x00, 0x00};
  is_mem(buf.data, buf.len, rd31, sizeof(rd31), "rl resp error 31 bytes");

  /* A NULL listener name in a response entry goes out as "" (not
   * nullable), and a null one on the wire is refused. */
  dc_reload_listener_t nn = {NULL, 0, NULL, NULL, 0};
  dc_reload_resp_t nresp = {0, 0, NULL, 1, &nn, 0, NULL};
  reset();
  dc_reload_resp_encode(&buf, 0, &nresp);
  ok(buf.len == 4 + 2 + 2 + 4 + 2 + 2 + 2 + 2 + 8 && buf.data[12] == 0 &&
         buf.data[13] == 0,
     "rl resp NULL listener_name written as \"\"");
  static const uint8_t nullname[] = {0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 1,
                                     0xff, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff,
                                     0, 0, 0, 0, 0, 0, 0, 0};
  dc_rd_init(&rd, nullname, sizeof(nullname), &arena);
  is_int(dc_reload_resp_decode(&rd, 0, &gr), DC_ERR__BAD_LENGTH,
         "rl resp null listener_name -> _BAD_LENGTH");
}

/* v1: the security files after the listeners; v0 leaves them out. */
static void rl_v1_vectors(void) {
  dc_rd_t rd;
  dc_reload_listener_t ls[] = {{"SSL", 0, NULL, "CN=x", -1}};
  dc_reload_file_t fs[] = {
      {DC_RELOAD_ACL, "/a", 0, NULL},
      {DC_RELOAD_KEYTAB, NULL, DC_ERR_INVALID_CONFIG, "bad"},
  };
  dc_reload_resp_t resp = {0, 0, NULL, 1, ls, 2, fs};
  static const uint8_t rs[] = {
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, /* throttle, 0, null */
      0x00, 0x00, 0x00, 0x01,                         /* 1 listener */
      0x00, 0x03, 'S', 'S', 'L', 0x00, 0x00, 0xff, 0xff, 0x00, 0x04, 'C', 'N',
      '=', 'x', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
      0x00, 0x00, 0x00, 0x02, /* 2 files */
      0x00, 0x08, 'A', 'C', 'L', ' ', 'f', 'i', 'l', 'e',
      0x00, 0x02, '/', 'a', 0x00, 0x00, 0xff, 0xff,
      0x00, 0x0f, 'K', 'e', 'r', 'b', 'e', 'r', 'o', 's', ' ', 'k', 'e', 'y',
      't', 'a', 'b', 0xff, 0xff, /* path null */
      0x00, 0x28,                /* error 40 */
      0x00, 0x03, 'b', 'a', 'd',
  };
  const size_t files_len = 4 + 18 + 26;
  reset();
  is_int(dc_reload_resp_encode(&buf, 1, &resp), 0, "rl resp v1 encode");
  is_mem(buf.data, buf.len, rs, sizeof(rs), "rl resp v1 bytes");
  dc_reload_resp_t gr;
  dc_rd_init(&rd, rs, sizeof(rs), &arena);
  ok(dc_reload_resp_decode(&rd, 1, &gr) == 0 && rd.pos == sizeof(rs) &&
         gr.n_listeners == 1 && gr.n_files == 2 &&
         str_eq(gr.files[0].what, "ACL file") &&
         str_eq(gr.files[0].path, "/a") && gr.files[0].error_code == 0 &&
         gr.files[0].error_message == NULL &&
         str_eq(gr.files[1].what, "Kerberos keytab") &&
         gr.files[1].path == NULL && gr.files[1].error_code == 40 &&
         str_eq(gr.files[1].error_message, "bad"),
     "rl resp v1 vector decodes (null path as NULL)");
  reset();
  is_int(dc_reload_resp_encode(&buf, 0, &resp), 0, "rl resp v0 encode");
  is_mem(buf.data, buf.len, rs, sizeof(rs) - files_len,
         "rl resp v0: the same bytes without the files");
  dc_rd_init(&rd, rs, sizeof(rs) - files_len, &arena);
  ok(dc_reload_resp_decode(&rd, 0, &gr) == 0 && gr.n_files == 0 &&
         gr.files == NULL,
     "rl resp v0 decodes with no files");
  dc_rd_init(&rd, rs, sizeof(rs) - files_len, &arena);
  ok(dc_reload_resp_decode(&rd, 1, &gr) < 0,
     "rl resp v0 bytes read as v1: the files array is missing -> error");
  dc_reload_req_t one = {"SSL"};
  reset();
  is_int(dc_reload_req_encode(&buf, 1, &one), 0, "rl req v1 encode");
  is_mem(buf.data, buf.len, "\x00\x03SSL", 5, "rl req v1 = v0 bytes");
  /* A null "what" goes out as "", and a null one on the wire is refused. */
  dc_reload_file_t nw = {NULL, NULL, 0, NULL};
  dc_reload_resp_t nresp = {0, 0, NULL, 0, NULL, 1, &nw};
  reset();
  dc_reload_resp_encode(&buf, 1, &nresp);
  static const uint8_t empty_what[] = {0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                       0, 0, 0, 0, 0, 0, 0, 1,
                                       0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff};
  is_mem(buf.data, buf.len, empty_what, sizeof(empty_what),
         "rl resp v1 NULL what written as \"\"");
  static const uint8_t null_what[] = {0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                      0, 0, 0, 0, 0, 0, 0, 1,
                                      0xff, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xff};
  dc_rd_init(&rd, null_what, sizeof(null_what), &arena);
  is_int(dc_reload_resp_decode(&rd, 1, &gr), DC_ERR__BAD_LENGTH,
         "rl resp v1 null what -> _BAD_LENGTH");
  static const uint8_t fhuge[] = {0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0,
                                  0x10, 0x00, 0x00, 0x00, 0, 0, 0, 0};
  dc_arena_reset(&arena);
  dc_rd_init(&rd, fhuge, sizeof(fhuge), &arena);
  is_int(dc_reload_resp_decode(&rd, 1, &gr), DC_ERR__BAD_LENGTH,
         "rl resp v1 file count 2^28 -> _BAD_LENGTH");
}

/* The words dynconfd logs and the CLI prints for one file. */
static void rl_words(void) {
  char out[256];
  dc_reload_file_say(out, sizeof(out), DC_RELOAD_ACL, "/etc/acl", NULL);
  is_str(out, "reloaded ACL file /etc/acl", "words: a file reloaded");
  dc_reload_file_say(out, sizeof(out), DC_RELOAD_KEYTAB, "/k", "garbage");
  is_str(out, "Kerberos keytab /k: not reloaded, old keys kept: garbage",
         "words: a keytab not reloaded");
  dc_reload_file_say(out, sizeof(out), DC_RELOAD_ACL, "/a", "x");
  is_str(out, "ACL file /a: not reloaded, old rules kept: x",
         "words: an ACL file not reloaded");
  dc_reload_file_say(out, sizeof(out), DC_RELOAD_CREDENTIALS, "/c", "x");
  is_str(out, "credentials /c: not reloaded, old credentials kept: x",
         "words: credentials not reloaded");
  dc_reload_file_say(out, sizeof(out), "TOTP seeds", NULL, "x");
  is_str(out, "TOTP seeds (default): not reloaded, old contents kept: x",
         "words: a file this build does not know, without a path");
}

static int rl_resp_eq(const dc_reload_resp_t *w, const dc_reload_resp_t *g,
                      int16_t v) {
  CHECK(g->throttle_time_ms == w->throttle_time_ms);
  CHECK(g->error_code == w->error_code);
  CHECK(str_eq(g->error_message, w->error_message));
  CHECK(g->n_listeners == dc_nn_count(w->n_listeners));
  for (int32_t i = 0; i < g->n_listeners; i++) {
    const dc_reload_listener_t *wl = &w->listeners[i], *gl = &g->listeners[i];
    CHECK(str_eq(gl->listener_name, wl->listener_name));
    CHECK(gl->error_code == wl->error_code);
    CHECK(str_eq(gl->error_message, wl->error_message));
    CHECK(str_eq(gl->subject, wl->subject));
    CHECK(gl->not_after_ms == wl->not_after_ms);
  }
  CHECK(g->n_files == (v >= 1 ? dc_nn_count(w->n_files) : 0));
  for (int32_t i = 0; i < g->n_files; i++) {
    const dc_reload_file_t *wf = &w->files[i], *gf = &g->files[i];
    CHECK(str_eq(gf->what, wf->what));
    CHECK(str_eq(gf->path, wf->path));
    CHECK(gf->error_code == wf->error_code);
    CHECK(str_eq(gf->error_message, wf->error_message));
  }
  return 1;
}

static void rl_roundtrips(void) {
  dc_reload_listener_t ls[] = {
      {"PLAINTEXT", 0, NULL, NULL, -1},
      {"SSL", 0, NULL, "CN=localhost,O=dynconf-test", INT64_MAX},
      {"SASL_SSL", DC_ERR_INVALID_CONFIG,
       "server.key: key does not match certificate; kept the old context",
       "CN=old", 0},
      {"", -1, "", "", INT64_MIN},
  };
  dc_reload_file_t fs[] = {
      {DC_RELOAD_ACL, "/etc/dynconfd/acl", 0, NULL},
      {DC_RELOAD_CREDENTIALS, "/etc/dynconfd/users.creds", 0, NULL},
      {DC_RELOAD_JWKS, "/etc/dynconfd/jwks.json", DC_ERR_INVALID_CONFIG,
       "/etc/dynconfd/jwks.json: not JSON"},
      {DC_RELOAD_KEYTAB, NULL, DC_ERR_INVALID_CONFIG, ""},
      {"", "", -1, NULL},
  };
  dc_reload_resp_t resps[] = {
      {0, 0, NULL, 4, ls, 0, NULL},
      {100, DC_ERR_CLUSTER_AUTHORIZATION_FAILED,
       "User:bob may not alter broker", 0, NULL, 0, NULL},
      {0, DC_ERR_RESOURCE_NOT_FOUND, "no listener named X", -1, NULL, -1,
       NULL},
      {INT32_MAX, 0, "", 1, ls + 2, 1, fs + 3},
      {0, 0, NULL, 0, NULL, 5, fs},
      {0, 0, NULL, 2, ls, 3, fs + 1},
  };
  for (int16_t v = 0; v <= 1; v++)
    for (size_t c = 0; c < sizeof(resps) / sizeof(resps[0]); c++) {
      reset();
      is_int(dc_reload_resp_encode(&buf, v, &resps[c]), 0,
             "rl resp v%d case %zu encode", v, c);
      dc_rd_t rd;
      dc_reload_resp_t got;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      int rc = dc_reload_resp_decode(&rd, v, &got);
      mismatch = NULL;
      ok(rc == 0 && rd.pos == buf.len && rl_resp_eq(&resps[c], &got, v),
         "rl resp v%d case %zu decode matches", v, c);
      if (mismatch)
        diag("  mismatch: %s", mismatch);
      dc_reload_resp_encode(&buf2, v, &got);
      is_mem(buf2.data, buf2.len, buf.data, buf.len,
             "rl resp v%d case %zu re-encodes identically", v, c);
      is_int(truncation_failures(dec_rl_resp, v, buf.data, buf.len), 0,
             "rl resp v%d case %zu: every prefix fails", v, c);
    }
  const char *names[] = {NULL, "", "SSL", "EXTERNAL_SASL_SSL"};
  for (size_t c = 0; c < sizeof(names) / sizeof(names[0]); c++) {
    dc_reload_req_t req = {(char *)names[c]};
    reset();
    is_int(dc_reload_req_encode(&buf, 0, &req), 0, "rl req case %zu encode", c);
    dc_rd_t rd;
    dc_reload_req_t got;
    dc_rd_init(&rd, buf.data, buf.len, &arena);
    ok(dc_reload_req_decode(&rd, 0, &got) == 0 && rd.pos == buf.len &&
           str_eq(got.listener_name, names[c]),
       "rl req case %zu (%s) decode matches", c, names[c] ? names[c] : "null");
    dc_reload_req_encode(&buf2, 0, &got);
    is_mem(buf2.data, buf2.len, buf.data, buf.len,
           "rl req case %zu re-encodes identically", c);
    is_int(truncation_failures(dec_rl_req, 0, buf.data, buf.len), 0,
           "rl req case %zu: every prefix fails", c);
  }
}

/* ====================================================================== */
/* Bad input                                                               */
/* ====================================================================== */

static void bad_versions(void) {
  static const uint8_t some[32];
  dc_sasl_handshake_req_t hq = {"PLAIN"};
  char *m[] = {"PLAIN"};
  dc_sasl_handshake_resp_t hr = {0, 1, m};
  int16_t hs_bad[] = {-1, 2, 3, INT16_MAX, INT16_MIN};
  for (size_t i = 0; i < sizeof(hs_bad) / sizeof(hs_bad[0]); i++) {
    int16_t v = hs_bad[i];
    reset();
    int r1 = dc_sasl_handshake_req_encode(&buf, v, &hq);
    int r2 = dc_sasl_handshake_resp_encode(&buf, v, &hr);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API &&
           buf.len == 0,
       "hs encode v%d -> _UNSUPPORTED_API, nothing written", v);
    dc_rd_t rd;
    dc_sasl_handshake_req_t rq;
    dc_sasl_handshake_resp_t rs;
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r1 = dc_sasl_handshake_req_decode(&rd, v, &rq);
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r2 = dc_sasl_handshake_resp_decode(&rd, v, &rs);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API,
       "hs decode v%d -> _UNSUPPORTED_API", v);
  }

  dc_sasl_authenticate_req_t aq = {PLAIN_TOK, (int32_t)sizeof(PLAIN_TOK)};
  dc_sasl_authenticate_resp_t ar = {0, NULL, NULL, 0, 0};
  int16_t sa_bad[] = {-1, 3, 4, INT16_MAX, INT16_MIN};
  for (size_t i = 0; i < sizeof(sa_bad) / sizeof(sa_bad[0]); i++) {
    int16_t v = sa_bad[i];
    reset();
    int r1 = dc_sasl_authenticate_req_encode(&buf, v, &aq);
    int r2 = dc_sasl_authenticate_resp_encode(&buf, v, &ar);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API &&
           buf.len == 0,
       "sa encode v%d -> _UNSUPPORTED_API, nothing written", v);
    dc_rd_t rd;
    dc_sasl_authenticate_req_t rq;
    dc_sasl_authenticate_resp_t rs;
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r1 = dc_sasl_authenticate_req_decode(&rd, v, &rq);
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r2 = dc_sasl_authenticate_resp_decode(&rd, v, &rs);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API,
       "sa decode v%d -> _UNSUPPORTED_API", v);
  }

  dc_reload_req_t lq = {NULL};
  dc_reload_resp_t lr = {0, 0, NULL, 0, NULL, 0, NULL};
  int16_t rl_bad[] = {-1, 2, 3, INT16_MAX, INT16_MIN};
  for (size_t i = 0; i < sizeof(rl_bad) / sizeof(rl_bad[0]); i++) {
    int16_t v = rl_bad[i];
    reset();
    int r1 = dc_reload_req_encode(&buf, v, &lq);
    int r2 = dc_reload_resp_encode(&buf, v, &lr);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API &&
           buf.len == 0,
       "rl encode v%d -> _UNSUPPORTED_API, nothing written", v);
    dc_rd_t rd;
    dc_reload_req_t rq;
    dc_reload_resp_t rs;
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r1 = dc_reload_req_decode(&rd, v, &rq);
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r2 = dc_reload_resp_decode(&rd, v, &rs);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API,
       "rl decode v%d -> _UNSUPPORTED_API", v);
  }
}

static void bad_input(void) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;

  /* Null where the schema does not allow it. */
  dc_sasl_handshake_req_t hq;
  dc_rd_init(&rd, "\xff\xff", 2, &a);
  is_int(dc_sasl_handshake_req_decode(&rd, 0, &hq), DC_ERR__BAD_LENGTH,
         "hs req null mechanism -> _BAD_LENGTH");
  dc_sasl_handshake_resp_t hr;
  static const uint8_t nullarr[] = {0x00, 0x00, 0xff, 0xff, 0xff, 0xff};
  dc_rd_init(&rd, nullarr, sizeof(nullarr), &a);
  is_int(dc_sasl_handshake_resp_decode(&rd, 1, &hr), DC_ERR__BAD_LENGTH,
         "hs resp null mechanisms array -> _BAD_LENGTH");
  static const uint8_t nullmech[] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
                                     0xff, 0xff};
  dc_rd_init(&rd, nullmech, sizeof(nullmech), &a);
  is_int(dc_sasl_handshake_resp_decode(&rd, 0, &hr), DC_ERR__BAD_LENGTH,
         "hs resp null mechanism entry -> _BAD_LENGTH");
  dc_sasl_authenticate_req_t aq;
  dc_rd_init(&rd, "\xff\xff\xff\xff", 4, &a);
  is_int(dc_sasl_authenticate_req_decode(&rd, 0, &aq), DC_ERR__BAD_LENGTH,
         "sa req v0 null auth_bytes -> _BAD_LENGTH");
  dc_rd_init(&rd, "\x00\x00", 2, &a);
  is_int(dc_sasl_authenticate_req_decode(&rd, 2, &aq), DC_ERR__BAD_LENGTH,
         "sa req v2 null (compact 0) auth_bytes -> _BAD_LENGTH");
  dc_sasl_authenticate_resp_t ar;
  static const uint8_t nullab[] = {0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  dc_rd_init(&rd, nullab, sizeof(nullab), &a);
  is_int(dc_sasl_authenticate_resp_decode(&rd, 0, &ar), DC_ERR__BAD_LENGTH,
         "sa resp v0 null auth_bytes -> _BAD_LENGTH");

  /* Embedded NUL in a string. */
  dc_rd_init(&rd, "\x00\x03P\x00N", 5, &a);
  is_int(dc_sasl_handshake_req_decode(&rd, 0, &hq), DC_ERR__BAD_STRING,
         "hs req mechanism with a NUL byte -> _BAD_STRING");
  static const uint8_t nulmsg[] = {0x00, 0x3a, 0x04, 'a', 0x00, 'b', 0x01,
                                   0, 0, 0, 0, 0, 0, 0, 0, 0x00};
  dc_rd_init(&rd, nulmsg, sizeof(nulmsg), &a);
  is_int(dc_sasl_authenticate_resp_decode(&rd, 2, &ar), DC_ERR__BAD_STRING,
         "sa resp v2 error_message with a NUL byte -> _BAD_STRING");

  /* Lengths beyond the input. */
  dc_rd_init(&rd, "\x7f\xff\xff\xff\x00", 5, &a);
  ok(dc_sasl_authenticate_req_decode(&rd, 1, &aq) < 0,
     "sa req v1 auth_bytes length 2^31-1 with 1 byte left -> error");
  dc_rd_init(&rd, "\xff\xff\xff\xff\x0f\x00", 6, &a);
  ok(dc_sasl_authenticate_req_decode(&rd, 2, &aq) < 0,
     "sa req v2 compact length 2^32-1 -> error");
  dc_rd_init(&rd, "\x80\x80\x80\x80\x80\x01", 6, &a);
  ok(dc_sasl_authenticate_req_decode(&rd, 2, &aq) < 0,
     "sa req v2 over-long uvarint length -> error");

  /* Hostile counts, rejected before allocating. */
  dc_arena_reset(&a);
  static const uint8_t huge[] = {0x00, 0x00, 0x7f, 0xff, 0xff, 0xff,
                                 0x00, 0x01, 'P', 0x00, 0x01, 'Q'};
  dc_rd_init(&rd, huge, sizeof(huge), &a);
  is_int(dc_sasl_handshake_resp_decode(&rd, 0, &hr), DC_ERR__BAD_LENGTH,
         "hs resp mechanism count 0x7fffffff -> _BAD_LENGTH");
  is_int(a.total, 0, "... nothing allocated");
  /* Count 4 with 6 bytes left (min element size 2). */
  static const uint8_t four[] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x04,
                                 0x00, 0x01, 'P', 0x00, 0x01, 'Q'};
  dc_rd_init(&rd, four, sizeof(four), &a);
  is_int(dc_sasl_handshake_resp_decode(&rd, 0, &hr), DC_ERR__BAD_LENGTH,
         "hs resp count 4 with 6 bytes left -> _BAD_LENGTH");
  dc_arena_reset(&a);
  dc_reload_resp_t lr;
  static const uint8_t rhuge[] = {0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                  0x10, 0x00, 0x00, 0x00, 0, 0, 0, 0};
  dc_rd_init(&rd, rhuge, sizeof(rhuge), &a);
  is_int(dc_reload_resp_decode(&rd, 0, &lr), DC_ERR__BAD_LENGTH,
         "rl resp listener count 2^28 -> _BAD_LENGTH");
  is_int(a.total, 0, "... nothing allocated");
  /* Count 1 with 15 bytes left (minimum element is 16). */
  static const uint8_t rshort[] = {0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 1,
                                   0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
                                   0, 0, 0, 0, 0, 0, 0};
  dc_rd_init(&rd, rshort, sizeof(rshort), &a);
  ok(dc_reload_resp_decode(&rd, 0, &lr) < 0,
     "rl resp 1 listener with 15 bytes left -> error");
  static const uint8_t rnull[] = {0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff};
  dc_rd_init(&rd, rnull, sizeof(rnull), &a);
  is_int(dc_reload_resp_decode(&rd, 0, &lr), DC_ERR__BAD_LENGTH,
         "rl resp null listeners array -> _BAD_LENGTH");
  dc_arena_free(&a);
}

int main(void) {
  dc_arena_init(&arena);
  dc_buf_init(&buf);
  dc_buf_init(&buf2);
  api_table();
  hs_vectors();
  hs_roundtrips();
  sa_vectors();
  sa_roundtrips();
  rl_vectors();
  rl_v1_vectors();
  rl_words();
  rl_roundtrips();
  bad_versions();
  bad_input();
  dc_buf_free(&buf);
  dc_buf_free(&buf2);
  dc_arena_free(&arena);
  return done_testing();
}
