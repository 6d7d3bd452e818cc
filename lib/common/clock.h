/* SPDX-License-Identifier: BSD-2-Clause */
/* Clocks in the units the project uses. Any thread. */
#ifndef DC_CLOCK_H
#define DC_CLOCK_H
#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds: for deadlines and intervals. */
static inline int64_t dc_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic microseconds: for latencies. */
static inline int64_t dc_mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Wall-clock milliseconds since the epoch: for timestamps people read. */
static inline int64_t dc_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
#endif
