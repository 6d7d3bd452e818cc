/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The log-in thread: SASL steps (PLAIN's PBKDF2, GSSAPI, OAUTHBEARER's
 * signature check) run here, one at a time, so that a crowd logging in
 * does not stall the event loop serving connections already in.
 *
 * A job carries everything its step reads: the exchange (owned while in
 * flight), references to the credentials, JWKS and Kerberos acceptor in
 * force when it was queued (a reload meanwhile does not pull them away),
 * and a copy of the token. The loop thread queues a job, is woken through
 * dc_login_fd() when steps are done, and takes the results back; only the
 * loop thread touches a job's connection side (token, auth).
 */
#ifndef DC_BROKER_LOGIN_H
#define DC_BROKER_LOGIN_H

#include "broker/jwt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dc_sasl_server;
struct dc_credentials;
struct dc_gssapi_acceptor;
struct dc_conn_auth;

typedef struct dc_login_job {
  int kind; /* DC_PENDING_LOGIN: first, as in every pending thing */
  /* The step: inputs owned by the job while it is in flight. */
  struct dc_sasl_server *sasl;
  struct dc_credentials *creds;   /* a reference, or NULL */
  dc_jwks_t *jwks;                /* a reference, or NULL */
  dc_jwt_policy_t policy;         /* .jwks is the reference above */
  bool oauth;                     /* policy applies */
  struct dc_gssapi_acceptor *gss; /* a reference, or NULL */
  uint8_t *in;                    /* the client's token, owned */
  size_t inlen;
  /* Its outcome (DC_SASL_*), the reply token (owned) and why it failed. */
  int rc;
  uint8_t *out;
  size_t outlen;
  char why[256];
  /* The connection's side, loop thread only. */
  void *token;                /* the connection's, for the answer */
  struct dc_conn_auth *auth;  /* the connection's; unused once abandoned */
  bool abandoned;             /* the connection closed: drop the answer */
  bool raw;                   /* a bare token frame (SaslHandshake v0) */
  int16_t api_version;        /* SaslAuthenticate's */
  int32_t correlation_id;
  char peer[64];
  char listener[64];
  int64_t due_ms;             /* a failure is answered at this time */
  struct dc_login_job *next;
} dc_login_job_t;

typedef struct dc_login dc_login_t;

/* Starts the thread. NULL with errstr on failure. */
dc_login_t *dc_login_new(char *errstr, size_t errstr_size);
/* Stops the thread (the step running finishes first) and frees every job
 * not taken back. */
void dc_login_destroy(dc_login_t *l);
/* Readable while finished jobs wait to be taken. */
int dc_login_fd(const dc_login_t *l);
/* Queues job (the login thread owns it until dc_login_take_done). */
void dc_login_submit(dc_login_t *l, dc_login_job_t *job);
/* A finished job, oldest first, or NULL. Loop thread. */
dc_login_job_t *dc_login_take_done(dc_login_t *l);
/* Jobs queued or running now. */
size_t dc_login_queued(dc_login_t *l);
/* Frees a job and drops its references (any thread). */
void dc_login_job_free(dc_login_job_t *job);

#endif
