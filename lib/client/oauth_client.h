/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client's half of SASL OAUTHBEARER: the client-first message that
 * carries a token, and unsecured tokens made from librdkafka's
 * sasl.oauthbearer.config ("principal=NAME [lifeSeconds=N] [scope=S]
 * [scopeClaimName=C] [principalClaimName=C]"), which only a server that
 * accepts unsigned tokens takes (tests), and tokens read from a file.
 * No state; any thread.
 */
#ifndef DC_OAUTH_CLIENT_H
#define DC_OAUTH_CLIENT_H
#include <stddef.h>
#include <stdint.h>

/* "n,,\x01auth=Bearer TOKEN\x01\x01", malloc'd (caller wipes and frees),
 * its length in *len; NULL when out of memory. */
char *dc_oauth_client_first(const char *token, size_t *len);

/* An unsigned JWT ({"alg":"none"}) for config, issued at now_s: sub (or
 * principalClaimName) = principal, iat, exp = now_s + lifeSeconds (default
 * 3600) and scope (space-separated) when given. malloc'd, or NULL with
 * errstr naming what is wrong in config. */
char *dc_oauth_unsecured_token(const char *config, int64_t now_s,
                               char *errstr, size_t errstr_size);

/* The one token of a token file (what librdkafka's
 * sasl.oauthbearer.token.endpoint.url=file://PATH names; blanks around
 * it dropped), at most DC_OAUTH_TOKEN_MAX bytes. malloc'd (caller wipes
 * and frees), or NULL with errstr: "cannot read the token file P: ...",
 * "the token file P is over 8192 bytes", "the token file P does not
 * hold one token". */
#define DC_OAUTH_TOKEN_MAX 8192
char *dc_oauth_token_file_read(const char *path, char *errstr,
                               size_t errstr_size);
#endif
