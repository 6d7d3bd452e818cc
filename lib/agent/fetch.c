/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's own connection to the config server and its DescribeConfigs
 * round trip, over the project's Kafka-protocol client (lib/client): one
 * connection kept open between fetches, ApiVersions v3 (falling back to
 * v0), the highest DescribeConfigs version both sides have, the CLIENT
 * resource type on the wire whatever librdkafka the application links.
 *
 * Every wait also watches a pipe that dynconf_destroy() writes to, so a
 * fetch in flight (or a connect to a silent server) never delays it.
 */
#include "config.h"
#include "agent/agent_int.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the connection ---------------------------------------------------- */

/* Gives kc the current settings; on failure keeps the sentence for every
 * fetch to report. Fetching thread. */
static void secure(dynconf_t *dc) {
  dc_agent_conn_t *c = &dc->conn;
  char *store[DC_SEC_STORE_N] = {0};
  dc_kclient_security_t sec;
  char why[400];
  c->secured = false;
  if (dc_agent_security_read(dc, &sec, store, why, sizeof(why)) == 0 &&
      dc_kclient_set_security(c->kc, &sec, why, sizeof(why)) == 0) {
    c->secured = true;
    c->token = sec.sasl_oauthbearer_token != NULL;
    c->sec_err[0] = '\0';
  } else {
    snprintf(c->sec_err, sizeof(c->sec_err),
             "cannot use the connection settings for the config server: %s",
             why);
  }
  dc_agent_security_free(store);
}

int dc_agent_conn_init(dynconf_t *dc, char *errstr, size_t errstr_size) {
  dc_agent_conn_t *c = &dc->conn;
  c->cancel[0] = c->cancel[1] = -1;
  c->version = -1;
  c->watch_version = -1;
  c->position = -1;
  c->fetched_version = -1;
  if (pipe2(c->cancel, O_CLOEXEC | O_NONBLOCK)) {
    dc_seterr(errstr, errstr_size, "cannot make the agent's wake-up pipe: %s",
             strerror(errno));
    return -1;
  }
  c->kc = dc_kclient_new(dc->client_id);
  if (!c->kc || dc_kclient_set_software(c->kc, "dynconf-agent",
                                        PACKAGE_VERSION)) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  dc_kclient_set_cancel_fd(c->kc, c->cancel[0]);
  dc_kclient_set_max_frame(c->kc, DC_AGENT_MAX_RESPONSE_BYTES);
  secure(dc);
  return 0;
}

void dc_agent_conn_free(dc_agent_conn_t *c) {
  dc_kclient_destroy(c->kc);
  c->kc = NULL;
  for (int i = 0; i < 2; i++)
    if (c->cancel[i] >= 0)
      close(c->cancel[i]);
  c->cancel[0] = c->cancel[1] = -1;
}

void dc_agent_conn_cancel(dc_agent_conn_t *c) {
  if (c->cancel[1] >= 0) {
    ssize_t r = write(c->cancel[1], "x", 1);
    (void)r; /* full: a byte is already there, which is all it takes */
  }
}

void dc_agent_conn_drain(dc_agent_conn_t *c) {
  char junk[64];
  while (c->cancel[0] >= 0 && read(c->cancel[0], junk, sizeof(junk)) > 0)
    ;
}

int dc_agent_conn_rebuild(dynconf_t *dc, char *errstr, size_t errstr_size) {
  secure(dc);
  dc_kclient_close(dc->conn.kc);
  if (!dc->conn.secured) {
    dc_seterr(errstr, errstr_size, "%s", dc->conn.sec_err);
    return -1;
  }
  return 0;
}

/* The bootstrap list starting at entry `first` (wrapping), so that after a
 * failed connect the next attempt begins with the next server. */
static char *rotated(const char *list, size_t first) {
  size_t n = 1;
  for (const char *p = list; *p; p++)
    n += *p == ',';
  first %= n;
  const char *start = list;
  for (size_t i = 0; i < first; i++)
    start = strchr(start, ',') + 1;
  size_t len = strlen(list);
  char *out = malloc(len + 2);
  if (!out)
    return NULL;
  size_t head = (size_t)(start - list);
  if (head == 0) {
    memcpy(out, list, len + 1);
  } else {
    /* "c,d" + "," + "a,b" (the head keeps its trailing comma: drop it). */
    snprintf(out, len + 2, "%s,%.*s", start, (int)(head - 1), list);
  }
  return out;
}

/* Connects and learns the server's API versions. */
static dc_err_t connect_server(dynconf_t *dc, int64_t deadline, char *errstr,
                               size_t errstr_size) {
  dc_agent_conn_t *c = &dc->conn;
  char *list = rotated(dc->bootstrap, c->next_entry);
  if (!list) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DC_ERR__NOMEM;
  }
  int left = (int)(deadline - dc_mono_ms());
  dc_err_t err = dc_kclient_connect(c->kc, list, left > 0 ? left : 0, errstr,
                                    errstr_size);
  free(list);
  /* A SASL connect has asked for the versions already. */
  if (!err && dc_kclient_pick_version(c->kc, DC_API_API_VERSIONS) < 0) {
    left = (int)(deadline - dc_mono_ms());
    err = dc_kclient_api_versions(c->kc, left > 0 ? left : 0, errstr,
                                  errstr_size);
  }
  if (err) {
    c->next_entry++;
    dc_kclient_close(c->kc);
  } else {
    /* A new server may not know this agent: the first Watch asks for the
     * version at once (-1), and the report that follows names it. */
    c->conn_seq++;
    c->watch_version = -1;
  }
  return err;
}

/* ---- DescribeConfigs ----------------------------------------------------- */

static int enc_describe(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_configs_req_encode(b, v, req);
}

/* The version to ask with, or FETCH_UNSUPPORTED with the reason when the
 * server's ApiVersions answer rules DescribeConfigs out. */
static dc_fetch_res_t pick_version(dynconf_t *dc, dynconf_err_t *errp,
                                   char *errstr, size_t errstr_size) {
  dc_kclient_t *kc = dc->conn.kc;
  int16_t lo, hi;
  if (!dc_kclient_api_range(kc, DC_API_DESCRIBE_CONFIGS, &lo, &hi)) {
    *errp = DYNCONF_ERR__UNSUPPORTED_API;
    dc_seterr(errstr, errstr_size, "%s does not offer DescribeConfigs (its "
             "ApiVersions answer lists no API key 32)", dc_kclient_peer(kc));
    return FETCH_UNSUPPORTED;
  }
  int16_t v = dc_kclient_pick_version(kc, DC_API_DESCRIBE_CONFIGS);
  /* v0 carries no config source: the agent could not tell a client's own
   * value from a broker's. */
  if (v < 1) {
    *errp = DYNCONF_ERR_UNSUPPORTED_VERSION;
    dc_seterr(errstr, errstr_size, "%s offers DescribeConfigs v%d-%d; the "
             "agent needs v1-4", dc_kclient_peer(kc), lo, hi);
    return FETCH_UNSUPPORTED;
  }
  dc->conn.version = v;
  return FETCH_OK;
}

/* One request on the current connection and the judgement of its answer.
 * *transport is set when the connection failed (it is closed then). */
static dc_fetch_res_t describe(dynconf_t *dc, int64_t deadline,
                               dc_fetched_set_t *out, dynconf_err_t *errp,
                               bool *transport, char *errstr,
                               size_t errstr_size) {
  dc_agent_conn_t *c = &dc->conn;
  dc_describe_configs_req_resource_t res = {
      .resource_type = (int8_t)dc->conf.resource_type,
      .resource_name = dc->client_id,
      .n_configuration_keys = -1};
  /* A server behind the store position the agent has seen refuses
   * (REPLICA_NOT_AVAILABLE) rather than answer from an older state; the
   * tag goes even before the agent has seen one, so that an agent that
   * only polls learns positions too. */
  dc_describe_configs_req_t req = {.n_resources = 1, .resources = &res,
                                   .min_position = c->position,
                                   .ask_position = true};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  int left = (int)(deadline - dc_mono_ms());
  dc_err_t err = dc_kclient_request(c->kc, DC_API_DESCRIBE_CONFIGS,
                                    c->version, enc_describe, &req,
                                    left > 0 ? left : 0, &rd, &arena, errstr,
                                    errstr_size);
  dc_fetch_res_t r = FETCH_ERROR;
  *transport = err == DC_ERR__TRANSPORT;
  if (err) {
    *errp = (dynconf_err_t)err;
  } else {
    dc_agent_answer_t want = {.version = c->version,
                              .resource_type = (int8_t)dc->conf.resource_type,
                              .resource_name = dc->client_id,
                              .peer = dc_kclient_peer(c->kc),
                              .min_position = c->position};
    bool undecodable = false;
    r = dc_agent_answer_read(&rd, &want, out, errp, &undecodable, errstr,
                             errstr_size);
    if (undecodable)
      dc_kclient_close(c->kc); /* what follows in the stream is unknown */
    if (r == FETCH_OK && want.position > c->position)
      c->position = want.position;
    if (r == FETCH_OK)
      c->fetched_version = want.config_version;
    if (*errp == DYNCONF_ERR_REPLICA_NOT_AVAILABLE) {
      /* Behind what the agent has seen: the next server, at once. */
      c->next_entry++;
      dc_kclient_close(c->kc);
      *transport = true;
    }
  }
  dc_arena_free(&arena);
  return r;
}

dc_fetch_res_t dc_agent_fetch(dynconf_t *dc, int timeout_ms,
                              dc_fetched_set_t *out, dynconf_err_t *errp,
                              char *errstr, size_t errstr_size) {
  dc_agent_conn_t *c = &dc->conn;
  memset(out, 0, sizeof(*out));
  if (!c->secured)
    secure(dc); /* a file may have appeared, an override been fixed */
  if (!c->secured) {
    *errp = DYNCONF_ERR__INVALID_ARG;
    dc_seterr(errstr, errstr_size, "%s", c->sec_err);
    return FETCH_ERROR;
  }
  int64_t deadline = dc_mono_ms() + timeout_ms;
  /* A kept connection may have been closed by the server while idle: one
   * fresh connection is tried before the fetch counts as failed. */
  for (int attempt = 0; attempt < 2; attempt++) {
    bool fresh = !dc_kclient_connected(c->kc);
    if (fresh && c->token) {
      secure(dc); /* an unsigned token lives from its connection on */
      if (!c->secured) {
        *errp = DYNCONF_ERR__INVALID_ARG;
        dc_seterr(errstr, errstr_size, "%s", c->sec_err);
        return FETCH_ERROR;
      }
    }
    if (fresh) {
      dc_err_t err = connect_server(dc, deadline, errstr, errstr_size);
      if (err) {
        *errp = (dynconf_err_t)err;
        return FETCH_ERROR;
      }
      dc_fetch_res_t r = pick_version(dc, errp, errstr, errstr_size);
      if (r != FETCH_OK) {
        dc_kclient_close(c->kc); /* the re-probe asks a fresh connection */
        return r;
      }
    }
    bool transport = false;
    dc_fetch_res_t r = describe(dc, deadline, out, errp, &transport, errstr,
                                errstr_size);
    if (!transport || fresh)
      return r;
  }
  return FETCH_ERROR; /* not reached: the second attempt is fresh */
}
