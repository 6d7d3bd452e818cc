/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/loadgen's connection set-up exchanges: SASL authentication
 * (SaslHandshake v1, then SaslAuthenticate v1 round trips for PLAIN,
 * SCRAM-SHA-256 or SCRAM-SHA-512, as librdkafka sends them) and one
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

#include <stddef.h>
#include <stdint.h>

typedef struct lg_sasl_conf {
  const char *mechanism;       /* PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 */
  const char *user, *password; /* borrowed */
} lg_sasl_conf_t;

/* Checks the mechanism name and that user and password are given. */
int lg_sasl_conf_check(const lg_sasl_conf_t *c, char *errstr,
                       size_t errstr_size);

/* Authenticates the connection (fd, and ssl when not NULL; both borrowed)
 * before deadline_ns (CLOCK_MONOTONIC). Fails on any error code, a bad
 * server signature (SCRAM) or a broken connection. */
int lg_sasl_authenticate(int fd, SSL *ssl, const lg_sasl_conf_t *c,
                         uint64_t deadline_ns, char *errstr,
                         size_t errstr_size);

/* One ApiVersions v3 round trip; fails unless the answer has error 0 and
 * lists DescribeConfigs. */
int lg_apiversions(int fd, SSL *ssl, uint64_t deadline_ns, char *errstr,
                   size_t errstr_size);

#endif
