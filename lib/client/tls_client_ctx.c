/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The TLS client context (see tls_client.h): trust store, client
 * certificate and key, ciphers. Connections are in tls_client.c.
 */
#include "client/tls_client_int.h"
#include "common/text.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/ssl.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *dc_tls_reason_code(char *buf, size_t size, const char *fallback,
                               int *code) {
  unsigned long e, last = 0;
  while ((e = ERR_get_error()))
    last = e;
  const char *r = last ? ERR_reason_error_string(last) : NULL;
  snprintf(buf, size, "%s", r ? r : fallback);
  if (code)
    *code = last ? ERR_GET_REASON(last) : 0;
  return buf;
}

const char *dc_tls_reason(char *buf, size_t size, const char *fallback) {
  return dc_tls_reason_code(buf, size, fallback, NULL);
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
              "(ssl.ca.location)", dir, dc_tls_reason(why, sizeof(why),
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
              "(ssl.ca.location=probe)", dc_tls_reason(why, sizeof(why),
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
              "(ssl.ca.location)", loc, dc_tls_reason(why, sizeof(why),
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
            dc_tls_reason(why, sizeof(why), "unknown error"));
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
            dc_tls_reason(why, sizeof(why), "no cipher match"));
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
           dc_tls_reason(why, sizeof(why), "out of memory"));
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
