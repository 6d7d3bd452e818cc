/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TLS client context and connections (see tls_client.h).
 */
#include "client/tls_client.h"
#include "common/text.h"
#include "common/clock.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct dc_tls_client_ctx {
  SSL_CTX *ctx; /* owned */
  bool no_verify, no_hostname_check;
};

struct dc_tls_conn {
  SSL *ssl; /* owned */
  char peer[300];
};


/* The most specific reason on OpenSSL's error queue (then cleared), or
 * fallback. *code (nullable) gets its reason code, 0 if none. */
static const char *ssl_reason_code(char *buf, size_t size,
                                   const char *fallback, int *code) {
  unsigned long e, last = 0;
  while ((e = ERR_get_error()))
    last = e;
  const char *r = last ? ERR_reason_error_string(last) : NULL;
  snprintf(buf, size, "%s", r ? r : fallback);
  if (code)
    *code = last ? ERR_GET_REASON(last) : 0;
  return buf;
}

static const char *ssl_reason(char *buf, size_t size, const char *fallback) {
  return ssl_reason_code(buf, size, fallback, NULL);
}

/* The first reason on OpenSSL's error queue (the root cause; later
 * entries are often generic, like "unsupported"), then cleared. */
static const char *ssl_first_reason(char *buf, size_t size,
                                    const char *fallback) {
  unsigned long first = ERR_get_error();
  ERR_clear_error();
  const char *r = first ? ERR_reason_error_string(first) : NULL;
  snprintf(buf, size, "%s", r ? r : fallback);
  return buf;
}

/* True when the newest queued error is PEM's "no start line": the end of
 * the PEM blocks was reached. */
static bool pem_at_end(void) {
  unsigned long e = ERR_peek_last_error();
  return ERR_GET_LIB(e) == ERR_LIB_PEM &&
         ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

/* ---- context: trust ---------------------------------------------------- */

/* True when dir holds a name like c_rehash makes (8 hex digits, '.',
 * digits): a directory without one cannot verify anything. */
static bool has_hashed_names(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return false;
  bool found = false;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    const char *n = e->d_name;
    size_t i = 0;
    while (i < 8 && isxdigit((unsigned char)n[i]))
      i++;
    found = i == 8 && n[8] == '.' && isdigit((unsigned char)n[9]) &&
            n[9 + strspn(n + 9, "0123456789")] == '\0';
  }
  closedir(d);
  return found;
}

static bool load_ca_dir(SSL_CTX *ctx, const char *dir, char *errstr,
                        size_t errstr_size) {
  char why[256];
  if (access(dir, R_OK | X_OK) != 0) {
    dc_seterr(errstr, errstr_size, "cannot load CA directory %s: %s "
              "(ssl.ca.location)", dir, strerror(errno));
    return false;
  }
  if (!has_hashed_names(dir)) {
    dc_seterr(errstr, errstr_size, "CA directory %s holds no hashed "
              "certificate names (run openssl rehash %s) (ssl.ca.location)",
              dir, dir);
    return false;
  }
  if (SSL_CTX_load_verify_locations(ctx, NULL, dir) != 1) {
    dc_seterr(errstr, errstr_size, "cannot load CA directory %s: %s "
              "(ssl.ca.location)", dir, ssl_reason(why, sizeof(why),
                                                   "unreadable"));
    return false;
  }
  return true;
}

/* ssl.ca.location: "probe" (the system store), a directory or a file. */
static bool load_ca_location(SSL_CTX *ctx, const char *loc, char *errstr,
                             size_t errstr_size) {
  char why[256];
  struct stat st;
  if (!strcmp(loc, "probe")) {
    if (SSL_CTX_set_default_verify_paths(ctx) == 1)
      return true;
    dc_seterr(errstr, errstr_size, "cannot load the system trust store: %s "
              "(ssl.ca.location=probe)", ssl_reason(why, sizeof(why),
                                                    "unknown error"));
    return false;
  }
  if (stat(loc, &st) != 0) {
    dc_seterr(errstr, errstr_size, "cannot load CA file %s: %s "
              "(ssl.ca.location)", loc, strerror(errno));
    return false;
  }
  if (S_ISDIR(st.st_mode))
    return load_ca_dir(ctx, loc, errstr, errstr_size);
  if (SSL_CTX_load_verify_locations(ctx, loc, NULL) != 1) {
    dc_seterr(errstr, errstr_size, "cannot load CA file %s: %s "
              "(ssl.ca.location)", loc, ssl_reason(why, sizeof(why),
                                                   "unreadable"));
    return false;
  }
  return true;
}

/* A password callback that has none: never prompts on a terminal. */
static int no_password(char *buf, int size, int rwflag, void *u) {
  (void)buf, (void)size, (void)rwflag, (void)u;
  return -1;
}

/* Every PEM certificate in b, in order (the caller frees the stack with
 * sk_X509_pop_free(sk, X509_free)); NULL with the reason in why when
 * there is none or one is damaged. */
static STACK_OF(X509) *read_pem_certs(BIO *b, char *why, size_t size) {
  STACK_OF(X509) *sk = sk_X509_new_null();
  X509 *x = NULL;
  while (sk && (x = PEM_read_bio_X509(b, NULL, no_password, NULL)))
    if (!sk_X509_push(sk, x))
      break;
  if (sk && !x && sk_X509_num(sk) > 0 && pem_at_end()) {
    ERR_clear_error();
    return sk;
  }
  if (!sk || x)
    dc_seterr(why, size, "out of memory");
  else if (sk_X509_num(sk) == 0 && pem_at_end())
    dc_seterr(why, size, "no PEM certificate found");
  else
    ssl_first_reason(why, size, "unreadable");
  ERR_clear_error();
  X509_free(x);
  sk_X509_pop_free(sk, X509_free);
  return NULL;
}

/* ssl.ca.pem: each certificate in the text joins the trust store. */
static bool load_ca_pem(SSL_CTX *ctx, const char *pem, char *errstr,
                        size_t errstr_size) {
  char why[256] = "out of memory";
  BIO *b = BIO_new_mem_buf(pem, -1);
  STACK_OF(X509) *sk = b ? read_pem_certs(b, why, sizeof(why)) : NULL;
  BIO_free(b);
  X509_STORE *store = SSL_CTX_get_cert_store(ctx);
  for (int i = 0; sk && i < sk_X509_num(sk); i++)
    if (X509_STORE_add_cert(store, sk_X509_value(sk, i)) != 1) {
      ssl_first_reason(why, sizeof(why), "cannot add it");
      sk_X509_pop_free(sk, X509_free);
      sk = NULL;
    }
  if (!sk) {
    dc_seterr(errstr, errstr_size,
              "cannot load CA certificates from ssl.ca.pem: %s", why);
    return false;
  }
  sk_X509_pop_free(sk, X509_free);
  return true;
}

/* ssl.ca.location and/or ssl.ca.pem; neither = the system store. */
static bool load_trust(SSL_CTX *ctx, const dc_tls_client_conf_t *conf,
                       char *errstr, size_t errstr_size) {
  char why[256];
  if (conf->ca_file &&
      !load_ca_location(ctx, conf->ca_file, errstr, errstr_size))
    return false;
  if (conf->ca_pem && !load_ca_pem(ctx, conf->ca_pem, errstr, errstr_size))
    return false;
  if (conf->ca_file || conf->ca_pem)
    return true;
  if (SSL_CTX_set_default_verify_paths(ctx) == 1)
    return true;
  dc_seterr(errstr, errstr_size, "cannot load the system trust store: %s",
            ssl_reason(why, sizeof(why), "unknown error"));
  return false;
}

/* ---- context: client identity ------------------------------------------ */

/* Where a certificate or key comes from: a file or PEM text. */
typedef struct src {
  const char *what; /* "client certificate", "client key" */
  const char *prop; /* the librdkafka property that set it */
  const char *path; /* a file, or NULL for ... */
  const char *pem;  /* ... PEM text */
} src_t;

static src_t src_of(const char *what, const char *file_prop,
                    const char *path, const char *pem_prop,
                    const char *pem) {
  return path ? (src_t){what, file_prop, path, NULL}
              : (src_t){what, pem_prop, NULL, pem};
}

/* "/x/k.pem (ssl.key.location)" or "from ssl.key.pem", for messages. */
static const char *src_name(const src_t *s, char *buf, size_t size) {
  if (s->path)
    snprintf(buf, size, "%s (%s)", s->path, s->prop);
  else
    snprintf(buf, size, "from %s", s->prop);
  return buf;
}

/* "cannot load client key /x/k.pem: REASON (HINT or property)", or
 * "cannot load client key from ssl.key.pem: REASON[ (HINT)]". */
static void src_fail(const src_t *s, const char *reason, const char *hint,
                     char *errstr, size_t errstr_size) {
  if (s->path)
    dc_seterr(errstr, errstr_size, "cannot load %s %s: %s (%s)", s->what,
              s->path, reason, hint ? hint : s->prop);
  else
    dc_seterr(errstr, errstr_size, "cannot load %s from %s: %s%s%s%s",
              s->what, s->prop, reason, hint ? " (" : "", hint ? hint : "",
              hint ? ")" : "");
}

/* A BIO over the file or the text; NULL with errstr set. */
static BIO *src_open(const src_t *s, char *errstr, size_t errstr_size) {
  if (!s->path) {
    BIO *b = BIO_new_mem_buf(s->pem, -1);
    if (!b)
      src_fail(s, "out of memory", NULL, errstr, errstr_size);
    return b;
  }
  FILE *f = fopen(s->path, "r");
  if (!f) {
    src_fail(s, strerror(errno), NULL, errstr, errstr_size);
    return NULL;
  }
  BIO *b = BIO_new_fp(f, BIO_CLOSE);
  if (!b) {
    fclose(f);
    src_fail(s, "out of memory", NULL, errstr, errstr_size);
  }
  return b;
}

/* The certificate, then the chain certificates after it. */
static bool load_cert_chain(SSL_CTX *ctx, const src_t *s, char *errstr,
                            size_t errstr_size) {
  char why[256];
  BIO *b = src_open(s, errstr, errstr_size);
  if (!b)
    return false;
  STACK_OF(X509) *sk = read_pem_certs(b, why, sizeof(why));
  BIO_free(b);
  bool ok = sk && SSL_CTX_use_certificate(ctx, sk_X509_value(sk, 0)) == 1;
  for (int i = 1; ok && i < sk_X509_num(sk); i++)
    ok = SSL_CTX_add1_chain_cert(ctx, sk_X509_value(sk, i)) == 1;
  if (sk && !ok)
    ssl_first_reason(why, sizeof(why), "unusable");
  if (!ok)
    src_fail(s, why, NULL, errstr, errstr_size);
  sk_X509_pop_free(sk, X509_free);
  return ok;
}

/* The pem password callback's state: the password (NULL = none) and
 * whether OpenSSL asked for it (the key is encrypted). */
typedef struct key_password {
  const char *password;
  bool asked;
} key_password_t;

static int give_password(char *buf, int size, int rwflag, void *u) {
  (void)rwflag;
  key_password_t *kp = u;
  kp->asked = true;
  size_t n = kp->password ? strlen(kp->password) : 0;
  if (!kp->password || n > (size_t)size)
    return -1;
  memcpy(buf, kp->password, n);
  return (int)n;
}

/* The private key, decrypted with password when encrypted; NULL with
 * errstr set. Caller frees. */
static EVP_PKEY *read_key(const src_t *s, const char *password, char *errstr,
                          size_t errstr_size) {
  BIO *b = src_open(s, errstr, errstr_size);
  if (!b)
    return NULL;
  key_password_t kp = {password, false};
  EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, give_password, &kp);
  BIO_free(b);
  if (k) {
    ERR_clear_error();
    return k;
  }
  if (kp.asked && !password)
    src_fail(s, "the key is encrypted and ssl.key.password is not set", NULL,
             errstr, errstr_size);
  else if (kp.asked) /* OpenSSL's reason varies with the random salt: a
                        * wrong key usually fails the padding check ("bad
                        * decrypt") but sometimes passes it and fails later
                        * in the ASN.1 decoding, so it is not quoted. */
    src_fail(s, "it does not decrypt with the password given",
             "is ssl.key.password right?", errstr, errstr_size);
  else
    src_fail(s, "no PEM private key found", NULL, errstr, errstr_size);
  ERR_clear_error();
  return NULL;
}

/* Installs key, which must match the certificate already in ctx. */
static bool use_key(SSL_CTX *ctx, EVP_PKEY *key, const char *key_name,
                    const char *cert_name, char *errstr, size_t errstr_size) {
  char why[256];
  if (X509_check_private_key(SSL_CTX_get0_certificate(ctx), key) != 1) {
    ERR_clear_error();
    dc_seterr(errstr, errstr_size, "client key %s does not match the "
              "certificate %s", key_name, cert_name);
    return false;
  }
  if (SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    dc_seterr(errstr, errstr_size, "cannot use client key %s: %s", key_name,
              ssl_first_reason(why, sizeof(why), "unusable"));
    return false;
  }
  return true;
}

/* Certificate and key from files or PEM text. */
static bool load_cert_and_key(SSL_CTX *ctx, const dc_tls_client_conf_t *c,
                              char *errstr, size_t errstr_size) {
  src_t cert = src_of("client certificate", "ssl.certificate.location",
                      c->cert_file, "ssl.certificate.pem", c->cert_pem);
  src_t key = src_of("client key", "ssl.key.location", c->key_file,
                     "ssl.key.pem", c->key_pem);
  if (!load_cert_chain(ctx, &cert, errstr, errstr_size))
    return false;
  EVP_PKEY *k = read_key(&key, c->key_password, errstr, errstr_size);
  char kn[PATH_MAX + 64], cn[PATH_MAX + 64];
  bool ok = k && use_key(ctx, k, src_name(&key, kn, sizeof(kn)),
                         src_name(&cert, cn, sizeof(cn)), errstr,
                         errstr_size);
  EVP_PKEY_free(k);
  return ok;
}

/* Opens and parses a PKCS#12 file; false with errstr set. */
static bool parse_keystore(const char *path, const char *password,
                           EVP_PKEY **key, X509 **cert,
                           STACK_OF(X509) **chain, char *errstr,
                           size_t errstr_size) {
  char why[256];
  FILE *f = fopen(path, "rb");
  if (!f) {
    dc_seterr(errstr, errstr_size, "cannot open PKCS#12 keystore %s: %s "
              "(ssl.keystore.location)", path, strerror(errno));
    return false;
  }
  PKCS12 *p12 = d2i_PKCS12_fp(f, NULL);
  fclose(f);
  if (!p12) {
    dc_seterr(errstr, errstr_size, "cannot open PKCS#12 keystore %s: not a "
              "PKCS#12 file (%s) (ssl.keystore.location)", path,
              ssl_first_reason(why, sizeof(why), "unreadable"));
    return false;
  }
  int ok = PKCS12_parse(p12, password, key, cert, chain);
  PKCS12_free(p12);
  if (ok == 1)
    return true;
  unsigned long e = ERR_peek_error();
  bool mac = ERR_GET_LIB(e) == ERR_LIB_PKCS12 &&
             ERR_GET_REASON(e) == PKCS12_R_MAC_VERIFY_FAILURE;
  dc_seterr(errstr, errstr_size, "cannot open PKCS#12 keystore %s: %s (%s)",
            path, ssl_first_reason(why, sizeof(why), "unreadable"),
            mac ? "is ssl.keystore.password right?" : "ssl.keystore.location");
  return false;
}

/* Installs what a keystore held: certificate, chain and key. */
static bool use_keystore(SSL_CTX *ctx, const char *path, EVP_PKEY *key,
                         X509 *cert, STACK_OF(X509) *chain, char *errstr,
                         size_t errstr_size) {
  char why[256], name[PATH_MAX + 64];
  if (!key || !cert) {
    dc_seterr(errstr, errstr_size, "PKCS#12 keystore %s holds no %s "
              "(ssl.keystore.location)", path,
              cert ? "private key" : "certificate");
    return false;
  }
  bool ok = SSL_CTX_use_certificate(ctx, cert) == 1;
  for (int i = 0; ok && i < sk_X509_num(chain); i++)
    ok = SSL_CTX_add1_chain_cert(ctx, sk_X509_value(chain, i)) == 1;
  if (!ok) {
    dc_seterr(errstr, errstr_size, "cannot use the certificates of PKCS#12 "
              "keystore %s: %s (ssl.keystore.location)", path,
              ssl_first_reason(why, sizeof(why), "unusable"));
    return false;
  }
  snprintf(name, sizeof(name), "in PKCS#12 keystore %s", path);
  return use_key(ctx, key, name, name, errstr, errstr_size);
}

/* ssl.keystore.location: key, certificate and chain from PKCS#12. */
static bool load_keystore(SSL_CTX *ctx, const char *path,
                          const char *password, char *errstr,
                          size_t errstr_size) {
  EVP_PKEY *key = NULL;
  X509 *cert = NULL;
  STACK_OF(X509) *chain = NULL;
  if (!parse_keystore(path, password, &key, &cert, &chain, errstr,
                      errstr_size))
    return false;
  bool ok = use_keystore(ctx, path, key, cert, chain, errstr, errstr_size);
  EVP_PKEY_free(key);
  X509_free(cert);
  sk_X509_pop_free(chain, X509_free);
  return ok;
}

/* The first set of (a, b) with its property name, or NULL. */
static const char *first_set(const char *a, const char *an, const char *b,
                             const char *bn, const char **name) {
  *name = a ? an : bn;
  return a ? a : b;
}

/* At most one source each for the certificate and the key, and both or
 * neither. */
static bool check_sources(const dc_tls_client_conf_t *c, char *errstr,
                          size_t errstr_size) {
  const char *cn, *kn;
  const char *cert = first_set(c->cert_file, "ssl.certificate.location",
                               c->cert_pem, "ssl.certificate.pem", &cn);
  const char *key = first_set(c->key_file, "ssl.key.location", c->key_pem,
                              "ssl.key.pem", &kn);
  const char *a = NULL, *b = NULL;
  if (c->cert_file && c->cert_pem)
    a = "ssl.certificate.location", b = "ssl.certificate.pem";
  else if (c->key_file && c->key_pem)
    a = "ssl.key.location", b = "ssl.key.pem";
  else if (c->keystore_file && (cert || key))
    a = "ssl.keystore.location", b = cert ? cn : kn;
  if (a) {
    dc_seterr(errstr, errstr_size, "set either %s or %s, not both", a, b);
    return false;
  }
  if (cert && !key)
    dc_seterr(errstr, errstr_size, "a client certificate needs its key: %s "
              "is set but neither ssl.key.location nor ssl.key.pem", cn);
  else if (key && !cert)
    dc_seterr(errstr, errstr_size, "a client key needs its certificate: %s "
              "is set but neither ssl.certificate.location nor "
              "ssl.certificate.pem", kn);
  return !cert == !key;
}

static bool load_identity(SSL_CTX *ctx, const dc_tls_client_conf_t *c,
                          char *errstr, size_t errstr_size) {
  if (c->keystore_file)
    return load_keystore(ctx, c->keystore_file, c->keystore_password, errstr,
                         errstr_size);
  if (c->cert_file || c->cert_pem)
    return load_cert_and_key(ctx, c, errstr, errstr_size);
  return true;
}

/* ---- context: ciphers -------------------------------------------------- */

static bool set_ciphers(SSL_CTX *ctx, const char *list, char *errstr,
                        size_t errstr_size) {
  char why[256];
  if (!list || SSL_CTX_set_cipher_list(ctx, list) == 1)
    return true;
  dc_seterr(errstr, errstr_size, "invalid ssl.cipher.suites '%s': %s", list,
            ssl_reason(why, sizeof(why), "no cipher match"));
  return false;
}

dc_tls_client_ctx_t *dc_tls_client_ctx_new(const dc_tls_client_conf_t *conf,
                                           char *errstr, size_t errstr_size) {
  char why[256];
  if (!check_sources(conf, errstr, errstr_size))
    return NULL;
  ERR_clear_error();
  dc_tls_client_ctx_t *c = calloc(1, sizeof(*c));
  if (!c || !(c->ctx = SSL_CTX_new(TLS_client_method()))) {
    dc_seterr(errstr, errstr_size, "cannot create a TLS context: %s",
           ssl_reason(why, sizeof(why), "out of memory"));
    free(c);
    return NULL;
  }
  c->no_verify = conf->no_verify;
  c->no_hostname_check = conf->no_hostname_check;
  SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(c->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(c->ctx, conf->no_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                     NULL);
  SSL_CTX_set_default_passwd_cb(c->ctx, no_password);
  if (!set_ciphers(c->ctx, conf->cipher_suites, errstr, errstr_size) ||
      !load_trust(c->ctx, conf, errstr, errstr_size) ||
      !load_identity(c->ctx, conf, errstr, errstr_size)) {
    ERR_clear_error();
    dc_tls_client_ctx_destroy(c);
    return NULL;
  }
  return c;
}

void dc_tls_client_ctx_destroy(dc_tls_client_ctx_t *ctx) {
  if (!ctx)
    return;
  SSL_CTX_free(ctx->ctx);
  free(ctx);
}

/* OpenSSL writes to the socket with write(), which raises SIGPIPE when the
 * peer has gone; a CLI must get EPIPE instead. Block SIGPIPE in this
 * thread around each SSL call and swallow one we caused (as libpq does). */
typedef struct nosigpipe {
  sigset_t old;
  bool pending_before;
} nosigpipe_t;

static void nosigpipe_begin(nosigpipe_t *s) {
  sigset_t set, pend;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, &s->old);
  s->pending_before = sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE);
}

static void nosigpipe_end(nosigpipe_t *s) {
  sigset_t set, pend;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  if (!s->pending_before && sigpending(&pend) == 0 &&
      sigismember(&pend, SIGPIPE)) {
    struct timespec zero = {0, 0};
    sigtimedwait(&set, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &s->old, NULL);
}

static bool is_ip_literal(const char *host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host, buf) == 1 ||
         inet_pton(AF_INET6, host, buf) == 1;
}

/* Waits for fd; 1 ready, 0 deadline passed, -1 error, -2 cancel_fd
 * readable. */
static int wait_fd(int fd, short events, int64_t deadline, int cancel_fd) {
  struct pollfd pfd[2] = {{.fd = fd, .events = events},
                          {.fd = cancel_fd, .events = POLLIN}};
  for (;;) {
    int64_t left = deadline - dc_mono_ms();
    int ms = left < 0 ? 0 : left > 0x7fffffff ? 0x7fffffff : (int)left;
    int r = poll(pfd, cancel_fd >= 0 ? 2 : 1, ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r > 0 && cancel_fd >= 0 && pfd[1].revents)
      return -2;
    return r < 0 ? -1 : r;
  }
}

dc_err_t dc_tls_client_handshake(dc_tls_client_ctx_t *ctx, int fd,
                                 const char *host, const char *peer,
                                 int64_t deadline, int cancel_fd,
                                 dc_tls_conn_t **out, char *errstr,
                                 size_t errstr_size) {
  *out = NULL;
  char why[256];
  ERR_clear_error();
  dc_tls_conn_t *t = calloc(1, sizeof(*t));
  if (!t || !(t->ssl = SSL_new(ctx->ctx)) || SSL_set_fd(t->ssl, fd) != 1) {
    dc_seterr(errstr, errstr_size, "TLS setup for %s failed: %s", peer,
           ssl_reason(why, sizeof(why), "out of memory"));
    dc_tls_conn_destroy(t);
    return DC_ERR__NOMEM;
  }
  snprintf(t->peer, sizeof(t->peer), "%s", peer);
  bool ip = is_ip_literal(host);
  if (!ip)
    SSL_set_tlsext_host_name(t->ssl, host);
  if (!ctx->no_verify && !ctx->no_hostname_check) {
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host)
                : SSL_set1_host(t->ssl, host);
    if (ok != 1) {
      dc_seterr(errstr, errstr_size, "TLS setup for %s failed: cannot check "
                                  "host name '%s'", peer, host);
      dc_tls_conn_destroy(t);
      return DC_ERR__TRANSPORT;
    }
  }
  for (;;) {
    ERR_clear_error();
    errno = 0;
    nosigpipe_t np;
    nosigpipe_begin(&np);
    int r = SSL_connect(t->ssl);
    int saved = errno;
    nosigpipe_end(&np);
    errno = saved;
    if (r == 1)
      break;
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      int w = wait_fd(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
                      deadline, cancel_fd);
      if (w > 0)
        continue;
      if (w == -2) {
        dc_seterr(errstr, errstr_size, "TLS handshake with %s cancelled",
                  peer);
        dc_tls_conn_destroy(t);
        return DC_ERR__TRANSPORT;
      }
      if (w == 0) {
        dc_seterr(errstr, errstr_size, "TLS handshake with %s timed out", peer);
        dc_tls_conn_destroy(t);
        return DC_ERR__TIMED_OUT;
      }
    }
    long vr = SSL_get_verify_result(t->ssl);
    int saved_errno = errno, code = 0;
    ssl_reason_code(why, sizeof(why), "", &code);
    if (code == SSL_R_UNEXPECTED_EOF_WHILE_READING)
      why[0] = '\0', saved_errno = 0; /* closed: say so below */
    if (vr != X509_V_OK)
      dc_seterr(errstr, errstr_size, "TLS handshake with %s failed: %s (%s)",
             peer, why[0] ? why : "certificate verify failed",
             X509_verify_cert_error_string(vr));
    else if (why[0])
      dc_seterr(errstr, errstr_size, "TLS handshake with %s failed: %s", peer,
             why);
    else if (e == SSL_ERROR_SYSCALL && saved_errno)
      dc_seterr(errstr, errstr_size, "TLS handshake with %s failed: %s", peer,
             strerror(saved_errno));
    else
      dc_seterr(errstr, errstr_size,
             "TLS handshake with %s failed: connection closed by the server "
             "(is it a TLS listener?)", peer);
    dc_tls_conn_destroy(t);
    return DC_ERR__TRANSPORT;
  }
  *out = t;
  return DC_ERR_NO_ERROR;
}

void dc_tls_conn_destroy(dc_tls_conn_t *t) {
  if (!t)
    return;
  if (t->ssl) {
    /* Only after a completed handshake; a failed write just goes nowhere
     * (the socket is non-blocking). */
    if (SSL_is_init_finished(t->ssl)) {
      nosigpipe_t np;
      nosigpipe_begin(&np);
      SSL_shutdown(t->ssl);
      nosigpipe_end(&np);
    }
    SSL_free(t->ssl);
  }
  ERR_clear_error();
  free(t);
}

/* Shared tail of read/write: classifies SSL_get_error. */
static ssize_t io_result(dc_tls_conn_t *t, int r, const char *what,
                         short *wait, char *errstr, size_t errstr_size) {
  int e = SSL_get_error(t->ssl, r);
  int saved_errno = errno;
  char why[256];
  switch (e) {
  case SSL_ERROR_WANT_READ:
    *wait = POLLIN;
    return -1;
  case SSL_ERROR_WANT_WRITE:
    *wait = POLLOUT;
    return -1;
  case SSL_ERROR_ZERO_RETURN:
    return 0;
  case SSL_ERROR_SYSCALL:
    ssl_reason(why, sizeof(why), "");
    if (why[0])
      break;
    if (saved_errno == 0) /* EOF without close_notify */
      return 0;
    dc_seterr(errstr, errstr_size, "cannot %s %s: %s", what, t->peer,
           strerror(saved_errno));
    return -2;
  default:
    ssl_reason(why, sizeof(why), "TLS error");
    break;
  }
  dc_seterr(errstr, errstr_size, "cannot %s %s: %s", what, t->peer, why);
  return -2;
}

/* Reads what is left on a dying connection for a TLS alert; true with its
 * text when there was one. */
static bool pending_alert(dc_tls_conn_t *t, char *buf, size_t size) {
  uint8_t scratch[256];
  size_t got = 0;
  ERR_clear_error();
  nosigpipe_t np;
  nosigpipe_begin(&np);
  int r = SSL_read_ex(t->ssl, scratch, sizeof(scratch), &got);
  nosigpipe_end(&np);
  if (r == 1 || SSL_get_error(t->ssl, r) != SSL_ERROR_SSL)
    return false;
  ssl_reason(buf, size, "");
  return buf[0] != '\0';
}

ssize_t dc_tls_write(dc_tls_conn_t *t, const void *p, size_t n, short *wait,
                     char *errstr, size_t errstr_size) {
  ERR_clear_error();
  errno = 0;
  size_t done = 0;
  nosigpipe_t np;
  nosigpipe_begin(&np);
  int r = SSL_write_ex(t->ssl, p, n, &done);
  int saved = errno;
  nosigpipe_end(&np);
  errno = saved;
  if (r == 1)
    return (ssize_t)done;
  if (saved == EPIPE || saved == ECONNRESET) {
    /* The server may have said why before hanging up (TLS 1.3 rejects a
     * client certificate after our side of the handshake is done). */
    char alert[256] = "";
    if (pending_alert(t, alert, sizeof(alert))) {
      dc_seterr(errstr, errstr_size, "cannot send to %s: the server ended the "
             "TLS session: %s", t->peer, alert);
      return -2;
    }
    errno = saved;
  }
  ssize_t x = io_result(t, r, "send to", wait, errstr, errstr_size);
  if (x == 0) {
    dc_seterr(errstr, errstr_size, "connection closed by %s", t->peer);
    return -2;
  }
  return x;
}

ssize_t dc_tls_read(dc_tls_conn_t *t, void *p, size_t n, short *wait,
                    char *errstr, size_t errstr_size) {
  ERR_clear_error();
  errno = 0;
  size_t done = 0;
  nosigpipe_t np;
  nosigpipe_begin(&np); /* a read may write (alerts, key updates) */
  int r = SSL_read_ex(t->ssl, p, n, &done);
  int saved = errno;
  nosigpipe_end(&np);
  errno = saved;
  if (r == 1)
    return (ssize_t)done;
  return io_result(t, r, "read from", wait, errstr, errstr_size);
}

bool dc_tls_pending(const dc_tls_conn_t *t) { return SSL_pending(t->ssl) > 0; }
