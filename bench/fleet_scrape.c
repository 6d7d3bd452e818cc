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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEADY 9
#define ALTERS 5

/* A connection as the broker sees it. */
typedef struct peer {
  dc_conn_info_t conn;
  void *fleet, *pending;
} peer_t;

static dc_broker_t *g_b;
static dc_arena_t g_scratch, g_resp;
static dc_buf_t g_out;
static int32_t g_corr = 1;

typedef int(enc_fn)(dc_buf_t *b, int16_t v, const void *q);
static int enc_report(dc_buf_t *b, int16_t v, const void *q) {
  return dc_client_report_req_encode(b, v, q);
}
static int enc_alter(dc_buf_t *b, int16_t v, const void *q) {
  return dc_incremental_alter_configs_req_encode(b, v, q);
}

static void peer_init(peer_t *p) {
  memset(p, 0, sizeof(*p));
  p->conn = (dc_conn_info_t){.peer = "127.0.0.1:40000",
                             .listener = "PLAINTEXT",
                             .token = p,
                             .pending = &p->pending,
                             .fleet = &p->fleet};
}

static void peer_close(peer_t *p) {
  if (p->pending)
    dc_broker_abandon(g_b, p->pending);
  if (p->fleet)
    dc_broker_fleet_conn_closed(g_b, p->fleet);
  p->pending = p->fleet = NULL;
}

/* One request of p; false unless it was answered (body in *rd). */
static bool call(peer_t *p, int16_t api, int16_t v, enc_fn *enc,
                 const void *q, dc_rd_t *rd) {
  dc_buf_t req;
  dc_buf_init(&req);
  size_t off = dc_wr_frame_begin(&req);
  dc_req_header_t h = {api, v, g_corr++, "fleet-scrape-bench"};
  dc_req_header_encode(&req, &h);
  enc(&req, v, q);
  dc_wr_frame_end(&req, off);
  dc_buf_clear(&g_out);
  char err[256];
  int rc = dc_broker_handle(g_b, &p->conn, req.data + 4, req.len - 4,
                            &g_scratch, &g_out, err, sizeof(err));
  dc_arena_reset(&g_scratch);
  dc_buf_free(&req);
  if (rc != DC_HANDLE_OK)
    return false;
  dc_arena_reset(&g_resp);
  dc_rd_init(rd, g_out.data + 4, g_out.len - 4, &g_resp);
  int32_t corr;
  return !dc_resp_header_decode(rd, api, v, &corr);
}

static bool report(peer_t *p, const char *inst, const char *client) {
  dc_client_report_req_t q = {(char *)client,
                              (char *)inst,
                              "producer",
                              "dynconf-agent",
                              "1.0",
                              "librdkafka/2.0.2",
                              dc_broker_config_version(g_b, client, NULL),
                              1,
                              DC_OUTCOME_APPLIED,
                              NULL};
  dc_rd_t rd;
  dc_client_report_resp_t resp;
  return call(p, DC_API_CLIENT_REPORT, 0, enc_report, &q, &rd) &&
         !dc_client_report_resp_decode(&rd, 0, &resp) && !resp.error_code;
}

static bool alter_default(const char *acks) {
  peer_t admin;
  peer_init(&admin);
  dc_alter_config_t c = {"acks", DC_OP_SET, (char *)acks};
  dc_alter_resource_t res = {DC_RES_CLIENT, "<default>", 1, &c};
  dc_alter_configs_req_t q = {1, &res, false};
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  return call(&admin, DC_API_INCREMENTAL_ALTER_CONFIGS, 1, enc_alter, &q,
              &rd) &&
         !dc_incremental_alter_configs_resp_decode(&rd, 1, &resp) &&
         resp.n_responses == 1 && !resp.responses[0].error_code;
}

/* One scrape's text, as GET /metrics renders it: its microseconds. */
static double scrape_us(void) {
  dc_buf_t text;
  dc_buf_init(&text);
  int64_t t0 = dc_mono_us();
  dc_broker_metrics(g_b, &text);
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

/* n connected agents, each with its own client-id, in g_b's fleet; NULL
 * (said why) when one cannot be added. */
static peer_t *fill_fleet(long n) {
  peer_t *p = calloc((size_t)n, sizeof(*p));
  if (!p) {
    fprintf(stderr, "fleet_scrape: out of memory\n");
    return NULL;
  }
  long refused = 0;
  for (long i = 0; i < n; i++) {
    char inst[32], client[32];
    snprintf(inst, sizeof(inst), "agent-%06ld", i);
    snprintf(client, sizeof(client), "app-%06ld", i);
    peer_init(&p[i]);
    refused += !report(&p[i], inst, client);
  }
  if (refused) {
    fprintf(stderr, "fleet_scrape: %ld of %ld reports failed or were "
            "refused\n", refused, n);
    for (long i = 0; i < n; i++)
      peer_close(&p[i]);
    free(p);
    return NULL;
  }
  return p;
}

/* Times scrapes of g_b's fleet of n agents, steady and after alters of
 * <default>, and prints them. 0, or 1 when an alter failed. */
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
  dc_broker_fleet_stats(g_b, &st);
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
  g_b = dc_broker_new(o, NULL, err, sizeof(err));
  peer_t fat;
  peer_init(&fat);
  dc_rd_t rd;
  dc_client_report_resp_t resp;
  dc_fleet_stats_t st;
  if (g_b && call(&fat, DC_API_CLIENT_REPORT, 0, enc_report, &fq, &rd) &&
      !dc_client_report_resp_decode(&rd, 0, &resp) && !resp.error_code) {
    dc_broker_fleet_stats(g_b, &st);
    printf("  an agent with every field at its longest, alone: "
           "dynconfd_fleet_bytes %zu\n", st.bytes);
  } else {
    fprintf(stderr, "fleet_scrape: the longest report failed\n");
  }
  if (g_b) {
    peer_close(&fat);
    dc_broker_destroy(g_b);
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  if (n < 1) {
    fprintf(stderr, "usage: %s [AGENTS]\n", argv[0]);
    return 2;
  }
  dc_arena_init(&g_scratch);
  dc_arena_init(&g_resp);
  dc_buf_init(&g_out);
  dc_broker_opts_t o;
  dc_broker_opts_init(&o);
  char err[256] = "";
  g_b = dc_broker_new(&o, NULL, err, sizeof(err));
  if (!g_b) {
    fprintf(stderr, "fleet_scrape: %s\n", err);
    return 1;
  }
  peer_t *p = fill_fleet(n);
  if (!p || time_scrapes(n))
    return 1;
  for (long i = 0; i < n; i++)
    peer_close(&p[i]);
  free(p);
  dc_broker_destroy(g_b);
  fat_agent_bytes(&o);
  dc_buf_free(&g_out);
  dc_arena_free(&g_resp);
  dc_arena_free(&g_scratch);
  return 0;
}
