/* SPDX-License-Identifier: BSD-2-Clause */
/* DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for the CLIENT
 * resource (SPEC §2-§4), the principal-scoped USER resource (type 10; the
 * scheme is described in scope.c), and the read-only BROKER resource.
 * Every resource is authorized on its own (acl.h): a denied one gets
 * CLUSTER_AUTHORIZATION_FAILED and is neither described nor changed,
 * while the others in the same request proceed. The handlers are in
 * config_describe.c and config_alter.c; here is what they share. */
#include "broker/api/config_apis.h"

#include <stdio.h>
#include <string.h>

const char *dc_cfg_type_error(int8_t type) {
  /* librdkafka 2.10 and later write every type but TOPIC, BROKER and
   * GROUP as 0 in their admin API, so 0 usually means such a client. */
  if (type == 0)
    return "resource type 0 (UNKNOWN): dynconfd serves only CLIENT (9), "
           "USER (10) and BROKER (4) config resources; librdkafka 2.10 and "
           "later send 0 for CLIENT and USER from their admin API (use "
           "dynconf-configs, or librdkafka 2.9 or older)";
  return "dynconfd serves only CLIENT (9), USER (10) and BROKER (4) config "
         "resources";
}

/* ---- request bounds -------------------------------------------------- */

size_t dc_cfg_error_result_bound(const char *name) {
  return strlen(name ? name : "") + 1024 + 16;
}

const char *dc_cfg_too_many_resources(dc_req_t *r, int32_t n) {
  int32_t max = r->b->opts.max_request_resources;
  if (n <= max)
    return NULL;
  char msg[200];
  snprintf(msg, sizeof(msg),
           "the request names %d resources; this server accepts at most %d "
           "per request (max.request.resources)",
           (int)n, (int)max);
  const char *copy = dc_arena_strdup(r->arena, msg);
  return copy ? copy
              : "the request names too many resources (max.request.resources)";
}

int dc_cfg_answer_fits(dc_req_t *r, size_t reserve) {
  if (reserve <= r->b->opts.max_response_size)
    return 0;
  snprintf(r->why, sizeof(r->why),
           "even an error answer to this request would exceed %zu bytes "
           "(max.response.bytes)",
           r->b->opts.max_response_size);
  return DC_ERR__INVALID_ARG; /* the connection closes; why says why */
}
