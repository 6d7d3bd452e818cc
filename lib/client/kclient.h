/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small blocking Kafka-protocol client connection, for the agent, the
 * operator CLI, tests and benchmarks: send a request, wait for its
 * response frame, hand back the body for the caller to decode with the
 * codec (lib/codec/proto.h). The codec does no I/O; the sockets live here.
 * Requests may also be pipelined (dc_kclient_send, then
 * dc_kclient_receive for each, in order), so a request the server parks
 * for a long time can share the connection with later ones; every wait
 * can be ended at once through a cancel fd.
 *
 * Threads: a dc_kclient_t has one owner. Calls on the same handle must not
 * overlap; different handles may be used from different threads at once.
 * Functions block for at most the timeout they are given (name resolution
 * via getaddrinfo excepted: it cannot be bounded portably).
 *
 * Errors: every function that can fail returns a dc_err_t and writes a
 * human sentence into errstr (when errstr_size > 0), for example
 * "cannot connect to 127.0.0.1:1: Connection refused" or
 * "no response from 127.0.0.1:9092 within 5000 ms".
 * A transport error, time-out or unmatched response closes the connection:
 * the stream position is unknown afterwards, so it cannot be reused.
 */
#ifndef DC_KCLIENT_H
#define DC_KCLIENT_H

#include "codec/proto.h"

#include <stddef.h>
#include <stdint.h>

/* Largest response frame accepted; a size field above it closes the
 * connection with DC_ERR__BAD_RESPONSE. */
#define DC_KCLIENT_MAX_FRAME (64 * 1024 * 1024)

/* Most requests awaiting their answers on one connection. */
#define DC_KCLIENT_MAX_INFLIGHT 8

typedef struct dc_kclient dc_kclient_t;

/* Appends a request body of the given version; returns 0 or a negative
 * dc_err_t. Every dc_*_req_encode in proto.h has this shape once its
 * request pointer is cast to const void *. */
typedef int(dc_kclient_encode_fn)(dc_buf_t *b, int16_t version,
                                  const void *req);

/* Creates an unconnected handle. client_id (nullable) is sent in every
 * request header; it is copied. Returns NULL on out of memory. The caller
 * owns the handle and frees it with dc_kclient_destroy(). */
dc_kclient_t *dc_kclient_new(const char *client_id);

/* Closes the connection (if any) and frees the handle. NULL is a no-op. */
void dc_kclient_destroy(dc_kclient_t *kc);

/* Connects to the first reachable address of a bootstrap list
 * "host:port[,host:port...]" (hosts may be names, IPv4 literals or IPv6
 * literals in brackets, "[::1]:9092"). Every address each host resolves to is
 * tried in turn; timeout_ms bounds the whole attempt (all addresses share
 * it). An existing connection is closed first. On success the peer's
 * "host:port" is available from dc_kclient_peer().
 * With security set (dc_kclient_set_security), the TCP connection is then
 * secured before this returns: a TLS handshake (SSL, SASL_SSL; the
 * certificate is checked against the host as written in the list), then
 * for SASL an ApiVersions exchange, SaslHandshake v1 and SaslAuthenticate
 * (so the server's API ranges are known afterwards too). A TLS or SASL
 * failure is not retried on other addresses.
 * Errors: DC_ERR__INVALID_ARG (unparsable list), __TRANSPORT
 * (refused, unresolvable, TLS handshake failed: "TLS handshake with
 * 127.0.0.1:9093 failed: certificate verify failed (...)"), __TIMED_OUT,
 * SASL_AUTHENTICATION_FAILED ("SASL authentication failed: <server
 * message>"), UNSUPPORTED_SASL_MECHANISM, or the errors of
 * dc_kclient_request(). */
dc_err_t dc_kclient_connect(dc_kclient_t *kc, const char *bootstrap,
                                 int timeout_ms, char *errstr,
                                 size_t errstr_size);

/* Transport security for dc_kclient_connect(), librdkafka-style. Strings
 * are copied by dc_kclient_set_security(); NULL means "not set". */
typedef struct dc_kclient_security {
  /* PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL; any case. */
  const char *protocol;
  /* SSL and SASL_SSL, as librdkafka's ssl.* properties: */
  const char *ssl_ca;      /* ssl.ca.location: CA PEM file or hashed
                              directory; NULL or "probe" = system store */
  const char *ssl_ca_pem;  /* ssl.ca.pem */
  const char *ssl_cert;    /* ssl.certificate.location */
  const char *ssl_cert_pem; /* ssl.certificate.pem */
  const char *ssl_key;     /* ssl.key.location; needed with a certificate */
  const char *ssl_key_pem; /* ssl.key.pem */
  const char *ssl_key_password; /* ssl.key.password */
  const char *ssl_keystore; /* ssl.keystore.location (PKCS#12) */
  const char *ssl_keystore_password; /* ssl.keystore.password */
  const char *ssl_cipher_suites; /* ssl.cipher.suites */
  bool ssl_no_verify;    /* accept any server certificate (testing only) */
  bool ssl_no_hostname_check; /* verify the chain, not the host name */
  /* SASL_PLAINTEXT and SASL_SSL: a mechanism, and a user name and a
   * password for PLAIN and SCRAM, or a token for OAUTHBEARER. */
  const char *sasl_mechanism; /* PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
                                 OAUTHBEARER or GSSAPI */
  const char *sasl_username;
  const char *sasl_password;
  const char *sasl_oauthbearer_token; /* a JWT (see client/oauth_client.h) */
  /* Or a file holding the token, read again at each connection so that
   * a token renewed on disk is the one presented; it wins over the
   * token. dc_kclient_set_security() reads it once to check it. */
  const char *sasl_oauthbearer_token_file;
  /* GSSAPI (Kerberos), as librdkafka's sasl.kerberos.* (see
   * client/gssapi_client.h): the server is service/HOST@REALM; with a
   * keytab, tickets for principal come from it, else from the default
   * ticket cache (kinit). */
  const char *sasl_kerberos_service_name; /* NULL or "": kafka */
  const char *sasl_kerberos_principal;
  const char *sasl_kerberos_keytab;
} dc_kclient_security_t;

/* Sets (sec) or clears (NULL: PLAINTEXT) the security used by the next
 * dc_kclient_connect(). Validates the combination and loads the TLS files
 * now, so a bad value or unreadable file is reported here, e.g.
 * "unknown security protocol 'TLS' (expected PLAINTEXT, SSL,
 * SASL_PLAINTEXT or SASL_SSL)" or "cannot load CA file /x: ...".
 * Returns 0, __INVALID_ARG or __NOMEM; on error the previous setting
 * stays. Does not touch a current connection. */
dc_err_t dc_kclient_set_security(dc_kclient_t *kc,
                                      const dc_kclient_security_t *sec,
                                      char *errstr, size_t errstr_size);

/* Makes every wait of this handle (connect, TLS handshake, send,
 * receive) also watch fd: once it is readable the call returns
 * DC_ERR__TRANSPORT with "cancelled" and closes the connection. The fd is
 * borrowed (the caller keeps it open for the handle's life, or sets -1
 * first). For a background thread whose owner wants it to stop now. */
void dc_kclient_set_cancel_fd(dc_kclient_t *kc, int fd);

/* Largest response frame accepted (default DC_KCLIENT_MAX_FRAME). A larger
 * size field closes the connection before anything is allocated for it. */
void dc_kclient_set_max_frame(dc_kclient_t *kc, int32_t max_bytes);

/* True when the handle has a connection (it may still have been closed by
 * the peer since: the next request will say so). */
bool dc_kclient_connected(const dc_kclient_t *kc);
/* KIP-368: the ms left of the SASL session the server granted this
 * connection (SaslAuthenticate v1's session lifetime), 0 once it is
 * over (the server then closes the connection at the next request other
 * than ApiVersions or SaslHandshake, unread), or -1 when it has no end
 * (no SASL, a server that set none, not connected). */
int64_t dc_kclient_session_left_ms(const dc_kclient_t *kc);
/* True when an idle connection has something to read (the peer closed it,
 * or sent what no request asked for): a request sent on it would likely
 * fail, not knowing whether the peer read it. False when not connected. */
bool dc_kclient_idle_broken(const dc_kclient_t *kc);

/* "host:port" as given in the bootstrap list for the current connection
 * (after a close, the last one: what messages about it name), or "" when
 * none was made. Owned by the handle; valid until the next connect or
 * destroy. */
const char *dc_kclient_peer(const dc_kclient_t *kc);

/* Closes the connection, keeping the handle for a later
 * dc_kclient_connect(). The server's API versions are forgotten with it
 * (the next connection may reach another server). */
void dc_kclient_close(dc_kclient_t *kc);

/* Sends one request and waits up to timeout_ms for its response.
 * The header (request header v1 or v2 by dc_req_header_encode) carries the
 * next correlation id; enc(req) writes the body. The response's
 * correlation id must match (else __BAD_RESPONSE). On success *rd is
 * initialised over the response body (after the response header), with
 * decoded data to be allocated in arena (caller-owned). The body bytes are
 * owned by the handle and stay valid until the next request, close or
 * destroy. Errors: __TRANSPORT (not connected, peer closed, socket error),
 * __TIMED_OUT, __BAD_RESPONSE (bad frame size, wrong correlation id,
 * unreadable header), __UNSUPPORTED_API / __NOMEM from encoding. */
dc_err_t dc_kclient_request(dc_kclient_t *kc, int16_t api_key,
                                 int16_t api_version, dc_kclient_encode_fn *enc,
                                 const void *req, int timeout_ms,
                                 dc_rd_t *rd, dc_arena_t *arena, char *errstr,
                                 size_t errstr_size);

/* Pipelining. dc_kclient_send() sends one request (as dc_kclient_request
 * does) and returns at once with its correlation id in *corrp (nullable);
 * up to DC_KCLIENT_MAX_INFLIGHT may await their answers (more:
 * __INVALID_ARG). dc_kclient_receive() waits up to timeout_ms for the next
 * answer, which is always the oldest request's (a Kafka server answers a
 * connection in order), and says whose in *corrp; *rd and the body as for
 * dc_kclient_request(). Errors close the connection, dropping every
 * request still in flight. dc_kclient_request() refuses to run while
 * requests are in flight (__INVALID_ARG): their answers come first. */
dc_err_t dc_kclient_send(dc_kclient_t *kc, int16_t api_key,
                         int16_t api_version, dc_kclient_encode_fn *enc,
                         const void *req, int timeout_ms, int32_t *corrp,
                         char *errstr, size_t errstr_size);
dc_err_t dc_kclient_receive(dc_kclient_t *kc, int timeout_ms, int32_t *corrp,
                            dc_rd_t *rd, dc_arena_t *arena, char *errstr,
                            size_t errstr_size);
/* Requests sent on the current connection and not answered yet. */
size_t dc_kclient_in_flight(const dc_kclient_t *kc);

/* Waits up to timeout_ms until one of kcs[n] (those connected, with
 * requests in flight) has something to read: its answer, or the peer's
 * close, which dc_kclient_receive() then reports. Returns its index, or
 * -1 when none did in time (or none awaits anything). */
int dc_kclient_wait_any(dc_kclient_t *const *kcs, int n, int timeout_ms);

/* ApiVersions handshake: sends ApiVersions v3 with client_software_name
 * "dynconf-configs" (overridable with dc_kclient_set_software) and falls
 * back to v0 when the server answers UNSUPPORTED_VERSION (35). The server's
 * ranges are kept in the handle for dc_kclient_api_range() and
 * dc_kclient_pick_version(). Errors: those of dc_kclient_request(),
 * __BAD_RESPONSE for an undecodable body, or the server's error code. */
dc_err_t dc_kclient_api_versions(dc_kclient_t *kc, int timeout_ms,
                                      char *errstr, size_t errstr_size);

/* Sets the ClientSoftwareName/Version sent by dc_kclient_api_versions().
 * Both are copied; NULL keeps the current value. Returns __NOMEM or 0.
 * Names must match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? for a real
 * Kafka broker to accept them. */
dc_err_t dc_kclient_set_software(dc_kclient_t *kc, const char *name,
                                      const char *version);

/* The server's advertised range for api_key after a successful
 * dc_kclient_api_versions(). Returns true and fills *minp and *maxp when the
 * server lists the key, false otherwise. */
bool dc_kclient_api_range(const dc_kclient_t *kc, int16_t api_key,
                          int16_t *minp, int16_t *maxp);

/* Highest version of api_key that both the codec (dc_api_info) and the
 * server support, or -1 when there is none (or no handshake was done). */
int16_t dc_kclient_pick_version(const dc_kclient_t *kc, int16_t api_key);

#endif
