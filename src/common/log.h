/*
 * log.h - diagnostics for kmux.
 *
 * Every message starts with "kmux: " and names the thing that failed.  The
 * preload library logs only when KMUX_LOG is set (it lives inside someone
 * else's process); the CLI and daemon always print errors.
 */
#ifndef KMUX_LOG_H
#define KMUX_LOG_H

#include "compiler.h"

enum kmux_log_level {
	KMUX_LOG_ERROR = 0,
	KMUX_LOG_WARN = 1,
	KMUX_LOG_INFO = 2,
	KMUX_LOG_DEBUG = 3,
};

/* Messages above this level are dropped.  -1 silences everything. */
extern int kmux_log_level;

void kmux_log(int level, const char *fmt, ...) KMUX_PRINTF(2, 3);

#define log_error(...) kmux_log(KMUX_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) kmux_log(KMUX_LOG_WARN, __VA_ARGS__)
#define log_info(...) kmux_log(KMUX_LOG_INFO, __VA_ARGS__)
#define log_debug(...) kmux_log(KMUX_LOG_DEBUG, __VA_ARGS__)
/*
 * Nothing failed, but the user must hear of it even where only errors are
 * printed (the preload's default): a process stopped to wait for a GPU.
 */
#define log_notice(...) kmux_log(KMUX_LOG_ERROR, __VA_ARGS__)

/* Parse "error", "warn", "info", "debug" or a digit; -1 on anything else. */
int kmux_log_parse_level(const char *s);

/*
 * An on-by-default switch read from the environment variable name (value
 * may be NULL): 0 only for "0".  A value other than "", "0" or "1" is
 * warned about ("NAME=VALUE: only 0 turns WHAT off; it stays on"), since
 * a typo must not silently change a default.
 */
int kmux_log_switch(const char *name, const char *value, const char *what);

/*
 * The same for a switch that is off by default: 1 when value is "1"; any
 * other value but unset, empty or "0" is warned about ("only 1 turns what
 * on") and leaves it off.
 */
int kmux_log_opt_in(const char *name, const char *value, const char *what);

#endif
