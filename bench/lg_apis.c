/* SPDX-License-Identifier: BSD-2-Clause */
/* loadgen's kinds of request: each one's API, names, request body and
 * the check of its answer. */
#include "lg_run.h"

#include "codec/proto.h"

static const struct {
  int16_t key;
  const char *arg, *title;
} apis[] = {
    [API_DESCRIBE] = {DC_API_DESCRIBE_CONFIGS, "describe",
                      "DescribeConfigs CLIENT"},
    [API_METADATA] = {DC_API_METADATA, "metadata", "Metadata"},
    [API_WATCH] = {DC_API_WATCH, "watch", "Watch, no version known"},
    [API_ALTER] = {DC_API_INCREMENTAL_ALTER_CONFIGS, "alter",
                   "IncrementalAlterConfigs CLIENT, validate-only"},
};

int16_t lg_api_key(int api) { return apis[api].key; }
const char *lg_api_arg(int api) { return apis[api].arg; }
const char *lg_api_title(int api) { return apis[api].title; }

int lg_api_encode(const cfg_t *c, dc_buf_t *b) {
  char *client = (char *)c->client_name;
  switch (c->api) {
  case API_DESCRIBE: {
    dc_describe_configs_req_resource_t res = {
        .resource_type = DC_RES_CLIENT, .resource_name = client,
        .n_configuration_keys = -1};
    dc_describe_configs_req_t req = {
        .n_resources = 1, .resources = &res, .include_synonyms = true};
    return dc_describe_configs_req_encode(b, c->version, &req);
  }
  case API_WATCH: {
    dc_watch_req_t req = {.client_id = client, .timeout_ms = 1000};
    return dc_watch_req_encode(b, c->version, &req);
  }
  case API_ALTER: {
    dc_alter_config_t cfg = {(char *)"session.timeout.ms", DC_OP_SET,
                             (char *)"30000"};
    dc_alter_resource_t res = {DC_RES_CLIENT, client, 1, &cfg};
    dc_alter_configs_req_t req = {1, &res, true};
    return dc_incremental_alter_configs_req_encode(b, c->version, &req);
  }
  default: {
    dc_metadata_req_t req = {.n_topics = 0};
    return dc_metadata_req_encode(b, c->version, &req);
  }
  }
}

bool lg_api_answer_ok(const cfg_t *c, dc_rd_t *rd) {
  switch (c->api) {
  case API_DESCRIBE: {
    dc_describe_configs_resp_t resp;
    if (dc_describe_configs_resp_decode(rd, c->version, &resp) ||
        resp.n_results != 1)
      return false;
    return resp.results[0].error_code == 0;
  }
  case API_WATCH: {
    dc_watch_resp_t resp;
    return !dc_watch_resp_decode(rd, c->version, &resp) &&
           resp.error_code == 0 && resp.changed;
  }
  case API_ALTER: {
    dc_alter_configs_resp_t resp;
    return !dc_incremental_alter_configs_resp_decode(rd, c->version, &resp) &&
           resp.n_responses == 1 && resp.responses[0].error_code == 0;
  }
  default: {
    dc_metadata_resp_t resp;
    return !dc_metadata_resp_decode(rd, c->version, &resp) &&
           resp.n_brokers >= 1;
  }
  }
}
