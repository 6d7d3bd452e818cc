/* SPDX-License-Identifier: BSD-2-Clause */
/* TLS contexts for dynconfd's listeners; see tls_server.h. */
#include "broker/net/tls_server.h"
#include "broker/core/broker.h"
#include "common/principal.h"
#include "common/text.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct dc_tls_ctx {
  SSL_CTX *ctx; /* current; one reference held here */
  char *cert, *key, *ca; /* owned copies of the paths */
  dc_tls_client_auth_t client_auth;
};

static void openssl_reason(char *out, size_t n) {
  unsigned long e = ERR_get_error();
  unsigned long first = e;
  while (e) { /* the first queued error is the root cause; keep it */
    e = ERR_get_error();
  }
  if (first)
    ERR_error_string_n(first, out, n);
  else
    snprintf(out, n, "unknown OpenSSL error");
}

/* ---- the peer's principal -------------------------------------------
 * Taken while the client certificate is verified, so a certificate whose
 * principal cannot be held whole fails the handshake instead of reaching
 * the ACLs shortened. Kept in the SSL object's ex_data:
 *   principal_idx  "User:" + subject (char *, freed with the SSL)
 *   overlong_idx   the length the refused principal would have had
 *   fault_idx      why a value of the refused subject breaks the principal
 *                  rule (a static string) */

static int principal_idx = -1, overlong_idx = -1, fault_idx = -1;
static pthread_once_t idx_once = PTHREAD_ONCE_INIT;

static void free_principal(void *parent, void *ptr, CRYPTO_EX_DATA *ad,
                           int idx, long argl, void *argp) {
  (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
  free(ptr);
}

static void idx_init(void) {
  principal_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, free_principal);
  overlong_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
  fault_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

/* Why a value of the subject breaks the principal rule (the RFC 2253 form
 * escapes such characters, but the principal must not hide them behind a
 * backslash either), or NULL. Values that are not text are left to the
 * RFC 2253 form, which prints them in hex. */
static const char *subject_fault(X509_NAME *name) {
  const char *fault = NULL;
  for (int i = 0; !fault && i < X509_NAME_entry_count(name); i++) {
    unsigned char *u = NULL;
    int n = ASN1_STRING_to_UTF8(
        &u, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
    if (n >= 0)
      fault = dc_principal_name_fault((const char *)u, (size_t)n);
    OPENSSL_free(u);
  }
  return fault;
}

/* prefix + name in RFC 2253 form, whole, malloc'd; *len its length.
 * NULL when out of memory, or when the text holds a NUL (it never should:
 * control characters are escaped) since a C string would cut it there. */
static char *name_dup(const char *prefix, X509_NAME *name, size_t *len) {
  BIO *bio = BIO_new(BIO_s_mem());
  char *out = NULL, *data = NULL;
  if (bio && BIO_puts(bio, prefix) >= 0 &&
      X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253) >= 0) {
    long n = BIO_get_mem_data(bio, &data);
    if (n >= 0 && !memchr(data, '\0', (size_t)n) &&
        (out = malloc((size_t)n + 1))) {
      memcpy(out, data, (size_t)n);
      out[n] = '\0';
      *len = (size_t)n;
    }
  }
  BIO_free(bio);
  return out;
}

/* Verification of the client's own certificate (depth 0) succeeded: take
 * its principal, or fail the handshake when it is over DC_PRINCIPAL_MAX. */
static int take_principal(X509_STORE_CTX *xs) {
  SSL *ssl =
      X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
  X509 *leaf = X509_STORE_CTX_get_current_cert(xs);
  size_t len = 0;
  char *p = ssl && leaf ? name_dup("User:", X509_get_subject_name(leaf), &len)
                        : NULL;
  if (!p) {
    X509_STORE_CTX_set_error(xs, X509_V_ERR_OUT_OF_MEM);
    return 0;
  }
  const char *fault = subject_fault(X509_get_subject_name(leaf));
  if (len > DC_PRINCIPAL_MAX || fault) {
    free(p);
    if (fault)
      SSL_set_ex_data(ssl, fault_idx, (void *)fault);
    else
      SSL_set_ex_data(ssl, overlong_idx, (void *)(uintptr_t)len);
    X509_STORE_CTX_set_error(xs, X509_V_ERR_APPLICATION_VERIFICATION);
    return 0;
  }
  free(SSL_get_ex_data(ssl, principal_idx));
  SSL_set_ex_data(ssl, principal_idx, p);
  return 1;
}

static int verify_cb(int ok, X509_STORE_CTX *xs) {
  if (!ok || X509_STORE_CTX_get_error_depth(xs) != 0)
    return ok;
  return take_principal(xs);
}

/* The certificate chain and its key, and the CA file that client
 * certificates are checked against, loaded into ctx. */
static int load_files(SSL_CTX *ctx, const dc_tls_ctx_t *t, char *errstr,
                      size_t n) {
  char why[256];
  if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
    openssl_reason(why, sizeof(why));
    dc_seterr(errstr, n, "cannot load certificate %s: %s", t->cert, why);
    return -1;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
    openssl_reason(why, sizeof(why));
    dc_seterr(errstr, n, "cannot load private key %s: %s", t->key, why);
    return -1;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    dc_seterr(errstr, n, "private key %s does not match certificate %s",
             t->key, t->cert);
    return -1;
  }
  if (t->ca && *t->ca) {
    if (SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1) {
      openssl_reason(why, sizeof(why));
      dc_seterr(errstr, n, "cannot load CA file %s: %s", t->ca, why);
      return -1;
    }
    /* Tell clients which CAs we accept (librdkafka picks its cert by it). */
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca);
    if (names)
      SSL_CTX_set_client_CA_list(ctx, names);
  }
  return 0;
}

static SSL_CTX *build(const dc_tls_ctx_t *t, char *errstr, size_t n) {
  pthread_once(&idx_once, idx_init);
  if (principal_idx < 0 || overlong_idx < 0 || fault_idx < 0) {
    dc_seterr(errstr, n, "cannot create a TLS context (no ex_data index)");
    return NULL;
  }
  ERR_clear_error();
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    dc_seterr(errstr, n, "cannot create a TLS context");
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  /* Non-blocking sockets: let SSL_write send part of a buffer and be
   * retried from a moved buffer (our output buffer can grow). */
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (load_files(ctx, t, errstr, n))
    goto fail;
  int mode = SSL_VERIFY_NONE;
  if (t->client_auth == DC_TLS_CLIENT_AUTH_REQUESTED)
    mode = SSL_VERIFY_PEER;
  else if (t->client_auth == DC_TLS_CLIENT_AUTH_REQUIRED)
    mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(ctx, mode, verify_cb);
  /* The principal is taken once, at the handshake: no renegotiation may
   * bring another certificate. */
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  /* No session resumption: a resumed session would skip the client
   * certificate check of a reloaded CA. */
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  return ctx;
fail:
  SSL_CTX_free(ctx);
  return NULL;
}

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

dc_tls_ctx_t *dc_tls_ctx_new(const char *cert, const char *key, const char *ca,
                             dc_tls_client_auth_t client_auth, char *errstr,
                             size_t errstr_size) {
  if (!cert || !*cert || !key || !*key) {
    dc_seterr(errstr, errstr_size,
             "a TLS listener needs a certificate and a key (--ssl-cert, --ssl-key)");
    return NULL;
  }
  if (client_auth != DC_TLS_CLIENT_AUTH_NONE && (!ca || !*ca)) {
    dc_seterr(errstr, errstr_size,
             "client certificate authentication needs a CA file (--ssl-ca)");
    return NULL;
  }
  dc_tls_ctx_t *t = calloc(1, sizeof(*t));
  if (!t) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  t->cert = strdup(cert);
  t->key = strdup(key);
  t->ca = dup_or_null(ca);
  t->client_auth = client_auth;
  if (!t->cert || !t->key || (ca && *ca && !t->ca)) {
    dc_seterr(errstr, errstr_size, "out of memory");
    dc_tls_ctx_destroy(t);
    return NULL;
  }
  t->ctx = build(t, errstr, errstr_size);
  if (!t->ctx) {
    dc_tls_ctx_destroy(t);
    return NULL;
  }
  return t;
}

void dc_tls_ctx_destroy(dc_tls_ctx_t *t) {
  if (!t)
    return;
  SSL_CTX_free(t->ctx);
  free(t->cert);
  free(t->key);
  free(t->ca);
  free(t);
}

int dc_tls_ctx_reload(dc_tls_ctx_t *t, char *errstr, size_t errstr_size) {
  SSL_CTX *ctx = build(t, errstr, errstr_size);
  if (!ctx)
    return -1;
  SSL_CTX_free(t->ctx); /* open connections keep their own reference */
  t->ctx = ctx;
  return 0;
}

SSL *dc_tls_new_conn(dc_tls_ctx_t *t, int fd) {
  SSL *ssl = SSL_new(t->ctx);
  if (!ssl)
    return NULL;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return NULL;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

static int64_t asn1_time_ms(const ASN1_TIME *at) {
  struct tm tm;
  if (!at || ASN1_TIME_to_tm(at, &tm) != 1)
    return -1;
  return (int64_t)timegm(&tm) * 1000;
}

static void name_rfc2253(X509_NAME *name, char *out, size_t n) {
  out[0] = '\0';
  BIO *bio = BIO_new(BIO_s_mem());
  if (!bio)
    return;
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  int len = BIO_read(bio, out, (int)n - 1);
  out[len > 0 ? len : 0] = '\0';
  BIO_free(bio);
}

void dc_tls_ctx_describe(const dc_tls_ctx_t *t, char *subject,
                         size_t subject_size, int64_t *not_after_ms) {
  X509 *x = SSL_CTX_get0_certificate(t->ctx);
  subject[0] = '\0';
  *not_after_ms = -1;
  if (!x)
    return;
  name_rfc2253(X509_get_subject_name(x), subject, subject_size);
  *not_after_ms = asn1_time_ms(X509_get0_notAfter(x));
}

const char *dc_tls_peer_principal(SSL *ssl) {
  if (!SSL_get0_peer_certificate(ssl) ||
      SSL_get_verify_result(ssl) != X509_V_OK || principal_idx < 0)
    return NULL;
  return SSL_get_ex_data(ssl, principal_idx);
}

void dc_tls_last_error(SSL *ssl, char *out, size_t out_size) {
  long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
  unsigned long e = ERR_peek_error();
  char why[256] = "";
  if (e) {
    ERR_error_string_n(e, why, sizeof(why));
    /* "error:0A000086:SSL routines::certificate verify failed" -> the
     * words after the last ':' read better. */
    const char *tail = strrchr(why, ':');
    memmove(why, tail ? tail + 1 : why, strlen(tail ? tail + 1 : why) + 1);
  }
  ERR_clear_error();
  size_t over = ssl && v == X509_V_ERR_APPLICATION_VERIFICATION
                    ? (size_t)(uintptr_t)SSL_get_ex_data(ssl, overlong_idx)
                    : 0;
  const char *fault = ssl && v == X509_V_ERR_APPLICATION_VERIFICATION
                          ? SSL_get_ex_data(ssl, fault_idx)
                          : NULL;
  if (fault)
    snprintf(out, out_size,
             "%s (a value of the client certificate subject %s: a "
             "principal's name may not begin or end with a blank, nor hold "
             "a control character)",
             *why ? why : "certificate verify failed", fault);
  else if (over)
    snprintf(out, out_size,
             "%s (client certificate subject too long: its principal would "
             "be %zu bytes, %zu over the limit of %d)",
             *why ? why : "certificate verify failed", over,
             over - DC_PRINCIPAL_MAX, DC_PRINCIPAL_MAX);
  else if (v != X509_V_OK)
    snprintf(out, out_size, "%s (%s)", *why ? why : "certificate verify failed",
             X509_verify_cert_error_string(v));
  else
    snprintf(out, out_size, "%s", *why ? why : "connection closed during the TLS handshake");
}
