/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SASL GSSAPI for dynconfd over MIT's GSS-API (see sasl_gssapi.h).
 */
#include "broker/auth/sasl_gssapi.h"
#include "broker/auth/krb_rules.h"
#include "broker/auth/sasl_server.h"
#include "common/gsserr.h"
#include "common/principal.h"
#include "common/log.h"
#include "common/text.h"

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <krb5.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct dc_gssapi_acceptor {
  atomic_int refs;
  char *service;
  gss_cred_id_t creds;
  dc_krb_rules_t *rules;
  char realm[256];
  char source[1024]; /* the keytab read, e.g. FILE:/etc/krb5.keytab */
  /* The keys, copied from the source at load: the credentials name this
   * MEMORY keytab, so a later change to the file (even a broken one)
   * reaches no login until a reload builds a new acceptor. MIT frees a
   * MEMORY keytab at its last close, so this handle stays open (with its
   * context) for the acceptor's life. */
  krb5_context k;
  krb5_keytab mem;
  char mem_name[64];
};

/* RFC 4752's states: the GSS-API context, then (after the client's empty
 * answer to a mutual-authentication token) the security-layer offer, then
 * the client's wrapped choice. */
enum { X_ACCEPT, X_ACK, X_CHOICE, X_DONE, X_FAILED };

struct dc_gssapi_exchange {
  dc_gssapi_acceptor_t *acceptor; /* one reference */
  gss_ctx_id_t ctx;
  int state;
  char *principal; /* owned, once the context is up */
  char *user;      /* owned, once done */
};

/* ---- the acceptor ---------------------------------------------------- */

static void default_realm(krb5_context k, char *out, size_t size) {
  char *realm = NULL;
  if (krb5_get_default_realm(k, &realm))
    out[0] = '\0';
  else
    snprintf(out, size, "%s", realm);
  krb5_free_default_realm(k, realm);
}

static void krb_words(krb5_context k, krb5_error_code rc, char *out,
                      size_t size) {
  const char *m = krb5_get_error_message(k, rc);
  snprintf(out, size, "%s", m);
  krb5_free_error_message(k, m);
}

/* Whether principal p is service/HOST (any HOST). */
static bool is_service(krb5_const_principal p, const char *service) {
  return p->length == 2 && p->data[0].length == strlen(service) &&
         !memcmp(p->data[0].data, service, p->data[0].length);
}

/* Appends p's name to held (comma separated, once each, cut to size). */
static void note_held(krb5_context k, krb5_const_principal p, char *held,
                      size_t size) {
  size_t hl = strlen(held);
  char *name = NULL;
  if (hl + 1 < size && !krb5_unparse_name(k, p, &name) && !strstr(held, name))
    snprintf(held + hl, size - hl, "%s%s", hl ? ", " : "", name);
  krb5_free_unparsed_name(k, name);
}

/* Copies every entry of src into the acceptor's MEMORY keytab; *found:
 * one is a key for the service. held names the others. 0, or the
 * keytab's error (a file that is not a keytab, a read error). */
static krb5_error_code copy_keys(dc_gssapi_acceptor_t *a, krb5_keytab src,
                                 bool *found, char *held, size_t held_size) {
  krb5_kt_cursor cur;
  krb5_keytab_entry e;
  krb5_error_code rc = krb5_kt_start_seq_get(a->k, src, &cur);
  if (rc)
    return rc;
  while (!(rc = krb5_kt_next_entry(a->k, src, &e, &cur))) {
    rc = krb5_kt_add_entry(a->k, a->mem, &e);
    if (is_service(e.principal, a->service))
      *found = true;
    else
      note_held(a->k, e.principal, held, held_size);
    krb5_free_keytab_entry_contents(a->k, &e);
    if (rc)
      break;
  }
  krb5_kt_end_seq_get(a->k, src, &cur);
  return rc == KRB5_KT_END ? 0 : rc;
}

/* Reads the keytab (NULL: the default one) into a MEMORY keytab of a
 * name of its own, so no two loads share one. -1 with why when it cannot
 * be read or holds no key for service/HOST (any HOST): checked here
 * because MIT's acquisition leaks a little when it finds no key. */
static int load_keys(dc_gssapi_acceptor_t *a, const char *keytab,
                     char *errstr, size_t errstr_size) {
  static atomic_uint loads;
  krb5_keytab src = NULL;
  char held[300] = "", why[300] = "";
  bool found = false;
  snprintf(a->source, sizeof(a->source), "%s", keytab ? keytab : "(default)");
  snprintf(a->mem_name, sizeof(a->mem_name), "MEMORY:dynconfd-%ld-%u",
           (long)getpid(), atomic_fetch_add(&loads, 1));
  krb5_error_code rc = keytab ? krb5_kt_resolve(a->k, keytab, &src)
                               : krb5_kt_default(a->k, &src);
  if (!rc && !keytab)
    krb5_kt_get_name(a->k, src, a->source, sizeof(a->source));
  if (!rc)
    rc = krb5_kt_resolve(a->k, a->mem_name, &a->mem);
  if (!rc)
    rc = copy_keys(a, src, &found, held, sizeof(held));
  if (rc)
    krb_words(a->k, rc, why, sizeof(why));
  if (src)
    krb5_kt_close(a->k, src);
  if (rc)
    dc_seterr(errstr, errstr_size, "cannot read Kerberos keytab %s: %s",
              a->source, why);
  else if (!found)
    dc_seterr(errstr, errstr_size, "no Kerberos key for service '%s' in "
              "keytab %s: it holds %s", a->service, a->source,
              *held ? held : "no keys");
  return found && !rc ? 0 : -1;
}

/* Acceptor credentials for service@ANY-HOST from the MEMORY keytab: MIT
 * accepts a host-based name without a host as "any key for this service
 * in the keytab". */
static int acquire(dc_gssapi_acceptor_t *a, char *errstr, size_t errstr_size) {
  OM_uint32 maj, min;
  gss_buffer_desc nb = {strlen(a->service), a->service};
  gss_name_t name = GSS_C_NO_NAME;
  maj = gss_import_name(&min, &nb, GSS_C_NT_HOSTBASED_SERVICE, &name);
  if (!GSS_ERROR(maj)) {
    gss_key_value_element_desc kv = {"keytab", a->mem_name};
    gss_key_value_set_desc store = {1, &kv};
    maj = gss_acquire_cred_from(&min, name, GSS_C_INDEFINITE,
                                (gss_OID_set)gss_mech_set_krb5, GSS_C_ACCEPT,
                                &store, &a->creds, NULL, NULL);
  }
  OM_uint32 ignored;
  gss_release_name(&ignored, &name); /* keeps min for the words */
  if (GSS_ERROR(maj)) {
    char words[400];
    dc_gss_words(maj, min, words, sizeof(words));
    dc_seterr(errstr, errstr_size, "no Kerberos key for service '%s' in "
              "keytab %s: %s", a->service, a->source, words);
    return -1;
  }
  return 0;
}

dc_gssapi_acceptor_t *dc_gssapi_acceptor_new(const char *service,
                                             const char *keytab,
                                             const char *rules, char *errstr,
                                             size_t errstr_size) {
  if (!service || !*service || strpbrk(service, "@/")) {
    dc_seterr(errstr, errstr_size, "the Kerberos service name '%s' must be "
              "a bare name such as kafka", service ? service : "");
    return NULL;
  }
  dc_gssapi_acceptor_t *a = calloc(1, sizeof(*a));
  if (!a || !(a->service = strdup(service))) {
    free(a);
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  atomic_init(&a->refs, 1);
  a->creds = GSS_C_NO_CREDENTIAL;
  if (krb5_init_context(&a->k)) {
    a->k = NULL;
    dc_seterr(errstr, errstr_size, "cannot start Kerberos (krb5.conf?)");
    dc_gssapi_acceptor_unref(a);
    return NULL;
  }
  default_realm(a->k, a->realm, sizeof(a->realm));
  char why[400];
  if (!(a->rules = dc_krb_rules_parse(rules, why, sizeof(why)))) {
    dc_seterr(errstr, errstr_size, "%s", why);
    dc_gssapi_acceptor_unref(a);
    return NULL;
  }
  if (load_keys(a, keytab, errstr, errstr_size) ||
      acquire(a, errstr, errstr_size)) {
    dc_gssapi_acceptor_unref(a);
    return NULL;
  }
  return a;
}

dc_gssapi_acceptor_t *dc_gssapi_acceptor_ref(dc_gssapi_acceptor_t *a) {
  if (a)
    atomic_fetch_add(&a->refs, 1);
  return a;
}

void dc_gssapi_acceptor_unref(dc_gssapi_acceptor_t *a) {
  if (!a || atomic_fetch_sub(&a->refs, 1) != 1)
    return;
  OM_uint32 min;
  if (a->creds != GSS_C_NO_CREDENTIAL)
    gss_release_cred(&min, &a->creds); /* its own handle on a->mem */
  if (a->mem)
    krb5_kt_close(a->k, a->mem); /* the last one: MIT frees the keys */
  if (a->k)
    krb5_free_context(a->k);
  dc_krb_rules_destroy(a->rules);
  free(a->service);
  free(a);
}

const char *dc_gssapi_acceptor_realm(const dc_gssapi_acceptor_t *a) {
  return a->realm;
}

const char *dc_gssapi_acceptor_keytab(const dc_gssapi_acceptor_t *a) {
  return a->source;
}

/* ---- one exchange ---------------------------------------------------- */

dc_gssapi_exchange_t *dc_gssapi_exchange_new(dc_gssapi_acceptor_t *a) {
  dc_gssapi_exchange_t *x = calloc(1, sizeof(*x));
  if (x)
    x->acceptor = dc_gssapi_acceptor_ref(a);
  return x;
}

void dc_gssapi_exchange_destroy(dc_gssapi_exchange_t *x) {
  if (!x)
    return;
  OM_uint32 min;
  if (x->ctx != GSS_C_NO_CONTEXT)
    gss_delete_sec_context(&min, &x->ctx, GSS_C_NO_BUFFER);
  dc_gssapi_acceptor_unref(x->acceptor);
  free(x->principal);
  free(x->user);
  free(x);
}

const char *dc_gssapi_exchange_user(const dc_gssapi_exchange_t *x) {
  return x->state == X_DONE ? x->user : NULL;
}

const char *dc_gssapi_exchange_principal(const dc_gssapi_exchange_t *x) {
  return x->state == X_DONE ? x->principal : NULL;
}

static int fail_gss(const char *what, OM_uint32 maj, OM_uint32 min,
                    char *errstr, size_t errstr_size) {
  char words[400];
  dc_gss_words(maj, min, words, sizeof(words));
  dc_seterr(errstr, errstr_size, "Authentication failed: GSSAPI %s: %s", what,
            words);
  return DC_SASL_FAILED;
}

/* A copy of a GSS buffer into *out (malloc'd), released either way. */
static int take_buffer(gss_buffer_desc *b, uint8_t **out, size_t *outlen,
                       char *errstr, size_t errstr_size) {
  OM_uint32 min;
  int rc = 0;
  if (b->length && !(*out = malloc(b->length))) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    rc = -1;
  } else if (b->length) {
    memcpy(*out, b->value, b->length);
    *outlen = b->length;
  }
  gss_release_buffer(&min, b);
  return rc;
}

/* The client's principal, whole, and its short name by the rules. */
static int take_identity(dc_gssapi_exchange_t *x, gss_name_t src,
                         char *errstr, size_t errstr_size) {
  OM_uint32 min, maj;
  gss_buffer_desc nb = GSS_C_EMPTY_BUFFER;
  maj = gss_display_name(&min, src, &nb, NULL);
  if (GSS_ERROR(maj))
    return fail_gss("cannot name the client", maj, min, errstr, errstr_size);
  x->principal = strndup(nb.value, nb.length);
  gss_release_buffer(&min, &nb);
  if (!x->principal) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    return DC_SASL_FAILED;
  }
  char shortname[DC_KRB_PRINCIPAL_MAX + 1], why[600];
  if (dc_krb_rules_apply(x->acceptor->rules, x->principal, x->acceptor->realm,
                         shortname, sizeof(shortname), why, sizeof(why))) {
    /* The client learns which principal failed, not the rules. */
    dc_log(DC_LOG_WARN, "Kerberos principal %s: %s", x->principal, why);
    dc_seterr(errstr, errstr_size, "Authentication failed: no local name "
              "for Kerberos principal %s (see the server's "
              "sasl.kerberos.principal.to.local.rules)", x->principal);
    return DC_SASL_FAILED;
  }
  const char *fault = dc_principal_name_fault(shortname, strlen(shortname));
  if (fault) {
    dc_seterr(errstr, errstr_size, "Authentication failed: the local name of "
              "Kerberos principal %s %s (a principal's name may not begin or "
              "end with a blank, nor hold a control character)", x->principal,
              fault);
    return DC_SASL_FAILED;
  }
  if (!(x->user = strdup(shortname))) {
    dc_seterr(errstr, errstr_size, "Authentication failed: out of memory");
    return DC_SASL_FAILED;
  }
  return 0;
}

/* RFC 4752 3.1: the server's wrapped offer, "no security layer" only
 * (bit 1) with a maximum message size of 0, as Kafka offers QOP auth. */
static int send_offer(dc_gssapi_exchange_t *x, uint8_t **out, size_t *outlen,
                      char *errstr, size_t errstr_size) {
  uint8_t offer[4] = {1, 0, 0, 0};
  gss_buffer_desc in = {sizeof(offer), offer}, w = GSS_C_EMPTY_BUFFER;
  OM_uint32 min, maj = gss_wrap(&min, x->ctx, 0, GSS_C_QOP_DEFAULT, &in, NULL,
                                &w);
  if (GSS_ERROR(maj))
    return fail_gss("cannot wrap the security-layer offer", maj, min, errstr,
                    errstr_size);
  if (take_buffer(&w, out, outlen, errstr, errstr_size))
    return DC_SASL_FAILED;
  x->state = X_CHOICE;
  return DC_SASL_CONTINUE;
}

/* One token of the context establishment. A token that leaves the
 * context unfinished without anything to send back (other mechanisms,
 * negotiation) is refused: only Kerberos V5 is spoken. */
static int accept_step(dc_gssapi_exchange_t *x, const uint8_t *in,
                       size_t inlen, uint8_t **out, size_t *outlen,
                       char *errstr, size_t errstr_size) {
  gss_buffer_desc ib = {inlen, (void *)in}, ob = GSS_C_EMPTY_BUFFER;
  gss_name_t src = GSS_C_NO_NAME;
  OM_uint32 min, ignored;
  OM_uint32 maj = gss_accept_sec_context(
      &min, &x->ctx, x->acceptor->creds, &ib, GSS_C_NO_CHANNEL_BINDINGS, &src,
      NULL, &ob, NULL, NULL, NULL);
  if (GSS_ERROR(maj)) {
    gss_release_buffer(&ignored, &ob);
    return fail_gss("cannot accept the client's ticket", maj, min, errstr,
                    errstr_size);
  }
  int rc = DC_SASL_CONTINUE;
  if (maj == GSS_S_CONTINUE_NEEDED && !ob.length) {
    dc_seterr(errstr, errstr_size, "Authentication failed: the GSSAPI token "
              "is not a Kerberos V5 one");
    rc = DC_SASL_FAILED;
  } else if (maj == GSS_S_COMPLETE) {
    rc = take_identity(x, src, errstr, errstr_size) ? DC_SASL_FAILED : rc;
    x->state = ob.length ? X_ACK : X_CHOICE;
  }
  gss_release_name(&ignored, &src);
  if (rc == DC_SASL_FAILED) {
    gss_release_buffer(&ignored, &ob);
    return rc;
  }
  if (take_buffer(&ob, out, outlen, errstr, errstr_size))
    return DC_SASL_FAILED;
  /* Without a token to send (no mutual authentication) the offer
   * follows at once. */
  if (x->state == X_CHOICE)
    return send_offer(x, out, outlen, errstr, errstr_size);
  return rc;
}

/* The client's wrapped choice: "no security layer" (bit 1) alone, then
 * an authorization id, which is ignored as Kafka ignores it. */
static int take_choice(dc_gssapi_exchange_t *x, const uint8_t *in,
                       size_t inlen, char *errstr, size_t errstr_size) {
  gss_buffer_desc ib = {inlen, (void *)in}, ub = GSS_C_EMPTY_BUFFER;
  OM_uint32 min, maj = gss_unwrap(&min, x->ctx, &ib, &ub, NULL, NULL);
  if (GSS_ERROR(maj))
    return fail_gss("cannot unwrap the client's choice", maj, min, errstr,
                    errstr_size);
  int layer = ub.length >= 4 ? ((const uint8_t *)ub.value)[0] : -1;
  gss_release_buffer(&min, &ub);
  if (layer != 1) {
    dc_seterr(errstr, errstr_size, "Authentication failed: the client chose "
              "%s, not \"no security layer\"", layer < 0 ? "nothing"
              : "a security layer");
    return DC_SASL_FAILED;
  }
  x->state = X_DONE;
  return DC_SASL_DONE;
}

int dc_gssapi_step(dc_gssapi_exchange_t *x, const uint8_t *in, size_t inlen,
                   uint8_t **out, size_t *outlen, char *errstr,
                   size_t errstr_size) {
  *out = NULL;
  *outlen = 0;
  int rc;
  if (inlen > DC_GSSAPI_MAX_TOKEN) {
    dc_seterr(errstr, errstr_size, "Authentication failed: GSSAPI token of "
              "%zu bytes exceeds %d", inlen, DC_GSSAPI_MAX_TOKEN);
    rc = DC_SASL_FAILED;
  } else if (x->state == X_ACCEPT) {
    rc = accept_step(x, in, inlen, out, outlen, errstr, errstr_size);
  } else if (x->state == X_ACK && inlen) {
    dc_seterr(errstr, errstr_size, "Authentication failed: GSSAPI expected "
              "an empty token after the context was established");
    rc = DC_SASL_FAILED;
  } else if (x->state == X_ACK) {
    rc = send_offer(x, out, outlen, errstr, errstr_size);
  } else if (x->state == X_CHOICE) {
    rc = take_choice(x, in, inlen, errstr, errstr_size);
  } else {
    dc_seterr(errstr, errstr_size, "Authentication failed: the GSSAPI "
              "exchange is already over");
    rc = DC_SASL_FAILED;
  }
  if (rc == DC_SASL_FAILED) {
    free(*out);
    *out = NULL;
    *outlen = 0;
    x->state = X_FAILED;
  }
  return rc;
}
