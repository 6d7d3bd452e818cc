/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client's half of SASL GSSAPI (Kerberos V5), through Cyrus SASL as
 * librdkafka does it, with no security layer (Kafka's QOP auth).
 *
 * Credentials, as librdkafka's sasl.kerberos.* properties mean them:
 *   - a keytab: initial tickets for principal (or the keytab's first
 *     entry) are obtained in-process into a private in-memory ticket cache
 *     and renewed from the keytab when they expire; nothing is written to
 *     disk and no kinit is run;
 *   - no keytab: the default ticket cache (KRB5CCNAME, filled by kinit),
 *     whose principal is whoever ran kinit.
 * The server's principal is service/HOST@REALM, HOST the name the client
 * connected to.
 *
 * Threads: one owner per object. The KDC may be contacted (blocking, with
 * krb5.conf's timeouts) during dc_gssapi_client_step().
 */
#ifndef DC_GSSAPI_CLIENT_H
#define DC_GSSAPI_CLIENT_H
#include <stddef.h>
#include <stdint.h>

typedef struct dc_gssapi_creds dc_gssapi_creds_t;

/* Credentials for principal from keytab, or the default ticket cache when
 * keytab is NULL or "" (principal is then ignored). NULL with errstr when
 * the keytab is unreadable or holds no key for principal. Caller owns. */
dc_gssapi_creds_t *dc_gssapi_creds_new(const char *principal,
                                       const char *keytab, char *errstr,
                                       size_t errstr_size);
void dc_gssapi_creds_destroy(dc_gssapi_creds_t *c);

typedef struct dc_gssapi_client dc_gssapi_client_t;

/* One exchange with service on host, with creds (borrowed; kept alive by
 * the caller until the exchange is destroyed). NULL with errstr. */
dc_gssapi_client_t *dc_gssapi_client_new(const dc_gssapi_creds_t *creds,
                                         const char *service,
                                         const char *host, char *errstr,
                                         size_t errstr_size);
void dc_gssapi_client_destroy(dc_gssapi_client_t *c);

enum { DC_GSSAPI_FAILED = -1, DC_GSSAPI_DONE = 0, DC_GSSAPI_CONTINUE = 1 };

/* The next token to send: the first call takes no input (in NULL); later
 * calls take the server's last token. *out (owned by c, valid until the
 * next call) may be empty. DONE: send *out, and the exchange is over once
 * the server accepts it. FAILED: errstr says why in Kerberos' words, e.g.
 * "... Ticket expired". */
int dc_gssapi_client_step(dc_gssapi_client_t *c, const uint8_t *in,
                          size_t inlen, const uint8_t **out, size_t *outlen,
                          char *errstr, size_t errstr_size);
#endif
