#!/usr/bin/env bash
# tests/fuzz/build-proto.sh - build (and optionally run) the libFuzzer
# harness of the wire protocol decoder, tests/fuzz/fuzz-proto.c.
#
#   tests/fuzz/build-proto.sh            build, write the seed corpus, and
#                                        replay the corpus once (seconds)
#   tests/fuzz/build-proto.sh -t 60      ... then fuzz for 60 seconds
#
# Output under $BUILD/fuzz (default build/fuzz):
#   fuzz-proto            the fuzzer (clang -fsanitize=fuzzer,address,undefined)
#   fuzz-proto-seeds      writes one encoded sample per message type
#   corpus-proto-seeds/   the seeds, generated from the encoder every time
#   corpus-proto/         what the fuzzer found interesting (kept across runs)
#   crash-*, leak-*, ...  reproducers, if it found anything (exit status 1)
# Replay a reproducer with: build/fuzz/fuzz-proto FILE
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
FLAGS="-std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -iquote src/common"
SRCS="tests/fuzz/fuzz-proto.c src/common/proto.c"

if ! command -v "$CLANG" >/dev/null; then
	echo "build-proto.sh: $CLANG not found (Debian: apt-get install clang)" >&2
	exit 1
fi
mkdir -p "$OUT"
# shellcheck disable=SC2086
"$CLANG" $FLAGS -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined $SRCS -o "$OUT/fuzz-proto"
# shellcheck disable=SC2086
"$CLANG" $FLAGS -DFUZZ_PROTO_SEEDS -fsanitize=address,undefined $SRCS \
	-o "$OUT/fuzz-proto-seeds"

rm -rf "$OUT/corpus-proto-seeds"
"$OUT/fuzz-proto-seeds" "$OUT/corpus-proto-seeds"
mkdir -p "$OUT/corpus-proto"

# Frames up to 64 KiB: large enough for long argv/env and job lists, small
# enough that each run stays fast (the 1 MiB limit is checked by the unit
# tests).  Crash files go to $OUT, not the source tree.
args=(-max_len=65536 -artifact_prefix="$OUT/" -print_final_stats=1)
if [ "$secs" -gt 0 ]; then
	exec "$OUT/fuzz-proto" "${args[@]}" -max_total_time="$secs" \
		"$OUT/corpus-proto" "$OUT/corpus-proto-seeds"
fi
"$OUT/fuzz-proto" "${args[@]}" -runs=0 "$OUT/corpus-proto" \
	"$OUT/corpus-proto-seeds"
