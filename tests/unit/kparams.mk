# tests/unit/kparams.mk - cmocka tests of kernel parameter decoding.
#
# kparams looks pointers up in the real allocation table, so both modules
# are linked, compiled exactly as in libkmux.so into objects of their own.

UNIT_TESTS += test-kparams
test-kparams_SRCS = tests/unit/test-kparams.c src/preload/kparams.c \
	src/preload/alloc-table.c src/preload/ptx-range.c src/preload/ptrtab.c \
	src/preload/texobj.c src/common/log.c
test-kparams_CFLAGS = $(PRELOAD_CFLAGS)
test-kparams_LIBS = -lcmocka -lpthread
