#!/usr/bin/env bash
# tests/fuzz/build-verify-log.sh - build (and optionally run) the libFuzzer
# harness of `kmux verify`'s log reader, tests/fuzz/fuzz-verify-log.c.
#
#   tests/fuzz/build-verify-log.sh          build, replay the corpus once
#   tests/fuzz/build-verify-log.sh -t 60    ... then fuzz for 60 seconds
#
# Output under $BUILD/fuzz (default build/fuzz): fuzz-verify-log, the corpus
# it grows (corpus-verify-log/, seeded from tests/fuzz/corpus-verify-log)
# and reproducers (crash-*, ...: exit status 1).  Replay one with:
# build/fuzz/fuzz-verify-log FILE
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/fuzz/fuzz-lib.sh
fuzz_init build-verify-log.sh "$@"
fuzz_build verify-log -iquote src/cli tests/fuzz/fuzz-verify-log.c \
	src/cli/verify-log.c
fuzz_run "$OUT/fuzz-verify-log" 16384 "$OUT/corpus-verify-log" \
	tests/fuzz/corpus-verify-log
