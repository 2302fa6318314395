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

secs=0
while getopts "t:" opt; do
	case $opt in
	t) secs=$OPTARG ;;
	*) echo "usage: $0 [-t SECONDS]" >&2; exit 2 ;;
	esac
done
CLANG=${CLANG:-clang}
OUT=${BUILD:-build}/fuzz
if ! command -v "$CLANG" >/dev/null; then
	echo "build-ptx.sh: $CLANG not found (Debian: apt-get install clang)" >&2
	exit 1
fi
mkdir -p "$OUT/corpus-ptx"
"$CLANG" -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -iquote src/preload \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	tests/fuzz/fuzz-ptx.c src/preload/ptx-readonly.c src/preload/codec-dl.c \
	-ldl -lpthread \
	-o "$OUT/fuzz-ptx"
args=(-max_len=65536 -artifact_prefix="$OUT/" -print_final_stats=1)
if [ "$secs" -gt 0 ]; then
	exec "$OUT/fuzz-ptx" "${args[@]}" -max_total_time="$secs" \
		"$OUT/corpus-ptx" tests/fuzz/corpus-ptx
fi
"$OUT/fuzz-ptx" "${args[@]}" -runs=0 "$OUT/corpus-ptx" \
	tests/fuzz/corpus-ptx
