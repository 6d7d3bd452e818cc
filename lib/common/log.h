/* Logging to stderr with a timestamp and level, for the daemon and tools.
 * Thread-safe (one fprintf per line). */
#ifndef DC_LOG_H
#define DC_LOG_H
typedef enum { DC_LOG_DEBUG = 7, DC_LOG_INFO = 6, DC_LOG_WARN = 4, DC_LOG_ERR = 3 } dc_log_level_t;
/* Lines below this level are dropped; default DC_LOG_INFO. */
void dc_log_set_level(dc_log_level_t level);
void dc_log(dc_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#endif
