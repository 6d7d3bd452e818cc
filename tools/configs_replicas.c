/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs: the replicas a fleet question goes to. Each dynconfd
 * knows the agents connected to it, so with replicas (the Kafka-topic
 * store) the fleet is the union of every replica's view: Metadata on the
 * server connected to lists the live replicas, and each gets a connection
 * of its own with the same security settings. One that cannot be reached
 * is left out with a warning: its agents, if it is down, reconnect to the
 * others and are counted there.
 */
#include "configs.h"

#include "common/clock.h"
#include "common/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest one replica of several may take to answer: one that hangs
 * (paused, overloaded) is left out instead of holding the command until
 * --timeout-ms. */
#define REPLICA_TIMEOUT_MS 5000

int64_t cli_replica_deadline(const cli_replicas_t *r, int64_t deadline,
                             const opts_t *o, opts_t *call_opts) {
  int64_t cap = dc_mono_ms() + REPLICA_TIMEOUT_MS;
  *call_opts = *o;
  if (r->kc == &r->first || cap >= deadline)
    return deadline;
  call_opts->replica_limit_ms = REPLICA_TIMEOUT_MS;
  return cap;
}

static int enc_metadata(dc_buf_t *b, int16_t v, const void *req) {
  return dc_metadata_req_encode(b, v, req);
}

/* The brokers Metadata lists on kc into *out (arena); 0 when it cannot
 * tell (no Metadata, an error answer): kc is then the only replica known;
 * -1 (said) when the connection was lost asking. */
static int32_t list_brokers(dc_kclient_t *kc, int64_t deadline,
                            dc_arena_t *arena, dc_metadata_broker_t **out) {
  int16_t v = dc_kclient_pick_version(kc, DC_API_METADATA);
  if (v < 1) /* v0 cannot ask for no topics */
    return 0;
  dc_metadata_req_t req = {.n_topics = 0};
  dc_metadata_resp_t resp;
  dc_rd_t rd;
  char err[512];
  if (dc_kclient_request(kc, DC_API_METADATA, v, enc_metadata, &req,
                         cli_remaining_ms(deadline), &rd, arena, err,
                         sizeof(err))) {
    if (dc_kclient_connected(kc))
      return 0;
    cli_fail("asking %s for the replicas (Metadata): %s", dc_kclient_peer(kc),
             err);
    return -1; /* the connection is gone with it */
  }
  if (dc_metadata_resp_decode(&rd, v, &resp))
    return 0;
  *out = resp.brokers;
  return resp.n_brokers;
}

/* A connection to one listed replica, or NULL after a warning. */
static dc_kclient_t *connect_replica(const opts_t *o,
                                     const dc_metadata_broker_t *br,
                                     int64_t deadline) {
  if (deadline > dc_mono_ms() + REPLICA_TIMEOUT_MS)
    deadline = dc_mono_ms() + REPLICA_TIMEOUT_MS;
  char addr[300], err[1024];
  snprintf(addr, sizeof(addr), strchr(br->host, ':') ? "[%s]:%d" : "%s:%d",
           br->host, br->port);
  dc_kclient_t *kc = dc_kclient_new(PROG);
  if (!kc) {
    snprintf(err, sizeof(err), "out of memory");
  } else if (!(o->command_config &&
               dc_kclient_set_security(kc, &o->props.sec, err, sizeof(err))) &&
             !dc_kclient_connect(kc, addr, cli_remaining_ms(deadline), err,
                                 sizeof(err)) &&
             !dc_kclient_api_versions(kc, cli_remaining_ms(deadline), err,
                                      sizeof(err))) {
    return kc;
  }
  fprintf(stderr, "Warning: replica %d at %s: %s; the clients connected to "
          "it are left out\n", br->node_id, addr, err);
  dc_kclient_destroy(kc);
  return NULL;
}

int cli_replicas_open(const opts_t *o, dc_kclient_t *kc, int64_t deadline,
                      cli_replicas_t *out) {
  *out = (cli_replicas_t){.first = kc};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_metadata_broker_t *brs = NULL;
  int32_t n = list_brokers(kc, deadline, &arena, &brs);
  out->alone = n == 1;
  if (n < 0) {
    dc_arena_free(&arena);
    return EXIT_FAIL;
  }
  if (n > 1 && !(out->kc = calloc((size_t)n, sizeof(*out->kc)))) {
    dc_arena_free(&arena);
    cli_fail("out of memory");
    return EXIT_FAIL;
  }
  for (int32_t i = 0; n > 1 && i < n; i++)
    if ((out->kc[out->n] = connect_replica(o, &brs[i], deadline)))
      out->n++;
  dc_arena_free(&arena);
  if (!out->n) { /* one server, or none of the listed reachable */
    free(out->kc);
    out->kc = &out->first;
    out->n = 1;
  }
  return EXIT_OK;
}

bool cli_replicas_drop(cli_replicas_t *r, int i) {
  if (r->kc == &r->first || r->n < 2)
    return false; /* the only one left, or main()'s own connection */
  fprintf(stderr, "Warning: the clients connected to %s are left out from "
          "now on\n", dc_kclient_peer(r->kc[i]));
  dc_kclient_destroy(r->kc[i]);
  memmove(r->kc + i, r->kc + i + 1, (size_t)(r->n - i - 1) * sizeof(*r->kc));
  r->n--;
  return true;
}

void cli_replicas_close(cli_replicas_t *r) {
  if (r->kc != &r->first) {
    for (int i = 0; i < r->n; i++)
      dc_kclient_destroy(r->kc[i]);
    free(r->kc);
  }
  *r = (cli_replicas_t){0};
}
