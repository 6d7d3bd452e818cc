/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writes CONFIGURATION.md from the agent's property table (as librdkafka
 * generates its own), so the document cannot drift from the code:
 * `make configuration` rewrites it, tests/packaging/test_configuration.sh checks it.
 */
#include <dynconf.h>

#include <stdio.h>

int main(void) {
  printf("# libdynconf configuration properties\n\n"
         "Generated from the agent's property table by `make configuration`"
         " (tools/gen_configuration.c);\ndo not edit by hand. Set them on "
         "a `dynconf_conf_t` with `dynconf_conf_set()`. The\n"
         "`dynconf.`-prefixed security properties override the "
         "application's own (from its\n`rd_kafka_conf_t`) for the agent's "
         "connection to the config server.\n\n");
  dynconf_conf_properties_show(stdout);
  return ferror(stdout) ? 1 : 0;
}
