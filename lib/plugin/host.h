/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The librdkafka the plugin runs in. The plugin links no librdkafka: a
 * binding may bring its own private copy (confluent-kafka's wheels load
 * theirs under another file name, invisible to other libraries), and a
 * plugin linked to the system's would hand that copy's objects to a
 * different librdkafka. host.c defines, privately, the rd_kafka_*
 * functions the plugin and the agent linked into it call, each calling
 * the same function of the librdkafka that loaded the plugin.
 */
#ifndef DC_PLUGIN_HOST_H
#define DC_PLUGIN_HOST_H
#include <stddef.h>

/* Binds the plugin to the librdkafka whose code is at caller (conf_init's
 * return address: its plugin loader). The first call binds; a later one
 * from the same library is a no-op, and one from another librdkafka in
 * the same process is refused. 0, or -1 with errstr. */
int dc_plugin_host_bind(const void *caller, char *errstr, size_t errstr_size);
#endif
