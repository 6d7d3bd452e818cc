/* SPDX-License-Identifier: BSD-2-Clause */
/* SASL OAUTHBEARER, the server's half (see sasl_oauthbearer.h). */
#include "broker/auth/sasl_oauthbearer.h"
#include "broker/auth/sasl_server.h"
#include "common/text.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { OX_START, OX_REFUSED, OX_OVER };

#define KVSEP '\x01'
#define STATUS_INVALID "{\"status\":\"invalid_token\"}"

/* The parts of a client-first message that matter here. */
typedef struct client_first {
  const char *authzid; /* NULL when absent; not NUL-terminated */
  size_t authzid_len;
  const char *token; /* not NUL-terminated */
  size_t token_len;
} client_first_t;

/* "n," ["a=" authzid] "," ("y" and "p=" are for channel binding, which
 * OAUTHBEARER over Kafka never uses). Returns the bytes it took, or 0. */
static size_t parse_gs2(const char *m, size_t n, client_first_t *cf) {
  if (n < 3 || m[0] != 'n' || m[1] != ',')
    return 0;
  size_t i = 2;
  if (m[i] == 'a' && i + 1 < n && m[i + 1] == '=') {
    const char *comma = memchr(m + i + 2, ',', n - i - 2);
    if (!comma)
      return 0;
    cf->authzid = m + i + 2;
    cf->authzid_len = (size_t)(comma - cf->authzid);
    i = (size_t)(comma - m);
  }
  return m[i] == ',' ? i + 1 : 0;
}

/* The key=value pairs after the gs2 header: each ends with %x01 and the
 * list ends with one more. Only auth= is read; other keys (extensions)
 * are allowed and ignored. 0, or -1 with why. */
static int parse_pairs(const char *m, size_t n, client_first_t *cf,
                       char *why, size_t why_size) {
  size_t i = 0;
  while (i < n && m[i] != KVSEP) {
    const char *end = memchr(m + i, KVSEP, n - i);
    const char *eq = memchr(m + i, '=', end ? (size_t)(end - m - i) : 0);
    if (!end || !eq || eq == m + i) {
      dc_seterr(why, why_size, "malformed key=value pair in the message");
      return -1;
    }
    size_t klen = (size_t)(eq - m - i);
    if (klen == 4 && !memcmp(m + i, "auth", 4)) {
      const char *v = eq + 1;
      size_t vlen = (size_t)(end - v);
      if (vlen < 7 || strncasecmp(v, "Bearer ", 7)) {
        dc_seterr(why, why_size, "the auth value is not 'Bearer TOKEN'");
        return -1;
      }
      cf->token = v + 7;
      cf->token_len = vlen - 7;
    }
    i = (size_t)(end - m) + 1;
  }
  if (i + 1 != n) {
    dc_seterr(why, why_size, "the message does not end with one %%x01");
    return -1;
  }
  if (!cf->token || !cf->token_len) {
    dc_seterr(why, why_size, "no auth=Bearer token in the message");
    return -1;
  }
  return 0;
}

static int parse_client_first(const char *m, size_t n, client_first_t *cf,
                              char *why, size_t why_size) {
  memset(cf, 0, sizeof(*cf));
  size_t g = parse_gs2(m, n, cf);
  if (!g || g >= n || m[g] != KVSEP) {
    dc_seterr(why, why_size, "malformed GS2 header (expected \"n,,\" or "
                             "\"n,a=ID,\" then %%x01)");
    return -1;
  }
  return parse_pairs(m + g + 1, n - g - 1, cf, why, why_size);
}

/* Validates the token, and an authzid against the principal it names. */
static int check_token(dc_oauth_exchange_t *x, const dc_jwt_policy_t *policy,
                       const client_first_t *cf) {
  char why[400];
  if (dc_jwt_validate(cf->token, cf->token_len, policy, &x->token, why,
                      sizeof(why))) {
    dc_seterr(x->reason, sizeof(x->reason), "invalid token: %s", why);
    return -1;
  }
  if (cf->authzid && (cf->authzid_len != strlen(x->token.principal) ||
                      memcmp(cf->authzid, x->token.principal,
                             cf->authzid_len))) {
    dc_seterr(x->reason, sizeof(x->reason),
              "the authorization id differs from the token's principal "
              "'%s'",
              x->token.principal);
    return -1;
  }
  return 0;
}

static int answer(const char *text, uint8_t **out, size_t *outlen) {
  size_t n = strlen(text);
  *out = n ? malloc(n) : NULL;
  if (n && !*out)
    return -1;
  memcpy(*out, text, n);
  *outlen = n;
  return 0;
}

int dc_oauth_step(dc_oauth_exchange_t *x, const dc_jwt_policy_t *policy,
                  const uint8_t *in, size_t inlen, uint8_t **out,
                  size_t *outlen, char *errstr, size_t errstr_size) {
  const char *m = (const char *)in;
  if (x->state == OX_REFUSED) {
    x->state = OX_OVER;
    dc_seterr(errstr, errstr_size, "Authentication failed: %s", x->reason);
    return DC_SASL_FAILED;
  }
  client_first_t cf;
  char why[256];
  x->state = OX_OVER;
  if (!policy) {
    dc_seterr(errstr, errstr_size,
              "Authentication failed: OAUTHBEARER is not configured");
    return DC_SASL_FAILED;
  }
  if (parse_client_first(m, inlen, &cf, why, sizeof(why))) {
    dc_seterr(errstr, errstr_size, "Authentication failed: %s", why);
    return DC_SASL_FAILED;
  }
  if (check_token(x, policy, &cf)) {
    if (answer(STATUS_INVALID, out, outlen)) {
      dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
      return DC_SASL_FAILED;
    }
    x->state = OX_REFUSED;
    return DC_SASL_CONTINUE;
  }
  return DC_SASL_DONE;
}
