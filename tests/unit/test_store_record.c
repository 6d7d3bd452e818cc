/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Kafka store's record format (lib/broker/store/store_record.c): a commit
 * written as a record reads back as the same commit; tombstones and claims
 * read as such; whatever else a topic may hold (not JSON, another shape,
 * an unknown type, a non-canonical user name, a value an alter would
 * refuse, a malformed change, a claim without its epoch) is refused with
 * a reason.
 */
#include "broker/store/store_record.h"
#include "codec/proto.h"
#include "../tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *key, const char *value, int64_t epoch,
                 int32_t node, dc_log_record_t *p, char *why, size_t n) {
  return dc_log_record_parse(key, strlen(key), value,
                             value ? strlen(value) : 0, epoch, node, p, why,
                             n);
}

static void test_round_trip(void) {
  const char *keys[] = {"acks", "linger.ms"}, *vals[] = {"all", "5"};
  dc_store_change_t ch[] = {{"acks", DC_OP_SET, "1", "all"},
                            {"linger.ms", DC_OP_SET, NULL, "5"}};
  dc_store_commit_t c = {.resource_type = DC_RES_CLIENT, .entity = "app-1",
                         .principal = "User:alice", .peer = "10.0.0.1:5",
                         .api = "IncrementalAlterConfigs", .n_configs = 2,
                         .keys = keys, .values = vals, .n_changes = 2,
                         .changes = ch};
  char *key = dc_log_record_key(c.resource_type, c.entity);
  char *val = dc_log_record_value(&c, 1234);
  is_str(key, "client:app-1", "the key names type and entity");
  ok(val != NULL, "the value is written");
  dc_log_record_t p;
  char why[300] = "";
  is_int(parse(key, val, 3, 7, &p, why, sizeof(why)), 0,
         "it reads back (%s)", why);
  ok(!p.claim && p.epoch == 3 && p.node == 7, "epoch and node as given");
  ok(p.c.resource_type == DC_RES_CLIENT && !strcmp(p.c.entity, "app-1"),
     "the entity");
  ok(p.c.n_configs == 2 && !strcmp(p.c.keys[1], "linger.ms") &&
         !strcmp(p.c.values[1], "5"),
     "the configs");
  ok(p.c.n_changes == 2 && !strcmp(p.c.changes[0].old_value, "1") &&
         p.c.changes[1].old_value == NULL,
     "the changes, absent old values as absent");
  ok(!strcmp(p.c.principal, "User:alice") && p.c.time_ms == 1234,
     "principal and time");
  dc_log_record_free(&p);
  free(key);
  free(val);

  const char *bad[] = {"a\xff"};
  dc_store_commit_t u = c;
  u.n_configs = 1;
  u.values = bad;
  u.n_changes = 0;
  ok(dc_log_record_value(&u, 1) == NULL,
     "a value JSON cannot carry is not written");
}

static void test_tombstone_and_claim(void) {
  dc_log_record_t p;
  char why[300];
  is_int(parse("user:alice/a%2Fb", NULL, 2, 1, &p, why, sizeof(why)), 0,
         "a tombstone reads");
  ok(p.c.resource_type == DC_RES_USER && !strcmp(p.c.entity, "alice/a%2Fb") &&
         p.c.n_configs == 0,
     "  as the entity with nothing");
  dc_log_record_free(&p);
  is_int(parse(DC_LOG_CLAIM_KEY, "{}", 5, 2, &p, why, sizeof(why)), 0,
         "a claim reads");
  ok(p.claim && p.epoch == 5 && p.node == 2, "  with its epoch and node");
  dc_log_record_free(&p);
}

static void test_refused(void) {
  static const struct {
    const char *key, *value, *want, *what;
    int64_t epoch;
  } cases[] = {
      {"client:x", "not json", "not JSON", "not JSON", 1},
      {"client:x", "[1,2]", "not a dynconf record", "another shape", 1},
      {"client:x",
       "{\"type\":\"topic\",\"name\":\"x\",\"configs\":{},\"time_ms\":1,"
       "\"changes\":[]}",
       "is not valid", "an unknown type", 1},
      {"user:a b",
       "{\"type\":\"user\",\"name\":\"a b\",\"configs\":{},\"time_ms\":1,"
       "\"changes\":[]}",
       "is not valid", "a user name not in its canonical form", 1},
      {"client:x",
       "{\"type\":\"client\",\"name\":\"x\",\"configs\":{\"acks\":\"maybe\"},"
       "\"time_ms\":1,\"changes\":[]}",
       "config 'acks'", "a value an alter refuses", 1},
      {"client:x",
       "{\"type\":\"client\",\"name\":\"x\",\"configs\":{\"acks\":1},"
       "\"time_ms\":1,\"changes\":[]}",
       "not a string", "a number for a value", 1},
      {"client:x",
       "{\"type\":\"client\",\"name\":\"x\",\"configs\":{},\"time_ms\":1,"
       "\"changes\":[{\"key\":\"acks\"}]}",
       "change 0 is malformed", "a malformed change", 1},
      {"client:x",
       "{\"type\":\"client\",\"name\":\"x\",\"configs\":{\"a\":\"1\",\"a\":"
       "\"2\"},\"time_ms\":1,\"changes\":[]}",
       "not JSON", "a key twice", 1},
      {"bogus", NULL, "tombstone without", "a tombstone without type", 1},
      {"topic:x", NULL, "unknown entity type", "a tombstone of a topic", 1},
      {DC_LOG_CLAIM_KEY, "{}", "without its epoch", "a claim without epoch",
       0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    dc_log_record_t p;
    char why[300] = "";
    int r = parse(cases[i].key, cases[i].value, cases[i].epoch, 1, &p, why,
                  sizeof(why));
    is_int(r, -1, "%s: refused", cases[i].what);
    ok(strstr(why, cases[i].want) != NULL, "  %s: %s", cases[i].what, why);
    dc_log_record_free(&p);
  }
}

/* Heartbeats: a server's listeners read back; a heartbeat not written by
 * the node it names, or past the bounds, is refused. */
static void test_heartbeat(void) {
  dc_store_listener_t l[] = {{"PLAINTEXT", "10.0.0.2", 9092},
                             {"SSL", "::1", 9093}};
  uint8_t key[DC_REPLICA_KEY_LEN];
  for (size_t i = 0; i < sizeof(key); i++)
    key[i] = (uint8_t)(0xf0 + i);
  char *v = dc_log_heartbeat_value(2, l, 2, key, false);
  dc_log_record_t p;
  char why[300] = "";
  ok(v != NULL, "a heartbeat value is written");
  is_int(parse("node:2", v, 1, 2, &p, why, sizeof(why)), 0,
         "it reads back (%s)", why);
  ok(p.heartbeat && !p.leaving && p.node == 2 && p.n_listeners == 2,
     "as node 2's heartbeat with two listeners");
  ok(p.n_listeners == 2 && !strcmp(p.listeners[1].name, "SSL") &&
         !strcmp(p.listeners[1].host, "::1") && p.listeners[1].port == 9093,
     "each listener's name, host and port");
  ok(p.has_key && !memcmp(p.key, key, sizeof(key)),
     "and its replica key");
  ok(strstr(v, "\"key\":\"f0f1f2f3") != NULL, "  written as hex: %s", v);
  dc_log_record_free(&p);
  ok(parse("node:3", v, 1, 3, &p, why, sizeof(why)) != 0 &&
         strstr(why, "not node 3's own"),
     "node 3 cannot write node 2's heartbeat: %s", why);
  dc_log_record_free(&p);
  ok(parse("node:2", v, 1, 3, &p, why, sizeof(why)) != 0 &&
         strstr(why, "keyed for another node"),
     "nor under node 2's key: %s", why);
  dc_log_record_free(&p);
  free(v);
  v = dc_log_heartbeat_value(4, NULL, 0, NULL, true);
  is_int(parse("node:4", v, 0, 4, &p, why, sizeof(why)), 0, "a goodbye reads");
  ok(p.heartbeat && p.leaving && p.n_listeners == 0, "  as leaving");
  ok(!p.has_key && !strstr(v, "key"), "  without a key");
  dc_log_record_free(&p);
  free(v);
  dc_store_listener_t bad = {"PLAINTEXT", "h", 0};
  ok(dc_log_heartbeat_value(1, &bad, 1, NULL, false) == NULL,
     "port 0 is not written");
  dc_store_listener_t many[DC_LOG_MAX_LISTENERS + 1];
  for (int i = 0; i <= DC_LOG_MAX_LISTENERS; i++)
    many[i] = (dc_store_listener_t){"L", "h", 1};
  ok(dc_log_heartbeat_value(1, many, DC_LOG_MAX_LISTENERS + 1, NULL, false) ==
         NULL,
     "more than %d listeners are not written", DC_LOG_MAX_LISTENERS);
  is_int(parse("node:5", "{\"node\":5,\"listeners\":[{\"name\":\"P\","
               "\"host\":\"h\",\"port\":70000}],\"leaving\":false}", 0, 5,
               &p, why, sizeof(why)), -1, "a port past 65535 is refused");
  dc_log_record_free(&p);
  /* An older dynconfd's heartbeat has no key; a malformed key is refused
   * (the record's writer is broken, not silent). */
  is_int(parse("node:6", "{\"node\":6,\"listeners\":[],\"leaving\":false}",
               0, 6, &p, why, sizeof(why)), 0, "a heartbeat without a key reads");
  ok(!p.has_key, "  as keyless");
  dc_log_record_free(&p);
  const char *bad_keys[] = {"\"abcd\"", "7", "\"" /* 64 x 'g' */
                            "gggggggggggggggggggggggggggggggg"
                            "gggggggggggggggggggggggggggggggg\""};
  for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
    char val[300];
    snprintf(val, sizeof(val), "{\"node\":6,\"listeners\":[],\"leaving\":"
             "false,\"key\":%s}", bad_keys[i]);
    ok(parse("node:6", val, 0, 6, &p, why, sizeof(why)) == -1,
       "a heartbeat with key %s is refused: %s", bad_keys[i], why);
    dc_log_record_free(&p);
  }
}

int main(void) {
  test_round_trip();
  test_tombstone_and_claim();
  test_refused();
  test_heartbeat();
  return done_testing();
}
