/* SPDX-License-Identifier: BSD-2-Clause */
/* Base64url as a JWS and a JWK must spell it, and what a client sent put
 * in a sentence. */
#include "config.h"
#include "broker/auth/jwt_int.h"

/* Copies n bytes of s for use in a sentence: printable ASCII only (no
 * quote), cut with "...", as it may come from the client. */
const char *dc_jwt_quote(char *dst, size_t cap, const char *s, size_t n) {
  size_t o = 0, max = cap - 4;
  for (size_t i = 0; i < n && o < max; i++) {
    unsigned char c = (unsigned char)s[i];
    dst[o++] = c >= 0x20 && c < 0x7f && c != '\'' ? (char)c : '?';
  }
  if (n > max) {
    memcpy(dst + o, "...", 3);
    o += 3;
  }
  dst[o] = '\0';
  return dst;
}

static int b64val(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-')
    return 62;
  if (c == '_')
    return 63;
  return -1;
}

/* The number of bytes s (n chars) decodes to, or -1 when it is not strict
 * base64url without padding (RFC 7515 §2): the url alphabet only, no '=',
 * no length nothing encodes to, zero unused bits. So a byte string has
 * exactly one encoding, and a changed token never passes as the same. */
long dc_jwt_b64url_len(const char *s, size_t n) {
  int v = 0;
  if (n % 4 == 1)
    return -1;
  for (size_t i = 0; i < n; i++)
    if ((v = b64val((unsigned char)s[i])) < 0)
      return -1;
  if ((n % 4 == 2 && (v & 15)) || (n % 4 == 3 && (v & 3)))
    return -1;
  return (long)(n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0));
}

/* Decodes s (n chars, already checked by b64url_len) with cjose into
 * *out, to be freed with cjose_get_dealloc(). */
bool dc_jwt_b64url_decode(const char *s, size_t n, uint8_t **out,
                          size_t *outlen) {
  cjose_err err;
  *out = NULL;
  return cjose_base64url_decode(s, n, out, outlen, &err);
}
