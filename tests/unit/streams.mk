# tests/unit/streams.mk - cmocka tests of the stream scheduler's driver-side
# helpers that need no driver: KMUX_STREAMS parsing against
# CUDA_DEVICE_MAX_CONNECTIONS (streams-env.c) and the placeholder rename of
# stream-ordered allocations (sched_rename, sched-map.c).  Compiled exactly
# as in libkmux.so, into objects of their own.

UNIT_TESTS += test-streams
test-streams_SRCS = tests/unit/test-streams.c src/preload/streams-env.c \
	src/preload/sched.c src/preload/sched-map.c src/preload/sched-sync.c
test-streams_CFLAGS = $(PRELOAD_CFLAGS)
test-streams_LIBS = -lcmocka
