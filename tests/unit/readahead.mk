# tests/unit/readahead.mk - cmocka tests of the read-ahead table
# (src/preload/readahead.c, pure bookkeeping), compiled as in libkmux.so.

UNIT_TESTS += test-readahead
test-readahead_SRCS = tests/unit/test-readahead.c src/preload/readahead.c
test-readahead_CFLAGS = $(PRELOAD_CFLAGS)
test-readahead_LIBS = -lcmocka
