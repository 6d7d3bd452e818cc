/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SCRAM primitives shared by the server and the client (see scram.h).
 */
#include "common/scram.h"
#include "common/text.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const EVP_MD *md_of(dc_scram_hash_t h) {
  return h == DC_SCRAM_SHA512 ? EVP_sha512() : EVP_sha256();
}

bool dc_scram_hash_from_name(const char *mechanism, dc_scram_hash_t *out) {
  if (!mechanism)
    return false;
  if (!strcmp(mechanism, "SCRAM-SHA-256")) {
    *out = DC_SCRAM_SHA256;
    return true;
  }
  if (!strcmp(mechanism, "SCRAM-SHA-512")) {
    *out = DC_SCRAM_SHA512;
    return true;
  }
  return false;
}

const char *dc_scram_mechanism_name(dc_scram_hash_t h) {
  return h == DC_SCRAM_SHA512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
}

size_t dc_scram_digest_len(dc_scram_hash_t h) {
  return h == DC_SCRAM_SHA512 ? 64 : 32;
}

int dc_scram_salted_password(dc_scram_hash_t h, const char *password,
                             size_t password_len, const uint8_t *salt,
                             size_t salt_len, int iterations, uint8_t *out) {
  if (iterations < 1 || password_len > INT_MAX || salt_len > INT_MAX)
    return -1;
  /* PKCS5_PBKDF2_HMAC wants a non-NULL pointer even for zero length. */
  return PKCS5_PBKDF2_HMAC(password ? password : "", (int)password_len,
                           salt ? salt : (const uint8_t *)"", (int)salt_len,
                           iterations, md_of(h), (int)dc_scram_digest_len(h),
                           out) == 1
             ? 0
             : -1;
}

int dc_scram_hmac(dc_scram_hash_t h, const uint8_t *key, size_t key_len,
                  const void *data, size_t data_len, uint8_t *out) {
  unsigned int n = 0;
  if (key_len > INT_MAX)
    return -1;
  if (!HMAC(md_of(h), key, (int)key_len, data, data_len, out, &n))
    return -1;
  return n == dc_scram_digest_len(h) ? 0 : -1;
}

int dc_scram_digest(dc_scram_hash_t h, const void *data, size_t len,
                    uint8_t *out) {
  unsigned int n = 0;
  if (EVP_Digest(data, len, out, &n, md_of(h), NULL) != 1)
    return -1;
  return n == dc_scram_digest_len(h) ? 0 : -1;
}

int dc_scram_derive_keys(dc_scram_hash_t h, const uint8_t *salted,
                       uint8_t *client_key, uint8_t *stored_key,
                       uint8_t *server_key) {
  size_t dl = dc_scram_digest_len(h);
  uint8_t ck[DC_SCRAM_MAX_DIGEST];
  if (dc_scram_hmac(h, salted, dl, "Client Key", 10, ck))
    return -1;
  if (client_key)
    memcpy(client_key, ck, dl);
  if (stored_key && dc_scram_digest(h, ck, dl, stored_key))
    return -1;
  if (server_key && dc_scram_hmac(h, salted, dl, "Server Key", 10, server_key))
    return -1;
  OPENSSL_cleanse(ck, sizeof(ck));
  return 0;
}

int dc_scram_cred_make(dc_scram_hash_t h, const char *password, int iterations,
                       const uint8_t *salt, size_t salt_len,
                       dc_scram_cred_t *out, char *errstr, size_t errstr_size) {
  memset(out, 0, sizeof(*out));
  if (iterations < DC_SCRAM_MIN_ITERATIONS ||
      iterations > DC_SCRAM_MAX_ITERATIONS) {
    dc_seterr(errstr, errstr_size, "iterations must be in %d..%d, not %d",
           DC_SCRAM_MIN_ITERATIONS, DC_SCRAM_MAX_ITERATIONS, iterations);
    return -1;
  }
  out->hash = h;
  out->iterations = iterations;
  out->key_len = dc_scram_digest_len(h);
  if (salt) {
    if (salt_len == 0 || salt_len > DC_SCRAM_MAX_SALT) {
      dc_seterr(errstr, errstr_size, "salt must be 1..%d bytes",
             DC_SCRAM_MAX_SALT);
      return -1;
    }
    memcpy(out->salt, salt, salt_len);
    out->salt_len = salt_len;
  } else {
    if (RAND_bytes(out->salt, DC_SCRAM_SALT_LEN) != 1) {
      dc_seterr(errstr, errstr_size, "cannot get random bytes for a salt");
      return -1;
    }
    out->salt_len = DC_SCRAM_SALT_LEN;
  }
  uint8_t salted[DC_SCRAM_MAX_DIGEST];
  int rc = dc_scram_salted_password(h, password, strlen(password), out->salt,
                                    out->salt_len, iterations, salted);
  if (!rc)
    rc = dc_scram_derive_keys(h, salted, NULL, out->stored_key, out->server_key);
  OPENSSL_cleanse(salted, sizeof(salted));
  if (rc)
    dc_seterr(errstr, errstr_size, "cannot derive %s keys (OpenSSL error)",
           dc_scram_mechanism_name(h));
  return rc;
}

bool dc_scram_cred_check(const dc_scram_cred_t *cred, const char *password,
                         size_t password_len) {
  uint8_t salted[DC_SCRAM_MAX_DIGEST], stored[DC_SCRAM_MAX_DIGEST],
      server[DC_SCRAM_MAX_DIGEST];
  bool okay = false;
  if (cred->key_len == dc_scram_digest_len(cred->hash) &&
      !dc_scram_salted_password(cred->hash, password, password_len, cred->salt,
                                cred->salt_len, cred->iterations, salted) &&
      !dc_scram_derive_keys(cred->hash, salted, NULL, stored, server)) {
    /* Both keys, without short-circuit, so timing says nothing. */
    int a = CRYPTO_memcmp(stored, cred->stored_key, cred->key_len);
    int b = CRYPTO_memcmp(server, cred->server_key, cred->key_len);
    okay = (a | b) == 0;
  }
  OPENSSL_cleanse(salted, sizeof(salted));
  return okay;
}

/* ---- base64 ------------------------------------------------------------ */

char *dc_b64_encode(const uint8_t *p, size_t n) {
  if (n > (size_t)INT_MAX / 4 * 3 - 3)
    return NULL;
  char *s = malloc(4 * ((n + 2) / 3) + 1);
  if (!s)
    return NULL;
  EVP_EncodeBlock((unsigned char *)s, p ? p : (const uint8_t *)"", (int)n);
  return s;
}

static bool b64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '+' || c == '/';
}

long dc_b64_decode(const char *s, size_t n, uint8_t *out, size_t out_cap) {
  /* EVP_DecodeBlock skips whitespace and counts padding as zero bytes:
   * validate strictly first so its result is exactly what we expect. */
  if (n % 4 || n > (size_t)INT_MAX)
    return -1;
  if (n == 0)
    return 0;
  size_t pad = 0;
  if (s[n - 1] == '=')
    pad = s[n - 2] == '=' ? 2 : 1;
  for (size_t i = 0; i < n - pad; i++)
    if (!b64_char(s[i]))
      return -1;
  size_t len = n / 4 * 3 - pad;
  if (len > out_cap)
    return -1;
  uint8_t *tmp = malloc(n / 4 * 3);
  if (!tmp)
    return -1;
  int r = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)n);
  if (r < 0 || (size_t)r != n / 4 * 3) {
    free(tmp);
    return -1;
  }
  memcpy(out, tmp, len);
  OPENSSL_cleanse(tmp, n / 4 * 3);
  free(tmp);
  return (long)len;
}

int dc_scram_nonce(char *out, size_t n) {
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-";
  uint8_t raw[64];
  size_t done = 0;
  while (done < n) {
    size_t k = n - done < sizeof(raw) ? n - done : sizeof(raw);
    if (RAND_bytes(raw, (int)k) != 1)
      return -1;
    for (size_t i = 0; i < k; i++)
      out[done + i] = alphabet[raw[i] & 63];
    done += k;
  }
  out[n] = '\0';
  return 0;
}

/* ---- message helpers --------------------------------------------------- */

char *dc_scram_escape_name(const char *name) {
  size_t n = 0;
  for (const char *p = name; *p; p++)
    n += (*p == ',' || *p == '=') ? 3 : 1;
  char *s = malloc(n + 1), *w = s;
  if (!s)
    return NULL;
  for (const char *p = name; *p; p++) {
    if (*p == ',') {
      memcpy(w, "=2C", 3);
      w += 3;
    } else if (*p == '=') {
      memcpy(w, "=3D", 3);
      w += 3;
    } else {
      *w++ = *p;
    }
  }
  *w = '\0';
  return s;
}

char *dc_scram_unescape_name(const char *s, size_t n) {
  char *d = malloc(n + 1), *w = d;
  if (!d)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\0' || s[i] == ',')
      goto bad;
    if (s[i] != '=') {
      *w++ = s[i];
      continue;
    }
    if (i + 2 >= n)
      goto bad;
    if (s[i + 1] == '2' && s[i + 2] == 'C')
      *w++ = ',';
    else if (s[i + 1] == '3' && s[i + 2] == 'D')
      *w++ = '=';
    else
      goto bad;
    i += 2;
  }
  *w = '\0';
  return d;
bad:
  free(d);
  return NULL;
}

const char *dc_scram_attr(const char *msg, size_t n, char key, size_t *vlen) {
  size_t i = 0;
  while (i < n) {
    const char *comma = memchr(msg + i, ',', n - i);
    size_t end = comma ? (size_t)(comma - msg) : n;
    if (end - i >= 2 && msg[i] == key && msg[i + 1] == '=') {
      *vlen = end - i - 2;
      return msg + i + 2;
    }
    i = end + 1;
  }
  return NULL;
}
