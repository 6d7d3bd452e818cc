/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the SASL server shared by its files, from the top:
 * sasl_exchange.c (an exchange: its mechanism, its steps, OAUTHBEARER and
 * GSSAPI), sasl_plain.c (PLAIN), sasl_scram.c (SCRAM) and sasl_user.c (the
 * rule on a user name, and credentials for unknown users).
 */
#ifndef DC_SASL_SERVER_INT_H
#define DC_SASL_SERVER_INT_H
#include "broker/auth/sasl_server.h"
#include "broker/auth/sasl_oauthbearer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { S_START, S_FINAL, S_DONE, S_FAILED };

struct dc_sasl_server {
  bool plain;           /* PLAIN, else SCRAM with `hash` (or OAUTHBEARER) */
  bool oauth;           /* OAUTHBEARER */
  bool gssapi;          /* GSSAPI */
  dc_gssapi_exchange_t *gx;          /* owned; from the first step on */
  dc_gssapi_acceptor_t *acceptor;    /* for the next step only; not owned */
  dc_oauth_exchange_t ox;
  const dc_jwt_policy_t *policy; /* for the next step only; not owned */
  dc_scram_hash_t hash;
  char mech[16];
  int state;
  char *user;           /* owned; authenticated name once DONE */
  bool fake;            /* SCRAM user unknown: fail at the proof */
  dc_scram_cred_t cred; /* copy of the user's credential (or a fake) */
  char *gs2;            /* owned: gs2 header as the client sent it */
  size_t gs2_len;
  char *first_bare;     /* owned: client-first-message-bare */
  size_t first_bare_len;
  char *server_first;   /* owned */
  size_t server_first_len;
  char *nonce;          /* owned: client nonce + server nonce */
  char fixed_snonce[64]; /* test hook; "" = random */
};

#define MSG_PLAIN_FAILED "Authentication failed: Invalid username or password"
/* A name over DC_SASL_MAX_USER names nobody (the credentials file refuses
 * such names), so saying so reveals nothing about who exists. */
#define MSG_USER_TOO_LONG                                                      \
  "Authentication failed: the user name is %zu bytes, over the limit of %d"
#define MSG_AUTHZID                                                            \
  "Authentication failed: Client requested an authorization id that is "       \
  "different from username"

/* ---- sasl_plain.c ---- */

int dc_sasl_plain_step(dc_sasl_server_t *s, const dc_credentials_t *creds,
                       const uint8_t *in, size_t inlen, char *errstr,
                       size_t errstr_size);

/* ---- sasl_scram.c ---- */

int dc_sasl_scram_first(dc_sasl_server_t *s, const dc_credentials_t *creds,
                        const char *m, size_t n, uint8_t **out,
                        size_t *outlen, char *errstr, size_t errstr_size);
int dc_sasl_scram_final(dc_sasl_server_t *s, const char *m, size_t n,
                        uint8_t **out, size_t *outlen, char *errstr,
                        size_t errstr_size);

/* ---- sasl_user.c ---- */

/* The principal rule (common/principal.h) on a user name: 0, or -1 with
 * the sentence for the client. The rule is about the name alone, so
 * saying so reveals nothing about who exists. */
int dc_sasl_name_refused(const char *user, char *errstr, size_t errstr_size);

/* A credential for a user that does not exist, as costly to check as a
 * real one and the same at every ask; -1 when none can be made. */
int dc_sasl_make_fake(dc_sasl_server_t *s, const dc_credentials_t *creds,
                      const char *user, dc_scram_cred_t *out);
#endif
