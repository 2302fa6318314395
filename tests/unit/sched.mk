# tests/unit/sched.mk - cmocka tests of the stream scheduler's decisions.
#
# The scheduler is pure logic (no driver, no allocation table): its own
# sources are compiled exactly as in libkmux.so (-fvisibility=hidden,
# -DKMUX_PRELOAD) into objects of their own, so no other fragment's pattern
# rules or flags apply to them.

UNIT_TESTS += test-sched
test-sched_SRCS = tests/unit/test-sched.c src/preload/sched.c \
	src/preload/sched-map.c src/preload/sched-sync.c
test-sched_CFLAGS = $(PRELOAD_CFLAGS)
test-sched_LIBS = -lcmocka
