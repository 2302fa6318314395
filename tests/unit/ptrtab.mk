# tests/unit/ptrtab.mk - cmocka tests of the pointer-table bookkeeping
# (src/preload/ptrtab.c, pure), compiled as in libkmux.so.

UNIT_TESTS += test-ptrtab
test-ptrtab_SRCS = tests/unit/test-ptrtab.c src/preload/ptrtab.c
test-ptrtab_CFLAGS = $(PRELOAD_CFLAGS)
test-ptrtab_LIBS = -lcmocka -lpthread
