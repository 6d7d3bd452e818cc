/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The plugin's log lines: through the client's own log callback once the
 * client is whole; before (inside rd_kafka_new()), and for a client that
 * queues its logs, on stderr in the format of librdkafka's default logger
 * (rd_kafka_log_print), so they sit among the client's own lines:
 * "%LEVEL|SECONDS.MILLIS|FAC|NAME| message".
 */
#include "plugin/plugin_int.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static void log_line(const dc_plugin_t *st, int level, const char *fac,
                     const char *msg) {
  if (level > st->log_level)
    return;
  if (atomic_load(&st->client_ready)) {
    st->client_log(st->rk, level, fac, msg);
    return;
  }
  struct timeval tv;
  gettimeofday(&tv, NULL);
  fprintf(stderr, "%%%i|%u.%03u|%s|%s| %s\n", level, (unsigned)tv.tv_sec,
          (unsigned)(tv.tv_usec / 1000), fac, st->name, msg);
}

void dc_plugin_log(const dc_plugin_t *st, int level, const char *fac,
                   const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  log_line(st, level, fac, msg);
}

void dc_plugin_agent_log(const dynconf_t *dc, int level, const char *fac,
                         const char *msg) {
  const dc_plugin_t *st = dynconf_opaque(dc);
  /* The agent's account of the first change set (CHANGE) says
   * "applied" for every key its rules accept; what the client takes is
   * said by apply.c instead, as some keys cannot be set at on_new. Later
   * ones say they wait for a restart. */
  if (st && (!st->in_new || strcmp(fac, "CHANGE")))
    log_line(st, level, fac, msg);
}

void dc_plugin_agent_change(dynconf_t *dc, const dynconf_event_t *ev,
                            void *opaque) {
  (void)dc;
  const dc_plugin_t *st = opaque;
  if (dynconf_event_type(ev) != DYNCONF_EVENT_CHANGE)
    return; /* errors: the agent's log says them already */
  /* What the client really takes is said by apply.c: here only the keys
   * the agent's rules kept from it. */
  for (size_t i = 0; i < dynconf_event_entry_count(ev); i++) {
    dynconf_outcome_t o = dynconf_event_outcome(ev, i);
    if (o == DYNCONF_OUTCOME_APPLIED)
      continue;
    const char *nv = dynconf_event_new_value(ev, i);
    const char *why = dynconf_event_reason(ev, i);
    dc_plugin_log(st, o == DYNCONF_OUTCOME_REJECTED ? 4 : 6, "DYNCONF",
                  "%s=%s from %s: %s%s%s", dynconf_event_key(ev, i),
                  nv ? nv : "(the application's)",
                  dynconf_source_name(dynconf_event_source(ev, i)),
                  dynconf_outcome_name(o), why ? ": " : "", why ? why : "");
  }
}
