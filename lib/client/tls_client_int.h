/* SPDX-License-Identifier: BSD-2-Clause */
/* TLS client internals shared by tls_client.c and tls_client_ctx.c. */
#ifndef DC_TLS_CLIENT_INT_H
#define DC_TLS_CLIENT_INT_H
#include "client/tls_client.h"

#include <openssl/ssl.h>

#include <stdbool.h>
#include <stddef.h>

struct dc_tls_client_ctx {
  SSL_CTX *ctx; /* owned */
  bool no_verify, no_hostname_check;
};

/* The most specific reason on OpenSSL's error queue (then cleared), or
 * fallback. *code (nullable) gets its reason code, 0 if none. */
const char *dc_tls_reason_code(char *buf, size_t size, const char *fallback,
                               int *code);

/* dc_tls_reason_code() without the code. */
const char *dc_tls_reason(char *buf, size_t size, const char *fallback);
#endif
