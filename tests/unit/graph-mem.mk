# tests/unit/graph-mem.mk - cmocka tests of the books of graph memory
# (graph-mem.c): what a launch reserves, what stays live, what a free or
# an auto-free gives back.

UNIT_TESTS += test-graph-mem
test-graph-mem_SRCS = tests/unit/test-graph-mem.c src/preload/graph-mem.c
test-graph-mem_CFLAGS = $(PRELOAD_CFLAGS)
test-graph-mem_LIBS = -lcmocka -lpthread
