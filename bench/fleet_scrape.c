/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a scrape of /metrics costs dynconfd's event loop with a large
 * fleet of connected agents: the text dc_broker_metrics() renders for
 * GET /metrics (the HTTP exchange left out), in one process with no
 * sockets, through dc_broker_handle() as tests/unit/test_fleet_metrics.c
 * drives it. AGENTS agents of distinct client-ids, each on a connection
 * of its own that stays open, report; then:
 *   - the scrape with nothing changed (median of 9): O(1), the fleet's
 *     counts are kept as agents report;
 *   - an alter of <default> (the configuration every agent resolves
 *     through), then the first scrape after it, which judges every
 *     connected agent again, and the one after that; 5 times (median).
 * Also prints the fleet's size as dynconfd_fleet_bytes counts it, per
 * agent, and those of one agent with every field at its longest (alone
 * in a new broker's fleet).
 *
 *   bench/fleet_scrape [AGENTS]   (default 100000, the fleet's bound)
 */
#include "broker/core/broker.h"
#include "broker/core/broker_int.h"
#include "codec/proto.h"
#include "common/clock.h"
#include "inproc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEADY 9
#define ALTERS 5

static dc_inproc_t g_ip;

/* One request of p; false unless it was answered, its response header
 * whole (body in *rd). */
static bool call(dc_inproc_peer_t *p, int16_t api, int16_t v,
                 dc_inproc_enc_fn *enc, const void *q, dc_rd_t *rd) {
  return dc_inproc_call(&g_ip, p, api, v, enc, q, rd) == DC_HANDLE_OK &&
         !g_ip.hdr_err;
}

static bool report(dc_inproc_peer_t *p, const char *inst, const char *client) {
  dc_client_report_req_t q = {(char *)client,
                              (char *)inst,
                              "producer",
                              "dynconf-agent",
                              "1.0",
                              "librdkafka/2.0.2",
                              dc_broker_config_version(g_ip.b, client, NULL),
                              1,
                              DC_OUTCOME_APPLIED,
                              NULL};
  dc_rd_t rd;
  dc_client_report_resp_t resp;
  return call(p, DC_API_CLIENT_REPORT, 0, dc_inproc_enc_report, &q, &rd) &&
         !dc_client_report_resp_decode(&rd, 0, &resp) && !resp.error_code;
}

static bool alter_default(const char *acks) {
  dc_inproc_peer_t admin;
  dc_inproc_peer_init(&admin, NULL);
  dc_alter_config_t c = {"acks", DC_OP_SET, (char *)acks};
  dc_alter_resource_t res = {DC_RES_CLIENT, "<default>", 1, &c};
  dc_alter_configs_req_t q = {1, &res, false};
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  return call(&admin, DC_API_INCREMENTAL_ALTER_CONFIGS, 1,
              dc_inproc_enc_alter, &q, &rd) &&
         !dc_incremental_alter_configs_resp_decode(&rd, 1, &resp) &&
         resp.n_responses == 1 && !resp.responses[0].error_code;
}

/* One scrape's text, as GET /metrics renders it: its microseconds. */
static double scrape_us(void) {
  dc_buf_t text;
  dc_buf_init(&text);
  int64_t t0 = dc_mono_us();
  dc_broker_metrics(g_ip.b, &text);
  int64_t took = dc_mono_us() - t0;
  dc_buf_free(&text);
  return (double)took;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp);
  return v[n / 2];
}

/* n connected agents, each with its own client-id, in the broker's fleet;
 * NULL (said why) when one cannot be added. */
static dc_inproc_peer_t *fill_fleet(long n) {
  dc_inproc_peer_t *p = calloc((size_t)n, sizeof(*p));
  if (!p) {
    fprintf(stderr, "fleet_scrape: out of memory\n");
    return NULL;
  }
  long refused = 0;
  for (long i = 0; i < n; i++) {
    char inst[32], client[32];
    snprintf(inst, sizeof(inst), "agent-%06ld", i);
    snprintf(client, sizeof(client), "app-%06ld", i);
    dc_inproc_peer_init(&p[i], NULL);
    refused += !report(&p[i], inst, client);
  }
  if (refused) {
    fprintf(stderr, "fleet_scrape: %ld of %ld reports failed or were "
            "refused\n", refused, n);
    for (long i = 0; i < n; i++)
      dc_inproc_peer_close(&g_ip, &p[i]);
    free(p);
    return NULL;
  }
  return p;
}

/* Times scrapes of the broker's fleet of n agents, steady and after
 * alters of <default>, and prints them. 0, or 1 when an alter failed. */
static int time_scrapes(long n) {
  double steady[STEADY], first[ALTERS], next[ALTERS];
  scrape_us(); /* the counts are judged once after the reports */
  for (int i = 0; i < STEADY; i++)
    steady[i] = scrape_us();
  for (int i = 0; i < ALTERS; i++) {
    if (!alter_default(i % 2 ? "1" : "0")) {
      fprintf(stderr, "fleet_scrape: the alter of <default> failed\n");
      return 1;
    }
    first[i] = scrape_us();
    next[i] = scrape_us();
  }
  double f = median(first, ALTERS);
  dc_fleet_stats_t st;
  dc_broker_fleet_stats(g_ip.b, &st);
  printf("/metrics rendered with %zu connected agents of distinct "
         "client-ids (in process, no HTTP; dynconfd_fleet_bytes %zu, %.0f "
         "per agent):\n", st.entries, st.bytes,
         st.entries ? (double)st.bytes / (double)st.entries : 0.0);
  printf("  nothing changed: %.3f ms (median of %d)\n",
         median(steady, STEADY) / 1000, STEADY);
  printf("  first scrape after an alter of <default>: %.1f ms (%.2f us per "
         "agent; median of %d alters), the next %.3f ms\n", f / 1000,
         f / (double)n, ALTERS, median(next, ALTERS) / 1000);
  return 0;
}

/* One agent with every field as long as dynconfd takes (as bench/fleet
 * --fat sends them), alone in a new broker's fleet: prints its bytes. */
static void fat_agent_bytes(const dc_broker_opts_t *o) {
  static char fclient[256], fid[65], fkind[65], fsoft[129], freason[2049];
  memset(fclient, 'c', 255);
  memset(fid, 'i', 64);
  memset(fkind, 'k', 64);
  memset(fsoft, 's', 128);
  memset(freason, 'r', 2048);
  dc_client_report_req_t fq = {fclient, fid, fkind, fsoft, fsoft, fsoft, 1, 1,
                               DC_OUTCOME_REJECTED, freason};
  char err[256] = "";
  dc_inproc_start(&g_ip, o, err, sizeof(err));
  dc_inproc_peer_t fat;
  dc_inproc_peer_init(&fat, NULL);
  dc_rd_t rd;
  dc_client_report_resp_t resp;
  dc_fleet_stats_t st;
  if (g_ip.b &&
      call(&fat, DC_API_CLIENT_REPORT, 0, dc_inproc_enc_report, &fq, &rd) &&
      !dc_client_report_resp_decode(&rd, 0, &resp) && !resp.error_code) {
    dc_broker_fleet_stats(g_ip.b, &st);
    printf("  an agent with every field at its longest, alone: "
           "dynconfd_fleet_bytes %zu\n", st.bytes);
  } else {
    fprintf(stderr, "fleet_scrape: the longest report failed\n");
  }
  if (g_ip.b) {
    dc_inproc_peer_close(&g_ip, &fat);
    dc_inproc_stop(&g_ip);
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  if (n < 1) {
    fprintf(stderr, "usage: %s [AGENTS]\n", argv[0]);
    return 2;
  }
  dc_inproc_init(&g_ip, "fleet-scrape-bench");
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  char err[256] = "";
  if (!dc_inproc_start(&g_ip, &o, err, sizeof(err))) {
    fprintf(stderr, "fleet_scrape: %s\n", err);
    return 1;
  }
  dc_inproc_peer_t *p = fill_fleet(n);
  if (!p || time_scrapes(n))
    return 1;
  for (long i = 0; i < n; i++)
    dc_inproc_peer_close(&g_ip, &p[i]);
  free(p);
  dc_inproc_stop(&g_ip);
  fat_agent_bytes(&o);
  dc_inproc_free(&g_ip);
  return 0;
}
