/* SPDX-License-Identifier: BSD-2-Clause */
/* SASL PLAIN: the password checked against the user's SCRAM credential. */
#include "config.h"
#include "broker/auth/sasl_server_int.h"
#include "common/text.h"

#include <openssl/crypto.h>

#include <stdlib.h>
#include <string.h>

/* The PLAIN message (authzid NUL user NUL password, exactly two NULs)
 * split and judged: a user and a password given, no other authorization
 * id, a user name the rules allow. The user, with *pass and *passlen the
 * password, or NULL with errstr. */
static const char *plain_parse(const uint8_t *in, size_t inlen,
                               const char **pass, size_t *passlen,
                               char *errstr, size_t errstr_size) {
  const char *p = (const char *)in;
  const char *nul1 = inlen ? memchr(p, '\0', inlen) : NULL;
  const char *nul2 =
      nul1 ? memchr(nul1 + 1, '\0', inlen - (size_t)(nul1 + 1 - p)) : NULL;
  if (!nul1 || !nul2 || memchr(nul2 + 1, '\0', inlen - (size_t)(nul2 + 1 - p))) {
    int tokens = 1;
    for (size_t i = 0; i < inlen; i++)
      tokens += p[i] == '\0';
    dc_seterr(errstr, errstr_size,
           "Invalid SASL/PLAIN response: expected 3 tokens, got %d", tokens);
    return NULL;
  }
  const char *authzid = p, *user = nul1 + 1, *pw = nul2 + 1;
  size_t pwlen = inlen - (size_t)(pw - p);
  if (!*user) {
    dc_seterr(errstr, errstr_size, "Authentication failed: username not specified");
    return NULL;
  }
  if (!pwlen) {
    dc_seterr(errstr, errstr_size, "Authentication failed: password not specified");
    return NULL;
  }
  if (*authzid && strcmp(authzid, user)) {
    dc_seterr(errstr, errstr_size, MSG_AUTHZID);
    return NULL;
  }
  if (strlen(user) > DC_SASL_MAX_USER) {
    dc_seterr(errstr, errstr_size, MSG_USER_TOO_LONG, strlen(user),
              DC_SASL_MAX_USER);
    return NULL;
  }
  if (dc_sasl_name_refused(user, errstr, errstr_size))
    return NULL;
  *pass = pw;
  *passlen = pwlen;
  return user;
}

int dc_sasl_plain_step(dc_sasl_server_t *s, const dc_credentials_t *creds,
                       const uint8_t *in, size_t inlen, char *errstr,
                       size_t errstr_size) {
  const char *pass;
  size_t passlen;
  const char *user =
      plain_parse(in, inlen, &pass, &passlen, errstr, errstr_size);
  if (!user)
    return DC_SASL_FAILED;
  const dc_scram_cred_t *c = dc_credentials_find(creds, user, "SCRAM-SHA-256");
  if (!c)
    c = dc_credentials_find(creds, user, "SCRAM-SHA-512");
  dc_scram_cred_t fake;
  bool known = c != NULL;
  if (!known) {
    /* Spend the same PBKDF2 work as for a real user. */
    if (dc_sasl_make_fake(s, creds, user, &fake)) {
      dc_seterr(errstr, errstr_size, MSG_PLAIN_FAILED);
      return DC_SASL_FAILED;
    }
    c = &fake;
  }
  bool match = dc_scram_cred_check(c, pass, passlen);
  OPENSSL_cleanse(&fake, sizeof(fake));
  if (!known || !match) {
    dc_seterr(errstr, errstr_size, MSG_PLAIN_FAILED);
    return DC_SASL_FAILED;
  }
  s->user = strdup(user);
  if (!s->user) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    return DC_SASL_FAILED;
  }
  return DC_SASL_DONE;
}
