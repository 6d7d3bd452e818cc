/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The TLS client context's sources of trust and identity, end to end:
 * dc_kclient_set_security + dc_kclient_connect + dc_kclient_api_versions
 * against a dynconfd SSL listener that requires client certificates.
 * Trust from a CA file, a hashed directory, PEM text, both, or the system
 * store ("probe"); the client certificate and key from files, PEM text
 * (with a chain), an encrypted key with its password, or a PKCS#12
 * keystore; ssl.cipher.suites; and the error sentences for each mistake.
 * Certificates are made at run time (tests/gen_certs.sh and
 * tests/gen_tls_sources.sh, which need openssl).
 */
#include "client/kclient.h"
#include "../tap.h"
#include "../testutil.h"

static char g_dir[PATH_MAX - 64], g_certs[PATH_MAX - 32];
static char g_bootstrap[64];
static dc_tu_daemon_t g_d;

/* The path of a file in the certificate directory (dc_tu_path()). */
static const char *cert(const char *name) { return dc_tu_path(g_certs, name); }

/* The content of a file in the certificate directory (dc_tu_file_text()). */
static const char *text(const char *name) {
  return dc_tu_file_text(cert(name));
}

/* Where an attempt stopped: */
enum { WORKED, AT_SETUP, AT_CONNECT };

/* set_security, connect, ApiVersions on a fresh handle; err gets the
 * error sentence of the step that failed. */
static int attempt(const dc_kclient_security_t *sec, char *err, size_t n) {
  dc_kclient_t *kc = dc_kclient_new("test-tls-client");
  int stage = WORKED;
  err[0] = '\0';
  if (!kc) {
    snprintf(err, n, "out of memory");
    return AT_SETUP;
  }
  if (dc_kclient_set_security(kc, sec, err, n))
    stage = AT_SETUP;
  else if (dc_kclient_connect(kc, g_bootstrap, 10000, err, n) ||
           dc_kclient_api_versions(kc, 10000, err, n))
    stage = AT_CONNECT;
  dc_kclient_destroy(kc);
  return stage;
}

/* SSL trusting ca.pem, no client certificate yet. */
static dc_kclient_security_t base(void) {
  return (dc_kclient_security_t){.protocol = "SSL", .ssl_ca = cert("ca.pem")};
}

static void works(const dc_kclient_security_t *sec, const char *what) {
  char err[1024];
  int stage = attempt(sec, err, sizeof(err));
  if (!ok(stage == WORKED, "%s: connected, ApiVersions answered", what))
    diag("  stopped at %s: %s", stage == AT_SETUP ? "setup" : "connect", err);
}

/* Refused by dc_kclient_set_security with exactly want. */
static void refused(const dc_kclient_security_t *sec, const char *want,
                    const char *what) {
  char err[1024];
  int stage = attempt(sec, err, sizeof(err));
  if (!ok(stage == AT_SETUP && !strcmp(err, want), "%s: refused, saying so",
          what))
    diag("  stage %d, got \"%s\", want \"%s\"", stage, err, want);
}

/* Accepted by set_security, then the connection fails with an error
 * holding want. */
static void fails(const dc_kclient_security_t *sec, const char *want,
                  const char *what) {
  char err[1024];
  int stage = attempt(sec, err, sizeof(err));
  if (!ok(stage == AT_CONNECT && strstr(err, want), "%s: connection fails",
          what))
    diag("  stage %d, got \"%s\", want it to hold \"%s\"", stage, err, want);
}

/* An error sentence must not carry a password or key text. */
static void no_secret(const dc_kclient_security_t *sec, const char *what) {
  char err[1024];
  attempt(sec, err, sizeof(err));
  ok(err[0] && !strstr(err, "key-pw") && !strstr(err, "ks-pw") &&
         !strstr(err, "wrong-pw") && !strstr(err, "BEGIN"),
     "%s: the error names no secret (%s)", what, err);
}

static void test_trust(void) {
  dc_kclient_security_t s = base();
  s.ssl_cert = cert("alice.pem"), s.ssl_key = cert("alice.key");
  works(&s, "ssl.ca.location = CA file (control)");

  s.ssl_ca = cert("cadir");
  works(&s, "ssl.ca.location = hashed directory");
  s.ssl_ca = cert("roguedir");
  fails(&s, "certificate verify failed",
        "ssl.ca.location = hashed directory of another CA");
  char want[1024];
  s.ssl_ca = cert("plaindir");
  snprintf(want, sizeof(want), "CA directory %s holds no hashed certificate "
           "names (run openssl rehash %s) (ssl.ca.location)", s.ssl_ca,
           s.ssl_ca);
  refused(&s, want, "ssl.ca.location = directory never rehashed");
  s.ssl_ca = cert("missing");
  snprintf(want, sizeof(want), "cannot load CA file %s: No such file or "
           "directory (ssl.ca.location)", s.ssl_ca);
  refused(&s, want, "ssl.ca.location that does not exist");
  s.ssl_ca = "probe";
  fails(&s, "certificate verify failed",
        "ssl.ca.location=probe: the system store, which lacks the test CA");

  s.ssl_ca = NULL;
  s.ssl_ca_pem = text("ca.pem");
  works(&s, "ssl.ca.pem alone");
  s.ssl_ca_pem = text("rogue-ca.pem");
  fails(&s, "certificate verify failed", "ssl.ca.pem of another CA");
  char bundle[16384];
  snprintf(bundle, sizeof(bundle), "%s%s", text("rogue-ca.pem"),
           text("ca.pem"));
  s.ssl_ca_pem = bundle;
  works(&s, "ssl.ca.pem with two CAs, the right one second");
  s.ssl_ca = cert("rogue-ca.pem"), s.ssl_ca_pem = text("ca.pem");
  works(&s, "ssl.ca.location (another CA) and ssl.ca.pem (the CA): both used");
  s.ssl_ca = cert("ca.pem"), s.ssl_ca_pem = text("rogue-ca.pem");
  works(&s, "ssl.ca.location (the CA) and ssl.ca.pem (another CA): both used");
  s.ssl_ca = NULL, s.ssl_ca_pem = "not a certificate";
  refused(&s, "cannot load CA certificates from ssl.ca.pem: no PEM "
              "certificate found", "ssl.ca.pem without a certificate");
}

static void test_identity_pem(void) {
  dc_kclient_security_t s = base();
  fails(&s, "alert certificate required", "no client certificate (control)");
  s.ssl_cert_pem = text("alice.pem"), s.ssl_key_pem = text("alice.key");
  works(&s, "ssl.certificate.pem + ssl.key.pem");
  s.ssl_cert_pem = text("carol-chain.pem"), s.ssl_key_pem = text("carol.key");
  works(&s, "ssl.certificate.pem with the intermediate after the leaf");
  s.ssl_cert_pem = text("carol.pem");
  fails(&s, "alert unknown ca", "ssl.certificate.pem without the intermediate");
  s.ssl_cert_pem = NULL, s.ssl_cert = cert("carol-chain.pem");
  works(&s, "ssl.certificate.location with the chain + ssl.key.pem");

  s = base();
  s.ssl_cert_pem = text("alice.pem"), s.ssl_key_pem = text("bob.key");
  refused(&s, "client key from ssl.key.pem does not match the certificate "
              "from ssl.certificate.pem", "a key that does not match (PEM)");
  s.ssl_key_pem = "junk";
  refused(&s, "cannot load client key from ssl.key.pem: no PEM private key "
              "found", "ssl.key.pem without a key");
  s.ssl_cert_pem = "junk", s.ssl_key_pem = text("alice.key");
  refused(&s, "cannot load client certificate from ssl.certificate.pem: no "
              "PEM certificate found", "ssl.certificate.pem without a "
              "certificate");
}

static void test_encrypted_key(void) {
  dc_kclient_security_t s = base();
  char want[1024];
  s.ssl_cert = cert("alice.pem"), s.ssl_key = cert("alice.enc.key");
  s.ssl_key_password = "key-pw";
  works(&s, "encrypted PKCS#8 key file, right ssl.key.password");
  s.ssl_key_password = "wrong-pw";
  snprintf(want, sizeof(want), "cannot load client key %s: it does not "
           "decrypt with the password given (is ssl.key.password right?)", s.ssl_key);
  refused(&s, want, "encrypted key file, wrong ssl.key.password");
  no_secret(&s, "wrong ssl.key.password");
  s.ssl_key_password = NULL;
  snprintf(want, sizeof(want), "cannot load client key %s: the key is "
           "encrypted and ssl.key.password is not set (ssl.key.location)",
           s.ssl_key);
  refused(&s, want, "encrypted key file, no ssl.key.password");

  s.ssl_key = NULL, s.ssl_key_pem = text("alice.trad.key");
  s.ssl_key_password = "key-pw";
  works(&s, "encrypted traditional key in ssl.key.pem, right password");
  s.ssl_key_password = "wrong-pw";
  refused(&s, "cannot load client key from ssl.key.pem: it does not decrypt "
              "with the password given (is ssl.key.password right?)",
          "encrypted ssl.key.pem, wrong ssl.key.password");
  no_secret(&s, "wrong ssl.key.password for ssl.key.pem");
  s.ssl_key_pem = text("alice.key"), s.ssl_key_password = "unused";
  works(&s, "a plain key with a password set (ignored)");
}

static void test_keystore(void) {
  dc_kclient_security_t s = base();
  char want[1024];
  s.ssl_keystore = cert("alice.p12"), s.ssl_keystore_password = "ks-pw";
  works(&s, "PKCS#12 keystore, right ssl.keystore.password");
  s.ssl_keystore = cert("carol.p12");
  works(&s, "PKCS#12 keystore holding the intermediate");
  s.ssl_keystore = cert("alice.p12"), s.ssl_keystore_password = "wrong-pw";
  snprintf(want, sizeof(want), "cannot open PKCS#12 keystore %s: mac verify "
           "failure (is ssl.keystore.password right?)", s.ssl_keystore);
  refused(&s, want, "PKCS#12 keystore, wrong ssl.keystore.password");
  no_secret(&s, "wrong ssl.keystore.password");
  s.ssl_keystore_password = NULL;
  refused(&s, want, "PKCS#12 keystore, no ssl.keystore.password");
  s.ssl_keystore = cert("ca.pem"), s.ssl_keystore_password = "ks-pw";
  snprintf(want, sizeof(want), "cannot open PKCS#12 keystore %s: not a "
           "PKCS#12 file (wrong tag) (ssl.keystore.location)", s.ssl_keystore);
  refused(&s, want, "a PEM file as ssl.keystore.location");
  s.ssl_keystore = cert("missing.p12");
  snprintf(want, sizeof(want), "cannot open PKCS#12 keystore %s: No such "
           "file or directory (ssl.keystore.location)", s.ssl_keystore);
  refused(&s, want, "a missing ssl.keystore.location");
}

static void test_conflicts(void) {
  dc_kclient_security_t s = base();
  s.ssl_cert = cert("alice.pem"), s.ssl_cert_pem = text("alice.pem");
  s.ssl_key = cert("alice.key");
  refused(&s, "set either ssl.certificate.location or ssl.certificate.pem, "
              "not both", "certificate file and PEM text");
  s.ssl_cert_pem = NULL, s.ssl_key_pem = text("alice.key");
  refused(&s, "set either ssl.key.location or ssl.key.pem, not both",
          "key file and PEM text");
  s.ssl_key_pem = NULL, s.ssl_keystore = cert("alice.p12");
  refused(&s, "set either ssl.keystore.location or ssl.certificate.location, "
              "not both", "keystore and certificate file");
  s = base();
  s.ssl_keystore = cert("alice.p12"), s.ssl_key_pem = text("alice.key");
  refused(&s, "set either ssl.keystore.location or ssl.key.pem, not both",
          "keystore and key PEM text");
  s = base();
  s.ssl_cert_pem = text("alice.pem");
  refused(&s, "a client certificate needs its key: ssl.certificate.pem is "
              "set but neither ssl.key.location nor ssl.key.pem",
          "a certificate without a key");
  s = base();
  s.ssl_key = cert("alice.key");
  refused(&s, "a client key needs its certificate: ssl.key.location is set "
              "but neither ssl.certificate.location nor ssl.certificate.pem",
          "a key without a certificate");
}

static void test_ciphers(void) {
  dc_kclient_security_t s = base();
  s.ssl_cert = cert("alice.pem"), s.ssl_key = cert("alice.key");
  s.ssl_cipher_suites = "NOT-A-CIPHER";
  refused(&s, "invalid ssl.cipher.suites 'NOT-A-CIPHER': no cipher match",
          "a cipher list OpenSSL rejects");
  s.ssl_cipher_suites = "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384";
  works(&s, "a valid ssl.cipher.suites");
}

static bool setup(void) {
  char cmd[3 * PATH_MAX], data[PATH_MAX], log[PATH_MAX], err[512];
  const char *src = getenv("DC_SRCDIR") ? getenv("DC_SRCDIR") : ".";
  if (dc_tu_tmpdir(g_dir, sizeof(g_dir))) {
    printf("Bail out! no temporary directory\n");
    return false;
  }
  snprintf(g_certs, sizeof(g_certs), "%s/certs", g_dir);
  snprintf(cmd, sizeof(cmd), "sh %s/tests/gen_certs.sh %s && sh "
           "%s/tests/gen_tls_sources.sh %s", src, g_certs, src, g_certs);
  if (dc_tu_system(cmd)) {
    printf("Bail out! cannot make test certificates (openssl)\n");
    return false;
  }
  snprintf(data, sizeof(data), "%s/data", g_dir);
  snprintf(log, sizeof(log), "%s/dynconfd.log", g_dir);
  mkdir(data, 0700);
  const char *args[] = {"--listeners", "SSL://127.0.0.1:0",
                        "--ssl-cert", cert("server.pem"),
                        "--ssl-key", cert("server.key"),
                        "--ssl-ca", cert("ca.pem"),
                        "--ssl-client-auth", "required", NULL};
  if (dc_tu_daemon_start(&g_d, data, log, args, err, sizeof(err))) {
    printf("Bail out! dynconfd did not start: %s\n", err);
    return false;
  }
  int port = dc_tu_daemon_port_of(&g_d, "SSL");
  if (port <= 0) {
    printf("Bail out! dynconfd has no SSL listener\n");
    return false;
  }
  snprintf(g_bootstrap, sizeof(g_bootstrap), "127.0.0.1:%d", port);
  return true;
}

int main(void) {
  if (system("command -v openssl >/dev/null 2>&1")) {
    printf("1..0 # SKIP openssl not installed\n");
    return 0;
  }
  bool up = setup();
  if (up) {
    test_trust();
    test_identity_pem();
    test_encrypted_key();
    test_keystore();
    test_conflicts();
    test_ciphers();
    if (!ok(dc_tu_daemon_alive(&g_d), "dynconfd still running"))
      dc_tu_daemon_log_tail(&g_d, 20);
  }
  dc_tu_daemon_stop(&g_d);
  dc_tu_rmrf(g_dir);
  dc_tu_file_texts_free();
  return up ? done_testing() : 1;
}
