# tests/unit/pace.mk - cmocka tests of the spread-or-in-line measurement
# (src/preload/pace.c, pure bookkeeping), compiled as in libkmux.so.

UNIT_TESTS += test-pace
test-pace_SRCS = tests/unit/test-pace.c src/preload/pace.c
test-pace_CFLAGS = $(PRELOAD_CFLAGS)
test-pace_LIBS = -lcmocka
