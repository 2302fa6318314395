#!/usr/bin/env bash
# probe-ctx.sh - build and run bench/gpu/progs/probe_ctx.cu on the GPU
# machine: the context's footprint with the stack limit at its default, 0
# and 256 bytes, and whether cudaFree/cudaMalloc wait for unrelated work.
# Output: $OUT/probe-ctx.log (the PROBE lines, with the GPU and driver).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/probe-ctx.log
: >"$LOG"
log "probe-ctx: $(gpu_line)"
"$NVCC" $NVCCFLAGS -o "$WORK/bin/probe_ctx" "$PROGS/probe_ctx.cu" >>"$LOG" 2>&1 ||
	{ log "probe-ctx: build failed"; exit 1; }
for a in "stack -1" "stack 0" "stack 256" "stack -1" free; do
	log "== probe_ctx $a"
	# shellcheck disable=SC2086  # two words
	"$WORK/bin/probe_ctx" $a >>"$LOG" 2>&1 || log "probe_ctx $a: exit $?"
done
cat "$LOG"
