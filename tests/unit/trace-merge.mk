# tests/unit/trace-merge.mk - cmocka tests of `kmux trace`'s two halves:
# the CLI's line parser / merge / summary (src/cli/trace-merge.c) from
# fixture files, and the preload's recorder (src/preload/trace.c, built
# exactly as in libkmux.so) writing real per-process files in child
# processes, against a fake driver table, which the merge then reads back.

UNIT_TESTS += test-trace-merge
test-trace-merge_GROUPS = cli preload
test-trace-merge_cli_SRCS = tests/unit/test-trace-merge.c \
	src/cli/trace-merge.c src/cli/demangle.c
test-trace-merge_preload_SRCS = src/preload/trace.c src/common/log.c
test-trace-merge_preload_CFLAGS = $(PRELOAD_CFLAGS)
test-trace-merge_LIBS = -lcmocka -lcjson -lpthread
