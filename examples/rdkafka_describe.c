/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdkafka_describe: reads a client-id's dynamic configs from dynconfd the
 * way the dynconf agent does, through librdkafka's own admin API
 * (rd_kafka_DescribeConfigs on the CLIENT resource, type 9).
 *
 *   rdkafka_describe BOOTSTRAP CLIENT_ID
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>

#define CLIENT_RESOURCE ((rd_kafka_ResourceType_t)9)

static const char *source_name(rd_kafka_ConfigSource_t s) {
  switch ((int)s) {
  case 7: return "client-id override";
  case 8: return "<default> entity";
  case 9: return "user override";
  case 10: return "user + client-id override";
  default: return rd_kafka_ConfigSource_name(s);
  }
}

/* A client with this client.id: the config server sees the same id the
 * agent would send. NULL, with *exit_code, after saying why not. */
static rd_kafka_t *new_client(const char *bootstrap, const char *client_id,
                              int *exit_code) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr,
                        sizeof(errstr)) != RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "client.id", client_id, errstr, sizeof(errstr)) !=
          RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s\n", errstr);
    rd_kafka_conf_destroy(conf);
    *exit_code = 2;
    return NULL;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk) {
    fprintf(stderr, "rd_kafka_new: %s\n", errstr);
    *exit_code = 1;
  }
  return rk;
}

/* DescribeConfigs on the CLIENT resource named client_id; the result
 * event, or NULL when none came within 15 s. */
static rd_kafka_event_t *describe_client(rd_kafka_t *rk, rd_kafka_queue_t *q,
                                         const char *client_id) {
  char errstr[512];
  rd_kafka_ConfigResource_t *res =
      rd_kafka_ConfigResource_new(CLIENT_RESOURCE, client_id);
  rd_kafka_AdminOptions_t *opts =
      rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  rd_kafka_AdminOptions_set_request_timeout(opts, 10000, errstr, sizeof(errstr));
  rd_kafka_DescribeConfigs(rk, &res, 1, opts, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_ConfigResource_destroy(res);
  return ev;
}

/* One resource's configs, a line each, with where each value comes from. */
static void print_configs(const rd_kafka_ConfigResource_t *r) {
  size_t nc;
  const rd_kafka_ConfigEntry_t **ce = rd_kafka_ConfigResource_configs(r, &nc);
  printf("librdkafka %s sees %zu dynamic config(s) for client.id '%s':\n",
         rd_kafka_version_str(), nc, rd_kafka_ConfigResource_name(r));
  for (size_t j = 0; j < nc; j++)
    printf("  %-24s = %-8s (from the %s)\n", rd_kafka_ConfigEntry_name(ce[j]),
           rd_kafka_ConfigEntry_value(ce[j]),
           source_name(rd_kafka_ConfigEntry_source(ce[j])));
}

/* Prints the result: 0 when a resource's configs were printed, else 1
 * after saying what went wrong. */
static int print_result(rd_kafka_event_t *ev, const char *bootstrap) {
  if (!ev) {
    fprintf(stderr, "no answer from %s within 15 s\n", bootstrap);
    return 1;
  }
  if (rd_kafka_event_error(ev)) {
    fprintf(stderr, "DescribeConfigs failed: %s\n",
            rd_kafka_event_error_string(ev));
    return 1;
  }
  int rc = 1;
  size_t n;
  const rd_kafka_ConfigResource_t **rs = rd_kafka_DescribeConfigs_result_resources(
      rd_kafka_event_DescribeConfigs_result(ev), &n);
  for (size_t i = 0; i < n; i++) {
    if (rd_kafka_ConfigResource_error(rs[i])) {
      fprintf(stderr, "%s: %s\n", rd_kafka_ConfigResource_name(rs[i]),
              rd_kafka_ConfigResource_error_string(rs[i]));
      continue;
    }
    print_configs(rs[i]);
    rc = 0;
  }
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 3 || !strcmp(argv[1], "--help")) {
    fprintf(stderr, "Usage: %s BOOTSTRAP CLIENT_ID\n"
                    "Prints the configs dynconfd resolves for CLIENT_ID, read "
                    "with librdkafka's DescribeConfigs.\n", argv[0]);
    return 2;
  }
  int rc;
  rd_kafka_t *rk = new_client(argv[1], argv[2], &rc);
  if (!rk)
    return rc;
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_event_t *ev = describe_client(rk, q, argv[2]);
  rc = print_result(ev, argv[1]);
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return rc;
}
