/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one reader of key=value files: dynconfd's --config file, the Kafka
 * store's librdkafka properties (--store-config) and the CLI's
 * --command-config (Kafka client properties, as kafka-configs.sh reads).
 *
 *   KEY=VALUE        split at the first '='; spaces and tabs around the
 *                    key and around the value are dropped
 *   # or ! ...       a comment, when it is the first non-blank character
 *   (blank line)     skipped
 *
 * A CR before the newline is dropped. A line over DC_KVFILE_LINE_MAX bytes
 * is an error naming it, never cut. Lines may hold passwords, so the
 * reader wipes its buffer before freeing it. Any thread; no state.
 */
#ifndef DC_KVFILE_H
#define DC_KVFILE_H
#include <stddef.h>

#define DC_KVFILE_LINE_MAX 65536

/* Called for each setting in file order with the line's number. Returns 0
 * to go on, or -1 with a sentence in errstr (the reader puts "PATH:LINE: "
 * in front of it). key and value live until the callback returns. */
typedef int dc_kvfile_cb_t(void *opaque, const char *key, const char *value,
                           int lineno, char *errstr, size_t errstr_size);

/* Reads path, calling cb for each setting. 0, or -1 with errstr: "cannot
 * read PATH: REASON", or "PATH:LINE: " and what is wrong with that line
 * (no '=', an empty key, too long, or the callback's sentence). */
int dc_kvfile_read(const char *path, dc_kvfile_cb_t *cb, void *opaque,
                   char *errstr, size_t errstr_size);
#endif
