/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Answers that come later: what a connection waits for (a forwarded
 * alter, a parked Watch or DescribeFleet, a SASL step on the log-in
 * thread) is handed back through dc_broker_answers or dropped by
 * dc_broker_abandon, and one timer wakes the loop when the first of them
 * is due. The parts that park, wake or hold set b->timer_stale; each
 * entry point of the broker sets the timer again before it returns, so
 * those parts never call up here.
 *
 * Threads: loop thread only.
 */
#include "broker/core/broker_int.h"
#include "common/clock.h"
#include "common/text.h"

#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

int dc_broker_timer_init(dc_broker_t *b, char *errstr, size_t errstr_size) {
  b->watch_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (b->watch_fd < 0) {
    dc_seterr(errstr, errstr_size, "cannot make the answer timer: %s",
              strerror(errno));
    return -1;
  }
  return 0;
}

void dc_broker_timer_free(dc_broker_t *b) {
  if (b->watch_fd >= 0)
    close(b->watch_fd);
  b->watch_fd = -1;
}

int dc_broker_watch_fd(const dc_broker_t *b) { return b->watch_fd; }

/* Sets the timer to fire at due (monotonic ms; -1 disarms). */
static void arm_at(dc_broker_t *b, int64_t due) {
  struct itimerspec its = {0};
  int64_t now = dc_mono_ms();
  if (due >= 0) {
    int64_t in = due > now ? due - now : 0;
    its.it_value.tv_sec = in / 1000;
    its.it_value.tv_nsec = (long)(in % 1000) * 1000000 + 1; /* 0 disarms */
  }
  timerfd_settime(b->watch_fd, 0, &its, NULL);
  b->watch_armed = due;
}

/* The earlier of two due times (-1 = none). */
static int64_t earlier(int64_t a, int64_t b) {
  return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* Arms the timer for the first thing due: now when something is due
 * already (a woken watch, a moved fleet, a held forwarded answer whose
 * server caught up), else the earliest deadline of a watch, a parked
 * DescribeFleet, a held forwarded answer or a held log-in failure
 * (nothing parked: disarmed). */
static void arm(dc_broker_t *b) {
  int64_t due[] = {dc_broker_watch_due(b), dc_broker_fleet_waits_due(b),
                   dc_broker_fwd_held_due(b), dc_broker_login_held_due(b)};
  int64_t first = -1;
  for (size_t i = 0; i < sizeof(due) / sizeof(due[0]); i++) {
    if (due[i] == 0) {
      arm_at(b, dc_mono_ms());
      return;
    }
    first = earlier(first, due[i]);
  }
  arm_at(b, first);
}

void dc_broker_timer_settle(dc_broker_t *b) {
  if (!b->timer_stale)
    return;
  b->timer_stale = false;
  arm(b);
}

void dc_broker_answers(dc_broker_t *b, dc_broker_answer_cb *cb, void *opaque) {
  uint64_t fired;
  ssize_t rd = read(b->watch_fd, &fired, sizeof(fired));
  (void)rd; /* EAGAIN too: the loop may call without the timer firing */
  dc_broker_login_answers(b, cb, opaque);
  dc_broker_fleet_waits_answer(b, cb, opaque);
  dc_broker_forward_answers(b, cb, opaque);
  dc_broker_watch_answers(b, cb, opaque);
  b->timer_stale = false;
  arm(b);
}

void dc_broker_abandon(dc_broker_t *b, void *pending) {
  if (*(int *)pending == DC_PENDING_LOGIN)
    dc_broker_login_abandon(pending);
  else if (!dc_broker_watch_abandon(b, pending) &&
           !dc_broker_fleet_wait_abandon(b, pending))
    dc_broker_forward_abandon(pending);
}

void dc_broker_fleet_conn_closed(dc_broker_t *b, void *entry) {
  dc_broker_fleet_gone(b, entry);
  dc_broker_timer_settle(b);
}
