# tests/unit/demangle.mk - display names of C++ kernels.

UNIT_TESTS += test-demangle
test-demangle_SRCS = tests/unit/test-demangle.c src/cli/demangle.c
test-demangle_LIBS = -lcmocka -ldl -lpthread
