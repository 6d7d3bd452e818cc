/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: dynconfd's GSSAPI exchange (lib/broker/auth/sasl_gssapi.c
 * over Cyrus SASL and MIT Kerberos) and the principal-to-local rules
 * (lib/broker/auth/krb_rules.c), what a client on a SASL listener and an
 * operator's configuration control.
 *
 * Input: one byte of mode, then
 *   mode even: up to four client tokens, each a 2-byte big-endian length
 *              and its bytes (the rest of the input is the last token),
 *              fed to one exchange whose acceptor holds a key made at
 *              start-up for kafka/localhost@FUZZ.TEST (no KDC: nothing
 *              the fuzzer writes can carry a ticket sealed with it);
 *   mode odd:  a rule list (up to the first NUL), parsed and applied to
 *              a few principals.
 * Oracles beyond the sanitizers: no exchange ever completes; every
 * failure carries a sentence; a rule that yields a name yields one of
 * 1..DC_KRB_PRINCIPAL_MAX bytes without '/' or '@'.
 *
 * Seed mode: with DC_FUZZ_WRITE_SEEDS=DIR set, writes a few seeds into DIR
 * and exits.
 */
#include "broker/auth/krb_rules.h"
#include "broker/auth/sasl_gssapi.h"
#include "broker/auth/sasl_server.h"

#include <krb5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static dc_gssapi_acceptor_t *g_acceptor;
static char g_dir[] = "/tmp/dynconf-fuzz-krb.XXXXXX";
static char g_conf[600], g_keytab[600];

/* The throw-away krb5.conf and keytab go when the fuzzer exits. */
static void remove_realm(void) {
  unlink(g_conf);
  unlink(g_keytab + 5); /* after "FILE:" */
  rmdir(g_dir);
}

_Noreturn static void oracle_fail(const char *what) {
  fprintf(stderr, "fuzz_gssapi oracle: %s\n", what);
  abort();
}

static void write_seed(const char *dir, const char *name, const void *p,
                       size_t n) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return;
  fwrite(p, 1, n, f);
  fclose(f);
}

static void write_seeds(const char *dir) {
  mkdir(dir, 0755);
  /* An initial context token's framing: [APPLICATION 0], the Kerberos
   * mechanism OID, the AP-REQ token id, then a stub. */
  static const uint8_t apreq[] = {0,    0,    20,   0x60, 0x12, 0x06, 0x09,
                                  0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01,
                                  0x02, 0x02, 0x01, 0x00, 0x6e, 0x03, 0x02,
                                  0x01, 0x05};
  write_seed(dir, "apreq-stub", apreq, sizeof(apreq));
  static const uint8_t empty[] = {2, 0, 0, 0, 0};
  write_seed(dir, "empty-tokens", empty, sizeof(empty));
  static const char rules[] =
      "\001RULE:[2:$1@$0](ops@FUZZ.TEST)s/@.*/-team/g/L,RULE:[1:$1],DEFAULT";
  write_seed(dir, "rules", rules, sizeof(rules) - 1);
}

/* A krb5.conf naming the realm and a keytab with a random key for the
 * service, in a fresh directory; no replay cache is written. */
static void make_realm(void) {
  if (!mkdtemp(g_dir))
    oracle_fail("mkdtemp");
  atexit(remove_realm);
  char *conf = g_conf, *kt = g_keytab;
  snprintf(g_conf, sizeof(g_conf), "%s/krb5.conf", g_dir);
  snprintf(g_keytab, sizeof(g_keytab), "FILE:%s/kafka.keytab", g_dir);
  FILE *f = fopen(conf, "w");
  if (!f)
    oracle_fail("krb5.conf");
  fprintf(f, "[libdefaults]\n default_realm = FUZZ.TEST\n"
             " dns_lookup_kdc = false\n rdns = false\n");
  fclose(f);
  setenv("KRB5_CONFIG", conf, 1);
  setenv("KRB5RCACHENAME", "none:", 1);
  krb5_context k;
  krb5_principal p;
  krb5_keytab ktab;
  krb5_keytab_entry e = {0};
  if (krb5_init_context(&k) ||
      krb5_parse_name(k, "kafka/localhost@FUZZ.TEST", &p) ||
      krb5_kt_resolve(k, kt, &ktab) ||
      krb5_c_make_random_key(k, ENCTYPE_AES256_CTS_HMAC_SHA1_96, &e.key))
    oracle_fail("making the keytab");
  e.principal = p;
  e.vno = 1;
  if (krb5_kt_add_entry(k, ktab, &e))
    oracle_fail("writing the keytab");
  krb5_free_keyblock_contents(k, &e.key);
  krb5_kt_close(k, ktab);
  krb5_free_principal(k, p);
  krb5_free_context(k);
  char err[600];
  g_acceptor = dc_gssapi_acceptor_new("kafka", kt + 5, NULL, err,
                                      sizeof(err));
  if (!g_acceptor) {
    fprintf(stderr, "fuzz_gssapi: %s\n", err);
    oracle_fail("no acceptor");
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *dir = getenv("DC_FUZZ_WRITE_SEEDS");
  if (dir) {
    write_seeds(dir);
    exit(0);
  }
  make_realm();
  return 0;
}

static void exchange(const uint8_t *p, size_t n) {
  dc_sasl_server_t *s = dc_sasl_server_new("GSSAPI");
  if (!s)
    oracle_fail("no exchange");
  for (int i = 0; i < 4; i++) {
    size_t len = n;
    if (i < 3 && n >= 2) {
      len = (size_t)p[0] << 8 | p[1];
      p += 2, n -= 2;
      if (len > n)
        len = n;
    }
    uint8_t *out = NULL;
    size_t outlen = 0;
    char err[600] = "";
    dc_sasl_server_set_gssapi(s, g_acceptor);
    int rc = dc_sasl_server_step(s, NULL, p, len, &out, &outlen, err,
                                 sizeof(err));
    free(out);
    p += len, n -= len;
    if (rc == DC_SASL_DONE)
      oracle_fail("an exchange completed without a ticket");
    if (rc == DC_SASL_FAILED) {
      if (!err[0])
        oracle_fail("a failure without a sentence");
      break;
    }
  }
  dc_sasl_server_destroy(s);
}

static void rules(const uint8_t *p, size_t n) {
  char *text = malloc(n + 1);
  if (!text)
    return;
  memcpy(text, p, n);
  text[n] = '\0';
  char err[600] = "";
  dc_krb_rules_t *r = dc_krb_rules_parse(text, err, sizeof(err));
  free(text);
  if (!r) {
    if (!err[0])
      oracle_fail("a refused rule list without a sentence");
    return;
  }
  static const char *const names[] = {"alice@FUZZ.TEST", "ops/admin@FUZZ.TEST",
                                      "bob@OTHER.ORG", "carol", "x/y"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char out[DC_KRB_PRINCIPAL_MAX + 1];
    if (dc_krb_rules_apply(r, names[i], "FUZZ.TEST", out, sizeof(out), err,
                           sizeof(err))) {
      if (!err[0])
        oracle_fail("a failed mapping without a sentence");
    } else if (!out[0] || strpbrk(out, "/@")) {
      oracle_fail("a mapping that is not a simple name");
    }
  }
  dc_krb_rules_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if (data[0] & 1)
    rules(data + 1, size - 1);
  else
    exchange(data + 1, size - 1);
  return 0;
}
