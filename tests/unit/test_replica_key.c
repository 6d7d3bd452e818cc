/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for lib/broker/auth/replica_key.c: Ed25519 as RFC 8032 defines
 * it, the signed message's layout (every part covered, none shiftable
 * into another), keys as hex.
 */
#include "broker/auth/replica_key.h"
#include "../tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void unhex(const char *s, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    sscanf(s + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
}

/* RFC 8032 section 7.1, TEST 1 (the empty message). */
static void test_rfc8032(void) {
  uint8_t seed[32], pub[32], want[64], sig[64];
  unhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        seed, 32);
  unhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        pub, 32);
  unhex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
        "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
        want, 64);
  dc_replica_key_t *k = dc_replica_key_from_seed(seed);
  ok(k != NULL, "a key from RFC 8032's TEST 1 seed");
  is_mem(dc_replica_key_public(k), 32, pub, 32, "  its public key is the RFC's");
  is_int(dc_replica_sign_bytes(k, (const uint8_t *)"", 0, sig), 0,
         "  it signs the empty message");
  is_mem(sig, 64, want, 64, "  as the RFC's signature");
  ok(dc_replica_verify_bytes(pub, (const uint8_t *)"", 0, want),
     "the RFC's signature verifies");
  want[10] ^= 1;
  ok(!dc_replica_verify_bytes(pub, (const uint8_t *)"", 0, want),
     "  one bit flipped, it does not");
  dc_replica_key_free(k);
}

static dc_replica_msg_t sample(void) {
  return (dc_replica_msg_t){.node = 2,
                            .time_ms = INT64_C(1700000000123),
                            .principal = (const uint8_t *)"User:alice",
                            .principal_len = 10,
                            .host = (const uint8_t *)"10.0.0.1:5",
                            .host_len = 10,
                            .request = (const uint8_t *)"\0\44\0\1req",
                            .request_len = 7};
}

/* Each variant of the sample differs in one part; none verifies. */
static void test_parts(void) {
  char err[200];
  dc_replica_key_t *k = dc_replica_key_new(err, sizeof(err));
  dc_replica_key_t *other = dc_replica_key_new(err, sizeof(err));
  ok(k && other, "two new keys (%s)", err);
  ok(memcmp(dc_replica_key_public(k), dc_replica_key_public(other), 32),
     "  that differ");
  const uint8_t *pub = dc_replica_key_public(k);
  dc_replica_msg_t m = sample();
  uint8_t sig[64];
  is_int(dc_replica_sign(k, &m, sig), 0, "a message is signed");
  ok(dc_replica_verify(pub, &m, sig), "  and verifies with the signer's key");
  ok(!dc_replica_verify(dc_replica_key_public(other), &m, sig),
     "  not with another key");
  struct {
    const char *what;
    dc_replica_msg_t m;
  } v[] = {
      {"another node", sample()},
      {"another time", sample()},
      {"another principal", sample()},
      {"a null principal", sample()},
      {"another host", sample()},
      {"another request", sample()},
      {"a byte moved from the principal to the host", sample()},
      {"a byte moved from the host to the request", sample()},
  };
  v[0].m.node = 3;
  v[1].m.time_ms++;
  v[2].m.principal = (const uint8_t *)"User:admin";
  v[3].m.principal = NULL;
  v[4].m.host = (const uint8_t *)"10.6.6.6:5";
  v[5].m.request = (const uint8_t *)"\0\44\0\1reQ";
  v[6].m = (dc_replica_msg_t){.node = 2, .time_ms = m.time_ms,
                              .principal = (const uint8_t *)"User:alic",
                              .principal_len = 9,
                              .host = (const uint8_t *)"e10.0.0.1:5",
                              .host_len = 11, .request = m.request,
                              .request_len = 7};
  v[7].m.host_len = 9;
  v[7].m.request = (const uint8_t *)"5\0\44\0\1req";
  v[7].m.request_len = 8;
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    ok(!dc_replica_verify(pub, &v[i].m, sig), "%s: the signature fails",
       v[i].what);
  dc_replica_msg_t empty = sample();
  empty.principal = (const uint8_t *)"";
  empty.principal_len = 0;
  dc_replica_msg_t null = sample();
  null.principal = NULL;
  is_int(dc_replica_sign(k, &empty, sig), 0, "an empty principal is signed");
  ok(!dc_replica_verify(pub, &null, sig), "  and does not pass for a null one");
  dc_replica_key_free(k);
  dc_replica_key_free(other);
}

/* The layout: prefix, node, time, then each part after its length. */
static void test_layout(void) {
  dc_replica_msg_t m = sample();
  size_t n;
  uint8_t *p = dc_replica_msg_bytes(&m, &n);
  static const char prefix[] = "dynconf replica envelope v1";
  size_t at = sizeof(prefix);
  ok(p && n == at + 4 + 8 + 3 * 8 + 10 + 10 + 7, "the message is %zu bytes",
     n);
  ok(p && !memcmp(p, prefix, sizeof(prefix)), "  starting with its prefix");
  static const uint8_t head[] = {0, 0, 0, 2, 0, 0, 0x01, 0x8b, 0xcf, 0xe5,
                                 0x68, 0x7b, 0, 0, 0, 0, 0, 0, 0, 10};
  ok(p && !memcmp(p + at, head, sizeof(head)),
     "  then node, time and the principal's 8-byte length, big-endian");
  free(p);
  m.principal = NULL;
  p = dc_replica_msg_bytes(&m, &n);
  static const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff};
  ok(p && !memcmp(p + at + 12, ones, 8), "a null principal's length is all ones");
  free(p);
}

static void test_hex(void) {
  uint8_t key[32], back[32];
  char hex[DC_REPLICA_KEY_HEX_LEN + 1];
  for (int i = 0; i < 32; i++)
    key[i] = (uint8_t)(i * 8 + 1);
  dc_replica_key_hex(key, hex);
  is_str(hex, "0109111921293139414951596169717981899199a1a9b1b9c1c9d1d9e1e9f1f9",
         "a key as hex");
  ok(!dc_replica_key_unhex(hex, back) && !memcmp(back, key, 32), "  and back");
  hex[63] = 'G';
  ok(dc_replica_key_unhex(hex, back), "a non-hex digit is refused");
  hex[63] = '\0';
  ok(dc_replica_key_unhex(hex, back), "63 digits are refused");
  ok(dc_replica_key_unhex("", back), "no digits are refused");
}

int main(void) {
  test_rfc8032();
  test_parts();
  test_layout();
  test_hex();
  return done_testing();
}
