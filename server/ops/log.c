/* log.c — leveled, line-at-a-time logging to stderr (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static log_level current_level = LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};
static const char *const level_tags[] = {"DEBUG", "INFO ", "WARN ", "ERROR", "OFF  "};

void log_set_level(log_level level) {
	current_level = level;
}

log_level log_get_level(void) {
	return current_level;
}

int log_level_parse(const char *name) {
	for (int i = 0; i <= LOG_OFF; i++)
		if (strcasecmp(name, level_names[i]) == 0) return i;
	if (strcasecmp(name, "warning") == 0) return LOG_WARN;
	return -1;
}

const char *log_level_name(log_level level) {
	return (level >= LOG_DEBUG && level <= LOG_OFF) ? level_names[level] : "?";
}

void log_write(log_level level, const char *fmt, ...) {
	if (level < current_level || level >= LOG_OFF) return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char line[1024];
	int n =
	    snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ", tm.tm_year + 1900, tm.tm_mon + 1,
	             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L, level_tags[level]);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	/* One fputs of a whole line so concurrent writers do not interleave mid-line. */
	size_t len = strlen(line);
	if (len + 1 < sizeof line) {
		line[len] = '\n';
		line[len + 1] = '\0';
	} else {
		line[sizeof line - 2] = '\n';
	}
	fputs(line, stderr);
}
