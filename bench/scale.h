/* SPDX-License-Identifier: BSD-2-Clause */
/* What scale's commands share (see scale.c for the commands). */
#ifndef DC_BENCH_SCALE_H
#define DC_BENCH_SCALE_H

#include "client/kclient.h"
#include "common/buf.h"

#include <stdint.h>

#define HB "heartbeat.interval.ms"
#define ST "session.timeout.ms"

typedef struct cfg {
  const char *target, *client;
  int alters, describes, timeout_ms;
  double seconds;
  int value_bytes;
  long pid;
  int connections;
  long request_bytes, rss_cap_mb;
} cfg_t;

/* scale_conn.c. A DescribeConfigs request (dc_describe_configs_req_t)
 * for kclient. */
int scale_enc_describe(dc_buf_t *b, int16_t v, const void *req);

/* A connection to c->target with ApiVersions done; *iac_version is the
 * IncrementalAlterConfigs version both speak. NULL (said why) on failure. */
dc_kclient_t *scale_connect(const cfg_t *c, int16_t *iac_version);

/* scale attack-seed and scale attack (scale_attack.c). */
int scale_cmd_attack_seed(const cfg_t *c);
int scale_cmd_attack(const cfg_t *c);

#endif
