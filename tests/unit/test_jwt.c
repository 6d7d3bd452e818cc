/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The OAUTHBEARER token validator (lib/broker/jwt.{h,c}). Keys are made
 * at run time (RSA-2048 twice, EC P-256, a too-small RSA-1024), JWKS
 * files are written to a temp dir, tokens are signed here (RS256, ES256,
 * HS256 for the key-confusion attack, unsigned alg none):
 *   - valid tokens with and without kid, the result fields;
 *   - time (exp, nbf, iat, skew), issuer, audience, principal and scope
 *     claims, header checks (typ, crit, kid, alg);
 *   - bad signatures, foreign keys, unknown kids, alg/key mismatches;
 *   - malformed tokens: parts, base64url, JSON, duplicate keys, length;
 *   - JWKS files refused: missing, not JSON, no keys, unusable, bad
 *     fields, too big, too many keys;
 *   - mutations of valid tokens never crash and never validate.
 */
#include "broker/auth/jwt.h"
#include "../tap.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOW 1796119200LL /* 2026-12-01T10:00:00Z */
#define TOK_MAX 16384
#define RING 8
#define ISS "\"iss\":\"https://idp.example\",\"aud\":\"dynconf\""
#define HRS(kid) "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"" kid "\"}"
#define HES(kid) "{\"alg\":\"ES256\",\"typ\":\"JWT\",\"kid\":\"" kid "\"}"

static char g_dir[64];
static char g_files[64][128];
static int g_nfiles;
static EVP_PKEY *g_rsa1, *g_rsa2, *g_ec1, *g_rsa_small;
static dc_jwks_t *g_jwks;

/* ---- helpers ----------------------------------------------------------- */

static char *ring_next(void) {
  static char ring[RING][TOK_MAX];
  static int i;
  return ring[i++ % RING];
}

__attribute__((format(printf, 1, 2))) static char *P(const char *fmt, ...) {
  static char ring[RING][TOK_MAX];
  static int i;
  char *b = ring[i++ % RING];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, TOK_MAX, fmt, ap);
  va_end(ap);
  return b;
}

static size_t b64url(const void *vin, size_t n, char *out) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const unsigned char *in = vin;
  size_t o = 0, i = 0;
  for (; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
    out[o++] = a[v >> 18];
    out[o++] = a[(v >> 12) & 63];
    out[o++] = a[(v >> 6) & 63];
    out[o++] = a[v & 63];
  }
  if (n - i) {
    uint32_t v =
        (uint32_t)in[i] << 16 | (n - i == 2 ? (uint32_t)in[i + 1] << 8 : 0);
    out[o++] = a[v >> 18];
    out[o++] = a[(v >> 12) & 63];
    if (n - i == 2)
      out[o++] = a[(v >> 6) & 63];
  }
  out[o] = '\0';
  return o;
}

/* Signs in with key (RS256 or ES256, by the key's type); an ES256
 * signature goes from OpenSSL's DER to the JWS r||s. */
static size_t sign_pk(EVP_PKEY *key, const char *in, size_t n,
                      unsigned char *sig) {
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  unsigned char der[1024];
  size_t dlen = sizeof(der);
  if (!md ||
      EVP_DigestSignInit_ex(md, NULL, "SHA256", NULL, NULL, key, NULL) != 1 ||
      EVP_DigestSign(md, der, &dlen, (const unsigned char *)in, n) != 1) {
    printf("Bail out! EVP_DigestSign failed\n");
    exit(1);
  }
  EVP_MD_CTX_free(md);
  if (!EVP_PKEY_is_a(key, "EC")) {
    memcpy(sig, der, dlen);
    return dlen;
  }
  const unsigned char *p = der;
  ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)dlen);
  const BIGNUM *r, *s;
  ECDSA_SIG_get0(es, &r, &s);
  BN_bn2binpad(r, sig, 32);
  BN_bn2binpad(s, sig + 32, 32);
  ECDSA_SIG_free(es);
  return 64;
}

/* header.payload.signature from JSON texts; key NULL = empty signature,
 * hs (with key NULL) = HS256 with that secret. */
static char *tok_any(const char *hdr, const char *pl, EVP_PKEY *key,
                     const char *hs, size_t hslen) {
  char *out = ring_next();
  unsigned char sig[1024];
  size_t sl = 0, o = b64url(hdr, strlen(hdr), out);
  out[o++] = '.';
  o += b64url(pl, strlen(pl), out + o);
  if (key)
    sl = sign_pk(key, out, o, sig);
  else if (hs) {
    EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, hs, hslen,
              (const unsigned char *)out, o, sig, sizeof(sig), &sl);
  }
  out[o++] = '.';
  b64url(sig, sl, out + o);
  return out;
}

static char *tok(const char *hdr, const char *pl, EVP_PKEY *key) {
  return tok_any(hdr, pl, key, NULL, 0);
}

/* An ES256 token whose r and s each carry a leading zero byte: the same
 * numbers in 66 bytes instead of 64. */
static char *tok_es_padded(const char *hdr, const char *pl, EVP_PKEY *key) {
  char *out = ring_next();
  unsigned char sig[64], padded[66] = {0};
  size_t o = b64url(hdr, strlen(hdr), out);
  out[o++] = '.';
  o += b64url(pl, strlen(pl), out + o);
  sign_pk(key, out, o, sig);
  memcpy(padded + 1, sig, 32);
  memcpy(padded + 34, sig + 32, 32);
  out[o++] = '.';
  b64url(padded, sizeof(padded), out + o);
  return out;
}

/* A copy of t with the byte at pos (from the end if negative) set to c. */
static char *edit(const char *t, long pos, char c) {
  char *out = ring_next();
  snprintf(out, TOK_MAX, "%s", t);
  out[pos < 0 ? (long)strlen(out) + pos : pos] = c;
  return out;
}

/* The first n bytes of t. */
static char *prefix(const char *t, size_t n) {
  char *out = ring_next();
  snprintf(out, TOK_MAX, "%.*s", (int)n, t);
  return out;
}

/* t with s inserted at pos. */
static char *ins(const char *t, size_t pos, const char *s) {
  char *out = ring_next();
  snprintf(out, TOK_MAX, "%.*s%s%s", (int)pos, t, s, t + pos);
  return out;
}

static char *cat(const char *a, const char *b) {
  char *out = ring_next();
  snprintf(out, TOK_MAX, "%s%s", a, b);
  return out;
}

/* The standard claims with exp at NOW + exp_in. */
static char *claims(long long exp_in, const char *extra) {
  return P("{\"sub\":\"alice\",\"exp\":%lld," ISS "%s}", NOW + exp_in, extra);
}

static dc_jwt_policy_t policy(void) {
  dc_jwt_policy_t p = {.jwks = g_jwks,
                       .issuer = "https://idp.example",
                       .audience = "dynconf",
                       .clock_skew_s = 30,
                       .now_s = NOW};
  return p;
}

static dc_jwt_result_t g_res;

static void accepts(const char *t, const dc_jwt_policy_t *p,
                    const char *principal, const char *name) {
  char err[512] = "";
  int rc = dc_jwt_validate(t, strlen(t), p, &g_res, err, sizeof(err));
  if (!ok(rc == 0, "%s: accepted", name))
    diag("  errstr: %s", err);
  else
    is_str(g_res.principal, principal, "  %s: principal", name);
}

static void refuses(const char *t, const dc_jwt_policy_t *p, const char *word,
                    const char *name) {
  char err[512] = "";
  dc_jwt_result_t r;
  memset(&r, 'x', sizeof(r));
  int rc = dc_jwt_validate(t, strlen(t), p, &r, err, sizeof(err));
  ok(rc == -1 && strstr(err, word) && !r.principal[0] && !r.expires_s,
     "%s: refused with '%s': %s", name, word, err);
}

static const char *write_file(const char *name, const char *text, size_t len) {
  char *path = g_files[g_nfiles++];
  snprintf(path, sizeof(g_files[0]), "%s/%s", g_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
    printf("Bail out! cannot write %s\n", path);
    exit(1);
  }
  return path;
}

/* ---- JWKS -------------------------------------------------------------- */

static char *jwk_rsa(EVP_PKEY *k, const char *kid, const char *extra) {
  BIGNUM *n = NULL, *e = NULL;
  unsigned char nb[1100], eb[16];
  char ns[1500], es[32];
  EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n);
  EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &e);
  b64url(nb, (size_t)BN_bn2bin(n, nb), ns);
  b64url(eb, (size_t)BN_bn2bin(e, eb), es);
  BN_free(n);
  BN_free(e);
  return P("{\"kty\":\"RSA\"%s%s%s,\"n\":\"%s\",\"e\":\"%s\"%s}",
           kid ? ",\"kid\":\"" : "", kid ? kid : "", kid ? "\"" : "", ns, es,
           extra);
}

static char *jwk_ec(EVP_PKEY *k, const char *kid, const char *extra) {
  BIGNUM *x = NULL, *y = NULL;
  unsigned char xb[32], yb[32];
  char xs[64], ys[64];
  EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &x);
  EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, &y);
  BN_bn2binpad(x, xb, 32);
  BN_bn2binpad(y, yb, 32);
  b64url(xb, 32, xs);
  b64url(yb, 32, ys);
  BN_free(x);
  BN_free(y);
  return P(
      "{\"kty\":\"EC\",\"crv\":\"P-256\"%s%s%s,\"x\":\"%s\",\"y\":\"%s\"%s}",
      kid ? ",\"kid\":\"" : "", kid ? kid : "", kid ? "\"" : "", xs, ys, extra);
}

static dc_jwks_t *load_text(const char *name, const char *text, char *err,
                            size_t errsz) {
  return dc_jwks_load(write_file(name, text, strlen(text)), err, errsz);
}

static void jwks_refused(const char *name, const char *text, const char *word) {
  char err[512] = "";
  dc_jwks_t *k = load_text(name, text, err, sizeof(err));
  ok(!k && strstr(err, word), "JWKS %s: refused with '%s': %s", name, word,
     err);
  dc_jwks_free(k);
}

static void test_jwks(void) {
  char err[512] = "";
  char *text =
      P("{\"keys\":[%s,%s,%s,%s,%s,%s,%s]}",
        jwk_rsa(g_rsa1, "r1", ",\"use\":\"sig\",\"alg\":\"RS256\""),
        jwk_ec(g_ec1, "e1", ""), jwk_rsa(g_rsa2, "enc1", ",\"use\":\"enc\""),
        jwk_rsa(g_rsa2, "ps1", ",\"alg\":\"PS256\""),
        "{\"kty\":\"oct\",\"kid\":\"h1\",\"k\":\"c2VjcmV0\"}",
        "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"ed\","
        "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}",
        "{\"kty\":\"EC\",\"crv\":\"P-384\",\"kid\":\"p384\","
        "\"x\":\"AA\",\"y\":\"AA\"}");
  g_jwks = load_text("jwks.json", text, err, sizeof(err));
  if (!ok(g_jwks != NULL, "JWKS with RSA, EC and skipped keys loads"))
    diag("  errstr: %s", err);
  is_int(dc_jwks_count(g_jwks), 2,
         "  2 usable keys (enc, PS256, oct, OKP, "
         "P-384 skipped)");
  is_int(dc_jwks_count(NULL), 0, "dc_jwks_count(NULL) is 0");
  dc_jwks_free(NULL);

  dc_jwks_t *k = dc_jwks_load("/nonexistent/jwks.json", err, sizeof(err));
  ok(!k && strstr(err, "cannot open"), "missing JWKS file refused: %s", err);
  k = dc_jwks_load(g_dir, err, sizeof(err));
  ok(!k && strstr(err, "cannot read"), "a directory refused: %s", err);
  jwks_refused("notjson", "{\"keys\":", "not JSON");
  jwks_refused("dupjson", "{\"keys\":[],\"keys\":[]}", "duplicate");
  jwks_refused("nokeys", "{\"key\":[]}", "\"keys\" array");
  jwks_refused("keysobj", "{\"keys\":{}}", "\"keys\" array");
  jwks_refused("toparray", "[]", "\"keys\" array");
  jwks_refused("empty", "{\"keys\":[]}", "no usable key");
  jwks_refused("onlyenc",
               P("{\"keys\":[%s]}", jwk_rsa(g_rsa1, "x", ",\"use\":\"enc\"")),
               "no usable key");
}

/* Keys whose fields do not decode, or are unfit to verify with. */
static void test_jwks_keys(void) {
  jwks_refused("badn",
               "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"b\",\"n\":\"!!!\","
               "\"e\":\"AQAB\"}]}",
               "\"n\" is not base64url");
  jwks_refused("padn",
               "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB==\",\"e\":\"AQAB\"}]}",
               "\"n\" is not base64url");
  jwks_refused("non", "{\"keys\":[{\"kty\":\"RSA\",\"e\":\"AQAB\"}]}",
               "no \"n\"");
  jwks_refused("notobj", "{\"keys\":[1]}", "not a JSON object");
  jwks_refused("nokty", "{\"keys\":[{\"kid\":\"a\"}]}", "kty");
  jwks_refused("kidnum", "{\"keys\":[{\"kty\":\"RSA\",\"kid\":1}]}",
               "\"kid\" is not a string");
  jwks_refused("small", P("{\"keys\":[%s]}", jwk_rsa(g_rsa_small, "s", "")),
               "1024-bit");
  char *n1 = strstr(jwk_rsa(g_rsa1, "r1", ""), "\"n\":\"") + 5;
  int n1len = (int)(strchr(n1, '"') - n1);
  jwks_refused("eone",
               P("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%.*s\",\"e\":\"AQ\"}]}",
                 n1len, n1),
               "\"e\" is not a usable RSA exponent");
  jwks_refused("eeven",
               P("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%.*s\",\"e\":\"AQAA\"}]}",
                 n1len, n1),
               "\"e\" is not a usable RSA exponent");
  jwks_refused("elong",
               P("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%.*s\",\"e\":\"%s\"}]}",
                 n1len, n1, "AQAAAAAAAAAAAQ"),
               "\"e\" is too long");
  jwks_refused(
      "neven",
      P("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%.*sA\",\"e\":\"AQAB\"}]}",
        n1len - 1, n1),
      "\"n\"");
  jwks_refused("dupkid",
               P("{\"keys\":[%s,%s]}", jwk_rsa(g_rsa1, "r1", ""),
                 jwk_rsa(g_rsa2, "r1", "")),
               "two keys with id 'r1'");
  jwks_refused("shortx",
               "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AAAA\","
               "\"y\":\"AAAA\"}]}",
               "32 bytes");
  jwks_refused("offcurve",
               P("{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"%s\","
                 "\"y\":\"%s\"}]}",
                 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE"),
               "not a point");
}

/* A file over 1 MiB, 65 keys: refused before or while reading. */
static void test_jwks_limits(void) {
  char err[512] = "";
  size_t big = DC_JWKS_MAX_FILE + 1;
  char *buf = malloc(big);
  memset(buf, ' ', big);
  memcpy(buf, "{\"keys\":[]}", 11);
  dc_jwks_t *k = dc_jwks_load(write_file("big", buf, big), err, sizeof(err));
  ok(!k && strstr(err, "too big"), "a JWKS file over 1 MiB refused: %s", err);
  /* exactly 1 MiB is read (and then judged on its contents) */
  k = dc_jwks_load(write_file("big1", buf, big - 1), err, sizeof(err));
  ok(!k && strstr(err, "no usable key"), "a 1 MiB JWKS file is read: %s", err);

  size_t o = (size_t)snprintf(buf, big, "{\"keys\":[");
  for (int i = 0; i < 65; i++) {
    char kid[16];
    snprintf(kid, sizeof(kid), "k%d", i);
    o += (size_t)snprintf(buf + o, big - o, "%s%s", i ? "," : "",
                          jwk_ec(g_ec1, kid, ""));
  }
  snprintf(buf + o, big - o, "]}");
  jwks_refused("65keys", buf, "65 keys (at most 64)");
  strcpy(strstr(buf, ",{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"k64\""),
         "]}");
  k = load_text("64keys", buf, err, sizeof(err));
  ok(k && dc_jwks_count(k) == 64, "64 keys load: %s", k ? "" : err);
  dc_jwks_free(k);
  free(buf);
}

/* ---- tokens ------------------------------------------------------------ */

static void test_valid(void) {
  dc_jwt_policy_t p = policy();
  char *t = tok(HRS("r1"), claims(3600, ",\"scope\":\"read write\""), g_rsa1);
  accepts(t, &p, "alice", "RS256 with kid");
  is_int(g_res.expires_s, NOW + 3600, "  expires_s is exp");
  is_str(g_res.scope, "read write", "  scope");
  is_str(g_res.alg, "RS256", "  alg");
  is_str(g_res.kid, "r1", "  kid");
  accepts(tok("{\"alg\":\"RS256\"}", claims(60, ""), g_rsa1), &p, "alice",
          "RS256 without kid (the only RSA key)");
  is_str(g_res.scope, "", "  no scope: empty");
  accepts(tok(HES("e1"), claims(60, ""), g_ec1), &p, "alice", "ES256 with kid");
  is_str(g_res.alg, "ES256", "  alg");
  is_str(g_res.kid, "e1", "  kid");
  accepts(tok("{\"alg\":\"ES256\",\"typ\":\"jwt\"}", claims(60, ""), g_ec1), &p,
          "alice", "ES256 without kid, typ in lower case");
  p.issuer = p.audience = NULL;
  accepts(tok(HRS("r1"), P("{\"sub\":\"bob\",\"exp\":%lld}", NOW + 5), g_rsa1),
          &p, "bob", "no iss/aud needed when the policy names none");
  p = policy();
  accepts(tok(HRS("r1"), P("{\"sub\":\"bob\",\"exp\":%lld.9," ISS "}", NOW + 5),
              g_rsa1),
          &p, "bob", "a float exp");
  is_int(g_res.expires_s, NOW + 5, "  truncated");
  accepts(tok(HRS("r1"),
              P("{\"sub\":\"bob\",\"exp\":%lld,\"iss\":\"https://idp.example\","
                "\"aud\":[\"other\",\"dynconf\"],"
                "\"scope\":[\"a\",\"b.c\"]}",
                NOW + 5),
              g_rsa1),
          &p, "bob", "aud and scope as arrays");
  is_str(g_res.scope, "a b.c", "  scope joined with spaces");
  char *u = P("{\"sub\":\"%s\",\"exp\":%lld," ISS "}",
              "\xc3\xa9l\xc3\xa8ve/app-1@REALM", NOW + 5);
  accepts(tok(HRS("r1"), u, g_rsa1), &p, "\xc3\xa9l\xc3\xa8ve/app-1@REALM",
          "a UTF-8 principal");
}

static void test_time(void) {
  dc_jwt_policy_t p = policy();
  char err[512];
  char *t = tok(HRS("r1"), claims(-31, ""), g_rsa1);
  refuses(t, &p, "expired", "exp past the skew");
  dc_jwt_validate(t, strlen(t), &p, &g_res, err, sizeof(err));
  is_str(err,
         "token expired at 2026-12-01T09:59:29Z (now 2026-12-01T10:00:00Z)",
         "  the sentence");
  refuses(tok(HRS("r1"), claims(-30, ""), g_rsa1), &p, "expired",
          "exp exactly now - skew");
  accepts(tok(HRS("r1"), claims(-29, ""), g_rsa1), &p, "alice",
          "exp within the skew");
  p.clock_skew_s = 0;
  refuses(tok(HRS("r1"), claims(0, ""), g_rsa1), &p, "expired",
          "exp == now, no skew");
  p.clock_skew_s = -5;
  accepts(tok(HRS("r1"), claims(1, ""), g_rsa1), &p, "alice",
          "a negative skew counts as 0");
  p = policy();
  refuses(tok(HRS("r1"),
              claims(60, ",\"nbf\":"
                         "1796119300"),
              g_rsa1),
          &p, "not valid before 2026-12-01T10:01:40Z", "nbf in the future");
  accepts(tok(HRS("r1"), claims(60, ",\"nbf\":1796119220"), g_rsa1), &p,
          "alice", "nbf within the skew");
  refuses(tok(HRS("r1"), claims(60, ",\"iat\":1796119300"), g_rsa1), &p,
          "issued in the future", "iat in the future");
  accepts(tok(HRS("r1"), claims(60, ",\"iat\":1796119000"), g_rsa1), &p,
          "alice", "iat in the past");
  refuses(tok(HRS("r1"), "{\"sub\":\"a\"," ISS "}", g_rsa1), &p, "no 'exp'",
          "no exp");
  refuses(
      tok(HRS("r1"), "{\"sub\":\"a\",\"exp\":\"1796119300\"," ISS "}", g_rsa1),
      &p, "'exp' claim is not a number", "exp a string");
  refuses(tok(HRS("r1"), "{\"sub\":\"a\",\"exp\":1e300," ISS "}", g_rsa1), &p,
          "'exp' claim is not a number", "exp out of range");
  refuses(tok(HRS("r1"), "{\"sub\":\"a\",\"exp\":-1e300," ISS "}", g_rsa1), &p,
          "'exp' claim is not a number", "exp far negative");
  refuses(tok(HRS("r1"), claims(60, ",\"nbf\":true"), g_rsa1), &p,
          "'nbf' claim is not a number", "nbf a boolean");
  refuses(tok(HRS("r1"), claims(60, ",\"iat\":null"), g_rsa1), &p,
          "'iat' claim is not a number", "iat null");
  refuses(tok(HRS("r1"), "{\"sub\":\"a\",\"exp\":-9223372036854775807," ISS "}",
              g_rsa1),
          &p, "expired at @-9223372036854775807", "exp at the int64 minimum");
  p.clock_skew_s = INT64_MAX;
  p.now_s = INT64_MAX;
  accepts(tok(HRS("r1"), claims(60, ",\"nbf\":9223372036854775807"), g_rsa1),
          &p, "alice", "huge skew and now do not overflow");
}

static void test_claims(void) {
  dc_jwt_policy_t p = policy();
  refuses(tok(HRS("r1"),
              P("{\"sub\":\"a\",\"exp\":%lld,\"iss\":\"https://evil\","
                "\"aud\":\"dynconf\"}",
                NOW + 60),
              g_rsa1),
          &p, "issuer 'https://evil' is not the expected 'https://idp.example'",
          "wrong issuer");
  refuses(tok(HRS("r1"),
              P("{\"sub\":\"a\",\"exp\":%lld,\"aud\":\"dynconf\"}", NOW + 60),
              g_rsa1),
          &p, "no 'iss' claim", "no issuer");
  refuses(tok(HRS("r1"),
              P("{\"sub\":\"a\",\"exp\":%lld,\"iss\":7,\"aud\":\"dynconf\"}",
                NOW + 60),
              g_rsa1),
          &p, "'iss' claim is not a string", "issuer a number");
  char *noaud =
      P("{\"sub\":\"a\",\"exp\":%lld,\"iss\":\"https://idp.example\"%s}",
        NOW + 60, "");
  refuses(tok(HRS("r1"), noaud, g_rsa1), &p,
          "audience does not include "
          "'dynconf' (no 'aud' claim)",
          "no audience");
  char *aud = P("{\"sub\":\"a\",\"exp\":%lld,\"iss\":\"https://idp.example\","
                "\"aud\":\"other\"}",
                NOW + 60);
  refuses(tok(HRS("r1"), aud, g_rsa1), &p, "audience does not include",
          "wrong audience");
  aud = P("{\"sub\":\"a\",\"exp\":%lld,\"iss\":\"https://idp.example\","
          "\"aud\":[\"x\",\"y\"]}",
          NOW + 60);
  refuses(tok(HRS("r1"), aud, g_rsa1), &p, "audience does not include",
          "audience array without ours");
  aud = P("{\"sub\":\"a\",\"exp\":%lld,\"iss\":\"https://idp.example\","
          "\"aud\":[\"dynconf\",3]}",
          NOW + 60);
  refuses(tok(HRS("r1"), aud, g_rsa1), &p, "'aud' claim is not a string",
          "audience array with a number");
  aud = P("{\"sub\":\"a\",\"exp\":%lld,\"iss\":\"https://idp.example\","
          "\"aud\":{}}",
          NOW + 60);
  refuses(tok(HRS("r1"), aud, g_rsa1), &p, "'aud' claim", "audience object");
  aud = P("{\"sub\":\"a\",\"exp\":%lld,\"iss\":\"https://idp.example\","
          "\"aud\":[]}",
          NOW + 60);
  refuses(tok(HRS("r1"), aud, g_rsa1), &p, "audience does not include",
          "empty audience array");
}

static void test_principal(void) {
  dc_jwt_policy_t p = policy();
  char *pl = P("{\"exp\":%lld," ISS ",\"client_id\":\"svc-1\"}", NOW + 60);
  refuses(tok(HRS("r1"), pl, g_rsa1), &p, "no 'sub' claim", "no sub");
  p.principal_claim = "client_id";
  accepts(tok(HRS("r1"), pl, g_rsa1), &p, "svc-1", "principal_claim client_id");
  refuses(tok(HRS("r1"), claims(60, ""), g_rsa1), &p, "no 'client_id' claim",
          "principal_claim missing");
  p.principal_claim = NULL;
  refuses(
      tok(HRS("r1"), P("{\"sub\":42,\"exp\":%lld," ISS "}", NOW + 60), g_rsa1),
      &p, "'sub' claim is not a string", "sub a number");
  refuses(tok(HRS("r1"), P("{\"sub\":\"\",\"exp\":%lld," ISS "}", NOW + 60),
              g_rsa1),
          &p, "'sub' claim is empty", "sub empty");
  refuses(tok(HRS("r1"),
              P("{\"sub\":\"a\\u0001b\",\"exp\":%lld," ISS "}", NOW + 60),
              g_rsa1),
          &p, "holds a control character", "sub with a control character");
  refuses(tok(HRS("r1"),
              P("{\"sub\":\"a\\u0000b\",\"exp\":%lld," ISS "}", NOW + 60),
              g_rsa1),
          &p, "not JSON", "sub with a NUL");
  char longsub[300];
  memset(longsub, 'a', 256);
  longsub[256] = '\0';
  refuses(tok(HRS("r1"),
              P("{\"sub\":\"%s\",\"exp\":%lld," ISS "}", longsub, NOW + 60),
              g_rsa1),
          &p, "too long (256 bytes, at most 255)", "sub of 256 bytes");
  longsub[255] = '\0';
  accepts(tok(HRS("r1"),
              P("{\"sub\":\"%s\",\"exp\":%lld," ISS "}", longsub, NOW + 60),
              g_rsa1),
          &p, longsub, "sub of 255 bytes");
  /* Names that would read like another principal in logs and ACLs. */
  static const struct {
    const char *sub, *why, *name;
  } look_alike[] = {
      {"oa-admin ", "'oa-admin ' ends with a blank", "a trailing space"},
      {" oa-admin", "' oa-admin' begins with a blank", "a leading space"},
      {"oa-admin\\u00a0", "ends with a blank", "a trailing no-break space"},
      {"\\u3000oa-admin", "begins with a blank", "a leading ideographic space"},
      {"oa-admin\\u200b", "ends with a blank", "a trailing zero-width space"},
      {"oa-admin\\u2028x", "holds a control character", "a line separator"},
      {"oa-admin\\u0085", "holds a control character", "a C1 control"},
      {"oa-admin\\t", "holds a control character", "a trailing tab"},
  };
  for (size_t i = 0; i < sizeof(look_alike) / sizeof(look_alike[0]); i++)
    refuses(tok(HRS("r1"),
                P("{\"sub\":\"%s\",\"exp\":%lld," ISS "}", look_alike[i].sub,
                  NOW + 60),
                g_rsa1),
            &p, look_alike[i].why, P("sub with %s", look_alike[i].name));
  accepts(tok(HRS("r1"),
              P("{\"sub\":\"oa admin\",\"exp\":%lld," ISS "}", NOW + 60),
              g_rsa1),
          &p, "oa admin", "a blank inside the sub");
  p.principal_claim = "client_id";
  refuses(tok(HRS("r1"),
              P("{\"client_id\":\"svc \",\"exp\":%lld," ISS "}", NOW + 60),
              g_rsa1),
          &p, "the 'client_id' claim 'svc ' ends with a blank",
          "principal_claim client_id with a trailing blank");
}

static void test_scope(void) {
  dc_jwt_policy_t p = policy();
  char s[300];
  memset(s, 's', 255);
  s[255] = '\0';
  accepts(tok(HRS("r1"), claims(60, P(",\"scope\":\"%s\"", s)), g_rsa1), &p,
          "alice", "scope of 255 bytes");
  is_str(g_res.scope, s, "  whole");
  s[254] = '\0';
  refuses(tok(HRS("r1"), claims(60, P(",\"scope\":[\"%s\",\"x\"]", s)), g_rsa1),
          &p, "'scope' claim is too long", "scope array joined over 255");
  accepts(tok(HRS("r1"), claims(60, P(",\"scope\":[\"%s\"]", s)), g_rsa1), &p,
          "alice", "scope array of one 254-byte string");
  refuses(tok(HRS("r1"), claims(60, ",\"scope\":7"), g_rsa1), &p,
          "'scope' claim is not a string", "scope a number");
  refuses(tok(HRS("r1"), claims(60, ",\"scope\":[\"a\",null]"), g_rsa1), &p,
          "'scope' claim is not a string", "scope array with null");
  refuses(tok(HRS("r1"), claims(60, ",\"scope\":\"a\\nb\""), g_rsa1), &p,
          "control characters", "scope with a newline");
}

/* A token kept out of the ring, for tests that edit it many times. */
static char *keep(char *dst, const char *t) {
  snprintf(dst, TOK_MAX, "%s", t);
  return dst;
}

static void test_signature(void) {
  dc_jwt_policy_t p = policy();
  char tb[TOK_MAX], eb[TOK_MAX];
  char *t = keep(tb, tok(HRS("r1"), claims(60, ""), g_rsa1));
  long mid = (long)(strrchr(t, '.') - t) + 20;
  refuses(edit(t, mid, t[mid] == 'A' ? 'B' : 'A'), &p,
          "signature does not verify with key 'r1'", "RS256 flipped byte");
  char *e = keep(eb, tok(HES("e1"), claims(60, ""), g_ec1));
  mid = (long)(strrchr(e, '.') - e) + 20;
  refuses(edit(e, mid, e[mid] == 'A' ? 'B' : 'A'), &p,
          "signature does not verify with key 'e1'", "ES256 flipped byte");
  refuses(cat(e, "AA"), &p, "signature does not verify",
          "ES256 signature too long");
  char *e2 = edit(e, -1, '\0');
  e2[strlen(e2) - 1] = '\0'; /* 63 bytes: no longer r||s */
  refuses(e2, &p, "signature does not verify", "ES256 signature too short");
  refuses(tok_es_padded(HES("e1"), claims(60, ""), g_ec1), &p,
          "signature does not verify with key 'e1'",
          "ES256 r and s zero-padded to 33 bytes each");
  /* another payload under the first token's signature */
  char *t2 =
      tok(HRS("r1"), P("{\"sub\":\"admin\",\"exp\":%lld," ISS "}", NOW + 60),
          g_rsa1);
  char *swap = ring_next();
  snprintf(swap, TOK_MAX, "%.*s%s", (int)(strrchr(t2, '.') - t2), t2,
           strrchr(t, '.'));
  refuses(swap, &p, "signature does not verify",
          "payload changed after signing");
  refuses(tok(HRS("r1"), claims(60, ""), g_rsa2), &p,
          "signature does not verify with key 'r1'",
          "signed by a key not in "
          "the JWKS");
  refuses(tok(HRS("enc1"), claims(60, ""), g_rsa2), &p, "unknown key id 'enc1'",
          "an encryption key is not a signing key");
  refuses(tok(HRS("x"), claims(60, ""), g_rsa1), &p, "unknown key id 'x'",
          "unknown kid");
  refuses(tok(HES("r1"), claims(60, ""), g_ec1), &p,
          "key 'r1' is an RSA key, not usable with ES256",
          "ES256 with an "
          "RSA key's kid");
  refuses(tok(HRS("e1"), claims(60, ""), g_rsa1), &p,
          "key 'e1' is an EC key, not usable with RS256",
          "RS256 with an EC key's kid");
  refuses(edit(t, -1, '\0'), &p, "base64url", "RS256 signature cut by a char");
  refuses(prefix(t, (size_t)(strrchr(t, '.') - t + 1)), &p, "no signature",
          "RS256 with an empty signature");
}

/* A JWK that also carries a private "d" (of another key): its public
 * "x", "y" are the key, as a verifier needs nothing else. */
static void test_private_member(void) {
  EVP_PKEY *other = EVP_EC_gen("P-256");
  BIGNUM *d = NULL;
  unsigned char db[32];
  char ds[64], err[512] = "";
  EVP_PKEY_get_bn_param(other, OSSL_PKEY_PARAM_PRIV_KEY, &d);
  BN_bn2binpad(d, db, 32);
  b64url(db, 32, ds);
  BN_free(d);
  dc_jwks_t *k = load_text(
      "withd.json",
      P("{\"keys\":[%s]}", jwk_ec(g_ec1, "e1", P(",\"d\":\"%s\"", ds))), err,
      sizeof(err));
  ok(k != NULL, "a JWK with a private \"d\" loads: %s", k ? "" : err);
  dc_jwt_policy_t p = policy();
  p.jwks = k;
  accepts(tok(HES("e1"), claims(60, ""), g_ec1), &p, "alice",
          "  verified with its public x, y");
  refuses(tok(HES("e1"), claims(60, ""), other), &p, "signature does not verify",
          "  not with the key of its \"d\"");
  dc_jwks_free(k);
  EVP_PKEY_free(other);
}

/* JWKS with two RSA keys, or one key without kid. */
static void test_key_choice(void) {
  char err[512] = "";
  dc_jwks_t *two = load_text("two.json",
                             P("{\"keys\":[%s,%s]}", jwk_rsa(g_rsa1, "r1", ""),
                               jwk_rsa(g_rsa2, "r2", "")),
                             err, sizeof(err));
  dc_jwks_t *nokid =
      load_text("nokid.json", P("{\"keys\":[%s]}", jwk_rsa(g_rsa1, NULL, "")),
                err, sizeof(err));
  ok(two && nokid, "JWKS with two RSA keys, one without kid: %s", err);
  dc_jwt_policy_t p = policy();
  p.jwks = two;
  accepts(tok(HRS("r2"), claims(60, ""), g_rsa2), &p, "alice",
          "the second key by kid");
  refuses(tok("{\"alg\":\"RS256\"}", claims(60, ""), g_rsa1), &p,
          "names no key id (kid) and the JWKS has 2 RSA keys",
          "no kid, two candidate keys");
  refuses(tok("{\"alg\":\"ES256\"}", claims(60, ""), g_ec1), &p,
          "no EC key in the JWKS", "ES256 with no EC key");
  p.jwks = nokid;
  accepts(tok("{\"alg\":\"RS256\"}", claims(60, ""), g_rsa1), &p, "alice",
          "no kid, a JWKS key without kid");
  is_str(g_res.kid, "", "  result kid empty");
  refuses(tok("{\"alg\":\"RS256\"}", claims(60, ""), g_rsa2), &p,
          "signature does not verify with key (no kid", "wrong key, no kid");
  refuses(tok(HRS("r1"), claims(60, ""), g_rsa1), &p, "unknown key id 'r1'",
          "a kid the kid-less JWKS does not have");
  dc_jwks_free(two);
  dc_jwks_free(nokid);
  test_private_member();
}

static void test_algs(void) {
  dc_jwt_policy_t p = policy();
  dc_jwt_policy_t u = {.allow_unsecured = true, .now_s = NOW};
  char *none = tok("{\"alg\":\"none\"}", claims(60, ""), NULL);
  accepts(none, &u, "alice", "alg none when allowed");
  is_str(g_res.alg, "none", "  alg none");
  refuses(none, &p, "unsecured (alg none) tokens are not accepted",
          "alg none not allowed");
  p.allow_unsecured = true;
  accepts(none, &p, "alice", "alg none allowed next to a JWKS");
  p.allow_unsecured = false;
  refuses(cat(none, "AAAA"), &u, "must have an empty signature",
          "alg none with a signature");
  refuses(tok("{\"alg\":\"None\"}", claims(60, ""), NULL), &u,
          "algorithm 'None' is not accepted", "alg None (case)");
  refuses(tok(HRS("r1"), claims(60, ""), g_rsa1), &u,
          "algorithm 'RS256' is not accepted (only unsecured",
          "RS256 with no JWKS configured");
  /* HS256 keyed with the RSA public key: the classic key confusion */
  BIO *b = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(b, g_rsa1);
  char *pem;
  long pemlen = BIO_get_mem_data(b, &pem);
  refuses(tok_any("{\"alg\":\"HS256\",\"kid\":\"r1\"}", claims(60, ""), NULL,
                  pem, (size_t)pemlen),
          &p, "algorithm 'HS256' is not accepted (accepted: RS256, ES256)",
          "HS256 keyed with the RSA public key");
  BIO_free(b);
  static const char *const algs[] = {"RS384", "RS512", "PS256", "ES384",
                                     "ES512", "EdDSA", "",      "HS512"};
  for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++)
    refuses(tok(P("{\"alg\":\"%s\",\"kid\":\"r1\"}", algs[i]), claims(60, ""),
                g_rsa1),
            &p, "is not accepted", P("alg '%s'", algs[i]));
  refuses(tok("{\"alg\":7}", claims(60, ""), g_rsa1), &p, "no \"alg\"",
          "alg a number");
  refuses(tok("{\"typ\":\"JWT\"}", claims(60, ""), g_rsa1), &p, "no \"alg\"",
          "no alg");
  refuses(tok("{\"alg\":\"RS256\",\"typ\":\"JWS\"}", claims(60, ""), g_rsa1),
          &p, "typ", "typ JWS");
  refuses(tok("{\"alg\":\"RS256\",\"typ\":1}", claims(60, ""), g_rsa1), &p,
          "typ", "typ a number");
  refuses(tok("{\"alg\":\"RS256\",\"crit\":[\"exp\"],\"exp\":1}",
              claims(60, ""), g_rsa1),
          &p, "crit", "crit header");
  refuses(tok("{\"alg\":\"RS256\",\"kid\":5}", claims(60, ""), g_rsa1), &p,
          "kid", "kid a number");
  refuses(tok("{\"alg\":\"RS256\",\"kid\":\"\"}", claims(60, ""), g_rsa1), &p,
          "kid", "kid empty");
}

static void test_parts(void) {
  dc_jwt_policy_t p = policy();
  char tb[TOK_MAX];
  char *t = keep(tb, tok(HRS("r1"), claims(60, ""), g_rsa1));
  size_t hlen = (size_t)(strchr(t, '.') - t);
  refuses(cat(t, ".x"), &p, "4 parts", "4 parts");
  refuses(prefix(t, (size_t)(strrchr(t, '.') - t)), &p, "2 parts", "2 parts");
  refuses("", &p, "1 parts", "empty token");
  refuses("..", &p, "header is empty", "three empty parts");
  refuses(ins(t, hlen, "="), &p, "header is not base64url",
          "padding in the header");
  refuses(edit(t, (long)hlen + 3, '+'), &p, "payload is not base64url",
          "'+' in the payload");
  refuses(edit(t, (long)(strrchr(t, '.') - t) + 3, '/'), &p,
          "signature is not base64url", "'/' in the signature");
  refuses(cat(t, "="), &p, "signature is not base64url",
          "padding on the signature");
  /* 256 bytes: the last char carries 2 bits; set an unused one */
  char last = t[strlen(t) - 1];
  refuses(edit(t, -1, last == 'A' ? 'B' : (char)(last + 1)), &p,
          "signature is not base64url", "non-zero unused bits");
  refuses(edit(t, (long)hlen + 2, ' '), &p, "payload is not base64url",
          "a space in the payload");
  /* A decoder that stops at '=' would read these as the token's own
   * payload; one that trusts its input would abort on the header. */
  refuses(ins(t, (size_t)(strrchr(t, '.') - t), "=AAAA"), &p,
          "payload is not base64url", "text after a padded payload");
  refuses("abcde=.e30.", &p, "header is not base64url",
          "a header padded after 5 characters");
}

static void test_malformed(void) {
  dc_jwt_policy_t p = policy();
  char tb[TOK_MAX];
  char *t = keep(tb, tok(HRS("r1"), claims(60, ""), g_rsa1));
  char err[512];
  size_t hlen = (size_t)(strchr(t, '.') - t);
  refuses(tok("not json", claims(60, ""), g_rsa1), &p, "header is not JSON",
          "header not JSON");
  refuses(tok("[1,2]", claims(60, ""), g_rsa1), &p,
          "header is not a JSON object", "header a JSON array");
  refuses(tok(HRS("r1"), "not json", g_rsa1), &p, "payload is not JSON",
          "payload not JSON");
  refuses(tok(HRS("r1"), "\"alice\"", g_rsa1), &p, "payload is not JSON",
          "payload a JSON string");
  refuses(tok(HRS("r1"), "[]", g_rsa1), &p, "payload is not a JSON object",
          "payload a JSON array");
  refuses(tok("{\"alg\":\"RS256\",\"alg\":\"none\"}", claims(60, ""), g_rsa1),
          &p, "duplicate", "duplicate alg in the header");
  refuses(tok(HRS("r1"),
              P("{\"sub\":\"alice\",\"sub\":\"admin\",\"exp\":%lld," ISS "}",
                NOW + 60),
              g_rsa1),
          &p, "duplicate", "duplicate sub in the payload");
  refuses(tok(HRS("r1"), P("{\"sub\":\"a\",\"exp\":%lld," ISS "} x", NOW + 60),
              g_rsa1),
          &p, "payload is not JSON", "payload with trailing text");
  char *big = malloc(9000);
  memset(big, 'a', 8999);
  big[8999] = '\0';
  refuses(tok(HRS("r1"), claims(60, P(",\"pad\":\"%s\"", big)), g_rsa1), &p,
          "too long", "a token over 8192 bytes");
  free(big);
  ok(dc_jwt_validate(NULL, 0, &p, &g_res, err, sizeof(err)) == -1,
     "NULL token refused");
  ok(dc_jwt_validate(t, strlen(t), NULL, &g_res, err, sizeof(err)) == -1,
     "NULL policy refused");
  ok(dc_jwt_validate(t, strlen(t), &p, NULL, err, sizeof(err)) == -1,
     "NULL result refused");
  char tiny[8];
  memset(tiny, 'x', sizeof(tiny));
  ok(dc_jwt_validate("a.b", 3, &p, &g_res, tiny, sizeof(tiny)) == -1 &&
         strlen(tiny) == 7,
     "a small errstr is cut, terminated");
  ok(dc_jwt_validate("a.b", 3, &p, &g_res, NULL, 0) == -1, "errstr NULL");
  ok(dc_jwt_validate(t, hlen, &p, &g_res, err, sizeof(err)) == -1,
     "len bounds the token");
}

/* ---- mutations --------------------------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* One to three random edits of in (set, flip, delete, insert, cut). */
static size_t mutate(const char *in, size_t n, char *out, uint64_t *s) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/";
  memcpy(out, in, n);
  for (int k = (int)(rnd(s) % 3); k >= 0 && n; k--) {
    size_t pos = rnd(s) % n;
    switch (rnd(s) % 6) {
    case 0:
      out[pos] = a[rnd(s) % (sizeof(a) - 1)];
      break;
    case 1:
      out[pos] = (char)rnd(s);
      break;
    case 2:
      out[pos] ^= (char)(1 << rnd(s) % 8);
      break;
    case 3:
      memmove(out + pos, out + pos + 1, n - pos - 1);
      n--;
      break;
    case 4:
      memmove(out + pos + 1, out + pos, n - pos);
      out[pos] = a[rnd(s) % (sizeof(a) - 1)];
      n++;
      break;
    default:
      n = pos;
      break;
    }
  }
  return n;
}

static void fuzz(const char *name, const char *t, const dc_jwt_policy_t *p) {
  size_t n = strlen(t), changed_ok = 0, silent = 0, same = 0, sig = 0;
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  char *m = malloc(n + 8);
  for (int i = 0; i < 10000; i++) {
    size_t mn = mutate(t, n, m, &seed);
    char *exact = malloc(mn ? mn : 1); /* no terminator: ASan sees overreads */
    memcpy(exact, m, mn);
    char err[256] = "";
    dc_jwt_result_t r;
    int rc = dc_jwt_validate(exact, mn, p, &r, err, sizeof(err));
    bool unchanged = mn == n && !memcmp(m, t, n);
    same += unchanged;
    if (unchanged) {
      if (rc != 0)
        silent++;
    } else if (rc == 0) {
      if (changed_ok++ < 3)
        diag("  validated a changed token: %.*s", (int)mn, m);
    } else if (!err[0]) {
      silent++;
    }
    sig += strstr(err, "signature does not verify") != NULL;
    free(exact);
  }
  free(m);
  diag("%s: %zu mutations reached the signature check", name, sig);
  is_int(changed_ok, 0, "%s: 10000 mutations, none validates (%zu unchanged)",
         name, same);
  is_int(silent, 0, "%s: each refusal has a sentence, unchanged ones pass",
         name);
}

static void test_fuzz(void) {
  dc_jwt_policy_t p = policy();
  fuzz("RS256", tok(HRS("r1"), claims(60, ",\"scope\":[\"a\",\"b\"]"), g_rsa1),
       &p);
  fuzz("ES256", tok(HES("e1"), claims(60, ""), g_ec1), &p);
}

static void gen_keys(void) {
  g_rsa1 = EVP_RSA_gen(2048);
  g_rsa2 = EVP_RSA_gen(2048);
  g_rsa_small = EVP_RSA_gen(1024);
  g_ec1 = EVP_EC_gen("P-256");
  if (!g_rsa1 || !g_rsa2 || !g_rsa_small || !g_ec1) {
    printf("Bail out! key generation failed\n");
    exit(1);
  }
}

int main(void) {
  snprintf(g_dir, sizeof(g_dir), "/tmp/test_jwt.XXXXXX");
  if (!mkdtemp(g_dir)) {
    printf("Bail out! mkdtemp failed\n");
    return 1;
  }
  gen_keys();
  test_jwks();
  test_jwks_keys();
  test_jwks_limits();
  if (g_jwks) {
    test_valid();
    test_time();
    test_claims();
    test_principal();
    test_scope();
    test_signature();
    test_key_choice();
    test_algs();
    test_parts();
    test_malformed();
    test_fuzz();
  }
  dc_jwks_free(g_jwks);
  EVP_PKEY_free(g_rsa1);
  EVP_PKEY_free(g_rsa2);
  EVP_PKEY_free(g_rsa_small);
  EVP_PKEY_free(g_ec1);
  for (int i = 0; i < g_nfiles; i++)
    unlink(g_files[i]);
  ok(rmdir(g_dir) == 0, "temp dir removed");
  return done_testing();
}
