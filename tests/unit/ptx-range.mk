# tests/unit/ptx-range.mk - cmocka tests of the ranges of pointer parameters
# by launch geometry (src/preload/ptx-range.c), on hand-written PTX and on
# nvcc output committed under tests/unit/ptx/.

UNIT_TESTS += test-ptx-range
test-ptx-range_SRCS = tests/unit/test-ptx-range.c src/preload/ptx-readonly.c \
	src/preload/ptx-range.c src/preload/codec-dl.c
test-ptx-range_CFLAGS = $(PRELOAD_CFLAGS)
test-ptx-range_LIBS = -lcmocka
