# tests/unit/ptx-table.mk - cmocka tests of the per-image read-only verdicts
# (src/preload/ptx-table.c) against a fake driver.

UNIT_TESTS += test-ptx-table
test-ptx-table_SRCS = tests/unit/test-ptx-table.c src/preload/ptx-table.c \
	src/preload/ptx-readonly.c src/preload/ptx-range.c src/preload/codec-dl.c \
	src/common/log.c
test-ptx-table_CFLAGS = $(PRELOAD_CFLAGS)
test-ptx-table_LIBS = -lcmocka -lpthread -ldl
