/*
 * barrier-re.h - how KMUX_BARRIER_KERNELS is compiled.  The preload
 * compiles it once (streams.c streams_init) and runs the program
 * unscheduled when it does not compile; `kmux run` and `kmux verify`
 * compile it the same way before they start anything and refuse a bad one
 * (run-env.c).  One set of flags, so that the two cannot disagree about
 * what compiles.
 */
#ifndef KMUX_BARRIER_RE_H
#define KMUX_BARRIER_RE_H

#include <regex.h>

#define BARRIER_RE_FLAGS	(REG_EXTENDED | REG_NOSUB)

#endif
