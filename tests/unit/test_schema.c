/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client config schema (lib/common/schema.c, SPEC §3): every key is
 * found, dc_schema_validate() for each type and its edge cases, the error
 * sentences, dc_parse_int64(), and the public error-name table.
 */
#include "common/schema.h"
#include "common/errors.h"
#include "../tap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
  /* Canonical text only: one spelling per number. */
  check(k, "007", false);  /* leading zeros */
  check(k, "01", false);
  check(k, "00", false);
  check("message.timeout.ms", "00", false);
  check("message.timeout.ms", "-0", false); /* zero is spelled "0" */
  check(k, "1e3", false);  /* exponent */
  check(k, "1E3", false);
  check(k, "\t5", false);
  check(k, "5\n", false);
  check(k, "-", false);
  check(k, "--5", false);
  check(k, "1,000", false);
  check(k, "1_000", false);
  check(k, "9223372036854775808", false);    /* overflows int64 */
  check(k, "18446744073709551616", false);   /* overflows uint64 too */

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
  check(k, "0.0", true);
  check(k, "0.001", true);
  check(k, "0.50", true);     /* fraction digits are not normalised */
  check(k, "900000.0", true);
  check(k, "899999.99999", true);
  check(k, "900000.00001", false); /* compared exactly, not rounded */
  check(k, "1e3", false);     /* exponent */
  check(k, "1E3", false);
  check(k, "1.5e2", false);
  check(k, "1.", false);      /* a '.' needs digits on both sides */
  check(k, ".5", false);
  check(k, "-.5", false);
  check(k, "1..5", false);
  check(k, "1.5.", false);
  check(k, "007", false);     /* leading zeros */
  check(k, "05", false);
  check(k, "00.5", false);
  check(k, "-0", false);      /* zero is spelled without a sign */
  check(k, "-0.0", false);
  check(k, "-0.00", false);
  check(k, "+5", false);
  check(k, " 5", false);
  check(k, "0x10", false);    /* hex */
  check(k, "0x1p3", false);
  check(k, "infinity", false);
  check(k, "INF", false);
  check(k, "NaN", false);
  check(k, "-nan", false);
  check(k, "1,5", false);
  check(k, "-0.5", false);    /* canonical, below the range */
  check(k, "-1", false);
  check(k, "-0.001", false);
  check(k, "900000.5", false);
  check(k, "abc", false);
  check(k, "", false);
  check(k, "5ms", false);
  check(k, "5 ", false);
  check(k, "nan", false);
  check(k, "inf", false);
  check(k, "1e999", false);

  /* Negative bounds and the int64 extremes, compared exactly. */
  dc_schema_entry_t d = {"x.dbl", DC_TYPE_DOUBLE, -5, 5, NULL, 0, false, "d"};
  dc_schema_entry_t w = {"x.wide", DC_TYPE_DOUBLE, INT64_MIN, INT64_MAX,
                         NULL, 0, false, "d"};
  const struct {
    const dc_schema_entry_t *e;
    const char *v;
    bool ok;
  } cases[] = {
      {&d, "-5", true},   {&d, "-5.0", true},  {&d, "-4.9", true},
      {&d, "-5.1", false}, {&d, "-6", false},  {&d, "-0.5", true},
      {&d, "5.0", true},  {&d, "5.01", false}, {&d, "-0", false},
      {&d, "0", true},
      {&w, "-9223372036854775808", true},
      {&w, "-9223372036854775808.5", false},
      {&w, "-9223372036854775809", false},
      {&w, "9223372036854775807", true},
      {&w, "9223372036854775807.1", false},
      {&w, "9223372036854775808", false},
      {&w, "99999999999999999999999", false},
      {&w, "-99999999999999999999999", false},
  };
  char err[128];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ok(dc_schema_validate(cases[i].e, cases[i].v, err, sizeof(err)) ==
           cases[i].ok,
       "%s=\"%s\" is %s", cases[i].e->name, cases[i].v,
       cases[i].ok ? "valid" : "rejected");
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
      {"-0", false, 0}, /* zero has one spelling */
      {"1", true, 1},
      {"-1", true, -1},
      {"123456789", true, 123456789},
      {"007", false, 0},
      {"00", false, 0},
      {"01", false, 0},
      {"-01", false, 0},
      {"-007", false, 0},
      {"1E3", false, 0},
      {"5\n", false, 0},
      {"18446744073709551615", false, 0},  /* UINT64_MAX */
      {"18446744073709551616", false, 0},
      {"-18446744073709551616", false, 0},
      {"-9223372036854775807", true, -INT64_MAX},
      {"9223372036854775806", true, INT64_MAX - 1},
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

  /* A very long digit string is refused without overflow (UBSan). */
  size_t n = 1000000;
  char *big = malloc(n + 1);
  if (big) {
    memset(big, '9', n);
    big[n] = '\0';
    ok(!dc_parse_int64(big, &v) && v == 4242, "parse 1,000,000 nines fails");
    big[0] = '-';
    ok(!dc_parse_int64(big, &v) && v == 4242, "parse -999... fails");
    memset(big, '0', n);
    ok(!dc_parse_int64(big, &v) && v == 4242, "parse 1,000,000 zeros fails");
    free(big);
  }
}

/* A fresh string of n copies of c; the caller frees it. */
static char *filled(char c, size_t n) {
  char *s = malloc(n + 1);
  if (!s)
    abort();
  memset(s, c, n);
  s[n] = '\0';
  return s;
}

/* Validates value against e and compares the error sentence exactly. */
static void check_err(const dc_schema_entry_t *e, const char *value,
                      const char *want, const char *what) {
  char err[256] = "";
  ok(!dc_schema_validate(e, value, err, sizeof(err)), "%s: rejected", what);
  is_str(err, want, "%s: sentence", what);
}

static void test_limits(void) {
  /* Every limit is far below what a classic (int16) string can carry. */
  _Static_assert(DC_CONFIG_VALUE_MAX < INT16_MAX, "value fits a classic str");
  _Static_assert(DC_CONFIG_NAME_MAX < INT16_MAX, "name fits a classic str");
  is_int(DC_CONFIG_NAME_MAX, 255, "DC_CONFIG_NAME_MAX");
  is_int(DC_CONFIG_VALUE_MAX, 4096, "DC_CONFIG_VALUE_MAX");
  is_int(dc_schema_value_max(NULL), DC_CONFIG_VALUE_MAX,
         "value max outside the schema");
  static const struct {
    const char *key;
    size_t max;
  } want[] = {
      {"acks", 3},               /* longest allowed value: "all" */
      {"compression.type", 6},   /* "snappy" */
      {"session.timeout.ms", DC_INT_VALUE_MAX},
      {"linger.ms", DC_DOUBLE_VALUE_MAX},
      {"debug", 64 * 12 - 1},    /* 64 items of "interceptor" + commas */
      {"partition.assignment.strategy", 64 * 19 - 1},
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    is_int(dc_schema_value_max(dc_schema_find(want[i].key)), want[i].max,
           "value max of %s", want[i].key);
  size_t n;
  const dc_schema_entry_t *all = dc_schema_all(&n);
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += dc_schema_value_max(&all[i]) > DC_CONFIG_VALUE_MAX;
  is_int(bad, 0, "every entry's value max is at most DC_CONFIG_VALUE_MAX");

  dc_schema_entry_t s = {"x.str", DC_TYPE_STRING, 0, 0, NULL, 0, false, "d"};
  dc_schema_entry_t b = {"x.bool", DC_TYPE_BOOLEAN, 0, 0, NULL, 0, false, "d"};
  dc_schema_entry_t l = {"x.long", DC_TYPE_LONG, INT64_MIN, INT64_MAX, NULL,
                         0, false, "d"};
  dc_schema_entry_t li = {"x.list", DC_TYPE_LIST, 0, 0, NULL, 0, false, "d"};
  is_int(dc_schema_value_max(&s), DC_STRING_VALUE_MAX, "free string max");
  is_int(dc_schema_value_max(&b), 5, "boolean max");
  is_int(dc_schema_value_max(&l), 20, "long max");
  is_int(dc_schema_value_max(&li), DC_CONFIG_VALUE_MAX, "free list max");

  /* The length is checked first, with its own sentence. */
  char *z = filled('0', 1000000);
  check_err(dc_schema_find("linger.ms"), z,
            "linger.ms value is 1000000 bytes; at most 32 are accepted",
            "linger.ms of 1,000,000 zeros");
  check_err(dc_schema_find("session.timeout.ms"), z,
            "session.timeout.ms value is 1000000 bytes; at most 20 are "
            "accepted",
            "session.timeout.ms of 1,000,000 zeros");
  check_err(NULL, z,
            "value is 1000000 bytes; at most 4096 are accepted for a key "
            "outside the schema",
            "unknown key, 1,000,000 bytes");
  free(z);
  char err[256];
  char *v = filled('5', DC_CONFIG_VALUE_MAX);
  ok(dc_schema_validate(NULL, v, err, sizeof(err)),
     "unknown key: 4096 bytes accepted");
  free(v);
  v = filled('5', DC_CONFIG_VALUE_MAX + 1);
  ok(!dc_schema_validate(NULL, v, err, sizeof(err)),
     "unknown key: 4097 bytes refused");
  free(v);

  /* At each bound and one past it. */
  ok(dc_schema_validate(dc_schema_find("linger.ms"),
                        "0.000000000000000000000000000001", err, sizeof(err)),
     "linger.ms of exactly 32 bytes accepted");
  check_err(dc_schema_find("linger.ms"), "0.0000000000000000000000000000001",
            "linger.ms value is 33 bytes; at most 32 are accepted",
            "linger.ms of 33 bytes");
  ok(dc_schema_validate(&l, "-9223372036854775808", err, sizeof(err)),
     "long of 20 bytes accepted");
  check_err(&l, "-09223372036854775808",
            "x.long value is 21 bytes; at most 20 are accepted",
            "long of 21 bytes");
  check_err(&b, "falsey", "x.bool value is 6 bytes; at most 5 are accepted",
            "boolean of 6 bytes");
  check_err(dc_schema_find("acks"), "alll",
            "acks value is 4 bytes; at most 3 are accepted", "acks of 4 bytes");
  v = filled('s', DC_STRING_VALUE_MAX);
  ok(dc_schema_validate(&s, v, err, sizeof(err)), "string of 1024 accepted");
  free(v);
  v = filled('s', DC_STRING_VALUE_MAX + 1);
  check_err(&s, v, "x.str value is 1025 bytes; at most 1024 are accepted",
            "string of 1025 bytes");
  free(v);
}

/* Items: at most 64, of at most 64 bytes, none empty. */
static void test_list_limits(void) {
  dc_schema_entry_t li = {"x.list", DC_TYPE_LIST, 0, 0, NULL, 0, false, "d"};
  char items[64 * 2 + 2 + 1]; /* "a,a,...,a" */
  size_t n = 0;
  for (int i = 0; i < DC_LIST_ITEMS_MAX; i++) {
    items[n++] = 'a';
    items[n++] = ',';
  }
  items[n - 1] = '\0';
  char err[256];
  ok(dc_schema_validate(&li, items, err, sizeof(err)), "list of 64 items");
  items[n - 1] = ',';
  items[n] = 'a';
  items[n + 1] = '\0';
  check_err(&li, items, "x.list has more than 64 items", "list of 65 items");

  /* The same count on a restricted list, within its length bound. */
  char all[65 * 4];
  n = 0;
  for (int i = 0; i < 65; i++)
    n += (size_t)snprintf(all + n, sizeof(all) - n, "%sall", i ? "," : "");
  check_err(dc_schema_find("debug"), all, "debug has more than 64 items",
            "debug with 65 items");
  all[64 * 4 - 1] = '\0';
  ok(dc_schema_validate(dc_schema_find("debug"), all, err, sizeof(err)),
     "debug with 64 items");

  char *item = filled('i', DC_LIST_ITEM_MAX + 1);
  check_err(&li, item, "x.list: item 1 is 65 bytes; at most 64 are accepted",
            "item of 65 bytes");
  check_err(dc_schema_find("debug"), item,
            "debug: item 1 is 65 bytes; at most 64 are accepted",
            "debug item of 65 bytes");
  item[DC_LIST_ITEM_MAX] = '\0';
  ok(dc_schema_validate(&li, item, err, sizeof(err)), "item of 64 bytes");
  free(item);
  check_err(&li, "a,,b", "x.list: \"\" is not an allowed item", "empty item");
}

static void test_err_table(void) {
  is_str(dc_err_name(DC_ERR_NO_ERROR), "NO_ERROR", "name of 0");
  is_str(dc_err_name(DC_ERR_INVALID_CONFIG), "INVALID_CONFIG",
         "name of 40");
  is_str(dc_err_name((dc_err_t)42), "INVALID_REQUEST", "name of 42");
  is_str(dc_err_name(DC_ERR_UNKNOWN_SERVER_ERROR),
         "UNKNOWN_SERVER_ERROR", "name of -1");
  is_str(dc_err_name(DC_ERR__TRUNCATED), "TRUNCATED",
         "local error name drops the leading underscore");
  is_str(dc_err_name((dc_err_t)12345), "UNKNOWN",
         "name of a code not in the table");
  is_str(dc_err_name((dc_err_t)-99), "UNKNOWN", "name of -99");
  is_str(dc_err_str(DC_ERR_INVALID_REQUEST), "Invalid request",
         "description of 42");
  is_str(dc_err_str(DC_ERR_UNSUPPORTED_VERSION),
         "Unsupported API version", "description of 35");
  const char *u = dc_err_str((dc_err_t)12345);
  ok(u && u[0], "description of an unknown code is non-empty: %s", u ? u : "");

  /* Every table row: a unique name, not "UNKNOWN", and a description. */
  static const struct {
    int code;
    const char *name;
  } rows[] = {
#define ROW_(name, code, desc) {code, #name},
      DC_ERR_MAP(ROW_)
#undef ROW_
  };
  size_t n = sizeof(rows) / sizeof(rows[0]);
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    const char *nm = dc_err_name((dc_err_t)rows[i].code);
    const char *want = rows[i].name[0] == '_' ? rows[i].name + 1 : rows[i].name;
    if (strcmp(nm, want) || !dc_err_str((dc_err_t)rows[i].code)[0]) {
      diag("  code %d: name %s desc %s", rows[i].code, nm,
           dc_err_str((dc_err_t)rows[i].code));
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
  test_limits();
  test_list_limits();
  test_err_table();
  return done_testing();
}
