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
#include "broker/auth/jwt.h"
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

/* The number of bytes s (n chars) decodes to, or -1 when it is not strict
 * base64url without padding (RFC 7515 §2): the url alphabet only, no '=',
 * no length nothing encodes to, zero unused bits. So a byte string has
 * exactly one encoding, and a changed token never passes as the same. */
static long b64url_len(const char *s, size_t n) {
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
static bool b64url_decode(const char *s, size_t n, uint8_t **out,
                          size_t *outlen) {
  cjose_err err;
  *out = NULL;
  return cjose_base64url_decode(s, n, out, outlen, &err);
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

/* Decodes the base64url string member name of j: 1..max bytes in *buf
 * (free with cjose_get_dealloc()). 0, or -1 with why. */
static int jwk_bytes(json_t *j, const char *name, size_t max, uint8_t **buf,
                     size_t *len, char *why, size_t why_size) {
  json_t *v = json_object_get(j, name);
  long n = json_is_string(v)
               ? b64url_len(json_string_value(v), json_string_length(v))
               : -1;
  *buf = NULL;
  if (!json_is_string(v))
    dc_seterr(why, why_size, "no \"%s\" string", name);
  else if (n < 0)
    dc_seterr(why, why_size, "\"%s\" is not base64url", name);
  else if ((size_t)n > max)
    dc_seterr(why, why_size, "\"%s\" is too long", name);
  else if (!n)
    dc_seterr(why, why_size, "\"%s\" is empty", name);
  else if (!b64url_decode(json_string_value(v), json_string_length(v), buf,
                          len))
    dc_seterr(why, why_size, "cannot decode \"%s\"", name);
  else
    return 0;
  return -1;
}

/* The bits in the big-endian number b (n bytes). */
static int num_bits(const uint8_t *b, size_t n) {
  while (n && !*b)
    b++, n--;
  int bits = n ? (int)(n - 1) * 8 : 0;
  for (unsigned v = n ? *b : 0; v; v >>= 1)
    bits++;
  return bits;
}

/* "n" and "e" of an RSA key; a weak or odd-shaped key (small modulus, e
 * of 1, even values) would make forgeries easy, and a huge one would make
 * each verification slow, so they are refused. */
static int rsa_check(json_t *j, char *why, size_t why_size) {
  uint8_t *n = NULL, *e = NULL;
  size_t nl = 0, el = 0;
  int rc = -1;
  if (jwk_bytes(j, "n", RSA_MAX_BITS / 8 + 1, &n, &nl, why, why_size) ||
      jwk_bytes(j, "e", RSA_MAX_E_BITS / 8 + 1, &e, &el, why, why_size))
    goto out;
  int bits = num_bits(n, nl), ebits = num_bits(e, el);
  if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS)
    dc_seterr(why, why_size, "a %d-bit RSA key (%d to %d bits accepted)", bits,
              RSA_MIN_BITS, RSA_MAX_BITS);
  else if (!(n[nl - 1] & 1))
    dc_seterr(why, why_size, "\"n\" is not an RSA modulus");
  else if (!(e[el - 1] & 1) || ebits == 1 || ebits > RSA_MAX_E_BITS)
    dc_seterr(why, why_size, "\"e\" is not a usable RSA exponent");
  else
    rc = 0;
out:
  cjose_get_dealloc()(n);
  cjose_get_dealloc()(e);
  return rc;
}

/* "x" and "y" of a P-256 key: 32 bytes each. */
static int ec_check(json_t *j, char *why, size_t why_size) {
  uint8_t *x = NULL, *y = NULL;
  size_t xl = 0, yl = 0;
  int rc = jwk_bytes(j, "x", EC_COORD, &x, &xl, why, why_size) ||
                   jwk_bytes(j, "y", EC_COORD, &y, &yl, why, why_size)
               ? -1
               : 0;
  if (!rc && (xl != EC_COORD || yl != EC_COORD)) {
    dc_seterr(why, why_size, "\"x\" and \"y\" must be %d bytes each", EC_COORD);
    rc = -1;
  }
  cjose_get_dealloc()(x);
  cjose_get_dealloc()(y);
  return rc;
}

/* The key built by cjose from the public members of j alone: given a
 * private "d" it would derive the key from that and ignore "x", "y". The
 * point must be on the curve (cjose checks it). */
static cjose_jwk_t *import_public(json_t *j, key_type_t type, char *why,
                                  size_t why_size) {
  json_t *pub =
      type == KEY_RSA
          ? json_pack("{s:s,s:O,s:O}", "kty", "RSA", "n",
                      json_object_get(j, "n"), "e", json_object_get(j, "e"))
          : json_pack("{s:s,s:s,s:O,s:O}", "kty", "EC", "crv", "P-256", "x",
                      json_object_get(j, "x"), "y", json_object_get(j, "y"));
  cjose_err err;
  cjose_jwk_t *k =
      pub ? cjose_jwk_import_json((cjose_header_t *)pub, &err) : NULL;
  json_decref(pub);
  if (!pub)
    dc_seterr(why, why_size, "out of memory");
  else if (!k && type == KEY_EC)
    dc_seterr(why, why_size, "\"x\", \"y\" is not a point on P-256");
  else if (!k)
    dc_seterr(why, why_size, "cjose does not accept the RSA key (%s)",
              err.message);
  return k;
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
  if ((key->type == KEY_RSA ? rsa_check : ec_check)(j, why, why_size) ||
      !(key->key = import_public(j, key->type, why, why_size)))
    return -1;
  const char *kid = json_string_value(json_object_get(j, "kid"));
  if (kid && *kid && !(key->kid = strdup(kid))) {
    cjose_jwk_release(key->key);
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
      cjose_jwk_release(key.key);
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
  if (k)
    atomic_init(&k->refs, 1);
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

dc_jwks_t *dc_jwks_ref(dc_jwks_t *k) {
  if (k)
    atomic_fetch_add(&k->refs, 1);
  return k;
}

void dc_jwks_free(dc_jwks_t *k) {
  if (!k || atomic_fetch_sub(&k->refs, 1) > 1)
    return;
  for (size_t i = 0; i < k->n; i++) {
    free(k->keys[i].kid);
    cjose_jwk_release(k->keys[i].key);
  }
  free(k);
}

size_t dc_jwks_count(const dc_jwks_t *k) { return k ? k->n : 0; }
/* ---- token ------------------------------------------------------------- */

/* The three parts of a compact JWS, pointing into the token. */
typedef struct jws_parts {
  const char *part[3]; /* header, payload, signature (base64url) */
  size_t len[3];
  size_t sig_len; /* the signature's decoded length */
} jws_parts_t;

/* Splits the token at its two dots; each part must be strict base64url
 * and the header and payload non-empty. */
static int jws_split(const char *tok, size_t len, jws_parts_t *t,
                     char *errstr, size_t errstr_size) {
  static const char *const names[3] = {"header", "payload", "signature"};
  size_t dot[2] = {0, 0}, ndots = 0;
  long dec[3];
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
  const size_t start[3] = {0, dot[0] + 1, dot[1] + 1};
  const size_t end[3] = {dot[0], dot[1], len};
  for (int i = 0; i < 3; i++) {
    t->part[i] = tok + start[i];
    t->len[i] = end[i] - start[i];
    if ((dec[i] = b64url_len(t->part[i], t->len[i])) < 0) {
      dc_seterr(errstr, errstr_size,
                "malformed token: the %s is not base64url (no padding, "
                "only A-Z a-z 0-9 - _)",
                names[i]);
      return -1;
    }
  }
  if (!dec[0] || !dec[1]) {
    dc_seterr(errstr, errstr_size, "malformed token: the %s is empty",
              dec[0] ? "payload" : "header");
    return -1;
  }
  t->sig_len = (size_t)dec[2];
  return 0;
}

/* Parses a decoded header or payload: a JSON object, no duplicate keys. */
static json_t *parse_object(const uint8_t *s, size_t n, const char *what,
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

/* The header, read here as well as by cjose: only a strict parse
 * (duplicate members refused) may judge what cjose will act on. */
static json_t *parse_header(const jws_parts_t *t, char *errstr,
                            size_t errstr_size) {
  uint8_t *h = NULL;
  size_t hl = 0;
  if (!b64url_decode(t->part[0], t->len[0], &h, &hl)) {
    dc_seterr(errstr, errstr_size, "cannot decode the header: out of memory");
    return NULL;
  }
  json_t *j = parse_object(h, hl, "header", errstr, errstr_size);
  cjose_get_dealloc()(h);
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

/* Checks the signature of jws (cjose's parse of t) with the key alg and
 * kid name: RS256 (SHA-256, PKCS#1 v1.5) or ES256 (r||s). */
static int verify(cjose_jws_t *jws, const jws_parts_t *t,
                  const dc_jwt_policy_t *p, alg_t alg, const char *kid,
                  dc_jwt_result_t *r, char *errstr, size_t errstr_size) {
  if (!t->sig_len) {
    dc_seterr(errstr, errstr_size, "malformed token: no signature");
    return -1;
  }
  const jwk_t *k = find_key(p->jwks, alg, kid, errstr, errstr_size);
  if (!k)
    return -1;
  cjose_err err;
  bool good = (alg != ALG_ES256 || t->sig_len == 2 * EC_COORD) &&
              cjose_jws_verify(jws, k->key, &err);
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

/* The header judged, cjose's parse of the token, its signature checked
 * (or no signature, for an allowed alg none): the payload may then be
 * read. NULL with errstr. */
static cjose_jws_t *open_token(const char *token, size_t len,
                               const jws_parts_t *t, const dc_jwt_policy_t *p,
                               dc_jwt_result_t *r, char *errstr,
                               size_t errstr_size) {
  json_t *h = parse_header(t, errstr, errstr_size);
  alg_t alg = ALG_BAD;
  const char *kid = NULL; /* in h */
  cjose_err err;
  cjose_jws_t *jws = NULL;
  if (!h || read_header(h, p, &alg, &kid, errstr, errstr_size))
    goto out;
  if (alg == ALG_NONE && t->sig_len) {
    dc_seterr(errstr, errstr_size,
              "malformed token: an unsecured (alg none) token must have an "
              "empty signature");
    goto out;
  }
  if (!(jws = cjose_jws_import(token, len, &err))) {
    dc_seterr(errstr, errstr_size, "malformed token: cjose cannot read it (%s)",
              err.message);
    goto out;
  }
  if (alg == ALG_NONE)
    strcpy(r->alg, "none");
  else if (verify(jws, t, p, alg, kid, r, errstr, errstr_size)) {
    cjose_jws_release(jws);
    jws = NULL;
  }
out:
  json_decref(h);
  return jws;
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
  json_t *j = parse_object(pl, pl_len, "payload", errstr, errstr_size);
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
  if (jws_split(token, len, &t, errstr, errstr_size))
    return -1;
  memset(&r, 0, sizeof(r));
  ERR_set_mark();
  cjose_jws_t *jws = open_token(token, len, &t, p, &r, errstr, errstr_size);
  ERR_pop_to_mark(); /* a bad signature is not the caller's TLS error */
  /* Only a verified (or allowed unsecured) payload is read. */
  int rc = jws ? read_payload(jws, p, &r, errstr, errstr_size) : -1;
  cjose_jws_release(jws);
  if (rc)
    return -1;
  *out = r;
  return 0;
}
