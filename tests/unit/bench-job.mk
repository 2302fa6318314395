# tests/unit/bench-job.mk - cmocka tests of `kmux bench`'s job parsing
# (src/cli/bench-job.c: the command line splitter, the request decoder, the
# record), compiled as the CLI compiles it.

UNIT_TESTS += test-bench-job
test-bench-job_SRCS = tests/unit/test-bench-job.c src/cli/bench-job.c
test-bench-job_CFLAGS = -iquote src/cli
test-bench-job_LIBS = -lcmocka -lcjson
