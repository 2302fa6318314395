#!/usr/bin/env bash
# verify-knobs.sh - `kmux verify --streams 16` on each suite app with the
# placement knobs that are off by default turned on (VK_ENV, default
# "KMUX_DURATIONS=1 KMUX_LEVEL=1"): they move work between streams, and
# verify says whether every device-to-host copy still reads the same.
# Run on the GPU machine from the repo root, with build/ carried:
#   OUT=$OUT bash bench/gpu/verify-knobs.sh
# Output: $OUT/verify-knobs.log (each command, its verdict line and exit).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/verify-knobs.log
: >"$LOG"
APPS=${VK_APPS:-gemm_batch image_pipeline reductions stencil_dag mha mixed_pairs chain host_sync phase_buffers}
read -r -a VENV <<<"${VK_ENV:-KMUX_DURATIONS=1 KMUX_LEVEL=1}"
log "verify-knobs: GPU $(gpu_line); $(kmux_ident); ${VENV[*]}"
bad=0
for a in $APPS; do
	"$NVCC" $NVCCFLAGS "$ROOT/bench/apps/$a.cu" -o "$WORK/bin/$a" >>"$LOG" 2>&1 ||
		{ log "verify-knobs: cannot build $a"; exit 1; }
	logq "\$ ${VENV[*]} KMUX_LOG=info kmux verify --streams 16 -- $a plain --reps 5 --warmup 2"
	(export "${VENV[@]}" KMUX_LOG=info &&
		kmux_cli verify --streams 16 -- "$WORK/bin/$a" plain --reps 5 --warmup 2) \
		>"$WORK/run/vk-$a.txt" 2>&1
	rc=$?
	grep -E 'identical|diverge|durations learned' "$WORK/run/vk-$a.txt" |
		sed -e 's/.*\(durations learned[^;]*\).*/  \1/' >>"$LOG"
	logq "exit $rc"
	[ "$rc" -eq 0 ] || bad=$((bad + 1))
	log "  $a: exit $rc"
done
[ "$bad" -eq 0 ] || { log "verify-knobs: $bad apps not identical or failed"; exit 1; }
