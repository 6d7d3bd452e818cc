/* SPDX-License-Identifier: BSD-2-Clause */
/* scale's connection to dynconfd, which every command opens the same way
 * (scale.h). */
#include "codec/proto.h"
#include "scale.h"

#include <stdio.h>

int scale_enc_describe(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_configs_req_encode(b, v, req);
}

dc_kclient_t *scale_connect(const cfg_t *c, int16_t *iac_version) {
  char err[512] = "";
  dc_kclient_t *kc = dc_kclient_new("dynconf-scale");
  if (!kc) {
    fprintf(stderr, "scale: out of memory\n");
    return NULL;
  }
  if (dc_kclient_connect(kc, c->target, 5000, err, sizeof(err)) ||
      dc_kclient_api_versions(kc, 5000, err, sizeof(err))) {
    fprintf(stderr, "scale: %s\n", err);
    dc_kclient_destroy(kc);
    return NULL;
  }
  *iac_version = dc_kclient_pick_version(kc, DC_API_INCREMENTAL_ALTER_CONFIGS);
  if (*iac_version < 0) {
    fprintf(stderr, "scale: %s does not serve IncrementalAlterConfigs\n",
            c->target);
    dc_kclient_destroy(kc);
    return NULL;
  }
  return kc;
}
