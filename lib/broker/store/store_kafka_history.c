/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The audit history in Kafka. A compacted config topic keeps only each
 * entity's latest record, so its audit rows would go with the older
 * ones; the history topic (time-retained, cleanup.policy=delete) keeps
 * them. The writer copies, from its cache, the audit rows of every change
 * the log applied, one record per log offset, after what the history
 * topic is known to hold; every server tails the topic's end to know
 * that, so a new writer carries on where the old one stopped. A record
 * copied twice (a writer that died before reading its copy back) is
 * read once: readers keep the first record of each offset.
 */
#include "broker/store/store_kafka.h"
#include "broker/store/store_kafka_int.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIRROR_ROWS 6000 /* audit rows read from the cache per pass */

void dc_kstore_history_name(const dc_kafka_store_opts_t *o, char *buf,
                            size_t size) {
  if (o->history_topic)
    snprintf(buf, size, "%s", o->history_topic);
  else
    snprintf(buf, size, "%s_history",
             o->topic ? o->topic : DC_KAFKA_STORE_TOPIC);
}

bool dc_kstore_history_msg(kafka_store_t *k, const rd_kafka_message_t *m) {
  if (!k->history_topic || !m->rkt ||
      strcmp(rd_kafka_topic_name(m->rkt), k->history_topic))
    return false;
  if (m->err || !m->payload)
    return true; /* its end, or an error: the config log is what counts */
  json_t *v = json_loadb(m->payload, m->len, 0, NULL);
  json_t *off = v ? json_object_get(v, "offset") : NULL;
  if (json_is_integer(off) && json_integer_value(off) > k->mirrored)
    k->mirrored = json_integer_value(off);
  json_decref(v);
  return true;
}

/* What one pass of copying is doing. */
typedef struct mirroring {
  kafka_store_t *k;
  dc_log_history_t h; /* the offset being collected */
  bool open;
  size_t rows;
  int64_t last_sent;
} mirroring_t;

/* Produces the collected record. */
static int send_one(mirroring_t *mi) {
  kafka_store_t *k = mi->k;
  char err[256];
  char *key = dc_log_history_key(&mi->h), *val = dc_log_history_value(&mi->h);
  delivery_t *d = NULL;
  int r = -1;
  delivery_t **grown = realloc(k->mirror, (k->n_mirror + 1) * sizeof(*grown));
  if (grown)
    k->mirror = grown;
  if (key && val && grown &&
      !(r = dc_kstore_produce_to(k, k->producer, k->history_topic, key, val, &d, err,
                                 sizeof(err)))) {
    k->mirror[k->n_mirror++] = d;
    mi->last_sent = mi->h.offset;
  } else if (key && val && grown) {
    dc_log(DC_LOG_WARN, "kafka store: history: %s", err);
  }
  free(key);
  free(val);
  dc_log_history_free(&mi->h);
  mi->open = false;
  return r;
}

static int mirror_row(void *opaque, const dc_audit_row_t *row) {
  mirroring_t *mi = opaque;
  mi->rows++;
  if (mi->open && row->log_offset != mi->h.offset && send_one(mi))
    return 1;
  if (!mi->open) {
    if (dc_log_history_start(&mi->h, row))
      return 1;
    mi->open = true;
    return 0;
  }
  return dc_log_history_add(&mi->h, row) ? 1 : 0;
}

/* The copies in flight came back: those that failed are sent again from
 * what the history topic is known to hold. */
static bool mirror_settled(kafka_store_t *k) {
  bool failed = false;
  for (size_t i = 0; i < k->n_mirror; i++)
    if (!k->mirror[i]->done)
      return false;
  for (size_t i = 0; i < k->n_mirror; i++) {
    if (k->mirror[i]->err && !k->mirror_failing)
      dc_log(DC_LOG_WARN, "kafka store: copying the history to %s failed: "
             "%s; it is copied again", k->history_topic,
             rd_kafka_err2str(k->mirror[i]->err));
    failed |= k->mirror[i]->err != 0;
    free(k->mirror[i]);
  }
  k->n_mirror = 0;
  k->mirror_failing = failed;
  if (failed)
    k->mirror_sent = k->mirrored;
  return true;
}

int dc_kstore_mirror(kafka_store_t *k) {
  char err[256];
  if (!k->history_topic || !mirror_settled(k))
    return -1;
  if (k->mirror_sent < k->mirrored)
    k->mirror_sent = k->mirrored;
  mirroring_t mi = {.k = k, .last_sent = k->mirror_sent};
  int r = dc_store_sqlite_audit_since(k->cache, k->mirror_sent, MIRROR_ROWS,
                                      mirror_row, &mi, err, sizeof(err));
  if (r < 0)
    dc_log(DC_LOG_WARN, "kafka store: reading the history to copy: %s", err);
  /* A full pass may have cut the last offset's rows short: it goes in
   * the next pass, whole. */
  if (mi.open && r == 0 && (mi.rows < MIRROR_ROWS || mi.last_sent == k->mirror_sent))
    send_one(&mi);
  dc_log_history_free(&mi.h);
  k->mirror_sent = mi.last_sent;
  return (int)k->n_mirror;
}

void dc_kstore_mirror_flush(kafka_store_t *k) {
  int64_t deadline = dc_mono_ms() + (k->timeout_ms < 5000 ? k->timeout_ms
                                                          : 5000);
  while (k->history_topic && dc_mono_ms() < deadline) {
    int sent = dc_kstore_mirror(k);
    if (sent == 0)
      return; /* everything copied, nothing in flight */
    rd_kafka_poll(k->producer, 50);
  }
  if (k->history_topic)
    dc_log(DC_LOG_WARN, "kafka store: stopping before the history topic %s "
           "has every change; the next writer copies the rest",
           k->history_topic);
}

void dc_kstore_history_close(kafka_store_t *k) {
  for (size_t i = 0; i < k->n_mirror; i++)
    dc_kstore_release(&k->mirror[i], 1);
  free(k->mirror);
  k->mirror = NULL;
  k->n_mirror = 0;
}

/* ---- reading it (dynconfd --history) ------------------------------------ */

/* A row read, with where it was read: the history record's offset in
 * its topic and the row's place in the record. */
typedef struct read_row {
  dc_audit_row_t row;
  int64_t pos;
  size_t idx;
} read_row_t;

/* Every row read, kept until sorted. */
typedef struct rows {
  read_row_t *v;
  size_t n, cap;
  json_t **roots; /* own the rows' strings */
  size_t n_roots, cap_roots;
  const char *entity;
  int64_t pos;    /* the record being read */
  size_t idx;
} rows_t;

static int keep_row(void *opaque, const dc_audit_row_t *row) {
  rows_t *rs = opaque;
  size_t idx = rs->idx++;
  if (rs->entity && strcmp(rs->entity, row->entity))
    return 0;
  if (rs->n == rs->cap) {
    size_t cap = rs->cap ? 2 * rs->cap : 256;
    read_row_t *v = realloc(rs->v, cap * sizeof(*v));
    if (!v)
      return -1;
    rs->v = v;
    rs->cap = cap;
  }
  rs->v[rs->n++] = (read_row_t){*row, rs->pos, idx};
  return 0;
}

static int by_offset(const void *a, const void *b) {
  const read_row_t *x = a, *y = b;
  if (x->row.log_offset != y->row.log_offset)
    return x->row.log_offset < y->row.log_offset ? -1 : 1;
  if (x->pos != y->pos)
    return x->pos < y->pos ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* One history record: its rows kept. */
static int take_history(rows_t *rs, const rd_kafka_message_t *m,
                        const char *topic) {
  char why[200];
  json_t *root = NULL;
  size_t before = rs->n;
  if (rs->n_roots == rs->cap_roots) {
    size_t cap = rs->cap_roots ? 2 * rs->cap_roots : 256;
    json_t **v = realloc(rs->roots, cap * sizeof(*v));
    if (!v)
      return -1;
    rs->roots = v;
    rs->cap_roots = cap;
  }
  rs->pos = m->offset;
  rs->idx = 0;
  int r = dc_log_history_parse(m->payload, m->len, &root, keep_row, rs, why,
                               sizeof(why));
  rs->roots[rs->n_roots++] = root;
  if (r < 0) {
    fprintf(stderr, "dynconfd: skipping record %lld of %s: %s\n",
            (long long)m->offset, topic, why);
    rs->n = before;
  }
  return r > 0 ? -1 : 0;
}

/* The rows of rs in log order, each offset's first copy only. */
static int emit(rows_t *rs, dc_store_history_cb *cb, void *opaque) {
  qsort(rs->v, rs->n, sizeof(*rs->v), by_offset);
  int64_t last = -1, first_pos = -1, seq = 0;
  for (size_t i = 0; i < rs->n; i++) {
    read_row_t *r = &rs->v[i];
    if (r->row.log_offset != last) {
      last = r->row.log_offset;
      first_pos = r->pos; /* the first copy's record */
    }
    if (r->pos != first_pos)
      continue; /* a later copy of the same offset */
    r->row.seq = ++seq;
    int rc = cb(opaque, &r->row);
    if (rc)
      return rc;
  }
  return 0;
}

/* The history topic's records, from its start to its end, into rs. */
static int read_history(rd_kafka_t *c, const dc_kafka_store_opts_t *o,
                        const char *topic, rows_t *rs, char *errstr,
                        size_t errstr_size) {
  char why[512];
  int64_t lo = 0, hi = 0;
  rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
      c, topic, 0, &lo, &hi, o->timeout_ms);
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot read history topic %s at %s: %s",
             topic, o->bootstrap, rd_kafka_err2str(e));
    return -1;
  }
  rd_kafka_topic_partition_list_t *a = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(a, topic, 0)->offset = lo;
  e = rd_kafka_assign(c, a);
  rd_kafka_topic_partition_list_destroy(a);
  int64_t pos = lo;
  while (!e && pos < hi) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, o->timeout_ms);
    if (!m) {
      dc_seterr(errstr, errstr_size, "reading history topic %s at %s: "
               "nothing within %d ms at offset %lld of %lld", topic,
               o->bootstrap, o->timeout_ms, (long long)pos, (long long)hi);
      return -1;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      pos = m->offset > pos ? m->offset : pos;
    } else if (m->err) {
      snprintf(why, sizeof(why), "%s", rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      dc_seterr(errstr, errstr_size, "reading history topic %s at %s: %s",
               topic, o->bootstrap, why);
      return -1;
    } else {
      pos = m->offset + 1;
      if (take_history(rs, m, topic)) {
        rd_kafka_message_destroy(m);
        dc_seterr(errstr, errstr_size, "out of memory reading history");
        return -1;
      }
    }
    rd_kafka_message_destroy(m);
  }
  if (e) {
    dc_seterr(errstr, errstr_size, "cannot read history topic %s: %s", topic,
             rd_kafka_err2str(e));
    return -1;
  }
  return 0;
}

int dc_kafka_history(const dc_kafka_store_opts_t *o, const char *entity,
                     dc_store_history_cb *cb, void *opaque, char *errstr,
                     size_t errstr_size) {
  char topic[512];
  dc_kstore_history_name(o, topic, sizeof(topic));
  rd_kafka_t *c = dc_kstore_handle_new(o, RD_KAFKA_CONSUMER, NULL, errstr,
                                       errstr_size);
  if (!c)
    return -1;
  rows_t rs = {.entity = entity};
  int rc = read_history(c, o, topic, &rs, errstr, errstr_size)
               ? -1
               : emit(&rs, cb, opaque);
  for (size_t i = 0; i < rs.n_roots; i++)
    json_decref(rs.roots[i]);
  free(rs.roots);
  free(rs.v);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  return rc;
}
