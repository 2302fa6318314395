#!/usr/bin/env bash
# placement-trace.sh - where kmux's scheduler put each kernel and when the
# GPU ran it, for two builds side by side: `kmux trace --timing` of suite
# apps under KMUX_STREAMS=16 (each launch timed by a pair of CUDA events on
# the pool stream it went to), once with build/libkmux.so and once with
# PT_BASE_LIB.  Used to see why two placements of the same program take
# different times (bench/results/streams.md, run 18).
# Run on the GPU machine from the repo root, with build/ carried:
#   PT_BASE_LIB=build/libkmux-base.so OUT=$OUT bash bench/gpu/placement-trace.sh
# Output: $OUT/pt-APP-LIB.json (the merged trace), $OUT/pt-APP-LIB.txt (the
# app's output and the trace summary), $OUT/placement-trace.log.
# Knobs: PT_APPS (reductions image_pipeline), PT_REPS (6), PT_NEW_ENV and
# PT_BASE_ENV (VAR=value words for each arm, e.g. PT_NEW_ENV=KMUX_DURATIONS=1
# with PT_BASE_LIB=build/libkmux.so compares a knob on one library),
# PT_CONNECTIONS (CUDA_DEVICE_MAX_CONNECTIONS, 16).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/placement-trace.log
: >"$LOG"
APPS=${PT_APPS:-reductions image_pipeline}
REPS=${PT_REPS:-6}
CONN=${PT_CONNECTIONS:-16}
read -r -a NEW_ENV <<<"${PT_NEW_ENV:-}"
read -r -a BASE_ENV <<<"${PT_BASE_ENV:-}"
[ -r "${PT_BASE_LIB:-}" ] || { log "placement-trace: PT_BASE_LIB must name a readable libkmux.so"; exit 1; }
log "placement-trace: GPU $(gpu_line); $(kmux_ident); base $(sha256sum "$PT_BASE_LIB" | cut -c1-12)"
failed=0
for a in $APPS; do
	"$NVCC" $NVCCFLAGS "$ROOT/bench/apps/$a.cu" -o "$WORK/bin/$a" >>"$LOG" 2>&1 ||
		{ log "placement-trace: cannot build $a"; exit 1; }
	for lib in new base; do
		libpath=$KMUX_LIB
		envw=("${NEW_ENV[@]}")
		if [ "$lib" = base ]; then
			libpath=$(readlink -f "$PT_BASE_LIB")
			envw=("${BASE_ENV[@]}")
		fi
		logq "\$ ${envw[*]} KMUX_LIBRARY=$libpath KMUX_STREAMS=16 CUDA_DEVICE_MAX_CONNECTIONS=$CONN kmux trace --timing -o pt-$a-$lib.json -- $a plain --reps $REPS --warmup 3"
		(export KMUX_LIBRARY=$libpath KMUX_STREAMS=16 CUDA_DEVICE_MAX_CONNECTIONS=$CONN &&
			for e in "${envw[@]}"; do export "${e?}"; done &&
			kmux_cli trace --timing -o "$OUT/pt-$a-$lib.json" -- \
				"$WORK/bin/$a" plain --reps "$REPS" --warmup 3) \
			>"$OUT/pt-$a-$lib.txt" 2>&1 || { failed=$((failed + 1)); log "  $a/$lib failed"; }
		grep RESULT "$OUT/pt-$a-$lib.txt" | tee -a "$LOG"
	done
done
[ "$failed" -eq 0 ] || exit 1
