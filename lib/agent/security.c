/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's connection settings: librdkafka's security.protocol, ssl.*
 * and sasl.* properties read from the application's rd_kafka_conf_t, each
 * overridden by "dynconf." + its name (the config server may sit behind a
 * different listener than the data plane).
 */
#include "agent/agent_int.h"
#include "client/oauth_client.h"
#include "common/scram.h"
#include "common/text.h"

#include <openssl/crypto.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

const char *const dc_sec_prop_names[DC_SEC_N] = {
#define DC_SEC_NAME_(id, name) name,
    DC_SEC_PROPS(DC_SEC_NAME_)
#undef DC_SEC_NAME_
};

/* A global property of the application's conf, any length; NULL when
 * unset or empty. Caller frees. */
static char *app_prop(rd_kafka_conf_t *conf, const char *name) {
  size_t sz = 0;
  if (rd_kafka_conf_get(conf, name, NULL, &sz) != RD_KAFKA_CONF_OK || sz <= 1)
    return NULL;
  char *v = malloc(sz);
  if (v && rd_kafka_conf_get(conf, name, v, &sz) != RD_KAFKA_CONF_OK) {
    free(v);
    v = NULL;
  }
  return v;
}

void dc_agent_security_free(char *store[DC_SEC_STORE_N]) {
  for (int i = 0; i < DC_SEC_STORE_N; i++) {
    if (store[i]) {
      OPENSSL_cleanse(store[i], strlen(store[i]));
      free(store[i]);
    }
    store[i] = NULL;
  }
}

/* Where a value came from, for sentences: the override or the app's. */
static const char *origin(const dynconf_t *dc, dc_sec_prop_t p, char *buf,
                          size_t size) {
  snprintf(buf, size, "%s%s", *dc->conf.sec[p] ? "dynconf." : "",
           dc_sec_prop_names[p]);
  return buf;
}

static bool protocol_known(const char *p) {
  static const char *const known[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT",
                                      "SASL_SSL"};
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
    if (!strcasecmp(p, known[i]))
      return true;
  return false;
}

static bool mechanism_spoken(const char *m) {
  dc_scram_hash_t h;
  return !strcmp(m, "PLAIN") || !strcmp(m, "OAUTHBEARER") ||
         !strcmp(m, "GSSAPI") || dc_scram_hash_from_name(m, &h);
}

/* OAUTHBEARER: the agent makes unsigned tokens from
 * sasl.oauthbearer.config, as librdkafka does, only when
 * enable.sasl.oauthbearer.unsecure.jwt=true. 0, or -1 with the sentence. */
static int check_oauth(const dynconf_t *dc, char *store[DC_SEC_STORE_N],
                       char *errstr, size_t errstr_size) {
  const char *unsecure = store[DC_SEC_OAUTH_UNSECURE];
  if (dc->conf.oauth_refresh_cb || (unsecure && !strcasecmp(unsecure, "true")))
    return 0;
  char o[80];
  dc_seterr(errstr, errstr_size,
            "the dynconf agent has no way to get an OAUTHBEARER token: set "
            "a token refresh callback "
            "(dynconf_conf_set_oauthbearer_token_refresh_cb), or "
            "dynconf.enable.sasl.oauthbearer.unsecure.jwt=true for a "
            "server that takes unsigned tokens (%s is not true), or "
            "dynconf.sasl.mechanisms with its credentials",
            origin(dc, DC_SEC_OAUTH_UNSECURE, o, sizeof(o)));
  return -1;
}

/* The protocol and mechanism the agent is asked to use, checked against
 * what it speaks. 0, or -1 with the sentence. */
static int check_speakable(const dynconf_t *dc, char *store[DC_SEC_STORE_N],
                           char *errstr, size_t errstr_size) {
  char o[80];
  const char *proto = store[DC_SEC_PROTOCOL] ? store[DC_SEC_PROTOCOL]
                                             : "PLAINTEXT";
  if (!protocol_known(proto)) {
    dc_seterr(errstr, errstr_size,
             "%s '%s' is not one the dynconf agent speaks (PLAINTEXT, SSL, "
             "SASL_PLAINTEXT, SASL_SSL); set dynconf.security.protocol for "
             "the config server",
             origin(dc, DC_SEC_PROTOCOL, o, sizeof(o)), proto);
    return -1;
  }
  if (strncasecmp(proto, "SASL_", 5))
    return 0;
  const char *mech = store[DC_SEC_SASL_MECHANISMS]
                         ? store[DC_SEC_SASL_MECHANISMS]
                         : "GSSAPI"; /* librdkafka's default */
  if (!mechanism_spoken(mech)) {
    dc_seterr(errstr, errstr_size,
             "the dynconf agent cannot authenticate with SASL mechanism %s "
             "(%s; it speaks PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
             "OAUTHBEARER and GSSAPI): set "
             "dynconf.sasl.mechanisms, dynconf.sasl.username and "
             "dynconf.sasl.password, or dynconf.security.protocol, for the "
             "config server",
             mech, origin(dc, DC_SEC_SASL_MECHANISMS, o, sizeof(o)));
    return -1;
  }
  if (!strcmp(mech, "OAUTHBEARER"))
    return check_oauth(dc, store, errstr, errstr_size);
  return 0;
}

/* The OAUTHBEARER token for a new connection, into store[DC_SEC_TOKEN]:
 * the application's (refresh callback), else an unsigned one made now
 * (iat and exp count from this connection on). 0, or -1 with errstr. */
static int take_token(dynconf_t *dc, char *store[DC_SEC_STORE_N],
                      char *errstr, size_t errstr_size) {
  char why[600];
  if (dc->conf.oauth_refresh_cb) {
    store[DC_SEC_TOKEN] = dc_oauth_token_copy(dc, why, sizeof(why));
    if (!store[DC_SEC_TOKEN])
      dc_seterr(errstr, errstr_size, "%s", why);
    return store[DC_SEC_TOKEN] ? 0 : -1;
  }
  store[DC_SEC_TOKEN] = dc_oauth_unsecured_token(
      store[DC_SEC_OAUTH_CONFIG], (int64_t)time(NULL), why, sizeof(why));
  if (!store[DC_SEC_TOKEN]) {
    char o[80];
    dc_seterr(errstr, errstr_size, "%s (from %s)", why,
              origin(dc, DC_SEC_OAUTH_CONFIG, o, sizeof(o)));
    return -1;
  }
  return 0;
}

bool dc_agent_uses_oauthbearer(dynconf_t *dc) {
  char *store[DC_SEC_STORE_N] = {0};
  for (int i = 0; i < DC_SEC_N; i++)
    if (i == DC_SEC_PROTOCOL || i == DC_SEC_SASL_MECHANISMS)
      store[i] = *dc->conf.sec[i] ? strdup(dc->conf.sec[i])
                                  : app_prop(dc->app_conf,
                                             dc_sec_prop_names[i]);
  bool yes = store[DC_SEC_PROTOCOL] && store[DC_SEC_SASL_MECHANISMS] &&
             !strncasecmp(store[DC_SEC_PROTOCOL], "SASL_", 5) &&
             !strcmp(store[DC_SEC_SASL_MECHANISMS], "OAUTHBEARER");
  dc_agent_security_free(store);
  return yes;
}

int dc_agent_security_read(dynconf_t *dc, dc_kclient_security_t *sec,
                           char *store[DC_SEC_STORE_N], char *errstr,
                           size_t errstr_size) {
  memset(sec, 0, sizeof(*sec));
  for (int i = 0; i < DC_SEC_N; i++) {
    const char *over = dc->conf.sec[i];
    store[i] = *over ? strdup(over) : app_prop(dc->app_conf,
                                                  dc_sec_prop_names[i]);
  }
  if (check_speakable(dc, store, errstr, errstr_size))
    return -1;
  sec->protocol = store[DC_SEC_PROTOCOL];
  sec->ssl_ca = store[DC_SEC_CA_LOCATION];
  sec->ssl_ca_pem = store[DC_SEC_CA_PEM];
  sec->ssl_cert = store[DC_SEC_CERT_LOCATION];
  sec->ssl_cert_pem = store[DC_SEC_CERT_PEM];
  sec->ssl_key = store[DC_SEC_KEY_LOCATION];
  sec->ssl_key_pem = store[DC_SEC_KEY_PEM];
  sec->ssl_key_password = store[DC_SEC_KEY_PASSWORD];
  sec->ssl_keystore = store[DC_SEC_KEYSTORE_LOCATION];
  sec->ssl_keystore_password = store[DC_SEC_KEYSTORE_PASSWORD];
  sec->ssl_cipher_suites = store[DC_SEC_CIPHER_SUITES];
  /* librdkafka 2.x checks the host name unless told "none". */
  const char *eia = store[DC_SEC_ENDPOINT_ID];
  sec->ssl_no_hostname_check = eia && !strcasecmp(eia, "none");
  const char *verify = store[DC_SEC_CERT_VERIFY];
  sec->ssl_no_verify = verify && !strcasecmp(verify, "false");
  sec->sasl_mechanism = store[DC_SEC_SASL_MECHANISMS];
  sec->sasl_username = store[DC_SEC_SASL_USERNAME];
  sec->sasl_password = store[DC_SEC_SASL_PASSWORD];
  /* As librdkafka: the principal only says whose key to take from the
   * keytab; without one, the ticket cache's principal is used. */
  sec->sasl_kerberos_service_name = store[DC_SEC_KRB_SERVICE];
  sec->sasl_kerberos_keytab = store[DC_SEC_KRB_KEYTAB];
  sec->sasl_kerberos_principal =
      store[DC_SEC_KRB_KEYTAB] ? store[DC_SEC_KRB_PRINCIPAL] : NULL;
  if (sec->sasl_mechanism && !strcmp(sec->sasl_mechanism, "OAUTHBEARER") &&
      !strncasecmp(sec->protocol ? sec->protocol : "", "SASL_", 5)) {
    if (take_token(dc, store, errstr, errstr_size))
      return -1;
    sec->sasl_oauthbearer_token = store[DC_SEC_TOKEN];
  }
  return 0;
}
