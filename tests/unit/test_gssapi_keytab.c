/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GSSAPI acceptor's keytab (lib/broker/auth/sasl_gssapi.c), without a KDC:
 * the keys are copied into a MEMORY keytab when the acceptor is made, so
 * the file changed or broken afterwards leaves them as they were; a new
 * acceptor from a garbage file, a keytab without a key for the service or
 * a missing file fails with the reason; the default keytab is named by
 * what it resolves to; and each acceptor's MEMORY keytab is gone once the
 * acceptor is (MIT frees one at its last close), so reloads leak no keys.
 */
#include "broker/auth/sasl_gssapi.h"
#include "../tap.h"
#include "../testutil.h"

#include <krb5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[256], g_kt[300];
static unsigned g_loads; /* acceptors made so far, failed ones included */

/* Writes principal's key of version kvno into the keytab at path
 * (appended, as ktadd does). */
static int add_key(const char *path, const char *principal, int kvno) {
  krb5_context k;
  krb5_keytab kt;
  krb5_keytab_entry e = {0};
  char name[400];
  snprintf(name, sizeof(name), "FILE:%s", path);
  if (krb5_init_context(&k))
    return -1;
  int rc = krb5_parse_name(k, principal, &e.principal) ||
           krb5_kt_resolve(k, name, &kt);
  if (!rc) {
    rc = krb5_c_make_random_key(k, ENCTYPE_AES256_CTS_HMAC_SHA1_96, &e.key);
    e.vno = (krb5_kvno)kvno;
    rc = rc || krb5_kt_add_entry(k, kt, &e);
    krb5_free_keyblock_contents(k, &e.key);
    krb5_kt_close(k, kt);
  }
  krb5_free_principal(k, e.principal);
  krb5_free_context(k);
  return rc ? -1 : 0;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* Entries in the n-th acceptor's MEMORY keytab (0 once it is freed: a
 * resolve of a name nobody holds makes a new, empty one). */
static int memory_keys(unsigned n) {
  char name[64];
  snprintf(name, sizeof(name), "MEMORY:dynconfd-%ld-%u", (long)getpid(), n);
  krb5_context k;
  krb5_keytab kt;
  krb5_kt_cursor cur;
  krb5_keytab_entry e;
  int count = 0;
  if (krb5_init_context(&k))
    return -1;
  if (!krb5_kt_resolve(k, name, &kt)) {
    if (!krb5_kt_start_seq_get(k, kt, &cur)) {
      for (; !krb5_kt_next_entry(k, kt, &e, &cur); count++)
        krb5_free_keytab_entry_contents(k, &e);
      krb5_kt_end_seq_get(k, kt, &cur);
    }
    krb5_kt_close(k, kt);
  }
  krb5_free_context(k);
  return count;
}

/* A new acceptor for kafka/ANY-HOST from keytab; counts the load. */
static dc_gssapi_acceptor_t *acceptor(const char *keytab, char *err,
                                      size_t size) {
  err[0] = '\0';
  g_loads++;
  return dc_gssapi_acceptor_new("kafka", keytab, NULL, err, size);
}

static void test_file_changes(void) {
  char err[600], want[600];
  ok(add_key(g_kt, "kafka/localhost@DC.TEST", 1) == 0 &&
         add_key(g_kt, "kafka/127.0.0.1@DC.TEST", 1) == 0,
     "a keytab with kafka/localhost and kafka/127.0.0.1");
  unsigned first = g_loads;
  dc_gssapi_acceptor_t *a = acceptor(g_kt, err, sizeof(err));
  ok(a != NULL, "an acceptor from it: %s", err);
  if (!a)
    return;
  is_str(dc_gssapi_acceptor_keytab(a), g_kt, "  it names the keytab read");
  is_int(memory_keys(first), 2, "  both keys copied into its MEMORY keytab");

  write_text(g_kt, "not a keytab\n");
  unsigned broken = g_loads;
  dc_gssapi_acceptor_t *b = acceptor(g_kt, err, sizeof(err));
  snprintf(want, sizeof(want), "cannot read Kerberos keytab %s: Unsupported "
           "key table format version number", g_kt);
  ok(!b && !strcmp(err, want), "garbage over the file: no new acceptor: %s",
     err);
  is_int(memory_keys(first), 2, "  the first still has its keys");
  is_int(memory_keys(broken), 0, "  the failed load's keys are freed");

  unlink(g_kt);
  ok(add_key(g_kt, "carol@DC.TEST", 1) == 0, "a keytab with carol alone");
  unsigned carol = g_loads;
  b = acceptor(g_kt, err, sizeof(err));
  snprintf(want, sizeof(want), "no Kerberos key for service 'kafka' in "
           "keytab %s: it holds carol@DC.TEST", g_kt);
  ok(!b && !strcmp(err, want), "  no acceptor from it: %s", err);
  is_int(memory_keys(carol), 0, "  and carol's key it copied is freed");
  unlink(g_kt);
  b = acceptor(g_kt, err, sizeof(err));
  ok(!b && strstr(err, "cannot read Kerberos keytab") &&
         strstr(err, "not found"),
     "  nor from a missing file: %s", err);

  ok(add_key(g_kt, "kafka/localhost@DC.TEST", 2) == 0 &&
         add_key(g_kt, "kafka/localhost@DC.TEST", 3) == 0,
     "a re-keyed keytab: kvno 2 and 3");
  unsigned second = g_loads;
  b = acceptor(g_kt, err, sizeof(err));
  ok(b != NULL, "an acceptor from it: %s", err);
  is_int(memory_keys(second), 2, "  with both keys");
  dc_gssapi_acceptor_unref(a);
  is_int(memory_keys(first), 0, "the first acceptor gone, its keys are too");
  is_int(memory_keys(second), 2, "  the second's stay");
  dc_gssapi_acceptor_t *held = dc_gssapi_acceptor_ref(b);
  dc_gssapi_acceptor_unref(b);
  is_int(memory_keys(second), 2, "  while a reference is held");
  dc_gssapi_acceptor_unref(held);
  is_int(memory_keys(second), 0, "  and freed with the last one");
}

static void test_default_keytab(void) {
  char err[600], want[400];
  setenv("KRB5_KTNAME", g_kt, 1);
  dc_gssapi_acceptor_t *a = acceptor(NULL, err, sizeof(err));
  snprintf(want, sizeof(want), "FILE:%s", g_kt);
  ok(a && !strcmp(dc_gssapi_acceptor_keytab(a), want),
     "the default keytab (KRB5_KTNAME) is named as it resolves: %s",
     a ? dc_gssapi_acceptor_keytab(a) : err);
  dc_gssapi_acceptor_unref(a);
  unsetenv("KRB5_KTNAME");
}

int main(void) {
  if (dc_tu_tmpdir(g_dir, sizeof(g_dir))) {
    printf("Bail out! no temp dir\n");
    return 1;
  }
  char conf[300];
  snprintf(conf, sizeof(conf), "%s/krb5.conf", g_dir);
  write_text(conf, "[libdefaults]\n default_realm = DC.TEST\n"
                   " dns_lookup_kdc = false\n rdns = false\n");
  setenv("KRB5_CONFIG", conf, 1);
  snprintf(g_kt, sizeof(g_kt), "%s/kafka.keytab", g_dir);
  test_file_changes();
  test_default_keytab();
  dc_tu_rmrf(g_dir);
  return done_testing();
}
