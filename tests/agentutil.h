/*
 * Helpers shared by the managed-client end-to-end tests
 * (test_managed_producer.c, test_managed_consumer.c):
 *   - setting client configs on dynconfd with IncrementalAlterConfigs
 *     through our codec (one request per change set, so the agent sees a
 *     whole set in one fetch);
 *   - application confs, agents with a counting change/log callback;
 *   - reading librdkafka conf values and numbers out of stats JSON;
 *   - the librdkafka mock cluster;
 *   - au_proxy: a TCP proxy in front of ONE mock broker that records the
 *     group requests (JoinGroup with member id and group.instance.id,
 *     LeaveGroup, SyncGroup, Heartbeat, OffsetCommit) per client id and
 *     rewrites advertised addresses. It is a copy of tests/kproxy.h
 *     extended with that log (kproxy.h is someone else's and only records
 *     JoinGroup's session timeout).
 *
 * Header-only: every function is static inline so a test that uses only
 * some of them builds with -Werror. Include tap.h first.
 * Ownership: au_* functions that return allocated objects say so; the
 * au_proxy_t is the caller's (static storage), au_proxy_start() allocates
 * sockets/buffers/thread and au_proxy_stop() frees them.
 */
#ifndef DC_AGENTUTIL_H
#define DC_AGENTUTIL_H

#include "tap.h"
#include "testutil.h"

#include "codec/proto.h"
#include "common/kclient.h"
#include "dynconf.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <stdarg.h>

/* ---- dynconfd ------------------------------------------------------------ */

static inline int au_enc_incremental_(dc_buf_t *b, int16_t v, const void *req) {
  return dc_incremental_alter_configs_req_encode(b, v, req);
}

/* Alters one client entity ("<default>" = the default entity) of the
 * dynconfd on 127.0.0.1:port in ONE IncrementalAlterConfigs request.
 * spec: "k=v" sets, "-k" deletes, comma separated. Returns the
 * per-resource error code (0 = done), -1 when the request failed. */
static inline int au_alter(int port, const char *entity, const char *spec) {
  char bs[64], errstr[512] = "", buf[1024];
  dc_alter_config_t ops[16];
  int32_t n = 0;
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  snprintf(buf, sizeof(buf), "%s", spec);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t && n < 16;
       t = strtok_r(NULL, ",", &save)) {
    if (*t == '-') {
      ops[n++] = (dc_alter_config_t){.name = t + 1, .op = DC_OP_DELETE};
      continue;
    }
    char *eq = strchr(t, '=');
    if (!eq)
      return -1;
    *eq = '\0';
    ops[n++] = (dc_alter_config_t){.name = t, .op = DC_OP_SET, .value = eq + 1};
  }
  dc_alter_resource_t r = {.resource_type = DC_RES_CLIENT,
                           .resource_name = (char *)entity,
                           .n_configs = n,
                           .configs = ops};
  dc_alter_configs_req_t req = {.n_resources = 1, .resources = &r};
  dc_kclient_t *kc = dc_kclient_new("managed-test-admin"); /* freed below */
  dc_arena_t arena;
  dc_arena_init(&arena);
  int rc = -1;
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  int16_t v = -1;
  if (!kc || dc_kclient_connect(kc, bs, 5000, errstr, sizeof(errstr)) ||
      dc_kclient_api_versions(kc, 5000, errstr, sizeof(errstr)) ||
      (v = dc_kclient_pick_version(kc, DC_API_INCREMENTAL_ALTER_CONFIGS)) < 0 ||
      dc_kclient_request(kc, DC_API_INCREMENTAL_ALTER_CONFIGS, v,
                         au_enc_incremental_, &req, 5000, &rd, &arena, errstr,
                         sizeof(errstr))) {
    diag("alter %s %s: %s", entity, spec, errstr);
    goto out;
  }
  if (dc_incremental_alter_configs_resp_decode(&rd, v, &resp) ||
      resp.n_responses != 1) {
    diag("alter %s %s: bad response", entity, spec);
    goto out;
  }
  rc = resp.responses[0].error_code;
  if (rc)
    diag("alter %s %s: error %d %s", entity, spec, rc,
         resp.responses[0].error_message ? resp.responses[0].error_message
                                         : "");
out:
  dc_arena_free(&arena);
  dc_kclient_destroy(kc);
  return rc;
}

/* ---- librdkafka confs ------------------------------------------------------
 */

/* Value of a (global or topic-level) property in a librdkafka conf, or
 * "(unset)". acks lives in the default topic conf. */
static inline void au_conf_val(const rd_kafka_conf_t *c, const char *name,
                               char *out, size_t n) {
  size_t sz = n;
  if (rd_kafka_conf_get(c, name, out, &sz) == RD_KAFKA_CONF_OK)
    return;
  const rd_kafka_topic_conf_t *tc =
      rd_kafka_conf_get_default_topic_conf((rd_kafka_conf_t *)c);
  rd_kafka_topic_conf_t *tmp = tc ? NULL : rd_kafka_topic_conf_new();
  sz = n;
  if (rd_kafka_topic_conf_get(tc ? tc : tmp, name, out, &sz) !=
      RD_KAFKA_CONF_OK)
    snprintf(out, n, "(unset)");
  if (tmp)
    rd_kafka_topic_conf_destroy(tmp);
}

/* acks as librdkafka prints it: "all" and "-1" are the same setting. */
static inline const char *au_acks_norm(const char *v) {
  return !strcmp(v, "all") ? "-1" : v;
}

/* Application config: bootstrap.servers, client.id plus NULL-terminated
 * (key, value) pairs. Caller owns it. */
static inline rd_kafka_conf_t *au_app_conf(const char *bootstrap,
                                           const char *client_id, ...) {
  char e[256];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, e, sizeof(e));
  rd_kafka_conf_set(c, "client.id", client_id, e, sizeof(e));
  rd_kafka_conf_set(c, "log_level", "3", e, sizeof(e));
  va_list ap;
  va_start(ap, client_id);
  for (const char *k; (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    if (rd_kafka_conf_set(c, k, v, e, sizeof(e)) != RD_KAFKA_CONF_OK)
      diag("app conf %s=%s: %s", k, v, e);
  }
  va_end(ap);
  return c;
}

/* ---- agents
 * ------------------------------------------------------------------ */

/* What a test's change callback saw. Reset with memset before use. */
typedef struct au_rec {
  pthread_t poller; /* the thread that must run the callbacks */
  int n_change, n_accepted, n_rejected, n_other;
  int n_pinned_entries, n_applied_entries, n_ignored_entries;
  int n_wrong_thread;
  int64_t last_generation;
} au_rec_t;

static inline void au_on_change(dynconf_t *dc, const dynconf_event_t *ev,
                                void *opaque) {
  (void)dc;
  au_rec_t *r = opaque;
  if (!pthread_equal(pthread_self(), r->poller))
    r->n_wrong_thread++;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE) {
    r->n_other++;
    diag("agent %s event %d: %s", dynconf_client_id(dc),
         (int)dynconf_event_type(ev), dynconf_event_error_string(ev));
    return;
  }
  r->n_change++;
  if (dynconf_event_accepted(ev))
    r->n_accepted++;
  else
    r->n_rejected++;
  r->last_generation = dynconf_event_generation(ev);
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++) {
    switch (dynconf_event_outcome(ev, i)) {
    case DYNCONF_OUTCOME_PINNED:
      r->n_pinned_entries++;
      break;
    case DYNCONF_OUTCOME_APPLIED:
      r->n_applied_entries++;
      break;
    case DYNCONF_OUTCOME_IGNORED:
      r->n_ignored_entries++;
      break;
    default:
      diag("agent %s: %s %s: %s", dynconf_client_id(dc),
           dynconf_event_key(ev, i),
           dynconf_outcome_name(dynconf_event_outcome(ev, i)),
           dynconf_event_reason(ev, i) ? dynconf_event_reason(ev, i) : "");
    }
  }
}

/* Warnings and errors the agents logged (this test program's agents). */
static int au_n_warnings;

static inline void au_on_log(const dynconf_t *dc, int level, const char *fac,
                             const char *msg) {
  if (level <= 4)
    au_n_warnings++;
  if (level <= 4 || getenv("AU_VERBOSE"))
    diag("agent log %d %s %s: %s", level, dynconf_client_id(dc), fac, msg);
}

/* An agent of `type` for app (borrowed) fetching from dynconfd on
 * 127.0.0.1:port every 200 ms, with au_on_change(rec) and au_on_log and
 * NULL-terminated extra dynconf.* pairs. The caller owns the agent. */
static inline dynconf_t *au_agent_new(rd_kafka_type_t type,
                                      const rd_kafka_conf_t *app, int port,
                                      au_rec_t *rec, ...) {
  char e[512], bs[64];
  snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
  dynconf_conf_t *dconf = dynconf_conf_new();
  dynconf_conf_set(dconf, "dynconf.bootstrap.servers", bs, e, sizeof(e));
  dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", "200", e, sizeof(e));
  dynconf_conf_set(dconf, "dynconf.startup.required", "true", e, sizeof(e));
  va_list ap;
  va_start(ap, rec);
  for (const char *k; (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    if (dynconf_conf_set(dconf, k, v, e, sizeof(e)) != DYNCONF_CONF_OK)
      diag("dynconf conf %s=%s: %s", k, v, e);
  }
  va_end(ap);
  dynconf_conf_set_change_cb(dconf, au_on_change);
  dynconf_conf_set_log_cb(dconf, au_on_log);
  dynconf_conf_set_opaque(dconf, rec);
  dynconf_t *dc = dynconf_new(type, app, dconf, e, sizeof(e));
  if (!dc) {
    diag("dynconf_new: %s", e);
    dynconf_conf_destroy(dconf);
  }
  return dc;
}

/* The number after the first "\"key\":" in a JSON document, or -1. */
static inline long long au_json_ll(const char *json, const char *key) {
  char pat[80];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = json ? strstr(json, pat) : NULL;
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Successful fetches of an agent so far (its stats' "ok"). */
static inline long long au_fetches(dynconf_t *dc) {
  char *s = dynconf_stats_json(dc); /* ours, freed below */
  long long v = au_json_ll(s, "ok");
  free(s);
  return v;
}

/* ---- the mock cluster
 * ---------------------------------------------------------- */

/* A mock cluster of nbrokers on its own quiet producer handle (*mrkp,
 * which the caller destroys after rd_kafka_mock_cluster_destroy()). Its
 * bootstrap list goes to bs. NULL on failure (nothing left allocated). */
static inline rd_kafka_mock_cluster_t *
au_mock_new(int nbrokers, rd_kafka_t **mrkp, char *bs, size_t bs_size) {
  char e[512];
  rd_kafka_conf_t *mc = rd_kafka_conf_new();
  rd_kafka_conf_set(mc, "log_level", "0", e, sizeof(e));
  if (getenv("AU_MOCK_DEBUG")) { /* the mock's own story, while debugging */
    rd_kafka_conf_set(mc, "log_level", "7", e, sizeof(e));
    rd_kafka_conf_set(mc, "debug", "mock", e, sizeof(e));
  }
  rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mc, e, sizeof(e));
  if (!mrk) {
    rd_kafka_conf_destroy(mc);
    return NULL;
  }
  rd_kafka_mock_cluster_t *mcl = rd_kafka_mock_cluster_new(mrk, nbrokers);
  if (!mcl) {
    rd_kafka_destroy(mrk);
    return NULL;
  }
  snprintf(bs, bs_size, "%s", rd_kafka_mock_cluster_bootstraps(mcl));
  *mrkp = mrk;
  return mcl;
}

/* ---- au_proxy: a recording proxy in front of one broker
 * ---------------------- */

#define AU_MAX_CONNS 64
#define AU_MAX_LOG 8192
#define AU_MAX_FRAME (64 * 1024 * 1024)
#define AU_API_OFFSET_COMMIT 8
#define AU_API_FIND_COORDINATOR 10
#define AU_API_JOIN_GROUP 11
#define AU_API_HEARTBEAT 12
#define AU_API_LEAVE_GROUP 13
#define AU_API_SYNC_GROUP 14

/* One group request as seen on the wire. */
typedef struct au_req {
  int16_t key, version;
  char client_id[96];
  /* JoinGroup only */
  char group_id[96];
  char member_id[128];
  char instance_id[96]; /* "" when absent (v < 5) or null */
  bool has_instance_id;
  int32_t session_timeout_ms;
} au_req_t;

typedef struct au_inflight {
  int32_t corr;
  int16_t key, ver;
} au_inflight_t;

typedef struct au_conn {
  int cfd, sfd;       /* client side, upstream side; -1 = free slot */
  dc_buf_t cin, sin;  /* bytes read, not yet forwarded (owned) */
  au_inflight_t *inf; /* owned, n_inf used of cap_inf */
  size_t n_inf, cap_inf;
} au_conn_t;

typedef struct au_proxy {
  int lfd, port, upstream_port;
  int wake[2];
  pthread_t thread;
  bool started;
  au_conn_t conns[AU_MAX_CONNS]; /* proxy thread only */

  pthread_mutex_t lock; /* guards everything below */
  au_req_t log[AU_MAX_LOG];
  int n_log, n_log_dropped;
  int n_rewrite_errors;
} au_proxy_t;

static inline int au_write_all_(int fd, const void *p, size_t n) {
  const uint8_t *q = p;
  while (n) {
    ssize_t w = send(fd, q, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    q += w;
    n -= (size_t)w;
  }
  return 0;
}

static inline void au_conn_close_(au_conn_t *c) {
  if (c->cfd >= 0)
    close(c->cfd);
  if (c->sfd >= 0)
    close(c->sfd);
  c->cfd = c->sfd = -1;
  dc_buf_free(&c->cin);
  dc_buf_free(&c->sin);
  free(c->inf);
  c->inf = NULL;
  c->n_inf = c->cap_inf = 0;
}

/* A client request frame (without the size field): remember its key for
 * the response, and log group requests. */
static inline void au_sniff_request_(au_proxy_t *px, au_conn_t *c,
                                     const uint8_t *p, size_t n) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, p, n, &a);
  dc_req_header_t h;
  if (dc_req_header_decode(&rd, &h)) {
    dc_arena_free(&a);
    return;
  }
  if (c->n_inf == c->cap_inf) {
    size_t cap = c->cap_inf ? c->cap_inf * 2 : 16;
    au_inflight_t *ni = realloc(c->inf, cap * sizeof(*ni));
    if (ni) {
      c->inf = ni;
      c->cap_inf = cap;
    }
  }
  if (c->n_inf < c->cap_inf)
    c->inf[c->n_inf++] =
        (au_inflight_t){h.correlation_id, h.api_key, h.api_version};
  bool group =
      h.api_key == AU_API_OFFSET_COMMIT ||
      (h.api_key >= AU_API_JOIN_GROUP && h.api_key <= AU_API_SYNC_GROUP);
  if (!group) {
    dc_arena_free(&a);
    return;
  }
  au_req_t r;
  memset(&r, 0, sizeof(r));
  r.key = h.api_key;
  r.version = h.api_version;
  r.session_timeout_ms = -1;
  snprintf(r.client_id, sizeof(r.client_id), "%s",
           h.client_id ? h.client_id : "");
  if (h.api_key == AU_API_JOIN_GROUP) {
    /* Our codec does not know key 11, so it read the v1 header; from v6
     * (flexible) a tag section follows the client id. JoinGroup: group_id,
     * session_timeout_ms, rebalance_timeout_ms (v1+), member_id,
     * group_instance_id (v5+, nullable), ... */
    bool flex = h.api_version >= 6;
    if (flex)
      dc_rd_tags(&rd);
    char *gid = dc_rd_str(&rd, flex, false);
    int32_t session = dc_rd_i32(&rd);
    if (h.api_version >= 1)
      (void)dc_rd_i32(&rd);
    char *member = dc_rd_str(&rd, flex, false);
    char *inst = h.api_version >= 5 ? dc_rd_str(&rd, flex, true) : NULL;
    if (!rd.err) {
      snprintf(r.group_id, sizeof(r.group_id), "%s", gid);
      snprintf(r.member_id, sizeof(r.member_id), "%s", member);
      r.has_instance_id = inst != NULL;
      snprintf(r.instance_id, sizeof(r.instance_id), "%s", inst ? inst : "");
      r.session_timeout_ms = session;
    }
  }
  pthread_mutex_lock(&px->lock);
  if (px->n_log < AU_MAX_LOG)
    px->log[px->n_log++] = r;
  else
    px->n_log_dropped++;
  pthread_mutex_unlock(&px->lock);
  dc_arena_free(&a);
}

/* Re-encodes a Metadata response with every broker at the proxy's address
 * into out (a whole frame). 0 or -1. */
static inline int au_rewrite_metadata_(au_proxy_t *px, int16_t ver,
                                       const uint8_t *p, size_t n,
                                       dc_buf_t *out) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, p, n, &a);
  int32_t corr;
  dc_metadata_resp_t m;
  int rc = -1;
  if (dc_resp_header_decode(&rd, DC_API_METADATA, ver, &corr) ||
      dc_metadata_resp_decode(&rd, ver, &m))
    goto out;
  for (int32_t i = 0; i < m.n_brokers; i++) {
    m.brokers[i].host = "127.0.0.1";
    m.brokers[i].port = px->port;
  }
  size_t off = dc_wr_frame_begin(out);
  if (dc_resp_header_encode(out, DC_API_METADATA, ver, corr) ||
      dc_metadata_resp_encode(out, ver, &m))
    goto out;
  dc_wr_frame_end(out, off);
  rc = out->err ? -1 : 0;
out:
  dc_arena_free(&a);
  return rc;
}

/* FindCoordinator v0-2: v0 error_code, node_id, host, port; v1+ put
 * throttle_time_ms first and error_message after error_code. */
static inline int au_rewrite_findcoord_(au_proxy_t *px, int16_t ver,
                                        const uint8_t *p, size_t n,
                                        dc_buf_t *out) {
  if (ver > 2)
    return -1;
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, p, n, &a);
  int32_t corr = dc_rd_i32(&rd);
  int32_t throttle = ver >= 1 ? dc_rd_i32(&rd) : 0;
  int16_t err = dc_rd_i16(&rd);
  char *msg = ver >= 1 ? dc_rd_str(&rd, false, true) : NULL;
  int32_t node = dc_rd_i32(&rd);
  (void)dc_rd_str(&rd, false, false);
  (void)dc_rd_i32(&rd);
  int rc = -1;
  if (!rd.err) {
    size_t off = dc_wr_frame_begin(out);
    dc_wr_i32(out, corr);
    if (ver >= 1)
      dc_wr_i32(out, throttle);
    dc_wr_i16(out, err);
    if (ver >= 1)
      dc_wr_str(out, false, msg);
    dc_wr_i32(out, node);
    dc_wr_str(out, false, "127.0.0.1");
    dc_wr_i32(out, px->port);
    dc_wr_frame_end(out, off);
    rc = out->err ? -1 : 0;
  }
  dc_arena_free(&a);
  return rc;
}

static inline int au_forward_response_(au_proxy_t *px, au_conn_t *c,
                                       const uint8_t *frame, size_t n) {
  const uint8_t *p = frame + 4;
  int16_t key = -1, ver = 0;
  if (n >= 4) {
    int32_t corr = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
                             ((uint32_t)p[2] << 8) | p[3]);
    for (size_t i = 0; i < c->n_inf; i++)
      if (c->inf[i].corr == corr) {
        key = c->inf[i].key;
        ver = c->inf[i].ver;
        c->inf[i] = c->inf[--c->n_inf];
        break;
      }
  }
  if (key == DC_API_METADATA || key == AU_API_FIND_COORDINATOR) {
    dc_buf_t out;
    dc_buf_init(&out);
    int r = key == DC_API_METADATA ? au_rewrite_metadata_(px, ver, p, n, &out)
                                   : au_rewrite_findcoord_(px, ver, p, n, &out);
    if (r) {
      pthread_mutex_lock(&px->lock);
      px->n_rewrite_errors++;
      pthread_mutex_unlock(&px->lock);
    } else {
      int w = au_write_all_(c->cfd, out.data, out.len);
      dc_buf_free(&out);
      return w;
    }
    dc_buf_free(&out);
  }
  return au_write_all_(c->cfd, frame, n + 4);
}

/* Reads what one side has and forwards complete frames; -1 = close. */
static inline int au_pump_(au_proxy_t *px, au_conn_t *c, bool from_client) {
  dc_buf_t *in = from_client ? &c->cin : &c->sin;
  int fd = from_client ? c->cfd : c->sfd;
  if (dc_buf_reserve(in, 65536))
    return -1;
  ssize_t k = recv(fd, in->data + in->len, 65536, 0);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (k <= 0)
    return -1;
  in->len += (size_t)k;
  for (;;) {
    int32_t size;
    int r = dc_frame_peek(in->data, in->len, AU_MAX_FRAME, &size);
    if (r < 0)
      return -1;
    if (r == 0)
      return 0;
    size_t flen = 4 + (size_t)size;
    if (from_client) {
      au_sniff_request_(px, c, in->data + 4, (size_t)size);
      if (au_write_all_(c->sfd, in->data, flen))
        return -1;
    } else if (au_forward_response_(px, c, in->data, (size_t)size)) {
      return -1;
    }
    dc_buf_consume(in, flen);
  }
}

static inline void *au_proxy_thread_(void *arg) {
  au_proxy_t *px = arg;
  struct pollfd pfd[2 + 2 * AU_MAX_CONNS];
  int owner[2 + 2 * AU_MAX_CONNS];
  for (;;) {
    int n = 0;
    pfd[n] = (struct pollfd){px->wake[0], POLLIN, 0};
    owner[n++] = -1;
    pfd[n] = (struct pollfd){px->lfd, POLLIN, 0};
    owner[n++] = -1;
    for (int i = 0; i < AU_MAX_CONNS; i++)
      if (px->conns[i].cfd >= 0) {
        pfd[n] = (struct pollfd){px->conns[i].cfd, POLLIN, 0};
        owner[n++] = i;
        pfd[n] = (struct pollfd){px->conns[i].sfd, POLLIN, 0};
        owner[n++] = i;
      }
    if (poll(pfd, (nfds_t)n, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (pfd[0].revents)
      break; /* au_proxy_stop() */
    if (pfd[1].revents & POLLIN) {
      int cfd = accept4(px->lfd, NULL, NULL, SOCK_CLOEXEC);
      if (cfd >= 0) {
        int slot = -1;
        for (int i = 0; i < AU_MAX_CONNS && slot < 0; i++)
          if (px->conns[i].cfd < 0)
            slot = i;
        int sfd = slot >= 0 ? dc_tu_connect(px->upstream_port) : -1;
        if (sfd < 0) {
          close(cfd);
        } else {
          int one = 1;
          setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          au_conn_t *c = &px->conns[slot];
          c->cfd = cfd;
          c->sfd = sfd;
          dc_buf_init(&c->cin);
          dc_buf_init(&c->sin);
        }
      }
    }
    for (int k = 2; k < n; k++) {
      au_conn_t *c = &px->conns[owner[k]];
      if (!pfd[k].revents || c->cfd < 0)
        continue;
      if (au_pump_(px, c, pfd[k].fd == c->cfd))
        au_conn_close_(c);
    }
  }
  for (int i = 0; i < AU_MAX_CONNS; i++)
    if (px->conns[i].cfd >= 0)
      au_conn_close_(&px->conns[i]);
  return NULL;
}

/* Starts a proxy on 127.0.0.1:<ephemeral> in front of 127.0.0.1:
 * upstream_port. 0, or -1 with errstr. */
static inline int au_proxy_start(au_proxy_t *px, int upstream_port,
                                 char *errstr, size_t errstr_size) {
  memset(px, 0, sizeof(*px));
  px->lfd = px->wake[0] = px->wake[1] = -1;
  for (int i = 0; i < AU_MAX_CONNS; i++)
    px->conns[i].cfd = px->conns[i].sfd = -1;
  px->upstream_port = upstream_port;
  pthread_mutex_init(&px->lock, NULL);
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  px->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (px->lfd < 0 || bind(px->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
      listen(px->lfd, 64) ||
      getsockname(px->lfd, (struct sockaddr *)&sa, &sl) ||
      pipe2(px->wake, O_CLOEXEC)) {
    snprintf(errstr, errstr_size, "au_proxy: %s", strerror(errno));
    goto fail;
  }
  px->port = ntohs(sa.sin_port);
  if (pthread_create(&px->thread, NULL, au_proxy_thread_, px)) {
    snprintf(errstr, errstr_size, "au_proxy: cannot start its thread");
    goto fail;
  }
  px->started = true;
  return 0;
fail:
  if (px->lfd >= 0)
    close(px->lfd);
  if (px->wake[0] >= 0)
    close(px->wake[0]);
  if (px->wake[1] >= 0)
    close(px->wake[1]);
  pthread_mutex_destroy(&px->lock);
  px->lfd = -1;
  return -1;
}

static inline void au_proxy_stop(au_proxy_t *px) {
  if (!px->started)
    return;
  ssize_t w;
  do
    w = write(px->wake[1], "x", 1);
  while (w < 0 && errno == EINTR);
  pthread_join(px->thread, NULL);
  close(px->lfd);
  close(px->wake[0]);
  close(px->wake[1]);
  pthread_mutex_destroy(&px->lock);
  px->started = false;
}

/* Number of log records so far (a position for the queries below). */
static inline int au_proxy_mark(au_proxy_t *px) {
  pthread_mutex_lock(&px->lock);
  int n = px->n_log;
  pthread_mutex_unlock(&px->lock);
  return n;
}

/* How many requests of api `key` client_id sent at or after mark `from`. */
static inline int au_proxy_count(au_proxy_t *px, const char *client_id,
                                 int16_t key, int from) {
  int cnt = 0;
  pthread_mutex_lock(&px->lock);
  for (int i = from < 0 ? 0 : from; i < px->n_log; i++)
    if (px->log[i].key == key && !strcmp(px->log[i].client_id, client_id))
      cnt++;
  pthread_mutex_unlock(&px->lock);
  return cnt;
}

/* The first (last = false) or last JoinGroup from client_id at or after
 * mark `from`: 1 and *out, or 0 when none. */
static inline int au_proxy_join(au_proxy_t *px, const char *client_id, int from,
                                bool last, au_req_t *out) {
  int found = 0;
  pthread_mutex_lock(&px->lock);
  for (int i = from < 0 ? 0 : from; i < px->n_log; i++)
    if (px->log[i].key == AU_API_JOIN_GROUP &&
        !strcmp(px->log[i].client_id, client_id)) {
      *out = px->log[i];
      found = 1;
      if (!last)
        break;
    }
  pthread_mutex_unlock(&px->lock);
  return found;
}

#endif
