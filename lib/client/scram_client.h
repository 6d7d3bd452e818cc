/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SCRAM-SHA-256/512 client (the Kafka client side of SaslAuthenticate).
 * Ownership: dc_scram_client_new() returns a handle the caller frees with
 * dc_scram_client_destroy(). Threading: one owner.
 */
#ifndef DC_SCRAM_CLIENT_H
#define DC_SCRAM_CLIENT_H
#include "common/scram.h"

/* ---- client -------------------------------------------------------------
 * Usage: new -> first (send) -> final (feed server-first, send result) ->
 * verify (feed server-final). The password is copied and wiped on
 * destroy. nonce NULL = random; a fixed nonce is for test vectors. */
typedef struct dc_scram_client dc_scram_client_t;

dc_scram_client_t *dc_scram_client_new(dc_scram_hash_t h, const char *user,
                                       const char *password, const char *nonce);
void dc_scram_client_destroy(dc_scram_client_t *c);

/* client-first-message "n,,n=USER,r=NONCE". *out malloc'd (caller frees). */
int dc_scram_client_first(dc_scram_client_t *c, char **out, size_t *outlen,
                          char *errstr, size_t errstr_size);
/* Reads server-first "r=..,s=..,i=.." and builds client-final with the
 * proof. *out malloc'd (caller frees). Fails on a malformed message, a
 * nonce that does not extend ours, or iterations outside MIN..MAX. */
int dc_scram_client_final(dc_scram_client_t *c, const uint8_t *server_first,
                          size_t n, char **out, size_t *outlen, char *errstr,
                          size_t errstr_size);
/* Checks server-final "v=SIGNATURE" (or reports "e=ERROR"). */
int dc_scram_client_verify(dc_scram_client_t *c, const uint8_t *server_final,
                           size_t n, char *errstr, size_t errstr_size);

#endif
