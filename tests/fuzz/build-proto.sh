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
. tests/fuzz/fuzz-lib.sh
fuzz_init build-proto.sh "$@"
SRCS=(-iquote src/common tests/fuzz/fuzz-proto.c src/common/proto.c)

fuzz_build proto "${SRCS[@]}"
# The seed writer: the same harness as a plain program (no libFuzzer).
"$CLANG" -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror \
	-DFUZZ_PROTO_SEEDS -fsanitize=address,undefined "${SRCS[@]}" \
	-o "$OUT/fuzz-proto-seeds"

rm -rf "$OUT/corpus-proto-seeds"
"$OUT/fuzz-proto-seeds" "$OUT/corpus-proto-seeds"

# Frames up to 64 KiB: large enough for long argv/env and job lists, small
# enough that each run stays fast (the 1 MiB limit is checked by the unit
# tests).
fuzz_run "$OUT/fuzz-proto" 65536 "$OUT/corpus-proto" "$OUT/corpus-proto-seeds"
