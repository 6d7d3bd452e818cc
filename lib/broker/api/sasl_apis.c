/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SASL on the wire (SaslHandshake 17, SaslAuthenticate 36, and the legacy
 * raw-token frames that follow SaslHandshake v0) and dynconf's
 * ReloadSecurity (20000). The mechanisms themselves live in auth/
 * (sasl_server.h).
 *
 * Connection states (dc_conn_auth_t.state, lib/broker/core/broker.h):
 *   HANDSHAKE     a SASL listener's new connection: only ApiVersions and
 *                 SaslHandshake are served, anything else closes it (Kafka
 *                 does the same).
 *   AUTHENTICATE  after SaslHandshake v1: SaslAuthenticate requests carry
 *                 the tokens (librdkafka).
 *   RAW           after SaslHandshake v0: the next frames are bare tokens
 *                 and the replies bare size-prefixed tokens (kafka-python).
 *   DONE          authenticated as "User:" + the SASL user name, whole (a
 *                 name that would make it exceed DC_PRINCIPAL_MAX fails).
 * A failed authentication answers SASL_AUTHENTICATION_FAILED (58) with the
 * reason (SaslAuthenticate) or closes without a reply (raw path: the
 * protocol has no way to say why), and the connection closes either way.
 */
#include "broker/core/broker_int.h"
#include "broker/auth/acl.h"
#include "broker/auth/credentials.h"
#include "broker/auth/login.h"
#include "broker/auth/sasl_gssapi.h"
#include "broker/auth/sasl_server.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A SASL step on the log-in thread (login.h). What the step reads is the
 * job's while it is in flight: the exchange, references to the
 * credentials, JWKS and Kerberos acceptor in force when it was queued (a
 * reload meanwhile does not pull them away), and a copy of the token.
 * Only the loop thread touches the connection's side. */
typedef struct dc_sasl_job {
  int kind; /* DC_PENDING_LOGIN: first, as in everything pending */
  dc_login_work_t work;
  struct dc_sasl_server *sasl;
  dc_credentials_t *creds;    /* a reference, or NULL */
  dc_jwks_t *jwks;            /* a reference, or NULL */
  dc_jwt_policy_t policy;     /* .jwks is the reference above */
  bool oauth;                 /* policy applies */
  dc_gssapi_acceptor_t *gss;  /* a reference, or NULL */
  uint8_t *in;                /* the client's token, owned */
  size_t inlen;
  int rc;                     /* the outcome (DC_SASL_*) */
  uint8_t *out;               /* the reply token, owned */
  size_t outlen;
  char why[256];
  /* The connection's side, loop thread only. */
  void *token;                /* the connection's, for the answer */
  dc_conn_auth_t *auth;       /* the connection's; unused once abandoned */
  bool abandoned;             /* the connection closed: drop the answer */
  bool raw;                   /* a bare token frame (SaslHandshake v0) */
  int16_t api_version;        /* SaslAuthenticate's */
  int32_t correlation_id;
  char peer[64];
  char listener[64];
  int64_t due_ms;             /* a failure is answered at this time */
  struct dc_sasl_job *next;   /* held failures */
} sasl_job_t;

static sasl_job_t *job_of(dc_login_work_t *w) {
  return (sasl_job_t *)((char *)w - offsetof(sasl_job_t, work));
}

static void sasl_job_free(sasl_job_t *job) {
  if (!job)
    return;
  dc_sasl_server_destroy(job->sasl);
  dc_credentials_destroy(job->creds);
  dc_jwks_free(job->jwks);
  dc_gssapi_acceptor_unref(job->gss);
  free(job->in);
  free(job->out);
  free(job);
}

/* The step, with what it was queued with. Log-in thread. */
static void sasl_job_run(dc_login_work_t *w) {
  sasl_job_t *job = job_of(w);
  dc_sasl_server_set_oauth(job->sasl, job->oauth ? &job->policy : NULL);
  dc_sasl_server_set_gssapi(job->sasl, job->gss);
  job->rc = dc_sasl_server_step(job->sasl, job->creds, job->in, job->inlen,
                                &job->out, &job->outlen, job->why,
                                sizeof(job->why));
}

static void sasl_job_drop(dc_login_work_t *w) { sasl_job_free(job_of(w)); }

void dc_conn_auth_clear(dc_conn_auth_t *a) {
  dc_sasl_server_destroy(a->sasl);
  a->sasl = NULL;
  free(a->principal);
  a->principal = NULL;
}

/* The enabled mechanisms as an arena array. */
static int32_t enabled_mechanisms(const dc_broker_t *b, dc_arena_t *arena,
                                  char ***outp) {
  const char *list = b->opts.sasl_enabled_mechanisms
                         ? b->opts.sasl_enabled_mechanisms
                         : DC_SASL_DEFAULT_MECHANISMS;
  char **out = dc_arena_alloc(arena, 8 * sizeof(char *));
  int32_t n = 0;
  const char *p = list;
  while (out && *p && n < 8) {
    size_t len = strcspn(p, ", ");
    if (len) {
      char *m = dc_arena_alloc(arena, len + 1);
      if (!m)
        break;
      memcpy(m, p, len);
      m[len] = '\0';
      out[n++] = m;
    }
    p += len;
    p += strspn(p, ", ");
  }
  *outp = out;
  return n;
}

/* KIP-368: an authenticated connection starts over with the mechanism
 * it used; any other one ends it. */
static int reauth_handshake(dc_req_t *r, const dc_sasl_handshake_req_t *req,
                            dc_sasl_handshake_resp_t *resp) {
  dc_conn_auth_t *a = r->conn->auth;
  if (strcmp(req->mechanism, a->mechanism)) {
    resp->error_code = DC_ERR_ILLEGAL_SASL_STATE;
    r->close_after = true;
    snprintf(r->why, sizeof(r->why),
             "re-authentication with %.40s, not the connection's %s",
             req->mechanism, a->mechanism);
    return dc_sasl_handshake_resp_encode(r->out, r->hdr->api_version, resp);
  }
  a->sasl = dc_sasl_server_new(req->mechanism);
  if (!a->sasl)
    return DC_ERR__NOMEM;
  a->reauth = true;
  a->state = DC_AUTH_AUTHENTICATE;
  return dc_sasl_handshake_resp_encode(r->out, r->hdr->api_version, resp);
}

int dc_handle_sasl_handshake(dc_req_t *r) {
  dc_sasl_handshake_req_t req;
  if (dc_sasl_handshake_req_decode(r->rd, r->hdr->api_version, &req))
    return r->rd->err;
  dc_sasl_handshake_resp_t resp = {0};
  resp.n_mechanisms = enabled_mechanisms(r->b, r->arena, &resp.mechanisms);
  dc_conn_auth_t *a = r->conn->auth;
  if (a && a->state == DC_AUTH_DONE && r->hdr->api_version >= 1)
    return reauth_handshake(r, &req, &resp);
  if (!a || a->state != DC_AUTH_HANDSHAKE) {
    /* No SASL on this listener, or a second handshake. */
    resp.error_code = DC_ERR_ILLEGAL_SASL_STATE;
    r->close_after = true;
    snprintf(r->why, sizeof(r->why),
             "SaslHandshake %s on listener %s", a && a->state != DC_AUTH_NONE
                 ? "repeated" : "on a listener without SASL",
             r->conn->listener ? r->conn->listener : "?");
    return dc_sasl_handshake_resp_encode(r->out, r->hdr->api_version, &resp);
  }
  bool enabled = false;
  for (int32_t i = 0; i < resp.n_mechanisms; i++)
    enabled |= !strcmp(resp.mechanisms[i], req.mechanism);
  if (!enabled || !dc_sasl_mechanism_known(req.mechanism)) {
    /* The client may try another one: the connection stays open. */
    dc_log(DC_LOG_INFO, "client %s asked for SASL mechanism '%s', which is "
                        "not enabled", r->conn->peer, req.mechanism);
    resp.error_code = DC_ERR_UNSUPPORTED_SASL_MECHANISM;
    return dc_sasl_handshake_resp_encode(r->out, r->hdr->api_version, &resp);
  }
  a->sasl = dc_sasl_server_new(req.mechanism);
  if (!a->sasl)
    return DC_ERR__NOMEM;
  snprintf(a->mechanism, sizeof(a->mechanism), "%s", req.mechanism);
  a->state = r->hdr->api_version == 0 ? DC_AUTH_RAW : DC_AUTH_AUTHENTICATE;
  return dc_sasl_handshake_resp_encode(r->out, r->hdr->api_version, &resp);
}

/* Sets a->principal to "User:" + the authenticated name, whole; -1 with
 * why (fit for the client) when it would exceed DC_PRINCIPAL_MAX, or when
 * a re-authentication names another principal. */
static int take_principal(dc_conn_auth_t *a, char *why, size_t why_size) {
  const char *user = dc_sasl_server_user(a->sasl);
  size_t n = 5 + strlen(user);
  if (a->reauth && (strncmp(a->principal, "User:", 5) ||
                    strcmp(a->principal + 5, user))) {
    dc_seterr(why, why_size, "Authentication failed: re-authentication as "
              "User:%.300s, not the connection's %.300s", user, a->principal);
    return -1;
  }
  if (n > DC_PRINCIPAL_MAX) {
    dc_seterr(why, why_size, "Authentication failed: the principal User:NAME "
             "would be %zu bytes, over the limit of %d", n, DC_PRINCIPAL_MAX);
    return -1;
  }
  char *p = malloc(n + 1);
  if (!p) {
    dc_seterr(why, why_size, "Authentication failed: out of memory");
    return -1;
  }
  memcpy(p, "User:", 5);
  memcpy(p + 5, user, n - 5 + 1);
  free(a->principal);
  a->principal = p;
  return 0;
}

/* KIP-368: the session just authenticated lasts until the token expires
 * (OAUTHBEARER, with the clock skew allowed) or connections.max.reauth.ms
 * passes, whichever comes first; neither = unlimited. */
static void start_session(const dc_broker_t *b, dc_conn_auth_t *a) {
  int64_t life = b->opts.connections_max_reauth_ms;
  int64_t exp_s = dc_sasl_server_expires_s(a->sasl);
  if (exp_s > 0) {
    int64_t left = (exp_s + b->opts.oauth_clock_skew_s) * 1000 - dc_wall_ms();
    if (left < 1)
      left = 1;
    if (life <= 0 || left < life)
      life = left;
  }
  a->lifetime_ms = life > 0 ? life : 0;
  a->session_end_ms = life > 0 ? dc_mono_ms() + life : 0;
  a->reauth = false;
}

/* A finished step's outcome on the connection: on DONE the principal and
 * a new session, metrics, the log line. Returns the step's result, DONE
 * turned FAILED when the principal cannot be taken. Loop thread. */
static int auth_finish(dc_broker_t *b, dc_conn_auth_t *a, const char *peer,
                       const char *listener, int rc, uint8_t **out,
                       size_t *outlen, char *why, size_t why_size) {
  if (rc == DC_SASL_DONE && take_principal(a, why, why_size)) {
    free(*out); /* no server-final: the client must not think it is in */
    *out = NULL;
    *outlen = 0;
    rc = DC_SASL_FAILED;
  }
  if (rc == DC_SASL_DONE || rc == DC_SASL_FAILED) {
    int m = dc_metrics_mech(a->mechanism);
    if (rc == DC_SASL_DONE)
      b->metrics.auth_ok[m]++;
    else
      b->metrics.auth_failed[m]++;
  }
  if (rc == DC_SASL_DONE) {
    start_session(b, a);
    a->state = DC_AUTH_DONE;
    const char *krb = dc_sasl_server_kerberos_principal(a->sasl);
    dc_log(DC_LOG_DEBUG, "client %s on listener %s "
           "authenticated as %s (%s%s%s)", peer, listener,
           a->principal, a->mechanism, krb ? " " : "", krb ? krb : "");
    dc_sasl_server_destroy(a->sasl); /* the exchange is over */
    a->sasl = NULL;
  } else if (rc == DC_SASL_FAILED) {
    a->failed = true;
    dc_log(DC_LOG_WARN, "SASL %s authentication of client %s on listener %s "
                        "failed: %s", a->mechanism, peer, listener, why);
  }
  return rc;
}

/* Runs one step here; on DONE records the principal. Returns the step
 * result. */
static int auth_step(dc_broker_t *b, const dc_conn_info_t *conn,
                     const uint8_t *in, size_t inlen, uint8_t **out,
                     size_t *outlen, char *why, size_t why_size) {
  dc_conn_auth_t *a = conn->auth;
  dc_jwt_policy_t policy;
  dc_sasl_server_set_oauth(a->sasl, dc_broker_oauth_policy(b, &policy));
  dc_sasl_server_set_gssapi(a->sasl, b->gss);
  int rc = dc_sasl_server_step(a->sasl, b->creds, in, inlen, out, outlen, why,
                               why_size);
  return auth_finish(b, a, conn->peer, conn->listener, rc, out, outlen, why,
                     why_size);
}

/* Hands the step to the log-in thread when the connection can wait for
 * its answer (DC_HANDLE_DEFER); the exchange and references to what it
 * reads go with it. 1 = deferred, 0 = the caller runs it here, -1 = out
 * of memory. */
static int auth_defer(dc_broker_t *b, const dc_conn_info_t *conn,
                      const uint8_t *in, size_t inlen, bool raw, int16_t v,
                      int32_t correlation_id) {
  if (!b->login || !conn->pending)
    return 0;
  sasl_job_t *job = calloc(1, sizeof(*job));
  if (!job || !(job->in = malloc(inlen ? inlen : 1))) {
    free(job);
    return -1;
  }
  dc_conn_auth_t *a = conn->auth;
  if (inlen)
    memcpy(job->in, in, inlen);
  job->inlen = inlen;
  job->kind = DC_PENDING_LOGIN;
  job->work.run = sasl_job_run;
  job->work.drop = sasl_job_drop;
  job->work.sink = DC_LOGIN_SASL;
  job->sasl = a->sasl;
  a->sasl = NULL; /* the job's until it comes back */
  job->creds = dc_credentials_ref(b->creds);
  if (dc_broker_oauth_policy(b, &job->policy)) {
    job->oauth = true;
    job->jwks = dc_jwks_ref(b->jwks);
    job->policy.jwks = job->jwks;
  }
  job->gss = b->gss ? dc_gssapi_acceptor_ref(b->gss) : NULL;
  job->token = conn->token;
  job->auth = a;
  job->raw = raw;
  job->api_version = v;
  job->correlation_id = correlation_id;
  snprintf(job->peer, sizeof(job->peer), "%s", conn->peer);
  snprintf(job->listener, sizeof(job->listener), "%s", conn->listener);
  *conn->pending = job;
  dc_login_submit(b->login, &job->work);
  return 1;
}

int dc_handle_sasl_authenticate(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_sasl_authenticate_req_t req;
  if (dc_sasl_authenticate_req_decode(r->rd, v, &req))
    return r->rd->err;
  dc_sasl_authenticate_resp_t resp = {0};
  dc_conn_auth_t *a = r->conn->auth;
  if (!a || a->state != DC_AUTH_AUTHENTICATE || !a->sasl) {
    resp.error_code = DC_ERR_ILLEGAL_SASL_STATE;
    resp.error_message = "SaslAuthenticate is only valid after SaslHandshake v1";
    r->close_after = true;
    snprintf(r->why, sizeof(r->why), "%s", resp.error_message);
    return dc_sasl_authenticate_resp_encode(r->out, v, &resp);
  }
  int d = auth_defer(r->b, r->conn, req.auth_bytes, (size_t)req.n_auth_bytes,
                     false, v, r->hdr->correlation_id);
  if (d) {
    r->deferred = d > 0;
    return d > 0 ? 0 : DC_ERR__NOMEM;
  }
  uint8_t *tok = NULL;
  size_t toklen = 0;
  char why[256] = "";
  int rc = auth_step(r->b, r->conn, req.auth_bytes, (size_t)req.n_auth_bytes,
                     &tok, &toklen, why, sizeof(why));
  if (rc == DC_SASL_FAILED) {
    resp.error_code = DC_ERR_SASL_AUTHENTICATION_FAILED;
    resp.error_message = why;
    r->error = resp.error_code;
    r->close_after = true;
    snprintf(r->why, sizeof(r->why), "SASL authentication failed: %s", why);
  } else {
    resp.auth_bytes = tok;
    resp.n_auth_bytes = (int32_t)toklen;
    if (rc == DC_SASL_DONE)
      resp.session_lifetime_ms = a->lifetime_ms;
  }
  int err = dc_sasl_authenticate_resp_encode(r->out, v, &resp);
  free(tok);
  return err;
}

int dc_broker_handle_raw_token(dc_broker_t *b, const dc_conn_info_t *conn,
                               const uint8_t *payload, size_t len,
                               dc_buf_t *out, char *errstr,
                               size_t errstr_size) {
  int d = auth_defer(b, conn, payload, len, true, 0, 0);
  if (d) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return d > 0 ? DC_HANDLE_DEFER : DC_HANDLE_CLOSE;
  }
  uint8_t *tok = NULL;
  size_t toklen = 0;
  char why[256] = "";
  int rc = auth_step(b, conn, payload, len, &tok, &toklen, why, sizeof(why));
  if (rc == DC_SASL_FAILED) {
    free(tok);
    dc_seterr(errstr, errstr_size, "SASL authentication failed: %s", why);
    return DC_HANDLE_CLOSE;
  }
  /* A reply token is a bare size-prefixed frame (an empty one for PLAIN,
   * which kafka-python waits for). GSSAPI's last step has no reply, as
   * Kafka's: its clients send their next request straight away. */
  if (rc == DC_SASL_DONE && !toklen &&
      !strcmp(conn->auth->mechanism, "GSSAPI")) {
    free(tok);
    return DC_HANDLE_OK;
  }
  size_t frame = dc_wr_frame_begin(out);
  if (toklen)
    dc_buf_append(out, tok, toklen);
  dc_wr_frame_end(out, frame);
  free(tok);
  if (out->err) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DC_HANDLE_CLOSE;
  }
  return DC_HANDLE_OK;
}

/* The TLS reports as the response's listeners (arena copies). */
static int put_listeners(dc_req_t *r, dc_reload_resp_t *resp,
                         const dc_reload_report_t *reports, int n) {
  resp->listeners = dc_arena_alloc(r->arena, (size_t)(n ? n : 1) *
                                                 sizeof(*resp->listeners));
  if (!resp->listeners)
    return DC_ERR__NOMEM;
  resp->n_listeners = n;
  for (int i = 0; i < n; i++) {
    dc_reload_listener_t *l = &resp->listeners[i];
    l->listener_name = dc_arena_strdup(r->arena, reports[i].listener);
    l->error_code = reports[i].error_code;
    l->error_message = reports[i].error_code
                           ? dc_arena_strdup(r->arena, reports[i].message)
                           : NULL;
    l->subject = *reports[i].subject
                     ? dc_arena_strdup(r->arena, reports[i].subject)
                     : NULL;
    l->not_after_ms = reports[i].not_after_ms;
  }
  return 0;
}

/* The files' outcomes: an entry each from v1; in v0, whose response has
 * no place for them, the top-level error names the files that failed. */
static int put_files(dc_req_t *r, dc_reload_resp_t *resp,
                     const dc_reload_file_report_t *files, int n) {
  char line[4096];
  if (r->hdr->api_version < 1) {
    if (dc_reload_files_say(files, n, true, line, sizeof(line))) {
      resp->error_code = DC_ERR_INVALID_CONFIG;
      resp->error_message = dc_arena_strdup(r->arena, line);
    }
    return 0;
  }
  resp->files = dc_arena_alloc(r->arena, (size_t)(n ? n : 1) *
                                             sizeof(*resp->files));
  if (!resp->files)
    return DC_ERR__NOMEM;
  resp->n_files = n;
  for (int i = 0; i < n; i++) {
    dc_reload_file_t *f = &resp->files[i];
    f->what = dc_arena_strdup(r->arena, files[i].what);
    f->path = *files[i].path ? dc_arena_strdup(r->arena, files[i].path) : NULL;
    f->error_code = files[i].error_code;
    f->error_message = files[i].error_code
                           ? dc_arena_strdup(r->arena, files[i].message)
                           : NULL;
  }
  return 0;
}

int dc_handle_reload_security(dc_req_t *r) {
  int16_t v = r->hdr->api_version;
  dc_reload_req_t req;
  if (dc_reload_req_decode(r->rd, v, &req))
    return r->rd->err;
  dc_reload_resp_t resp = {0};
  char why[512] = "";
  if (!dc_broker_authorized(r, DC_ACL_ALTER, DC_RES_BROKER, r->b->node_name,
                            why, sizeof(why))) {
    resp.error_code = DC_ERR_CLUSTER_AUTHORIZATION_FAILED;
    resp.error_message = dc_arena_strdup(r->arena, why);
    return dc_reload_resp_encode(r->out, v, &resp);
  }
  enum { MAX_REPORTS = 16 };
  dc_reload_report_t reports[MAX_REPORTS];
  int n = 0;
  if (r->b->opts.reload_tls)
    n = r->b->opts.reload_tls(r->b->opts.reload_opaque, req.listener_name,
                              reports, MAX_REPORTS);
  if (n < 0) {
    resp.error_code = DC_ERR_INVALID_REQUEST;
    snprintf(why, sizeof(why), "no TLS listener named '%s'",
             req.listener_name ? req.listener_name : "");
    resp.error_message = dc_arena_strdup(r->arena, why);
    return dc_reload_resp_encode(r->out, v, &resp);
  }
  dc_reload_file_report_t files[DC_RELOAD_FILES_MAX];
  int nf = dc_broker_reload_security(r->b, files);
  if (put_listeners(r, &resp, reports, n) || put_files(r, &resp, files, nf))
    return DC_ERR__NOMEM;
  char line[4096];
  int bad = dc_reload_files_say(files, nf, false, line, sizeof(line));
  dc_log(bad ? DC_LOG_WARN : DC_LOG_INFO, "%s asked for a security reload "
         "from %s: %d TLS listener(s)%s%s", r->conn->principal, r->conn->peer,
         n, nf ? "; " : "", line);
  return dc_reload_resp_encode(r->out, v, &resp);
}

/* ---- the log-in thread's answers ----------------------------------------- */

int dc_broker_login_init(dc_broker_t *b, char *errstr, size_t errstr_size) {
  b->login_held_tail = &b->login_held;
  b->login = dc_login_new(errstr, errstr_size);
  return b->login ? 0 : -1;
}

void dc_broker_login_free(dc_broker_t *b) {
  dc_login_destroy(b->login);
  b->login = NULL;
  while (b->login_held) {
    sasl_job_t *job = b->login_held;
    b->login_held = job->next;
    sasl_job_free(job);
  }
  b->login_held_tail = &b->login_held;
}

void dc_broker_login_abandon(void *pending) {
  ((sasl_job_t *)pending)->abandoned = true;
}

dc_login_t *dc_broker_login(dc_broker_t *b) { return b->login; }

int dc_broker_login_fd(const dc_broker_t *b) {
  return b->login ? dc_login_fd(b->login, DC_LOGIN_SASL) : -1;
}

int64_t dc_broker_login_held_due(const dc_broker_t *b) {
  const sasl_job_t *job = b->login_held;
  if (!job)
    return -1;
  return job->abandoned || job->due_ms <= dc_mono_ms() ? 0 : job->due_ms;
}

/* SaslAuthenticate's answer to a step, as a whole frame into out. */
static void encode_authenticate(sasl_job_t *job,
                                const dc_conn_auth_t *a, dc_buf_t *out) {
  size_t frame = dc_wr_frame_begin(out);
  dc_resp_header_encode(out, DC_API_SASL_AUTHENTICATE, job->api_version,
                        job->correlation_id);
  dc_sasl_authenticate_resp_t resp = {0};
  if (job->rc == DC_SASL_FAILED) {
    resp.error_code = DC_ERR_SASL_AUTHENTICATION_FAILED;
    resp.error_message = job->why;
  } else {
    resp.auth_bytes = job->out;
    resp.n_auth_bytes = (int32_t)job->outlen;
    if (job->rc == DC_SASL_DONE)
      resp.session_lifetime_ms = a->lifetime_ms;
  }
  if (dc_sasl_authenticate_resp_encode(out, job->api_version, &resp))
    out->err = true;
  dc_wr_frame_end(out, frame);
}

/* The answer to a finished step, to cb: a SaslAuthenticate response, a
 * bare token frame (after SaslHandshake v0; none for a failure, nor for
 * GSSAPI's last step, as dc_broker_handle_raw_token), or NULL when it
 * cannot be encoded (the connection then closes). */
static void login_answer(sasl_job_t *job, dc_broker_answer_cb *cb,
                         void *opaque) {
  const dc_conn_auth_t *a = job->auth;
  dc_buf_t out;
  dc_buf_init(&out);
  if (!job->raw) {
    encode_authenticate(job, a, &out);
  } else if (job->rc != DC_SASL_FAILED &&
             !(job->rc == DC_SASL_DONE && !job->outlen &&
               !strcmp(a->mechanism, "GSSAPI"))) {
    size_t frame = dc_wr_frame_begin(&out);
    if (job->outlen)
      dc_buf_append(&out, job->out, job->outlen);
    dc_wr_frame_end(&out, frame);
  }
  static const uint8_t nothing[1];
  cb(opaque, job->token, out.err ? NULL : out.len ? out.data : nothing,
     out.len);
  dc_buf_free(&out);
}

/* Answers the held failures that are due, drops those whose client left. */
static void release_held(dc_broker_t *b, dc_broker_answer_cb *cb,
                         void *opaque) {
  while (dc_broker_login_held_due(b) == 0) {
    sasl_job_t *job = b->login_held;
    b->login_held = job->next;
    if (!b->login_held)
      b->login_held_tail = &b->login_held;
    if (!job->abandoned)
      login_answer(job, cb, opaque);
    sasl_job_free(job);
  }
}

void dc_broker_login_answers(dc_broker_t *b, dc_broker_answer_cb *cb,
                             void *opaque) {
  dc_login_work_t *w;
  while (b->login && (w = dc_login_take_done(b->login, DC_LOGIN_SASL))) {
    sasl_job_t *job = job_of(w);
    if (job->abandoned) {
      sasl_job_free(job);
      continue;
    }
    dc_conn_auth_t *a = job->auth;
    a->sasl = job->sasl; /* back with the connection */
    job->sasl = NULL;
    job->rc = auth_finish(b, a, job->peer, job->listener, job->rc, &job->out,
                          &job->outlen, job->why, sizeof(job->why));
    if (job->rc == DC_SASL_FAILED && b->opts.failed_auth_delay_ms > 0) {
      job->due_ms = dc_mono_ms() + b->opts.failed_auth_delay_ms;
      job->next = NULL;
      *b->login_held_tail = job;
      b->login_held_tail = &job->next;
      continue;
    }
    login_answer(job, cb, opaque);
    sasl_job_free(job);
  }
  release_held(b, cb, opaque);
}
