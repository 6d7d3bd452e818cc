/* SPDX-License-Identifier: BSD-2-Clause */
/* loadgen's summaries and RESULT lines, for the load and for --setup. */
#include "lg_run.h"

#include <stdio.h>

const char *lg_security_protocol(const cfg_t *c) {
  if (c->tls_ca)
    return c->sasl.mechanism ? "SASL_SSL" : "SSL";
  return c->sasl.mechanism ? "SASL_PLAINTEXT" : "PLAINTEXT";
}

int lg_report_setup(const run_t *r, const char *target, double secs,
                    double cpu) {
  const cfg_t *c = &r->cfg;
  double cps = secs > 0 ? (double)r->done / secs : 0;
  double p50 = (double)h_percentile(r->hist, 50) / 1e3;
  double p99 = (double)h_percentile(r->hist, 99) / 1e3;
  double p999 = (double)h_percentile(r->hist, 99.9) / 1e3;
  double mx = (double)r->hist->max / 1e3;
  const char *mech = c->sasl.mechanism ? c->sasl.mechanism : "-";
  if (!c->quiet) {
    printf("loadgen: connection set-up against %s: %s%s%s%s, then "
           "ApiVersions v3, one connection at a time\n",
           target, lg_security_protocol(c), c->sasl.mechanism ? " " : "",
           c->sasl.mechanism ? mech : "",
           c->tls_cert ? " with a client certificate" : "");
    if (r->tls_desc[0])
      printf("  tls       %s, full handshake every time (no resumption)\n",
             r->tls_desc);
    printf("  set-ups   %llu completed in %.2f s = %.0f connections/s\n",
           (unsigned long long)r->done, secs, cps);
    printf("  cpu       %.3f s in this process during the loop (%.0f us "
           "per connection)\n",
           cpu, r->done ? 1e6 * cpu / (double)r->done : 0);
    printf("  latency   p50 %.1f us  p99 %.1f us  p99.9 %.1f us  max %.1f us\n",
           p50, p99, p999, mx);
    printf("  errors    %llu failed set-ups\n",
           (unsigned long long)r->errors);
  }
  char ver[96] = "-", cipher[96] = "-";
  if (r->tls_desc[0])
    sscanf(r->tls_desc, "%95s %95s", ver, cipher);
  printf("RESULT mode=setup target=%s security=%s mechanism=%s "
         "client_cert=%d tls_version=%s tls_cipher=%s attempts=%llu "
         "connections=%llu seconds=%.3f cps=%.1f p50_us=%.1f p99_us=%.1f "
         "p999_us=%.1f max_us=%.1f errors=%llu cpu_s=%.4f\n",
         target, lg_security_protocol(c), mech, c->tls_cert ? 1 : 0, ver,
         cipher, (unsigned long long)r->sent, (unsigned long long)r->done,
         secs, cps, p50, p99, p999, mx, (unsigned long long)r->errors, cpu);
  fflush(stdout);
  return (r->errors == 0 && r->done > 0) ? 0 : 1;
}

/* The load's readable summary (left out with --quiet). */
static void summary_load(const run_t *r, const char *target, double secs,
                         double cpu) {
  const cfg_t *c = &r->cfg;
  double rps = secs > 0 ? (double)r->done / secs : 0;
  printf("loadgen: %s (%s) v%d against %s%s, %d connections x %d in flight\n",
         lg_api_arg(c->api), lg_api_title(c->api),
         c->version, target, c->mock ? " (librdkafka mock cluster)" : "",
         c->connections, c->pipeline);
  printf("  requests  %llu completed in %.2f s = %.0f req/s\n",
         (unsigned long long)r->done, secs, rps);
  printf("  received  %.1f MB/s of responses (%.0f bytes each)\n",
         secs > 0 ? (double)r->rx_bytes / secs / 1e6 : 0,
         r->done ? (double)r->rx_bytes / (double)r->done : 0);
  printf("  cpu       %.2f s in this process (%.0f%% of one core)%s\n", cpu,
         secs > 0 ? 100 * cpu / secs : 0,
         c->mock ? ", mock cluster included" : "");
  printf("  latency   p50 %.1f us  p99 %.1f us  p99.9 %.1f us  max %.1f us\n",
         (double)h_percentile(r->hist, 50) / 1e3,
         (double)h_percentile(r->hist, 99) / 1e3,
         (double)h_percentile(r->hist, 99.9) / 1e3,
         (double)r->hist->max / 1e3);
  printf("  errors    %llu failed requests (%llu error responses, %llu "
         "connections failed)\n",
         (unsigned long long)r->errors, (unsigned long long)r->resp_errors,
         (unsigned long long)r->conn_failures);
  if (c->mock)
    printf("  note: the mock cluster's broker thread runs inside this "
           "loadgen process and shares its cores\n");
  if (r->tls || c->sasl.mechanism)
    printf("  security  %s%s%s%s%s (set up before the load started)\n",
           lg_security_protocol(c), c->sasl.mechanism ? " " : "",
           c->sasl.mechanism ? c->sasl.mechanism : "",
           r->tls_desc[0] ? ", " : "", r->tls_desc);
}

int lg_report_load(const run_t *r, const char *target, double secs,
                   double cpu) {
  const cfg_t *c = &r->cfg;
  if (!c->quiet)
    summary_load(r, target, secs, cpu);
  printf("RESULT target=%s api=%s version=%d mock=%d connections=%d "
         "pipeline=%d requests=%llu seconds=%.3f rps=%.0f p50_us=%.1f "
         "p99_us=%.1f p999_us=%.1f max_us=%.1f errors=%llu conn_failures=%llu "
         "rx_bytes=%llu cpu_s=%.2f security=%s mechanism=%s\n",
         target, lg_api_arg(c->api), c->version,
         c->mock ? 1 : 0, c->connections, c->pipeline,
         (unsigned long long)r->done, secs,
         secs > 0 ? (double)r->done / secs : 0,
         (double)h_percentile(r->hist, 50) / 1e3,
         (double)h_percentile(r->hist, 99) / 1e3,
         (double)h_percentile(r->hist, 99.9) / 1e3,
         (double)r->hist->max / 1e3, (unsigned long long)r->errors,
         (unsigned long long)r->conn_failures,
         (unsigned long long)r->rx_bytes, cpu, lg_security_protocol(c),
         c->sasl.mechanism ? c->sasl.mechanism : "-");
  fflush(stdout);
  return (r->errors == 0 && r->conn_failures == 0 && r->done > 0) ? 0 : 1;
}
