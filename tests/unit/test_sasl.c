/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SASL machinery: SCRAM primitives (RFC 7677 test vector), the client
 * state machine, the server exchange for PLAIN and SCRAM-SHA-256/512, and
 * the hashed credentials file.
 */
#include "broker/auth/credentials.h"
#include "broker/auth/sasl_server.h"
#include "client/oauth_client.h"
#include "client/scram_client.h"
#include "../tap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCRAM_FAIL_256                                                         \
  "Authentication failed during authentication due to invalid credentials "   \
  "with SASL mechanism SCRAM-SHA-256"
#define PLAIN_FAIL "Authentication failed: Invalid username or password"

static char tmpdir[256];

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* ---- primitives ---------------------------------------------------------- */

static void test_base64(void) {
  static const struct {
    const char *raw, *b64;
  } v[] = {{"", ""},       {"f", "Zg=="},     {"fo", "Zm8="},
           {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    char *e = dc_b64_encode((const uint8_t *)v[i].raw, strlen(v[i].raw));
    is_str(e, v[i].b64, "base64 encode '%s'", v[i].raw);
    free(e);
    uint8_t out[16];
    long n = dc_b64_decode(v[i].b64, strlen(v[i].b64), out, sizeof(out));
    is_mem(out, n < 0 ? 0 : (size_t)n, v[i].raw, strlen(v[i].raw),
           "base64 decode '%s'", v[i].b64);
  }
  static const char *bad[] = {"Zg=", "Zg", "Z===", "Zm9v\n", " Zm9", "Zm=v",
                              "Zm9*", "=Zm9", "Zg==Zg=="};
  uint8_t out[16];
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    is_int(dc_b64_decode(bad[i], strlen(bad[i]), out, sizeof(out)), -1,
           "base64 rejects bad input %zu", i);
  is_int(dc_b64_decode("Zm9vYmE=", 8, out, 4), -1,
         "base64 decode refuses output longer than the buffer");
}

static void test_names(void) {
  char *e = dc_scram_escape_name("a,b=c");
  is_str(e, "a=2Cb=3Dc", "saslname escape");
  char *u = dc_scram_unescape_name(e, strlen(e));
  is_str(u, "a,b=c", "saslname unescape");
  free(e);
  free(u);
  static const char *bad[] = {"a=2", "a=", "a=41", "a,b", "=2c"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    u = dc_scram_unescape_name(bad[i], strlen(bad[i]));
    ok(u == NULL, "saslname unescape rejects '%s'", bad[i]);
    free(u);
  }
  char nonce[33];
  ok(dc_scram_nonce(nonce, 32) == 0 && strlen(nonce) == 32 &&
         !strchr(nonce, ','),
     "nonce: 32 printable characters, no comma");
}

/* ---- RFC 7677 section 3 -------------------------------------------------- */

#define V_CNONCE "rOprNGfwEbeRWgbNEkqO"
#define V_SNONCE "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
#define V_FIRST "n,,n=user,r=" V_CNONCE
#define V_SFIRST "r=" V_CNONCE V_SNONCE ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define V_FINAL                                                                \
  "c=biws,r=" V_CNONCE V_SNONCE                                                \
  ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
#define V_SFINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

static void test_client_vector(void) {
  dc_scram_client_t *c =
      dc_scram_client_new(DC_SCRAM_SHA256, "user", "pencil", V_CNONCE);
  char err[256] = "", *m = NULL;
  size_t ml = 0;
  ok(c && !dc_scram_client_first(c, &m, &ml, err, sizeof(err)),
     "client-first built");
  is_str(m, V_FIRST, "RFC 7677 client-first");
  free(m);
  m = NULL;
  int rc = dc_scram_client_final(c, (const uint8_t *)V_SFIRST,
                                 strlen(V_SFIRST), &m, &ml, err, sizeof(err));
  is_int(rc, 0, "client-final built (%s)", err);
  is_str(m, V_FINAL, "RFC 7677 client-final with proof");
  ok(m && ml == strlen(m), "client-final length");
  free(m);
  /* a tampered signature is refused, the right one accepted */
  dc_scram_client_t *c2 =
      dc_scram_client_new(DC_SCRAM_SHA256, "user", "pencil", V_CNONCE);
  dc_scram_client_first(c2, &m, &ml, err, sizeof(err));
  free(m);
  dc_scram_client_final(c2, (const uint8_t *)V_SFIRST, strlen(V_SFIRST), &m,
                        &ml, err, sizeof(err));
  free(m);
  const char *forged = "v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
  ok(dc_scram_client_verify(c2, (const uint8_t *)forged, strlen(forged), err,
                            sizeof(err)) == -1 &&
         strstr(err, "signature"),
     "client refuses a wrong server signature (%s)", err);
  dc_scram_client_destroy(c2);
  ok(dc_scram_client_verify(c, (const uint8_t *)V_SFINAL, strlen(V_SFINAL),
                            err, sizeof(err)) == 0,
     "RFC 7677 server-final verifies");
  dc_scram_client_destroy(c);

  /* nonce that does not extend ours; iterations out of range */
  c = dc_scram_client_new(DC_SCRAM_SHA256, "user", "pencil", V_CNONCE);
  dc_scram_client_first(c, &m, &ml, err, sizeof(err));
  free(m);
  const char *other = "r=XXXX" V_SNONCE ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
  ok(dc_scram_client_final(c, (const uint8_t *)other, strlen(other), &m, &ml,
                           err, sizeof(err)) == -1 &&
         m == NULL && strstr(err, "nonce"),
     "client refuses a foreign nonce (%s)", err);
  dc_scram_client_destroy(c);
  c = dc_scram_client_new(DC_SCRAM_SHA256, "user", "pencil", V_CNONCE);
  dc_scram_client_first(c, &m, &ml, err, sizeof(err));
  free(m);
  const char *huge = "r=" V_CNONCE "x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999";
  ok(dc_scram_client_final(c, (const uint8_t *)huge, strlen(huge), &m, &ml,
                           err, sizeof(err)) == -1 &&
         strstr(err, "iterations"),
     "client refuses absurd iteration counts (%s)", err);
  dc_scram_client_destroy(c);
}

/* A credentials file holding just "user"/"pencil" with the RFC salt. */
static dc_credentials_t *vector_creds(void) {
  uint8_t salt[32];
  long sl = dc_b64_decode("W22ZaJ0SNY7soEsUEjb6gQ==", 24, salt, sizeof(salt));
  dc_scram_cred_t cr;
  char err[256];
  if (sl <= 0 || dc_scram_cred_make(DC_SCRAM_SHA256, "pencil", 4096, salt,
                                    (size_t)sl, &cr, err, sizeof(err)))
    return NULL;
  char *st = dc_b64_encode(cr.stored_key, cr.key_len);
  char *sv = dc_b64_encode(cr.server_key, cr.key_len);
  char path[300], line[512];
  snprintf(path, sizeof(path), "%s/vector.creds", tmpdir);
  snprintf(line, sizeof(line),
           "# RFC 7677\nuser SCRAM-SHA-256 iterations=4096 "
           "salt=W22ZaJ0SNY7soEsUEjb6gQ== stored_key=%s server_key=%s\n",
           st, sv);
  free(st);
  free(sv);
  write_file(path, line);
  return dc_credentials_load(path, err, sizeof(err));
}

static void test_server_vector(void) {
  dc_credentials_t *creds = vector_creds();
  ok(creds != NULL, "vector credentials load");
  dc_sasl_server_t *s = dc_sasl_server_new("SCRAM-SHA-256");
  ok(s && !dc_sasl_server_set_nonce(s, V_SNONCE), "server with fixed nonce");
  uint8_t *out = NULL;
  size_t ol = 0;
  char err[256] = "";
  int rc = dc_sasl_server_step(s, creds, (const uint8_t *)V_FIRST,
                               strlen(V_FIRST), &out, &ol, err, sizeof(err));
  is_int(rc, DC_SASL_CONTINUE, "server: client-first accepted (%s)", err);
  is_mem(out, ol, V_SFIRST, strlen(V_SFIRST), "RFC 7677 server-first");
  free(out);
  rc = dc_sasl_server_step(s, creds, (const uint8_t *)V_FINAL, strlen(V_FINAL),
                           &out, &ol, err, sizeof(err));
  is_int(rc, DC_SASL_DONE, "server: RFC proof accepted (%s)", err);
  is_mem(out, ol, V_SFINAL, strlen(V_SFINAL), "RFC 7677 server-final");
  is_str(dc_sasl_server_user(s), "user", "authenticated user name");
  free(out);
  rc = dc_sasl_server_step(s, creds, (const uint8_t *)V_FINAL, strlen(V_FINAL),
                           &out, &ol, err, sizeof(err));
  is_int(rc, DC_SASL_FAILED, "a step after DONE fails");
  ok(out == NULL && ol == 0, "no output after a failed step");
  dc_sasl_server_destroy(s);
  dc_credentials_destroy(creds);
}

/* ---- full exchanges ------------------------------------------------------ */

/* Runs a whole SCRAM exchange. reload, when set, is used for the second
 * step and the first creds object is destroyed in between (the server
 * must have copied what it needs). Returns the last server result;
 * errstr gets the failure; *client_ok says whether the client accepted
 * the server-final. */
static int scram_exchange(const char *mech, dc_credentials_t *creds,
                          const char *path_for_reload, const char *user,
                          const char *pass, char *errstr, size_t esz,
                          bool *client_ok, char *authed, size_t asz) {
  dc_scram_hash_t h;
  dc_scram_hash_from_name(mech, &h);
  dc_scram_client_t *c = dc_scram_client_new(h, user, pass, NULL);
  dc_sasl_server_t *s = dc_sasl_server_new(mech);
  char *m = NULL;
  size_t ml = 0;
  uint8_t *out = NULL;
  size_t ol = 0;
  *client_ok = false;
  if (authed && asz)
    authed[0] = '\0';
  int rc = DC_SASL_FAILED;
  if (!c || !s || dc_scram_client_first(c, &m, &ml, errstr, esz))
    goto out;
  rc = dc_sasl_server_step(s, creds, (uint8_t *)m, ml, &out, &ol, errstr, esz);
  free(m);
  m = NULL;
  if (rc != DC_SASL_CONTINUE)
    goto out;
  char cerr[256];
  if (dc_scram_client_final(c, out, ol, &m, &ml, cerr, sizeof(cerr))) {
    snprintf(errstr, esz, "client: %s", cerr);
    rc = -2;
    goto out;
  }
  free(out);
  out = NULL;
  dc_credentials_t *reloaded = NULL;
  if (path_for_reload) {
    reloaded = dc_credentials_load(path_for_reload, cerr, sizeof(cerr));
    dc_credentials_destroy(creds);
    creds = reloaded;
  }
  rc = dc_sasl_server_step(s, creds, (uint8_t *)m, ml, &out, &ol, errstr, esz);
  if (path_for_reload)
    dc_credentials_destroy(reloaded);
  if (rc == DC_SASL_DONE) {
    *client_ok = !dc_scram_client_verify(c, out, ol, cerr, sizeof(cerr));
    if (authed)
      snprintf(authed, asz, "%s", dc_sasl_server_user(s));
  }
out:
  free(m);
  free(out);
  dc_scram_client_destroy(c);
  dc_sasl_server_destroy(s);
  return rc;
}

static int plain_exchange(dc_credentials_t *creds, const char *authzid,
                          const char *user, const char *pass, char *errstr,
                          size_t esz) {
  uint8_t tok[512];
  size_t n = 0, a = strlen(authzid), u = strlen(user), p = strlen(pass);
  memcpy(tok, authzid, a);
  tok[a] = 0;
  memcpy(tok + a + 1, user, u);
  tok[a + 1 + u] = 0;
  memcpy(tok + a + 2 + u, pass, p);
  n = a + u + p + 2;
  dc_sasl_server_t *s = dc_sasl_server_new("PLAIN");
  uint8_t *out = NULL;
  size_t ol = 0;
  int rc = dc_sasl_server_step(s, creds, tok, n, &out, &ol, errstr, esz);
  if (rc == DC_SASL_DONE && strcmp(dc_sasl_server_user(s), user))
    rc = -3;
  if (rc == DC_SASL_DONE && (out || ol))
    rc = -4;
  free(out);
  dc_sasl_server_destroy(s);
  return rc;
}

static void test_exchanges(const char *path) {
  char err[512];
  ok(dc_credentials_add(path, "alice", "alice-secret", 4096, err,
                        sizeof(err)) == 0,
     "add alice (%s)", err);
  ok(dc_credentials_add(path, "odd, =name", "odd-pw", 4096, err,
                        sizeof(err)) == 0,
     "add a user whose name needs escaping (%s)", err);
  dc_credentials_t *creds = dc_credentials_load(path, err, sizeof(err));
  ok(creds != NULL, "credentials load (%s)", creds ? "" : err);
  is_int(dc_credentials_count(creds), 4, "two users x two mechanisms");
  ok(dc_credentials_find(creds, "odd, =name", "SCRAM-SHA-512") != NULL,
     "percent-encoded user found by its real name");
  ok(dc_credentials_find(creds, "alice", "PLAIN") == NULL,
     "no lookup by a non-SCRAM mechanism");

  bool cok;
  char who[300];
  static const char *mechs[] = {"SCRAM-SHA-256", "SCRAM-SHA-512"};
  for (int i = 0; i < 2; i++) {
    int rc = scram_exchange(mechs[i], creds, NULL, "alice", "alice-secret",
                            err, sizeof(err), &cok, who, sizeof(who));
    is_int(rc, DC_SASL_DONE, "%s exchange succeeds (%s)", mechs[i],
           rc ? err : "");
    ok(cok, "%s: the client verifies the server signature", mechs[i]);
    is_str(who, "alice", "%s: authenticated as alice", mechs[i]);
    rc = scram_exchange(mechs[i], creds, NULL, "odd, =name", "odd-pw", err,
                        sizeof(err), &cok, who, sizeof(who));
    ok(rc == DC_SASL_DONE && cok && !strcmp(who, "odd, =name"),
       "%s: user name with ',' '=' ' ' round-trips (%s)", mechs[i], who);

    rc = scram_exchange(mechs[i], creds, NULL, "alice", "wrong", err,
                        sizeof(err), &cok, NULL, 0);
    is_int(rc, DC_SASL_FAILED, "%s: wrong password fails", mechs[i]);
    char want[200];
    snprintf(want, sizeof(want),
             "Authentication failed during authentication due to invalid "
             "credentials with SASL mechanism %s", mechs[i]);
    is_str(err, want, "%s: Kafka's message for bad credentials", mechs[i]);
    char err2[512];
    rc = scram_exchange(mechs[i], creds, NULL, "mallory", "x", err2,
                        sizeof(err2), &cok, NULL, 0);
    is_int(rc, DC_SASL_FAILED, "%s: unknown user fails", mechs[i]);
    is_str(err2, err, "%s: unknown user gets the wrong-password message",
           mechs[i]);
  }

  /* The credentials object may be replaced between the two steps. */
  dc_credentials_t *first = dc_credentials_load(path, err, sizeof(err));
  int rc = scram_exchange("SCRAM-SHA-256", first, path, "alice",
                          "alice-secret", err, sizeof(err), &cok, NULL, 0);
  ok(rc == DC_SASL_DONE && cok,
     "exchange survives a credentials reload between steps (%s)", err);

  /* Unknown users look like known ones at the server-first stage. */
  uint8_t *o1 = NULL, *o2 = NULL, *o3 = NULL;
  size_t l1 = 0, l2 = 0, l3 = 0;
  dc_sasl_server_t *s1 = dc_sasl_server_new("SCRAM-SHA-256");
  dc_sasl_server_t *s2 = dc_sasl_server_new("SCRAM-SHA-256");
  dc_sasl_server_t *s3 = dc_sasl_server_new("SCRAM-SHA-256");
  const char *g1 = "n,,n=ghost,r=abc", *g3 = "n,,n=ghost2,r=abc";
  int r1 = dc_sasl_server_step(s1, creds, (const uint8_t *)g1, strlen(g1), &o1,
                               &l1, err, sizeof(err));
  int r2 = dc_sasl_server_step(s2, creds, (const uint8_t *)g1, strlen(g1), &o2,
                               &l2, err, sizeof(err));
  int r3 = dc_sasl_server_step(s3, creds, (const uint8_t *)g3, strlen(g3), &o3,
                               &l3, err, sizeof(err));
  ok(r1 == DC_SASL_CONTINUE && r2 == DC_SASL_CONTINUE && r3 == DC_SASL_CONTINUE,
     "unknown user gets a server-first message");
  size_t sl1 = 0, sl2 = 0, sl3 = 0;
  const char *x1 = o1 ? dc_scram_attr((char *)o1, l1, 's', &sl1) : NULL;
  const char *x2 = o2 ? dc_scram_attr((char *)o2, l2, 's', &sl2) : NULL;
  const char *x3 = o3 ? dc_scram_attr((char *)o3, l3, 's', &sl3) : NULL;
  ok(x1 && x2 && sl1 == sl2 && !memcmp(x1, x2, sl1),
     "the same unknown user gets the same salt each time");
  ok(x1 && x3 && (sl1 != sl3 || memcmp(x1, x3, sl1)),
     "different unknown users get different salts");
  const char *i1 = o1 ? dc_scram_attr((char *)o1, l1, 'i', &sl1) : NULL;
  ok(i1 && sl1 == 4 && !memcmp(i1, "4096", 4),
     "unknown user: the iteration count the real users have");
  is_int(dc_credentials_common_iterations(creds, "SCRAM-SHA-512"), 4096,
         "common iterations of the file");
  is_int(dc_credentials_common_iterations(NULL, "SCRAM-SHA-512"), 8192,
         "common iterations without credentials: the default");
  free(o1);
  free(o2);
  free(o3);
  dc_sasl_server_destroy(s1);
  dc_sasl_server_destroy(s2);
  dc_sasl_server_destroy(s3);

  /* PLAIN */
  is_int(plain_exchange(creds, "", "alice", "alice-secret", err, sizeof(err)),
         DC_SASL_DONE, "PLAIN succeeds");
  is_int(plain_exchange(creds, "alice", "alice", "alice-secret", err,
                        sizeof(err)),
         DC_SASL_DONE, "PLAIN with authzid equal to the user succeeds");
  is_int(plain_exchange(creds, "", "odd, =name", "odd-pw", err, sizeof(err)),
         DC_SASL_DONE, "PLAIN with an odd user name");
  is_int(plain_exchange(creds, "", "alice", "nope", err, sizeof(err)),
         DC_SASL_FAILED, "PLAIN wrong password fails");
  is_str(err, PLAIN_FAIL, "PLAIN wrong password message");
  is_int(plain_exchange(creds, "", "mallory", "nope", err, sizeof(err)),
         DC_SASL_FAILED, "PLAIN unknown user fails");
  is_str(err, PLAIN_FAIL, "PLAIN unknown user: the same message");
  is_int(plain_exchange(creds, "bob", "alice", "alice-secret", err,
                        sizeof(err)),
         DC_SASL_FAILED, "PLAIN authzid mismatch fails");
  ok(strstr(err, "authorization id") != NULL, "authzid message (%s)", err);
  is_int(plain_exchange(NULL, "", "alice", "alice-secret", err, sizeof(err)),
         DC_SASL_FAILED, "PLAIN without credentials fails");
  is_str(err, PLAIN_FAIL, "no credentials: the usual message");

  /* SCRAM authzid, channel binding, gs2 "y" */
  struct {
    const char *msg;
    int want;
    const char *errpart;
  } firsts[] = {
      {"n,a=bob,n=alice,r=abc", DC_SASL_FAILED, "authorization id"},
      {"n,a=alice,n=alice,r=abc", DC_SASL_CONTINUE, NULL},
      {"y,,n=alice,r=abc", DC_SASL_CONTINUE, NULL},
      {"p=tls-unique,,n=alice,r=abc", DC_SASL_FAILED, "channel binding"},
      {"n,,m=ext,n=alice,r=abc", DC_SASL_FAILED, "mandatory"},
      {"n,,n=alice,r=abc,tokenauth=true", DC_SASL_FAILED, "delegation"},
      {"n,,n=alice,r=abc,foo=bar", DC_SASL_CONTINUE, NULL},
      {"", DC_SASL_FAILED, "malformed"},
      {"n", DC_SASL_FAILED, "malformed"},
      {"n,,", DC_SASL_FAILED, "malformed"},
      {"x,,n=alice,r=abc", DC_SASL_FAILED, "malformed"},
      {"n,,n=,r=abc", DC_SASL_FAILED, "malformed"},
      {"n,,n=alice", DC_SASL_FAILED, "malformed"},
      {"n,,n=alice,r=", DC_SASL_FAILED, "malformed"},
      {"n,,r=abc,n=alice", DC_SASL_FAILED, "malformed"},
      {"n,,n=al=2ice,r=abc", DC_SASL_FAILED, "malformed"},
      {"n,b=x,n=alice,r=abc", DC_SASL_FAILED, "malformed"},
      {"n,,n=alice,r=a\x01" "bc", DC_SASL_FAILED, "malformed"},
  };
  for (size_t i = 0; i < sizeof(firsts) / sizeof(firsts[0]); i++) {
    dc_sasl_server_t *s = dc_sasl_server_new("SCRAM-SHA-256");
    uint8_t *o = NULL;
    size_t ol = 0;
    err[0] = '\0';
    int r = dc_sasl_server_step(s, creds, (const uint8_t *)firsts[i].msg,
                                strlen(firsts[i].msg), &o, &ol, err,
                                sizeof(err));
    ok(r == firsts[i].want &&
           (!firsts[i].errpart || strstr(err, firsts[i].errpart)) &&
           (r != DC_SASL_FAILED || (o == NULL && ol == 0)),
       "client-first %zu -> %d (%s)", i, r, err);
    free(o);
    dc_sasl_server_destroy(s);
  }
  /* A client-final whose c= does not match the gs2 header sent. */
  {
    dc_sasl_server_t *s = dc_sasl_server_new("SCRAM-SHA-256");
    uint8_t *o = NULL;
    size_t ol = 0;
    const char *f1 = "y,,n=alice,r=abc";
    dc_sasl_server_step(s, creds, (const uint8_t *)f1, strlen(f1), &o, &ol,
                        err, sizeof(err));
    size_t rl = 0;
    const char *r = o ? dc_scram_attr((char *)o, ol, 'r', &rl) : "";
    char f2[300];
    snprintf(f2, sizeof(f2), "c=biws,r=%.*s,p=AAAA", (int)rl, r);
    free(o);
    int rc2 = dc_sasl_server_step(s, creds, (const uint8_t *)f2, strlen(f2),
                                  &o, &ol, err, sizeof(err));
    ok(rc2 == DC_SASL_FAILED && strstr(err, "channel binding"),
       "c= must repeat the gs2 header (%s)", err);
    free(o);
    dc_sasl_server_destroy(s);
  }
  ok(dc_sasl_server_new("NTLM") == NULL && !dc_sasl_mechanism_known("plain") &&
         dc_sasl_mechanism_known("PLAIN") &&
         dc_sasl_mechanism_known("SCRAM-SHA-512") &&
         dc_sasl_mechanism_known("GSSAPI"),
     "mechanism names");
  {
    /* GSSAPI on a server without a keytab: refused in words. */
    dc_sasl_server_t *g = dc_sasl_server_new("GSSAPI");
    uint8_t *o = NULL;
    size_t ol = 0;
    int grc = dc_sasl_server_step(g, creds, (const uint8_t *)"\x60", 1, &o,
                                 &ol, err, sizeof(err));
    ok(grc == DC_SASL_FAILED && strstr(err, "GSSAPI is not configured") &&
           !o && !dc_sasl_server_user(g),
       "GSSAPI without an acceptor fails: %s", err);
    dc_sasl_server_destroy(g);
  }
  dc_credentials_destroy(creds);
}

/* ---- malformed input, fuzz-ish ------------------------------------------ */

static uint32_t rng = 12345;
static uint32_t next_rand(void) {
  rng = rng * 1103515245u + 12345u;
  return rng >> 8;
}

static void test_fuzz(const char *path) {
  char err[512];
  dc_credentials_t *creds = dc_credentials_load(path, err, sizeof(err));
  /* A real exchange to get a valid client-final to mutate. */
  dc_scram_client_t *c =
      dc_scram_client_new(DC_SCRAM_SHA256, "alice", "alice-secret", NULL);
  dc_sasl_server_t *s = dc_sasl_server_new("SCRAM-SHA-256");
  char *first = NULL, *final = NULL;
  size_t fl = 0, finl = 0;
  uint8_t *sf = NULL;
  size_t sfl = 0;
  dc_scram_client_first(c, &first, &fl, err, sizeof(err));
  dc_sasl_server_step(s, creds, (uint8_t *)first, fl, &sf, &sfl, err,
                      sizeof(err));
  dc_scram_client_final(c, sf, sfl, &final, &finl, err, sizeof(err));
  dc_sasl_server_destroy(s);
  dc_scram_client_destroy(c);
  ok(first && final, "material for mutation");
  if (!first || !final) {
    free(first);
    free(final);
    free(sf);
    dc_credentials_destroy(creds);
    return;
  }

  int bad = 0, accepted = 0, runs = 0;
  uint8_t buf[1024];
  for (int round = 0; round < 600; round++) {
    /* step 1 is a mutation of client-first, or the real one (then step 2
     * gets the mutation) */
    bool mut_first = round % 2 == 0;
    const char *src = mut_first ? first : final;
    size_t n = mut_first ? fl : finl;
    memcpy(buf, src, n);
    if (round < 2 * (int)n) {
      n = (size_t)(round / 2); /* every truncation */
    } else {
      int flips = 1 + (int)(next_rand() % 4);
      for (int k = 0; k < flips; k++) {
        size_t at = next_rand() % n;
        uint32_t kind = next_rand() % 4;
        buf[at] = kind == 0 ? (uint8_t)next_rand()
                  : kind == 1 ? (uint8_t)','
                  : kind == 2 ? (uint8_t)'='
                              : (uint8_t)0;
      }
      if (next_rand() % 5 == 0)
        n = next_rand() % (n + 1);
    }
    dc_sasl_server_t *x = dc_sasl_server_new("SCRAM-SHA-256");
    uint8_t *o = NULL;
    size_t ol = 0;
    int rc;
    if (!mut_first) {
      rc = dc_sasl_server_step(x, creds, (uint8_t *)first, fl, &o, &ol, err,
                               sizeof(err));
      free(o);
      o = NULL;
    }
    rc = dc_sasl_server_step(x, creds, buf, n, &o, &ol, err, sizeof(err));
    runs++;
    if (rc != DC_SASL_FAILED && rc != DC_SASL_CONTINUE && rc != DC_SASL_DONE)
      bad++;
    if (rc == DC_SASL_FAILED && (o || ol || !err[0]))
      bad++;
    /* A mutated final can only pass if it still carries the real proof for
     * the original nonce, which a different server nonce rules out. */
    if (!mut_first && rc == DC_SASL_DONE)
      accepted++;
    free(o);
    dc_sasl_server_destroy(x);
  }
  is_int(bad, 0, "%d mutated/truncated SCRAM tokens: clean results", runs);
  is_int(accepted, 0, "no mutated client-final authenticates");

  /* PLAIN garbage: random bytes and NUL counts. */
  bad = 0;
  for (int round = 0; round < 200; round++) {
    size_t n = next_rand() % 40;
    for (size_t i = 0; i < n; i++)
      buf[i] = (uint8_t)(next_rand() % 4 ? 'a' + next_rand() % 26 : 0);
    dc_sasl_server_t *x = dc_sasl_server_new("PLAIN");
    uint8_t *o = NULL;
    size_t ol = 0;
    int rc = dc_sasl_server_step(x, creds, buf, n, &o, &ol, err, sizeof(err));
    if (rc != DC_SASL_FAILED || o || ol)
      bad++;
    free(o);
    dc_sasl_server_destroy(x);
  }
  is_int(bad, 0, "200 garbage PLAIN tokens all fail cleanly");
  /* Oversized token and NULL input. */
  uint8_t *big = calloc(1, DC_SASL_MAX_TOKEN + 1);
  dc_sasl_server_t *x = dc_sasl_server_new("SCRAM-SHA-512");
  uint8_t *o = NULL;
  size_t ol = 0;
  ok(big && dc_sasl_server_step(x, creds, big, DC_SASL_MAX_TOKEN + 1, &o, &ol,
                                err, sizeof(err)) == DC_SASL_FAILED,
     "oversized token refused (%s)", err);
  dc_sasl_server_destroy(x);
  free(big);
  x = dc_sasl_server_new("SCRAM-SHA-512");
  ok(dc_sasl_server_step(x, creds, NULL, 0, &o, &ol, err, sizeof(err)) ==
         DC_SASL_FAILED,
     "empty SCRAM token fails (%s)", err);
  dc_sasl_server_destroy(x);
  /* A user name too long for a principal fails like an unknown user. */
  char longu[600] = "n,,n=";
  memset(longu + 5, 'u', 400);
  strcpy(longu + 405, ",r=abc");
  x = dc_sasl_server_new("SCRAM-SHA-256");
  ok(dc_sasl_server_step(x, creds, (uint8_t *)longu, strlen(longu), &o, &ol,
                         err, sizeof(err)) == DC_SASL_CONTINUE,
     "over-long user name: treated as unknown, not a crash");
  free(o);
  dc_sasl_server_destroy(x);

  free(first);
  free(final);
  free(sf);
  dc_credentials_destroy(creds);
}

/* ---- credentials file ---------------------------------------------------- */

static void test_credentials_file(void) {
  char path[300], err[512];
  snprintf(path, sizeof(path), "%s/users.creds", tmpdir);
  ok(dc_credentials_load(path, err, sizeof(err)) == NULL &&
         strstr(err, "cannot open credentials file") && strstr(err, path),
     "missing file is an error (%s)", err);
  ok(dc_credentials_add(path, "alice", "pw", 1000, err, sizeof(err)) == -1 &&
         strstr(err, "iterations"),
     "iterations below 4096 refused (%s)", err);
  ok(access(path, F_OK) != 0, "nothing created on a refused add");
  ok(dc_credentials_add(path, "", "pw", 0, err, sizeof(err)) == -1,
     "empty user name refused");
  ok(dc_credentials_add(path, "alice", "", 0, err, sizeof(err)) == -1,
     "empty password refused");

  ok(dc_credentials_add(path, "alice", "Sup3rS3cret!", 0, err, sizeof(err)) ==
         0,
     "add creates the file (%s)", err);
  struct stat st;
  int sr = stat(path, &st);
  ok(sr == 0 && (st.st_mode & 0777) == 0600, "file mode is 0600 (%o)",
     sr == 0 ? (unsigned)(st.st_mode & 0777) : 0u);
  char *text = slurp(path);
  ok(text && !strstr(text, "Sup3rS3cret"), "the password is not in the file");
  ok(text && strstr(text, "alice SCRAM-SHA-256 iterations=8192 salt=") &&
         strstr(text, "alice SCRAM-SHA-512 iterations=8192 salt="),
     "both mechanisms stored with the default iterations");
  dc_credentials_t *c = dc_credentials_load(path, err, sizeof(err));
  const dc_scram_cred_t *a1 = dc_credentials_find(c, "alice", "SCRAM-SHA-256");
  ok(a1 && dc_scram_cred_check(a1, "Sup3rS3cret!", 12) &&
         !dc_scram_cred_check(a1, "Sup3rS3cret?", 12),
     "stored keys match the password and only it");
  dc_scram_cred_t saved = a1 ? *a1 : (dc_scram_cred_t){0};
  dc_credentials_destroy(c);

  ok(dc_credentials_add(path, "bob smith%", "bobpw", 4096, err, sizeof(err)) ==
         0,
     "add a second user with a space and '%%'");
  text = slurp(path);
  ok(text && strstr(text, "bob%20smith%25 SCRAM-SHA-512 iterations=4096"),
     "user name percent-encoded in the file");
  /* Replace alice: new salt, old password out. */
  ok(dc_credentials_add(path, "alice", "n3w-password", 4096, err,
                        sizeof(err)) == 0,
     "replace alice");
  c = dc_credentials_load(path, err, sizeof(err));
  is_int(dc_credentials_count(c), 4, "still 4 entries after replacing");
  a1 = dc_credentials_find(c, "alice", "SCRAM-SHA-256");
  ok(a1 && a1->iterations == 4096 &&
         memcmp(a1->salt, saved.salt, saved.salt_len) &&
         dc_scram_cred_check(a1, "n3w-password", 12) &&
         !dc_scram_cred_check(a1, "Sup3rS3cret!", 12),
     "alice replaced: new salt, new password only");
  ok(dc_credentials_find(c, "bob smith%", "SCRAM-SHA-256") != NULL,
     "bob kept");
  dc_credentials_destroy(c);
  ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
     "still 0600 after rewriting");

  /* Comments and blank lines survive an add. */
  text = slurp(path);
  char *copy = strdup(text ? text : "");
  char with_comment[70000];
  snprintf(with_comment, sizeof(with_comment), "# keep me\n\n%s", copy);
  free(copy);
  write_file(path, with_comment);
  ok(dc_credentials_add(path, "carol", "c-pw", 4096, err, sizeof(err)) == 0,
     "add after hand edits");
  text = slurp(path);
  ok(text && !strncmp(text, "# keep me\n", 10), "comment kept");

  /* Bad files: clear errors with the line number; add leaves them alone. */
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"# c\nalice SCRAM-SHA-256 iterations=4096 salt=AAAA\n",
       "line 2: missing field"},
      {"alice SCRAM-SHA-1 iterations=4096 salt=AAAA stored_key=AAAA "
       "server_key=AAAA\n",
       "line 1: unknown mechanism"},
      {"\n\nalice SCRAM-SHA-256 iterations=10 salt=AAAA stored_key=AAAA "
       "server_key=AAAA\n",
       "line 3: iterations"},
      {"alice SCRAM-SHA-256 iterations=4096 salt=A!AA stored_key=AAAA "
       "server_key=AAAA\n",
       "line 1: salt"},
      {"alice SCRAM-SHA-256 iterations=4096 salt=AAAA stored_key=AAAA "
       "server_key=AAAA\n",
       "line 1: stored_key"},
      {"alice\n", "line 1: expected USER MECHANISM"},
      {"al%4 SCRAM-SHA-256\n", "line 1: bad user name"},
      {"alice SCRAM-SHA-256 iterations=4096 bogus\n", "line 1: field without"},
  };
  char badpath[300];
  snprintf(badpath, sizeof(badpath), "%s/bad.creds", tmpdir);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    write_file(badpath, bad[i].text);
    dc_credentials_t *b = dc_credentials_load(badpath, err, sizeof(err));
    ok(!b && strstr(err, bad[i].want) && strstr(err, badpath),
       "bad file %zu: '%s'", i, err);
    dc_credentials_destroy(b);
  }
  ok(dc_credentials_add(badpath, "dave", "pw", 4096, err, sizeof(err)) == -1,
     "add refuses to rewrite a bad file (%s)", err);
  text = slurp(badpath);
  ok(text && !strcmp(text, bad[sizeof(bad) / sizeof(bad[0]) - 1].text),
     "the bad file is unchanged");

  /* Duplicate entries. */
  dc_scram_cred_t cr;
  dc_scram_cred_make(DC_SCRAM_SHA256, "x", 4096, NULL, 0, &cr, err,
                     sizeof(err));
  char *salt = dc_b64_encode(cr.salt, cr.salt_len);
  char *k = dc_b64_encode(cr.stored_key, cr.key_len);
  char dup[1024];
  snprintf(dup, sizeof(dup),
           "eve SCRAM-SHA-256 iterations=4096 salt=%s stored_key=%s "
           "server_key=%s\n"
           "eve SCRAM-SHA-256 iterations=4096 salt=%s stored_key=%s "
           "server_key=%s\n",
           salt, k, k, salt, k, k);
  free(salt);
  free(k);
  write_file(badpath, dup);
  dc_credentials_t *b = dc_credentials_load(badpath, err, sizeof(err));
  ok(!b && strstr(err, "twice"), "duplicate entry refused (%s)", err);
  dc_credentials_destroy(b);
  write_file(badpath, "");
  b = dc_credentials_load(badpath, err, sizeof(err));
  ok(b && dc_credentials_count(b) == 0 &&
         !dc_credentials_find(b, "alice", "SCRAM-SHA-256"),
     "an empty file loads with no users");
  dc_credentials_destroy(b);
  ok(dc_credentials_find(NULL, "alice", "SCRAM-SHA-256") == NULL,
     "find on NULL credentials");
}

/* ---- OAUTHBEARER (RFC 7628) with unsecured tokens --------------------- */

/* base64url of s without padding, into out. */
static void b64url(const char *s, char *out, size_t size) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t n = strlen(s), o = 0;
  for (size_t i = 0; i < n && o + 5 < size; i += 3) {
    uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)(unsigned char)s[i + 1] << 8;
    if (i + 2 < n)
      v |= (unsigned char)s[i + 2];
    out[o++] = a[v >> 18];
    out[o++] = a[(v >> 12) & 63];
    if (i + 1 < n)
      out[o++] = a[(v >> 6) & 63];
    if (i + 2 < n)
      out[o++] = a[v & 63];
  }
  out[o] = '\0';
}

/* An unsigned token for sub, expiring at exp. */
static void unsecured_token(const char *sub, long long exp, char *out,
                            size_t size) {
  char claims[256], h[64], c[400];
  snprintf(claims, sizeof(claims), "{\"sub\":\"%s\",\"exp\":%lld}", sub,
           exp);
  b64url("{\"alg\":\"none\"}", h, sizeof(h));
  b64url(claims, c, sizeof(c));
  snprintf(out, size, "%s.%s.", h, c);
}

/* One OAUTHBEARER step of a fresh exchange with msg; returns the result,
 * the answer in *ans (caller frees) and the exchange in *sp. */
static int oauth_first(const dc_jwt_policy_t *p, const char *msg, size_t len,
                       dc_sasl_server_t **sp, uint8_t **ans, size_t *anslen,
                       char *err, size_t err_size) {
  *sp = dc_sasl_server_new("OAUTHBEARER");
  dc_sasl_server_set_oauth(*sp, p);
  err[0] = '\0';
  return dc_sasl_server_step(*sp, NULL, (const uint8_t *)msg, len, ans,
                             anslen, err, err_size);
}

static void test_oauthbearer(void) {
  ok(dc_sasl_mechanism_known("OAUTHBEARER"), "OAUTHBEARER is a mechanism");
  int64_t now = 1800000000;
  dc_jwt_policy_t p = {.allow_unsecured = true, .now_s = now,
                       .clock_skew_s = 30};
  char tok[600], msg[800], err[512];
  unsecured_token("alice", now + 60, tok, sizeof(tok));
  int n = snprintf(msg, sizeof(msg), "n,,\001auth=Bearer %s\001\001", tok);
  dc_sasl_server_t *s;
  uint8_t *ans;
  size_t anslen;
  is_int(oauth_first(&p, msg, (size_t)n, &s, &ans, &anslen, err, sizeof(err)),
         DC_SASL_DONE, "a good token: DONE at once");
  is_int((int)anslen, 0, "  with an empty answer");
  is_str(dc_sasl_server_user(s), "alice", "  the user is the token's sub");
  ok(dc_sasl_server_expires_s(s) == now + 60, "  its expiry is kept");
  dc_sasl_server_destroy(s);

  n = snprintf(msg, sizeof(msg),
               "n,a=alice,\001host=h\001auth=bearer %s\001port=1\001\001",
               tok);
  is_int(oauth_first(&p, msg, (size_t)n, &s, &ans, &anslen, err, sizeof(err)),
         DC_SASL_DONE,
         "an authzid equal to the principal, extensions, scheme any case");
  dc_sasl_server_destroy(s);

  /* A refused token: the status first, the reason after the %x01. */
  unsecured_token("alice", now - 3600, tok, sizeof(tok));
  n = snprintf(msg, sizeof(msg), "n,,\001auth=Bearer %s\001\001", tok);
  is_int(oauth_first(&p, msg, (size_t)n, &s, &ans, &anslen, err, sizeof(err)),
         DC_SASL_CONTINUE, "an expired token: CONTINUE");
  ok(anslen == 26 && !memcmp(ans, "{\"status\":\"invalid_token\"}", 26),
     "  answered {\"status\":\"invalid_token\"}");
  free(ans);
  dc_sasl_server_set_oauth(s, &p);
  is_int(dc_sasl_server_step(s, NULL, (const uint8_t *)"\001", 1, &ans,
                             &anslen, err, sizeof(err)),
         DC_SASL_FAILED, "  then the client's %%x01: FAILED");
  ok(strstr(err, "expired"), "  saying why: %s", err);
  ok(!dc_sasl_server_user(s), "  nobody authenticated");
  dc_sasl_server_destroy(s);

  unsecured_token("alice", now + 60, tok, sizeof(tok));
  struct {
    const char *fmt, *why, *what;
  } bad[] = {
      {"n,,auth=Bearer %s\001\001", "GS2", "no %x01 after the GS2 header"},
      {"y,,\001auth=Bearer %s\001\001", "GS2", "channel binding flag y"},
      {"n,,\001auth=Bearer %s\001", "%x01", "no final %x01"},
      {"n,,\001auth=Bearer %s\001\001\001", "%x01", "one %x01 too many"},
      {"n,,\001auth=Basic %s\001\001", "Bearer", "another scheme"},
      {"n,,\001other=%s\001\001", "no auth", "no auth pair"},
      {"n,,\001=x%s\001\001", "malformed", "an empty key"},
      {"n,,\001auth%s\001\001", "malformed", "a pair without '='"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    n = snprintf(msg, sizeof(msg), bad[i].fmt, tok);
    int rc = oauth_first(&p, msg, (size_t)n, &s, &ans, &anslen, err,
                         sizeof(err));
    ok(rc == DC_SASL_FAILED && strstr(err, bad[i].why),
       "%s: FAILED naming '%s' (%s)", bad[i].what, bad[i].why, err);
    free(ans);
    dc_sasl_server_destroy(s);
  }
  n = snprintf(msg, sizeof(msg), "n,a=bob,\001auth=Bearer %s\001\001", tok);
  is_int(oauth_first(&p, msg, (size_t)n, &s, &ans, &anslen, err, sizeof(err)),
         DC_SASL_CONTINUE, "an authzid other than the token's principal is "
                           "refused");
  free(ans);
  dc_sasl_server_step(s, NULL, (const uint8_t *)"\001", 1, &ans, &anslen, err,
                      sizeof(err));
  ok(strstr(err, "authorization id"), "  saying so: %s", err);
  dc_sasl_server_destroy(s);
  n = snprintf(msg, sizeof(msg), "n,,\001auth=Bearer %s\001\001", tok);
  is_int(oauth_first(NULL, msg, (size_t)n, &s, &ans, &anslen, err, sizeof(err)),
         DC_SASL_FAILED, "no policy (OAUTHBEARER not configured): FAILED");
  ok(strstr(err, "not configured"), "  saying so: %s", err);
  dc_sasl_server_destroy(s);
  p.allow_unsecured = false;
  is_int(oauth_first(&p, msg, (size_t)n, &s, &ans, &anslen, err, sizeof(err)),
         DC_SASL_CONTINUE, "an unsigned token where only signed ones pass");
  free(ans);
  dc_sasl_server_destroy(s);
}

/* ---- names that read like another principal ----------------------------- */

/* Renames user from to to (percent-encoded) in the credentials file at
 * path, as a hand edit would: --add-user refuses such names. */
static void rename_user(const char *path, const char *from, const char *to) {
  char buf[8192], out[8192];
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0, o = 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
    bool hit = !strncmp(line, from, strlen(from)) && line[strlen(from)] == ' ';
    o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s\n", hit ? to : "",
                          hit ? line + strlen(from) : line);
  }
  f = fopen(path, "w");
  if (!f || fwrite(out, 1, o, f) != o || fclose(f)) {
    printf("Bail out! cannot rewrite %s\n", path);
    exit(1);
  }
}

/* A credential for "oa-admin " (hand-made) authenticates nobody, by any
 * mechanism, and says why; --add-user refuses such names. */
static void test_look_alike(void) {
  char path[300], err[512];
  bool cok;
  snprintf(path, sizeof(path), "%s/lookalike.creds", tmpdir);
  static const struct {
    const char *name, *why;
  } names[] = {{"oa-admin ", "ends with a blank"},
               {" oa-admin", "begins with a blank"},
               {"oa-admin\xc2\xa0", "ends with a blank"},
               {"oa\x01" "admin", "holds a control character"},
               {"oa\xc2\x85" "admin", "holds a control character"}};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    ok(dc_credentials_add(path, names[i].name, "pw", 4096, err,
                          sizeof(err)) == -1 &&
           strstr(err, names[i].why),
       "--add-user of a name that %s refused (%s)", names[i].why, err);
  int rc = dc_credentials_add(path, "oa-adminX", "pw", 4096, err, sizeof(err));
  ok(rc == 0, "add oa-adminX (%s)", rc ? err : "");
  rename_user(path, "oa-adminX", "oa-admin%20");
  dc_credentials_t *creds = dc_credentials_load(path, err, sizeof(err));
  ok(creds && dc_credentials_find(creds, "oa-admin ", "SCRAM-SHA-256"),
     "the hand-edited file holds a credential for 'oa-admin ' (%s)",
     creds ? "" : err);
  for (int i = 0; i < 2; i++) {
    const char *mech = i ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
    rc = scram_exchange(mech, creds, NULL, "oa-admin ", "pw", err,
                        sizeof(err), &cok, NULL, 0);
    ok(rc == DC_SASL_FAILED && strstr(err, "the user name ends with a blank"),
       "%s as 'oa-admin ' with its password: refused, saying why (%s)", mech,
       err);
  }
  rc = scram_exchange("SCRAM-SHA-256", creds, NULL, "oa\tadmin", "pw", err,
                          sizeof(err), &cok, NULL, 0);
  ok(rc == DC_SASL_FAILED && strstr(err, "holds a control character"),
     "SCRAM as 'oa<TAB>admin': refused (%s)", err);
  is_int(plain_exchange(creds, "", "oa-admin ", "pw", err, sizeof(err)),
         DC_SASL_FAILED, "PLAIN as 'oa-admin ' with its password: refused");
  ok(strstr(err, "the user name ends with a blank"), "  saying why: %s", err);
  is_int(plain_exchange(creds, "", "\xe3\x80\x80oa-admin", "x", err,
                        sizeof(err)),
         DC_SASL_FAILED, "PLAIN as U+3000 'oa-admin': refused");
  ok(strstr(err, "begins with a blank"), "  saying why: %s", err);
  dc_credentials_destroy(creds);

  int64_t now = 1800000000;
  dc_jwt_policy_t p = {.allow_unsecured = true, .now_s = now};
  char tok[600], msg[800];
  unsecured_token("oa-admin ", now + 60, tok, sizeof(tok));
  int n = snprintf(msg, sizeof(msg), "n,,\001auth=Bearer %s\001\001", tok);
  dc_sasl_server_t *s;
  uint8_t *ans;
  size_t anslen;
  is_int(oauth_first(&p, msg, (size_t)n, &s, &ans, &anslen, err, sizeof(err)),
         DC_SASL_CONTINUE, "OAUTHBEARER with sub 'oa-admin ': refused");
  free(ans);
  dc_sasl_server_set_oauth(s, &p);
  dc_sasl_server_step(s, NULL, (const uint8_t *)"\001", 1, &ans, &anslen, err,
                      sizeof(err));
  ok(strstr(err, "the 'sub' claim 'oa-admin ' ends with a blank") &&
         !dc_sasl_server_user(s),
     "  saying why: %s", err);
  dc_sasl_server_destroy(s);
}

/* A client-first message of exactly len bytes around an unsigned token
 * (padded by a claim, then an extension); 0, or -1 if none fits. */
static int oauth_message_of(size_t len, int64_t exp, char *msg, size_t size) {
  char *pad = malloc(len), *claims = malloc(len + 64), *c = malloc(2 * len);
  char h[64];
  int rc = -1;
  b64url("{\"alg\":\"none\"}", h, sizeof(h));
  for (size_t p = 0; rc && pad && claims && c && p < len; p++) {
    memset(pad, 'p', p);
    pad[p] = '\0';
    snprintf(claims, len + 64, "{\"sub\":\"alice\",\"exp\":%lld,\"pad\":\"%s\"}",
             (long long)exp, pad);
    b64url(claims, c, 2 * len);
    for (int e = 0; rc && e < 4; e++)
      rc = (size_t)snprintf(msg, size, "n,,\001%.*s%sauth=Bearer %s.%s.\001\001",
                            e, "x=12", e ? "\001" : "", h, c) == len
               ? 0
               : -1;
  }
  free(pad);
  free(claims);
  free(c);
  return rc;
}

/* The size limit on OAUTHBEARER: the whole client message, token and all,
 * at most DC_SASL_MAX_TOKEN bytes. */
static void test_oauth_limit(void) {
  int64_t now = 1800000000;
  dc_jwt_policy_t p = {.allow_unsecured = true, .now_s = now};
  char *msg = malloc(DC_SASL_MAX_TOKEN + 64), err[512];
  dc_sasl_server_t *s;
  uint8_t *ans = NULL;
  size_t anslen;
  ok(!oauth_message_of(DC_SASL_MAX_TOKEN, now + 60, msg, DC_SASL_MAX_TOKEN + 64),
     "a %d-byte OAUTHBEARER message is made", DC_SASL_MAX_TOKEN);
  is_int(oauth_first(&p, msg, strlen(msg), &s, &ans, &anslen, err,
                     sizeof(err)),
         DC_SASL_DONE, "a token in a message of %d bytes authenticates (%s)",
         DC_SASL_MAX_TOKEN, err);
  dc_sasl_server_destroy(s);
  ok(!oauth_message_of(DC_SASL_MAX_TOKEN + 1, now + 60, msg,
                       DC_SASL_MAX_TOKEN + 64),
     "a message one byte longer is made");
  is_int(oauth_first(&p, msg, strlen(msg), &s, &ans, &anslen, err,
                     sizeof(err)),
         DC_SASL_FAILED, "one byte more is refused");
  ok(strstr(err, "OAUTHBEARER token of 8193 bytes exceeds 8192"),
     "  saying so: %s", err);
  dc_sasl_server_destroy(s);
  free(msg);
}

/* The client's unsigned tokens (librdkafka's sasl.oauthbearer.config), as
 * the server's validator reads them. */
static void test_oauth_client(void) {
  int64_t now = 1800000000;
  char err[256];
  char *tok = dc_oauth_unsecured_token(
      "principal=alice lifeSeconds=60 scope=read,write", now, err, sizeof(err));
  dc_jwt_policy_t p = {.allow_unsecured = true, .now_s = now};
  dc_jwt_result_t r;
  ok(tok && !dc_jwt_validate(tok, strlen(tok), &p, &r, err, sizeof(err)),
     "an unsecured token from sasl.oauthbearer.config validates (%s)",
     tok ? err : "none");
  is_str(r.principal, "alice", "  principal=alice is its sub");
  ok(r.expires_s == now + 60, "  lifeSeconds=60 sets exp");
  is_str(r.scope, "read write", "  scope=read,write is its scope");
  size_t n = 0;
  char *first = dc_oauth_client_first(tok, &n);
  ok(first && n == strlen(tok) + 18 && !memcmp(first, "n,,\001auth=Bearer ", 16) &&
         !memcmp(first + n - 2, "\001\001", 2),
     "the client-first message frames the token");
  free(first);
  free(tok);
  tok = dc_oauth_unsecured_token("principalClaimName=email principal=a@x",
                                 now, err, sizeof(err));
  p.principal_claim = "email";
  ok(tok && !dc_jwt_validate(tok, strlen(tok), &p, &r, err, sizeof(err)) &&
         !strcmp(r.principal, "a@x"),
     "principalClaimName names the claim");
  free(tok);
  static const char *bad[][2] = {
      {"", "principal=NAME"},
      {"lifeSeconds=60", "principal=NAME"},
      {"principal", "not key=value"},
      {"principal=a lifeSeconds=0", "lifeSeconds"},
      {"principal=a lifeSeconds=1x", "lifeSeconds"},
      {"principal=a extension_x=1", "unknown key"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    tok = dc_oauth_unsecured_token(bad[i][0], now, err, sizeof(err));
    ok(!tok && strstr(err, bad[i][1]), "sasl.oauthbearer.config '%s' is "
       "refused naming '%s' (%s)", bad[i][0], bad[i][1], err);
    free(tok);
  }
}

int main(void) {
  snprintf(tmpdir, sizeof(tmpdir), "%s/test_sasl.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("Bail out! mkdtemp failed\n");
    return 1;
  }
  test_base64();
  test_names();
  test_client_vector();
  test_server_vector();
  char path[300];
  snprintf(path, sizeof(path), "%s/exchange.creds", tmpdir);
  test_exchanges(path);
  test_fuzz(path);
  test_credentials_file();
  test_oauthbearer();
  test_oauth_client();
  test_look_alike();
  test_oauth_limit();

  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0)
    diag("could not remove %s", tmpdir);
  return done_testing();
}
