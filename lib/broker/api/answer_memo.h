/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A connection's last DescribeConfigs answer, kept to be sent again.
 *
 * Clients poll: an agent or a dashboard asks the same DescribeConfigs on
 * the same connection again and again, and the answer only changes when
 * something it was made from changes. The memo holds the request's bytes
 * after its correlation id (client id and body), the answer after its
 * response header, and what the answer was made from: the snapshot's
 * generation, the authorizer's, the store's position and the connection's
 * principal. A request equal to the kept one at the same generations gets
 * the kept bytes, which are what the handler would write again.
 *
 * An answer is kept only when making it had no effect but the fleet's
 * served version (replayed on every hit): one that counted an
 * authorization denial is made anew each time, so the metric counts each.
 * Request and answer together are kept up to DC_ANSWER_MEMO_MAX bytes, so
 * a connection costs at most that much more.
 */
#ifndef DC_BROKER_API_ANSWER_MEMO_H
#define DC_BROKER_API_ANSWER_MEMO_H

#include "broker/core/broker_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DC_ANSWER_MEMO_MAX 4096

/* What an answer is made from, taken before the handler runs. */
typedef struct dc_answer_key {
  uint64_t db_gen, acl_gen;
  int64_t position;
  int16_t api_version;
  const uint8_t *req; /* the request after its correlation id */
  size_t req_len;
  const char *principal;
} dc_answer_key_t;

/* Fills k for r. False when r cannot be memoized (no memo on its
 * connection, or too long). */
bool dc_answer_memo_key(const dc_req_t *r, dc_answer_key_t *k);

/* When the connection's memo holds k's answer: appends it to r->out,
 * sets r->error, replays the served version, and returns true. */
bool dc_answer_memo_replay(dc_req_t *r, const dc_answer_key_t *k);

/* Keeps the answer r->out holds from body_start on, made from k with
 * error r->error and served version served (0: none). Nothing is kept
 * (and the old answer is dropped) when it does not fit or on no memory. */
void dc_answer_memo_keep(dc_req_t *r, const dc_answer_key_t *k,
                         size_t body_start, int64_t served);

#endif
