#!/usr/bin/env bash
# tests/e2e/run.sh - runs every tests/e2e/t*.sh and prints one summary line
# that CI reads ("N passed, N failed").  BUILD selects build/ or build-san/.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
export BUILD
if [ "$BUILD" = build-san ] && [ -z "${ASAN_LIB:-}" ]; then
	ASAN_LIB=$(${CC:-cc} -print-file-name=libasan.so)
	export ASAN_LIB
fi
passed=0
failed=0
failed_names=""
# The simulated driver's own self-test first: every other test stands on it.
echo "== $BUILD/simcuda/selftest"
if "$BUILD/simcuda/selftest"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	failed_names="$failed_names simcuda-selftest"
fi
for t in tests/e2e/t*.sh; do
	[ -n "${E2E_ONLY:-}" ] && case $t in *$E2E_ONLY*) ;; *) continue ;; esac
	echo "== $t"
	# 120 s each, unless the test asks for more in a line "# e2e-timeout: N"
	# (a long one that a loaded machine stretches towards the limit).
	limit=$(sed -n 's/^# e2e-timeout: \([0-9][0-9]*\)$/\1/p' "$t" | head -1)
	if timeout "${limit:-120}" bash "$t"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failed_names="$failed_names $t"
	fi
done
[ "$failed" -eq 0 ] || echo "failed:$failed_names"
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
