# tests/unit/busy-est.mk - cmocka tests of kmuxd's busyness estimator
# (src/daemon/busy-est.c) on synthetic NVML sample streams.

UNIT_TESTS += test-busy-est
test-busy-est_SRCS = tests/unit/test-busy-est.c src/daemon/busy-est.c
test-busy-est_CFLAGS = -iquote src/daemon
test-busy-est_LIBS = -lcmocka -lm
