/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The managed consumer: rebuilt from the agent's effective configuration
 * when its generation moves. Messages handed to the application by earlier
 * polls count as processed; their offsets are committed before the old
 * handle closes, so nothing processed is lost (at-least-once).
 *
 * Threading: like a librdkafka consumer, used from one application thread.
 */
#include "agent/agent_int.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dynconf_consumer_s {
  dynconf_t *dc; /* borrowed */
  rd_kafka_t *rk; /* owned; NULL after close */
  int64_t gen;
  rd_kafka_topic_partition_list_t *topics; /* subscription (owned) */
  int64_t rebuilds;
};

static rd_kafka_t *new_handle(dynconf_consumer_t *c, char *errstr,
                              size_t errstr_size) {
  rd_kafka_conf_t *conf = dynconf_effective_conf(c->dc);
  if (!conf) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return NULL;
  }
  rd_kafka_poll_set_consumer(rk);
  return rk;
}

dynconf_consumer_t *dynconf_consumer_new(dynconf_t *dc, char *errstr,
                                         size_t errstr_size) {
  if (dc->type != RD_KAFKA_CONSUMER) {
    dc_seterr(errstr, errstr_size,
             "the agent was created for a producer, not a consumer");
    return NULL;
  }
  dynconf_consumer_t *c = calloc(1, sizeof(*c));
  if (!c) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  c->dc = dc;
  c->gen = dynconf_generation(dc);
  c->rk = new_handle(c, errstr, errstr_size);
  if (!c->rk) {
    free(c);
    return NULL;
  }
  return c;
}

rd_kafka_resp_err_t
dynconf_consumer_subscribe(dynconf_consumer_t *c,
                           const rd_kafka_topic_partition_list_t *topics) {
  if (!c->rk)
    return RD_KAFKA_RESP_ERR__STATE;
  rd_kafka_resp_err_t err = rd_kafka_subscribe(c->rk, topics);
  if (!err) {
    if (c->topics)
      rd_kafka_topic_partition_list_destroy(c->topics);
    c->topics = rd_kafka_topic_partition_list_copy(topics);
  }
  return err;
}

/* Commits what was processed and closes: the application's rebalance
 * callback sees the revoke here, on its own thread. */
/* Commits what was processed, leaves and destroys the handle; the
 * commit's error (none when there was nothing to commit). */
static rd_kafka_resp_err_t close_handle(dynconf_consumer_t *c,
                                        const char *why) {
  rd_kafka_resp_err_t err = rd_kafka_commit(c->rk, NULL, 0);
  if (err == RD_KAFKA_RESP_ERR__NO_OFFSET)
    err = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (err)
    dc_agent_log(c->dc, 4, "CONSUMER",
                 "committing processed offsets before %s failed: %s "
                 "(they may be consumed again)",
                 why, rd_kafka_err2str(err));
  rd_kafka_consumer_close(c->rk);
  rd_kafka_destroy(c->rk);
  c->rk = NULL;
  return err;
}

static void rebuild(dynconf_consumer_t *c, int64_t gen) {
  char errstr[512];
  c->gen = gen;
  /* The new handle first: when librdkafka refuses it (a configuration, or
   * ssl files on disk it cannot load right now), the current consumer
   * keeps running with the last configuration that worked. The new handle
   * joins the group only when it subscribes, after the old one left. */
  rd_kafka_t *nrk = new_handle(c, errstr, sizeof(errstr));
  if (!nrk) {
    dc_agent_log(c->dc, 3, "CONSUMER",
                 "librdkafka refused the configuration of generation %lld "
                 "(%s); the current consumer keeps running",
                 (long long)gen, errstr);
    return;
  }
  close_handle(c, "the rebuild");
  c->rk = nrk;
  if (c->topics) {
    rd_kafka_resp_err_t err = rd_kafka_subscribe(c->rk, c->topics);
    if (err)
      dc_agent_log(c->dc, 3, "CONSUMER", "re-subscribing failed: %s",
                   rd_kafka_err2str(err));
  }
  c->rebuilds++;
  dc_agent_log(c->dc, 6, "CONSUMER",
               "rebuilt the consumer for generation %lld and rejoined",
               (long long)gen);
}

rd_kafka_message_t *dynconf_consumer_poll(dynconf_consumer_t *c,
                                          int timeout_ms) {
  dynconf_poll(c->dc, 0);
  int64_t gen = dynconf_generation(c->dc);
  if (c->rk && gen != c->gen)
    rebuild(c, gen);
  if (!c->rk)
    return NULL;
  return rd_kafka_consumer_poll(c->rk, timeout_ms);
}

rd_kafka_resp_err_t dynconf_consumer_commit(dynconf_consumer_t *c, int async) {
  return c->rk ? rd_kafka_commit(c->rk, NULL, async) : RD_KAFKA_RESP_ERR__STATE;
}

rd_kafka_resp_err_t dynconf_consumer_close(dynconf_consumer_t *c) {
  return c->rk ? close_handle(c, "closing") : RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_t *dynconf_consumer_handle(dynconf_consumer_t *c) { return c->rk; }

int64_t dynconf_consumer_rebuilds(dynconf_consumer_t *c) { return c->rebuilds; }

void dynconf_consumer_destroy(dynconf_consumer_t *c) {
  if (!c)
    return;
  if (c->rk)
    close_handle(c, "closing");
  if (c->topics)
    rd_kafka_topic_partition_list_destroy(c->topics);
  free(c);
}
