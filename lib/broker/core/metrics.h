/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's own numbers, kept by the event loop and written out as
 * Prometheus text exposition (format 0.0.4) for the /metrics endpoint.
 * Pure: counters in, text out; no I/O, no locks (one thread owns them).
 */
#ifndef DC_METRICS_H
#define DC_METRICS_H
#include "common/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Latency histograms: upper bounds in seconds, then +Inf. */
#define DC_METRICS_BUCKETS 14
extern const double dc_metrics_bounds[DC_METRICS_BUCKETS];

typedef struct dc_histogram {
  uint64_t counts[DC_METRICS_BUCKETS + 1]; /* per bucket, not cumulative */
  uint64_t count;
  double sum; /* seconds */
} dc_histogram_t;

void dc_histogram_observe(dc_histogram_t *h, double seconds);

/* (api key, version, error code) request counts: a small table, bounded
 * by the APIs and versions served and the error table's codes. */
#define DC_METRICS_MAX_SERIES 512

typedef struct dc_request_series {
  int16_t api, version, error;
  uint64_t count;
} dc_request_series_t;

/* Per API key: its handling time. */
#define DC_METRICS_MAX_APIS 16
#define DC_METRICS_MECHS 6 /* see dc_metrics_mech_names */

typedef struct dc_metrics {
  dc_request_series_t series[DC_METRICS_MAX_SERIES];
  size_t n_series;
  size_t hot_series, hot_api; /* the last request's: the next is alike */
  uint64_t series_dropped; /* past DC_METRICS_MAX_SERIES (never expected) */
  struct {
    int16_t api;
    dc_histogram_t latency;
  } apis[DC_METRICS_MAX_APIS];
  size_t n_apis;
  uint64_t alters_applied, alters_refused; /* resources */
  uint64_t authz_denied;
  uint64_t answers_reused; /* DescribeConfigs sent from the connection's memo */
  uint64_t auth_ok[DC_METRICS_MECHS]; /* by mechanism, see dc_metrics_mech */
  uint64_t auth_failed[DC_METRICS_MECHS];
  dc_histogram_t store_commit; /* seconds per store commit */
  uint64_t store_commit_failed;
} dc_metrics_t;

/* The mechanisms counted, by index: dc_metrics_mech_names (PLAIN,
 * SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI, other). */
extern const char *const dc_metrics_mech_names[DC_METRICS_MECHS];
int dc_metrics_mech(const char *mechanism);

/* One request of api/version handled in seconds; error is the request's
 * (the first failing resource's) Kafka error code, 0 for none. */
void dc_metrics_request(dc_metrics_t *m, int16_t api, int16_t version,
                        int16_t error, double seconds);

/* Appends the counters as Prometheus text (HELP and TYPE for each). */
void dc_metrics_render(const dc_metrics_t *m, dc_buf_t *out);

/* Helpers for the other sections of /metrics. A gauge or counter line
 * with one optional label pair (name NULL = none). */
void dc_metrics_head(dc_buf_t *out, const char *name, const char *type,
                     const char *help);
void dc_metrics_value(dc_buf_t *out, const char *name, const char *label,
                      const char *value, double v);
#endif
