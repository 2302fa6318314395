# tests/e2e/lib.sh - sourced by each end-to-end test script.
#
# Sets up paths to the build and the simulated driver, a private scratch
# directory, and check helpers.  A test script exits 0 when every check
# passed, 1 otherwise; run.sh counts them.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
KMUX=$BUILD/kmux
LIBKMUX=$BUILD/libkmux.so
SIMDIR=$BUILD/simcuda
PROGS=$BUILD/tests/e2e
export E2E_MODULE=$SIMDIR/kernels/basic.so
# The simulated driver stands in for libcuda.so.1 everywhere in the tests.
export LD_LIBRARY_PATH=$SIMDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kmux-e2e.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# Under the sanitizer build the preload needs the ASan runtime first.
PRELOAD=$LIBKMUX
if [ -n "${ASAN_LIB:-}" ]; then
	PRELOAD=$ASAN_LIB:$LIBKMUX
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:verify_asan_link_order=0}
	export KMUX_LIBRARY=$LIBKMUX
fi

T_FAILED=0
T_NAME=$(basename "$0" .sh)

ok() { echo "  ok   $T_NAME: $*"; }
fail() { echo "  FAIL $T_NAME: $*"; T_FAILED=1; }

# check DESCRIPTION COMMAND...: passes when COMMAND exits 0.
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

# json_check FILE PYTHON-EXPR: evaluates EXPR with `t` bound to the parsed
# JSON; passes when it is true, prints the expression otherwise.
json_check() {
	python3 - "$1" "$2" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t.get("traceEvents", []) if isinstance(t, dict) else []
kernels = [e for e in ev if e.get("cat") == "kernel" and e.get("ph") == "X"]
summary = t.get("kmux", {}).get("summary", {}) if isinstance(t, dict) else {}
ok = eval(sys.argv[2])
if not ok:
    print("    json check failed: " + sys.argv[2], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

# not COMMAND...: succeeds when COMMAND fails (for check).
not() { ! "$@"; }

# evicts FILE: the evictions in an evict-mode preload's exit line.
evicts() { sed -nE 's/.*evict; .* ([0-9]+) evictions \(.*/\1/p' "$1"; }

finish() { exit $T_FAILED; }
