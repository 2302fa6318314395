/*
 * ptx-table.h - KMUX_PTX_READONLY=1: kernel parameters proven read-only
 * from the PTX of the images the program loads (see ptx-table.c).
 */
#ifndef KMUX_PTX_TABLE_H
#define KMUX_PTX_TABLE_H

#include <stdint.h>

/* Non-zero when KMUX_PTX_READONLY is set (and not "0"). */
extern int ptxtab_on;

/* From the constructor; value is KMUX_PTX_READONLY.  Returns 0. */
int ptxtab_init(const char *value);

/* A module image as cuModuleLoadData* / cuLibraryLoadData got it. */
void ptxtab_scan(const void *image);

/*
 * Bit i: parameter i of the kernel with this name and driver layout is
 * proven read-only.  0 when unknown, off, or the layout differs.
 */
uint64_t ptxtab_readonly(const char *name, int nparams, const uint32_t *size);

/* KMUX_LOG=info counters, at exit. */
void ptxtab_report(void);

#endif
