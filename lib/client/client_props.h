/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A connection's security from a Kafka client-properties file, as
 * kafka-configs.sh's --command-config and librdkafka read them:
 * dynconf-configs' --command-config and dynconfd's --forward-config.
 * Lines are KEY=VALUE (common/kvfile.h); the keys read are
 *
 *   security.protocol, sasl.mechanism(s), sasl.username, sasl.password,
 *   ssl.ca.location, ssl.ca.pem, ssl.certificate.location,
 *   ssl.certificate.pem, ssl.key.location, ssl.key.pem, ssl.key.password,
 *   ssl.keystore.location, ssl.keystore.password, ssl.cipher.suites,
 *   enable.ssl.certificate.verification, ssl.endpoint.identification.
 *   algorithm, sasl.kerberos.service.name, sasl.kerberos.principal,
 *   sasl.kerberos.keytab, sasl.jaas.config (Krb5LoginModule,
 *   PlainLoginModule, ScramLoginModule), and for OAUTHBEARER
 *   sasl.oauthbearer.token.endpoint.url=file://PATH (a file holding the
 *   token, read at each connection) or sasl.oauthbearer.config with
 *   enable.sasl.oauthbearer.unsecure.jwt=true (an unsigned token, tests).
 *
 * *.pem values are PEM text on one line, "\n" for each newline. Any other
 * key is an error naming the known ones. Ownership: the loaded struct
 * owns every string sec points to; free it with dc_client_props_free(),
 * which wipes the secrets. One owner; no global state.
 */
#ifndef DC_CLIENT_PROPS_H
#define DC_CLIENT_PROPS_H
#include "client/kclient.h"
#include "common/arena.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct dc_client_props {
  dc_kclient_security_t sec; /* NULL strings: not in the file */
  /* ssl.endpoint.identification.algorithm was in the file, so a caller
   * with another default keeps sec.ssl_no_hostname_check as read. */
  bool hostname_check_given;
  dc_arena_t arena; /* sec's strings */
} dc_client_props_t;

/* Reads path into *p (which it initialises first). 0, or -1 with a
 * sentence in why naming the file and line when it is one line's fault,
 * e.g. "/etc/f:3: unknown property 'sasl.usrname' (known: ...)" or
 * "OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url=file://PATH,
 * ...". Free *p with dc_client_props_free() either way. */
int dc_client_props_load(dc_client_props_t *p, const char *path, char *why,
                         size_t why_size);

/* A sasl.jaas.config value, as kafka-configs.sh reads it, for the login
 * modules whose options map onto sec's fields:
 *
 *   com.sun.security.auth.module.Krb5LoginModule required
 *       useKeyTab=true keyTab="/etc/x.keytab" principal="alice@EXAMPLE.COM";
 *   org.apache.kafka.common.security.plain.PlainLoginModule required
 *       username="alice" password="secret";
 *   org.apache.kafka.common.security.scram.ScramLoginModule required ...;
 *
 * One module, a control flag, KEY=VALUE options (VALUE bare or quoted
 * with \" and \\ escapes) and a ';'. Fills the fields of p->sec not set
 * yet (properties given as such win), with strings in p->arena. 0, or -1
 * with why ("sasl.jaas.config: unterminated quote", ...). */
int dc_client_props_jaas(dc_client_props_t *p, const char *jaas,
                         char *why, size_t why_size);

/* Wipes the passwords, keys and token read, and frees every string.
 * NULL or an already freed struct is a no-op. */
void dc_client_props_free(dc_client_props_t *p);
#endif
