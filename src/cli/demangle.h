/*
 * demangle.h - C++ kernel names for people.
 *
 * The driver reports kernels by their mangled names
 * (_ZN2at6native29vectorized_elementwise_kernel...).  Traces and summaries
 * show the demangled form; the C++ runtime's __cxa_demangle does the work,
 * found with dlopen so that kmux does not link libstdc++.
 */
#ifndef KMUX_DEMANGLE_H
#define KMUX_DEMANGLE_H

/*
 * A malloc'ed display name for name: demangled when it is a mangled C++
 * name and the C++ runtime is available, else a copy.  NULL on out of memory.
 */
char *demangle_dup(const char *name);

#endif
