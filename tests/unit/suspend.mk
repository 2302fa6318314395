# tests/unit/suspend.mk - cmocka tests of the evict mode's load control
# rule (src/preload/suspend.c, a pure function), compiled as in libkmux.so.

UNIT_TESTS += test-suspend
test-suspend_SRCS = tests/unit/test-suspend.c src/preload/suspend.c
test-suspend_CFLAGS = $(PRELOAD_CFLAGS)
test-suspend_LIBS = -lcmocka
