/* SPDX-License-Identifier: BSD-2-Clause */
/* Logging to stderr with a timestamp and level, for the daemon and tools:
 * text lines, or one JSON object a line for log shippers. Thread-safe
 * (one fprintf per line). */
#ifndef DC_LOG_H
#define DC_LOG_H
#include <stddef.h>

typedef enum { DC_LOG_DEBUG = 7, DC_LOG_INFO = 6, DC_LOG_WARN = 4, DC_LOG_ERR = 3 } dc_log_level_t;
typedef enum {
  DC_LOG_TEXT, /* 2026-01-02T03:04:05.678Z INFO message */
  DC_LOG_JSON, /* {"ts":"2026-...Z","level":"INFO","msg":"message"} */
} dc_log_format_t;
/* Lines below this level are dropped; default DC_LOG_INFO. */
void dc_log_set_level(dc_log_level_t level);
/* Default DC_LOG_TEXT. Set before any thread logs. */
void dc_log_set_format(dc_log_format_t format);
void dc_log(dc_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* msg as the inside of a JSON string (quotes, backslashes, control
 * characters escaped; bytes that are not UTF-8 as U+FFFD) into out, NUL
 * ended, stopping whole before it would not fit in size. Its length. */
size_t dc_log_json_escape(const char *msg, char *out, size_t size);
#endif
