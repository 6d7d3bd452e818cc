/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kerberos principal-to-local rules (lib/broker/auth/krb_rules.c): DEFAULT and
 * the default realm, Kafka's and Hadoop's documented examples and Kafka's
 * own unit tests, substitution (g, groups, empty matches), rule order and
 * separators, parse errors with their excerpts, malformed principals,
 * names that are not simple, empty or too long, a small output buffer,
 * concurrent use of one list, and a seeded run of mutated inputs.
 */
#include "broker/auth/krb_rules.h"
#include "../tap.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARSE_PREFIX "invalid Kerberos principal-to-local rule at '"

static char g_err[1024];

/* Parses rules and maps principal in realm: the short name, "error: "
 * with the apply error, or "parse: " with the parse error. */
static const char *map(const char *rules, const char *principal,
                       const char *realm) {
  static char res[2048];
  char out[DC_KRB_PRINCIPAL_MAX + 1];
  g_err[0] = '\0';
  dc_krb_rules_t *r = dc_krb_rules_parse(rules, g_err, sizeof(g_err));
  if (!r) {
    snprintf(res, sizeof(res), "parse: %s", g_err);
    return res;
  }
  int rc = dc_krb_rules_apply(r, principal, realm, out, sizeof(out), g_err,
                              sizeof(g_err));
  snprintf(res, sizeof(res), "%s%s", rc ? "error: " : "", rc ? g_err : out);
  dc_krb_rules_destroy(r);
  return res;
}

/* The parse error for rules, or "" when they parse. */
static const char *parse_error(const char *rules) {
  g_err[0] = '\0';
  dc_krb_rules_t *r = dc_krb_rules_parse(rules, g_err, sizeof(g_err));
  if (r) {
    dc_krb_rules_destroy(r);
    return "";
  }
  return g_err;
}

/* A string of n copies of c (n < 70000), in one of two buffers. */
static const char *repeat(char c, size_t n) {
  static char buf[2][70000];
  static int which;
  char *b = buf[which ^= 1];
  memset(b, c, n);
  b[n] = '\0';
  return b;
}

static void test_default(void) {
  is_str(map(NULL, "alice@EXAMPLE.COM", "EXAMPLE.COM"), "alice",
         "NULL rules are DEFAULT: alice@R -> alice");
  is_str(map("DEFAULT", "alice/host.example.com@EXAMPLE.COM",
             "EXAMPLE.COM"),
         "alice", "DEFAULT: alice/host@R -> alice");
  is_str(map("", "bob@OTHER.ORG", "EXAMPLE.COM"),
         "error: no principal-to-local rule applies to 'bob@OTHER.ORG' "
         "(rules: DEFAULT)",
         "DEFAULT refuses another realm, naming the principal and rules");
  ok(!strcmp(map("DEFAULT", "alice@example.com", "EXAMPLE.COM"),
             "error: no principal-to-local rule applies to "
             "'alice@example.com' (rules: DEFAULT)"),
     "the realm is compared case-sensitively");
  ok(!strncmp(map(NULL, "alice@EXAMPLE.COM", NULL), "error: no ", 10),
     "no default realm: DEFAULT refuses a principal with a realm");
  ok(!strncmp(map(NULL, "alice@EXAMPLE.COM", ""), "error: no ", 10),
     "  and so does an empty default realm");
  is_str(map(NULL, "alice/host", NULL), "alice",
         "no default realm: DEFAULT takes alice/host (no realm)");
  ok(!strncmp(map(NULL, "alice/host", "EXAMPLE.COM"), "error: no ", 10),
     "  which a default realm refuses");
  is_str(map("RULE:[2:$2]", "alice", "R"), "alice",
         "a bare primary is its own short name, whatever the rules");
  is_str(map("RULE:[1:x]/U", "al-ice.2", NULL), "al-ice.2",
         "  even when a 1-component rule would change it");

  dc_krb_rules_t *r = dc_krb_rules_parse(NULL, g_err, sizeof(g_err));
  is_str(dc_krb_rules_text(r), "DEFAULT", "the text of NULL rules");
  dc_krb_rules_destroy(r);
  r = dc_krb_rules_parse(" ,\n ,", g_err, sizeof(g_err));
  is_str(dc_krb_rules_text(r), "DEFAULT", "only separators mean DEFAULT");
  is_str(map(" ,\n ,", "carol@R", "R"), "carol", "  and act as DEFAULT");
  dc_krb_rules_destroy(r);
  r = dc_krb_rules_parse("RULE:[1:$1]/L,\nDEFAULT", g_err, sizeof(g_err));
  is_str(dc_krb_rules_text(r), "RULE:[1:$1]/L,\nDEFAULT",
         "the text of a list is kept as given");
  dc_krb_rules_destroy(r);
}

/* security.html, Hadoop's auth_to_local documentation. */
static void test_documented(void) {
  const char *mydomain = "RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//,DEFAULT";
  is_str(map(mydomain, "user@MYDOMAIN.COM", "EXAMPLE.COM"), "user",
         "Kafka's example: user@MYDOMAIN.COM -> user");
  is_str(map(mydomain, "user@EXAMPLE.COM", "EXAMPLE.COM"), "user",
         "  DEFAULT kept for the default realm");
  ok(!strncmp(map(mydomain, "user@OTHER.COM", "EXAMPLE.COM"), "error: no ",
              10),
     "  another realm is refused");
  const char *jd = "RULE:[2:$1](johndoe)s/^.*$/janedoe/";
  is_str(map(jd, "johndoe/admin@R", NULL), "janedoe",
         "RULE:[2:$1](johndoe)s/^.*$/janedoe/");
  ok(!strncmp(map(jd, "jim/admin@R", NULL), "error: no ", 10),
     "  another primary does not match");
  ok(!strncmp(map(jd, "johndoe@R", NULL), "error: no ", 10),
     "  nor does a 1-component name");
  is_str(map("RULE:[1:$1]/L", "JohnDoe@R", NULL), "johndoe",
         "RULE:[1:$1]/L lower-cases");
  is_str(map("RULE:[1:$1]/U", "JohnDoe@R", NULL), "JOHNDOE",
         "RULE:[1:$1]/U upper-cases");
  is_str(map("RULE:[1:$1]L", "JohnDoe@R", NULL), "johndoe",
         "  the '/' before L may be left out");
  const char *adm = "RULE:[2:$1;$2](^.*;admin$)s/;admin$//";
  is_str(map(adm, "alice/admin@R", NULL), "alice",
         "RULE:[2:$1;$2](^.*;admin$)s/;admin$//");
  ok(!strncmp(map(adm, "alice/host@R", NULL), "error: no ", 10),
     "  another instance does not match");
  ok(!strncmp(map("RULE:[2:$2](^.*;admin$)s/;admin$//", "alice/admin@R",
                  NULL),
              "error: no ", 10),
     "RULE:[2:$2](^.*;admin$)... does not match alice/admin");
}

/* Kafka's KerberosNameTest. */
static void test_kafka_tests(void) {
  const char *p = "RULE:[1:$1](App\\..*)s/App\\.(.*)/$1/g,"
                  "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g,DEFAULT";
  is_str(map(p, "App.service-name/example.com@REALM.COM", "REALM.COM"),
         "service-name", "testParse: App.service-name/example.com");
  is_str(map(p, "App.service-name@REALM.COM", "REALM.COM"), "service-name",
         "testParse: App.service-name");
  is_str(map(p, "user/host@REALM.COM", "REALM.COM"), "user",
         "testParse: user/host");
  static const char *const cases[][3] = {
      {"User@REALM.COM", "user", "USER"},
      {"TestABC/host@FOO.COM", "test", "TEST"},
      {"ABC_User_ABC/host@FOO.COM", "xyz_user_xyz", "XYZ_USER_XYZ"},
      {"App.SERVICE-name/example.com@REALM.COM", "service-name",
       "SERVICE-NAME"},
      {"User/root@REALM.COM", "user", "USER"}};
  for (int u = 0; u < 2; u++) {
    char rules[512];
    char c = u ? 'U' : 'L';
    snprintf(rules, sizeof(rules),
             "RULE:[1:$1]/%c,RULE:[2:$1](Test.*)s/ABC///%c,"
             "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/%c,"
             "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/%c,RULE:[2:$1]/%c,"
             "DEFAULT", c, c, c, c, c);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
      is_str(map(rules, cases[i][0], "REALM.COM"), cases[i][1 + u],
             "testTo%sCase: %s", u ? "Upper" : "Lower", cases[i][0]);
  }
  static const char *const invalid[] = {
      "default", "DEFAUL", "DEFAULT/L", "DEFAULT/g", "rule:[1:$1]",
      "rule:[1:$1]/L/U", "rule:[1:$1]/U/L", "rule:[1:$1]/LU",
      "RULE:[1:$1/L", "RULE:[1:$1]/l", "RULE:[1:$1]/L/U", "RULE:[1:$1]/LU",
      "RULE:[2:$1](ABC.*)s/ABC/XYZ/L/g"};
  for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
    ok(!strncmp(parse_error(invalid[i]), PARSE_PREFIX, strlen(PARSE_PREFIX)),
       "testInvalidRules: %s: %s", invalid[i], g_err);
  is_str(map("RULE:[1:$0]", "alice@$1", NULL), "$1",
         "testReplaceParameters: no recursion into the parameters");
}

static void test_substitution(void) {
  is_str(map("RULE:[1:$1]s/a/x/", "banana@R", NULL), "bxnana",
         "without g the first match is replaced");
  is_str(map("RULE:[1:$1]s/a/x/g", "banana@R", NULL), "bxnxnx",
         "with g every match");
  is_str(map("RULE:[1:$1](.*\\..*)s/(.*)\\.(.*)/$2_$1/", "john.smith@R",
             NULL),
         "smith_john", "$1 and $2 in the replacement");
  is_str(map("RULE:[1:$1]s/.*/[$0]/", "x@R", NULL), "[x]",
         "$0 is the whole match");
  is_str(map("RULE:[1:$1]s/^/\\$\\\\/", "a@R", NULL), "$\\a",
         "\\$ and \\\\ are literal");
  is_str(map("RULE:[1:$1]s/(a)|(b)/[$1$2]/g", "ab@R", NULL), "[a][b]",
         "a group that took no part adds nothing (Java)");
  is_str(map("RULE:[1:$1]s/(a)/$10/g", "ab@R", NULL), "a0b",
         "$10 with one group is $1 then '0' (Java)");
  is_str(map("RULE:[1:$1]s/b*/X/g", "abc@R", NULL), "XaXXcX",
         "empty matches with g advance as Java's replaceAll");
  is_str(map("RULE:[1:$1]s/x*/-/g", "abc@R", NULL), "-a-b-c-",
         "  an always-empty match between every byte");
  is_str(map("RULE:[1:$1]s/x*/-/", "abc@R", NULL), "-abc",
         "  and once without g");
  is_str(map("RULE:[1:$1]s/^a/-/g", "aaa@R", NULL), "-aa",
         "'^' matches only at the start, also with g");
  is_str(map("RULE:[1:$1](lic)", "alice@R", NULL),
         "error: no principal-to-local rule applies to 'alice@R' "
         "(rules: RULE:[1:$1](lic))",
         "the match pattern must match the whole base");
  is_str(map("RULE:[1:$1](.*lic.*)", "alice@R", NULL), "alice",
         "  as .*lic.* does");
  is_str(map("RULE:[1:$1](a|alice)", "alice@R", NULL), "alice",
         "  an alternation is anchored as a whole");
  ok(!strncmp(map("RULE:[1:$1](lice|b)", "alice@R", NULL), "error: no ",
              10),
     "  and does not match a suffix");
  is_str(map("RULE:[1:$1]s/a|ab/X/", "abc@R", NULL), "Xc",
         "POSIX leftmost-longest: a|ab takes ab (Java would take a)");
  is_str(map("RULE:[1:$1 $0](.* R)s/ R//", "a@R", NULL), "a",
         "whitespace inside a rule is kept (Kafka)");
  const char *order = "RULE:[1:$1](a.*)s/^/first-/,RULE:[1:$1]s/^/second-/";
  is_str(map(order, "alice@R", NULL), "first-alice", "the first rule wins");
  is_str(map(order, "bob@R", NULL), "second-bob",
         "  the next is tried when it does not match");
  const char *lines = "RULE:[2:$1](x.*)\n  RULE:[1:$1]s/$/-1/g \r\n\t"
                      "RULE:[2:$2],,DEFAULT";
  is_str(map(lines, "carol@R", "R"), "carol-1",
         "rules separated by newlines, blanks and commas");
  is_str(map(lines, "xavier/h@R", "R"), "xavier", "  the first of the list");
  is_str(map(lines, "dave/h@R", "R"), "h", "  the third");
  is_str(map("RULE:[2:$2]/U,DEFAULT", "dave/h@R", "R"), "H",
         "case folds the result of its rule only");
}

static void test_parse_errors(void) {
  is_str(parse_error("RULE:[x:$1]"),
         PARSE_PREFIX "RULE:[x...': expected the number of components "
                      "(1 or 2)",
         "a bad n, quoted up to the fault");
  is_str(parse_error("RULE:[3:$1]"),
         PARSE_PREFIX "RULE:[3...': the number of components must be 1 "
                      "or 2",
         "n = 3");
  ok(strstr(parse_error("RULE:[0:$1]"), "must be 1 or 2"), "n = 0: %s",
     g_err);
  ok(strstr(parse_error("RULE:[99999999999999999999:$1]"), "1 or 2"),
     "a huge n: %s", g_err);
  ok(strstr(parse_error("RULE:[:$1]"), "expected the number"),
     "an empty n: %s", g_err);
  ok(strstr(parse_error("RULE:[1$1]"), "expected ':'"), "no ':': %s", g_err);
  is_str(parse_error("RULE:[1:$1"),
         PARSE_PREFIX "RULE:[1:$1': missing ']' after the format",
         "a missing ']'");
  ok(strstr(parse_error("RULE:[1:$1,DEFAULT]"), "',' always ends a rule"),
     "a ',' inside a rule: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$2]"), "$2 is beyond the 1-component"),
     "$2 in a 1-component rule: %s", g_err);
  ok(strstr(parse_error("RULE:[2:$3]"), "$3 is beyond"), "$3: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$x]"), "followed by a component number"),
     "$x: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1$]"), "followed by a component number"),
     "a '$' at the end of the format: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](abc"), "missing ')'"),
     "a missing ')': %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/a"), "missing '/' after the pattern"),
     "s/a: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/a/b"),
            "missing '/' after the replacement"),
     "an unterminated s/a/b: %s", g_err);
  is_str(parse_error("DEFAULT, RULE:[1:$1]x ,DEFAULT"),
         PARSE_PREFIX "RULE:[1:$1]x...': unexpected text after the rule",
         "trailing junk, quoted from its rule's start");
  ok(strstr(parse_error("DEFAULTS"), "unexpected text"), "DEFAULTS: %s",
     g_err);
  ok(strstr(parse_error("DEFAULT RULE"), "expected DEFAULT or RULE"),
     "RULE alone: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](a[)"), "bad regular expression"),
     "a bad match pattern: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/(/x/"), "bad regular expression"),
     "a bad s/// pattern: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/a\\/x/"), "bad regular expression"),
     "a pattern ending in '\\': %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/\\d+/x/"), "'\\d' is not supported"),
     "Java's \\d is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](\\w+)"), "'\\w' is not supported"),
     "GNU's \\w is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](\\<a)"), "'\\<' is not supported"),
     "GNU's \\< is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/(a)\\1/x/"), "'\\1' is not"),
     "a back-reference is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](a[\\d])"), "inside [...]"),
     "a '\\' inside [...] is refused: %s", g_err);
  is_str(parse_error("RULE:[1:$1]([[:alpha:]]\\.*)"), "",
         "  but not after one: [[:alpha:]] is POSIX");
  is_str(parse_error("RULE:[1:$1]([]a]\\.)"), "",
         "  a ']' first in [...] is part of it");
  ok(strstr(parse_error("RULE:[1:$1](a[[b])"), "'[' inside [...]"),
     "a nested [...] is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](a[a-z&&b])"), "'&&' inside [...]"),
     "an intersection in [...] is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/a)b/x/"), "an unmatched ')'"),
     "an unmatched ')' is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](b**)"), "'**' is not supported"),
     "a doubled quantifier is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/(?i)a/b/"), "'(?' is Java syntax"),
     "(?i) is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](a.*?)"), "lazy or possessive"),
     "a lazy quantifier is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1](a++)"), "lazy or possessive"),
     "a possessive quantifier is refused: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/(a)/$2/"), "no group $2"),
     "a group the pattern lacks: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/a/$x/"), "group number"),
     "'$' without a number in the replacement: %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/a/b\\/"), "'\\' ends the replacement"),
     "a replacement ending in '\\': %s", g_err);
  ok(strstr(parse_error("RULE:[1:$1]s/(((((((((((a)))))))))))/$11/"),
            "above $9 are not supported"),
     "group references above $9: %s", g_err);
  is_str(parse_error("RULE:[1:$1]s/(((((((((((a)))))))))))/$9/"), "",
         "  $9 is fine");

  char *text = malloc(DC_KRB_RULES_MAX_TEXT + 2);
  for (int n = DC_KRB_RULES_MAX; n <= DC_KRB_RULES_MAX + 1; n++) {
    text[0] = '\0';
    for (int i = 0; i < n; i++)
      strcat(text, "DEFAULT,");
    if (n == DC_KRB_RULES_MAX)
      is_str(parse_error(text), "", "%d rules are fine", n);
    else
      is_str(parse_error(text), "invalid Kerberos principal-to-local rules: "
                                "more than 100 rules", "%d rules are not", n);
  }
  memset(text, ' ', DC_KRB_RULES_MAX_TEXT);
  memcpy(text, "DEFAULT", 7);
  text[DC_KRB_RULES_MAX_TEXT] = '\0';
  is_str(parse_error(text), "", "%d bytes of text are fine",
         DC_KRB_RULES_MAX_TEXT);
  strcat(text, " ");
  is_str(parse_error(text), "invalid Kerberos principal-to-local rules: "
                            "longer than 65536 bytes", "one more is not");
  free(text);
  dc_krb_rules_t *r = dc_krb_rules_parse("RULE:[", NULL, 0);
  ok(!r, "a NULL errstr is fine");
}

static void test_principals(void) {
  static const char *const bad[][2] = {
      {"a/b/c@R", "more than one '/'"}, {"@R", "an empty primary"},
      {"/b@R", "an empty primary"},     {"a@b@c", "more than one '@'"},
      {"a/@R", "an empty instance"},    {"a/", "an empty instance"},
      {"a@", "an empty realm"},         {"a@R/x", "a '/' in the realm"},
      {"", "empty"},                    {"a\nb@R", "a control character"},
      {"a@R\x7f", "a control character"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    map("DEFAULT", bad[i][0], "R");
    ok(!strncmp(g_err, "malformed Kerberos principal '", 30) &&
           strstr(g_err, bad[i][1]),
       "malformed: %s", g_err);
  }
  char p[DC_KRB_PRINCIPAL_MAX + 2];
  snprintf(p, sizeof(p), "%s@R", repeat('a', DC_KRB_PRINCIPAL_MAX - 2));
  is_str(map("DEFAULT", p, "R"), repeat('a', DC_KRB_PRINCIPAL_MAX - 2),
         "a principal of %d bytes is fine", DC_KRB_PRINCIPAL_MAX);
  snprintf(p, sizeof(p), "%s@R", repeat('a', DC_KRB_PRINCIPAL_MAX - 1));
  map("DEFAULT", p, "R");
  ok(strstr(g_err, "longer than 1024 bytes") && strlen(g_err) < 200,
     "one byte more is refused, and not quoted whole: %s", g_err);
  is_str(map("DEFAULT", "\xc3\xa9l\xc3\xa8ve@R", "R"), "\xc3\xa9l\xc3\xa8ve",
         "UTF-8 passes through");
  char out[8];
  ok(dc_krb_rules_apply(NULL, "a@R", "R", out, sizeof(out), g_err,
                        sizeof(g_err)) == -1,
     "NULL rules: %s", g_err);
}

static void test_results(void) {
  is_str(map("RULE:[2:$1/$2]", "a/b@R", NULL),
         "error: the rule 'RULE:[2:$1/$2]' made 'a/b', which is not a "
         "simple name",
         "a result with '/' is an error");
  ok(strstr(map("RULE:[1:$1@$0],DEFAULT", "a@R", "R"), "made 'a@R', which "
                                                        "is not a simple"),
     "  one with '@' too, and later rules are not tried");
  ok(strstr(map("RULE:[1:$1]s/.*//", "a@R", NULL), "made an empty name"),
     "an empty result is an error");
  ok(strstr(map("RULE:[1:$1]", "a@R", NULL), "error") == NULL,
     "  a non-empty one is not");
  char p[700];
  snprintf(p, sizeof(p), "%s@R", repeat('a', 600));
  ok(strstr(map("RULE:[1:$1$1]", p, NULL), "made a name longer than 1024"),
     "a base over the limit is an error");
  snprintf(p, sizeof(p), "%s@R", repeat('a', 300));
  ok(strstr(map("RULE:[1:$1]s/a/aaaa/g", p, NULL),
            "made a name longer than 1024"),
     "so is a substitution over it");

  dc_krb_rules_t *r = dc_krb_rules_parse("DEFAULT", g_err, sizeof(g_err));
  char out[16];
  memset(out, 'Z', sizeof(out));
  is_int(dc_krb_rules_apply(r, "alice@R", "R", out, 5, g_err, sizeof(g_err)),
         -1, "a 5-byte buffer cannot hold alice");
  ok(out[0] == 'Z' && out[4] == 'Z', "  nothing was written");
  is_str(g_err, "the short name of 'alice@R' (5 bytes) does not fit in 5 "
                "bytes", "  the error says so");
  is_int(dc_krb_rules_apply(r, "alice", "R", out, 5, NULL, 0), -1,
         "  the same for a bare primary (and a NULL errstr)");
  is_int(dc_krb_rules_apply(r, "alice@R", "R", out, 6, g_err, sizeof(g_err)),
         0, "a 6-byte buffer can");
  is_str(out, "alice", "  and holds it");
  is_int(dc_krb_rules_apply(r, "alice@R", "R", NULL, 0, g_err, sizeof(g_err)),
         -1, "a NULL buffer is an error");
  dc_krb_rules_destroy(r);
}

/* ---- concurrency ------------------------------------------------------- */

static const dc_krb_rules_t *g_shared;

static void *worker(void *arg) {
  intptr_t bad = 0;
  char out[64], err[256], p[64];
  for (int i = 0; i < 2000; i++) {
    int n = (int)(intptr_t)arg * 10000 + i;
    snprintf(p, sizeof(p), "App.u%d/h%d@R", n, i);
    char want[32];
    snprintf(want, sizeof(want), "U%d", n);
    if (dc_krb_rules_apply(g_shared, p, "R", out, sizeof(out), err,
                           sizeof(err)) ||
        strcmp(out, want))
      bad++;
  }
  return (void *)bad;
}

static void test_threads(void) {
  dc_krb_rules_t *r = dc_krb_rules_parse(
      "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/U,DEFAULT", g_err,
      sizeof(g_err));
  pthread_t t[4];
  intptr_t bad = 0;
  g_shared = r;
  for (intptr_t i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < 4; i++) {
    void *b;
    pthread_join(t[i], &b);
    bad += (intptr_t)b;
  }
  is_int(bad, 0, "4 threads applying one list at once all get their names");
  dc_krb_rules_destroy(r);
}

/* ---- mutated inputs ---------------------------------------------------- */

/* Fixed-seed xorshift64*: the run is identical every time. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}
static size_t rng_below(size_t n) { return (size_t)(rng() % n); }

static const char *const seed_rules[] = {
    "DEFAULT",
    "RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//",
    "RULE:[2:$1](johndoe)s/^.*$/janedoe/",
    "RULE:[1:$1]/L",
    "RULE:[2:$1;$2](^.*;admin$)s/;admin$//",
    "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/U",
    "RULE:[1:$1]s/x*/-/g",
    "RULE:[2:$2$1$0]s/(a|b)(c)?/$2$1/g",
    "RULE:[1:$0$1](.*)s/[^a-z]//gL",
};
static const char *const seed_names[] = {
    "alice@R", "alice/host@R", "johndoe/admin@MYDOMAIN.COM",
    "App.x/h@R", "bob", "a/b", "xx@xx", "abcabc/cab@ABC",
};
static const char alphabet[] = "aAbcx/@.$\\()[]^*+?|,: \nsgLU019-_";

/* Copies src into dst (cap bytes) with a few random edits. */
static void mutate(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src) < cap - 1 ? strlen(src) : cap - 1;
  memcpy(dst, src, n);
  for (size_t e = rng_below(4); e > 0; e--) {
    size_t at = n ? rng_below(n + 1) : 0, op = rng_below(3);
    char c = alphabet[rng_below(sizeof(alphabet) - 1)];
    if (op == 0 && n + 1 < cap) { /* insert */
      memmove(dst + at + 1, dst + at, n - at);
      dst[at] = c;
      n++;
    } else if (op == 1 && at < n) { /* delete */
      memmove(dst + at, dst + at + 1, n - at - 1);
      n--;
    } else if (at < n) {
      dst[at] = c;
    }
  }
  dst[n] = '\0';
}

/* A list of 1..3 mutated seed rules. */
static void random_rules(char *dst, size_t cap) {
  dst[0] = '\0';
  for (size_t k = 1 + rng_below(3); k > 0; k--) {
    char one[128];
    mutate(one, sizeof(one), seed_rules[rng_below(sizeof(seed_rules) /
                                                  sizeof(seed_rules[0]))]);
    size_t len = strlen(dst);
    snprintf(dst + len, cap - len, "%s%s", len ? (rng() & 1 ? "," : "\n")
                                               : "", one);
  }
}

static void test_mutated(void) {
  int parsed = 0, mapped = 0, refused = 0, broken = 0;
  for (int i = 0; i < 4000; i++) {
    char rules[512], name[128], out[32], err[512];
    random_rules(rules, sizeof(rules));
    dc_krb_rules_t *r = dc_krb_rules_parse(rules, err, sizeof(err));
    if (!r) {
      broken += err[0] == '\0';
      continue;
    }
    parsed++;
    for (int j = 0; j < 8; j++) {
      mutate(name, sizeof(name),
             seed_names[rng_below(sizeof(seed_names) / sizeof(seed_names[0]))]);
      size_t size = 1 + rng_below(sizeof(out));
      err[0] = '\0';
      if (dc_krb_rules_apply(r, name, rng() & 1 ? "R" : NULL, out, size, err,
                             sizeof(err)) == 0) {
        mapped++;
        broken += !out[0] || strpbrk(out, "/@") || strlen(out) >= size;
      } else {
        refused++;
        broken += err[0] == '\0';
      }
    }
    dc_krb_rules_destroy(r);
  }
  is_int(broken, 0, "4000 mutated lists: every success a simple name that "
                    "fits, every failure a sentence");
  ok(parsed > 500 && mapped > 1000 && refused > 1000,
     "  both paths were taken (%d lists parsed, %d names mapped, %d refused)",
     parsed, mapped, refused);
}

int main(void) {
  test_default();
  test_documented();
  test_kafka_tests();
  test_substitution();
  test_parse_errors();
  test_principals();
  test_results();
  test_threads();
  test_mutated();
  return done_testing();
}
