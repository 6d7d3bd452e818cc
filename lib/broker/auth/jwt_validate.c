/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OAUTHBEARER token validation (see jwt.h). cjose parses the JWS, builds
 * the keys from their JWKs and checks the signatures; what it leaves out
 * is done here first, and is the only way a token or a key reaches it:
 *   - the JWK set file (cjose reads one JWK at a time), its limits, which
 *     keys are usable, and duplicate key ids;
 *   - key strength: RSA 2048..8192 bits, odd modulus, a usable exponent
 *     (cjose takes any size), P-256 only, public members only;
 *   - the compact form: exactly 3 parts in strict base64url. cjose's
 *     decoder stops at '=' (ignoring what follows), accepts non-zero
 *     unused bits, and aborts the process on input such as "abcde=";
 *   - the header: duplicate members, typ, crit, the kid, and the
 *     algorithm allow-list (cjose verifies whatever alg the token names);
 *   - an ES256 signature must be exactly r||s, 64 bytes (cjose splits any
 *     length in two and ignores an odd last byte);
 *   - the claims.
 */
#include "broker/auth/jwt_int.h"
#include "common/principal.h"
#include "common/text.h"

#include <cjose/cjose.h>
#include <jansson.h>
#include <openssl/err.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static bool has_control(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return true;
  return false;
}

/* ISO 8601 UTC as a client reads it, or "@<seconds>" out of years
 * 0001..9999. */
static const char *fmt_time(char dst[32], int64_t t) {
  struct tm tm;
  time_t tt = (time_t)t;
  if (t < -62135596800LL || t > 253402300799LL || !gmtime_r(&tt, &tm) ||
      !strftime(dst, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
    snprintf(dst, 32, "@%lld", (long long)t);
  return dst;
}

static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/* ---- claims ------------------------------------------------------------ */

/* Reads the numeric claim name as whole seconds (a float truncated). 1
 * present, 0 absent, -1 with errstr. */
static int num_claim(json_t *pl, const char *name, int64_t *v, char *errstr,
                     size_t errstr_size) {
  json_t *j = json_object_get(pl, name);
  if (!j)
    return 0;
  if (json_is_integer(j)) {
    *v = json_integer_value(j);
    return 1;
  }
  if (json_is_real(j) && json_real_value(j) > -9.2e18 &&
      json_real_value(j) < 9.2e18) {
    *v = (int64_t)json_real_value(j);
    return 1;
  }
  dc_seterr(errstr, errstr_size,
            "malformed token: the '%s' claim is not a number of seconds", name);
  return -1;
}

/* exp required and not past, nbf and iat (if present) not ahead, each
 * with the allowed skew. */
static int check_times(json_t *pl, const dc_jwt_policy_t *p, int64_t *exp,
                       char *errstr, size_t errstr_size) {
  int64_t skew = p->clock_skew_s > 0 ? p->clock_skew_s : 0, nbf, iat;
  int64_t late = sat_add(p->now_s, skew), early = sat_add(p->now_s, -skew);
  char a[32], b[32];
  int rc = num_claim(pl, "exp", exp, errstr, errstr_size);
  if (rc <= 0) {
    if (!rc)
      dc_seterr(errstr, errstr_size,
                "no 'exp' claim (an expiry time is required)");
    return -1;
  }
  if (*exp <= early) {
    dc_seterr(errstr, errstr_size, "token expired at %s (now %s)",
              fmt_time(a, *exp), fmt_time(b, p->now_s));
    return -1;
  }
  if ((rc = num_claim(pl, "nbf", &nbf, errstr, errstr_size)) < 0)
    return -1;
  if (rc && nbf > late) {
    dc_seterr(errstr, errstr_size, "token is not valid before %s (now %s)",
              fmt_time(a, nbf), fmt_time(b, p->now_s));
    return -1;
  }
  if ((rc = num_claim(pl, "iat", &iat, errstr, errstr_size)) < 0)
    return -1;
  if (rc && iat > late) {
    dc_seterr(errstr, errstr_size,
              "token is issued in the future, at %s (now %s)", fmt_time(a, iat),
              fmt_time(b, p->now_s));
    return -1;
  }
  return 0;
}

static int check_issuer(json_t *pl, const char *want, char *errstr,
                        size_t errstr_size) {
  json_t *j = json_object_get(pl, "iss");
  char q[QBUF], w[QBUF];
  if (!want)
    return 0;
  if (!j)
    dc_seterr(errstr, errstr_size, "no 'iss' claim (issuer '%s' expected)",
              QUOTE(w, want));
  else if (!json_is_string(j))
    dc_seterr(errstr, errstr_size,
              "malformed token: the 'iss' claim is not a string");
  else if (strcmp(json_string_value(j), want))
    dc_seterr(errstr, errstr_size, "issuer '%s' is not the expected '%s'",
              QUOTE_JS(q, j), QUOTE(w, want));
  else
    return 0;
  return -1;
}

/* "aud": one string, or an array of strings (RFC 7519 §4.1.3). */
static int check_audience(json_t *pl, const char *want, char *errstr,
                          size_t errstr_size) {
  json_t *aud = json_object_get(pl, "aud"), *v;
  bool found = false, bad = aud && !json_is_string(aud) && !json_is_array(aud);
  size_t i;
  char w[QBUF];
  if (!want)
    return 0;
  if (json_is_string(aud))
    found = !strcmp(json_string_value(aud), want);
  json_array_foreach(aud, i, v) {
    if (!json_is_string(v))
      bad = true;
    else if (!strcmp(json_string_value(v), want))
      found = true;
  }
  if (bad)
    dc_seterr(errstr, errstr_size,
              "malformed token: the 'aud' claim is not a string or an array "
              "of strings");
  else if (!found)
    dc_seterr(errstr, errstr_size, "audience does not include '%s'%s",
              QUOTE(w, want), aud ? "" : " (no 'aud' claim)");
  return bad || !found ? -1 : 0;
}

static int read_principal(json_t *pl, const char *name, char *dst, size_t cap,
                          char *errstr, size_t errstr_size) {
  json_t *j = json_object_get(pl, name);
  size_t n = json_string_length(j);
  char q[QBUF], v[QBUF];
  const char *fault;
  QUOTE(q, name);
  if (!j)
    dc_seterr(errstr, errstr_size, "no '%s' claim", q);
  else if (!json_is_string(j))
    dc_seterr(errstr, errstr_size, "the '%s' claim is not a string", q);
  else if (!n)
    dc_seterr(errstr, errstr_size, "the '%s' claim is empty", q);
  else if (n >= cap)
    dc_seterr(errstr, errstr_size,
              "the '%s' claim is too long (%zu bytes, at most %zu)", q, n,
              cap - 1);
  else if ((fault = dc_principal_name_fault(json_string_value(j), n)))
    dc_seterr(errstr, errstr_size, "the '%s' claim '%s' %s", q,
              QUOTE_JS(v, j), fault);
  else {
    memcpy(dst, json_string_value(j), n);
    dst[n] = '\0';
    return 0;
  }
  return -1;
}

/* Appends one scope string at dst + *o. */
static int scope_add(char *dst, size_t cap, size_t *o, json_t *s, char *errstr,
                     size_t errstr_size) {
  size_t n = json_string_length(s);
  if (n >= cap - *o) {
    dc_seterr(errstr, errstr_size,
              "the 'scope' claim is too long (at most %zu bytes)", cap - 1);
    return -1;
  }
  if (has_control(json_string_value(s), n)) {
    dc_seterr(errstr, errstr_size, "the 'scope' claim has control characters");
    return -1;
  }
  memcpy(dst + *o, json_string_value(s), n);
  *o += n;
  dst[*o] = '\0';
  return 0;
}

/* "scope": a string, or an array of strings joined by spaces. */
static int read_scope(json_t *pl, char *dst, size_t cap, char *errstr,
                      size_t errstr_size) {
  json_t *j = json_object_get(pl, "scope"), *v;
  size_t o = 0, i;
  dst[0] = '\0';
  if (!j)
    return 0;
  if (json_is_string(j))
    return scope_add(dst, cap, &o, j, errstr, errstr_size);
  if (!json_is_array(j)) {
    dc_seterr(errstr, errstr_size,
              "malformed token: the 'scope' claim is not a string or an "
              "array of strings");
    return -1;
  }
  json_array_foreach(j, i, v) {
    if (!json_is_string(v)) {
      dc_seterr(errstr, errstr_size,
                "malformed token: the 'scope' claim is not a string or an "
                "array of strings");
      return -1;
    }
    if (i && o + 1 >= cap) {
      dc_seterr(errstr, errstr_size,
                "the 'scope' claim is too long (at most %zu bytes)", cap - 1);
      return -1;
    }
    if (i)
      dst[o++] = ' ';
    if (scope_add(dst, cap, &o, v, errstr, errstr_size))
      return -1;
  }
  return 0;
}

static int check_claims(json_t *pl, const dc_jwt_policy_t *p,
                        dc_jwt_result_t *r, char *errstr, size_t errstr_size) {
  const char *pc = p->principal_claim ? p->principal_claim : "sub";
  if (check_times(pl, p, &r->expires_s, errstr, errstr_size) ||
      check_issuer(pl, p->issuer, errstr, errstr_size) ||
      check_audience(pl, p->audience, errstr, errstr_size) ||
      read_principal(pl, pc, r->principal, sizeof(r->principal), errstr,
                     errstr_size) ||
      read_scope(pl, r->scope, sizeof(r->scope), errstr, errstr_size))
    return -1;
  return 0;
}

/* The payload of an opened token, and its claims. */
static int read_payload(cjose_jws_t *jws, const dc_jwt_policy_t *p,
                        dc_jwt_result_t *r, char *errstr, size_t errstr_size) {
  uint8_t *pl = NULL;
  size_t pl_len = 0;
  cjose_err err;
  if (!cjose_jws_get_plaintext(jws, &pl, &pl_len, &err)) {
    dc_seterr(errstr, errstr_size, "malformed token: no payload (%s)",
              err.message);
    return -1;
  }
  json_t *j = dc_jwt_parse_object(pl, pl_len, "payload", errstr, errstr_size);
  int rc = j ? check_claims(j, p, r, errstr, errstr_size) : -1;
  json_decref(j);
  return rc;
}

int dc_jwt_validate(const char *token, size_t len, const dc_jwt_policy_t *p,
                    dc_jwt_result_t *out, char *errstr, size_t errstr_size) {
  jws_parts_t t;
  dc_jwt_result_t r;
  if (out)
    memset(out, 0, sizeof(*out));
  if (!token || !p || !out) {
    dc_seterr(errstr, errstr_size, "malformed token: none given");
    return -1;
  }
  if (len > DC_JWT_MAX_TOKEN) {
    dc_seterr(errstr, errstr_size, "token is too long (%zu bytes, at most %d)",
              len, DC_JWT_MAX_TOKEN);
    return -1;
  }
  if (dc_jwt_split(token, len, &t, errstr, errstr_size))
    return -1;
  memset(&r, 0, sizeof(r));
  ERR_set_mark();
  cjose_jws_t *jws =
      dc_jwt_open_token(token, len, &t, p, &r, errstr, errstr_size);
  ERR_pop_to_mark(); /* a bad signature is not the caller's TLS error */
  /* Only a verified (or allowed unsecured) payload is read. */
  int rc = jws ? read_payload(jws, p, &r, errstr, errstr_size) : -1;
  cjose_jws_release(jws);
  if (rc)
    return -1;
  *out = r;
  return 0;
}
