/*
 * log.c - the one place kmux writes diagnostics.
 *
 * A single write(2) per message so that lines from several threads or
 * processes sharing a terminal do not interleave mid-line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

int kmux_log_level = KMUX_LOG_ERROR;

void kmux_log(int level, const char *fmt, ...)
{
	char buf[1024];
	int saved = errno;
	int n;
	va_list ap;

	if (level > kmux_log_level)
		return;
	n = snprintf(buf, sizeof(buf), "kmux: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	if (n > 0 && buf[n - 1] != '\n')
		buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* Nowhere left to report to. */
	}
	errno = saved;
}

int kmux_log_parse_level(const char *s)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };

	if (!s || !*s)
		return -1;
	if (s[0] >= '0' && s[0] <= '3' && s[1] == '\0')
		return s[0] - '0';
	for (unsigned i = 0; i < KMUX_ARRAY_SIZE(names); i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

/* A switch's value other than unset, "", "0" or "1": a typo, warned about. */
static int log_switch_odd(const char *value)
{
	return value && *value && strcmp(value, "0") != 0 &&
	       strcmp(value, "1") != 0;
}

int kmux_log_switch(const char *name, const char *value, const char *what)
{
	if (log_switch_odd(value))
		log_warn("%s=%s: only 0 turns %s off; it stays on", name, value,
			 what);
	return !(value && strcmp(value, "0") == 0);
}

int kmux_log_opt_in(const char *name, const char *value, const char *what)
{
	if (log_switch_odd(value))
		log_warn("%s=%s: only 1 turns %s on; it stays off", name, value,
			 what);
	return value && strcmp(value, "1") == 0;
}
