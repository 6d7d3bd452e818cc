/* SPDX-License-Identifier: BSD-2-Clause */
/* agent_fleet's worker process: its agents, their polling, what it reports. */
#include <dynconf.h>
#include "agent_fleet_shared.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Set by the parent's SIGINT/SIGTERM handler, which the workers inherit. */
volatile sig_atomic_t g_stop;

/* Writes a whole line; the pipe is the only channel to the parent. */
static void put_line(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put_line(int fd, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof(buf))
    n = sizeof(buf) - 1;
  for (int off = 0; off < n;) {
    ssize_t w = write(fd, buf + off, (size_t)(n - off));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    off += (int)w;
  }
}

/* Value of "key":NUMBER in a JSON document; -1 if absent. */
static long long json_num(const char *js, const char *key) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = js ? strstr(js, pat) : NULL;
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

typedef struct wagent {
  int idx;   /* fleet-wide index: client.id fleet-idx */
  int upfd;  /* the pipe to the parent */
  dynconf_t *dc;
} wagent_t;

static void w_on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)dc;
  int64_t t = mono_us(); /* first thing: the delivery instant */
  const wagent_t *a = opaque;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE) {
    put_line(a->upfd, "err %d %d %lld %s\n", a->idx, (int)dynconf_event_type(ev),
             (long long)t, dynconf_event_error_string(ev));
    return;
  }
  const char *v = NULL;
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++)
    if (!strcmp(dynconf_event_key(ev, i), "session.timeout.ms"))
      v = dynconf_event_new_value(ev, i);
  put_line(a->upfd, "ev %d %s %d %lld\n", a->idx, v ? v : "-",
           dynconf_event_accepted(ev), (long long)t);
}

static int g_warnings; /* per worker; the log callback has no opaque */
static void w_on_log(const dynconf_t *dc, int level, const char *fac,
                     const char *msg) {
  if (level > 4)
    return; /* change logs at info: an application would not print them */
  if (g_warnings++ < 5)
    fprintf(stderr, "agent_fleet: [%s] %s: %s\n", dynconf_client_id(dc), fac,
            msg);
}

/* Each agent holds a few sockets and wake-up fds. */
static void raise_nofile(void) {
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

/* One agent, client.id fleet-a->idx; NULL with err set. */
static dynconf_t *new_agent(const opts_t *o, wagent_t *a, char *err,
                            size_t err_size) {
  char cid[32], rs[32];
  snprintf(rs, sizeof(rs), "%d", o->refresh_ms);
  snprintf(cid, sizeof(cid), "fleet-%d", a->idx);
  rd_kafka_conf_t *app = rd_kafka_conf_new();
  rd_kafka_conf_set(app, "bootstrap.servers", o->bootstrap, err, err_size);
  rd_kafka_conf_set(app, "client.id", cid, err, err_size);
  rd_kafka_conf_set(app, "group.id", "fleet", err, err_size);
  dynconf_conf_t *dconf = dynconf_conf_new();
  dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", rs, err, err_size);
  dynconf_conf_set(dconf, "dynconf.watch", o->watch ? "true" : "false", err,
                   err_size);
  /* A fleet member that cannot reach dynconfd is a broken run here. */
  dynconf_conf_set(dconf, "dynconf.startup.required", "true", err, err_size);
  dynconf_conf_set(dconf, "dynconf.startup.timeout.ms", "30000", err,
                   err_size);
  dynconf_conf_set_change_cb(dconf, w_on_change);
  dynconf_conf_set_log_cb(dconf, w_on_log);
  dynconf_conf_set_opaque(dconf, a);
  dynconf_t *dc = dynconf_new(RD_KAFKA_CONSUMER, app, dconf, err, err_size);
  rd_kafka_conf_destroy(app);
  if (!dc)
    dynconf_conf_destroy(dconf);
  return dc;
}

/* Creates the worker's agents into ag; *made gets how many. 1 when one
 * failed (reported up the pipe), else 0. */
static int create_agents(const opts_t *o, int wi, int first, int count,
                         int upfd, wagent_t *ag, int *made, int64_t t0) {
  char err[512];
  for (int i = 0; i < count && !g_stop; i++) {
    /* Staggered start: the fleet's agents are created at evenly spread
     * instants over --stagger-ms (workers interleaved), so their polling
     * phases are spread as in a fleet that did not start at one instant. */
    int64_t slot = (int64_t)i * o->procs + wi;
    int64_t at = t0 + slot * o->stagger_ms * 1000 / o->agents;
    for (int64_t left; !g_stop && (left = at - mono_us()) > 0;)
      sleep_ms(left > 50000 ? 50 : (int)(left / 1000) + 1);
    ag[i].idx = first + i;
    ag[i].upfd = upfd;
    ag[i].dc = new_agent(o, &ag[i], err, sizeof(err));
    if (!ag[i].dc) {
      put_line(upfd, "fail agent %d: %s\n", first + i, err);
      return 1;
    }
    (*made)++;
  }
  return 0;
}

/* Poll every agent, then sleep; until the parent closes our pipe. */
static void poll_agents(const opts_t *o, wagent_t *ag, int made, int downfd) {
  while (!g_stop) {
    for (int i = 0; i < made; i++)
      dynconf_poll(ag[i].dc, 0);
    struct pollfd p = {downfd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) {
      char b[64];
      if (read(downfd, b, sizeof(b)) <= 0)
        break;
    }
    sleep_ms(o->poll_sleep_ms);
  }
}

/* The "st" line of every agent, then destroys them and sends "done". */
static void finish_agents(wagent_t *ag, int made, int upfd) {
  for (int i = 0; i < made; i++) {
    char *js = dynconf_stats_json(ag[i].dc);
    put_line(upfd, "st %d %lld %lld %lld %lld %lld %s\n", ag[i].idx,
             json_num(js, "ok"), json_num(js, "errors"), json_num(js, "avg_us"),
             json_num(js, "last_us"), json_num(js, "max_us"),
             dynconf_state_name(dynconf_state(ag[i].dc)));
    free(js);
  }
  int64_t d0 = mono_us();
  for (int i = 0; i < made; i++)
    dynconf_destroy(ag[i].dc);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  put_line(upfd, "done %lld %lld %d\n", (long long)((mono_us() - d0) / 1000),
           (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000,
           g_warnings);
}

int fleet_worker(const opts_t *o, int wi, int first, int count, int upfd,
                 int downfd) {
  raise_nofile();
  wagent_t *ag = calloc((size_t)count, sizeof(*ag)); /* owned here */
  if (!ag)
    return 1;
  int made = 0;
  int64_t t0 = mono_us();
  int rc = create_agents(o, wi, first, count, upfd, ag, &made, t0);
  if (!rc && !g_stop)
    put_line(upfd, "ready %lld\n", (long long)((mono_us() - t0) / 1000));
  if (!rc)
    poll_agents(o, ag, made, downfd);
  finish_agents(ag, made, upfd);
  free(ag);
  return rc;
}
