/*
 * size.h - parsing and printing of memory sizes ("512M", "1.5GiB", "8192").
 *
 * Owns the one grammar every kmux interface accepts for a size (`--mem`,
 * configuration, test knobs), so that `kmux run --mem` and the daemon agree
 * on what "12G" means.  libc only: the CLI, the daemon and the preload may
 * all link it.
 *
 * Grammar (the unit suffix is case-insensitive):
 *
 *	size   := digits [ "." digits ] [ " " ] unit
 *	unit   := "" | "B" | prefix [ "B" | "iB" ]
 *	prefix := "K" | "M" | "G" | "T"
 *
 * Every prefix is a power of 1024 whatever its spelling ("1KB" == "1KiB" ==
 * "1k" == 1024 bytes): GPU memory is sized in binary units and a user typing
 * "16GB" for a 16 GiB card means the card.  A fraction needs a prefix
 * ("1.5G" is fine, "1.5" and "1.5B" are not: there is no half byte) and the
 * result is rounded down to a whole byte.  No sign, no leading or trailing
 * blanks, no exponent; at most one blank between the number and a unit, so
 * that what size_format() prints parses back.
 */
#ifndef KMUX_SIZE_H
#define KMUX_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* Room for any size_format() result ("1023.99 EiB" and its NUL). */
#define SIZE_FORMAT_MAX 16

/*
 * Parse s into *out (bytes).  0, or -EINVAL on anything outside the grammar
 * (empty, "12Q", "-1G", "1.5", "G") and -ERANGE when the value does not fit
 * in 64 bits.  *out is written only on success.
 */
int size_parse(const char *s, uint64_t *out);

/*
 * Print v for people: "512 B", "1.50 KiB", "12.00 GiB", with the largest
 * binary unit that keeps the number below 1024 after rounding to two
 * decimals.  0, or -ENOSPC when buf is too small (buf then holds a
 * truncated, NUL-terminated string if len > 0).  SIZE_FORMAT_MAX is enough.
 */
int size_format(uint64_t v, char *buf, size_t len);

#endif
