/* SPDX-License-Identifier: BSD-2-Clause */
#include "schema.h"
#include "common/text.h"

#include <stdio.h>
#include <string.h>

static const char *const acks_values[] = {"all", "-1", "0", "1", NULL};
static const char *const compression_values[] = {"none", "gzip", "snappy",
                                                  "lz4",  "zstd", NULL};
static const char *const debug_values[] = {
    "generic",  "broker",   "topic",  "metadata", "feature", "queue",
    "msg",      "protocol", "cgrp",   "security", "fetch",   "interceptor",
    "plugin",   "consumer", "admin",  "eos",      "mock",    "assignor",
    "conf",     "all",      NULL};
static const char *const assignor_values[] = {"range", "roundrobin",
                                              "cooperative-sticky", NULL};

#define P DC_APPLIES_PRODUCER
#define C DC_APPLIES_CONSUMER

static const dc_schema_entry_t schema[] = {
    {"acks", DC_TYPE_STRING, 0, 0, acks_values, P, true,
     "Acknowledgements the producer requires from the leader: all (-1), 0 or 1."},
    {"session.timeout.ms", DC_TYPE_INT, 1, 3600000, NULL, C, true,
     "Consumer group session timeout; the member is evicted when no heartbeat "
     "arrives within it."},
    {"heartbeat.interval.ms", DC_TYPE_INT, 1, 3600000, NULL, C, true,
     "Interval between consumer group heartbeats; must be below "
     "session.timeout.ms."},
    {"linger.ms", DC_TYPE_DOUBLE, 0, 900000, NULL, P, false,
     "Delay to wait for messages to accumulate into a batch."},
    {"batch.size", DC_TYPE_INT, 1, 2147483647, NULL, P, false,
     "Maximum size in bytes of a message batch."},
    {"batch.num.messages", DC_TYPE_INT, 1, 1000000, NULL, P, false,
     "Maximum number of messages in a batch."},
    {"compression.type", DC_TYPE_STRING, 0, 0, compression_values, P, false,
     "Compression codec for message sets."},
    {"message.timeout.ms", DC_TYPE_INT, 0, 2147483647, NULL, P, false,
     "Local delivery timeout; 0 is infinite."},
    {"request.timeout.ms", DC_TYPE_INT, 1, 900000, NULL, P, false,
     "Producer request acknowledgement timeout."},
    {"max.poll.interval.ms", DC_TYPE_INT, 1, 86400000, NULL, C, false,
     "Maximum time between consumer poll calls before the member leaves."},
    {"debug", DC_TYPE_LIST, 0, 0, debug_values, P | C, false,
     "Comma-separated librdkafka debug contexts."},
    {"partition.assignment.strategy", DC_TYPE_LIST, 0, 0, assignor_values, C,
     false, "Comma-separated partition assignors, in order of preference."},
};

#undef P
#undef C

const dc_schema_entry_t *dc_schema_all(size_t *np) {
  *np = sizeof(schema) / sizeof(schema[0]);
  return schema;
}

const dc_schema_entry_t *dc_schema_find(const char *name) {
  /* Called for every key of every request: the first byte rules out most
   * entries before a strcmp. */
  for (size_t i = 0; i < sizeof(schema) / sizeof(schema[0]); i++)
    if (schema[i].name[0] == name[0] && !strcmp(schema[i].name, name))
      return &schema[i];
  return NULL;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Magnitude of a canonical run of digits at *pp ("0" or no leading zero),
 * advancing *pp; false when there is none or it has a leading zero. More
 * than 19 digits saturate at UINT64_MAX, which is out of every range. */
static bool take_digits(const char **pp, uint64_t *mag) {
  const char *p = *pp;
  if (!is_digit(*p) || (p[0] == '0' && is_digit(p[1])))
    return false;
  uint64_t v = 0;
  size_t n = 0;
  for (; is_digit(*p); p++, n++)
    if (n < 19) /* 19 digits cannot overflow a uint64 */
      v = v * 10 + (uint64_t)(*p - '0');
  *mag = n > 19 ? UINT64_MAX : v;
  *pp = p;
  return true;
}

bool dc_parse_int64(const char *s, int64_t *out) {
  bool neg = *s == '-';
  const char *p = s + neg;
  uint64_t mag;
  if (!take_digits(&p, &mag) || *p)
    return false;
  /* Zero has one spelling: "-0" is refused like "00". */
  if (neg && mag == 0)
    return false;
  if (mag > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
    return false;
  *out = neg ? -(int64_t)(mag - 1) - 1 : (int64_t)mag;
  return true;
}

/* A canonical decimal: [-](0|[1-9][0-9]*)(.[0-9]+)?, not a negative zero.
 * *neg, *ip (integer part, saturated) and *frac (any nonzero fraction
 * digit) describe it exactly, so range checks need no strtod() (which
 * rounds and follows the locale's decimal point). */
static bool parse_decimal(const char *s, bool *neg, uint64_t *ip,
                          bool *frac) {
  *neg = *s == '-';
  const char *p = s + *neg;
  *frac = false;
  if (!take_digits(&p, ip))
    return false;
  if (*p == '.') {
    if (!is_digit(*++p))
      return false;
    for (; is_digit(*p); p++)
      *frac |= *p != '0';
  }
  return !*p && !(*neg && *ip == 0 && !*frac);
}

/* Sign of (v - b) for the decimal v = ±(ip + f), 0 <= f < 1, f > 0 iff
 * frac, and an integer bound b. */
static int cmp_decimal(bool neg, uint64_t ip, bool frac, int64_t b) {
  if (!neg) {
    if (b < 0 || ip > (uint64_t)b)
      return 1;
    if (ip < (uint64_t)b)
      return -1;
    return frac ? 1 : 0;
  }
  if (b >= 0)
    return -1;
  uint64_t m = (uint64_t)(-(b + 1)) + 1; /* |b| without overflow */
  if (ip > m || (ip == m && frac))
    return -1;
  return ip == m ? 0 : 1;
}

static bool in_list(const char *const *allowed, const char *v, size_t n) {
  for (; *allowed; allowed++)
    if (strlen(*allowed) == n && !strncmp(*allowed, v, n))
      return true;
  return false;
}

static size_t longest(const char *const *allowed) {
  size_t m = 0;
  for (; *allowed; allowed++)
    if (strlen(*allowed) > m)
      m = strlen(*allowed);
  return m;
}

size_t dc_schema_value_max(const dc_schema_entry_t *e) {
  if (!e)
    return DC_CONFIG_VALUE_MAX;
  switch (e->type) {
  case DC_TYPE_INT:
  case DC_TYPE_LONG:
    return DC_INT_VALUE_MAX;
  case DC_TYPE_DOUBLE:
    return DC_DOUBLE_VALUE_MAX;
  case DC_TYPE_BOOLEAN:
    return DC_BOOL_VALUE_MAX;
  case DC_TYPE_STRING:
    return e->allowed ? longest(e->allowed) : DC_STRING_VALUE_MAX;
  case DC_TYPE_LIST: {
    size_t item = e->allowed ? longest(e->allowed) : DC_LIST_ITEM_MAX;
    if (item > DC_LIST_ITEM_MAX)
      item = DC_LIST_ITEM_MAX;
    size_t n = DC_LIST_ITEMS_MAX * (item + 1) - 1; /* with commas */
    return n < DC_CONFIG_VALUE_MAX ? n : DC_CONFIG_VALUE_MAX;
  }
  }
  return DC_CONFIG_VALUE_MAX; /* unknown type: refused by its own check */
}

static bool validate_int(const dc_schema_entry_t *e, const char *value,
                         char *errstr, size_t errstr_size) {
  int64_t v;
  if (!dc_parse_int64(value, &v)) {
    /* The sentence other components match; the rules are in schema.h. */
    dc_seterr(errstr, errstr_size, "%s must be an integer, not \"%s\"",
             e->name, value);
    return false;
  }
  if (v < e->min || v > e->max) {
    dc_seterr(errstr, errstr_size, "%s=%s is outside the range %lld..%lld",
             e->name, value, (long long)e->min, (long long)e->max);
    return false;
  }
  return true;
}

static bool validate_double(const dc_schema_entry_t *e, const char *value,
                            char *errstr, size_t errstr_size) {
  bool neg, frac;
  uint64_t ip;
  if (!parse_decimal(value, &neg, &ip, &frac)) {
    dc_seterr(errstr, errstr_size, "%s must be a number, not \"%s\"",
             e->name, value);
    return false;
  }
  if (cmp_decimal(neg, ip, frac, e->min) < 0 ||
      cmp_decimal(neg, ip, frac, e->max) > 0) {
    dc_seterr(errstr, errstr_size, "%s=%s is outside the range %lld..%lld",
             e->name, value, (long long)e->min, (long long)e->max);
    return false;
  }
  return true;
}

static bool validate_list(const dc_schema_entry_t *e, const char *value,
                          char *errstr, size_t errstr_size) {
  if (!*value) {
    dc_seterr(errstr, errstr_size, "%s must not be empty", e->name);
    return false;
  }
  size_t items = 0;
  for (const char *p = value;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (++items > DC_LIST_ITEMS_MAX) {
      dc_seterr(errstr, errstr_size, "%s has more than %d items", e->name,
               DC_LIST_ITEMS_MAX);
      return false;
    }
    if (n > DC_LIST_ITEM_MAX) {
      dc_seterr(errstr, errstr_size,
               "%s: item %zu is %zu bytes; at most %d are accepted", e->name,
               items, n, DC_LIST_ITEM_MAX);
      return false;
    }
    if (n == 0 || (e->allowed && !in_list(e->allowed, p, n))) {
      dc_seterr(errstr, errstr_size, "%s: \"%.*s\" is not an allowed item",
               e->name, (int)n, p);
      return false;
    }
    if (!comma)
      return true;
    p = comma + 1;
  }
}

/* The length bound comes first, so no later check (or error sentence)
 * looks at more than a bounded value. */
static bool check_length(const dc_schema_entry_t *e, const char *value,
                         char *errstr, size_t errstr_size) {
  size_t max = dc_schema_value_max(e), n = strlen(value);
  if (n <= max)
    return true;
  if (e)
    dc_seterr(errstr, errstr_size,
             "%s value is %zu bytes; at most %zu are accepted", e->name, n,
             max);
  else
    dc_seterr(errstr, errstr_size,
             "value is %zu bytes; at most %zu are accepted for a key outside "
             "the schema",
             n, max);
  return false;
}

bool dc_schema_validate(const dc_schema_entry_t *e, const char *value,
                        char *errstr, size_t errstr_size) {
  if (!check_length(e, value, errstr, errstr_size))
    return false;
  if (!e)
    return true;
  switch (e->type) {
  case DC_TYPE_INT:
  case DC_TYPE_LONG:
    return validate_int(e, value, errstr, errstr_size);
  case DC_TYPE_DOUBLE:
    return validate_double(e, value, errstr, errstr_size);
  case DC_TYPE_STRING:
    if (e->allowed && !in_list(e->allowed, value, strlen(value))) {
      dc_seterr(errstr, errstr_size, "%s=%s is not one of the allowed values",
               e->name, value);
      return false;
    }
    return true;
  case DC_TYPE_LIST:
    return validate_list(e, value, errstr, errstr_size);
  case DC_TYPE_BOOLEAN:
    if (strcmp(value, "true") && strcmp(value, "false")) {
      dc_seterr(errstr, errstr_size, "%s must be true or false", e->name);
      return false;
    }
    return true;
  }
  dc_seterr(errstr, errstr_size, "%s has an unknown type", e->name);
  return false;
}
