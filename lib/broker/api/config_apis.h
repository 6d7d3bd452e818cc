/* SPDX-License-Identifier: BSD-2-Clause */
/* What DescribeConfigs (config_describe.c) and AlterConfigs and
 * IncrementalAlterConfigs (config_alter.c) share: the sentence for a
 * resource type not served, and the bounds of a request and its answer. */
#ifndef DC_CONFIG_APIS_H
#define DC_CONFIG_APIS_H
#include "broker/core/broker_int.h"

#include <stddef.h>
#include <stdint.h>

const char *dc_cfg_type_error(int8_t type);

/* An upper bound on the bytes of an error result for a resource named
 * name: the fixed fields, the name, and a message (every message these
 * handlers write is under 1 KiB). */
size_t dc_cfg_error_result_bound(const char *name);

/* The sentence every resource of an over-long request gets, or NULL when
 * the request is within bounds. */
const char *dc_cfg_too_many_resources(dc_req_t *r, int32_t n);

/* Closes the connection when even an all-errors answer to the request's
 * resources could not fit in max_response_size. */
int dc_cfg_answer_fits(dc_req_t *r, size_t reserve);
#endif
