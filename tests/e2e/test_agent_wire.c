/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's own Kafka-protocol connection (lib/agent/fetch.c over
 * lib/client/kclient_conn.c), seen from outside, against real processes on
 * loopback:
 *   - on the wire, through a proxy that decodes every request frame the
 *     agent sends to dynconfd: only ApiVersions v3 and DescribeConfigs, the
 *     latter at the highest version both sides speak, for resource type 9
 *     named by the client id, all on one connection kept across refreshes;
 *     with dynconf.watch=true also Watch v0 for the client id, bounded by
 *     the refresh interval, known version -1 only the first time; and one
 *     ClientReport (the version from the Watch answer, or -1 polling);
 *   - a server without DescribeConfigs (librdkafka's mock cluster): the
 *     first fetch concludes UNSUPPORTED from the ApiVersions answer, fail-open
 *     and fail-closed, long before the start-up timeout;
 *   - dynconf_destroy() while a fetch waits on a server that accepts and
 *     never answers (plaintext), or never completes a TLS handshake;
 *   - the agent costs one thread;
 *   - a kept connection closed by the server side (the proxy drops it,
 *     dynconfd restarts on its port) is replaced without a failed fetch
 *     (polling only: test_agent_watch has a restart under a parked Watch);
 *     every fresh connection starts with ApiVersions, so another server
 *     behind the same address (the mock cluster in dynconfd's place, or
 *     dynconfd in the mock's) is judged by its own answer at the next fetch;
 *   - a bootstrap list whose first entry refuses connections.
 *
 * Waits are "until a condition holds or a generous deadline passes". The
 * elapsed-time checks are API promises with wide margins (dynconf_new()
 * concluding from one round trip, dynconf_destroy() "returns promptly").
 */
#include "../agentutil.h"
#include "../kproxy.h"

#define WAIT_MS 30000

static char g_data[512], g_log[512];

/* ---- a request-decoding proxy ---------------------------------------------
 *
 * A kproxy (tests/kproxy.h) between the agent and one upstream server on
 * 127.0.0.1 (kproxy_set_upstream() switches it) hands every request frame
 * the agent sends to wp_log_request(), which logs api key, version, client
 * id, the request's position on its connection and, for DescribeConfigs
 * and ApiVersions, what the body says (decoded with the project's codec).
 * The agent sends neither Metadata nor FindCoordinator, so the server's
 * answers pass untouched. kproxy_drop() closes every proxied connection,
 * both sides, as a server closing idle connections would.
 */

#define WP_MAX_LOG 4096

typedef struct wp_req {
  int conn; /* the connection's accept number, from 1 */
  int seq;  /* the request's position on that connection, from 0 */
  int16_t key, version; /* key -1: the header did not decode */
  char client_id[128];
  bool body_ok;          /* a DescribeConfigs/ApiVersions body decoded */
  int32_t n_resources;   /* DescribeConfigs */
  int resource_type;     /* ... of its first resource */
  char resource_name[128];
  char software[64];     /* ApiVersions v3 client_software_name */
  int64_t watch_known;   /* Watch: known_version; ClientReport: version */
  int32_t watch_timeout; /* Watch: timeout_ms */
  int report_outcome;    /* ClientReport */
  char instance[40], kind[16], library[40]; /* ClientReport */
} wp_req_t;

typedef struct wproxy {
  kproxy_t kp;
  pthread_mutex_t lock; /* guards what follows */
  wp_req_t log[WP_MAX_LOG];
  int n_log, n_log_lost;
} wproxy_t;

/* kp_request_fn: logs one request the agent sent. */
static void wp_log_request(void *opaque, int conn, int seq, const uint8_t *p,
                           size_t n) {
  wproxy_t *wp = opaque;
  wp_req_t r;
  memset(&r, 0, sizeof(r));
  r.conn = conn;
  r.seq = seq;
  r.key = -1;
  r.n_resources = -1;
  r.resource_type = -1;
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, p, n, &a);
  dc_req_header_t h;
  if (!dc_req_header_decode(&rd, &h)) {
    r.key = h.api_key;
    r.version = h.api_version;
    snprintf(r.client_id, sizeof(r.client_id), "%s",
             h.client_id ? h.client_id : "(null)");
    if (h.api_key == DC_API_DESCRIBE_CONFIGS) {
      dc_describe_configs_req_t q;
      if (!dc_describe_configs_req_decode(&rd, h.api_version, &q)) {
        r.body_ok = true;
        r.n_resources = q.n_resources;
        if (q.n_resources > 0) {
          r.resource_type = q.resources[0].resource_type;
          snprintf(r.resource_name, sizeof(r.resource_name), "%s",
                   q.resources[0].resource_name
                       ? q.resources[0].resource_name
                       : "(null)");
        }
      }
    } else if (h.api_key == DC_API_WATCH) {
      dc_watch_req_t q;
      if (!dc_watch_req_decode(&rd, h.api_version, &q) && q.client_id) {
        r.body_ok = true;
        snprintf(r.resource_name, sizeof(r.resource_name), "%s", q.client_id);
        r.watch_known = q.known_version;
        r.watch_timeout = q.timeout_ms;
      }
    } else if (h.api_key == DC_API_CLIENT_REPORT) {
      dc_client_report_req_t q;
      if (!dc_client_report_req_decode(&rd, h.api_version, &q)) {
        r.body_ok = true;
        snprintf(r.resource_name, sizeof(r.resource_name), "%s", q.client_id);
        snprintf(r.instance, sizeof(r.instance), "%s", q.instance_id);
        snprintf(r.kind, sizeof(r.kind), "%s", q.kind);
        snprintf(r.library, sizeof(r.library), "%s", q.client_library);
        r.watch_known = q.version;
        r.report_outcome = q.outcome;
      }
    } else if (h.api_key == DC_API_API_VERSIONS) {
      dc_apiversions_req_t q;
      if (!dc_apiversions_req_decode(&rd, h.api_version, &q)) {
        r.body_ok = true;
        snprintf(r.software, sizeof(r.software), "%s",
                 q.client_software_name ? q.client_software_name : "");
      }
    }
  }
  dc_arena_free(&a);
  pthread_mutex_lock(&wp->lock);
  if (wp->n_log < WP_MAX_LOG)
    wp->log[wp->n_log++] = r;
  else
    wp->n_log_lost++;
  pthread_mutex_unlock(&wp->lock);
}

/* The proxy on 127.0.0.1:<ephemeral> (wp->kp.port) in front of
 * 127.0.0.1:upstream_port. 0 or -1. wp is the caller's (static storage:
 * it is large); wp_stop() frees what this made. */
static int wp_start(wproxy_t *wp, int upstream_port) {
  char errstr[256];
  wp->n_log = wp->n_log_lost = 0;
  pthread_mutex_init(&wp->lock, NULL);
  if (kproxy_start_observed(&wp->kp, upstream_port, wp_log_request, wp, errstr,
                            sizeof(errstr))) {
    diag("%s", errstr);
    pthread_mutex_destroy(&wp->lock);
    return -1;
  }
  return 0;
}

static void wp_stop(wproxy_t *wp) {
  if (!wp->kp.started)
    return;
  kproxy_stop(&wp->kp);
  pthread_mutex_destroy(&wp->lock);
}

/* Requests logged so far: a position for wp_log_copy(). */
static int wp_mark(wproxy_t *wp) {
  pthread_mutex_lock(&wp->lock);
  int n = wp->n_log;
  pthread_mutex_unlock(&wp->lock);
  return n;
}

/* Copies log records [from, end) into a malloc'ed array (caller frees);
 * *np gets their number. */
static wp_req_t *wp_log_copy(wproxy_t *wp, int from, int *np) {
  pthread_mutex_lock(&wp->lock);
  int n = wp->n_log - from;
  if (n < 0)
    n = 0;
  wp_req_t *v = malloc(((size_t)n + 1) * sizeof(*v));
  if (v && n)
    memcpy(v, wp->log + from, (size_t)n * sizeof(*v));
  pthread_mutex_unlock(&wp->lock);
  *np = v ? n : 0;
  return v;
}

/* ---- a server that accepts and never answers --------------------------------
 *
 * Run from the test's own thread: silent_pump() accepts what is pending and
 * reads what arrived (until EAGAIN or EOF), never writing a byte. */

#define SILENT_MAX 16

typedef struct silent {
  int lfd, port;
  int n;
  int fd[SILENT_MAX];
  bool eof[SILENT_MAX];
  size_t got[SILENT_MAX];
  uint8_t head[SILENT_MAX][8]; /* the first bytes received */
} silent_t;

static int silent_open(silent_t *s) {
  memset(s, 0, sizeof(*s));
  s->lfd = dc_tu_loopback_socket(SOCK_NONBLOCK, 16, &s->port);
  return s->lfd < 0 ? -1 : 0;
}

static void silent_pump(silent_t *s) {
  while (s->n < SILENT_MAX) {
    int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      break;
    s->fd[s->n++] = fd;
  }
  for (int i = 0; i < s->n; i++) {
    while (!s->eof[i]) {
      uint8_t buf[4096];
      ssize_t k = recv(s->fd[i], buf, sizeof(buf), 0);
      if (k < 0 && errno == EINTR)
        continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        break;
      if (k <= 0) {
        s->eof[i] = true;
        break;
      }
      for (size_t j = 0; j < (size_t)k && s->got[i] + j < sizeof(s->head[i]);
           j++)
        s->head[i][s->got[i] + j] = buf[j];
      s->got[i] += (size_t)k;
    }
  }
}

/* A connection still open whose first bytes are a Kafka request frame of
 * api key `key` (tls false), or a TLS handshake record (tls true): the
 * index, or -1. */
static int silent_waiting(const silent_t *s, bool tls, int16_t key) {
  for (int i = 0; i < s->n; i++) {
    if (s->eof[i])
      continue;
    if (tls && s->got[i] >= 1 && s->head[i][0] == 0x16)
      return i;
    if (!tls && s->got[i] >= 6 &&
        ((s->head[i][4] << 8) | s->head[i][5]) == (int)key)
      return i;
  }
  return -1;
}

static void silent_close(silent_t *s) {
  for (int i = 0; i < s->n; i++)
    close(s->fd[i]);
  if (s->lfd >= 0)
    close(s->lfd);
  memset(s, 0, sizeof(*s));
  s->lfd = -1;
}

/* ---- helpers ------------------------------------------------------------------ */

/* Starts dynconfd with an extra listener on 127.0.0.1:port. 0 or -1. */
static int daemon_on_port(dc_tu_daemon_t *d, int port, char *errstr,
                          size_t errstr_size) {
  return dc_tu_daemon_start_port(d, g_data, g_log, port, errstr, errstr_size);
}

/* What one agent's callbacks saw. */
typedef struct rec {
  int n_change, n_error, n_unsupported, n_other;
  char last_error[400];       /* of the last ERROR/UNSUPPORTED/other event */
  char unsupported_err[400];  /* of the last UNSUPPORTED event */
} rec_t;

static void on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  rec_t *r = opaque;
  switch (dynconf_event_type(ev)) {
  case DYNCONF_EVENT_CHANGE:
    r->n_change++;
    return;
  case DYNCONF_EVENT_ERROR:
    r->n_error++;
    break;
  case DYNCONF_EVENT_UNSUPPORTED:
    r->n_unsupported++;
    snprintf(r->unsupported_err, sizeof(r->unsupported_err), "%s",
             dynconf_event_error_string(ev) ? dynconf_event_error_string(ev)
                                            : "(null)");
    break;
  default:
    r->n_other++;
    break;
  }
  snprintf(r->last_error, sizeof(r->last_error), "%s",
           dynconf_event_error_string(ev) ? dynconf_event_error_string(ev)
                                          : "(null)");
  diag("agent %s event %d: %s", dynconf_client_id(dc),
       (int)dynconf_event_type(ev), r->last_error);
}

static void on_log(const dynconf_t *dc, int level, const char *fac,
                   const char *msg) {
  if (level <= 4 || getenv("AU_VERBOSE"))
    diag("agent log %d %s %s: %s", level, dynconf_client_id(dc), fac, msg);
}

/* The application's conf for a producer: bootstrap.servers, client.id,
 * acks=1 (not librdkafka's default, so the application's own value is
 * recognisable). Caller owns it. */
static rd_kafka_conf_t *app_conf(const char *bootstrap, const char *cid) {
  char e[256];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, e, sizeof(e));
  rd_kafka_conf_set(c, "client.id", cid, e, sizeof(e));
  rd_kafka_conf_set(c, "acks", "1", e, sizeof(e));
  rd_kafka_conf_set(c, "log_level", "3", e, sizeof(e));
  return c;
}

/* A producer agent for app_conf(bootstrap, cid) with
 * dynconf.bootstrap.servers = bootstrap, rec's callbacks and the
 * NULL-terminated dynconf.* (key, value) pairs that follow. NULL with
 * errstr on failure (the dynconf conf is freed here). */
static dynconf_t *agent_new(const char *bootstrap, const char *cid,
                            rec_t *rec, char *errstr, size_t errstr_size,
                            ...) {
  char e[512];
  rd_kafka_conf_t *app = app_conf(bootstrap, cid);
  dynconf_conf_t *dconf = dynconf_conf_new();
  dynconf_conf_set(dconf, "dynconf.bootstrap.servers", bootstrap, e,
                   sizeof(e));
  va_list ap;
  va_start(ap, errstr_size);
  au_dconf_set_pairs(dconf, ap);
  va_end(ap);
  dynconf_t *dc = au_dynconf_new(RD_KAFKA_PRODUCER, app, dconf, on_change,
                                 on_log, rec, errstr, errstr_size);
  rd_kafka_conf_destroy(app);
  return dc;
}

/* Polls dc until its statistics' fetches.<key> reaches want, or the
 * deadline. Returns the last value read. */
static long long wait_stat(dynconf_t *dc, const char *key, long long want) {
  return au_wait_stat(dc, key, want, WAIT_MS);
}

/* Fetches concluded so far, whatever their outcome. */
static long long fetches_total(dynconf_t *dc) {
  return au_stat_ll(dc, "total");
}

/* The highest DescribeConfigs version dynconfd on port and the codec both
 * speak, from dynconfd's own ApiVersions answer; -1 when it cannot be
 * learned. */
static int16_t describe_version_both(int port) {
  char bs[64], errstr[512] = "";
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  dc_kclient_t *kc = dc_kclient_new("agent-wire-probe"); /* freed below */
  int16_t lo = -1, hi = -1, v = -1;
  if (kc && !dc_kclient_connect(kc, bs, 5000, errstr, sizeof(errstr)) &&
      !dc_kclient_api_versions(kc, 5000, errstr, sizeof(errstr)) &&
      dc_kclient_api_range(kc, DC_API_DESCRIBE_CONFIGS, &lo, &hi)) {
    const dc_api_info_t *ai = dc_api_info(DC_API_DESCRIBE_CONFIGS);
    v = ai && hi > ai->max_version ? ai->max_version : hi;
    diag("dynconfd offers DescribeConfigs v%d-%d, the codec v%d-%d", lo, hi,
         ai ? ai->min_version : -1, ai ? ai->max_version : -1);
  } else {
    diag("ApiVersions from dynconfd: %s", errstr);
  }
  dc_kclient_destroy(kc);
  return v;
}

/* ---- 1: on the wire ---------------------------------------------------------- */

/* Counts a Watch request of the wire log; diag()s a wrong one. */
static void wire_watch(const wp_req_t *q, int i, const char *cid, int *n_watch,
                       int *n_bad) {
  bool good = q->body_ok && q->version == 1 && !strcmp(q->resource_name, cid) &&
              q->watch_timeout > 0 && q->watch_timeout <= 100 &&
              (*n_watch == 0) == (q->watch_known == -1);
  if (!good) {
    (*n_bad)++;
    diag("  Watch %d: v%d decoded=%d client '%s' known %lld timeout %d", i,
         q->version, q->body_ok, q->resource_name, (long long)q->watch_known,
         q->watch_timeout);
  }
  (*n_watch)++;
}

/* Counts a ClientReport of the wire log; diag()s a wrong one. A watching
 * agent names the version (from a Watch answer), a polling one -1. */
static void wire_report(const wp_req_t *q, int i, const char *cid,
                        int *n_report, int *n_bad) {
  bool good = q->body_ok && q->version == 0 && !strcmp(q->resource_name, cid) &&
              strlen(q->instance) == 32 && !strcmp(q->kind, "producer") &&
              !strncmp(q->library, "librdkafka/", 11) &&
              q->report_outcome == DC_OUTCOME_APPLIED &&
              q->watch_known > 0;
  if (!good) {
    (*n_bad)++;
    diag("  ClientReport %d: v%d decoded=%d client '%s' instance '%s' kind "
         "'%s' library '%s' outcome %d version %lld", i, q->version,
         q->body_ok, q->resource_name, q->instance, q->kind, q->library,
         q->report_outcome, (long long)q->watch_known);
  }
  (*n_report)++;
}

/* watch: the agent may use dynconfd's Watch between its fetches. */
static void test_wire(bool watch) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "wire: dynconfd started (dynconf.watch=%s)",
          watch ? "true" : "false")) {
    diag("%s", errstr);
    return;
  }
  const char *cid = watch ? "wire-w" : "wire-p";
  int16_t want_v = describe_version_both(d.port);
  ok(want_v >= 1, "wire: dynconfd and the codec share DescribeConfigs v%d",
     want_v);
  is_int(au_alter(d.port, cid, "acks=0"), 0, "wire: acks=0 set for %s", cid);

  static wproxy_t wp;
  if (!ok(!wp_start(&wp, d.port), "wire: proxy in front of dynconfd")) {
    dc_tu_daemon_stop(&d);
    return;
  }
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", wp.kp.port);
  rec_t r = {0};
  dynconf_t *dc = agent_new(bs, cid, &r, errstr, sizeof(errstr),
                            "dynconf.refresh.interval.ms", "100",
                            "dynconf.watch", watch ? "true" : "false",
                            "dynconf.startup.required", "true", NULL);
  if (!ok(dc, "wire: agent created through the proxy")) {
    diag("%s", errstr);
    wp_stop(&wp);
    dc_tu_daemon_stop(&d);
    return;
  }
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "wire: UP after dynconf_new");
  ok(au_eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT),
     "wire: acks=0 from the client's override");
  long long okc = wait_stat(dc, "ok", 6);
  ok(okc >= 6, "wire: six successful fetches (%lld) at a 100 ms interval",
     okc);
  is_int(kproxy_count(&wp.kp, &wp.kp.n_accepted), 1,
         "wire: one connection for all of them");
  is_int(au_stat_ll(dc, "errors"), 0, "wire: no failed fetch");

  int n;
  wp_req_t *log = wp_log_copy(&wp, 0, &n);
  int n_av = 0, n_dc = 0, n_other = 0, n_bad_dc = 0, n_wrong_conn = 0;
  int n_watch = 0, n_bad_watch = 0, n_report = 0, n_bad_report = 0;
  int16_t av_version = -1;
  for (int i = 0; log && i < n; i++) {
    const wp_req_t *q = &log[i];
    if (q->conn != 1)
      n_wrong_conn++;
    if (q->key == DC_API_API_VERSIONS) {
      n_av++;
      av_version = q->version;
      if (q->seq != 0)
        diag("  ApiVersions is request %d of its connection", q->seq);
      continue;
    }
    if (watch && q->key == DC_API_WATCH) {
      wire_watch(q, i, cid, &n_watch, &n_bad_watch);
      continue;
    }
    if (q->key == DC_API_CLIENT_REPORT) {
      wire_report(q, i, cid, &n_report, &n_bad_report);
      continue;
    }
    if (q->key != DC_API_DESCRIBE_CONFIGS) {
      n_other++;
      diag("  request %d: api key %d v%d", i, q->key, q->version);
      continue;
    }
    n_dc++;
    bool good = q->body_ok && q->version == want_v && q->n_resources == 1 &&
                q->resource_type == DC_RES_CLIENT &&
                !strcmp(q->resource_name, cid);
    if (!good) {
      n_bad_dc++;
      diag("  DescribeConfigs %d: v%d decoded=%d resources=%d type=%d "
           "name='%s'", i, q->version, q->body_ok, q->n_resources,
           q->resource_type, q->resource_name);
    }
  }
  diag("wire: %d requests: %d ApiVersions (v%d, software '%s'), %d "
       "DescribeConfigs (v%d), %d other", n, n_av, av_version,
       log && n ? log[0].software : "", n_dc, n && log ? log[n - 1].version : -1,
       n_other);
  is_int(n_other, 0, "wire: no API key but ApiVersions, DescribeConfigs, "
                     "ClientReport%s (no Metadata, no other admin request)",
         watch ? " and Watch" : "");
  is_int(n_report, 1, "wire: one ClientReport (the configuration did not "
                      "change again)");
  is_int(n_bad_report, 0, "wire: it names '%s', a 32-digit instance, a "
         "producer on librdkafka, applied, the version the server named", cid);
  if (watch) {
    ok(n_watch >= 1, "wire: the agent watches between fetches (%d Watch "
       "requests)", n_watch);
    is_int(n_bad_watch, 0, "wire: every Watch is v1 for '%s', bounded by the "
           "100 ms interval, known_version -1 only the first time", cid);
  }
  is_int(n_av, 1, "wire: one ApiVersions");
  is_int(av_version, 3, "wire: ApiVersions v3");
  ok(n > 0 && log[0].key == DC_API_API_VERSIONS,
     "wire: ApiVersions is the connection's first request");
  ok(n_dc >= 6, "wire: a DescribeConfigs per fetch (%d)", n_dc);
  is_int(n_bad_dc, 0, "wire: every DescribeConfigs is v%d for one resource "
                      "of type 9 named '%s'", want_v, cid);
  is_int(n_wrong_conn, 0, "wire: every request on the first connection");
  free(log);

  dynconf_destroy(dc);
  wp_stop(&wp);
  is_int(dc_tu_daemon_stop(&d), 0, "wire: dynconfd stops cleanly");
}

/* ---- 2: a server without DescribeConfigs --------------------------------------- */

/* The agent's fail-open and fail-closed start against librdkafka's mock
 * cluster (its ApiVersions answer lists no key 32), through the proxy;
 * then dynconfd takes the mock's place behind the same address and the
 * next probe must find it. */
static void test_no_describe_configs(void) {
  char errstr[512], mock_bs[256];
  rd_kafka_t *mrk = NULL;
  rd_kafka_mock_cluster_t *mcl = au_mock_new(1, &mrk, mock_bs, sizeof(mock_bs));
  if (!ok(mcl, "no DescribeConfigs: mock cluster started (%s)",
          mcl ? mock_bs : "-"))
    return;
  /* One broker: its port ends the bootstrap string. */
  const char *colon = strrchr(mock_bs, ':');
  int mock_port = colon ? atoi(colon + 1) : -1;
  static wproxy_t wp;
  if (!ok(mock_port > 0 && !wp_start(&wp, mock_port),
          "no DescribeConfigs: proxy in front of the mock broker")) {
    rd_kafka_mock_cluster_destroy(mcl);
    rd_kafka_destroy(mrk);
    return;
  }
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", wp.kp.port);

  /* Fail-open. */
  rec_t r = {0};
  int64_t t0 = dc_tu_now_ms();
  dynconf_t *dc = agent_new(bs, "nodc-open", &r, errstr, sizeof(errstr),
                            "dynconf.startup.timeout.ms", "30000",
                            "dynconf.unsupported.reprobe.ms", "1000", NULL);
  int64_t took = dc_tu_now_ms() - t0;
  if (ok(dc, "fail-open: dynconf_new returns an agent")) {
    is_int(dynconf_state(dc), DYNCONF_STATE_UNSUPPORTED,
           "fail-open: UNSUPPORTED on return");
    ok(took < 15000, "fail-open: dynconf_new concluded in %lld ms (start-up "
                     "timeout 30000)", (long long)took);
    is_int(au_stat_ll(dc, "unsupported"), 1,
           "fail-open: the first fetch concluded UNSUPPORTED");
    /* Three re-probes (1 s apart): each must conclude UNSUPPORTED again,
     * and any further event would have been queued by then. */
    long long total = wait_stat(dc, "total", 4);
    char *st = dynconf_stats_json(dc); /* ours, freed below */
    long long uns = au_json_ll(st, "unsupported");
    long long errs = au_json_ll(st, "errors");
    total = au_json_ll(st, "total");
    free(st);
    ok(total >= 4, "fail-open: re-probed (%lld fetches)", total);
    is_int(uns, total, "fail-open: every re-probe concluded UNSUPPORTED");
    is_int(errs, 0, "fail-open: no re-probe counted as a failed fetch");
    dynconf_poll(dc, 0);
    is_int(r.n_unsupported, 1, "fail-open: exactly one UNSUPPORTED event");
    is_int(r.n_error + r.n_change + r.n_other, 0, "fail-open: no other event");
    ok(strstr(r.unsupported_err, "DescribeConfigs"),
       "fail-open: the UNSUPPORTED event says DescribeConfigs: %s",
       r.unsupported_err);
    is_int(dynconf_state(dc), DYNCONF_STATE_UNSUPPORTED,
           "fail-open: still UNSUPPORTED");
    /* The allowed keys carry the application's values. */
    rd_kafka_conf_t *app = app_conf(bs, "nodc-open");
    const char *keys[] = {"acks", "session.timeout.ms",
                          "heartbeat.interval.ms"};
    int n_app = 0;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
      char want[128];
      au_conf_val(app, keys[i], want, sizeof(want));
      n_app += au_eff_is(dc, keys[i], want, DYNCONF_SOURCE_APP);
    }
    is_int(n_app, 3, "fail-open: acks, session.timeout.ms and "
                     "heartbeat.interval.ms are the application's");
    ok(au_eff_is(dc, "acks", "1", DYNCONF_SOURCE_APP),
       "fail-open: acks=1 as the application set it");
    rd_kafka_conf_destroy(app);
  } else {
    diag("%s", errstr);
  }

  /* Fail-closed. */
  rec_t rc = {0};
  t0 = dc_tu_now_ms();
  dynconf_t *closed = agent_new(bs, "nodc-closed", &rc, errstr, sizeof(errstr),
                                "dynconf.startup.timeout.ms", "30000",
                                "dynconf.startup.required", "true", NULL);
  took = dc_tu_now_ms() - t0;
  ok(!closed, "fail-closed: dynconf_new returns NULL");
  dynconf_destroy(closed);
  ok(took < 15000, "fail-closed: in %lld ms (start-up timeout 30000)",
     (long long)took);
  diag("fail-closed: %s", errstr);
  ok(strstr(errstr, "DescribeConfigs") && strstr(errstr, "startup.required"),
     "fail-closed: errstr names the setting and the reason");

  int n;
  wp_req_t *log = wp_log_copy(&wp, 0, &n);
  int n_not_av = 0;
  for (int i = 0; log && i < n; i++)
    if (log[i].key != DC_API_API_VERSIONS) {
      n_not_av++;
      diag("  request %d to the mock: api key %d v%d", i, log[i].key,
           log[i].version);
    }
  ok(n > 0, "no DescribeConfigs: the agents asked the mock (%d requests)", n);
  is_int(n_not_av, 0, "no DescribeConfigs: nothing but ApiVersions went to "
                      "the mock (no DescribeConfigs it does not offer)");
  free(log);

  /* dynconfd takes the mock's place behind the proxy's address. */
  dc_tu_daemon_t d;
  if (dc && ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr,
                                   sizeof(errstr)),
               "server gains DescribeConfigs: dynconfd started")) {
    is_int(au_alter(d.port, "nodc-open", "acks=0"), 0,
           "server gains DescribeConfigs: acks=0 set for nodc-open");
    kproxy_set_upstream(&wp.kp, d.port);
    ok(kproxy_drop(&wp.kp, WAIT_MS),
       "server gains DescribeConfigs: connections to the mock "
       "closed");
    int mark = wp_mark(&wp);
    long long total = fetches_total(dc);
    dynconf_refresh_now(dc);
    wait_stat(dc, "total", total + 1);
    dynconf_poll(dc, 0);
    is_int(dynconf_state(dc), DYNCONF_STATE_UP,
           "server gains DescribeConfigs: the next probe finds it (UP)");
    ok(au_eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT),
       "server gains DescribeConfigs: acks=0 from the client's override");
    is_int(r.n_change, 1, "server gains DescribeConfigs: one CHANGE event");
    log = wp_log_copy(&wp, mark, &n);
    for (int i = 0; log && i < n; i++)
      diag("  after the swap: connection %d request %d: api key %d v%d",
           log[i].conn, log[i].seq, log[i].key, log[i].version);
    if (!n)
      diag("  after the swap: no request reached the new server (%d "
           "connections accepted in all)",
           kproxy_count(&wp.kp, &wp.kp.n_accepted));
    ok(n > 0 && log[0].seq == 0 && log[0].key == DC_API_API_VERSIONS,
       "server gains DescribeConfigs: the new connection starts with "
       "ApiVersions");
    free(log);
    dynconf_destroy(dc);
    dc = NULL;
    is_int(dc_tu_daemon_stop(&d), 0,
           "server gains DescribeConfigs: dynconfd stops cleanly");
  }
  dynconf_destroy(dc);
  wp_stop(&wp);
  rd_kafka_mock_cluster_destroy(mcl);
  rd_kafka_destroy(mrk);
}

/* ---- 3: prompt destroy while a fetch is in flight ------------------------------- */

static void destroy_in_flight(bool tls) {
  const char *what = tls ? "destroy (TLS)" : "destroy";
  silent_t s;
  if (!ok(!silent_open(&s), "%s: silent server listening", what))
    return;
  char bs[64], errstr[512];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", s.port);
  rec_t r = {0};
  dynconf_t *dc = agent_new(
      bs, tls ? "silent-tls" : "silent", &r, errstr, sizeof(errstr),
      "dynconf.request.timeout.ms", "60000", "dynconf.startup.timeout.ms",
      "200", "dynconf.retry.backoff.ms", "3600000",
      "dynconf.retry.backoff.max.ms", "3600000",
      "dynconf.refresh.interval.ms", "3600000", "dynconf.security.protocol",
      tls ? "SSL" : "PLAINTEXT", NULL);
  if (!ok(dc, "%s: agent created (fail-open)", what)) {
    diag("%s", errstr);
    silent_close(&s);
    return;
  }
  is_int(dynconf_state(dc), DYNCONF_STATE_DEGRADED,
         "%s: the first fetch timed out", what);
  dynconf_refresh_now(dc);
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  int idx;
  for (;;) {
    silent_pump(&s);
    idx = silent_waiting(&s, tls, DC_API_API_VERSIONS);
    if (idx >= 0 || dc_tu_now_ms() > deadline)
      break;
    dynconf_poll(dc, 5);
  }
  ok(idx >= 0, tls ? "%s: the agent's ClientHello arrived and it waits"
                   : "%s: the agent's ApiVersions arrived and it waits",
     what);
  is_int(fetches_total(dc), 1, "%s: the refresh is still in flight", what);
  int64_t t0 = dc_tu_now_ms();
  dynconf_destroy(dc);
  int64_t took = dc_tu_now_ms() - t0;
  ok(took < 5000, "%s: dynconf_destroy returned in %lld ms (request timeout "
                  "60000)", what, (long long)took);
  silent_pump(&s);
  ok(idx >= 0 && s.eof[idx], "%s: the agent closed its connection", what);
  silent_close(&s);
}

/* ---- 4: one thread ------------------------------------------------------------ */

static void test_one_thread(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "threads: dynconfd started")) {
    diag("%s", errstr);
    return;
  }
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", d.port);
  /* Run first: no thread of an earlier agent or mock cluster lingers;
   * only the counter's own warm-up thread may, for a moment. */
  int before = dc_tu_thread_count_settled(1);
  rec_t r = {0};
  dynconf_t *dc = agent_new(bs, "threads", &r, errstr, sizeof(errstr),
                            "dynconf.startup.required", "true", NULL);
  int during = dc_tu_thread_count();
  if (ok(dc, "threads: agent created")) {
    is_int(dynconf_state(dc), DYNCONF_STATE_UP, "threads: UP");
    is_int(during - before, 1, "threads: the agent added one thread (%d -> %d)",
           before, during);
    dynconf_destroy(dc);
    int after = dc_tu_thread_count_settled(before);
    is_int(after, before, "threads: back to %d after dynconf_destroy", before);
  } else {
    diag("%s", errstr);
  }
  is_int(dc_tu_daemon_stop(&d), 0, "threads: dynconfd stops cleanly");
}

/* ---- 5: reconnects ------------------------------------------------------------- */

/* Refreshes now and waits until one more fetch concluded. */
static void refresh_and_wait(dynconf_t *dc) {
  long long total = fetches_total(dc);
  dynconf_refresh_now(dc);
  wait_stat(dc, "total", total + 1);
}

/* Waits until the agent's connection is idle: its report on the newest
 * connection went out and every request has its answer. A drop that cuts
 * a report short is followed at once by a fetch of the agent's own (a
 * change may have come meanwhile), which would count beside the test's. */
static bool wp_wait_idle(wproxy_t *wp) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  for (;;) {
    int conn = kproxy_count(&wp->kp, &wp->kp.n_accepted);
    bool sent = false;
    pthread_mutex_lock(&wp->lock);
    for (int i = 0; i < wp->n_log && !sent; i++)
      sent = wp->log[i].conn == conn && wp->log[i].key == DC_API_CLIENT_REPORT;
    pthread_mutex_unlock(&wp->lock);
    int64_t left = deadline - dc_tu_now_ms();
    if (sent)
      return kproxy_wait_answered(&wp->kp, left > 0 ? (int)left : 0);
    if (left < 0)
      return false;
    dc_tu_sleep_ms(5);
  }
}

static void test_reconnect_proxy(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "reconnect: dynconfd started")) {
    diag("%s", errstr);
    return;
  }
  static wproxy_t wp;
  if (!ok(!wp_start(&wp, d.port), "reconnect: proxy in front of dynconfd")) {
    dc_tu_daemon_stop(&d);
    return;
  }
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", wp.kp.port);
  rec_t r = {0};
  /* Refreshes only when asked, so every fetch is the test's. */
  dynconf_t *dc = agent_new(bs, "reconnect", &r, errstr, sizeof(errstr),
                            "dynconf.refresh.interval.ms", "3600000",
                            "dynconf.watch", "false",
                            "dynconf.startup.required", "true", NULL);
  if (!ok(dc, "reconnect: agent created")) {
    diag("%s", errstr);
    wp_stop(&wp);
    dc_tu_daemon_stop(&d);
    return;
  }
  refresh_and_wait(dc);
  is_int(au_stat_ll(dc, "ok"), 2, "reconnect: two fetches");
  is_int(kproxy_count(&wp.kp, &wp.kp.n_accepted), 1,
         "reconnect: on one connection");

  for (int round = 1; round <= 2; round++) {
    int mark = wp_mark(&wp);
    ok(wp_wait_idle(&wp), "reconnect %d: the agent's report on connection "
       "%d was answered", round, round);
    long long ok0 = au_stat_ll(dc, "ok");
    ok(kproxy_drop(&wp.kp, WAIT_MS) &&
           kproxy_count(&wp.kp, &wp.kp.n_dropped) == round,
       "reconnect %d: the proxy closed the agent's idle connection", round);
    refresh_and_wait(dc);
    dynconf_poll(dc, 0);
    is_int(dynconf_state(dc), DYNCONF_STATE_UP, "reconnect %d: still UP",
           round);
    is_int(au_stat_ll(dc, "errors"), 0, "reconnect %d: fetches.errors 0",
           round);
    is_int(au_stat_ll(dc, "ok"), ok0 + 1, "reconnect %d: fetches.ok grew by "
           "one", round);
    is_int(r.n_error, 0, "reconnect %d: no ERROR event", round);
    is_int(kproxy_count(&wp.kp, &wp.kp.n_accepted), round + 1,
           "reconnect %d: one new connection", round);
    int n;
    wp_req_t *log = wp_log_copy(&wp, mark, &n);
    int first = -1;
    for (int i = 0; log && i < n && first < 0; i++)
      if (log[i].conn == round + 1)
        first = i;
    for (int i = 0; log && i < n; i++)
      diag("  after the drop: connection %d request %d: api key %d v%d",
           log[i].conn, log[i].seq, log[i].key, log[i].version);
    ok(first >= 0 && log[first].seq == 0 &&
           log[first].key == DC_API_API_VERSIONS && log[first].version == 3,
       "reconnect %d: the fresh connection starts with ApiVersions v3 (the "
       "server behind the address may have changed)", round);
    free(log);
  }

  /* A server without DescribeConfigs now answers at the same address: the
   * fresh connection's ApiVersions says so at once. */
  char mock_bs[256];
  rd_kafka_t *mrk = NULL;
  rd_kafka_mock_cluster_t *mcl = au_mock_new(1, &mrk, mock_bs, sizeof(mock_bs));
  const char *colon = mcl ? strrchr(mock_bs, ':') : NULL;
  if (ok(colon, "server swap: mock cluster started")) {
    kproxy_set_upstream(&wp.kp, atoi(colon + 1));
    ok(wp_wait_idle(&wp), "server swap: the agent's report on connection 3 "
       "was answered");
    ok(kproxy_drop(&wp.kp, WAIT_MS),
       "server swap: the proxy closed the agent's connection");
    long long errs0 = au_stat_ll(dc, "errors");
    refresh_and_wait(dc);
    dynconf_poll(dc, 0);
    is_int(dynconf_state(dc), DYNCONF_STATE_UNSUPPORTED,
           "server swap: UNSUPPORTED (the new server lists no DescribeConfigs)");
    is_int(au_stat_ll(dc, "errors"), errs0,
           "server swap: not a failed fetch");
    is_int(r.n_unsupported, 1, "server swap: one UNSUPPORTED event");
    if (r.n_error)
      diag("  ERROR event instead: %s", r.last_error);
  }
  dynconf_destroy(dc);
  wp_stop(&wp);
  if (mcl) {
    rd_kafka_mock_cluster_destroy(mcl);
    rd_kafka_destroy(mrk);
  }
  is_int(dc_tu_daemon_stop(&d), 0, "reconnect: dynconfd stops cleanly");
}

/* Waits until dynconfd on port lists client as connected: the agent's
 * report on the connection dynconf_new() opened went through. */
static bool reported(int port, const char *client) {
  char bs[64], err[256];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  dc_kclient_t *kc = dc_kclient_new("fleet-reader");
  bool got = false;
  if (kc && !dc_kclient_connect(kc, bs, 10000, err, sizeof(err))) {
    int64_t deadline = dc_tu_now_ms() + 30000;
    au_fleet_client_t f;
    while (!got && dc_tu_now_ms() < deadline) {
      got = au_fleet(kc, client, NULL, &f, 1) == 1 && f.connected;
      if (!got)
        dc_tu_sleep_ms(20);
    }
  }
  dc_kclient_destroy(kc);
  return got;
}

/* dynconfd restarted on the agent's port while the agent's connection is
 * idle. */
static void test_reconnect_restart(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  int port = dc_tu_closed_port();
  if (!ok(port > 0 && !daemon_on_port(&d, port, errstr, sizeof(errstr)),
          "restart: dynconfd listening on port %d", port)) {
    diag("%s", errstr);
    return;
  }
  is_int(au_alter(port, "restart", "acks=0"), 0, "restart: acks=0 set");
  char bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  rec_t r = {0};
  dynconf_t *dc = agent_new(bs, "restart", &r, errstr, sizeof(errstr),
                            "dynconf.refresh.interval.ms", "3600000",
                            "dynconf.watch", "false",
                            "dynconf.startup.required", "true", NULL);
  if (!ok(dc, "restart: agent created")) {
    diag("%s", errstr);
    dc_tu_daemon_stop(&d);
    return;
  }
  ok(au_eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT), "restart: acks=0");
  ok(reported(port, "restart"), "restart: the agent reported on its first "
                                "connection (which is idle from then on)");
  is_int(dc_tu_daemon_stop(&d), 0, "restart: dynconfd stopped");
  if (!ok(!daemon_on_port(&d, port, errstr, sizeof(errstr)),
          "restart: dynconfd back on port %d", port)) {
    diag("%s", errstr);
    dynconf_destroy(dc);
    return;
  }
  is_int(au_alter(port, "restart", "acks=-1"), 0,
         "restart: acks=-1 set after the restart");
  long long ok0 = au_stat_ll(dc, "ok");
  refresh_and_wait(dc);
  dynconf_poll(dc, 0);
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "restart: still UP");
  is_int(au_stat_ll(dc, "errors"), 0, "restart: fetches.errors 0");
  is_int(au_stat_ll(dc, "ok"), ok0 + 1, "restart: fetches.ok grew by one");
  is_int(r.n_error, 0, "restart: no ERROR event");
  ok(au_eff_is(dc, "acks", "-1", DYNCONF_SOURCE_CLIENT),
     "restart: the value set after the restart arrived");
  dynconf_destroy(dc);
  is_int(dc_tu_daemon_stop(&d), 0, "restart: dynconfd stops cleanly");
}

/* ---- 6: a bootstrap list whose first entry is refused --------------------------- */

static void test_bootstrap_list(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "bootstrap list: dynconfd started")) {
    diag("%s", errstr);
    return;
  }
  is_int(au_alter(d.port, "bslist", "acks=0"), 0, "bootstrap list: acks=0 set");
  int closed = dc_tu_closed_port();
  char bs[128];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d,127.0.0.1:%d", closed, d.port);
  rec_t r = {0};
  dynconf_t *dc = agent_new(bs, "bslist", &r, errstr, sizeof(errstr),
                            "dynconf.startup.required", "true", NULL);
  if (ok(dc, "bootstrap list: agent created from '%s'", bs)) {
    is_int(dynconf_state(dc), DYNCONF_STATE_UP,
           "bootstrap list: the first fetch succeeded");
    ok(au_eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT),
       "bootstrap list: acks=0 from the second entry");
    dynconf_poll(dc, 0);
    is_int(r.n_error, 0, "bootstrap list: no ERROR event");
    dynconf_destroy(dc);
  } else {
    diag("%s", errstr);
  }
  is_int(dc_tu_daemon_stop(&d), 0, "bootstrap list: dynconfd stops cleanly");
}

int main(void) {
  char dir[256];
  if (au_scratch(dir, sizeof(dir), g_data, sizeof(g_data), g_log,
                 sizeof(g_log)))
    return done_testing();

  test_one_thread();
  test_wire(false);
  test_wire(true);
  test_no_describe_configs();
  destroy_in_flight(false);
  destroy_in_flight(true);
  test_reconnect_proxy();
  test_reconnect_restart();
  test_bootstrap_list();

  if (tap_failed)
    dc_tu_log_tail(g_log, 30);
  dc_tu_rmrf(dir);
  return done_testing();
}
