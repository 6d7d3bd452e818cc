/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SASL SCRAM-SHA-256/512, server side.
 *
 * SCRAM (RFC 5802 section 7 grammar, simplified to what we accept):
 *   client-first  = gs2-header client-first-bare
 *   gs2-header    = ("n" / "y") "," ["a=" saslname] ","   ("p=" refused)
 *   client-first-bare = "n=" saslname "," "r=" nonce ["," extensions]
 *   server-first  = "r=" nonce "," "s=" salt "," "i=" iterations
 *   client-final  = "c=" b64(gs2-header) "," "r=" nonce ["," ext] "," "p=" proof
 *   server-final  = "v=" b64(ServerSignature)
 */
#include "config.h"
#include "broker/auth/sasl_server_int.h"
#include "common/text.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool nonce_ok(const char *p, size_t n) {
  if (n == 0 || n > 256)
    return false;
  for (size_t i = 0; i < n; i++)
    if (p[i] < 0x21 || p[i] > 0x7e || p[i] == ',')
      return false;
  return true;
}

static char *memdup0(const char *p, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, p, n);
    d[n] = '\0';
  }
  return d;
}

/* How a parsing step ended: fine, malformed (the caller says so in the
 * one sentence every malformed message gets), or refused with errstr
 * already naming why. */
enum { PARSE_OK, PARSE_MALFORMED, PARSE_REFUSED };

/* The fields of a client-first message, pointing into it. */
typedef struct client_first {
  const char *bare; /* client-first-message-bare; the gs2 header precedes */
  size_t bare_len;
  const char *name; /* the saslname after "n=", still escaped */
  size_t name_len;
  const char *cnonce; /* the client nonce */
  size_t cnonce_len;
} client_first_t;

/* gs2-header: the channel-binding flag and an optional authzid (owned,
 * NULL when absent). Sets cf->bare to what follows. */
static int parse_gs2_header(const dc_sasl_server_t *s, const char *m,
                            size_t n, char **authzid, client_first_t *cf,
                            char *errstr, size_t errstr_size) {
  const char *end = m + n;
  /* gs2-cbind-flag */
  if (n >= 2 && m[0] == 'p' && m[1] == '=') {
    dc_seterr(errstr, errstr_size,
           "Authentication failed: channel binding is not supported "
           "(%s-PLUS is not offered)", s->mech);
    return PARSE_REFUSED;
  }
  if (n < 3 || (m[0] != 'n' && m[0] != 'y') || m[1] != ',')
    return PARSE_MALFORMED;
  /* authzid, up to the second comma */
  const char *az = m + 2;
  const char *c2 = memchr(az, ',', (size_t)(end - az));
  if (!c2)
    return PARSE_MALFORMED;
  if (c2 > az) {
    if (c2 - az < 2 || az[0] != 'a' || az[1] != '=')
      return PARSE_MALFORMED;
    *authzid = dc_scram_unescape_name(az + 2, (size_t)(c2 - az - 2));
    if (!*authzid)
      return PARSE_MALFORMED;
  }
  cf->bare = c2 + 1;
  cf->bare_len = (size_t)(end - cf->bare);
  return PARSE_OK;
}

/* Whether the extensions from e to end ask for Kafka's delegation-token
 * authentication. */
static bool token_requested(const char *e, const char *end) {
  bool token = false;
  while (e <= end) {
    const char *ec = memchr(e, ',', (size_t)(end - e));
    size_t el = (size_t)((ec ? ec : end) - e);
    token |= el == 14 && !memcmp(e, "tokenauth=true", 14);
    e += el + 1;
  }
  return token;
}

/* client-first-message-bare: n=user,r=nonce[,ext...] in that order. */
static int parse_first_bare(client_first_t *cf, char *errstr,
                            size_t errstr_size) {
  const char *bare = cf->bare, *end = cf->bare + cf->bare_len;
  size_t bl = cf->bare_len;
  if (bl >= 2 && bare[0] == 'm' && bare[1] == '=') {
    dc_seterr(errstr, errstr_size,
           "Authentication failed: unsupported mandatory SCRAM extension");
    return PARSE_REFUSED;
  }
  if (bl < 2 || bare[0] != 'n' || bare[1] != '=')
    return PARSE_MALFORMED;
  const char *uend = memchr(bare, ',', bl);
  if (!uend || (size_t)(end - uend) < 3 || uend[1] != 'r' || uend[2] != '=')
    return PARSE_MALFORMED;
  const char *cn = uend + 3;
  const char *cnend = memchr(cn, ',', (size_t)(end - cn));
  if (!cnend) {
    cnend = end;
  } else if (token_requested(cnend + 1, end)) {
    /* Kafka's delegation-token extension: not something we serve. */
    dc_seterr(errstr, errstr_size,
           "Authentication failed: delegation tokens are not supported");
    return PARSE_REFUSED;
  }
  if (!nonce_ok(cn, (size_t)(cnend - cn)))
    return PARSE_MALFORMED;
  cf->name = bare + 2;
  cf->name_len = (size_t)(uend - bare - 2);
  cf->cnonce = cn;
  cf->cnonce_len = (size_t)(cnend - cn);
  return PARSE_OK;
}

/* Parses the whole client-first message; on PARSE_OK *user is the
 * unescaped, non-empty user name (owned), equal to the authzid if the
 * client sent one. */
static int parse_client_first(const dc_sasl_server_t *s, const char *m,
                              size_t n, client_first_t *cf, char **user,
                              char *errstr, size_t errstr_size) {
  char *authzid = NULL;
  *user = NULL;
  int rc = parse_gs2_header(s, m, n, &authzid, cf, errstr, errstr_size);
  if (rc == PARSE_OK)
    rc = parse_first_bare(cf, errstr, errstr_size);
  if (rc == PARSE_OK) {
    *user = dc_scram_unescape_name(cf->name, cf->name_len);
    if (!*user || !**user) {
      rc = PARSE_MALFORMED;
    } else if (authzid && strcmp(authzid, *user)) {
      dc_seterr(errstr, errstr_size, MSG_AUTHZID);
      rc = PARSE_REFUSED;
    } else if (dc_sasl_name_refused(*user, errstr, errstr_size)) {
      rc = PARSE_REFUSED;
    }
    if (rc != PARSE_OK) {
      free(*user);
      *user = NULL;
    }
  }
  free(authzid);
  return rc;
}

/* Copies s->user's credential into s (creds may be replaced before the
 * next step). A user that does not exist, or a name too long to be one,
 * gets a fake credential instead: the exchange goes on the same way and
 * fails only at the proof, so neither the answer's shape nor its cost
 * tells who exists. 0 or DC_SASL_FAILED. */
static int load_credential(dc_sasl_server_t *s, const dc_credentials_t *creds,
                           char *errstr, size_t errstr_size) {
  const dc_scram_cred_t *c = strlen(s->user) <= DC_SASL_MAX_USER
                                 ? dc_credentials_find(creds, s->user, s->mech)
                                 : NULL;
  if (c) {
    s->cred = *c;
    return 0;
  }
  s->fake = true;
  if (dc_sasl_make_fake(s, creds, s->user, &s->cred)) {
    dc_seterr(errstr, errstr_size, "Authentication failed: internal error");
    return DC_SASL_FAILED;
  }
  return 0;
}

/* Keeps what the final step checks and signs (the gs2 header, the
 * client-first-bare and the combined nonce) and answers server-first:
 * r=client+server nonce,s=salt,i=iterations. */
static int send_server_first(dc_sasl_server_t *s, const char *m,
                             const client_first_t *cf, uint8_t **out,
                             size_t *outlen, char *errstr,
                             size_t errstr_size) {
  char snonce[65];
  if (s->fixed_snonce[0])
    snprintf(snonce, sizeof(snonce), "%s", s->fixed_snonce);
  else if (dc_scram_nonce(snonce, 32)) {
    dc_seterr(errstr, errstr_size, "Authentication failed: internal error");
    return DC_SASL_FAILED;
  }
  size_t gl = (size_t)(cf->bare - m), cnl = cf->cnonce_len,
         snl = strlen(snonce);
  char *salt = dc_b64_encode(s->cred.salt, s->cred.salt_len);
  s->nonce = malloc(cnl + snl + 1);
  s->gs2 = memdup0(m, gl);
  s->first_bare = memdup0(cf->bare, cf->bare_len);
  size_t sfl = 2 + cnl + snl + 3 + (salt ? strlen(salt) : 0) + 3 + 12;
  s->server_first = malloc(sfl + 1);
  if (!salt || !s->nonce || !s->gs2 || !s->first_bare || !s->server_first) {
    free(salt);
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    return DC_SASL_FAILED;
  }
  s->gs2_len = gl;
  s->first_bare_len = cf->bare_len;
  memcpy(s->nonce, cf->cnonce, cnl);
  memcpy(s->nonce + cnl, snonce, snl + 1);
  s->server_first_len =
      (size_t)snprintf(s->server_first, sfl + 1, "r=%s,s=%s,i=%d", s->nonce,
                       salt, s->cred.iterations);
  free(salt);
  *out = (uint8_t *)memdup0(s->server_first, s->server_first_len);
  if (!*out) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    return DC_SASL_FAILED;
  }
  *outlen = s->server_first_len;
  return DC_SASL_CONTINUE;
}

int dc_sasl_scram_first(dc_sasl_server_t *s, const dc_credentials_t *creds,
                        const char *m, size_t n, uint8_t **out,
                        size_t *outlen, char *errstr, size_t errstr_size) {
  client_first_t cf;
  char *user;
  int rc = parse_client_first(s, m, n, &cf, &user, errstr, errstr_size);
  if (rc == PARSE_MALFORMED)
    dc_seterr(errstr, errstr_size,
           "Authentication failed: malformed %s client-first message",
           s->mech);
  if (rc != PARSE_OK)
    return DC_SASL_FAILED;
  s->user = user;
  if (load_credential(s, creds, errstr, errstr_size))
    return DC_SASL_FAILED;
  return send_server_first(s, m, &cf, out, outlen, errstr, errstr_size);
}

/* ---- SCRAM client-final -------------------------------------------------- */

/* Finds the proof, the last attribute: everything before it (wl bytes,
 * client-final-without-proof) is signed. False when malformed. */
static bool split_client_final(const char *m, size_t n, size_t *wl,
                               const char **proof, size_t *proofl) {
  const char *end = m + n;
  const char *pp = NULL;
  for (const char *q = m; q + 3 <= end; q++)
    if (q[0] == ',' && q[1] == 'p' && q[2] == '=')
      pp = q;
  if (!pp || n < 2 || m[0] != 'c' || m[1] != '=')
    return false;
  *wl = (size_t)(pp - m);
  *proof = pp + 3;
  *proofl = (size_t)(end - *proof);
  return !memchr(*proof, ',', *proofl);
}

/* Whether c= carries exactly the gs2 header of the client-first message. */
static bool channel_binding_matches(const dc_sasl_server_t *s, const char *m,
                                    size_t wl) {
  size_t cl;
  const char *cb = dc_scram_attr(m, wl, 'c', &cl);
  /* Room for the gs2 header the client sent (its authzid may be long) and
   * one byte more, so a longer decoding fails instead of being cut. */
  uint8_t *gs2 = malloc(s->gs2_len + 1);
  long gl = gs2 && cb == m + 2
                ? dc_b64_decode(cb, cl, gs2, s->gs2_len + 1)
                : -1;
  bool same = gl >= 0 && (size_t)gl == s->gs2_len &&
              !memcmp(gs2, s->gs2, s->gs2_len);
  free(gs2);
  return same;
}

/* Kafka only checks that the final nonce ENDS with the server-first
 * nonce, and librdkafka 2.0.2 relies on it: it sends client nonce + the
 * whole server-first nonce (rdkafka_sasl_scram.c). The proof signs the
 * message as sent, so accepting the longer form is safe. */
static bool final_nonce_matches(const dc_sasl_server_t *s, const char *m,
                                size_t wl) {
  size_t rl;
  const char *r = dc_scram_attr(m, wl, 'r', &rl);
  size_t nl = strlen(s->nonce);
  return r && rl >= nl && !memcmp(r + (rl - nl), s->nonce, nl);
}

/* AuthMessage = client-first-bare "," server-first "," without-proof;
 * malloc'd (*al bytes), NULL on OOM. */
static char *auth_message(const dc_sasl_server_t *s, const char *m, size_t wl,
                          size_t *al) {
  *al = s->first_bare_len + 1 + s->server_first_len + 1 + wl;
  char *auth = malloc(*al);
  if (!auth)
    return NULL;
  memcpy(auth, s->first_bare, s->first_bare_len);
  auth[s->first_bare_len] = ',';
  memcpy(auth + s->first_bare_len + 1, s->server_first, s->server_first_len);
  auth[s->first_bare_len + 1 + s->server_first_len] = ',';
  memcpy(auth + s->first_bare_len + 2 + s->server_first_len, m, wl);
  return auth;
}

/* Checks the client proof (turned into the ClientKey in place) against
 * the stored key, and computes the ServerSignature into ssig. The same
 * work is done for a fake credential. 0 when it matches, 1 when not, -1
 * on OOM. */
static int check_proof(const dc_sasl_server_t *s, const char *m, size_t wl,
                       uint8_t *cproof, uint8_t *ssig) {
  size_t al, dl = s->cred.key_len;
  char *auth = auth_message(s, m, wl, &al);
  if (!auth)
    return -1;
  uint8_t sig[DC_SCRAM_MAX_DIGEST], stored[DC_SCRAM_MAX_DIGEST];
  int bad = 1;
  if (!dc_scram_hmac(s->hash, s->cred.stored_key, dl, auth, al, sig) &&
      !dc_scram_hmac(s->hash, s->cred.server_key, dl, auth, al, ssig)) {
    for (size_t i = 0; i < dl; i++)
      cproof[i] ^= sig[i]; /* now the ClientKey */
    if (!dc_scram_digest(s->hash, cproof, dl, stored))
      bad = CRYPTO_memcmp(stored, s->cred.stored_key, dl) != 0;
  }
  free(auth);
  return bad;
}

/* server-final = "v=" b64(ServerSignature). */
static int send_server_final(const dc_sasl_server_t *s, const uint8_t *ssig,
                             uint8_t **out, size_t *outlen, char *errstr,
                             size_t errstr_size) {
  char *v = dc_b64_encode(ssig, s->cred.key_len);
  size_t ol = v ? 2 + strlen(v) : 0;
  char *o = v ? malloc(ol + 1) : NULL;
  if (!o) {
    free(v);
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    return DC_SASL_FAILED;
  }
  snprintf(o, ol + 1, "v=%s", v);
  free(v);
  *out = (uint8_t *)o;
  *outlen = ol;
  return DC_SASL_DONE;
}

int dc_sasl_scram_final(dc_sasl_server_t *s, const char *m, size_t n,
                        uint8_t **out, size_t *outlen, char *errstr,
                        size_t errstr_size) {
  size_t wl, proofl;
  const char *proof;
  if (!split_client_final(m, n, &wl, &proof, &proofl))
    goto malformed;
  if (!channel_binding_matches(s, m, wl)) {
    dc_seterr(errstr, errstr_size,
           "Authentication failed: channel binding data does not match the "
           "%s client-first message", s->mech);
    return DC_SASL_FAILED;
  }
  if (!final_nonce_matches(s, m, wl)) {
    dc_seterr(errstr, errstr_size, "Authentication failed: Invalid %s nonce",
           s->mech);
    return DC_SASL_FAILED;
  }
  uint8_t cproof[DC_SCRAM_MAX_DIGEST], ssig[DC_SCRAM_MAX_DIGEST];
  if (dc_b64_decode(proof, proofl, cproof, sizeof(cproof)) !=
      (long)s->cred.key_len)
    goto malformed;
  int bad = check_proof(s, m, wl, cproof, ssig);
  OPENSSL_cleanse(cproof, sizeof(cproof));
  if (bad < 0) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    return DC_SASL_FAILED;
  }
  /* A name too long to be anyone's says so, after the same work as for
   * any other: it reveals nothing about who exists. */
  if (s->fake && strlen(s->user) > DC_SASL_MAX_USER) {
    dc_seterr(errstr, errstr_size, MSG_USER_TOO_LONG, strlen(s->user),
              DC_SASL_MAX_USER);
    return DC_SASL_FAILED;
  }
  if (bad || s->fake) {
    dc_seterr(errstr, errstr_size,
           "Authentication failed during authentication due to invalid "
           "credentials with SASL mechanism %s", s->mech);
    return DC_SASL_FAILED;
  }
  return send_server_final(s, ssig, out, outlen, errstr, errstr_size);

malformed:
  dc_seterr(errstr, errstr_size,
         "Authentication failed: malformed %s client-final message", s->mech);
  return DC_SASL_FAILED;
}
