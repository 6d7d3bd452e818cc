/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Metadata (key 3), versions 0-12, per apache/kafka MetadataRequest.json /
 * MetadataResponse.json.
 *
 * Request:  topics [topic_id v10+, name (nullable v10+)] (array nullable
 *           v1+), allow_auto_topic_creation v4+,
 *           include_cluster_authorized_operations v8-10,
 *           include_topic_authorized_operations v8+.
 * Response: throttle_time_ms v3+, brokers [node_id, host, port, rack v1+],
 *           cluster_id v2+, controller_id v1+, topics [error_code, name
 *           (nullable v12+), topic_id v10+, is_internal v1+, partitions
 *           [error_code, partition_index, leader_id, leader_epoch v7+,
 *           replica_nodes, isr_nodes, offline_replicas v5+],
 *           topic_authorized_operations v8+], cluster_authorized_operations
 *           v8-10.
 * Flexible from v9: compact strings/arrays and a tag section ending every
 * struct and the body.
 *
 * "All topics" is n_topics == -1 in the request struct for every version:
 * the v0 decoder maps the empty array (v0's "all") to -1, and the v0
 * encoder writes both -1 and 0 as the empty array.
 */
#include "proto.h"

#include <string.h>

#define MD_MIN 0
#define MD_MAX 12
#define MD_FLEX 9

static bool md_version_ok(int16_t v) { return v >= MD_MIN && v <= MD_MAX; }

/* Minimum encoded size of a string / array length field. */
static size_t len_sz(bool flex, bool wide) { return flex ? 1 : wide ? 4 : 2; }

/* Writes s, or "" when s is NULL and the field is not nullable in this
 * version (Kafka would reject a null there). */
static void wr_str_opt(dc_buf_t *b, bool flex, bool nullable, const char *s) {
  dc_wr_str(b, flex, s || nullable ? s : "");
}

static int32_t *rd_i32_array(dc_rd_t *rd, bool flex, int32_t *np) {
  int32_t n = dc_rd_array_len(rd, flex, false, 4);
  int32_t *a = dc_rd_alloc(rd, (size_t)n, sizeof(*a));
  if (rd->err) {
    *np = 0;
    return NULL;
  }
  for (int32_t i = 0; i < n; i++)
    a[i] = dc_rd_i32(rd);
  *np = n;
  return a;
}

static void wr_i32_array(dc_buf_t *b, bool flex, int32_t n, const int32_t *a) {
  if (n < 0) /* these arrays are never nullable */
    n = 0;
  dc_wr_array_len(b, flex, n);
  for (int32_t i = 0; i < n; i++)
    dc_wr_i32(b, a[i]);
}

/* ---- request ---------------------------------------------------------- */

int dc_metadata_req_decode(dc_rd_t *rd, int16_t v, dc_metadata_req_t *out) {
  memset(out, 0, sizeof(*out));
  out->allow_auto_topic_creation = true; /* schema default before v4 */
  if (!md_version_ok(v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  bool flex = v >= MD_FLEX;
  size_t min_topic = (v >= 10 ? 16 : 0) + len_sz(flex, false) + (flex ? 1 : 0);
  int32_t n = dc_rd_array_len(rd, flex, v >= 1, min_topic);
  if (rd->err)
    return rd->err;
  if (n < 0 || (v == 0 && n == 0)) {
    out->n_topics = -1;
  } else {
    out->topics = dc_rd_alloc(rd, (size_t)n, sizeof(*out->topics));
    if (rd->err)
      return rd->err;
    out->n_topics = n;
    for (int32_t i = 0; i < n && !rd->err; i++) {
      dc_metadata_req_topic_t *t = &out->topics[i];
      if (v >= 10)
        dc_rd_uuid(rd, t->topic_id);
      t->name = dc_rd_str(rd, flex, v >= 10);
      if (flex)
        dc_rd_tags(rd);
    }
  }
  if (v >= 4)
    out->allow_auto_topic_creation = dc_rd_bool(rd);
  if (v >= 8 && v <= 10)
    out->include_cluster_authorized_operations = dc_rd_bool(rd);
  if (v >= 8)
    out->include_topic_authorized_operations = dc_rd_bool(rd);
  if (flex)
    dc_rd_tags(rd);
  return rd->err;
}

int dc_metadata_req_encode(dc_buf_t *b, int16_t v, const dc_metadata_req_t *in) {
  if (!md_version_ok(v))
    return DC_ERR__UNSUPPORTED_API;
  bool flex = v >= MD_FLEX;
  int32_t n = in->n_topics;
  if (n < 0 && v == 0)
    n = 0; /* v0 has no null array; empty means all */
  dc_wr_array_len(b, flex, n);
  for (int32_t i = 0; i < n; i++) {
    const dc_metadata_req_topic_t *t = &in->topics[i];
    if (v >= 10)
      dc_wr_uuid(b, t->topic_id);
    wr_str_opt(b, flex, v >= 10, t->name);
    if (flex)
      dc_wr_tags_empty(b);
  }
  if (v >= 4)
    dc_wr_bool(b, in->allow_auto_topic_creation);
  if (v >= 8 && v <= 10)
    dc_wr_bool(b, in->include_cluster_authorized_operations);
  if (v >= 8)
    dc_wr_bool(b, in->include_topic_authorized_operations);
  if (flex)
    dc_wr_tags_empty(b);
  return b->err;
}

/* ---- response --------------------------------------------------------- */

static void rd_broker(dc_rd_t *rd, int16_t v, dc_metadata_broker_t *br) {
  bool flex = v >= MD_FLEX;
  br->node_id = dc_rd_i32(rd);
  br->host = dc_rd_str(rd, flex, false);
  br->port = dc_rd_i32(rd);
  if (v >= 1)
    br->rack = dc_rd_str(rd, flex, true);
  if (flex)
    dc_rd_tags(rd);
}

static void rd_partition(dc_rd_t *rd, int16_t v, dc_metadata_partition_t *p) {
  bool flex = v >= MD_FLEX;
  p->error_code = dc_rd_i16(rd);
  p->partition_index = dc_rd_i32(rd);
  p->leader_id = dc_rd_i32(rd);
  p->leader_epoch = v >= 7 ? dc_rd_i32(rd) : -1;
  p->replica_nodes = rd_i32_array(rd, flex, &p->n_replica_nodes);
  p->isr_nodes = rd_i32_array(rd, flex, &p->n_isr_nodes);
  if (v >= 5)
    p->offline_replicas = rd_i32_array(rd, flex, &p->n_offline_replicas);
  if (flex)
    dc_rd_tags(rd);
}

static size_t min_partition_sz(int16_t v) {
  bool flex = v >= MD_FLEX;
  return 2 + 4 + 4 + (v >= 7 ? 4 : 0) + len_sz(flex, true) * (v >= 5 ? 3 : 2) +
         (flex ? 1 : 0);
}

static void rd_topic(dc_rd_t *rd, int16_t v, dc_metadata_topic_t *t) {
  bool flex = v >= MD_FLEX;
  t->error_code = dc_rd_i16(rd);
  t->name = dc_rd_str(rd, flex, v >= 12);
  if (v >= 10)
    dc_rd_uuid(rd, t->topic_id);
  if (v >= 1)
    t->is_internal = dc_rd_bool(rd);
  int32_t n = dc_rd_array_len(rd, flex, false, min_partition_sz(v));
  t->partitions = dc_rd_alloc(rd, (size_t)n, sizeof(*t->partitions));
  if (rd->err)
    return;
  t->n_partitions = n;
  for (int32_t i = 0; i < n && !rd->err; i++)
    rd_partition(rd, v, &t->partitions[i]);
  t->topic_authorized_operations = v >= 8 ? dc_rd_i32(rd) : INT32_MIN;
  if (flex)
    dc_rd_tags(rd);
}

int dc_metadata_resp_decode(dc_rd_t *rd, int16_t v, dc_metadata_resp_t *out) {
  memset(out, 0, sizeof(*out));
  out->controller_id = -1;
  out->cluster_authorized_operations = INT32_MIN;
  if (!md_version_ok(v)) {
    dc_rd_fail(rd, DC_ERR__UNSUPPORTED_API);
    return rd->err;
  }
  bool flex = v >= MD_FLEX;
  if (v >= 3)
    out->throttle_time_ms = dc_rd_i32(rd);

  size_t min_broker = 4 + len_sz(flex, false) + 4 +
                      (v >= 1 ? len_sz(flex, false) : 0) + (flex ? 1 : 0);
  int32_t nb = dc_rd_array_len(rd, flex, false, min_broker);
  out->brokers = dc_rd_alloc(rd, (size_t)nb, sizeof(*out->brokers));
  if (rd->err)
    return rd->err;
  out->n_brokers = nb;
  for (int32_t i = 0; i < nb && !rd->err; i++)
    rd_broker(rd, v, &out->brokers[i]);

  if (v >= 2)
    out->cluster_id = dc_rd_str(rd, flex, true);
  if (v >= 1)
    out->controller_id = dc_rd_i32(rd);

  size_t min_topic = 2 + len_sz(flex, false) + (v >= 10 ? 16 : 0) +
                     (v >= 1 ? 1 : 0) + len_sz(flex, true) + (v >= 8 ? 4 : 0) +
                     (flex ? 1 : 0);
  int32_t nt = dc_rd_array_len(rd, flex, false, min_topic);
  out->topics = dc_rd_alloc(rd, (size_t)nt, sizeof(*out->topics));
  if (rd->err)
    return rd->err;
  out->n_topics = nt;
  for (int32_t i = 0; i < nt && !rd->err; i++)
    rd_topic(rd, v, &out->topics[i]);

  if (v >= 8 && v <= 10)
    out->cluster_authorized_operations = dc_rd_i32(rd);
  if (flex)
    dc_rd_tags(rd);
  return rd->err;
}

static void wr_partition(dc_buf_t *b, int16_t v,
                         const dc_metadata_partition_t *p) {
  bool flex = v >= MD_FLEX;
  dc_wr_i16(b, p->error_code);
  dc_wr_i32(b, p->partition_index);
  dc_wr_i32(b, p->leader_id);
  if (v >= 7)
    dc_wr_i32(b, p->leader_epoch);
  wr_i32_array(b, flex, p->n_replica_nodes, p->replica_nodes);
  wr_i32_array(b, flex, p->n_isr_nodes, p->isr_nodes);
  if (v >= 5)
    wr_i32_array(b, flex, p->n_offline_replicas, p->offline_replicas);
  if (flex)
    dc_wr_tags_empty(b);
}

static void wr_topic(dc_buf_t *b, int16_t v, const dc_metadata_topic_t *t) {
  bool flex = v >= MD_FLEX;
  int32_t n = t->n_partitions > 0 ? t->n_partitions : 0;
  dc_wr_i16(b, t->error_code);
  wr_str_opt(b, flex, v >= 12, t->name);
  if (v >= 10)
    dc_wr_uuid(b, t->topic_id);
  if (v >= 1)
    dc_wr_bool(b, t->is_internal);
  dc_wr_array_len(b, flex, n);
  for (int32_t i = 0; i < n; i++)
    wr_partition(b, v, &t->partitions[i]);
  if (v >= 8)
    dc_wr_i32(b, t->topic_authorized_operations);
  if (flex)
    dc_wr_tags_empty(b);
}

int dc_metadata_resp_encode(dc_buf_t *b, int16_t v,
                            const dc_metadata_resp_t *in) {
  if (!md_version_ok(v))
    return DC_ERR__UNSUPPORTED_API;
  bool flex = v >= MD_FLEX;
  int32_t nb = in->n_brokers > 0 ? in->n_brokers : 0;
  int32_t nt = in->n_topics > 0 ? in->n_topics : 0;
  if (v >= 3)
    dc_wr_i32(b, in->throttle_time_ms);
  dc_wr_array_len(b, flex, nb);
  for (int32_t i = 0; i < nb; i++) {
    const dc_metadata_broker_t *br = &in->brokers[i];
    dc_wr_i32(b, br->node_id);
    wr_str_opt(b, flex, false, br->host);
    dc_wr_i32(b, br->port);
    if (v >= 1)
      dc_wr_str(b, flex, br->rack);
    if (flex)
      dc_wr_tags_empty(b);
  }
  if (v >= 2)
    dc_wr_str(b, flex, in->cluster_id);
  if (v >= 1)
    dc_wr_i32(b, in->controller_id);
  dc_wr_array_len(b, flex, nt);
  for (int32_t i = 0; i < nt; i++)
    wr_topic(b, v, &in->topics[i]);
  if (v >= 8 && v <= 10)
    dc_wr_i32(b, in->cluster_authorized_operations);
  if (flex)
    dc_wr_tags_empty(b);
  return b->err;
}
