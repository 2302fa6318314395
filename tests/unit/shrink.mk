# tests/unit/shrink.mk - cmocka tests of the evict mode's budget-shrinking
# rule (src/preload/shrink.c, a pure function), compiled as in libkmux.so.

UNIT_TESTS += test-shrink
test-shrink_SRCS = tests/unit/test-shrink.c src/preload/shrink.c
test-shrink_CFLAGS = $(PRELOAD_CFLAGS)
test-shrink_LIBS = -lcmocka
