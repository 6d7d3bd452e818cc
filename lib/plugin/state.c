/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-conf state of the plugin: the dynconf.* properties an
 * application sets like any librdkafka property, and the conf's copies
 * and end (on_conf_set, on_conf_dup, on_conf_destroy), and the
 * interceptors that follow them on a conf.
 */
#include "plugin/plugin_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DC_PLUGIN_PREFIX "dynconf."

dc_plugin_t *dc_plugin_state_new(const dc_plugin_t *from) {
  dc_plugin_t *st = calloc(1, sizeof(*st));
  if (!st)
    return NULL;
  st->dconf = from ? dynconf_conf_dup(from->dconf) : dynconf_conf_new();
  if (!st->dconf) {
    free(st);
    return NULL;
  }
  st->log_level = from ? from->log_level : 6;
  snprintf(st->name, sizeof(st->name), "%s", from ? from->name : "dynconf");
  return st;
}

void dc_plugin_state_free(dc_plugin_t *st) {
  if (!st)
    return;
  dynconf_destroy(st->dc);
  dynconf_conf_destroy(st->dconf);
  free(st);
}

/* Every dynconf.* property is the plugin's: checked by the agent's own
 * property table and kept here, so librdkafka neither stores it nor
 * calls it unknown. The rest is librdkafka's. */
rd_kafka_conf_res_t dc_plugin_on_conf_set(rd_kafka_conf_t *conf,
                                          const char *name, const char *val,
                                          char *errstr, size_t errstr_size,
                                          void *ic_opaque) {
  (void)conf;
  dc_plugin_t *st = ic_opaque;
  if (strncmp(name, DC_PLUGIN_PREFIX, strlen(DC_PLUGIN_PREFIX)))
    return RD_KAFKA_CONF_UNKNOWN;
  /* librdkafka hands an empty value over as NULL. */
  switch (dynconf_conf_set(st->dconf, name, val ? val : "", errstr,
                           errstr_size)) {
  case DYNCONF_CONF_OK:
    return RD_KAFKA_CONF_OK;
  case DYNCONF_CONF_INVALID:
    return RD_KAFKA_CONF_INVALID;
  default:
    /* Not one of the agent's properties: librdkafka says so. */
    return RD_KAFKA_CONF_UNKNOWN;
  }
}

rd_kafka_resp_err_t dc_plugin_register(rd_kafka_conf_t *conf, dc_plugin_t *st,
                                       char *errstr, size_t errstr_size) {
  /* on_conf_set first: when it conflicts, nothing has been added. */
  rd_kafka_resp_err_t err = rd_kafka_conf_interceptor_add_on_conf_set(
      conf, DC_PLUGIN_IC_NAME, dc_plugin_on_conf_set, st);
  if (err == RD_KAFKA_RESP_ERR__CONFLICT)
    return err;
  if (!err)
    err = rd_kafka_conf_interceptor_add_on_conf_dup(
        conf, DC_PLUGIN_IC_NAME, dc_plugin_on_conf_dup, st);
  if (!err)
    err = rd_kafka_conf_interceptor_add_on_conf_destroy(
        conf, DC_PLUGIN_IC_NAME, dc_plugin_on_conf_destroy, st);
  if (!err)
    err = rd_kafka_conf_interceptor_add_on_new(conf, DC_PLUGIN_IC_NAME,
                                               dc_plugin_on_new, st);
  if (err && errstr_size)
    snprintf(errstr, errstr_size, "dynconf plugin: adding an interceptor: %s",
             rd_kafka_err2str(err));
  return err;
}

/* A copy of the conf gets a copy of the state, with the interceptors
 * registered on it (librdkafka copies no interceptor by itself). It then
 * replays the dynconf.* properties claimed on the old conf through
 * on_conf_set, which sets the same values again. */
rd_kafka_resp_err_t dc_plugin_on_conf_dup(rd_kafka_conf_t *new_conf,
                                          const rd_kafka_conf_t *old_conf,
                                          size_t filter_cnt,
                                          const char **filter,
                                          void *ic_opaque) {
  (void)old_conf;
  (void)filter_cnt;
  (void)filter;
  dc_plugin_t *st = dc_plugin_state_new(ic_opaque);
  if (!st)
    return RD_KAFKA_RESP_ERR__FAIL;
  char errstr[256];
  rd_kafka_resp_err_t err =
      dc_plugin_register(new_conf, st, errstr, sizeof(errstr));
  if (err == RD_KAFKA_RESP_ERR__CONFLICT) {
    dc_plugin_state_free(st); /* the copy has a state already */
    return RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  return err;
}

rd_kafka_resp_err_t dc_plugin_on_conf_destroy(void *ic_opaque) {
  dc_plugin_state_free(ic_opaque);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}
