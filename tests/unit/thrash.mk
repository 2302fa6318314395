# tests/unit/thrash.mk - cmocka tests of the evict mode's thrash detector
# (src/preload/thrash.c, a pure function), compiled as in libkmux.so.

UNIT_TESTS += test-thrash
test-thrash_SRCS = tests/unit/test-thrash.c src/preload/thrash.c
test-thrash_CFLAGS = $(PRELOAD_CFLAGS)
test-thrash_LIBS = -lcmocka
