/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One server-side SASL authentication exchange: PLAIN (RFC 4616) and
 * SCRAM-SHA-256/512 (RFC 5802/7677, no channel binding), checked against
 * the hashed credentials file (lib/broker/auth/credentials.h), and OAUTHBEARER
 * (RFC 7628), checked by a token policy (lib/broker/auth/jwt.h), and GSSAPI
 * (Kerberos, lib/broker/auth/sasl_gssapi.h), checked with a keytab. No I/O: the
 * SaslAuthenticate handler feeds client tokens in and sends what comes out.
 *
 * Failure messages are fit to send to the client and never reveal whether
 * a user exists: an unknown SCRAM user gets a fake salt derived from the
 * name and fails at the proof, like a wrong password.
 *
 * Threads: an exchange has one owner (the connection).
 */
#ifndef DC_SASL_SERVER_H
#define DC_SASL_SERVER_H

#include "broker/auth/credentials.h"
#include "broker/auth/jwt.h"
#include "broker/auth/sasl_gssapi.h"
#include "common/entity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
  DC_SASL_FAILED = -1,  /* errstr says why; close after telling the client */
  DC_SASL_DONE = 0,     /* authenticated; send *out (may be empty) */
  DC_SASL_CONTINUE = 1, /* send *out, then expect another client token */
};

/* Longest user name accepted (bytes); longer ones fail authentication. */
#define DC_SASL_MAX_USER DC_ENTITY_PART_MAX
/* Longest client token accepted (GSSAPI: DC_GSSAPI_MAX_TOKEN). */
#define DC_SASL_MAX_TOKEN 8192

/* PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI (exact). */
bool dc_sasl_mechanism_known(const char *mech);

typedef struct dc_sasl_server dc_sasl_server_t;

/* A new exchange for mechanism, or NULL (unknown mechanism, out of
 * memory). Caller owns it. */
dc_sasl_server_t *dc_sasl_server_new(const char *mechanism);
void dc_sasl_server_destroy(dc_sasl_server_t *s);

/* Feeds one client token. creds may be NULL (nobody can log in) and may be
 * a different object on each call (nothing of it is kept). *out is
 * malloc'd and owned by the caller; NULL when *outlen is 0. After DONE or
 * FAILED further steps fail. */
int dc_sasl_server_step(dc_sasl_server_t *s, const dc_credentials_t *creds,
                        const uint8_t *in, size_t inlen, uint8_t **out,
                        size_t *outlen, char *errstr, size_t errstr_size);

/* OAUTHBEARER: the token policy for the next step only (the caller's
 * policy may change between steps, e.g. a reloaded key set). NULL: no
 * token is accepted. */
void dc_sasl_server_set_oauth(dc_sasl_server_t *s,
                              const dc_jwt_policy_t *policy);

/* GSSAPI: the acceptor for the next step only (an exchange keeps the one
 * it started with). NULL: GSSAPI is not configured. */
void dc_sasl_server_set_gssapi(dc_sasl_server_t *s,
                               dc_gssapi_acceptor_t *acceptor);

/* GSSAPI after DONE: the whole Kerberos principal (owned by s), else
 * NULL. */
const char *dc_sasl_server_kerberos_principal(const dc_sasl_server_t *s);

/* OAUTHBEARER after DONE: the token's expiry (seconds since the epoch);
 * 0 for other mechanisms. */
int64_t dc_sasl_server_expires_s(const dc_sasl_server_t *s);

/* Tests only: use nonce as the server nonce (for RFC test vectors) instead
 * of a random one. Call before the first step. Returns 0 or -1. */
int dc_sasl_server_set_nonce(dc_sasl_server_t *s, const char *nonce);

/* The authenticated user name after DONE, else NULL. Owned by s. */
const char *dc_sasl_server_user(const dc_sasl_server_t *s);
/* The mechanism this exchange speaks. Owned by s. */
const char *dc_sasl_server_mechanism(const dc_sasl_server_t *s);

#endif
