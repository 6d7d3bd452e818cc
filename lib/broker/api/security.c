/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The broker's authorizer, SASL credentials, OAUTHBEARER keys and
 * Kerberos acceptor: loading
 * them when the broker starts, swapping them on reload (ReloadSecurity,
 * SIGHUP), and the authorization check every handler uses. Rules:
 * lib/broker/auth/acl.h.
 *
 * Threading: loop thread only, like the rest of dc_broker_t.
 */
#include "broker/auth/acl.h"
#include "broker/core/broker_int.h"
#include "broker/auth/credentials.h"
#include "broker/auth/jwt.h"
#include "broker/auth/sasl_gssapi.h"
#include "codec/proto.h"
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

static dc_reload_file_report_t *report(dc_reload_file_report_t *files,
                                       int *n, const char *what,
                                       const char *path) {
  dc_reload_file_report_t *f = &files[(*n)++];
  f->what = what;
  snprintf(f->path, sizeof(f->path), "%s", path ? path : "");
  f->error_code = 0;
  f->message[0] = '\0';
  return f;
}

static void failed(dc_reload_file_report_t *f, const char *why) {
  f->error_code = DC_ERR_INVALID_CONFIG;
  snprintf(f->message, sizeof(f->message), "%s", why);
}

/* The acceptor is made anew from the keytab; exchanges under way keep the
 * old one (they hold a reference). */
static void reload_keytab(dc_broker_t *b, dc_reload_file_report_t *f) {
  char why[512];
  struct dc_gssapi_acceptor *gss = new_acceptor(b, why, sizeof(why));
  const struct dc_gssapi_acceptor *named = gss ? gss : b->gss;
  if (named)
    snprintf(f->path, sizeof(f->path), "%s",
             dc_gssapi_acceptor_keytab(named));
  if (!gss) {
    failed(f, why);
    return;
  }
  dc_gssapi_acceptor_unref(b->gss);
  b->gss = gss;
}

/* Each file is read whole before it replaces what is in force, and on its
 * own: one bad file keeps its old contents and stops no other. */
int dc_broker_reload_security(dc_broker_t *b,
                              dc_reload_file_report_t *files) {
  int n = 0;
  char why[512];
  const dc_broker_opts_t *o = &b->opts;
  if (o->acl_path) {
    dc_reload_file_report_t *f = report(files, &n, DC_RELOAD_ACL, o->acl_path);
    dc_acl_t *acl = dc_acl_load(o->acl_path, why, sizeof(why));
    if (acl) {
      dc_acl_destroy(b->acl);
      b->acl = acl;
      b->acl_generation++;
    } else {
      failed(f, why);
    }
  }
  if (o->credentials_path) {
    dc_reload_file_report_t *f =
        report(files, &n, DC_RELOAD_CREDENTIALS, o->credentials_path);
    dc_credentials_t *creds =
        dc_credentials_load(o->credentials_path, why, sizeof(why));
    if (creds) {
      dc_credentials_destroy(b->creds);
      b->creds = creds;
    } else {
      failed(f, why);
    }
  }
  if (o->oauth_jwks_path) {
    dc_reload_file_report_t *f =
        report(files, &n, DC_RELOAD_JWKS, o->oauth_jwks_path);
    dc_jwks_t *jwks = dc_jwks_load(o->oauth_jwks_path, why, sizeof(why));
    if (jwks) {
      dc_jwks_free(b->jwks);
      b->jwks = jwks;
    } else {
      failed(f, why);
    }
  }
  if (o->kerberos)
    reload_keytab(b, report(files, &n, DC_RELOAD_KEYTAB, o->kerberos_keytab));
  return n;
}

int dc_reload_files_say(const dc_reload_file_report_t *files, int n,
                        bool failed_only, char *out, size_t size) {
  int bad = 0;
  size_t len = 0;
  if (size)
    out[0] = '\0';
  for (int i = 0; i < n; i++) {
    const dc_reload_file_report_t *f = &files[i];
    bad += f->error_code != 0;
    if ((failed_only && !f->error_code) || len + 1 >= size)
      continue;
    if (len)
      len += (size_t)snprintf(out + len, size - len, "; ");
    if (len + 1 < size)
      len += (size_t)dc_reload_file_say(out + len, size - len, f->what,
                                        f->path,
                                        f->error_code ? f->message : NULL);
  }
  return bad;
}
