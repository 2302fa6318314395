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
mkdir -p "$OUT/corpus-verify-log"
"$CLANG" -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -iquote src/cli \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	tests/fuzz/fuzz-verify-log.c src/cli/verify-log.c \
	-o "$OUT/fuzz-verify-log"
fuzz_run "$OUT/fuzz-verify-log" 16384 "$OUT/corpus-verify-log" \
	tests/fuzz/corpus-verify-log
