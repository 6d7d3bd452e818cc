#include "schema.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
  for (size_t i = 0; i < sizeof(schema) / sizeof(schema[0]); i++)
    if (!strcmp(schema[i].name, name))
      return &schema[i];
  return NULL;
}

bool dc_parse_int64(const char *s, int64_t *out) {
  if (!*s)
    return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || end == s || isspace((unsigned char)s[0]) || s[0] == '+')
    return false;
  *out = v;
  return true;
}

static bool in_list(const char *const *allowed, const char *v, size_t n) {
  for (; *allowed; allowed++)
    if (strlen(*allowed) == n && !strncmp(*allowed, v, n))
      return true;
  return false;
}

bool dc_schema_validate(const dc_schema_entry_t *e, const char *value,
                        char *errstr, size_t errstr_size) {
  switch (e->type) {
  case DC_TYPE_INT:
  case DC_TYPE_LONG: {
    int64_t v;
    if (!dc_parse_int64(value, &v)) {
      snprintf(errstr, errstr_size, "%s must be an integer, not \"%s\"",
               e->name, value);
      return false;
    }
    if (v < e->min || v > e->max) {
      snprintf(errstr, errstr_size, "%s=%s is outside the range %lld..%lld",
               e->name, value, (long long)e->min, (long long)e->max);
      return false;
    }
    return true;
  }
  case DC_TYPE_DOUBLE: {
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (!*value || *end || errno || v != v) {
      snprintf(errstr, errstr_size, "%s must be a number, not \"%s\"", e->name,
               value);
      return false;
    }
    if (v < (double)e->min || v > (double)e->max) {
      snprintf(errstr, errstr_size, "%s=%s is outside the range %lld..%lld",
               e->name, value, (long long)e->min, (long long)e->max);
      return false;
    }
    return true;
  }
  case DC_TYPE_STRING:
    if (e->allowed && !in_list(e->allowed, value, strlen(value))) {
      snprintf(errstr, errstr_size, "%s=%s is not one of the allowed values",
               e->name, value);
      return false;
    }
    return true;
  case DC_TYPE_LIST: {
    const char *p = value;
    if (!*p) {
      snprintf(errstr, errstr_size, "%s must not be empty", e->name);
      return false;
    }
    for (;;) {
      const char *comma = strchr(p, ',');
      size_t n = comma ? (size_t)(comma - p) : strlen(p);
      if (n == 0 || (e->allowed && !in_list(e->allowed, p, n))) {
        snprintf(errstr, errstr_size, "%s: \"%.*s\" is not an allowed item",
                 e->name, (int)n, p);
        return false;
      }
      if (!comma)
        return true;
      p = comma + 1;
    }
  }
  case DC_TYPE_BOOLEAN:
    if (strcmp(value, "true") && strcmp(value, "false")) {
      snprintf(errstr, errstr_size, "%s must be true or false", e->name);
      return false;
    }
    return true;
  }
  snprintf(errstr, errstr_size, "%s has an unknown type", e->name);
  return false;
}
