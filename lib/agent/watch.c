/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's Watch (dynconfd's API 20001) on its own connection: between
 * fetches the agent parks one request, which dynconfd answers at the first
 * change of the configuration resolved for this client, or "unchanged" at
 * the timeout asked. The periodic DescribeConfigs stays the safety net;
 * a server that does not list Watch is polled as before.
 *
 * A server that answers watches in ways no honest one does (at once
 * "unchanged", "changed" to what the agent has, closing the connection)
 * earns strikes; at DC_AGENT_WATCH_STRIKES the agent polls until its next
 * fetch, so such a server costs a bounded number of round trips per
 * refresh interval.
 */
#include "agent/agent_int.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "common/text.h"

#include <string.h>

bool dc_agent_watch_offered(const dynconf_t *dc) {
  const dc_agent_conn_t *c = &dc->conn;
  return dc_kclient_connected(c->kc) &&
         dc_kclient_pick_version(c->kc, DC_API_WATCH) >= 0;
}

static int enc_watch(dc_buf_t *b, int16_t v, const void *req) {
  return dc_watch_req_encode(b, v, req);
}

dc_watch_res_t dc_agent_watch(dynconf_t *dc, int wait_ms,
                              dc_fetched_set_t *out, dynconf_err_t *errp,
                              char *errstr, size_t errstr_size) {
  dc_agent_conn_t *c = &dc->conn;
  memset(out, 0, sizeof(*out));
  if (wait_ms > DC_AGENT_WATCH_MAX_MS)
    wait_ms = DC_AGENT_WATCH_MAX_MS;
  int16_t v = dc_kclient_pick_version(c->kc, DC_API_WATCH);
  dc_watch_req_t req = {.client_id = dc->client_id,
                        .known_version = c->watch_version,
                        .timeout_ms = wait_ms,
                        .min_position = c->position};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  int64_t t0 = dc_mono_ms();
  /* The server answers at wait_ms at the latest; the request timeout is
   * the slack for the answer's way back. */
  dc_err_t err = dc_kclient_request(c->kc, DC_API_WATCH, v, enc_watch, &req,
                                    wait_ms + dc->conf.request_timeout_ms, &rd,
                                    &arena, errstr, errstr_size);
  dc_watch_res_t r = WATCH_FAILED;
  if (err) {
    *errp = (dynconf_err_t)err; /* the client closed the connection */
  } else {
    dc_watch_ask_t ask = {.v = v, .known = c->watch_version,
                          .min_position = c->position, .version = -1};
    bool undecodable = false;
    r = dc_agent_watch_answer_read(&rd, dc_kclient_peer(c->kc), &ask, out,
                                   errp, &undecodable, errstr, errstr_size);
    if (undecodable)
      dc_kclient_close(c->kc); /* what follows in the stream is unknown */
    if (r == WATCH_CHANGED)
      c->watch_version = ask.version;
    if ((r == WATCH_CHANGED || r == WATCH_UNCHANGED) &&
        ask.position > c->position)
      c->position = ask.position;
    /* A server behind the agent's store position is left: the next
     * connection starts with the next bootstrap server. */
    if (*errp == DYNCONF_ERR_REPLICA_NOT_AVAILABLE) {
      c->next_entry++;
      dc_kclient_close(c->kc);
    }
    /* The server's clock may run a little ahead; half the wait is not. */
    if (r == WATCH_UNCHANGED && dc_mono_ms() - t0 < wait_ms / 2) {
      *errp = DYNCONF_ERR__BAD_RESPONSE;
      dc_seterr(errstr, errstr_size, "%s answered a %d ms Watch unchanged "
                "after %lld ms", dc_kclient_peer(c->kc), wait_ms,
                (long long)(dc_mono_ms() - t0));
      r = WATCH_FAILED;
    }
  }
  dc_arena_free(&arena);
  return r;
}
