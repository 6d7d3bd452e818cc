/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end: librdkafka 2.0.2's own admin API (rd_kafka_DescribeConfigs /
 * rd_kafka_AlterConfigs with ConfigResource type 9) against the real
 * dynconfd. This is exactly the path the client agent uses, so every
 * SPEC §2-§4 rule that is visible through librdkafka is checked here.
 *
 * librdkafka negotiates DescribeConfigs v1 (IncludeSynonyms set) and
 * AlterConfigs v0 with us; at v1 it derives is_default only from source 5,
 * so entries with source 7/8 must read is_default = false through it.
 */
#include "../tap.h"
#include "../testutil.h"

#include <librdkafka/rdkafka.h>

#define RES_CLIENT ((rd_kafka_ResourceType_t)9)
#define SRC_CLIENT 7
#define SRC_DEFAULT 8
#define SRC_STATIC_BROKER 4
#define ERR_INVALID_CONFIG 40
#define ERR_INVALID_REQUEST 42
#define ADMIN_TIMEOUT_MS 10000
/* Longer than the request timeout, so a lost reply shows up as librdkafka's
 * own timeout error rather than as our give-up. */
#define POLL_TIMEOUT_MS 15000
#define NO_RESULT (-10000) /* the call produced no result at all */

static rd_kafka_t *rk;
static rd_kafka_queue_t *rkqu;

/* A copy of one described resource, so no librdkafka object outlives the
 * call that produced it. */
typedef struct syn {
  char name[64];
  char value[128];
  int has_value, source;
} syn_t;
typedef struct entry {
  char name[64];
  char value[128];
  int has_value, source, read_only, is_default, is_sensitive;
  int n_syn;
  syn_t syn[4];
} entry_t;
typedef struct desc {
  int err; /* per-resource error, or NO_RESULT */
  char errstr[512];
  int type;
  char name[300];
  int n;
  entry_t e[24];
} desc_t;

static void cpy(char *dst, size_t n, const char *src, int *has) {
  if (has)
    *has = src != NULL;
  snprintf(dst, n, "%s", src ? src : "");
}

static int client_new(int port) {
  char errstr[256], bs[64];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bs, errstr,
                        sizeof(errstr)) ||
      rd_kafka_conf_set(conf, "client.id", "dynconf-e2e-admin", errstr,
                        sizeof(errstr))) {
    diag("conf: %s", errstr);
    rd_kafka_conf_destroy(conf);
    return -1;
  }
  /* rd_kafka_new takes conf on success. */
  rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk) {
    diag("rd_kafka_new: %s", errstr);
    rd_kafka_conf_destroy(conf);
    return -1;
  }
  rkqu = rd_kafka_queue_new(rk);
  return 0;
}

static void client_destroy(void) {
  if (rkqu)
    rd_kafka_queue_destroy(rkqu);
  if (rk)
    rd_kafka_destroy(rk);
  rkqu = NULL;
  rk = NULL;
}

/* Runs one admin call over res[0..n) and waits for its result event, which
 * the caller destroys. NULL (after a diag) if the call failed as a whole or
 * nothing arrived in time. */
static rd_kafka_event_t *admin_call(bool alter, rd_kafka_ConfigResource_t **res,
                                    size_t n, bool validate_only) {
  char errstr[256];
  rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(
      rk, alter ? RD_KAFKA_ADMIN_OP_ALTERCONFIGS
                : RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  if (rd_kafka_AdminOptions_set_request_timeout(opts, ADMIN_TIMEOUT_MS, errstr,
                                                sizeof(errstr)))
    diag("set_request_timeout: %s", errstr);
  if (validate_only &&
      rd_kafka_AdminOptions_set_validate_only(opts, 1, errstr, sizeof(errstr)))
    diag("set_validate_only: %s", errstr);
  if (alter)
    rd_kafka_AlterConfigs(rk, res, n, opts, rkqu);
  else
    rd_kafka_DescribeConfigs(rk, res, n, opts, rkqu);
  rd_kafka_AdminOptions_destroy(opts);

  rd_kafka_event_type_t want = alter ? RD_KAFKA_EVENT_ALTERCONFIGS_RESULT
                                     : RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT;
  int64_t deadline = dc_tu_now_ms() + POLL_TIMEOUT_MS;
  for (;;) {
    int left = (int)(deadline - dc_tu_now_ms());
    if (left <= 0) {
      diag("no %s result within %d ms", alter ? "AlterConfigs" : "DescribeConfigs",
           POLL_TIMEOUT_MS);
      return NULL;
    }
    rd_kafka_event_t *ev = rd_kafka_queue_poll(rkqu, left);
    if (!ev)
      continue;
    if (rd_kafka_event_type(ev) != want) {
      rd_kafka_event_destroy(ev); /* logs/errors: not ours */
      continue;
    }
    if (rd_kafka_event_error(ev)) {
      diag("%s failed as a whole: %s", alter ? "AlterConfigs" : "DescribeConfigs",
           rd_kafka_event_error_string(ev));
      rd_kafka_event_destroy(ev);
      return NULL;
    }
    return ev;
  }
}

static void copy_resource(const rd_kafka_ConfigResource_t *r, desc_t *d) {
  memset(d, 0, sizeof(*d));
  d->err = rd_kafka_ConfigResource_error(r);
  cpy(d->errstr, sizeof(d->errstr), rd_kafka_ConfigResource_error_string(r), NULL);
  d->type = (int)rd_kafka_ConfigResource_type(r);
  cpy(d->name, sizeof(d->name), rd_kafka_ConfigResource_name(r), NULL);
  size_t n;
  const rd_kafka_ConfigEntry_t **es = rd_kafka_ConfigResource_configs(r, &n);
  d->n = (int)n;
  for (size_t i = 0; i < n && i < sizeof(d->e) / sizeof(d->e[0]); i++) {
    entry_t *e = &d->e[i];
    cpy(e->name, sizeof(e->name), rd_kafka_ConfigEntry_name(es[i]), NULL);
    cpy(e->value, sizeof(e->value), rd_kafka_ConfigEntry_value(es[i]),
        &e->has_value);
    e->source = (int)rd_kafka_ConfigEntry_source(es[i]);
    e->read_only = rd_kafka_ConfigEntry_is_read_only(es[i]);
    e->is_default = rd_kafka_ConfigEntry_is_default(es[i]);
    e->is_sensitive = rd_kafka_ConfigEntry_is_sensitive(es[i]);
    size_t ns;
    const rd_kafka_ConfigEntry_t **ss = rd_kafka_ConfigEntry_synonyms(es[i], &ns);
    e->n_syn = (int)ns;
    for (size_t j = 0; j < ns && j < sizeof(e->syn) / sizeof(e->syn[0]); j++) {
      cpy(e->syn[j].name, sizeof(e->syn[j].name),
          rd_kafka_ConfigEntry_name(ss[j]), NULL);
      cpy(e->syn[j].value, sizeof(e->syn[j].value),
          rd_kafka_ConfigEntry_value(ss[j]), &e->syn[j].has_value);
      e->syn[j].source = (int)rd_kafka_ConfigEntry_source(ss[j]);
    }
  }
}

/* DescribeConfigs of n resources (types[i], names[i]); keys (NULL-terminated,
 * may be NULL) filters every resource. out[i] gets the result in request
 * order (librdkafka reorders to match), or err = NO_RESULT. */
static void describe_n(const int *types, const char *const *names, size_t n,
                       const char *const *keys, desc_t *out) {
  rd_kafka_ConfigResource_t *res[8];
  for (size_t i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof(out[i]));
    out[i].err = NO_RESULT;
    res[i] = rd_kafka_ConfigResource_new((rd_kafka_ResourceType_t)types[i],
                                         names[i]);
    /* The value is not sent by DescribeConfigs; NULL would be refused. */
    for (size_t k = 0; keys && keys[k]; k++)
      if (rd_kafka_ConfigResource_set_config(res[i], keys[k], ""))
        diag("set_config(%s) refused", keys[k]);
  }
  rd_kafka_event_t *ev = admin_call(false, res, n, false);
  if (ev) {
    size_t cnt;
    const rd_kafka_ConfigResource_t **rr = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(ev), &cnt);
    if (cnt != n)
      diag("DescribeConfigs returned %zu resources for %zu requested", cnt, n);
    for (size_t i = 0; i < cnt && i < n; i++)
      copy_resource(rr[i], &out[i]);
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_ConfigResource_destroy_array(res, n);
}

static void describe1(int type, const char *name, const char *const *keys,
                      desc_t *out) {
  describe_n(&type, &name, 1, keys, out);
}

/* AlterConfigs of n resources; kvs[i] is a NULL-terminated key, value, key,
 * value... list. errs[i] gets each resource's error code (NO_RESULT if none
 * came back), errstrs[i] its message. */
static void alter_n(const int *types, const char *const *names,
                    const char *const *const *kvs, size_t n, bool validate_only,
                    int *errs, char (*errstrs)[512]) {
  rd_kafka_ConfigResource_t *res[8];
  for (size_t i = 0; i < n; i++) {
    errs[i] = NO_RESULT;
    errstrs[i][0] = '\0';
    res[i] = rd_kafka_ConfigResource_new((rd_kafka_ResourceType_t)types[i],
                                         names[i]);
    for (size_t k = 0; kvs[i][k]; k += 2)
      rd_kafka_ConfigResource_set_config(res[i], kvs[i][k], kvs[i][k + 1]);
  }
  rd_kafka_event_t *ev = admin_call(true, res, n, validate_only);
  if (ev) {
    size_t cnt;
    const rd_kafka_ConfigResource_t **rr = rd_kafka_AlterConfigs_result_resources(
        rd_kafka_event_AlterConfigs_result(ev), &cnt);
    if (cnt != n)
      diag("AlterConfigs returned %zu resources for %zu requested", cnt, n);
    for (size_t i = 0; i < cnt && i < n; i++) {
      if (!rr[i])
        continue;
      errs[i] = rd_kafka_ConfigResource_error(rr[i]);
      cpy(errstrs[i], 512, rd_kafka_ConfigResource_error_string(rr[i]), NULL);
      if (strcmp(rd_kafka_ConfigResource_name(rr[i]), names[i]) ||
          (int)rd_kafka_ConfigResource_type(rr[i]) != types[i])
        diag("AlterConfigs result %zu is %d/%s, asked %d/%s", i,
             (int)rd_kafka_ConfigResource_type(rr[i]),
             rd_kafka_ConfigResource_name(rr[i]), types[i], names[i]);
    }
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_ConfigResource_destroy_array(res, n);
}

/* One resource; returns its error code; errstr (may be NULL) gets the
 * message. */
static int alter1(int type, const char *name, const char *const *kv,
                  bool validate_only, char *errstr, size_t errstr_size) {
  int err;
  char es[1][512];
  alter_n(&type, &name, &kv, 1, validate_only, &err, es);
  if (errstr)
    snprintf(errstr, errstr_size, "%s", es[0]);
  return err;
}

static const entry_t *find(const desc_t *d, const char *key) {
  for (int i = 0; i < d->n && i < (int)(sizeof(d->e) / sizeof(d->e[0])); i++)
    if (!strcmp(d->e[i].name, key))
      return &d->e[i];
  return NULL;
}

static void dump(const desc_t *d) {
  diag("  resource %d/%s err %d \"%s\", %d entries:", d->type, d->name, d->err,
       d->errstr, d->n);
  for (int i = 0; i < d->n && i < (int)(sizeof(d->e) / sizeof(d->e[0])); i++)
    diag("    %s=%s source %d ro %d default %d synonyms %d", d->e[i].name,
         d->e[i].has_value ? d->e[i].value : "(null)", d->e[i].source,
         d->e[i].read_only, d->e[i].is_default, d->e[i].n_syn);
}

/* Checks one entry's value and source, and that it looks like a dynamic,
 * writable, non-sensitive, non-Kafka-default config. */
static void check_entry(const desc_t *d, const char *key, const char *value,
                        int source) {
  const entry_t *e = find(d, key);
  if (!ok(e != NULL, "%s: %s is listed", d->name, key)) {
    dump(d);
    return;
  }
  is_str(e->has_value ? e->value : NULL, value, "%s: %s=%s", d->name, key, value);
  is_int(e->source, source, "%s: %s has source %d", d->name, key, source);
  ok(!e->read_only && !e->is_sensitive && !e->is_default,
     "%s: %s is writable, not sensitive, not a Kafka default", d->name, key);
}

/* The synonym with source 8 of d's entry key, or NULL. */
static const syn_t *default_synonym(const desc_t *d, const char *key) {
  const entry_t *e = find(d, key);
  for (int j = 0; e && j < e->n_syn && j < 4; j++)
    if (e->syn[j].source == SRC_DEFAULT)
      return &e->syn[j];
  return NULL;
}

#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_fresh(void) {
  desc_t d;
  describe1(9, "nobody", NULL, &d);
  is_int(d.err, 0, "fresh daemon: client with nothing set: no error");
  is_int(d.n, 0, "fresh daemon: client with nothing set: empty list");
  is_int(d.type, 9, "result echoes resource type 9");
  is_str(d.name, "nobody", "result echoes the resource name");

  describe1(9, "<default>", NULL, &d);
  is_int(d.err, 0, "fresh daemon: <default>: no error");
  is_int(d.n, 0, "fresh daemon: <default>: empty list");
}

static void test_resolution(void) {
  int types[2] = {9, 9};
  const char *names[2] = {"<default>", "svc-a"};
  const char *const *kvs[2] = {
      KV("session.timeout.ms", "30000", "heartbeat.interval.ms", "3000"),
      KV("acks", "1")};
  int errs[2];
  char es[2][512];
  alter_n(types, names, kvs, 2, false, errs, es);
  is_int(errs[0], 0, "AlterConfigs <default> session/heartbeat accepted %s", es[0]);
  is_int(errs[1], 0, "AlterConfigs svc-a acks=1 accepted %s", es[1]);

  desc_t d;
  describe1(9, "svc-a", NULL, &d);
  is_int(d.err, 0, "describe svc-a: no error");
  if (!ok(d.n == 3, "svc-a resolves to 3 keys (own acks + 2 inherited)"))
    dump(&d);
  check_entry(&d, "acks", "1", SRC_CLIENT);
  check_entry(&d, "session.timeout.ms", "30000", SRC_DEFAULT);
  check_entry(&d, "heartbeat.interval.ms", "3000", SRC_DEFAULT);
  ok(default_synonym(&d, "acks") == NULL,
     "svc-a: acks has no source-8 synonym (<default> does not set acks)");

  describe1(9, "svc-b", NULL, &d);
  is_int(d.err, 0, "describe svc-b (nothing of its own): no error");
  if (!ok(d.n == 2, "svc-b inherits exactly the 2 default keys"))
    dump(&d);
  check_entry(&d, "session.timeout.ms", "30000", SRC_DEFAULT);
  check_entry(&d, "heartbeat.interval.ms", "3000", SRC_DEFAULT);

  describe1(9, "<default>", NULL, &d);
  is_int(d.err, 0, "describe <default>: no error");
  if (!ok(d.n == 2, "<default> lists its own 2 keys"))
    dump(&d);
  check_entry(&d, "session.timeout.ms", "30000", SRC_DEFAULT);
  check_entry(&d, "heartbeat.interval.ms", "3000", SRC_DEFAULT);

  /* svc-a now shadows a default key: the default shows up as a synonym. */
  is_int(alter1(9, "svc-a", KV("acks", "all", "session.timeout.ms", "20000"),
                false, es[0], sizeof(es[0])),
         0, "AlterConfigs svc-a acks=all session.timeout.ms=20000 %s", es[0]);
  describe1(9, "svc-a", NULL, &d);
  if (!ok(d.err == 0 && d.n == 3, "svc-a: 3 keys after overriding session"))
    dump(&d);
  check_entry(&d, "acks", "all", SRC_CLIENT);
  check_entry(&d, "session.timeout.ms", "20000", SRC_CLIENT);
  check_entry(&d, "heartbeat.interval.ms", "3000", SRC_DEFAULT);
  const syn_t *s = default_synonym(&d, "session.timeout.ms");
  if (ok(s != NULL, "svc-a: shadowed default session.timeout.ms listed as a "
                    "source-8 synonym")) {
    is_str(s->name, "session.timeout.ms", "synonym name");
    is_str(s->has_value ? s->value : NULL, "30000",
           "synonym carries the default's value");
  } else {
    dump(&d);
  }

  /* ConfigurationKeys filter. */
  describe1(9, "svc-a", KV("heartbeat.interval.ms"), &d);
  ok(d.err == 0 && d.n == 1 && !strcmp(d.e[0].name, "heartbeat.interval.ms"),
     "ConfigurationKeys filter returns only the asked key");
  describe1(9, "svc-a", KV("acks", "session.timeout.ms"), &d);
  ok(d.err == 0 && d.n == 2 && find(&d, "acks") && find(&d, "session.timeout.ms"),
     "ConfigurationKeys filter with two keys returns those two");

  /* AlterConfigs is a full replacement of the override set. */
  is_int(alter1(9, "svc-a", KV("session.timeout.ms", "20000"), false, NULL, 0), 0,
         "AlterConfigs svc-a without acks accepted");
  describe1(9, "svc-a", NULL, &d);
  ok(find(&d, "acks") == NULL, "full replacement: acks is gone from svc-a");
  if (!ok(d.err == 0 && d.n == 2, "svc-a: 2 keys after replacement"))
    dump(&d);
  check_entry(&d, "session.timeout.ms", "20000", SRC_CLIENT);
  check_entry(&d, "heartbeat.interval.ms", "3000", SRC_DEFAULT);
}

/* An alter of svc-c that must fail with INVALID_CONFIG and mention what. */
static void expect_invalid(const char *const *kv, const char *mention,
                           const char *why) {
  char es[512];
  int err = alter1(9, "svc-c", kv, false, es, sizeof(es));
  is_int(err, ERR_INVALID_CONFIG, "%s -> INVALID_CONFIG", why);
  if (!ok(es[0] && strstr(es, mention),
          "%s: error message mentions %s", why, mention))
    diag("  message: \"%s\"", es);
}

static void test_validation(void) {
  desc_t d;
  expect_invalid(KV("acks", "2"), "acks", "acks=2");
  expect_invalid(KV("no.such.key", "1"), "no.such.key", "unknown key");
  expect_invalid(KV("session.timeout.ms", "5000"), "session.timeout.ms",
                 "session.timeout.ms below the server minimum 6000");
  expect_invalid(KV("session.timeout.ms", "1900000"), "session.timeout.ms",
                 "session.timeout.ms above the server maximum 1800000");
  expect_invalid(KV("session.timeout.ms", "abc"), "session.timeout.ms",
                 "non-numeric session.timeout.ms");
  expect_invalid(KV("heartbeat.interval.ms", "30000"), "heartbeat.interval.ms",
                 "heartbeat equal to the inherited session timeout");
  expect_invalid(KV("heartbeat.interval.ms", "40000"), "heartbeat.interval.ms",
                 "heartbeat above the inherited session timeout");
  expect_invalid(KV("session.timeout.ms", "8000", "heartbeat.interval.ms", "8000"),
                 "heartbeat.interval.ms", "heartbeat equal to its own session");
  expect_invalid(KV("linger.ms", "-5"), "linger.ms", "negative linger.ms");

  describe1(9, "svc-c", NULL, &d);
  ok(d.err == 0 && d.n == 2 && !find(&d, "acks") &&
         find(&d, "session.timeout.ms") &&
         find(&d, "session.timeout.ms")->source == SRC_DEFAULT,
     "rejected alters stored nothing for svc-c");

  is_int(alter1(9, "svc-c",
                KV("session.timeout.ms", "40000", "heartbeat.interval.ms", "35000"),
                false, NULL, 0),
         0, "heartbeat below its own (larger) session timeout is accepted");
  describe1(9, "svc-c", NULL, &d);
  check_entry(&d, "session.timeout.ms", "40000", SRC_CLIENT);
  check_entry(&d, "heartbeat.interval.ms", "35000", SRC_CLIENT);
  const syn_t *s = default_synonym(&d, "heartbeat.interval.ms");
  ok(s && s->has_value && !strcmp(s->value, "3000"),
     "svc-c: default heartbeat 3000 is the source-8 synonym");

  /* Per resource all or nothing: one bad key fails the whole change. */
  is_int(alter1(9, "svc-f", KV("acks", "1", "session.timeout.ms", "1"), false,
                NULL, 0),
         ERR_INVALID_CONFIG, "svc-f: good acks + bad session -> INVALID_CONFIG");
  describe1(9, "svc-f", NULL, &d);
  ok(d.err == 0 && !find(&d, "acks"), "svc-f: acks was not half-applied");

  /* validate_only validates and stores nothing. */
  is_int(alter1(9, "svc-f", KV("acks", "0"), true, NULL, 0), 0,
         "validate_only alter of a valid value: no error");
  is_int(alter1(9, "svc-f", KV("acks", "7"), true, NULL, 0), ERR_INVALID_CONFIG,
         "validate_only alter of an invalid value: INVALID_CONFIG");
  describe1(9, "svc-f", NULL, &d);
  ok(d.err == 0 && !find(&d, "acks"), "validate_only stored nothing");

  /* Errors are per resource: a good and a bad resource in one request. */
  int types[2] = {9, 9};
  const char *names[2] = {"svc-d", "svc-e"};
  const char *const *kvs[2] = {KV("acks", "0"), KV("acks", "bogus")};
  int errs[2];
  char es[2][512];
  alter_n(types, names, kvs, 2, false, errs, es);
  is_int(errs[0], 0, "mixed request: the valid resource is accepted");
  is_int(errs[1], ERR_INVALID_CONFIG, "mixed request: the invalid one is refused");
  describe1(9, "svc-d", NULL, &d);
  check_entry(&d, "acks", "0", SRC_CLIENT);
  describe1(9, "svc-e", NULL, &d);
  ok(d.err == 0 && !find(&d, "acks"), "svc-e stored nothing");

  /* Entity names: at most 255 bytes. */
  char name255[256], name256[257];
  memset(name255, 'n', 255);
  name255[255] = '\0';
  memset(name256, 'n', 256);
  name256[256] = '\0';
  is_int(alter1(9, name255, KV("acks", "1"), false, NULL, 0), 0,
         "255-byte client-id accepted");
  describe1(9, name255, NULL, &d);
  ok(d.err == 0 && find(&d, "acks") && find(&d, "acks")->source == SRC_CLIENT,
     "255-byte client-id described");
  ok(alter1(9, name256, KV("acks", "1"), false, NULL, 0) > 0,
     "256-byte client-id refused with an error");
}

static void test_other_types(void) {
  desc_t d;
  char es[512];
  describe1(RD_KAFKA_RESOURCE_TOPIC, "some-topic", NULL, &d);
  is_int(d.err, ERR_INVALID_REQUEST, "describe TOPIC -> INVALID_REQUEST");
  ok(d.errstr[0] != '\0', "describe TOPIC carries a message (\"%s\")", d.errstr);
  is_int(d.n, 0, "describe TOPIC lists no configs");
  is_int(alter1(RD_KAFKA_RESOURCE_TOPIC, "some-topic", KV("acks", "1"), false,
                es, sizeof(es)),
         ERR_INVALID_REQUEST, "alter TOPIC -> INVALID_REQUEST");
  describe1(RD_KAFKA_RESOURCE_GROUP, "some-group", NULL, &d);
  is_int(d.err, ERR_INVALID_REQUEST, "describe GROUP (3) -> INVALID_REQUEST");

  int types[2] = {9, RD_KAFKA_RESOURCE_TOPIC};
  const char *names[2] = {"svc-a", "some-topic"};
  desc_t two[2];
  describe_n(types, names, 2, NULL, two);
  ok(two[0].err == 0 && two[0].n == 2,
     "mixed describe: the CLIENT resource is answered");
  is_int(two[1].err, ERR_INVALID_REQUEST,
         "mixed describe: the TOPIC resource gets INVALID_REQUEST");

  /* BROKER 1: the server's own settings, read-only. */
  describe1(RD_KAFKA_RESOURCE_BROKER, "1", NULL, &d);
  is_int(d.err, 0, "describe BROKER 1: no error");
  ok(d.n >= 1, "describe BROKER 1 lists the server's settings (%d)", d.n);
  int all_ro = d.n >= 1, all_static = d.n >= 1, all_valued = d.n >= 1;
  for (int i = 0; i < d.n && i < 24; i++) {
    all_ro &= d.e[i].read_only;
    all_static &= d.e[i].source == SRC_STATIC_BROKER;
    all_valued &= d.e[i].has_value && d.e[i].name[0];
  }
  ok(all_ro, "every BROKER entry is read-only");
  ok(all_static, "every BROKER entry has source 4 (static broker config)");
  ok(all_valued, "every BROKER entry has a name and a value");
  if (!all_ro || !all_static || !all_valued)
    dump(&d);
  int before = d.n;
  int err = alter1(RD_KAFKA_RESOURCE_BROKER, "1", KV("log.retention.ms", "1"),
                   false, es, sizeof(es));
  ok(err > 0, "alter BROKER 1 is refused (error %d \"%s\")", err, es);
  ok(es[0] != '\0', "the refusal carries a message");
  describe1(RD_KAFKA_RESOURCE_BROKER, "1", NULL, &d);
  ok(d.err == 0 && d.n == before && !find(&d, "log.retention.ms"),
     "BROKER 1 is unchanged after the refused alter");
}

/* Restart on the same data dir: the overrides are still served. */
static void test_restart(dc_tu_daemon_t *dd, const char *data_dir,
                         const char *log_path) {
  char errstr[256];
  client_destroy();
  is_int(dc_tu_daemon_stop(dd), 0, "SIGTERM: dynconfd exits 0");
  if (!ok(dc_tu_daemon_start(dd, data_dir, log_path, NULL, errstr,
                             sizeof(errstr)) == 0,
          "dynconfd restarts on the same data dir")) {
    diag("%s", errstr);
    return;
  }
  if (!ok(client_new(dd->port) == 0, "new librdkafka client"))
    return;
  desc_t d;
  describe1(9, "svc-a", NULL, &d);
  ok(d.err == 0 && d.n == 2, "after restart svc-a still has 2 keys");
  check_entry(&d, "session.timeout.ms", "20000", SRC_CLIENT);
  check_entry(&d, "heartbeat.interval.ms", "3000", SRC_DEFAULT);
  describe1(9, "svc-d", NULL, &d);
  check_entry(&d, "acks", "0", SRC_CLIENT);
}

int main(void) {
  char tmp[512], data_dir[600], log_path[600];
  char errstr[256];
  dc_tu_daemon_t dd;
  memset(&dd, 0, sizeof(dd));
  if (dc_tu_tmpdir(tmp, sizeof(tmp))) {
    printf("Bail out! cannot create a scratch dir\n");
    return 1;
  }
  snprintf(data_dir, sizeof(data_dir), "%s/data", tmp);
  snprintf(log_path, sizeof(log_path), "%s/dynconfd.log", tmp);
  mkdir(data_dir, 0700);

  int started = dc_tu_daemon_start(&dd, data_dir, log_path, NULL, errstr,
                                   sizeof(errstr)) == 0;
  if (!ok(started, "dynconfd starts and prints its listening line")) {
    diag("%s", errstr);
    dc_tu_daemon_log_tail(&dd, 20);
    dc_tu_rmrf(tmp);
    return done_testing();
  }
  if (ok(client_new(dd.port) == 0, "librdkafka admin client created")) {
    test_fresh();
    test_resolution();
    test_validation();
    test_other_types();
    test_restart(&dd, data_dir, log_path);
  }
  client_destroy();
  ok(dc_tu_daemon_alive(&dd), "dynconfd still running at the end");
  is_int(dc_tu_daemon_stop(&dd), 0, "SIGTERM: dynconfd exits 0");
  if (tap_failed)
    dc_tu_daemon_log_tail(&dd, 30);
  dc_tu_rmrf(tmp);
  return done_testing();
}
