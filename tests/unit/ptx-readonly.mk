# tests/unit/ptx-readonly.mk - cmocka tests of the PTX read-only analysis
# and the fatbin walk (src/preload/ptx-readonly.c), on hand-written PTX and
# on nvcc output committed under tests/unit/ptx/.

UNIT_TESTS += test-ptx-readonly
test-ptx-readonly_SRCS = tests/unit/test-ptx-readonly.c \
	src/preload/ptx-readonly.c src/preload/ptx-range.c src/preload/codec-dl.c
test-ptx-readonly_CFLAGS = $(PRELOAD_CFLAGS)
test-ptx-readonly_LIBS = -lcmocka
