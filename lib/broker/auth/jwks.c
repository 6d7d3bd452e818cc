/* SPDX-License-Identifier: BSD-2-Clause */
/* The JWK set file: read within its limits, each key checked for
 * strength and usability before cjose builds it, no key id twice. */
#include "config.h"
#include "broker/auth/jwt_int.h"
#include "common/text.h"

#include <openssl/err.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
               ? dc_jwt_b64url_len(json_string_value(v), json_string_length(v))
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
  else if (!dc_jwt_b64url_decode(json_string_value(v), json_string_length(v),
                                 buf, len))
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
