#!/bin/sh
# tests/fuzz/build.sh - build the fuzz target of the trace line parser and
# merge, without make.
#
#   tests/fuzz/build.sh              libFuzzer + ASan + UBSan (clang)
#   tests/fuzz/build.sh standalone   replay binary, any compiler ($CC)
#
# Then, from the repository root:
#   build/fuzz/fuzz-trace-line -dict=tests/fuzz/trace-line.dict \
#       -max_total_time=60 tests/fuzz/corpus
#   build/fuzz/fuzz-trace-line-standalone tests/fuzz/corpus/*
set -eu
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/fuzz}
mkdir -p "$OUT"
SRCS="tests/fuzz/fuzz-trace-line.c src/cli/trace-merge.c src/cli/demangle.c"
FLAGS="-std=gnu11 -g -O1 -Wall -Wextra -D_GNU_SOURCE -Isrc"
if [ "${1:-}" = standalone ]; then
	${CC:-cc} $FLAGS -DFUZZ_STANDALONE -fsanitize=address,undefined \
		-o "$OUT/fuzz-trace-line-standalone" $SRCS -lcjson
	echo "built $OUT/fuzz-trace-line-standalone"
else
	${CLANG:-clang} $FLAGS -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined \
		-o "$OUT/fuzz-trace-line" $SRCS -lcjson
	echo "built $OUT/fuzz-trace-line"
fi
