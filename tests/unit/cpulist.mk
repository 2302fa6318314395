# tests/unit/cpulist.mk - cmocka tests of the CPU list parser
# (src/common/cpulist.c, `kmux daemon --region-cpus`).

UNIT_TESTS += test-cpulist
test-cpulist_SRCS = tests/unit/test-cpulist.c src/common/cpulist.c
test-cpulist_LIBS = -lcmocka
