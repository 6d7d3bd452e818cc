/* The agent's decision logic, pure (no I/O, no locks): what a newly
 * fetched config set means for the application's client. */
#include "agent/agent_int.h"
#include "common/schema.h"

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

const dc_fetched_t *dc_fetched_find(const dc_fetched_set_t *s, const char *k) {
  for (size_t i = 0; s && i < s->n; i++)
    if (!strcmp(s->v[i].key, k))
      return &s->v[i];
  return NULL;
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
        snprintf(errstr, errstr_size,
                 "dynconf.allow.keys: \"%s\" is not a dynamic client config "
                 "dynconf knows",
                 key);
        return -1;
      }
      if (dc_allow_index(out, e->name) < 0) {
        if (out->n == DC_AGENT_MAX_KEYS) {
          snprintf(errstr, errstr_size, "dynconf.allow.keys: too many keys");
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
  if (!app->consumer)
    return true;
  int64_t session = resolved_int(app, a, cand, "session.timeout.ms",
                                 app->session_timeout_ms);
  int64_t hb = resolved_int(app, a, cand, "heartbeat.interval.ms",
                            app->heartbeat_interval_ms);
  int64_t maxpoll = resolved_int(app, a, cand, "max.poll.interval.ms",
                                 app->max_poll_interval_ms);
  int is = dc_allow_index(a, "session.timeout.ms"),
      ih = dc_allow_index(a, "heartbeat.interval.ms");
  bool hb_dyn = ih >= 0 && cand->value[ih];
  if (hb >= session) {
    *bad_key = hb_dyn ? "heartbeat.interval.ms" : "session.timeout.ms";
    snprintf(why, why_size,
             "heartbeat.interval.ms (%lld) must be lower than "
             "session.timeout.ms (%lld)",
             (long long)hb, (long long)session);
    return false;
  }
  if (session > maxpoll) {
    *bad_key = is >= 0 && cand->value[is] ? "session.timeout.ms"
                                          : "max.poll.interval.ms";
    snprintf(why, why_size,
             "session.timeout.ms (%lld) must not exceed max.poll.interval.ms "
             "(%lld); librdkafka refuses that configuration",
             (long long)session, (long long)maxpoll);
    return false;
  }
  return true;
}


int dc_resolve(const dc_app_settings_t *app, const dc_allow_t *allow,
               const dc_fetched_set_t *prev, const dc_fetched_set_t *fetched,
               dc_effective_t *eff, int64_t generation,
               dynconf_event_t **evp) {
  *evp = NULL;
  /* Keys whose fetched value or source changed. */
  size_t nk = 0, cap = prev->n + fetched->n;
  const char **keys = malloc((cap ? cap : 1) * sizeof(*keys));
  if (!keys)
    return -1;
  for (int pass = 0; pass < 2; pass++) {
    const dc_fetched_set_t *s = pass ? fetched : prev;
    const dc_fetched_set_t *o = pass ? prev : fetched;
    for (size_t i = 0; i < s->n; i++) {
      const dc_fetched_t *a = &s->v[i], *b = dc_fetched_find(o, a->key);
      if (b && same(a->value, b->value) && a->source == b->source)
        continue;
      bool seen = false;
      for (size_t k = 0; k < nk; k++)
        seen |= !strcmp(keys[k], a->key);
      if (!seen)
        keys[nk++] = a->key;
    }
  }
  if (nk == 0) {
    free(keys);
    return 0;
  }
  qsort(keys, nk, sizeof(*keys), cmp_str);

  /* The candidate: every allowed key from the complete fetched set. */
  dc_effective_t cand = {0};
  dynconf_event_t *ev = calloc(1, sizeof(*ev));
  char *pin_reason[DC_AGENT_MAX_KEYS] = {0};
  char *na_reason[DC_AGENT_MAX_KEYS] = {0};
  if (!ev)
    goto oom;
  ev->type = DYNCONF_EVENT_CHANGE;
  for (size_t i = 0; i < allow->n; i++) {
    const dc_fetched_t *f = dc_fetched_find(fetched, allow->keys[i]);
    const dc_schema_entry_t *e = dc_schema_find(allow->keys[i]);
    int kind = app->consumer ? DC_APPLIES_CONSUMER : DC_APPLIES_PRODUCER;
    if (!f)
      continue;
    if (!(e->applies & kind)) {
      /* A consumer-only key on a producer (or the reverse). */
      char buf[160];
      snprintf(buf, sizeof(buf), "%s does not apply to a %s",
               allow->keys[i], app->consumer ? "consumer" : "producer");
      if (!(na_reason[i] = strdup(buf)))
        goto oom;
      continue;
    }
    if (!strcmp(allow->keys[i], "acks") &&
        (app->idempotent || app->transactional) && strcmp(f->value, "all") &&
        strcmp(f->value, "-1")) {
      char buf[160];
      snprintf(buf, sizeof(buf), "acks stays all: the application sets %s",
               app->transactional ? "transactional.id" : "enable.idempotence=true");
      if (!(pin_reason[i] = strdup(buf)))
        goto oom;
      continue;
    }
    if (!(cand.value[i] = strdup(f->value)))
      goto oom;
    cand.source[i] = f->source;
  }
  char why[256] = "";
  const char *bad_key = NULL;
  bool ok = validate(app, allow, &cand, &bad_key, why, sizeof(why));

  ev->entries = calloc(nk, sizeof(*ev->entries));
  if (!ev->entries)
    goto oom;
  bool changed = false;
  for (size_t i = 0; i < allow->n; i++)
    if (!same(cand.value[i], eff->value[i]) ||
        (cand.value[i] && cand.source[i] != eff->source[i]))
      changed = true;
  for (size_t k = 0; k < nk; k++) {
    dc_event_entry_t *en = &ev->entries[ev->n++];
    const dc_fetched_t *f = dc_fetched_find(fetched, keys[k]);
    const dc_fetched_t *p = dc_fetched_find(prev, keys[k]);
    int i = dc_allow_index(allow, keys[k]);
    if (!(en->key = strdup(keys[k])))
      goto oom;
    en->source = f ? f->source : DYNCONF_SOURCE_APP;
    const char *oldv = i >= 0 ? eff->value[i] : (p ? p->value : NULL);
    const char *newv = f ? f->value : NULL;
    if (i < 0) {
      en->outcome = DYNCONF_OUTCOME_IGNORED;
      en->reason = strdup("not in dynconf.allow.keys");
    } else if (na_reason[i]) {
      en->outcome = DYNCONF_OUTCOME_IGNORED;
      en->reason = strdup(na_reason[i]);
    } else if (!ok) {
      char buf[400];
      if (!strcmp(keys[k], bad_key))
        snprintf(buf, sizeof(buf), "%s", why);
      else
        snprintf(buf, sizeof(buf), "change set rejected: %s", why);
      en->outcome = DYNCONF_OUTCOME_REJECTED;
      en->reason = strdup(buf);
    } else if (pin_reason[i]) {
      en->outcome = DYNCONF_OUTCOME_PINNED;
      en->reason = strdup(pin_reason[i]);
      newv = NULL; /* acks stays the application's own */
    } else {
      en->outcome = DYNCONF_OUTCOME_APPLIED;
    }
    if ((oldv && !(en->old_value = strdup(oldv))) ||
        (newv && !(en->new_value = strdup(newv))) ||
        (en->outcome != DYNCONF_OUTCOME_APPLIED && !en->reason))
      goto oom;
  }
  ev->accepted = ok;
  ev->generation = generation;
  if (ok && changed) {
    dc_effective_free(eff);
    *eff = cand;
    memset(&cand, 0, sizeof(cand));
    ev->generation = generation + 1;
  }
  dc_effective_free(&cand);
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++) {
    free(pin_reason[i]);
    free(na_reason[i]);
  }
  free(keys);
  *evp = ev;
  return 0;
oom:
  dc_effective_free(&cand);
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++) {
    free(pin_reason[i]);
    free(na_reason[i]);
  }
  dc_event_free(ev);
  free(keys);
  return -1;
}
