/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * agent_watch: runs a dynconf agent for one client.id and prints every
 * change event on one line, the way an application would log them.
 *
 *   agent_watch [--consumer] [-X KEY=VALUE]... BOOTSTRAP CLIENT_ID [SECONDS]
 *
 * -X sets a property: a dynconf.* one on the agent's configuration, any
 * other on the application's librdkafka configuration (security.protocol,
 * sasl.*, ssl.*: what the agent reads for its own connection).
 */
#include <dynconf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static void on_change(dynconf_t *dc, const dynconf_event_t *ev, void *opaque) {
  (void)opaque;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE) {
    printf("[%s] %s: %s\n", dynconf_client_id(dc),
           dynconf_event_type(ev) == DYNCONF_EVENT_UNSUPPORTED ? "unsupported"
                                                               : "error",
           dynconf_event_error_string(ev));
    fflush(stdout);
    return;
  }
  printf("[%s] change set %s (generation %lld):", dynconf_client_id(dc),
         dynconf_event_accepted(ev) ? "applied" : "rejected",
         (long long)dynconf_event_generation(ev));
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++) {
    const char *o = dynconf_event_old_value(ev, i);
    const char *n = dynconf_event_new_value(ev, i);
    const char *why = dynconf_event_reason(ev, i);
    printf(" %s %s->%s [%s, %s%s%s]", dynconf_event_key(ev, i), o ? o : "app",
           n ? n : "app", dynconf_source_name(dynconf_event_source(ev, i)),
           dynconf_outcome_name(dynconf_event_outcome(ev, i)), why ? ": " : "",
           why ? why : "");
  }
  printf("\n");
  fflush(stdout);
}

/* -X KEY=VALUE: dynconf.* to the agent, the rest to the application. */
static int set_property(rd_kafka_conf_t *app, dynconf_conf_t *dconf,
                        const char *kv) {
  char key[256], err[512];
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key)) {
    fprintf(stderr, "-X wants KEY=VALUE, not '%s'\n", kv);
    return -1;
  }
  memcpy(key, kv, (size_t)(eq - kv));
  key[eq - kv] = '\0';
  int bad = !strncmp(key, "dynconf.", 8)
                ? dynconf_conf_set(dconf, key, eq + 1, err, sizeof(err)) !=
                      DYNCONF_CONF_OK
                : rd_kafka_conf_set(app, key, eq + 1, err, sizeof(err)) !=
                      RD_KAFKA_CONF_OK;
  if (bad)
    fprintf(stderr, "-X %s: %s\n", key, err);
  return bad ? -1 : 0;
}

int main(int argc, char **argv) {
  int a = 1;
  rd_kafka_type_t type = RD_KAFKA_PRODUCER;
  rd_kafka_conf_t *app = rd_kafka_conf_new();
  dynconf_conf_t *dconf = dynconf_conf_new();
  char err[512];
  dynconf_conf_set(dconf, "dynconf.refresh.interval.ms", "1000", err, sizeof(err));
  for (; a < argc && argv[a][0] == '-' && strcmp(argv[a], "--help"); a++) {
    if (!strcmp(argv[a], "--consumer")) {
      type = RD_KAFKA_CONSUMER;
    } else if (!strcmp(argv[a], "-X") && a + 1 < argc) {
      if (set_property(app, dconf, argv[++a]))
        return 2;
    } else {
      break;
    }
  }
  if (argc - a < 2 || !strcmp(argv[a], "--help")) {
    fprintf(stderr, "Usage: %s [--consumer] [-X KEY=VALUE]... BOOTSTRAP "
                    "CLIENT_ID [SECONDS]\n", argv[0]);
    return 2;
  }
  int seconds = argc - a > 2 ? atoi(argv[a + 2]) : 0;
  rd_kafka_conf_set(app, "bootstrap.servers", argv[a], err, sizeof(err));
  rd_kafka_conf_set(app, "client.id", argv[a + 1], err, sizeof(err));
  if (type == RD_KAFKA_CONSUMER)
    rd_kafka_conf_set(app, "group.id", "agent-watch", err, sizeof(err));
  dynconf_conf_set_change_cb(dconf, on_change);
  dynconf_t *dc = dynconf_new(type, app, dconf, err, sizeof(err));
  if (!dc) {
    fprintf(stderr, "dynconf_new: %s\n", err);
    dynconf_conf_destroy(dconf);
    rd_kafka_conf_destroy(app);
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  time_t end = seconds > 0 ? time(NULL) + seconds : 0;
  while (!stop && (!end || time(NULL) < end))
    dynconf_poll(dc, 200);
  char *stats = dynconf_stats_json(dc);
  printf("stats: %s\n", stats);
  free(stats);
  dynconf_destroy(dc);
  rd_kafka_conf_destroy(app);
  return 0;
}
