/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OAUTHBEARER token validation: the checks Kafka's
 * OAuthBearerValidatorCallbackHandler (and, for tests, its unsecured
 * validator) make on a client's JWT, for dynconfd's SASL/OAUTHBEARER.
 *
 * A dc_jwks_t holds the public keys (RSA, EC P-256) read from a JWKS file
 * (RFC 7517); dc_jwt_validate() checks a compact JWS (RFC 7515) against
 * them and a policy (issuer, audience, time with skew, principal claim)
 * and returns the principal, or a sentence fit to send to the client.
 *
 * cjose parses the tokens and the keys and checks the signatures;
 * jwt_validate.c says what it adds and why.
 *
 * Pure: no I/O but reading the JWKS file, no globals; a loaded dc_jwks_t
 * is read-only, so any number of threads may validate against it at once.
 * OpenSSL errors raised on the way are not left on the caller's queue.
 */
#ifndef DC_JWT_H
#define DC_JWT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DC_JWT_MAX_TOKEN 8192      /* longer tokens are refused */
#define DC_JWKS_MAX_FILE (1 << 20) /* a bigger JWKS file is refused */
#define DC_JWKS_MAX_KEYS 64

/* RSA (kty RSA, n/e) and EC P-256 (kty EC, crv P-256, x/y) public keys
 * by "kid". */
typedef struct dc_jwks dc_jwks_t;

/* Reads a JWKS JSON file ({"keys":[...]}, RFC 7517). Keys with "use"
 * other than "sig", with an "alg" other than RS256/ES256, or with a
 * kty/crv it does not support are skipped (a JWKS often carries
 * encryption keys); a file with no usable key, unreadable, malformed, too
 * big, with more than DC_JWKS_MAX_KEYS keys, with a key whose fields do
 * not decode, an RSA key under 2048 bits, or two usable keys of one type
 * with the same "kid" is an error. NULL with errstr. */
dc_jwks_t *dc_jwks_load(const char *path, char *errstr, size_t errstr_size);
/* Another reference to k (NULL stays NULL); dc_jwks_free drops one, the
 * last frees it. Any thread; a loaded JWKS is immutable. */
dc_jwks_t *dc_jwks_ref(dc_jwks_t *k);
void dc_jwks_free(dc_jwks_t *k);
/* The number of usable keys. */
size_t dc_jwks_count(const dc_jwks_t *k);

typedef struct dc_jwt_policy {
  const dc_jwks_t *jwks;       /* signed tokens (RS256, ES256) verified
                                  against it; NULL = none accepted */
  bool allow_unsecured;        /* accept alg "none" (unsigned) tokens, as
                                  Kafka's unsecured validator: tests only */
  const char *issuer;          /* required "iss", NULL = not checked */
  const char *audience;        /* required in "aud" (string or array),
                                  NULL = not checked */
  const char *principal_claim; /* claim naming the principal, NULL = "sub" */
  int64_t clock_skew_s;        /* allowed skew for exp/nbf/iat (< 0 = 0) */
  int64_t now_s;               /* the time to judge by (seconds since the
                                  epoch; injected so tests can move it) */
} dc_jwt_policy_t;

typedef struct dc_jwt_result {
  char principal[256]; /* the principal claim's value (1..255 bytes, by
                          the rule of common/principal.h) */
  int64_t expires_s;   /* "exp" */
  char scope[256];     /* "scope" claim if present (string; or space-joined
                          array), "" if none; cut is an error */
  char alg[8];         /* "RS256", "ES256" or "none" */
  char kid[128];       /* the "kid" of the key that verified it; "" for
                          alg none or a key without one */
} dc_jwt_result_t;

/* Validates a compact JWS (header.payload.signature, base64url without
 * padding). 0 and *out filled, or -1 with a sentence fit to send to the
 * client saying what is wrong (*out is then zeroed). Checks: 3 parts (for
 * alg none the signature part must be empty), header typ (if present)
 * JWT, no "crit", alg one of RS256/ES256 (with a jwks) or none (when
 * allowed) and the key's type matching it; kid: when the header names one
 * it must be in the jwks, when it does not and the jwks has exactly one
 * key of the right type, that one; the signature; exp required and
 * > now - skew; nbf if present <= now + skew; iat if present
 * <= now + skew; iss and aud as the policy asks; principal claim present,
 * a string, no blank at either end, no control character. Numeric claims
 * must be JSON numbers (a float is truncated).
 * Never crashes on any input; cost linear in the token length. */
int dc_jwt_validate(const char *token, size_t len, const dc_jwt_policy_t *p,
                    dc_jwt_result_t *out, char *errstr, size_t errstr_size);
#endif
