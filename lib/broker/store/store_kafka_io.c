/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Kafka-topic store's handles on the cluster: producers and the
 * consumer configured from the store's options, records produced with
 * their delivery reports awaited. Nothing here knows what a record means.
 */
#include "broker/store/store_kafka_int.h"
#include "common/kvfile.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <librdkafka/rdkafka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- configuration ----------------------------------------------------- */

/* Applies the key=value lines of path to conf. 0, or -1 with errstr. */
/* One librdkafka property of the store's config file (a dc_kvfile_cb_t;
 * opaque is the rd_kafka_conf_t). */
static int set_conf_prop(void *opaque, const char *key, const char *value,
                         int lineno, char *why, size_t why_size) {
  (void)lineno;
  return rd_kafka_conf_set(opaque, key, value, why, why_size) ==
                 RD_KAFKA_CONF_OK
             ? 0
             : -1;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque);

static void rk_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf) {
  (void)rk;
  if (level <= 4) /* warnings and worse; the rest is librdkafka's chatter */
    dc_log(DC_LOG_WARN, "kafka store: %s: %s", fac, buf);
}

/* The transactional producer's transaction.timeout.ms: bounds how long a
 * transaction a writer left open (it died mid-commit and nobody claimed
 * yet) holds back what read_committed readers see. At least the commit
 * timeout (librdkafka requires message.timeout.ms below it). */
int dc_kstore_txn_timeout_ms(int timeout_ms) {
  int t = timeout_ms < 5000 ? 10000 : 2 * timeout_ms;
  return t > 900000 ? 900000 : t;
}

/* The properties of a handle of type (txn_id: a transactional producer);
 * the properties file's come first, so these win. 0, or -1 with errstr. */
static int set_store_props(rd_kafka_conf_t *c, const dc_kafka_store_opts_t *o,
                           rd_kafka_type_t type, const char *txn_id,
                           char *errstr, size_t errstr_size) {
  char cid[64], gid[64], tmo[24], ttmo[24];
  snprintf(cid, sizeof(cid), "dynconfd-%d-store", (int)o->node_id);
  snprintf(tmo, sizeof(tmo), "%d", o->timeout_ms);
  snprintf(ttmo, sizeof(ttmo), "%d", dc_kstore_txn_timeout_ms(o->timeout_ms));
  /* librdkafka wants a group.id to assign partitions; it is never
   * joined (no subscribe) and no offset is committed to it. */
  snprintf(gid, sizeof(gid), "dynconfd-%d-store-reader", (int)o->node_id);
  const char *const props[][2] = {
      {"bootstrap.servers", o->bootstrap},
      {"client.id", cid},
      /* producers */
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"linger.ms", "0"},
      {"message.timeout.ms", tmo},
      {"transactional.id", txn_id},
      {"transaction.timeout.ms", txn_id ? ttmo : NULL},
      /* the consumer: only committed records (a stale writer's never
       * commit), read from the offset the cache reached */
      {"enable.auto.commit", "false"},
      {"enable.partition.eof", "true"},
      {"auto.offset.reset", "error"},
      {"isolation.level", "read_committed"},
      {"group.id", gid},
  };
  bool p = type == RD_KAFKA_PRODUCER;
  for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
    bool mine = i < 2 || (p ? i < 8 : i >= 8);
    if (mine && props[i][1] &&
        rd_kafka_conf_set(c, props[i][0], props[i][1], errstr, errstr_size))
      return -1;
  }
  return 0;
}

/* A handle of type for the store. NULL with errstr. */
rd_kafka_t *dc_kstore_handle_new(const dc_kafka_store_opts_t *o,
                                 rd_kafka_type_t type, const char *txn_id,
                                 char *errstr, size_t errstr_size) {
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  /* A fetch that finds nothing new may wait this long on the broker; a
   * real Kafka broker answers as soon as a record arrives, librdkafka's
   * mock only at the end, so it bounds how long an alter waits to read its
   * own record back there. The properties file may change it. */
  if (type == RD_KAFKA_CONSUMER &&
      rd_kafka_conf_set(c, "fetch.wait.max.ms", "100", errstr, errstr_size))
    goto fail;
  /* A connection whose request goes unanswered (a silent partition) is
   * given up and made again after the store timeout, not librdkafka's
   * 60 s, and so is a connect that does not finish: once the network
   * heals, the store reads and writes again within about that long. */
  char tmo[24];
  snprintf(tmo, sizeof(tmo), "%d", o->timeout_ms);
  if (rd_kafka_conf_set(c, "socket.timeout.ms", tmo, errstr, errstr_size) ||
      rd_kafka_conf_set(c, "socket.connection.setup.timeout.ms", tmo, errstr,
                        errstr_size))
    goto fail;
  if (o->config_file && dc_kvfile_read(o->config_file, set_conf_prop, c, errstr, errstr_size))
    goto fail;
  if (set_store_props(c, o, type, txn_id, errstr, errstr_size))
    goto fail;
  rd_kafka_conf_set_log_cb(c, rk_log);
  if (type == RD_KAFKA_PRODUCER)
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
  rd_kafka_t *rk = rd_kafka_new(type, c, errstr, errstr_size);
  if (rk)
    return rk;
fail:
  rd_kafka_conf_destroy(c);
  return NULL;
}

/* ---- commits ------------------------------------------------------------- */

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque) {
  (void)rk, (void)opaque;
  delivery_t *d = m->_private;
  if (d->abandoned) {
    free(d);
    return;
  }
  d->done = true;
  d->err = m->err;
  d->offset = m->offset;
}

void dc_kstore_release(delivery_t **d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (d[i]->done)
      free(d[i]);
    else
      d[i]->abandoned = true;
  }
}

int dc_kstore_produce(kafka_store_t *k, rd_kafka_t *rk, const char *key,
                      const char *val, delivery_t **dp, char *errstr,
                      size_t errstr_size) {
  return dc_kstore_produce_to(k, rk, k->topic, key, val, dp, errstr,
                              errstr_size);
}

int dc_kstore_produce_to(kafka_store_t *k, rd_kafka_t *rk, const char *topic,
                         const char *key, const char *val, delivery_t **dp,
                         char *errstr, size_t errstr_size) {
  delivery_t *d = *dp = calloc(1, sizeof(*d));
  if (!d) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  char node[16], epoch[24];
  snprintf(node, sizeof(node), "%d", (int)k->node_id);
  snprintf(epoch, sizeof(epoch), "%lld", (long long)k->my_epoch);
  rd_kafka_resp_err_t e = rd_kafka_producev(
      rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_KEY(key, strlen(key)),
      RD_KAFKA_V_VALUE((void *)val, val ? strlen(val) : 0),
      RD_KAFKA_V_HEADER(DC_LOG_HDR_NODE, node, -1),
      RD_KAFKA_V_HEADER(DC_LOG_HDR_EPOCH, epoch, -1), RD_KAFKA_V_OPAQUE(d),
      RD_KAFKA_V_END);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot queue the record %s: %s", key,
             rd_kafka_err2str(e));
    free(d);
    *dp = NULL;
  }
  return e ? -1 : 0;
}

int dc_kstore_await(kafka_store_t *k, rd_kafka_t *rk, delivery_t **d, size_t n,
                    int64_t deadline, char *errstr, size_t errstr_size) {
  /* Past the deadline, reports due already are still served once. */
  for (bool last = false; !last;) {
    size_t done = 0;
    for (size_t i = 0; i < n; i++)
      done += d[i]->done;
    if (done == n)
      break;
    int left = (int)(deadline - dc_mono_ms());
    last = left <= 0;
    rd_kafka_poll(rk, last ? 0 : left < 100 ? left : 100);
  }
  for (size_t i = 0; i < n; i++)
    if (!d[i]->done || d[i]->err) {
      dc_seterr(errstr, errstr_size, "the Kafka store (topic %s at %s) did "
               "not take the change within %d ms: %s", k->topic, k->bootstrap,
               k->timeout_ms,
               d[i]->done ? rd_kafka_err2str(d[i]->err)
                          : "no acknowledgement");
      return -1;
    }
  return 0;
}
