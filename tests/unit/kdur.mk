# tests/unit/kdur.mk - cmocka tests of the learned kernel durations
# (src/preload/kdur.c, pure bookkeeping), compiled as in libkmux.so.

UNIT_TESTS += test-kdur
test-kdur_SRCS = tests/unit/test-kdur.c src/preload/kdur.c
test-kdur_CFLAGS = $(PRELOAD_CFLAGS)
test-kdur_LIBS = -lcmocka
