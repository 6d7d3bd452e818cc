/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Replica keys (see replica_key.h): Ed25519 through OpenSSL 3's EVP.
 */
#include "broker/auth/replica_key.h"
#include "common/text.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <stdlib.h>
#include <string.h>

struct dc_replica_key {
  EVP_PKEY *pkey; /* the pair; its private half never leaves memory */
  uint8_t pub[DC_REPLICA_KEY_LEN];
};

/* Fixed first bytes of every signed message (with its NUL): a signature
 * made for something else can never pass for one of these. */
static const char PREFIX[] = "dynconf replica envelope v1";

static dc_replica_key_t *wrap(EVP_PKEY *pkey) {
  dc_replica_key_t *k = pkey ? calloc(1, sizeof(*k)) : NULL;
  size_t len = DC_REPLICA_KEY_LEN;
  if (!k || EVP_PKEY_get_raw_public_key(pkey, k->pub, &len) != 1 ||
      len != DC_REPLICA_KEY_LEN) {
    EVP_PKEY_free(pkey);
    free(k);
    return NULL;
  }
  k->pkey = pkey;
  return k;
}

dc_replica_key_t *dc_replica_key_new(char *errstr, size_t errstr_size) {
  EVP_PKEY *pkey = NULL;
  EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
  if (!ctx || EVP_PKEY_keygen_init(ctx) != 1 ||
      EVP_PKEY_keygen(ctx, &pkey) != 1)
    pkey = NULL;
  EVP_PKEY_CTX_free(ctx);
  dc_replica_key_t *k = wrap(pkey);
  if (!k) {
    const char *why = ERR_reason_error_string(ERR_get_error());
    dc_seterr(errstr, errstr_size, "cannot make the replica's Ed25519 key: "
              "%s", why ? why : "out of memory");
  }
  ERR_clear_error();
  return k;
}

dc_replica_key_t *dc_replica_key_from_seed(const uint8_t seed[32]) {
  return wrap(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32));
}

void dc_replica_key_free(dc_replica_key_t *k) {
  if (!k)
    return;
  EVP_PKEY_free(k->pkey);
  free(k);
}

const uint8_t *dc_replica_key_public(const dc_replica_key_t *k) {
  return k->pub;
}

int dc_replica_sign_bytes(const dc_replica_key_t *k, const uint8_t *p,
                          size_t n, uint8_t sig[DC_REPLICA_SIG_LEN]) {
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  size_t len = DC_REPLICA_SIG_LEN;
  int ok = md && EVP_DigestSignInit(md, NULL, NULL, NULL, k->pkey) == 1 &&
           EVP_DigestSign(md, sig, &len, p, n) == 1 &&
           len == DC_REPLICA_SIG_LEN;
  EVP_MD_CTX_free(md);
  ERR_clear_error();
  return ok ? 0 : -1;
}

bool dc_replica_verify_bytes(const uint8_t pub[DC_REPLICA_KEY_LEN],
                             const uint8_t *p, size_t n,
                             const uint8_t sig[DC_REPLICA_SIG_LEN]) {
  EVP_PKEY *pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub,
                                               DC_REPLICA_KEY_LEN);
  EVP_MD_CTX *md = pkey ? EVP_MD_CTX_new() : NULL;
  bool ok = md && EVP_DigestVerifyInit(md, NULL, NULL, NULL, pkey) == 1 &&
            EVP_DigestVerify(md, sig, DC_REPLICA_SIG_LEN, p, n) == 1;
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(pkey);
  ERR_clear_error();
  return ok;
}

static uint8_t *put_be(uint8_t *q, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--, v >>= 8)
    q[i] = (uint8_t)v;
  return q + n;
}

/* A variable part: its length (all ones for a null), then its bytes. */
static uint8_t *put_part(uint8_t *q, const uint8_t *p, size_t n) {
  q = put_be(q, p ? (uint64_t)n : UINT64_MAX, 8);
  if (p && n)
    memcpy(q, p, n);
  return q + (p ? n : 0);
}

uint8_t *dc_replica_msg_bytes(const dc_replica_msg_t *m, size_t *lenp) {
  size_t pl = m->principal ? m->principal_len : 0;
  size_t n = sizeof(PREFIX) + 4 + 8 + 3 * 8 + pl + m->host_len +
             m->request_len;
  uint8_t *buf = malloc(n), *q = buf;
  if (!buf)
    return NULL;
  memcpy(q, PREFIX, sizeof(PREFIX));
  q = put_be(q + sizeof(PREFIX), (uint32_t)m->node, 4);
  q = put_be(q, (uint64_t)m->time_ms, 8);
  q = put_part(q, m->principal, pl);
  q = put_part(q, m->host ? m->host : (const uint8_t *)"", m->host_len);
  put_part(q, m->request ? m->request : (const uint8_t *)"", m->request_len);
  *lenp = n;
  return buf;
}

int dc_replica_sign(const dc_replica_key_t *k, const dc_replica_msg_t *m,
                    uint8_t sig[DC_REPLICA_SIG_LEN]) {
  size_t n;
  uint8_t *p = dc_replica_msg_bytes(m, &n);
  int r = p ? dc_replica_sign_bytes(k, p, n, sig) : -1;
  free(p);
  return r;
}

bool dc_replica_verify(const uint8_t pub[DC_REPLICA_KEY_LEN],
                       const dc_replica_msg_t *m,
                       const uint8_t sig[DC_REPLICA_SIG_LEN]) {
  size_t n;
  uint8_t *p = dc_replica_msg_bytes(m, &n);
  bool ok = p && dc_replica_verify_bytes(pub, p, n, sig);
  free(p);
  return ok;
}

void dc_replica_key_hex(const uint8_t key[DC_REPLICA_KEY_LEN], char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < DC_REPLICA_KEY_LEN; i++) {
    out[2 * i] = digits[key[i] >> 4];
    out[2 * i + 1] = digits[key[i] & 15];
  }
  out[DC_REPLICA_KEY_HEX_LEN] = '\0';
}

static int nibble(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

int dc_replica_key_unhex(const char *s, uint8_t key[DC_REPLICA_KEY_LEN]) {
  if (strlen(s) != DC_REPLICA_KEY_HEX_LEN)
    return -1;
  for (size_t i = 0; i < DC_REPLICA_KEY_LEN; i++) {
    int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return -1;
    key[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}
