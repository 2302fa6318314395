#!/usr/bin/env bash
# run-all.sh - the single entry point on the GPU machine, from the repo root:
#
#     bash bench/gpu/run-all.sh
#
# Runs compat.sh (issue 2 item 7) then overhead.sh (item 8) within a time
# budget (KMUX_BENCH_BUDGET_S, default 510 s: the device command limit is
# 600 s; compat may use up to KMUX_COMPAT_BUDGET_S of it, default 290 s).
# Needs build/ from this tree (libkmux.so, kmux, devlibs/ from prepare.sh),
# carried to the machine.  Never changes GPU settings.
#
# Results under $OUT (default ./out), at most 8 files, no subfolders:
#   run-all.log  compat.log  compat.md  compat-traces.json  trace-drv_api.json
#   overhead.log  overhead.md  overhead.csv
# Exit status: 0 when neither script reported a failure.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
export OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
BUDGET=${KMUX_BENCH_BUDGET_S:-510}
COMPAT_BUDGET=${KMUX_COMPAT_BUDGET_S:-290}
[ "$COMPAT_BUDGET" -gt "$BUDGET" ] && COMPAT_BUDGET=$BUDGET
export KMUX_BENCH_DEADLINE=$((START + BUDGET))
. bench/gpu/lib.sh	# sets WORK, exported (the scripts share it), removed at exit

main() {
	local rc_c rc_o
	log "run-all: start in $ROOT; budget ${BUDGET}s (compat ${COMPAT_BUDGET}s); OUT=$OUT; scratch $WORK"
	log "run-all: GPU $(gpu_line)"
	log "run-all: $(uname -srm), $(nproc) CPUs; nvcc: ${NVCC:-none}; python3: $(command -v "$PY")"
	log "run-all: $(kmux_ident)"
	ls -la build/ build/devlibs/ 2>&1 | sed 's/^/    /'
	check_stacks	# once; exported to both scripts
	log "run-all: compat.sh"
	KMUX_BENCH_DEADLINE=$((START + COMPAT_BUDGET)) bash bench/gpu/compat.sh
	rc_c=$?
	log "run-all: compat.sh exit $rc_c ($(( $(date +%s) - START ))s elapsed)"
	log "run-all: overhead.sh"
	bash bench/gpu/overhead.sh
	rc_o=$?
	log "run-all: overhead.sh exit $rc_o ($(( $(date +%s) - START ))s elapsed)"
	log "run-all: files in $OUT:"
	ls -la "$OUT" | sed 's/^/    /'
	log "run-all: done: compat $([ $rc_c = 0 ] && echo ok || echo FAILURES), overhead $([ $rc_o = 0 ] && echo ok || echo FAILURES)"
	[ $rc_c = 0 ] && [ $rc_o = 0 ]
}

main 2>&1 | tee "$OUT/run-all.log"
exit "${PIPESTATUS[0]}"
