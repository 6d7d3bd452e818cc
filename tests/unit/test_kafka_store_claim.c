/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A writer of the Kafka-topic store whose write is read back behind a
 * newer claim, on a cluster that does not fence it (librdkafka's mock, in
 * this process): that write and every later one are refused, nothing of
 * them is applied, and the store then follows the claimant. The claim is
 * written from outside with a plain producer right before the writes, so
 * the writer meets it only while reading its own records back.
 */
#include "broker/store/store.h"
#include "broker/store/store_kafka.h"
#include "codec/proto.h"
#include "../tap.h"
#include "../testutil.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdlib.h>
#include <string.h>

#define CLAIM_EPOCH "1000"
#define CLAIM_NODE "9"

static int alter(dc_store_t *st, const char *entity, const char *value,
                 char *err, size_t errsz) {
  const char *keys[] = {"acks"}, *vals[] = {value};
  dc_store_change_t ch = {"acks", DC_OP_SET, NULL, value};
  dc_store_commit_t c = {.resource_type = DC_RES_CLIENT,
                         .entity = entity,
                         .principal = "User:ANONYMOUS",
                         .peer = "127.0.0.1:40000",
                         .api = "IncrementalAlterConfigs",
                         .n_configs = 1,
                         .keys = keys,
                         .values = vals,
                         .n_changes = 1,
                         .changes = &ch};
  err[0] = '\0';
  return dc_store_commit(st, &c, err, errsz);
}

/* Writes a claim of node CLAIM_NODE, epoch CLAIM_EPOCH, and waits for it
 * to be in the log. */
static int write_claim(const char *bootstrap, const char *topic) {
  char errstr[256];
  const char *val = "{\"claim\":{\"epoch\":" CLAIM_EPOCH
                    ",\"node\":" CLAIM_NODE "}}";
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, errstr, sizeof(errstr));
  rd_kafka_conf_set(c, "log_level", "0", errstr, sizeof(errstr));
  rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr));
  if (!p) {
    rd_kafka_conf_destroy(c);
    diag("producer: %s", errstr);
    return -1;
  }
  rd_kafka_resp_err_t err = rd_kafka_producev(
      p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
      RD_KAFKA_V_KEY("claim", 5), RD_KAFKA_V_VALUE((void *)val, strlen(val)),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_HEADER("dynconf-epoch", CLAIM_EPOCH, -1),
      RD_KAFKA_V_HEADER("dynconf-node", CLAIM_NODE, -1), RD_KAFKA_V_END);
  if (!err)
    err = rd_kafka_flush(p, 30000);
  if (!err && rd_kafka_outq_len(p))
    err = RD_KAFKA_RESP_ERR__TIMED_OUT;
  rd_kafka_destroy(p);
  return err ? -1 : 0;
}

/* Polls the store until nothing more arrives for a while. */
static void drain(dc_store_t *st) {
  char err[256];
  for (int i = 0; i < 20; i++) {
    dc_store_poll(st, NULL, NULL, err, sizeof(err));
    dc_tu_sleep_ms(50);
  }
}

static int count_cb(void *opaque, int8_t type, const char *entity,
                    const char *key, const char *value) {
  (void)type, (void)key, (void)value;
  if (!strncmp(entity, "fenced-", 7))
    (*(int *)opaque)++;
  return 0;
}

int main(void) {
  char errstr[512], dir[] = "/tmp/dc-kclaim-XXXXXX";
  if (!ok(mkdtemp(dir), "scratch directory"))
    return done_testing();
  rd_kafka_conf_t *mc = rd_kafka_conf_new();
  rd_kafka_conf_set(mc, "log_level", "0", errstr, sizeof(errstr));
  rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mc, errstr, sizeof(errstr));
  rd_kafka_mock_cluster_t *mcl = mrk ? rd_kafka_mock_cluster_new(mrk, 1) : NULL;
  if (!ok(mcl, "mock cluster with one broker"))
    return done_testing();
  const char *bs = rd_kafka_mock_cluster_bootstraps(mcl);
  /* The mock names no controller, so the store cannot create them. */
  rd_kafka_mock_topic_create(mcl, DC_KAFKA_STORE_TOPIC, 1, 1);
  rd_kafka_mock_topic_create(mcl, DC_KAFKA_STORE_TOPIC "_history", 1, 1);

  dc_kafka_store_opts_t o = {.data_dir = dir, .bootstrap = bs,
                             .timeout_ms = 10000, .node_id = 1};
  dc_store_t *st = NULL;
  is_int(dc_store_open_kafka(&o, &st, errstr, sizeof(errstr)), 0,
         "the store opens on an empty topic and claims it: %s", errstr);
  if (!st)
    goto out;
  is_int(alter(st, "before", "1", errstr, sizeof(errstr)), 0,
         "the writer's alter is acknowledged: %s", errstr);

  is_int(write_claim(bs, DC_KAFKA_STORE_TOPIC), 0,
         "node " CLAIM_NODE " claims epoch " CLAIM_EPOCH " in the log");
  /* No poll in between: each write reads the log back to its record. */
  int r1 = alter(st, "fenced-1", "1", errstr, sizeof(errstr));
  is_int(r1, DC_STORE_NOT_WRITER, "the write behind the claim is refused");
  ok(strstr(errstr, "node " CLAIM_NODE " claimed it") != NULL,
     "  naming the claimant: %s", errstr);
  int r2 = alter(st, "fenced-2", "1", errstr, sizeof(errstr));
  is_int(r2, DC_STORE_NOT_WRITER,
         "the next write, with the claim still unapplied, is refused too");
  ok(strstr(errstr, "node " CLAIM_NODE) != NULL, "  naming the claimant: %s",
     errstr);

  drain(st);
  int fenced = 0;
  dc_store_load(st, count_cb, &fenced, errstr, sizeof(errstr));
  is_int(fenced, 0, "neither refused write is in the store");
  int r3 = alter(st, "fenced-3", "1", errstr, sizeof(errstr));
  is_int(r3, DC_STORE_NOT_WRITER, "once it has read the claim it follows "
         "node " CLAIM_NODE);
  ok(strstr(errstr, "node " CLAIM_NODE " does (epoch " CLAIM_EPOCH ")"),
     "  and says so: %s", errstr);
  dc_store_close(st);

  /* A server that reads the whole log afresh agrees. */
  char dir2[] = "/tmp/dc-kclaim2-XXXXXX";
  if (mkdtemp(dir2)) {
    o.data_dir = dir2;
    o.node_id = 2;
    o.read_only = true;
    dc_store_t *ro = NULL;
    errstr[0] = '\0';
    is_int(dc_store_open_kafka(&o, &ro, errstr, sizeof(errstr)), 0,
           "a read replica opens on the same log: %s", errstr);
    if (ro) {
      int seen = 0;
      dc_store_load(ro, count_cb, &seen, errstr, sizeof(errstr));
      is_int(seen, 0, "  and has none of the refused writes");
      dc_store_close(ro);
    }
    dc_tu_rmrf(dir2);
  }
out:
  rd_kafka_mock_cluster_destroy(mcl);
  rd_kafka_destroy(mrk);
  dc_tu_rmrf(dir);
  return done_testing();
}
