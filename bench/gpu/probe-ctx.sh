#!/usr/bin/env bash
# probe-ctx.sh - build and run bench/gpu/progs/probe_ctx.cu on the GPU
# machine: the context's footprint with the stack limit at its default, 0
# and 256 bytes, whether cudaFree/cudaMalloc wait for unrelated work, and
# what a stream or event query costs (PROBE_CTX_MODES picks, comma-separated: e.g. "query,free").
# Output: $OUT/probe-ctx.log (the PROBE lines, with the GPU and driver).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/probe-ctx.log
: >"$LOG"
log "probe-ctx: $(gpu_line)"
"$NVCC" $NVCCFLAGS -o "$WORK/bin/probe_ctx" "$PROGS/probe_ctx.cu" >>"$LOG" 2>&1 ||
	{ log "probe-ctx: build failed"; exit 1; }
IFS=, read -r -a modes <<<"${PROBE_CTX_MODES:-stack -1,stack 0,stack 256,stack -1,free,query}"
for a in "${modes[@]}"; do
	log "== probe_ctx $a"
	# shellcheck disable=SC2086  # two words
	"$WORK/bin/probe_ctx" $a >>"$LOG" 2>&1 || log "probe_ctx $a: exit $?"
done
cat "$LOG"
