/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writing the values the agent accepted into the client's own conf, from
 * on_new.
 *
 * Why it is sound. on_new receives `const rd_kafka_conf_t *conf`, which
 * is &rk->rk_conf, the handle's own struct copy of the application's
 * finalized conf. rd_kafka_conf_set() on it is what rd_kafka_new() itself
 * does a few lines after on_new (test.mock.num.brokers overwrites
 * bootstrap.servers and security.protocol there), and:
 *   - no thread of the handle exists yet (start.c), so nothing reads the
 *     conf while it is written;
 *   - the keys applied below are plain fields that librdkafka reads after
 *     rd_kafka_new() (the producer's acks, batch sizes and request
 *     timeout when it builds a request or a topic, the consumer group's
 *     timeouts when it joins and heartbeats, debug when the handle's log
 *     level is set later in rd_kafka_new()), not fields
 *     rd_kafka_conf_finalize() derives something from;
 *   - the cross-checks rd_kafka_conf_finalize() makes on them (acks=all
 *     with idempotence, max.poll.interval.ms >= session.timeout.ms) are
 *     the agent's own rules, which hold for the values it accepts;
 *   - every one is an integer, enum or flag field: should rd_kafka_new()
 *     fail after on_new, the application's conf, which still owns the
 *     string fields the handle's copy points to, is left with no pointer
 *     freed behind it (a string set here would free the application's).
 * Left out, with the reason logged (keys of the schema that are not in
 * the table are left out too):
 *   - linger.ms: rd_kafka_conf_finalize() converts it into the internal
 *     microseconds the producer uses (and sticky.partitioning.linger.ms
 *     from it); setting it after would show a value the client does not
 *     use;
 *   - message.timeout.ms: checked against linger.ms and
 *     transaction.timeout.ms in finalize, which would be bypassed;
 *   - partition.assignment.strategy: a string (see above), and refused by
 *     librdkafka 2.4+ with group.protocol=consumer at finalize.
 * Checked in librdkafka v2.0.2 and v2.15.0 (rd_kafka_conf_finalize,
 * rd_kafka_topic_conf_finalize).
 */
#include "plugin/plugin_int.h"

#include "common/schema.h"

#include <string.h>

static const struct {
  const char *key;
  const char *unsafe; /* NULL: applied */
} keys[] = {
    {"acks", NULL},
    {"session.timeout.ms", NULL},
    {"heartbeat.interval.ms", NULL},
    {"max.poll.interval.ms", NULL},
    {"request.timeout.ms", NULL},
    {"batch.size", NULL},
    {"batch.num.messages", NULL},
    {"compression.type", NULL},
    {"debug", NULL},
    {"linger.ms", "librdkafka derives its internal linger time from it "
                  "before plugins run"},
    {"message.timeout.ms", "librdkafka checks it against linger.ms and "
                           "transaction.timeout.ms before plugins run"},
    {"partition.assignment.strategy",
     "a string the application's conf owns until rd_kafka_new() succeeds"},
};

const char *dc_plugin_key_unsafe(const char *key) {
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
    if (!strcmp(keys[i].key, key))
      return keys[i].unsafe;
  return "not known to be read by librdkafka only after rd_kafka_new()";
}

int dc_plugin_apply(dc_plugin_t *st, rd_kafka_conf_t *client_conf) {
  size_t n;
  const dc_schema_entry_t *all = dc_schema_all(&n);
  int applied = 0;
  for (size_t i = 0; i < n; i++) {
    const char *key = all[i].name;
    char v[1024], e[512];
    dynconf_source_t src;
    int need = dynconf_effective_get(st->dc, key, v, sizeof(v), &src);
    if (need < 0 || src == DYNCONF_SOURCE_APP)
      continue; /* not allowed, or the application's own value */
    const char *source = dynconf_source_name(src);
    if ((size_t)need > sizeof(v)) {
      dc_plugin_log(st, 4, "DYNCONF", "%s from %s not applied: longer than "
                    "%zu bytes", key, source, sizeof(v) - 1);
      continue;
    }
    const char *why = dc_plugin_key_unsafe(key);
    if (why) {
      dc_plugin_log(st, 4, "DYNCONF",
                    "%s=%s from %s not applied at start-up: %s; the client "
                    "keeps the application's value",
                    key, v, source, why);
      continue;
    }
    if (rd_kafka_conf_set(client_conf, key, v, e, sizeof(e)) !=
        RD_KAFKA_CONF_OK) {
      dc_plugin_log(st, 4, "DYNCONF", "librdkafka refused %s=%s from %s: %s",
                    key, v, source, e);
      continue;
    }
    dc_plugin_log(st, 6, "DYNCONF", "%s=%s from %s applied", key, v, source);
    applied++;
  }
  return applied;
}
