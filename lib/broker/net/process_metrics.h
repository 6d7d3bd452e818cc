/* SPDX-License-Identifier: BSD-2-Clause */
/* The process_* metrics (CPU, memory, fds, start time) of this process. */
#ifndef DC_PROCESS_METRICS_H
#define DC_PROCESS_METRICS_H
#include "common/buf.h"

/* Appends them as Prometheus text; start_time in seconds since the epoch. */
void dc_process_metrics(dc_buf_t *out, double start_time);
#endif
