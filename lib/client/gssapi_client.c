/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SASL GSSAPI, the client's half, through Cyrus SASL (see gssapi_client.h).
 */
#include "client/gssapi_client.h"
#include "common/gsserr.h"
#include "common/text.h"

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <krb5.h>
#include <sasl/sasl.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Cyrus keeps every callback as int (*)(void); void (*)(void) is the
 * generic function pointer C allows to convert between types. */
#define CB(f) ((int (*)(void))(void (*)(void))(f))

struct dc_gssapi_creds {
  gss_cred_id_t cred; /* GSS_C_NO_CREDENTIAL: the default ticket cache */
  char ccache[64];    /* our in-memory cache, "" when none */
};

struct dc_gssapi_client {
  sasl_conn_t *conn;
  int started;
  /* The default cache's credentials when no keytab's are given: Cyrus
   * would otherwise acquire them itself and never release them. */
  gss_cred_id_t own;
};

/* ---- credentials ----------------------------------------------------- */

static int import_principal(const char *principal, gss_name_t *name,
                            char *errstr, size_t errstr_size) {
  *name = GSS_C_NO_NAME;
  if (!principal || !*principal)
    return 0;
  OM_uint32 min;
  gss_buffer_desc nb = {strlen(principal), (void *)principal};
  OM_uint32 maj =
      gss_import_name(&min, &nb, (gss_OID)GSS_KRB5_NT_PRINCIPAL_NAME, name);
  if (GSS_ERROR(maj)) {
    char words[300];
    dc_gss_words(maj, min, words, sizeof(words));
    dc_seterr(errstr, errstr_size, "bad Kerberos principal '%s': %s",
              principal, words);
    return -1;
  }
  return 0;
}

/* Initial-ticket credentials from the keytab into a private memory cache:
 * MIT's GSS-API gets (and later renews) the tickets itself. */
static int from_keytab(dc_gssapi_creds_t *c, const char *principal,
                       const char *keytab, char *errstr, size_t errstr_size) {
  static atomic_uint seq;
  if (access(keytab, R_OK)) {
    dc_seterr(errstr, errstr_size, "cannot read Kerberos keytab %s: %s",
              keytab, strerror(errno));
    return -1;
  }
  snprintf(c->ccache, sizeof(c->ccache), "MEMORY:dynconf-%ld-%u",
           (long)getpid(), atomic_fetch_add(&seq, 1));
  gss_name_t name;
  if (import_principal(principal, &name, errstr, errstr_size))
    return -1;
  gss_key_value_element_desc kv[2] = {{"client_keytab", keytab},
                                      {"ccache", c->ccache}};
  gss_key_value_set_desc store = {2, kv};
  OM_uint32 min, maj = gss_acquire_cred_from(
      &min, name, GSS_C_INDEFINITE, GSS_C_NO_OID_SET, GSS_C_INITIATE, &store,
      &c->cred, NULL, NULL);
  OM_uint32 ignored;
  gss_release_name(&ignored, &name); /* keeps min for the words */
  if (GSS_ERROR(maj)) {
    char words[400];
    dc_gss_words(maj, min, words, sizeof(words));
    dc_seterr(errstr, errstr_size, "no Kerberos credentials for %s in keytab "
              "%s: %s", principal && *principal ? principal : "its first "
              "principal", keytab, words);
    return -1;
  }
  return 0;
}

dc_gssapi_creds_t *dc_gssapi_creds_new(const char *principal,
                                       const char *keytab, char *errstr,
                                       size_t errstr_size) {
  dc_gssapi_creds_t *c = calloc(1, sizeof(*c));
  if (!c) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  c->cred = GSS_C_NO_CREDENTIAL;
  if (keytab && *keytab &&
      from_keytab(c, principal, keytab, errstr, errstr_size)) {
    dc_gssapi_creds_destroy(c);
    return NULL;
  }
  return c;
}

void dc_gssapi_creds_destroy(dc_gssapi_creds_t *c) {
  if (!c)
    return;
  OM_uint32 min;
  if (c->cred != GSS_C_NO_CREDENTIAL)
    gss_release_cred(&min, &c->cred);
  krb5_context k;
  krb5_ccache cc;
  if (*c->ccache && !krb5_init_context(&k)) {
    if (!krb5_cc_resolve(k, c->ccache, &cc))
      krb5_cc_destroy(k, cc); /* wipes the tickets */
    krb5_free_context(k);
  }
  free(c);
}

/* ---- one exchange ---------------------------------------------------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_init_rc;

/* Counted by Cyrus: librdkafka in the same process may init it too. */
static void sasl_init_once(void) { g_init_rc = sasl_client_init(NULL); }

/* No authorization id: the server uses the authenticated principal. */
static int empty_cb(void *context, int id, const char **result,
                    unsigned *len) {
  (void)context, (void)id;
  *result = "";
  if (len)
    *len = 0;
  return SASL_OK;
}

static const sasl_callback_t g_conn_callbacks[] = {
    {SASL_CB_USER, CB(empty_cb), NULL},
    {SASL_CB_AUTHNAME, CB(empty_cb), NULL},
    {SASL_CB_LIST_END, NULL, NULL}};

/* Without a keytab: the default ticket cache's credentials into *c. It
 * must hold a live ticket; saying so here beats Cyrus' words for it
 * ("context has expired"). */
static int take_ticket_cache(gss_cred_id_t *c, char *errstr,
                             size_t errstr_size) {
  OM_uint32 maj, min, ignored, left = 0;
  maj = gss_acquire_cred(&min, GSS_C_NO_NAME, GSS_C_INDEFINITE,
                         GSS_C_NO_OID_SET, GSS_C_INITIATE, c, NULL, &left);
  if (GSS_ERROR(maj) || left == 0) {
    gss_release_cred(&ignored, c);
    char words[400] = "";
    if (GSS_ERROR(maj))
      dc_gss_words(maj, min, words, sizeof(words));
    dc_seterr(errstr, errstr_size, "no usable Kerberos ticket in the "
              "default cache (run kinit, or set sasl.kerberos.keytab): %s",
              GSS_ERROR(maj) ? words : "the ticket has expired");
    return -1;
  }
  return 0;
}

dc_gssapi_client_t *dc_gssapi_client_new(const dc_gssapi_creds_t *creds,
                                         const char *service,
                                         const char *host, char *errstr,
                                         size_t errstr_size) {
  pthread_once(&g_once, sasl_init_once);
  if (g_init_rc != SASL_OK) {
    dc_seterr(errstr, errstr_size, "cannot start Cyrus SASL: %s",
              sasl_errstring(g_init_rc, NULL, NULL));
    return NULL;
  }
  dc_gssapi_client_t *c = calloc(1, sizeof(*c));
  if (!c) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  c->own = GSS_C_NO_CREDENTIAL;
  if ((!creds || creds->cred == GSS_C_NO_CREDENTIAL) &&
      take_ticket_cache(&c->own, errstr, errstr_size)) {
    free(c);
    return NULL;
  }
  gss_cred_id_t use = c->own != GSS_C_NO_CREDENTIAL ? c->own : creds->cred;
  int rc = sasl_client_new(service && *service ? service : "kafka", host,
                           NULL, NULL, g_conn_callbacks, 0, &c->conn);
  sasl_security_properties_t sp = {.min_ssf = 0, .max_ssf = 0,
                                   .maxbufsize = 0};
  if (rc == SASL_OK)
    rc = sasl_setprop(c->conn, SASL_SEC_PROPS, &sp);
  if (rc == SASL_OK)
    rc = sasl_setprop(c->conn, SASL_GSS_CREDS, use);
  if (rc != SASL_OK) {
    dc_seterr(errstr, errstr_size, "cannot start GSSAPI: %s",
              c->conn ? sasl_errdetail(c->conn)
                      : sasl_errstring(rc, NULL, NULL));
    dc_gssapi_client_destroy(c);
    return NULL;
  }
  return c;
}

void dc_gssapi_client_destroy(dc_gssapi_client_t *c) {
  if (!c)
    return;
  if (c->conn)
    sasl_dispose(&c->conn);
  OM_uint32 min;
  if (c->own != GSS_C_NO_CREDENTIAL)
    gss_release_cred(&min, &c->own);
  free(c);
}

int dc_gssapi_client_step(dc_gssapi_client_t *c, const uint8_t *in,
                          size_t inlen, const uint8_t **out, size_t *outlen,
                          char *errstr, size_t errstr_size) {
  const char *o = NULL;
  unsigned ol = 0;
  sasl_interact_t *interact = NULL;
  int rc;
  if (inlen > UINT32_MAX) {
    dc_seterr(errstr, errstr_size, "GSSAPI token of %zu bytes", inlen);
    return DC_GSSAPI_FAILED;
  }
  if (!c->started) {
    const char *mech = NULL;
    rc = sasl_client_start(c->conn, "GSSAPI", &interact, &o, &ol, &mech);
    c->started = 1;
  } else {
    rc = sasl_client_step(c->conn, (const char *)in, (unsigned)inlen,
                          &interact, &o, &ol);
  }
  if (rc != SASL_OK && rc != SASL_CONTINUE) {
    dc_seterr(errstr, errstr_size, "%s", sasl_errdetail(c->conn));
    return DC_GSSAPI_FAILED;
  }
  *out = (const uint8_t *)o;
  *outlen = ol;
  return rc == SASL_OK ? DC_GSSAPI_DONE : DC_GSSAPI_CONTINUE;
}
