/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What dynconf_poll() serves: the queued events and log lines. A service
 * below the agent's fetching (agent.c) and certificate watching
 * (certwatch.c), which both report through it; all under dc->lock.
 */
#include "agent/agent_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dc_agent_enqueue_locked(dynconf_t *dc, dynconf_event_t *ev) {
  if (dc->evq_len >= DC_AGENT_MAX_QUEUED) {
    /* The application is not polling: drop the oldest, count it. */
    dynconf_event_t *old = dc->evq_head;
    dc->evq_head = old->next;
    if (!dc->evq_head)
      dc->evq_tail = NULL;
    dc->evq_len--;
    dc->n_dropped++;
    dc_event_free(old);
  }
  ev->next = NULL;
  if (dc->evq_tail)
    dc->evq_tail->next = ev;
  else
    dc->evq_head = ev;
  dc->evq_tail = ev;
  dc->evq_len++;
  pthread_cond_broadcast(&dc->ready);
}

static void vlog_locked(dynconf_t *dc, int level, const char *fac,
                        const char *fmt, va_list ap) {
  if (level > dc->conf.log_level || dc->logq_len >= DC_AGENT_MAX_QUEUED)
    return; /* bounded: an unpolled agent must not grow */
  char msg[512];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  dc_logmsg_t *m = calloc(1, sizeof(*m));
  if (!m || !(m->fac = strdup(fac)) || !(m->msg = strdup(msg))) {
    if (m)
      free(m->fac);
    free(m);
    return;
  }
  m->level = level;
  if (dc->logq_tail)
    dc->logq_tail->next = m;
  else
    dc->logq_head = m;
  dc->logq_tail = m;
  dc->logq_len++;
  pthread_cond_broadcast(&dc->ready);
}

void dc_agent_log_locked(dynconf_t *dc, int level, const char *fac,
                         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog_locked(dc, level, fac, fmt, ap);
  va_end(ap);
}

void dc_agent_log(dynconf_t *dc, int level, const char *fac, const char *fmt,
                  ...) {
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&dc->lock);
  vlog_locked(dc, level, fac, fmt, ap);
  pthread_mutex_unlock(&dc->lock);
  va_end(ap);
}

void dc_logmsg_free(dc_logmsg_t *m) {
  free(m->fac);
  free(m->msg);
  free(m);
}

void dc_agent_queues_free(dynconf_t *dc) {
  while (dc->evq_head) {
    dynconf_event_t *n = dc->evq_head->next;
    dc_event_free(dc->evq_head);
    dc->evq_head = n;
  }
  dc->evq_tail = NULL;
  dc->evq_len = 0;
  while (dc->logq_head) {
    dc_logmsg_t *n = dc->logq_head->next;
    dc_logmsg_free(dc->logq_head);
    dc->logq_head = n;
  }
  dc->logq_tail = NULL;
  dc->logq_len = 0;
}
