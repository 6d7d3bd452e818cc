/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OAUTHBEARER token validation (see jwt.h): strict base64url, jansson for
 * the JSON, OpenSSL 3 EVP for the JWKS keys and the signatures.
 */
#include "broker/jwt.h"
#include "common/text.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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
  EVP_PKEY *pkey;
} jwk_t;

struct dc_jwks {
  size_t n;
  jwk_t keys[DC_JWKS_MAX_KEYS];
};

/* ---- text helpers ------------------------------------------------------ */

/* Copies n bytes of s for use in a sentence: printable ASCII only (no
 * quote), cut with "...", as it may come from the client. */
static const char *quote(char *dst, size_t cap, const char *s, size_t n) {
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

#define QUOTE(buf, s) quote(buf, sizeof(buf), s, strlen(s))
#define QUOTE_JS(buf, j)                                                       \
  quote(buf, sizeof(buf), json_string_value(j), json_string_length(j))

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

/* ---- base64url --------------------------------------------------------- */

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

/* Strict base64url without padding (RFC 7515 §2): the url alphabet only,
 * no '=', no length nothing encodes to, zero unused bits; so a byte
 * string has exactly one encoding and a changed token never passes as
 * the same one. 0, -1 not base64url, -2 longer than cap. */
static int b64url_decode(const char *s, size_t n, unsigned char *out,
                         size_t cap, size_t *outlen) {
  if (n % 4 == 1)
    return -1;
  if (n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0) > cap)
    return -2;
  uint32_t acc = 0;
  int bits = 0;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64val((unsigned char)s[i]);
    if (v < 0)
      return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (acc)
    return -1;
  *outlen = o;
  return 0;
}

/* ---- JWKS -------------------------------------------------------------- */

/* Reads at most DC_JWKS_MAX_FILE bytes of path: the buffer (owned), or
 * NULL with errstr. */
static char *read_all(const char *path, size_t *len, char *errstr,
                      size_t errstr_size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    dc_seterr(errstr, errstr_size, "cannot open JWKS file %s: %s", path,
              strerror(errno));
    return NULL;
  }
  char *buf = malloc((size_t)DC_JWKS_MAX_FILE + 1);
  size_t n = buf ? fread(buf, 1, (size_t)DC_JWKS_MAX_FILE + 1, f) : 0;
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (!buf)
    dc_seterr(errstr, errstr_size, "cannot read JWKS file %s: out of memory",
              path);
  else if (err)
    dc_seterr(errstr, errstr_size, "cannot read JWKS file %s: %s", path,
              strerror(err));
  else if (n > DC_JWKS_MAX_FILE)
    dc_seterr(errstr, errstr_size,
              "JWKS file %s is too big (more than %d bytes)", path,
              DC_JWKS_MAX_FILE);
  else {
    *len = n;
    return buf;
  }
  free(buf);
  return NULL;
}

/* Decodes the base64url string member name of j into buf. 0, or -1 with
 * why. */
static int jwk_bytes(json_t *j, const char *name, unsigned char *buf,
                     size_t cap, size_t *len, char *why, size_t why_size) {
  json_t *v = json_object_get(j, name);
  if (!json_is_string(v)) {
    dc_seterr(why, why_size, "no \"%s\" string", name);
    return -1;
  }
  int r =
      b64url_decode(json_string_value(v), json_string_length(v), buf, cap, len);
  if (r == -2)
    dc_seterr(why, why_size, "\"%s\" is too long", name);
  else if (r < 0)
    dc_seterr(why, why_size, "\"%s\" is not base64url", name);
  else if (!*len)
    dc_seterr(why, why_size, "\"%s\" is empty", name);
  else
    return 0;
  return -1;
}

/* A public key of type name ("RSA", "EC") from the built parameters. */
static EVP_PKEY *pkey_fromdata(const char *name, OSSL_PARAM_BLD *bld) {
  OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX *ctx =
      params ? EVP_PKEY_CTX_new_from_name(NULL, name, NULL) : NULL;
  EVP_PKEY *pk = NULL;
  if (ctx && EVP_PKEY_fromdata_init(ctx) == 1 &&
      EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
    pk = NULL;
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  return pk;
}

/* An RSA key from "n" and "e"; a weak or odd-shaped key (small modulus,
 * e of 1, even values) would make forgeries easy, so it is refused. */
static int rsa_from_jwk(json_t *j, EVP_PKEY **pk, char *why, size_t why_size) {
  unsigned char nb[RSA_MAX_BITS / 8 + 1], eb[RSA_MAX_E_BITS / 8 + 1];
  size_t nl, el;
  if (jwk_bytes(j, "n", nb, sizeof(nb), &nl, why, why_size) ||
      jwk_bytes(j, "e", eb, sizeof(eb), &el, why, why_size))
    return -1;
  BIGNUM *n = BN_bin2bn(nb, (int)nl, NULL), *e = BN_bin2bn(eb, (int)el, NULL);
  OSSL_PARAM_BLD *bld = NULL;
  if (!n || !e)
    dc_seterr(why, why_size, "out of memory");
  else if (BN_num_bits(n) < RSA_MIN_BITS || BN_num_bits(n) > RSA_MAX_BITS)
    dc_seterr(why, why_size, "a %d-bit RSA key (%d to %d bits accepted)",
              BN_num_bits(n), RSA_MIN_BITS, RSA_MAX_BITS);
  else if (!BN_is_odd(n))
    dc_seterr(why, why_size, "\"n\" is not an RSA modulus");
  else if (!BN_is_odd(e) || BN_is_one(e) || BN_num_bits(e) > RSA_MAX_E_BITS)
    dc_seterr(why, why_size, "\"e\" is not a usable RSA exponent");
  else if (!(bld = OSSL_PARAM_BLD_new()) ||
           !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
           !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) ||
           !(*pk = pkey_fromdata("RSA", bld)))
    dc_seterr(why, why_size, "OpenSSL does not accept the RSA key");
  OSSL_PARAM_BLD_free(bld);
  BN_free(n);
  BN_free(e);
  return *pk ? 0 : -1;
}

static bool public_check(EVP_PKEY *pk) {
  EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
  bool good = c && EVP_PKEY_public_check(c) == 1;
  EVP_PKEY_CTX_free(c);
  return good;
}

/* A P-256 key from "x" and "y": the point 0x04||x||y, which must be on
 * the curve (an off-curve point leaks nothing here, but means a bad
 * file). */
static int ec_from_jwk(json_t *j, EVP_PKEY **pk, char *why, size_t why_size) {
  unsigned char pt[1 + 2 * EC_COORD];
  size_t xl, yl;
  pt[0] = 0x04;
  if (jwk_bytes(j, "x", pt + 1, EC_COORD, &xl, why, why_size) ||
      jwk_bytes(j, "y", pt + 1 + EC_COORD, EC_COORD, &yl, why, why_size))
    return -1;
  if (xl != EC_COORD || yl != EC_COORD) {
    dc_seterr(why, why_size, "\"x\" and \"y\" must be %d bytes each", EC_COORD);
    return -1;
  }
  OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
  if (bld &&
      OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                      "prime256v1", 0) &&
      OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt,
                                       sizeof(pt)))
    *pk = pkey_fromdata("EC", bld);
  OSSL_PARAM_BLD_free(bld);
  if (*pk && !public_check(*pk)) {
    EVP_PKEY_free(*pk);
    *pk = NULL;
  }
  if (!*pk)
    dc_seterr(why, why_size, "\"x\", \"y\" is not a point on P-256");
  return *pk ? 0 : -1;
}

/* "kty" (and "crv" for EC) says which key it is; "use" and "alg", when
 * present, must allow RS256/ES256 signatures. 1 usable (key->type set), 0
 * to skip, -1 with why. */
static int jwk_kind(json_t *j, key_type_t *type, char *why, size_t why_size) {
  static const char *const strs[] = {"kty", "use", "alg", "kid", "crv"};
  for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
    json_t *v = json_object_get(j, strs[i]);
    if (v && !json_is_string(v)) {
      dc_seterr(why, why_size, "\"%s\" is not a string", strs[i]);
      return -1;
    }
  }
  const char *kty = json_string_value(json_object_get(j, "kty"));
  const char *use = json_string_value(json_object_get(j, "use"));
  const char *alg = json_string_value(json_object_get(j, "alg"));
  const char *crv = json_string_value(json_object_get(j, "crv"));
  if (!kty) {
    dc_seterr(why, why_size, "no \"kty\"");
    return -1;
  }
  if (use && strcmp(use, "sig"))
    return 0;
  if (!strcmp(kty, "RSA") && (!alg || !strcmp(alg, "RS256"))) {
    *type = KEY_RSA;
    return 1;
  }
  if (!strcmp(kty, "EC") && crv && !strcmp(crv, "P-256") &&
      (!alg || !strcmp(alg, "ES256"))) {
    *type = KEY_EC;
    return 1;
  }
  return 0;
}

/* Reads one JWK into key. 1 usable, 0 skipped, -1 with why. */
static int jwk_parse(json_t *j, jwk_t *key, char *why, size_t why_size) {
  if (!json_is_object(j)) {
    dc_seterr(why, why_size, "not a JSON object");
    return -1;
  }
  int r = jwk_kind(j, &key->type, why, why_size);
  if (r <= 0)
    return r;
  if ((key->type == KEY_RSA ? rsa_from_jwk : ec_from_jwk)(j, &key->pkey, why,
                                                          why_size))
    return -1;
  const char *kid = json_string_value(json_object_get(j, "kid"));
  if (kid && *kid && !(key->kid = strdup(kid))) {
    EVP_PKEY_free(key->pkey);
    dc_seterr(why, why_size, "out of memory");
    return -1;
  }
  return 1;
}

static bool jwks_has(const dc_jwks_t *k, const jwk_t *key) {
  for (size_t i = 0; i < k->n; i++)
    if (k->keys[i].type == key->type && k->keys[i].kid && key->kid &&
        !strcmp(k->keys[i].kid, key->kid))
      return true;
  return false;
}

static int jwks_read(dc_jwks_t *k, json_t *root, const char *path, char *errstr,
                     size_t errstr_size) {
  json_t *keys = json_object_get(root, "keys");
  if (!json_is_array(keys)) {
    dc_seterr(errstr, errstr_size, "JWKS file %s has no \"keys\" array", path);
    return -1;
  }
  if (json_array_size(keys) > DC_JWKS_MAX_KEYS) {
    dc_seterr(errstr, errstr_size, "JWKS file %s has %zu keys (at most %d)",
              path, json_array_size(keys), DC_JWKS_MAX_KEYS);
    return -1;
  }
  char why[200], q[QBUF];
  for (size_t i = 0; i < json_array_size(keys); i++) {
    jwk_t key = {0};
    int r = jwk_parse(json_array_get(keys, i), &key, why, sizeof(why));
    if (r < 0) {
      dc_seterr(errstr, errstr_size, "JWKS file %s: keys[%zu]: %s", path, i,
                why);
      return -1;
    }
    if (r && jwks_has(k, &key)) {
      dc_seterr(errstr, errstr_size, "JWKS file %s has two keys with id '%s'",
                path, QUOTE(q, key.kid));
      free(key.kid);
      EVP_PKEY_free(key.pkey);
      return -1;
    }
    if (r)
      k->keys[k->n++] = key;
  }
  if (!k->n) {
    dc_seterr(errstr, errstr_size,
              "JWKS file %s has no usable key (an RS256 or ES256 signing key)",
              path);
    return -1;
  }
  return 0;
}

dc_jwks_t *dc_jwks_load(const char *path, char *errstr, size_t errstr_size) {
  size_t len = 0;
  char *buf = read_all(path, &len, errstr, errstr_size);
  if (!buf)
    return NULL;
  json_error_t jerr;
  json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
  free(buf);
  if (!root) {
    dc_seterr(errstr, errstr_size, "JWKS file %s is not JSON: %s (line %d)",
              path, jerr.text, jerr.line);
    return NULL;
  }
  dc_jwks_t *k = calloc(1, sizeof(*k));
  int rc = -1;
  ERR_set_mark();
  if (!k)
    dc_seterr(errstr, errstr_size, "cannot load JWKS file %s: out of memory",
              path);
  else
    rc = jwks_read(k, root, path, errstr, errstr_size);
  ERR_pop_to_mark(); /* leave nothing on the caller's error queue */
  json_decref(root);
  if (rc) {
    dc_jwks_free(k);
    return NULL;
  }
  return k;
}

void dc_jwks_free(dc_jwks_t *k) {
  if (!k)
    return;
  for (size_t i = 0; i < k->n; i++) {
    free(k->keys[i].kid);
    EVP_PKEY_free(k->keys[i].pkey);
  }
  free(k);
}

size_t dc_jwks_count(const dc_jwks_t *k) { return k ? k->n : 0; }

/* ---- token ------------------------------------------------------------- */

typedef struct jws {
  const char *input; /* header.payload: the signed bytes */
  size_t input_len;
  const unsigned char *hdr, *pl, *sig; /* decoded, in buf */
  size_t hdr_len, pl_len, sig_len;
  unsigned char buf[DC_JWT_MAX_TOKEN];
} jws_t;

/* Splits the token at its two dots and decodes the three parts. */
static int jws_split(const char *tok, size_t len, jws_t *t, char *errstr,
                     size_t errstr_size) {
  static const char *const names[3] = {"header", "payload", "signature"};
  size_t dot[2] = {0, 0}, ndots = 0;
  for (size_t i = 0; i < len; i++)
    if (tok[i] == '.' && ndots++ < 2)
      dot[ndots - 1] = i;
  if (ndots != 2) {
    dc_seterr(errstr, errstr_size,
              "malformed token: %zu parts (a JWS has 3: "
              "header.payload.signature)",
              ndots + 1);
    return -1;
  }
  const char *part[3] = {tok, tok + dot[0] + 1, tok + dot[1] + 1};
  size_t plen[3] = {dot[0], dot[1] - dot[0] - 1, len - dot[1] - 1};
  const unsigned char **dst[3] = {&t->hdr, &t->pl, &t->sig};
  size_t *dlen[3] = {&t->hdr_len, &t->pl_len, &t->sig_len};
  unsigned char *o = t->buf;
  for (int i = 0; i < 3; i++) {
    if (b64url_decode(part[i], plen[i], o,
                      sizeof(t->buf) - (size_t)(o - t->buf), dlen[i])) {
      dc_seterr(errstr, errstr_size,
                "malformed token: the %s is not base64url (no padding, "
                "only A-Z a-z 0-9 - _)",
                names[i]);
      return -1;
    }
    *dst[i] = o;
    o += *dlen[i];
  }
  if (!t->hdr_len || !t->pl_len) {
    dc_seterr(errstr, errstr_size, "malformed token: the %s is empty",
              t->hdr_len ? "payload" : "header");
    return -1;
  }
  t->input = tok;
  t->input_len = dot[1];
  return 0;
}

/* Parses a decoded header or payload: a JSON object, no duplicate keys. */
static json_t *parse_object(const unsigned char *s, size_t n, const char *what,
                            char *errstr, size_t errstr_size) {
  json_error_t jerr;
  char q[200];
  json_t *j = json_loadb((const char *)s, n, JSON_REJECT_DUPLICATES, &jerr);
  if (!j) {
    dc_seterr(errstr, errstr_size, "malformed token: the %s is not JSON (%s)",
              what, QUOTE(q, jerr.text));
    return NULL;
  }
  if (!json_is_object(j)) {
    dc_seterr(errstr, errstr_size,
              "malformed token: the %s is not a JSON object", what);
    json_decref(j);
    return NULL;
  }
  return j;
}

static const char *accepted_algs(const dc_jwt_policy_t *p) {
  if (p->jwks && p->allow_unsecured)
    return "accepted: RS256, ES256, none";
  if (p->jwks)
    return "accepted: RS256, ES256";
  return p->allow_unsecured ? "only unsecured (alg none) tokens are accepted"
                            : "no JWKS is configured";
}

/* Reads alg, typ, crit and kid from the header, alg against the policy. */
static int read_header(json_t *h, const dc_jwt_policy_t *p, alg_t *alg,
                       const char **kid, char *errstr, size_t errstr_size) {
  json_t *a = json_object_get(h, "alg"), *typ = json_object_get(h, "typ");
  json_t *k = json_object_get(h, "kid");
  char q[QBUF];
  if (!json_is_string(a)) {
    dc_seterr(errstr, errstr_size, "malformed token: no \"alg\" in the header");
    return -1;
  }
  if (typ &&
      (!json_is_string(typ) || strcasecmp(json_string_value(typ), "JWT"))) {
    dc_seterr(errstr, errstr_size, "token type (typ) '%s' is not JWT",
              json_is_string(typ) ? QUOTE_JS(q, typ) : "?");
    return -1;
  }
  /* Extensions the sender marks critical must be understood: none is. */
  if (json_object_get(h, "crit")) {
    dc_seterr(errstr, errstr_size,
              "token header has critical extensions (crit): none is supported");
    return -1;
  }
  if (k && (!json_is_string(k) || !json_string_length(k))) {
    dc_seterr(errstr, errstr_size,
              "malformed token: the key id (kid) is not a non-empty string");
    return -1;
  }
  *kid = k ? json_string_value(k) : NULL;
  const char *s = json_string_value(a);
  if (!strcmp(s, "none") && p->allow_unsecured)
    *alg = ALG_NONE;
  else if (!strcmp(s, "none"))
    dc_seterr(errstr, errstr_size,
              "unsecured (alg none) tokens are not accepted");
  else if (!strcmp(s, "RS256") && p->jwks)
    *alg = ALG_RS256;
  else if (!strcmp(s, "ES256") && p->jwks)
    *alg = ALG_ES256;
  else
    dc_seterr(errstr, errstr_size, "algorithm '%s' is not accepted (%s)",
              QUOTE_JS(q, a), accepted_algs(p));
  return *alg == ALG_BAD ? -1 : 0;
}

static const char *key_name(char *dst, size_t cap, const jwk_t *k) {
  char q[QBUF];
  if (k->kid)
    snprintf(dst, cap, "'%s'", QUOTE(q, k->kid));
  else
    snprintf(dst, cap, "(no kid, the only %s key)",
             k->type == KEY_RSA ? "RSA" : "EC");
  return dst;
}

/* The key that must have signed a token with alg and kid. */
static const jwk_t *find_key(const dc_jwks_t *ks, alg_t alg, const char *kid,
                             char *errstr, size_t errstr_size) {
  key_type_t want = alg == ALG_RS256 ? KEY_RSA : KEY_EC;
  const char *wname = want == KEY_RSA ? "RSA" : "EC";
  const jwk_t *found = NULL, *other = NULL;
  size_t n_want = 0;
  char q[QBUF];
  for (size_t i = 0; i < ks->n; i++) {
    const jwk_t *k = &ks->keys[i];
    if (kid && (!k->kid || strcmp(k->kid, kid)))
      continue;
    if (k->type != want) {
      other = k;
      continue;
    }
    found = k;
    n_want++;
  }
  if (n_want == 1)
    return found;
  if (kid && other)
    dc_seterr(errstr, errstr_size, "key '%s' is an %s key, not usable with %s",
              QUOTE(q, kid), want == KEY_RSA ? "EC" : "RSA",
              alg == ALG_RS256 ? "RS256" : "ES256");
  else if (kid)
    dc_seterr(errstr, errstr_size, "unknown key id '%s'", QUOTE(q, kid));
  else if (!n_want)
    dc_seterr(errstr, errstr_size, "no %s key in the JWKS for %s", wname,
              alg == ALG_RS256 ? "RS256" : "ES256");
  else
    dc_seterr(errstr, errstr_size,
              "the token names no key id (kid) and the JWKS has %zu %s keys",
              n_want, wname);
  return NULL;
}

/* A JWS ES256 signature is r||s (RFC 7518 §3.4); OpenSSL wants DER. The
 * DER length, or -1. */
static int es256_der(const unsigned char *sig, size_t len,
                     unsigned char **der) {
  if (len != 2 * EC_COORD)
    return -1;
  ECDSA_SIG *es = ECDSA_SIG_new();
  BIGNUM *r = BN_bin2bn(sig, EC_COORD, NULL);
  BIGNUM *s = BN_bin2bn(sig + EC_COORD, EC_COORD, NULL);
  int n = -1;
  if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
    r = s = NULL; /* es owns them */
    n = i2d_ECDSA_SIG(es, der);
  }
  BN_free(r);
  BN_free(s);
  ECDSA_SIG_free(es);
  return n;
}

/* Checks sig over msg with k: RS256 (SHA-256, PKCS#1 v1.5) or ES256. */
static bool verify(const jwk_t *k, const unsigned char *msg, size_t mlen,
                   const unsigned char *sig, size_t slen) {
  unsigned char *der = NULL;
  if (k->type == KEY_EC) {
    int n = es256_der(sig, slen, &der);
    if (n <= 0)
      return false;
    sig = der;
    slen = (size_t)n;
  } else if (slen != (size_t)EVP_PKEY_get_size(k->pkey)) {
    return false;
  }
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  EVP_PKEY_CTX *pctx = NULL;
  bool good = md &&
              EVP_DigestVerifyInit_ex(md, &pctx, "SHA256", NULL, NULL, k->pkey,
                                      NULL) == 1 &&
              (k->type != KEY_RSA ||
               EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1) &&
              EVP_DigestVerify(md, sig, slen, msg, mlen) == 1;
  EVP_MD_CTX_free(md);
  OPENSSL_free(der);
  return good;
}

static int check_signature(const jws_t *t, const dc_jwt_policy_t *p, alg_t alg,
                           const char *kid, dc_jwt_result_t *r, char *errstr,
                           size_t errstr_size) {
  if (alg == ALG_NONE) {
    if (t->sig_len) {
      dc_seterr(errstr, errstr_size,
                "malformed token: an unsecured (alg none) token must have an "
                "empty signature");
      return -1;
    }
    strcpy(r->alg, "none");
    return 0;
  }
  if (!t->sig_len) {
    dc_seterr(errstr, errstr_size, "malformed token: no signature");
    return -1;
  }
  const jwk_t *k = find_key(p->jwks, alg, kid, errstr, errstr_size);
  if (!k)
    return -1;
  ERR_set_mark();
  bool good = verify(k, (const unsigned char *)t->input, t->input_len, t->sig,
                     t->sig_len);
  ERR_pop_to_mark(); /* a bad signature is not the caller's TLS error */
  char name[QBUF + 32];
  if (!good) {
    dc_seterr(errstr, errstr_size, "signature does not verify with key %s",
              key_name(name, sizeof(name), k));
    return -1;
  }
  strcpy(r->alg, alg == ALG_RS256 ? "RS256" : "ES256");
  if (k->kid)
    snprintf(r->kid, sizeof(r->kid), "%s", k->kid);
  return 0;
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
  char q[QBUF];
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
  else if (has_control(json_string_value(j), n))
    dc_seterr(errstr, errstr_size, "the '%s' claim has control characters", q);
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

int dc_jwt_validate(const char *token, size_t len, const dc_jwt_policy_t *p,
                    dc_jwt_result_t *out, char *errstr, size_t errstr_size) {
  jws_t t;
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
  if (jws_split(token, len, &t, errstr, errstr_size))
    return -1;
  json_t *h = parse_object(t.hdr, t.hdr_len, "header", errstr, errstr_size);
  if (!h)
    return -1;
  memset(&r, 0, sizeof(r));
  alg_t alg = ALG_BAD;
  const char *kid = NULL; /* in h */
  int rc = read_header(h, p, &alg, &kid, errstr, errstr_size);
  if (!rc)
    rc = check_signature(&t, p, alg, kid, &r, errstr, errstr_size);
  json_decref(h);
  if (rc)
    return -1;
  /* Only a verified (or allowed unsecured) payload is read. */
  json_t *pl = parse_object(t.pl, t.pl_len, "payload", errstr, errstr_size);
  if (!pl)
    return -1;
  rc = check_claims(pl, p, &r, errstr, errstr_size);
  json_decref(pl);
  if (rc)
    return -1;
  *out = r;
  return 0;
}
