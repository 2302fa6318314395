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
	echo "build-bench-job.sh: $CLANG not found (Debian: apt-get install clang)" >&2
	exit 1
fi
mkdir -p "$OUT/corpus-bench-job"
"$CLANG" -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -iquote src/cli \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	tests/fuzz/fuzz-bench-job.c src/cli/bench-job.c -lcjson \
	-o "$OUT/fuzz-bench-job"
args=(-max_len=70000 -artifact_prefix="$OUT/" -print_final_stats=1)
if [ "$secs" -gt 0 ]; then
	exec "$OUT/fuzz-bench-job" "${args[@]}" -max_total_time="$secs" \
		"$OUT/corpus-bench-job" tests/fuzz/corpus-bench-job
fi
"$OUT/fuzz-bench-job" "${args[@]}" -runs=0 "$OUT/corpus-bench-job" \
	tests/fuzz/corpus-bench-job
