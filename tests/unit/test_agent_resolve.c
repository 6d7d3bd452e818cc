/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's pure decision logic (lib/agent/resolve.c: dc_resolve,
 * dc_allow_parse/index, dc_fetched_find, dc_effective_copy/free) and the
 * event accessors (lib/agent/event.c), driven with hand-built app
 * settings, allow lists and fetched sets: change detection, sources,
 * deletion, sorting, IGNORED/PINNED/REJECTED outcomes, the consumer
 * cross-key rules, recovery after a rejection (the set judged whole), the
 * culprit always carrying the specific reason, out-of-memory paths, and a
 * fixed-seed randomized run comparing every event, entry and effective
 * config with an independent model of the rules; the mapping of the wire's
 * config sources (7, 8 and the principal-scoped 9 user, 10 user+client-id)
 * to the public enum and their names; dc_fetched_set_normalize (sorting,
 * duplicate keys refused, the entry limit) and a set of
 * DC_AGENT_MAX_ENTRIES entries: found by binary search, resolved, the same
 * set again no event, and ten times the entries costing far less than the
 * hundred times a quadratic resolve would.
 *
 * The rules (the lead's, for the rewritten dc_resolve):
 * 1. no event iff the fetched set equals the previous one (keys, values,
 *    sources);
 * 2. candidate = every allowed key applying to the client kind, with its
 *    fetched value and source, minus acks pinned by idempotence/transactions;
 *    schema + heartbeat < session <= max.poll.interval.ms (candidate values
 *    else the app's) decide acceptance;
 * 3. entries (sorted) = keys whose fetched value/source changed, allowed
 *    keys whose candidate value (or source, when it has a value) differs
 *    from the effective one, and the blamed key of a rejection;
 * 4. outcomes: not allowed / not applicable -> IGNORED with the server's
 *    previous and new values; else REJECTED / PINNED / APPLIED with old =
 *    previous effective;
 * 5. accepted: effective := candidate; the generation moves by one iff an
 *    effective VALUE changed (a source-only change does not move it);
 * 6. a previously rejected set is judged whole when the server changes.
 */
#include "agent/agent_int.h"
#include "common/schema.h"
#include "../tap.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- fault injection ------------------------------------------------------
 * resolve.c allocates its strings with strdup; this definition (linked
 * ahead of libc's because the agent library is static) fails on demand.
 * -1 = never fail; N >= 0 = N more successes, then NULL. */
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

/* Short names: the expected entries below are long enough already. */
#define S_CLIENT DYNCONF_SOURCE_CLIENT
#define S_DEFAULT DYNCONF_SOURCE_DEFAULT
#define S_APP DYNCONF_SOURCE_APP
#define S_USER DYNCONF_SOURCE_USER
#define S_USER_CLIENT DYNCONF_SOURCE_USER_CLIENT
#define O_APPLIED DYNCONF_OUTCOME_APPLIED
#define O_IGNORED DYNCONF_OUTCOME_IGNORED
#define O_REJECTED DYNCONF_OUTCOME_REJECTED
#define O_PINNED DYNCONF_OUTCOME_PINNED

static bool same(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

/* ---- fetched sets ----------------------------------------------------- */

static int cmp_fetched(const void *a, const void *b) {
  return strcmp(((const dc_fetched_t *)a)->key, ((const dc_fetched_t *)b)->key);
}

static void set_add(dc_fetched_set_t *s, const char *key, const char *value,
                    dynconf_source_t src) {
  dc_fetched_t *v = realloc(s->v, (s->n + 1) * sizeof(*v));
  if (!v)
    abort();
  s->v = v;
  s->v[s->n].key = strdup(key);
  s->v[s->n].value = strdup(value);
  s->v[s->n].source = src;
  s->n++;
}

/* Sorted like agent.c's fetch() leaves it. */
static void set_sort(dc_fetched_set_t *s) {
  if (s->n)
    qsort(s->v, s->n, sizeof(*s->v), cmp_fetched);
}

/* Builds a set from "key=value/C key=value/D ...": /C = client-id
 * override, /D = <default>, /U = the user's entity, /X = user + client-id.
 * The caller owns the result. */
static dc_fetched_set_t fs(const char *spec) {
  dc_fetched_set_t s = {0};
  char *copy = strdup(spec), *save = NULL;
  for (char *t = strtok_r(copy, " ", &save); t;
       t = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(t, '='), *sl = strrchr(t, '/');
    if (!eq || !sl || sl < eq)
      abort(); /* a typo in this file */
    *eq = *sl = '\0';
    set_add(&s, t, eq + 1,
            sl[1] == 'C'   ? S_CLIENT
            : sl[1] == 'U' ? S_USER
            : sl[1] == 'X' ? S_USER_CLIENT
                           : S_DEFAULT);
  }
  free(copy);
  set_sort(&s);
  return s;
}

static dc_fetched_set_t set_copy(const dc_fetched_set_t *o) {
  dc_fetched_set_t s = {0};
  for (size_t i = 0; i < o->n; i++)
    set_add(&s, o->v[i].key, o->v[i].value, o->v[i].source);
  return s;
}

/* ---- a world: what agent.c keeps between fetches ---------------------- */

typedef struct {
  dc_app_settings_t app;
  dc_allow_t allow;
  dc_fetched_set_t prev; /* last fetched set (owned) */
  dc_effective_t eff;    /* owned */
  int64_t gen;
} world_t;

/* librdkafka's defaults, as agent.c's read_app_settings() falls back to. */
static void world_init(world_t *w, bool consumer, const char *allow) {
  memset(w, 0, sizeof(*w));
  w->app.consumer = consumer;
  w->app.max_poll_interval_ms = 300000;
  w->app.session_timeout_ms = 45000;
  w->app.heartbeat_interval_ms = 3000;
  char err[256];
  if (dc_allow_parse(allow ? allow : DEFAULT_ALLOW, &w->allow, err,
                     sizeof(err))) {
    diag("bad allow list in test: %s", err);
    abort();
  }
}

static void world_free(world_t *w) {
  dc_fetched_set_free(&w->prev);
  dc_effective_free(&w->eff);
}

/* Feeds one successful fetch the way agent.c's record() does: the fetched
 * set becomes the previous one whether it was accepted or not, and the
 * generation follows the event. Returns the event (caller frees). */
static dynconf_event_t *feed(world_t *w, const char *spec) {
  dc_fetched_set_t f = fs(spec);
  dynconf_event_t *ev = (dynconf_event_t *)&ev; /* must be overwritten */
  int rc = dc_resolve(&w->app, &w->allow, &w->prev, &f, &w->eff, w->gen, &ev);
  if (rc) {
    ok(0, "dc_resolve(\"%s\") returned %d", spec, rc);
    dc_fetched_set_free(&f);
    return NULL;
  }
  dc_fetched_set_free(&w->prev);
  w->prev = f;
  if (ev)
    w->gen = dynconf_event_generation(ev);
  return ev;
}

/* Feeds a fetch that must produce no event. */
static void feed_none(world_t *w, const char *spec, const char *what) {
  int64_t g = w->gen;
  dynconf_event_t *ev = feed(w, spec);
  ok(ev == NULL, "%s: no event", what);
  is_int(w->gen, g, "%s: generation unchanged", what);
  dc_event_free(ev);
}

static const char *effv(const world_t *w, const char *key) {
  int i = dc_allow_index(&w->allow, key);
  return i >= 0 ? w->eff.value[i] : NULL;
}
static dynconf_source_t effs(const world_t *w, const char *key) {
  int i = dc_allow_index(&w->allow, key);
  return i >= 0 ? w->eff.source[i] : S_APP;
}

static bool eff_equal(const dc_effective_t *a, const dc_effective_t *b) {
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++)
    if (!same(a->value[i], b->value[i]) || a->source[i] != b->source[i])
      return false;
  return true;
}

static int entry_index(const dynconf_event_t *ev, const char *key) {
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++)
    if (!strcmp(dynconf_event_key(ev, i), key))
      return (int)i;
  return -1;
}

/* Checks one entry, found by key. reason: NULL = must be NULL; "~text" =
 * must contain text; otherwise exact. */
static void check_entry(const dynconf_event_t *ev, const char *key,
                        const char *oldv, const char *newv,
                        dynconf_source_t src, dynconf_outcome_t out,
                        const char *reason, const char *what) {
  int i = entry_index(ev, key);
  if (!ok(i >= 0, "%s: entry for %s", what, key))
    return;
  size_t k = (size_t)i;
  is_str(dynconf_event_old_value(ev, k), oldv, "%s: %s old value", what, key);
  is_str(dynconf_event_new_value(ev, k), newv, "%s: %s new value", what, key);
  is_int(dynconf_event_source(ev, k), src, "%s: %s source %s", what, key,
         dynconf_source_name(src));
  is_int(dynconf_event_outcome(ev, k), out, "%s: %s outcome %s", what, key,
         dynconf_outcome_name(out));
  const char *r = dynconf_event_reason(ev, k);
  if (reason && reason[0] == '~') {
    if (!ok(r && strstr(r, reason + 1), "%s: %s reason mentions '%s'", what,
            key, reason + 1))
      diag("  reason: %s", r ? r : "(null)");
  } else {
    is_str(r, reason, "%s: %s reason", what, key);
  }
}

static size_t nentries(const dynconf_event_t *ev) {
  return ev ? dynconf_event_entry_count(ev) : 0;
}

static bool sorted_entries(const dynconf_event_t *ev) {
  for (size_t i = 1; i < dynconf_event_entry_count(ev); i++)
    if (strcmp(dynconf_event_key(ev, i - 1), dynconf_event_key(ev, i)) >= 0)
      return false;
  return true;
}

/* Common header checks of a CHANGE event. */
static bool check_change(const dynconf_event_t *ev, int accepted, int64_t gen,
                         size_t n, const char *what) {
  if (!ok(ev != NULL, "%s: an event", what))
    return false;
  is_int(dynconf_event_type(ev), DYNCONF_EVENT_CHANGE, "%s: CHANGE", what);
  is_int(dynconf_event_error(ev), DYNCONF_ERR_NO_ERROR, "%s: no error", what);
  is_str(dynconf_event_error_string(ev), "", "%s: empty error string", what);
  is_int(dynconf_event_accepted(ev), accepted, "%s: accepted=%d", what,
         accepted);
  is_int(dynconf_event_generation(ev), gen, "%s: generation %lld", what,
         (long long)gen);
  is_int(dynconf_event_entry_count(ev), n, "%s: %zu entries", what, n);
  ok(sorted_entries(ev), "%s: entries sorted by key", what);
  return true;
}

/* ---- helpers' own units ------------------------------------------------ */

static void test_fetched_find(void) {
  dc_fetched_set_t e = {0};
  ok(!dc_fetched_find(&e, "acks"), "find in an empty set: NULL");
  ok(!dc_fetched_find(NULL, "acks"), "find in a NULL set: NULL");
  dc_fetched_set_t s = fs("session.timeout.ms=8000/D acks=1/C");
  const dc_fetched_t *f = dc_fetched_find(&s, "acks");
  ok(f && !strcmp(f->value, "1") && f->source == S_CLIENT,
     "find acks: value 1 from the client override");
  f = dc_fetched_find(&s, "session.timeout.ms");
  ok(f && !strcmp(f->value, "8000") && f->source == S_DEFAULT,
     "find session.timeout.ms: value 8000 from <default>");
  ok(!dc_fetched_find(&s, "ack"), "a key prefix does not match");
  ok(!dc_fetched_find(&s, "acks "), "a longer key does not match");
  ok(!dc_fetched_find(&s, "ACKS"), "keys are case-sensitive");
  ok(!dc_fetched_find(&s, "heartbeat.interval.ms"), "absent key: NULL");
  dc_fetched_set_free(&s);
  ok(s.n == 0 && s.v == NULL, "dc_fetched_set_free empties the set");
  dc_fetched_set_free(&s); /* twice is harmless */
  dc_fetched_set_free(&e);
  ok(s.n == 0 && s.v == NULL && e.n == 0 && e.v == NULL,
     "freeing a set twice, and an empty one, leaves them empty");
}

static void test_effective(void) {
  dc_effective_t a = {0}, b;
  a.value[0] = strdup("1");
  a.source[0] = S_CLIENT;
  a.value[DC_AGENT_MAX_KEYS - 1] = strdup("last");
  a.source[DC_AGENT_MAX_KEYS - 1] = S_DEFAULT;
  memset(&b, 0xab, sizeof(b)); /* dst is overwritten, not read */
  is_int(dc_effective_copy(&b, &a), 0, "dc_effective_copy succeeds");
  bool deep = true, eq = true;
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++) {
    eq &= same(a.value[i], b.value[i]) && a.source[i] == b.source[i];
    deep &= !a.value[i] || a.value[i] != b.value[i];
  }
  ok(eq, "copy has the same values and sources in every slot");
  ok(deep, "copy owns its own strings");
  ok(b.value[1] == NULL && b.source[1] == S_APP, "empty slots stay NULL/APP");
  free(b.value[0]);
  b.value[0] = strdup("changed");
  is_str(a.value[0], "1", "changing the copy leaves the original alone");
  dc_effective_free(&b);
  bool clean = true;
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++)
    clean &= !b.value[i] && b.source[i] == S_APP;
  ok(clean, "dc_effective_free: every slot NULL with source APP");
  dc_effective_free(&b);
  clean = true;
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++)
    clean &= !b.value[i] && b.source[i] == S_APP;
  ok(clean, "dc_effective_free twice leaves every slot NULL with source APP");

  /* The second strdup fails: -1 and nothing left behind (valgrind). */
  strdup_budget = 1;
  int rc = dc_effective_copy(&b, &a);
  strdup_budget = -1;
  is_int(rc, -1, "dc_effective_copy reports out of memory");
  clean = true;
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++)
    clean &= !b.value[i];
  ok(clean, "failed copy leaves dst empty");
  dc_effective_free(&a);
}

static void test_allow(void) {
  dc_allow_t a;
  char err[256];
  is_int(dc_allow_parse(DEFAULT_ALLOW, &a, err, sizeof(err)), 0,
         "default allow list parses");
  is_int(a.n, 3, "three keys");
  is_str(a.keys[0], "acks", "in order: acks");
  is_str(a.keys[1], "session.timeout.ms", "in order: session.timeout.ms");
  is_str(a.keys[2], "heartbeat.interval.ms", "in order: heartbeat.interval.ms");
  ok(a.keys[0] == dc_schema_find("acks")->name,
     "keys point at the schema's static names");
  is_int(dc_allow_index(&a, "acks"), 0, "index of acks");
  is_int(dc_allow_index(&a, "heartbeat.interval.ms"), 2, "index of heartbeat");
  is_int(dc_allow_index(&a, "linger.ms"), -1, "index of a key not allowed");
  is_int(dc_allow_index(&a, "ack"), -1, "index of a prefix: -1");

  is_int(dc_allow_parse("  acks ,  linger.ms  ", &a, err, sizeof(err)), 0,
         "spaces around keys are trimmed");
  ok(a.n == 2 && !strcmp(a.keys[0], "acks") && !strcmp(a.keys[1], "linger.ms"),
     "trimmed list is acks, linger.ms");
  is_int(
      dc_allow_parse("acks,acks, acks ,linger.ms,acks", &a, err, sizeof(err)),
      0, "duplicates parse");
  is_int(a.n, 2, "duplicates are dropped");
  is_int(dc_allow_parse("", &a, err, sizeof(err)), 0, "empty list parses");
  is_int(a.n, 0, "empty list: no keys");
  is_int(dc_allow_index(&a, "acks"), -1, "empty list: nothing allowed");
  is_int(dc_allow_parse(" , ,,", &a, err, sizeof(err)), 0,
         "only commas and spaces parse");
  is_int(a.n, 0, "only commas and spaces: no keys");
  is_int(dc_allow_parse("acks,,linger.ms,", &a, err, sizeof(err)), 0,
         "empty items are skipped");
  is_int(a.n, 2, "empty items: two keys");

  size_t ns;
  const dc_schema_entry_t *all = dc_schema_all(&ns);
  char list[1024] = "";
  for (size_t i = 0; i < ns; i++) {
    strcat(list, all[i].name);
    strcat(list, ",");
  }
  is_int(dc_allow_parse(list, &a, err, sizeof(err)), 0,
         "every schema key can be allowed");
  is_int(a.n, ns, "all %zu schema keys", ns);

  err[0] = '\0';
  is_int(dc_allow_parse("acks,foo.bar", &a, err, sizeof(err)), -1,
         "unknown key rejected");
  ok(strstr(err, "\"foo.bar\"") && strstr(err, "dynconf.allow.keys"),
     "errstr names the key and the property: %s", err);
  is_int(dc_allow_parse("ACKS", &a, err, sizeof(err)), -1,
         "key names are case-sensitive");
  ok(strstr(err, "ACKS") != NULL, "errstr names ACKS");
  is_int(dc_allow_parse("bootstrap.servers", &a, err, sizeof(err)), -1,
         "a librdkafka key outside the schema is rejected");
  is_int(dc_allow_parse("acks session.timeout.ms", &a, err, sizeof(err)), -1,
         "space is not a separator");
  char small[8];
  memset(small, 'x', sizeof(small));
  is_int(dc_allow_parse("nope", &a, small, sizeof(small)), -1,
         "unknown key with a small errstr");
  ok(memchr(small, '\0', sizeof(small)) != NULL, "small errstr is terminated");
}

static void test_event_accessors(void) {
  dynconf_event_t *ev = calloc(1, sizeof(*ev));
  ev->type = DYNCONF_EVENT_ERROR;
  ev->err = DYNCONF_ERR__TRANSPORT;
  is_int(dynconf_event_type(ev), DYNCONF_EVENT_ERROR, "event type");
  is_int(dynconf_event_error(ev), DYNCONF_ERR__TRANSPORT, "event error");
  is_str(dynconf_event_error_string(ev), "", "NULL errstr reads as \"\"");
  ev->errstr = strdup("connection refused");
  is_str(dynconf_event_error_string(ev), "connection refused", "errstr");
  is_int(dynconf_event_entry_count(ev), 0, "no entries");
  ok(dynconf_event_key(ev, 0) == NULL, "key of a missing entry: NULL");
  ev->type = DYNCONF_EVENT_CHANGE;
  ev->accepted = 1;
  ev->generation = 42;
  ev->entries = calloc(2, sizeof(*ev->entries));
  ev->n = 2;
  ev->entries[0] = (dc_event_entry_t){strdup("acks"), strdup("1"), NULL,
                                      strdup("why"),  S_APP,       O_PINNED};
  ev->entries[1] = (dc_event_entry_t){
      strdup("linger.ms"), NULL, strdup("5"), NULL, S_DEFAULT, O_APPLIED};
  is_int(dynconf_event_accepted(ev), 1, "accepted");
  is_int(dynconf_event_generation(ev), 42, "generation");
  is_int(dynconf_event_entry_count(ev), 2, "two entries");
  is_str(dynconf_event_key(ev, 0), "acks", "entry 0 key");
  is_str(dynconf_event_old_value(ev, 0), "1", "entry 0 old");
  ok(dynconf_event_new_value(ev, 0) == NULL, "entry 0 new NULL");
  is_str(dynconf_event_reason(ev, 0), "why", "entry 0 reason");
  is_int(dynconf_event_outcome(ev, 0), O_PINNED, "entry 0 out");
  is_int(dynconf_event_source(ev, 0), S_APP, "entry 0 source");
  is_str(dynconf_event_key(ev, 1), "linger.ms", "entry 1 key");
  ok(dynconf_event_old_value(ev, 1) == NULL, "entry 1 old NULL");
  is_str(dynconf_event_new_value(ev, 1), "5", "entry 1 new");
  ok(dynconf_event_reason(ev, 1) == NULL, "entry 1 reason NULL");
  is_int(dynconf_event_source(ev, 1), S_DEFAULT, "entry 1 src");
  is_int(dynconf_event_outcome(ev, 1), O_APPLIED, "entry 1 out");
  size_t bad[] = {2, 1000, (size_t)-1};
  for (size_t i = 0; i < 3; i++) {
    ok(!dynconf_event_key(ev, bad[i]) && !dynconf_event_old_value(ev, bad[i]) &&
           !dynconf_event_new_value(ev, bad[i]) &&
           !dynconf_event_reason(ev, bad[i]) &&
           dynconf_event_source(ev, bad[i]) == S_APP &&
           dynconf_event_outcome(ev, bad[i]) == O_IGNORED,
       "index %zu out of range: NULLs, APP, IGNORED", bad[i]);
  }
  dc_event_free(ev);
  dc_event_free(NULL); /* must not crash (ASan would say) */
}

/* ---- principal-scoped sources ------------------------------------------ */

static void test_wire_sources(void) {
  static const struct {
    int wire;
    bool applied;
    dynconf_source_t src;
    const char *name;
  } cases[] = {
      {7, true, S_CLIENT, "client-override"},
      {8, true, S_DEFAULT, "default-entity"},
      {9, true, S_USER, "user-override"},
      {10, true, S_USER_CLIENT, "user-client-override"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    dynconf_source_t s = (dynconf_source_t)-1;
    ok(dc_source_from_wire(cases[i].wire, &s) == cases[i].applied,
       "wire source %d is applied", cases[i].wire);
    is_int(s, cases[i].src, "wire source %d maps to %s", cases[i].wire,
           cases[i].name);
    is_str(dynconf_source_name(s), cases[i].name, "name of wire source %d",
           cases[i].wire);
  }
  /* Static, broker and unknown sources are never a client's dynamic value. */
  static const int ignored[] = {-1, 0, 1, 2, 3, 4, 5, 6, 11, 127, 255};
  for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
    dynconf_source_t s = S_APP;
    ok(!dc_source_from_wire(ignored[i], &s) && s == S_APP,
       "wire source %d is not applied (out untouched)", ignored[i]);
  }
  is_str(dynconf_source_name(DYNCONF_SOURCE_FILE), "file", "name of FILE");
  is_str(dynconf_source_name(DYNCONF_SOURCE_APP), "application",
         "name of APP");
  is_str(dynconf_source_name((dynconf_source_t)99), "unknown",
         "name of an unknown source");
}

/* The server resolves user+client-id > user > client-id > <default> and
 * says which won; the agent applies the value and reports the source. */
static void test_principal_sources(void) {
  world_t w;
  world_init(&w, true, NULL);
  dynconf_event_t *ev =
      feed(&w, "session.timeout.ms=30000/U heartbeat.interval.ms=4000/X");
  if (check_change(ev, 1, 1, 2, "user sources")) {
    check_entry(ev, "heartbeat.interval.ms", NULL, "4000", S_USER_CLIENT,
                O_APPLIED, NULL, "user sources");
    check_entry(ev, "session.timeout.ms", NULL, "30000", S_USER, O_APPLIED,
                NULL, "user sources");
  }
  dc_event_free(ev);
  is_int(effs(&w, "session.timeout.ms"), S_USER, "effective source USER");
  is_int(effs(&w, "heartbeat.interval.ms"), S_USER_CLIENT,
         "effective source USER_CLIENT");
  feed_none(&w, "heartbeat.interval.ms=4000/X session.timeout.ms=30000/U",
            "the same user set again");

  /* The user entity's value goes, the client-id's (same value) shows
   * through: a source-only change, no rebuild. */
  ev = feed(&w, "heartbeat.interval.ms=4000/X session.timeout.ms=30000/C");
  if (check_change(ev, 1, 1, 1, "USER->CLIENT same value"))
    check_entry(ev, "session.timeout.ms", "30000", "30000", S_CLIENT,
                O_APPLIED, NULL, "USER->CLIENT same value");
  dc_event_free(ev);
  /* user+client-id -> user with another value: the generation moves. */
  ev = feed(&w, "heartbeat.interval.ms=3500/U session.timeout.ms=30000/C");
  if (check_change(ev, 1, 2, 1, "USER_CLIENT->USER new value"))
    check_entry(ev, "heartbeat.interval.ms", "4000", "3500", S_USER,
                O_APPLIED, NULL, "USER_CLIENT->USER new value");
  dc_event_free(ev);
  /* A user value breaking a rule is rejected like any other. */
  ev = feed(&w, "heartbeat.interval.ms=40000/X session.timeout.ms=30000/C");
  if (check_change(ev, 0, 2, 1, "USER_CLIENT value rejected"))
    check_entry(ev, "heartbeat.interval.ms", "3500", "40000", S_USER_CLIENT,
                O_REJECTED, "~must be lower than session.timeout.ms",
                "USER_CLIENT value rejected");
  dc_event_free(ev);
  is_str(effv(&w, "heartbeat.interval.ms"), "3500", "last good kept");
  is_int(effs(&w, "heartbeat.interval.ms"), S_USER, "last good source kept");
  world_free(&w);
}

/* ---- dc_resolve scenarios ---------------------------------------------- */

static void test_no_change(void) {
  world_t w;
  world_init(&w, false, "acks,linger.ms");
  feed_none(&w, "", "both empty");
  ok(w.eff.value[0] == NULL && w.eff.value[1] == NULL,
     "both empty: effective untouched");
  dynconf_event_t *ev = feed(&w, "acks=1/C linger.ms=5/D debug=msg/C");
  ok(ev != NULL, "a first non-empty set is an event");
  dc_event_free(ev);
  dc_effective_t snap;
  dc_effective_copy(&snap, &w.eff);
  feed_none(&w, "debug=msg/C linger.ms=5/D acks=1/C",
            "same values and sources (fresh allocations)");
  ok(eff_equal(&snap, &w.eff), "unchanged set: effective untouched");
  dc_effective_free(&snap);
  ev = feed(&w, "acks=1/C linger.ms=5/D debug=msg/D");
  ok(ev != NULL, "a source change of an ignored key alone is an event");
  if (check_change(ev, 1, w.gen, 1, "ignored key's source"))
    check_entry(ev, "debug", "msg", "msg", S_DEFAULT, O_IGNORED,
                "not in dynconf.allow.keys", "ignored key's source");
  dc_event_free(ev);
  is_int(w.gen, 1, "ignored changes do not move the generation");
  world_free(&w);
}

static void test_first_fetch_and_sources(void) {
  world_t w;
  world_init(&w, true, NULL);
  dynconf_event_t *ev =
      feed(&w, "session.timeout.ms=30000/C heartbeat.interval.ms=5000/D");
  if (check_change(ev, 1, 1, 2, "first fetch")) {
    is_str(dynconf_event_key(ev, 0), "heartbeat.interval.ms", "entry 0");
    is_str(dynconf_event_key(ev, 1), "session.timeout.ms", "entry 1");
    check_entry(ev, "heartbeat.interval.ms", NULL, "5000", S_DEFAULT, O_APPLIED,
                NULL, "first fetch");
    check_entry(ev, "session.timeout.ms", NULL, "30000", S_CLIENT, O_APPLIED,
                NULL, "first fetch");
  }
  dc_event_free(ev);
  is_str(effv(&w, "session.timeout.ms"), "30000", "effective session");
  is_int(effs(&w, "session.timeout.ms"), S_CLIENT,
         "effective session source CLIENT");
  is_str(effv(&w, "heartbeat.interval.ms"), "5000", "effective heartbeat");
  is_int(effs(&w, "heartbeat.interval.ms"), S_DEFAULT,
         "effective heartbeat source DEFAULT");
  ok(effv(&w, "acks") == NULL && effs(&w, "acks") == S_APP,
     "acks untouched (not fetched, and a producer key)");
  feed_none(&w, "heartbeat.interval.ms=5000/D session.timeout.ms=30000/C",
            "the same set again");

  /* DEFAULT -> CLIENT with the same value: an event, and the effective
   * source follows (dynconf_effective_get reports it), but no value moved,
   * so the generation (what a managed client rebuilds for) stays. */
  ev = feed(&w, "heartbeat.interval.ms=5000/C session.timeout.ms=30000/C");
  if (check_change(ev, 1, 1, 1, "DEFAULT->CLIENT same value"))
    check_entry(ev, "heartbeat.interval.ms", "5000", "5000", S_CLIENT,
                O_APPLIED, NULL, "DEFAULT->CLIENT same value");
  dc_event_free(ev);
  is_int(effs(&w, "heartbeat.interval.ms"), S_CLIENT,
         "effective heartbeat source now CLIENT");
  is_str(effv(&w, "heartbeat.interval.ms"), "5000", "value unchanged");
  ev = feed(&w, "heartbeat.interval.ms=5000/D session.timeout.ms=30000/C");
  if (check_change(ev, 1, 1, 1, "CLIENT->DEFAULT same value"))
    check_entry(ev, "heartbeat.interval.ms", "5000", "5000", S_DEFAULT,
                O_APPLIED, NULL, "CLIENT->DEFAULT same value");
  dc_event_free(ev);
  is_int(effs(&w, "heartbeat.interval.ms"), S_DEFAULT,
         "effective heartbeat source back to DEFAULT");
  is_int(w.gen, 1, "two source-only changes: generation still 1");

  /* Both keys change source at once, values kept: two entries, no move. */
  ev = feed(&w, "heartbeat.interval.ms=5000/C session.timeout.ms=30000/D");
  if (check_change(ev, 1, 1, 2, "two sources flip")) {
    check_entry(ev, "heartbeat.interval.ms", "5000", "5000", S_CLIENT,
                O_APPLIED, NULL, "two sources flip");
    check_entry(ev, "session.timeout.ms", "30000", "30000", S_DEFAULT,
                O_APPLIED, NULL, "two sources flip");
  }
  dc_event_free(ev);
  /* A source flip together with a value change: the generation moves. */
  ev = feed(&w, "heartbeat.interval.ms=5000/D session.timeout.ms=31000/D");
  if (check_change(ev, 1, 2, 2, "source flip plus a value")) {
    check_entry(ev, "heartbeat.interval.ms", "5000", "5000", S_DEFAULT,
                O_APPLIED, NULL, "source flip plus a value");
    check_entry(ev, "session.timeout.ms", "30000", "31000", S_DEFAULT,
                O_APPLIED, NULL, "source flip plus a value");
  }
  dc_event_free(ev);
  ev = feed(&w, "heartbeat.interval.ms=5000/D session.timeout.ms=30000/C");
  if (check_change(ev, 1, 3, 1, "back to session 30000 from the client"))
    check_entry(ev, "session.timeout.ms", "31000", "30000", S_CLIENT, O_APPLIED,
                NULL, "back to session 30000 from the client");
  dc_event_free(ev);

  /* Deletion on the server: back to the application's own value. */
  ev = feed(&w, "heartbeat.interval.ms=5000/D");
  if (check_change(ev, 1, 4, 1, "session deleted"))
    check_entry(ev, "session.timeout.ms", "30000", NULL, S_APP, O_APPLIED, NULL,
                "session deleted");
  dc_event_free(ev);
  ok(effv(&w, "session.timeout.ms") == NULL &&
         effs(&w, "session.timeout.ms") == S_APP,
     "deleted key: effective is the app's own (NULL, APP)");
  is_str(effv(&w, "heartbeat.interval.ms"), "5000", "heartbeat stays");
  ev = feed(&w, "");
  if (check_change(ev, 1, 5, 1, "everything deleted"))
    check_entry(ev, "heartbeat.interval.ms", "5000", NULL, S_APP, O_APPLIED,
                NULL, "everything deleted");
  dc_event_free(ev);
  bool empty = true;
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++)
    empty &= !w.eff.value[i] && w.eff.source[i] == S_APP;
  ok(empty, "everything deleted: effective is the app's own");
  feed_none(&w, "", "empty again");
  world_free(&w);
}

static void test_sorting_and_ignored(void) {
  world_t w;
  world_init(&w, false, "acks,linger.ms,batch.size");
  dynconf_event_t *ev = feed(&w, "linger.ms=5/C x.unk=1/C");
  dc_event_free(ev);
  is_int(w.gen, 1, "linger.ms applied");
  ev = feed(&w, "zz.unk=3/C acks=0/C batch.size=100/D a.unk=2/D");
  if (check_change(ev, 1, 2, 6, "mixed additions and deletions")) {
    static const char *const order[] = {"a.unk",     "acks",  "batch.size",
                                        "linger.ms", "x.unk", "zz.unk"};
    for (size_t i = 0; i < 6; i++)
      is_str(dynconf_event_key(ev, i), order[i], "mixed: entry %zu in order",
             i);
    check_entry(ev, "a.unk", NULL, "2", S_DEFAULT, O_IGNORED,
                "not in dynconf.allow.keys", "mixed");
    check_entry(ev, "acks", NULL, "0", S_CLIENT, O_APPLIED, NULL, "mixed");
    check_entry(ev, "batch.size", NULL, "100", S_DEFAULT, O_APPLIED, NULL,
                "mixed");
    check_entry(ev, "linger.ms", "5", NULL, S_APP, O_APPLIED, NULL, "mixed");
    /* Keys never applied report the server's values: old is the
     * previously fetched value, new NULL = deleted on the server. */
    check_entry(ev, "x.unk", "1", NULL, S_APP, O_IGNORED,
                "not in dynconf.allow.keys", "mixed");
    check_entry(ev, "zz.unk", NULL, "3", S_CLIENT, O_IGNORED,
                "not in dynconf.allow.keys", "mixed");
  }
  dc_event_free(ev);
  is_str(effv(&w, "acks"), "0", "acks applied");
  is_str(effv(&w, "batch.size"), "100", "batch.size applied");
  ok(effv(&w, "linger.ms") == NULL, "linger.ms back to the app's");
  world_free(&w);

  /* Only ignored keys: accepted, the generation stays. */
  world_init(&w, false, NULL);
  ev = feed(&w, "linger.ms=5/C");
  if (check_change(ev, 1, 0, 1, "ignored only"))
    check_entry(ev, "linger.ms", NULL, "5", S_CLIENT, O_IGNORED,
                "not in dynconf.allow.keys", "ignored only");
  dc_event_free(ev);
  ev = feed(&w, "linger.ms=10/D");
  if (check_change(ev, 1, 0, 1, "ignored key changes"))
    check_entry(ev, "linger.ms", "5", "10", S_DEFAULT, O_IGNORED,
                "not in dynconf.allow.keys", "ignored key changes");
  dc_event_free(ev);
  ev = feed(&w, "");
  if (check_change(ev, 1, 0, 1, "ignored key deleted"))
    check_entry(ev, "linger.ms", "10", NULL, S_APP, O_IGNORED,
                "not in dynconf.allow.keys", "ignored key deleted");
  dc_event_free(ev);

  /* Consumer keys on a producer: IGNORED, no validation, no rules. */
  ev = feed(&w, "session.timeout.ms=1/C heartbeat.interval.ms=abc/D");
  if (check_change(ev, 1, 0, 2, "consumer keys on a producer")) {
    check_entry(ev, "session.timeout.ms", NULL, "1", S_CLIENT, O_IGNORED,
                "session.timeout.ms does not apply to a producer",
                "consumer keys on a producer");
    check_entry(ev, "heartbeat.interval.ms", NULL, "abc", S_DEFAULT, O_IGNORED,
                "heartbeat.interval.ms does not apply to a producer",
                "consumer keys on a producer");
  }
  dc_event_free(ev);
  ok(!effv(&w, "session.timeout.ms") && !effv(&w, "heartbeat.interval.ms"),
     "consumer keys never reach a producer's effective config");
  ev = feed(&w, "heartbeat.interval.ms=abc/D");
  if (check_change(ev, 1, 0, 1, "consumer key deleted on a producer"))
    check_entry(ev, "session.timeout.ms", "1", NULL, S_APP, O_IGNORED,
                "session.timeout.ms does not apply to a producer",
                "consumer key deleted on a producer");
  dc_event_free(ev);
  /* Only a source moves on a key that does not apply: still listed. */
  ev = feed(&w, "heartbeat.interval.ms=abc/C");
  if (check_change(ev, 1, 0, 1, "consumer key's source on a producer"))
    check_entry(ev, "heartbeat.interval.ms", "abc", "abc", S_CLIENT, O_IGNORED,
                "heartbeat.interval.ms does not apply to a producer",
                "consumer key's source on a producer");
  dc_event_free(ev);
  world_free(&w);

  /* acks on a consumer: IGNORED (even an invalid value); set accepted. */
  world_init(&w, true, NULL);
  ev = feed(&w, "acks=7/C session.timeout.ms=30000/D");
  if (check_change(ev, 1, 1, 2, "acks on a consumer")) {
    check_entry(ev, "acks", NULL, "7", S_CLIENT, O_IGNORED,
                "acks does not apply to a consumer", "acks on a consumer");
    check_entry(ev, "session.timeout.ms", NULL, "30000", S_DEFAULT, O_APPLIED,
                NULL, "acks on a consumer");
  }
  dc_event_free(ev);
  ok(effv(&w, "acks") == NULL, "acks never reaches a consumer");
  ev = feed(&w, "acks=0/C session.timeout.ms=30000/D");
  if (check_change(ev, 1, 1, 1, "acks on a consumer changes"))
    check_entry(ev, "acks", "7", "0", S_CLIENT, O_IGNORED,
                "acks does not apply to a consumer",
                "acks on a consumer changes");
  dc_event_free(ev);
  ev = feed(&w, "session.timeout.ms=30000/D");
  if (check_change(ev, 1, 1, 1, "acks deleted on a consumer"))
    check_entry(ev, "acks", "0", NULL, S_APP, O_IGNORED,
                "acks does not apply to a consumer",
                "acks deleted on a consumer");
  dc_event_free(ev);
  /* Ignored entries of a rejected set stay IGNORED with the server's
   * values; the rejection is carried by the allowed keys. */
  w.app.max_poll_interval_ms = 20000;
  ev = feed(&w, "acks=1/C session.timeout.ms=30001/D");
  if (check_change(ev, 0, 1, 2, "ignored key in a rejected set")) {
    check_entry(ev, "acks", NULL, "1", S_CLIENT, O_IGNORED,
                "acks does not apply to a consumer",
                "ignored key in a rejected set");
    check_entry(ev, "session.timeout.ms", "30000", "30001", S_DEFAULT,
                O_REJECTED,
                "session.timeout.ms (30001) must not exceed "
                "max.poll.interval.ms (20000); librdkafka refuses that "
                "configuration",
                "ignored key in a rejected set");
  }
  dc_event_free(ev);
  is_str(effv(&w, "session.timeout.ms"), "30000", "last good session kept");
  world_free(&w);
}

static void test_pinned(void) {
  world_t w;
  world_init(&w, false, "acks,linger.ms");
  w.app.idempotent = true;
  dynconf_event_t *ev = feed(&w, "acks=1/C linger.ms=5/C");
  if (check_change(ev, 1, 1, 2, "acks=1 under idempotence")) {
    check_entry(ev, "acks", NULL, NULL, S_CLIENT, O_PINNED,
                "acks=1 requested; acks stays all: the application sets "
                "enable.idempotence=true",
                "acks=1 under idempotence");
    check_entry(ev, "linger.ms", NULL, "5", S_CLIENT, O_APPLIED, NULL,
                "acks=1 under idempotence");
  }
  dc_event_free(ev);
  ok(effv(&w, "acks") == NULL, "pinned acks: effective is the app's own");
  is_str(effv(&w, "linger.ms"), "5", "the rest of the set applied");

  ev = feed(&w, "acks=all/C linger.ms=5/C");
  if (check_change(ev, 1, 2, 1, "acks=all under idempotence"))
    check_entry(ev, "acks", NULL, "all", S_CLIENT, O_APPLIED, NULL,
                "acks=all under idempotence");
  dc_event_free(ev);
  is_str(effv(&w, "acks"), "all", "acks=all applied");
  ev = feed(&w, "acks=-1/D linger.ms=5/C");
  if (check_change(ev, 1, 3, 1, "acks=-1 under idempotence"))
    check_entry(ev, "acks", "all", "-1", S_DEFAULT, O_APPLIED, NULL,
                "acks=-1 under idempotence");
  dc_event_free(ev);
  /* Pinned after an applied value: the effective acks goes back to the
   * app's own (which is all), a change of the effective config. */
  ev = feed(&w, "acks=0/D linger.ms=5/C");
  if (check_change(ev, 1, 4, 1, "acks=0 after acks=-1"))
    check_entry(ev, "acks", "-1", NULL, S_DEFAULT, O_PINNED,
                "~enable.idempotence=true", "acks=0 after acks=-1");
  dc_event_free(ev);
  ok(effv(&w, "acks") == NULL, "acks back to the app's own");
  ev = feed(&w, "acks=1/D linger.ms=5/C");
  if (check_change(ev, 1, 4, 1, "pinned to pinned"))
    check_entry(ev, "acks", NULL, NULL, S_DEFAULT, O_PINNED,
                "~enable.idempotence=true", "pinned to pinned");
  dc_event_free(ev);
  /* A pinned acks changes source only: listed (the fetch changed), PINNED,
   * and no effective value moves. */
  ev = feed(&w, "acks=1/C linger.ms=5/C");
  if (check_change(ev, 1, 4, 1, "pinned acks changes source"))
    check_entry(ev, "acks", NULL, NULL, S_CLIENT, O_PINNED,
                "~enable.idempotence=true", "pinned acks changes source");
  dc_event_free(ev);
  ok(effv(&w, "acks") == NULL && effs(&w, "acks") == S_APP,
     "pinned acks: effective stays the app's own (NULL, APP)");
  /* A schema-invalid acks under idempotence is PINNED, not REJECTED
   * (pinned behaviour: the pin is decided before validation). */
  ev = feed(&w, "acks=7/D linger.ms=6/C");
  if (check_change(ev, 1, 5, 2, "acks=7 under idempotence"))
    check_entry(ev, "acks", NULL, NULL, S_DEFAULT, O_PINNED,
                "~enable.idempotence=true", "acks=7 under idempotence");
  dc_event_free(ev);
  /* A pinned key in a rejected set is REJECTED like every other. */
  ev = feed(&w, "acks=1/D linger.ms=-1/C");
  if (check_change(ev, 0, 5, 2, "pinned key in a rejected set")) {
    check_entry(ev, "linger.ms", "6", "-1", S_CLIENT, O_REJECTED,
                "linger.ms=-1 is outside the range 0..900000",
                "pinned key in a rejected set");
    check_entry(ev, "acks", NULL, "1", S_DEFAULT, O_REJECTED,
                "change set rejected: linger.ms=-1 is outside the range "
                "0..900000",
                "pinned key in a rejected set");
  }
  dc_event_free(ev);
  is_str(effv(&w, "linger.ms"), "6", "rejected: linger.ms stays");
  world_free(&w);

  world_init(&w, false, NULL);
  w.app.transactional = true;
  ev = feed(&w, "acks=1/C");
  if (check_change(ev, 1, 0, 1, "acks=1 under transactional.id"))
    check_entry(ev, "acks", NULL, NULL, S_CLIENT, O_PINNED,
                "acks=1 requested; acks stays all: the application sets "
                "transactional.id",
                "acks=1 under transactional.id");
  dc_event_free(ev);
  w.app.idempotent = true;
  ev = feed(&w, "acks=0/C");
  if (check_change(ev, 1, 0, 1, "both idempotence and transactional.id"))
    check_entry(ev, "acks", NULL, NULL, S_CLIENT, O_PINNED, "~transactional.id",
                "both idempotence and transactional.id");
  dc_event_free(ev);
  world_free(&w);

  world_init(&w, false, NULL);
  ev = feed(&w, "acks=0/C");
  if (check_change(ev, 1, 1, 1, "acks=0 on a plain producer"))
    check_entry(ev, "acks", NULL, "0", S_CLIENT, O_APPLIED, NULL,
                "acks=0 on a plain producer");
  dc_event_free(ev);
  world_free(&w);
}

/* One rejected fetch on a fresh consumer; checks the rejection's shape. */
static void expect_rejected(world_t *w, const char *spec, const char *culprit,
                            const char *why, const char *what) {
  dc_effective_t snap;
  dc_effective_copy(&snap, &w->eff);
  int64_t g = w->gen;
  dynconf_event_t *ev = feed(w, spec);
  if (check_change(ev, 0, g, nentries(ev), what)) {
    char other[400];
    snprintf(other, sizeof(other), "change set rejected: %s", why);
    for (size_t i = 0; i < dynconf_event_entry_count(ev); i++) {
      const char *k = dynconf_event_key(ev, i);
      if (dynconf_event_outcome(ev, i) == O_IGNORED)
        continue;
      is_int(dynconf_event_outcome(ev, i), O_REJECTED, "%s: %s REJECTED", what,
             k);
      is_str(dynconf_event_reason(ev, i), strcmp(k, culprit) ? other : why,
             "%s: %s reason", what, k);
    }
    ok(entry_index(ev, culprit) >= 0, "%s: culprit %s listed", what, culprit);
  }
  dc_event_free(ev);
  is_int(w->gen, g, "%s: generation unchanged", what);
  ok(eff_equal(&snap, &w->eff), "%s: effective unchanged", what);
  dc_effective_free(&snap);
}

static void test_consumer_rules(void) {
  world_t w;
  /* heartbeat >= session, all four dynamic/app combinations. */
  world_init(&w, true, NULL);
  dc_event_free(feed(&w, "session.timeout.ms=30000/C"));
  is_int(w.gen, 1, "session 30000 applied first");
  expect_rejected(&w,
                  "heartbeat.interval.ms=10000/C session.timeout.ms=10000/D",
                  "heartbeat.interval.ms",
                  "heartbeat.interval.ms (10000) must be lower than "
                  "session.timeout.ms (10000)",
                  "dynamic hb = dynamic session");
  is_str(effv(&w, "session.timeout.ms"), "30000", "last good session stays");
  feed_none(&w, "heartbeat.interval.ms=10000/C session.timeout.ms=10000/D",
            "the rejected set again");
  dynconf_event_t *ev =
      feed(&w, "heartbeat.interval.ms=9999/C session.timeout.ms=10000/D");
  /* Only heartbeat changed in this fetch, but the set is judged whole:
   * session's effective 30000 -> 10000 is listed too. */
  if (check_change(ev, 1, 2, 2, "hb one below session")) {
    check_entry(ev, "heartbeat.interval.ms", NULL, "9999", S_CLIENT, O_APPLIED,
                NULL, "hb one below session");
    check_entry(ev, "session.timeout.ms", "30000", "10000", S_DEFAULT,
                O_APPLIED, NULL, "hb one below session");
  }
  dc_event_free(ev);
  is_str(effv(&w, "session.timeout.ms"), "10000",
         "the fix applies the complete set (session too)");
  world_free(&w);

  world_init(&w, true, NULL); /* app session 45000 */
  expect_rejected(&w, "heartbeat.interval.ms=45000/C", "heartbeat.interval.ms",
                  "heartbeat.interval.ms (45000) must be lower than "
                  "session.timeout.ms (45000)",
                  "dynamic hb vs app session");
  ev = feed(&w, "heartbeat.interval.ms=44999/C");
  ok(ev && dynconf_event_accepted(ev), "hb 44999 < app session: accepted");
  dc_event_free(ev);
  world_free(&w);

  world_init(&w, true, NULL);
  w.app.heartbeat_interval_ms = 10000;
  expect_rejected(&w, "session.timeout.ms=8000/C", "session.timeout.ms",
                  "heartbeat.interval.ms (10000) must be lower than "
                  "session.timeout.ms (8000)",
                  "app hb vs dynamic session");
  ev = feed(&w, "session.timeout.ms=10001/C");
  ok(ev && dynconf_event_accepted(ev), "session 10001 > app hb: accepted");
  dc_event_free(ev);
  world_free(&w);

  /* The app's own values conflict (librdkafka accepts heartbeat >=
   * session): that is the application's business, so a change set that
   * touches neither key applies; one that brings a dynamic session is
   * checked against the app's heartbeat. */
  world_init(&w, true, DEFAULT_ALLOW ",debug");
  w.app.heartbeat_interval_ms = 50000;
  ev = feed(&w, "debug=cgrp/C");
  if (check_change(ev, 1, 1, 1, "app hb >= app session"))
    check_entry(ev, "debug", NULL, "cgrp", S_CLIENT, O_APPLIED, NULL,
                "app hb >= app session");
  dc_event_free(ev);
  ok(effv(&w, "debug") && !strcmp(effv(&w, "debug"), "cgrp"),
     "app hb >= app session: debug applied");
  expect_rejected(&w, "debug=cgrp/C session.timeout.ms=40000/C",
                  "session.timeout.ms",
                  "heartbeat.interval.ms (50000) must be lower than "
                  "session.timeout.ms (40000)",
                  "app hb >= dynamic session");
  ev = feed(&w, "debug=cgrp/C session.timeout.ms=60000/C");
  ok(ev && dynconf_event_accepted(ev) && w.gen == 2,
     "a dynamic session above the app's hb applies");
  dc_event_free(ev);
  world_free(&w);

  /* An ignored heartbeat does not rescue a dynamic session. */
  world_init(&w, true, "session.timeout.ms");
  w.app.heartbeat_interval_ms = 10000;
  expect_rejected(&w, "heartbeat.interval.ms=1000/C session.timeout.ms=8000/C",
                  "session.timeout.ms",
                  "heartbeat.interval.ms (10000) must be lower than "
                  "session.timeout.ms (8000)",
                  "hb not allowed");
  world_free(&w);

  /* session <= max.poll.interval.ms */
  world_init(&w, true, NULL);
  w.app.max_poll_interval_ms = 20000;
  expect_rejected(&w, "session.timeout.ms=30000/C", "session.timeout.ms",
                  "session.timeout.ms (30000) must not exceed "
                  "max.poll.interval.ms (20000); librdkafka refuses that "
                  "configuration",
                  "session > app max.poll");
  ev = feed(&w, "session.timeout.ms=20000/C");
  ok(ev && dynconf_event_accepted(ev) && w.gen == 1,
     "session = max.poll.interval.ms: accepted");
  dc_event_free(ev);
  world_free(&w);

  /* Widened: max.poll.interval.ms itself dynamic. */
  world_init(&w, true, DEFAULT_ALLOW ",max.poll.interval.ms");
  expect_rejected(&w, "max.poll.interval.ms=20000/C", "max.poll.interval.ms",
                  "session.timeout.ms (45000) must not exceed "
                  "max.poll.interval.ms (20000); librdkafka refuses that "
                  "configuration",
                  "dynamic max.poll below app session");
  ev = feed(&w, "max.poll.interval.ms=60000/C session.timeout.ms=50000/C");
  if (check_change(ev, 1, 1, 2, "dynamic max.poll and session")) {
    check_entry(ev, "max.poll.interval.ms", NULL, "60000", S_CLIENT, O_APPLIED,
                NULL, "dynamic max.poll and session");
    check_entry(ev, "session.timeout.ms", NULL, "50000", S_CLIENT, O_APPLIED,
                NULL, "dynamic max.poll and session");
  }
  dc_event_free(ev);
  is_str(effv(&w, "max.poll.interval.ms"), "60000", "max.poll applied");
  world_free(&w);
}

/* group.protocol=consumer (KIP-848): the broker owns the session and
 * heartbeat timeouts, so the agent reports them ignored, never rebuilds
 * for them, and checks no rule that involves them. */
static void test_kip848(void) {
  world_t w;
  world_init(&w, true, "session.timeout.ms,heartbeat.interval.ms,"
                        "max.poll.interval.ms");
  w.app.broker_owns_timeouts = true;
  dynconf_event_t *ev = feed(&w, "session.timeout.ms=30000/C "
                                 "heartbeat.interval.ms=40000/C");
  if (check_change(ev, 1, 0, 2, "KIP-848 timeouts")) {
    check_entry(ev, "session.timeout.ms", NULL, "30000", S_CLIENT, O_IGNORED,
                "~group.protocol=consumer (KIP-848) the broker sets "
                "session.timeout.ms",
                "KIP-848 timeouts");
    check_entry(ev, "heartbeat.interval.ms", NULL, "40000", S_CLIENT,
                O_IGNORED, "~the broker sets heartbeat.interval.ms",
                "KIP-848 timeouts");
  }
  dc_event_free(ev);
  ok(!effv(&w, "session.timeout.ms") && !effv(&w, "heartbeat.interval.ms"),
     "KIP-848: neither timeout takes effect");
  /* max.poll.interval.ms below the (unused) session default is fine. */
  ev = feed(&w, "session.timeout.ms=30000/C heartbeat.interval.ms=40000/C "
                "max.poll.interval.ms=20000/C");
  ok(ev && dynconf_event_accepted(ev) && w.gen == 1,
     "KIP-848: max.poll.interval.ms applies and moves the generation once");
  dc_event_free(ev);
  is_str(effv(&w, "max.poll.interval.ms"), "20000", "  max.poll applied");
  ev = feed(&w, "session.timeout.ms=31000/C heartbeat.interval.ms=40000/C "
                "max.poll.interval.ms=20000/C");
  ok(ev && nentries(ev) == 1 && w.gen == 1,
     "KIP-848: a changed session timeout is reported, no rebuild (gen %lld)",
     (long long)w.gen);
  if (ev)
    check_entry(ev, "session.timeout.ms", "30000", "31000", S_CLIENT,
                O_IGNORED, "~KIP-848", "KIP-848 change");
  dc_event_free(ev);
  world_free(&w);

  /* The same fetch without KIP-848: heartbeat 40000 >= session 30000. */
  world_init(&w, true, NULL);
  expect_rejected(&w, "session.timeout.ms=30000/C heartbeat.interval.ms=40000/C",
                  "heartbeat.interval.ms",
                  "heartbeat.interval.ms (40000) must be lower than "
                  "session.timeout.ms (30000)",
                  "classic protocol");
  world_free(&w);
}

static void test_schema_invalid(void) {
  world_t w;
  world_init(&w, false, "acks,linger.ms");
  expect_rejected(&w, "acks=7/C linger.ms=5/C", "acks",
                  "acks=7 is not one of the allowed values", "acks=7");
  ok(!effv(&w, "linger.ms"), "acks=7: valid linger.ms not applied either");
  expect_rejected(&w, "acks=1/C linger.ms=abc/C", "linger.ms",
                  "linger.ms must be a number, not \"abc\"", "linger.ms=abc");
  dynconf_event_t *ev = feed(&w, "acks=1/C linger.ms=0.5/C");
  /* acks=1 did not change in this fetch but was never applied: the set
   * is judged whole, so it is listed as APPLIED too. */
  if (check_change(ev, 1, 1, 2, "linger.ms=0.5 (allow widened)")) {
    check_entry(ev, "acks", NULL, "1", S_CLIENT, O_APPLIED, NULL,
                "linger.ms=0.5 (allow widened)");
    check_entry(ev, "linger.ms", NULL, "0.5", S_CLIENT, O_APPLIED, NULL,
                "linger.ms=0.5 (allow widened)");
  }
  dc_event_free(ev);
  is_str(effv(&w, "acks"), "1", "acks=1 applied with the fix");
  is_str(effv(&w, "linger.ms"), "0.5", "linger.ms applied");
  world_free(&w);

  world_init(&w, true, NULL);
  expect_rejected(&w, "session.timeout.ms=abc/C heartbeat.interval.ms=1000/C",
                  "session.timeout.ms",
                  "session.timeout.ms must be an integer, not \"abc\"",
                  "session=abc");
  expect_rejected(&w, "session.timeout.ms=0/C heartbeat.interval.ms=1000/C",
                  "session.timeout.ms",
                  "session.timeout.ms=0 is outside the range 1..3600000",
                  "session=0");
  expect_rejected(&w, "session.timeout.ms=9000/C heartbeat.interval.ms=/C",
                  "heartbeat.interval.ms",
                  "heartbeat.interval.ms must be an integer, not \"\"",
                  "heartbeat empty");
  expect_rejected(&w, "session.timeout.ms=9000/C heartbeat.interval.ms=-5/C",
                  "heartbeat.interval.ms",
                  "heartbeat.interval.ms=-5 is outside the range 1..3600000",
                  "heartbeat=-5");
  expect_rejected(&w, "session.timeout.ms=+9000/C", "session.timeout.ms",
                  "session.timeout.ms must be an integer, not \"+9000\"",
                  "session=+9000");
  world_free(&w);
}

/* After a rejection, the fix applies the complete set, and every key
 * whose effective value changes should be reported. */
static void test_fix_after_rejection(void) {
  world_t w;
  world_init(&w, true, NULL);
  w.app.max_poll_interval_ms = 20000;
  expect_rejected(&w, "heartbeat.interval.ms=5000/C session.timeout.ms=30000/C",
                  "session.timeout.ms",
                  "session.timeout.ms (30000) must not exceed "
                  "max.poll.interval.ms (20000); librdkafka refuses that "
                  "configuration",
                  "session above app max.poll with hb");
  feed_none(&w, "session.timeout.ms=30000/C heartbeat.interval.ms=5000/C",
            "identical to the rejected set");
  ok(!effv(&w, "heartbeat.interval.ms") && !effv(&w, "session.timeout.ms"),
     "still the app's own after the repeat");
  dynconf_event_t *ev =
      feed(&w, "heartbeat.interval.ms=5000/C session.timeout.ms=15000/C");
  /* heartbeat did not change in this fetch, but it was in the rejected
   * set and its effective value moves now: listed as APPLIED. */
  if (check_change(ev, 1, 1, 2, "the fix")) {
    check_entry(ev, "session.timeout.ms", NULL, "15000", S_CLIENT, O_APPLIED,
                NULL, "the fix");
    check_entry(ev, "heartbeat.interval.ms", NULL, "5000", S_CLIENT, O_APPLIED,
                NULL, "the fix");
  }
  dc_event_free(ev);
  is_str(effv(&w, "session.timeout.ms"), "15000", "session applied");
  is_str(effv(&w, "heartbeat.interval.ms"), "5000",
         "heartbeat from the previously rejected set applied too");
  feed_none(&w, "heartbeat.interval.ms=5000/C session.timeout.ms=15000/C",
            "the fixed set again");
  world_free(&w);

  /* Reverting to the last good set after a rejection: accepted, the
   * effective config is already that, so the generation stays. */
  world_init(&w, true, NULL);
  dc_event_free(feed(&w, "session.timeout.ms=30000/C"));
  dc_event_free(feed(&w, "session.timeout.ms=abc/C"));
  ev = feed(&w, "session.timeout.ms=30000/C");
  if (check_change(ev, 1, 1, 1, "revert to the last good set"))
    check_entry(ev, "session.timeout.ms", "30000", "30000", S_CLIENT, O_APPLIED,
                NULL, "revert to the last good set");
  dc_event_free(ev);
  world_free(&w);

  /* The rejected set becomes valid because the culprit is deleted on the
   * server: the untouched heartbeat applies and is listed; the deleted
   * session is listed with the app's own on both sides. */
  world_init(&w, true, NULL);
  w.app.max_poll_interval_ms = 20000;
  w.app.session_timeout_ms = 10000; /* the app's own set is valid */
  dc_event_free(
      feed(&w, "heartbeat.interval.ms=5000/D session.timeout.ms=30000/C"));
  is_int(w.gen, 0, "session above max.poll: rejected");
  ev = feed(&w, "heartbeat.interval.ms=5000/D");
  if (check_change(ev, 1, 1, 2, "culprit deleted")) {
    check_entry(ev, "heartbeat.interval.ms", NULL, "5000", S_DEFAULT, O_APPLIED,
                NULL, "culprit deleted");
    check_entry(ev, "session.timeout.ms", NULL, NULL, S_APP, O_APPLIED, NULL,
                "culprit deleted");
  }
  dc_event_free(ev);
  world_free(&w);

  /* ... or because another allowed key changes: max.poll.interval.ms made
   * dynamic lets the unchanged session through. */
  world_init(&w, true, DEFAULT_ALLOW ",max.poll.interval.ms,debug");
  w.app.max_poll_interval_ms = 20000;
  w.app.session_timeout_ms = 10000;
  dc_event_free(feed(&w, "debug=cgrp/D session.timeout.ms=30000/C"));
  is_int(w.gen, 0, "session above app max.poll: rejected");
  ev = feed(&w, "debug=cgrp/D max.poll.interval.ms=40000/C "
                "session.timeout.ms=30000/C");
  if (check_change(ev, 1, 1, 3, "max.poll raised on the server")) {
    check_entry(ev, "debug", NULL, "cgrp", S_DEFAULT, O_APPLIED, NULL,
                "max.poll raised on the server");
    check_entry(ev, "max.poll.interval.ms", NULL, "40000", S_CLIENT, O_APPLIED,
                NULL, "max.poll raised on the server");
    check_entry(ev, "session.timeout.ms", NULL, "30000", S_CLIENT, O_APPLIED,
                NULL, "max.poll raised on the server");
  }
  dc_event_free(ev);
  is_str(effv(&w, "debug"), "cgrp", "debug applied with the set");
  is_int(effs(&w, "debug"), S_DEFAULT, "debug source DEFAULT");
  world_free(&w);

  /* A rejected set whose sources flip is still rejected, listed whole
   * (candidate sources differ from the effective ones). */
  world_init(&w, true, NULL);
  w.app.max_poll_interval_ms = 20000;
  dc_event_free(feed(&w, "session.timeout.ms=30000/C"));
  ev = feed(&w, "session.timeout.ms=30000/D");
  if (check_change(ev, 0, 0, 1, "rejected set flips source"))
    check_entry(ev, "session.timeout.ms", NULL, "30000", S_DEFAULT, O_REJECTED,
                "~must not exceed max.poll.interval.ms (20000)",
                "rejected set flips source");
  dc_event_free(ev);
  world_free(&w);
}

/* Rejections whose culprit did not change in this fetch: the culprit is
 * listed anyway, with the specific reason; the changed keys say "change
 * set rejected: ...". */
static void test_culprit_outside_change(void) {
  static const char hb_why[] = "heartbeat.interval.ms (5000) must be lower "
                               "than session.timeout.ms (4000)";
  world_t w;
  world_init(&w, true, NULL);
  dc_event_free(
      feed(&w, "heartbeat.interval.ms=5000/C session.timeout.ms=30000/C"));
  is_int(w.gen, 1, "hb 5000, session 30000 applied");
  /* Only session changes, to below the (unchanged) dynamic heartbeat. */
  dynconf_event_t *ev =
      feed(&w, "heartbeat.interval.ms=5000/C session.timeout.ms=4000/C");
  if (check_change(ev, 0, 1, 2, "session drops below dynamic hb")) {
    check_entry(ev, "heartbeat.interval.ms", "5000", "5000", S_CLIENT,
                O_REJECTED, hb_why, "session drops below dynamic hb");
    char other[300];
    snprintf(other, sizeof(other), "change set rejected: %s", hb_why);
    check_entry(ev, "session.timeout.ms", "30000", "4000", S_CLIENT, O_REJECTED,
                other, "session drops below dynamic hb");
  }
  dc_event_free(ev);
  is_str(effv(&w, "session.timeout.ms"), "30000", "session 30000 kept");
  world_free(&w);

  world_init(&w, true, DEFAULT_ALLOW ",max.poll.interval.ms");
  dc_event_free(
      feed(&w, "max.poll.interval.ms=60000/C session.timeout.ms=50000/C"));
  ev = feed(&w, "max.poll.interval.ms=40000/C session.timeout.ms=50000/C");
  if (check_change(ev, 0, 1, 2, "max.poll drops below dynamic session")) {
    check_entry(ev, "max.poll.interval.ms", "60000", "40000", S_CLIENT,
                O_REJECTED,
                "change set rejected: session.timeout.ms (50000) must not "
                "exceed max.poll.interval.ms (40000); librdkafka refuses "
                "that configuration",
                "max.poll drops below dynamic session");
    check_entry(ev, "session.timeout.ms", "50000", "50000", S_CLIENT,
                O_REJECTED,
                "session.timeout.ms (50000) must not exceed "
                "max.poll.interval.ms (40000); librdkafka refuses that "
                "configuration",
                "max.poll drops below dynamic session");
  }
  dc_event_free(ev);
  world_free(&w);

  /* A rejection persists through an ignored-only change: the event still
   * says why, on the allowed key the rejection blames. */
  world_init(&w, true, NULL);
  w.app.max_poll_interval_ms = 20000;
  dc_event_free(feed(&w, "session.timeout.ms=30000/C"));
  ev = feed(&w, "session.timeout.ms=30000/C linger.ms=5/C");
  if (check_change(ev, 0, 0, 2, "ignored key changes while rejected")) {
    check_entry(ev, "linger.ms", NULL, "5", S_CLIENT, O_IGNORED,
                "not in dynconf.allow.keys",
                "ignored key changes while rejected");
    check_entry(ev, "session.timeout.ms", NULL, "30000", S_CLIENT, O_REJECTED,
                "session.timeout.ms (30000) must not exceed "
                "max.poll.interval.ms (20000); librdkafka refuses that "
                "configuration",
                "ignored key changes while rejected");
  }
  dc_event_free(ev);
  world_free(&w);

  /* The application's own settings conflict and session.timeout.ms is
   * not even allowed: nothing dynamic takes part, the set applies. */
  world_init(&w, true, "heartbeat.interval.ms,debug");
  w.app.heartbeat_interval_ms = 50000;
  ev = feed(&w, "debug=cgrp/C");
  ok(ev && dynconf_event_accepted(ev) && nentries(ev) == 1 && w.gen == 1,
     "app hb >= app session, session not allowed: debug applies");
  dc_event_free(ev);
  world_free(&w);
}

/* ---- out of memory ----------------------------------------------------- */

static void test_oom(void) {
  static const struct {
    bool consumer, idem;
    const char *allow, *prev, *next;
  } sc[] = {
      {false, true, "acks,linger.ms,session.timeout.ms",
       "linger.ms=1/C x.unk=1/C",
       "acks=1/C linger.ms=5/D session.timeout.ms=9/C y.unk=2/D"},
      {true, false, NULL, "session.timeout.ms=30000/C",
       "heartbeat.interval.ms=40000/C session.timeout.ms=30000/D acks=0/C "
       "z.unk=1/C"},
  };
  for (size_t s = 0; s < sizeof(sc) / sizeof(sc[0]); s++) {
    int failures = 0, dirty = 0;
    long budget;
    for (budget = 0; budget < 1000; budget++) {
      world_t w;
      world_init(&w, sc[s].consumer, sc[s].allow);
      w.app.idempotent = sc[s].idem;
      dc_event_free(feed(&w, sc[s].prev));
      dc_effective_t snap;
      dc_effective_copy(&snap, &w.eff);
      dc_fetched_set_t f = fs(sc[s].next);
      dynconf_event_t *ev = (dynconf_event_t *)&ev;
      strdup_budget = budget;
      int rc = dc_resolve(&w.app, &w.allow, &w.prev, &f, &w.eff, w.gen, &ev);
      strdup_budget = -1;
      if (rc) {
        failures++;
        if (rc != -1 || ev != NULL || !eff_equal(&snap, &w.eff))
          dirty++;
      }
      dc_event_free(rc ? NULL : ev);
      dc_effective_free(&snap);
      dc_fetched_set_free(&f);
      world_free(&w);
      if (!rc)
        break;
    }
    ok(failures > 5 && budget < 1000,
       "OOM scenario %zu: %d strdup failure points, then success", s, failures);
    is_int(dirty, 0,
           "OOM scenario %zu: every failure returns -1, no event, effective "
           "untouched (leaks: valgrind)",
           s);
  }
}

/* ---- normalizing fetched sets, the entry limit, large sets ------------- */

/* A set in the order given (not sorted), as fetch() copies it. */
static dc_fetched_set_t raw_set(const char *const *kv, size_t n) {
  dc_fetched_set_t s = {0};
  for (size_t i = 0; i + 1 < 2 * n; i += 2)
    set_add(&s, kv[i], kv[i + 1], S_CLIENT);
  return s;
}

static void test_normalize(void) {
  char err[256] = "";
  static const char *const unsorted[] = {"session.timeout.ms", "8000",
                                         "acks", "1", "linger.ms", "5"};
  dc_fetched_set_t s = raw_set(unsorted, 3);
  is_int(dc_fetched_set_normalize(&s, 3, err, sizeof(err)), 0,
         "normalize: 3 distinct keys at a limit of 3 pass");
  ok(s.n == 3 && !strcmp(s.v[0].key, "acks") &&
         !strcmp(s.v[1].key, "linger.ms") &&
         !strcmp(s.v[2].key, "session.timeout.ms"),
     "normalize sorts by key");
  ok(dc_fetched_find(&s, "linger.ms") &&
         !strcmp(dc_fetched_find(&s, "linger.ms")->value, "5"),
     "a normalized set can be searched");
  dc_fetched_set_free(&s);

  dc_fetched_set_t e = {0};
  is_int(dc_fetched_set_normalize(&e, 0, err, sizeof(err)), 0,
         "normalize: an empty set passes, even at a limit of 0");

  /* Duplicates: refused whatever the values and wherever they sit. */
  static const char *const dup_same[] = {"acks", "1", "linger.ms", "5",
                                         "acks", "1"};
  static const char *const dup_diff[] = {"acks", "0", "acks", "1",
                                         "linger.ms", "5"};
  static const char *const dup_last[] = {"linger.ms", "5", "acks", "1",
                                         "linger.ms", "5"};
  const char *const *dups[] = {dup_same, dup_diff, dup_last};
  const char *culprit[] = {"acks", "acks", "linger.ms"};
  for (size_t d = 0; d < 3; d++) {
    char want[128];
    snprintf(want, sizeof(want), "server answered config '%s' twice",
             culprit[d]);
    for (int round = 0; round < 2; round++) { /* deterministic */
      s = raw_set(dups[d], 3);
      err[0] = '\0';
      is_int(dc_fetched_set_normalize(&s, 100, err, sizeof(err)), -1,
             "duplicate set %zu (round %d) is refused", d, round);
      is_str(err, want, "duplicate set %zu (round %d): errstr", d, round);
      dc_fetched_set_free(&s);
    }
  }

  /* The limit: counted before anything else. */
  s = raw_set(unsorted, 3);
  is_int(dc_fetched_set_normalize(&s, 2, err, sizeof(err)), -1,
         "normalize: 3 entries over a limit of 2 are refused");
  is_str(err, "server answered 3 config entries; the agent accepts at most 2",
         "over the limit: errstr names the count and the limit");
  dc_fetched_set_free(&s);
  is_int(dc_fetched_count_check(DC_AGENT_MAX_ENTRIES, DC_AGENT_MAX_ENTRIES,
                                err, sizeof(err)),
         0, "count check: exactly the limit passes");
  is_int(dc_fetched_count_check(1000000, DC_AGENT_MAX_ENTRIES, err,
                                sizeof(err)),
         -1, "count check: 1,000,000 entries are refused");
  is_str(err,
         "server answered 1000000 config entries; the agent accepts at most "
         "10000",
         "count check: errstr names 1000000 and the agent's limit");
  char small[16];
  dc_fetched_count_check(1000000, 10, small, sizeof(small));
  ok(memchr(small, '\0', sizeof(small)) != NULL,
     "count check: a small errstr is terminated");
}

/* n keys "x.NNNNN" (plus acks=0 and session.timeout.ms=7000), built in
 * reverse order and normalized; suffix changes every ignored value. */
static dc_fetched_set_t big_set(size_t n, const char *suffix) {
  dc_fetched_set_t s = {0};
  char key[32], val[32];
  for (size_t i = n - 2; i-- > 0;) {
    snprintf(key, sizeof(key), "x.%05zu", i);
    snprintf(val, sizeof(val), "%zu%s", i, suffix);
    set_add(&s, key, val, S_DEFAULT);
  }
  set_add(&s, "session.timeout.ms", "7000", S_CLIENT);
  set_add(&s, "acks", "0", S_CLIENT);
  char err[256];
  if (dc_fetched_set_normalize(&s, DC_AGENT_MAX_ENTRIES, err, sizeof(err)))
    diag("big_set(%zu): %s", n, err);
  return s;
}

/* Microseconds of one dc_resolve() of a fresh world onto `next` (the
 * best of 5 runs, so a scheduling hiccup does not count). */
static double resolve_us(const dc_fetched_set_t *next) {
  double best = 1e18;
  for (int r = 0; r < 5; r++) {
    world_t w;
    world_init(&w, false, NULL);
    struct timespec a, b;
    dynconf_event_t *ev = NULL;
    clock_gettime(CLOCK_MONOTONIC, &a);
    dc_resolve(&w.app, &w.allow, &w.prev, next, &w.eff, 0, &ev);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double us = (double)(b.tv_sec - a.tv_sec) * 1e6 +
                (double)(b.tv_nsec - a.tv_nsec) / 1e3;
    if (us < best)
      best = us;
    dc_event_free(ev);
    world_free(&w);
  }
  return best;
}

static void test_large_set(void) {
  const size_t n = DC_AGENT_MAX_ENTRIES;
  dc_fetched_set_t big = big_set(n, "");
  is_int(big.n, n, "a set of %zu entries normalizes", n);
  size_t found = 0;
  char key[32];
  for (size_t i = 0; i < n - 2; i++) {
    snprintf(key, sizeof(key), "x.%05zu", i);
    const dc_fetched_t *f = dc_fetched_find(&big, key);
    char want[32];
    snprintf(want, sizeof(want), "%zu", i);
    found += f && !strcmp(f->value, want);
  }
  is_int(found, n - 2, "every key of the big set is found with its value");
  ok(!dc_fetched_find(&big, "x.0") && !dc_fetched_find(&big, "x.99999") &&
         !dc_fetched_find(&big, "a") && !dc_fetched_find(&big, "z"),
     "keys between, before and after the big set's are absent");

  world_t w;
  world_init(&w, false, NULL);
  dynconf_event_t *ev = NULL;
  is_int(dc_resolve(&w.app, &w.allow, &w.prev, &big, &w.eff, 0, &ev), 0,
         "resolving %zu entries succeeds", n);
  if (check_change(ev, 1, 1, n, "big first fetch")) {
    check_entry(ev, "acks", NULL, "0", S_CLIENT, O_APPLIED, NULL,
                "big first fetch");
    check_entry(ev, "x.04242", NULL, "4242", S_DEFAULT, O_IGNORED,
                "not in dynconf.allow.keys", "big first fetch");
    is_int(nentries(ev), n, "big first fetch: one entry per key");
  }
  is_str(effv(&w, "acks"), "0", "big first fetch: acks applied");
  dc_event_free(ev);
  w.prev = set_copy(&big);
  w.gen = 1;

  dc_fetched_set_t again = big_set(n, "");
  ev = (dynconf_event_t *)&ev;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  is_int(dc_resolve(&w.app, &w.allow, &w.prev, &again, &w.eff, 1, &ev), 0,
         "resolving the same %zu entries again succeeds", n);
  clock_gettime(CLOCK_MONOTONIC, &b);
  diag("dc_resolve of an unchanged set of %zu entries: %.0f us", n,
       (double)(b.tv_sec - a.tv_sec) * 1e6 +
           (double)(b.tv_nsec - a.tv_nsec) / 1e3);
  ok(ev == NULL, "the same big set again: no event");
  dc_fetched_set_free(&again);

  dc_fetched_set_t changed = big_set(n, "");
  free(changed.v[n / 2].value);
  changed.v[n / 2].value = strdup("new");
  ev = NULL;
  dc_resolve(&w.app, &w.allow, &w.prev, &changed, &w.eff, 1, &ev);
  ok(ev && nentries(ev) == 1 &&
         !strcmp(dynconf_event_key(ev, 0), changed.v[n / 2].key),
     "one value changed in the big set: one entry, for that key");
  dc_event_free(ev);
  dc_fetched_set_free(&changed);
  world_free(&w);

  /* Linear or n log n: ten times the entries cost far less than the
   * hundred times a quadratic resolve would. */
  dc_fetched_set_t tenth = big_set(n / 10, "");
  double t_small = resolve_us(&tenth), t_big = resolve_us(&big);
  diag("dc_resolve of a first fetch: %zu entries %.0f us, %zu entries %.0f us",
       n / 10, t_small, n, t_big);
  ok(t_big < 40 * t_small + 1000,
     "10x the entries cost < 40x the time (%.0f us vs %.0f us)", t_big,
     t_small);
  dc_fetched_set_free(&tenth);
  dc_fetched_set_free(&big);
}

/* ---- randomized ---------------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static const struct rkey {
  const char *key;
  const char *vals[8];
} rkeys[] = {
    {"acks", {"all", "-1", "0", "1", "7", NULL}},
    {"session.timeout.ms",
     {"6000", "8000", "10000", "30000", "50000", "abc", "0", NULL}},
    {"heartbeat.interval.ms", {"1000", "5000", "10000", "40000", "-1", NULL}},
    {"max.poll.interval.ms", {"20000", "60000", "400000", NULL}},
    {"linger.ms", {"0", "5", "0.5", "-1", NULL}},
    {"debug", {"cgrp", "bogus", NULL}},
    {"x.unknown", {"1", "2", NULL}},
};
#define NRKEYS (sizeof(rkeys) / sizeof(rkeys[0]))

static const char *rval(size_t k) {
  size_t n = 0;
  while (rkeys[k].vals[n])
    n++;
  return rkeys[k].vals[rnd() % n];
}

static const dynconf_source_t rsources[] = {S_CLIENT, S_DEFAULT, S_USER,
                                            S_USER_CLIENT};
static dynconf_source_t rsrc(void) { return rsources[rnd() % 4]; }
/* Another source than s. */
static dynconf_source_t rother(dynconf_source_t s) {
  dynconf_source_t o;
  while ((o = rsrc()) == s)
    ;
  return o;
}

/* The next fetched set: often the same, often one key off, else random. */
static dc_fetched_set_t rand_set(const dc_fetched_set_t *prev) {
  dc_fetched_set_t s = {0};
  uint64_t r = rnd() % 8;
  if (r < 2)
    return set_copy(prev);
  if (r < 5) {
    size_t k = rnd() % NRKEYS;
    int op = (int)(rnd() % 3);
    for (size_t i = 0; i < prev->n; i++)
      if (strcmp(prev->v[i].key, rkeys[k].key))
        set_add(&s, prev->v[i].key, prev->v[i].value, prev->v[i].source);
    if (op == 0) /* value */
      set_add(&s, rkeys[k].key, rval(k), rsrc());
    else if (op == 1) { /* source only, or add */
      const dc_fetched_t *f = dc_fetched_find(prev, rkeys[k].key);
      set_add(&s, rkeys[k].key, f ? f->value : rval(k),
              f ? rother(f->source) : rsrc());
    } /* op 2: deleted */
  } else {
    for (size_t k = 0; k < NRKEYS; k++)
      if (rnd() % 2)
        set_add(&s, rkeys[k].key, rval(k), rsrc());
  }
  set_sort(&s);
  return s;
}

/* The model: an independent reading of the rules (see the top comment),
 * written without looking at how resolve.c is structured. */
static bool m_applies(const dc_app_settings_t *app, const char *key) {
  const dc_schema_entry_t *e = dc_schema_find(key);
  return e && (e->applies &
               (app->consumer ? DC_APPLIES_CONSUMER : DC_APPLIES_PRODUCER));
}
static bool m_pinned(const dc_app_settings_t *app, const char *key,
                     const char *v) {
  return !strcmp(key, "acks") && (app->idempotent || app->transactional) &&
         strcmp(v, "all") && strcmp(v, "-1");
}

/* Rule 1: same keys, values and sources, whatever the order. */
static bool m_same_set(const dc_fetched_set_t *a, const dc_fetched_set_t *b) {
  if (a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++) {
    bool found = false;
    for (size_t j = 0; j < b->n && !found; j++)
      found = !strcmp(a->v[i].key, b->v[j].key) &&
              !strcmp(a->v[i].value, b->v[j].value) &&
              a->v[i].source == b->v[j].source;
    if (!found)
      return false;
  }
  return true;
}

/* Rule 2: the candidate, i.e. the effective config once `f` is accepted. */
static void m_project(const dc_app_settings_t *app, const dc_allow_t *al,
                      const dc_fetched_set_t *f, dc_effective_t *out) {
  memset(out, 0, sizeof(*out));
  for (size_t i = 0; i < al->n; i++) {
    const dc_fetched_t *x = dc_fetched_find(f, al->keys[i]);
    if (!x || !m_applies(app, al->keys[i]) ||
        m_pinned(app, al->keys[i], x->value))
      continue;
    out->value[i] = strdup(x->value);
    out->source[i] = x->source;
  }
}

static int64_t m_int(const dc_allow_t *al, const dc_effective_t *e,
                     const char *key, int64_t app) {
  int i = dc_allow_index(al, key);
  return i >= 0 && e->value[i] ? strtoll(e->value[i], NULL, 10) : app;
}

/* Whether key has a dynamic value: cross-key rules apply only then. */
static bool m_dyn(const dc_allow_t *al, const dc_effective_t *e,
                  const char *key) {
  int i = dc_allow_index(al, key);
  return i >= 0 && e->value[i];
}

/* Whether a configuration (candidate or effective) obeys the rules. */
static bool m_rules_ok(const dc_app_settings_t *app, const dc_allow_t *al,
                       const dc_effective_t *e) {
  char why[256];
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++) {
    if (i >= al->n) {
      if (e->value[i])
        return false;
      continue;
    }
    if (!e->value[i]) {
      if (e->source[i] != S_APP)
        return false;
      continue;
    }
    if (!dc_schema_validate(dc_schema_find(al->keys[i]), e->value[i], why,
                            sizeof(why)) ||
        !m_applies(app, al->keys[i]) ||
        m_pinned(app, al->keys[i], e->value[i]) || e->source[i] == S_APP)
      return false;
  }
  if (!app->consumer)
    return true;
  int64_t s = m_int(al, e, "session.timeout.ms", app->session_timeout_ms);
  int64_t h = m_int(al, e, "heartbeat.interval.ms", app->heartbeat_interval_ms);
  int64_t m = m_int(al, e, "max.poll.interval.ms", app->max_poll_interval_ms);
  bool sd = m_dyn(al, e, "session.timeout.ms"),
       hd = m_dyn(al, e, "heartbeat.interval.ms"),
       md = m_dyn(al, e, "max.poll.interval.ms");
  return (!(hd || sd) || h < s) && (!(sd || md) || s <= m);
}

/* The acceptable (culprit, specific reason) pairs of a rejected candidate:
 * any schema-invalid value with its own message; failing that, either key
 * of a failing cross-key rule with that rule's message. */
typedef struct {
  size_t n;
  const char *key[2 * DC_AGENT_MAX_KEYS];
  char why[2 * DC_AGENT_MAX_KEYS][256];
} m_blame_t;

static void m_blame_add(m_blame_t *b, const char *key, const char *why) {
  b->key[b->n] = key;
  snprintf(b->why[b->n], sizeof(b->why[b->n]), "%s", why);
  b->n++;
}

static void m_blames(const dc_app_settings_t *app, const dc_allow_t *al,
                     const dc_effective_t *cand, m_blame_t *b) {
  char why[256];
  b->n = 0;
  for (size_t i = 0; i < al->n; i++)
    if (cand->value[i] && !dc_schema_validate(dc_schema_find(al->keys[i]),
                                              cand->value[i], why, sizeof(why)))
      m_blame_add(b, al->keys[i], why);
  if (b->n || !app->consumer)
    return;
  int64_t s = m_int(al, cand, "session.timeout.ms", app->session_timeout_ms);
  int64_t h =
      m_int(al, cand, "heartbeat.interval.ms", app->heartbeat_interval_ms);
  int64_t m =
      m_int(al, cand, "max.poll.interval.ms", app->max_poll_interval_ms);
  bool sd = m_dyn(al, cand, "session.timeout.ms"),
       hd = m_dyn(al, cand, "heartbeat.interval.ms"),
       md = m_dyn(al, cand, "max.poll.interval.ms");
  /* Only a key the server sent can be blamed. */
  if ((hd || sd) && h >= s) {
    snprintf(why, sizeof(why),
             "heartbeat.interval.ms (%lld) must be lower than "
             "session.timeout.ms (%lld)",
             (long long)h, (long long)s);
    if (hd)
      m_blame_add(b, "heartbeat.interval.ms", why);
    if (sd)
      m_blame_add(b, "session.timeout.ms", why);
  }
  if ((sd || md) && s > m) {
    snprintf(why, sizeof(why),
             "session.timeout.ms (%lld) must not exceed max.poll.interval.ms "
             "(%lld); librdkafka refuses that configuration",
             (long long)s, (long long)m);
    if (sd)
      m_blame_add(b, "session.timeout.ms", why);
    if (md)
      m_blame_add(b, "max.poll.interval.ms", why);
  }
}

static bool m_has(const char *const *keys, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(keys[i], key))
      return true;
  return false;
}

static const char *nz(const char *s) { return s ? s : "(null)"; }

static int rfails;
__attribute__((format(printf, 2, 3))) static void rfail(int step,
                                                        const char *fmt, ...) {
  if (rfails++ < 10) {
    va_list ap;
    va_start(ap, fmt);
    printf("#   step %d: ", step);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
  }
}

/* Coverage of the interesting cases, summed over a configuration. */
typedef struct {
  int none, acc, rej, moves, source_only, whole, culprit_outside, pinned,
      ignored_deleted;
} rstats_t;

/* Checks one dc_resolve step against the model. */
static void m_check_step(int st, const world_t *w, const dc_fetched_set_t *f,
                         const dc_effective_t *before, int64_t g0, int rc,
                         const dynconf_event_t *ev, rstats_t *rs) {
  const dc_app_settings_t *app = &w->app;
  const dc_allow_t *al = &w->allow;
  const dc_fetched_set_t *prev = &w->prev;
  if (rc) {
    rfail(st, "dc_resolve returned %d", rc);
    return;
  }
  bool unchanged = m_same_set(prev, f);
  if (unchanged != (ev == NULL)) {
    rfail(st, "event %s but the fetch %s", ev ? "present" : "absent",
          unchanged ? "is unchanged" : "changed");
    return;
  }
  if (!ev) {
    rs->none++;
    if (!eff_equal(before, &w->eff))
      rfail(st, "no event but the effective config changed");
    return;
  }
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE ||
      dynconf_event_error(ev) != DYNCONF_ERR_NO_ERROR ||
      strcmp(dynconf_event_error_string(ev), ""))
    rfail(st, "not a clean CHANGE event");

  dc_effective_t cand;
  m_project(app, al, f, &cand);
  m_blame_t blame;
  m_blames(app, al, &cand, &blame);
  bool want_acc = blame.n == 0;
  if (want_acc != m_rules_ok(app, al, &cand))
    rfail(st, "model disagrees with itself (%d blames)", (int)blame.n);
  int acc = dynconf_event_accepted(ev);
  if (acc != (int)want_acc)
    rfail(st, "accepted=%d, want %d", acc, (int)want_acc);
  acc ? rs->acc++ : rs->rej++;

  /* Rule 5: effective and generation. */
  bool value_moves = false, source_moves = false;
  for (size_t i = 0; i < al->n; i++) {
    value_moves |= !same(cand.value[i], before->value[i]);
    source_moves |= cand.source[i] != before->source[i];
  }
  int64_t g1 = dynconf_event_generation(ev);
  if (want_acc) {
    if (!eff_equal(&cand, &w->eff))
      rfail(st, "accepted but the effective config is not the candidate");
    if (g1 != g0 + (value_moves ? 1 : 0))
      rfail(st, "generation %lld -> %lld, value moved=%d", (long long)g0,
            (long long)g1, (int)value_moves);
    rs->moves += value_moves;
    rs->source_only += !value_moves && source_moves;
  } else {
    if (!eff_equal(before, &w->eff))
      rfail(st, "rejected but the effective config changed");
    if (g1 != g0)
      rfail(st, "rejected but the generation moved %lld -> %lld", (long long)g0,
            (long long)g1);
  }

  /* Rule 3 (without the culprit): the keys that must be listed. */
  const char *want[2 * DC_AGENT_MAX_KEYS + 64];
  size_t nw = 0, ndiff;
  for (int pass = 0; pass < 2; pass++) {
    const dc_fetched_set_t *a = pass ? prev : f, *b = pass ? f : prev;
    for (size_t i = 0; i < a->n; i++) {
      const dc_fetched_t *o = dc_fetched_find(b, a->v[i].key);
      if ((!o || strcmp(o->value, a->v[i].value) ||
           o->source != a->v[i].source) &&
          !m_has(want, nw, a->v[i].key))
        want[nw++] = a->v[i].key;
    }
  }
  ndiff = nw;
  for (size_t i = 0; i < al->n; i++)
    if ((!same(cand.value[i], before->value[i]) ||
         (cand.value[i] && cand.source[i] != before->source[i])) &&
        !m_has(want, nw, al->keys[i])) {
      want[nw++] = al->keys[i];
      rs->whole += want_acc;
    }

  /* The culprit: the one entry whose reason is not "change set
   * rejected: ...", among the allowed applicable (non-IGNORED) ones. */
  const char *culprit = NULL, *cwhy = NULL;
  size_t n = dynconf_event_entry_count(ev);
  if (!want_acc) {
    int nc = 0;
    for (size_t k = 0; k < n; k++) {
      const char *r = dynconf_event_reason(ev, k);
      if (dynconf_event_outcome(ev, k) != O_IGNORED && r &&
          strncmp(r, "change set rejected: ", 21)) {
        nc++;
        culprit = dynconf_event_key(ev, k);
        cwhy = r;
      }
    }
    if (nc != 1)
      rfail(st, "rejected: %d entries carry a specific reason, want 1", nc);
    bool fits = false;
    for (size_t b = 0; culprit && b < blame.n; b++)
      fits |= !strcmp(blame.key[b], culprit) && !strcmp(blame.why[b], cwhy);
    if (culprit && !fits)
      rfail(st, "culprit %s with \"%s\" is not one the rules allow", culprit,
            cwhy);
    if (culprit && !m_has(want, ndiff, culprit))
      rs->culprit_outside++;
    if (culprit && !m_has(want, nw, culprit))
      want[nw++] = culprit;
  }
  if (n != nw)
    rfail(st, "%zu entries, want %zu", n, nw);
  for (size_t k = 0; k < nw; k++)
    if (entry_index(ev, want[k]) < 0)
      rfail(st, "%s has no entry", want[k]);
  if (!sorted_entries(ev))
    rfail(st, "entries not sorted");

  /* Rule 4, entry by entry. */
  for (size_t k = 0; k < n; k++) {
    const char *key = dynconf_event_key(ev, k);
    const dc_fetched_t *x = dc_fetched_find(f, key),
                       *p = dc_fetched_find(prev, key);
    int ai = dc_allow_index(al, key);
    dynconf_outcome_t wo;
    const char *wold, *wnew;
    dynconf_source_t wsrc = x ? x->source : S_APP;
    char wr[400];
    if (ai < 0 || !m_applies(app, key)) {
      wo = O_IGNORED;
      wold = p ? p->value : NULL;
      wnew = x ? x->value : NULL;
      if (ai < 0)
        snprintf(wr, sizeof(wr), "not in dynconf.allow.keys");
      else
        snprintf(wr, sizeof(wr), "%s does not apply to a %s", key,
                 app->consumer ? "consumer" : "producer");
      rs->ignored_deleted += ai >= 0 && !x;
    } else if (!want_acc) {
      wo = O_REJECTED;
      wold = before->value[ai];
      wnew = x ? x->value : NULL;
      if (culprit && !strcmp(key, culprit))
        snprintf(wr, sizeof(wr), "%s", cwhy);
      else
        snprintf(wr, sizeof(wr), "change set rejected: %s", cwhy ? cwhy : "?");
    } else if (x && m_pinned(app, key, x->value)) {
      wo = O_PINNED;
      wold = before->value[ai];
      wnew = NULL;
      snprintf(wr, sizeof(wr), "acks=%s requested; acks stays all: the "
               "application sets %s", x->value,
               app->transactional ? "transactional.id"
                                  : "enable.idempotence=true");
      rs->pinned++;
    } else {
      wo = O_APPLIED;
      wold = before->value[ai];
      wnew = cand.value[ai];
      wsrc = cand.value[ai] ? cand.source[ai] : S_APP;
      wr[0] = '\0';
    }
    const char *r = dynconf_event_reason(ev, k),
               *go = dynconf_event_old_value(ev, k),
               *gn = dynconf_event_new_value(ev, k);
    dynconf_outcome_t gout = dynconf_event_outcome(ev, k);
    dynconf_source_t gsrc = dynconf_event_source(ev, k);
    if (gout != wo || !same(go, wold) || !same(gn, wnew) || gsrc != wsrc ||
        !same(r, wr[0] ? wr : NULL))
      rfail(st, "%s: got %s %s->%s %s \"%s\", want %s %s->%s %s \"%s\"", key,
            dynconf_outcome_name(gout), nz(go), nz(gn),
            dynconf_source_name(gsrc), nz(r), dynconf_outcome_name(wo),
            nz(wold), nz(wnew), dynconf_source_name(wsrc), wr);
  }
  dc_effective_free(&cand);
}

static void test_random(void) {
  static const struct rcfg {
    const char *name;
    bool consumer, idem, txn;
    int64_t maxpoll, session, hb;
    const char *allow;
  } cfgs[] = {
      {"producer", false, false, false, 300000, 45000, 3000, DEFAULT_ALLOW},
      {"idempotent producer + linger", false, true, false, 300000, 45000, 3000,
       "acks,linger.ms,session.timeout.ms"},
      {"transactional producer, wide allow", false, false, true, 300000, 45000,
       3000, DEFAULT_ALLOW ",max.poll.interval.ms,linger.ms,debug"},
      {"consumer", true, false, false, 300000, 45000, 3000, DEFAULT_ALLOW},
      {"consumer, tight app settings, wide allow", true, false, false, 20000,
       15000, 10000, DEFAULT_ALLOW ",max.poll.interval.ms,debug,linger.ms"},
      {"consumer, session only", true, false, false, 300000, 45000, 10000,
       "session.timeout.ms"},
      /* librdkafka accepts heartbeat >= session: only a dynamic fix passes */
      {"consumer, app hb >= app session", true, false, false, 300000, 45000,
       50000, DEFAULT_ALLOW ",debug"},
  };
  const uint64_t seed = 0x5eed649ull;
  const int steps = 3000;
  rstats_t tot = {0};
  diag("randomized: seed 0x%llx, %d steps per configuration",
       (unsigned long long)seed, steps);
  for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
    const struct rcfg *cf = &cfgs[c];
    rng_state = seed + c;
    rfails = 0;
    rstats_t rs = {0};
    world_t w;
    world_init(&w, cf->consumer, cf->allow);
    w.app.idempotent = cf->idem;
    w.app.transactional = cf->txn;
    w.app.max_poll_interval_ms = cf->maxpoll;
    w.app.session_timeout_ms = cf->session;
    w.app.heartbeat_interval_ms = cf->hb;
    bool valid = m_rules_ok(&w.app, &w.allow, &w.eff); /* the app's own */
    for (int st = 0; st < steps; st++) {
      dc_fetched_set_t f = rand_set(&w.prev);
      dc_effective_t before;
      dc_effective_copy(&before, &w.eff);
      int64_t g0 = w.gen;
      dynconf_event_t *ev = (dynconf_event_t *)&ev;
      int rc = dc_resolve(&w.app, &w.allow, &w.prev, &f, &w.eff, w.gen, &ev);
      if (rc)
        ev = NULL;
      m_check_step(st, &w, &f, &before, g0, rc, ev, &rs);
      if (ev) {
        w.gen = dynconf_event_generation(ev);
        valid |= dynconf_event_accepted(ev) != 0;
      }
      if (valid && !m_rules_ok(&w.app, &w.allow, &w.eff))
        rfail(st, "the effective config breaks the rules");
      dc_event_free(ev);
      dc_effective_free(&before);
      dc_fetched_set_free(&w.prev);
      w.prev = f;
    }
    diag("%s: %d no-event, %d accepted (%d moved the generation, %d "
         "source-only), %d rejected (%d blamed an unchanged key), %d "
         "listed by the whole-set rule, %d pinned, final generation %lld",
         cf->name, rs.none, rs.acc, rs.moves, rs.source_only, rs.rej,
         rs.culprit_outside, rs.whole, rs.pinned, (long long)w.gen);
    is_int(rfails, 0, "random %s: every step matches the model (%d steps)",
           cf->name, steps);
    ok(rs.none > 100 && rs.acc > 100 && rs.moves > 50,
       "random %s: exercised no-event, accepted and generation moves",
       cf->name);
    if (cf->consumer)
      ok(rs.rej > 100, "random %s: exercised rejections", cf->name);
    tot.source_only += rs.source_only;
    tot.whole += rs.whole;
    tot.culprit_outside += rs.culprit_outside;
    tot.pinned += rs.pinned;
    tot.ignored_deleted += rs.ignored_deleted;
    world_free(&w);
  }
  ok(tot.source_only > 20, "random: source-only changes exercised (%d)",
     tot.source_only);
  ok(tot.whole > 20,
     "random: keys listed only because the whole set applies (%d)", tot.whole);
  ok(tot.culprit_outside > 20,
     "random: rejections blamed on a key the fetch did not change (%d)",
     tot.culprit_outside);
  ok(tot.pinned > 20, "random: PINNED entries (%d)", tot.pinned);
  ok(tot.ignored_deleted > 20,
     "random: allowed keys deleted on a client kind they do not apply to "
     "(%d)",
     tot.ignored_deleted);
}

/* A dynamic value equal to the application's own is a change of source
 * only: the client keeps running with the same value, no rebuild. */
static void test_same_as_app(void) {
  world_t w;
  world_init(&w, false, "acks");
  char app_acks[] = "1";
  w.app.values[0] = app_acks;
  dynconf_event_t *ev = feed(&w, "acks=1/C");
  ok(ev && dynconf_event_accepted(ev) && dynconf_event_entry_count(ev) == 1,
     "acks=1 over the app's own acks=1: one applied entry");
  is_int(w.gen, 0, "acks=1 over the app's own acks=1: generation stays 0");
  dc_event_free(ev);
  ev = feed(&w, "acks=0/C");
  is_int(w.gen, 1, "acks=0 then moves the generation");
  dc_event_free(ev);
  w.app.values[0] = NULL;
  world_free(&w);
}

int main(void) {
  test_fetched_find();
  test_effective();
  test_allow();
  test_event_accessors();
  test_no_change();
  test_same_as_app();
  test_first_fetch_and_sources();
  test_wire_sources();
  test_principal_sources();
  test_sorting_and_ignored();
  test_pinned();
  test_consumer_rules();
  test_kip848();
  test_schema_invalid();
  test_fix_after_rejection();
  test_culprit_outside_change();
  test_oom();
  test_normalize();
  test_large_set();
  test_random();
  return done_testing();
}
