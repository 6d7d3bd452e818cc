/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The server side of SASL GSSAPI (Kerberos V5, RFC 4752) as Kafka speaks
 * it, over MIT's GSS-API: the security context (a Kerberos V5 ticket and,
 * when the client asks, mutual authentication), then the security-layer
 * negotiation, where only "no layer" is offered (Kafka offers QOP auth
 * only), with acceptor credentials from a keytab. The client's
 * authorization id is ignored, as Kafka's broker ignores it: the principal
 * is the authenticated Kerberos name, mapped to a short name by the
 * principal-to-local rules (lib/broker/auth/krb_rules.h). Only the Kerberos V5
 * mechanism is accepted (no SPNEGO, no IAKERB).
 *
 * The acceptor (service name, credentials, rules, default realm) is
 * shared by every exchange and reference-counted, so a reload can replace
 * it while exchanges that started under the old one finish with it.
 *
 * The acceptor reads the keytab once, when it is made, into memory: a
 * keytab file changed or broken afterwards reaches no login until a new
 * acceptor is made from it (a reload).
 *
 * Threads: one acceptor may serve exchanges on several threads; an
 * exchange has one owner. No I/O but reading the keytab (when the
 * acceptor is made) and the replay cache (KRB5RCACHEDIR).
 */
#ifndef DC_SASL_GSSAPI_H
#define DC_SASL_GSSAPI_H

#include <stddef.h>
#include <stdint.h>

/* Longest client token accepted: Kerberos tickets carrying a large
 * authorization-data payload (Active Directory's PAC) pass 12 KiB. */
#define DC_GSSAPI_MAX_TOKEN 65536

typedef struct dc_gssapi_acceptor dc_gssapi_acceptor_t;

/* An acceptor for tickets to service/ANY-HOST@REALM with the keys keytab
 * holds now (NULL: the default keytab, KRB5_KTNAME or /etc/krb5.keytab),
 * copied into memory. rules: Kafka's
 * sasl.kerberos.principal.to.local.rules (NULL: DEFAULT). NULL with errstr
 * when the keytab cannot be read, has no key for the service, or the
 * rules do not parse. Caller owns the one reference. */
dc_gssapi_acceptor_t *dc_gssapi_acceptor_new(const char *service,
                                             const char *keytab,
                                             const char *rules, char *errstr,
                                             size_t errstr_size);
dc_gssapi_acceptor_t *dc_gssapi_acceptor_ref(dc_gssapi_acceptor_t *a);
void dc_gssapi_acceptor_unref(dc_gssapi_acceptor_t *a);
/* The realm DEFAULT rules accept (krb5.conf's default_realm; "" if none). */
const char *dc_gssapi_acceptor_realm(const dc_gssapi_acceptor_t *a);
/* The keytab its keys came from, as named (the default one by its
 * resolved name, e.g. FILE:/etc/krb5.keytab). */
const char *dc_gssapi_acceptor_keytab(const dc_gssapi_acceptor_t *a);

typedef struct dc_gssapi_exchange dc_gssapi_exchange_t;

/* A new exchange under acceptor a (it takes a reference). NULL: out of
 * memory. */
dc_gssapi_exchange_t *dc_gssapi_exchange_new(dc_gssapi_acceptor_t *a);
void dc_gssapi_exchange_destroy(dc_gssapi_exchange_t *x);

/* One client token. Returns DC_SASL_DONE, DC_SASL_CONTINUE or
 * DC_SASL_FAILED (broker/sasl_server.h) with errstr fit for the client.
 * *out is malloc'd (NULL when *outlen is 0), owned by the caller. After
 * DONE, dc_gssapi_exchange_user() is the short name. */
int dc_gssapi_step(dc_gssapi_exchange_t *x, const uint8_t *in, size_t inlen,
                   uint8_t **out, size_t *outlen, char *errstr,
                   size_t errstr_size);

/* After DONE: the short name the rules made (owned by x), else NULL. */
const char *dc_gssapi_exchange_user(const dc_gssapi_exchange_t *x);
/* After DONE: the whole Kerberos principal (owned by x), else NULL. */
const char *dc_gssapi_exchange_principal(const dc_gssapi_exchange_t *x);

#endif
