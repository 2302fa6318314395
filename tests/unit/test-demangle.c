/*
 * test-demangle.c - kernel names for people: mangled C++ names come out
 * demangled, everything else unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cli/demangle.h"

static void expect_name(const char *in, const char *want)
{
	char *out = demangle_dup(in);

	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void test_demangle(void **state)
{
	(void)state;
	expect_name("_Z3fooi", "foo(int)");
	expect_name("_ZN2at6native4zeroEv", "at::native::zero()");
	expect_name("vec_add", "vec_add");		/* extern "C" */
	expect_name("_Znot_a_name!", "_Znot_a_name!");	/* not valid: as is */
	expect_name("", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
