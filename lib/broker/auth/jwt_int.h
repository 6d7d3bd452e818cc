/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of token validation shared by its files, from the top:
 * jwt_validate.c (dc_jwt_validate and the claims), jwt_signature.c (the
 * compact form, the header, the key and the signature), jwks.c (the JWK
 * set file and its keys) and jwt_text.c (base64url, and what a token says
 * quoted in a sentence).
 */
#ifndef DC_JWT_INT_H
#define DC_JWT_INT_H
#include "broker/auth/jwt.h"

#include <cjose/cjose.h>
#include <jansson.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RSA_MIN_BITS 2048
#define RSA_MAX_BITS 8192 /* keeps the cost of one verification bounded */
#define RSA_MAX_E_BITS 64 /* OpenSSL's own limit for large moduli */
#define EC_COORD 32       /* bytes in a P-256 coordinate, and in r and s */
#define QBUF 72           /* room for a quoted string in a sentence */

typedef enum { KEY_RSA, KEY_EC } key_type_t;
typedef enum { ALG_BAD, ALG_NONE, ALG_RS256, ALG_ES256 } alg_t;

typedef struct jwk {
  char *kid; /* NULL = the key has none */
  key_type_t type;
  cjose_jwk_t *key;
} jwk_t;

struct dc_jwks {
  atomic_int refs; /* the broker's and each log-in in flight */
  size_t n;
  jwk_t keys[DC_JWKS_MAX_KEYS];
};

/* ---- jwt_text.c ---- */

/* Copies n bytes of s for use in a sentence: printable ASCII only (no
 * quote), cut with "...", as it may come from the client. */
const char *dc_jwt_quote(char *dst, size_t cap, const char *s, size_t n);

#define QUOTE(buf, s) dc_jwt_quote(buf, sizeof(buf), s, strlen(s))
#define QUOTE_JS(buf, j)                                                       \
  dc_jwt_quote(buf, sizeof(buf), json_string_value(j), json_string_length(j))

long dc_jwt_b64url_len(const char *s, size_t n);
bool dc_jwt_b64url_decode(const char *s, size_t n, uint8_t **out,
                          size_t *outlen);

/* ---- jwt_signature.c ---- */

/* The three parts of a compact JWS, pointing into the token. */
typedef struct jws_parts {
  const char *part[3]; /* header, payload, signature (base64url) */
  size_t len[3];
  size_t sig_len; /* the signature's decoded length */
} jws_parts_t;

int dc_jwt_split(const char *tok, size_t len, jws_parts_t *t, char *errstr,
                 size_t errstr_size);
json_t *dc_jwt_parse_object(const uint8_t *s, size_t n, const char *what,
                            char *errstr, size_t errstr_size);
cjose_jws_t *dc_jwt_open_token(const char *token, size_t len,
                               const jws_parts_t *t,
                               const dc_jwt_policy_t *p, dc_jwt_result_t *r,
                               char *errstr, size_t errstr_size);
#endif
