#!/usr/bin/env bash
# tests/fuzz/build-ptx.sh - build (and optionally run) the libFuzzer
# harness of libkmux's PTX analysis and fatbin walk, tests/fuzz/fuzz-ptx.c.
#
#   tests/fuzz/build-ptx.sh          build, replay the corpus once
#   tests/fuzz/build-ptx.sh -t 60    ... then fuzz for 60 seconds
#
# Output under $BUILD/fuzz (default build/fuzz): fuzz-ptx, the
# corpus it grows (corpus-ptx/, seeded from tests/fuzz/corpus-ptx)
# and reproducers (crash-*, ...: exit status 1).  Replay one with:
# build/fuzz/fuzz-ptx FILE
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/fuzz/fuzz-lib.sh
fuzz_init build-ptx.sh "$@"
fuzz_build ptx -iquote src/preload tests/fuzz/fuzz-ptx.c \
	src/preload/ptx-readonly.c src/preload/ptx-range.c src/preload/codec-dl.c \
	-ldl -lpthread
fuzz_run "$OUT/fuzz-ptx" 65536 "$OUT/corpus-ptx" tests/fuzz/corpus-ptx
