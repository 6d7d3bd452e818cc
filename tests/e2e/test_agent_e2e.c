/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end tests of the agent (producer side and general) against a real
 * dynconfd, plus a real librdkafka producer built from the effective
 * configuration against librdkafka's mock cluster.
 *
 * Configs are set on dynconfd with IncrementalAlterConfigs through our own
 * codec (one request per change set, so the agent sees a whole set in one
 * fetch). Nothing here asserts on timing: every wait is "until a condition
 * holds or a generous deadline passes". The agent's fetch counter in its
 * statistics tells when a fetch after an alter has certainly completed
 * (two more successful fetches), which makes "exactly N events" exact.
 */
#include "../agentutil.h"

#define WAIT_MS 15000 /* deadline for any condition */
#define REFRESH_MS "300"

static int g_port;           /* dynconfd */
static char g_mock_bs[256];  /* mock cluster bootstraps */
static pthread_t g_main;     /* the thread that polls every agent */
static int g_cb_calls, g_cb_wrong_thread;

/* ---- setting configs on dynconfd ----------------------------------------- */

/* Alters one client entity ("<default>" = the default entity) in ONE
 * IncrementalAlterConfigs request; see au_alter(). */
static int alter(const char *entity, const char *spec) {
  return au_alter(g_port, entity, spec);
}

/* ---- recording events and logs ------------------------------------------- */

typedef struct rec_entry {
  char key[64], oldv[64], newv[64], reason[300];
  bool has_old, has_new, has_reason;
  dynconf_source_t source;
  dynconf_outcome_t outcome;
} rec_entry_t;

typedef struct rec_event {
  dynconf_event_type_t type;
  dynconf_err_t err;
  char errstr[300];
  int accepted;
  int64_t generation;
  size_t n;
  rec_entry_t e[8];
} rec_event_t;

typedef struct rec {
  const char *client_id;
  rec_event_t ev[32];
  int n;
  int n_logs, n_warn; /* log lines; those at level <= 4 */
} rec_t;

static rec_t *g_recs[16]; /* registered recorders, matched by client id */

static void rec_register(rec_t *r, const char *client_id) {
  memset(r, 0, sizeof(*r));
  r->client_id = client_id;
  for (size_t i = 0; i < 16; i++)
    if (!g_recs[i]) {
      g_recs[i] = r;
      return;
    }
}

static void rec_unregister(rec_t *r) {
  for (size_t i = 0; i < 16; i++)
    if (g_recs[i] == r)
      g_recs[i] = NULL;
}

static void copy_opt(char *dst, size_t n, const char *src, bool *has) {
  *has = src != NULL;
  snprintf(dst, n, "%s", src ? src : "");
}

static void note_thread(void) {
  g_cb_calls++;
  if (!pthread_equal(pthread_self(), g_main))
    g_cb_wrong_thread++;
}

static void on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  note_thread();
  rec_t *r = opaque;
  if (r->n >= 32)
    return;
  rec_event_t *e = &r->ev[r->n++];
  memset(e, 0, sizeof(*e));
  e->type = dynconf_event_type(ev);
  e->err = dynconf_event_error(ev);
  snprintf(e->errstr, sizeof(e->errstr), "%s", dynconf_event_error_string(ev));
  e->accepted = dynconf_event_accepted(ev);
  e->generation = dynconf_event_generation(ev);
  e->n = dynconf_event_entry_count(ev);
  for (size_t i = 0; i < e->n && i < 8; i++) {
    rec_entry_t *x = &e->e[i];
    bool has;
    copy_opt(x->key, sizeof(x->key), dynconf_event_key(ev, i), &has);
    copy_opt(x->oldv, sizeof(x->oldv), dynconf_event_old_value(ev, i),
             &x->has_old);
    copy_opt(x->newv, sizeof(x->newv), dynconf_event_new_value(ev, i),
             &x->has_new);
    copy_opt(x->reason, sizeof(x->reason), dynconf_event_reason(ev, i),
             &x->has_reason);
    x->source = dynconf_event_source(ev, i);
    x->outcome = dynconf_event_outcome(ev, i);
  }
}

static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  note_thread();
  if (level <= 5)
    diag("agent log %d %s %s: %s", level, dynconf_client_id(dc), fac, msg);
  for (size_t i = 0; i < 16; i++)
    if (g_recs[i] && !strcmp(g_recs[i]->client_id, dynconf_client_id(dc))) {
      g_recs[i]->n_logs++;
      if (level <= 4)
        g_recs[i]->n_warn++;
    }
}

/* ---- agents and waiting ---------------------------------------------------- */

/* Application config: client.id plus NULL-terminated (key, value) pairs;
 * bootstrap.servers is the mock cluster, log_level librdkafka's default.
 * Caller owns it. */
static rd_kafka_conf_t *app_conf(const char *client_id, ...) {
  va_list ap;
  va_start(ap, client_id);
  rd_kafka_conf_t *c = au_app_conf_v(g_mock_bs, client_id, NULL, ap);
  va_end(ap);
  return c;
}

/* An agent for app with the recorder's callbacks, refresh REFRESH_MS and
 * NULL-terminated extra dynconf.* pairs. app stays the caller's. */
static dynconf_t *agent_new(rd_kafka_type_t type, rd_kafka_conf_t *app,
                            rec_t *rec, ...) {
  static const char *const base[] = {"dynconf.refresh.interval.ms",
                                     REFRESH_MS, NULL};
  va_list ap;
  va_start(ap, rec);
  dynconf_t *dc =
      au_agent_new_v(type, app, g_port, on_change, on_log, rec, base, ap);
  va_end(ap);
  return dc;
}

/* Polls until at least nfetch more fetches succeeded (asking for them when
 * kick is set). Two fetches after an alter guarantee one started after
 * it. Returns true when they did before the deadline. */
static bool settle(dynconf_t *dc, int nfetch, bool kick) {
  long long base = au_fetches(dc);
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (au_fetches(dc) < base + nfetch) {
    if (dc_tu_now_ms() > deadline)
      return false;
    if (kick)
      dynconf_refresh_now(dc);
    dynconf_poll(dc, 50);
  }
  dynconf_poll(dc, 0);
  return true;
}

/* Polls until rec has at least n events. */
static bool wait_events(dynconf_t *dc, rec_t *rec, int n) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (rec->n < n && dc_tu_now_ms() < deadline)
    dynconf_poll(dc, 100);
  return rec->n >= n;
}

static bool eff_is(dynconf_t *dc, const char *key, const char *want,
                   dynconf_source_t want_src) {
  char v[128];
  dynconf_source_t s;
  if (dynconf_effective_get(dc, key, v, sizeof(v), &s) < 0)
    return false;
  if (strcmp(v, want) || s != want_src)
    diag("  effective %s = \"%s\" (%s), want \"%s\" (%s)", key, v,
         dynconf_source_name(s), want, dynconf_source_name(want_src));
  return !strcmp(v, want) && s == want_src;
}

/* Checks one recorded entry. */
static void is_entry(const rec_event_t *e, size_t i, const char *key,
                     const char *oldv, const char *newv, dynconf_source_t src,
                     dynconf_outcome_t outcome, const char *reason_part,
                     const char *what) {
  if (!ok(i < e->n, "%s: entry %zu exists", what, i))
    return;
  const rec_entry_t *x = &e->e[i];
  is_str(x->key, key, "%s: key", what);
  is_str(x->has_old ? x->oldv : NULL, oldv, "%s: old value of %s", what, key);
  is_str(x->has_new ? x->newv : NULL, newv, "%s: new value of %s", what, key);
  is_int(x->source, src, "%s: source of %s is %s", what, key,
         dynconf_source_name(src));
  is_int(x->outcome, outcome, "%s: outcome of %s is %s", what, key,
         dynconf_outcome_name(outcome));
  if (reason_part) {
    if (!ok(x->has_reason && strstr(x->reason, reason_part),
            "%s: reason of %s mentions \"%s\"", what, key, reason_part))
      diag("  reason: %s", x->has_reason ? x->reason : "(null)");
  } else {
    ok(!x->has_reason, "%s: %s has no reason", what, key);
  }
}

/* ---- a tiny JSON checker ----------------------------------------------------- */

static const char *js_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  return p;
}

/* A string at p ('"'); copies it (escapes decoded, \u as '?') into out.
 * Returns the position after it, NULL when malformed. */
static const char *js_str(const char *p, char *out, size_t n) {
  size_t k = 0;
  if (*p++ != '"')
    return NULL;
  for (;;) {
    unsigned char c = (unsigned char)*p++;
    if (c == '"')
      break;
    if (c < 0x20)
      return NULL; /* raw control character or end of input */
    if (c == '\\') {
      c = (unsigned char)*p++;
      switch (c) {
      case '"': case '\\': case '/': break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u':
        for (int i = 0; i < 4; i++)
          if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
            return NULL;
        p += 4;
        c = '?';
        break;
      default:
        return NULL;
      }
    }
    if (out && k + 1 < n)
      out[k++] = (char)c;
  }
  if (out && n)
    out[k] = '\0';
  return p;
}

static const char *js_val(const char *p, int depth);

static const char *js_container(const char *p, int depth, bool object) {
  char close = object ? '}' : ']';
  p = js_ws(p + 1);
  if (*p == close)
    return p + 1;
  for (;;) {
    if (object) {
      if (!(p = js_str(p, NULL, 0)))
        return NULL;
      p = js_ws(p);
      if (*p++ != ':')
        return NULL;
    }
    if (!(p = js_val(p, depth + 1)))
      return NULL;
    p = js_ws(p);
    if (*p == close)
      return p + 1;
    if (*p++ != ',')
      return NULL;
    p = js_ws(p);
  }
}

/* Skips one value starting at p (after optional white space); NULL when
 * malformed. */
static const char *js_val(const char *p, int depth) {
  p = js_ws(p);
  if (depth > 64)
    return NULL;
  if (*p == '{' || *p == '[')
    return js_container(p, depth, *p == '{');
  if (*p == '"')
    return js_str(p, NULL, 0);
  if (!strncmp(p, "true", 4))
    return p + 4;
  if (!strncmp(p, "false", 5))
    return p + 5;
  if (!strncmp(p, "null", 4))
    return p + 4;
  const char *q = p;
  if (*q == '-')
    q++;
  if (*q == '0')
    q++;
  else if (*q >= '1' && *q <= '9')
    while (*q >= '0' && *q <= '9')
      q++;
  else
    return NULL;
  if (*q == '.') {
    if (!(*++q >= '0' && *q <= '9'))
      return NULL;
    while (*q >= '0' && *q <= '9')
      q++;
  }
  if (*q == 'e' || *q == 'E') {
    q++;
    if (*q == '+' || *q == '-')
      q++;
    if (!(*q >= '0' && *q <= '9'))
      return NULL;
    while (*q >= '0' && *q <= '9')
      q++;
  }
  return q;
}

static bool json_valid(const char *s) {
  const char *p = s ? js_val(s, 0) : NULL;
  return p && !*js_ws(p);
}

/* The value at a path of object keys (NULL-terminated), or NULL. */
static const char *json_at(const char *doc, const char *const *path) {
  const char *p = js_ws(doc);
  for (; *path; path++) {
    if (*p != '{')
      return NULL;
    p = js_ws(p + 1);
    bool found = false;
    while (*p == '"' && !found) {
      char key[128];
      if (!(p = js_str(p, key, sizeof(key))))
        return NULL;
      p = js_ws(p);
      if (*p++ != ':')
        return NULL;
      p = js_ws(p);
      if (!strcmp(key, *path)) {
        found = true;
        break;
      }
      if (!(p = js_val(p, 0)))
        return NULL;
      p = js_ws(p);
      if (*p == ',')
        p = js_ws(p + 1);
    }
    if (!found)
      return NULL;
  }
  return p;
}

/* The string at path, "(absent)" / "(not a string)" otherwise. */
static const char *json_s(const char *doc, char *out, size_t n,
                          const char *const *path) {
  const char *p = doc ? json_at(doc, path) : NULL;
  if (!p)
    snprintf(out, n, "(absent)");
  else if (*p != '"' || !js_str(p, out, n))
    snprintf(out, n, "(not a string)");
  return out;
}

static long long json_n(const char *doc, const char *const *path) {
  const char *p = doc ? json_at(doc, path) : NULL;
  return p && (*p == '-' || (*p >= '0' && *p <= '9')) ? strtoll(p, NULL, 10)
                                                      : -999;
}

#define JS(doc, buf, ...)                                                      \
  json_s(doc, buf, sizeof(buf), (const char *const[]){__VA_ARGS__, NULL})
#define JN(doc, ...) json_n(doc, (const char *const[]){__VA_ARGS__, NULL})

static void test_json_checker(void) {
  ok(json_valid("{\"a\":[1,-2.5e3,true,false,null,\"x\\n\\u00e9\"],\"b\":{}}"),
     "json checker: accepts a valid document");
  ok(!json_valid("{\"a\":1,}"), "json checker: rejects a trailing comma");
  ok(!json_valid("{\"a\":\"x\"} x"), "json checker: rejects trailing junk");
  ok(!json_valid("{\"a\":01}"), "json checker: rejects a leading zero");
  ok(!json_valid("{\"a\":\"\x01\"}"), "json checker: rejects raw control chars");
  char b[32];
  is_str(JS("{\"x\":{\"y.z\":\"v\"}}", b, "x", "y.z"), "v",
         "json checker: path lookup");
}

/* ---- scenarios ----------------------------------------------------------------- */

/* Default entity vs client override, fall-backs, exact event counts. */
static void test_default_vs_override(void) {
  const char *cid = "e2e-p1";
  rec_t rec;
  rec_register(&rec, cid);
  is_int(alter("<default>", "acks=0"), 0, "default entity: acks=0");
  rd_kafka_conf_t *app = app_conf(cid, "acks", "all", NULL);
  char app_acks[32];
  au_conf_val(app, "acks", app_acks, sizeof(app_acks));
  diag("the application's own acks reads \"%s\"", app_acks);
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, app, &rec, NULL);
  rd_kafka_conf_destroy(app);
  if (!ok(dc, "producer agent created")) {
    rec_unregister(&rec);
    return;
  }
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "state up after dynconf_new");
  ok(eff_is(dc, "acks", "0", DYNCONF_SOURCE_DEFAULT),
     "first fetch is synchronous: acks=0 from the default entity");
  is_int(dynconf_generation(dc), 1, "generation 1");
  ok(wait_events(dc, &rec, 1), "one event after the first fetch");
  rec_event_t *e = &rec.ev[0];
  is_int(e->type, DYNCONF_EVENT_CHANGE, "event 1 is CHANGE");
  is_int(e->accepted, 1, "event 1 accepted");
  is_int(e->generation, 1, "event 1 generation 1");
  is_int(e->n, 1, "event 1 has one entry");
  is_entry(e, 0, "acks", NULL, "0", DYNCONF_SOURCE_DEFAULT,
           DYNCONF_OUTCOME_APPLIED, NULL, "event 1");

  is_int(alter(cid, "acks=1"), 0, "client override acks=1");
  ok(settle(dc, 2, true), "fetched after the override");
  is_int(rec.n, 2, "exactly one more event");
  e = &rec.ev[1];
  is_int(e->generation, 2, "event 2 generation 2");
  is_int(e->n, 1, "event 2 has one entry");
  is_entry(e, 0, "acks", "0", "1", DYNCONF_SOURCE_CLIENT,
           DYNCONF_OUTCOME_APPLIED, NULL, "event 2 (override wins)");
  ok(eff_is(dc, "acks", "1", DYNCONF_SOURCE_CLIENT), "effective acks=1 (client)");

  /* Alters the agent cannot see: same value again, another client, and the
   * default's value while the override shadows it. */
  is_int(alter(cid, "acks=1"), 0, "same value again");
  is_int(alter("e2e-p1-other", "acks=0"), 0, "another client's override");
  is_int(alter("<default>", "acks=all"), 0, "shadowed default changes");
  ok(settle(dc, 2, true), "fetched after the invisible alters");
  is_int(rec.n, 2, "no event for changes the agent does not see");
  is_int(dynconf_generation(dc), 2, "generation unchanged");

  is_int(alter(cid, "-acks"), 0, "delete the override");
  ok(settle(dc, 2, true), "fetched after the delete");
  is_int(rec.n, 3, "exactly one event for the delete");
  e = &rec.ev[2];
  is_int(e->generation, 3, "event 3 generation 3");
  is_entry(e, 0, "acks", "1", "all", DYNCONF_SOURCE_DEFAULT,
           DYNCONF_OUTCOME_APPLIED, NULL, "event 3 (falls back to default)");
  ok(eff_is(dc, "acks", "all", DYNCONF_SOURCE_DEFAULT),
     "effective acks=all (default)");

  is_int(alter("<default>", "-acks"), 0, "delete the default");
  ok(settle(dc, 2, true), "fetched after deleting the default");
  is_int(rec.n, 4, "exactly one event for it");
  e = &rec.ev[3];
  is_int(e->generation, 4, "event 4 generation 4");
  is_entry(e, 0, "acks", "all", NULL, DYNCONF_SOURCE_APP,
           DYNCONF_OUTCOME_APPLIED, NULL, "event 4 (falls back to the app)");
  ok(eff_is(dc, "acks", app_acks, DYNCONF_SOURCE_APP),
     "effective acks is the application's own again");
  rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
  char v[64];
  au_conf_val(eff, "acks", v, sizeof(v));
  is_str(v, app_acks, "effective conf carries the app's acks again");
  rd_kafka_conf_destroy(eff);

  ok(settle(dc, 5, false), "five more periodic fetches while idle");
  is_int(rec.n, 4, "no events while idle");
  is_int(dynconf_generation(dc), 4, "generation 4");
  for (int i = 0; i < rec.n; i++)
    is_int(rec.ev[i].type, DYNCONF_EVENT_CHANGE, "event %d is a CHANGE", i + 1);

  char *st = dynconf_stats_json(dc);
  char b[128];
  ok(json_valid(st), "stats JSON parses");
  is_str(JS(st, b, "state"), "up", "stats: state up");
  is_str(JS(st, b, "name"), cid, "stats: name is the client id");
  is_str(JS(st, b, "type"), "producer", "stats: type producer");
  is_int(JN(st, "generation"), 4, "stats: generation");
  ok(JN(st, "fetches", "ok") >= 10, "stats: fetches.ok counts (%lld)",
     JN(st, "fetches", "ok"));
  is_int(JN(st, "fetches", "errors"), 0, "stats: no fetch errors");
  long long timed = 0;
  const char *cs = strstr(st, "\"counts\":[");
  for (const char *q = cs ? cs + 10 : NULL; q && *q && *q != ']';) {
    char *end;
    timed += strtoll(q, &end, 10);
    q = *end == ',' ? end + 1 : end;
  }
  is_int(timed, JN(st, "fetches", "total"),
         "stats: fetch_latency_us counts every fetch once");
  ok(JN(st, "last_ok_age_ms") >= 0 && JN(st, "last_ok_age_ms") < 60000,
     "stats: last_ok_age_ms: the last good fetch was moments ago (%lld)",
     JN(st, "last_ok_age_ms"));
  is_int(JN(st, "events", "delivered"), 4, "stats: 4 events delivered");
  is_str(JS(st, b, "effective", "acks", "source"), "application",
         "stats: acks source");
  is_str(JS(st, b, "effective", "acks", "value"), app_acks, "stats: acks value");
  ok(json_at(st, (const char *const[]){"last_error", NULL}) &&
         !strncmp(json_at(st, (const char *const[]){"last_error", NULL}),
                  "null", 4),
     "stats: last_error null");
  free(st);
  dynconf_destroy(dc);
  rec_unregister(&rec);
}

static int g_dr_count, g_dr_err = -12345;
static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  g_dr_count++;
  g_dr_err = m->err;
}

/* dynconf_effective_conf() carries accepted values and makes a working
 * producer against the mock cluster. */
static void test_effective_conf_producer(void) {
  const char *cid = "e2e-mock";
  rec_t rec;
  rec_register(&rec, cid);
  is_int(alter(cid, "acks=1"), 0, "override acks=1 for %s", cid);
  rd_kafka_conf_t *app = app_conf(cid, "acks", "0", NULL);
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, app, &rec, NULL);
  if (!ok(dc, "agent created")) {
    rd_kafka_conf_destroy(app);
    rec_unregister(&rec);
    return;
  }
  rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
  char v[64];
  size_t sz = sizeof(v);
  ok(eff, "effective conf");
  is_int(rd_kafka_conf_get(eff, "acks", v, &sz), RD_KAFKA_CONF_OK,
         "rd_kafka_conf_get(acks) on the effective conf");
  is_str(v, "1", "effective conf: acks=1 (global view)");
  const rd_kafka_topic_conf_t *tc = rd_kafka_conf_get_default_topic_conf(eff);
  sz = sizeof(v);
  ok(tc && rd_kafka_topic_conf_get(tc, "acks", v, &sz) == RD_KAFKA_CONF_OK,
     "default topic conf has acks");
  is_str(v, "1", "effective conf: acks=1 (default topic conf)");
  au_conf_val(app, "acks", v, sizeof(v));
  is_str(v, "0", "the application's conf is untouched");
  au_conf_val(eff, "client.id", v, sizeof(v));
  is_str(v, cid, "effective conf keeps the application's client.id");
  rd_kafka_conf_destroy(app);

  rd_kafka_conf_set_dr_msg_cb(eff, on_dr);
  char e[512];
  rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, eff, e, sizeof(e));
  if (!ok(p, "producer from the effective conf")) {
    diag("rd_kafka_new: %s", e);
    rd_kafka_conf_destroy(eff);
  } else {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        p, RD_KAFKA_V_TOPIC("e2e-topic"), RD_KAFKA_V_VALUE("hello", 5),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    is_int(err, 0, "produce");
    int64_t deadline = dc_tu_now_ms() + WAIT_MS;
    while (g_dr_count < 1 && dc_tu_now_ms() < deadline)
      rd_kafka_poll(p, 100);
    is_int(g_dr_count, 1, "one delivery report");
    is_int(g_dr_err, 0, "delivered without error");
    rd_kafka_flush(p, 5000);
    rd_kafka_destroy(p);
  }
  dynconf_poll(dc, 0);
  is_int(rec.n, 1, "one change event");
  dynconf_destroy(dc);
  rec_unregister(&rec);
}

/* Pinned acks under enable.idempotence=true and under transactional.id. */
static void test_pinned_acks(void) {
  char e[512], v[64];
  /* Idempotence: acks pinned, the rest of the set applies. */
  const char *cid = "e2e-idem";
  rec_t rec;
  rec_register(&rec, cid);
  is_int(alter(cid, "acks=1,linger.ms=7"), 0, "acks=1, linger.ms=7 for %s", cid);
  rd_kafka_conf_t *app = app_conf(cid, "enable.idempotence", "true", NULL);
  char app_acks[32];
  au_conf_val(app, "acks", app_acks, sizeof(app_acks));
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, app, &rec, "dynconf.allow.keys",
                            "acks,linger.ms", NULL);
  rd_kafka_conf_destroy(app);
  if (ok(dc, "idempotent producer agent")) {
    ok(wait_events(dc, &rec, 1), "one event");
    rec_event_t *ev = &rec.ev[0];
    is_int(ev->accepted, 1, "idempotence: set accepted");
    is_int(ev->n, 2, "idempotence: two entries");
    is_entry(ev, 0, "acks", NULL, NULL, DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_PINNED, "enable.idempotence", "idempotence");
    is_entry(ev, 1, "linger.ms", NULL, "7", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_APPLIED, NULL, "idempotence");
    is_int(ev->generation, 1, "idempotence: generation 1 (linger.ms)");
    ok(eff_is(dc, "acks", app_acks, DYNCONF_SOURCE_APP),
       "idempotence: acks stays the application's");
    rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
    au_conf_val(eff, "acks", v, sizeof(v));
    is_str(v, app_acks, "idempotence: effective conf acks not 1");
    au_conf_val(eff, "linger.ms", v, sizeof(v));
    is_str(v, "7", "idempotence: effective conf linger.ms=7");
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, eff, e, sizeof(e));
    if (!ok(p, "idempotence: rd_kafka_new accepts the effective conf")) {
      diag("rd_kafka_new: %s", e);
      rd_kafka_conf_destroy(eff);
    } else {
      rd_kafka_destroy(p);
    }
    settle(dc, 2, true);
    is_int(rec.n, 1, "idempotence: no further events");
    dynconf_destroy(dc);
  }
  rec_unregister(&rec);

  /* transactional.id: acks=0 pinned, then acks=all applies. */
  cid = "e2e-txn";
  rec_register(&rec, cid);
  is_int(alter(cid, "acks=0"), 0, "acks=0 for %s", cid);
  app = app_conf(cid, "transactional.id", "e2e-tx-1", NULL);
  au_conf_val(app, "acks", app_acks, sizeof(app_acks));
  dc = agent_new(RD_KAFKA_PRODUCER, app, &rec, NULL);
  rd_kafka_conf_destroy(app);
  if (ok(dc, "transactional producer agent")) {
    ok(wait_events(dc, &rec, 1), "one event");
    rec_event_t *ev = &rec.ev[0];
    is_int(ev->accepted, 1, "transactional: accepted (nothing refused)");
    is_int(ev->n, 1, "transactional: one entry");
    is_entry(ev, 0, "acks", NULL, NULL, DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_PINNED, "transactional.id", "transactional");
    is_int(ev->generation, 0, "transactional: generation stays 0");
    is_int(dynconf_generation(dc), 0, "transactional: agent generation 0");
    rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
    au_conf_val(eff, "acks", v, sizeof(v));
    is_str(v, app_acks, "transactional: effective acks is the app's");
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, eff, e, sizeof(e));
    if (!ok(p, "transactional: rd_kafka_new accepts the effective conf")) {
      diag("rd_kafka_new: %s", e);
      rd_kafka_conf_destroy(eff);
    } else {
      rd_kafka_destroy(p);
    }
    is_int(alter(cid, "acks=all"), 0, "acks=all for %s", cid);
    ok(settle(dc, 2, true), "fetched");
    is_int(rec.n, 2, "transactional: one more event");
    ev = &rec.ev[1];
    is_entry(ev, 0, "acks", NULL, "all", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_APPLIED, NULL, "transactional acks=all");
    is_int(ev->generation, 1, "transactional: generation 1");
    eff = dynconf_effective_conf(dc);
    p = rd_kafka_new(RD_KAFKA_PRODUCER, eff, e, sizeof(e));
    if (!ok(p, "transactional: rd_kafka_new with acks=all")) {
      diag("rd_kafka_new: %s", e);
      rd_kafka_conf_destroy(eff);
    } else {
      rd_kafka_destroy(p);
    }
    dynconf_destroy(dc);
  }
  rec_unregister(&rec);
}

/* Agent-side rejections: heartbeat vs session, session vs max.poll. */
static void test_rejections(void) {
  char v[64], b[300];
  /* (a) app heartbeat 10000; dynamic session 8000 (dynconfd accepts it:
   * it knows no heartbeat for this client). acks is ignored on a consumer. */
  const char *cid = "e2e-hb";
  rec_t rec;
  rec_register(&rec, cid);
  is_int(alter(cid, "session.timeout.ms=8000,acks=1"), 0,
         "session.timeout.ms=8000, acks=1 for %s", cid);
  rd_kafka_conf_t *app = app_conf(cid, "group.id", "g-e2e",
                                  "heartbeat.interval.ms", "10000", NULL);
  char app_session[32];
  au_conf_val(app, "session.timeout.ms", app_session, sizeof(app_session));
  dynconf_t *dc = agent_new(RD_KAFKA_CONSUMER, app, &rec, NULL);
  rd_kafka_conf_destroy(app);
  if (ok(dc, "consumer agent %s", cid)) {
    ok(wait_events(dc, &rec, 1), "one event");
    rec_event_t *ev = &rec.ev[0];
    is_int(ev->type, DYNCONF_EVENT_CHANGE, "heartbeat rule: CHANGE event");
    is_int(ev->accepted, 0, "heartbeat rule: change set rejected");
    is_int(ev->generation, 0, "heartbeat rule: generation stays 0");
    is_int(ev->n, 2, "heartbeat rule: two entries");
    is_entry(ev, 0, "acks", NULL, "1", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_IGNORED, "consumer", "heartbeat rule");
    is_entry(ev, 1, "session.timeout.ms", NULL, "8000", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_REJECTED, "heartbeat.interval.ms (10000)",
             "heartbeat rule");
    ok(eff_is(dc, "session.timeout.ms", app_session, DYNCONF_SOURCE_APP),
       "heartbeat rule: session.timeout.ms stays the app's");
    is_int(dynconf_generation(dc), 0, "heartbeat rule: generation 0");
    rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
    au_conf_val(eff, "session.timeout.ms", v, sizeof(v));
    is_str(v, app_session, "heartbeat rule: effective conf keeps the app's");
    rd_kafka_conf_destroy(eff);
    ok(rec.n_warn >= 1, "heartbeat rule: the rejection was logged as a warning");

    char *st = dynconf_stats_json(dc);
    ok(json_valid(st), "stats JSON parses (rejected set)");
    is_str(JS(st, b, "type"), "consumer", "stats: consumer");
    is_str(JS(st, b, "state"), "up", "stats: state up");
    is_str(JS(st, b, "effective", "session.timeout.ms", "source"),
           "application", "stats: session.timeout.ms from the application");
    is_str(JS(st, b, "effective", "session.timeout.ms", "value"), app_session,
           "stats: session.timeout.ms value");
    is_str(JS(st, b, "rejected", "session.timeout.ms", "value"), "8000",
           "stats: rejected session.timeout.ms value");
    ok(strstr(JS(st, b, "rejected", "session.timeout.ms", "reason"),
              "heartbeat"),
       "stats: rejected session.timeout.ms has its reason (%s)", b);
    ok(JN(st, "fetches", "total") >= 1, "stats: fetches.total");
    free(st);

    settle(dc, 2, true);
    is_int(rec.n, 1, "heartbeat rule: no repeat event for the same set");

    /* A dynamic heartbeat that makes the set valid. */
    is_int(alter(cid, "heartbeat.interval.ms=2000"), 0,
           "heartbeat.interval.ms=2000 for %s", cid);
    ok(settle(dc, 2, true), "fetched");
    is_int(rec.n, 2, "one event for the heartbeat");
    ev = &rec.ev[1];
    is_int(ev->accepted, 1, "valid set accepted");
    is_int(ev->generation, 1, "generation 1");
    ok(eff_is(dc, "session.timeout.ms", "8000", DYNCONF_SOURCE_CLIENT),
       "session.timeout.ms=8000 now effective");
    ok(eff_is(dc, "heartbeat.interval.ms", "2000", DYNCONF_SOURCE_CLIENT),
       "heartbeat.interval.ms=2000 effective");
    eff = dynconf_effective_conf(dc);
    au_conf_val(eff, "session.timeout.ms", v, sizeof(v));
    is_str(v, "8000", "effective conf session.timeout.ms=8000");
    au_conf_val(eff, "heartbeat.interval.ms", v, sizeof(v));
    is_str(v, "2000", "effective conf heartbeat.interval.ms=2000");
    rd_kafka_conf_destroy(eff);
    /* The event must tell the application every key whose effective value
     * changed (dynconf.h: "one per key that changed"); session.timeout.ms
     * changed from the app's 45000 to 8000 with this set. */
    bool listed = false;
    for (size_t i = 0; i < ev->n; i++)
      if (!strcmp(ev->e[i].key, "session.timeout.ms") &&
          ev->e[i].outcome == DYNCONF_OUTCOME_APPLIED)
        listed = true;
    if (!ok(listed, "event lists session.timeout.ms, whose effective value "
                    "changed with this set"))
      diag("  regression (resolve.c dc_resolve): a key rejected earlier and "
           "applied now is missing from the event (%zu entries: %s)",
           ev->n, ev->n ? ev->e[0].key : "");
    st = dynconf_stats_json(dc);
    ok(json_valid(st), "stats JSON parses (applied set)");
    is_str(JS(st, b, "effective", "session.timeout.ms", "source"),
           "client-override", "stats: session.timeout.ms from the override");
    is_str(JS(st, b, "effective", "session.timeout.ms", "value"), "8000",
           "stats: session.timeout.ms value 8000");
    ok(json_at(st, (const char *const[]){"rejected", NULL}) &&
           !strncmp(json_at(st, (const char *const[]){"rejected", NULL}), "{}",
                    2),
       "stats: no rejected keys after an accepted set");
    free(st);
    dynconf_destroy(dc);
  }
  rec_unregister(&rec);

  /* (b) app max.poll.interval.ms 20000 (session 10000); dynamic session
   * 30000 with heartbeat 3000 in one set: both refused. */
  cid = "e2e-mp";
  rec_register(&rec, cid);
  is_int(alter(cid, "session.timeout.ms=30000,heartbeat.interval.ms=3000"), 0,
         "session 30000, heartbeat 3000 for %s", cid);
  app = app_conf(cid, "group.id", "g-e2e", "max.poll.interval.ms", "20000",
                 "session.timeout.ms", "10000", NULL);
  dc = agent_new(RD_KAFKA_CONSUMER, app, &rec, NULL);
  rd_kafka_conf_destroy(app);
  if (ok(dc, "consumer agent %s", cid)) {
    ok(wait_events(dc, &rec, 1), "one event");
    rec_event_t *ev = &rec.ev[0];
    is_int(ev->accepted, 0, "max.poll rule: rejected");
    is_int(ev->n, 2, "max.poll rule: two entries");
    is_entry(ev, 0, "heartbeat.interval.ms", NULL, "3000",
             DYNCONF_SOURCE_CLIENT, DYNCONF_OUTCOME_REJECTED,
             "change set rejected: ", "max.poll rule");
    is_entry(ev, 1, "session.timeout.ms", NULL, "30000", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_REJECTED, "max.poll.interval.ms (20000)",
             "max.poll rule");
    ok(strncmp(ev->e[1].reason, "change set rejected", 19) != 0,
       "max.poll rule: the culprit has the specific reason");
    ok(eff_is(dc, "session.timeout.ms", "10000", DYNCONF_SOURCE_APP),
       "max.poll rule: session stays 10000 (app)");
    ok(eff_is(dc, "heartbeat.interval.ms", "3000", DYNCONF_SOURCE_APP),
       "max.poll rule: heartbeat stays the app's");
    rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
    char e[512];
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, eff, e, sizeof(e));
    if (!ok(c, "max.poll rule: the effective conf still makes a consumer")) {
      diag("rd_kafka_new: %s", e);
      rd_kafka_conf_destroy(eff);
    } else {
      rd_kafka_destroy(c);
    }
    char *st = dynconf_stats_json(dc);
    ok(json_valid(st), "stats JSON parses");
    ok(strstr(JS(st, b, "rejected", "session.timeout.ms", "reason"),
              "max.poll.interval.ms"),
       "stats: rejected session.timeout.ms reason (%s)", b);
    ok(strstr(JS(st, b, "rejected", "heartbeat.interval.ms", "reason"),
              "change set rejected"),
       "stats: rejected heartbeat.interval.ms reason (%s)", b);
    free(st);
    dynconf_destroy(dc);
  }
  rec_unregister(&rec);
}

/* Both values dynamic and from different entities: dynconfd checks the
 * heartbeat rule only for the entity being altered, so a <default>
 * heartbeat above a client's own session reaches the agent, which refuses
 * the set and blames the heartbeat. */
static void test_rejection_across_entities(void) {
  const char *cid = "e2e-hb2";
  rec_t rec;
  rec_register(&rec, cid);
  is_int(alter(cid, "session.timeout.ms=8000"), 0,
         "session.timeout.ms=8000 for %s", cid);
  /* dynconfd refuses a <default> change that would give this client,
   * which overrides one half of the pair, heartbeat >= session. */
  is_int(alter("<default>", "heartbeat.interval.ms=9000"),
         DYNCONF_ERR_INVALID_CONFIG,
         "dynconfd refuses <default> heartbeat.interval.ms=9000 (would break "
         "%s)", cid);
  rd_kafka_conf_t *app = app_conf(cid, "group.id", "g-e2e", NULL);
  dynconf_t *dc = agent_new(RD_KAFKA_CONSUMER, app, &rec, NULL);
  rd_kafka_conf_destroy(app);
  if (ok(dc, "consumer agent %s", cid)) {
    ok(wait_events(dc, &rec, 1), "one event");
    rec_event_t *ev = &rec.ev[0];
    is_int(ev->accepted, 1, "cross-entity: the valid set is accepted");
    is_int(ev->n, 1, "cross-entity: one entry");
    is_entry(ev, 0, "session.timeout.ms", NULL, "8000", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_APPLIED, NULL, "cross-entity");
    ok(eff_is(dc, "heartbeat.interval.ms", "3000", DYNCONF_SOURCE_APP),
       "cross-entity: heartbeat stays the app's 3000");
    dynconf_destroy(dc);
  }
  rec_unregister(&rec);
}

/* Keys outside dynconf.allow.keys are ignored; widening the list applies
 * them. */
static void test_allow_keys(void) {
  char v[64];
  const char *cid = "e2e-ign";
  rec_t rec;
  rec_register(&rec, cid);
  is_int(alter(cid, "acks=1,linger.ms=9,session.timeout.ms=20000"), 0,
         "acks=1, linger.ms=9, session.timeout.ms=20000 for %s", cid);
  rd_kafka_conf_t *app = app_conf(cid, "linger.ms", "3", NULL);
  dynconf_t *dc = agent_new(RD_KAFKA_PRODUCER, app, &rec, NULL);
  if (ok(dc, "producer agent with the default allow list")) {
    ok(wait_events(dc, &rec, 1), "one event");
    rec_event_t *ev = &rec.ev[0];
    is_int(ev->accepted, 1, "accepted");
    is_int(ev->n, 3, "three entries, sorted by key");
    is_entry(ev, 0, "acks", NULL, "1", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_APPLIED, NULL, "default allow list");
    is_entry(ev, 1, "linger.ms", NULL, "9", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_IGNORED, "dynconf.allow.keys",
             "default allow list");
    is_entry(ev, 2, "session.timeout.ms", NULL, "20000", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_IGNORED, "producer", "default allow list");
    rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
    au_conf_val(eff, "linger.ms", v, sizeof(v));
    is_str(v, "3", "linger.ms stays the app's 3");
    au_conf_val(eff, "acks", v, sizeof(v));
    is_str(v, "1", "acks=1 applied");
    rd_kafka_conf_destroy(eff);
    is_int(dynconf_effective_get(dc, "linger.ms", v, sizeof(v), NULL), -1,
           "dynconf_effective_get refuses a key outside the allow list");
    is_int(dynconf_effective_get(dc, "acks", v, sizeof(v), NULL), 2,
           "dynconf_effective_get returns the size acks=1 needs (2)");
    is_int(dynconf_effective_get(dc, "acks", NULL, 0, NULL), 2,
           "  also asked with no buffer");
    char tiny[1] = {'x'};
    is_int(dynconf_effective_get(dc, "acks", tiny, sizeof(tiny), NULL), 2,
           "  and with one too small: 2 > 1 says it was cut");
    is_int(tiny[0], '\0', "  the cut copy is NUL-terminated");
    ok(dynconf_opaque(dc) == (void *)&rec,
       "dynconf_opaque: the opaque set on the dynconf_conf_t");
    dynconf_destroy(dc);
  }
  rec_unregister(&rec);

  rec_register(&rec, cid);
  dc = agent_new(RD_KAFKA_PRODUCER, app, &rec, "dynconf.allow.keys",
                 "acks,linger.ms", NULL);
  rd_kafka_conf_destroy(app);
  if (ok(dc, "producer agent with linger.ms allowed")) {
    ok(wait_events(dc, &rec, 1), "one event");
    rec_event_t *ev = &rec.ev[0];
    is_entry(ev, 1, "linger.ms", NULL, "9", DYNCONF_SOURCE_CLIENT,
             DYNCONF_OUTCOME_APPLIED, NULL, "widened allow list");
    ok(eff_is(dc, "linger.ms", "9", DYNCONF_SOURCE_CLIENT),
       "effective linger.ms=9 (client)");
    rd_kafka_conf_t *eff = dynconf_effective_conf(dc);
    au_conf_val(eff, "linger.ms", v, sizeof(v));
    is_str(v, "9", "effective conf linger.ms=9");
    rd_kafka_conf_destroy(eff);
    char *st = dynconf_stats_json(dc);
    char b[64];
    ok(json_valid(st), "stats JSON parses");
    is_str(JS(st, b, "effective", "linger.ms", "value"), "9",
           "stats: linger.ms value");
    is_str(JS(st, b, "effective", "linger.ms", "source"), "client-override",
           "stats: linger.ms source");
    free(st);
    dynconf_destroy(dc);
  }
  rec_unregister(&rec);
}

/* group.protocol=consumer (KIP-848) read from the application's own conf:
 * librdkafka 2.4 and later know the property, and then the broker owns
 * the session and heartbeat timeouts (reported ignored, no rebuild);
 * older versions refuse the property and the classic rules apply. */
static void test_group_protocol(void) {
  const char *cid = "e2e-kip848";
  char e[256];
  bool known = rd_kafka_version() >= 0x020400ff;
  rec_t rec;
  rec_register(&rec, cid);
  is_int(alter(cid, "session.timeout.ms=20000,heartbeat.interval.ms=4000"), 0,
         "session.timeout.ms=20000, heartbeat.interval.ms=4000 for %s", cid);
  rd_kafka_conf_t *app = app_conf(cid, "group.id", "g-kip848", NULL);
  rd_kafka_conf_res_t r =
      rd_kafka_conf_set(app, "group.protocol", "consumer", e, sizeof(e));
  is_int(r, known ? RD_KAFKA_CONF_OK : RD_KAFKA_CONF_UNKNOWN,
         "librdkafka %s %s group.protocol", rd_kafka_version_str(),
         known ? "knows" : "does not know");
  dynconf_t *dc = agent_new(RD_KAFKA_CONSUMER, app, &rec, NULL);
  rd_kafka_conf_destroy(app);
  if (ok(dc, "consumer agent %s", cid)) {
    ok(wait_events(dc, &rec, 1), "one event");
    rec_event_t *ev = &rec.ev[0];
    dynconf_outcome_t outcome =
        known ? DYNCONF_OUTCOME_IGNORED : DYNCONF_OUTCOME_APPLIED;
    const char *why = known ? "KIP-848" : NULL;
    is_int(ev->n, 2, "two entries");
    is_entry(ev, 0, "heartbeat.interval.ms", NULL, "4000",
             DYNCONF_SOURCE_CLIENT, outcome, why, "group.protocol");
    is_entry(ev, 1, "session.timeout.ms", NULL, "20000",
             DYNCONF_SOURCE_CLIENT, outcome, why, "group.protocol");
    is_int(dynconf_generation(dc), known ? 0 : 1,
           known ? "nothing to rebuild: generation 0"
                 : "classic protocol: both applied, generation 1");
    dynconf_destroy(dc);
  }
  rec_unregister(&rec);
}

int main(void) {
  g_main = pthread_self();
  char dir[256], errstr[512];
  dc_tu_daemon_t d;
  if (!ok(!dc_tu_daemon_start_tmp(&d, dir, sizeof(dir), NULL, errstr,
                                  sizeof(errstr)),
          "dynconfd started")) {
    diag("%s", errstr);
    return done_testing();
  }
  g_port = d.port;

  /* The mock cluster lives on its own handle. */
  rd_kafka_t *mrk = NULL;
  rd_kafka_mock_cluster_t *mcluster =
      au_mock_new(1, &mrk, g_mock_bs, sizeof(g_mock_bs));
  if (!ok(mcluster, "mock cluster")) {
    dc_tu_daemon_stop(&d);
    dc_tu_rmrf(dir);
    return done_testing();
  }
  rd_kafka_mock_topic_create(mcluster, "e2e-topic", 1, 1);

  test_json_checker();
  test_default_vs_override();
  test_effective_conf_producer();
  test_pinned_acks();
  test_rejections();
  test_rejection_across_entities();
  test_allow_keys();
  test_group_protocol();

  ok(g_cb_calls > 10, "callbacks ran (%d)", g_cb_calls);
  is_int(g_cb_wrong_thread, 0,
         "every change/log callback ran on the polling thread");

  rd_kafka_mock_cluster_destroy(mcluster);
  rd_kafka_destroy(mrk);
  ok(dc_tu_daemon_alive(&d), "dynconfd still running");
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd stops cleanly");
  if (tap_failed)
    dc_tu_daemon_log_tail(&d, 30);
  dc_tu_rmrf(dir);
  return done_testing();
}
