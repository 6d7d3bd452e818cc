/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end security of a real dynconfd: TLS, mutual TLS, SASL (SCRAM and
 * PLAIN, over plaintext and TLS) with librdkafka 2.0.2 as the client, the
 * errors a user sees for a wrong password, a mechanism the server does not
 * offer and untrusted certificates, and the keystore reload:
 * ReloadSecurity and SIGHUP swap the server certificate for new connections
 * while connections already open keep working, and a bad new file keeps the
 * old certificate.
 *
 * Certificates are made at test time by tests/gen_certs.sh (openssl).
 */
#include "../tap.h"
#include "../testutil.h"

#include "codec/proto.h"

#include "dynconf.h"

#include <librdkafka/rdkafka.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define RES_CLIENT ((rd_kafka_ResourceType_t)9)
#define ADMIN_TIMEOUT_MS 6000

static char g_dir[512], g_certs[600], g_creds[600];
static char g_log[600];
static dc_tu_daemon_t g_d;

static const char *cert(const char *name) { return dc_tu_path(g_certs, name); }

/* ---- librdkafka clients ---------------------------------------------- */

typedef struct errs {
  int n;
  int last_err;
  char text[2048]; /* every error string, concatenated */
} errs_t;

/* librdkafka's own log lines repeat what error_cb records: keep TAP
 * output readable. */
static void quiet_log(const rd_kafka_t *rk, int level, const char *fac,
                      const char *buf) {
  (void)rk, (void)level, (void)fac, (void)buf;
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason,
                     void *opaque) {
  (void)rk;
  errs_t *e = opaque;
  e->n++;
  e->last_err = err;
  size_t used = strlen(e->text);
  snprintf(e->text + used, sizeof(e->text) - used, "%s | ", reason);
}

/* A client on port with the given security settings (NULL-terminated
 * key/value list). */
static rd_kafka_t *client(int port, const char *const *kv, errs_t *e) {
  char errstr[512], bs[64];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  rd_kafka_conf_set(conf, "bootstrap.servers", bs, NULL, 0);
  rd_kafka_conf_set(conf, "client.id", "sec-e2e", NULL, 0);
  rd_kafka_conf_set(conf, "reconnect.backoff.ms", "200", NULL, 0);
  memset(e, 0, sizeof(*e));
  rd_kafka_conf_set_opaque(conf, e);
  rd_kafka_conf_set_error_cb(conf, error_cb);
  rd_kafka_conf_set_log_cb(conf, quiet_log);
  for (size_t i = 0; kv && kv[i]; i += 2)
    if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof(errstr))) {
      diag("conf %s: %s", kv[i], errstr);
      rd_kafka_conf_destroy(conf);
      return NULL;
    }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk) {
    diag("rd_kafka_new: %s", errstr);
    rd_kafka_conf_destroy(conf);
  }
  return rk;
}

/* DescribeConfigs(CLIENT, name) or AlterConfigs of one key. Returns the
 * resource error (0 = fine), or -1 when no answer came (no access), with
 * a description in what. */
static int admin_t(rd_kafka_t *rk, int type, bool alter, const char *name,
                   const char *key, const char *value, char *what,
                   size_t what_size) {
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_ConfigResource_t *res =
      rd_kafka_ConfigResource_new((rd_kafka_ResourceType_t)type, name);
  if (alter)
    rd_kafka_ConfigResource_set_config(res, key, value);
  rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(
      rk, alter ? RD_KAFKA_ADMIN_OP_ALTERCONFIGS
                : RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  rd_kafka_AdminOptions_set_request_timeout(o, ADMIN_TIMEOUT_MS, NULL, 0);
  if (alter)
    rd_kafka_AlterConfigs(rk, &res, 1, o, q);
  else
    rd_kafka_DescribeConfigs(rk, &res, 1, o, q);
  rd_kafka_AdminOptions_destroy(o);
  int rc = -1;
  snprintf(what, what_size, "no result");
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS + 4000);
  if (ev) {
    if (rd_kafka_event_error(ev)) {
      snprintf(what, what_size, "%s", rd_kafka_event_error_string(ev));
    } else {
      size_t n = 0;
      const rd_kafka_ConfigResource_t **rr =
          alter ? rd_kafka_AlterConfigs_result_resources(
                      rd_kafka_event_AlterConfigs_result(ev), &n)
                : rd_kafka_DescribeConfigs_result_resources(
                      rd_kafka_event_DescribeConfigs_result(ev), &n);
      if (n == 1) {
        rc = rd_kafka_ConfigResource_error(rr[0]);
        const char *es = rd_kafka_ConfigResource_error_string(rr[0]);
        snprintf(what, what_size, "%s", es ? es : "ok");
      }
    }
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_ConfigResource_destroy(res);
  rd_kafka_queue_destroy(q);
  return rc;
}

static int admin(rd_kafka_t *rk, bool alter, const char *name, const char *key,
                 const char *value, char *what, size_t what_size) {
  return admin_t(rk, RES_CLIENT, alter, name, key, value, what, what_size);
}

/* The value of key in a DescribeConfigs(CLIENT, name) answer, or "". */
static void describe_value(rd_kafka_t *rk, const char *name, const char *key,
                           char *out, size_t n) {
  out[0] = '\0';
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RES_CLIENT, name);
  rd_kafka_AdminOptions_t *o =
      rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  rd_kafka_AdminOptions_set_request_timeout(o, ADMIN_TIMEOUT_MS, NULL, 0);
  rd_kafka_DescribeConfigs(rk, &res, 1, o, q);
  rd_kafka_AdminOptions_destroy(o);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS + 4000);
  if (ev && !rd_kafka_event_error(ev)) {
    size_t nr = 0, ne = 0;
    const rd_kafka_ConfigResource_t **rr =
        rd_kafka_DescribeConfigs_result_resources(
            rd_kafka_event_DescribeConfigs_result(ev), &nr);
    const rd_kafka_ConfigEntry_t **es =
        nr == 1 ? rd_kafka_ConfigResource_configs(rr[0], &ne) : NULL;
    for (size_t i = 0; i < ne; i++)
      if (!strcmp(rd_kafka_ConfigEntry_name(es[i]), key))
        snprintf(out, n, "%s", rd_kafka_ConfigEntry_value(es[i]));
  }
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_ConfigResource_destroy(res);
  rd_kafka_queue_destroy(q);
}

/* Polls rk's error callbacks until one mentions needle (or timeout). */
static bool wait_error(rd_kafka_t *rk, errs_t *e, const char *needle,
                       int timeout_ms) {
  int64_t end = dc_tu_now_ms() + timeout_ms;
  while (dc_tu_now_ms() < end) {
    rd_kafka_poll(rk, 100);
    if (strstr(e->text, needle))
      return true;
  }
  return false;
}

static bool log_has(const char *needle) {
  FILE *f = fopen(g_log, "r");
  if (!f)
    return false;
  char line[2048];
  bool found = false;
  while (!found && fgets(line, sizeof(line), f))
    found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

static const char *g_data = "data"; /* the running daemon's data dir */

static bool history_has(const char *needle) {
  char cmd[PATH_MAX * 2 + 64];
  snprintf(cmd, sizeof(cmd), "%s/dynconfd --data-dir %s/%s --history "
           "2>&1 | grep -qF '%s'", dc_tu_builddir(), g_dir, g_data, needle);
  return dc_tu_system(cmd) == 0;
}

/* ---- raw TLS connections (to see which certificate is served) --------- */

typedef struct tconn {
  int fd;
  SSL_CTX *ctx;
  SSL *ssl;
} tconn_t;

static void tconn_close(tconn_t *t) {
  if (t->ssl)
    SSL_free(t->ssl);
  if (t->ctx)
    SSL_CTX_free(t->ctx);
  if (t->fd >= 0)
    close(t->fd);
  memset(t, 0, sizeof(*t));
  t->fd = -1;
}

/* TLS to port trusting ca.pem (blocking, 5 s socket timeouts). */
static int tconn_open(tconn_t *t, int port) {
  memset(t, 0, sizeof(*t));
  t->fd = dc_tu_connect(port);
  if (t->fd < 0)
    return -1;
  struct timeval tv = {5, 0};
  setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  t->ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(t->ctx, cert("ca.pem"), NULL);
  SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
  t->ssl = SSL_new(t->ctx);
  SSL_set_fd(t->ssl, t->fd);
  if (SSL_connect(t->ssl) != 1) {
    char buf[256];
    ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
    diag("TLS connect to %d: %s", port, buf);
    tconn_close(t);
    return -1;
  }
  return 0;
}

/* SHA-256 fingerprint of the served certificate, hex. */
static void tconn_fingerprint(tconn_t *t, char *out, size_t n) {
  out[0] = '\0';
  X509 *x = SSL_get0_peer_certificate(t->ssl);
  unsigned char md[32];
  unsigned int len = 0;
  if (x && X509_digest(x, EVP_sha256(), md, &len))
    for (unsigned i = 0; i < len && 2 * i + 2 < n; i++)
      snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void file_fingerprint(const char *path, char *out, size_t n) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
  if (f)
    fclose(f);
  unsigned char md[32];
  unsigned int len = 0;
  if (x && X509_digest(x, EVP_sha256(), md, &len))
    for (unsigned i = 0; i < len && 2 * i + 2 < n; i++)
      snprintf(out + 2 * i, 3, "%02x", md[i]);
  X509_free(x);
}

/* One ApiVersions v0 round trip over an open TLS connection. */
static bool tconn_api_versions(tconn_t *t, int32_t corr) {
  dc_buf_t b;
  dc_buf_init(&b);
  size_t f = dc_wr_frame_begin(&b);
  dc_req_header_t h = {DC_API_API_VERSIONS, 0, corr, "probe"};
  dc_req_header_encode(&b, &h);
  dc_wr_frame_end(&b, f);
  bool okay = SSL_write(t->ssl, b.data, (int)b.len) == (int)b.len;
  dc_buf_free(&b);
  uint8_t hdr[8];
  int got = 0;
  while (okay && got < 8) {
    int r = SSL_read(t->ssl, hdr + got, 8 - got);
    if (r <= 0)
      return false;
    got += r;
  }
  if (!okay)
    return false;
  int32_t size = (int32_t)((uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
                           (uint32_t)hdr[2] << 8 | hdr[3]);
  int32_t c = (int32_t)((uint32_t)hdr[4] << 24 | (uint32_t)hdr[5] << 16 |
                        (uint32_t)hdr[6] << 8 | hdr[7]);
  char rest[4096];
  int left = size - 4;
  while (left > 0) {
    int r = SSL_read(t->ssl, rest, left > (int)sizeof(rest) ? (int)sizeof(rest) : left);
    if (r <= 0)
      return false;
    left -= r;
  }
  return c == corr;
}

/* ReloadSecurity over plaintext; fills resp (arena-owned). */
static int reload_rpc(int port, const char *listener, dc_arena_t *a,
                      dc_reload_resp_t *resp) {
  int fd = dc_tu_connect(port);
  if (fd < 0)
    return -1;
  dc_buf_t b;
  dc_buf_init(&b);
  size_t f = dc_wr_frame_begin(&b);
  dc_req_header_t h = {DC_API_RELOAD_SECURITY, 0, 7, "sec-e2e"};
  dc_req_header_encode(&b, &h);
  dc_reload_req_t rq = {(char *)listener};
  dc_reload_req_encode(&b, 0, &rq);
  dc_wr_frame_end(&b, f);
  int rc = dc_tu_write_all(fd, b.data, b.len);
  dc_buf_clear(&b);
  if (!rc)
    rc = dc_tu_read_frame(fd, 10000, 1 << 20, &b) == 1 ? 0 : -1;
  close(fd);
  if (!rc) {
    dc_rd_t rd;
    dc_rd_init(&rd, b.data, b.len, a);
    int32_t corr;
    dc_resp_header_decode(&rd, DC_API_RELOAD_SECURITY, 0, &corr);
    /* Decoded strings are arena copies: the frame can go. */
    rc = dc_reload_resp_decode(&rd, 0, resp);
  }
  dc_buf_free(&b);
  return rc;
}

/* ---- the cases ---------------------------------------------------------- */

static void test_credentials_file(void) {
  char cmd[PATH_MAX * 3];
  snprintf(cmd, sizeof(cmd),
           "printf 'alice-secret\\n' | %s/dynconfd --credentials %s --add-user alice "
           ">/dev/null && printf 'bob-secret\\n' | %s/dynconfd --credentials %s "
           "--add-user bob --iterations 4096 >/dev/null",
           dc_tu_builddir(), g_creds, dc_tu_builddir(), g_creds);
  is_int(dc_tu_system(cmd), 0, "dynconfd --add-user stores alice and bob");
  snprintf(cmd, sizeof(cmd), "grep -q -e alice-secret -e bob-secret %s", g_creds);
  ok(dc_tu_system(cmd) != 0, "the credentials file holds no password");
  struct stat st = {0};
  int st_rc = stat(g_creds, &st);
  ok(st_rc == 0 && (st.st_mode & 077) == 0,
     "the credentials file is private (mode %o)", st.st_mode & 0777);
  snprintf(cmd, sizeof(cmd),
           "printf 'x\\n' | %s/dynconfd --credentials %s --add-user carol "
           "--iterations 10 >/dev/null 2>&1", dc_tu_builddir(), g_creds);
  is_int(dc_tu_system(cmd), 2, "--iterations below 4096 is a usage error");
}

static void test_tls(int ssl_port, int plain_port) {
  errs_t e;
  char what[512];
  const char *ca_only[] = {"security.protocol", "ssl",
                           "ssl.ca.location", cert("ca.pem"), NULL};
  rd_kafka_t *rk = client(ssl_port, ca_only, &e);
  is_int(admin(rk, false, "sec-e2e", NULL, NULL, what, sizeof(what)), 0,
         "TLS without a client certificate: DescribeConfigs works (%s)", what);
  rd_kafka_destroy(rk);

  const char *mtls[] = {"security.protocol", "ssl",
                        "ssl.ca.location", cert("ca.pem"),
                        "ssl.certificate.location", cert("alice.pem"),
                        "ssl.key.location", cert("alice.key"), NULL};
  rk = client(ssl_port, mtls, &e);
  is_int(admin(rk, true, "sec-e2e-mtls", "acks", "1", what, sizeof(what)), 0,
         "mutual TLS: AlterConfigs works (%s)", what);
  rd_kafka_destroy(rk);
  ok(history_has("User:CN=alice,O=dynconf-test"),
     "the audit history names the certificate's principal "
     "User:CN=alice,O=dynconf-test");

  const char *rogue[] = {"security.protocol", "ssl",
                         "ssl.ca.location", cert("ca.pem"),
                         "ssl.certificate.location", cert("rogue.pem"),
                         "ssl.key.location", cert("rogue.key"), NULL};
  rk = client(ssl_port, rogue, &e);
  is_int(admin(rk, false, "sec-e2e", NULL, NULL, what, sizeof(what)), -1,
         "a client certificate from an untrusted CA gets no access (%s)", what);
  rd_kafka_poll(rk, 0);
  ok(e.n > 0, "librdkafka reports an error for it: %.200s", e.text);
  rd_kafka_destroy(rk);
  ok(log_has("TLS handshake with") && log_has("certificate verify failed"),
     "dynconfd logs the refused handshake and why");

  const char *wrong_ca[] = {"security.protocol", "ssl",
                            "ssl.ca.location", cert("rogue-ca.pem"), NULL};
  rk = client(ssl_port, wrong_ca, &e);
  ok(wait_error(rk, &e, "certificate verify failed", 8000),
     "a client that does not trust the server's CA says why: %.200s", e.text);
  rd_kafka_destroy(rk);

  /* Plaintext bytes into a TLS listener: refused, the server carries on. */
  int fd = dc_tu_connect(ssl_port);
  (void)!write(fd, "\0\0\0\x10hello, plaintext", 20);
  is_int(dc_tu_wait_closed(fd, 5000, NULL), 1,
         "plaintext sent to the TLS listener: the connection is closed");
  close(fd);
  rk = client(plain_port, NULL, &e);
  is_int(admin(rk, false, "sec-e2e", NULL, NULL, what, sizeof(what)), 0,
         "... and the plaintext listener still answers");
  rd_kafka_destroy(rk);
}

static void sasl_case(int port, bool tls, const char *mech, const char *user,
                      const char *pass, int want, const char *expect_error,
                      const char *label) {
  errs_t e;
  char what[512];
  const char *kv[] = {"security.protocol", tls ? "sasl_ssl" : "sasl_plaintext",
                      "sasl.mechanisms", mech,
                      "sasl.username", user,
                      "sasl.password", pass,
                      "ssl.ca.location", cert("ca.pem"), NULL};
  rd_kafka_t *rk = client(port, kv, &e);
  char entity[64];
  snprintf(entity, sizeof(entity), "sec-e2e-%s", user);
  int rc = want == 0 ? admin(rk, true, entity, "acks", "0", what, sizeof(what))
                     : admin(rk, false, entity, NULL, NULL, what, sizeof(what));
  is_int(rc, want, "%s (%s)", label, what);
  if (expect_error)
    ok(wait_error(rk, &e, expect_error, 5000),
       "... librdkafka says \"%s\": %.240s", expect_error, e.text);
  rd_kafka_destroy(rk);
}

/* librdkafka's own OAUTHBEARER client (an unsigned token it makes from
 * sasl.oauthbearer.config) through its admin API. */
static void test_oauthbearer(int sasl_port) {
  errs_t e;
  char what[512];
  const char *kv[] = {"security.protocol", "sasl_plaintext",
                      "sasl.mechanisms", "OAUTHBEARER",
                      "sasl.oauthbearer.config", "principal=olaf",
                      "enable.sasl.oauthbearer.unsecure.jwt", "true", NULL};
  rd_kafka_t *rk = client(sasl_port, kv, &e);
  is_int(admin(rk, true, "sec-e2e-olaf", "acks", "0", what, sizeof(what)), 0,
         "librdkafka's admin API over OAUTHBEARER (an unsigned token for "
         "olaf): alter works (%s)", what);
  rd_kafka_destroy(rk);
  ok(history_has("User:olaf"), "the audit history names User:olaf");
}

static void test_sasl(int sasl_port, int sasl_ssl_port) {
  sasl_case(sasl_port, false, "SCRAM-SHA-256", "alice", "alice-secret", 0, NULL,
            "SASL_PLAINTEXT SCRAM-SHA-256 with the right password: alter works");
  ok(history_has("User:alice"), "the audit history names User:alice");
  sasl_case(sasl_port, false, "SCRAM-SHA-256", "alice", "wrong", -1,
            "Authentication failed",
            "SCRAM with a wrong password: no access");
  sasl_case(sasl_port, false, "SCRAM-SHA-256", "mallory", "whatever", -1,
            "Authentication failed",
            "SCRAM with an unknown user: the same refusal");
  sasl_case(sasl_port, false, "SCRAM-SHA-512", "alice", "alice-secret", -1,
            "Unsupported SASL mechanism",
            "a mechanism the server does not enable: no access");
  sasl_case(sasl_ssl_port, true, "PLAIN", "bob", "bob-secret", 0, NULL,
            "SASL_SSL PLAIN with the right password: alter works");
  ok(history_has("User:bob"), "the audit history names User:bob");
  sasl_case(sasl_ssl_port, true, "PLAIN", "bob", "alice-secret", -1,
            "Authentication failed", "SASL_SSL PLAIN with a wrong password: no access");

  /* A request before authenticating closes the connection unanswered. */
  int fd = dc_tu_connect(sasl_port);
  dc_buf_t b;
  dc_buf_init(&b);
  size_t f = dc_wr_frame_begin(&b);
  dc_req_header_t h = {DC_API_DESCRIBE_CONFIGS, 0, 1, "sneaky"};
  dc_req_header_encode(&b, &h);
  dc_describe_configs_req_resource_t rr = {9, "sec-e2e-alice", -1, NULL};
  dc_describe_configs_req_t rq = {1, &rr, false, false, 0, false};
  dc_describe_configs_req_encode(&b, 0, &rq);
  dc_wr_frame_end(&b, f);
  dc_tu_write_all(fd, b.data, b.len);
  dc_buf_free(&b);
  size_t got = 99;
  is_int(dc_tu_wait_closed(fd, 5000, &got), 1,
         "DescribeConfigs before SASL authentication: connection closed");
  is_int(got, 0, "... without an answer");
  close(fd);
  ok(log_has("before SASL authentication completed"),
     "dynconfd logs why it closed it");
  test_oauthbearer(sasl_port);
}

static void copy_file(const char *from, const char *to) {
  char cmd[PATH_MAX * 3];
  /* cp to a temp name, then rename: readers never see half a file. */
  snprintf(cmd, sizeof(cmd), "cp '%s' '%s.tmp' && mv '%s.tmp' '%s'", from, to,
           to, to);
  if (dc_tu_system(cmd))
    diag("cannot copy %s to %s", from, to);
}

static bool served_is(int port, const char *pem, int timeout_ms) {
  char want[80], got[80] = "";
  file_fingerprint(pem, want, sizeof(want));
  int64_t end = dc_tu_now_ms() + timeout_ms;
  do {
    tconn_t t;
    if (!tconn_open(&t, port)) {
      tconn_fingerprint(&t, got, sizeof(got));
      tconn_close(&t);
      if (!strcmp(got, want))
        return true;
    }
    dc_tu_sleep_ms(100);
  } while (dc_tu_now_ms() < end);
  diag("served %s, want %s", got, want);
  return false;
}

static void test_reload(int plain_port, int ssl_port) {
  ok(served_is(ssl_port, cert("server.pem"), 0),
     "the TLS listener serves the first certificate");
  tconn_t old;
  ok(tconn_open(&old, ssl_port) == 0 && tconn_api_versions(&old, 1),
     "a TLS connection is open and answered before the reload");

  /* A new certificate at the same paths, then ReloadSecurity. */
  char cmd[PATH_MAX * 2];
  snprintf(cmd, sizeof(cmd), "sh %s/tests/gen_certs.sh %s leaf server2 localhost",
           getenv("DC_SRCDIR") ? getenv("DC_SRCDIR") : ".", g_certs);
  is_int(dc_tu_system(cmd), 0, "minted a second server certificate");
  copy_file(cert("server2.key"), cert("srv.key.new"));
  copy_file(cert("server2.pem"), cert("srv.pem.new"));
  /* Key first, then certificate, each renamed into place. */
  rename(cert("srv.key.new"), cert("srv.key"));
  rename(cert("srv.pem.new"), cert("srv.pem"));
  dc_arena_t a;
  dc_arena_init(&a);
  dc_reload_resp_t resp;
  int rc = reload_rpc(plain_port, NULL, &a, &resp);
  is_int(rc, 0, "ReloadSecurity answered");
  is_int(resp.error_code, 0, "... with no error (%s)",
         resp.error_message ? resp.error_message : "");
  int n_ok = 0;
  for (int32_t i = 0; i < resp.n_listeners; i++) {
    diag("  %s: error %d subject %s", resp.listeners[i].listener_name,
         resp.listeners[i].error_code,
         resp.listeners[i].subject ? resp.listeners[i].subject : "-");
    n_ok += resp.listeners[i].error_code == 0 && resp.listeners[i].subject &&
            strstr(resp.listeners[i].subject, "CN=localhost") &&
            resp.listeners[i].not_after_ms > dc_tu_now_ms();
  }
  is_int(n_ok, 2, "both TLS listeners (SSL, SASL_SSL) report the new "
                  "certificate and its expiry");
  ok(served_is(ssl_port, cert("server2.pem"), 0),
     "new connections get the new certificate");
  ok(tconn_api_versions(&old, 2),
     "the connection opened before the reload still works");

  /* A bad new file: the old context stays and the error is reported. */
  FILE *f = fopen(cert("srv.pem"), "w");
  fputs("-----BEGIN CERTIFICATE-----\nnot a certificate\n", f);
  fclose(f);
  dc_arena_reset(&a);
  rc = reload_rpc(plain_port, "SSL", &a, &resp);
  is_int(rc, 0, "ReloadSecurity of listener SSL answered");
  ok(resp.n_listeners == 1 && resp.listeners[0].error_code != 0 &&
         resp.listeners[0].error_message &&
         strstr(resp.listeners[0].error_message, "cannot load certificate"),
     "a broken certificate file is reported: %s",
     resp.n_listeners == 1 && resp.listeners[0].error_message
         ? resp.listeners[0].error_message : "(none)");
  ok(served_is(ssl_port, cert("server2.pem"), 0),
     "... and the previous certificate is still served");
  ok(tconn_api_versions(&old, 3), "... and the old connection still works");
  dc_arena_reset(&a);
  rc = reload_rpc(plain_port, "PLAINTEXT", &a, &resp);
  is_int(resp.error_code, DYNCONF_ERR_INVALID_REQUEST,
         "ReloadSecurity of a listener without TLS: INVALID_REQUEST");

  /* SIGHUP does the same. */
  copy_file(cert("server.key"), cert("srv.key"));
  copy_file(cert("server.pem"), cert("srv.pem"));
  kill(g_d.pid, SIGHUP);
  ok(served_is(ssl_port, cert("server.pem"), 10000),
     "after SIGHUP new connections get the certificate now on disk");
  ok(tconn_api_versions(&old, 4), "... and the old connection still works");
  tconn_close(&old);
  dc_arena_free(&a);
}

/* A SCRAM client as user (password "<user>-secret") with client.id cid. */
static rd_kafka_t *scram_client(int port, const char *user, const char *cid,
                                errs_t *e) {
  char pw[64];
  snprintf(pw, sizeof(pw), "%s-secret", user);
  const char *kv[] = {"security.protocol", "sasl_plaintext",
                      "sasl.mechanisms", "SCRAM-SHA-256",
                      "sasl.username", user, "sasl.password", pw,
                      "client.id", cid, NULL};
  return client(port, kv, e);
}

#define ERR_AUTHZ 31
#define RES_USER 10

static void test_authorization(void) {
  char cmd[PATH_MAX * 3], acl[700], what[512], val[64];
  snprintf(cmd, sizeof(cmd),
           "printf 'admin-secret\n' | %s/dynconfd --credentials %s --add-user admin "
           ">/dev/null", dc_tu_builddir(), g_creds);
  is_int(dc_tu_system(cmd), 0, "added user admin");
  snprintf(acl, sizeof(acl), "%s/acl", g_dir);
  FILE *f = fopen(acl, "w");
  fputs("# alice runs the app-* clients\n"
        "allow User:alice alter client:app-*\n"
        "deny User:bob describe client:bob-locked\n", f);
  fclose(f);
  char data[PATH_MAX + 8];
  snprintf(data, sizeof(data), "%s/data2", g_dir);
  g_data = "data2";
  const char *extra[] = {"--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
                         "--credentials", g_creds, "--acl-file", acl,
                         "--super-users", "User:admin", NULL};
  char err[512];
  dc_tu_daemon_t d;
  if (!ok(dc_tu_daemon_start(&d, data, g_log, extra, err, sizeof(err)) == 0,
          "dynconfd starts with an ACL file: %s", err))
    return;
  int port = dc_tu_daemon_port_of(&d, "SASL_PLAINTEXT");
  errs_t ea, eb, ed;
  rd_kafka_t *alice = scram_client(port, "alice", "app-1", &ea);
  rd_kafka_t *bob = scram_client(port, "bob", "bob-app", &eb);
  rd_kafka_t *admin_rk = scram_client(port, "admin", "ops", &ed);

  is_int(admin(alice, true, "app-1", "acks", "1", what, sizeof(what)), 0,
         "alice may alter client app-1 (granted by prefix app-*)");
  is_int(admin(bob, true, "app-1", "acks", "0", what, sizeof(what)), ERR_AUTHZ,
         "bob's alter of app-1: CLUSTER_AUTHORIZATION_FAILED (%s)", what);
  ok(strstr(what, "User:bob") != NULL, "... and the message names him");
  describe_value(admin_rk, "app-1", "acks", val, sizeof(val));
  is_str(val, "1", "the unauthorized alter changed nothing");
  is_int(admin(bob, false, "app-1", NULL, NULL, what, sizeof(what)), ERR_AUTHZ,
         "bob may not read another client's configs (%s)", what);
  is_int(admin(bob, false, "bob-app", NULL, NULL, what, sizeof(what)), 0,
         "bob may read his own client-id's configs");

  /* Principal-scoped entities. */
  is_int(admin_t(admin_rk, RES_USER, true, "alice", "acks", "all", what,
                 sizeof(what)), 0, "the super user sets alice's user entity");
  is_int(admin_t(admin_rk, RES_USER, true, "bob", "acks", "0", what,
                 sizeof(what)), 0, "... and bob's");
  is_int(admin_t(alice, RES_USER, false, "bob", NULL, NULL, what, sizeof(what)),
         ERR_AUTHZ, "alice cannot read bob's user configs (%s)", what);
  is_int(admin_t(alice, RES_USER, false, "alice", NULL, NULL, what,
                 sizeof(what)), 0, "alice can read her own");
  describe_value(alice, "app-1", "acks", val, sizeof(val));
  is_str(val, "all", "alice's own view of app-1 resolves her user entity "
                     "over the client's value");
  describe_value(admin_rk, "app-1", "acks", val, sizeof(val));
  is_str(val, "1", "... while another principal sees the client's value");

  /* The agent of an application running as alice over SASL: its own
   * handle authenticates with the app's sasl.* settings, and it gets the
   * value resolved for its principal, with the user-level source. */
  {
    rd_kafka_conf_t *app = rd_kafka_conf_new();
    char bs[64];
    snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
    const char *kv[] = {"bootstrap.servers", bs, "client.id", "app-1",
                        "security.protocol", "sasl_plaintext",
                        "sasl.mechanisms", "SCRAM-SHA-256",
                        "sasl.username", "alice", "sasl.password",
                        "alice-secret", NULL};
    for (size_t i = 0; kv[i]; i += 2)
      rd_kafka_conf_set(app, kv[i], kv[i + 1], NULL, 0);
    dynconf_conf_t *dconf = dynconf_conf_new();
    dynconf_conf_set(dconf, "dynconf.startup.required", "true", NULL, 0);
    char errstr[512] = "";
    dynconf_t *dc = dynconf_new(RD_KAFKA_PRODUCER, app, dconf, errstr,
                                sizeof(errstr));
    if (!dc)
      dynconf_conf_destroy(dconf);
    ok(dc != NULL, "an agent authenticating as alice over SASL starts "
                   "(first fetch required): %s", errstr);
    dynconf_source_t src = DYNCONF_SOURCE_APP;
    val[0] = '\0';
    if (dc)
      dynconf_effective_get(dc, "acks", val, sizeof(val), &src);
    is_str(val, "all", "the agent applies alice's user-level acks");
    is_int(src, DYNCONF_SOURCE_USER, "... reported with source %s",
           dynconf_source_name(src));
    dynconf_destroy(dc);
    rd_kafka_conf_destroy(app);
  }

  /* An agent the ACLs refuse: it says so and keeps the app's config. */
  {
    rd_kafka_conf_t *app = rd_kafka_conf_new();
    char bs[64];
    snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
    const char *kv[] = {"bootstrap.servers", bs, "client.id", "bob-locked",
                        "security.protocol", "sasl_plaintext",
                        "sasl.mechanisms", "SCRAM-SHA-256",
                        "sasl.username", "bob", "sasl.password", "bob-secret",
                        NULL};
    for (size_t i = 0; kv[i]; i += 2)
      rd_kafka_conf_set(app, kv[i], kv[i + 1], NULL, 0);
    char errstr[512] = "";
    dynconf_t *dc = dynconf_new(RD_KAFKA_PRODUCER, app, NULL, errstr,
                                sizeof(errstr));
    ok(dc != NULL, "an agent refused by the ACLs still starts (fail-open)");
    char *js = dc ? dynconf_stats_json(dc) : NULL;
    ok(dc && dynconf_state(dc) == DYNCONF_STATE_DEGRADED,
       "... in state DEGRADED");
    ok(js && strstr(js, "CLUSTER_AUTHORIZATION_FAILED") &&
           strstr(js, "not authorized to describe client 'bob-locked'"),
       "... and its stats carry the server's reason");
    free(js);
    dynconf_destroy(dc);
    rd_kafka_conf_destroy(app);
  }

  /* ReloadSecurity needs alter on the broker. */
  dc_arena_t a;
  dc_arena_init(&a);
  dc_reload_resp_t resp;
  int plain = d.port;
  is_int(reload_rpc(plain, NULL, &a, &resp), 0, "ReloadSecurity answered");
  is_int(resp.error_code, ERR_AUTHZ,
         "an anonymous ReloadSecurity is refused with 31 (%s)",
         resp.error_message ? resp.error_message : "");
  dc_arena_free(&a);

  /* A new rule, picked up on SIGHUP. */
  f = fopen(acl, "a");
  fputs("allow User:bob alter client:app-1\n", f);
  fclose(f);
  kill(d.pid, SIGHUP);
  int rc = -1;
  for (int i = 0; i < 50 && rc != 0; i++) {
    rc = admin(bob, true, "app-1", "linger.ms", "5", what, sizeof(what));
    if (rc)
      dc_tu_sleep_ms(200);
  }
  is_int(rc, 0, "after SIGHUP bob's new grant applies");
  /* A broken ACL file keeps the rules in force. */
  f = fopen(acl, "a");
  fputs("allow User:bob fly-a-kite client:x\n", f);
  fclose(f);
  kill(d.pid, SIGHUP);
  for (int i = 0; i < 100 && !log_has("fly-a-kite'"); i++)
    dc_tu_sleep_ms(50); /* until the reload has been tried */
  is_int(admin(bob, true, "app-1", "linger.ms", "7", what, sizeof(what)), 0,
         "a broken ACL file on reload keeps the previous rules");
  ok(log_has("old rules kept") && log_has("acl:5: unknown operation 'fly-a-kite'"),
     "... and the reload error is logged with its line");
  is_int(admin(bob, true, "app-2", "acks", "0", what, sizeof(what)), ERR_AUTHZ,
         "... including the denials");
  ok(history_has("User:alice") && history_has("User:bob"),
     "the audit history records each change's principal");
  ok(history_has("User:admin") && history_has("user:alice acks SET"),
     "... and names user entities as user:NAME");
  rd_kafka_destroy(alice);
  rd_kafka_destroy(bob);
  rd_kafka_destroy(admin_rk);
  is_int(dc_tu_daemon_stop(&d), 0, "the ACL daemon stops cleanly");
  g_data = "data";
}

int main(void) {
  if (dc_tu_tmpdir(g_dir, sizeof(g_dir))) {
    printf("Bail out! no temp dir\n");
    return 1;
  }
  snprintf(g_certs, sizeof(g_certs), "%s/certs", g_dir);
  snprintf(g_creds, sizeof(g_creds), "%s/users.creds", g_dir);
  snprintf(g_log, sizeof(g_log), "%s/dynconfd.log", g_dir);
  char cmd[PATH_MAX * 2], data[PATH_MAX + 8];
  snprintf(cmd, sizeof(cmd), "sh %s/tests/gen_certs.sh %s",
           getenv("DC_SRCDIR") ? getenv("DC_SRCDIR") : ".", g_certs);
  if (dc_tu_system(cmd)) {
    printf("Bail out! cannot make test certificates (openssl)\n");
    return 1;
  }
  copy_file(cert("server.pem"), cert("srv.pem"));
  copy_file(cert("server.key"), cert("srv.key"));
  test_credentials_file();

  snprintf(data, sizeof(data), "%s/data", g_dir);
  const char *extra[] = {
      "--listeners",
      "SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
      "--ssl-cert", cert("srv.pem"), "--ssl-key", cert("srv.key"),
      "--ssl-ca", cert("ca.pem"), "--ssl-client-auth", "requested",
      "--credentials", g_creds,
      "--sasl-enabled-mechanisms", "SCRAM-SHA-256,PLAIN,OAUTHBEARER",
      "--sasl-oauthbearer-unsecured", NULL};
  char err[512];
  if (dc_tu_daemon_start(&g_d, data, g_log, extra, err, sizeof(err))) {
    printf("Bail out! dynconfd: %s\n", err);
    return 1;
  }
  int ssl = dc_tu_daemon_port_of(&g_d, "SSL");
  int sasl = dc_tu_daemon_port_of(&g_d, "SASL_PLAINTEXT");
  int sasl_ssl = dc_tu_daemon_port_of(&g_d, "SASL_SSL");
  ok(ssl > 0 && sasl > 0 && sasl_ssl > 0 && g_d.n_listeners == 4,
     "dynconfd reports its four listeners");

  test_tls(ssl, g_d.port);
  test_sasl(sasl, sasl_ssl);
  test_reload(g_d.port, ssl);
  test_authorization();

  ok(dc_tu_daemon_alive(&g_d), "dynconfd is still running");
  if (tap_failed)
    dc_tu_daemon_log_tail(&g_d, 40);
  is_int(dc_tu_daemon_stop(&g_d), 0, "dynconfd stops cleanly");
  dc_tu_rmrf(g_dir);
  return done_testing();
}
