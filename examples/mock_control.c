/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The control commands of mock_cluster --control: one line in, one reply
 * line out, so a test can take brokers down, move leaders and inject
 * errors in a mock cluster running in another process.
 *
 *   down B | up B                 broker B stops / resumes serving (same port)
 *   rtt B MS                      broker B answers MS ms late
 *   leader TOPIC PARTITION B      moves a partition's leader to broker B
 *   coord group|txn KEY B         moves a group's / transactional id's
 *                                 coordinator to broker B
 *   topic NAME PARTITIONS         creates a topic
 *   err APIKEY ERROR...           the next requests of APIKEY fail with these
 *                                 errors, in order (names as
 *                                 rd_kafka_err2name gives them, e.g.
 *                                 NOT_ENOUGH_REPLICAS)
 *   quit                          stops the cluster
 *
 * Replies: "ok" or "error <reason>".
 */
#include "mock_control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 34

/* An integer in [lo, hi]; false when the word is not one. */
static bool word_int(const char *w, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(w, &end, 10);
  if (errno || end == w || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

/* A Kafka error by its name ("NOT_ENOUGH_REPLICAS"); false if unknown. */
static bool err_by_name(const char *name, rd_kafka_resp_err_t *out) {
  const struct rd_kafka_err_desc *d;
  size_t n;
  rd_kafka_get_err_descs(&d, &n);
  for (size_t i = 0; i < n; i++)
    if (d[i].name && !strcmp(d[i].name, name)) {
      *out = d[i].code;
      return true;
    }
  return false;
}

static int reply_err(rd_kafka_resp_err_t e, char *reply, size_t size) {
  if (e)
    snprintf(reply, size, "error %s", rd_kafka_err2name(e));
  else
    snprintf(reply, size, "ok");
  return 0;
}

static int cmd_errors(rd_kafka_mock_cluster_t *mc, char **w, int n,
                      char *reply, size_t size) {
  long key;
  rd_kafka_resp_err_t errs[MAX_WORDS];
  if (n < 3 || !word_int(w[1], 0, 32767, &key)) {
    snprintf(reply, size, "error usage: err APIKEY ERROR...");
    return 0;
  }
  for (int i = 2; i < n; i++)
    if (!err_by_name(w[i], &errs[i - 2])) {
      snprintf(reply, size, "error unknown error name %s", w[i]);
      return 0;
    }
  rd_kafka_mock_push_request_errors_array(mc, (int16_t)key, (size_t)(n - 2),
                                          errs);
  snprintf(reply, size, "ok");
  return 0;
}

/* Runs the command in the words; fills reply; 1 for quit. */
static int run(rd_kafka_mock_cluster_t *mc, char **w, int n, char *reply,
               size_t size) {
  long b, x;
  const char *c = w[0];
  if (!strcmp(c, "quit"))
    return snprintf(reply, size, "ok"), 1;
  if ((!strcmp(c, "down") || !strcmp(c, "up")) && n == 2 &&
      word_int(w[1], 1, 64, &b))
    return reply_err(!strcmp(c, "down")
                         ? rd_kafka_mock_broker_set_down(mc, (int32_t)b)
                         : rd_kafka_mock_broker_set_up(mc, (int32_t)b),
                     reply, size);
  if (!strcmp(c, "rtt") && n == 3 && word_int(w[1], 1, 64, &b) &&
      word_int(w[2], 0, 3600000, &x))
    return reply_err(rd_kafka_mock_broker_set_rtt(mc, (int32_t)b, (int)x),
                     reply, size);
  if (!strcmp(c, "leader") && n == 4 && word_int(w[2], 0, 100000, &x) &&
      word_int(w[3], -1, 64, &b))
    return reply_err(rd_kafka_mock_partition_set_leader(mc, w[1], (int32_t)x,
                                                         (int32_t)b),
                     reply, size);
  if (!strcmp(c, "coord") && n == 4 &&
      (!strcmp(w[1], "group") || !strcmp(w[1], "txn")) &&
      word_int(w[3], 1, 64, &b))
    return reply_err(rd_kafka_mock_coordinator_set(mc, w[1], w[2],
                                                   (int32_t)b),
                     reply, size);
  if (!strcmp(c, "topic") && n == 3 && word_int(w[2], 1, 10000, &x))
    return reply_err(rd_kafka_mock_topic_create(mc, w[1], (int)x, 3), reply,
                     size);
  if (!strcmp(c, "err"))
    return cmd_errors(mc, w, n, reply, size);
  snprintf(reply, size, "error unknown command or arguments: %s", c);
  return 0;
}

int mock_control_line(rd_kafka_mock_cluster_t *mc, char *line, char *reply,
                      size_t reply_size) {
  char *w[MAX_WORDS];
  int n = 0;
  for (char *save = NULL, *t = strtok_r(line, " \t\r\n", &save); t;
       t = strtok_r(NULL, " \t\r\n", &save)) {
    if (n == MAX_WORDS) {
      snprintf(reply, reply_size, "error too many words (at most %d)",
               MAX_WORDS);
      return 0;
    }
    w[n++] = t;
  }
  if (n == 0) {
    snprintf(reply, reply_size, "error empty command");
    return 0;
  }
  return run(mc, w, n, reply, reply_size);
}
