/* SPDX-License-Identifier: BSD-2-Clause */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static dc_log_level_t min_level = DC_LOG_INFO;
static dc_log_format_t format = DC_LOG_TEXT;

void dc_log_set_level(dc_log_level_t level) { min_level = level; }
void dc_log_set_format(dc_log_format_t f) { format = f; }

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
               : s[0] >= 0xe0               ? 3
               : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
                                              : 0;
  if (len == 0 || len > n)
    return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
      (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
    return 0; /* over-long, a surrogate, or past U+10FFFF */
  return len;
}

/* msg as the inside of a JSON string into out (size bytes, NUL-ended):
 * quotes, backslashes and control characters escaped, bytes that are not
 * UTF-8 written as U+FFFD. Stops, whole, before it would not fit. */
size_t dc_log_json_escape(const char *msg, char *out, size_t size) {
  const unsigned char *s = (const unsigned char *)msg;
  size_t o = 0, n = strlen(msg);
  for (size_t i = 0; i < n;) {
    char esc[8];
    size_t len = 1, u = s[i] < 0x80 ? 1 : utf8_len(s + i, n - i);
    const char *w = esc;
    if (s[i] == '"' || s[i] == '\\')
      snprintf(esc, sizeof(esc), "\\%c", s[i]);
    else if (s[i] == '\n')
      w = "\\n";
    else if (s[i] < 0x20)
      snprintf(esc, sizeof(esc), "\\u%04x", s[i]);
    else if (u == 0)
      w = "\\ufffd";
    else
      w = NULL, len = u;
    size_t wl = w ? strlen(w) : len;
    if (o + wl + 1 > size)
      break;
    memcpy(out + o, w ? w : (const char *)s + i, wl);
    o += wl;
    i += len;
  }
  out[o] = '\0';
  return o;
}

void dc_log(dc_log_level_t level, const char *fmt, ...) {
  if (level > min_level)
    return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  const char *lv = level <= DC_LOG_ERR    ? "ERROR"
                   : level <= DC_LOG_WARN ? "WARN"
                   : level <= DC_LOG_INFO ? "INFO"
                                          : "DEBUG";
  char when[96];
  snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
           tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
  if (format == DC_LOG_JSON) {
    char esc[6 * sizeof(msg)];
    dc_log_json_escape(msg, esc, sizeof(esc));
    fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"%s\"}\n", when,
            lv, esc);
  } else {
    fprintf(stderr, "%s %s %s\n", when, lv, msg);
  }
}
