/* log.h — one line per event on stderr, with a UTC timestamp and a level.
 * stdout is kept for machine-read lines (the bound port, headless results). */
#ifndef CROWD_SERVER_LOG_H
#define CROWD_SERVER_LOG_H

typedef enum log_level {
	LOG_DEBUG = 0,
	LOG_INFO = 1,
	LOG_WARN = 2,
	LOG_ERROR = 3,
	LOG_OFF = 4,
} log_level;

/** Messages below this level are dropped. Default LOG_INFO. */
void log_set_level(log_level level);
log_level log_get_level(void);

/** Parse "debug", "info", "warn", "error" or "off"; returns -1 if unknown. */
int log_level_parse(const char *name);
const char *log_level_name(log_level level);

/** Write one line: "2026-01-01T12:00:00.000Z INFO  message". */
void log_write(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_write(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_write(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_write(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)

#endif
