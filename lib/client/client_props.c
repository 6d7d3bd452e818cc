/* SPDX-License-Identifier: BSD-2-Clause */
/* Kafka client properties into a connection's security (client_props.h). */
#include "client/client_props.h"
#include "client/oauth_client.h"
#include "common/kvfile.h"
#include "common/text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

/* The string properties and where each goes in dc_kclient_security_t;
 * pem: the value is PEM text written on one line, "\n" for each newline. */
static const struct {
  const char *key;
  size_t off;
  bool pem;
} string_props[] = {
    {"security.protocol", offsetof(dc_kclient_security_t, protocol), false},
    {"ssl.ca.location", offsetof(dc_kclient_security_t, ssl_ca), false},
    {"ssl.ca.pem", offsetof(dc_kclient_security_t, ssl_ca_pem), true},
    {"ssl.certificate.location", offsetof(dc_kclient_security_t, ssl_cert),
     false},
    {"ssl.certificate.pem", offsetof(dc_kclient_security_t, ssl_cert_pem),
     true},
    {"ssl.key.location", offsetof(dc_kclient_security_t, ssl_key), false},
    {"ssl.key.pem", offsetof(dc_kclient_security_t, ssl_key_pem), true},
    {"ssl.key.password", offsetof(dc_kclient_security_t, ssl_key_password),
     false},
    {"ssl.keystore.location", offsetof(dc_kclient_security_t, ssl_keystore),
     false},
    {"ssl.keystore.password",
     offsetof(dc_kclient_security_t, ssl_keystore_password), false},
    {"ssl.cipher.suites", offsetof(dc_kclient_security_t, ssl_cipher_suites),
     false},
    {"sasl.mechanism", offsetof(dc_kclient_security_t, sasl_mechanism), false},
    {"sasl.mechanisms", offsetof(dc_kclient_security_t, sasl_mechanism),
     false},
    {"sasl.username", offsetof(dc_kclient_security_t, sasl_username), false},
    {"sasl.password", offsetof(dc_kclient_security_t, sasl_password), false},
    {"sasl.kerberos.service.name",
     offsetof(dc_kclient_security_t, sasl_kerberos_service_name), false},
    {"sasl.kerberos.principal",
     offsetof(dc_kclient_security_t, sasl_kerberos_principal), false},
    {"sasl.kerberos.keytab",
     offsetof(dc_kclient_security_t, sasl_kerberos_keytab), false},
};
#define N_STRING_PROPS (sizeof(string_props) / sizeof(string_props[0]))

/* What the file says beyond sec's fields, applied once it is all read. */
typedef struct loader {
  dc_client_props_t *p;
  const char *jaas;            /* sasl.jaas.config */
  const char *oauth_token_url; /* sasl.oauthbearer.token.endpoint.url */
  const char *oauth_config;    /* sasl.oauthbearer.config */
  bool oauth_unsecure;         /* enable.sasl.oauthbearer.unsecure.jwt */
} loader_t;

/* In place: "\n" becomes a newline and "\\" a backslash; any other
 * backslash stays as written. */
static void unescape_pem(char *s) {
  char *w = s;
  for (const char *r = s; *r; r++) {
    if (r[0] == '\\' && (r[1] == 'n' || r[1] == '\\'))
      *w++ = *++r == 'n' ? '\n' : '\\';
    else
      *w++ = *r;
  }
  *w = '\0';
}

/* Stores val for a string property; false when key is not one. */
static bool set_string_prop(dc_kclient_security_t *sec, const char *key,
                            char *val) {
  for (size_t i = 0; i < N_STRING_PROPS; i++) {
    if (strcmp(key, string_props[i].key))
      continue;
    if (string_props[i].pem)
      unescape_pem(val);
    *(const char **)((char *)sec + string_props[i].off) = val;
    return true;
  }
  return false;
}

/* A true/false (or https/none) property into *out; 0, 1 when key is not
 * named, -1 with why for another value. */
static int set_choice(const char *key, const char *val, const char *name,
                      const char *no, const char *yes, bool *out, char *why,
                      size_t why_size) {
  if (strcmp(key, name))
    return 1;
  if (strcmp(val, no) && strcmp(val, yes)) {
    dc_seterr(why, why_size, "bad value '%s' for %s", val, key);
    return -1;
  }
  *out = !strcmp(val, yes);
  return 0;
}

static void unknown_prop(const char *key, char *why, size_t why_size) {
  char known[1024] = "";
  size_t n = 0;
  for (size_t i = 0; i < N_STRING_PROPS; i++)
    if (n < sizeof(known))
      n += (size_t)snprintf(known + n, sizeof(known) - n, "%s, ",
                            string_props[i].key);
  dc_seterr(why, why_size,
            "unknown property '%s' (known: %s"
            "enable.ssl.certificate.verification, "
            "ssl.endpoint.identification.algorithm, sasl.jaas.config, "
            "sasl.oauthbearer.config, "
            "sasl.oauthbearer.token.endpoint.url, "
            "enable.sasl.oauthbearer.unsecure.jwt)",
            key, known);
}

/* The properties that are not one of sec's strings; as set_prop. */
static int set_other_prop(loader_t *l, const char *key, char *val, char *why,
                          size_t why_size) {
  dc_client_props_t *p = l->p;
  bool verify = true, check_host = true;
  int rc;
  if (!strcmp(key, "sasl.jaas.config")) {
    l->jaas = val;
    return 0;
  }
  if (!strcmp(key, "sasl.oauthbearer.config")) {
    l->oauth_config = val;
    return 0;
  }
  if (!strcmp(key, "sasl.oauthbearer.token.endpoint.url")) {
    if (strncmp(val, "file://", 7)) {
      dc_seterr(why, why_size, "%s: only file:// URLs are read here, not "
                "'%.100s'", key, val);
      return -1;
    }
    l->oauth_token_url = val;
    return 0;
  }
  if ((rc = set_choice(key, val, "enable.sasl.oauthbearer.unsecure.jwt",
                       "false", "true", &l->oauth_unsecure, why,
                       why_size)) <= 0)
    return rc;
  if ((rc = set_choice(key, val, "enable.ssl.certificate.verification",
                       "false", "true", &verify, why, why_size)) <= 0) {
    p->sec.ssl_no_verify = !verify;
    return rc;
  }
  rc = set_choice(key, val, "ssl.endpoint.identification.algorithm", "none",
                  "https", &check_host, why, why_size);
  if (rc == 1) {
    unknown_prop(key, why, why_size);
    return -1;
  }
  p->sec.ssl_no_hostname_check = !check_host;
  p->hostname_check_given = rc == 0;
  return rc;
}

/* One KEY=VALUE (a dc_kvfile_cb_t; opaque is the loader_t). The value is
 * copied into the arena. 0, or -1 with the sentence in why. */
static int set_prop(void *opaque, const char *key, const char *value,
                    int lineno, char *why, size_t why_size) {
  (void)lineno;
  loader_t *l = opaque;
  char *val = dc_arena_strdup(&l->p->arena, value);
  if (!val) {
    dc_seterr(why, why_size, "out of memory");
    return -1;
  }
  if (set_string_prop(&l->p->sec, key, val))
    return 0;
  return set_other_prop(l, key, val, why, why_size);
}

/* sasl.mechanism=OAUTHBEARER: the token file the configuration names
 * (checked now, read again at each connection), or an unsigned token
 * when that is explicitly allowed. 0, or -1 with why. */
static int oauth_token(loader_t *l, char *why, size_t why_size) {
  dc_kclient_security_t *sec = &l->p->sec;
  if (!sec->sasl_mechanism || strcmp(sec->sasl_mechanism, "OAUTHBEARER"))
    return 0;
  if (l->oauth_token_url) {
    const char *path = l->oauth_token_url + 7;
    char *tok = dc_oauth_token_file_read(path, why, why_size);
    if (!tok)
      return -1;
    OPENSSL_cleanse(tok, strlen(tok));
    free(tok);
    sec->sasl_oauthbearer_token_file = path;
    return 0;
  }
  if (!l->oauth_unsecure) {
    dc_seterr(why, why_size, "OAUTHBEARER needs "
              "sasl.oauthbearer.token.endpoint.url=file://PATH, or "
              "sasl.oauthbearer.config with "
              "enable.sasl.oauthbearer.unsecure.jwt=true (unsigned, tests)");
    return -1;
  }
  char *tok = dc_oauth_unsecured_token(l->oauth_config, (int64_t)time(NULL),
                                       why, why_size);
  if (!tok)
    return -1;
  sec->sasl_oauthbearer_token = dc_arena_strdup(&l->p->arena, tok);
  OPENSSL_cleanse(tok, strlen(tok));
  free(tok);
  if (!sec->sasl_oauthbearer_token)
    dc_seterr(why, why_size, "out of memory");
  return sec->sasl_oauthbearer_token ? 0 : -1;
}

int dc_client_props_load(dc_client_props_t *p, const char *path, char *why,
                         size_t why_size) {
  *p = (dc_client_props_t){0};
  dc_arena_init(&p->arena);
  loader_t l = {.p = p};
  if (dc_kvfile_read(path, set_prop, &l, why, why_size))
    return -1;
  if (l.jaas && dc_client_props_jaas(p, l.jaas, why, why_size))
    return -1;
  return oauth_token(&l, why, why_size);
}

void dc_client_props_free(dc_client_props_t *p) {
  if (!p)
    return;
  dc_arena_free_wiped(&p->arena);
  p->sec = (dc_kclient_security_t){0};
}
