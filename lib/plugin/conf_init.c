/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The plugin's entry point: librdkafka's plugin loader (the
 * plugin.library.paths property) dlopen()s libdynconf-plugin.so and calls
 * conf_init() on the conf the property is set on. conf_init() is the only
 * symbol the library exports (Makefile.am: -export-symbols-regex).
 */
#include "plugin/host.h"
#include "plugin/plugin_int.h"

#include <stdio.h>

__attribute__((visibility("default"))) rd_kafka_resp_err_t
conf_init(rd_kafka_conf_t *conf, void **plug_opaquep, char *errstr,
          size_t errstr_size);

rd_kafka_resp_err_t conf_init(rd_kafka_conf_t *conf, void **plug_opaquep,
                              char *errstr, size_t errstr_size) {
  *plug_opaquep = NULL; /* the state is per conf, held by the interceptors */
  /* Called by librdkafka's plugin loader: that librdkafka is the one the
   * plugin serves. */
  if (dc_plugin_host_bind(__builtin_return_address(0), errstr, errstr_size))
    return RD_KAFKA_RESP_ERR__FAIL;
  dc_plugin_t *st = dc_plugin_state_new(NULL);
  if (!st) {
    if (errstr_size)
      snprintf(errstr, errstr_size, "dynconf plugin: out of memory");
    return RD_KAFKA_RESP_ERR__FAIL;
  }
  rd_kafka_resp_err_t err = dc_plugin_register(conf, st, errstr, errstr_size);
  if (err == RD_KAFKA_RESP_ERR__CONFLICT) {
    /* rd_kafka_conf_dup() of a conf carrying the plugin calls our
     * on_conf_dup first, which registers the copy's interceptors, and
     * then copies plugin.library.paths, which loads the plugin into the
     * copy again: the copy has its state already. */
    dc_plugin_state_free(st);
    return RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  /* On another error what was added keeps st as its opaque;
   * on_conf_destroy, if it was added, frees it with the conf, so it is
   * leaked only otherwise. */
  return err;
}
