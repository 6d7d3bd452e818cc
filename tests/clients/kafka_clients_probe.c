/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The managed clients on a real Apache Kafka cluster. The driver,
 * tests/clients/test_kafka_clients.sh, starts a 3-node cluster and dynconfd, then
 * runs this program once per check:
 *
 *   kafka_clients_probe version
 *   kafka_clients_probe producers|groups|kip848 KAFKA_BOOTSTRAP DYNCONFD_PORT
 *
 * producers: acks changed live on two managed producers that produce a
 *   numbered sequence all along: an idempotent one (acks stays pinned to
 *   all; linger.ms changes rebuild it) and a plain one (acks 1 -> 0 -> all
 *   rebuild it). Read back: nothing lost, duplicated or out of order.
 * groups: session.timeout.ms and heartbeat.interval.ms changed 10 times
 *   on a static member (group.instance.id) of a two-member group: no
 *   rebalance, by the other member's callbacks, DescribeGroups and the
 *   generation in the coordinator's own records. Then the same changes on
 *   a member without group.instance.id: the control, where the same
 *   means see the rebalances. The consumption pauses are printed, never
 *   judged (a noisy machine).
 * kip848: a group.protocol=consumer member (librdkafka 2.4 and later):
 *   the agent leaves both timeouts to the broker, names the configs to
 *   set on the cluster instead, and never rebuilds for them.
 *
 * The operator's changes go through dynconf-configs ($DC_CONFIGS). Each
 * client runs on a thread of its own, as an application runs it: a
 * rebuild blocks its own poll loop only, so each pause measured is that
 * client's own. TAP lines come from the main thread only.
 */
#include "../agentutil.h"
#include "kafka_probe.h"

#include <stdatomic.h>

#define WAIT_MS 60000 /* deadline for any condition */

static const char *g_kbs;     /* the Kafka cluster */
static int g_port;            /* dynconfd */
static rd_kafka_t *g_adm;     /* admin requests */
static atomic_int g_warnings; /* agent warnings and errors */

/* From the clients' threads: one whole line per call. AU_VERBOSE shows
 * the agents' info logs too (switches, rebuilds), while debugging. */
static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  if (level > (getenv("AU_VERBOSE") ? 6 : 4))
    return;
  if (level <= 4)
    atomic_fetch_add(&g_warnings, 1);
  printf("# agent %s %s: %s\n", dynconf_client_id(dc), fac, msg);
}

/* An agent for app (borrowed), required at start-up; allow: the
 * dynconf.allow.keys, NULL for the default. NULL with diag(). */
static dynconf_t *agent_new(rd_kafka_type_t type, const rd_kafka_conf_t *app,
                            dynconf_change_cb_t *cb, void *opaque,
                            const char *allow) {
  return au_agent_new_with(type, app, g_port, cb, on_log, opaque,
                           "dynconf.startup.required", "true",
                           allow ? "dynconf.allow.keys" : NULL, allow, NULL);
}

static int64_t lock_read(pthread_mutex_t *mu, const int64_t *v) {
  pthread_mutex_lock(mu);
  int64_t r = *v;
  pthread_mutex_unlock(mu);
  return r;
}

/* ======================================================================
 * Producers
 * ====================================================================== */

#define P_PARTS 3
#define P_MAX 500000 /* sequence numbers per producer */
#define NFLIPS 6

typedef struct prod {
  const char *cid, *topic;
  bool idempotent;
  pthread_t th;
  dynconf_t *dc;         /* set before state turns 1 */
  atomic_int state;      /* 0 starting, 1 producing, -1 failed */
  atomic_bool stop;
  atomic_long delivered; /* delivery reports without error */
  /* The producer's thread only; read after it ended. */
  long produced, produce_errors, dr_errors;
  unsigned char *dr; /* delivery reports per sequence number */
  int64_t *sent_ms;  /* when each was produced */
  int64_t dr_max_ms; /* the longest wait for a delivery report */
  long dr_max_seq;   /* ... of this message */
  char error[512];   /* the first failure */
  char stats[1024];  /* dynconf_producer_stats_json() at the end */
  pthread_mutex_t mu; /* guards what follows */
  int64_t switches;
  char acks[16], linger[16]; /* the current handle's */
  int64_t n_events;
  char acks_outcome[16], acks_reason[400]; /* in the latest event */
} prod_t;

static void prod_dr(rd_kafka_t *rk, const rd_kafka_message_t *m,
                    void *opaque) {
  (void)rk;
  prod_t *w = opaque;
  long seq = (long)(intptr_t)m->_private - 1;
  if (seq >= 0 && seq < P_MAX) {
    int64_t waited = dc_tu_now_ms() - w->sent_ms[seq];
    if (!w->dr[seq]++ && waited > w->dr_max_ms) {
      w->dr_max_ms = waited;
      w->dr_max_seq = seq;
    }
  }
  if (m->err && !w->dr_errors++)
    snprintf(w->error, sizeof(w->error), "seq %ld: %s", seq,
             rd_kafka_err2str(m->err));
  else if (!m->err)
    atomic_fetch_add(&w->delivered, 1);
}

static void prod_on_change(dynconf_t *dc, const dynconf_event_t *ev,
                           void *opaque) {
  (void)dc;
  prod_t *w = opaque;
  pthread_mutex_lock(&w->mu);
  w->n_events++;
  w->acks_outcome[0] = w->acks_reason[0] = '\0';
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++) {
    if (strcmp(dynconf_event_key(ev, i), "acks"))
      continue;
    const char *r = dynconf_event_reason(ev, i);
    snprintf(w->acks_outcome, sizeof(w->acks_outcome), "%s",
             dynconf_outcome_name(dynconf_event_outcome(ev, i)));
    snprintf(w->acks_reason, sizeof(w->acks_reason), "%s", r ? r : "");
  }
  pthread_mutex_unlock(&w->mu);
}

/* Publishes the current handle's settings after each switch. */
static void prod_note_handle(prod_t *w, dynconf_producer_t *p) {
  int64_t s = dynconf_producer_switches(p);
  if (s == w->switches && w->acks[0]) /* only this thread writes them */
    return;
  char acks[16], linger[16];
  const rd_kafka_conf_t *c = rd_kafka_conf(dynconf_producer_handle(p));
  au_conf_val(c, "acks", acks, sizeof(acks));
  au_conf_val(c, "linger.ms", linger, sizeof(linger));
  pthread_mutex_lock(&w->mu);
  w->switches = s;
  snprintf(w->acks, sizeof(w->acks), "%s", au_acks_norm(acks));
  snprintf(w->linger, sizeof(w->linger), "%s", linger);
  pthread_mutex_unlock(&w->mu);
}

/* The next number of the sequence, to partition seq % P_PARTS. */
static void prod_one(prod_t *w, dynconf_producer_t *p) {
  char v[24];
  long seq = w->produced;
  int n = snprintf(v, sizeof(v), "%ld", seq);
  w->sent_ms[seq] = dc_tu_now_ms();
  rd_kafka_resp_err_t err = dynconf_producer_produce(
      p, w->topic, (int32_t)(seq % P_PARTS), v, (size_t)n, NULL, 0,
      (void *)(intptr_t)(seq + 1));
  if (!err)
    w->produced++;
  else if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL && !w->produce_errors++)
    snprintf(w->error, sizeof(w->error), "produce: %s", rd_kafka_err2str(err));
}

static dynconf_producer_t *prod_new(prod_t *w) {
  char e[512];
  rd_kafka_conf_t *app =
      au_app_conf(g_kbs, w->cid, "enable.idempotence",
                  w->idempotent ? "true" : "false", "linger.ms", "5", NULL);
  if (getenv("KC_DEBUG")) /* librdkafka debug contexts, while debugging */
    rd_kafka_conf_set(app, "debug", getenv("KC_DEBUG"), e, sizeof(e));
  rd_kafka_conf_set_dr_msg_cb(app, prod_dr);
  rd_kafka_conf_set_opaque(app, w);
  w->dc =
      agent_new(RD_KAFKA_PRODUCER, app, prod_on_change, w, "acks,linger.ms");
  rd_kafka_conf_destroy(app);
  dynconf_producer_t *p =
      w->dc ? dynconf_producer_new(w->dc, DYNCONF_SWITCH_ORDERED, e, sizeof(e))
            : NULL;
  if (!p) {
    snprintf(w->error, sizeof(w->error), "%s", w->dc ? e : "no agent");
    if (w->dc)
      dynconf_destroy(w->dc);
    w->dc = NULL;
  }
  return p;
}

/* The application: produces a message every few ms, polls, flushes. */
static void *prod_main(void *arg) {
  prod_t *w = arg;
  dynconf_producer_t *p = prod_new(w);
  if (!p) {
    atomic_store(&w->state, -1);
    return NULL;
  }
  prod_note_handle(w, p);
  atomic_store(&w->state, 1);
  while (!atomic_load(&w->stop) && w->produced < P_MAX) {
    prod_one(w, p);
    dynconf_producer_poll(p, 2);
    prod_note_handle(w, p);
  }
  rd_kafka_resp_err_t err = dynconf_producer_flush(p, 30000);
  if (err && !w->error[0])
    snprintf(w->error, sizeof(w->error), "flush: %s", rd_kafka_err2str(err));
  char *js = dynconf_producer_stats_json(p);
  snprintf(w->stats, sizeof(w->stats), "%s", js ? js : "");
  free(js);
  dynconf_producer_destroy(p);
  dynconf_destroy(w->dc);
  return NULL;
}

static bool prod_delivering(void *arg) {
  prod_t *w = arg;
  return atomic_load(&w->state) < 0 ||
         (atomic_load(&w->state) > 0 && atomic_load(&w->delivered) >= 100);
}

/* Starts the producer's thread and waits until 100 messages arrived. */
static bool prod_start(prod_t *w) {
  pthread_mutex_init(&w->mu, NULL);
  w->dr = calloc(P_MAX, 1);
  w->sent_ms = calloc(P_MAX, sizeof(*w->sent_ms));
  if (!w->dr || !w->sent_ms || pthread_create(&w->th, NULL, prod_main, w)) {
    atomic_store(&w->state, -2); /* no thread to join */
    return false;
  }
  kp_wait(prod_delivering, w, WAIT_MS);
  if (atomic_load(&w->state) < 0)
    diag("%s: %s", w->cid, w->error);
  return atomic_load(&w->state) > 0 && atomic_load(&w->delivered) >= 100;
}

static void prod_stop(prod_t *w) {
  atomic_store(&w->stop, true);
  if (atomic_load(&w->state) > -2)
    pthread_join(w->th, NULL);
}

typedef struct flip_wait {
  prod_t *w;
  int64_t events, switches; /* to have arrived / happened */
  long delivered;           /* delivery reports to have arrived */
} flip_wait_t;

static bool flipped(void *arg) {
  flip_wait_t *f = arg;
  pthread_mutex_lock(&f->w->mu);
  bool done = f->w->n_events >= f->events && f->w->switches == f->switches;
  pthread_mutex_unlock(&f->w->mu);
  return done && atomic_load(&f->w->delivered) >= f->delivered;
}

/* One operator change: its change event arrives, the producer has made
 * `switches` switches in all, and 50 more messages are delivered. */
static bool flip(prod_t *w, const char *spec, int64_t switches) {
  flip_wait_t f = {w, lock_read(&w->mu, &w->n_events) + 1, switches, 0};
  int rc = kp_alter(g_port, w->cid, spec);
  if (rc || !kp_wait(flipped, &f, WAIT_MS)) {
    char *js = dynconf_stats_json(w->dc);
    diag("%s: %s: %s (switches %lld, want %lld); the agent: %s", w->cid, spec,
         rc ? "dynconf-configs --alter failed" : "no switch within 60 s",
         (long long)lock_read(&w->mu, &w->switches), (long long)switches,
         js ? js : "");
    free(js);
    return false;
  }
  f.delivered = atomic_load(&w->delivered) + 50;
  return kp_wait(flipped, &f, WAIT_MS);
}

/* The latest event's acks outcome and the handle's settings are as
 * wanted (linger NULL: not looked at); says what differs. */
static bool prod_is(prod_t *w, const char *outcome, const char *acks,
                    const char *linger) {
  pthread_mutex_lock(&w->mu);
  bool good = !strcmp(w->acks_outcome, outcome) && !strcmp(w->acks, acks) &&
              (!linger || !strcmp(w->linger, linger));
  if (!good)
    diag("%s after %lld switch(es): acks %s, handle acks=%s linger.ms=%s; "
         "want acks %s, acks=%s linger.ms=%s",
         w->cid, (long long)w->switches, w->acks_outcome, w->acks, w->linger,
         outcome, acks, linger ? linger : "(any)");
  pthread_mutex_unlock(&w->mu);
  return good;
}

typedef struct readback {
  long produced;
  unsigned char *count; /* deliveries per sequence number */
  long last[P_PARTS];   /* the highest number seen per partition */
  long dups, reordered, foreign;
} readback_t;

static void readback_add(const rd_kafka_message_t *m, void *arg) {
  readback_t *r = arg;
  char buf[24], *end;
  size_t n = m->len < sizeof(buf) - 1 ? m->len : sizeof(buf) - 1;
  memcpy(buf, m->payload ? m->payload : "", m->payload ? n : 0);
  buf[m->payload ? n : 0] = '\0';
  long seq = strtol(buf, &end, 10);
  if (!buf[0] || *end || seq < 0 || seq >= r->produced ||
      seq % P_PARTS != m->partition) {
    r->foreign++;
    return;
  }
  if (r->count[seq]++)
    r->dups++;
  else if (seq < r->last[m->partition])
    r->reordered++;
  if (seq > r->last[m->partition])
    r->last[m->partition] = seq;
}

/* Every message delivered once, and the topic holds the sequence whole,
 * once and in order per partition. */
static void prod_check(prod_t *w) {
  long not_once = 0, lost = 0;
  for (long s = 0; s < w->produced; s++)
    not_once += w->dr[s] != 1;
  is_int(not_once + w->dr_errors + w->produce_errors, 0,
         "%s: each of %ld messages got one delivery report, none failed",
         w->cid, w->produced);
  if (w->error[0])
    diag("%s: %s", w->cid, w->error);
  readback_t r = {.produced = w->produced,
                  .count = calloc((size_t)w->produced + 1, 1)};
  for (int p = 0; p < P_PARTS; p++)
    r.last[p] = -1;
  long n = r.count ? kp_read_all(g_kbs, w->topic, P_PARTS, readback_add, &r)
                   : -1;
  for (long s = 0; r.count && s < w->produced; s++)
    lost += !r.count[s];
  ok(n >= 0, "%s: topic %s read back from the beginning: %ld messages",
     w->cid, w->topic, n);
  ok(!lost && !r.dups && !r.reordered && !r.foreign,
     "%s: %ld lost, %ld duplicated, %ld out of order, %ld foreign", w->cid,
     lost, r.dups, r.reordered, r.foreign);
  diag("%s: %ld messages across %lld switches, the slowest delivered in "
       "%lld ms (seq %ld); %s",
       w->cid, w->produced, (long long)w->switches, (long long)w->dr_max_ms,
       w->dr_max_seq, w->stats);
  free(r.count);
}

/* acks alone on the idempotent producer: pinned, nothing to rebuild. */
static void acks_pinned(prod_t *w) {
  ok(flip(w, "acks=1", 0) && prod_is(w, "pinned", "-1", "5"),
     "%s: acks=1 on the idempotent producer is reported pinned, acks stays "
     "all, no switch",
     w->cid);
  pthread_mutex_lock(&w->mu);
  ok(strstr(w->acks_reason, "enable.idempotence") != NULL,
     "%s: the reason names enable.idempotence (\"%s\")", w->cid,
     w->acks_reason);
  pthread_mutex_unlock(&w->mu);
  is_int(dynconf_generation(w->dc), 0, "%s: generation still 0", w->cid);
}

static void flips(prod_t *idem, prod_t *plain) {
  int bad_idem = 0, bad_plain = 0;
  char spec[64];
  /* The plain producer goes 1 -> 0 -> all and round again: a switch away
   * from acks=0 holds order only through its ListOffsets barrier, which
   * a real broker (several connections, one log) puts to the test. */
  static const char *const plain_acks[] = {"1", "0", "all"};
  for (int i = 0; i < NFLIPS; i++) {
    const char *linger = i % 2 ? "5" : "20", *acks = plain_acks[i % 3];
    snprintf(spec, sizeof(spec), "acks=%s,linger.ms=%s", i % 2 ? "1" : "0",
             linger);
    bad_idem += !(flip(idem, spec, i + 1) &&
                  prod_is(idem, "pinned", "-1", linger));
    snprintf(spec, sizeof(spec), "acks=%s", acks);
    bad_plain += !(flip(plain, spec, i + 1) &&
                   prod_is(plain, "applied", au_acks_norm(acks), NULL));
  }
  is_int(bad_idem, 0,
         "%s: %d changes of acks (0/1) and linger.ms: a switch each, acks "
         "pinned to all, linger.ms applied",
         idem->cid, NFLIPS);
  is_int(bad_plain, 0, "%s: %d changes of acks (1 -> 0 -> all, twice), each "
                       "live on a new handle", plain->cid, NFLIPS);
}

static void test_producers(void) {
  static prod_t idem = {.cid = "kc-idem", .topic = "kc-idem",
                        .idempotent = true};
  static prod_t plain = {.cid = "kc-acks", .topic = "kc-acks"};
  if (!ok(!kp_create_topic(g_adm, idem.topic, P_PARTS) &&
              !kp_create_topic(g_adm, plain.topic, P_PARTS),
          "topics %s and %s (%d partitions, 3 replicas)", idem.topic,
          plain.topic, P_PARTS))
    return;
  bool started = prod_start(&idem) & prod_start(&plain);
  if (ok(started, "an idempotent and a plain managed producer deliver")) {
    acks_pinned(&idem);
    flips(&idem, &plain);
  }
  prod_stop(&idem);
  prod_stop(&plain);
  if (started) {
    prod_check(&idem);
    prod_check(&plain);
  }
  free(idem.dr);
  free(plain.dr);
  free(idem.sent_ms);
  free(plain.sent_ms);
}

/* ======================================================================
 * Consumers
 * ====================================================================== */

#define C_PARTS 4
#define C_ALL ((1 << C_PARTS) - 1)
#define NCHANGES 10
#define SETTLE_MSGS 10 /* consumed before a member counts as consuming */

enum { RB_ASSIGN, RB_REVOKE, RB_ERROR };

typedef struct rb_ev {
  int kind, mask;
  char handle[64];
} rb_ev_t;

typedef struct entry {
  char key[32], outcome[16], reason[400];
} entry_t;

typedef struct member {
  const char *cid, *group, *topic;
  const char *instance; /* group.instance.id; NULL: a dynamic member */
  bool kip848;          /* group.protocol=consumer */
  pthread_t th;
  dynconf_t *dc;        /* set before state turns 1 */
  atomic_int state;     /* 0 starting, 1 consuming, -1 failed */
  atomic_bool stop;
  char error[512];
  pthread_mutex_t mu; /* guards what follows */
  char handle[64];    /* rd_kafka_name() of the current handle */
  int64_t rebuilds;
  char session[16], heartbeat[16]; /* the current handle's */
  int mask;                        /* partitions assigned */
  char assigned_on[64];            /* the handle of the latest assign */
  rb_ev_t ev[128];
  int n_ev;
  long on_handle; /* messages consumed on the current handle */
  long since;     /* ... since the latest mark or (re)assignment */
  int64_t last_ms, max_gap_ms; /* the longest gap since the latest mark */
  int64_t n_events;
  entry_t entries[4]; /* the latest change event's */
  int n_entries;
} member_t;

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts,
                         void *opaque) {
  member_t *m = opaque;
  bool coop = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
  int kind = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS   ? RB_ASSIGN
             : err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS ? RB_REVOKE
                                                           : RB_ERROR;
  /* librdkafka leaves the (un)assignment to the application here. */
  if (coop) {
    rd_kafka_error_t *e = kind == RB_ASSIGN
                              ? rd_kafka_incremental_assign(rk, parts)
                              : rd_kafka_incremental_unassign(rk, parts);
    if (e)
      rd_kafka_error_destroy(e);
  } else {
    rd_kafka_assign(rk, kind == RB_ASSIGN ? parts : NULL);
  }
  int bits = kp_mask(parts);
  pthread_mutex_lock(&m->mu);
  if (m->n_ev < (int)(sizeof(m->ev) / sizeof(m->ev[0]))) {
    rb_ev_t *e = &m->ev[m->n_ev++];
    e->kind = kind;
    e->mask = bits;
    snprintf(e->handle, sizeof(e->handle), "%s", rd_kafka_name(rk));
  }
  if (kind == RB_ASSIGN) {
    m->mask = coop ? m->mask | bits : bits;
    snprintf(m->assigned_on, sizeof(m->assigned_on), "%s", rd_kafka_name(rk));
  } else {
    m->mask = coop ? m->mask & ~bits : 0;
  }
  m->since = 0;
  pthread_mutex_unlock(&m->mu);
}

static void member_on_change(dynconf_t *dc, const dynconf_event_t *ev,
                             void *opaque) {
  (void)dc;
  member_t *m = opaque;
  pthread_mutex_lock(&m->mu);
  m->n_events++;
  m->n_entries = 0;
  for (size_t i = 0; i < dynconf_event_entry_count(ev) && m->n_entries < 4;
       i++) {
    entry_t *e = &m->entries[m->n_entries++];
    const char *r = dynconf_event_reason(ev, i);
    snprintf(e->key, sizeof(e->key), "%s", dynconf_event_key(ev, i));
    snprintf(e->outcome, sizeof(e->outcome), "%s",
             dynconf_outcome_name(dynconf_event_outcome(ev, i)));
    snprintf(e->reason, sizeof(e->reason), "%s", r ? r : "");
  }
  pthread_mutex_unlock(&m->mu);
}

/* Publishes the current handle's name and settings after a rebuild. */
static void member_note_handle(member_t *m, dynconf_consumer_t *c) {
  rd_kafka_t *h = dynconf_consumer_handle(c);
  if (!h || !strcmp(rd_kafka_name(h), m->handle)) /* only this thread writes */
    return;
  char s[16], hb[16];
  au_conf_val(rd_kafka_conf(h), "session.timeout.ms", s, sizeof(s));
  au_conf_val(rd_kafka_conf(h), "heartbeat.interval.ms", hb, sizeof(hb));
  pthread_mutex_lock(&m->mu);
  snprintf(m->handle, sizeof(m->handle), "%s", rd_kafka_name(h));
  snprintf(m->session, sizeof(m->session), "%s", s);
  snprintf(m->heartbeat, sizeof(m->heartbeat), "%s", hb);
  m->rebuilds = dynconf_consumer_rebuilds(c);
  m->on_handle = 0;
  pthread_mutex_unlock(&m->mu);
}

static void member_got(member_t *m) {
  int64_t now = dc_tu_now_ms();
  pthread_mutex_lock(&m->mu);
  if (m->last_ms && now - m->last_ms > m->max_gap_ms)
    m->max_gap_ms = now - m->last_ms;
  m->last_ms = now;
  m->on_handle++;
  m->since++;
  pthread_mutex_unlock(&m->mu);
}

/* A window of measurement starts: the gap and count since now. */
static void member_mark(member_t *m) {
  pthread_mutex_lock(&m->mu);
  m->max_gap_ms = 0;
  m->since = 0;
  pthread_mutex_unlock(&m->mu);
}

static rd_kafka_conf_t *member_conf(member_t *m) {
  char e[256];
  rd_kafka_conf_t *c = au_app_conf(g_kbs, m->cid, "group.id", m->group,
                                   "auto.offset.reset", "earliest", NULL);
  /* The classic timeouts the changes start from; under KIP-848 the
   * broker owns them and librdkafka refuses them. */
  if (m->kip848)
    rd_kafka_conf_set(c, "group.protocol", "consumer", e, sizeof(e));
  else if (rd_kafka_conf_set(c, "session.timeout.ms", "10000", e, sizeof(e)) ||
           rd_kafka_conf_set(c, "heartbeat.interval.ms", "1000", e, sizeof(e)))
    diag("%s: %s", m->cid, e);
  if (m->instance)
    rd_kafka_conf_set(c, "group.instance.id", m->instance, e, sizeof(e));
  if (getenv("KC_DEBUG"))
    rd_kafka_conf_set(c, "debug", getenv("KC_DEBUG"), e, sizeof(e));
  rd_kafka_conf_set_rebalance_cb(c, on_rebalance);
  rd_kafka_conf_set_opaque(c, m);
  return c;
}

static dynconf_consumer_t *member_new(member_t *m) {
  char e[512];
  rd_kafka_conf_t *app = member_conf(m);
  m->dc = agent_new(RD_KAFKA_CONSUMER, app, member_on_change, m, NULL);
  rd_kafka_conf_destroy(app);
  dynconf_consumer_t *c =
      m->dc ? dynconf_consumer_new(m->dc, e, sizeof(e)) : NULL;
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, m->topic, RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err =
      c ? dynconf_consumer_subscribe(c, t) : RD_KAFKA_RESP_ERR__FAIL;
  rd_kafka_topic_partition_list_destroy(t);
  if (!err)
    return c;
  snprintf(m->error, sizeof(m->error), "%s",
           !m->dc ? "no agent" : !c ? e : rd_kafka_err2str(err));
  dynconf_consumer_destroy(c);
  if (m->dc)
    dynconf_destroy(m->dc);
  m->dc = NULL;
  return NULL;
}

/* The application: polls, counts what it consumed. */
static void *member_main(void *arg) {
  member_t *m = arg;
  dynconf_consumer_t *c = member_new(m);
  if (!c) {
    atomic_store(&m->state, -1);
    return NULL;
  }
  member_note_handle(m, c);
  atomic_store(&m->state, 1);
  while (!atomic_load(&m->stop)) {
    rd_kafka_message_t *msg = dynconf_consumer_poll(c, 5);
    member_note_handle(m, c);
    if (!msg)
      continue;
    if (!msg->err)
      member_got(m);
    rd_kafka_message_destroy(msg);
  }
  dynconf_consumer_close(c);
  dynconf_consumer_destroy(c);
  dynconf_destroy(m->dc);
  return NULL;
}

static bool member_launch(member_t *m) {
  pthread_mutex_init(&m->mu, NULL);
  if (!pthread_create(&m->th, NULL, member_main, m))
    return true;
  atomic_store(&m->state, -2); /* no thread to join */
  return false;
}

static void member_stop(member_t *m) {
  atomic_store(&m->stop, true);
  if (atomic_load(&m->state) > -2)
    pthread_join(m->th, NULL);
}

static void member_diag(member_t *m) {
  pthread_mutex_lock(&m->mu);
  diag("  %s: state %d %s, handle %s, rebuilds %lld, partitions 0x%x "
       "(assigned on %s), %ld consumed on the handle, %ld since the mark, "
       "%d rebalance callback(s)",
       m->cid, atomic_load(&m->state), m->error, m->handle,
       (long long)m->rebuilds, m->mask, m->assigned_on, m->on_handle,
       m->since, m->n_ev);
  pthread_mutex_unlock(&m->mu);
}

/* Consuming on the current handle after `rebuilds` rebuilds, with its
 * partitions in *mask. */
static bool member_consuming(member_t *m, int64_t rebuilds, int *mask) {
  pthread_mutex_lock(&m->mu);
  bool good = atomic_load(&m->state) == 1 && m->rebuilds == rebuilds &&
              m->mask && !strcmp(m->assigned_on, m->handle) &&
              m->since >= SETTLE_MSGS && m->on_handle >= SETTLE_MSGS;
  *mask = m->mask;
  pthread_mutex_unlock(&m->mu);
  return good;
}

typedef struct pair_wait {
  member_t *x, *y;
  int64_t rebuilds; /* of x; y is never changed */
} pair_wait_t;

/* Both consume, their partitions split the topic between them. */
static bool pair_settled(void *arg) {
  pair_wait_t *w = arg;
  int mx, my;
  bool gx = member_consuming(w->x, w->rebuilds, &mx);
  bool gy = member_consuming(w->y, 0, &my);
  return gx && gy && (mx | my) == C_ALL && !(mx & my);
}

/* One group: x is changed by the operator, y only watched. */
typedef struct group_run {
  const char *name;
  member_t *x, *y;
  int64_t pause_x[NCHANGES], pause_y[NCHANGES]; /* longest gaps (ms) */
  int64_t base_x, base_y; /* longest gaps before any change */
  int n_done;             /* changes that settled */
  int bad_conf;           /* new handles without the values set */
  int ev_x, ev_y;         /* rebalance callbacks before the changes */
} group_run_t;

static long member_since(member_t *m) {
  pthread_mutex_lock(&m->mu);
  long n = m->since;
  pthread_mutex_unlock(&m->mu);
  return n;
}

static int member_n_ev(member_t *m) {
  pthread_mutex_lock(&m->mu);
  int n = m->n_ev;
  pthread_mutex_unlock(&m->mu);
  return n;
}

static bool both_counted(void *arg) {
  group_run_t *r = arg;
  return member_since(r->x) >= 100 && member_since(r->y) >= 100;
}

/* Starts both members, waits until they split the topic, and measures
 * the gaps of 100 messages each before anything changes. */
static bool pair_start(group_run_t *r) {
  pair_wait_t w = {r->x, r->y, 0};
  bool launched = member_launch(r->x) & member_launch(r->y);
  if (!launched || !kp_wait(pair_settled, &w, WAIT_MS)) {
    member_diag(r->x);
    member_diag(r->y);
    return false;
  }
  member_mark(r->x);
  member_mark(r->y);
  if (!kp_wait(both_counted, r, WAIT_MS)) {
    diag("%s: not 100 messages each within 60 s", r->name);
    return false;
  }
  r->base_x = lock_read(&r->x->mu, &r->x->max_gap_ms);
  r->base_y = lock_read(&r->y->mu, &r->y->max_gap_ms);
  r->ev_x = member_n_ev(r->x);
  r->ev_y = member_n_ev(r->y);
  return true;
}

/* Change i (from 1): the session timeout every time, the heartbeat every
 * other time; session and heartbeat become what the new handle must
 * have. */
static void change_spec(int i, char *spec, size_t n, char session[16],
                        char heartbeat[16]) {
  snprintf(session, 16, "%d", 10000 + 1000 * i);
  if (i % 2 == 0) {
    snprintf(spec, n, "session.timeout.ms=%s", session);
    return;
  }
  snprintf(heartbeat, 16, "%d", 1000 + 100 * i);
  snprintf(spec, n, "session.timeout.ms=%s,heartbeat.interval.ms=%s", session,
           heartbeat);
}

/* The operator's NCHANGES changes to x, each waited for: x rebuilt and
 * both members consuming again; the longest gap of each meanwhile. */
static void run_changes(group_run_t *r) {
  char spec[96], session[16], heartbeat[16] = "1000";
  for (int i = 1; i <= NCHANGES; i++) {
    change_spec(i, spec, sizeof(spec), session, heartbeat);
    member_mark(r->x);
    member_mark(r->y);
    pair_wait_t w = {r->x, r->y, i};
    int rc = kp_alter(g_port, r->x->cid, spec);
    if (rc || !kp_wait(pair_settled, &w, WAIT_MS)) {
      diag("%s: change %d (%s): %s", r->name, i, spec,
           rc ? "dynconf-configs --alter failed" : "not settled within 60 s");
      member_diag(r->x);
      member_diag(r->y);
      return;
    }
    pthread_mutex_lock(&r->x->mu);
    r->pause_x[i - 1] = r->x->max_gap_ms;
    bool good = !strcmp(r->x->session, session) &&
                !strcmp(r->x->heartbeat, heartbeat);
    if (!good)
      diag("%s: change %d: the new handle has session.timeout.ms=%s "
           "heartbeat.interval.ms=%s, want %s and %s",
           r->name, i, r->x->session, r->x->heartbeat, session, heartbeat);
    pthread_mutex_unlock(&r->x->mu);
    r->pause_y[i - 1] = lock_read(&r->y->mu, &r->y->max_gap_ms);
    r->bad_conf += !good;
    r->n_done = i;
  }
}

/* The changed member's callbacks since the changes began are its handle
 * swaps only: a revoke on each old handle and an assign on each new one,
 * each of the partitions it had. */
static bool only_handle_swaps(group_run_t *r, int mask) {
  member_t *m = r->x;
  int assigns = 0, revokes = 0, other = 0;
  pthread_mutex_lock(&m->mu);
  for (int i = r->ev_x; i < m->n_ev; i++) {
    const rb_ev_t *e = &m->ev[i];
    if (e->mask == mask && e->kind == RB_ASSIGN)
      assigns++;
    else if (e->mask == mask && e->kind == RB_REVOKE)
      revokes++;
    else if (other++ < 3)
      diag("  %s: callback %d: %s of 0x%x on %s", m->cid, i,
           e->kind == RB_ASSIGN ? "assign" : "revoke/error", e->mask,
           e->handle);
  }
  pthread_mutex_unlock(&m->mu);
  if (assigns != r->n_done || revokes != r->n_done || other)
    diag("  %s: %d assign(s), %d revoke(s), %d other; %d rebuild(s)", m->cid,
         assigns, revokes, other, r->n_done);
  return assigns == r->n_done && revokes == r->n_done && !other;
}

/* DescribeGroups before (d0) and after (d1): the same members with the
 * same partitions; x rejoined under a new member id, y kept its own. */
static void static_describe(group_run_t *r, const kp_desc_t *d0,
                            const kp_desc_t *d1) {
  const kp_desc_member_t *x0 = kp_desc_member(d0, r->x->instance),
                         *y0 = kp_desc_member(d0, r->y->instance),
                         *x1 = kp_desc_member(d1, r->x->instance),
                         *y1 = kp_desc_member(d1, r->y->instance);
  bool all = x0 && y0 && x1 && y1;
  ok(all && d1->state == RD_KAFKA_CONSUMER_GROUP_STATE_STABLE && d1->n == 2 &&
         x1->mask == x0->mask && y1->mask == y0->mask,
     "static: DescribeGroups after the changes: Stable, the same two members "
     "with the same partitions (0x%x, 0x%x)",
     x1 ? x1->mask : -1, y1 ? y1->mask : -1);
  ok(all && strcmp(x1->member_id, x0->member_id) &&
         !strcmp(y1->member_id, y0->member_id),
     "static: %s rejoined under a new member id (%s), %s kept its own",
     r->x->instance, x1 ? x1->member_id : "?", r->y->instance);
}

/* The coordinator's own records: the generation never moved, and the
 * latest one has x under its new member id with the last session
 * timeout set. */
static void static_records(group_run_t *r, const kp_group_log_t *l0,
                           const kp_group_log_t *l1, const kp_desc_t *d1) {
  int32_t gen = l0->n ? l0->rec[l0->n - 1].generation : -1;
  int moved = 0;
  for (int i = l0->n; i < l1->n; i++)
    moved += l1->rec[i].generation != gen;
  ok(l0->n && l1->n > l0->n && !moved && !l1->undecoded,
     "static: the coordinator wrote %d group record(s) during the changes, "
     "all of generation %d (%d of another, %d undecoded)",
     l1->n - l0->n, gen, moved, l1->undecoded);
  const kp_rec_member_t *x =
      l1->n ? kp_rec_member(&l1->rec[l1->n - 1], r->x->instance) : NULL;
  const kp_desc_member_t *dx = kp_desc_member(d1, r->x->instance);
  int32_t want = 10000 + 1000 * NCHANGES;
  ok(x && dx && x->session_timeout == want &&
         !strcmp(x->member_id, dx->member_id),
     "static: in the latest record %s has its new member id and "
     "session.timeout.ms %d (%d)",
     r->x->instance, want, x ? x->session_timeout : -1);
}

static void static_checks(group_run_t *r, const kp_desc_t *d0,
                          const kp_desc_t *d1, const kp_group_log_t *l0,
                          const kp_group_log_t *l1) {
  const kp_desc_member_t *x0 = kp_desc_member(d0, r->x->instance);
  is_int(member_n_ev(r->y) - r->ev_y, 0,
         "static: %s had no rebalance callback in %d changes", r->y->cid,
         r->n_done);
  ok(x0 && only_handle_swaps(r, x0->mask),
     "static: %s's callbacks are its handle swaps only: a revoke on each old "
     "handle, an assign of the same partitions on each new one",
     r->x->cid);
  static_describe(r, d0, d1);
  static_records(r, l0, l1, d1);
}

/* Without group.instance.id the same means see the rebalances: what the
 * static checks count would not be zero if they happened. */
static void classic_checks(group_run_t *r, const kp_group_log_t *l0,
                           const kp_group_log_t *l1) {
  int n = member_n_ev(r->y) - r->ev_y;
  ok(n > 0, "classic (control): %s got %d rebalance callback(s)", r->y->cid,
     n);
  int32_t g0 = l0->n ? l0->rec[l0->n - 1].generation : -1,
          g1 = l1->n ? l1->rec[l1->n - 1].generation : -1;
  ok(g0 >= 0 && g1 > g0,
     "classic (control): the generation in the group records moved from %d "
     "to %d",
     g0, g1);
}

/* ---- a producer writing every few ms ------------------------------------ */

typedef struct feeder {
  const char *topic;
  rd_kafka_t *rk;
  pthread_t th;
  atomic_bool stop;
} feeder_t;

static void *feeder_main(void *arg) {
  feeder_t *f = arg;
  for (long seq = 0; !atomic_load(&f->stop); seq++) {
    char v[24];
    int n = snprintf(v, sizeof(v), "%ld", seq);
    rd_kafka_producev(f->rk, RD_KAFKA_V_TOPIC(f->topic),
                      RD_KAFKA_V_PARTITION((int32_t)(seq % C_PARTS)),
                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                      RD_KAFKA_V_VALUE(v, (size_t)n), RD_KAFKA_V_END);
    rd_kafka_poll(f->rk, 0);
    dc_tu_sleep_ms(3); /* the rate, not a wait for anything */
  }
  rd_kafka_flush(f->rk, 10000);
  return NULL;
}

static bool feeder_start(feeder_t *f) {
  f->rk = kp_handle(g_kbs, RD_KAFKA_PRODUCER, NULL);
  if (f->rk && !pthread_create(&f->th, NULL, feeder_main, f))
    return true;
  if (f->rk)
    rd_kafka_destroy(f->rk);
  f->rk = NULL;
  return false;
}

static void feeder_stop(feeder_t *f) {
  if (!f->rk)
    return;
  atomic_store(&f->stop, true);
  pthread_join(f->th, NULL);
  rd_kafka_destroy(f->rk);
}

/* ---- the two groups ---------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* "max M, median D (g1 g2 ...)" of n > 0 gaps. */
static void gaps_text(const int64_t *g, int n, char *out, size_t size) {
  int64_t s[NCHANGES];
  memcpy(s, g, (size_t)n * sizeof(*g));
  qsort(s, (size_t)n, sizeof(*s), cmp_i64);
  size_t off = (size_t)snprintf(out, size, "max %lld, median %lld (",
                                (long long)s[n - 1], (long long)s[n / 2]);
  for (int i = 0; i < n && off < size; i++)
    off += (size_t)snprintf(out + off, size - off, "%s%lld", i ? " " : "",
                            (long long)g[i]);
  if (off < size)
    snprintf(out + off, size - off, ")");
}

static void print_pauses(const group_run_t *r) {
  char tx[256], ty[256];
  if (!r->n_done)
    return;
  gaps_text(r->pause_x, r->n_done, tx, sizeof(tx));
  gaps_text(r->pause_y, r->n_done, ty, sizeof(ty));
  printf("# pause %s (%s): longest gap between messages around each "
         "change, in ms: the changed member %s; the other member %s; before "
         "any change %lld and %lld\n",
         r->name,
         r->x->instance ? "group.instance.id: a static rejoin"
                        : "no group.instance.id: a leave and a join",
         tx, ty, (long long)r->base_x, (long long)r->base_y);
}

static void run_group(group_run_t *r, bool is_static) {
  const char *name = r->name;
  kp_group_log_t *l0 = calloc(1, sizeof(*l0)), *l1 = calloc(1, sizeof(*l1));
  kp_desc_t d0, d1;
  feeder_t f = {.topic = r->x->topic};
  if (!ok(l0 && l1 && !kp_create_topic(g_adm, f.topic, C_PARTS) &&
              feeder_start(&f),
          "%s: topic %s (%d partitions), a producer writing every few ms",
          name, f.topic, C_PARTS))
    goto out;
  if (!ok(pair_start(r), "%s: %s and %s (%s) share the topic and consume",
          name, r->x->cid, r->y->cid,
          is_static ? "static members" : "no group.instance.id"))
    goto stop;
  bool got = !kp_describe_group(g_adm, r->x->group, &d0) &&
             !kp_group_log_read(g_kbs, r->x->group, l0);
  ok(got && d0.state == RD_KAFKA_CONSUMER_GROUP_STATE_STABLE && d0.n == 2 &&
         l0->n > 0,
     "%s: DescribeGroups: Stable, %d members; %d group record(s), "
     "generation %d",
     name, d0.n, l0->n, l0->n ? l0->rec[l0->n - 1].generation : -1);
  run_changes(r);
  is_int(r->n_done, NCHANGES,
         "%s: %d changes of session.timeout.ms (every other one with "
         "heartbeat.interval.ms): each rebuilt %s, both consume after it",
         name, NCHANGES, r->x->cid);
  is_int(r->bad_conf, 0,
         "%s: each new handle has the new session.timeout.ms and "
         "heartbeat.interval.ms",
         name);
  if (ok(!kp_describe_group(g_adm, r->x->group, &d1) &&
             !kp_group_log_read(g_kbs, r->x->group, l1),
         "%s: DescribeGroups and the group records after the changes", name)) {
    if (is_static)
      static_checks(r, &d0, &d1, l0, l1);
    else
      classic_checks(r, l0, l1);
  }
stop:
  member_stop(r->x);
  member_stop(r->y);
out:
  feeder_stop(&f);
  free(l0);
  free(l1);
}

static void test_groups(void) {
  static member_t a = {.cid = "kc-static-a", .group = "kc-static-group",
                       .topic = "kc-static", .instance = "kc-static-a"};
  static member_t b = {.cid = "kc-static-b", .group = "kc-static-group",
                       .topic = "kc-static", .instance = "kc-static-b"};
  static member_t c = {.cid = "kc-classic-c", .group = "kc-classic-group",
                       .topic = "kc-classic"};
  static member_t d = {.cid = "kc-classic-d", .group = "kc-classic-group",
                       .topic = "kc-classic"};
  static group_run_t rs = {.name = "static", .x = &a, .y = &b};
  static group_run_t rc = {.name = "classic", .x = &c, .y = &d};
  run_group(&rs, true);
  run_group(&rc, false);
  print_pauses(&rs);
  print_pauses(&rc);
  diag("pause: a classic rebalance waits for every member to rejoin, which "
       "the other member does at its next heartbeat (heartbeat.interval.ms "
       "1000 here)");
}

/* ======================================================================
 * KIP-848
 * ====================================================================== */

/* What the agent spares the application: librdkafka refuses the
 * timeouts from a group.protocol=consumer client. */
static void kip848_refused(const char *group) {
  char e[512] = "";
  rd_kafka_conf_t *c =
      au_app_conf(g_kbs, "kc-848-plain", "group.id", group, "group.protocol",
                  "consumer", "session.timeout.ms", "20000", NULL);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, e, sizeof(e));
  ok(!rk,
     "librdkafka itself refuses session.timeout.ms with "
     "group.protocol=consumer (\"%s\")",
     e);
  if (rk)
    rd_kafka_destroy(rk);
  else
    rd_kafka_conf_destroy(c);
}

/* The latest change event reports both timeouts ignored, and its reason
 * names the broker's and the group's configs to set instead. */
static void kip848_reported(member_t *m, const char *when) {
  static const char *const keys[] = {"session.timeout.ms",
                                     "heartbeat.interval.ms"};
  int good = 0;
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < m->n_entries; i++)
    for (int k = 0; k < 2; k++) {
      char broker[64], group[64];
      const entry_t *e = &m->entries[i];
      snprintf(broker, sizeof(broker), "group.consumer.%s", keys[k]);
      snprintf(group, sizeof(group), " consumer.%s", keys[k]);
      bool named = strstr(e->reason, broker) && strstr(e->reason, group);
      if (!strcmp(e->key, keys[k]) && !strcmp(e->outcome, "ignored") && named)
        good++;
      else if (!strcmp(e->key, keys[k]))
        diag("  %s: %s %s: %s", m->cid, e->key, e->outcome, e->reason);
    }
  if (m->n_entries && !strcmp(when, "at start"))
    diag("%s: %s", m->entries[0].key, m->entries[0].reason);
  ok(good == 2 && m->n_entries == 2,
     "%s %s: session.timeout.ms and heartbeat.interval.ms reported ignored, "
     "naming group.consumer.* (brokers) and consumer.* (group) instead",
     m->cid, when);
  pthread_mutex_unlock(&m->mu);
}

static bool one_consuming(void *arg) {
  int mask;
  return member_consuming(arg, 0, &mask) && mask == C_ALL;
}

static bool event_arrived(void *arg) {
  member_t *m = arg;
  return lock_read(&m->mu, &m->n_events) >= 2;
}

static bool consumed_50(void *arg) { return member_since(arg) >= 50; }

/* A change while it runs: reported, never a rebuild or a rebalance. */
static void kip848_change(member_t *m) {
  char handle[64];
  pthread_mutex_lock(&m->mu);
  snprintf(handle, sizeof(handle), "%s", m->handle);
  int ev0 = m->n_ev;
  pthread_mutex_unlock(&m->mu);
  is_int(kp_alter(g_port, m->cid,
                  "session.timeout.ms=25000,heartbeat.interval.ms=2500"),
         0, "%s: session.timeout.ms=25000, heartbeat.interval.ms=2500 while "
            "it consumes", m->cid);
  if (!ok(kp_wait(event_arrived, m, WAIT_MS), "%s: the change event arrived",
          m->cid))
    return;
  kip848_reported(m, "on a change");
  member_mark(m);
  bool consuming = kp_wait(consumed_50, m, WAIT_MS);
  pthread_mutex_lock(&m->mu);
  ok(consuming && !strcmp(handle, m->handle) && m->rebuilds == 0 &&
         m->n_ev == ev0 && dynconf_generation(m->dc) == 0,
     "%s: 50 more messages on the same handle: %lld rebuild(s), generation "
     "%lld, %d rebalance callback(s) since",
     m->cid, (long long)m->rebuilds, (long long)dynconf_generation(m->dc),
     m->n_ev - ev0);
  pthread_mutex_unlock(&m->mu);
}

/* The names the agent gives are the cluster's: the brokers list
 * group.consumer.*, a group lists consumer.* (a GROUP resource goes out
 * as Kafka's type 32 from librdkafka 2.10 on). */
static void kip848_cluster_configs(const char *group) {
  static const char *const broker[] = {"group.consumer.session.timeout.ms",
                                       "group.consumer.heartbeat.interval.ms",
                                       NULL};
  static const char *const grp[] = {"consumer.session.timeout.ms",
                                    "consumer.heartbeat.interval.ms", NULL};
  is_int(kp_config_has(g_adm, RD_KAFKA_RESOURCE_BROKER, "1", broker), 3,
         "broker 1 has %s and %s", broker[0], broker[1]);
  if (rd_kafka_version() < 0x020a0000) {
    diag("group configs not described: librdkafka %s sends a GROUP "
         "resource with another type byte than Kafka's",
         rd_kafka_version_str());
    return;
  }
  is_int(kp_config_has(g_adm, RD_KAFKA_RESOURCE_GROUP, group, grp), 3,
         "group %s has %s and %s", group, grp[0], grp[1]);
}

static void test_kip848(void) {
  static member_t m = {.cid = "kc-848", .group = "kc-848-group",
                       .topic = "kc-848", .kip848 = true};
  feeder_t f = {.topic = m.topic};
  if (!ok(rd_kafka_version() >= 0x020400ff,
          "librdkafka %s knows group.protocol=consumer (2.4 and later)",
          rd_kafka_version_str()))
    return;
  if (ok(!kp_create_topic(g_adm, m.topic, C_PARTS) && feeder_start(&f),
         "topic %s (%d partitions), a producer writing every few ms", m.topic,
         C_PARTS)) {
    is_int(kp_alter(g_port, m.cid,
                    "session.timeout.ms=20000,heartbeat.interval.ms=2000"),
           0, "%s: session.timeout.ms=20000, heartbeat.interval.ms=2000 set "
              "before it starts", m.cid);
    kip848_refused(m.group);
    if (ok(member_launch(&m) && kp_wait(one_consuming, &m, WAIT_MS),
           "%s: a managed group.protocol=consumer member consumes all %d "
           "partitions",
           m.cid, C_PARTS)) {
      kip848_reported(&m, "at start");
      kip848_change(&m);
    } else {
      member_diag(&m);
    }
    member_stop(&m);
  }
  feeder_stop(&f);
  kip848_cluster_configs(m.group);
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "version")) {
    printf("%#x %s\n", (unsigned)rd_kafka_version(), rd_kafka_version_str());
    return 0;
  }
  const char *mode = argc == 4 ? argv[1] : "";
  if (strcmp(mode, "producers") && strcmp(mode, "groups") &&
      strcmp(mode, "kip848")) {
    fprintf(stderr, "usage: %s version | (producers|groups|kip848) "
                    "KAFKA_BOOTSTRAP DYNCONFD_PORT\n", argv[0]);
    return 2;
  }
  g_kbs = argv[2];
  g_port = atoi(argv[3]);
  diag("librdkafka %s", rd_kafka_version_str());
  g_adm = kp_handle(g_kbs, RD_KAFKA_PRODUCER, NULL);
  if (!ok(g_adm, "a client of the cluster at %s", g_kbs))
    return done_testing();
  if (!strcmp(mode, "producers"))
    test_producers();
  else if (!strcmp(mode, "groups"))
    test_groups();
  else
    test_kip848();
  is_int(atomic_load(&g_warnings), 0, "the agents logged no warning or error");
  rd_kafka_destroy(g_adm);
  return done_testing();
}
