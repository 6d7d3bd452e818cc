/* SPDX-License-Identifier: BSD-2-Clause */
/* mock_cluster's control commands (see mock_control.c). */
#ifndef DC_MOCK_CONTROL_H
#define DC_MOCK_CONTROL_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <stdbool.h>
#include <stddef.h>

/* Runs one command line (modified in place) and writes the reply line
 * (without newline) into reply. Returns 1 when the command was quit. */
int mock_control_line(rd_kafka_mock_cluster_t *mc, char *line, char *reply,
                      size_t reply_size);
#endif
