/* SPDX-License-Identifier: BSD-2-Clause */
/* The Kafka-topic store's options (store_kafka.h opens it with them). */
#ifndef DC_STORE_KAFKA_OPTS_H
#define DC_STORE_KAFKA_OPTS_H
#include <stdbool.h>
#include <stdint.h>

#define DC_KAFKA_STORE_TOPIC "_dynconf_configs"
#define DC_KAFKA_STORE_SESSION_MS 6000

typedef struct dc_kafka_store_opts {
  const char *data_dir;    /* the local cache (and its lock) */
  const char *bootstrap;   /* HOST:PORT,... of the Kafka cluster */
  const char *topic;       /* NULL = DC_KAFKA_STORE_TOPIC */
  /* The audit history's topic (time-retained; every change's audit rows,
   * copied by the writer); NULL = the topic's name + "_history". */
  const char *history_topic;
  const char *config_file; /* librdkafka properties (SSL/SASL...), nullable */
  int timeout_ms;          /* bound on one commit and on each start-up step */
  int32_t node_id;         /* written as the records' writer */
  /* A writer not heard of (heartbeat or claim) for this long has lost its
   * lease and another server claims the topic; every server heartbeats
   * three times per session. 0 = DC_KAFKA_STORE_SESSION_MS. */
  int session_timeout_ms;
  /* A read replica: follows the topic (dc_store_event_fd/dc_store_poll
   * hand over what others write) and refuses every commit. */
  bool read_only;
} dc_kafka_store_opts_t;
#endif
