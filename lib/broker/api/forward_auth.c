/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The writer's side of forwarding: whether an Envelope comes from a
 * replica of this store. Every replica that may write makes an Ed25519 key
 * at start and publishes its public half in its heartbeats; it signs each
 * Envelope it forwards (its node, the wall-clock time, the principal, the
 * client's address and the request inside). The writer takes an Envelope
 * only when the signature verifies with the key the named node published,
 * the node is another replica, and the time is within
 * DC_REPLICA_CLOCK_WINDOW_MS of its own clock. This holds on every kind of
 * listener, with or without an ACL file; with one, the connection must
 * also be a super user's, as Kafka trusts only its brokers.
 *
 * A signature does not hide the Envelope: whoever reads a PLAINTEXT
 * connection between replicas can send the same Envelope again within
 * the window (an SSL forward listener prevents that).
 */
#include "broker/auth/acl.h"
#include "broker/core/broker_int.h"
#include "common/clock.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>

typedef enum why {
  WHY_NOT_SUPER,
  WHY_UNSIGNED,
  WHY_SELF,
  WHY_NO_KEY,
  WHY_CLOCK,
  WHY_SIGNATURE,
} why_t;

/* The words for a refusal of req, claiming node. */
static void explain(char *buf, size_t size, why_t why, const dc_req_t *r,
                    const dc_envelope_req_t *req, bool retry) {
  const char *who = r->conn->principal ? r->conn->principal : "User:ANONYMOUS";
  int32_t node = req->signer;
  long long off = (long long)(req->signed_ms - dc_wall_ms());
  switch (why) {
  case WHY_NOT_SUPER:
    snprintf(buf, size, "%s is not a super user, so it may not act for "
             "other principals", who);
    break;
  case WHY_UNSIGNED:
    snprintf(buf, size, "it carries no replica signature: only replicas "
             "of this store forward alters, and they sign them");
    break;
  case WHY_SELF:
    snprintf(buf, size, "it claims to come from node %d, this server", node);
    break;
  case WHY_NO_KEY:
    snprintf(buf, size, retry ? "no key of node %d read from the config log "
             "yet; the forwarding replica retries"
             : "node %d published no replica key in the config log (not a "
             "replica of this store, or a dynconfd that does not sign)", node);
    break;
  case WHY_CLOCK:
    snprintf(buf, size, "it was signed %lld ms %s this server's clock (at "
             "most %d either way: keep the replicas' clocks in step, NTP)",
             off < 0 ? -off : off, off < 0 ? "behind" : "ahead of",
             DC_REPLICA_CLOCK_WINDOW_MS);
    break;
  case WHY_SIGNATURE:
    snprintf(buf, size, retry ? "its signature does not verify with the "
             "key of node %d read so far; that node's newer heartbeat is "
             "not read yet, the forwarding replica retries"
             : "its signature does not verify with node %d's replica key",
             node);
    break;
  }
}

/* The peer's address without its port: refusals are logged once per
 * address and reason, whatever port each connection comes from. */
static void peer_host(const dc_req_t *r, char *buf, size_t size) {
  const char *p = r->conn->peer ? r->conn->peer : "";
  const char *colon = strrchr(p, ':');
  size_t n = colon ? (size_t)(colon - p) : strlen(p);
  snprintf(buf, size, "%.*s", (int)n, p);
}

static void log_refusal(dc_req_t *r, const dc_envelope_req_t *req,
                        why_t why, bool retry) {
  dc_broker_t *b = r->b;
  char host[sizeof(b->env_refused[0].peer)], words[300], node[16] = "none";
  int reason = (int)why * 2 + retry;
  b->envelopes_refused++;
  peer_host(r, host, sizeof(host));
  for (size_t i = 0; i < DC_ENV_REFUSED_MAX; i++)
    if (b->env_refused[i].reason == reason + 1 &&
        !strcmp(b->env_refused[i].peer, host))
      return; /* said already */
  struct dc_env_refused *e = &b->env_refused[b->n_env_refused++ %
                                             DC_ENV_REFUSED_MAX];
  snprintf(e->peer, sizeof(e->peer), "%s", host);
  e->reason = reason + 1;
  explain(words, sizeof(words), why, r, req, retry);
  if (req->has_signature)
    snprintf(node, sizeof(node), "%d", (int)req->signer);
  dc_log(retry ? DC_LOG_INFO : DC_LOG_WARN, "Envelope from %s (claiming "
         "node %s) refused: %s (logged once for this address and reason)",
         r->conn->peer ? r->conn->peer : "?", node, words);
}

/* Does req's signature verify with key? */
static bool signed_by(const dc_envelope_req_t *req, const uint8_t *key) {
  dc_replica_msg_t m = {.node = req->signer,
                        .time_ms = req->signed_ms,
                        .principal = req->principal,
                        .principal_len = (size_t)(req->principal_len > 0
                                                      ? req->principal_len
                                                      : 0),
                        .host = req->client_host,
                        .host_len = (size_t)req->client_host_len,
                        .request = req->request_data,
                        .request_len = (size_t)req->request_data_len};
  return dc_replica_verify(key, &m, req->signature);
}

int16_t dc_broker_envelope_check(dc_req_t *r, const dc_envelope_req_t *req) {
  dc_broker_t *b = r->b;
  const char *who = r->conn->principal ? r->conn->principal : "User:ANONYMOUS";
  const uint8_t *key = NULL;
  int64_t now = dc_wall_ms();
  int known = 0;
  why_t why;
  if (b->acl && !dc_acl_is_super_user(b->opts.super_users, who))
    why = WHY_NOT_SUPER;
  else if (!req->has_signature)
    why = WHY_UNSIGNED;
  else if (req->signer == b->opts.node_id)
    why = WHY_SELF;
  else if ((known = dc_store_replica_key(b->store, req->signer, &key)) != 1)
    why = WHY_NO_KEY;
  else if (req->signed_ms < now - DC_REPLICA_CLOCK_WINDOW_MS ||
           req->signed_ms > now + DC_REPLICA_CLOCK_WINDOW_MS)
    why = WHY_CLOCK;
  else if (!signed_by(req, key))
    why = WHY_SIGNATURE;
  else
    return 0;
  /* A replica that restarted has a new key: this server may not have
   * read it yet when the replica has read further into the log than this
   * server, or this server has just started. Nothing is applied either
   * way; the retriable answer only saves the client an error. */
  bool retry = (why == WHY_NO_KEY || why == WHY_SIGNATURE) &&
               (known == DC_STORE_NOT_YET ||
                req->position > dc_store_position(b->store));
  log_refusal(r, req, why, retry);
  return retry ? DC_ERR_NOT_CONTROLLER : DC_ERR_CLUSTER_AUTHORIZATION_FAILED;
}
