/*
 * compiler.h - attribute and branch-hint macros shared by every part of kmux.
 *
 * Kept tiny on purpose: the preload library includes it into code that runs
 * inside other people's processes, so nothing here may pull in more than libc.
 */
#ifndef KMUX_COMPILER_H
#define KMUX_COMPILER_H

#define KMUX_EXPORT __attribute__((visibility("default")))
#define KMUX_HIDDEN __attribute__((visibility("hidden")))
#define KMUX_UNUSED __attribute__((unused))
#define KMUX_PRINTF(a, b) __attribute__((format(printf, a, b)))

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define KMUX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
