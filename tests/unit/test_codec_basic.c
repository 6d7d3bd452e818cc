/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ApiVersions (v0-3) and Metadata (v0-12) codecs:
 *  - byte-exact vectors derived by hand from apache/kafka's
 *    ApiVersions{Request,Response}.json and Metadata{Request,Response}.json,
 *    one per distinct wire layout;
 *  - round trips (encode, decode, compare every field the version carries
 *    and the schema default for the rest, re-encode to identical bytes) for
 *    every version;
 *  - truncation at every byte: every strict prefix of every encoding must
 *    fail with a negative error;
 *  - out-of-range versions, hostile counts, bad booleans.
 */
#include "codec/proto.h"
#include "../codectest.h"
#include "../tap.h"

#include <stdint.h>
#include <string.h>

/* Shared for the whole run; freed at the end of main. */
static dc_arena_t arena;
static dc_buf_t buf, buf2;

static const uint8_t UUID1[16] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
                                  0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
                                  0x0d, 0x0e, 0x0f, 0x10};
static const uint8_t UUID2[16] = {0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa,
                                  0x99, 0x88, 0x77, 0x66, 0x55, 0x44,
                                  0x33, 0x22, 0x11, 0x00};
static const uint8_t UUID0[16];

static void reset(void) {
  dc_buf_clear(&buf);
  dc_buf_clear(&buf2);
  dc_arena_reset(&arena);
}

static int i32s_eq(int32_t na, const int32_t *a, int32_t nb, const int32_t *b) {
  if (na != nb)
    return 0;
  for (int32_t i = 0; i < na; i++)
    if (a[i] != b[i])
      return 0;
  return 1;
}

static int dec_av_req(dc_rd_t *rd, int16_t v) {
  dc_apiversions_req_t m;
  return dc_apiversions_req_decode(rd, v, &m);
}
static int dec_av_resp(dc_rd_t *rd, int16_t v) {
  dc_apiversions_resp_t m;
  return dc_apiversions_resp_decode(rd, v, &m);
}
static int dec_md_req(dc_rd_t *rd, int16_t v) {
  dc_metadata_req_t m;
  return dc_metadata_req_decode(rd, v, &m);
}
static int dec_md_resp(dc_rd_t *rd, int16_t v) {
  dc_metadata_resp_t m;
  return dc_metadata_resp_decode(rd, v, &m);
}

#define VEC(...) (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

/* ====================================================================== */
/* ApiVersions                                                             */
/* ====================================================================== */

static dc_api_range_t av_ranges[] = {{3, 0, 12}, {18, 0, 3}, {32, 0, 4}};

static void av_vectors(void) {
  dc_apiversions_resp_t resp = {0, 2, av_ranges, 100};

  /* v0 response: error_code, api_keys int32 array of (key, min, max). */
  reset();
  is_int(dc_apiversions_resp_encode(&buf, 0, &resp), 0, "av resp v0 encode");
  static const uint8_t v0[] = {
      0x00, 0x00,             /* error_code 0 */
      0x00, 0x00, 0x00, 0x02, /* api_keys: 2 */
      0x00, 0x03, 0x00, 0x00, 0x00, 0x0c, /* Metadata 0-12 */
      0x00, 0x12, 0x00, 0x00, 0x00, 0x03, /* ApiVersions 0-3 */
  };
  is_mem(buf.data, buf.len, v0, sizeof(v0), "av resp v0 bytes");

  /* v1/v2 response: + throttle_time_ms. */
  reset();
  dc_apiversions_resp_encode(&buf, 2, &resp);
  static const uint8_t v2[] = {
      0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x03, 0x00, 0x00, 0x00,
      0x0c, 0x00, 0x12, 0x00, 0x00, 0x00, 0x03,
      0x00, 0x00, 0x00, 0x64, /* throttle_time_ms 100 */
  };
  is_mem(buf.data, buf.len, v2, sizeof(v2), "av resp v2 bytes");

  /* v3 response: compact array (n+1), tags after each entry, throttle,
   * body tags. */
  reset();
  dc_apiversions_resp_encode(&buf, 3, &resp);
  static const uint8_t v3[] = {
      0x00, 0x00,                               /* error_code */
      0x03,                                     /* api_keys: 2 (+1) */
      0x00, 0x03, 0x00, 0x00, 0x00, 0x0c, 0x00, /* Metadata 0-12, tags */
      0x00, 0x12, 0x00, 0x00, 0x00, 0x03, 0x00, /* ApiVersions 0-3, tags */
      0x00, 0x00, 0x00, 0x64,                   /* throttle 100 */
      0x00,                                     /* body tags */
  };
  is_mem(buf.data, buf.len, v3, sizeof(v3), "av resp v3 bytes");

  /* The "unsupported version" answer: v0 body, error 35, key 18's range. */
  dc_api_range_t r18 = {18, 0, 3};
  dc_apiversions_resp_t unsup = {DC_ERR_UNSUPPORTED_VERSION, 1, &r18, 0};
  reset();
  dc_apiversions_resp_encode(&buf, 0, &unsup);
  static const uint8_t uv[] = {
      0x00, 0x23,             /* error 35 */
      0x00, 0x00, 0x00, 0x01, /* 1 entry */
      0x00, 0x12, 0x00, 0x00, 0x00, 0x03,
  };
  is_mem(buf.data, buf.len, uv, sizeof(uv), "av resp v0 UNSUPPORTED_VERSION bytes");

  /* v3 request: compact ClientSoftwareName/Version and body tags. */
  dc_apiversions_req_t req = {"librdkafka", "2.0.2"};
  reset();
  is_int(dc_apiversions_req_encode(&buf, 3, &req), 0, "av req v3 encode");
  static const uint8_t rq3[] = {
      0x0b, 'l', 'i', 'b', 'r', 'd', 'k', 'a', 'f', 'k', 'a', /* 10 (+1) */
      0x06, '2', '.', '0', '.', '2',                          /* 5 (+1) */
      0x00,                                                   /* tags */
  };
  is_mem(buf.data, buf.len, rq3, sizeof(rq3), "av req v3 bytes");
  dc_rd_t rd;
  dc_apiversions_req_t rq;
  dc_rd_init(&rd, rq3, sizeof(rq3), &arena);
  ok(dc_apiversions_req_decode(&rd, 3, &rq) == 0 &&
         str_eq(rq.client_software_name, "librdkafka") &&
         str_eq(rq.client_software_version, "2.0.2") && rd.pos == sizeof(rq3),
     "av req v3 decodes name and version");

  /* v0-2 request: empty body. */
  for (int16_t v = 0; v <= 2; v++) {
    reset();
    ok(dc_apiversions_req_encode(&buf, v, &req) == 0 && buf.len == 0,
       "av req v%d is an empty body", v);
    dc_rd_init(&rd, "", 0, &arena);
    ok(dc_apiversions_req_decode(&rd, v, &rq) == 0 &&
           rq.client_software_name == NULL,
       "av req v%d decodes from nothing", v);
  }

  /* NULL strings in a v3 request go out as "" (they are not nullable). */
  dc_apiversions_req_t nreq = {NULL, NULL};
  reset();
  dc_apiversions_req_encode(&buf, 3, &nreq);
  static const uint8_t rqe[] = {0x01, 0x01, 0x00};
  is_mem(buf.data, buf.len, rqe, sizeof(rqe), "av req v3 NULL strings -> \"\"");

  /* A null compact string in a v3 request is rejected. */
  static const uint8_t rqnull[] = {0x00, 0x01, 0x00};
  dc_rd_init(&rd, rqnull, sizeof(rqnull), &arena);
  is_int(dc_apiversions_req_decode(&rd, 3, &rq), DC_ERR__BAD_LENGTH,
         "av req v3 null ClientSoftwareName -> _BAD_LENGTH");

  /* A v3 response carrying tagged fields (FinalizedFeaturesEpoch, tag 1,
   * int64) on an entry and on the body: skipped. */
  static const uint8_t v3tags[] = {
      0x00, 0x00, 0x02,                         /* error, 1 entry */
      0x00, 0x12, 0x00, 0x00, 0x00, 0x04,       /* ApiVersions 0-4 */
      0x01, 0x07, 0x01, 0xaa,                   /* entry tag 7, 1 byte */
      0x00, 0x00, 0x00, 0x00,                   /* throttle */
      0x02, 0x01, 0x08, 0, 0, 0, 0, 0, 0, 0, 9, /* tag 1: epoch 9 */
      0x03, 0x01, 0x01,                         /* tag 3: ZkMigrationReady */
      0x55,                                     /* trailing byte */
  };
  dc_apiversions_resp_t got;
  dc_rd_init(&rd, v3tags, sizeof(v3tags), &arena);
  ok(dc_apiversions_resp_decode(&rd, 3, &got) == 0 && got.n_api_keys == 1 &&
         got.api_keys[0].api_key == 18 && got.api_keys[0].max_version == 4 &&
         rd.pos == sizeof(v3tags) - 1,
     "av resp v3 with tagged fields: tags skipped");

  /* Decoding the v0 vector yields the fields back. */
  dc_rd_init(&rd, v0, sizeof(v0), &arena);
  ok(dc_apiversions_resp_decode(&rd, 0, &got) == 0 && got.error_code == 0 &&
         got.n_api_keys == 2 && got.api_keys[0].api_key == 3 &&
         got.api_keys[0].max_version == 12 && got.api_keys[1].api_key == 18 &&
         got.throttle_time_ms == 0,
     "av resp v0 vector decodes");
}

static int av_resp_eq(int16_t v, const dc_apiversions_resp_t *w,
                      const dc_apiversions_resp_t *g) {
  CHECK(g->error_code == w->error_code);
  CHECK(g->n_api_keys == w->n_api_keys);
  for (int32_t i = 0; i < w->n_api_keys; i++) {
    CHECK(g->api_keys[i].api_key == w->api_keys[i].api_key);
    CHECK(g->api_keys[i].min_version == w->api_keys[i].min_version);
    CHECK(g->api_keys[i].max_version == w->api_keys[i].max_version);
  }
  CHECK(g->throttle_time_ms == (v >= 1 ? w->throttle_time_ms : 0));
  return 1;
}

static void av_roundtrips(void) {
  dc_apiversions_resp_t resp = {DC_ERR_UNSUPPORTED_VERSION, 3, av_ranges,
                                12345};
  dc_apiversions_resp_t empty = {0, 0, NULL, 0};
  dc_apiversions_req_t req = {"dynconf-agent", "0.1.0-rc.1"};
  for (int16_t v = 0; v <= 3; v++) {
    const dc_apiversions_resp_t *cases[] = {&resp, &empty};
    for (int c = 0; c < 2; c++) {
      reset();
      is_int(dc_apiversions_resp_encode(&buf, v, cases[c]), 0,
             "av resp v%d case %d encode", v, c);
      dc_rd_t rd;
      dc_apiversions_resp_t got;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      int rc = dc_apiversions_resp_decode(&rd, v, &got);
      mismatch = NULL;
      ok(rc == 0 && rd.pos == buf.len && av_resp_eq(v, cases[c], &got),
         "av resp v%d case %d decode matches", v, c);
      if (mismatch)
        diag("  mismatch: %s", mismatch);
      dc_apiversions_resp_encode(&buf2, v, &got);
      is_mem(buf2.data, buf2.len, buf.data, buf.len,
             "av resp v%d case %d re-encodes identically", v, c);
      is_int(truncation_failures(dec_av_resp, v, buf.data, buf.len), 0,
             "av resp v%d case %d: every prefix fails", v, c);
    }

    reset();
    is_int(dc_apiversions_req_encode(&buf, v, &req), 0, "av req v%d encode", v);
    dc_rd_t rd;
    dc_apiversions_req_t got;
    dc_rd_init(&rd, buf.data, buf.len, &arena);
    int rc = dc_apiversions_req_decode(&rd, v, &got);
    ok(rc == 0 && rd.pos == buf.len &&
           str_eq(got.client_software_name, v >= 3 ? req.client_software_name : NULL) &&
           str_eq(got.client_software_version,
                  v >= 3 ? req.client_software_version : NULL),
       "av req v%d decode matches", v);
    dc_apiversions_req_encode(&buf2, v, &got);
    is_mem(buf2.data, buf2.len, buf.data, buf.len,
           "av req v%d re-encodes identically", v);
    is_int(truncation_failures(dec_av_req, v, buf.data, buf.len), 0,
           "av req v%d: every prefix fails", v);
  }
}

static void av_bad_input(void) {
  dc_apiversions_req_t req = {"a", "b"};
  dc_apiversions_resp_t resp = {0, 1, av_ranges, 0};
  int16_t bad_versions[] = {-1, 4, 5, INT16_MAX, INT16_MIN};
  for (size_t i = 0; i < sizeof(bad_versions) / sizeof(bad_versions[0]); i++) {
    int16_t v = bad_versions[i];
    reset();
    int r1 = dc_apiversions_req_encode(&buf, v, &req);
    int r2 = dc_apiversions_resp_encode(&buf, v, &resp);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API &&
           buf.len == 0,
       "av encode v%d -> _UNSUPPORTED_API, nothing written", v);
    static const uint8_t some[] = {0, 0, 0, 0, 0, 0, 0, 0};
    dc_rd_t rd;
    dc_apiversions_req_t rq;
    dc_apiversions_resp_t rs;
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r1 = dc_apiversions_req_decode(&rd, v, &rq);
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r2 = dc_apiversions_resp_decode(&rd, v, &rs);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API,
       "av decode v%d -> _UNSUPPORTED_API", v);
  }

  /* Huge api_keys count with a few bytes left: rejected before allocating. */
  static const uint8_t huge[] = {0x00, 0x00, 0x7f, 0xff, 0xff, 0xff,
                                 0x00, 0x12, 0x00, 0x00, 0x00, 0x03};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_apiversions_resp_t rs;
  dc_rd_init(&rd, huge, sizeof(huge), &a);
  is_int(dc_apiversions_resp_decode(&rd, 0, &rs), DC_ERR__BAD_LENGTH,
         "av resp count 0x7fffffff -> _BAD_LENGTH");
  is_int(a.total, 0, "... nothing allocated");
  /* Count 2 with one 6-byte entry present: min element size is 6. */
  static const uint8_t two[] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
                                0x12, 0x00, 0x00, 0x00, 0x03, 0, 0, 0, 0};
  dc_rd_init(&rd, two, sizeof(two), &a);
  is_int(dc_apiversions_resp_decode(&rd, 1, &rs), DC_ERR__BAD_LENGTH,
         "av resp v1 count 2 with 10 bytes left -> _BAD_LENGTH");
  /* Null api_keys array (not nullable). */
  static const uint8_t nul[] = {0x00, 0x00, 0xff, 0xff, 0xff, 0xff};
  dc_rd_init(&rd, nul, sizeof(nul), &a);
  is_int(dc_apiversions_resp_decode(&rd, 0, &rs), DC_ERR__BAD_LENGTH,
         "av resp null api_keys -> _BAD_LENGTH");
  dc_arena_free(&a);
}

/* ====================================================================== */
/* Metadata requests                                                       */
/* ====================================================================== */

static void md_req_vector(const char *what, int16_t v, const dc_metadata_req_t *in,
                          const uint8_t *want, size_t wn) {
  reset();
  is_int(dc_metadata_req_encode(&buf, v, in), 0, "%s: encode", what);
  is_mem(buf.data, buf.len, want, wn, "%s: bytes", what);
  dc_rd_t rd;
  dc_metadata_req_t got;
  dc_rd_init(&rd, want, wn, &arena);
  ok(dc_metadata_req_decode(&rd, v, &got) == 0 && rd.pos == wn,
     "%s: decodes", what);
  dc_metadata_req_encode(&buf2, v, &got);
  is_mem(buf2.data, buf2.len, want, wn, "%s: decode+encode identical", what);
}

static void md_req_vectors(void) {
  dc_metadata_req_topic_t t1 = {{0}, "t1"};
  dc_metadata_req_topic_t t1id = {{0}, "t1"};
  memcpy(t1id.topic_id, UUID1, 16);
  dc_metadata_req_topic_t byid = {{0}, NULL};
  memcpy(byid.topic_id, UUID1, 16);

  dc_metadata_req_t one = {1, &t1, false, true, true};
  /* v0: int32 array of classic strings; nothing else. */
  md_req_vector("md req v0 [t1]", 0, &one,
                VEC(0x00, 0x00, 0x00, 0x01, /* 1 topic */
                    0x00, 0x02, 't', '1'));
  /* v0 "all topics": the empty array. */
  dc_metadata_req_t all = {-1, NULL, true, false, false};
  md_req_vector("md req v0 all topics = empty array", 0, &all,
                VEC(0x00, 0x00, 0x00, 0x00));
  /* v1: null array for all topics. */
  md_req_vector("md req v1 all topics = null array", 1, &all,
                VEC(0xff, 0xff, 0xff, 0xff));
  dc_metadata_req_t none = {0, NULL, true, false, false};
  md_req_vector("md req v1 no topics = empty array", 1, &none,
                VEC(0x00, 0x00, 0x00, 0x00));
  /* v4: + allow_auto_topic_creation. */
  md_req_vector("md req v4 [t1], no auto-create", 4, &one,
                VEC(0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 't', '1',
                    0x00 /* allow_auto_topic_creation false */));
  /* v8: + include_cluster/topic_authorized_operations. */
  md_req_vector("md req v8", 8, &one,
                VEC(0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 't', '1', 0x00,
                    0x01, /* include_cluster_authorized_operations */
                    0x01 /* include_topic_authorized_operations */));
  /* v9: flexible: compact array and string, tags per topic and body. */
  dc_metadata_req_t one9 = {1, &t1, true, false, true};
  md_req_vector("md req v9", 9, &one9,
                VEC(0x02,                /* 1 topic (+1) */
                    0x03, 't', '1', 0x00, /* name, topic tags */
                    0x01,                /* allow_auto_topic_creation */
                    0x00,                /* include_cluster_... */
                    0x01,                /* include_topic_... */
                    0x00 /* body tags */));
  /* v10: topic_id before the name. */
  dc_metadata_req_t one10 = {1, &t1id, true, false, false};
  md_req_vector("md req v10", 10, &one10,
                VEC(0x02, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                    0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, /* id */
                    0x03, 't', '1', 0x00, 0x01, 0x00, 0x00, 0x00));
  /* v12: no include_cluster_...; name nullable (lookup by id). */
  dc_metadata_req_t id12 = {1, &byid, false, true, false};
  md_req_vector("md req v12 by topic id", 12, &id12,
                VEC(0x02, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                    0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
                    0x00, /* null name */
                    0x00, /* topic tags */
                    0x00, /* allow_auto_topic_creation false */
                    0x00, /* include_topic_authorized_operations */
                    0x00 /* body tags */));
  md_req_vector("md req v12 all topics", 12, &all,
                VEC(0x00 /* null array */, 0x01, 0x00, 0x00));

  /* v0 decoding maps the empty array to -1 ("all"); v1+ keeps 0 ("none").
   * Versions without allow_auto_topic_creation decode it as true. */
  dc_rd_t rd;
  dc_metadata_req_t got;
  static const uint8_t empty[] = {0, 0, 0, 0};
  dc_rd_init(&rd, empty, 4, &arena);
  ok(dc_metadata_req_decode(&rd, 0, &got) == 0 && got.n_topics == -1 &&
         got.allow_auto_topic_creation,
     "md req v0 empty array decodes as all topics (-1), auto-create true");
  dc_rd_init(&rd, empty, 4, &arena);
  ok(dc_metadata_req_decode(&rd, 3, &got) == 0 && got.n_topics == 0 &&
         got.allow_auto_topic_creation,
     "md req v3 empty array decodes as no topics (0), auto-create true");
  /* v0 has no null array. */
  static const uint8_t nul[] = {0xff, 0xff, 0xff, 0xff};
  dc_rd_init(&rd, nul, 4, &arena);
  is_int(dc_metadata_req_decode(&rd, 0, &got), DC_ERR__BAD_LENGTH,
         "md req v0 null array -> _BAD_LENGTH");
  /* A null topic name is only valid from v10. */
  static const uint8_t nulname9[] = {0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00};
  dc_rd_init(&rd, nulname9, sizeof(nulname9), &arena);
  is_int(dc_metadata_req_decode(&rd, 9, &got), DC_ERR__BAD_LENGTH,
         "md req v9 null topic name -> _BAD_LENGTH");
  static const uint8_t nulname1[] = {0, 0, 0, 1, 0xff, 0xff};
  dc_rd_init(&rd, nulname1, sizeof(nulname1), &arena);
  is_int(dc_metadata_req_decode(&rd, 1, &got), DC_ERR__BAD_LENGTH,
         "md req v1 null topic name -> _BAD_LENGTH");
  /* Bad booleans. */
  static const uint8_t badbool4[] = {0, 0, 0, 0, 0x02};
  dc_rd_init(&rd, badbool4, sizeof(badbool4), &arena);
  is_int(dc_metadata_req_decode(&rd, 4, &got), DC_ERR__BAD_BOOL,
         "md req v4 allow_auto_topic_creation 2 -> _BAD_BOOL");
  static const uint8_t badbool9[] = {0x01, 0x01, 0x00, 0xff, 0x00};
  dc_rd_init(&rd, badbool9, sizeof(badbool9), &arena);
  is_int(dc_metadata_req_decode(&rd, 9, &got), DC_ERR__BAD_BOOL,
         "md req v9 include_topic_authorized_operations 0xff -> _BAD_BOOL");
  /* Huge topic count. */
  static const uint8_t huge[] = {0x7f, 0xff, 0xff, 0xff, 0x00, 0x01, 'x', 1};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_init(&rd, huge, sizeof(huge), &a);
  is_int(dc_metadata_req_decode(&rd, 4, &got), DC_ERR__BAD_LENGTH,
         "md req count 0x7fffffff -> _BAD_LENGTH");
  is_int(a.total, 0, "... nothing allocated");
  /* v10 topic: 16-byte id + name + tags, so 2 topics need >= 36 bytes. */
  uint8_t two10[1 + 18 + 3] = {0x03};
  two10[17] = 0x01; /* empty name */
  dc_rd_init(&rd, two10, sizeof(two10), &a);
  is_int(dc_metadata_req_decode(&rd, 10, &got), DC_ERR__BAD_LENGTH,
         "md req v10 2 topics in 21 bytes -> _BAD_LENGTH");
  is_int(a.total, 0, "... nothing allocated");
  dc_arena_free(&a);
}

static int md_req_eq(int16_t v, const dc_metadata_req_t *w,
                     const dc_metadata_req_t *g) {
  int32_t wn = w->n_topics;
  if (v == 0 && wn == 0)
    wn = -1; /* v0 cannot say "none" */
  CHECK(g->n_topics == wn);
  for (int32_t i = 0; i < wn; i++) {
    CHECK(str_eq(g->topics[i].name, w->topics[i].name));
    CHECK(!memcmp(g->topics[i].topic_id, v >= 10 ? w->topics[i].topic_id : UUID0, 16));
  }
  CHECK(g->allow_auto_topic_creation == (v >= 4 ? w->allow_auto_topic_creation : true));
  CHECK(g->include_cluster_authorized_operations ==
        (v >= 8 && v <= 10 ? w->include_cluster_authorized_operations : false));
  CHECK(g->include_topic_authorized_operations ==
        (v >= 8 ? w->include_topic_authorized_operations : false));
  return 1;
}

static void md_req_roundtrips(void) {
  dc_metadata_req_topic_t topics[3] = {
      {{0}, "orders"}, {{0}, "a.b-c_d"}, {{0}, NULL}};
  memcpy(topics[0].topic_id, UUID1, 16);
  memcpy(topics[1].topic_id, UUID2, 16);
  memcpy(topics[2].topic_id, UUID2, 16);
  for (int16_t v = 0; v <= 12; v++) {
    /* The null-name topic only where names are nullable. */
    dc_metadata_req_t full = {v >= 10 ? 3 : 2, topics, false, true, true};
    dc_metadata_req_t alltopics = {-1, NULL, true, false, true};
    dc_metadata_req_t notopics = {0, NULL, true, true, false};
    const dc_metadata_req_t *cases[] = {&full, &alltopics, &notopics};
    for (int c = 0; c < 3; c++) {
      reset();
      is_int(dc_metadata_req_encode(&buf, v, cases[c]), 0,
             "md req v%d case %d encode", v, c);
      dc_rd_t rd;
      dc_metadata_req_t got;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      int rc = dc_metadata_req_decode(&rd, v, &got);
      mismatch = NULL;
      ok(rc == 0 && rd.pos == buf.len && md_req_eq(v, cases[c], &got),
         "md req v%d case %d decode matches", v, c);
      if (mismatch)
        diag("  mismatch: %s", mismatch);
      dc_metadata_req_encode(&buf2, v, &got);
      is_mem(buf2.data, buf2.len, buf.data, buf.len,
             "md req v%d case %d re-encodes identically", v, c);
      is_int(truncation_failures(dec_md_req, v, buf.data, buf.len), 0,
             "md req v%d case %d: every prefix fails", v, c);
    }
  }
}

/* ====================================================================== */
/* Metadata responses                                                      */
/* ====================================================================== */

static int32_t one_node[] = {1};

static void md_resp_vector(const char *what, int16_t v,
                           const dc_metadata_resp_t *in, const uint8_t *want,
                           size_t wn) {
  reset();
  is_int(dc_metadata_resp_encode(&buf, v, in), 0, "%s: encode", what);
  is_mem(buf.data, buf.len, want, wn, "%s: bytes", what);
  dc_rd_t rd;
  dc_metadata_resp_t got;
  dc_rd_init(&rd, want, wn, &arena);
  ok(dc_metadata_resp_decode(&rd, v, &got) == 0 && rd.pos == wn,
     "%s: decodes", what);
  dc_metadata_resp_encode(&buf2, v, &got);
  is_mem(buf2.data, buf2.len, want, wn, "%s: decode+encode identical", what);
}

static void md_resp_vectors(void) {
  dc_metadata_broker_t br = {1, "h", 9092, NULL};
  dc_metadata_broker_t brr = {1, "h", 9092, "r"};
  dc_metadata_partition_t part = {0, 0, 1, 5, 1, one_node, 1, one_node, 0, NULL};
  dc_metadata_topic_t top = {0, "t", {0}, false, 1, &part, INT32_MIN};
  dc_metadata_resp_t r = {0, 1, &br, NULL, 1, 1, &top, INT32_MIN};

  /* v0: brokers [node_id, host, port], topics [error, name, partitions
   * [error, index, leader, replicas, isr]]. */
  md_resp_vector("md resp v0", 0, &r,
                 VEC(0x00, 0x00, 0x00, 0x01,             /* 1 broker */
                     0x00, 0x00, 0x00, 0x01,             /* node_id 1 */
                     0x00, 0x01, 'h',                    /* host */
                     0x00, 0x00, 0x23, 0x84,             /* port 9092 */
                     0x00, 0x00, 0x00, 0x01,             /* 1 topic */
                     0x00, 0x00,                         /* error */
                     0x00, 0x01, 't',                    /* name */
                     0x00, 0x00, 0x00, 0x01,             /* 1 partition */
                     0x00, 0x00,                         /* error */
                     0x00, 0x00, 0x00, 0x00,             /* index 0 */
                     0x00, 0x00, 0x00, 0x01,             /* leader 1 */
                     0x00, 0x00, 0x00, 0x01, 0, 0, 0, 1, /* replicas [1] */
                     0x00, 0x00, 0x00, 0x01, 0, 0, 0, 1  /* isr [1] */));

  /* v1: + rack (null here), controller_id, is_internal. */
  md_resp_vector("md resp v1", 1, &r,
                 VEC(0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00,
                     0x01, 'h', 0x00, 0x00, 0x23, 0x84,
                     0xff, 0xff,             /* rack null */
                     0x00, 0x00, 0x00, 0x01, /* controller_id 1 */
                     0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 't',
                     0x00, /* is_internal */
                     0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
                     0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
                     0, 0, 0, 1, 0x00, 0x00, 0x00, 0x01, 0, 0, 0, 1));

  /* v4 (= v3): throttle first, cluster_id after brokers. */
  dc_metadata_resp_t r4 = {10, 1, &brr, "c", 1, 1, &top, INT32_MIN};
  md_resp_vector("md resp v4", 4, &r4,
                 VEC(0x00, 0x00, 0x00, 0x0a, /* throttle 10 */
                     0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00,
                     0x01, 'h', 0x00, 0x00, 0x23, 0x84,
                     0x00, 0x01, 'r', /* rack "r" */
                     0x00, 0x01, 'c', /* cluster_id "c" */
                     0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00,
                     0x00, 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x00, 0x01,
                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                     0x01, 0x00, 0x00, 0x00, 0x01, 0, 0, 0, 1, 0x00, 0x00,
                     0x00, 0x01, 0, 0, 0, 1));

  /* v9: flexible, with leader_epoch (v7), offline_replicas (v5) and both
   * authorized-operations fields (v8). */
  md_resp_vector("md resp v9", 9, &r,
                 VEC(0x00, 0x00, 0x00, 0x00, /* throttle */
                     0x02,                   /* 1 broker (+1) */
                     0x00, 0x00, 0x00, 0x01, /* node_id */
                     0x02, 'h',              /* host */
                     0x00, 0x00, 0x23, 0x84, /* port */
                     0x00,                   /* rack null */
                     0x00,                   /* broker tags */
                     0x00,                   /* cluster_id null */
                     0x00, 0x00, 0x00, 0x01, /* controller_id */
                     0x02,                   /* 1 topic */
                     0x00, 0x00,             /* error */
                     0x02, 't',              /* name */
                     0x00,                   /* is_internal */
                     0x02,                   /* 1 partition */
                     0x00, 0x00,             /* error */
                     0x00, 0x00, 0x00, 0x00, /* index */
                     0x00, 0x00, 0x00, 0x01, /* leader */
                     0x00, 0x00, 0x00, 0x05, /* leader_epoch 5 */
                     0x02, 0, 0, 0, 1,       /* replicas [1] */
                     0x02, 0, 0, 0, 1,       /* isr [1] */
                     0x01,                   /* offline [] */
                     0x00,                   /* partition tags */
                     0x80, 0x00, 0x00, 0x00, /* topic auth ops INT32_MIN */
                     0x00,                   /* topic tags */
                     0x80, 0x00, 0x00, 0x00, /* cluster auth ops */
                     0x00 /* body tags */));

  /* v12: topic_id after name, name nullable, no cluster auth ops. */
  dc_metadata_topic_t byid = {100, NULL, {0}, false, 0, NULL, 0};
  memcpy(byid.topic_id, UUID1, 16);
  dc_metadata_resp_t r12 = {0, 1, &brr, "c", 1, 1, &byid, 0};
  md_resp_vector("md resp v12", 12, &r12,
                 VEC(0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01,
                     0x02, 'h', 0x00, 0x00, 0x23, 0x84,
                     0x02, 'r',              /* rack */
                     0x00,                   /* broker tags */
                     0x02, 'c',              /* cluster_id */
                     0x00, 0x00, 0x00, 0x01, /* controller_id */
                     0x02,                   /* 1 topic */
                     0x00, 0x64,             /* error 100 */
                     0x00,                   /* name null */
                     0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
                     0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, /* topic_id */
                     0x00,                   /* is_internal */
                     0x01,                   /* 0 partitions */
                     0x00, 0x00, 0x00, 0x00, /* topic auth ops 0 */
                     0x00,                   /* topic tags */
                     0x00 /* body tags */));

  /* Schema defaults for fields a version lacks. */
  static const uint8_t v0b[] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 't', 0,
                                0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0,
                                0, 0, 0, 0, 0, 0};
  dc_rd_t rd;
  dc_metadata_resp_t got;
  dc_rd_init(&rd, v0b, sizeof(v0b), &arena);
  ok(dc_metadata_resp_decode(&rd, 0, &got) == 0 && got.n_brokers == 0 &&
         got.controller_id == -1 && got.cluster_id == NULL &&
         got.cluster_authorized_operations == INT32_MIN && got.n_topics == 1 &&
         got.topics[0].topic_authorized_operations == INT32_MIN &&
         got.topics[0].partitions[0].leader_epoch == -1 &&
         got.topics[0].partitions[0].leader_id == 2 &&
         got.topics[0].partitions[0].n_offline_replicas == 0,
     "md resp v0 defaults: controller -1, epoch -1, auth ops INT32_MIN");
  reset();
  dc_metadata_resp_encode(&buf, 11, &r);
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(dc_metadata_resp_decode(&rd, 11, &got) == 0 &&
         got.cluster_authorized_operations == INT32_MIN,
     "md resp v11 cluster_authorized_operations default INT32_MIN");

  /* A null topic name is only valid from v12; null host never. */
  dc_metadata_resp_t nonam = {0, 0, NULL, NULL, 1, 1, &byid, 0};
  reset();
  dc_metadata_resp_encode(&buf, 12, &nonam);
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  is_int(dc_metadata_resp_decode(&rd, 11, &got), DC_ERR__BAD_LENGTH,
         "md resp v12 bytes (null name) as v11 -> _BAD_LENGTH");
  static const uint8_t nohost[] = {0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff,
                                   0, 0, 0, 0, 0, 0, 0, 0};
  dc_rd_init(&rd, nohost, sizeof(nohost), &arena);
  is_int(dc_metadata_resp_decode(&rd, 0, &got), DC_ERR__BAD_LENGTH,
         "md resp null broker host -> _BAD_LENGTH");
  /* A NULL name in a version where it is not nullable is written as "". */
  reset();
  dc_metadata_resp_encode(&buf, 0, &nonam);
  static const uint8_t emptyname[] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0x64,
                                      0, 0, 0, 0, 0, 0};
  is_mem(buf.data, buf.len, emptyname, sizeof(emptyname),
         "md resp v0 NULL topic name written as \"\"");
  /* Bad is_internal boolean. */
  static const uint8_t badbool[] = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0,
                                    0, 1, 0, 0, 0, 1, 't', 2, 0, 0, 0, 0};
  dc_rd_init(&rd, badbool, sizeof(badbool), &arena);
  is_int(dc_metadata_resp_decode(&rd, 1, &got), DC_ERR__BAD_BOOL,
         "md resp v1 is_internal 2 -> _BAD_BOOL");
}

static int md_resp_eq(int16_t v, const dc_metadata_resp_t *w,
                      const dc_metadata_resp_t *g) {
  CHECK(g->throttle_time_ms == (v >= 3 ? w->throttle_time_ms : 0));
  CHECK(g->n_brokers == w->n_brokers);
  for (int32_t i = 0; i < w->n_brokers; i++) {
    const dc_metadata_broker_t *wb = &w->brokers[i], *gb = &g->brokers[i];
    CHECK(gb->node_id == wb->node_id);
    CHECK(str_eq(gb->host, wb->host));
    CHECK(gb->port == wb->port);
    CHECK(str_eq(gb->rack, v >= 1 ? wb->rack : NULL));
  }
  CHECK(str_eq(g->cluster_id, v >= 2 ? w->cluster_id : NULL));
  CHECK(g->controller_id == (v >= 1 ? w->controller_id : -1));
  CHECK(g->n_topics == w->n_topics);
  for (int32_t i = 0; i < w->n_topics; i++) {
    const dc_metadata_topic_t *wt = &w->topics[i], *gt = &g->topics[i];
    CHECK(gt->error_code == wt->error_code);
    CHECK(str_eq(gt->name, wt->name));
    CHECK(!memcmp(gt->topic_id, v >= 10 ? wt->topic_id : UUID0, 16));
    CHECK(gt->is_internal == (v >= 1 ? wt->is_internal : false));
    CHECK(gt->topic_authorized_operations ==
          (v >= 8 ? wt->topic_authorized_operations : INT32_MIN));
    CHECK(gt->n_partitions == wt->n_partitions);
    for (int32_t j = 0; j < wt->n_partitions; j++) {
      const dc_metadata_partition_t *wp = &wt->partitions[j],
                                    *gp = &gt->partitions[j];
      CHECK(gp->error_code == wp->error_code);
      CHECK(gp->partition_index == wp->partition_index);
      CHECK(gp->leader_id == wp->leader_id);
      CHECK(gp->leader_epoch == (v >= 7 ? wp->leader_epoch : -1));
      CHECK(i32s_eq(gp->n_replica_nodes, gp->replica_nodes, wp->n_replica_nodes,
                    wp->replica_nodes));
      CHECK(i32s_eq(gp->n_isr_nodes, gp->isr_nodes, wp->n_isr_nodes,
                    wp->isr_nodes));
      if (v >= 5)
        CHECK(i32s_eq(gp->n_offline_replicas, gp->offline_replicas,
                      wp->n_offline_replicas, wp->offline_replicas));
      else
        CHECK(gp->n_offline_replicas == 0);
    }
  }
  CHECK(g->cluster_authorized_operations ==
        (v >= 8 && v <= 10 ? w->cluster_authorized_operations : INT32_MIN));
  return 1;
}

static void md_resp_roundtrips(void) {
  static int32_t rep3[] = {1, 2, 3}, isr2[] = {3, 1}, off1[] = {2};
  static int32_t rep2[] = {2, 1};
  dc_metadata_broker_t brokers[] = {
      {1, "broker-1.example.com", 9092, "rack-a"},
      {2, "10.0.0.2", 19093, NULL},
      {3, "", 0, ""},
  };
  dc_metadata_partition_t parts_a[] = {
      {0, 0, 1, 7, 3, rep3, 2, isr2, 1, off1},
      {9, 1, -1, 0, 2, rep2, 0, NULL, 0, NULL},
  };
  dc_metadata_partition_t parts_b[] = {
      {0, 0, 3, 2147483647, 1, rep3 + 2, 1, rep3 + 2, 0, NULL},
  };
  dc_metadata_topic_t topics[4] = {
      {0, "orders", {0}, false, 2, parts_a, 0x0ff8},
      {3, "missing-topic", {0}, false, 0, NULL, INT32_MIN},
      {0, "__consumer_offsets", {0}, true, 1, parts_b, -1},
      {100, NULL, {0}, false, 0, NULL, 0}, /* v12+: unknown topic id */
  };
  memcpy(topics[0].topic_id, UUID1, 16);
  memcpy(topics[2].topic_id, UUID2, 16);
  memcpy(topics[3].topic_id, UUID2, 16);

  for (int16_t v = 0; v <= 12; v++) {
    dc_metadata_resp_t rich = {250,         3, brokers, "cluster-XyZ_01", 2,
                               v >= 12 ? 4 : 3, topics, 0x7f};
    dc_metadata_resp_t bare = {0, 1, brokers + 1, NULL, 2, 0, NULL, -5};
    dc_metadata_resp_t nothing = {0, 0, NULL, NULL, -1, 0, NULL, INT32_MIN};
    const dc_metadata_resp_t *cases[] = {&rich, &bare, &nothing};
    for (int c = 0; c < 3; c++) {
      reset();
      is_int(dc_metadata_resp_encode(&buf, v, cases[c]), 0,
             "md resp v%d case %d encode", v, c);
      dc_rd_t rd;
      dc_metadata_resp_t got;
      dc_rd_init(&rd, buf.data, buf.len, &arena);
      int rc = dc_metadata_resp_decode(&rd, v, &got);
      mismatch = NULL;
      ok(rc == 0 && rd.pos == buf.len && md_resp_eq(v, cases[c], &got),
         "md resp v%d case %d decode matches", v, c);
      if (mismatch)
        diag("  mismatch: %s", mismatch);
      dc_metadata_resp_encode(&buf2, v, &got);
      is_mem(buf2.data, buf2.len, buf.data, buf.len,
             "md resp v%d case %d re-encodes identically", v, c);
      is_int(truncation_failures(dec_md_resp, v, buf.data, buf.len), 0,
             "md resp v%d case %d: every prefix fails", v, c);
    }
  }
}

static void md_bad_input(void) {
  dc_metadata_req_t req = {-1, NULL, true, false, false};
  dc_metadata_resp_t resp = {0, 0, NULL, NULL, 1, 0, NULL, 0};
  int16_t bad_versions[] = {-1, 13, 100, INT16_MIN};
  for (size_t i = 0; i < sizeof(bad_versions) / sizeof(bad_versions[0]); i++) {
    int16_t v = bad_versions[i];
    reset();
    int r1 = dc_metadata_req_encode(&buf, v, &req);
    int r2 = dc_metadata_resp_encode(&buf, v, &resp);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API &&
           buf.len == 0,
       "md encode v%d -> _UNSUPPORTED_API, nothing written", v);
    static const uint8_t some[16];
    dc_rd_t rd;
    dc_metadata_req_t rq;
    dc_metadata_resp_t rs;
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r1 = dc_metadata_req_decode(&rd, v, &rq);
    dc_rd_init(&rd, some, sizeof(some), &arena);
    r2 = dc_metadata_resp_decode(&rd, v, &rs);
    ok(r1 == DC_ERR__UNSUPPORTED_API && r2 == DC_ERR__UNSUPPORTED_API,
       "md decode v%d -> _UNSUPPORTED_API", v);
  }

  /* Hostile counts at each nesting level, rejected before allocation. */
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_metadata_resp_t rs;
  static const uint8_t brokers[] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1,
                                    0,    1,    'h',  0,    0, 0, 0};
  dc_rd_init(&rd, brokers, sizeof(brokers), &a);
  is_int(dc_metadata_resp_decode(&rd, 0, &rs), DC_ERR__BAD_LENGTH,
         "md resp broker count 0x7fffffff -> _BAD_LENGTH");
  is_int(a.total, 0, "... nothing allocated");
  static const uint8_t topics9[] = {0, 0, 0, 0, 0x01, 0x00, 0, 0, 0, 1,
                                    0xff, 0xff, 0xff, 0xff, 0x07, 0, 0, 2, 't'};
  dc_rd_init(&rd, topics9, sizeof(topics9), &a);
  is_int(dc_metadata_resp_decode(&rd, 9, &rs), DC_ERR__BAD_LENGTH,
         "md resp v9 topic count 2^31-2 -> _BAD_LENGTH");
  is_int(a.total, 0, "... nothing allocated");
  /* Partition count too large for the remaining bytes. */
  static const uint8_t parts[] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 't',
                                  0x00, 0x10, 0x00, 0x00,
                                  0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  dc_rd_init(&rd, parts, sizeof(parts), &a);
  is_int(dc_metadata_resp_decode(&rd, 0, &rs), DC_ERR__BAD_LENGTH,
         "md resp partition count 2^20 with 10 bytes left -> _BAD_LENGTH");
  /* Replica array count too large. */
  static const uint8_t reps[] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 't',
                                 0, 0, 0, 1,             /* 1 partition */
                                 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                 0x00, 0x00, 0x01, 0x00, /* 256 replicas */
                                 0, 0, 0, 0};
  dc_rd_init(&rd, reps, sizeof(reps), &a);
  is_int(dc_metadata_resp_decode(&rd, 0, &rs), DC_ERR__BAD_LENGTH,
         "md resp replica count 256 with 4 bytes left -> _BAD_LENGTH");
  dc_arena_free(&a);
}

/* ====================================================================== */
/* Envelope (KIP-590)                                                      */
/* ====================================================================== */

/* The bytes Kafka's EnvelopeRequest v0 / EnvelopeResponse v0 schemas give
 * (compact bytes: uvarint length + 1; empty tagged fields), and back. */
static void envelope_vectors(void) {
  reset();
  dc_envelope_req_t in = {.request_data = (const uint8_t *)"abc",
                          .request_data_len = 3,
                          .principal = (const uint8_t *)"User:a",
                          .principal_len = 6,
                          .client_host = (const uint8_t *)"h:1",
                          .client_host_len = 3};
  is_int(dc_envelope_req_encode(&buf, 0, &in), 0, "Envelope request encodes");
  static const uint8_t want[] = {4, 'a', 'b', 'c', 7, 'U', 's', 'e', 'r',
                                 ':', 'a', 4, 'h', ':', '1', 0};
  ok(buf.len == sizeof(want) && !memcmp(buf.data, want, sizeof(want)),
     "  as the schema lays it out");
  dc_rd_t rd;
  dc_envelope_req_t out;
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_envelope_req_decode(&rd, 0, &out) && out.request_data_len == 3 &&
         !memcmp(out.request_data, "abc", 3) && out.principal_len == 6 &&
         out.client_host_len == 3,
     "  and decodes back");
  in.principal = NULL, in.principal_len = -1;
  dc_buf_clear(&buf);
  dc_envelope_req_encode(&buf, 0, &in);
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_envelope_req_decode(&rd, 0, &out) && out.principal_len == -1,
     "a null principal stays null");
  dc_rd_init(&rd, buf.data, buf.len - 2, &arena);
  ok(dc_envelope_req_decode(&rd, 0, &out) != 0, "a truncated one is refused");
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  is_int(dc_envelope_req_decode(&rd, 1, &out), DC_ERR__UNSUPPORTED_API,
         "v1 is not spoken");
  dc_envelope_resp_t r = {.response_data = (const uint8_t *)"xy",
                          .response_data_len = 2, .error_code = 0,
                          .position = -1}, rb;
  dc_buf_clear(&buf);
  dc_envelope_resp_encode(&buf, 0, &r);
  static const uint8_t rwant[] = {3, 'x', 'y', 0, 0, 0};
  ok(buf.len == sizeof(rwant) && !memcmp(buf.data, rwant, sizeof(rwant)),
     "Envelope response as the schema lays it out");
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_envelope_resp_decode(&rd, 0, &rb) && rb.response_data_len == 2 &&
         rb.error_code == 0 && rb.position == -1,
     "  and decodes back, saying no position");
  r.position = 300;
  dc_buf_clear(&buf);
  dc_envelope_resp_encode(&buf, 0, &r);
  /* One tagged field: tag 10000 (uvarint 0x90 0x4e), 8 bytes. */
  static const uint8_t pwant[] = {3, 'x', 'y', 0, 0, 1, 0x90, 0x4e, 8,
                                  0, 0, 0, 0, 0, 0, 1, 0x2c};
  ok(buf.len == sizeof(pwant) && !memcmp(buf.data, pwant, sizeof(pwant)),
     "the writer's store position goes in tagged field 10000");
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_envelope_resp_decode(&rd, 0, &rb) && rb.position == 300 &&
         rd.pos == rd.len,
     "  and decodes back");
  static const uint8_t other_tag[] = {3, 'x', 'y', 0, 0, 1, 5, 2, 0xaa, 0xbb};
  dc_rd_init(&rd, other_tag, sizeof(other_tag), &arena);
  ok(!dc_envelope_resp_decode(&rd, 0, &rb) && rb.position == -1 &&
         rd.pos == rd.len,
     "another tag is skipped, and no position is read from it");
  r = (dc_envelope_resp_t){.response_data_len = -1, .error_code = 31,
                           .position = -1};
  dc_buf_clear(&buf);
  dc_envelope_resp_encode(&buf, 0, &r);
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_envelope_resp_decode(&rd, 0, &rb) && rb.response_data_len == -1 &&
         rb.error_code == 31, "an error without data round-trips");
}

/* dynconf's tags on an Envelope request: the forwarding replica's store
 * position (10000) and signature (10002). */
static void envelope_signed(void) {
  reset();
  dc_envelope_req_t in = {.request_data = (const uint8_t *)"r",
                          .request_data_len = 1,
                          .principal = (const uint8_t *)"U",
                          .principal_len = 1,
                          .client_host = (const uint8_t *)"h",
                          .client_host_len = 1,
                          .position = 300,
                          .has_signature = true,
                          .signer = 2,
                          .signed_ms = 0x0102030405060708};
  for (int i = 0; i < DC_ENVELOPE_SIG_LEN; i++)
    in.signature[i] = (uint8_t)(0xc0 + i);
  is_int(dc_envelope_req_encode(&buf, 0, &in), 0, "a signed Envelope encodes");
  /* Two tagged fields: 10000 (0x90 0x4e) of 8 bytes, 10002 (0x92 0x4e) of
   * 76: node, time, signature. */
  uint8_t want[6 + 1 + 3 + 8 + 3 + 76];
  static const uint8_t head[] = {2, 'r', 2, 'U', 2, 'h', 2, 0x90, 0x4e, 8,
                                 0, 0, 0, 0, 0, 0, 1, 0x2c, 0x92, 0x4e, 76,
                                 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
  memcpy(want, head, sizeof(head));
  memcpy(want + sizeof(head), in.signature, DC_ENVELOPE_SIG_LEN);
  is_mem(buf.data, buf.len, want, sizeof(want),
         "  position in tag 10000, node, time and signature in tag 10002");
  dc_rd_t rd;
  dc_envelope_req_t out;
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_envelope_req_decode(&rd, 0, &out) && rd.pos == rd.len &&
         out.position == 300 && out.has_signature && out.signer == 2 &&
         out.signed_ms == 0x0102030405060708 &&
         !memcmp(out.signature, in.signature, DC_ENVELOPE_SIG_LEN),
     "  and decodes back");
  in.position = 0;
  dc_buf_clear(&buf);
  dc_envelope_req_encode(&buf, 0, &in);
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_envelope_req_decode(&rd, 0, &out) && out.position == -1 &&
         out.has_signature && buf.data[6] == 1,
     "without a position, only the signature's tag goes");
  /* The signature's tag one byte short: no signature, the rest read. */
  static const uint8_t short_sig[] = {2, 'r', 2, 'U', 2, 'h', 1, 0x92, 0x4e,
                                      1, 0};
  dc_rd_init(&rd, short_sig, sizeof(short_sig), &arena);
  ok(!dc_envelope_req_decode(&rd, 0, &out) && !out.has_signature &&
         out.position == -1 && rd.pos == rd.len,
     "a signature tag of the wrong size is no signature");
  static const uint8_t none[] = {2, 'r', 2, 'U', 2, 'h', 0};
  dc_rd_init(&rd, none, sizeof(none), &arena);
  ok(!dc_envelope_req_decode(&rd, 0, &out) && !out.has_signature &&
         out.position == -1,
     "an Envelope without tags has neither");
}

/* ====================================================================== */
/* Watch (dynconf's 20001)                                                */
/* ====================================================================== */

static void watch_vectors(void) {
  reset();
  dc_watch_req_t in = {.client_id = "app", .known_version = 258,
                       .timeout_ms = 1000};
  is_int(dc_watch_req_encode(&buf, 0, &in), 0, "Watch request encodes");
  static const uint8_t want[] = {4, 'a', 'p', 'p', 0, 0, 0, 0, 0, 0, 1, 2,
                                 0, 0, 3, 0xe8, 0};
  ok(buf.len == sizeof(want) && !memcmp(buf.data, want, sizeof(want)),
     "  compact string, int64, int32, empty tags");
  dc_rd_t rd;
  dc_watch_req_t out;
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_watch_req_decode(&rd, 0, &out) && !strcmp(out.client_id, "app") &&
         out.known_version == 258 && out.timeout_ms == 1000,
     "  and decodes back");
  for (size_t n = 0; n < buf.len; n++) {
    dc_rd_init(&rd, buf.data, n, &arena);
    if (!dc_watch_req_decode(&rd, 0, &out)) {
      ok(0, "  a request cut at %zu bytes decodes", n);
      break;
    }
  }
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  is_int(dc_watch_req_decode(&rd, 2, &out), DC_ERR__UNSUPPORTED_API,
         "v2 is not spoken");
  in.min_position = 513;
  dc_buf_clear(&buf);
  is_int(dc_watch_req_encode(&buf, 1, &in), 0, "Watch v1 request encodes");
  static const uint8_t want1[] = {4, 'a', 'p', 'p', 0, 0, 0, 0, 0, 0, 1, 2,
                                  0, 0, 3, 0xe8, 0, 0, 0, 0, 0, 0, 2, 1, 0};
  ok(buf.len == sizeof(want1) && !memcmp(buf.data, want1, sizeof(want1)),
     "  with min_position (int64) before the tags");
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_watch_req_decode(&rd, 1, &out) && out.min_position == 513 &&
         rd.pos == rd.len,
     "  and decodes back");
  dc_rd_init(&rd, want, sizeof(want), &arena);
  ok(!dc_watch_req_decode(&rd, 0, &out) && out.min_position == -1,
     "a v0 request has no position (-1)");
  dc_watch_entry_t es[2] = {{"acks", "all", 7}, {"linger.ms", NULL, 9}};
  dc_watch_resp_t r = {.changed = true, .version = -2, .n_configs = 2,
                       .configs = es},
                  rb;
  dc_buf_clear(&buf);
  is_int(dc_watch_resp_encode(&buf, 0, &r), 0, "Watch response encodes");
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_watch_resp_decode(&rd, 0, &rb) && rb.changed && rb.version == -2 &&
         rb.n_configs == 2 && !strcmp(rb.configs[0].name, "acks") &&
         !strcmp(rb.configs[0].value, "all") && rb.configs[0].source == 7 &&
         !rb.configs[1].value && rb.configs[1].source == 9 &&
         !rb.error_message && rd.pos == rd.len,
     "  and decodes back (a null value stays null)");
  r.position = 77;
  dc_buf_clear(&buf);
  is_int(dc_watch_resp_encode(&buf, 1, &r), 0, "Watch v1 response encodes");
  size_t v1_len = buf.len;
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_watch_resp_decode(&rd, 1, &rb) && rb.position == 77 &&
         rb.n_configs == 2 && rd.pos == rd.len,
     "  with the position, and decodes back");
  dc_buf_clear(&buf);
  dc_watch_resp_encode(&buf, 0, &r);
  ok(v1_len == buf.len + 8, "  8 bytes more than v0");
  dc_rd_init(&rd, buf.data, buf.len, &arena);
  ok(!dc_watch_resp_decode(&rd, 0, &rb) && rb.position == -1,
     "a v0 response says no position (-1)");
  uint8_t huge[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                    0xff, 0xff, 0xff, 0xff, 0x0f};
  dc_rd_init(&rd, huge, sizeof(huge), &arena);
  ok(dc_watch_resp_decode(&rd, 0, &rb) != 0,
     "a response claiming 2^32 entries in 21 bytes is refused");
}

int main(void) {
  dc_arena_init(&arena);
  dc_buf_init(&buf);
  dc_buf_init(&buf2);
  av_vectors();
  av_roundtrips();
  av_bad_input();
  md_req_vectors();
  md_req_roundtrips();
  md_resp_vectors();
  md_resp_roundtrips();
  md_bad_input();
  envelope_vectors();
  envelope_signed();
  watch_vectors();
  dc_buf_free(&buf);
  dc_buf_free(&buf2);
  dc_arena_free(&arena);
  return done_testing();
}
