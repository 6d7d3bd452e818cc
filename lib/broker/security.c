/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The broker's authorizer, SASL credentials, OAUTHBEARER keys and
 * Kerberos acceptor: loading
 * them when the broker starts, swapping them on reload (ReloadSecurity,
 * SIGHUP), and the authorization check every handler uses. Rules:
 * lib/broker/acl.h.
 *
 * Threading: loop thread only, like the rest of dc_broker_t.
 */
#include "broker/acl.h"
#include "broker/broker_int.h"
#include "broker/credentials.h"
#include "broker/jwt.h"
#include "broker/sasl_gssapi.h"
#include "common/text.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static struct dc_gssapi_acceptor *new_acceptor(const dc_broker_t *b,
                                               char *errstr,
                                               size_t errstr_size) {
  const char *svc = b->opts.kerberos_service_name;
  return dc_gssapi_acceptor_new(svc ? svc : "kafka", b->opts.kerberos_keytab,
                                b->opts.kerberos_rules, errstr, errstr_size);
}

int dc_broker_security_init(dc_broker_t *b, char *errstr, size_t errstr_size) {
  if (b->opts.acl_path) {
    b->acl = dc_acl_load(b->opts.acl_path, errstr, errstr_size);
    if (!b->acl)
      return -1;
  }
  if (b->opts.credentials_path) {
    b->creds = dc_credentials_load(b->opts.credentials_path, errstr,
                                   errstr_size);
    if (!b->creds)
      return -1;
  }
  if (b->opts.oauth_jwks_path) {
    b->jwks = dc_jwks_load(b->opts.oauth_jwks_path, errstr, errstr_size);
    if (!b->jwks)
      return -1;
  }
  b->oauth = b->jwks || b->opts.oauth_unsecured;
  if (b->opts.kerberos && !(b->gss = new_acceptor(b, errstr, errstr_size)))
    return -1;
  return 0;
}

const dc_jwt_policy_t *dc_broker_oauth_policy(dc_broker_t *b,
                                              dc_jwt_policy_t *p) {
  if (!b->oauth)
    return NULL;
  *p = (dc_jwt_policy_t){
      .jwks = b->jwks,
      .allow_unsecured = b->opts.oauth_unsecured,
      .issuer = b->opts.oauth_issuer,
      .audience = b->opts.oauth_audience,
      .principal_claim = b->opts.oauth_principal_claim,
      .clock_skew_s = b->opts.oauth_clock_skew_s,
      .now_s = (int64_t)time(NULL)};
  return p;
}

void dc_broker_security_free(dc_broker_t *b) {
  dc_acl_destroy(b->acl);
  b->acl = NULL;
  dc_credentials_destroy(b->creds);
  b->creds = NULL;
  dc_jwks_free(b->jwks);
  b->jwks = NULL;
  dc_gssapi_acceptor_unref(b->gss);
  b->gss = NULL;
}

/* Every file is read before any is swapped in, so a bad one leaves the
 * broker exactly as it was (old rules, credentials and keys). */
int dc_broker_reload_security(dc_broker_t *b, char *errstr,
                              size_t errstr_size) {
  if (errstr_size)
    errstr[0] = '\0';
  dc_acl_t *acl = NULL;
  dc_credentials_t *creds = NULL;
  char why[512];
  if (b->opts.acl_path &&
      !(acl = dc_acl_load(b->opts.acl_path, why, sizeof(why)))) {
    dc_seterr(errstr, errstr_size, "ACL file not reloaded, old rules kept: %s",
             why);
    return -1;
  }
  if (b->opts.credentials_path &&
      !(creds = dc_credentials_load(b->opts.credentials_path, why,
                                    sizeof(why)))) {
    dc_acl_destroy(acl);
    dc_seterr(errstr, errstr_size,
             "credentials not reloaded, old ones kept (ACL file not reloaded "
             "either): %s",
             why);
    return -1;
  }
  dc_jwks_t *jwks = NULL;
  if (b->opts.oauth_jwks_path &&
      !(jwks = dc_jwks_load(b->opts.oauth_jwks_path, why, sizeof(why)))) {
    dc_acl_destroy(acl);
    dc_credentials_destroy(creds);
    dc_seterr(errstr, errstr_size,
              "OAUTHBEARER keys not reloaded, old ones kept (ACL file and "
              "credentials not reloaded either): %s",
              why);
    return -1;
  }
  struct dc_gssapi_acceptor *gss = NULL;
  if (b->opts.kerberos && !(gss = new_acceptor(b, why, sizeof(why)))) {
    dc_acl_destroy(acl);
    dc_credentials_destroy(creds);
    dc_jwks_free(jwks);
    dc_seterr(errstr, errstr_size,
              "Kerberos keytab not reloaded, old keys kept (ACL file, "
              "credentials and OAUTHBEARER keys not reloaded either): %s",
              why);
    return -1;
  }
  if (b->opts.kerberos) {
    dc_gssapi_acceptor_unref(b->gss); /* exchanges under way keep theirs */
    b->gss = gss;
  }
  if (b->opts.oauth_jwks_path) {
    dc_jwks_free(b->jwks);
    b->jwks = jwks;
  }
  if (b->opts.acl_path) {
    dc_acl_destroy(b->acl);
    b->acl = acl;
  }
  if (b->opts.credentials_path) {
    dc_credentials_destroy(b->creds);
    b->creds = creds;
  }
  return 0;
}

bool dc_broker_authorized(const dc_req_t *r, int op, int8_t resource_type,
                          const char *resource_name, char *why,
                          size_t why_size) {
  bool ok = dc_acl_authorize(r->b->acl, r->b->opts.super_users,
                             r->conn->principal, op, resource_type,
                             resource_name, r->hdr->client_id, why, why_size);
  r->b->metrics.authz_denied += !ok;
  return ok;
}
