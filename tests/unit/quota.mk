# tests/unit/quota.mk - cmocka tests of the memory quota's accounting
# (quota.c: parsing, reserve / give back, cuMemGetInfo clamping, the VMM
# handle map).  quota_charged reads the real allocation table, so that
# module is linked too, compiled exactly as in libkmux.so.

UNIT_TESTS += test-quota
test-quota_SRCS = tests/unit/test-quota.c src/preload/quota.c \
	src/preload/alloc-table.c src/common/log.c
test-quota_CFLAGS = $(PRELOAD_CFLAGS)
test-quota_LIBS = -lcmocka -lpthread
