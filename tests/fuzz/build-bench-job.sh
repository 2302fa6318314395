#!/usr/bin/env bash
# tests/fuzz/build-bench-job.sh - build (and optionally run) the libFuzzer
# harness of `kmux bench`'s job parsers, tests/fuzz/fuzz-bench-job.c.
#
#   tests/fuzz/build-bench-job.sh          build, replay the corpus once
#   tests/fuzz/build-bench-job.sh -t 60    ... then fuzz for 60 seconds
#
# Output under $BUILD/fuzz (default build/fuzz): fuzz-bench-job, the
# corpus it grows (corpus-bench-job/, seeded from tests/fuzz/corpus-bench-job)
# and reproducers (crash-*, ...: exit status 1).  Replay one with:
# build/fuzz/fuzz-bench-job FILE
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/fuzz/fuzz-lib.sh
fuzz_init build-bench-job.sh "$@"
fuzz_build bench-job -iquote src/cli tests/fuzz/fuzz-bench-job.c \
	src/cli/bench-job.c -lcjson
fuzz_run "$OUT/fuzz-bench-job" 70000 "$OUT/corpus-bench-job" \
	tests/fuzz/corpus-bench-job
