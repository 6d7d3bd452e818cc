/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Kafka-topic store's topics at start-up: created when missing (one
 * partition, compacted; the history topic time-retained), refused when
 * they are not fit, and the log read from the cache's offset to its end.
 */
#include "broker/store/store_kafka_int.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <librdkafka/rdkafka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Creates topic with one partition and config (NULL-terminated
 * name/value pairs). */
static int create_topic(kafka_store_t *k, const char *topic, int brokers,
                        const char *const *config, char *errstr,
                        size_t errstr_size) {
  char why[512] = "";
  int rf = brokers < 3 ? brokers : 3;
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, rf, why,
                                                  sizeof(why));
  char misr[16];
  snprintf(misr, sizeof(misr), "%d", rf >= 3 ? 2 : 1);
  rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", misr);
  for (size_t i = 0; config[i]; i += 2)
    rd_kafka_NewTopic_set_config(nt, config[i], config[i + 1]);
  rd_kafka_AdminOptions_t *ao =
      rd_kafka_AdminOptions_new(k->producer, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_request_timeout(ao, k->timeout_ms, why,
                                            sizeof(why));
  rd_kafka_queue_t *q = rd_kafka_queue_new(k->producer);
  rd_kafka_CreateTopics(k->producer, &nt, 1, ao, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, k->timeout_ms + 2000);
  int rc = -1;
  const rd_kafka_CreateTopics_result_t *res =
      ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
  size_t n = 0;
  const rd_kafka_topic_result_t **tr =
      res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
  if (!ev)
    snprintf(why, sizeof(why), "no answer");
  else if (rd_kafka_event_error(ev))
    snprintf(why, sizeof(why), "%s", rd_kafka_event_error_string(ev));
  else if (n == 1 && rd_kafka_topic_result_error(tr[0]))
    snprintf(why, sizeof(why), "%s", rd_kafka_topic_result_error_string(tr[0]));
  else
    rc = 0;
  if (rc)
    dc_seterr(errstr, errstr_size, "store topic %s does not exist at %s and "
             "cannot be created (%s); create it with one partition and "
             "cleanup.policy=%s", topic, k->bootstrap, why, config[1]);
  else
    dc_log(DC_LOG_INFO, "kafka store: created topic %s (1 partition, "
           "replication factor %d, cleanup.policy=%s)", topic, rf, config[1]);
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(ao);
  rd_kafka_NewTopic_destroy(nt);
  return rc;
}

/* How the store's topics are made: the config log keeps every entity's
 * latest record; the history keeps everything for 90 days. */
static const char *const log_config[] = {"cleanup.policy", "compact", NULL};
static const char *const history_config[] = {
    "cleanup.policy", "delete", "retention.ms", "7776000000", NULL};

/* The partition count of topic in md, -1 when it does not exist. */
static int partitions_of(const rd_kafka_metadata_t *md, const char *topic) {
  for (int i = 0; i < md->topic_cnt; i++)
    if (!strcmp(md->topics[i].topic, topic) && !md->topics[i].err)
      return md->topics[i].partition_cnt;
  return -1;
}

/* Does the cluster have a controller that is one of its brokers? librdkafka's
 * mock cluster names controller 0, which is none, and cannot answer
 * admin requests. */
static bool real_controller(kafka_store_t *k, const rd_kafka_metadata_t *md) {
  int32_t c = rd_kafka_controllerid(k->producer, k->timeout_ms);
  for (int i = 0; c >= 0 && i < md->broker_cnt; i++)
    if (md->brokers[i].id == c)
      return true;
  return false;
}

/* topic's cleanup.policy from the cluster into buf ("" when it does not
 * say). 0, or -1 with why. */
static int cleanup_policy(kafka_store_t *k, const char *topic, char *buf,
                          size_t size, char *why, size_t why_size) {
  rd_kafka_ConfigResource_t *cr =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
  rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(
      k->producer, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  rd_kafka_AdminOptions_set_request_timeout(ao, k->timeout_ms, why, why_size);
  rd_kafka_queue_t *q = rd_kafka_queue_new(k->producer);
  rd_kafka_DescribeConfigs(k->producer, &cr, 1, ao, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, k->timeout_ms + 2000);
  const rd_kafka_DescribeConfigs_result_t *res =
      ev ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
  size_t n = 0, nc = 0;
  const rd_kafka_ConfigResource_t **rs =
      res ? rd_kafka_DescribeConfigs_result_resources(res, &n) : NULL;
  int rc = -1;
  buf[0] = '\0';
  if (!ev)
    dc_seterr(why, why_size, "no answer");
  else if (rd_kafka_event_error(ev))
    dc_seterr(why, why_size, "%s", rd_kafka_event_error_string(ev));
  else if (n != 1 || rd_kafka_ConfigResource_error(rs[0]))
    dc_seterr(why, why_size, "%s",
             n == 1 ? rd_kafka_ConfigResource_error_string(rs[0])
                    : "no result");
  else
    rc = 0;
  const rd_kafka_ConfigEntry_t **ce =
      rc ? NULL : rd_kafka_ConfigResource_configs(rs[0], &nc);
  for (size_t i = 0; i < nc; i++)
    if (!strcmp(rd_kafka_ConfigEntry_name(ce[i]), "cleanup.policy") &&
        rd_kafka_ConfigEntry_value(ce[i]))
      snprintf(buf, size, "%s", rd_kafka_ConfigEntry_value(ce[i]));
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(ao);
  rd_kafka_ConfigResource_destroy(cr);
  return rc;
}

/* An existing config log must be compacted only: with "delete" in its
 * policy, retention would drop entities' only records. */
static int check_policy(kafka_store_t *k, const rd_kafka_metadata_t *md,
                        char *errstr, size_t errstr_size) {
  char policy[128], why[512];
  if (!real_controller(k, md)) {
    dc_log(DC_LOG_INFO, "kafka store: the cluster at %s names no controller "
           "among its brokers (librdkafka's mock cluster?); cleanup.policy "
           "of %s not checked", k->bootstrap, k->topic);
    return 0;
  }
  if (cleanup_policy(k, k->topic, policy, sizeof(policy), why, sizeof(why))) {
    dc_seterr(errstr, errstr_size, "cannot read the configuration of store "
             "topic %s at %s: %s", k->topic, k->bootstrap, why);
    return -1;
  }
  if (!strcmp(policy, "compact"))
    return 0;
  dc_seterr(errstr, errstr_size, "store topic %s at %s has cleanup.policy=%s; "
           "the config log needs cleanup.policy=compact (or retention would "
           "delete entities' only records): kafka-configs.sh --alter "
           "--entity-type topics --entity-name %s --add-config "
           "cleanup.policy=compact", k->topic, k->bootstrap,
           policy[0] ? policy : "(unknown)", k->topic);
  return -1;
}

/* The topics exist, the log with one partition (each created when
 * missing). Asks for every topic's metadata, since asking for a missing
 * one by name makes some clusters create it with their default partition
 * count. */
int dc_kstore_check_topic(kafka_store_t *k, char *errstr, size_t errstr_size) {
  const rd_kafka_metadata_t *md = NULL;
  rd_kafka_resp_err_t e =
      rd_kafka_metadata(k->consumer, 1, NULL, &md, k->timeout_ms);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot reach the Kafka cluster at %s "
             "within %d ms: %s", k->bootstrap, k->timeout_ms,
             rd_kafka_err2str(e));
    return -1;
  }
  int parts = partitions_of(md, k->topic), brokers = md->broker_cnt;
  int hparts = k->history_topic ? partitions_of(md, k->history_topic) : 0;
  int policy = parts == 1 && k->producer
                   ? check_policy(k, md, errstr, errstr_size)
                   : 0;
  rd_kafka_metadata_destroy(md);
  if (policy)
    return -1;
  if (parts < 0 && k->read_only) {
    dc_seterr(errstr, errstr_size, "store topic %s does not exist at %s (a "
             "read replica does not create it; start the writer first)",
             k->topic, k->bootstrap);
    return -1;
  }
  if (parts > 1) {
    dc_seterr(errstr, errstr_size, "store topic %s at %s has %d partitions; "
             "the store needs exactly one (the log's order is the order of "
             "changes)", k->topic, k->bootstrap, parts);
    return -1;
  }
  if ((parts < 0 && create_topic(k, k->topic, brokers, log_config, errstr,
                                 errstr_size)) ||
      (hparts < 0 && create_topic(k, k->history_topic, brokers,
                                  history_config, errstr, errstr_size)))
    return -1;
  return 0;
}

/* Is e what a broker answers about a topic it does not know yet? A topic
 * just created reaches every broker's metadata a moment later. */
static bool not_known_yet(rd_kafka_resp_err_t e) {
  return e == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
         e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
         e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
         e == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
         e == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
}

/* The log's watermarks, asked again (for up to the timeout) while the
 * brokers do not know the topic yet. */
static rd_kafka_resp_err_t query_offsets(kafka_store_t *k, int64_t *lo,
                                         int64_t *hi) {
  int64_t deadline = dc_mono_ms() + k->timeout_ms;
  for (;;) {
    int left = (int)(deadline - dc_mono_ms());
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
        k->consumer, k->topic, 0, lo, hi, left > 0 ? left : 1);
    if (!e || !not_known_yet(e) || dc_mono_ms() >= deadline)
      return e;
    struct timespec backoff = {0, 50 * 1000000L};
    nanosleep(&backoff, NULL);
  }
}

/* Where the cache left the log (*off), checked against the topic's first
 * and last offsets (*hi: its high watermark); the cache's epoch read
 * along. */
static int start_offset(kafka_store_t *k, int64_t *off, int64_t *hi,
                        char *errstr, size_t errstr_size) {
  int64_t lo = 0, node = -1;
  *off = 0;
  *hi = 0;
  if (dc_store_sqlite_meta(k->cache, OFFSET_META, off, errstr,
                           errstr_size) < 0 ||
      dc_store_sqlite_meta(k->cache, EPOCH_META, &k->epoch, errstr,
                           errstr_size) < 0 ||
      dc_store_sqlite_meta(k->cache, EPOCH_NODE_META, &node, errstr,
                           errstr_size) < 0)
    return -1;
  k->epoch_node = (int32_t)node;
  rd_kafka_resp_err_t e = query_offsets(k, &lo, hi);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot read the offsets of %s at %s: %s",
             k->topic, k->bootstrap, rd_kafka_err2str(e));
    return -1;
  }
  if (lo > *off) {
    dc_seterr(errstr, errstr_size, "topic %s at %s starts at offset %lld, "
             "past this cache's %lld: records were deleted (retention or "
             "DeleteRecords) before they were applied here, so the state "
             "cannot be rebuilt whole; the topic must keep every record "
             "(cleanup.policy=compact, no retention)", k->topic,
             k->bootstrap, (long long)lo, (long long)*off);
    return -1;
  }
  if (*off > *hi) {
    dc_seterr(errstr, errstr_size, "this cache has applied topic %s up to "
             "offset %lld but the topic at %s ends at %lld: it is another "
             "topic or was recreated; start from an empty data directory",
             k->topic, (long long)*off, k->bootstrap, (long long)*hi);
    return -1;
  }
  return 0;
}

/* The consumer assigned the topic from off, and the history topic's last
 * record. */
static int assign_from(kafka_store_t *k, int64_t off, char *errstr,
                       size_t errstr_size) {
  rd_kafka_topic_partition_list_t *a = rd_kafka_topic_partition_list_new(2);
  rd_kafka_topic_partition_list_add(a, k->topic, 0)->offset = off;
  /* The history's last record says how far it holds the changes. */
  if (k->history_topic)
    rd_kafka_topic_partition_list_add(a, k->history_topic, 0)->offset =
        RD_KAFKA_OFFSET_TAIL(1);
  rd_kafka_resp_err_t e = rd_kafka_assign(k->consumer, a);
  rd_kafka_topic_partition_list_destroy(a);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot read %s: %s", k->topic,
             rd_kafka_err2str(e));
    return -1;
  }
  return 0;
}

/* Reads the cache's offset, assigns partition 0 there, applies the log to
 * its current end. */
int dc_kstore_start_reading(kafka_store_t *k, char *errstr,
                            size_t errstr_size) {
  int64_t off, hi;
  if (start_offset(k, &off, &hi, errstr, errstr_size))
    return -1;
  k->next_offset = off;
  if (assign_from(k, off, errstr, errstr_size))
    return -1;
  int64_t t0 = dc_mono_ms();
  /* To the high watermark, or to the end a read_committed reader sees if
   * that comes first: a transaction a writer left open (it died
   * mid-commit) holds it back until a claimant fences it, or at most
   * transaction.timeout.ms, which the wait allows for. (The end alone may
   * never be met while a writer commits without pause.) */
  if (dc_kstore_catch_up(k, hi, true, NULL, 0, NULL, NULL, false,
                         t0 + k->timeout_ms + dc_kstore_txn_timeout_ms(k->timeout_ms) +
                             (hi - off) / 10,
                         errstr, errstr_size))
    return -1;
  dc_log(DC_LOG_INFO, "kafka store: applied %s from offset %lld to %lld in "
         "%lld ms", k->topic, (long long)off, (long long)k->next_offset,
         (long long)(dc_mono_ms() - t0));
  return 0;
}
