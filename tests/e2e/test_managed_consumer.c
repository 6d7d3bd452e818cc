/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end tests of the managed consumer (dynconf_consumer_*): a real
 * dynconfd as the config server, librdkafka's mock cluster as the data
 * plane, reached through a kproxy (tests/kproxy.h), which records every
 * group request per client id (JoinGroup with its session timeout, member
 * id and group.instance.id; LeaveGroup; ...).
 *
 * A plain producer writes "partition seq" payloads with explicit
 * partitions while the managed consumer reads them and the test changes
 * session.timeout.ms / heartbeat.interval.ms on dynconfd. The
 * application's rebalance_cb (in the conf the agent was given, with the
 * application's conf opaque) records every call with the handle's name
 * (rd_kafka_name() is unique per handle; addresses may be reused).
 *
 * Nothing asserts on timing. The static-membership scenario needs an
 * observation window (did the other member rebalance?); it is one mock
 * session timeout plus margin, and a plain-librdkafka control run with the
 * same window tells what the mock does on its own.
 */
#include "../agentutil.h"
#include "../kproxy.h"

#define WAIT_MS                                                                \
  90000 /* deadline for any condition (mock rebalances are slow) */
#define NPART 4
#define MAXSEQ 20000 /* per partition */
#define TOPIC "mc-topic"
#define GROUP "mc-group"

static int g_port;          /* dynconfd */
static char g_mock_bs[256]; /* the mock broker itself (producers) */
static char g_proxy_bs[64]; /* the proxy in front of it (consumers) */
static rd_kafka_mock_cluster_t *g_mcl;
static kproxy_t g_px;
static pthread_t g_main;

/* ---- the application's rebalance callback -------------------------------- */

enum { RB_ASSIGN = 1, RB_REVOKE = 2, RB_ERROR = 3 };

typedef struct rb_ev {
  int kind;
  char handle[64]; /* rd_kafka_name() of the handle it ran for */
  int nparts;
  int64_t rebuilds; /* dynconf_consumer_rebuilds() when it ran, or -1 */
} rb_ev_t;

/* One group member as the application sees it (the conf opaque). */
typedef struct member {
  const char *cid;
  dynconf_consumer_t *c; /* NULL for plain librdkafka members */
  rb_ev_t ev[256];
  int n_ev;
  int assigned;         /* partitions currently assigned */
  char assigned_on[64]; /* the handle the last assign ran for */
  int wrong_thread, assign_errors;
} member_t;

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
  member_t *m = opaque;
  if (!pthread_equal(pthread_self(), g_main))
    m->wrong_thread++;
  rb_ev_t *e = m->n_ev < 256 ? &m->ev[m->n_ev++] : NULL;
  int kind = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS   ? RB_ASSIGN
             : err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS ? RB_REVOKE
                                                           : RB_ERROR;
  if (e) {
    e->kind = kind;
    snprintf(e->handle, sizeof(e->handle), "%s", rd_kafka_name(rk));
    e->nparts = parts ? parts->cnt : 0;
    e->rebuilds = m->c ? dynconf_consumer_rebuilds(m->c) : -1;
  }
  /* librdkafka requires the application to (un)assign here. */
  rd_kafka_resp_err_t aerr;
  if (kind == RB_ASSIGN) {
    aerr = rd_kafka_assign(rk, parts);
    m->assigned = parts->cnt;
    snprintf(m->assigned_on, sizeof(m->assigned_on), "%s", rd_kafka_name(rk));
  } else {
    aerr = rd_kafka_assign(rk, NULL);
    m->assigned = 0;
    m->assigned_on[0] = '\0';
  }
  if (aerr)
    m->assign_errors++;
  if (getenv("AU_VERBOSE"))
    diag("rebalance %s: %s %d partition(s) on %s", m->cid,
         kind == RB_ASSIGN   ? "assign"
         : kind == RB_REVOKE ? "revoke"
                             : "error",
         parts ? parts->cnt : 0, rd_kafka_name(rk));
}

static int count_ev(const member_t *m, int from, int kind) {
  int n = 0;
  for (int i = from; i < m->n_ev; i++)
    n += m->ev[i].kind == kind;
  return n;
}

/* Assigned on the managed consumer's current handle. */
static bool assigned_now(member_t *m) {
  rd_kafka_t *h = dynconf_consumer_handle(m->c);
  return h && m->assigned > 0 && !strcmp(m->assigned_on, rd_kafka_name(h));
}

/* ---- data ------------------------------------------------------------------
 */

typedef struct seen {
  int *count[NPART];          /* deliveries per seq (owned) */
  int next_first[NPART];      /* next seq a first delivery must have */
  int64_t last_offset[NPART]; /* offset of the latest processed message */
  long delivered, firsts, dups, order_breaks, bad;
} seen_t;

static void seen_init(seen_t *s) {
  memset(s, 0, sizeof(*s));
  for (int p = 0; p < NPART; p++) {
    s->count[p] = calloc(MAXSEQ, sizeof(int));
    s->last_offset[p] = -1;
  }
}

static void seen_free(seen_t *s) {
  for (int p = 0; p < NPART; p++)
    free(s->count[p]);
}

static void seen_add(seen_t *s, const rd_kafka_message_t *m) {
  char buf[32];
  size_t n = m->len < sizeof(buf) - 1 ? m->len : sizeof(buf) - 1;
  memcpy(buf, m->payload, n);
  buf[n] = '\0';
  int p, seq;
  if (sscanf(buf, "%d %d", &p, &seq) != 2 || p != m->partition || p < 0 ||
      p >= NPART || seq < 0 || seq >= MAXSEQ) {
    s->bad++;
    return;
  }
  s->delivered++;
  s->last_offset[p] = m->offset;
  if (s->count[p][seq]++) {
    s->dups++;
    return;
  }
  s->firsts++;
  if (seq != s->next_first[p]) {
    if (s->order_breaks++ < 5)
      diag("partition %d: first delivery of seq %d while %d was next", p, seq,
           s->next_first[p]);
  }
  if (seq >= s->next_first[p])
    s->next_first[p] = seq + 1;
}

/* A plain producer into the mock with explicit partitions. */
typedef struct feeder {
  rd_kafka_t *rk;
  const char *topic;
  int next_seq[NPART];
  int rr;
  int dr_ok, dr_err;
} feeder_t;

static void feeder_dr(rd_kafka_t *rk, const rd_kafka_message_t *m,
                      void *opaque) {
  (void)rk;
  feeder_t *f = opaque;
  if (m->err)
    f->dr_err++;
  else
    f->dr_ok++;
}

static bool feeder_new(feeder_t *f, const char *topic) {
  char e[512];
  memset(f, 0, sizeof(*f));
  f->topic = topic;
  rd_kafka_conf_t *c =
      au_app_conf(g_mock_bs, "mc-feeder", "linger.ms", "5", NULL);
  rd_kafka_conf_set_dr_msg_cb(c, feeder_dr);
  rd_kafka_conf_set_opaque(c, f);
  f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof(e));
  if (!f->rk) {
    diag("feeder: %s", e);
    rd_kafka_conf_destroy(c);
  }
  return f->rk != NULL;
}

static int feeder_produce(feeder_t *f, int n) {
  int done = 0;
  for (int i = 0; i < n; i++) {
    int p = f->rr++ % NPART;
    if (f->next_seq[p] >= MAXSEQ)
      break;
    char val[32];
    int vl = snprintf(val, sizeof(val), "%d %d", p, f->next_seq[p]);
    if (rd_kafka_producev(f->rk, RD_KAFKA_V_TOPIC(f->topic),
                          RD_KAFKA_V_PARTITION(p),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_VALUE(val, (size_t)vl), RD_KAFKA_V_END))
      break;
    f->next_seq[p]++;
    done++;
  }
  rd_kafka_poll(f->rk, 0);
  return done;
}

static int feeder_total(const feeder_t *f) {
  int t = 0;
  for (int p = 0; p < NPART; p++)
    t += f->next_seq[p];
  return t;
}

/* ---- managed consumers ------------------------------------------------------
 */

/* A static member's heartbeat: every second. Its session is 4 s, and
 * librdkafka's default heartbeat (3 s) would leave one second of slack;
 * on a loaded machine one late heartbeat then expires the member in the
 * mock, a rebalance of B that no restart caused. */
static void static_heartbeat(rd_kafka_conf_t *c) {
  char e[256];
  if (rd_kafka_conf_set(c, "heartbeat.interval.ms", "1000", e, sizeof(e)))
    diag("heartbeat.interval.ms: %s", e);
}

static rd_kafka_conf_t *consumer_app_conf(member_t *m, const char *group,
                                          const char *instance) {
  char e[256];
  rd_kafka_conf_t *c =
      au_app_conf(g_proxy_bs, m->cid, "group.id", group, "session.timeout.ms",
                  "45000", "auto.offset.reset", "earliest", NULL);
  if (instance &&
      rd_kafka_conf_set(c, "group.instance.id", instance, e, sizeof(e)))
    diag("group.instance.id: %s", e);
  if (getenv("MC_DEBUG")) /* librdkafka debug contexts, while debugging */
    rd_kafka_conf_set(c, "debug", getenv("MC_DEBUG"), e, sizeof(e));
  rd_kafka_conf_set_rebalance_cb(c, on_rebalance);
  rd_kafka_conf_set_opaque(c, m);
  return c;
}

static rd_kafka_topic_partition_list_t *topic_list(const char *topic) {
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, topic, RD_KAFKA_PARTITION_UA);
  return t;
}

static void conf_str(rd_kafka_t *h, const char *name, char *out, size_t n) {
  if (!h) {
    snprintf(out, n, "(no handle)");
    return;
  }
  au_conf_val(rd_kafka_conf(h), name, out, n);
}

/* ---- scenario 1: rebuilds while consuming -------------------------------- */

typedef struct change {
  const char *spec;
  const char *session, *heartbeat; /* expected afterwards */
} change_t;

/* Session timeouts only grow here, because of the mock (librdkafka 2.0.2,
 * src/rdkafka_mock_cgrp.c): when the old handle leaves, the group waits
 * (old session - 1000) ms for joiners, but a waiting joiner expires after
 * its OWN session timeout since it joined (the session timer does not
 * spare members in the Joining state). A shorter new session timeout
 * therefore expires the rebuilt member before the election, and its
 * JoinGroup never gets an answer. A real broker waits for joiners up to
 * the rebalance timeout (max.poll.interval.ms) without expiring them.
 * dynconfd runs with --session-timeout-min-ms 2000 so the mock's waits
 * (about session - 1000 ms per rebuild) stay short. */
static const change_t changes[] = {
    {"session.timeout.ms=4000", "4000", "1000"},
    {"heartbeat.interval.ms=1500", "4000", "1500"},
    {"session.timeout.ms=5000,heartbeat.interval.ms=800", "5000", "800"},
    {"session.timeout.ms=6000", "6000", "800"},
};
#define NCHANGES ((int)(sizeof(changes) / sizeof(changes[0])))

static member_t g_m1;

static void test_rebuilds(void) {
  const char *cid = "mc-main", *what = "rebuilds";
  member_t *m = &g_m1;
  memset(m, 0, sizeof(*m));
  m->cid = cid;
  rd_kafka_mock_topic_create(g_mcl, TOPIC, NPART, 1);
  is_int(au_alter(g_port, cid,
                  "session.timeout.ms=3000,heartbeat.interval.ms=1000"),
         0, "%s: dynamic session.timeout.ms=3000 heartbeat.interval.ms=1000",
         what);
  au_rec_t rec;
  memset(&rec, 0, sizeof(rec));
  rec.poller = g_main;
  rd_kafka_conf_t *app = consumer_app_conf(m, GROUP, NULL);
  dynconf_t *dc = au_agent_new(RD_KAFKA_CONSUMER, app, g_port, &rec, NULL);
  rd_kafka_conf_destroy(app);
  if (!ok(dc, "%s: agent created", what))
    return;
  char e[512], v[64];
  int mark0 = kproxy_mark(&g_px);
  dynconf_consumer_t *c = dynconf_consumer_new(dc, e, sizeof(e));
  if (!ok(c, "%s: managed consumer created", what)) {
    diag("%s", e);
    dynconf_destroy(dc);
    return;
  }
  m->c = c;
  /* Before the first poll: the handle already has the dynamic values. */
  conf_str(dynconf_consumer_handle(c), "session.timeout.ms", v, sizeof(v));
  is_str(v, "3000",
         "%s: the first handle has session.timeout.ms=3000 "
         "before any poll",
         what);
  conf_str(dynconf_consumer_handle(c), "heartbeat.interval.ms", v, sizeof(v));
  is_str(v, "1000", "%s: ... and heartbeat.interval.ms=1000", what);
  rd_kafka_topic_partition_list_t *t = topic_list(TOPIC);
  is_int(dynconf_consumer_subscribe(c, t), 0, "%s: subscribe", what);
  rd_kafka_topic_partition_list_destroy(t);

  feeder_t f;
  if (!ok(feeder_new(&f, TOPIC), "%s: feeder producer", what)) {
    dynconf_consumer_destroy(c);
    dynconf_destroy(dc);
    return;
  }
  seen_t s;
  seen_init(&s);
  char handles[NCHANGES + 1][64];
  snprintf(handles[0], sizeof(handles[0]), "%s",
           rd_kafka_name(dynconf_consumer_handle(c)));
  int ev_at[NCHANGES + 1]; /* rebalance events before each change */
  int join_mark[NCHANGES + 1];
  join_mark[0] = mark0;
  int64_t rebuild_ms[NCHANGES];
  int step = 0, produced_cap = 8000;
  bool pending = false;
  long since = 0;
  int64_t t_change = 0;
  int64_t deadline = dc_tu_now_ms() + WAIT_MS * 2;
  while (step < NCHANGES && dc_tu_now_ms() < deadline) {
    if (feeder_total(&f) < produced_cap)
      feeder_produce(&f, 2);
    else
      rd_kafka_poll(f.rk, 0);
    rd_kafka_message_t *msg = dynconf_consumer_poll(c, 10);
    if (msg) {
      if (!msg->err) {
        seen_add(&s, msg);
        since++;
      } else if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        diag("%s: consumer error: %s", what, rd_kafka_message_errstr(msg));
      }
      rd_kafka_message_destroy(msg);
    }
    if (!pending && assigned_now(m) && since >= 50) {
      ev_at[step] = m->n_ev;
      join_mark[step + 1] = kproxy_mark(&g_px);
      is_int(au_alter(g_port, cid, changes[step].spec), 0, "%s: change %d: %s",
             what, step + 1, changes[step].spec);
      dynconf_refresh_now(dc);
      pending = true;
      t_change = dc_tu_now_ms();
    }
    if (pending && dynconf_consumer_rebuilds(c) > step) {
      char sw[128];
      snprintf(sw, sizeof(sw), "%s: change %d (%s)", what, step + 1,
               changes[step].spec);
      is_int(dynconf_consumer_rebuilds(c), step + 1, "%s: one rebuild", sw);
      rd_kafka_t *h = dynconf_consumer_handle(c);
      ok(h != NULL, "%s: a handle", sw);
      snprintf(handles[step + 1], sizeof(handles[0]), "%s",
               h ? rd_kafka_name(h) : "");
      ok(strcmp(handles[step + 1], handles[step]), "%s: new handle %s (was %s)",
         sw, handles[step + 1], handles[step]);
      conf_str(h, "session.timeout.ms", v, sizeof(v));
      is_str(v, changes[step].session, "%s: its session.timeout.ms", sw);
      conf_str(h, "heartbeat.interval.ms", v, sizeof(v));
      is_str(v, changes[step].heartbeat, "%s: its heartbeat.interval.ms", sw);
      pending = false;
      since = 0;
      step++;
    }
    if (!pending && step > 0 && assigned_now(m) && t_change) {
      rebuild_ms[step - 1] = dc_tu_now_ms() - t_change; /* change to assigned */
      t_change = 0;
    }
  }
  is_int(step, NCHANGES, "%s: all %d changes applied", what, NCHANGES);
  /* Stop producing; read everything. */
  int total = feeder_total(&f);
  rd_kafka_flush(f.rk, 10000);
  int64_t d2 = dc_tu_now_ms() + WAIT_MS;
  while (s.firsts < total && dc_tu_now_ms() < d2) {
    if (t_change && assigned_now(m)) {
      rebuild_ms[NCHANGES - 1] = dc_tu_now_ms() - t_change;
      t_change = 0;
    }
    rd_kafka_message_t *msg = dynconf_consumer_poll(c, 50);
    if (msg) {
      if (!msg->err)
        seen_add(&s, msg);
      rd_kafka_message_destroy(msg);
    }
  }
  if (!t_change && step == NCHANGES)
    for (int i = 0; i < NCHANGES; i++)
      diag("%s: change %d: %lld ms from alter to assigned again", what, i + 1,
           (long long)rebuild_ms[i]);
  is_int(f.dr_err, 0, "%s: the feeder delivered everything (%d)", what,
         f.dr_ok);
  is_int(f.dr_ok, total, "%s: %d messages produced", what, total);
  is_int(s.bad, 0, "%s: every payload is ours", what);
  int lost = 0;
  for (int p = 0; p < NPART; p++)
    for (int q = 0; q < f.next_seq[p]; q++)
      lost += s.count[p][q] == 0;
  is_int(lost, 0,
         "%s: every message consumed at least once (%ld "
         "deliveries, %d messages)",
         what, s.delivered, total);
  is_int(s.order_breaks, 0, "%s: per-partition order of first deliveries",
         what);
  diag("%s: %ld duplicate deliveries over %d rebuilds", what, s.dups, NCHANGES);
  /* Processed offsets are committed (synchronously) before each close, so
   * a rebuild replays nothing unless that commit failed, which the agent
   * logs as a warning; then at-least-once allows replays. */
  if (au_n_warnings == 0)
    is_int(s.dups, 0,
           "%s: no duplicates: every rebuild resumed after the "
           "last processed message",
           what);
  else
    ok(s.dups < s.delivered,
       "%s: duplicates bounded (%ld; %d agent "
       "warnings)",
       what, s.dups, au_n_warnings);
  is_int(dynconf_consumer_rebuilds(c), NCHANGES,
         "%s: rebuilds = %d effective changes", what, NCHANGES);
  is_int(rec.n_accepted, NCHANGES + 1,
         "%s: %d accepted change events (first fetch + changes)", what,
         NCHANGES + 1);
  is_int(rec.n_wrong_thread, 0, "%s: change callbacks on the polling thread",
         what);

  /* The wire: each handle's first JoinGroup carries its session timeout. */
  kp_req_t j;
  memset(&j, 0, sizeof(j));
  bool seen = kproxy_first_join(&g_px, cid, mark0, &j);
  ok(seen && j.session_timeout_ms == 3000,
     "%s: the very first JoinGroup carries session_timeout_ms 3000 (%d)", what,
     j.session_timeout_ms);
  for (int i = 0; i < step; i++) {
    memset(&j, 0, sizeof(j));
    seen = kproxy_first_join(&g_px, cid, join_mark[i + 1], &j);
    ok(seen && j.session_timeout_ms == atoi(changes[i].session),
       "%s: after change %d the JoinGroup carries session_timeout_ms %s (%d)",
       what, i + 1, changes[i].session, j.session_timeout_ms);
  }

  /* The application's rebalance_cb around each rebuild: a revoke on the
   * old handle, then an assign on the new one, on the polling thread. */
  ok(count_ev(m, 0, RB_ASSIGN) >= NCHANGES + 1, "%s: %d assigns seen", what,
     count_ev(m, 0, RB_ASSIGN));
  for (int i = 0; i < step; i++) {
    int revoke_at = -1, assign_at = -1;
    for (int k = ev_at[i]; k < m->n_ev; k++) {
      if (revoke_at < 0 && m->ev[k].kind == RB_REVOKE &&
          !strcmp(m->ev[k].handle, handles[i]) && m->ev[k].rebuilds == i)
        revoke_at = k;
      if (assign_at < 0 && m->ev[k].kind == RB_ASSIGN &&
          !strcmp(m->ev[k].handle, handles[i + 1]))
        assign_at = k;
    }
    ok(revoke_at >= 0,
       "%s: rebuild %d: rebalance_cb revoked on the old "
       "handle %s during the rebuild",
       what, i + 1, handles[i]);
    ok(assign_at > revoke_at,
       "%s: rebuild %d: then assigned on the new "
       "handle %s",
       what, i + 1, handles[i + 1]);
  }
  is_int(m->wrong_thread, 0, "%s: rebalance_cb always on the polling thread",
         what);
  is_int(m->assign_errors, 0, "%s: rd_kafka_assign never failed", what);

  /* Close: commits what was processed; a fresh member resumes after it. */
  int64_t last[NPART];
  memcpy(last, s.last_offset, sizeof(last));
  int ev_close = m->n_ev;
  is_int(dynconf_consumer_close(c), 0, "%s: dynconf_consumer_close", what);
  ok(dynconf_consumer_handle(c) == NULL, "%s: no handle after close", what);
  ok(count_ev(m, ev_close, RB_REVOKE) >= 1,
     "%s: close revoked via "
     "rebalance_cb",
     what);
  ok(dynconf_consumer_poll(c, 0) == NULL,
     "%s: poll after close returns "
     "nothing",
     what);
  dynconf_consumer_destroy(c);
  dynconf_destroy(dc);
  m->c = NULL;

  rd_kafka_conf_t *fc = au_app_conf(g_proxy_bs, "mc-fresh", "group.id", GROUP,
                                    "auto.offset.reset", "earliest",
                                    "enable.auto.commit", "false", NULL);
  rd_kafka_t *fresh = rd_kafka_new(RD_KAFKA_CONSUMER, fc, e, sizeof(e));
  if (!ok(fresh, "%s: a fresh plain consumer in the same group", what)) {
    rd_kafka_conf_destroy(fc);
  } else {
    rd_kafka_poll_set_consumer(fresh);
    rd_kafka_topic_partition_list_t *parts =
        rd_kafka_topic_partition_list_new(NPART);
    for (int p = 0; p < NPART; p++)
      rd_kafka_topic_partition_list_add(parts, TOPIC, p);
    is_int(rd_kafka_committed(fresh, parts, 30000), 0, "%s: committed()", what);
    int right = 0;
    for (int p = 0; p < NPART; p++) {
      if (parts->elems[p].offset == last[p] + 1)
        right++;
      else
        diag("%s: partition %d committed %lld, last processed %lld", what, p,
             (long long)parts->elems[p].offset, (long long)last[p]);
    }
    is_int(right, NPART,
           "%s: committed offsets are one past the last "
           "processed message in every partition",
           what);
    rd_kafka_topic_partition_list_destroy(parts);
    /* One more message per partition: the fresh member gets exactly them. */
    int before[NPART];
    memcpy(before, f.next_seq, sizeof(before));
    feeder_produce(&f, NPART);
    rd_kafka_flush(f.rk, 10000);
    t = topic_list(TOPIC);
    rd_kafka_subscribe(fresh, t);
    rd_kafka_topic_partition_list_destroy(t);
    int got = 0, resumed_right = 0;
    int64_t d3 = dc_tu_now_ms() + WAIT_MS;
    while (got < NPART && dc_tu_now_ms() < d3) {
      rd_kafka_message_t *msg = rd_kafka_consumer_poll(fresh, 100);
      if (!msg)
        continue;
      if (!msg->err) {
        int p, seq;
        got++;
        char buf[32];
        size_t n = msg->len < sizeof(buf) - 1 ? msg->len : sizeof(buf) - 1;
        memcpy(buf, msg->payload, n);
        buf[n] = '\0';
        if (sscanf(buf, "%d %d", &p, &seq) == 2 && p == msg->partition &&
            seq == before[p] && msg->offset == last[p] + 1)
          resumed_right++;
        else
          diag("%s: fresh member got partition %d offset %lld \"%s\"", what,
               (int)msg->partition, (long long)msg->offset, buf);
      }
      rd_kafka_message_destroy(msg);
    }
    is_int(resumed_right, NPART,
           "%s: the fresh member resumed right after the last processed "
           "message (got %d)",
           what, got);
    rd_kafka_consumer_close(fresh);
    rd_kafka_destroy(fresh);
  }
  rd_kafka_flush(f.rk, 10000);
  rd_kafka_destroy(f.rk);
  seen_free(&s);
}

/* ---- scenario 2: static membership --------------------------------------- */

static member_t g_sa, g_sb, g_ca, g_cb;

/* Polls whatever members exist (managed or plain) once. */
static void poll_members(member_t *a, rd_kafka_t *pa, member_t *b,
                         rd_kafka_t *pb) {
  rd_kafka_message_t *msg;
  if (a->c)
    msg = dynconf_consumer_poll(a->c, 10);
  else
    msg = pa ? rd_kafka_consumer_poll(pa, 10) : NULL;
  if (msg)
    rd_kafka_message_destroy(msg);
  if (b->c)
    msg = dynconf_consumer_poll(b->c, 10);
  else
    msg = pb ? rd_kafka_consumer_poll(pb, 10) : NULL;
  if (msg)
    rd_kafka_message_destroy(msg);
}

/* Both members assigned two partitions each: one settled generation. */
static bool settled(member_t *a, member_t *b) {
  return a->assigned == NPART / 2 && b->assigned == NPART / 2;
}

/* Polls both for window_ms (an observation window, not an assertion). */
static void observe(member_t *a, rd_kafka_t *pa, member_t *b, rd_kafka_t *pb,
                    int window_ms) {
  int64_t end = dc_tu_now_ms() + window_ms;
  while (dc_tu_now_ms() < end)
    poll_members(a, pa, b, pb);
}

static bool wait_settled(member_t *a, rd_kafka_t *pa, member_t *b,
                         rd_kafka_t *pb) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (!settled(a, b) && dc_tu_now_ms() < deadline)
    poll_members(a, pa, b, pb);
  return settled(a, b);
}

/* What happened to B in one static-membership run. */
typedef struct static_result {
  int b_revokes, b_assigns, b_joins;
  int a_leaves, a_joins;
  kp_req_t a_join;
  bool a_join_seen;
} static_result_t;

static void static_collect(static_result_t *r, member_t *a, member_t *b,
                           int ev_b, int mark) {
  r->b_revokes = count_ev(b, ev_b, RB_REVOKE);
  r->b_assigns = count_ev(b, ev_b, RB_ASSIGN);
  r->b_joins = kproxy_requests(&g_px, b->cid, KP_API_JOIN_GROUP, mark);
  r->a_leaves = kproxy_requests(&g_px, a->cid, KP_API_LEAVE_GROUP, mark);
  r->a_joins = kproxy_requests(&g_px, a->cid, KP_API_JOIN_GROUP, mark);
  r->a_join_seen = kproxy_first_join(&g_px, a->cid, mark, &r->a_join);
}

/* Control: the same restart done by hand with plain librdkafka consumers,
 * to tell what the mock cluster does with a static member's restart. */
static void static_control(static_result_t *r) {
  const char *group = "mc-ctl-group", *topic = "mc-ctl-topic";
  rd_kafka_mock_topic_create(g_mcl, topic, NPART, 1);
  member_t *a = &g_ca, *b = &g_cb;
  memset(a, 0, sizeof(*a));
  memset(b, 0, sizeof(*b));
  a->cid = "mcc-a";
  b->cid = "mcc-b";
  char e[512];
  rd_kafka_t *ra = NULL, *rb = NULL;
  rd_kafka_conf_t *ca = consumer_app_conf(a, group, "ctl-inst-a");
  static_heartbeat(ca);
  rd_kafka_conf_set(ca, "session.timeout.ms", "4000", e, sizeof(e));
  rd_kafka_conf_t *ca2 = rd_kafka_conf_dup(ca);
  rd_kafka_conf_set(ca2, "session.timeout.ms", "5000", e, sizeof(e));
  rd_kafka_conf_t *cb = consumer_app_conf(b, group, "ctl-inst-b");
  static_heartbeat(cb);
  rd_kafka_conf_set(cb, "session.timeout.ms", "4000", e, sizeof(e));
  ra = rd_kafka_new(RD_KAFKA_CONSUMER, ca, e, sizeof(e));
  rb = rd_kafka_new(RD_KAFKA_CONSUMER, cb, e, sizeof(e));
  if (!ok(ra && rb, "control: two plain static members")) {
    if (!ra)
      rd_kafka_conf_destroy(ca);
    if (!rb)
      rd_kafka_conf_destroy(cb);
    rd_kafka_conf_destroy(ca2);
    if (ra)
      rd_kafka_destroy(ra);
    if (rb)
      rd_kafka_destroy(rb);
    return;
  }
  rd_kafka_poll_set_consumer(ra);
  rd_kafka_poll_set_consumer(rb);
  rd_kafka_topic_partition_list_t *t = topic_list(topic);
  rd_kafka_subscribe(ra, t);
  rd_kafka_subscribe(rb, t);
  ok(wait_settled(a, ra, b, rb), "control: both members assigned");
  int ev_b = b->n_ev, mark = kproxy_mark(&g_px);
  /* The restart a managed rebuild does: close (no LeaveGroup for a static
   * member), new handle with the same group.instance.id, subscribe. */
  rd_kafka_consumer_close(ra);
  rd_kafka_destroy(ra);
  ra = rd_kafka_new(RD_KAFKA_CONSUMER, ca2, e, sizeof(e));
  if (ok(ra, "control: member A restarted")) {
    rd_kafka_poll_set_consumer(ra);
    rd_kafka_subscribe(ra, t);
  } else {
    rd_kafka_conf_destroy(ca2);
  }
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (!(a->assigned > 0) && dc_tu_now_ms() < deadline)
    poll_members(a, ra, b, rb);
  ok(a->assigned > 0, "control: restarted A assigned again");
  observe(a, ra, b, rb, 8000);
  wait_settled(a, ra, b, rb);
  static_collect(r, a, b, ev_b, mark);
  rd_kafka_topic_partition_list_destroy(t);
  if (ra) {
    rd_kafka_consumer_close(ra);
    rd_kafka_destroy(ra);
  }
  rd_kafka_consumer_close(rb);
  rd_kafka_destroy(rb);
}

static void test_static_membership(void) {
  const char *what = "static", *group = "mc-static-group",
             *topic = "mc-static-topic";
  rd_kafka_mock_topic_create(g_mcl, topic, NPART, 1);
  member_t *a = &g_sa, *b = &g_sb;
  memset(a, 0, sizeof(*a));
  memset(b, 0, sizeof(*b));
  a->cid = "mcs-a";
  b->cid = "mcs-b";
  is_int(au_alter(g_port, a->cid, "session.timeout.ms=4000"), 0,
         "%s: %s session.timeout.ms=4000", what, a->cid);
  is_int(au_alter(g_port, b->cid, "session.timeout.ms=4000"), 0,
         "%s: %s session.timeout.ms=4000", what, b->cid);
  au_rec_t ra, rb;
  memset(&ra, 0, sizeof(ra));
  memset(&rb, 0, sizeof(rb));
  ra.poller = rb.poller = g_main;
  rd_kafka_conf_t *appa = consumer_app_conf(a, group, "inst-a");
  rd_kafka_conf_t *appb = consumer_app_conf(b, group, "inst-b");
  static_heartbeat(appa);
  static_heartbeat(appb);
  dynconf_t *dca = au_agent_new(RD_KAFKA_CONSUMER, appa, g_port, &ra, NULL);
  dynconf_t *dcb = au_agent_new(RD_KAFKA_CONSUMER, appb, g_port, &rb, NULL);
  rd_kafka_conf_destroy(appa);
  rd_kafka_conf_destroy(appb);
  char e[512];
  a->c = dca ? dynconf_consumer_new(dca, e, sizeof(e)) : NULL;
  b->c = dcb ? dynconf_consumer_new(dcb, e, sizeof(e)) : NULL;
  if (!ok(a->c && b->c, "%s: two managed static members", what)) {
    dynconf_consumer_destroy(a->c);
    dynconf_consumer_destroy(b->c);
    if (dca)
      dynconf_destroy(dca);
    if (dcb)
      dynconf_destroy(dcb);
    return;
  }
  rd_kafka_topic_partition_list_t *t = topic_list(topic);
  dynconf_consumer_subscribe(a->c, t);
  dynconf_consumer_subscribe(b->c, t);
  rd_kafka_topic_partition_list_destroy(t);
  ok(wait_settled(a, NULL, b, NULL),
     "%s: both members assigned two "
     "partitions",
     what);
  int ev_b = b->n_ev, mark = kproxy_mark(&g_px);
  char old_a[64];
  snprintf(old_a, sizeof(old_a), "%s",
           rd_kafka_name(dynconf_consumer_handle(a->c)));
  is_int(au_alter(g_port, a->cid, "session.timeout.ms=5000"), 0,
         "%s: change only %s: session.timeout.ms=5000", what, a->cid);
  dynconf_refresh_now(dca);
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (!(dynconf_consumer_rebuilds(a->c) == 1 && assigned_now(a)) &&
         dc_tu_now_ms() < deadline)
    poll_members(a, NULL, b, NULL);
  is_int(dynconf_consumer_rebuilds(a->c), 1, "%s: A rebuilt once", what);
  is_int(dynconf_consumer_rebuilds(b->c), 0, "%s: B not rebuilt", what);
  ok(assigned_now(a), "%s: A assigned again on its new handle", what);
  ok(strcmp(old_a, rd_kafka_name(dynconf_consumer_handle(a->c))),
     "%s: A has a new handle", what);
  /* The mock keeps A's old member until its session times out, so watch
   * for longer than that. */
  observe(a, NULL, b, NULL, 8000);
  wait_settled(a, NULL, b, NULL);
  static_result_t r;
  memset(&r, 0, sizeof(r));
  static_collect(&r, a, b, ev_b, mark);

  /* What the wrapper must do for static membership, on the wire. */
  is_int(r.a_leaves, 0, "%s: A's rebuild sent no LeaveGroup (static member)",
         what);
  if (ok(r.a_join_seen, "%s: A rejoined", what)) {
    ok(r.a_join.version >= 5, "%s: JoinGroup v%d carries group.instance.id",
       what, r.a_join.version);
    ok(r.a_join.has_instance_id && !strcmp(r.a_join.instance_id, "inst-a"),
       "%s: the rebuilt A's JoinGroup has group.instance.id inst-a (\"%s\")",
       what, r.a_join.instance_id);
    is_int(r.a_join.session_timeout_ms, 5000,
           "%s: ... and the new session_timeout_ms", what);
  }
  is_int(a->wrong_thread + b->wrong_thread, 0,
         "%s: rebalance_cb on the polling thread", what);
  diag("%s: after A's rebuild, B saw %d revoke(s), %d assign(s) and sent %d "
       "JoinGroup(s); A sent %d JoinGroup(s), %d LeaveGroup(s)",
       what, r.b_revokes, r.b_assigns, r.b_joins, r.a_joins, r.a_leaves);

  static_result_t ctl;
  memset(&ctl, 0, sizeof(ctl));
  static_control(&ctl);
  diag("control (plain librdkafka static restart): B saw %d revoke(s), %d "
       "assign(s), sent %d JoinGroup(s); A sent %d LeaveGroup(s)",
       ctl.b_revokes, ctl.b_assigns, ctl.b_joins, ctl.a_leaves);
  is_int(ctl.a_leaves, 0,
         "control: a plain static member's close sends no "
         "LeaveGroup either");
  /* The issue asks for no rebalance of the other members. librdkafka
   * 2.0.2's mock cluster cannot show that: its JoinGroup handler
   * (src/rdkafka_mock_handlers.c) reads GroupInstanceId and drops it, and
   * rd_kafka_mock_cgrp_member_add() (src/rdkafka_mock_cgrp.c) finds
   * members by MemberId only, so a static member rejoining with an empty
   * member id is a NEW member ("member join" rebalance), and its old
   * member stays until the session timer removes it ("member timeout",
   * another rebalance). A real broker maps group.instance.id to the
   * existing member and rebalances nobody. So: when B sees a rebalance
   * here, the plain-librdkafka control must see one too (the mock's
   * doing); the managed rebuild must never be worse than a plain static
   * restart, and the wrapper's own part is checked on the wire above.
   * The mock makes at most two rebalances of a static restart (the new
   * member's join, the old member's timeout); whether the two fall into
   * one depends on timing, so B's rebalances are held to that bound
   * rather than to the control's count (its JoinGroups vary more: a join
   * answered REBALANCE_IN_PROGRESS is sent again). */
  if (r.b_revokes == 0 && r.b_assigns == 0) {
    diag("%s: the other member saw no rebalance", what);
  } else {
    ok(ctl.b_revokes + ctl.b_assigns > 0,
       "%s: B's rebalance comes from the mock: a plain static restart "
       "makes B rebalance on it too",
       what);
    ok(r.b_revokes <= 2 && r.b_assigns <= 2,
       "%s: B rebalanced no more than the mock does for any static restart "
       "(%d revoke(s), %d assign(s); at most 2 each)",
       what, r.b_revokes, r.b_assigns);
  }
  dynconf_consumer_close(a->c);
  dynconf_consumer_close(b->c);
  dynconf_consumer_destroy(a->c);
  dynconf_consumer_destroy(b->c);
  dynconf_destroy(dca);
  dynconf_destroy(dcb);
}

/* dynconf_consumer_close() returns its commit's error: the coordinator
 * refuses the commit of what was consumed (GROUP_AUTHORIZATION_FAILED
 * injected into the mock's OffsetCommit), and close says so while still
 * closing the handle. */
static void test_close_commit_error(void) {
  const char *what = "close", *topic = "mc-close-topic";
  member_t *m = &g_m1;
  memset(m, 0, sizeof(*m));
  m->cid = "mc-close";
  rd_kafka_mock_topic_create(g_mcl, topic, NPART, 1);
  au_rec_t rec;
  memset(&rec, 0, sizeof(rec));
  rec.poller = g_main;
  rd_kafka_conf_t *app = consumer_app_conf(m, "mc-close-group", NULL);
  dynconf_t *dc = au_agent_new(RD_KAFKA_CONSUMER, app, g_port, &rec, NULL);
  rd_kafka_conf_destroy(app);
  char e[512];
  dynconf_consumer_t *c = dc ? dynconf_consumer_new(dc, e, sizeof(e)) : NULL;
  feeder_t f;
  if (!ok(c && feeder_new(&f, topic), "%s: consumer and feeder", what)) {
    dynconf_consumer_destroy(c);
    dynconf_destroy(dc);
    return;
  }
  m->c = c;
  rd_kafka_topic_partition_list_t *t = topic_list(topic);
  dynconf_consumer_subscribe(c, t);
  rd_kafka_topic_partition_list_destroy(t);
  feeder_produce(&f, 4 * NPART);
  rd_kafka_flush(f.rk, 10000);
  int got = 0;
  for (int i = 0; i < 300 && got == 0; i++) {
    rd_kafka_message_t *msg = dynconf_consumer_poll(c, 100);
    if (msg) {
      got += !msg->err;
      rd_kafka_message_destroy(msg);
    }
  }
  ok(got > 0, "%s: consumed a message to commit", what);
  rd_kafka_mock_push_request_errors(
      g_mcl, 8 /* OffsetCommit */, 4,
      RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
      RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
      RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
      RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
  is_int(dynconf_consumer_close(c), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
         "%s: dynconf_consumer_close returns the refused commit's error",
         what);
  ok(dynconf_consumer_handle(c) == NULL, "%s: and closed the handle anyway",
     what);
  rd_kafka_mock_clear_request_errors(g_mcl, 8);
  dynconf_consumer_destroy(c);
  dynconf_destroy(dc);
  rd_kafka_destroy(f.rk);
}

int main(void) {
  g_main = pthread_self();
  char dir[256], errstr[512];
  dc_tu_daemon_t d;
  static const char *const extra[] = {"--session-timeout-min-ms", "2000", NULL};
  if (!ok(!dc_tu_daemon_start_tmp(&d, dir, sizeof(dir), extra, errstr,
                                  sizeof(errstr)),
          "dynconfd started")) {
    diag("%s", errstr);
    return done_testing();
  }
  g_port = d.port;
  rd_kafka_t *mrk = NULL;
  g_mcl = au_mock_new(1, &mrk, g_mock_bs, sizeof(g_mock_bs));
  const char *colon = g_mcl ? strrchr(g_mock_bs, ':') : NULL;
  if (!ok(colon &&
              !kproxy_start(&g_px, atoi(colon + 1), errstr, sizeof(errstr)),
          "mock cluster and the proxy in front of it")) {
    diag("%s", errstr);
    if (g_mcl) {
      rd_kafka_mock_cluster_destroy(g_mcl);
      rd_kafka_destroy(mrk);
    }
    dc_tu_daemon_stop(&d);
    dc_tu_rmrf(dir);
    return done_testing();
  }
  snprintf(g_proxy_bs, sizeof(g_proxy_bs), "127.0.0.1:%d", g_px.port);
  const char *only = getenv("MC_ONLY"); /* one scenario while debugging */
  if (!only || !strcmp(only, "rebuilds"))
    test_rebuilds();
  if (!only || !strcmp(only, "static"))
    test_static_membership();
  if (!only || !strcmp(only, "close"))
    test_close_commit_error();
  kproxy_stop(&g_px); /* joins its thread: its counters are ours now */
  is_int(g_px.n_rewrite_errors, 0,
         "the proxy decoded every response it "
         "rewrote");
  rd_kafka_mock_cluster_destroy(g_mcl);
  rd_kafka_destroy(mrk);
  ok(dc_tu_daemon_alive(&d), "dynconfd still running");
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd stops cleanly");
  if (tap_failed)
    dc_tu_daemon_log_tail(&d, 30);
  dc_tu_rmrf(dir);
  return done_testing();
}
