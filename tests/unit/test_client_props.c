/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kafka client properties into a connection's security
 * (lib/client/client_props.c), as dynconf-configs' --command-config and
 * dynconfd's --forward-config read them: every string property lands in
 * its field, PEM text unescaped, the booleans, whether the host check was
 * given, sasl.jaas.config filling only what is not set, the OAUTHBEARER
 * token file checked and kept by path (and set_security reading it),
 * an unsigned token only when allowed, and the errors naming the line.
 */
#include "client/client_props.h"
#include "../tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_path[64], g_token[64];

static void write_file(const char *path, const char *body) {
  FILE *f = fopen(path, "w");
  fputs(body, f);
  fclose(f);
}

/* Loads body; the result, with *p loaded and why said. */
static int load(dc_client_props_t *p, const char *body, char *why,
                size_t why_size) {
  write_file(g_path, body);
  why[0] = '\0';
  return dc_client_props_load(p, g_path, why, why_size);
}

static void test_fields(void) {
  dc_client_props_t p;
  char why[1600];
  is_int(load(&p,
              "# a comment\n"
              "security.protocol=SASL_SSL\n"
              "sasl.mechanism=SCRAM-SHA-512\n"
              "sasl.username=replica\n"
              "sasl.password=s3cret\n"
              "ssl.ca.location=/etc/ca.pem\n"
              "ssl.certificate.pem=-----BEGIN X-----\\nAAA\\n-----END X-----\n"
              "ssl.key.location=/etc/k.pem\n"
              "enable.ssl.certificate.verification=false\n",
              why, sizeof(why)),
         0, "a SCRAM over SASL_SSL file loads");
  is_str(p.sec.protocol, "SASL_SSL", "  security.protocol");
  is_str(p.sec.sasl_mechanism, "SCRAM-SHA-512", "  sasl.mechanism");
  is_str(p.sec.sasl_username, "replica", "  sasl.username");
  is_str(p.sec.sasl_password, "s3cret", "  sasl.password");
  is_str(p.sec.ssl_ca, "/etc/ca.pem", "  ssl.ca.location");
  is_str(p.sec.ssl_cert_pem, "-----BEGIN X-----\nAAA\n-----END X-----",
         "  ssl.certificate.pem with its newlines back");
  is_str(p.sec.ssl_key, "/etc/k.pem", "  ssl.key.location");
  ok(p.sec.ssl_no_verify, "  enable.ssl.certificate.verification=false");
  ok(!p.hostname_check_given && !p.sec.ssl_no_hostname_check,
     "  no host check setting given");
  dc_client_props_free(&p);
  ok(!p.sec.sasl_password && !p.arena.head, "freed: nothing left to point at");
  dc_client_props_free(&p); /* twice is harmless */

  is_int(load(&p, "ssl.endpoint.identification.algorithm=none\n", why,
              sizeof(why)),
         0, "ssl.endpoint.identification.algorithm=none loads");
  ok(p.hostname_check_given && p.sec.ssl_no_hostname_check,
     "  given, and the check is off");
  dc_client_props_free(&p);
  is_int(load(&p, "ssl.endpoint.identification.algorithm=https\n", why,
              sizeof(why)),
         0, "...=https loads");
  ok(p.hostname_check_given && !p.sec.ssl_no_hostname_check,
     "  given, and the check is on");
  dc_client_props_free(&p);
}

static void test_jaas(void) {
  dc_client_props_t p;
  char why[1600];
  is_int(load(&p,
              "sasl.mechanism=PLAIN\n"
              "sasl.username=given\n"
              "sasl.jaas.config=org.apache.kafka.common.security.plain."
              "PlainLoginModule required username=\"jaas\" "
              "password=\"p \\\"w\\\"\";\n",
              why, sizeof(why)),
         0, "sasl.jaas.config (PlainLoginModule) loads");
  is_str(p.sec.sasl_username, "given", "  a property given as such wins");
  is_str(p.sec.sasl_password, "p \"w\"", "  the password from the module");
  dc_client_props_free(&p);
  is_int(load(&p,
              "sasl.mechanism=GSSAPI\n"
              "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule "
              "required useKeyTab=true keyTab=\"/k.keytab\" "
              "principal=\"replica/h@R\";\n",
              why, sizeof(why)),
         0, "sasl.jaas.config (Krb5LoginModule) loads");
  is_str(p.sec.sasl_kerberos_keytab, "/k.keytab", "  its keytab");
  is_str(p.sec.sasl_kerberos_principal, "replica/h@R", "  its principal");
  dc_client_props_free(&p);
  is_int(load(&p, "sasl.jaas.config=PlainLoginModule required a=\"b;\n", why,
              sizeof(why)),
         -1, "an open quote in sasl.jaas.config is refused");
  ok(strstr(why, "unterminated quote") != NULL, "  said: %s", why);
  dc_client_props_free(&p);
}

static void test_oauth(void) {
  dc_client_props_t p;
  char why[1600], body[256];
  write_file(g_token, "  eyJhbGciOiJub25lIn0.eyJzdWIiOiJyIn0.  \n");
  snprintf(body, sizeof(body),
           "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
           "sasl.oauthbearer.token.endpoint.url=file://%s\n", g_token);
  is_int(load(&p, body, why, sizeof(why)), 0, "a token file loads");
  is_str(p.sec.sasl_oauthbearer_token_file, g_token,
         "  kept by path, to be read at each connection");
  ok(!p.sec.sasl_oauthbearer_token, "  and no token copied");
  dc_kclient_t *kc = dc_kclient_new("t");
  is_int(dc_kclient_set_security(kc, &p.sec, why, sizeof(why)), 0,
         "  the client takes it");
  write_file(g_token, "two tokens\n");
  is_int(dc_kclient_set_security(kc, &p.sec, why, sizeof(why)),
         DC_ERR__INVALID_ARG, "  a file without one token is refused");
  ok(strstr(why, "does not hold one token") != NULL, "  said: %s", why);
  dc_kclient_destroy(kc);
  dc_client_props_free(&p);
  is_int(load(&p, body, why, sizeof(why)), -1,
         "loading the file with the bad token fails");
  ok(strstr(why, g_token) != NULL, "  naming it: %s", why);
  dc_client_props_free(&p);
  unlink(g_token);

  is_int(load(&p, "sasl.mechanism=OAUTHBEARER\n", why, sizeof(why)), -1,
         "OAUTHBEARER with no token refused");
  ok(strstr(why, "enable.sasl.oauthbearer.unsecure.jwt") != NULL, "  said: %s",
     why);
  dc_client_props_free(&p);
  is_int(load(&p,
              "sasl.mechanism=OAUTHBEARER\n"
              "sasl.oauthbearer.config=principal=replica\n"
              "enable.sasl.oauthbearer.unsecure.jwt=true\n",
              why, sizeof(why)),
         0, "an unsigned token when allowed");
  ok(p.sec.sasl_oauthbearer_token &&
         !strncmp(p.sec.sasl_oauthbearer_token, "eyJhbGciOiJub25lIn0.", 20),
     "  alg none");
  dc_client_props_free(&p);
}

static void test_errors(void) {
  dc_client_props_t p;
  char why[1600];
  is_int(load(&p, "security.protocol=SSL\nsasl.usrname=x\n", why, sizeof(why)),
         -1, "an unknown property is refused");
  ok(strstr(why, ":2: unknown property 'sasl.usrname' (known: ") != NULL,
     "  naming its line and the known ones: %.80s", why);
  dc_client_props_free(&p);
  is_int(load(&p, "enable.ssl.certificate.verification=no\n", why,
              sizeof(why)),
         -1, "a bad boolean is refused");
  ok(strstr(why, "bad value 'no' for enable.ssl.certificate.verification") !=
         NULL, "  said: %s", why);
  dc_client_props_free(&p);
  is_int(load(&p, "sasl.oauthbearer.token.endpoint.url=https://idp/t\n", why,
              sizeof(why)),
         -1, "a token endpoint other than file:// is refused");
  ok(strstr(why, "only file:// URLs") != NULL, "  said: %s", why);
  dc_client_props_free(&p);
  why[0] = '\0';
  is_int(dc_client_props_load(&p, "/nonexistent/x.properties", why,
                              sizeof(why)),
         -1, "a missing file is refused");
  ok(strstr(why, "cannot read /nonexistent/x.properties") != NULL,
     "  said: %s", why);
  dc_client_props_free(&p);
}

int main(void) {
  snprintf(g_path, sizeof(g_path), "/tmp/dc-props-%d.properties",
           (int)getpid());
  snprintf(g_token, sizeof(g_token), "/tmp/dc-props-%d.token", (int)getpid());
  test_fields();
  test_jaas();
  test_oauth();
  test_errors();
  unlink(g_path);
  return done_testing();
}
