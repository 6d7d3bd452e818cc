/* SPDX-License-Identifier: BSD-2-Clause */
/* Client security: the settings, then TLS and SASL on each new connection. */
#include "config.h"
#include "common/clock.h"
#include "common/text.h"
#include "client/kclient_int.h"
#include "client/oauth_client.h"
#include "client/scram_client.h"

#include <openssl/crypto.h>
#include <strings.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- security settings ------------------------------------------------ */

void dc_kclient_free_secret(char *s) {
  if (s) {
    OPENSSL_cleanse(s, strlen(s));
    free(s);
  }
}

char *dc_kclient_strdup(const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}


/* OAUTHBEARER's token, or its file (which must hold one now). */
static int check_oauth(const dc_kclient_security_t *sec, char *errstr,
                       size_t errstr_size) {
  const char *file = sec->sasl_oauthbearer_token_file;
  if (file && *file) {
    char *tok = dc_oauth_token_file_read(file, errstr, errstr_size);
    dc_kclient_free_secret(tok);
    return tok ? 0 : -1;
  }
  if (sec->sasl_oauthbearer_token && *sec->sasl_oauthbearer_token)
    return 0;
  dc_seterr(errstr, errstr_size, "SASL mechanism OAUTHBEARER needs a token");
  return -1;
}

/* A SASL mechanism and what it needs: a user name and a password for
 * PLAIN and SCRAM, a token for OAUTHBEARER. 0, or -1 with errstr. */
static int check_sasl(const dc_kclient_security_t *sec, const char *proto,
                      char *errstr, size_t errstr_size) {
  const char *m = sec->sasl_mechanism;
  dc_scram_hash_t h;
  if (!m || !*m) {
    dc_seterr(errstr, errstr_size,
              "security protocol %s needs a SASL mechanism (PLAIN, "
              "SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI)", proto);
    return -1;
  }
  if (!strcmp(m, "GSSAPI"))
    return 0; /* credentials are checked when they are acquired */
  if (!strcmp(m, "OAUTHBEARER"))
    return check_oauth(sec, errstr, errstr_size);
  if (strcmp(m, "PLAIN") && !dc_scram_hash_from_name(m, &h)) {
    dc_seterr(errstr, errstr_size,
              "unsupported SASL mechanism '%s' (expected PLAIN, SCRAM-SHA-256, "
              "SCRAM-SHA-512, OAUTHBEARER or GSSAPI)", m);
    return -1;
  }
  if (!sec->sasl_username || !*sec->sasl_username) {
    dc_seterr(errstr, errstr_size, "SASL mechanism %s needs a user name", m);
    return -1;
  }
  if (!sec->sasl_password) {
    dc_seterr(errstr, errstr_size, "SASL mechanism %s needs a password", m);
    return -1;
  }
  return 0;
}

/* The SASL settings copied out of sec (NULL: none), all or nothing. */
typedef struct kclient_sasl {
  char *mech, *user, *pass, *token_file;
  char *krb_service, *krb_principal, *krb_keytab;
  dc_err_t err;
} kclient_sasl_t;

static void kclient_sasl_free(kclient_sasl_t *ks) {
  free(ks->mech);
  free(ks->user);
  dc_kclient_free_secret(ks->pass);
  free(ks->token_file);
  free(ks->krb_service);
  free(ks->krb_principal);
  free(ks->krb_keytab);
  memset(ks, 0, sizeof(*ks));
}

/* NULL for NULL or "", else a copy; false when out of memory. */
static bool dup_opt(const char *s, char **out) {
  *out = s && *s ? dc_kclient_strdup(s) : NULL;
  return !(s && *s) || *out;
}

static int take_sasl(const dc_kclient_security_t *sec, kclient_sasl_t *ks,
                     char *errstr, size_t errstr_size) {
  memset(ks, 0, sizeof(*ks));
  if (!sec)
    return 0;
  const char *m = sec->sasl_mechanism;
  bool gss = !strcmp(m, "GSSAPI");
  /* OAUTHBEARER keeps its token where the others keep the password. */
  bool oauth = !strcmp(m, "OAUTHBEARER");
  const char *tfile = oauth ? sec->sasl_oauthbearer_token_file : NULL;
  ks->mech = dc_kclient_strdup(m);
  if (tfile && *tfile) {
    ks->token_file = dc_kclient_strdup(tfile);
  } else if (!gss) {
    ks->user = oauth ? NULL : dc_kclient_strdup(sec->sasl_username);
    ks->pass = dc_kclient_strdup(oauth ? sec->sasl_oauthbearer_token
                             : sec->sasl_password);
  } else {
    const char *svc = sec->sasl_kerberos_service_name;
    ks->krb_service = dc_kclient_strdup(svc && *svc ? svc : "kafka");
  }
  bool krb_ok = !gss || (ks->krb_service &&
                         dup_opt(sec->sasl_kerberos_principal,
                                 &ks->krb_principal) &&
                         dup_opt(sec->sasl_kerberos_keytab, &ks->krb_keytab));
  bool secret_ok = gss || ks->token_file || ((oauth || ks->user) && ks->pass);
  if (!ks->mech || !secret_ok || !krb_ok) {
    kclient_sasl_free(ks);
    ks->err = DC_ERR__NOMEM;
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  if (ks->krb_keytab && access(ks->krb_keytab, R_OK)) {
    dc_seterr(errstr, errstr_size, "cannot read Kerberos keytab %s: %s",
              ks->krb_keytab, strerror(errno));
    kclient_sasl_free(ks);
    ks->err = DC_ERR__INVALID_ARG;
    return -1;
  }
  return 0;
}

/* PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (any case) into what it
 * uses; false for another name. */
static bool parse_protocol(const char *proto, bool *tls, bool *sasl) {
  if (!strcasecmp(proto, "PLAINTEXT"))
    *tls = false, *sasl = false;
  else if (!strcasecmp(proto, "SSL"))
    *tls = true, *sasl = false;
  else if (!strcasecmp(proto, "SASL_PLAINTEXT"))
    *tls = false, *sasl = true;
  else if (!strcasecmp(proto, "SASL_SSL"))
    *tls = true, *sasl = true;
  else
    return false;
  return true;
}

/* The TLS context of sec's ssl.* settings; NULL with errstr set. */
static dc_tls_client_ctx_t *tls_ctx_of(const dc_kclient_security_t *sec,
                                       char *errstr, size_t errstr_size) {
  dc_tls_client_conf_t tc = {
      .ca_file = sec->ssl_ca,
      .ca_pem = sec->ssl_ca_pem,
      .cert_file = sec->ssl_cert,
      .cert_pem = sec->ssl_cert_pem,
      .key_file = sec->ssl_key,
      .key_pem = sec->ssl_key_pem,
      .key_password = sec->ssl_key_password,
      .keystore_file = sec->ssl_keystore,
      .keystore_password = sec->ssl_keystore_password,
      .cipher_suites = sec->ssl_cipher_suites,
      .no_verify = sec->ssl_no_verify,
      .no_hostname_check = sec->ssl_no_hostname_check};
  return dc_tls_client_ctx_new(&tc, errstr, errstr_size);
}

void dc_kclient_security_free(dc_kclient_t *kc) {
  dc_tls_client_ctx_destroy(kc->tls_ctx);
  free(kc->sasl_mech);
  free(kc->sasl_user);
  dc_kclient_free_secret(kc->sasl_pass);
  free(kc->oauth_token_file);
  dc_gssapi_creds_destroy(kc->gss_creds);
  free(kc->krb_service);
  free(kc->krb_principal);
  free(kc->krb_keytab);
}

/* Replaces kc's security settings with ctx and ks (both taken over). */
static void adopt_security(dc_kclient_t *kc, dc_tls_client_ctx_t *ctx,
                           const kclient_sasl_t *ks, bool tls, bool sasl) {
  dc_kclient_security_free(kc);
  kc->tls_ctx = ctx;
  kc->sasl_mech = ks->mech;
  kc->sasl_user = ks->user;
  kc->sasl_pass = ks->pass;
  kc->oauth_token_file = ks->token_file;
  kc->gss_creds = NULL;
  kc->krb_service = ks->krb_service;
  kc->krb_principal = ks->krb_principal;
  kc->krb_keytab = ks->krb_keytab;
  kc->use_tls = tls;
  kc->use_sasl = sasl;
}

dc_err_t dc_kclient_set_security(dc_kclient_t *kc,
                                      const dc_kclient_security_t *sec,
                                      char *errstr, size_t errstr_size) {
  static const dc_kclient_security_t none = {0};
  if (!sec)
    sec = &none;
  const char *proto = sec->protocol ? sec->protocol : "PLAINTEXT";
  bool tls, sasl;
  if (!parse_protocol(proto, &tls, &sasl)) {
    dc_seterr(errstr, errstr_size,
           "unknown security protocol '%s' (expected PLAINTEXT, SSL, "
           "SASL_PLAINTEXT or SASL_SSL)", proto);
    return DC_ERR__INVALID_ARG;
  }
  if (sasl && check_sasl(sec, proto, errstr, errstr_size))
    return DC_ERR__INVALID_ARG;
  dc_tls_client_ctx_t *ctx = NULL;
  if (tls && !(ctx = tls_ctx_of(sec, errstr, errstr_size)))
    return DC_ERR__INVALID_ARG;
  kclient_sasl_t ks;
  if (take_sasl(sasl ? sec : NULL, &ks, errstr, errstr_size)) {
    dc_tls_client_ctx_destroy(ctx);
    return ks.err;
  }
  adopt_security(kc, ctx, &ks, tls, sasl);
  return DC_ERR_NO_ERROR;
}

/* ---- TLS and SASL ------------------------------------------------------ */

static int enc_sasl_handshake(dc_buf_t *b, int16_t v, const void *req) {
  return dc_sasl_handshake_req_encode(b, v, req);
}

static int enc_sasl_authenticate(dc_buf_t *b, int16_t v, const void *req) {
  return dc_sasl_authenticate_req_encode(b, v, req);
}

/* SaslHandshake v1 for kc->sasl_mech. */
static dc_err_t sasl_handshake(dc_kclient_t *kc, int64_t deadline,
                                    char *errstr, size_t errstr_size) {
  int16_t lo, hi;
  if (!dc_kclient_api_range(kc, DC_API_SASL_HANDSHAKE, &lo, &hi) || lo > 1 ||
      hi < 1) {
    dc_seterr(errstr, errstr_size,
           "SASL authentication failed: %s does not offer SaslHandshake v1",
           kc->peer);
    return DC_ERR_UNSUPPORTED_VERSION;
  }
  dc_sasl_handshake_req_t req = {.mechanism = kc->sasl_mech};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  char why[512];
  dc_err_t err =
      dc_kclient_request(kc, DC_API_SASL_HANDSHAKE, 1, enc_sasl_handshake,
                         &req, dc_kclient_remaining_ms(deadline), &rd, &arena,
                         why, sizeof(why));
  dc_sasl_handshake_resp_t resp;
  if (err) {
    dc_seterr(errstr, errstr_size, "SASL handshake with %s failed: %s", kc->peer,
           why);
  } else if (dc_sasl_handshake_resp_decode(&rd, 1, &resp)) {
    dc_seterr(errstr, errstr_size, "malformed SaslHandshake response from %s",
           kc->peer);
    err = DC_ERR__BAD_RESPONSE;
  } else if (resp.error_code == DC_ERR_UNSUPPORTED_SASL_MECHANISM) {
    char list[256] = "";
    size_t l = 0;
    for (int32_t i = 0; i < resp.n_mechanisms && l < sizeof(list); i++)
      l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "",
                            resp.mechanisms[i] ? resp.mechanisms[i] : "");
    dc_seterr(errstr, errstr_size,
           "SASL mechanism %s is not enabled on %s (enabled: %s)",
           kc->sasl_mech, kc->peer, l ? list : "none");
    err = DC_ERR_UNSUPPORTED_SASL_MECHANISM;
  } else if (resp.error_code) {
    err = (dc_err_t)resp.error_code;
    dc_seterr(errstr, errstr_size, "SASL handshake with %s failed: %s%s",
           kc->peer, dc_err_name(err),
           err == DC_ERR_ILLEGAL_SASL_STATE
               ? " (is it a SASL listener?)"
               : "");
  }
  dc_arena_free(&arena);
  return err;
}

/* One SaslAuthenticate round trip: sends tok, returns the server's token
 * in *out (malloc'd, caller frees; NULL when empty). */
static dc_err_t sasl_round(dc_kclient_t *kc, int16_t v,
                                const void *tok, size_t n, uint8_t **out,
                                size_t *outlen, int64_t deadline, char *errstr,
                                size_t errstr_size) {
  *out = NULL;
  *outlen = 0;
  dc_sasl_authenticate_req_t req = {.auth_bytes = tok,
                                    .n_auth_bytes = (int32_t)n};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  char why[512];
  dc_err_t err = dc_kclient_request(
      kc, DC_API_SASL_AUTHENTICATE, v, enc_sasl_authenticate, &req,
      dc_kclient_remaining_ms(deadline), &rd, &arena, why, sizeof(why));
  dc_sasl_authenticate_resp_t resp;
  if (err) {
    dc_seterr(errstr, errstr_size, "SASL authentication failed: %s", why);
  } else if (dc_sasl_authenticate_resp_decode(&rd, v, &resp)) {
    dc_seterr(errstr, errstr_size, "malformed SaslAuthenticate response from %s",
           kc->peer);
    err = DC_ERR__BAD_RESPONSE;
  } else if (resp.error_code) {
    err = (dc_err_t)resp.error_code;
    dc_seterr(errstr, errstr_size, "SASL authentication failed: %s",
           resp.error_message && *resp.error_message
               ? resp.error_message
               : dc_err_str(err));
  } else if (resp.n_auth_bytes > 0) {
    *out = malloc((size_t)resp.n_auth_bytes);
    if (!*out) {
      dc_seterr(errstr, errstr_size, "out of memory");
      err = DC_ERR__NOMEM;
    } else {
      memcpy(*out, resp.auth_bytes, (size_t)resp.n_auth_bytes);
      *outlen = (size_t)resp.n_auth_bytes;
    }
  }
  if (!err && v >= 1 && resp.session_lifetime_ms > 0)
    kc->session_end_ms = dc_mono_ms() + resp.session_lifetime_ms;
  dc_arena_free(&arena);
  return err;
}

static dc_err_t sasl_plain(dc_kclient_t *kc, int16_t v, int64_t deadline,
                                char *errstr, size_t errstr_size) {
  /* authzid (empty) NUL user NUL password */
  size_t ul = strlen(kc->sasl_user), pl = strlen(kc->sasl_pass);
  uint8_t *tok = malloc(ul + pl + 2);
  if (!tok) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DC_ERR__NOMEM;
  }
  tok[0] = 0;
  memcpy(tok + 1, kc->sasl_user, ul);
  tok[1 + ul] = 0;
  memcpy(tok + 2 + ul, kc->sasl_pass, pl);
  uint8_t *out = NULL;
  size_t outlen = 0;
  dc_err_t err = sasl_round(kc, v, tok, ul + pl + 2, &out, &outlen,
                                 deadline, errstr, errstr_size);
  OPENSSL_cleanse(tok, ul + pl + 2);
  free(tok);
  free(out);
  return err;
}

static dc_err_t sasl_scram(dc_kclient_t *kc, dc_scram_hash_t h, int16_t v,
                                int64_t deadline, char *errstr,
                                size_t errstr_size) {
  dc_scram_client_t *c =
      dc_scram_client_new(h, kc->sasl_user, kc->sasl_pass, NULL);
  char *msg = NULL;
  size_t ml = 0;
  uint8_t *in = NULL;
  size_t inl = 0;
  char why[300];
  dc_err_t err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  if (!c) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DC_ERR__NOMEM;
  }
  if (dc_scram_client_first(c, &msg, &ml, why, sizeof(why)))
    goto client_error;
  err = sasl_round(kc, v, msg, ml, &in, &inl, deadline, errstr, errstr_size);
  free(msg);
  msg = NULL;
  if (err)
    goto out;
  err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  if (dc_scram_client_final(c, in, inl, &msg, &ml, why, sizeof(why)))
    goto client_error;
  free(in);
  in = NULL;
  err = sasl_round(kc, v, msg, ml, &in, &inl, deadline, errstr, errstr_size);
  if (err)
    goto out;
  err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  if (dc_scram_client_verify(c, in, inl, why, sizeof(why)))
    goto client_error;
  err = DC_ERR_NO_ERROR;
  goto out;
client_error:
  dc_seterr(errstr, errstr_size, "SASL authentication with %s failed: %s",
         kc->peer, why);
out:
  if (msg) {
    OPENSSL_cleanse(msg, ml);
    free(msg);
  }
  free(in);
  dc_scram_client_destroy(c);
  return err;
}

/* OAUTHBEARER (RFC 7628): the token in one message; a refusal comes as
 * an error status, answered with a lone %x01, after which the server
 * fails the exchange and says why. */
static dc_err_t sasl_oauthbearer(dc_kclient_t *kc, int16_t v,
                                 int64_t deadline, char *errstr,
                                 size_t errstr_size) {
  size_t n = 0;
  char why[400];
  char *tok = kc->oauth_token_file
                  ? dc_oauth_token_file_read(kc->oauth_token_file, why,
                                             sizeof(why))
                  : NULL;
  if (kc->oauth_token_file && !tok) {
    dc_seterr(errstr, errstr_size, "SASL OAUTHBEARER authentication with "
              "%s failed: %s", kc->peer, why);
    return DC_ERR_SASL_AUTHENTICATION_FAILED;
  }
  char *msg = dc_oauth_client_first(tok ? tok : kc->sasl_pass, &n);
  dc_kclient_free_secret(tok);
  if (!msg) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DC_ERR__NOMEM;
  }
  uint8_t *out = NULL;
  size_t outlen = 0;
  dc_err_t err = sasl_round(kc, v, msg, n, &out, &outlen, deadline, errstr,
                            errstr_size);
  OPENSSL_cleanse(msg, n);
  free(msg);
  if (!err && outlen) {
    free(out);
    err = sasl_round(kc, v, "\x01", 1, &out, &outlen, deadline, errstr,
                     errstr_size);
    if (!err) {
      dc_seterr(errstr, errstr_size, "SASL authentication failed: %s "
                "refused the token without saying why", kc->peer);
      err = DC_ERR_SASL_AUTHENTICATION_FAILED;
    }
  }
  free(out);
  return err;
}

/* GSSAPI: Cyrus SASL's tokens back and forth until it has sent its
 * last one and the server took it. A server that never ends the
 * exchange is cut off after a few rounds (Kerberos needs three). */
static dc_err_t sasl_gssapi(dc_kclient_t *kc, const char *host, int16_t v,
                            int64_t deadline, char *errstr,
                            size_t errstr_size) {
  char why[600];
  if (!kc->gss_creds &&
      !(kc->gss_creds = dc_gssapi_creds_new(kc->krb_principal, kc->krb_keytab,
                                            why, sizeof(why)))) {
    dc_seterr(errstr, errstr_size, "SASL GSSAPI authentication with %s "
              "failed: %s", kc->peer, why);
    return DC_ERR_SASL_AUTHENTICATION_FAILED;
  }
  dc_gssapi_client_t *g =
      dc_gssapi_client_new(kc->gss_creds, kc->krb_service, host, why,
                           sizeof(why));
  if (!g) {
    dc_seterr(errstr, errstr_size, "SASL GSSAPI authentication with %s "
              "failed: %s", kc->peer, why);
    return DC_ERR_SASL_AUTHENTICATION_FAILED;
  }
  uint8_t *in = NULL;
  size_t inl = 0;
  dc_err_t err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  dc_seterr(errstr, errstr_size, "SASL GSSAPI authentication with %s "
            "failed: the server did not finish the exchange", kc->peer);
  for (int round = 0; round < 8; round++) {
    const uint8_t *o;
    size_t ol;
    int rc = dc_gssapi_client_step(g, in, inl, &o, &ol, why, sizeof(why));
    free(in);
    in = NULL;
    if (rc == DC_GSSAPI_FAILED) {
      dc_seterr(errstr, errstr_size, "SASL GSSAPI authentication with %s "
                "failed: %s", kc->peer, why);
      err = DC_ERR_SASL_AUTHENTICATION_FAILED;
      break;
    }
    err = sasl_round(kc, v, o, ol, &in, &inl, deadline, errstr, errstr_size);
    if (err || rc == DC_GSSAPI_DONE)
      break;
    err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  }
  free(in);
  dc_gssapi_client_destroy(g);
  return err;
}

dc_err_t dc_kclient_secure(dc_kclient_t *kc, const char *host,
                           int64_t deadline, char *errstr,
                           size_t errstr_size) {
  if (kc->use_tls) {
    dc_err_t err =
        dc_tls_client_handshake(kc->tls_ctx, kc->fd, host, kc->peer, deadline,
                                kc->cancel_fd, &kc->tls, errstr, errstr_size);
    if (err)
      return err;
  }
  if (!kc->use_sasl)
    return DC_ERR_NO_ERROR;
  /* Like librdkafka: ApiVersions first (allowed before authentication) to
   * learn which SaslAuthenticate versions the server speaks. */
  dc_err_t err = dc_kclient_api_versions(
      kc, dc_kclient_remaining_ms(deadline), errstr, errstr_size);
  if (err)
    return err;
  err = sasl_handshake(kc, deadline, errstr, errstr_size);
  if (err)
    return err;
  int16_t v = dc_kclient_pick_version(kc, DC_API_SASL_AUTHENTICATE);
  if (v < 0) {
    dc_seterr(errstr, errstr_size,
           "SASL authentication failed: %s does not offer SaslAuthenticate "
           "v0-2", kc->peer);
    return DC_ERR_UNSUPPORTED_VERSION;
  }
  dc_scram_hash_t h;
  if (dc_scram_hash_from_name(kc->sasl_mech, &h))
    return sasl_scram(kc, h, v, deadline, errstr, errstr_size);
  if (!strcmp(kc->sasl_mech, "OAUTHBEARER"))
    return sasl_oauthbearer(kc, v, deadline, errstr, errstr_size);
  if (!strcmp(kc->sasl_mech, "GSSAPI"))
    return sasl_gssapi(kc, host, v, deadline, errstr, errstr_size);
  return sasl_plain(kc, v, deadline, errstr, errstr_size);
}
