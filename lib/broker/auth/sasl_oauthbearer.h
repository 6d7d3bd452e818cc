/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The server side of SASL OAUTHBEARER (RFC 7628, as Kafka speaks it since
 * KIP-255). The client sends one message carrying its token:
 *
 *   client-first = "n," ["a=" authzid] "," %x01 *(key "=" value %x01) %x01
 *                  with the pair  auth=Bearer TOKEN
 *
 * A good token ends the exchange with an empty answer. A bad one is
 * answered {"status":"invalid_token"}; the client then sends a lone %x01
 * and the exchange fails with the reason, so the client sees why. The
 * token is checked by lib/broker/auth/jwt_validate.c against the policy in
 * force when the message arrives. No I/O, no allocation kept past the
 * exchange.
 */
#ifndef DC_SASL_OAUTHBEARER_H
#define DC_SASL_OAUTHBEARER_H
#include "broker/auth/jwt.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dc_oauth_exchange {
  int state;              /* internal */
  char reason[512];       /* why the token was refused, for the last step */
  dc_jwt_result_t token;  /* the validated token's claims once done */
} dc_oauth_exchange_t;

/* One client message. Returns DC_SASL_DONE (token good: *out empty),
 * DC_SASL_CONTINUE (token refused: *out is the error status to send) or
 * DC_SASL_FAILED with errstr. *out is malloc'd, owned by the caller. */
int dc_oauth_step(dc_oauth_exchange_t *x, const dc_jwt_policy_t *policy,
                  const uint8_t *in, size_t inlen, uint8_t **out,
                  size_t *outlen, char *errstr, size_t errstr_size);
#endif
