#!/usr/bin/env bash
# selfprof.sh - where libkmux.so's own host time goes in the suite's PyTorch
# programs (issue 3: "no app slower than plain by more than 2%"), on a
# machine without perf.  Runs bench/apps/py/torch_suite.py under the
# profiling build (build/prof/libkmux.so: `make prof`, src/preload/selfprof.c)
# once per mode, each a fresh process:
#   bare   LD_PRELOAD only (the interposer: wrappers around the driver)
#   st8    KMUX_STREAMS=8 (the scheduler)
# plus SP_MODES' others if named (st8-nopass: KMUX_PASS_THROUGH=0).
# Every function of the preload is probed, so the times are inflated by the
# probes; what is worth reading is the per-function table and the difference
# between the modes (scripts/selfprof-report.py, run where nm is).
#
# Usage (GPU machine, repo root, build/ carried):
#   OUT=$OUT bash bench/gpu/selfprof.sh
# Output: $OUT/selfprof/MODE.<pid> (raw tables), $OUT/selfprof/MODE.out.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PLIB=${SP_LIB:-$ROOT/build/prof/libkmux.so}
MODES=(${SP_MODES:-bare st8})
[ -e "$PLIB" ] || { echo "selfprof: $PLIB missing: run make prof" >&2; exit 1; }
D=$OUT/selfprof
mkdir -p "$D"
LOG=$D/selfprof.log
: >"$LOG"
PROG=("$PY" "$ROOT/bench/apps/py/torch_suite.py" plain --apps googlenet,ensemble
      --reps 5 --warmup 3)
log "selfprof: GPU $(gpu_line); $(sha256sum "$PLIB" | cut -c1-12) $PLIB; modes ${MODES[*]}"
for m in "${MODES[@]}"; do
	have_time 30 || break
	case $m in
	bare) env KMUX_SELFPROF="$D/$m" LD_PRELOAD="$PLIB" "${PROG[@]}" ;;
	st8) env KMUX_LOG=info KMUX_STREAMS=8 KMUX_SELFPROF="$D/$m" \
		LD_PRELOAD="$PLIB" "${PROG[@]}" ;;
	st8-nopass) env KMUX_LOG=info KMUX_STREAMS=8 KMUX_PASS_THROUGH=0 \
		KMUX_SELFPROF="$D/$m" LD_PRELOAD="$PLIB" "${PROG[@]}" ;;
	*) echo "selfprof: unknown mode $m" >&2; exit 2 ;;
	esac >"$D/$m.out" 2>&1
	log "selfprof: $m exit $? ($(grep -c . "$D/$m.out") lines)"
	grep '^RESULT' "$D/$m.out" >>"$LOG"
done
