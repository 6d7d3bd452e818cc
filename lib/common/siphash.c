/* SPDX-License-Identifier: BSD-2-Clause */
/* SipHash-2-4 (siphash.h), as the reference implementation computes it:
 * little-endian words, the length's low byte in the last one. */
#include "common/siphash.h"

#include <endian.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

typedef struct sip {
  uint64_t v0, v1, v2, v3;
  uint64_t tail; /* bytes not yet in a whole word */
  size_t len;    /* bytes taken in all */
} sip_t;

/* The first n (< 8) bytes at p as a little-endian word. */
static uint64_t le_bytes(const uint8_t *p, size_t n) {
  uint64_t w = 0;
  while (n--)
    w = w << 8 | p[n];
  return w;
}

static uint64_t le64(const uint8_t *p) {
  uint64_t w;
  memcpy(&w, p, sizeof(w));
  return le64toh(w);
}

static void round2(sip_t *s, int n) {
  while (n--) {
    s->v0 += s->v1;
    s->v1 = ROTL(s->v1, 13) ^ s->v0;
    s->v0 = ROTL(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = ROTL(s->v3, 16) ^ s->v2;
    s->v0 += s->v3;
    s->v3 = ROTL(s->v3, 21) ^ s->v0;
    s->v2 += s->v1;
    s->v1 = ROTL(s->v1, 17) ^ s->v2;
    s->v2 = ROTL(s->v2, 32);
  }
}

static void word(sip_t *s, uint64_t m) {
  s->v3 ^= m;
  round2(s, 2);
  s->v0 ^= m;
}

static void sip_init(sip_t *s, const uint8_t key[DC_SIPHASH_KEY_LEN]) {
  uint64_t k0 = le64(key), k1 = le64(key + 8);
  *s = (sip_t){.v0 = k0 ^ 0x736f6d6570736575ull,
               .v1 = k1 ^ 0x646f72616e646f6dull,
               .v2 = k0 ^ 0x6c7967656e657261ull,
               .v3 = k1 ^ 0x7465646279746573ull};
}

/* Takes n bytes: a started word is filled first, whole words go in as
 * they are, and what is left waits in tail. */
static void sip_update(sip_t *s, const uint8_t *p, size_t n) {
  size_t used = s->len % 8;
  s->len += n;
  if (used) {
    size_t take = n < 8 - used ? n : 8 - used;
    s->tail |= le_bytes(p, take) << (8 * used);
    p += take;
    n -= take;
    if (used + take < 8)
      return;
    word(s, s->tail);
    s->tail = 0;
  }
  for (; n >= 8; n -= 8, p += 8)
    word(s, le64(p));
  s->tail = le_bytes(p, n);
}

static uint64_t sip_final(sip_t *s) {
  word(s, s->tail | (uint64_t)(s->len & 0xff) << 56);
  s->v2 ^= 0xff;
  round2(s, 4);
  return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

uint64_t dc_siphash24(const uint8_t key[DC_SIPHASH_KEY_LEN], const void *data,
                      size_t len) {
  sip_t s;
  sip_init(&s, key);
  sip_update(&s, data, len);
  return sip_final(&s);
}

/* ---- the process key ------------------------------------------------------ */

static uint8_t g_key[DC_SIPHASH_KEY_LEN];
static atomic_int g_key_state; /* 0 none, 1 being made, 2 made */

static void make_key(uint8_t *k) {
  size_t got = 0;
  while (got < DC_SIPHASH_KEY_LEN) {
    ssize_t n = getrandom(k + got, DC_SIPHASH_KEY_LEN - got, 0);
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  if (got == DC_SIPHASH_KEY_LEN ||
      RAND_bytes(k, DC_SIPHASH_KEY_LEN) == 1)
    return;
  fputs("dynconf: no random bytes for the hash key (getrandom and "
        "RAND_bytes failed)\n", stderr);
  abort();
}

const uint8_t *dc_hash_key(void) {
  if (atomic_load_explicit(&g_key_state, memory_order_acquire) == 2)
    return g_key;
  int none = 0;
  if (atomic_compare_exchange_strong(&g_key_state, &none, 1)) {
    make_key(g_key);
    atomic_store_explicit(&g_key_state, 2, memory_order_release);
  }
  while (atomic_load_explicit(&g_key_state, memory_order_acquire) != 2)
    ; /* another thread is making it: one getrandom call */
  return g_key;
}

uint64_t dc_hash_str(uint8_t tag, const char *s) {
  sip_t st;
  sip_init(&st, dc_hash_key());
  sip_update(&st, &tag, 1);
  sip_update(&st, (const uint8_t *)s, strlen(s));
  return sip_final(&st);
}
