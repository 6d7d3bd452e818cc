/* SPDX-License-Identifier: BSD-2-Clause */
/* The rule every SASL user name passes, and the credentials an unknown
 * user is checked against so that asking reveals nobody. */
#include "config.h"
#include "broker/auth/sasl_server_int.h"
#include "common/principal.h"
#include "common/text.h"

#include <openssl/rand.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int dc_sasl_name_refused(const char *user, char *errstr, size_t errstr_size) {
  const char *fault = dc_principal_name_fault(user, strlen(user));
  if (!fault)
    return 0;
  dc_seterr(errstr, errstr_size,
            "Authentication failed: the user name %s (a principal's name may "
            "not begin or end with a blank, nor hold a control character)",
            fault);
  return -1;
}

/* Fake credentials for unknown users:
 * Derived from the name with a per-process random key, so asking twice for
 * the same unknown user gives the same salt (as for a real user), and the
 * salt says nothing an outsider can check. */

static uint8_t fake_key[32];
static bool fake_key_ok;
static pthread_once_t fake_once = PTHREAD_ONCE_INIT;

static void fake_key_init(void) {
  fake_key_ok = RAND_bytes(fake_key, sizeof(fake_key)) == 1;
}

int dc_sasl_make_fake(dc_sasl_server_t *s, const dc_credentials_t *creds,
                      const char *user, dc_scram_cred_t *out) {
  pthread_once(&fake_once, fake_key_init);
  if (!fake_key_ok)
    return -1;
  memset(out, 0, sizeof(*out));
  out->hash = s->plain ? DC_SCRAM_SHA256 : s->hash;
  out->iterations = dc_credentials_common_iterations(
      creds, dc_scram_mechanism_name(out->hash));
  out->key_len = dc_scram_digest_len(out->hash);
  out->salt_len = DC_SCRAM_SALT_LEN;
  size_t ul = strlen(user), ml = strlen(s->mech);
  char *msg = malloc(ml + 1 + ul);
  if (!msg)
    return -1;
  memcpy(msg, s->mech, ml);
  msg[ml] = '\0'; /* separator: mechanism names have no NUL */
  memcpy(msg + ml + 1, user, ul);
  int rc = dc_scram_hmac(DC_SCRAM_SHA256, fake_key, sizeof(fake_key), msg,
                         ml + 1 + ul, out->salt);
  free(msg);
  /* Keys no password maps to, as far as anyone can tell. */
  if (!rc && (RAND_bytes(out->stored_key, (int)out->key_len) != 1 ||
              RAND_bytes(out->server_key, (int)out->key_len) != 1))
    rc = -1;
  return rc;
}
