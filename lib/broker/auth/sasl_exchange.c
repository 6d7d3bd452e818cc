/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Server side of a SASL exchange (see sasl_server.h): the mechanism, its
 * steps, OAUTHBEARER's and GSSAPI's; PLAIN is in sasl_plain.c, SCRAM in
 * sasl_scram.c, OAUTHBEARER's own exchange in sasl_oauthbearer.c.
 */
#include "broker/auth/sasl_server_int.h"
#include "common/text.h"

#include <openssl/crypto.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool dc_sasl_mechanism_known(const char *mech) {
  dc_scram_hash_t h;
  return mech && (!strcmp(mech, "PLAIN") || !strcmp(mech, "OAUTHBEARER") ||
                  !strcmp(mech, "GSSAPI") || dc_scram_hash_from_name(mech, &h));
}

dc_sasl_server_t *dc_sasl_server_new(const char *mechanism) {
  if (!dc_sasl_mechanism_known(mechanism))
    return NULL;
  dc_sasl_server_t *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->plain = !strcmp(mechanism, "PLAIN");
  s->oauth = !strcmp(mechanism, "OAUTHBEARER");
  s->gssapi = !strcmp(mechanism, "GSSAPI");
  if (!s->plain && !s->oauth && !s->gssapi)
    dc_scram_hash_from_name(mechanism, &s->hash);
  snprintf(s->mech, sizeof(s->mech), "%s", mechanism);
  return s;
}

void dc_sasl_server_destroy(dc_sasl_server_t *s) {
  if (!s)
    return;
  free(s->user);
  free(s->gs2);
  free(s->first_bare);
  free(s->server_first);
  free(s->nonce);
  dc_gssapi_exchange_destroy(s->gx);
  OPENSSL_cleanse(s, sizeof(*s));
  free(s);
}

const char *dc_sasl_server_user(const dc_sasl_server_t *s) {
  return s->state == S_DONE ? s->user : NULL;
}

const char *dc_sasl_server_mechanism(const dc_sasl_server_t *s) {
  return s->mech;
}

int dc_sasl_server_set_nonce(dc_sasl_server_t *s, const char *nonce) {
  if (!nonce || strlen(nonce) >= sizeof(s->fixed_snonce) || strchr(nonce, ','))
    return -1;
  strcpy(s->fixed_snonce, nonce);
  return 0;
}


/* OAUTHBEARER: the token's principal becomes the user once it is good. */
static int oauth_step(dc_sasl_server_t *s, const uint8_t *in, size_t inlen,
                      uint8_t **out, size_t *outlen, char *errstr,
                      size_t errstr_size) {
  int rc = dc_oauth_step(&s->ox, s->policy, in, inlen, out, outlen, errstr,
                         errstr_size);
  s->policy = NULL;
  if (rc == DC_SASL_DONE && !(s->user = strdup(s->ox.token.principal))) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    rc = DC_SASL_FAILED;
  }
  return rc;
}

/* GSSAPI: the exchange starts under the acceptor in force at its first
 * token and keeps it to the end; the short name becomes the user. */
static int gssapi_step(dc_sasl_server_t *s, const uint8_t *in, size_t inlen,
                       uint8_t **out, size_t *outlen, char *errstr,
                       size_t errstr_size) {
  dc_gssapi_acceptor_t *a = s->acceptor;
  s->acceptor = NULL;
  if (!s->gx && !a) {
    dc_seterr(errstr, errstr_size,
              "Authentication failed: GSSAPI is not configured");
    return DC_SASL_FAILED;
  }
  if (!s->gx && !(s->gx = dc_gssapi_exchange_new(a))) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    return DC_SASL_FAILED;
  }
  int rc = dc_gssapi_step(s->gx, in, inlen, out, outlen, errstr, errstr_size);
  if (rc == DC_SASL_DONE &&
      !(s->user = strdup(dc_gssapi_exchange_user(s->gx)))) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    rc = DC_SASL_FAILED;
  }
  return rc;
}

void dc_sasl_server_set_gssapi(dc_sasl_server_t *s,
                               dc_gssapi_acceptor_t *acceptor) {
  s->acceptor = acceptor;
}

const char *dc_sasl_server_kerberos_principal(const dc_sasl_server_t *s) {
  return s->gx && s->state == S_DONE ? dc_gssapi_exchange_principal(s->gx)
                                     : NULL;
}

void dc_sasl_server_set_oauth(dc_sasl_server_t *s,
                              const dc_jwt_policy_t *policy) {
  s->policy = policy;
}

int64_t dc_sasl_server_expires_s(const dc_sasl_server_t *s) {
  return s->oauth && s->state == S_DONE ? s->ox.token.expires_s : 0;
}

int dc_sasl_server_step(dc_sasl_server_t *s, const dc_credentials_t *creds,
                        const uint8_t *in, size_t inlen, uint8_t **out,
                        size_t *outlen, char *errstr, size_t errstr_size) {
  *out = NULL;
  *outlen = 0;
  if (s->state == S_DONE || s->state == S_FAILED) {
    dc_seterr(errstr, errstr_size,
           "Authentication failed: the %s exchange is already over", s->mech);
    s->state = S_FAILED;
    return DC_SASL_FAILED;
  }
  int rc;
  if (s->gssapi) {
    rc = gssapi_step(s, in, inlen, out, outlen, errstr, errstr_size);
  } else if (inlen > DC_SASL_MAX_TOKEN) {
    dc_seterr(errstr, errstr_size,
           "Authentication failed: %s token of %zu bytes exceeds %d", s->mech,
           inlen, DC_SASL_MAX_TOKEN);
    rc = DC_SASL_FAILED;
  } else if (!in && inlen) {
    dc_seterr(errstr, errstr_size, "Authentication failed: no token");
    rc = DC_SASL_FAILED;
  } else if (s->plain) {
    rc = dc_sasl_plain_step(s, creds, in ? in : (const uint8_t *)"", inlen,
                            errstr, errstr_size);
  } else if (s->oauth) {
    rc = oauth_step(s, in, inlen, out, outlen, errstr, errstr_size);
  } else if (memchr(in ? in : (const uint8_t *)"", '\0', inlen)) {
    dc_seterr(errstr, errstr_size,
           "Authentication failed: NUL byte in %s message", s->mech);
    rc = DC_SASL_FAILED;
  } else if (s->state == S_START) {
    rc = dc_sasl_scram_first(s, creds, in ? (const char *)in : "", inlen, out,
                             outlen, errstr, errstr_size);
  } else {
    rc = dc_sasl_scram_final(s, in ? (const char *)in : "", inlen, out,
                             outlen, errstr, errstr_size);
  }
  /* Every mechanism's name passes here; the ones above said why first. */
  if (rc == DC_SASL_DONE &&
      dc_sasl_name_refused(s->user, errstr, errstr_size))
    rc = DC_SASL_FAILED;
  if (rc == DC_SASL_FAILED) {
    free(*out);
    *out = NULL;
    *outlen = 0;
    s->state = S_FAILED;
  } else {
    s->state = rc == DC_SASL_DONE ? S_DONE : S_FINAL;
  }
  return rc;
}
