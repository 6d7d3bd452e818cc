/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's decision logic, pure (no I/O, no locks): what a newly
 * fetched config set means for the application's client. */
#include "agent/agent_int.h"
#include "codec/proto.h"
#include "common/schema.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dc_fetched_set_free(dc_fetched_set_t *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->v[i].key);
    free(s->v[i].value);
  }
  free(s->v);
  s->v = NULL;
  s->n = 0;
}

/* Binary search: sets are sorted by key (dc_fetched_set_normalize). */
const dc_fetched_t *dc_fetched_find(const dc_fetched_set_t *s, const char *k) {
  size_t lo = 0, hi = s ? s->n : 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(s->v[mid].key, k);
    if (!c)
      return &s->v[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

int dc_fetched_count_check(size_t n, size_t max, char *errstr,
                           size_t errstr_size) {
  if (n <= max)
    return 0;
  dc_seterr(errstr, errstr_size,
           "server answered %zu config entries; the agent accepts at most %zu",
           n, max);
  return -1;
}

static int cmp_fetched(const void *a, const void *b) {
  return strcmp(((const dc_fetched_t *)a)->key, ((const dc_fetched_t *)b)->key);
}

int dc_fetched_set_normalize(dc_fetched_set_t *s, size_t max, char *errstr,
                             size_t errstr_size) {
  if (dc_fetched_count_check(s->n, max, errstr, errstr_size))
    return -1;
  if (s->n > 1)
    qsort(s->v, s->n, sizeof(*s->v), cmp_fetched);
  /* Sorted: a key named twice sits next to itself. */
  for (size_t i = 1; i < s->n; i++) {
    if (!strcmp(s->v[i - 1].key, s->v[i].key)) {
      dc_seterr(errstr, errstr_size, "server answered config '%.100s' twice",
               s->v[i].key);
      return -1;
    }
  }
  return 0;
}

bool dc_source_from_wire(int wire, dynconf_source_t *out) {
  switch (wire) { /* the dynamic sources dynconfd reports */
  case DC_SRC_DYNAMIC_CLIENT: *out = DYNCONF_SOURCE_CLIENT; return true;
  case DC_SRC_DYNAMIC_DEFAULT: *out = DYNCONF_SOURCE_DEFAULT; return true;
  case DC_SRC_DYNAMIC_USER: *out = DYNCONF_SOURCE_USER; return true;
  case DC_SRC_DYNAMIC_USER_CLIENT:
    *out = DYNCONF_SOURCE_USER_CLIENT;
    return true;
  default: return false;
  }
}

void dc_effective_free(dc_effective_t *e) {
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++) {
    free(e->value[i]);
    e->value[i] = NULL;
    e->source[i] = DYNCONF_SOURCE_APP;
  }
}

int dc_effective_copy(dc_effective_t *dst, const dc_effective_t *src) {
  memset(dst, 0, sizeof(*dst));
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++) {
    dst->source[i] = src->source[i];
    if (src->value[i] && !(dst->value[i] = strdup(src->value[i]))) {
      dc_effective_free(dst);
      return -1;
    }
  }
  return 0;
}

void dc_event_free(dynconf_event_t *ev) {
  if (!ev)
    return;
  for (size_t i = 0; i < ev->n; i++) {
    free(ev->entries[i].key);
    free(ev->entries[i].old_value);
    free(ev->entries[i].new_value);
    free(ev->entries[i].reason);
  }
  free(ev->entries);
  free(ev->errstr);
  free(ev);
}

int dc_allow_parse(const char *list, dc_allow_t *out, char *errstr,
                   size_t errstr_size) {
  memset(out, 0, sizeof(*out));
  const char *p = list;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    while (n && p[0] == ' ')
      p++, n--;
    while (n && p[n - 1] == ' ')
      n--;
    if (n) {
      char key[128];
      snprintf(key, sizeof(key), "%.*s", (int)n, p);
      const dc_schema_entry_t *e = dc_schema_find(key);
      if (!e) {
        dc_seterr(errstr, errstr_size,
                 "dynconf.allow.keys: \"%s\" is not a dynamic client config "
                 "dynconf knows",
                 key);
        return -1;
      }
      if (dc_allow_index(out, e->name) < 0) {
        if (out->n == DC_AGENT_MAX_KEYS) {
          dc_seterr(errstr, errstr_size, "dynconf.allow.keys: too many keys");
          return -1;
        }
        out->keys[out->n++] = e->name;
      }
    }
    if (!comma)
      break;
    p = comma + 1;
  }
  return 0;
}

int dc_allow_index(const dc_allow_t *a, const char *key) {
  for (size_t i = 0; i < a->n; i++)
    if (!strcmp(a->keys[i], key))
      return (int)i;
  return -1;
}

static bool same(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int64_t resolved_int(const dc_app_settings_t *app, const dc_allow_t *a,
                            const dc_effective_t *cand, const char *key,
                            int64_t app_default) {
  int i = dc_allow_index(a, key);
  int64_t v;
  if (i >= 0 && cand->value[i] && dc_parse_int64(cand->value[i], &v))
    return v;
  (void)app;
  return app_default;
}

/* Checks the whole candidate. On failure names the key to blame and why. */
static bool validate(const dc_app_settings_t *app, const dc_allow_t *a,
                     const dc_effective_t *cand, const char **bad_key,
                     char *why, size_t why_size) {
  for (size_t i = 0; i < a->n; i++) {
    if (!cand->value[i])
      continue;
    const dc_schema_entry_t *e = dc_schema_find(a->keys[i]);
    if (!dc_schema_validate(e, cand->value[i], why, why_size)) {
      *bad_key = a->keys[i];
      return false;
    }
  }
  /* Under KIP-848 the broker owns the group timeouts: no client-side
   * rule involves them. */
  if (!app->consumer || app->broker_owns_timeouts)
    return true;
  int64_t session = resolved_int(app, a, cand, "session.timeout.ms",
                                 app->session_timeout_ms);
  int64_t hb = resolved_int(app, a, cand, "heartbeat.interval.ms",
                            app->heartbeat_interval_ms);
  int64_t maxpoll = resolved_int(app, a, cand, "max.poll.interval.ms",
                                 app->max_poll_interval_ms);
  int is = dc_allow_index(a, "session.timeout.ms"),
      ih = dc_allow_index(a, "heartbeat.interval.ms"),
      im = dc_allow_index(a, "max.poll.interval.ms");
  bool s_dyn = is >= 0 && cand->value[is], h_dyn = ih >= 0 && cand->value[ih],
       m_dyn = im >= 0 && cand->value[im];
  /* A rule is checked only when a dynamic value takes part in it: the
   * application's own settings are its own business, and the key blamed
   * is always one the server sent. */
  if ((h_dyn || s_dyn) && hb >= session) {
    *bad_key = h_dyn ? "heartbeat.interval.ms" : "session.timeout.ms";
    dc_seterr(why, why_size,
             "heartbeat.interval.ms (%lld) must be lower than "
             "session.timeout.ms (%lld)",
             (long long)hb, (long long)session);
    return false;
  }
  if ((s_dyn || m_dyn) && session > maxpoll) {
    *bad_key = s_dyn ? "session.timeout.ms" : "max.poll.interval.ms";
    dc_seterr(why, why_size,
             "session.timeout.ms (%lld) must not exceed max.poll.interval.ms "
             "(%lld); librdkafka refuses that configuration",
             (long long)session, (long long)maxpoll);
    return false;
  }
  return true;
}

/* The keys whose fetched value or source differ between two sorted sets,
 * each once and in order: one merge pass. Returns how many. */
static size_t changed_keys(const dc_fetched_set_t *a,
                           const dc_fetched_set_t *b, const char **keys) {
  size_t i = 0, j = 0, n = 0;
  while (i < a->n || j < b->n) {
    int c = i == a->n   ? 1
            : j == b->n ? -1
                        : strcmp(a->v[i].key, b->v[j].key);
    if (c < 0) {
      keys[n++] = a->v[i++].key;
    } else if (c > 0) {
      keys[n++] = b->v[j++].key;
    } else {
      if (!same(a->v[i].value, b->v[j].value) ||
          a->v[i].source != b->v[j].source)
        keys[n++] = b->v[j].key;
      i++, j++;
    }
  }
  return n;
}

/* Sorts keys and drops repeats. Returns the new count. */
static size_t sort_unique(const char **keys, size_t n) {
  if (n > 1)
    qsort(keys, n, sizeof(*keys), cmp_str);
  size_t u = 0;
  for (size_t k = 0; k < n; k++)
    if (!u || strcmp(keys[u - 1], keys[k]))
      keys[u++] = keys[k];
  return u;
}

/* Two sorted sets of unique keys are equal iff they are equal entry by
 * entry. */
static bool sets_equal(const dc_fetched_set_t *a, const dc_fetched_set_t *b) {
  if (a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->v[i].key, b->v[i].key) ||
        !same(a->v[i].value, b->v[i].value) || a->v[i].source != b->v[i].source)
      return false;
  return true;
}

static bool group_timeout(const char *key) {
  return !strcmp(key, "session.timeout.ms") ||
         !strcmp(key, "heartbeat.interval.ms");
}

/* Why an allowed key cannot apply to this client, or NULL when it can. */
static const char *inapplicable(const dc_app_settings_t *app, const char *key,
                                char *why, size_t why_size) {
  const dc_schema_entry_t *e = dc_schema_find(key);
  if (!e || !(e->applies & (app->consumer ? DC_APPLIES_CONSUMER
                                          : DC_APPLIES_PRODUCER))) {
    dc_seterr(why, why_size, "%s does not apply to a %s", key,
             app->consumer ? "consumer" : "producer");
    return why;
  }
  /* The operator needs the cluster's names for the setting: the group's
   * dynamic config (Kafka 4.0, bounded by the brokers' min/max) or the
   * brokers' static default. */
  if (app->broker_owns_timeouts && group_timeout(key)) {
    dc_seterr(why, why_size,
             "with group.protocol=consumer (KIP-848) the broker sets %s; "
             "librdkafka refuses it from the client. Set consumer.%s on "
             "the group (kafka-configs --entity-type groups) or "
             "group.consumer.%s in the brokers' server.properties",
             key, key, key);
    return why;
  }
  return NULL;
}

/* Whether an allowed key concerns this client at all. */
static bool applies(const dc_app_settings_t *app, const char *key) {
  char why[200];
  return inapplicable(app, key, why, sizeof(why)) == NULL;
}

static bool acks_pinned(const dc_app_settings_t *app, const char *key,
                        const char *value) {
  return !strcmp(key, "acks") && (app->idempotent || app->transactional) &&
         strcmp(value, "all") && strcmp(value, "-1");
}

/* One resolution: its inputs, the candidate built from them and the
 * verdict on it. */
typedef struct resolution {
  const dc_app_settings_t *app;
  const dc_allow_t *allow;
  const dc_fetched_set_t *prev, *fetched;
  const dc_effective_t *eff; /* what the client runs with now */
  dc_effective_t cand;
  bool ok;
  const char *bad_key; /* set when !ok */
  char why[256];
} resolution_t;

/* The candidate: every allowed key that concerns this client, from the
 * complete fetched set (not just the difference), so a set rejected
 * earlier is judged whole again once the server changes. -1 on OOM (the
 * candidate is freed). */
static int build_candidate(resolution_t *rs) {
  const dc_allow_t *allow = rs->allow;
  for (size_t i = 0; i < allow->n; i++) {
    const dc_fetched_t *f = dc_fetched_find(rs->fetched, allow->keys[i]);
    if (!f || !applies(rs->app, allow->keys[i]) ||
        acks_pinned(rs->app, allow->keys[i], f->value))
      continue;
    if (!(rs->cand.value[i] = strdup(f->value))) {
      dc_effective_free(&rs->cand);
      return -1;
    }
    rs->cand.source[i] = f->source;
  }
  return 0;
}

/* The keys the event reports, sorted and each once, into keys (room for
 * prev->n + fetched->n + allow->n + 1): every key the server changed,
 * every allowed key whose effective value or source moves, and the key a
 * rejection blames. Sets *value_moves when the value the client runs
 * with changes for some key. Returns how many. */
static size_t event_keys(const resolution_t *rs, const char **keys,
                         bool *value_moves) {
  const dc_allow_t *allow = rs->allow;
  const dc_effective_t *cand = &rs->cand, *eff = rs->eff;
  char *const *app_values = rs->app->values;
  size_t nk = changed_keys(rs->prev, rs->fetched, keys);
  *value_moves = false;
  for (size_t i = 0; i < allow->n; i++) {
    bool v = !same(cand->value[i], eff->value[i]);
    /* What the client runs with: a dynamic value equal to the app's own
     * is no reason to rebuild. */
    *value_moves |= !same(cand->value[i] ? cand->value[i] : app_values[i],
                          eff->value[i] ? eff->value[i] : app_values[i]);
    if (v || (cand->value[i] && cand->source[i] != eff->source[i]))
      keys[nk++] = allow->keys[i];
  }
  if (!rs->ok)
    keys[nk++] = rs->bad_key;
  return sort_unique(keys, nk);
}

/* Fills en for one reported key: its outcome, values and reason.
 * Applied keys report the effective value before and after; ignored
 * keys never took effect, so they report the server's values. -1 on OOM
 * (en's strings so far are its own, for dc_event_free). */
static int judge_key(const resolution_t *rs, const char *key,
                     dc_event_entry_t *en) {
  const dc_app_settings_t *app = rs->app;
  const dc_fetched_t *f = dc_fetched_find(rs->fetched, key);
  const dc_fetched_t *p = dc_fetched_find(rs->prev, key);
  int i = dc_allow_index(rs->allow, key);
  char reason[400] = "";
  const char *oldv = p ? p->value : NULL, *newv = f ? f->value : NULL;
  en->source = f ? f->source : DYNCONF_SOURCE_APP;
  if (i < 0) {
    en->outcome = DYNCONF_OUTCOME_IGNORED;
    snprintf(reason, sizeof(reason), "not in dynconf.allow.keys");
  } else if (inapplicable(app, key, reason, sizeof(reason))) {
    en->outcome = DYNCONF_OUTCOME_IGNORED;
  } else if (!rs->ok) {
    en->outcome = DYNCONF_OUTCOME_REJECTED;
    snprintf(reason, sizeof(reason), "%s%s",
             strcmp(key, rs->bad_key) ? "change set rejected: " : "",
             rs->why);
    oldv = rs->eff->value[i];
  } else if (f && acks_pinned(app, key, f->value)) {
    en->outcome = DYNCONF_OUTCOME_PINNED;
    snprintf(reason, sizeof(reason), "acks=%.100s requested; acks stays all: "
             "the application sets %s", f->value,
             app->transactional ? "transactional.id"
                                : "enable.idempotence=true");
    oldv = rs->eff->value[i];
    newv = NULL; /* the application's own (all) */
  } else {
    en->outcome = DYNCONF_OUTCOME_APPLIED;
    oldv = rs->eff->value[i];
    newv = rs->cand.value[i];
    en->source = rs->cand.value[i] ? rs->cand.source[i] : DYNCONF_SOURCE_APP;
  }
  if (!(en->key = strdup(key)) || (oldv && !(en->old_value = strdup(oldv))) ||
      (newv && !(en->new_value = strdup(newv))) ||
      (*reason && !(en->reason = strdup(reason))))
    return -1;
  return 0;
}

/* Fills ev's entries, one per reported key. -1 on OOM. */
static int fill_event(const resolution_t *rs, dynconf_event_t *ev,
                      bool *value_moves) {
  const char **keys = malloc(
      (rs->prev->n + rs->fetched->n + rs->allow->n + 1) * sizeof(*keys));
  if (!keys)
    return -1;
  size_t nk = event_keys(rs, keys, value_moves);
  ev->type = DYNCONF_EVENT_CHANGE;
  ev->entries = calloc(nk ? nk : 1, sizeof(*ev->entries));
  int rc = ev->entries ? 0 : -1;
  for (size_t k = 0; k < nk && !rc; k++)
    rc = judge_key(rs, keys[k], &ev->entries[ev->n++]);
  free(keys);
  return rc;
}

int dc_resolve(const dc_app_settings_t *app, const dc_allow_t *allow,
               const dc_fetched_set_t *prev, const dc_fetched_set_t *fetched,
               dc_effective_t *eff, int64_t generation,
               dynconf_event_t **evp) {
  *evp = NULL;
  /* Nothing differs from the previous fetch: nothing to say. */
  if (sets_equal(prev, fetched))
    return 0;
  resolution_t rs = {.app = app, .allow = allow, .prev = prev,
                     .fetched = fetched, .eff = eff};
  if (build_candidate(&rs))
    return -1;
  rs.ok = validate(app, allow, &rs.cand, &rs.bad_key, rs.why, sizeof(rs.why));
  bool value_moves = false;
  dynconf_event_t *ev = calloc(1, sizeof(*ev));
  if (!ev || fill_event(&rs, ev, &value_moves)) {
    dc_effective_free(&rs.cand);
    dc_event_free(ev);
    return -1;
  }
  ev->accepted = rs.ok;
  ev->generation = generation;
  if (rs.ok) {
    /* Sources may move without values; only a value moves the
     * generation (what a managed client rebuilds for). */
    dc_effective_free(eff);
    *eff = rs.cand;
    memset(&rs.cand, 0, sizeof(rs.cand));
    if (value_moves)
      ev->generation = generation + 1;
  }
  dc_effective_free(&rs.cand);
  *evp = ev;
  return 0;
}
