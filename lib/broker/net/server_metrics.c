/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's metrics and health endpoint. */
#include "config.h"
#include "broker/net/server_int.h"
#include "broker/core/metrics.h"
#include "broker/net/process_metrics.h"

#include "common/text.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

/* dynconfd_connections{listener,protocol}: open client connections. */
static void connection_metrics(const dc_server_t *s, dc_buf_t *out) {
  size_t open[MAX_LISTENERS] = {0};
  for (const conn_t *c = s->conns; c; c = c->next)
    open[c->listener - s->listeners]++;
  dc_metrics_head(out, "dynconfd_connections", "gauge",
                  "Open client connections, by listener.");
  for (int i = 0; i < s->n_listeners; i++)
    dc_buf_printf(out, "dynconfd_connections{listener=\"%s\",protocol=\"%s\"} "
                  "%zu\n", s->listeners[i].name,
                  dc_sec_protocol_name(s->listeners[i].protocol), open[i]);
  dc_metrics_head(out, "dynconfd_tls_certificate_expiry_seconds", "gauge",
                  "When each TLS listener's served certificate expires, "
                  "seconds since the Unix epoch (reloads included).");
  for (int i = 0; i < s->n_listeners; i++) {
    char subject[512];
    int64_t not_after = -1;
    if (!s->listeners[i].tls)
      continue;
    dc_tls_ctx_describe(s->listeners[i].tls, subject, sizeof(subject),
                        &not_after);
    if (not_after >= 0)
      dc_metrics_value(out, "dynconfd_tls_certificate_expiry_seconds",
                       "listener", s->listeners[i].name,
                       (double)not_after / 1000);
  }
  dc_metrics_head(out, "dynconfd_connections_refused_total", "counter",
                  "New connections closed at once: the server had "
                  "max.connections, or their address was over "
                  "max.connection.creation.rate.per.ip.");
  dc_buf_printf(out, "dynconfd_connections_refused_total{reason=\"max_"
                "connections\"} %llu\n", (unsigned long long)
                s->refused_max_conns);
  dc_buf_printf(out, "dynconfd_connections_refused_total{reason=\"ip_"
                "creation_rate\"} %llu\n", (unsigned long long)
                s->refused_ip_rate);
  dc_metrics_head(out, "dynconfd_listener_accept_pauses_total", "counter",
                  "Times a listener stopped accepting for a moment, at "
                  "max.connection.creation.rate.");
  for (int i = 0; i < s->n_listeners; i++)
    dc_buf_printf(out, "dynconfd_listener_accept_pauses_total{listener="
                  "\"%s\"} %llu\n", s->listeners[i].name,
                  (unsigned long long)s->listeners[i].pauses);
  dc_metrics_head(out, "dynconfd_buffered_bytes", "gauge",
                  "Bytes of every connection's input and output buffers.");
  dc_metrics_value(out, "dynconfd_buffered_bytes", NULL, NULL,
                   (double)s->buffered);
}

static int http_answer(void *opaque, const char *path, dc_buf_t *body,
                       const char **type) {
  dc_server_t *s = opaque;
  if (!strcmp(path, "/metrics")) {
    *type = "text/plain; version=0.0.4; charset=utf-8";
    dc_metrics_head(body, "dynconfd_build_info", "gauge",
                    "The dynconfd build serving, as a label.");
    dc_metrics_value(body, "dynconfd_build_info", "version", PACKAGE_VERSION,
                     1);
    dc_broker_metrics(s->broker, body);
    connection_metrics(s, body);
    dc_process_metrics(body, s->start_time);
    return 200;
  }
  if (!strcmp(path, "/healthz")) {
    dc_buf_printf(body, "ok\n");
    return 200;
  }
  if (!strcmp(path, "/readyz")) {
    bool ready = s->n_listeners > 0 && !s->stop;
    dc_buf_printf(body, ready ? "ready\n" : "not ready: %s\n",
                  s->stop ? "stopping" : "no listener open");
    return ready ? 200 : 503;
  }
  dc_buf_printf(body, "not found: try /metrics, /healthz or /readyz\n");
  return 404;
}

int dc_server_add_metrics(dc_server_t *s, const char *host, int port,
                          char *bound, size_t bound_size, char *errstr,
                          size_t errstr_size) {
  if (s->metrics) {
    dc_seterr(errstr, errstr_size, "one metrics listener only");
    return -1;
  }
  s->metrics = dc_http_new(host, port, &s->opts.http, http_answer, s, bound,
                           bound_size, errstr, errstr_size);
  if (!s->metrics)
    return -1;
  s->http.kind = EP_HTTP;
  s->http.fd = dc_http_fd(s->metrics);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->http};
  if (s->http.fd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->http.fd, &ev)) {
    dc_seterr(errstr, errstr_size, "cannot watch the metrics listener: %s",
             strerror(errno));
    dc_http_destroy(s->metrics);
    s->metrics = NULL;
    return -1;
  }
  return 0;
}
