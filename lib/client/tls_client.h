/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TLS for the blocking client connection (lib/client/kclient_conn.c), with
 * OpenSSL 3: a context holding the trust store and optional client
 * certificate, and per-connection handshake and I/O over a connected
 * non-blocking socket. Every wait is bounded by a monotonic deadline
 * (dc_mono_ms() milliseconds).
 *
 * Threads: a context may be shared by connections in different threads
 * once made; a connection has one owner.
 * Errors: sentences in errstr, e.g. "TLS handshake with 127.0.0.1:9093
 * failed: certificate verify failed (unable to get local issuer
 * certificate)".
 */
#ifndef DC_TLS_CLIENT_H
#define DC_TLS_CLIENT_H

#include "common/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* librdkafka's ssl.* properties, each NULL when not set. */
typedef struct dc_tls_client_conf {
  /* Trust: a PEM bundle file or a directory of hashed certificates
   * (c_rehash / openssl rehash), and/or PEM text. Neither (or "probe") =
   * the system trust store. */
  const char *ca_file;
  const char *ca_pem;
  /* Client certificate (may carry the chain) and its key, each from a
   * file or PEM text; or both from a PKCS#12 keystore. The key may be
   * encrypted with key_password. */
  const char *cert_file, *cert_pem;
  const char *key_file, *key_pem, *key_password;
  const char *keystore_file, *keystore_password;
  /* OpenSSL cipher list for TLS 1.2 (ssl.cipher.suites); NULL = the
   * default. */
  const char *cipher_suites;
  bool no_verify;        /* accept any server certificate (tests only) */
  bool no_hostname_check; /* verify the chain but not the name/IP */
} dc_tls_client_conf_t;

typedef struct dc_tls_client_ctx dc_tls_client_ctx_t;
typedef struct dc_tls_conn dc_tls_conn_t;

/* Loads the files now, so a bad path is reported before any connection.
 * Returns NULL with errstr ("cannot load CA file /x: no such file") on
 * failure. Caller owns the result. */
dc_tls_client_ctx_t *dc_tls_client_ctx_new(const dc_tls_client_conf_t *conf,
                                           char *errstr, size_t errstr_size);
void dc_tls_client_ctx_destroy(dc_tls_client_ctx_t *ctx);

/* TLS handshake over fd (connected, non-blocking; borrowed: the caller
 * closes it after dc_tls_conn_destroy()). host is checked against the
 * certificate (an IP literal against its IP SANs) and sent as SNI when it
 * is a name; peer ("host:port") is for messages. cancel_fd (-1 = none)
 * ends the wait as soon as it is readable (__TRANSPORT, "cancelled"). On
 * success *out is the connection (caller owns). Errors: __TIMED_OUT,
 * __TRANSPORT. */
dc_err_t dc_tls_client_handshake(dc_tls_client_ctx_t *ctx, int fd,
                                 const char *host, const char *peer,
                                 int64_t deadline, int cancel_fd,
                                 dc_tls_conn_t **out, char *errstr,
                                 size_t errstr_size);

/* Sends a best-effort close_notify (no waiting) and frees the connection;
 * the socket is left open. NULL is a no-op. */
void dc_tls_conn_destroy(dc_tls_conn_t *t);

/* One non-blocking write/read attempt. Returns bytes moved (> 0); 0 from
 * read when the peer closed; -1 when it would block: poll for *wait
 * (POLLIN or POLLOUT) and retry the same call; -2 on error (errstr set,
 * naming peer). */
ssize_t dc_tls_write(dc_tls_conn_t *t, const void *p, size_t n, short *wait,
                     char *errstr, size_t errstr_size);
ssize_t dc_tls_read(dc_tls_conn_t *t, void *p, size_t n, short *wait,
                    char *errstr, size_t errstr_size);
/* True when t holds decrypted bytes not read yet (a poll() on the
 * socket would not show them). */
bool dc_tls_pending(const dc_tls_conn_t *t);

#endif
