# shellcheck shell=bash
# tests/fuzz/fuzz-lib.sh - what the libFuzzer build scripts share: the -t
# option, the clang check, building a target, and running or replaying a
# corpus.  Sourced by
# build-proto.sh, build-bench-job.sh, build-ptx.sh and build-verify-log.sh
# from the repository root; sets CLANG, OUT ($BUILD/fuzz) and secs.

# fuzz_init NAME "$@": parse -t SECONDS, check clang, create $OUT.
fuzz_init() {
	local name=$1 opt
	shift
	secs=0
	OPTIND=1
	while getopts "t:" opt; do
		case $opt in
		t) secs=$OPTARG ;;
		*) echo "usage: $name [-t SECONDS]" >&2; exit 2 ;;
		esac
	done
	CLANG=${CLANG:-clang}
	OUT=${BUILD:-build}/fuzz
	if ! command -v "$CLANG" >/dev/null; then
		echo "$name: $CLANG not found (Debian: apt-get install clang)" >&2
		exit 1
	fi
	mkdir -p "$OUT"
}

# fuzz_build NAME CLANG-ARGS...: build the libFuzzer target $OUT/fuzz-NAME
# (ASan, UBSan, warnings as errors) from the sources, include paths and
# libraries given, and create its growing corpus $OUT/corpus-NAME.
fuzz_build() {
	local name=$1
	shift
	mkdir -p "$OUT/corpus-$name"
	"$CLANG" -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		"$@" -o "$OUT/fuzz-$name"
}

# fuzz_run BINARY MAX_LEN CORPUS...: fuzz for $secs seconds (the first
# corpus directory grows), or with -t 0 replay every corpus once.  Crash
# files go to $OUT, not the source tree.
fuzz_run() {
	local bin=$1 max=$2
	shift 2
	local args=(-max_len="$max" -artifact_prefix="$OUT/" -print_final_stats=1)
	if [ "$secs" -gt 0 ]; then
		exec "$bin" "${args[@]}" -max_total_time="$secs" "$@"
	fi
	"$bin" "${args[@]}" -runs=0 "$@"
}
