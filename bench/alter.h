/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One IncrementalAlterConfigs round trip over the project's client, shared
 * by the benchmarks that alter (bench/scale.c, bench/store_alter.c).
 */
#ifndef DC_BENCH_ALTER_H
#define DC_BENCH_ALTER_H
#include "client/kclient.h"
#include "common/arena.h"
#include "common/errors.h"

#include <stdbool.h>
#include <stdio.h>

static inline int bench_enc_incremental(dc_buf_t *b, int16_t v,
                                        const void *req) {
  return dc_incremental_alter_configs_req_encode(b, v, req);
}

/* One IncrementalAlterConfigs SET. Returns the resource's error code, or
 * -1 when the request itself failed (the connection is then closed). */
static inline int bench_alter_set(dc_kclient_t *kc, int16_t v, const char *entity,
                     int n, const char *const *keys,
                     const char *const *values, bool validate_only,
                     int timeout_ms, char *msg, size_t msg_size) {
  dc_alter_config_t ops[32];
  for (int i = 0; i < n; i++)
    ops[i] = (dc_alter_config_t){(char *)keys[i], DC_OP_SET,
                                 (char *)values[i]};
  dc_alter_resource_t res = {DC_RES_CLIENT, (char *)entity, n, ops};
  dc_alter_configs_req_t req = {1, &res, validate_only};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  dc_alter_configs_resp_t resp;
  int rc = -1;
  msg[0] = '\0';
  if (dc_kclient_request(kc, DC_API_INCREMENTAL_ALTER_CONFIGS, v,
                         bench_enc_incremental, &req, timeout_ms, &rd, &arena, msg,
                         msg_size) == 0) {
    if (dc_incremental_alter_configs_resp_decode(&rd, v, &resp) == 0 &&
        resp.n_responses == 1) {
      rc = resp.responses[0].error_code;
      if (rc)
        snprintf(msg, msg_size, "%s: %s", dc_err_name(rc),
                 resp.responses[0].error_message
                     ? resp.responses[0].error_message
                     : "(no message)");
    } else {
      snprintf(msg, msg_size, "undecodable IncrementalAlterConfigs response");
    }
  }
  dc_arena_free(&arena);
  return rc;
}
#endif
