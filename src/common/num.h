/*
 * num.h - the one grammar for the integers kmux's command lines take
 * (--gpus, --prio, --streams, -j, --workers): decimal digits, with a
 * leading '-' only where the range has negative numbers.  No blanks, no
 * '+', no hexadecimal or octal: strtol(3) takes " 1", "+1" and (with base
 * 0) "0x1", and a typo must not become a number.  libc only.
 */
#ifndef KMUX_NUM_H
#define KMUX_NUM_H

/*
 * Parse s into *out.  0; -EINVAL outside the grammar (NULL, empty, " 1",
 * "+1", "1x", "-1" when lo >= 0); -ERANGE outside [lo, hi].  *out is
 * written only on success.
 */
int num_parse(const char *s, long lo, long hi, long *out);

/*
 * A decimal number of seconds (--delay): digits, optionally '.' and
 * digits; nothing else (no blanks, sign, exponent, hexadecimal, "inf").
 * 0, -EINVAL, or -ERANGE outside [lo, hi].
 */
int num_parse_seconds(const char *s, double lo, double hi, double *out);

#endif
