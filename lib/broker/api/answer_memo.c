/* SPDX-License-Identifier: BSD-2-Clause */
/* A connection's last DescribeConfigs answer (answer_memo.h). */
#include "config.h"
#include "broker/api/answer_memo.h"

#include <stdlib.h>
#include <string.h>

/* The request header before the client id: API key, version and
 * correlation id. */
enum { HEADER_FIXED = 8 };

struct dc_answer_memo {
  uint64_t db_gen, acl_gen;
  int64_t position;
  int16_t api_version, error;
  int64_t served;
  size_t req_len, principal_len, resp_len;
  uint8_t *data; /* request, principal, answer; owned */
  size_t cap;
};

void dc_broker_memo_free(struct dc_answer_memo *m) {
  if (m)
    free(m->data);
  free(m);
}

size_t dc_broker_memo_bytes(const struct dc_answer_memo *m) {
  return m ? sizeof(*m) + m->cap : 0;
}

bool dc_answer_memo_key(const dc_req_t *r, dc_answer_key_t *k) {
  if (!r->conn->memo || r->payload_len < HEADER_FIXED ||
      r->payload_len - HEADER_FIXED > DC_ANSWER_MEMO_MAX)
    return false;
  *k = (dc_answer_key_t){
      .db_gen = dc_configdb_generation(r->b->db),
      .acl_gen = r->b->acl_generation,
      .position = dc_store_position(r->b->store),
      .api_version = r->hdr->api_version,
      .req = r->payload + HEADER_FIXED,
      .req_len = r->payload_len - HEADER_FIXED,
      .principal = r->conn->principal ? r->conn->principal : "",
  };
  return true;
}

static bool same(const struct dc_answer_memo *m, const dc_answer_key_t *k) {
  return m->db_gen == k->db_gen && m->acl_gen == k->acl_gen &&
         m->position == k->position && m->api_version == k->api_version &&
         m->req_len == k->req_len && !memcmp(m->data, k->req, k->req_len) &&
         m->principal_len == strlen(k->principal) &&
         !memcmp(m->data + m->req_len, k->principal, m->principal_len);
}

bool dc_answer_memo_replay(dc_req_t *r, const dc_answer_key_t *k) {
  const struct dc_answer_memo *m = *r->conn->memo;
  if (!m || !m->resp_len || !same(m, k))
    return false;
  dc_buf_append(r->out, m->data + m->req_len + m->principal_len,
                m->resp_len);
  r->error = m->error;
  r->b->metrics.answers_reused++;
  if (m->served > 0)
    dc_broker_fleet_served(r->conn->fleet, m->served);
  return true;
}

/* The connection's memo with room for n bytes; NULL on no memory. */
static struct dc_answer_memo *memo_with_room(struct dc_answer_memo **slot,
                                             size_t n) {
  struct dc_answer_memo *m = *slot;
  if (!m && !(m = *slot = calloc(1, sizeof(*m))))
    return NULL;
  if (m->cap < n) {
    uint8_t *d = realloc(m->data, n);
    if (!d)
      return NULL;
    m->data = d;
    m->cap = n;
  }
  return m;
}

void dc_answer_memo_keep(dc_req_t *r, const dc_answer_key_t *k,
                         size_t body_start, int64_t served) {
  struct dc_answer_memo **slot = r->conn->memo;
  if (*slot)
    (*slot)->resp_len = 0; /* whatever happens, the old answer is gone */
  size_t plen = strlen(k->principal);
  size_t resp_len = r->out->len - body_start;
  size_t n = k->req_len + plen + resp_len;
  if (r->out->err || n > DC_ANSWER_MEMO_MAX)
    return;
  struct dc_answer_memo *m = memo_with_room(slot, n);
  if (!m)
    return;
  memcpy(m->data, k->req, k->req_len);
  memcpy(m->data + k->req_len, k->principal, plen);
  memcpy(m->data + k->req_len + plen, r->out->data + body_start, resp_len);
  m->db_gen = k->db_gen;
  m->acl_gen = k->acl_gen;
  m->position = k->position;
  m->api_version = k->api_version;
  m->error = r->error;
  m->served = served;
  m->req_len = k->req_len;
  m->principal_len = plen;
  m->resp_len = resp_len;
}
