/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end tests of the managed producer (dynconf_producer_*): a real
 * dynconfd as the config server, librdkafka's mock cluster as the data
 * plane, configs changed with IncrementalAlterConfigs while messages flow.
 *
 * Every message carries a unique id (msg_opaque = id + 1) and a payload
 * "id stream seq", where a stream is one key produced by one thread, so a
 * stream always lands in one partition and its seq must appear there in
 * order; every acknowledged id must be there exactly once (acks=0 is
 * special, see verify_log). The delivery-report callback (in the application's
 * conf, with the application's conf opaque) counts reports per id. After
 * each scenario the topic is read back from the mock with a plain consumer.
 *
 * Nothing asserts on timing: every wait is "until a condition holds or a
 * generous deadline passes". Switch times are reported as diagnostics.
 */
#include "../agentutil.h"

#include <stdatomic.h>

#define WAIT_MS 60000 /* deadline for any condition */
#define NPART 4
#define NKEYS 8      /* keys (streams) per producing thread */
#define MAXMSG 60000 /* ids over the whole run */
#define MAXSTREAM 64

static int g_port;     /* dynconfd */
static char g_bs[256]; /* mock cluster bootstraps */
static rd_kafka_mock_cluster_t *g_mcl;
static pthread_t g_main; /* the polling thread */
static int g_app_opaque; /* its address is the app's conf opaque */

/* ---- per-message bookkeeping --------------------------------------------- */

typedef struct msgrec {
  int stream, seq; /* written by the producing thread before produce */
  bool enqueued;   /* produce returned NO_ERROR */
  int dr;          /* delivery reports seen (polling thread) */
  rd_kafka_resp_err_t err;
  int32_t partition;
  int64_t offset;
  rd_kafka_t *rk; /* the handle that reported it */
  bool acks0;     /* ... which had acks=0: no offsets come back */
} msgrec_t;

static msgrec_t g_msg[MAXMSG];
static atomic_int g_next_id;
static int g_dr_bad_opaque, g_dr_wrong_thread, g_dr_wrong_app_opaque;

/* Follow-ups: while active, the report of each message of `stream` with an
 * id >= from_id produces one message of stream 44 from inside the delivery
 * report callback (an application retrying from its callback). */
static struct {
  bool active;
  dynconf_producer_t *p;
  const char *topic;
  int stream, from_id, seq, failed;
  int ids[256];
  int n;
} g_follow;

static rd_kafka_resp_err_t produce_one(dynconf_producer_t *p, const char *topic,
                                       int stream, int seq, int *idp);

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  if (!pthread_equal(pthread_self(), g_main))
    g_dr_wrong_thread++;
  if (opaque != &g_app_opaque)
    g_dr_wrong_app_opaque++;
  uintptr_t o = (uintptr_t)m->_private;
  if (o == 0 || o > MAXMSG) {
    g_dr_bad_opaque++;
    return;
  }
  /* librdkafka reports batch-relative offsets under acks=0, so offsets
   * are only compared for the other handles. */
  char v[16] = "";
  size_t sz = sizeof(v);
  const rd_kafka_topic_conf_t *tc = rd_kafka_conf_get_default_topic_conf(
      (rd_kafka_conf_t *)rd_kafka_conf(rk));
  bool acks0 =
      tc && rd_kafka_topic_conf_get(tc, "acks", v, &sz) == RD_KAFKA_CONF_OK &&
      !strcmp(v, "0");
  msgrec_t *r = &g_msg[o - 1];
  r->acks0 = acks0;
  r->dr++;
  if (g_follow.active && r->stream == g_follow.stream &&
      (int)(o - 1) >= g_follow.from_id && g_follow.n < 256) {
    int fid;
    if (produce_one(g_follow.p, g_follow.topic, 44, g_follow.seq, &fid))
      g_follow.failed++;
    else
      g_follow.ids[g_follow.n++] = fid, g_follow.seq++;
  }
  r->err = m->err;
  r->partition = m->partition;
  r->offset = m->offset;
  r->rk = rk;
}

/* Produces the next message of `stream` (seq) with a fresh id; *idp gets
 * the id. Any thread. */
static rd_kafka_resp_err_t produce_one(dynconf_producer_t *p, const char *topic,
                                       int stream, int seq, int *idp) {
  int id = atomic_fetch_add(&g_next_id, 1);
  if (idp)
    *idp = id;
  if (id >= MAXMSG)
    return RD_KAFKA_RESP_ERR__QUEUE_FULL;
  msgrec_t *r = &g_msg[id];
  r->stream = stream;
  r->seq = seq;
  char key[16], val[64];
  int kl = snprintf(key, sizeof(key), "key-%d", stream);
  int vl = snprintf(val, sizeof(val), "%d %d %d", id, stream, seq);
  rd_kafka_resp_err_t err =
      dynconf_producer_produce(p, topic, RD_KAFKA_PARTITION_UA, val, (size_t)vl,
                               key, (size_t)kl, (void *)(uintptr_t)(id + 1));
  r->enqueued = err == RD_KAFKA_RESP_ERR_NO_ERROR;
  return err;
}

/* The delivery-report tally of ids [lo, hi). */
typedef struct tally {
  int enqueued, not_enqueued, missing, double_dr, dr_for_unsent, errors;
  rd_kafka_resp_err_t first_err;
} tally_t;

static tally_t tally(int lo, int hi) {
  tally_t t = {0};
  for (int id = lo; id < hi; id++) {
    msgrec_t *r = &g_msg[id];
    if (!r->enqueued) {
      t.not_enqueued++;
      if (r->dr)
        t.dr_for_unsent++;
      continue;
    }
    t.enqueued++;
    if (r->dr == 0)
      t.missing++;
    if (r->dr > 1)
      t.double_dr++;
    if (r->dr && r->err) {
      if (!t.errors)
        t.first_err = r->err;
      t.errors++;
    }
  }
  return t;
}

/* Checks that ids [lo, hi) got exactly one report each (none for those not
 * enqueued) and, unless errors_ok, no error. */
static void check_drs(int lo, int hi, bool errors_ok, const char *what) {
  tally_t t = tally(lo, hi);
  ok(t.enqueued > 0, "%s: %d messages enqueued", what, t.enqueued);
  is_int(t.missing, 0, "%s: no message without a delivery report", what);
  is_int(t.double_dr, 0, "%s: no message with two delivery reports", what);
  is_int(t.dr_for_unsent, 0,
         "%s: no report for a produce call that failed (%d failed)", what,
         t.not_enqueued);
  if (!errors_ok && !ok(t.errors == 0, "%s: no delivery error", what))
    diag("  %d errors, first: %s", t.errors, rd_kafka_err2str(t.first_err));
}

/* ---- reading the topic back from the mock ----------------------------- */

static int g_seen[MAXMSG];

/* Reads every partition of topic from the start up to its high watermark
 * and checks it against ids [lo, hi): each enqueued id exactly once, none
 * of the others, stream/seq as produced, the reported partition/offset,
 * and (check_order) each stream's seqs strictly increasing. */
static void verify_log(const char *topic, int lo, int hi, bool check_order,
                       const char *what) {
  char e[512], grp[128];
  snprintf(grp, sizeof(grp), "verify-%s", topic);
  rd_kafka_conf_t *c =
      au_app_conf(g_bs, "verifier", "group.id", grp, "enable.auto.commit",
                  "false", "auto.offset.reset", "earliest",
                  "enable.partition.eof", "true", NULL);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, e, sizeof(e));
  if (!ok(rk, "%s: verifying consumer", what)) {
    diag("%s", e);
    rd_kafka_conf_destroy(c);
    return;
  }
  rd_kafka_poll_set_consumer(rk);
  int64_t high[NPART];
  rd_kafka_topic_partition_list_t *parts =
      rd_kafka_topic_partition_list_new(NPART);
  for (int i = 0; i < NPART; i++) {
    int64_t lo_wm = 0;
    high[i] = -1;
    rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(rk, topic, i, &lo_wm, &high[i], 10000);
    if (err)
      diag("%s: watermarks of partition %d: %s", what, i,
           rd_kafka_err2str(err));
    rd_kafka_topic_partition_list_add(parts, topic, i)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);

  memset(g_seen, 0, sizeof(g_seen));
  int last_seq[MAXSTREAM], stream_part[MAXSTREAM];
  for (int s = 0; s < MAXSTREAM; s++)
    last_seq[s] = stream_part[s] = -1;
  int64_t got = 0;
  int bad_payload = 0, out_of_range = 0, wrong_meta = 0, wrong_place = 0;
  int order_breaks = 0, split_streams = 0;
  /* Read to each partition's high watermark, not to a message count:
   * a transaction's commit marker takes an offset but is no message. */
  bool at_end[NPART] = {false};
  int n_at_end = 0;
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (n_at_end < NPART && dc_tu_now_ms() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    if (!m)
      continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF && m->partition >= 0 &&
        m->partition < NPART && !at_end[m->partition] &&
        m->offset >= high[m->partition]) {
      at_end[m->partition] = true;
      n_at_end++;
    } else if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      diag("%s: consume error %s", what, rd_kafka_message_errstr(m));
    }
    if (m->err) {
      rd_kafka_message_destroy(m);
      continue;
    }
    got++;
    char buf[64];
    size_t n = m->len < sizeof(buf) - 1 ? m->len : sizeof(buf) - 1;
    memcpy(buf, m->payload, n);
    buf[n] = '\0';
    int id, stream, seq;
    if (sscanf(buf, "%d %d %d", &id, &stream, &seq) != 3 || stream < 0 ||
        stream >= MAXSTREAM) {
      bad_payload++;
    } else if (id < lo || id >= hi) {
      out_of_range++;
    } else {
      msgrec_t *r = &g_msg[id];
      g_seen[id]++;
      if (r->stream != stream || r->seq != seq)
        wrong_meta++;
      if (r->dr && (r->partition != m->partition ||
                    (!r->acks0 && r->offset != m->offset))) {
        if (wrong_place++ < 5)
          diag("%s: id %d: reported at %d/%lld, found at %d/%lld (err %s)",
               what, id, (int)r->partition, (long long)r->offset,
               (int)m->partition, (long long)m->offset,
               rd_kafka_err2name(r->err));
      }
      if (stream_part[stream] == -1)
        stream_part[stream] = m->partition;
      else if (stream_part[stream] != m->partition)
        split_streams++;
      /* Order: strictly increasing per stream (gaps are losses, counted
       * per id below). */
      if (seq <= last_seq[stream]) {
        if (order_breaks++ < 5 && check_order)
          diag("%s: stream %d partition %d offset %lld: seq %d after %d", what,
               stream, (int)m->partition, (long long)m->offset, seq,
               last_seq[stream]);
      }
      if (seq > last_seq[stream])
        last_seq[stream] = seq;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);

  /* Losses are split by the reporting handle's acks: under acks=0 a
   * delivery report only means "written to the socket". Against the mock,
   * destroying a drained acks=0 handle can drop its last requests: the
   * mock answers acks=0 produce requests (a real broker does not), the
   * handle closes with those answers unread, the kernel resets the
   * connection and the mock never reads the requests still queued. Plain
   * librdkafka shows the same (produce, flush, destroy at once: about one
   * destroy in five loses a few dozen messages; a short pause before
   * rd_kafka_destroy loses none). So acks=0 losses are counted and
   * reported; everything acknowledged must be there. */
  int lost = 0, lost_acks0 = 0, dups = 0, ghosts = 0;
  int64_t expected = 0;
  for (int id = lo; id < hi; id++) {
    msgrec_t *r = &g_msg[id];
    if (!r->enqueued) {
      ghosts += g_seen[id] != 0;
      continue;
    }
    expected++;
    if (g_seen[id] > 1)
      dups += g_seen[id] - 1;
    if (g_seen[id])
      continue;
    if (r->dr == 1 && !r->err && r->acks0) {
      lost_acks0++;
      continue;
    }
    if (lost++ < 10)
      diag("%s: lost id %d (stream %d seq %d), reported %s at %d/%lld", what,
           id, r->stream, r->seq, rd_kafka_err2name(r->err), (int)r->partition,
           (long long)r->offset);
  }
  is_int(n_at_end, NPART, "%s: every partition read to its high watermark "
         "(%lld messages)", what, (long long)got);
  is_int(got + lost_acks0, expected,
         "%s: the topic holds what was enqueued (%lld), less acks=0 losses",
         what, (long long)expected);
  is_int(lost, 0, "%s: no acknowledged message lost", what);
  if (lost_acks0)
    diag("%s: %d messages reported by an acks=0 handle are not in the log "
         "(see the comment in verify_log)",
         what, lost_acks0);
  is_int(dups, 0, "%s: no message written twice", what);
  is_int(ghosts, 0, "%s: nothing from a failed produce call was written", what);
  is_int(bad_payload + out_of_range + wrong_meta, 0,
         "%s: every payload is one of ours, as produced", what);
  is_int(wrong_place, 0,
         "%s: delivery reports name the partition/offset in the log", what);
  is_int(split_streams, 0, "%s: each key stays in one partition", what);
  if (check_order)
    is_int(order_breaks, 0,
           "%s: per-partition order: every stream strictly in sequence", what);
  else
    diag("%s: %d sequence breaks within streams (order not required)", what,
         order_breaks);
}

/* ---- agents and producers ------------------------------------------------ */

static rd_kafka_conf_t *producer_app_conf(const char *cid, ...) {
  char e[256];
  rd_kafka_conf_t *c = au_app_conf(g_bs, cid, "linger.ms", "2",
                                   "reconnect.backoff.max.ms", "200", NULL);
  va_list ap;
  va_start(ap, cid);
  au_conf_set_pairs(c, ap);
  va_end(ap);
  if (getenv("MP_DEBUG")) /* librdkafka debug contexts, while debugging */
    rd_kafka_conf_set(c, "debug", getenv("MP_DEBUG"), e, sizeof(e));
  rd_kafka_conf_set_dr_msg_cb(c, on_dr);
  rd_kafka_conf_set_opaque(c, &g_app_opaque);
  return c;
}

/* An agent for app (destroyed here) recording into *rec (cleared; polled by
 * g_main) with one extra dynconf.* pair, and its managed producer. Test
 * points "WHAT: agent created" and "WHAT: <made>". The producer, with its
 * agent in *dcp (the caller destroys both), or NULL with nothing left. */
static dynconf_producer_t *start_producer(const char *what, const char *made,
                                          rd_kafka_conf_t *app, au_rec_t *rec,
                                          dynconf_switch_policy_t policy,
                                          const char *key, const char *value,
                                          dynconf_t **dcp) {
  memset(rec, 0, sizeof(*rec));
  rec->poller = g_main;
  dynconf_t *dc =
      au_agent_new(RD_KAFKA_PRODUCER, app, g_port, rec, key, value, NULL);
  rd_kafka_conf_destroy(app);
  *dcp = NULL;
  if (!ok(dc, "%s: agent created", what))
    return NULL;
  char e[512];
  dynconf_producer_t *p = dynconf_producer_new(dc, policy, e, sizeof(e));
  if (!ok(p, "%s: %s", what, made)) {
    diag("%s", e);
    dynconf_destroy(dc);
    return NULL;
  }
  *dcp = dc;
  return p;
}

/* Polls the producer until cond(arg) holds; false at the deadline. */
static bool poll_until(dynconf_producer_t *p, bool (*cond)(void *), void *arg) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (!cond(arg)) {
    if (dc_tu_now_ms() > deadline)
      return false;
    dynconf_producer_poll(p, 10);
  }
  return true;
}

static void stats_diag(dynconf_producer_t *p, const char *what) {
  char *s = dynconf_producer_stats_json(p);
  diag("%s: producer stats %s", what, s ? s : "(null)");
  free(s);
}

static long long pstat(dynconf_producer_t *p, const char *key) {
  char *s = dynconf_producer_stats_json(p); /* ours, freed below */
  long long v = au_json_ll(s, key);
  free(s);
  return v;
}

/* ---- the stream with flips (ordered, fast, idempotent) ------------------- */

typedef struct step {
  const char *spec;        /* alter spec for the client entity */
  bool expect_switch;      /* false: a PINNED-only change, no new handle */
  const char *want_acks;   /* on the handle after the step (normalised) */
  const char *want_linger; /* NULL = do not check */
} step_t;

typedef struct second {
  dynconf_producer_t *p;
  const char *topic;
  int n;                 /* messages to produce */
  atomic_int *main_done; /* main's progress */
  atomic_int *main_finished;
  int id_lo; /* first id it used (set by the thread) */
  int sent, failed;
  rd_kafka_resp_err_t first_err;
} second_t;

/* The second producing thread: keys NKEYS..2*NKEYS-1, kept within 200
 * messages of the main thread so both streams span every switch. */
static void *second_thread(void *arg) {
  second_t *s = arg;
  int seq[NKEYS] = {0};
  for (int i = 0; i < s->n;) {
    if (i > atomic_load(s->main_done) + 200 && !atomic_load(s->main_finished)) {
      dc_tu_sleep_ms(1);
      continue;
    }
    int k = i % NKEYS;
    rd_kafka_resp_err_t err =
        produce_one(s->p, s->topic, NKEYS + k, seq[k], NULL);
    if (err) {
      if (!s->failed++)
        s->first_err = err;
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
        dc_tu_sleep_ms(5);
      if (s->failed > 1000)
        break;
      continue; /* the same stream/seq again */
    }
    seq[k]++;
    s->sent++;
    i++;
  }
  return NULL;
}

static void check_handle_conf(rd_kafka_t *h, const char *want_acks,
                              const char *want_linger, const char *what) {
  char v[64];
  au_conf_val(rd_kafka_conf(h), "acks", v, sizeof(v));
  is_str(au_acks_norm(v), au_acks_norm(want_acks),
         "%s: the handle's conf has acks=%s", what, want_acks);
  if (want_linger) {
    au_conf_val(rd_kafka_conf(h), "linger.ms", v, sizeof(v));
    is_str(v, want_linger, "%s: the handle's conf has linger.ms=%s", what,
           want_linger);
  }
}

/* Produces per_thread messages from this thread and per_thread from a
 * second one into topic while applying steps on client cid, then checks
 * reports, switches, handles and the log. */
static void run_stream(const char *what, const char *cid, const char *topic,
                       dynconf_switch_policy_t policy, const char *initial_spec,
                       const char *initial_acks, rd_kafka_conf_t *app,
                       const char *allow_keys, const step_t *steps, int nsteps,
                       int per_thread) {
  rd_kafka_mock_topic_create(g_mcl, topic, NPART, 1);
  if (initial_spec)
    is_int(au_alter(g_port, cid, initial_spec), 0, "%s: initial %s", what,
           initial_spec);
  au_rec_t rec;
  dynconf_t *dc;
  dynconf_producer_t *p =
      start_producer(what, "managed producer created", app, &rec, policy,
                     "dynconf.allow.keys", allow_keys, &dc);
  if (!p)
    return;
  int64_t gen0 = dynconf_generation(dc);
  rd_kafka_t *h = dynconf_producer_handle(p);
  check_handle_conf(h, initial_acks, NULL, what);

  int id_lo = atomic_load(&g_next_id);
  atomic_int main_done = 0, main_finished = 0;
  second_t sec = {.p = p,
                  .topic = topic,
                  .n = per_thread,
                  .main_done = &main_done,
                  .main_finished = &main_finished};
  pthread_t th;
  bool th_ok = !pthread_create(&th, NULL, second_thread, &sec);
  ok(th_ok, "%s: second producing thread started", what);

  int seq[NKEYS] = {0}, i = 0, main_failed = 0, nswitch = 0;
  int handle_changes = 0, handle_same = 0;
  rd_kafka_resp_err_t main_err = 0;
  for (int s = 0; s <= nsteps; s++) {
    /* Produce up to this step's trigger point, polling between batches. */
    int until = s < nsteps ? (s + 1) * per_thread / (nsteps + 1) : per_thread;
    while (i < until) {
      for (int b = 0; b < 50 && i < until; b++) {
        int k = i % NKEYS;
        rd_kafka_resp_err_t err = produce_one(p, topic, k, seq[k], NULL);
        if (err) {
          if (!main_failed++)
            main_err = err;
          dynconf_producer_poll(p, 10);
          continue;
        }
        seq[k]++;
        i++;
      }
      atomic_store(&main_done, i);
      dynconf_producer_poll(p, 0);
    }
    if (s == nsteps)
      break;
    /* The change, then a trickle of messages until it took effect. */
    const step_t *st = &steps[s];
    int64_t sw_before = dynconf_producer_switches(p);
    int ev_before = rec.n_change, pinned_before = rec.n_pinned_entries;
    int64_t gen_before = dynconf_generation(dc);
    is_int(au_alter(g_port, cid, st->spec), 0, "%s: step %d: %s", what, s + 1,
           st->spec);
    dynconf_refresh_now(dc);
    int64_t deadline = dc_tu_now_ms() + WAIT_MS;
    bool done = false;
    while (!done && dc_tu_now_ms() < deadline) {
      if (i < per_thread) {
        int k = i % NKEYS;
        if (!produce_one(p, topic, k, seq[k], NULL)) {
          seq[k]++;
          i++;
          atomic_store(&main_done, i);
        } else {
          main_failed++;
        }
      }
      dynconf_producer_poll(p, 5);
      done = st->expect_switch ? dynconf_producer_switches(p) > sw_before
                               : rec.n_change > ev_before;
    }
    char sw[160];
    snprintf(sw, sizeof(sw), "%s: step %d (%s)", what, s + 1, st->spec);
    if (st->expect_switch) {
      ok(done, "%s: switched to a new handle", sw);
      nswitch++;
      is_int(dynconf_producer_switches(p), sw_before + 1,
             "%s: exactly one switch", sw);
      is_int(dynconf_generation(dc), gen_before + 1,
             "%s: the generation moved by one", sw);
      rd_kafka_t *nh = dynconf_producer_handle(p);
      if (nh != h)
        handle_changes++;
      else
        handle_same++;
      h = nh;
      check_handle_conf(h, st->want_acks, st->want_linger, sw);
    } else {
      ok(done, "%s: change event arrived", sw);
      /* Two more fetches: had it moved anything, it would have by now. */
      long long f0 = au_fetches(dc);
      int64_t d2 = dc_tu_now_ms() + WAIT_MS;
      while (au_fetches(dc) < f0 + 2 && dc_tu_now_ms() < d2)
        dynconf_producer_poll(p, 10);
      dynconf_producer_poll(p, 0);
      ok(rec.n_pinned_entries > pinned_before, "%s: acks reported PINNED", sw);
      is_int(dynconf_generation(dc), gen_before,
             "%s: the generation did not move", sw);
      is_int(dynconf_producer_switches(p), sw_before, "%s: no switch", sw);
      ok(dynconf_producer_handle(p) == h, "%s: same handle", sw);
      check_handle_conf(h, st->want_acks, st->want_linger, sw);
    }
  }
  atomic_store(&main_finished, 1);
  if (th_ok)
    pthread_join(th, NULL);
  int id_hi = atomic_load(&g_next_id);
  is_int(main_failed, 0,
         "%s: every produce call from the polling thread "
         "succeeded",
         what);
  if (main_failed)
    diag("  first error %s", rd_kafka_err2str(main_err));
  is_int(sec.failed, 0,
         "%s: every produce call from the second thread "
         "succeeded (%d sent)",
         what, sec.sent);
  if (sec.failed)
    diag("  first error %s", rd_kafka_err2str(sec.first_err));
  is_int(dynconf_producer_flush(p, WAIT_MS), 0, "%s: flush", what);
  is_int(pstat(p, "retiring_handles"), 0,
         "%s: no retiring handle left after flush", what);
  is_int(dynconf_producer_switches(p), nswitch,
         "%s: %d switches, one per effective change", what, nswitch);
  is_int(dynconf_generation(dc) - gen0, nswitch,
         "%s: generation moved %d times", what, nswitch);
  is_int(handle_changes, nswitch, "%s: the handle changed on every switch",
         what);
  is_int(handle_same, 0, "%s: never the same handle after a switch", what);
  check_drs(id_lo, id_hi, false, what);
  is_int(rec.n_wrong_thread, 0, "%s: change callbacks on the polling thread",
         what);
  is_int(rec.n_rejected, 0, "%s: no change set rejected", what);

  long long blocked = pstat(p, "blocked_calls"),
            timed_out = pstat(p, "timed_out_calls"),
            bmax = pstat(p, "blocked_us_max"),
            bavg = pstat(p, "blocked_us_avg"), smax = pstat(p, "switch_us_max"),
            savg = pstat(p, "switch_us_avg");
  ok(blocked >= 0 && timed_out >= 0 && bmax >= 0 && bavg >= 0 && smax >= 0 &&
         savg >= 0,
     "%s: stats has switch and blocking fields", what);
  is_int(pstat(p, "switches"), nswitch, "%s: stats switches", what);
  is_int(timed_out, 0, "%s: no produce call timed out", what);
  ok(bmax >= bavg && (blocked > 0 || (bmax == 0 && bavg == 0)),
     "%s: blocking stats consistent", what);
  ok(smax >= savg && (nswitch == 0 || smax > 0),
     "%s: switch time stats consistent", what);
  stats_diag(p, what);
  dynconf_producer_destroy(p);
  dynconf_destroy(dc);
  verify_log(topic, id_lo, id_hi, policy == DYNCONF_SWITCH_ORDERED, what);
}

static void test_ordered(void) {
  static const step_t steps[] = {
      {"acks=all", true, "-1", NULL}, {"acks=0", true, "0", NULL},
      {"acks=all", true, "-1", NULL}, {"acks=1", true, "1", NULL},
      {"acks=all", true, "-1", NULL},
  };
  run_stream("ordered", "mp-ordered", "mp-ordered-topic",
             DYNCONF_SWITCH_ORDERED, "acks=1", "1",
             producer_app_conf("mp-ordered", NULL), "acks", steps, 5, 10000);
}

static void test_fast(void) {
  static const step_t steps[] = {
      {"acks=all", true, "-1", NULL}, {"acks=0", true, "0", NULL},
      {"acks=all", true, "-1", NULL}, {"acks=1", true, "1", NULL},
      {"acks=all", true, "-1", NULL},
  };
  run_stream("fast", "mp-fast", "mp-fast-topic", DYNCONF_SWITCH_FAST, "acks=1",
             "1", producer_app_conf("mp-fast", NULL), "acks", steps, 5, 10000);
}

/* enable.idempotence=true: a dynamic acks=1 is pinned (no switch), an
 * allowed linger.ms still applies and switches. */
static void test_idempotent(void) {
  static const step_t steps[] = {
      {"acks=1", false, "-1", "2"},
      {"linger.ms=7", true, "-1", "7"},
      {"acks=0,linger.ms=11", true, "-1", "11"},
  };
  run_stream("idempotent", "mp-idem", "mp-idem-topic", DYNCONF_SWITCH_ORDERED,
             NULL, "-1",
             producer_app_conf("mp-idem", "enable.idempotence", "true", NULL),
             "acks,linger.ms", steps, 3, 4000);
}

/* ---- a produce call during an ordered switch, made to wait ----------------
 */

typedef struct blocker {
  dynconf_producer_t *p;
  const char *topic;
  int sent_before; /* enqueued before the first timeout */
  int timed_out;   /* __TIMED_OUT returns */
  int other_err;
  int after_ids[64]; /* ids enqueued after the first timeout */
  int n_after;
  bool broker_up;
} blocker_t;

/* Produces until a call returns __TIMED_OUT (the switch holds the lock and
 * cannot finish while the broker is down), then brings the broker back and
 * produces until a call goes through (onto the new handle). */
static void *blocker_thread(void *arg) {
  blocker_t *b = arg;
  const int stream = 40;
  int seq = 0;
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (!b->timed_out && dc_tu_now_ms() < deadline) {
    rd_kafka_resp_err_t err = produce_one(b->p, b->topic, stream, seq, NULL);
    if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
      b->timed_out++;
    } else if (err) {
      b->other_err++;
      break;
    } else {
      seq++;
      b->sent_before++;
      dc_tu_sleep_ms(2);
    }
  }
  rd_kafka_mock_broker_set_up(g_mcl, 1);
  b->broker_up = true;
  while (b->n_after < 3 && dc_tu_now_ms() < deadline) {
    int id;
    rd_kafka_resp_err_t err = produce_one(b->p, b->topic, stream, seq, &id);
    if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
      b->timed_out++;
    } else if (err) {
      b->other_err++;
      break;
    } else {
      seq++;
      b->after_ids[b->n_after++] = id;
    }
  }
  return NULL;
}

static void test_blocked_produce(void) {
  const char *what = "blocked", *cid = "mp-block", *topic = "mp-block-topic";
  rd_kafka_mock_topic_create(g_mcl, topic, NPART, 1);
  is_int(au_alter(g_port, cid, "acks=1"), 0, "%s: initial acks=1", what);
  au_rec_t rec;
  dynconf_t *dc;
  /* log_level 2: the broker is taken down on purpose. */
  dynconf_producer_t *p = start_producer(
      what, "producer created", producer_app_conf(cid, "log_level", "2", NULL),
      &rec, DYNCONF_SWITCH_ORDERED, "dynconf.producer.max.block.ms", "200",
      &dc);
  if (!p)
    return;
  int id_lo = atomic_load(&g_next_id);
  /* Connected and delivering first. */
  int seq = 0;
  for (; seq < 100; seq++)
    produce_one(p, topic, 41, seq, NULL);
  is_int(dynconf_producer_flush(p, WAIT_MS), 0, "%s: first 100 delivered",
         what);
  rd_kafka_t *old = dynconf_producer_handle(p);

  /* Broker down: these wait in the old handle. Their reports come during
   * the switch's drain, and each produces a follow-up from inside the
   * callback (the switching thread holds the lock: it must not deadlock,
   * and the follow-ups join the old handle, which the drain waits for). */
  is_int(rd_kafka_mock_broker_set_down(g_mcl, 1), 0, "%s: broker down", what);
  memset(&g_follow, 0, sizeof(g_follow));
  g_follow.p = p;
  g_follow.topic = topic;
  g_follow.stream = 41;
  g_follow.from_id = atomic_load(&g_next_id);
  g_follow.active = true;
  for (int k = 0; k < 50; k++, seq++)
    produce_one(p, topic, 41, seq, NULL);
  int64_t gen = dynconf_generation(dc);
  is_int(au_alter(g_port, cid, "acks=all"), 0, "%s: acks=all", what);
  /* Wait for the agent without polling the producer: the switch happens
   * in the poll below, with the blocker thread running. */
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (dynconf_generation(dc) == gen && dc_tu_now_ms() < deadline) {
    dynconf_refresh_now(dc);
    dc_tu_sleep_ms(20);
  }
  ok(dynconf_generation(dc) == gen + 1, "%s: the agent has the change", what);

  blocker_t b = {.p = p, .topic = topic};
  pthread_t th;
  bool th_ok = !pthread_create(&th, NULL, blocker_thread, &b);
  ok(th_ok, "%s: blocker thread started", what);
  int64_t t0 = dc_tu_now_ms();
  dynconf_producer_poll(p, 0); /* the ordered switch: drains first */
  int64_t took = dc_tu_now_ms() - t0;
  g_follow.active = false;
  if (th_ok)
    pthread_join(th, NULL);
  else
    rd_kafka_mock_broker_set_up(g_mcl, 1);
  diag("%s: the switch took %lld ms (broker down until the blocker saw a "
       "timeout)",
       what, (long long)took);
  is_int(dynconf_producer_switches(p), 1, "%s: one switch", what);
  rd_kafka_t *nh = dynconf_producer_handle(p);
  ok(nh != old, "%s: new handle", what);
  check_handle_conf(nh, "all", NULL, what);
  ok(b.broker_up, "%s: the blocker brought the broker back", what);
  ok(b.timed_out >= 1,
     "%s: a produce call during the drain returned __TIMED_OUT (%d)", what,
     b.timed_out);
  is_int(b.other_err, 0, "%s: no other produce error", what);
  is_int(b.n_after, 3, "%s: produce calls after the switch went through", what);
  is_int(dynconf_producer_flush(p, WAIT_MS), 0, "%s: flush", what);
  long long blocked = pstat(p, "blocked_calls"),
            timed_out = pstat(p, "timed_out_calls");
  is_int(timed_out, b.timed_out, "%s: stats timed_out_calls = %d", what,
         b.timed_out);
  ok(blocked >= timed_out && blocked >= 1,
     "%s: stats blocked_calls %lld >= "
     "timed out %lld",
     what, blocked, timed_out);
  ok(pstat(p, "blocked_us_max") > 0, "%s: the wait was measured", what);
  stats_diag(p, what);
  int id_hi = atomic_load(&g_next_id);
  check_drs(id_lo, id_hi, false, what);
  /* What went in before the switch was reported by the old handle, what
   * went in after it by the new one. */
  int wrong_rk = 0;
  for (int id = id_lo; id < id_hi; id++) {
    bool after = false;
    for (int k = 0; k < b.n_after; k++)
      after |= b.after_ids[k] == id;
    if (g_msg[id].enqueued && g_msg[id].rk != (after ? nh : old))
      wrong_rk++;
  }
  is_int(wrong_rk, 0,
         "%s: messages before the switch drained on the old "
         "handle, later ones on the new",
         what);
  is_int(g_follow.n, 50,
         "%s: 50 follow-ups produced from delivery reports "
         "during the drain",
         what);
  is_int(g_follow.failed, 0, "%s: none of them failed", what);
  int follow_old = 0;
  for (int k = 0; k < g_follow.n; k++)
    follow_old += g_msg[g_follow.ids[k]].rk == old;
  is_int(follow_old, g_follow.n,
         "%s: the follow-ups went out on the old "
         "handle, inside the drain",
         what);
  is_int(g_dr_wrong_thread, 0, "%s: reports on the polling thread", what);
  dynconf_producer_destroy(p);
  dynconf_destroy(dc);
  verify_log(topic, id_lo, id_hi, true, what);
}

/* ---- transactions -------------------------------------------------------- */

static bool gen_moved(void *arg) {
  void **a = arg;
  return dynconf_generation(a[0]) > *(int64_t *)a[1];
}

static void txn_ok(rd_kafka_error_t *err, const char *what, const char *op) {
  if (!ok(!err, "%s: %s", what, op))
    diag("  %s", rd_kafka_error_string(err));
  if (err)
    rd_kafka_error_destroy(err);
}

static void test_transactional(void) {
  const char *what = "transactional", *cid = "mp-txn", *topic = "mp-txn-topic";
  rd_kafka_mock_topic_create(g_mcl, topic, NPART, 1);
  au_rec_t rec;
  dynconf_t *dc;
  dynconf_producer_t *p = start_producer(
      what, "producer created (init_transactions done)",
      producer_app_conf(cid, "transactional.id", "mp-txn-tid", NULL), &rec,
      DYNCONF_SWITCH_ORDERED, "dynconf.allow.keys", "acks,linger.ms", &dc);
  if (!p)
    return;
  int id_lo = atomic_load(&g_next_id);
  rd_kafka_t *h0 = dynconf_producer_handle(p);
  check_handle_conf(h0, "all", "2", what);
  txn_ok(dynconf_producer_begin_transaction(p), what, "begin_transaction");
  int seq = 0;
  for (; seq < 100; seq++)
    produce_one(p, topic, 42, seq, NULL);
  int64_t gen = dynconf_generation(dc);
  is_int(au_alter(g_port, cid, "acks=1,linger.ms=9"), 0,
         "%s: acks=1, linger.ms=9 while the transaction is open", what);
  dynconf_refresh_now(dc);
  void *args[2] = {dc, &gen};
  ok(poll_until(p, gen_moved, args), "%s: the agent applied the change", what);
  /* Two more fetches' worth of polling: no switch while it is open. */
  long long f0 = au_fetches(dc);
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (au_fetches(dc) < f0 + 2 && dc_tu_now_ms() < deadline)
    dynconf_producer_poll(p, 10);
  is_int(dynconf_producer_switches(p), 0,
         "%s: no switch while the transaction is open", what);
  ok(dynconf_producer_handle(p) == h0, "%s: same handle meanwhile", what);
  ok(rec.n_pinned_entries >= 1, "%s: acks reported PINNED", what);
  txn_ok(dynconf_producer_commit_transaction(p, WAIT_MS), what,
         "commit_transaction");
  dynconf_producer_poll(p, 0);
  is_int(dynconf_producer_switches(p), 1, "%s: switched after the commit",
         what);
  rd_kafka_t *h1 = dynconf_producer_handle(p);
  ok(h1 != h0, "%s: new handle", what);
  check_handle_conf(h1, "all", "9", what);
  /* The new handle was initialised for transactions. */
  txn_ok(dynconf_producer_begin_transaction(p), what,
         "begin_transaction on the new handle");
  for (int k = 0; k < 100; k++, seq++)
    produce_one(p, topic, 42, seq, NULL);
  txn_ok(dynconf_producer_commit_transaction(p, WAIT_MS), what,
         "commit_transaction on the new handle");
  is_int(dynconf_producer_flush(p, WAIT_MS), 0, "%s: flush", what);
  int id_hi = atomic_load(&g_next_id);
  check_drs(id_lo, id_hi, false, what);
  stats_diag(p, what);
  dynconf_producer_destroy(p);
  dynconf_destroy(dc);
  /* The mock has no transaction markers or LSO: read_uncommitted shows
   * what was written; commit_transaction's success says it committed. */
  verify_log(topic, id_lo, id_hi, true, what);
}

/* ---- destroy with undeliverable messages ------------------------------- */

static void test_destroy_undelivered(void) {
  const char *what = "destroy", *cid = "mp-destroy",
             *topic = "mp-destroy-topic";
  rd_kafka_mock_topic_create(g_mcl, topic, NPART, 1);
  au_rec_t rec;
  dynconf_t *dc;
  dynconf_producer_t *p = start_producer(
      what, "producer created", producer_app_conf(cid, "log_level", "2", NULL),
      &rec, DYNCONF_SWITCH_ORDERED, "dynconf.producer.close.timeout.ms", "300",
      &dc);
  if (!p)
    return;
  int id_lo = atomic_load(&g_next_id);
  int seq = 0;
  for (; seq < 10; seq++)
    produce_one(p, topic, 43, seq, NULL);
  is_int(dynconf_producer_flush(p, WAIT_MS), 0, "%s: first 10 delivered", what);
  int id_mid = atomic_load(&g_next_id);
  is_int(rd_kafka_mock_broker_set_down(g_mcl, 1), 0, "%s: broker down", what);
  for (int k = 0; k < 100; k++, seq++)
    produce_one(p, topic, 43, seq, NULL);
  dynconf_producer_poll(p, 0);
  dynconf_producer_destroy(p);
  int id_hi = atomic_load(&g_next_id);
  check_drs(id_lo, id_hi, true, what);
  tally_t t = tally(id_mid, id_hi);
  int purge = 0, timeout = 0, other = 0, none = 0;
  for (int id = id_mid; id < id_hi; id++) {
    rd_kafka_resp_err_t x = g_msg[id].err;
    if (!g_msg[id].dr)
      continue;
    if (x == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
        x == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
      purge++;
    else if (x == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
      timeout++;
    else if (x == 0)
      none++;
    else
      other++;
  }
  is_int(t.enqueued, 100, "%s: 100 undeliverable messages enqueued", what);
  is_int(purge + timeout, 100,
         "%s: each got its report with __PURGE_QUEUE/__MSG_TIMED_OUT before "
         "destroy returned (%d purged, %d timed out, %d delivered, %d other)",
         what, purge, timeout, none, other);
  rd_kafka_mock_broker_set_up(g_mcl, 1);
  dynconf_destroy(dc);
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
  rd_kafka_t *mrk = NULL;
  g_mcl = au_mock_new(1, &mrk, g_bs, sizeof(g_bs));
  if (!ok(g_mcl, "mock cluster")) {
    dc_tu_daemon_stop(&d);
    dc_tu_rmrf(dir);
    return done_testing();
  }
  const char *only = getenv("MP_ONLY"); /* run one scenario while debugging */
  if (!only || !strcmp(only, "ordered"))
    test_ordered();
  if (!only || !strcmp(only, "blocked"))
    test_blocked_produce();
  if (!only || !strcmp(only, "fast"))
    test_fast();
  if (!only || !strcmp(only, "idempotent"))
    test_idempotent();
  if (!only || !strcmp(only, "transactional"))
    test_transactional();
  if (!only || !strcmp(only, "destroy"))
    test_destroy_undelivered();
  is_int(g_dr_bad_opaque, 0, "every report carried one of our opaques");
  is_int(g_dr_wrong_app_opaque, 0,
         "every report carried the application's conf opaque");
  is_int(g_dr_wrong_thread, 0, "every report ran on the polling thread");

  rd_kafka_mock_cluster_destroy(g_mcl);
  rd_kafka_destroy(mrk);
  ok(dc_tu_daemon_alive(&d), "dynconfd still running");
  is_int(dc_tu_daemon_stop(&d), 0, "dynconfd stops cleanly");
  if (tap_failed)
    dc_tu_daemon_log_tail(&d, 30);
  dc_tu_rmrf(dir);
  return done_testing();
}
