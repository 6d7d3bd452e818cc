/* SPDX-License-Identifier: BSD-2-Clause */
/* A token's compact form, its header, the key that signed it and the
 * signature, checked before cjose verifies it. */
#include "config.h"
#include "broker/auth/jwt_int.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Splits the token at its two dots; each part must be strict base64url
 * and the header and payload non-empty. */
int dc_jwt_split(const char *tok, size_t len, jws_parts_t *t, char *errstr,
                 size_t errstr_size) {
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
    if ((dec[i] = dc_jwt_b64url_len(t->part[i], t->len[i])) < 0) {
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
json_t *dc_jwt_parse_object(const uint8_t *s, size_t n, const char *what,
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
  if (!dc_jwt_b64url_decode(t->part[0], t->len[0], &h, &hl)) {
    dc_seterr(errstr, errstr_size, "cannot decode the header: out of memory");
    return NULL;
  }
  json_t *j = dc_jwt_parse_object(h, hl, "header", errstr, errstr_size);
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
cjose_jws_t *dc_jwt_open_token(const char *token, size_t len,
                               const jws_parts_t *t,
                               const dc_jwt_policy_t *p, dc_jwt_result_t *r,
                               char *errstr, size_t errstr_size) {
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
