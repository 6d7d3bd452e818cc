/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The cost of checking one OAUTHBEARER token (lib/broker/auth/jwt.h) on one
 * core: an RS256 (RSA-2048) and an ES256 (P-256) token, made here, are
 * validated again and again against a JWKS file holding both keys.
 * Prints, per algorithm, the median of 5 rounds in microseconds of CPU
 * per token.
 *
 *   bench/jwt_verify [TOKENS_PER_ROUND]   (default 2000)
 */
#include "broker/auth/jwt.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5
#define NOW 1796119200LL

static size_t b64url(const unsigned char *in, size_t n, char *out) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 |
                 (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
                 (i + 2 < n ? in[i + 2] : 0);
    size_t chars = n - i >= 3 ? 4 : n - i + 1;
    for (size_t c = 0; c < chars; c++)
      out[o++] = a[(v >> (18 - 6 * c)) & 63];
  }
  out[o] = '\0';
  return o;
}

static size_t b64url_bn(const BIGNUM *b, size_t pad, char *out) {
  unsigned char buf[600];
  size_t n = pad ? (size_t)BN_bn2binpad(b, buf, (int)pad)
                 : (size_t)BN_bn2bin(b, buf);
  return b64url(buf, n, out);
}

/* header.payload.signature signed with key; ES256 as r||s. */
static void sign(EVP_PKEY *key, const char *hdr, char *out) {
  char pl[200];
  unsigned char sig[600], rs[64];
  size_t sl = sizeof(sig);
  snprintf(pl, sizeof(pl), "{\"sub\":\"alice\",\"exp\":%lld}", NOW + 3600);
  size_t o = b64url((const unsigned char *)hdr, strlen(hdr), out);
  out[o++] = '.';
  o += b64url((const unsigned char *)pl, strlen(pl), out + o);
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (!md || EVP_DigestSignInit_ex(md, NULL, "SHA256", NULL, NULL, key, NULL) != 1 ||
      EVP_DigestSign(md, sig, &sl, (unsigned char *)out, o) != 1) {
    fprintf(stderr, "signing failed\n");
    exit(1);
  }
  EVP_MD_CTX_free(md);
  out[o++] = '.';
  if (EVP_PKEY_is_a(key, "EC")) {
    const unsigned char *p = sig;
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)sl);
    BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + 32, 32);
    ECDSA_SIG_free(es);
    b64url(rs, 64, out + o);
  } else {
    b64url(sig, sl, out + o);
  }
}

/* A JWKS file with both public keys; its path in path. */
static void write_jwks(EVP_PKEY *rsa, EVP_PKEY *ec, char *path) {
  BIGNUM *n = NULL, *e = NULL, *x = NULL, *y = NULL;
  char ns[400], es[16], xs[48], ys[48];
  EVP_PKEY_get_bn_param(rsa, OSSL_PKEY_PARAM_RSA_N, &n);
  EVP_PKEY_get_bn_param(rsa, OSSL_PKEY_PARAM_RSA_E, &e);
  EVP_PKEY_get_bn_param(ec, OSSL_PKEY_PARAM_EC_PUB_X, &x);
  EVP_PKEY_get_bn_param(ec, OSSL_PKEY_PARAM_EC_PUB_Y, &y);
  b64url_bn(n, 0, ns);
  b64url_bn(e, 0, es);
  b64url_bn(x, 32, xs);
  b64url_bn(y, 32, ys);
  BN_free(n), BN_free(e), BN_free(x), BN_free(y);
  strcpy(path, "/tmp/jwt_verify.XXXXXX");
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f || fprintf(f,
                    "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"r\",\"n\":\"%s\","
                    "\"e\":\"%s\"},{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":"
                    "\"e\",\"x\":\"%s\",\"y\":\"%s\"}]}",
                    ns, es, xs, ys) < 0 || fclose(f)) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
}

static double cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median over ROUNDS of the CPU microseconds per validation. */
static double measure(const char *tok, const dc_jwt_policy_t *p, long n) {
  double per[ROUNDS];
  dc_jwt_result_t r;
  char err[256];
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = cpu_us();
    for (long i = 0; i < n; i++)
      if (dc_jwt_validate(tok, strlen(tok), p, &r, err, sizeof(err))) {
        fprintf(stderr, "token refused: %s\n", err);
        exit(1);
      }
    per[k] = (cpu_us() - t0) / (double)n;
  }
  qsort(per, ROUNDS, sizeof(per[0]), cmp);
  return per[ROUNDS / 2];
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000;
  EVP_PKEY *rsa = EVP_RSA_gen(2048), *ec = EVP_EC_gen("P-256");
  char path[32], err[256], rs[1024], es[512];
  if (n < 1 || !rsa || !ec) {
    fprintf(stderr, "usage: %s [TOKENS_PER_ROUND]\n", argv[0]);
    return 2;
  }
  write_jwks(rsa, ec, path);
  dc_jwks_t *jwks = dc_jwks_load(path, err, sizeof(err));
  unlink(path);
  if (!jwks) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  sign(rsa, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"r\"}", rs);
  sign(ec, "{\"alg\":\"ES256\",\"typ\":\"JWT\",\"kid\":\"e\"}", es);
  dc_jwt_policy_t p = {.jwks = jwks, .clock_skew_s = 30, .now_s = NOW};
  printf("RS256 (RSA-2048): %.1f us CPU per token\n", measure(rs, &p, n));
  printf("ES256 (P-256):    %.1f us CPU per token\n", measure(es, &p, n));
  dc_jwks_free(jwks);
  EVP_PKEY_free(rsa);
  EVP_PKEY_free(ec);
  return 0;
}
