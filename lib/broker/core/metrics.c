/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's counters as Prometheus text (see metrics.h).
 */
#include "broker/core/metrics.h"
#include "codec/proto.h"
#include "common/errors.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const double dc_metrics_bounds[DC_METRICS_BUCKETS] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
    0.01,    0.025,  0.05,    0.1,    0.25,  1,      5};

void dc_histogram_observe(dc_histogram_t *h, double seconds) {
  size_t i = 0;
  while (i < DC_METRICS_BUCKETS && seconds > dc_metrics_bounds[i])
    i++;
  h->counts[i]++;
  h->count++;
  h->sum += seconds;
}

const char *const dc_metrics_mech_names[DC_METRICS_MECHS] = {
    "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI",
    "other"};

int dc_metrics_mech(const char *mechanism) {
  for (int i = 0; mechanism && i < DC_METRICS_MECHS - 1; i++)
    if (!strcasecmp(mechanism, dc_metrics_mech_names[i]))
      return i;
  return DC_METRICS_MECHS - 1;
}

static bool is_series(const dc_request_series_t *s, int16_t api,
                      int16_t version, int16_t error) {
  return s->api == api && s->version == version && s->error == error;
}

void dc_metrics_request(dc_metrics_t *m, int16_t api, int16_t version,
                        int16_t error, double seconds) {
  size_t i = m->hot_series, a = m->hot_api;
  if (i < m->n_series && is_series(&m->series[i], api, version, error) &&
      a < m->n_apis && m->apis[a].api == api) {
    m->series[i].count++;
    dc_histogram_observe(&m->apis[a].latency, seconds);
    return;
  }
  i = 0;
  while (i < m->n_series &&
         (m->series[i].api != api || m->series[i].version != version ||
          m->series[i].error != error))
    i++;
  if (i == m->n_series && i < DC_METRICS_MAX_SERIES)
    m->series[m->n_series++] = (dc_request_series_t){api, version, error, 0};
  if (i < m->n_series)
    m->series[i].count++;
  else
    m->series_dropped++;
  a = 0;
  while (a < m->n_apis && m->apis[a].api != api)
    a++;
  if (a == m->n_apis && a < DC_METRICS_MAX_APIS)
    m->apis[m->n_apis++].api = api;
  if (a < m->n_apis)
    dc_histogram_observe(&m->apis[a].latency, seconds);
  m->hot_series = i;
  m->hot_api = a;
}

/* ---- text ------------------------------------------------------------------ */

void dc_metrics_head(dc_buf_t *out, const char *name, const char *type,
                     const char *help) {
  dc_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newlines escaped. */
static void label_value(dc_buf_t *out, const char *v) {
  for (; *v; v++) {
    if (*v == '\\' || *v == '"')
      dc_buf_printf(out, "\\%c", *v);
    else if (*v == '\n')
      dc_buf_printf(out, "\\n");
    else
      dc_buf_append(out, v, 1);
  }
}

/* name{labels} v, where labels is already written text or NULL. */
static void sample(dc_buf_t *out, const char *name, const char *labels,
                   double v) {
  dc_buf_printf(out, "%s%s%s%s %.17g\n", name, labels ? "{" : "",
                labels ? labels : "", labels ? "}" : "", v);
}

void dc_metrics_value(dc_buf_t *out, const char *name, const char *label,
                      const char *value, double v) {
  if (!label) {
    sample(out, name, NULL, v);
    return;
  }
  dc_buf_printf(out, "%s{%s=\"", name, label);
  label_value(out, value);
  dc_buf_printf(out, "\"} %.17g\n", v);
}

static const char *api_name(int16_t api, char *buf, size_t size) {
  const dc_api_info_t *ai = dc_api_info(api);
  if (ai)
    return ai->name;
  snprintf(buf, size, "%d", api);
  return buf;
}

/* Cumulative buckets, _sum and _count of h, with one label (or none). */
static void histogram(dc_buf_t *out, const char *name, const char *label,
                      const dc_histogram_t *h) {
  char labels[160];
  uint64_t cum = 0;
  for (size_t i = 0; i <= DC_METRICS_BUCKETS; i++) {
    cum += h->counts[i];
    if (i < DC_METRICS_BUCKETS)
      snprintf(labels, sizeof(labels), "%s%sle=\"%g\"", label ? label : "",
               label ? "," : "", dc_metrics_bounds[i]);
    else
      snprintf(labels, sizeof(labels), "%s%sle=\"+Inf\"", label ? label : "",
               label ? "," : "");
    dc_buf_printf(out, "%s_bucket{%s} %llu\n", name, labels,
                  (unsigned long long)cum);
  }
  dc_buf_printf(out, "%s_sum%s%s%s %.17g\n", name, label ? "{" : "",
                label ? label : "", label ? "}" : "", h->sum);
  dc_buf_printf(out, "%s_count%s%s%s %llu\n", name, label ? "{" : "",
                label ? label : "", label ? "}" : "",
                (unsigned long long)h->count);
}

static void render_requests(const dc_metrics_t *m, dc_buf_t *out) {
  char labels[160], nb[16];
  dc_metrics_head(out, "dynconfd_requests_total", "counter",
                  "Requests handled, by API, version and the request's "
                  "error (the first failing resource's).");
  for (size_t i = 0; i < m->n_series; i++) {
    const dc_request_series_t *s = &m->series[i];
    snprintf(labels, sizeof(labels), "api=\"%s\",version=\"%d\",error=\"%s\"",
             api_name(s->api, nb, sizeof(nb)), s->version,
             s->error ? dc_err_name((dc_err_t)s->error) : "NONE");
    sample(out, "dynconfd_requests_total", labels, (double)s->count);
  }
  dc_metrics_head(out, "dynconfd_requests_unlabelled_total", "counter",
                  "Requests counted in no dynconfd_requests_total series: "
                  "their (API, version, error) came after the table's "
                  "512 series were taken.");
  sample(out, "dynconfd_requests_unlabelled_total", NULL,
         (double)m->series_dropped);
  dc_metrics_head(out, "dynconfd_request_duration_seconds", "histogram",
                  "Time to handle a request, by API (an alter's store "
                  "commit included; a forwarded alter's wait is not).");
  for (size_t i = 0; i < m->n_apis; i++) {
    snprintf(labels, sizeof(labels), "api=\"%s\"",
             api_name(m->apis[i].api, nb, sizeof(nb)));
    histogram(out, "dynconfd_request_duration_seconds", labels,
              &m->apis[i].latency);
  }
}

static void render_security(const dc_metrics_t *m, dc_buf_t *out) {
  dc_metrics_head(out, "dynconfd_authentications_total", "counter",
                  "SASL authentications, by mechanism and result.");
  for (int i = 0; i < DC_METRICS_MECHS; i++) {
    char labels[96];
    snprintf(labels, sizeof(labels), "mechanism=\"%s\",result=\"success\"",
             dc_metrics_mech_names[i]);
    sample(out, "dynconfd_authentications_total", labels,
           (double)m->auth_ok[i]);
    snprintf(labels, sizeof(labels), "mechanism=\"%s\",result=\"failure\"",
             dc_metrics_mech_names[i]);
    sample(out, "dynconfd_authentications_total", labels,
           (double)m->auth_failed[i]);
  }
  dc_metrics_head(out, "dynconfd_authorization_denials_total", "counter",
                  "Operations the ACLs refused.");
  sample(out, "dynconfd_authorization_denials_total", NULL,
         (double)m->authz_denied);
  dc_metrics_head(out, "dynconfd_describe_answers_reused_total", "counter",
                  "DescribeConfigs requests answered with the connection's "
                  "last answer to the same request, nothing it was made "
                  "from having changed.");
  sample(out, "dynconfd_describe_answers_reused_total", NULL,
         (double)m->answers_reused);
}

void dc_metrics_render(const dc_metrics_t *m, dc_buf_t *out) {
  render_requests(m, out);
  dc_metrics_head(out, "dynconfd_alters_total", "counter",
                  "Resources of alter requests, by result (applied and "
                  "stored, or refused with an error).");
  dc_metrics_value(out, "dynconfd_alters_total", "result", "applied",
                   (double)m->alters_applied);
  dc_metrics_value(out, "dynconfd_alters_total", "result", "refused",
                   (double)m->alters_refused);
  render_security(m, out);
  dc_metrics_head(out, "dynconfd_store_commit_seconds", "histogram",
                  "Time of each store commit (one per alter request).");
  histogram(out, "dynconfd_store_commit_seconds", NULL, &m->store_commit);
  dc_metrics_head(out, "dynconfd_store_commit_failures_total", "counter",
                  "Store commits that failed (the alter was undone).");
  sample(out, "dynconfd_store_commit_failures_total", NULL,
         (double)m->store_commit_failed);
}
