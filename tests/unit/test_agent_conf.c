/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's configuration object (lib/agent/conf.c): every dynconf.*
 * property's default, valid and invalid values, the struct field each one
 * lands in, unknown properties, NULL values, dynconf_conf_get's size query
 * and truncation, dup independence, the properties table printout, and
 * the enum-name and version functions.
 */
#include "agent/agent_int.h"
#include "../tap.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fault injection: conf.c copies strings with strdup; this definition
 * (linked ahead of libc's, the agent library is static) fails on demand.
 * -1 = never; N >= 0 = N more successes, then NULL. */
static long strdup_budget = -1;

char *strdup(const char *s) {
  if (strdup_budget == 0)
    return NULL;
  if (strdup_budget > 0)
    strdup_budget--;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

#define DEFAULT_ALLOW "acks,session.timeout.ms,heartbeat.interval.ms"

typedef enum { T_STR, T_INT, T_BOOL } ptype_t;

/* The table of lib/agent/conf.c, restated: name, type, where it lands,
 * range, default. */
static const struct prop {
  const char *name;
  ptype_t type;
  size_t offset;
  long long min, max;
  const char *def;
} props[] = {
#define O(f) offsetof(dynconf_conf_t, f)
    {"dynconf.bootstrap.servers", T_STR, O(bootstrap_servers), 0, 0, ""},
    {"dynconf.client.id", T_STR, O(client_id), 0, 0, ""},
    {"dynconf.refresh.interval.ms", T_INT, O(refresh_interval_ms), -1,
     86400000, "-1"},
    {"dynconf.startup.timeout.ms", T_INT, O(startup_timeout_ms), 1, 3600000,
     "10000"},
    {"dynconf.startup.required", T_BOOL, O(startup_required), 0, 1, "false"},
    {"dynconf.allow.keys", T_STR, O(allow_keys), 0, 0, DEFAULT_ALLOW},
    {"dynconf.resource.type", T_INT, O(resource_type), 0, 127, "9"},
    {"dynconf.request.timeout.ms", T_INT, O(request_timeout_ms), 10, 3600000,
     "10000"},
    {"dynconf.retry.backoff.ms", T_INT, O(retry_backoff_ms), 1, 3600000,
     "1000"},
    {"dynconf.retry.backoff.max.ms", T_INT, O(retry_backoff_max_ms), 1,
     86400000, "60000"},
    {"dynconf.unsupported.reprobe.ms", T_INT, O(unsupported_reprobe_ms), 1000,
     86400000, "600000"},
    {"dynconf.refresh.jitter.pct", T_INT, O(jitter_pct), 0, 50, "10"},
    {"dynconf.log.level", T_INT, O(log_level), 0, 7, "6"},
    {"dynconf.producer.max.block.ms", T_INT, O(producer_max_block_ms), 0,
     3600000, "60000"},
    {"dynconf.producer.close.timeout.ms", T_INT, O(producer_close_timeout_ms),
     0, 3600000, "30000"},
    {"dynconf.ssl.check.interval.ms", T_INT, O(ssl_check_interval_ms), 0,
     86400000, "10000"},
    {"dynconf.apply.live", T_BOOL, O(apply_live), 0, 1, "true"},
    {"dynconf.log.queue", T_BOOL, O(log_queue), 0, 1, "true"},
    {"dynconf.software.name", T_STR, O(software_name), 0, 0, "dynconf-agent"},
    {"dynconf.client.library", T_STR, O(client_library), 0, 0, ""},
    {"dynconf.watch", T_BOOL, O(watch), 0, 1, "true"},
    /* Overrides of the application's connection settings. */
#define S(id, name) {"dynconf." name, T_STR, O(sec[DC_SEC_##id]), 0, 0, ""}
    S(PROTOCOL, "security.protocol"),
    S(CA_LOCATION, "ssl.ca.location"),
    S(CA_PEM, "ssl.ca.pem"),
    S(CERT_LOCATION, "ssl.certificate.location"),
    S(CERT_PEM, "ssl.certificate.pem"),
    S(KEY_LOCATION, "ssl.key.location"),
    S(KEY_PEM, "ssl.key.pem"),
    S(KEY_PASSWORD, "ssl.key.password"),
    S(KEYSTORE_LOCATION, "ssl.keystore.location"),
    S(KEYSTORE_PASSWORD, "ssl.keystore.password"),
    S(ENDPOINT_ID, "ssl.endpoint.identification.algorithm"),
    S(CIPHER_SUITES, "ssl.cipher.suites"),
    S(CERT_VERIFY, "enable.ssl.certificate.verification"),
    S(SASL_MECHANISMS, "sasl.mechanisms"),
    S(SASL_USERNAME, "sasl.username"),
    S(SASL_PASSWORD, "sasl.password"),
    S(OAUTH_CONFIG, "sasl.oauthbearer.config"),
    S(OAUTH_UNSECURE, "enable.sasl.oauthbearer.unsecure.jwt"),
    S(KRB_SERVICE, "sasl.kerberos.service.name"),
    S(KRB_PRINCIPAL, "sasl.kerberos.principal"),
    S(KRB_KEYTAB, "sasl.kerberos.keytab"),
#undef S
#undef O
};
#define NPROPS (sizeof(props) / sizeof(props[0]))

/* The value of a property, read with a generous buffer. */
static const char *get(const dynconf_conf_t *c, const char *name) {
  static char buf[512];
  size_t sz = sizeof(buf);
  if (dynconf_conf_get(c, name, buf, &sz) != DYNCONF_CONF_OK)
    return NULL;
  return buf;
}

static int field_int(const dynconf_conf_t *c, const struct prop *p) {
  return *(const int *)((const char *)c + p->offset);
}
static const char *field_str(const dynconf_conf_t *c, const struct prop *p) {
  return *(char *const *)((const char *)c + p->offset);
}

static void test_defaults(void) {
  dynconf_conf_t *c = dynconf_conf_new();
  if (!ok(c != NULL, "dynconf_conf_new"))
    return;
  for (size_t i = 0; i < NPROPS; i++) {
    const struct prop *p = &props[i];
    is_str(get(c, p->name), p->def, "default of %s", p->name);
    if (p->type == T_STR)
      is_str(field_str(c, p), p->def, "%s field holds the default", p->name);
    else if (p->type == T_INT)
      is_int(field_int(c, p), strtoll(p->def, NULL, 10),
             "%s field holds the default", p->name);
    else
      is_int(field_int(c, p), !strcmp(p->def, "true"),
             "%s field holds %s", p->name, p->def);
  }
  ok(c->change_cb == NULL && c->log_cb == NULL && c->opaque == NULL,
     "no callbacks or opaque by default");
  dynconf_conf_destroy(c);
  dynconf_conf_destroy(NULL); /* must not crash (ASan would say) */

  dynconf_conf_t s;
  is_int(dc_conf_init_defaults(&s), 0, "dc_conf_init_defaults on a struct");
  is_int(s.resource_type, 9, "struct defaults: resource type 9");
  dc_conf_free_fields(&s);
  ok(s.allow_keys == NULL && s.client_id == NULL,
     "dc_conf_free_fields clears the string fields");
  dc_conf_free_fields(&s);
  ok(s.allow_keys == NULL && s.client_id == NULL,
     "dc_conf_free_fields twice leaves the fields cleared");
}

/* One set that must fail: result, errstr content, value unchanged. */
static void set_bad(dynconf_conf_t *c, const struct prop *p, const char *v,
                    dynconf_conf_res_t want, const char *errpart) {
  char before[512], err[512];
  snprintf(before, sizeof(before), "%s", get(c, p->name));
  err[0] = '\0';
  dynconf_conf_res_t r = dynconf_conf_set(c, p->name, v, err, sizeof(err));
  is_int(r, want, "%s=\"%s\" refused", p->name, v ? v : "(NULL)");
  if (!ok(err[0] && strstr(err, errpart), "  errstr mentions '%s'", errpart))
    diag("  errstr: %s", err);
  is_str(get(c, p->name), before, "  %s unchanged", p->name);
}

static void set_good(dynconf_conf_t *c, const struct prop *p, const char *v,
                     const char *readback) {
  char err[512] = "";
  is_int(dynconf_conf_set(c, p->name, v, err, sizeof(err)), DYNCONF_CONF_OK,
         "%s=\"%s\" accepted", p->name, v);
  if (err[0])
    diag("  errstr: %s", err);
  is_str(get(c, p->name), readback, "  reads back \"%s\"", readback);
}

static void test_ints(void) {
  dynconf_conf_t *c = dynconf_conf_new();
  for (size_t i = 0; i < NPROPS; i++) {
    const struct prop *p = &props[i];
    if (p->type != T_INT)
      continue;
    char v[64];
    snprintf(v, sizeof(v), "%lld", p->min);
    set_good(c, p, v, v);
    is_int(field_int(c, p), p->min, "  %s field = min", p->name);
    snprintf(v, sizeof(v), "%lld", p->max);
    set_good(c, p, v, v);
    is_int(field_int(c, p), p->max, "  %s field = max", p->name);
    snprintf(v, sizeof(v), "%lld", (p->min + p->max) / 2);
    set_good(c, p, v, v);
    snprintf(v, sizeof(v), "%lld", p->min - 1);
    set_bad(c, p, v, DYNCONF_CONF_INVALID, p->name);
    snprintf(v, sizeof(v), "%lld", p->max + 1);
    set_bad(c, p, v, DYNCONF_CONF_INVALID, p->name);
    static const char *const junk[] = {
        "abc", "", "1.5", " 5", "5 ", "+5", "0x10", "5ms",
        "99999999999999999999", "-99999999999999999999", "4294967305"};
    for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++)
      set_bad(c, p, junk[j], DYNCONF_CONF_INVALID, p->name);
    char err[256];
    dynconf_conf_set(c, p->name, "abc", err, sizeof(err));
    ok(strstr(err, "integer") != NULL, "  %s: errstr says integer: %s",
       p->name, err);
  }
  dynconf_conf_destroy(c);
}

static void test_bool_and_strings(void) {
  dynconf_conf_t *c = dynconf_conf_new();
  const struct prop *req = NULL, *allow = NULL, *bs = NULL, *cid = NULL;
  for (size_t i = 0; i < NPROPS; i++) {
    if (!strcmp(props[i].name, "dynconf.startup.required"))
      req = &props[i];
    if (!strcmp(props[i].name, "dynconf.allow.keys"))
      allow = &props[i];
    if (!strcmp(props[i].name, "dynconf.bootstrap.servers"))
      bs = &props[i];
    if (!strcmp(props[i].name, "dynconf.client.id"))
      cid = &props[i];
  }
  set_good(c, req, "true", "true");
  is_int(c->startup_required, 1, "  startup_required field 1");
  set_good(c, req, "false", "false");
  is_int(c->startup_required, 0, "  startup_required field 0");
  set_good(c, req, "true", "true");
  static const char *const badb[] = {"TRUE", "True", "1", "0", "yes", "no",
                                     "",     " true", "true ", "on"};
  for (size_t j = 0; j < sizeof(badb) / sizeof(badb[0]); j++)
    set_bad(c, req, badb[j], DYNCONF_CONF_INVALID, "true or false");
  is_int(c->startup_required, 1, "  still true after the bad spellings");

  set_good(c, bs, "127.0.0.1:9092,127.0.0.1:9093", "127.0.0.1:9092,127.0.0.1:9093");
  is_str(c->bootstrap_servers, "127.0.0.1:9092,127.0.0.1:9093",
         "  bootstrap_servers field");
  set_good(c, bs, "", "");
  set_good(c, cid, "my-client", "my-client");
  is_str(c->client_id, "my-client", "  client_id field");
  char longv[300];
  memset(longv, 'a', sizeof(longv) - 1);
  longv[sizeof(longv) - 1] = '\0';
  set_good(c, cid, longv, longv);

  set_good(c, allow, "linger.ms, acks", "linger.ms, acks");
  is_str(c->allow_keys, "linger.ms, acks", "  stored as given");
  set_good(c, allow, "", "");
  set_good(c, allow, "acks,acks", "acks,acks");
  set_bad(c, allow, "acks,nope.key", DYNCONF_CONF_INVALID, "\"nope.key\"");
  set_bad(c, allow, "bootstrap.servers", DYNCONF_CONF_INVALID,
          "dynconf.allow.keys");
  set_bad(c, allow, "Acks", DYNCONF_CONF_INVALID, "Acks");

  /* NULL values, for every property. */
  for (size_t i = 0; i < NPROPS; i++)
    set_bad(c, &props[i], NULL, DYNCONF_CONF_INVALID, props[i].name);

  /* errstr may be NULL with size 0. */
  is_int(dynconf_conf_set(c, "dynconf.log.level", "99", NULL, 0),
         DYNCONF_CONF_INVALID, "invalid value with a NULL errstr");
  is_int(dynconf_conf_set(c, "no.such", "1", NULL, 0), DYNCONF_CONF_UNKNOWN,
         "unknown property with a NULL errstr");
  char tiny[6];
  memset(tiny, 'x', sizeof(tiny));
  is_int(dynconf_conf_set(c, "dynconf.log.level", "99", tiny, sizeof(tiny)),
         DYNCONF_CONF_INVALID, "invalid value with a tiny errstr");
  ok(memchr(tiny, '\0', sizeof(tiny)) != NULL, "  tiny errstr terminated");
  dynconf_conf_destroy(c);
}

/* The software name reported to the fleet: 1 to 64 characters. */
static void test_software_name(void) {
  dynconf_conf_t *c = dynconf_conf_new();
  char err[256], long_name[80];
  memset(long_name, 'x', 65);
  long_name[65] = '\0';
  is_int(dynconf_conf_set(c, "dynconf.software.name", "", err, sizeof(err)),
         DYNCONF_CONF_INVALID, "software.name: empty refused");
  is_str(err, "dynconf.software.name must be 1 to 64 characters long, not 0",
         "  saying why");
  is_int(dynconf_conf_set(c, "dynconf.software.name", long_name, err,
                          sizeof(err)),
         DYNCONF_CONF_INVALID, "  65 characters refused");
  long_name[64] = '\0';
  is_int(dynconf_conf_set(c, "dynconf.software.name", long_name, err,
                          sizeof(err)),
         DYNCONF_CONF_OK, "  64 taken");
  is_str(get(c, "dynconf.software.name"), long_name, "  and kept");
  dynconf_conf_destroy(c);
}

static void test_unknown(void) {
  dynconf_conf_t *c = dynconf_conf_new();
  static const char *const names[] = {
      "no.such.property", "bootstrap.servers", "dynconf.Bootstrap.servers",
      "dynconf.bootstrap.servers ", "dynconf", "", "dynconf.allow.keys.x"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char err[256] = "";
    is_int(dynconf_conf_set(c, names[i], "1", err, sizeof(err)),
           DYNCONF_CONF_UNKNOWN, "set \"%s\": UNKNOWN", names[i]);
    char want[300];
    snprintf(want, sizeof(want), "\"%s\"", names[i]);
    ok(strstr(err, want) && strstr(err, "No such configuration property"),
       "  errstr names it: %s", err);
    char buf[16] = "untouched";
    size_t sz = sizeof(buf);
    is_int(dynconf_conf_get(c, names[i], buf, &sz), DYNCONF_CONF_UNKNOWN,
           "get \"%s\": UNKNOWN", names[i]);
    ok(sz == sizeof(buf) && !strcmp(buf, "untouched"),
       "  get leaves dest and size alone");
  }
  /* An unknown property with a NULL value is still UNKNOWN. */
  is_int(dynconf_conf_set(c, "no.such", NULL, NULL, 0), DYNCONF_CONF_UNKNOWN,
         "unknown property with a NULL value: UNKNOWN");
  dynconf_conf_destroy(c);
}

static void test_get_sizes(void) {
  dynconf_conf_t *c = dynconf_conf_new();
  const char *name = "dynconf.allow.keys";
  size_t need = strlen(DEFAULT_ALLOW) + 1;
  size_t sz = 12345;
  is_int(dynconf_conf_get(c, name, NULL, &sz), DYNCONF_CONF_OK,
         "size query with dest NULL");
  is_int(sz, need, "size query: strlen + 1");
  sz = 0;
  is_int(dynconf_conf_get(c, name, NULL, &sz), DYNCONF_CONF_OK,
         "size query with *dest_size 0");
  is_int(sz, need, "  size still reported");
  char buf[64];
  memset(buf, 'x', sizeof(buf));
  sz = 5;
  is_int(dynconf_conf_get(c, name, buf, &sz), DYNCONF_CONF_OK,
         "get into a 5-byte buffer");
  is_str(buf, "acks", "  truncated to 4 chars + NUL");
  is_int(buf[5], 'x', "  nothing written past the buffer");
  is_int(sz, need, "  *dest_size is the size needed");
  memset(buf, 'x', sizeof(buf));
  sz = 0;
  dynconf_conf_get(c, name, buf, &sz);
  is_int(buf[0], 'x', "*dest_size 0: dest untouched");
  sz = need;
  dynconf_conf_get(c, name, buf, &sz);
  is_str(buf, DEFAULT_ALLOW, "exact size: whole value");
  sz = 1;
  dynconf_conf_get(c, name, buf, &sz);
  is_str(buf, "", "size 1: empty string");
  sz = 2;
  dynconf_conf_get(c, "dynconf.refresh.interval.ms", buf, &sz);
  is_str(buf, "-", "an integer truncated too");
  is_int(sz, 3, "  needs 3 for \"-1\"");
  sz = sizeof(buf);
  dynconf_conf_get(c, "dynconf.startup.required", buf, &sz);
  is_int(sz, 6, "bool size: \"false\" + NUL");
  sz = sizeof(buf);
  dynconf_conf_get(c, "dynconf.client.id", buf, &sz);
  ok(sz == 1 && buf[0] == '\0', "empty string: size 1");
  dynconf_conf_destroy(c);
}

static void cb_change(dynconf_t *dc, const dynconf_event_t *ev, void *op) {
  (void)dc, (void)ev, (void)op;
}
static void cb_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  (void)dc, (void)level, (void)fac, (void)msg;
}

static void test_dup(void) {
  dynconf_conf_t *a = dynconf_conf_new();
  char err[256];
  int opaque;
  dynconf_conf_set(a, "dynconf.client.id", "orig", err, sizeof(err));
  dynconf_conf_set(a, "dynconf.log.level", "3", err, sizeof(err));
  dynconf_conf_set(a, "dynconf.startup.required", "true", err, sizeof(err));
  dynconf_conf_set_change_cb(a, cb_change);
  dynconf_conf_set_log_cb(a, cb_log);
  dynconf_conf_set_opaque(a, &opaque);
  ok(a->change_cb == cb_change && a->log_cb == cb_log && a->opaque == &opaque,
     "setters store the callbacks and opaque");
  dynconf_conf_t *b = dynconf_conf_dup(a);
  if (!ok(b != NULL, "dynconf_conf_dup")) {
    dynconf_conf_destroy(a);
    return;
  }
  bool eq = true, own = true;
  for (size_t i = 0; i < NPROPS; i++) {
    char va[512];
    snprintf(va, sizeof(va), "%s", get(a, props[i].name));
    eq &= !strcmp(va, get(b, props[i].name));
    if (props[i].type == T_STR)
      own &= field_str(a, &props[i]) != field_str(b, &props[i]);
  }
  ok(eq, "dup: every property equal");
  ok(own, "dup: every string is its own copy");
  ok(b->change_cb == cb_change && b->log_cb == cb_log && b->opaque == &opaque,
     "dup: callbacks and opaque copied");
  dynconf_conf_set(b, "dynconf.client.id", "copy", err, sizeof(err));
  dynconf_conf_set(b, "dynconf.log.level", "7", err, sizeof(err));
  dynconf_conf_set(b, "dynconf.allow.keys", "acks", err, sizeof(err));
  dynconf_conf_set_change_cb(b, NULL);
  is_str(get(a, "dynconf.client.id"), "orig", "changing the copy: orig id");
  is_str(get(a, "dynconf.log.level"), "3", "changing the copy: orig level");
  is_str(get(a, "dynconf.allow.keys"), DEFAULT_ALLOW,
         "changing the copy: orig allow list");
  ok(a->change_cb == cb_change, "changing the copy: orig callback");
  dynconf_conf_set(a, "dynconf.client.id", "orig2", err, sizeof(err));
  is_str(get(b, "dynconf.client.id"), "copy", "changing the orig: copy kept");
  dynconf_conf_destroy(a);
  is_str(get(b, "dynconf.client.id"), "copy", "copy outlives the original");
  is_str(get(b, "dynconf.bootstrap.servers"), "", "  and its other strings");
  dynconf_conf_destroy(b);
}

static void test_show(void) {
  FILE *fp = tmpfile();
  if (!ok(fp != NULL, "tmpfile"))
    return;
  dynconf_conf_properties_show(fp);
  long len = ftell(fp);
  rewind(fp);
  char *text = calloc(1, (size_t)len + 1);
  size_t got = fread(text, 1, (size_t)len, fp);
  fclose(fp);
  is_int(got, len, "read the table back");
  static const char hdr[] =
      "| property | default | description |\n|---|---|---|\n";
  ok(!strncmp(text, hdr, sizeof(hdr) - 1), "markdown header");
  int lines = 0;
  for (const char *p = text; *p; p++)
    lines += *p == '\n';
  is_int(lines, 2 + NPROPS, "one line per property plus the header");
  for (size_t i = 0; i < NPROPS; i++) {
    char want[300];
    snprintf(want, sizeof(want), "| `%s` | `%s` | ", props[i].name,
             props[i].def);
    const char *at = strstr(text, want);
    ok(at != NULL, "table lists %s with default %s", props[i].name,
       props[i].def);
    const char *desc = at ? at + strlen(want) : NULL;
    ok(desc && *desc != '\n' && *desc != '|', "  %s has a description",
       props[i].name);
  }
  /* Every property the table shows is one conf_set knows (no stale rows). */
  dynconf_conf_t *c = dynconf_conf_new();
  int rows = 0, known = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char name[128];
    if (sscanf(line, "| `%127[^`]`", name) == 1) {
      rows++;
      size_t sz = 0;
      known += dynconf_conf_get(c, name, NULL, &sz) == DYNCONF_CONF_OK;
    }
  }
  is_int(rows, NPROPS, "%zu property rows", NPROPS);
  is_int(known, rows, "every row is a settable property");
  dynconf_conf_destroy(c);
  free(text);
}

static void test_names_and_version(void) {
  is_str(dynconf_source_name(DYNCONF_SOURCE_APP), "application", "APP");
  is_str(dynconf_source_name(DYNCONF_SOURCE_CLIENT), "client-override",
         "CLIENT");
  is_str(dynconf_source_name(DYNCONF_SOURCE_DEFAULT), "default-entity",
         "DEFAULT");
  is_str(dynconf_source_name((dynconf_source_t)99), "unknown",
         "unknown source");
  is_str(dynconf_outcome_name(DYNCONF_OUTCOME_APPLIED), "applied", "APPLIED");
  is_str(dynconf_outcome_name(DYNCONF_OUTCOME_REJECTED), "rejected",
         "REJECTED");
  is_str(dynconf_outcome_name(DYNCONF_OUTCOME_PINNED), "pinned", "PINNED");
  is_str(dynconf_outcome_name(DYNCONF_OUTCOME_IGNORED), "ignored", "IGNORED");
  is_str(dynconf_outcome_name((dynconf_outcome_t)-1), "unknown",
         "unknown outcome");
  is_str(dynconf_state_name(DYNCONF_STATE_INIT), "init", "INIT");
  is_str(dynconf_state_name(DYNCONF_STATE_UP), "up", "UP");
  is_str(dynconf_state_name(DYNCONF_STATE_DEGRADED), "degraded", "DEGRADED");
  is_str(dynconf_state_name(DYNCONF_STATE_UNSUPPORTED), "unsupported",
         "UNSUPPORTED");
  is_str(dynconf_state_name((dynconf_state_t)42), "unknown", "unknown state");

  is_int(dynconf_version(), DYNCONF_VERSION, "runtime version = header");
  is_str(dynconf_version_str(), DYNCONF_VERSION_STR,
         "runtime version string = header");
  char v[32];
  int n = dynconf_version();
  snprintf(v, sizeof(v), "%d.%d.%d", (n >> 16) & 0xff, (n >> 8) & 0xff,
           n & 0xff);
  is_str(dynconf_version_str(), v, "version string matches the number");
}

/* Out of memory in new, dup and set: NULL or INVALID, nothing leaked
 * (valgrind), the original untouched. */
static void test_oom(void) {
  int fails = 0;
  long b;
  for (b = 0; b < 100; b++) {
    strdup_budget = b;
    dynconf_conf_t *c = dynconf_conf_new();
    strdup_budget = -1;
    if (c) {
      dynconf_conf_destroy(c);
      break;
    }
    fails++;
  }
  int nstr = 0;
  for (size_t i = 0; i < NPROPS; i++)
    nstr += props[i].type == T_STR;
  ok(fails == nstr && b == nstr,
     "dynconf_conf_new: NULL when any of its %d string copies fails (%d)",
     nstr, fails);

  dynconf_conf_t *a = dynconf_conf_new();
  char err[256];
  dynconf_conf_set(a, "dynconf.client.id", "orig", err, sizeof(err));
  fails = 0;
  for (b = 0; b < 100; b++) {
    strdup_budget = b;
    dynconf_conf_t *c = dynconf_conf_dup(a);
    strdup_budget = -1;
    if (c) {
      dynconf_conf_destroy(c);
      break;
    }
    fails++;
  }
  ok(fails == nstr && b == nstr,
     "dynconf_conf_dup: NULL on each failing copy (%d)", fails);
  is_str(get(a, "dynconf.client.id"), "orig", "original intact after dups");

  strdup_budget = 0;
  dynconf_conf_res_t r =
      dynconf_conf_set(a, "dynconf.client.id", "new", err, sizeof(err));
  strdup_budget = -1;
  is_int(r, DYNCONF_CONF_INVALID, "set under OOM: INVALID");
  is_str(err, "out of memory", "  errstr says out of memory");
  is_str(get(a, "dynconf.client.id"), "orig", "  value unchanged");
  dynconf_conf_destroy(a);
}

int main(void) {
  test_oom();
  test_software_name();
  test_defaults();
  test_ints();
  test_bool_and_strings();
  test_unknown();
  test_get_sizes();
  test_dup();
  test_show();
  test_names_and_version();
  return done_testing();
}
