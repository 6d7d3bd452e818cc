/* SPDX-License-Identifier: BSD-2-Clause */
/* The client connection's internals, shared by the kclient*.c files. */
#ifndef DC_KCLIENT_INT_H
#define DC_KCLIENT_INT_H
#include "client/gssapi_client.h"
#include "client/kclient.h"
#include "client/tls_client.h"
#include "common/clock.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dc_kclient_inflight {
  int32_t corr;
  int16_t api_key, api_version;
} dc_kclient_inflight_t;

struct dc_kclient {
  /* Requests sent and not answered yet, oldest first. */
  dc_kclient_inflight_t inflight[DC_KCLIENT_MAX_INFLIGHT];
  size_t n_inflight;
  int fd;                /* -1 when not connected */
  int cancel_fd;         /* borrowed; -1 = none (dc_kclient_set_cancel_fd) */
  int32_t max_frame;     /* largest response frame accepted */
  char *client_id;       /* owned, nullable */
  char *sw_name;         /* owned */
  char *sw_version;      /* owned */
  char peer[300];        /* "host:port" of the current or last connection */
  int32_t next_corr;     /* correlation id for the next request */
  dc_buf_t out;          /* owned: request frame being sent */
  uint8_t *in;           /* owned: last response frame payload */
  size_t in_cap;
  dc_api_range_t *ranges; /* owned: server's ApiVersions answer */
  size_t n_ranges;
  bool have_versions;
  /* Security (dc_kclient_set_security). */
  bool use_tls, use_sasl;
  dc_tls_client_ctx_t *tls_ctx; /* owned; NULL without TLS */
  dc_tls_conn_t *tls;           /* owned; the current connection's TLS */
  char *sasl_mech, *sasl_user;  /* owned */
  char *sasl_pass;              /* owned; wiped when freed */
  char *oauth_token_file;       /* owned; read at each connection */
  int64_t session_end_ms; /* KIP-368: when the server ends the SASL
                             session (monotonic); 0 = never or no SASL */
  /* GSSAPI only, all owned: the credentials are taken at the first
   * connection (a keytab's tickets mean a trip to the KDC) and kept. */
  dc_gssapi_creds_t *gss_creds;
  char *krb_service, *krb_principal, *krb_keytab;
};
/* Milliseconds left until deadline, never negative, capped for poll(). */
static inline int dc_kclient_remaining_ms(int64_t deadline) {
  int64_t left = deadline - dc_mono_ms();
  if (left < 0)
    return 0;
  return left > 0x7fffffff ? 0x7fffffff : (int)left;
}

/* Wipes and frees a copied secret; NULL is a no-op. */
void dc_kclient_free_secret(char *s);

/* A malloc'd copy of s; NULL for NULL or when out of memory. */
char *dc_kclient_strdup(const char *s);

/* Waits for fd to become ready for events, or for the cancel fd: 1 ready,
 * 0 timed out, -1 error (errno set), -2 cancelled. */
int dc_kclient_wait_fd(const dc_kclient_t *kc, int fd, short events,
                       int64_t deadline);

/* Frees kc's security settings (TLS context, SASL and Kerberos
 * strings, GSSAPI credentials), leaving the pointers dangling: the caller
 * replaces them or frees kc (kclient_security.c). */
void dc_kclient_security_free(dc_kclient_t *kc);

/* TLS and SASL on a fresh TCP connection (kclient_security.c). */
dc_err_t dc_kclient_secure(dc_kclient_t *kc, const char *host,
                           int64_t deadline, char *errstr,
                           size_t errstr_size);
#endif
