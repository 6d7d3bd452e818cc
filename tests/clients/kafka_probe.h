/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What tests/clients/kafka_clients_probe.c asks of a real Kafka cluster and of the
 * operator's CLI, apart from the clients under test:
 *   - topics made with the admin API and waited for in the metadata;
 *   - a topic read from its beginning to its end;
 *   - a classic group's records in __consumer_offsets: the coordinator's
 *     own GroupMetadataValue (generation, members, session timeouts),
 *     since DescribeGroups carries no generation;
 *   - DescribeConsumerGroups (state, members, assignments) and
 *     DescribeConfigs;
 *   - dynconf-configs --alter, run as an operator runs it;
 *   - waiting for a condition with a deadline.
 * Header-only: every function is static inline.
 */
#ifndef DC_KAFKA_PROBE_H
#define DC_KAFKA_PROBE_H

#include "../tap.h"
#include "../testutil.h"

#include <librdkafka/rdkafka.h>

#define KP_MAX_PARTS 16
#define KP_MAX_MEMBERS 4

/* Polls cond(arg) every 10 ms until it holds or ms pass; its last answer. */
static inline bool kp_wait(bool (*cond)(void *), void *arg, int ms) {
  int64_t deadline = dc_tu_now_ms() + ms;
  while (!cond(arg)) {
    if (dc_tu_now_ms() >= deadline)
      return cond(arg);
    dc_tu_sleep_ms(10);
  }
  return true;
}

/* The bit of each partition in a list (partitions below KP_MAX_PARTS). */
static inline int kp_mask(const rd_kafka_topic_partition_list_t *parts) {
  int mask = 0;
  for (int i = 0; parts && i < parts->cnt; i++)
    if (parts->elems[i].partition >= 0 &&
        parts->elems[i].partition < KP_MAX_PARTS)
      mask |= 1 << parts->elems[i].partition;
  return mask;
}

/* ---- the operator ------------------------------------------------------- */

/* dynconf-configs --alter --add-config SPEC for client-id cid on the
 * dynconfd at 127.0.0.1:port: its exit status. */
static inline int kp_alter(int port, const char *cid, const char *spec) {
  const char *cli = getenv("DC_CONFIGS");
  char path[512], cmd[1200];
  if (!cli || !*cli) {
    snprintf(path, sizeof(path), "%s/dynconf-configs", dc_tu_builddir());
    cli = path;
  }
  snprintf(cmd, sizeof(cmd),
           "'%s' --bootstrap-server 127.0.0.1:%d --entity-type clients "
           "--entity-name '%s' --alter --add-config '%s' >/dev/null",
           cli, port, cid, spec);
  return dc_tu_system(cmd);
}

/* ---- handles and topics ------------------------------------------------- */

/* A plain client of the cluster (no agent); NULL with diag(). */
static inline rd_kafka_t *kp_handle(const char *bootstrap, rd_kafka_type_t type,
                                    const char *group) {
  char e[512];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  if (rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, e, sizeof(e)) ||
      rd_kafka_conf_set(c, "log_level", "3", e, sizeof(e)) ||
      (group && (rd_kafka_conf_set(c, "group.id", group, e, sizeof(e)) ||
                 rd_kafka_conf_set(c, "enable.auto.commit", "false", e,
                                   sizeof(e)) ||
                 rd_kafka_conf_set(c, "enable.partition.eof", "true", e,
                                   sizeof(e))))) {
    diag("conf: %s", e);
    rd_kafka_conf_destroy(c);
    return NULL;
  }
  rd_kafka_t *rk = rd_kafka_new(type, c, e, sizeof(e));
  if (!rk) {
    diag("rd_kafka_new: %s", e);
    rd_kafka_conf_destroy(c);
  }
  return rk;
}

/* Waits up to ms for the admin result event of type `want` on q. */
static inline rd_kafka_event_t *kp_admin_result(rd_kafka_queue_t *q,
                                                rd_kafka_event_type_t want,
                                                int ms) {
  int64_t deadline = dc_tu_now_ms() + ms;
  while (dc_tu_now_ms() < deadline) {
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 100);
    if (!ev)
      continue;
    if (rd_kafka_event_type(ev) == want)
      return ev;
    rd_kafka_event_destroy(ev);
  }
  return NULL;
}

/* Every partition of topic has a leader in adm's metadata. */
static inline bool kp_topic_ready(rd_kafka_t *adm, const char *topic,
                                  int parts) {
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(adm, topic, NULL);
  const struct rd_kafka_metadata *md = NULL;
  bool ready = false;
  if (rkt && !rd_kafka_metadata(adm, 0, rkt, &md, 2000) &&
      md->topic_cnt == 1 && !md->topics[0].err &&
      md->topics[0].partition_cnt == parts) {
    ready = true;
    for (int i = 0; i < parts; i++)
      ready &= md->topics[0].partitions[i].leader >= 0;
  }
  if (md)
    rd_kafka_metadata_destroy(md);
  if (rkt)
    rd_kafka_topic_destroy(rkt);
  return ready;
}

/* Creates topic (parts partitions, 3 replicas) and waits until every
 * partition has a leader. 0, or -1 with diag(). */
static inline int kp_create_topic(rd_kafka_t *adm, const char *topic,
                                  int parts) {
  char e[512];
  rd_kafka_NewTopic_t *nt =
      rd_kafka_NewTopic_new(topic, parts, 3, e, sizeof(e));
  if (!nt) {
    diag("NewTopic %s: %s", topic, e);
    return -1;
  }
  rd_kafka_queue_t *q = rd_kafka_queue_new(adm);
  rd_kafka_CreateTopics(adm, &nt, 1, NULL, q);
  rd_kafka_event_t *ev =
      kp_admin_result(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT, 30000);
  int rc = -1;
  if (!ev) {
    diag("CreateTopics %s: no answer", topic);
  } else {
    size_t n;
    const rd_kafka_topic_result_t **r = rd_kafka_CreateTopics_result_topics(
        rd_kafka_event_CreateTopics_result(ev), &n);
    rd_kafka_resp_err_t err = n == 1 ? rd_kafka_topic_result_error(r[0])
                                     : rd_kafka_event_error(ev);
    if (err && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
      diag("CreateTopics %s: %s", topic, rd_kafka_err2str(err));
    else
      rc = 0;
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  int64_t deadline = dc_tu_now_ms() + 30000;
  while (!rc && !kp_topic_ready(adm, topic, parts)) {
    if (dc_tu_now_ms() >= deadline) {
      diag("topic %s: no leader for every partition within 30 s", topic);
      rc = -1;
    }
    dc_tu_sleep_ms(50);
  }
  return rc;
}

/* ---- reading a topic whole ---------------------------------------------- */

typedef void(kp_msg_fn)(const rd_kafka_message_t *m, void *arg);

/* Hands every message of topic's partitions 0..parts-1, from the
 * beginning to the end each had when it was reached, to fn. The number
 * of messages, or -1 (diag()) when the end was not reached in 60 s. */
static inline long kp_read_all(const char *bootstrap, const char *topic,
                               int parts, kp_msg_fn *fn, void *arg) {
  rd_kafka_t *rk = kp_handle(bootstrap, RD_KAFKA_CONSUMER, "kc-reader");
  if (!rk)
    return -1;
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(parts);
  for (int p = 0; p < parts; p++)
    rd_kafka_topic_partition_list_add(l, topic, p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  /* enable.partition.eof: an EOF event per partition that reached its
   * end, control records and compaction gaps included. */
  int at_end = 0, all = (1 << parts) - 1;
  long n = 0;
  int64_t deadline = dc_tu_now_ms() + 60000;
  while (at_end != all && dc_tu_now_ms() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    if (!m)
      continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
      at_end |= 1 << m->partition;
    else if (m->err)
      diag("reading %s: %s", topic, rd_kafka_message_errstr(m));
    else
      n++;
    if (!m->err && fn)
      fn(m, arg);
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (at_end != all) {
    diag("reading %s: not at its end within 60 s", topic);
    return -1;
  }
  return n;
}

/* ---- a classic group's records in __consumer_offsets -------------------- */

typedef struct kp_rec_member {
  char member_id[160], instance_id[64];
  int32_t session_timeout;
} kp_rec_member_t;

typedef struct kp_group_rec {
  int32_t generation;
  int n_members;
  kp_rec_member_t m[KP_MAX_MEMBERS];
} kp_group_rec_t;

/* Every GroupMetadataValue the coordinator wrote for one group, in
 * order (__consumer_offsets has one partition per group). */
typedef struct kp_group_log {
  const char *group;
  kp_group_rec_t rec[256];
  int n, undecoded;
} kp_group_log_t;

/* A cursor over big-endian Kafka record fields; ok turns false at the
 * first field that does not fit. */
typedef struct kp_cur {
  const unsigned char *p, *end;
  bool ok;
} kp_cur_t;

static inline int64_t kp_int(kp_cur_t *c, int size) {
  if (!c->ok || c->end - c->p < size) {
    c->ok = false;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < size; i++)
    v = v << 8 | *c->p++;
  /* Sign-extend from `size` bytes. */
  int shift = 64 - 8 * size;
  return (int64_t)(v << shift) >> shift;
}

/* A (nullable) string into out ("" for null); skipped when out is NULL. */
static inline void kp_str(kp_cur_t *c, char *out, size_t n) {
  int64_t len = kp_int(c, 2);
  if (out)
    out[0] = '\0';
  if (len < 0)
    return;
  if (!c->ok || c->end - c->p < len) {
    c->ok = false;
    return;
  }
  if (out)
    snprintf(out, n, "%.*s", (int)len, (const char *)c->p);
  c->p += len;
}

static inline void kp_skip_bytes(kp_cur_t *c) {
  int64_t len = kp_int(c, 4);
  if (len > 0 && (!c->ok || c->end - c->p < len))
    c->ok = false;
  else if (len > 0)
    c->p += len;
}

/* GroupMetadataValue v1-v3 (Kafka 4.x writes v3): 0, or -1 when it does
 * not decode. */
static inline int kp_decode_group_value(const void *buf, size_t len,
                                        kp_group_rec_t *r) {
  kp_cur_t c = {buf, (const unsigned char *)buf + len, true};
  int version = (int)kp_int(&c, 2);
  if (version < 1 || version > 3)
    return -1;
  memset(r, 0, sizeof(*r));
  kp_str(&c, NULL, 0); /* protocol type */
  r->generation = (int32_t)kp_int(&c, 4);
  kp_str(&c, NULL, 0); /* protocol */
  kp_str(&c, NULL, 0); /* leader */
  if (version >= 2)
    kp_int(&c, 8); /* current state timestamp */
  int64_t n = kp_int(&c, 4);
  for (int64_t i = 0; c.ok && i < n; i++) {
    kp_rec_member_t tmp, *m = i < KP_MAX_MEMBERS ? &r->m[i] : &tmp;
    kp_str(&c, m->member_id, sizeof(m->member_id));
    if (version >= 3)
      kp_str(&c, m->instance_id, sizeof(m->instance_id));
    kp_str(&c, NULL, 0); /* client id */
    kp_str(&c, NULL, 0); /* client host */
    kp_int(&c, 4);       /* rebalance timeout */
    m->session_timeout = (int32_t)kp_int(&c, 4);
    kp_skip_bytes(&c); /* subscription */
    kp_skip_bytes(&c); /* assignment */
  }
  r->n_members = n < KP_MAX_MEMBERS ? (int)n : KP_MAX_MEMBERS;
  return c.ok ? 0 : -1;
}

static inline void kp_group_log_add(const rd_kafka_message_t *m, void *arg) {
  kp_group_log_t *log = arg;
  kp_cur_t c = {m->key, (const unsigned char *)m->key + m->key_len, true};
  char group[256];
  /* Key version 2 is GroupMetadataKey; 0 and 1 are offset commits. */
  if (!m->key || kp_int(&c, 2) != 2)
    return;
  kp_str(&c, group, sizeof(group));
  if (!c.ok || strcmp(group, log->group) || !m->payload)
    return; /* another group, or a tombstone */
  if (log->n == (int)(sizeof(log->rec) / sizeof(log->rec[0])) ||
      kp_decode_group_value(m->payload, m->len, &log->rec[log->n]))
    log->undecoded++;
  else
    log->n++;
}

/* Reads every record the coordinators wrote for group. 0, or -1. */
static inline int kp_group_log_read(const char *bootstrap, const char *group,
                                    kp_group_log_t *log) {
  memset(log, 0, sizeof(*log));
  log->group = group;
  /* offsets.topic.num.partitions=3 in scripts/kafka.sh. */
  return kp_read_all(bootstrap, "__consumer_offsets", 3, kp_group_log_add,
                     log) < 0
             ? -1
             : 0;
}

static inline const kp_rec_member_t *kp_rec_member(const kp_group_rec_t *r,
                                                   const char *instance) {
  for (int i = 0; i < r->n_members; i++)
    if (!strcmp(r->m[i].instance_id, instance))
      return &r->m[i];
  return NULL;
}

/* ---- DescribeConsumerGroups --------------------------------------------- */

typedef struct kp_desc_member {
  char instance_id[64], member_id[160];
  int mask;
} kp_desc_member_t;

typedef struct kp_desc {
  rd_kafka_consumer_group_state_t state;
  int n;
  kp_desc_member_t m[KP_MAX_MEMBERS];
} kp_desc_t;

static inline void kp_desc_fill(const rd_kafka_ConsumerGroupDescription_t *g,
                                kp_desc_t *d) {
  d->state = rd_kafka_ConsumerGroupDescription_state(g);
  size_t n = rd_kafka_ConsumerGroupDescription_member_count(g);
  for (size_t i = 0; i < n && d->n < KP_MAX_MEMBERS; i++) {
    const rd_kafka_MemberDescription_t *md =
        rd_kafka_ConsumerGroupDescription_member(g, i);
    kp_desc_member_t *m = &d->m[d->n++];
    const char *inst = rd_kafka_MemberDescription_group_instance_id(md);
    snprintf(m->instance_id, sizeof(m->instance_id), "%s", inst ? inst : "");
    snprintf(m->member_id, sizeof(m->member_id), "%s",
             rd_kafka_MemberDescription_consumer_id(md));
    m->mask = kp_mask(rd_kafka_MemberAssignment_partitions(
        rd_kafka_MemberDescription_assignment(md)));
  }
}

/* Kafka's DescribeGroups of one group, through librdkafka's admin API.
 * 0, or -1 with diag(). */
static inline int kp_describe_group(rd_kafka_t *adm, const char *group,
                                    kp_desc_t *d) {
  memset(d, 0, sizeof(*d));
  rd_kafka_queue_t *q = rd_kafka_queue_new(adm);
  rd_kafka_DescribeConsumerGroups(adm, &group, 1, NULL, q);
  rd_kafka_event_t *ev =
      kp_admin_result(q, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT, 30000);
  int rc = -1;
  size_t n = 0;
  const rd_kafka_ConsumerGroupDescription_t **gs =
      ev ? rd_kafka_DescribeConsumerGroups_result_groups(
               rd_kafka_event_DescribeConsumerGroups_result(ev), &n)
         : NULL;
  const rd_kafka_error_t *err =
      n == 1 ? rd_kafka_ConsumerGroupDescription_error(gs[0]) : NULL;
  if (!ev || n != 1)
    diag("DescribeConsumerGroups %s: %s", group,
         ev ? rd_kafka_event_error_string(ev) : "no answer");
  else if (err)
    diag("DescribeConsumerGroups %s: %s", group, rd_kafka_error_string(err));
  else
    rc = (kp_desc_fill(gs[0], d), 0);
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  return rc;
}

static inline const kp_desc_member_t *kp_desc_member(const kp_desc_t *d,
                                                     const char *instance) {
  for (int i = 0; i < d->n; i++)
    if (!strcmp(d->m[i].instance_id, instance))
      return &d->m[i];
  return NULL;
}

/* ---- DescribeConfigs ---------------------------------------------------- */

/* Which of the NULL-terminated names the resource lists: bit i for
 * names[i]. -1 with diag() when the request failed. */
static inline int kp_config_has(rd_kafka_t *adm, rd_kafka_ResourceType_t type,
                                const char *name, const char *const *names) {
  char e[512];
  rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(type, name);
  rd_kafka_queue_t *q = rd_kafka_queue_new(adm);
  rd_kafka_DescribeConfigs(adm, &res, 1, NULL, q);
  rd_kafka_event_t *ev =
      kp_admin_result(q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, 30000);
  size_t n = 0, nc = 0;
  const rd_kafka_ConfigResource_t **rs =
      ev ? rd_kafka_DescribeConfigs_result_resources(
               rd_kafka_event_DescribeConfigs_result(ev), &n)
         : NULL;
  int found = -1;
  if (!ev || rd_kafka_event_error(ev) || n != 1 ||
      rd_kafka_ConfigResource_error(rs[0])) {
    snprintf(e, sizeof(e), "%s",
             !ev ? "no answer"
             : rd_kafka_event_error(ev) ? rd_kafka_event_error_string(ev)
             : n != 1 ? "not one resource"
                      : rd_kafka_ConfigResource_error_string(rs[0]));
    diag("DescribeConfigs %s: %s", name, e);
  } else {
    found = 0;
    const rd_kafka_ConfigEntry_t **cs =
        rd_kafka_ConfigResource_configs(rs[0], &nc);
    for (size_t i = 0; i < nc; i++)
      for (int k = 0; names[k]; k++)
        if (!strcmp(rd_kafka_ConfigEntry_name(cs[i]), names[k]))
          found |= 1 << k;
  }
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_ConfigResource_destroy(res);
  return found;
}

#endif
