/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent: a background thread that re-fetches (fetch.c: DescribeConfigs
 * over the agent's own connection) and records each outcome, and
 * dynconf_poll() that serves events and logs on the application's thread.
 * dynconf_new() and the first fetch are in lifecycle.c.
 */
#include "agent/agent_int.h"
#include "common/clock.h"
#include "common/text.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- error events -------------------------------------------------------- */

static dynconf_event_t *error_event(dynconf_event_type_t type,
                                    dynconf_err_t err, const char *msg) {
  dynconf_event_t *ev = calloc(1, sizeof(*ev));
  if (ev && !(ev->errstr = strdup(msg))) {
    free(ev);
    return NULL;
  }
  if (ev) {
    ev->type = type;
    ev->err = err;
  }
  return ev;
}

/* Random interval in [ms - pct%, ms]: a fleet spreads out, and no agent
 * waits longer than asked. Caller holds the lock. */
static int64_t jittered(dynconf_t *dc, int64_t ms) {
  dc->rng ^= dc->rng << 13;
  dc->rng ^= dc->rng >> 7;
  dc->rng ^= dc->rng << 17;
  int64_t span = ms * dc->conf.jitter_pct / 100;
  return ms - (span ? (int64_t)(dc->rng % (uint64_t)(span + 1)) : 0);
}

/* A successful fetch judged without the lock: what dc_resolve() made of
 * it, and what record() swaps in. */
typedef struct judged {
  int rc;                    /* dc_resolve()'s: 0, or -1 (out of memory) */
  dynconf_event_t *ev;       /* NULL: nothing changed */
  dc_effective_t eff;        /* the effective config after ev */
  dynconf_event_t *rejected; /* copy of a rejected ev for the statistics */
} judged_t;

/* The keys, values and reasons of a rejected change set (NULL on OOM). */
static dynconf_event_t *rejected_copy(const dynconf_event_t *ev) {
  dynconf_event_t *copy = calloc(1, sizeof(*copy));
  if (!copy || !(copy->entries = calloc(ev->n ? ev->n : 1,
                                        sizeof(*copy->entries)))) {
    free(copy);
    return NULL;
  }
  for (size_t i = 0; i < ev->n; i++) {
    const dc_event_entry_t *e = &ev->entries[i];
    dc_event_entry_t *c = &copy->entries[copy->n++];
    c->key = strdup(e->key);
    c->new_value = e->new_value ? strdup(e->new_value) : NULL;
    c->reason = e->reason ? strdup(e->reason) : NULL;
  }
  return copy;
}

/* Runs dc_resolve() on a copy of the effective config, lock not held: only
 * the fetching thread (dynconf_new(), then the agent thread) writes
 * dc->fetched, dc->eff and dc->generation, so it reads them unlocked. */
static void judge(dynconf_t *dc, const dc_fetched_set_t *set, judged_t *j) {
  memset(j, 0, sizeof(*j));
  if (dc_effective_copy(&j->eff, &dc->eff)) {
    j->rc = -1;
    return;
  }
  j->rc = dc_resolve(&dc->app, &dc->allow, &dc->fetched, set, &j->eff,
                     dc->generation, &j->ev);
  if (!j->rc && j->ev && !j->ev->accepted)
    j->rejected = rejected_copy(j->ev);
}

static void judged_free(judged_t *j) {
  dc_event_free(j->ev);
  dc_event_free(j->rejected);
  dc_effective_free(&j->eff);
  memset(j, 0, sizeof(*j));
}

/* Logs a change set's entries and publishes it: swaps (cheap) what
 * judge() prepared into dc; the old effective config and rejected copy go
 * back into j for the caller to free. Caller holds the lock. */
static void publish_locked(dynconf_t *dc, judged_t *j) {
  dynconf_event_t *ev = j->ev;
  /* A client configured only at its creation runs on without it. */
  bool at_restart = !dc->conf.apply_live && dc->started;
  dc->generation = ev->generation;
  for (size_t i = 0; i < ev->n; i++) {
    const dc_event_entry_t *e = &ev->entries[i];
    dc_agent_log_locked(
        dc, e->outcome == DYNCONF_OUTCOME_REJECTED ? 4 : 6, "CHANGE",
        "%s: %s -> %s (%s) %s%s%s", e->key,
        e->old_value ? e->old_value : "(app)",
        e->new_value ? e->new_value : "(app)", dynconf_source_name(e->source),
        at_restart && e->outcome == DYNCONF_OUTCOME_APPLIED
            ? "accepted; the client takes it when it is restarted"
            : dynconf_outcome_name(e->outcome),
        e->reason ? ": " : "",
        e->reason ? e->reason : "");
  }
  if (ev->accepted) {
    dc_effective_t old = dc->eff;
    dc->eff = j->eff;
    j->eff = old;
  }
  dc_agent_report_state_locked(dc, ev); /* on the new effective config */
  dynconf_event_t *old_rejected = dc->last_rejected;
  dc->last_rejected = j->rejected; /* NULL when accepted */
  j->rejected = old_rejected;
  dc_agent_enqueue_locked(dc, ev);
  j->ev = NULL;
}

/* Makes a fetched (or watched) set the current one and publishes what
 * judge() made of it. *set gets the previous one. Caller holds lock. */
static void adopt_locked(dynconf_t *dc, dc_fetched_set_t *set, judged_t *j) {
  dc->last_ok_ms = dc_wall_ms();
  if (j->rc) {
    dc_agent_log_locked(dc, 3, "FETCH", "out of memory applying a change set");
    return;
  }
  dc_fetched_set_t old = dc->fetched;
  dc->fetched = *set;
  *set = old;
  if (j->ev)
    publish_locked(dc, j);
}

/* Adds one fetch's time to the statistics. Caller holds lock. */
static void note_fetch_time(dynconf_t *dc, int64_t took_us) {
  static const int64_t bounds[DC_FETCH_BUCKETS] = DC_FETCH_BOUNDS_US;
  size_t b = 0;
  while (b < DC_FETCH_BUCKETS && took_us > bounds[b])
    b++;
  dc->fetch_hist[b]++;
  dc->last_fetch_us = took_us;
  dc->sum_fetch_us += took_us;
  if (took_us > dc->max_fetch_us)
    dc->max_fetch_us = took_us;
}

/* The server answered that it serves no dynamic configs: an outage, if
 * any, is over; probe again later. Caller holds lock. */
static void record_unsupported(dynconf_t *dc, dynconf_err_t err,
                               const char *errstr, int64_t now) {
  dc->n_fetch_unsupported++;
  dc->failures = 0;
  if (dc->state != DYNCONF_STATE_UNSUPPORTED) {
    dc_agent_log_locked(
        dc, 4, "UNSUPPORTED",
        "%s does not serve dynamic client configs (%s); using the "
        "application's own configuration, re-probing every %d s",
        dc->bootstrap, errstr, dc->conf.unsupported_reprobe_ms / 1000);
    dynconf_event_t *ev = error_event(DYNCONF_EVENT_UNSUPPORTED, err, errstr);
    if (ev)
      dc_agent_enqueue_locked(dc, ev);
  }
  dc->state = DYNCONF_STATE_UNSUPPORTED;
  dc->next_fetch_ms = now + jittered(dc, dc->conf.unsupported_reprobe_ms);
}

/* A failed fetch: reported once per outage, retried with a growing
 * back-off. Caller holds lock. */
static void record_failure(dynconf_t *dc, dynconf_err_t err,
                           const char *errstr, int64_t now) {
  dc->n_fetch_err++;
  if (dc->failures == 0) {
    dc_agent_log_locked(dc, 4, "FETCH", "cannot fetch dynamic configs for "
                        "client.id '%s': %s; keeping the last good "
                        "configuration", dc->client_id, errstr);
    dynconf_event_t *ev = error_event(DYNCONF_EVENT_ERROR, err, errstr);
    if (ev)
      dc_agent_enqueue_locked(dc, ev);
  } else {
    dc_agent_log_locked(dc, 7, "FETCH", "fetch failed again (%d in a row): %s",
                        dc->failures + 1, errstr);
  }
  if (dc->state != DYNCONF_STATE_UNSUPPORTED)
    dc->state = DYNCONF_STATE_DEGRADED;
  int64_t backoff = dc->conf.retry_backoff_ms;
  for (int i = 0; i < dc->failures && backoff < dc->conf.retry_backoff_max_ms; i++)
    backoff *= 2;
  if (backoff > dc->conf.retry_backoff_max_ms)
    backoff = dc->conf.retry_backoff_max_ms;
  dc->failures++;
  dc->next_fetch_ms = now + jittered(dc, backoff);
}

/* Records a fetch outcome and decides the next fetch. Caller holds lock.
 * On success *set becomes dc->fetched and *set gets the previous one,
 * which the caller frees (after unlocking). */
static void record(dynconf_t *dc, dc_fetch_res_t r, dc_fetched_set_t *set,
                   judged_t *j, dynconf_err_t err, const char *errstr,
                   int64_t took_us) {
  note_fetch_time(dc, took_us);
  int64_t now = dc_mono_ms();
  if (r == FETCH_OK) {
    dc->n_fetch_ok++;
    if (dc->state == DYNCONF_STATE_DEGRADED ||
        dc->state == DYNCONF_STATE_UNSUPPORTED)
      dc_agent_log_locked(dc, 6, "FETCH", "dynamic configs for client.id "
                          "'%s' are reachable again at %s", dc->client_id,
                          dc->bootstrap);
    dc->state = DYNCONF_STATE_UP;
    dc->failures = 0;
    adopt_locked(dc, set, j);
    dc->next_fetch_ms = now + jittered(dc, dc->interval_ms);
    dc->conn.watch_off = false; /* the server may watch again */
    return;
  }
  dc->last_err = err;
  snprintf(dc->last_errstr, sizeof(dc->last_errstr), "%s", errstr);
  dc->last_err_ms = dc_wall_ms();
  if (r == FETCH_UNSUPPORTED)
    record_unsupported(dc, err, errstr, now);
  else
    record_failure(dc, err, errstr, now);
}

dc_fetch_res_t dc_agent_fetch_and_record(dynconf_t *dc, int timeout_ms) {
  dc_fetched_set_t set;
  dynconf_err_t err = DYNCONF_ERR_NO_ERROR;
  char errstr[512] = "";
  int64_t t0 = dc_mono_us();
  dc_fetch_res_t r =
      dc_agent_fetch(dc, timeout_ms, &set, &err, errstr, sizeof(errstr));
  int64_t took = dc_mono_us() - t0;
  judged_t j = {0};
  if (r == FETCH_OK)
    judge(dc, &set, &j);
  const char *peer = dc_kclient_peer(dc->conn.kc);
  pthread_mutex_lock(&dc->lock);
  /* The server that answered, for the statistics. */
  if (dc_kclient_connected(dc->conn.kc) && *peer) {
    snprintf(dc->server, sizeof(dc->server), "%s", peer);
    dc->server_version = dc->conn.version;
  }
  if (!dc->stop || r == FETCH_OK)
    record(dc, r, &set, &j, err, errstr, took);
  pthread_mutex_unlock(&dc->lock);
  /* What record() did not take, or handed back, is freed unlocked. */
  dc_fetched_set_free(&set);
  judged_free(&j);
  return r;
}

/* The fallback to polling, logged once until a watch works again. */
/* The strikes stay: only a watch that ends normally clears them, so after
 * the next fetch one more odd answer ends watching again. */
static void watch_fallback_locked(dynconf_t *dc, const char *why) {
  dc->conn.watch_off = true;
  dc_agent_log_locked(dc, dc->conn.watch_noted ? 7 : 4, "WATCH",
                      "%s; polling until the next fetch in %lld ms", why,
                      (long long)(dc->next_fetch_ms - dc_mono_ms()));
  dc->conn.watch_noted = true;
}

/* A strike against the server; enough of them and the agent polls (true
 * then). */
static bool watch_strike_locked(dynconf_t *dc, const char *why) {
  if (++dc->conn.watch_strikes >= DC_AGENT_WATCH_STRIKES) {
    watch_fallback_locked(dc, why);
    return true;
  }
  dc_agent_log_locked(dc, 7, "WATCH", "%s", why);
  return false;
}

/* What a Watch on version asked that was not interrupted brought.
 * Caller holds lock. */
static void watch_record_locked(dynconf_t *dc, dc_watch_res_t r,
                                int64_t asked, dc_fetched_set_t *set,
                                judged_t *j, const char *errstr) {
  dc_agent_conn_t *c = &dc->conn;
  switch (r) {
  case WATCH_CHANGED:
    dc->n_watch_changed++;
    dc->watched_version = c->watch_version;
    /* Nothing new is the answer to a Watch on -1 (a connection's first:
     * it asks the version), and once after a fetch that brought the
     * change; not twice in a row. */
    if (j->rc || j->ev) {
      c->watch_hollow = c->watch_strikes = 0;
      c->watch_noted = false;
    } else if (asked >= 0 && c->watch_hollow++) {
      watch_strike_locked(dc, "the server woke the agent's Watch with "
                              "nothing new twice in a row");
    }
    adopt_locked(dc, set, j);
    return;
  case WATCH_UNCHANGED:
    dc->n_watch_unchanged++;
    c->watch_hollow = c->watch_strikes = 0;
    c->watch_noted = false;
    return;
  case WATCH_REFUSED:
    dc->n_watch_refused++;
    watch_fallback_locked(dc, errstr);
    return;
  case WATCH_FAILED:
    dc->n_watch_failed++;
    /* A lost connection may have lost a change: reconnect and fetch now,
     * unless the server keeps doing this. */
    if (!watch_strike_locked(dc, errstr) && !dc_kclient_connected(c->kc))
      dc->next_fetch_ms = dc_mono_ms();
    return;
  }
}

/* Waits up to wait_ms for a change with the server's Watch. The caller
 * has set dc->watching, so dynconf_refresh_now() interrupts the wait. */
static dc_watch_res_t watch_and_record(dynconf_t *dc, int wait_ms) {
  dc_fetched_set_t set;
  dynconf_err_t err = DYNCONF_ERR_NO_ERROR;
  char errstr[512] = "";
  int64_t asked = dc->conn.watch_version;
  dc_watch_res_t r = dc_agent_watch(dc, wait_ms, &set, &err, errstr,
                                    sizeof(errstr));
  judged_t j = {0};
  if (r == WATCH_CHANGED)
    judge(dc, &set, &j);
  pthread_mutex_lock(&dc->lock);
  /* An interrupted watch is no fault of the server's. */
  bool interrupted = dc->stop || (r == WATCH_FAILED && dc->refresh_requested);
  if (!interrupted || r == WATCH_CHANGED)
    watch_record_locked(dc, r, asked, &set, &j, errstr);
  pthread_mutex_unlock(&dc->lock);
  dc_fetched_set_free(&set);
  judged_free(&j);
  return r;
}

/* Reports to the server. A connection lost doing so is replaced at once
 * (a change may come meanwhile), unless that keeps happening: it is a
 * strike, as a Watch that loses the connection is. Agent thread, lock not
 * held. */
static void report(dynconf_t *dc, int64_t version) {
  if (dc_agent_report(dc, version))
    return;
  pthread_mutex_lock(&dc->lock);
  if (!watch_strike_locked(dc, "the server closed the connection on the "
                               "agent's report"))
    dc->next_fetch_ms = dc_mono_ms();
  pthread_mutex_unlock(&dc->lock);
}

/* Whether the wait for the next fetch is spent in a Watch: wanted, the
 * last fetch succeeded, its connection is open and its server offers
 * Watch and has not earned a fallback. Agent thread, lock held. */
static bool watch_wanted(dynconf_t *dc) {
  return dc->conf.watch && dc->state == DYNCONF_STATE_UP &&
         !dc->conn.watch_off && dc_agent_watch_offered(dc);
}

/* KIP-368: dynconfd closes a connection when its SASL session ends, a
 * parked Watch with it. A Watch ends SESSION_MARGIN_MS before the session
 * does, so its answer is back in time; the fetch that follows the end
 * waits SESSION_GRACE_MS more, for dynconfd to have closed the connection. */
#define SESSION_MARGIN_MS 1000
#define SESSION_GRACE_MS 100

/* The wait of the next Watch within the connection's session, or 0: the
 * session is too close to its end to park one, so the next fetch (on a
 * new connection, with a new session; it reads what a Watch would have)
 * is moved to just after the end. One new connection per session, however
 * short the next one is (a token not renewed in time gives a short one).
 * Agent thread, lock held. */
static int64_t watch_within_session(dynconf_t *dc, int64_t wait) {
  int64_t left = dc_kclient_session_left_ms(dc->conn.kc);
  if (left < 0 || left - SESSION_MARGIN_MS >= wait)
    return wait;
  if (left - SESSION_MARGIN_MS >= DC_AGENT_WATCH_MIN_MS)
    return left - SESSION_MARGIN_MS;
  int64_t after_end = dc_mono_ms() + left + SESSION_GRACE_MS;
  if (dc->next_fetch_ms > after_end) {
    dc_agent_log_locked(dc, 7, "WATCH", "the SASL session with %s ends in "
                        "%lld ms: fetching on a new connection then",
                        dc_kclient_peer(dc->conn.kc), (long long)left);
    dc->next_fetch_ms = after_end;
  }
  return 0;
}

void *dc_agent_thread(void *arg) {
  dynconf_t *dc = arg;
  pthread_setname_np(pthread_self(), "dynconf:agent");
  /* In the fleet view from the connection dynconf_new() opened, not from
   * the first background refresh minutes later. */
  pthread_mutex_lock(&dc->lock);
  bool up = dc->state == DYNCONF_STATE_UP;
  pthread_mutex_unlock(&dc->lock);
  if (up)
    report(dc, dc->conn.fetched_version);
  pthread_mutex_lock(&dc->lock);
  while (!dc->stop) {
    if (!dc->conf.log_queue && dc->logq_head) {
      pthread_mutex_unlock(&dc->lock);
      dc_agent_serve_logs(dc);
      pthread_mutex_lock(&dc->lock);
      continue;
    }
    int64_t now = dc_mono_ms();
    int64_t cw_at = dc_certwatch_next_ms(&dc->cw);
    if (now >= cw_at) {
      pthread_mutex_unlock(&dc->lock);
      dc_certwatch_check(dc);
      pthread_mutex_lock(&dc->lock);
      continue;
    }
    if (!dc->refresh_requested && now < dc->next_fetch_ms) {
      struct timespec ts;
      int64_t at = dc->next_fetch_ms < cw_at ? dc->next_fetch_ms : cw_at;
      int64_t wait = at - now >= DC_AGENT_WATCH_MIN_MS && watch_wanted(dc)
                         ? watch_within_session(dc, at - now)
                         : 0;
      if (wait) {
        dc->watching = true;
        pthread_mutex_unlock(&dc->lock);
        if (watch_and_record(dc, (int)wait) == WATCH_CHANGED)
          report(dc, dc->conn.watch_version); /* exact: from the answer */
        pthread_mutex_lock(&dc->lock);
        dc->watching = false;
        if (!dc->stop)
          dc_agent_conn_drain(&dc->conn); /* a refresh's byte, if any */
        continue;
      }
      if (dc->next_fetch_ms < at) /* moved to a session's end */
        at = dc->next_fetch_ms;
      ts.tv_sec = (time_t)(at / 1000);
      ts.tv_nsec = (long)(at % 1000) * 1000000;
      pthread_cond_timedwait(&dc->wake, &dc->lock, &ts);
      continue;
    }
    dc->refresh_requested = false;
    pthread_mutex_unlock(&dc->lock);
    /* A watching agent reports from its next Watch answer, which names
     * the version; one that cannot watch reports the version it was
     * served (-1 from a server that does not say: it knows). */
    dc_fetch_res_t r =
        dc_agent_fetch_and_record(dc, dc->conf.request_timeout_ms);
    if (r == FETCH_OK && !(dc->conf.watch && dc_agent_watch_offered(dc)))
      report(dc, dc->conn.fetched_version);
    pthread_mutex_lock(&dc->lock);
  }
  pthread_mutex_unlock(&dc->lock);
  return NULL;
}

/* ---- public API ---------------------------------------------------------- */

static void default_log(const dynconf_t *dc, int level, const char *fac,
                        const char *msg) {
  fprintf(stderr, "%%%d|DYNCONF|%s|%s: %s\n", level, dc->client_id, fac, msg);
}

void dc_agent_serve_logs(dynconf_t *dc) {
  pthread_mutex_lock(&dc->lock);
  dc_logmsg_t *m = dc->logq_head;
  dc->logq_head = dc->logq_tail = NULL;
  dc->logq_len = 0;
  pthread_mutex_unlock(&dc->lock);
  while (m) {
    dc_logmsg_t *n = m->next;
    (dc->conf.log_cb ? dc->conf.log_cb : default_log)(dc, m->level, m->fac,
                                                      m->msg);
    dc_logmsg_free(m);
    m = n;
  }
}

int dynconf_poll(dynconf_t *dc, int timeout_ms) {
  pthread_mutex_lock(&dc->lock);
  if (!dc->evq_head && !dc->logq_head && timeout_ms != 0) {
    if (timeout_ms < 0) {
      while (!dc->evq_head && !dc->logq_head)
        pthread_cond_wait(&dc->ready, &dc->lock);
    } else {
      int64_t at = dc_mono_ms() + timeout_ms;
      struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000};
      while (!dc->evq_head && !dc->logq_head &&
             pthread_cond_timedwait(&dc->ready, &dc->lock, &ts) != ETIMEDOUT)
        ;
    }
  }
  dynconf_event_t *evs = dc->evq_head;
  dc->evq_head = dc->evq_tail = NULL;
  dc->evq_len = 0;
  pthread_mutex_unlock(&dc->lock);
  dc_agent_serve_logs(dc);
  dc_oauth_poll(dc);
  int served = 0;
  while (evs) {
    dynconf_event_t *n = evs->next;
    if (dc->conf.change_cb)
      dc->conf.change_cb(dc, evs, dc->conf.opaque);
    dc_event_free(evs);
    served++;
    evs = n;
  }
  if (served) {
    pthread_mutex_lock(&dc->lock);
    dc->n_events += served;
    pthread_mutex_unlock(&dc->lock);
  }
  return served;
}

rd_kafka_conf_t *dynconf_effective_conf(dynconf_t *dc) {
  pthread_mutex_lock(&dc->lock);
  rd_kafka_conf_t *c = rd_kafka_conf_dup(dc->app_conf);
  for (size_t i = 0; c && i < dc->allow.n; i++) {
    if (!dc->eff.value[i])
      continue;
    char e[256];
    if (rd_kafka_conf_set(c, dc->allow.keys[i], dc->eff.value[i], e,
                          sizeof(e)) != RD_KAFKA_CONF_OK)
      dc_agent_log_locked(dc, 3, "CONF", "librdkafka refused %s=%s: %s",
                          dc->allow.keys[i], dc->eff.value[i], e);
  }
  pthread_mutex_unlock(&dc->lock);
  return c;
}

int64_t dynconf_generation(dynconf_t *dc) {
  pthread_mutex_lock(&dc->lock);
  int64_t g = dc->generation;
  pthread_mutex_unlock(&dc->lock);
  return g;
}

int dynconf_effective_get(dynconf_t *dc, const char *key, char *dest,
                          size_t dest_size, dynconf_source_t *sourcep) {
  int i = dc_allow_index(&dc->allow, key);
  if (i < 0)
    return -1;
  pthread_mutex_lock(&dc->lock);
  const char *v = dc->eff.value[i] ? dc->eff.value[i] : dc->app.values[i];
  size_t need = strlen(v ? v : "") + 1;
  if (dest && dest_size)
    snprintf(dest, dest_size, "%s", v ? v : "");
  if (sourcep)
    *sourcep = dc->eff.value[i] ? dc->eff.source[i] : DYNCONF_SOURCE_APP;
  pthread_mutex_unlock(&dc->lock);
  return need > INT_MAX ? INT_MAX : (int)need;
}

dynconf_state_t dynconf_state(dynconf_t *dc) {
  pthread_mutex_lock(&dc->lock);
  dynconf_state_t s = dc->state;
  pthread_mutex_unlock(&dc->lock);
  return s;
}

const char *dynconf_client_id(const dynconf_t *dc) { return dc->client_id; }

void *dynconf_opaque(const dynconf_t *dc) { return dc->conf.opaque; }

char *dynconf_stats_json(dynconf_t *dc) {
  pthread_mutex_lock(&dc->lock);
  char *s = dc_stats_json_locked(dc);
  pthread_mutex_unlock(&dc->lock);
  return s;
}

void dynconf_refresh_now(dynconf_t *dc) {
  pthread_mutex_lock(&dc->lock);
  dc->refresh_requested = true;
  if (dc->watching)
    dc_agent_conn_cancel(&dc->conn); /* drained after the watch ends */
  pthread_cond_broadcast(&dc->wake);
  pthread_mutex_unlock(&dc->lock);
}
