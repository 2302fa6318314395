# tests/unit/alloc-table.mk - cmocka tests of the tracker's allocation table.
#
# The module is compiled exactly as in libkmux.so (-fvisibility=hidden,
# -DKMUX_PRELOAD), into objects of its own so that no other fragment's
# pattern rules or flags apply to them.

UNIT_TESTS += test-alloc-table
test-alloc-table_SRCS = tests/unit/test-alloc-table.c \
	src/preload/alloc-table.c
test-alloc-table_CFLAGS = $(PRELOAD_CFLAGS)
test-alloc-table_LIBS = -lcmocka -lpthread
