/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Creating and destroying an agent: the application's settings, the
 * first fetch and the start of the agent thread (agent.c).
 */
#include "agent/agent_int.h"
#include "common/clock.h"
#include "common/schema.h"
#include "common/text.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- reading the application's configuration -------------------------- */

static char *conf_get(rd_kafka_conf_t *conf, const char *name) {
  char buf[1024];
  size_t sz = sizeof(buf);
  if (rd_kafka_conf_get(conf, name, buf, &sz) == RD_KAFKA_CONF_OK)
    return strdup(buf);
  /* Topic-level properties (acks) live in the default topic conf. */
  rd_kafka_topic_conf_t *tc = rd_kafka_conf_get_default_topic_conf(conf);
  rd_kafka_topic_conf_t *tmp = tc ? NULL : rd_kafka_topic_conf_new();
  sz = sizeof(buf);
  char *r = NULL;
  if (rd_kafka_topic_conf_get(tc ? tc : tmp, name, buf, &sz) ==
      RD_KAFKA_CONF_OK)
    r = strdup(buf);
  if (tmp)
    rd_kafka_topic_conf_destroy(tmp);
  return r;
}

static int64_t conf_int(rd_kafka_conf_t *conf, const char *name, int64_t def) {
  char *v = conf_get(conf, name);
  int64_t n;
  if (!v || !dc_parse_int64(v, &n))
    n = def;
  free(v);
  return n;
}

static void read_app_settings(dynconf_t *dc) {
  dc_app_settings_t *a = &dc->app;
  rd_kafka_conf_t *c = dc->app_conf;
  a->consumer = dc->type == RD_KAFKA_CONSUMER;
  char *idem = conf_get(c, "enable.idempotence");
  char *txn = conf_get(c, "transactional.id");
  /* Absent before librdkafka 2.4: then conf_get finds no such property. */
  char *proto = conf_get(c, "group.protocol");
  a->idempotent = idem && !strcmp(idem, "true");
  a->transactional = txn && *txn;
  a->broker_owns_timeouts =
      a->consumer && proto && !strcasecmp(proto, "consumer");
  free(idem);
  free(txn);
  free(proto);
  a->max_poll_interval_ms = conf_int(c, "max.poll.interval.ms", 300000);
  a->session_timeout_ms = conf_int(c, "session.timeout.ms", 45000);
  a->heartbeat_interval_ms = conf_int(c, "heartbeat.interval.ms", 3000);
  for (size_t i = 0; i < dc->allow.n; i++)
    a->values[i] = conf_get(c, dc->allow.keys[i]);
}

/* The application's software when it is not plain librdkafka: a binding
 * names itself in client.software.name (confluent-kafka-python does),
 * with client.software.version when that fits the fleet's field. */
static void read_app_software(dynconf_t *dc) {
  char *name = conf_get(dc->app_conf, "client.software.name");
  char *version = conf_get(dc->app_conf, "client.software.version");
  char both[2 * sizeof(dc->app_software)] = "";
  dc->app_software[0] = '\0';
  if (name && *name && strcmp(name, "librdkafka") &&
      strlen(name) < sizeof(dc->app_software)) {
    snprintf(both, sizeof(both), "%s/%s", name, version ? version : "");
    if (!version || !*version || strlen(both) >= sizeof(dc->app_software))
      snprintf(both, sizeof(both), "%s", name);
    memcpy(dc->app_software, both, strlen(both) + 1);
  }
  free(name);
  free(version);
}

/* 128 random bits in hex: the agent's name in the server's fleet view,
 * the same across its reconnects. */
static void instance_id_make(char *out, size_t size) {
  uint8_t r[16];
  if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
    uint64_t x = (uint64_t)dc_mono_us() ^ ((uint64_t)getpid() << 32);
    for (size_t i = 0; i < sizeof(r); i++, x = x * 6364136223846793005ull + 1)
      r[i] = (uint8_t)(x >> 56);
  }
  for (size_t i = 0; i < sizeof(r) && 2 * i + 2 < size; i++)
    snprintf(out + 2 * i, 3, "%02x", r[i]);
}

/* ---- public API ---------------------------------------------------------- */

static void agent_free(dynconf_t *dc) {
  dc_agent_conn_free(&dc->conn);
  if (dc->app_conf)
    rd_kafka_conf_destroy(dc->app_conf);
  for (size_t i = 0; i < DC_AGENT_MAX_KEYS; i++)
    free(dc->app.values[i]);
  dc_fetched_set_free(&dc->fetched);
  dc_effective_free(&dc->eff);
  dc_effective_free(&dc->start_eff);
  dc_agent_queues_free(dc);
  dc_event_free(dc->last_rejected);
  dc_certwatch_free(&dc->cw);
  dc_oauth_free(&dc->oauth);
  free(dc->client_id);
  free(dc->bootstrap);
  dc_conf_free_fields(&dc->conf);
  pthread_cond_destroy(&dc->wake);
  pthread_cond_destroy(&dc->ready);
  pthread_mutex_destroy(&dc->lock);
  free(dc);
}

/* A zeroed agent with its lock and condition variables; NULL when out of
 * memory. */
static dynconf_t *agent_alloc(void) {
  dynconf_t *dc = calloc(1, sizeof(*dc));
  if (!dc)
    return NULL;
  dc->conn.cancel[0] = dc->conn.cancel[1] = -1; /* none yet */
  dc->server_version = -1;
  pthread_mutex_init(&dc->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&dc->wake, &ca);
  pthread_cond_init(&dc->ready, &ca);
  pthread_condattr_destroy(&ca);
  return dc;
}

/* Takes a copy of conf (so that on failure the caller still owns it) and
 * of app_conf, and what the agent derives from them first. 0, or -1
 * with errstr set. */
static int take_confs(dynconf_t *dc, rd_kafka_type_t type,
                      const rd_kafka_conf_t *app_conf, dynconf_conf_t *conf,
                      char *errstr, size_t errstr_size) {
  dynconf_conf_t *copy = conf ? dynconf_conf_dup(conf) : dynconf_conf_new();
  if (!copy) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  dc->conf = *copy;
  free(copy);
  dc->type = type;
  dc->started_ms = dc_wall_ms();
  dc->watched_version = -1;
  instance_id_make(dc->instance_id, sizeof(dc->instance_id));
  /* dc->report starts "applied", nothing to say: the calloc's zeros. */
  dc->rng = (uint64_t)dc_mono_us() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)dc;
  if (!dc->rng)
    dc->rng = 88172645463325252ull;
  dc->app_conf = rd_kafka_conf_dup(app_conf);
  if (dc_allow_parse(dc->conf.allow_keys, &dc->allow, errstr, errstr_size))
    return -1;
  return 0;
}

/* client.id, the config server and the refresh interval: dynconf's own
 * settings, else the application's. 0, or -1 with errstr set. */
static int find_server(dynconf_t *dc, char *errstr, size_t errstr_size) {
  char *cid = *dc->conf.client_id ? strdup(dc->conf.client_id)
                                   : conf_get(dc->app_conf, "client.id");
  dc->client_id = cid ? cid : strdup("rdkafka");
  char *bs = *dc->conf.bootstrap_servers ? strdup(dc->conf.bootstrap_servers)
                                         : conf_get(dc->app_conf, "bootstrap.servers");
  if (!bs || !*bs) {
    free(bs);
    dc_seterr(errstr, errstr_size, "no config server: set bootstrap.servers in "
             "the application's configuration or dynconf.bootstrap.servers");
    return -1;
  }
  dc->bootstrap = bs;
  dc->interval_ms = dc->conf.refresh_interval_ms >= 0
                        ? dc->conf.refresh_interval_ms
                        : (int)conf_int(dc->app_conf,
                                        "topic.metadata.refresh.interval.ms",
                                        300000);
  if (dc->interval_ms < 10)
    dc->interval_ms = 10; /* librdkafka's -1 (disabled) included */
  return 0;
}

/* The first fetch, synchronous, so the first JoinGroup already carries
 * the dynamic timeouts; an OAUTHBEARER token is asked for first. -1 with
 * errstr set when it failed and had to succeed. */
static int first_fetch(dynconf_t *dc, char *errstr, size_t errstr_size) {
  dc_oauth_start(dc, dc_agent_uses_oauthbearer(dc));
  int startup = dc->conf.startup_timeout_ms;
  dc_agent_fetch_and_record(dc, startup);
  pthread_mutex_lock(&dc->lock);
  dynconf_state_t st = dc->state;
  if (st != DYNCONF_STATE_UP && dc->conf.startup_required) {
    dc_seterr(errstr, errstr_size,
             "dynconf.startup.required=true and the first fetch for "
             "client.id '%s' failed: %s",
             dc->client_id, dc->last_errstr);
    pthread_mutex_unlock(&dc->lock);
    return -1;
  }
  pthread_mutex_unlock(&dc->lock);
  return 0;
}

dynconf_t *dynconf_new(rd_kafka_type_t type, const rd_kafka_conf_t *app_conf,
                       dynconf_conf_t *conf, char *errstr,
                       size_t errstr_size) {
  if (!app_conf) {
    dc_seterr(errstr, errstr_size, "app_conf must not be NULL");
    return NULL;
  }
  dynconf_t *dc = agent_alloc();
  if (!dc) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  if (take_confs(dc, type, app_conf, conf, errstr, errstr_size) ||
      find_server(dc, errstr, errstr_size))
    goto fail;
  read_app_settings(dc);
  read_app_software(dc);
  /* The baseline of the ssl.* files is what the connection loads. */
  if (dc_certwatch_init(dc)) {
    dc_seterr(errstr, errstr_size, "out of memory");
    goto fail;
  }
  if (dc_agent_conn_init(dc, errstr, errstr_size) ||
      first_fetch(dc, errstr, errstr_size))
    goto fail;
  /* What a client configured only at its creation runs with: taken
   * before the agent's thread can change the effective config. */
  if (dc_effective_copy(&dc->start_eff, &dc->eff)) {
    dc_seterr(errstr, errstr_size, "out of memory");
    goto fail;
  }
  dc->started = true;
  if (pthread_create(&dc->thread, NULL, dc_agent_thread, dc)) {
    dc_seterr(errstr, errstr_size, "cannot start the agent thread: %s",
             strerror(errno));
    goto fail;
  }
  dc->thread_started = true;
  dynconf_conf_destroy(conf); /* ours now: we work on the copy */
  dc_agent_serve_logs(dc);    /* we are on the application's thread */
  return dc;
fail:
  /* conf stays the caller's; only our copy goes. */
  agent_free(dc);
  return NULL;
}

void dynconf_destroy(dynconf_t *dc) {
  if (!dc)
    return;
  pthread_mutex_lock(&dc->lock);
  dc->stop = true;
  pthread_cond_broadcast(&dc->wake);
  pthread_mutex_unlock(&dc->lock);
  dc_agent_conn_cancel(&dc->conn); /* abandon a fetch in flight */
  if (dc->thread_started)
    pthread_join(dc->thread, NULL);
  agent_free(dc);
}
