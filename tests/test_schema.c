/*
 * The client config schema (lib/common/schema.c, SPEC §3): every key is
 * found, dc_schema_validate() for each type and its edge cases, the error
 * sentences, dc_parse_int64(), and the public error-name table.
 */
#include "common/schema.h"
#include "dynconf.h"
#include "tap.h"

#include <stdint.h>
#include <string.h>

/* Validates and checks the verdict; on a rejection also checks the error
 * sentence is non-empty and names the key (an operator must see which key
 * failed). */
static void check(const char *key, const char *value, bool want) {
  const dc_schema_entry_t *e = dc_schema_find(key);
  if (!ok(e != NULL, "schema has %s", key))
    return;
  char err[256];
  memset(err, 'x', sizeof(err));
  err[sizeof(err) - 1] = '\0';
  bool got = dc_schema_validate(e, value, err, sizeof(err));
  if (!ok(got == want, "%s=\"%s\" is %s", key, value,
          want ? "valid" : "rejected"))
    diag("  errstr: %s", err);
  if (!want)
    ok(err[0] && err[0] != 'x' && strstr(err, key),
       "  error for %s=\"%s\" names the key: %s", key, value, err);
}

static void test_table(void) {
  static const struct {
    const char *name;
    dc_config_type_t type;
    int applies;
    bool default_allowed;
  } want[] = {
      {"acks", DC_TYPE_STRING, DC_APPLIES_PRODUCER, true},
      {"session.timeout.ms", DC_TYPE_INT, DC_APPLIES_CONSUMER, true},
      {"heartbeat.interval.ms", DC_TYPE_INT, DC_APPLIES_CONSUMER, true},
      {"linger.ms", DC_TYPE_DOUBLE, DC_APPLIES_PRODUCER, false},
      {"batch.size", DC_TYPE_INT, DC_APPLIES_PRODUCER, false},
      {"batch.num.messages", DC_TYPE_INT, DC_APPLIES_PRODUCER, false},
      {"compression.type", DC_TYPE_STRING, DC_APPLIES_PRODUCER, false},
      {"message.timeout.ms", DC_TYPE_INT, DC_APPLIES_PRODUCER, false},
      {"request.timeout.ms", DC_TYPE_INT, DC_APPLIES_PRODUCER, false},
      {"max.poll.interval.ms", DC_TYPE_INT, DC_APPLIES_CONSUMER, false},
      {"debug", DC_TYPE_LIST, DC_APPLIES_PRODUCER | DC_APPLIES_CONSUMER,
       false},
      {"partition.assignment.strategy", DC_TYPE_LIST, DC_APPLIES_CONSUMER,
       false},
  };
  size_t nwant = sizeof(want) / sizeof(want[0]);
  for (size_t i = 0; i < nwant; i++) {
    const dc_schema_entry_t *e = dc_schema_find(want[i].name);
    if (!ok(e != NULL, "SPEC §3 key %s is in the schema", want[i].name))
      continue;
    ok(!strcmp(e->name, want[i].name), "  %s: name", want[i].name);
    is_int(e->type, want[i].type, "  %s: type", want[i].name);
    is_int(e->applies, want[i].applies, "  %s: applies to", want[i].name);
    is_int(e->default_allowed, want[i].default_allowed,
           "  %s: in the default allow list", want[i].name);
  }

  /* Every table entry is findable by name and is itself (no shadowing
   * duplicate earlier in the table), and is documented. */
  size_t n;
  const dc_schema_entry_t *all = dc_schema_all(&n);
  is_int(n, nwant, "schema has exactly the SPEC §3 keys");
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (dc_schema_find(all[i].name) != &all[i]) {
      diag("  %s: find returns another entry", all[i].name);
      bad++;
    }
    if (!all[i].doc || !all[i].doc[0]) {
      diag("  %s: no documentation", all[i].name);
      bad++;
    }
    if ((all[i].type == DC_TYPE_INT || all[i].type == DC_TYPE_LONG ||
         all[i].type == DC_TYPE_DOUBLE) &&
        all[i].min > all[i].max) {
      diag("  %s: min > max", all[i].name);
      bad++;
    }
  }
  ok(bad == 0, "every entry is found by name, documented, with sane bounds");

  ok(dc_schema_find("no.such.key") == NULL, "unknown key not found");
  ok(dc_schema_find("") == NULL, "empty key not found");
  ok(dc_schema_find("ACKS") == NULL, "lookup is case-sensitive");
  ok(dc_schema_find("acks ") == NULL, "no prefix match");
  ok(dc_schema_find("ack") == NULL, "no partial match");

  /* SPEC §3 ranges. */
  const dc_schema_entry_t *s = dc_schema_find("session.timeout.ms");
  const dc_schema_entry_t *h = dc_schema_find("heartbeat.interval.ms");
  ok(s && s->min == 1 && s->max == 3600000, "session.timeout.ms 1..3600000");
  ok(h && h->min == 1 && h->max == 3600000,
     "heartbeat.interval.ms 1..3600000");
}

static void test_ints(void) {
  const char *k = "session.timeout.ms";
  check(k, "1", true);
  check(k, "45000", true);
  check(k, "3600000", true);
  check(k, "0", false);
  check(k, "-1", false);
  check(k, "3600001", false);
  check(k, "abc", false);
  check(k, "", false);
  check(k, "1.5", false);
  check(k, "+5", false);
  check(k, " 5", false);
  check(k, "5 ", false);
  check(k, "5x", false);
  check(k, "0x10", false);
  check(k, "99999999999999999999", false);   /* overflows int64 */
  check(k, "-99999999999999999999", false);
  check(k, "9223372036854775807", false);    /* fits int64, above max */
  check(k, "007", true);                     /* decimal, leading zeros */

  check("heartbeat.interval.ms", "3000", true);
  check("heartbeat.interval.ms", "3600001", false);
  check("batch.size", "2147483647", true);
  check("batch.size", "2147483648", false);
  check("batch.size", "0", false);
  check("message.timeout.ms", "0", true); /* 0 = infinite */
  check("batch.num.messages", "1000000", true);
  check("batch.num.messages", "1000001", false);
  check("request.timeout.ms", "900000", true);
  check("request.timeout.ms", "900001", false);
  check("max.poll.interval.ms", "86400000", true);
  check("max.poll.interval.ms", "86400001", false);
}

static void test_enums(void) {
  check("acks", "all", true);
  check("acks", "-1", true);
  check("acks", "0", true);
  check("acks", "1", true);
  check("acks", "7", false);
  check("acks", "2", false);
  check("acks", "ALL", false);
  check("acks", "al", false);  /* prefix of an allowed value */
  check("acks", "alll", false); /* allowed value is a prefix */
  check("acks", "all ", false);
  check("acks", "", false);

  static const char *const codecs[] = {"none", "gzip", "snappy", "lz4",
                                       "zstd"};
  for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
    check("compression.type", codecs[i], true);
  check("compression.type", "lz5", false);
  check("compression.type", "GZIP", false);
  check("compression.type", "", false);
  check("compression.type", "gzip,lz4", false);
}

static void test_lists(void) {
  const char *d = "debug";
  check(d, "all", true);
  check(d, "broker", true);
  check(d, "broker,topic,msg", true);
  check(d, "cgrp,consumer,fetch", true);
  check(d, "", false);
  check(d, "broker,,topic", false); /* empty item */
  check(d, "broker,", false);       /* trailing comma */
  check(d, ",broker", false);       /* leading comma */
  check(d, ",", false);
  check(d, "bogus", false);
  check(d, "broker,bogus", false);
  check(d, "brok", false);          /* prefix of an item */
  check(d, "brokers", false);       /* item is a prefix */
  check(d, "broker, topic", false); /* spaces are not trimmed */

  const char *p = "partition.assignment.strategy";
  check(p, "range", true);
  check(p, "roundrobin", true);
  check(p, "cooperative-sticky", true);
  check(p, "range,roundrobin", true);
  check(p, "sticky", false);
  check(p, "range,", false);
  check(p, "", false);
  check(p, "range,,roundrobin", false);
  check(p, "range,sticky", false);

  /* The error names the offending item. */
  char err[256] = "";
  ok(!dc_schema_validate(dc_schema_find(p), "range,sticky", err, sizeof(err)) &&
         strstr(err, "sticky"),
     "list error names the bad item: %s", err);
}

static void test_double(void) {
  const char *k = "linger.ms";
  check(k, "0", true);
  check(k, "5", true);
  check(k, "0.5", true);
  check(k, "900000", true);
  check(k, "1e3", true);
  check(k, "-1", false);
  check(k, "-0.001", false);
  check(k, "900000.5", false);
  check(k, "abc", false);
  check(k, "", false);
  check(k, "5ms", false);
  check(k, "5 ", false);
  check(k, "nan", false);
  check(k, "inf", false);
  check(k, "1e999", false); /* ERANGE */
}

/* Types the table does not use today are still handled. */
static void test_other_types(void) {
  static const char *const items[] = {"a", "b", NULL};
  dc_schema_entry_t b = {"x.bool", DC_TYPE_BOOLEAN, 0, 0, NULL, 0, false, "d"};
  dc_schema_entry_t l = {"x.long", DC_TYPE_LONG, -5, 5, NULL, 0, false, "d"};
  dc_schema_entry_t s = {"x.str", DC_TYPE_STRING, 0, 0, NULL, 0, false, "d"};
  dc_schema_entry_t li = {"x.list", DC_TYPE_LIST, 0, 0, NULL, 0, false, "d"};
  dc_schema_entry_t lr = {"x.rlist", DC_TYPE_LIST, 0, 0, items, 0, false, "d"};
  dc_schema_entry_t u = {"x.weird", (dc_config_type_t)99, 0, 0, NULL, 0, false,
                         "d"};
  char err[128];
  ok(dc_schema_validate(&b, "true", err, sizeof(err)), "boolean true");
  ok(dc_schema_validate(&b, "false", err, sizeof(err)), "boolean false");
  err[0] = '\0';
  ok(!dc_schema_validate(&b, "yes", err, sizeof(err)) && strstr(err, "x.bool"),
     "boolean yes rejected: %s", err);
  ok(!dc_schema_validate(&b, "TRUE", err, sizeof(err)), "boolean TRUE rejected");
  ok(dc_schema_validate(&l, "-5", err, sizeof(err)), "long at min");
  ok(dc_schema_validate(&l, "5", err, sizeof(err)), "long at max");
  ok(!dc_schema_validate(&l, "-6", err, sizeof(err)), "long below min");
  ok(!dc_schema_validate(&l, "6", err, sizeof(err)), "long above max");
  ok(dc_schema_validate(&s, "anything at all", err, sizeof(err)),
     "string without allowed values accepts anything");
  ok(dc_schema_validate(&s, "", err, sizeof(err)),
     "string without allowed values accepts empty");
  ok(dc_schema_validate(&li, "p,q,r", err, sizeof(err)),
     "list without allowed items accepts any items");
  ok(!dc_schema_validate(&li, "p,,r", err, sizeof(err)),
     "list without allowed items still rejects an empty item");
  ok(dc_schema_validate(&lr, "b,a", err, sizeof(err)), "restricted list");
  ok(!dc_schema_validate(&lr, "a,c", err, sizeof(err)),
     "restricted list rejects c");
  err[0] = '\0';
  ok(!dc_schema_validate(&u, "1", err, sizeof(err)) && err[0],
     "unknown type rejected with a reason: %s", err);

  /* A tiny errstr is truncated, never overrun. */
  char small[8];
  memset(small, 'z', sizeof(small));
  ok(!dc_schema_validate(dc_schema_find("acks"), "bogus", small, 6) &&
         strlen(small) == 5 && small[6] == 'z' && small[7] == 'z',
     "errstr of 6 bytes: truncated and terminated in place");
}

static void test_parse_int64(void) {
  static const struct {
    const char *s;
    bool ok;
    int64_t v;
  } cases[] = {
      {"0", true, 0},
      {"-0", true, 0},
      {"1", true, 1},
      {"-1", true, -1},
      {"123456789", true, 123456789},
      {"007", true, 7},
      {"9223372036854775807", true, INT64_MAX},
      {"-9223372036854775808", true, INT64_MIN},
      {"9223372036854775808", false, 0},
      {"-9223372036854775809", false, 0},
      {"99999999999999999999999", false, 0},
      {"", false, 0},
      {" ", false, 0},
      {"-", false, 0},
      {"+", false, 0},
      {"--1", false, 0},
      {"+1", false, 0},
      {" 1", false, 0},
      {"1 ", false, 0},
      {"1a", false, 0},
      {"a1", false, 0},
      {"1.0", false, 0},
      {"1e3", false, 0},
      {"0x10", false, 0},
      {"- 1", false, 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int64_t v = 4242;
    bool r = dc_parse_int64(cases[i].s, &v);
    if (cases[i].ok)
      ok(r && v == cases[i].v, "parse \"%s\" = %lld", cases[i].s,
         (long long)cases[i].v);
    else
      ok(!r && v == 4242, "parse \"%s\" fails and leaves *out alone",
         cases[i].s);
  }

  /* strtoll() skips any leading isspace(); we refuse all of it. */
  int64_t v = 4242;
  ok(!dc_parse_int64("\t5", &v), "parse \"\\t5\" fails (leading tab)");
  ok(!dc_parse_int64("\n5", &v),
     "parse \"\\n5\" fails (leading newline)");
}

static void test_err_table(void) {
  is_str(dynconf_err_name(DYNCONF_ERR_NO_ERROR), "NO_ERROR", "name of 0");
  is_str(dynconf_err_name(DYNCONF_ERR_INVALID_CONFIG), "INVALID_CONFIG",
         "name of 40");
  is_str(dynconf_err_name((dynconf_err_t)42), "INVALID_REQUEST", "name of 42");
  is_str(dynconf_err_name(DYNCONF_ERR_UNKNOWN_SERVER_ERROR),
         "UNKNOWN_SERVER_ERROR", "name of -1");
  is_str(dynconf_err_name(DYNCONF_ERR__TRUNCATED), "TRUNCATED",
         "local error name drops the leading underscore");
  is_str(dynconf_err_name((dynconf_err_t)12345), "UNKNOWN",
         "name of a code not in the table");
  is_str(dynconf_err_name((dynconf_err_t)-99), "UNKNOWN", "name of -99");
  is_str(dynconf_err_str(DYNCONF_ERR_INVALID_REQUEST), "Invalid request",
         "description of 42");
  is_str(dynconf_err_str(DYNCONF_ERR_UNSUPPORTED_VERSION),
         "Unsupported API version", "description of 35");
  const char *u = dynconf_err_str((dynconf_err_t)12345);
  ok(u && u[0], "description of an unknown code is non-empty: %s", u ? u : "");

  /* Every table row: a unique name, not "UNKNOWN", and a description. */
  static const struct {
    int code;
    const char *name;
  } rows[] = {
#define ROW_(name, code, desc) {code, #name},
      DYNCONF_ERR_MAP(ROW_)
#undef ROW_
  };
  size_t n = sizeof(rows) / sizeof(rows[0]);
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    const char *nm = dynconf_err_name((dynconf_err_t)rows[i].code);
    const char *want = rows[i].name[0] == '_' ? rows[i].name + 1 : rows[i].name;
    if (strcmp(nm, want) || !dynconf_err_str((dynconf_err_t)rows[i].code)[0]) {
      diag("  code %d: name %s desc %s", rows[i].code, nm,
           dynconf_err_str((dynconf_err_t)rows[i].code));
      bad++;
    }
    for (size_t j = 0; j < i; j++)
      if (rows[j].code == rows[i].code) {
        diag("  code %d appears twice", rows[i].code);
        bad++;
      }
  }
  ok(bad == 0, "all %zu table rows have their name and a description", n);
}

int main(void) {
  test_table();
  test_ints();
  test_enums();
  test_lists();
  test_double();
  test_other_types();
  test_parse_int64();
  test_err_table();
  return done_testing();
}
