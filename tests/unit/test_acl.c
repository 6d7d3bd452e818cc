/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ACL file parser and evaluator (lib/broker/acl.{h,c}):
 *   - every rule form parses (principals, operations, resources, quoting,
 *     comments, blank lines, CRLF, an empty file);
 *   - bad lines are refused with "FILE:LINE: reason", the whole file with
 *     them;
 *   - evaluation: no authorizer, super users (with commas inside DNs),
 *     deny beats allow, alter implies describe (for allow only), prefixes
 *     and <default>, user entities (plain and user/client), broker, '*',
 *     User:*, the default own-client-id / own-user rule, and the reasons.
 */
#include "broker/auth/acl.h"
#include "codec/proto.h"
#include "../tap.h"
#include "../testutil.h"

#include <stdio.h>
#include <string.h>

static dc_acl_t *parse(const char *text, char *err, size_t errsz) {
  return dc_acl_parse(text, strlen(text), "test.acl", err, errsz);
}

/* ---- parsing ------------------------------------------------------------ */

static void test_parse_ok(void) {
  char err[512] = "";
  dc_acl_t *a = parse("", err, sizeof(err));
  ok(a && dc_acl_rule_count(a) == 0, "empty text: no rules");
  dc_acl_destroy(a);
  a = parse("\n  \n# only a comment\n\t# another\n", err, sizeof(err));
  ok(a && dc_acl_rule_count(a) == 0, "blank lines and comments: no rules");
  dc_acl_destroy(a);

  static const char *const forms[] = {
      "allow User:alice describe client:payments",
      "deny User:bob alter client:pay*",
      "allow User:* all client:<default>",
      "allow User:ops alter client:*",
      "allow User:alice describe user:alice",
      "allow User:ops all user:team-*",
      "allow User:ops alter user:*",
      "allow User:ops alter broker",
      "allow User:root all *",
      "ALLOW User:x DESCRIBE Client:y",
      "Deny User:x All BROKER",
      "allow \"User:CN=alice smith,O=x\" describe user:*",
      "allow User:q describe \"client:with space\" # trailing comment",
      "allow User:a#b describe client:c#d",
      "allow \"User:quote\\\"d\" describe \"client:back\\\\slash\"",
  };
  for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
    a = parse(forms[i], err, sizeof(err));
    ok(a && dc_acl_rule_count(a) == 1, "parses: %s%s%s", forms[i],
       a ? "" : " -> ", a ? "" : err);
    dc_acl_destroy(a);
  }
  const char *file = "# dynconf ACL\r\n"
                     "allow User:alice describe client:payments\r\n"
                     "\r\n"
                     "deny User:bob all *   # bob is out\r\n"
                     "allow User:* describe client:public-*";
  a = parse(file, err, sizeof(err));
  ok(a && dc_acl_rule_count(a) == 3,
     "a file with CRLF, comments and no final newline: 3 rules (%s)", err);
  dc_acl_destroy(a);
}

static void test_parse_errors(void) {
  static const struct {
    const char *text;
    int line;
    const char *says;
  } bad[] = {
      {"permit User:a describe client:x", 1, "allow or deny"},
      {"allow bob describe client:x", 1, "User:NAME"},
      {"allow Group:x describe client:x", 1, "User:NAME"},
      {"allow User: describe client:x", 1, "User:NAME"},
      {"allow User:a write client:x", 1, "unknown operation 'write'"},
      {"allow User:a describe topic:x", 1, "unknown resource 'topic:x'"},
      {"allow User:a describe client", 1, "unknown resource"},
      {"allow User:a describe brokers", 1, "unknown resource"},
      {"allow User:a describe client:", 1, "empty name"},
      {"allow User:a describe client:a*b", 1, "'*' may only end"},
      {"allow User:a describe user:<default>", 1, "no default user"},
      {"allow User:a describe client:<default>*", 1, "not a prefix"},
      {"allow User:a describe client:x extra", 1, "too many words"},
      {"allow User:a describe", 1, "incomplete rule"},
      {"allow", 1, "incomplete rule"},
      {"allow \"User:a describe client:x", 1, "unterminated quote"},
      {"allow \"User:a\"x describe client:x", 1, "after a closing quote"},
      {"# c\n\nallow User:a describe client:x\ndeny User:b nope client:x", 4,
       "unknown operation 'nope'"},
      {"allow User:a describe client:x\r\n\r\n\r\nallow User:b x y\r\n", 4,
       "unknown operation"},
  };
  char err[512];
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err[0] = '\0';
    dc_acl_t *a = parse(bad[i].text, err, sizeof(err));
    char want[32];
    snprintf(want, sizeof(want), "test.acl:%d: ", bad[i].line);
    ok(!a && !strncmp(err, want, strlen(want)) && strstr(err, bad[i].says),
       "refused at line %d (%s): %s", bad[i].line, bad[i].says, err);
    dc_acl_destroy(a);
  }
  /* A NUL byte inside a line. */
  const char nul[] = "allow User:a describe client:x\nallow User:a\0 x";
  err[0] = '\0';
  dc_acl_t *a = dc_acl_parse(nul, sizeof(nul) - 1, "f", err, sizeof(err));
  ok(!a && strstr(err, "f:2: NUL"), "NUL byte refused on its line: %s", err);
  dc_acl_destroy(a);
  /* A name longer than 255 bytes. */
  char longrule[400];
  snprintf(longrule, sizeof(longrule), "allow User:a describe client:%0300d",
           0);
  a = parse(longrule, err, sizeof(err));
  ok(!a && strstr(err, "longer than 255"), "a 300-byte name: %s", err);
  dc_acl_destroy(a);
}

static void test_load(void) {
  char dir[256], path[300], err[512];
  if (!ok(dc_tu_tmpdir(dir, sizeof(dir)) == 0, "scratch dir"))
    return;
  snprintf(path, sizeof(path), "%s/acl.txt", dir);
  dc_acl_t *a = dc_acl_load(path, err, sizeof(err));
  ok(!a && strstr(err, path) && strstr(err, "No such file"),
     "missing file: %s", err);
  FILE *f = fopen(path, "w");
  fclose(f);
  a = dc_acl_load(path, err, sizeof(err));
  ok(a && dc_acl_rule_count(a) == 0, "empty file: loads, no rules");
  dc_acl_destroy(a);
  f = fopen(path, "w");
  fputs("allow User:a describe client:x\nallow User:b alter clients:y\n", f);
  fclose(f);
  a = dc_acl_load(path, err, sizeof(err));
  char want[400];
  snprintf(want, sizeof(want), "%s:2: unknown resource 'clients:y'", path);
  ok(!a && !strncmp(err, want, strlen(want)), "bad file: error is PATH:LINE: "
                                                "%s",
     err);
  dc_acl_destroy(a);
  /* A big file (several read chunks) with the bad rule at the end. */
  f = fopen(path, "w");
  for (int i = 0; i < 3000; i++)
    fprintf(f, "allow User:u%d describe client:c%d\n", i, i);
  fputs("allow User:z describe nothing\n", f);
  fclose(f);
  a = dc_acl_load(path, err, sizeof(err));
  ok(!a && strstr(err, ":3001: unknown resource"),
     "big file: error on line 3001: %s", err);
  dc_acl_destroy(a);
  dc_tu_rmrf(dir);
}

/* ---- evaluation --------------------------------------------------------- */

static const char *const RULES =
    "allow User:alice alter client:payments\n"        /* 1 */
    "allow User:alice describe client:pay*\n"         /* 2 */
    "deny User:alice describe client:payroll\n"       /* 3 */
    "allow User:bob describe client:*\n"              /* 4 */
    "deny User:bob alter client:*\n"                  /* 5 */
    "allow User:bob alter client:bob-*\n"             /* 6 */
    "allow User:carol all client:<default>\n"         /* 7 */
    "allow User:carol alter user:team-*\n"            /* 8 */
    "allow User:ops all broker\n"                     /* 9 */
    "allow User:root all *\n"                         /* 10 */
    "allow User:* describe client:public\n"           /* 11 */
    "deny User:* all client:secret\n"                 /* 12 */
    "allow \"User:CN=dan smith,O=x\" all user:*\n"    /* 13 */
    "allow User:erin alter client:pre*\n"             /* 14 */
    "allow User:erin describe user:alice\n";          /* 15 */

typedef struct ev {
  const char *principal;
  int op;
  int8_t type;
  const char *name;
  const char *client_id;
  bool want;
  const char *why; /* substring of the reason */
} ev_t;

#define D DC_ACL_DESCRIBE
#define A DC_ACL_ALTER
#define CL DC_RES_CLIENT
#define US DC_RES_USER
#define BR DC_RES_BROKER

static void test_evaluate(void) {
  char err[512] = "";
  dc_acl_t *acl = parse(RULES, err, sizeof(err));
  if (!ok(acl && dc_acl_rule_count(acl) == 15, "rule set parses: %s", err))
    return;
  static const ev_t cases[] = {
      /* Literal allow, and alter implies describe. */
      {"User:alice", A, CL, "payments", NULL, true, "line 1"},
      {"User:alice", D, CL, "payments", NULL, true, "line 1"},
      /* Prefix allow; a deny beats it; the prefix does not alter. */
      {"User:alice", D, CL, "pay-eu", NULL, true, "line 2"},
      {"User:alice", A, CL, "pay-eu", NULL, false, "no ACL rule allows it"},
      {"User:alice", D, CL, "payroll", NULL, false, "line 3"},
      {"User:alice", D, CL, "pa", NULL, false, "no ACL rule"},
      /* Prefixes never reach <default>; client:* does. */
      {"User:alice", D, CL, "<default>", NULL, false, "no ACL rule"},
      {"User:bob", D, CL, "<default>", NULL, true, "line 4"},
      /* A deny of alter does not deny describe; deny beats a later allow. */
      {"User:bob", D, CL, "bob-1", NULL, true, "line 4"},
      {"User:bob", A, CL, "bob-1", NULL, false, "line 5"},
      {"User:bob", A, CL, "anything", NULL, false, "line 5"},
      /* <default> by name. */
      {"User:carol", A, CL, "<default>", NULL, true, "line 7"},
      {"User:carol", D, CL, "<default>", NULL, true, "line 7"},
      {"User:carol", D, CL, "other", NULL, false, "no ACL rule"},
      /* User entities: prefix, plain and user/client. */
      {"User:carol", A, US, "team-a", NULL, true, "line 8"},
      {"User:carol", A, US, "team-a/app", NULL, true, "line 8"},
      {"User:carol", A, US, "teams", NULL, false, "no ACL rule"},
      /* Describe of user/client needs the client too. */
      {"User:carol", D, US, "team-a/app", NULL, false, "on client 'app'"},
      {"User:carol", D, US, "team-a/app", "app", true, "own client-id"},
      /* Broker. */
      {"User:ops", A, BR, "1", NULL, true, "line 9"},
      {"User:ops", D, BR, "1", NULL, true, "line 9"},
      {"User:alice", D, BR, "1", NULL, false, "no ACL rule"},
      {"User:ops", D, CL, "x", NULL, false, "no ACL rule"},
      /* '*' covers every kind. */
      {"User:root", A, CL, "x", NULL, true, "line 10"},
      {"User:root", A, US, "anyone/x", NULL, true, "line 10"},
      {"User:root", A, BR, "1", NULL, true, "line 10"},
      /* User:* rules; a deny for everyone beats root's allow. */
      {"User:zed", D, CL, "public", NULL, true, "line 11"},
      {"User:zed", A, CL, "public", NULL, false, "no ACL rule"},
      {"User:root", D, CL, "secret", NULL, false, "line 12"},
      {NULL, D, CL, "public", NULL, true, "line 11"},
      /* A principal with spaces; user names are decoded from type 10. */
      {"User:CN=dan smith,O=x", A, US, "CN=dan%20smith,O=x", NULL, true,
       "line 13"},
      {"User:CN=dan smith,O=x", A, CL, "c", NULL, false, "no ACL rule"},
      /* The default rule: describe own client-id and own user only. */
      {"User:zed", D, CL, "app-7", "app-7", true, "own client-id"},
      {"User:zed", A, CL, "app-7", "app-7", false, "no ACL rule"},
      {"User:zed", D, CL, "app-8", "app-7", false, "no ACL rule"},
      {"User:zed", D, CL, "app-7", NULL, false, "no ACL rule"},
      {"User:zed", D, US, "zed", NULL, true, "own user"},
      {"User:zed", A, US, "zed", NULL, false, "no ACL rule"},
      {"User:zed", D, US, "zed/app-7", "app-7", true, "own client-id"},
      {"User:zed", D, US, "zed/app-8", "app-7", false, "on client 'app-8'"},
      {"User:zed", D, US, "alice", NULL, false, "no ACL rule"},
      {"User:zed", D, US, "alice/app-7", "app-7", false, "no ACL rule"},
      {NULL, D, US, "ANONYMOUS", NULL, true, "own user"},
      {"User:CN=z,O=y", D, US, "CN=z,O=y/c%2F1", "c/1", true, "own"},
      /* A rule on user:alice lets erin read alice's entities; for a
       * user/client one she still needs the client. */
      {"User:erin", D, US, "alice", NULL, true, "line 15"},
      {"User:erin", D, US, "alice/pre-1", NULL, true, "line 14"},
      {"User:erin", D, US, "alice/x", NULL, false, "on client 'x'"},
      /* Malformed type-10 names and foreign types are denied. */
      {"User:root", A, US, "a/b/c", NULL, false, "bad name"},
      {"User:root", A, US, "a%zz", NULL, false, "bad name"},
      {"User:root", D, DC_RES_TOPIC, "t", NULL, false, "not a resource"},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const ev_t *c = &cases[i];
    char why[512] = "";
    bool got = dc_acl_authorize(acl, NULL, c->principal, c->op, c->type,
                                c->name, c->client_id, why, sizeof(why));
    if (!ok(got == c->want && strstr(why, c->why),
            "%s %s %d:'%s' (client id %s): %s -- %s",
            c->principal ? c->principal : "(null)",
            c->op == A ? "alter" : "describe", c->type, c->name,
            c->client_id ? c->client_id : "-", c->want ? "allowed" : "denied",
            why))
      bad++;
  }
  is_int(bad, 0, "all %zu evaluation cases", sizeof(cases) / sizeof(cases[0]));

  /* Denial sentences as clients see them. */
  char why[512];
  dc_acl_authorize(acl, NULL, "User:bob", A, CL, "payments", NULL, why,
                   sizeof(why));
  is_str(why,
         "principal User:bob is not authorized to alter client 'payments' "
         "(denied by ACL rule at line 5)",
         "denial names principal, operation, resource and rule");
  dc_acl_authorize(acl, NULL, NULL, A, US, "a%2Fb/c", NULL, why, sizeof(why));
  is_str(why,
         "principal User:ANONYMOUS is not authorized to alter user 'a/b' "
         "with client-id 'c' (no ACL rule allows it)",
         "user/client denial with decoded names, anonymous principal");
  ok(!dc_acl_authorize(acl, NULL, "User:x", A, BR, "1", NULL, NULL, 0),
     "why may be NULL");

  /* Super users pass everything, even an explicit deny. */
  const char *su = " User:admin ,User:CN=ops,O=x;User:root2";
  ok(dc_acl_authorize(acl, su, "User:admin", A, CL, "secret", NULL, why,
                      sizeof(why)) &&
         !strcmp(why, "super user"),
     "super user beats a deny: %s", why);
  ok(dc_acl_authorize(acl, su, "User:CN=ops,O=x", A, BR, "1", NULL, why,
                      sizeof(why)),
     "super user with a comma inside its DN");
  ok(dc_acl_authorize(acl, su, "User:root2", A, US, "u", NULL, why,
                      sizeof(why)),
     "';' separates super users");
  ok(!dc_acl_authorize(acl, su, "User:CN=ops", A, BR, "1", NULL, why,
                       sizeof(why)),
     "a DN's first part alone is not the super user");
  ok(!dc_acl_authorize(acl, su, "User:admi", A, BR, "1", NULL, why,
                       sizeof(why)),
     "no prefix match on super users");
  dc_acl_destroy(acl);

  /* No authorizer: everything is allowed, super users or not. */
  ok(dc_acl_authorize(NULL, NULL, "User:nobody", A, CL, "x", NULL, why,
                      sizeof(why)) &&
         strstr(why, "no authorizer"),
     "no ACL: allowed");
  /* An empty rule set leaves just the default rule. */
  acl = parse("", err, sizeof(err));
  ok(!dc_acl_authorize(acl, NULL, "User:a", A, CL, "x", "x", why,
                       sizeof(why)) &&
         dc_acl_authorize(acl, NULL, "User:a", D, CL, "x", "x", why,
                          sizeof(why)),
     "empty ACL file: own client describe only");
  dc_acl_destroy(acl);
}

static void test_super_users(void) {
  static const struct {
    const char *list, *principal;
    bool want;
  } cases[] = {
      {NULL, "User:a", false},
      {"", "User:a", false},
      {"User:a", "User:a", true},
      {"User:a", NULL, false},
      {"User:a,User:b", "User:b", true},
      {"User:a, User:b", "User:b", true},
      {"User:a ;  User:b ", "User:b", true},
      {"User:CN=x,O=y,User:z", "User:CN=x,O=y", true},
      {"User:CN=x,O=y,User:z", "User:z", true},
      {"User:CN=x,O=y,User:z", "User:CN=x", false},
      {"User:CN=x,O=y,User:z", "O=y", false},
      {"User:CN=x, O=y", "User:CN=x, O=y", true},
      {",,;User:a;;", "User:a", true},
      {"User:ab", "User:a", false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    is_int(dc_acl_is_super_user(cases[i].list, cases[i].principal),
           cases[i].want, "super users '%s' %s '%s'",
           cases[i].list ? cases[i].list : "(null)",
           cases[i].want ? "include" : "exclude",
           cases[i].principal ? cases[i].principal : "(null)");
}

int main(void) {
  test_parse_ok();
  test_parse_errors();
  test_load();
  test_evaluate();
  test_super_users();
  return done_testing();
}
