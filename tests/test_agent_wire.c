/*
 * The agent's own Kafka-protocol connection (lib/agent/fetch.c over
 * lib/client/kclient.c), seen from outside, against real processes on
 * loopback:
 *   - on the wire, through a proxy that decodes every request frame the
 *     agent sends to dynconfd: only ApiVersions v3 and DescribeConfigs, the
 *     latter at the highest version both sides speak, for resource type 9
 *     named by the client id, all on one connection kept across refreshes;
 *   - a server without DescribeConfigs (librdkafka's mock cluster): the
 *     first fetch concludes UNSUPPORTED from the ApiVersions answer, fail-open
 *     and fail-closed, long before the start-up timeout;
 *   - dynconf_destroy() while a fetch waits on a server that accepts and
 *     never answers (plaintext), or never completes a TLS handshake;
 *   - the agent costs one thread;
 *   - a kept connection closed by the server side (the proxy drops it,
 *     dynconfd restarts on its port) is replaced without a failed fetch;
 *     every fresh connection starts with ApiVersions, so another server
 *     behind the same address (the mock cluster in dynconfd's place, or
 *     dynconfd in the mock's) is judged by its own answer at the next fetch;
 *   - a bootstrap list whose first entry refuses connections.
 *
 * Waits are "until a condition holds or a generous deadline passes". The
 * elapsed-time checks are API promises with wide margins (dynconf_new()
 * concluding from one round trip, dynconf_destroy() "returns promptly").
 */
#include "agentutil.h"

#include <dirent.h>

#define WAIT_MS 30000

static char g_data[512], g_log[512];

/* ---- a request-decoding proxy ---------------------------------------------
 *
 * One thread forwards bytes between the agent and one upstream server on
 * 127.0.0.1 (switchable), cuts the client->server stream into Kafka frames
 * and logs each request: api key, version, client id, its position on its
 * connection and, for DescribeConfigs and ApiVersions, what the body says
 * (decoded with the project's codec). Server->client bytes pass untouched.
 * wp_drop() closes every proxied connection, both sides, as a server
 * closing idle connections would.
 */

#define WP_MAX_CONNS 16
#define WP_MAX_LOG 4096
#define WP_MAX_FRAME (16 * 1024 * 1024)

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
} wp_req_t;

typedef struct wp_conn {
  int cfd, sfd; /* -1 = free slot */
  int id, n_req;
  dc_buf_t cin; /* client bytes not yet forwarded (owned) */
} wp_conn_t;

typedef struct wproxy {
  int lfd, port, wake[2];
  pthread_t thread;
  bool started;
  wp_conn_t conns[WP_MAX_CONNS]; /* proxy thread only */

  pthread_mutex_t lock; /* guards everything below */
  int upstream_port;
  bool stop;
  int drop_asked, drop_done; /* generations of wp_drop() requests */
  int n_accepted, n_dropped;
  wp_req_t log[WP_MAX_LOG];
  int n_log, n_log_lost;
} wproxy_t;

static void wp_conn_close(wp_conn_t *c) {
  if (c->cfd >= 0)
    close(c->cfd);
  if (c->sfd >= 0)
    close(c->sfd);
  c->cfd = c->sfd = -1;
  dc_buf_free(&c->cin);
}

static void wp_log_request(wproxy_t *wp, wp_conn_t *c, const uint8_t *p,
                           size_t n) {
  wp_req_t r;
  memset(&r, 0, sizeof(r));
  r.conn = c->id;
  r.seq = c->n_req++;
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

/* Forwards what the agent sent, frame by frame, logging each request.
 * -1 when the connection should be closed. */
static int wp_from_client(wproxy_t *wp, wp_conn_t *c) {
  dc_buf_t *in = &c->cin;
  if (dc_buf_reserve(in, 65536))
    return -1;
  ssize_t k = recv(c->cfd, in->data + in->len, 65536, 0);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (k <= 0)
    return -1;
  in->len += (size_t)k;
  for (;;) {
    int32_t size;
    int r = dc_frame_peek(in->data, in->len, WP_MAX_FRAME, &size);
    if (r < 0)
      return -1;
    if (r == 0)
      return 0;
    size_t flen = 4 + (size_t)size;
    wp_log_request(wp, c, in->data + 4, (size_t)size);
    if (dc_tu_write_all(c->sfd, in->data, flen))
      return -1;
    dc_buf_consume(in, flen);
  }
}

static int wp_from_server(wp_conn_t *c) {
  uint8_t buf[65536];
  ssize_t k = recv(c->sfd, buf, sizeof(buf), 0);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (k <= 0)
    return -1;
  return dc_tu_write_all(c->cfd, buf, (size_t)k);
}

static void wp_accept(wproxy_t *wp) {
  int cfd = accept4(wp->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (cfd < 0)
    return;
  pthread_mutex_lock(&wp->lock);
  int up = wp->upstream_port;
  int id = ++wp->n_accepted;
  pthread_mutex_unlock(&wp->lock);
  int slot = -1;
  for (int i = 0; i < WP_MAX_CONNS && slot < 0; i++)
    if (wp->conns[i].cfd < 0)
      slot = i;
  int sfd = slot >= 0 ? dc_tu_connect(up) : -1;
  if (sfd < 0) {
    close(cfd);
    return;
  }
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  wp_conn_t *c = &wp->conns[slot];
  c->cfd = cfd;
  c->sfd = sfd;
  c->id = id;
  c->n_req = 0;
  dc_buf_init(&c->cin);
}

static void *wp_thread(void *arg) {
  wproxy_t *wp = arg;
  struct pollfd pfd[2 + 2 * WP_MAX_CONNS];
  int owner[2 + 2 * WP_MAX_CONNS];
  for (;;) {
    int n = 0;
    pfd[n] = (struct pollfd){wp->wake[0], POLLIN, 0};
    owner[n++] = -1;
    pfd[n] = (struct pollfd){wp->lfd, POLLIN, 0};
    owner[n++] = -1;
    for (int i = 0; i < WP_MAX_CONNS; i++)
      if (wp->conns[i].cfd >= 0) {
        pfd[n] = (struct pollfd){wp->conns[i].cfd, POLLIN, 0};
        owner[n++] = i;
        pfd[n] = (struct pollfd){wp->conns[i].sfd, POLLIN, 0};
        owner[n++] = i;
      }
    if (poll(pfd, (nfds_t)n, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (pfd[0].revents) {
      char sink[64];
      ssize_t r = read(wp->wake[0], sink, sizeof(sink));
      (void)r;
      pthread_mutex_lock(&wp->lock);
      bool stop = wp->stop;
      int asked = wp->drop_asked;
      pthread_mutex_unlock(&wp->lock);
      if (stop)
        break;
      int dropped = 0;
      for (int i = 0; i < WP_MAX_CONNS; i++)
        if (wp->conns[i].cfd >= 0) {
          wp_conn_close(&wp->conns[i]);
          dropped++;
        }
      pthread_mutex_lock(&wp->lock);
      wp->n_dropped += dropped;
      wp->drop_done = asked;
      pthread_mutex_unlock(&wp->lock);
      continue; /* the pollfd set is stale now */
    }
    if (pfd[1].revents & POLLIN)
      wp_accept(wp);
    for (int k = 2; k < n; k++) {
      wp_conn_t *c = &wp->conns[owner[k]];
      if (!pfd[k].revents || c->cfd < 0 || (pfd[k].fd != c->cfd &&
                                            pfd[k].fd != c->sfd))
        continue; /* closed earlier in this round */
      int r = pfd[k].fd == c->cfd ? wp_from_client(wp, c) : wp_from_server(c);
      if (r)
        wp_conn_close(c);
    }
  }
  for (int i = 0; i < WP_MAX_CONNS; i++)
    if (wp->conns[i].cfd >= 0)
      wp_conn_close(&wp->conns[i]);
  return NULL;
}

/* A proxy on 127.0.0.1:<ephemeral> (wp->port) in front of
 * 127.0.0.1:upstream_port. 0 or -1. wp is the caller's (static storage:
 * it is large); wp_stop() frees what this made. */
static int wp_start(wproxy_t *wp, int upstream_port) {
  memset(wp, 0, sizeof(*wp));
  for (int i = 0; i < WP_MAX_CONNS; i++)
    wp->conns[i].cfd = wp->conns[i].sfd = -1;
  wp->upstream_port = upstream_port;
  if (dc_tu_listen(&wp->lfd, &wp->port, wp->wake))
    return -1;
  pthread_mutex_init(&wp->lock, NULL);
  if (pthread_create(&wp->thread, NULL, wp_thread, wp)) {
    dc_tu_unlisten(&wp->lfd, wp->wake);
    pthread_mutex_destroy(&wp->lock);
    return -1;
  }
  wp->started = true;
  return 0;
}

static void wp_stop(wproxy_t *wp) {
  if (!wp->started)
    return;
  pthread_mutex_lock(&wp->lock);
  wp->stop = true;
  pthread_mutex_unlock(&wp->lock);
  dc_tu_wake(wp->wake[1]);
  pthread_join(wp->thread, NULL);
  dc_tu_unlisten(&wp->lfd, wp->wake);
  pthread_mutex_destroy(&wp->lock);
  wp->started = false;
}

/* Closes every proxied connection; returns once the proxy thread has (1),
 * or 0 at the deadline. */
static int wp_drop(wproxy_t *wp) {
  pthread_mutex_lock(&wp->lock);
  int gen = ++wp->drop_asked;
  pthread_mutex_unlock(&wp->lock);
  dc_tu_wake(wp->wake[1]);
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  for (;;) {
    pthread_mutex_lock(&wp->lock);
    bool done = wp->drop_done >= gen;
    pthread_mutex_unlock(&wp->lock);
    if (done)
      return 1;
    if (dc_tu_now_ms() > deadline)
      return 0;
    dc_tu_sleep_ms(5);
  }
}

/* New connections go to 127.0.0.1:port from now on. */
static void wp_set_upstream(wproxy_t *wp, int port) {
  pthread_mutex_lock(&wp->lock);
  wp->upstream_port = port;
  pthread_mutex_unlock(&wp->lock);
}

static int wp_get(wproxy_t *wp, const int *field) {
  pthread_mutex_lock(&wp->lock);
  int v = *field;
  pthread_mutex_unlock(&wp->lock);
  return v;
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
  s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
      listen(s->lfd, 16) || getsockname(s->lfd, (struct sockaddr *)&sa, &sl)) {
    if (s->lfd >= 0)
      close(s->lfd);
    s->lfd = -1;
    return -1;
  }
  s->port = ntohs(sa.sin_port);
  return 0;
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

/* A loopback port nobody listens on (bound, then closed). */
static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = -1;
  if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
      !getsockname(fd, (struct sockaddr *)&sa, &sl))
    port = ntohs(sa.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

static int thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d)
    return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

/* The thread count once it has come down to at most `want` (an exited,
 * joined thread may linger in /proc/self/task for a moment), or what it
 * is at the deadline. */
static int thread_count_settled(int want) {
  int64_t deadline = dc_tu_now_ms() + 10000;
  int n = thread_count();
  while (n > want && dc_tu_now_ms() < deadline) {
    dc_tu_sleep_ms(20);
    n = thread_count();
  }
  return n;
}

/* Starts dynconfd with an extra listener on 127.0.0.1:port (retrying while
 * the port is not free yet). 0 or -1. */
static int daemon_on_port(dc_tu_daemon_t *d, int port, char *errstr,
                          size_t errstr_size) {
  char listen[64];
  snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
  const char *extra[] = {"--listen", listen, NULL};
  for (int i = 0; i < 40; i++) {
    if (!dc_tu_daemon_start(d, g_data, g_log, extra, errstr, errstr_size))
      return 0;
    dc_tu_sleep_ms(250);
  }
  return -1;
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
  for (const char *k; (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    if (dynconf_conf_set(dconf, k, v, e, sizeof(e)) != DYNCONF_CONF_OK)
      diag("dynconf conf %s=%s: %s", k, v, e);
  }
  va_end(ap);
  dynconf_conf_set_change_cb(dconf, on_change);
  dynconf_conf_set_log_cb(dconf, on_log);
  dynconf_conf_set_opaque(dconf, rec);
  errstr[0] = '\0';
  dynconf_t *dc = dynconf_new(RD_KAFKA_PRODUCER, app, dconf, errstr,
                              errstr_size);
  if (!dc)
    dynconf_conf_destroy(dconf);
  rd_kafka_conf_destroy(app);
  return dc;
}

/* Polls dc until its statistics' fetches.<key> reaches want, or the
 * deadline. Returns the last value read. */
static long long wait_stat(dynconf_t *dc, const char *key, long long want) {
  int64_t deadline = dc_tu_now_ms() + WAIT_MS;
  long long v;
  while ((v = au_stat_ll(dc, key)) < want && dc_tu_now_ms() < deadline)
    dynconf_poll(dc, 10);
  dynconf_poll(dc, 0);
  return v;
}

/* Fetches concluded so far, whatever their outcome. */
static long long fetches_total(dynconf_t *dc) {
  return au_stat_ll(dc, "total");
}

static bool eff_is(dynconf_t *dc, const char *key, const char *want,
                   dynconf_source_t want_src) {
  char v[128];
  dynconf_source_t s;
  if (dynconf_effective_get(dc, key, v, sizeof(v), &s)) {
    diag("  %s is not an allowed key", key);
    return false;
  }
  bool same = !strcmp(au_acks_norm(v), au_acks_norm(want)) && s == want_src;
  if (!same)
    diag("  effective %s = \"%s\" (%s), want \"%s\" (%s)", key, v,
         dynconf_source_name(s), want, dynconf_source_name(want_src));
  return same;
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

static void test_wire(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  if (!ok(!dc_tu_daemon_start(&d, g_data, g_log, NULL, errstr, sizeof(errstr)),
          "wire: dynconfd started")) {
    diag("%s", errstr);
    return;
  }
  const char *cid = "wire-p";
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
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", wp.port);
  rec_t r = {0};
  dynconf_t *dc = agent_new(bs, cid, &r, errstr, sizeof(errstr),
                            "dynconf.refresh.interval.ms", "100",
                            "dynconf.startup.required", "true", NULL);
  if (!ok(dc, "wire: agent created through the proxy")) {
    diag("%s", errstr);
    wp_stop(&wp);
    dc_tu_daemon_stop(&d);
    return;
  }
  is_int(dynconf_state(dc), DYNCONF_STATE_UP, "wire: UP after dynconf_new");
  ok(eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT),
     "wire: acks=0 from the client's override");
  long long okc = wait_stat(dc, "ok", 6);
  ok(okc >= 6, "wire: six successful fetches (%lld) at a 100 ms interval",
     okc);
  is_int(wp_get(&wp, &wp.n_accepted), 1,
         "wire: one connection for all of them");
  is_int(au_stat_ll(dc, "errors"), 0, "wire: no failed fetch");

  int n;
  wp_req_t *log = wp_log_copy(&wp, 0, &n);
  int n_av = 0, n_dc = 0, n_other = 0, n_bad_dc = 0, n_wrong_conn = 0;
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
  is_int(n_other, 0, "wire: no API key but ApiVersions and DescribeConfigs "
                     "(no Metadata, no other admin request)");
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
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", wp.port);

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
      n_app += eff_is(dc, keys[i], want, DYNCONF_SOURCE_APP);
    }
    is_int(n_app, 3, "fail-open: acks, session.timeout.ms and "
                     "heartbeat.interval.ms are the application's");
    ok(eff_is(dc, "acks", "1", DYNCONF_SOURCE_APP),
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
    wp_set_upstream(&wp, d.port);
    ok(wp_drop(&wp), "server gains DescribeConfigs: connections to the mock "
                     "closed");
    int mark = wp_get(&wp, &wp.n_log);
    long long total = fetches_total(dc);
    dynconf_refresh_now(dc);
    wait_stat(dc, "total", total + 1);
    dynconf_poll(dc, 0);
    is_int(dynconf_state(dc), DYNCONF_STATE_UP,
           "server gains DescribeConfigs: the next probe finds it (UP)");
    ok(eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT),
       "server gains DescribeConfigs: acks=0 from the client's override");
    is_int(r.n_change, 1, "server gains DescribeConfigs: one CHANGE event");
    log = wp_log_copy(&wp, mark, &n);
    for (int i = 0; log && i < n; i++)
      diag("  after the swap: connection %d request %d: api key %d v%d",
           log[i].conn, log[i].seq, log[i].key, log[i].version);
    if (!n)
      diag("  after the swap: no request reached the new server (%d "
           "connections accepted in all)", wp_get(&wp, &wp.n_accepted));
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
  /* Run first: no thread of an earlier agent or mock cluster lingers. */
  int before = thread_count();
  rec_t r = {0};
  dynconf_t *dc = agent_new(bs, "threads", &r, errstr, sizeof(errstr),
                            "dynconf.startup.required", "true", NULL);
  int during = thread_count();
  if (ok(dc, "threads: agent created")) {
    is_int(dynconf_state(dc), DYNCONF_STATE_UP, "threads: UP");
    is_int(during - before, 1, "threads: the agent added one thread (%d -> %d)",
           before, during);
    dynconf_destroy(dc);
    int after = thread_count_settled(before);
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
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", wp.port);
  rec_t r = {0};
  /* Refreshes only when asked, so every fetch is the test's. */
  dynconf_t *dc = agent_new(bs, "reconnect", &r, errstr, sizeof(errstr),
                            "dynconf.refresh.interval.ms", "3600000",
                            "dynconf.startup.required", "true", NULL);
  if (!ok(dc, "reconnect: agent created")) {
    diag("%s", errstr);
    wp_stop(&wp);
    dc_tu_daemon_stop(&d);
    return;
  }
  refresh_and_wait(dc);
  is_int(au_stat_ll(dc, "ok"), 2, "reconnect: two fetches");
  is_int(wp_get(&wp, &wp.n_accepted), 1, "reconnect: on one connection");

  for (int round = 1; round <= 2; round++) {
    int mark = wp_get(&wp, &wp.n_log);
    long long ok0 = au_stat_ll(dc, "ok");
    ok(wp_drop(&wp) && wp_get(&wp, &wp.n_dropped) == round,
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
    is_int(wp_get(&wp, &wp.n_accepted), round + 1,
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
    wp_set_upstream(&wp, atoi(colon + 1));
    ok(wp_drop(&wp), "server swap: the proxy closed the agent's connection");
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

/* dynconfd restarted on the agent's port while the agent's connection is
 * idle. */
static void test_reconnect_restart(void) {
  dc_tu_daemon_t d;
  char errstr[512];
  int port = closed_port();
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
                            "dynconf.startup.required", "true", NULL);
  if (!ok(dc, "restart: agent created")) {
    diag("%s", errstr);
    dc_tu_daemon_stop(&d);
    return;
  }
  ok(eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT), "restart: acks=0");
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
  ok(eff_is(dc, "acks", "-1", DYNCONF_SOURCE_CLIENT),
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
  int closed = closed_port();
  char bs[128];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d,127.0.0.1:%d", closed, d.port);
  rec_t r = {0};
  dynconf_t *dc = agent_new(bs, "bslist", &r, errstr, sizeof(errstr),
                            "dynconf.startup.required", "true", NULL);
  if (ok(dc, "bootstrap list: agent created from '%s'", bs)) {
    is_int(dynconf_state(dc), DYNCONF_STATE_UP,
           "bootstrap list: the first fetch succeeded");
    ok(eff_is(dc, "acks", "0", DYNCONF_SOURCE_CLIENT),
       "bootstrap list: acks=0 from the second entry");
    dynconf_poll(dc, 0);
    is_int(r.n_error, 0, "bootstrap list: no ERROR event");
    dynconf_destroy(dc);
  } else {
    diag("%s", errstr);
  }
  is_int(dc_tu_daemon_stop(&d), 0, "bootstrap list: dynconfd stops cleanly");
}

static void *warm_up(void *arg) { return arg; }

int main(void) {
  char dir[256];
  if (dc_tu_tmpdir(dir, sizeof(dir))) {
    ok(0, "tmpdir");
    return done_testing();
  }
  snprintf(g_log, sizeof(g_log), "%s/dynconfd.log", dir);
  snprintf(g_data, sizeof(g_data), "%s/data", dir);
  mkdir(g_data, 0700);
  /* A sanitizer runtime may start a helper thread with the first
   * pthread_create (TSan does); start one first so the counts include it. */
  pthread_t warm;
  if (!pthread_create(&warm, NULL, warm_up, NULL))
    pthread_join(warm, NULL);

  test_one_thread();
  test_wire();
  test_no_describe_configs();
  destroy_in_flight(false);
  destroy_in_flight(true);
  test_reconnect_proxy();
  test_reconnect_restart();
  test_bootstrap_list();

  if (tap_failed) {
    dc_tu_daemon_t d = {0};
    snprintf(d.log_path, sizeof(d.log_path), "%s", g_log);
    dc_tu_daemon_log_tail(&d, 30);
  }
  dc_tu_rmrf(dir);
  return done_testing();
}
