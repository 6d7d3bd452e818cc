/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent against a hostile config server: a fake Kafka broker in this
 * test (one thread, a loopback listener) that speaks just enough of the
 * protocol (ApiVersions; DescribeConfigs; Metadata naming itself as
 * broker and controller, for clients that ask) with our codec, and
 * answers DescribeConfigs with whatever the test sets:
 *   (a) a million entries (past the agent's receive limit) and fifty
 *       thousand (within it, past DC_AGENT_MAX_ENTRIES): dynconf_new()
 *       keeps its startup bound, the agent reports an error (naming the
 *       entry limit when the answer got through), the application's
 *       dynconf_poll() stays prompt while the agent keeps re-fetching;
 *   (b) the same key twice on every refresh: one ERROR event naming the
 *       key, then no event at all however often it refreshes, and never a
 *       CHANGE event; the last good configuration stays;
 *   (c) a normal answer after a hostile one applies;
 *   (d) malformed or lying answers (garbage, a wrong correlation id, a
 *       huge count in a few bytes, a negative frame size, two results,
 *       another resource, an undefined source, a closed connection, an
 *       oversized value): each is a clear error or
 *       a rejected change, the last good configuration stays, and a
 *       normal answer afterwards applies;
 *   (e) the server's ApiVersions decides: no DescribeConfigs (or only
 *       v0) is *unsupported* at once without a DescribeConfigs sent,
 *       v0-2 is used at v2, INVALID_REQUEST for the type is unsupported;
 *       and no Watch is sent to a server that does not list it;
 *   (f) a server that lists Watch and answers every one wrongly ("unchanged"
 *       at once, "changed" to the same version or with nothing new, a
 *       truncated answer, a closed connection, an error): the agent falls
 *       back to polling after a few Watches, then sends at most one per
 *       fetch, and stays UP on the last good configuration; a server that
 *       closes the connection on every ClientReport gets a few reports,
 *       then at most one per fetch.
 *
 * Waits are "until a condition or a generous deadline". The elapsed-time
 * checks are API promises with margins of seconds: dynconf_new() within
 * dynconf.startup.timeout.ms, dynconf_poll(dc, 100) within 100 ms.
 */
#include "../agentutil.h"

#include "agent/agent_int.h" /* DC_AGENT_MAX_RESPONSE_BYTES */

#define WAIT_MS 30000
#define STARTUP_MS 3000
#define MARGIN_MS 5000
#define FK_MAX_CONNS 16

/* ---- the fake broker ------------------------------------------------------ */

typedef struct fake {
  int lfd, port, wake[2];
  pthread_t thread;
  int fds[FK_MAX_CONNS];
  dc_buf_t in[FK_MAX_CONNS];
  pthread_mutex_t lock; /* guards what follows */
  const dc_describe_configs_entry_t *configs; /* the answer (test's) */
  int32_t n_configs;
  int n_describe; /* DescribeConfigs answered */
  int mode;       /* how DescribeConfigs is answered (FK_*) */
  int versions;   /* what ApiVersions lists for DescribeConfigs (FKV_*) */
  int last_describe_version;
  int watch_mode; /* how Watch is answered (FKW_*) */
  int n_watch;    /* Watch requests received */
  int n_report;   /* ClientReport requests received (each closes) */
} fake_t;

/* Answers to DescribeConfigs. */
enum {
  FK_NORMAL, FK_GARBAGE, FK_WRONG_CORR, FK_HUGE_COUNT, FK_NEG_SIZE,
  FK_TWO_RESULTS, FK_OTHER_NAME, FK_BAD_SOURCE, FK_CLOSE,
  FK_INVALID_REQUEST, FK_HUGE_VALUE
};
/* DescribeConfigs in the ApiVersions answer. FKV_WATCH is FKV_ALL plus
 * Watch v0; no other answer lists Watch, so no agent should send one. */
enum { FKV_ALL, FKV_NONE, FKV_V0_2, FKV_V0_0, FKV_WATCH, FKV_REPORT };
/* Answers to Watch, each at once, each wrong in its own way: "unchanged"
 * long before the timeout, "changed" to the version the agent has,
 * "changed" to a new version with the configuration the agent has, a
 * truncated body, a closed connection, an error code. */
enum { FKW_EARLY, FKW_SAME, FKW_HOLLOW, FKW_GARBAGE, FKW_CLOSE, FKW_REFUSE };

static fake_t fk;

/* The DescribeConfigs answer from now on; configs stays the caller's and
 * must outlive the answer. */
static void fake_answer(const dc_describe_configs_entry_t *configs,
                        int32_t n) {
  pthread_mutex_lock(&fk.lock);
  fk.configs = configs;
  fk.n_configs = n;
  pthread_mutex_unlock(&fk.lock);
}

static void fake_mode(int mode, int versions) {
  pthread_mutex_lock(&fk.lock);
  fk.mode = mode;
  fk.versions = versions;
  pthread_mutex_unlock(&fk.lock);
}

static void fake_watch_mode(int mode) {
  pthread_mutex_lock(&fk.lock);
  fk.watch_mode = mode;
  pthread_mutex_unlock(&fk.lock);
}

static int fake_get(const int *field) {
  pthread_mutex_lock(&fk.lock);
  int v = *field;
  pthread_mutex_unlock(&fk.lock);
  return v;
}

static int fake_api_versions(dc_buf_t *out, int16_t v) {
  static const int16_t keys[] = {DC_API_API_VERSIONS, DC_API_METADATA,
                                 DC_API_DESCRIBE_CONFIGS, DC_API_WATCH,
                                 DC_API_CLIENT_REPORT};
  dc_api_range_t r[5];
  for (size_t i = 0; i < 5; i++) {
    const dc_api_info_t *ai = dc_api_info(keys[i]);
    r[i] = (dc_api_range_t){ai->key, ai->min_version, ai->max_version};
  }
  int versions = fake_get(&fk.versions);
  if (versions == FKV_V0_2 || versions == FKV_V0_0)
    r[2].max_version = versions == FKV_V0_2 ? 2 : 0;
  int n = versions == FKV_NONE     ? 2
          : versions == FKV_WATCH  ? 4
          : versions == FKV_REPORT ? 5
                                   : 3;
  dc_apiversions_resp_t resp = {.n_api_keys = n, .api_keys = r};
  return dc_apiversions_resp_encode(out, v, &resp);
}

/* Names itself as the only broker and the controller; hosts no topics. */
static int fake_metadata(dc_rd_t *rd, dc_buf_t *out, int16_t v) {
  dc_metadata_req_t req = {0};
  if (dc_metadata_req_decode(rd, v, &req))
    return -1;
  dc_metadata_broker_t self = {.node_id = 1, .host = "127.0.0.1",
                               .port = fk.port};
  dc_metadata_topic_t *t = dc_rd_alloc(rd, (size_t)dc_nn_count(req.n_topics),
                                       sizeof(*t));
  for (int32_t i = 0; t && i < req.n_topics; i++) {
    t[i].error_code = 3; /* UNKNOWN_TOPIC_OR_PARTITION */
    t[i].name = req.topics[i].name ? req.topics[i].name : "";
    t[i].topic_authorized_operations = INT32_MIN;
  }
  dc_metadata_resp_t resp = {.n_brokers = 1, .brokers = &self,
                             .cluster_id = "hostile", .controller_id = 1,
                             .n_topics = dc_nn_count(req.n_topics),
                             .topics = t,
                             .cluster_authorized_operations = INT32_MIN};
  return dc_metadata_resp_encode(out, v, &resp);
}

static char huge_value[1 << 20];

/* Encodes the answer bent as fk.mode says (fk.lock held). 1 = answer as
 * the caller wrote (raw bytes), 0 = encoded, -1 = close. */
static int fake_hostile_describe(dc_describe_configs_resp_t *resp,
                                 dc_buf_t *out, int16_t v) {
  static dc_describe_configs_entry_t bad_source[] = {
      {.name = "acks", .value = "1", .config_source = 99}};
  dc_describe_configs_entry_t big = {.name = "acks", .value = huge_value,
                                     .config_source = DC_SRC_DYNAMIC_CLIENT};
  dc_describe_configs_result_t two[2];
  switch (fk.mode) {
  case FK_GARBAGE: {
    uint8_t junk[64];
    memset(junk, 0xff, sizeof(junk));
    dc_buf_append(out, junk, sizeof(junk));
    return 0;
  }
  case FK_HUGE_COUNT: {
    /* throttle, then a result count of 2^31 - 1 and nothing else. */
    static const uint8_t flex[] = {0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x08};
    static const uint8_t classic[] = {0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff};
    if (v >= 4)
      dc_buf_append(out, flex, sizeof(flex));
    else
      dc_buf_append(out, classic, sizeof(classic));
    return 0;
  }
  case FK_TWO_RESULTS:
    two[0] = two[1] = resp->results[0];
    resp->n_results = 2;
    resp->results = two;
    break;
  case FK_OTHER_NAME: resp->results[0].resource_name = "someone-else"; break;
  case FK_BAD_SOURCE:
    resp->results[0].configs = bad_source;
    resp->results[0].n_configs = 1;
    break;
  case FK_INVALID_REQUEST:
    resp->results[0].error_code = 42;
    resp->results[0].error_message = "unknown resource type";
    resp->results[0].n_configs = 0;
    break;
  case FK_HUGE_VALUE:
    resp->results[0].configs = &big;
    resp->results[0].n_configs = 1;
    break;
  case FK_CLOSE: return -1;
  default: break;
  }
  return dc_describe_configs_resp_encode(out, v, resp);
}

/* Every requested resource gets the test's current entries. */
static int fake_describe(dc_rd_t *rd, dc_buf_t *out, int16_t v) {
  dc_describe_configs_req_t req = {0};
  if (dc_describe_configs_req_decode(rd, v, &req) || req.n_resources < 0)
    return -1;
  dc_describe_configs_result_t *res =
      dc_rd_alloc(rd, (size_t)req.n_resources, sizeof(*res));
  if (!res)
    return -1;
  pthread_mutex_lock(&fk.lock);
  fk.last_describe_version = v;
  for (int32_t i = 0; i < req.n_resources; i++) {
    res[i].resource_type = req.resources[i].resource_type;
    res[i].resource_name = req.resources[i].resource_name;
    res[i].n_configs = fk.n_configs;
    res[i].configs = (dc_describe_configs_entry_t *)fk.configs;
  }
  dc_describe_configs_resp_t resp = {.n_results = req.n_resources,
                                     .results = res};
  int rc = fake_hostile_describe(&resp, out, v);
  fk.n_describe++;
  pthread_mutex_unlock(&fk.lock);
  return rc;
}

/* The test's current configuration as Watch entries, in rd's arena
 * (fk.lock held); NULL when out of memory. */
static dc_watch_entry_t *fake_watch_entries(dc_rd_t *rd) {
  dc_watch_entry_t *e = dc_rd_alloc(rd, (size_t)fk.n_configs, sizeof(*e));
  for (int32_t i = 0; e && i < fk.n_configs; i++)
    e[i] = (dc_watch_entry_t){fk.configs[i].name, fk.configs[i].value,
                              fk.configs[i].config_source};
  return e;
}

/* Half of an encoded answer: what precedes the cut decodes, the rest is
 * missing, as from a server that died mid-write. */
static int fake_truncated(dc_buf_t *out, const dc_watch_resp_t *resp) {
  dc_buf_t whole;
  dc_buf_init(&whole);
  int rc = dc_watch_resp_encode(&whole, 0, resp);
  if (!rc)
    dc_buf_append(out, whole.data, whole.len / 2);
  dc_buf_free(&whole);
  return rc;
}

/* Answers a Watch at once as fk.watch_mode says, and counts it (counted
 * first: a request that does not decode was still sent). */
static int fake_watch(dc_rd_t *rd, dc_buf_t *out, int16_t v) {
  pthread_mutex_lock(&fk.lock);
  fk.n_watch++;
  int mode = fk.watch_mode;
  dc_watch_entry_t *e = fake_watch_entries(rd);
  int32_t n = fk.n_configs;
  pthread_mutex_unlock(&fk.lock);
  dc_watch_req_t req;
  if (!e || dc_watch_req_decode(rd, v, &req))
    return -1;
  int64_t known = req.known_version;
  dc_watch_resp_t resp = {.changed = true, .version = known,
                          .n_configs = n, .configs = e};
  switch (mode) {
  case FKW_EARLY: resp.changed = false; resp.n_configs = 0; break;
  case FKW_SAME: break;
  case FKW_HOLLOW: resp.version = known < 0 ? 1 : known + 1; break;
  case FKW_GARBAGE: return fake_truncated(out, &resp);
  case FKW_CLOSE: return -1;
  case FKW_REFUSE:
    resp = (dc_watch_resp_t){
        .error_code = DYNCONF_ERR_CLUSTER_AUTHORIZATION_FAILED,
        .error_message = "hostile: no watching here", .version = -1};
    break;
  }
  return dc_watch_resp_encode(out, v, &resp);
}

/* Answers one request frame; -1 = close the connection. */
static int fake_request(int fd, const uint8_t *p, size_t n) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, p, n, &a);
  dc_req_header_t h;
  dc_buf_t out;
  dc_buf_init(&out);
  int rc = -1;
  if (dc_req_header_decode(&rd, &h))
    goto done;
  int16_t v = h.api_version;
  if (h.api_key == DC_API_API_VERSIONS && !dc_api_supported(h.api_key, v))
    v = 0;
  int mode = fake_get(&fk.mode);
  if (h.api_key == DC_API_DESCRIBE_CONFIGS && mode == FK_NEG_SIZE) {
    static const uint8_t neg[] = {0xff, 0xff, 0xff, 0xff};
    rc = dc_tu_write_all(fd, neg, sizeof(neg));
    goto done;
  }
  int32_t corr = h.correlation_id;
  if (h.api_key == DC_API_DESCRIBE_CONFIGS && mode == FK_WRONG_CORR)
    corr += 1000;
  size_t frame = dc_wr_frame_begin(&out);
  dc_resp_header_encode(&out, h.api_key, v, corr);
  switch (h.api_key) {
  case DC_API_API_VERSIONS: rc = fake_api_versions(&out, v); break;
  case DC_API_METADATA: rc = fake_metadata(&rd, &out, v); break;
  case DC_API_DESCRIBE_CONFIGS: rc = fake_describe(&rd, &out, v); break;
  case DC_API_WATCH: rc = fake_watch(&rd, &out, v); break;
  case DC_API_CLIENT_REPORT: /* counted, then the connection closes */
    pthread_mutex_lock(&fk.lock);
    fk.n_report++;
    pthread_mutex_unlock(&fk.lock);
    break;
  default: diag("fake broker: unexpected api key %d", h.api_key);
  }
  dc_wr_frame_end(&out, frame);
  if (!rc && !out.err)
    rc = dc_tu_write_all(fd, out.data, out.len);
done:
  dc_buf_free(&out);
  dc_arena_free(&a);
  return rc;
}

static void fake_close(int i) {
  close(fk.fds[i]);
  fk.fds[i] = -1;
  dc_buf_free(&fk.in[i]);
}

/* Reads what connection i has and answers its complete frames. */
static void fake_read(int i) {
  uint8_t chunk[65536];
  ssize_t k = recv(fk.fds[i], chunk, sizeof(chunk), 0);
  if (k <= 0) {
    fake_close(i);
    return;
  }
  dc_buf_append(&fk.in[i], chunk, (size_t)k);
  int32_t size;
  int r;
  while ((r = dc_frame_peek(fk.in[i].data, fk.in[i].len, 1 << 20, &size)) ==
         1) {
    if (fake_request(fk.fds[i], fk.in[i].data + 4, (size_t)size)) {
      fake_close(i); /* also when the agent hung up mid-answer */
      return;
    }
    dc_buf_consume(&fk.in[i], (size_t)size + 4);
  }
  if (r < 0)
    fake_close(i);
}

static void fake_accept(void) {
  int fd = accept4(fk.lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return;
  /* A client that stops reading must not wedge the server for good. */
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  for (int i = 0; i < FK_MAX_CONNS; i++) {
    if (fk.fds[i] < 0) {
      fk.fds[i] = fd;
      dc_buf_init(&fk.in[i]);
      return;
    }
  }
  close(fd);
}

static void *fake_main(void *arg) {
  (void)arg;
  for (;;) {
    struct pollfd p[FK_MAX_CONNS + 2];
    int slot[FK_MAX_CONNS + 2], n = 0;
    p[n++] = (struct pollfd){fk.wake[0], POLLIN, 0};
    p[n++] = (struct pollfd){fk.lfd, POLLIN, 0};
    for (int i = 0; i < FK_MAX_CONNS; i++)
      if (fk.fds[i] >= 0) {
        slot[n] = i;
        p[n++] = (struct pollfd){fk.fds[i], POLLIN, 0};
      }
    if (poll(p, (nfds_t)n, -1) < 0)
      continue;
    if (p[0].revents)
      break;
    if (p[1].revents)
      fake_accept();
    for (int j = 2; j < n; j++)
      if (p[j].revents)
        fake_read(slot[j]);
  }
  for (int i = 0; i < FK_MAX_CONNS; i++)
    if (fk.fds[i] >= 0)
      fake_close(i);
  return NULL;
}

static int fake_start(void) {
  for (int i = 0; i < FK_MAX_CONNS; i++)
    fk.fds[i] = -1;
  pthread_mutex_init(&fk.lock, NULL);
  if (dc_tu_listen(&fk.lfd, &fk.port, fk.wake))
    return -1;
  return pthread_create(&fk.thread, NULL, fake_main, NULL) ? -1 : 0;
}

static void fake_stop(void) {
  dc_tu_wake(fk.wake[1]);
  pthread_join(fk.thread, NULL);
  dc_tu_unlisten(&fk.lfd, fk.wake);
  pthread_mutex_destroy(&fk.lock);
}

/* ---- answers ---------------------------------------------------------------- */

/* n entries "x.NNNNNNN" = "1" from the client-id's own override, in one
 * allocation each for entries and names (freed with answer_free). */
typedef struct answer {
  dc_describe_configs_entry_t *e;
  char *names;
  int32_t n;
} answer_t;

static answer_t answer_many(int32_t n) {
  answer_t a = {calloc((size_t)n, sizeof(*a.e)), malloc((size_t)n * 12), n};
  if (!a.e || !a.names)
    abort();
  for (int32_t i = 0; i < n; i++) {
    char *name = a.names + (size_t)i * 12;
    snprintf(name, 12, "x.%07d", (int)i);
    a.e[i] = (dc_describe_configs_entry_t){
        .name = name, .value = "1", .config_source = DC_SRC_DYNAMIC_CLIENT};
  }
  return a;
}

static void answer_free(answer_t *a) {
  free(a->e);
  free(a->names);
}

#define ENTRY(k, v, src) {.name = (k), .value = (v), .config_source = (src)}
#define CLIENT DC_SRC_DYNAMIC_CLIENT
#define DEFAULT DC_SRC_DYNAMIC_DEFAULT
static dc_describe_configs_entry_t good_acks0[] = {ENTRY("acks", "0", CLIENT)};
/* The same key and value twice, from two sources, in either order: an
 * agent that let one of them win would see its source flip. */
static dc_describe_configs_entry_t dup_acks1[] = {
    ENTRY("acks", "1", CLIENT), ENTRY("linger.ms", "5", CLIENT),
    ENTRY("acks", "1", DEFAULT)};
static dc_describe_configs_entry_t dup_acks1_swapped[] = {
    ENTRY("acks", "1", DEFAULT), ENTRY("linger.ms", "5", CLIENT),
    ENTRY("acks", "1", CLIENT)};

/* ---- the agent -------------------------------------------------------------- */

/* What the change callback saw. Application thread only. */
typedef struct seen {
  int n_change, n_error, n_other;
  dynconf_err_t last_err;
  char last_errstr[512];
  char last_acks[32]; /* new value of acks in the last CHANGE event */
} seen_t;

static void on_event(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  seen_t *s = opaque;
  switch (dynconf_event_type(ev)) {
  case DYNCONF_EVENT_CHANGE:
    s->n_change++;
    for (size_t i = 0; i < dynconf_event_entry_count(ev); i++)
      if (!strcmp(dynconf_event_key(ev, i), "acks"))
        snprintf(s->last_acks, sizeof(s->last_acks), "%s",
                 dynconf_event_new_value(ev, i)
                     ? dynconf_event_new_value(ev, i)
                     : "(app)");
    break;
  case DYNCONF_EVENT_ERROR:
    s->n_error++;
    s->last_err = dynconf_event_error(ev);
    snprintf(s->last_errstr, sizeof(s->last_errstr), "%s",
             dynconf_event_error_string(ev));
    diag("ERROR event: %s", s->last_errstr);
    break;
  default: s->n_other++;
  }
}

/* A fail-open producer agent on the fake broker; *ms gets how long
 * dynconf_new() took. */
static dynconf_t *agent_new(seen_t *s, int64_t *ms) {
  char bs[64], startup[16];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", fk.port);
  snprintf(startup, sizeof(startup), "%d", STARTUP_MS);
  rd_kafka_conf_t *app = au_app_conf(bs, "hostile-app", NULL);
  memset(s, 0, sizeof(*s));
  int64_t t0 = dc_tu_now_ms();
  dynconf_t *dc = au_agent_new_with(
      RD_KAFKA_PRODUCER, app, fk.port, on_event, au_on_log, s,
      "dynconf.startup.timeout.ms", startup, "dynconf.request.timeout.ms",
      "3000", "dynconf.refresh.interval.ms", "3600000",
      "dynconf.retry.backoff.ms", "100", "dynconf.retry.backoff.max.ms",
      "1000", NULL);
  *ms = dc_tu_now_ms() - t0;
  rd_kafka_conf_destroy(app);
  return dc;
}

/* Polls (delivering events) until the stat `key` reaches target; the
 * longest dynconf_poll(dc, 100) seen goes to *max_poll_ms (may be NULL).
 * true when reached before WAIT_MS. */
static bool poll_until(dynconf_t *dc, const char *key, long long target,
                       int64_t *max_poll_ms) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (dc_tu_now_ms() < deadline) {
    int64_t t0 = dc_tu_now_ms();
    dynconf_poll(dc, 100);
    int64_t took = dc_tu_now_ms() - t0;
    if (max_poll_ms && took > *max_poll_ms)
      *max_poll_ms = took;
    if (au_stat_ll(dc, key) >= target) {
      dynconf_poll(dc, 0); /* what the fetch queued */
      return true;
    }
  }
  return false;
}

/* Asks for a fetch and waits until it is recorded under `key`. */
static bool refresh(dynconf_t *dc, const char *key, int64_t *max_poll_ms) {
  long long before = au_stat_ll(dc, key);
  dynconf_refresh_now(dc);
  return poll_until(dc, key, before + 1, max_poll_ms);
}

/* The agent's effective acks ("" = the application's own). */
static void eff_acks(dynconf_t *dc, char *out, size_t n) {
  dynconf_source_t src;
  if (dynconf_effective_get(dc, "acks", out, n, &src) < 0 || src == DYNCONF_SOURCE_APP)
    snprintf(out, n, "(app)");
}

/* ---- cases ------------------------------------------------------------------ */

/* n entries: dynconf_new() within its bound, an error, prompt polls while
 * the agent re-fetches; then a normal answer applies. */
static void test_too_many(int32_t n, const char *want_err, bool substr) {
  answer_t many = answer_many(n);
  fake_answer(many.e, many.n);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (!ok(dc != NULL, "%d entries: fail-open dynconf_new() returns an agent",
          (int)n)) {
    answer_free(&many);
    return;
  }
  diag("%d entries: dynconf_new() took %lld ms (startup timeout %d ms)",
       (int)n, (long long)ms, STARTUP_MS);
  ok(ms < STARTUP_MS + MARGIN_MS,
     "%d entries: dynconf_new() returned within its startup timeout "
     "(%lld ms; %d ms + %d ms margin)",
     (int)n, (long long)ms, STARTUP_MS, MARGIN_MS);
  dynconf_poll(dc, 0);
  is_int(dynconf_state(dc), DYNCONF_STATE_DEGRADED,
         "%d entries: the agent is DEGRADED", (int)n);
  is_int(s.n_error, 1, "%d entries: one ERROR event", (int)n);
  is_int(s.n_change, 0, "%d entries: no CHANGE event", (int)n);
  if (want_err) {
    is_int(s.last_err, DYNCONF_ERR__BAD_RESPONSE,
           "%d entries: the error is _BAD_RESPONSE", (int)n);
    if (substr)
      ok(strstr(s.last_errstr, want_err),
         "%d entries: the error names the limit (%s)", (int)n, want_err);
    else
      is_str(s.last_errstr, want_err, "%d entries: the error names the limit",
             (int)n);
  }

  /* The application keeps polling while the agent re-fetches. */
  int64_t max_poll = 0;
  ok(refresh(dc, "errors", &max_poll) && refresh(dc, "errors", &max_poll),
     "%d entries: two more fetches fail", (int)n);
  diag("%d entries: longest dynconf_poll(dc, 100) while the agent fetched: "
       "%lld ms", (int)n, (long long)max_poll);
  ok(max_poll < 100 + 2000,
     "%d entries: dynconf_poll(dc, 100) stays prompt (longest %lld ms)",
     (int)n, (long long)max_poll);
  is_int(s.n_error, 1, "%d entries: still one ERROR event", (int)n);

  /* (c) A normal answer applies. */
  fake_answer(good_acks0, 1);
  ok(refresh(dc, "ok", NULL), "%d entries, then normal: a fetch succeeds",
     (int)n);
  is_int(dynconf_state(dc), DYNCONF_STATE_UP,
         "%d entries, then normal: the agent is UP", (int)n);
  is_int(s.n_change, 1, "%d entries, then normal: one CHANGE event", (int)n);
  is_str(s.last_acks, "0", "%d entries, then normal: acks 0 applied", (int)n);
  dynconf_destroy(dc);
  answer_free(&many);
}

/* Exactly DC_AGENT_MAX_ENTRIES entries: accepted, and the same answer
 * again is no change. */
static void test_at_limit(void) {
  answer_t a = answer_many(DC_AGENT_MAX_ENTRIES);
  fake_answer(a.e, a.n);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (!ok(dc != NULL, "at the limit: dynconf_new() returns an agent")) {
    answer_free(&a);
    return;
  }
  diag("at the limit (%d entries): dynconf_new() took %lld ms",
       DC_AGENT_MAX_ENTRIES, (long long)ms);
  dynconf_poll(dc, 0);
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "at the limit: UP");
  is_int(s.n_error, 0, "at the limit: no ERROR event");
  is_int(s.n_change, 1, "at the limit: one CHANGE event (keys ignored)");
  int refreshed = 0;
  for (int i = 0; i < 3; i++)
    refreshed += refresh(dc, "ok", NULL);
  is_int(refreshed, 3, "at the limit: 3 more fetches succeed");
  is_int(s.n_change, 1, "at the limit: the same answer again is no change");
  dynconf_destroy(dc);
  answer_free(&a);
}

/* (b) The same key twice on every refresh. */
static void test_duplicates(void) {
  fake_answer(good_acks0, 1);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (!ok(dc != NULL, "duplicates: dynconf_new() returns an agent"))
    return;
  dynconf_poll(dc, 0);
  is_int(s.n_change, 1, "duplicates: the first (good) answer applies");
  char acks[32];
  eff_acks(dc, acks, sizeof(acks));
  is_str(acks, "0", "duplicates: effective acks is 0");

  fake_answer(dup_acks1, 3);
  ok(refresh(dc, "errors", NULL), "duplicates: the fetch fails");
  is_int(s.n_error, 1, "duplicates: one ERROR event");
  is_int(s.last_err, DYNCONF_ERR__BAD_RESPONSE, "duplicates: _BAD_RESPONSE");
  is_str(s.last_errstr, "server answered config 'acks' twice",
         "duplicates: the error names the key");
  is_int(dynconf_state(dc), DYNCONF_STATE_DEGRADED, "duplicates: DEGRADED");
  const int N = 6;
  int refreshed = 0;
  for (int i = 0; i < N; i++) {
    fake_answer(i % 2 ? dup_acks1 : dup_acks1_swapped, 3);
    refreshed += refresh(dc, "errors", NULL);
  }
  is_int(refreshed, N, "duplicates: %d more refreshes fetched", N);
  is_int(s.n_change, 1, "duplicates: no CHANGE event after %d refreshes", N);
  is_int(s.n_error, 1, "duplicates: no further ERROR event (one per outage)");
  eff_acks(dc, acks, sizeof(acks));
  is_str(acks, "0", "duplicates: the last good acks=0 stays");

  /* (c) The same good answer again: the agent recovers, nothing changed. */
  fake_answer(good_acks0, 1);
  ok(refresh(dc, "ok", NULL), "duplicates, then normal: a fetch succeeds");
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "duplicates, then normal: UP");
  is_int(s.n_change, 1,
         "duplicates, then normal: the same good set is no change");
  dynconf_destroy(dc);
}

/* A duplicated answer at start-up: fail-open, the error, no CHANGE. */
static void test_duplicates_at_startup(void) {
  fake_answer(dup_acks1, 3);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (!ok(dc != NULL, "duplicates at start-up: an agent (fail-open)"))
    return;
  dynconf_poll(dc, 0);
  is_int(s.n_error, 1, "duplicates at start-up: one ERROR event");
  is_str(s.last_errstr, "server answered config 'acks' twice",
         "duplicates at start-up: the error names the key");
  int refreshed = 0;
  for (int i = 0; i < 4; i++) {
    fake_answer(i % 2 ? dup_acks1 : dup_acks1_swapped, 3);
    refreshed += refresh(dc, "errors", NULL);
  }
  is_int(refreshed, 4, "duplicates at start-up: 4 more refreshes fetched");
  is_int(s.n_change, 0, "duplicates at start-up: never a CHANGE event");
  is_int(s.n_error, 1, "duplicates at start-up: still one ERROR event");
  char acks[32];
  eff_acks(dc, acks, sizeof(acks));
  is_str(acks, "(app)", "duplicates at start-up: acks stays the app's own");
  dynconf_destroy(dc);
}

/* (d) After acks=0 applied, one hostile answer: `stat` moves, the error
 * says want (a substring), acks=0 stays; then a normal answer: UP and no
 * change. */
static void test_hostile(const char *what, int mode, const char *stat,
                         dynconf_state_t want_state, const char *want) {
  fake_mode(FK_NORMAL, FKV_ALL);
  fake_answer(good_acks0, 1);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (!ok(dc != NULL, "%s: dynconf_new() returns an agent", what))
    return;
  dynconf_poll(dc, 0);
  is_int(s.n_change, 1, "%s: the good answer applies first", what);
  fake_mode(mode, FKV_ALL);
  ok(refresh(dc, stat, NULL), "%s: the fetch is counted as %s", what, stat);
  is_int(dynconf_state(dc), want_state, "%s: state %s", what,
         dynconf_state_name(want_state));
  char errbuf[8192];
  char *js = dynconf_stats_json(dc);
  snprintf(errbuf, sizeof(errbuf), "%s", js ? js : "");
  free(js);
  ok(strstr(errbuf, want) != NULL, "%s: the error says '%s'", what, want);
  if (!strstr(errbuf, want))
    diag("statistics: %.400s", errbuf);
  char acks[32];
  eff_acks(dc, acks, sizeof(acks));
  is_str(acks, "0", "%s: the last good acks=0 stays", what);
  is_int(s.n_change, 1, "%s: no CHANGE event", what);
  fake_mode(FK_NORMAL, FKV_ALL);
  ok(refresh(dc, "ok", NULL), "%s, then normal: a fetch succeeds", what);
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "%s, then normal: UP", what);
  dynconf_destroy(dc);
}

/* An oversized value is a change the rules refuse: never applied. */
static void test_huge_value(void) {
  memset(huge_value, '1', sizeof(huge_value) - 1);
  fake_mode(FK_NORMAL, FKV_ALL);
  fake_answer(good_acks0, 1);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (!ok(dc != NULL, "huge value: an agent"))
    return;
  dynconf_poll(dc, 0);
  fake_mode(FK_HUGE_VALUE, FKV_ALL);
  ok(refresh(dc, "ok", NULL), "huge value: the answer is read");
  is_int(s.n_change, 2, "huge value: one more change event");
  char acks[32];
  eff_acks(dc, acks, sizeof(acks));
  is_str(acks, "0", "huge value: acks=0 stays (the 1 MiB value is refused)");
  long long gen = dynconf_generation(dc);
  is_int(gen, 1, "huge value: the generation did not move for it");
  fake_mode(FK_NORMAL, FKV_ALL);
  dynconf_destroy(dc);
}

/* (e) What the server's ApiVersions lists decides. */
static void test_versions(void) {
  fake_answer(good_acks0, 1);
  static const struct {
    int versions;
    const char *what, *want;
  } unsupported[] = {
      {FKV_NONE, "no DescribeConfigs", "does not offer DescribeConfigs"},
      {FKV_V0_0, "DescribeConfigs v0 only", "offers DescribeConfigs v0-0"}};
  for (size_t i = 0; i < 2; i++) {
    fake_mode(FK_NORMAL, unsupported[i].versions);
    int before = fake_get(&fk.n_describe);
    seen_t s;
    int64_t ms;
    dynconf_t *dc = agent_new(&s, &ms);
    if (!ok(dc != NULL, "%s: an agent", unsupported[i].what))
      continue;
    is_int(dynconf_state(dc), DYNCONF_STATE_UNSUPPORTED,
           "%s: unsupported when dynconf_new() returns", unsupported[i].what);
    dynconf_poll(dc, 0);
    is_int(s.n_other, 1, "%s: one UNSUPPORTED event", unsupported[i].what);
    char *js = dynconf_stats_json(dc);
    ok(js && strstr(js, unsupported[i].want), "%s: the reason says '%s'",
       unsupported[i].what, unsupported[i].want);
    free(js);
    is_int(fake_get(&fk.n_describe), before,
           "%s: no DescribeConfigs was sent", unsupported[i].what);
    fake_mode(FK_NORMAL, FKV_ALL); /* the server is upgraded */
    ok(refresh(dc, "ok", NULL), "%s, then upgraded: the re-probe fetches",
       unsupported[i].what);
    is_int(dynconf_state(dc), DYNCONF_STATE_UP, "%s, then upgraded: UP",
           unsupported[i].what);
    dynconf_destroy(dc);
  }
  fake_mode(FK_NORMAL, FKV_V0_2);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (ok(dc != NULL, "DescribeConfigs v0-2: an agent")) {
    is_int(dynconf_state(dc), DYNCONF_STATE_UP, "DescribeConfigs v0-2: UP");
    is_int(fake_get(&fk.last_describe_version), 2,
           "DescribeConfigs v0-2: asked with v2");
    char acks[32];
    eff_acks(dc, acks, sizeof(acks));
    is_str(acks, "0", "DescribeConfigs v0-2: acks=0 applied");
    dynconf_destroy(dc);
  }
  fake_mode(FK_NORMAL, FKV_ALL);
  dc = agent_new(&s, &ms);
  if (dc) {
    is_int(fake_get(&fk.last_describe_version), 4,
           "DescribeConfigs v0-4: asked with v4");
    dynconf_destroy(dc);
  }
}

/* Whether the agent is parked until its next fetch: not in a Watch, and
 * no fetch due (a strike that lost the connection makes one due at once).
 * The agent thread keeps its lock from the end of one Watch to the start
 * of the next, so "not watching" is never seen between two Watches. It
 * can be seen for a moment between a fetch and the Watch after it; a
 * refresh asked then only takes that Watch's place, so at worst the
 * Watch count comes out lower, never higher. */
static bool agent_polling(dynconf_t *dc) {
  char *js = dynconf_stats_json(dc);
  bool r = js && strstr(js, "\"active\":false") &&
           au_json_ll(js, "next_fetch_in_ms") > 60000;
  free(js);
  return r;
}

/* Polls (delivering events) until agent_polling(); true before WAIT_MS. */
static bool wait_polling(dynconf_t *dc) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (dc_tu_now_ms() < deadline) {
    if (agent_polling(dc))
      return true;
    dynconf_poll(dc, 10);
  }
  return false;
}

/* A hostile Watch answer, the agent's watch counter it moves, and that
 * counter's value when the agent falls back to polling, which is also the
 * bound on the Watches sent until then (each is answered and counted). */
typedef struct watch_case {
  const char *what;
  int mode;         /* FKW_* */
  const char *stat; /* "failures", "changes" or "refusals" */
  int before;
} watch_case_t;

/* Polls until the fake's counter reaches target, up to WAIT_MS. */
static bool poll_until_fake(const int *field, int target) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  while (fake_get(field) < target && dc_tu_now_ms() < deadline)
    dc_tu_sleep_ms(10);
  return fake_get(field) >= target;
}

/* Three refreshes after the fallback: the agent stays UP on acks=0 with no
 * new event, and sends at most one Watch per fetch. *ups gets how many
 * refreshes ended UP and parked. Returns the refreshes that fetched. */
static int watch_refreshes(dynconf_t *dc, int *ups) {
  int refreshed = 0;
  *ups = 0;
  for (int i = 0; i < 3; i++) {
    /* Parked again before the next refresh: every Watch this fetch
     * leads to is sent by then, and none is cut short, so the count
     * shows what the agent would send per fetch. */
    bool fetched = refresh(dc, "ok", NULL);
    refreshed += fetched;
    *ups += fetched && wait_polling(dc) &&
            dynconf_state(dc) == DYNCONF_STATE_UP;
  }
  return refreshed;
}

/* (f) Watch listed and answered as c->mode says, every time. */
static void test_watch(const watch_case_t *c) {
  fake_mode(FK_NORMAL, FKV_WATCH);
  fake_watch_mode(c->mode);
  fake_answer(good_acks0, 1);
  int w0 = fake_get(&fk.n_watch), d0 = fake_get(&fk.n_describe);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (!ok(dc != NULL, "%s: an agent", c->what))
    return;
  ok(poll_until(dc, c->stat, c->before, NULL) && wait_polling(dc),
     "%s: the agent falls back to polling (watch %s %d)", c->what, c->stat,
     c->before);
  int w1 = fake_get(&fk.n_watch), d1 = fake_get(&fk.n_describe);
  int ups;
  is_int(watch_refreshes(dc, &ups), 3, "%s: 3 refreshes fetch", c->what);
  is_int(ups, 3, "%s: UP and parked after each refresh", c->what);
  is_int(au_stat_ll(dc, "errors"), 0, "%s: no fetch failed", c->what);
  char acks[32];
  eff_acks(dc, acks, sizeof(acks));
  is_str(acks, "0", "%s: acks=0 stays", c->what);
  dynconf_poll(dc, 0);
  dynconf_destroy(dc); /* joins the agent thread: the counts are final */
  int w2 = fake_get(&fk.n_watch), d2 = fake_get(&fk.n_describe);
  diag("%s: %d Watches and %d DescribeConfigs until the fallback, %d and "
       "%d over 3 refreshes", c->what, w1 - w0, d1 - d0, w2 - w1, d2 - d1);
  ok(w1 - w0 <= c->before, "%s: at most %d Watches until the fallback "
     "(%d)", c->what, c->before, w1 - w0);
  ok(w2 - w1 <= 3, "%s: at most one Watch per fetch after it (%d for 3)",
     c->what, w2 - w1);
  is_int(s.n_change, 1, "%s: one CHANGE event (the first fetch)", c->what);
  is_int(s.n_error, 0, "%s: no ERROR event", c->what);
}

/* (f) A server that closes the connection on every ClientReport: each
 * lost report is a strike (agent.c, report()), so the reconnects it
 * causes stop at DC_AGENT_WATCH_STRIKES, and after that a fetch leads to
 * at most one report. The Watch answers "changed", so a report follows
 * each connection's first Watch. */
static void test_report_closes(void) {
  fake_mode(FK_NORMAL, FKV_REPORT);
  fake_watch_mode(FKW_HOLLOW);
  fake_answer(good_acks0, 1);
  int r0 = fake_get(&fk.n_report);
  seen_t s;
  int64_t ms;
  dynconf_t *dc = agent_new(&s, &ms);
  if (!ok(dc != NULL, "report closes: an agent"))
    return;
  const int k = DC_AGENT_WATCH_STRIKES;
  ok(poll_until_fake(&fk.n_report, r0 + k) && wait_polling(dc),
     "report closes: %d reports, then the agent polls", k);
  int r1 = fake_get(&fk.n_report);
  int ups;
  is_int(watch_refreshes(dc, &ups), 3, "report closes: 3 refreshes fetch");
  dynconf_destroy(dc);
  int r2 = fake_get(&fk.n_report);
  diag("report closes: %d reports until the fallback, %d over 3 refreshes",
       r1 - r0, r2 - r1);
  ok(r1 - r0 <= k, "report closes: at most %d reports until the fallback "
     "(%d)", k, r1 - r0);
  ok(r2 - r1 <= 3, "report closes: at most one report per fetch after it "
     "(%d for 3)", r2 - r1);
  is_int(s.n_error, 0, "report closes: no ERROR event");
  fake_mode(FK_NORMAL, FKV_ALL);
}

/* (f) The bounds, from lib/agent/agent.c (watch_record_locked()): each
 * odd answer is one strike and DC_AGENT_WATCH_STRIKES of them end
 * watching ("failures" counts them; after a truncated answer or a closed
 * connection the agent fetches before each next Watch); a "changed" with
 * nothing new is a strike only from the second in a row, and not at all
 * as the answer to the connection's first Watch (on -1: it asks the
 * version), so it takes two Watches more ("changes" counts them all); an
 * error answer ends watching
 * at once ("refusals"). After the fallback a fetch may lead to one Watch:
 * strikes are reset only by a Watch that ends normally, so its odd answer
 * ends watching again. */
static void test_watch_all(void) {
  const int k = DC_AGENT_WATCH_STRIKES;
  const watch_case_t cases[] = {
      {"Watch unchanged at once", FKW_EARLY, "failures", k},
      {"Watch changed to the same version", FKW_SAME, "failures", k},
      {"Watch changed with nothing new", FKW_HOLLOW, "changes", k + 2},
      {"Watch answer truncated", FKW_GARBAGE, "failures", k},
      {"Watch connection closed", FKW_CLOSE, "failures", k},
      {"Watch refused", FKW_REFUSE, "refusals", 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    test_watch(&cases[i]);
  fake_mode(FK_NORMAL, FKV_ALL);
  test_report_closes();
}

int main(void) {
  if (fake_start()) {
    ok(0, "fake broker starts: %s", strerror(errno));
    return done_testing();
  }
  test_at_limit();
  test_duplicates();
  test_duplicates_at_startup();
  test_too_many(50000,
                "server answered 50000 config entries; the agent accepts at "
                "most 10000",
                false);
  /* About 21 MB, past the agent's receive limit: the agent drops the
   * frame after reading its size; the error names the limit. */
  char limit[64];
  snprintf(limit, sizeof(limit), "receive limit of %d bytes",
           DC_AGENT_MAX_RESPONSE_BYTES);
  test_too_many(1000000, limit, true);
  static const struct {
    const char *what;
    int mode;
    const char *want;
  } bad[] = {
      {"garbage body", FK_GARBAGE, "malformed DescribeConfigs"},
      {"wrong correlation id", FK_WRONG_CORR, "correlation id"},
      {"huge count in a few bytes", FK_HUGE_COUNT, "malformed DescribeConfigs"},
      {"negative frame size", FK_NEG_SIZE, "frame size -1 is below 4"},
      {"two results", FK_TWO_RESULTS, "answered 2 resources, not 1"},
      {"another resource", FK_OTHER_NAME, "someone-else"},
      {"undefined source", FK_BAD_SOURCE, "source 99"},
      {"connection closed", FK_CLOSE, "connection closed by"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    test_hostile(bad[i].what, bad[i].mode, "errors", DYNCONF_STATE_DEGRADED,
                 bad[i].want);
  test_hostile("INVALID_REQUEST for the type", FK_INVALID_REQUEST,
               "unsupported", DYNCONF_STATE_UNSUPPORTED,
               "unknown resource type");
  test_huge_value();
  test_versions();
  /* Every agent so far had a server that does not list Watch. */
  is_int(fake_get(&fk.n_watch), 0,
         "no Watch sent to a server that does not list it");
  test_watch_all();
  int nd = 0;
  pthread_mutex_lock(&fk.lock);
  nd = fk.n_describe;
  pthread_mutex_unlock(&fk.lock);
  ok(nd > 0, "the fake broker answered %d DescribeConfigs requests", nd);
  fake_stop();
  return done_testing();
}
