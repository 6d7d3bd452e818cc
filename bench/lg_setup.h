/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/loadgen's connection set-up exchanges: SASL authentication
 * (SaslHandshake v1, then SaslAuthenticate v1 round trips for PLAIN,
 * SCRAM-SHA-256, SCRAM-SHA-512 or GSSAPI, as librdkafka sends them) and one
 * ApiVersions v3 round trip, each a blocking request/response over a
 * connected non-blocking socket, plain or TLS, waiting with poll().
 *
 * They run before the load starts (or, in --setup mode, are what is being
 * measured), so simplicity beats overlap here.
 *
 * Threads: one thread. Errors: -1 with a sentence in errstr.
 */
#ifndef LG_SETUP_H
#define LG_SETUP_H

#include <openssl/ssl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dc_gssapi_creds;

typedef struct lg_sasl_conf {
  const char *mechanism;       /* PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI */
  const char *user, *password; /* borrowed; GSSAPI: principal, keytab */
  /* GSSAPI: the server is krb_service/krb_host; the credentials are taken
   * once (lg_sasl_gssapi_creds) and shared by every connection. */
  const char *krb_service, *krb_host;
  struct dc_gssapi_creds *krb_creds;
  /* SCRAM: the client-final message carries a made-up proof instead of
   * one derived from the password (no PBKDF2 on this side): a log-in
   * attempt as cheap as an attacker's, which the server must refuse. */
  bool scram_forged_proof;
} lg_sasl_conf_t;

/* GSSAPI: c->krb_creds from the keytab c->password for principal c->user
 * (or the ticket cache without a keytab). -1 with errstr. */
int lg_sasl_gssapi_creds(lg_sasl_conf_t *c, char *errstr, size_t errstr_size);

/* Checks the mechanism name and that user and password are given (GSSAPI
 * needs neither). */
int lg_sasl_conf_check(const lg_sasl_conf_t *c, char *errstr,
                       size_t errstr_size);

/* Authenticates the connection (fd, and ssl when not NULL; both borrowed)
 * before deadline_ns (CLOCK_MONOTONIC). Fails on any error code, a bad
 * server signature (SCRAM) or a broken connection; when the server
 * answered with an error code, *server_error (nullable) gets it, else 0. */
int lg_sasl_authenticate(int fd, SSL *ssl, const lg_sasl_conf_t *c,
                         uint64_t deadline_ns, int16_t *server_error,
                         char *errstr, size_t errstr_size);

/* One ApiVersions v3 round trip; fails unless the answer has error 0 and
 * lists DescribeConfigs. */
int lg_apiversions(int fd, SSL *ssl, uint64_t deadline_ns, char *errstr,
                   size_t errstr_size);

#endif
