/*
 * ptx-fixture.h - reading the committed nvcc output (tests/unit/ptx/) into
 * memory, for the PTX unit tests (test-ptx-readonly, test-ptx-range).
 * Include after cmocka.h.
 */
#ifndef KMUX_TEST_PTX_FIXTURE_H
#define KMUX_TEST_PTX_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

/* The whole file, NUL-terminated (at most 1 MiB); *n: its length. */
static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b;

	assert_non_null(f);
	b = malloc(1 << 20);
	assert_non_null(b);
	*n = fread(b, 1, (1 << 20) - 1, f);
	b[*n] = '\0';
	fclose(f);
	return b;
}

#endif
