#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static dc_log_level_t min_level = DC_LOG_INFO;

void dc_log_set_level(dc_log_level_t level) { min_level = level; }

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
  fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s\n",
          tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
          tm.tm_sec, ts.tv_nsec / 1000000, lv, msg);
}
