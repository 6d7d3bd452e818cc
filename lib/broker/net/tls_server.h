/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Server-side TLS material for dynconfd's SSL and SASL_SSL listeners: one
 * reloadable context built from PEM certificate, key and CA files, and the
 * principal of a peer certificate (taken whole while it is verified).
 *
 * Reload: dc_tls_ctx_reload() builds a fresh SSL_CTX from the same
 * paths and swaps it in only when it is whole (certificate and key parse and
 * match, CA loads); otherwise the old context stays and errstr says why.
 * Connections already open keep the SSL_CTX they were created from
 * (OpenSSL reference-counts it), so they are not disturbed.
 *
 * Threading: a dc_tls_ctx_t belongs to the event-loop thread.
 */
#ifndef DC_TLS_SERVER_H
#define DC_TLS_SERVER_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

/* Like Kafka's ssl.client.auth. */
typedef enum {
  DC_TLS_CLIENT_AUTH_NONE = 0,
  DC_TLS_CLIENT_AUTH_REQUESTED,
  DC_TLS_CLIENT_AUTH_REQUIRED,
} dc_tls_client_auth_t;

typedef struct dc_tls_ctx dc_tls_ctx_t;

/* Loads cert/key (required) and ca (required when client auth is not NONE;
 * optional otherwise). Paths are copied. NULL + errstr on failure. The caller
 * owns the result (dc_tls_ctx_destroy). */
dc_tls_ctx_t *dc_tls_ctx_new(const char *cert, const char *key, const char *ca,
                             dc_tls_client_auth_t client_auth, char *errstr,
                             size_t errstr_size);
void dc_tls_ctx_destroy(dc_tls_ctx_t *t);

/* Rebuilds from the same paths; 0 on success, -1 (old context kept). */
int dc_tls_ctx_reload(dc_tls_ctx_t *t, char *errstr, size_t errstr_size);

/* A new server-side SSL object on fd from the current context, or NULL.
 * The caller owns it (SSL_free). */
SSL *dc_tls_new_conn(dc_tls_ctx_t *t, int fd);

/* The served certificate's subject (RFC 2253) and expiry (wall ms). */
void dc_tls_ctx_describe(const dc_tls_ctx_t *t, char *subject,
                         size_t subject_size, int64_t *not_after_ms);

/* "User:" + the verified peer certificate's subject in RFC 2253 form
 * (Kafka's default SSL principal), whole; NULL when the peer sent none.
 * Owned by ssl. A certificate whose principal would be longer than
 * DC_PRINCIPAL_MAX (handlers.h), or with a subject value that breaks the
 * principal rule (common/principal.h: a blank at either end, a control
 * character), fails the handshake, and dc_tls_last_error() then says
 * why. */
const char *dc_tls_peer_principal(SSL *ssl);

/* The reason of the last TLS failure on this thread, in words, e.g.
 * "certificate verify failed (unable to get local issuer certificate)".
 * Clears OpenSSL's error queue. */
void dc_tls_last_error(SSL *ssl, char *out, size_t out_size);
#endif
