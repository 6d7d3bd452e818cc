/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/loadgen's TLS client (OpenSSL 3): a context with the trust store
 * and an optional client certificate, a full handshake per connection over
 * a non-blocking socket, and non-blocking SSL_read/SSL_write wrappers with
 * send()/recv() semantics for the epoll loop.
 *
 * Built for measuring, not for reuse: no session resumption (every
 * connection pays a full handshake, as librdkafka's connections do), no
 * SIGPIPE juggling (loadgen ignores SIGPIPE process-wide).
 *
 * Threads: one thread (loadgen is single-threaded).
 * Errors: sentences in errstr; the I/O wrappers report through errno and
 * lg_tls_last_error().
 */
#ifndef LG_TLS_H
#define LG_TLS_H

#include <openssl/ssl.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct lg_tls lg_tls_t;

/* Loads ca_file (required: the bench trusts only its throw-away CA) and,
 * when cert_file is given, the client certificate and key_file. Returns
 * NULL with a sentence in errstr on failure. Caller owns the result. */
lg_tls_t *lg_tls_new(const char *ca_file, const char *cert_file,
                     const char *key_file, char *errstr, size_t errstr_size);
void lg_tls_destroy(lg_tls_t *t); /* NULL is a no-op */

/* Full TLS handshake over fd (connected, non-blocking; borrowed), waiting
 * with poll() until deadline_ns (CLOCK_MONOTONIC). The server certificate
 * must chain to the CA and match host (an IP literal against its IP
 * SANs). Returns the session (caller frees with lg_tls_close) or NULL with
 * errstr set. */
SSL *lg_tls_connect(lg_tls_t *t, int fd, const char *host, uint64_t deadline_ns,
                    char *errstr, size_t errstr_size);

/* Sends close_notify without waiting and frees ssl; the socket stays open
 * (the caller closes it). NULL is a no-op. */
void lg_tls_close(SSL *ssl);

/* Non-blocking I/O with send()/recv() results: bytes moved (> 0); 0 from
 * recv when the peer closed; -1 with errno EAGAIN when OpenSSL wants the
 * socket readable (*want = 'r', SSL_ERROR_WANT_READ) or writable
 * (*want = 'w', SSL_ERROR_WANT_WRITE): retry the same call, with the same
 * bytes for send (the buffer may move and grow), once that happens; -1
 * with errno EPROTO for a TLS error (lg_tls_last_error() says which) or
 * the socket's errno. want may be NULL. */
ssize_t lg_tls_send(SSL *ssl, const void *p, size_t n, char *want);
ssize_t lg_tls_recv(SSL *ssl, void *p, size_t n, char *want);

/* The reason of the last EPROTO failure (static storage). */
const char *lg_tls_last_error(void);

/* "TLSv1.3 TLS_AES_256_GCM_SHA384" for a connected session. */
void lg_tls_describe(SSL *ssl, char *out, size_t out_size);

#endif
