#!/usr/bin/env bash
# graphmem-check.sh - memory that CUDA graphs allocate through their memory
# nodes, under kmux's quota and tracker, on a real GPU (src/preload/
# graph-mem.h, wrap-graph.c).  Run on the GPU machine from the repo root,
# with build/ carried:
#   OUT=$OUT bash bench/gpu/graphmem-check.sh
#
# 1. tests/e2e/progs/quota.c (t70-quota.sh's program, a driver-API
#    program), built against the real libcuda, with QUOTA_GRAPHS=1: the
#    same lines t70 checks on the simulated driver, plain (nothing
#    refused), with the bare preload under KMUX_MEM_QUOTA=64M, and the same
#    under KMUX_STREAMS=4.  With GRAPHMEM_CONTROL_LIB (a libkmux.so from
#    before graph-mem.c), that library's lines too: what it let through.
# 2. progs/torch_graph_mem.py (PyTorch, backend:cudaMallocAsync): a graph
#    whose temporary is a memory node, 512 MiB and 3072 MiB, plain and under
#    KMUX_MEM_QUOTA=2G (bare preload): the small one replays, the big one
#    is refused at replay under kmux.
# A check, not a benchmark.  Output: $OUT/graphmem-check.md and .log.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/graphmem-check.log
: >"$LOG"
B=$WORK/bin
mkdir -p "$B"
fails=0
log "graphmem-check: GPU $(gpu_line); $(kmux_ident)"
say() { echo "$*" >>"$WORK/report"; log "$*"; }
check() {
	local what=$1
	shift
	if "$@"; then say "ok   $what"; else say "FAIL $what"; fails=$((fails + 1)); fi
}
has() { grep -qx "$2" "$1"; }
: >"$WORK/report"

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
cc -std=gnu11 -O2 -I"$CUDA_HOME/include" -I"$ROOT/tests/e2e/progs" \
	"$ROOT/tests/e2e/progs/quota.c" -o "$B/quota" \
	-L"$CUDA_HOME/lib64/stubs" -lcuda >>"$LOG" 2>&1 ||
	{ log "cannot build quota.c"; exit 1; }
Q=$B/quota

QUOTA_GRAPHS=1 "$Q" 8 1 >"$WORK/plain" 2>&1
rc=$?
{ echo "----- plain (exit $rc)"; cat "$WORK/plain"; } >>"$LOG"
check "plain: the program runs (exit 0)" [ $rc -eq 0 ]
check "plain: nothing refused" bash -c "grep -qx 'graphs alloc-while-live err=0' '$WORK/plain' && grep -qx 'graphs too-big err=0' '$WORK/plain'"

for mode in bare streams; do
	envs=(KMUX_MEM_QUOTA=64M)
	[ $mode = streams ] && envs+=(KMUX_STREAMS=4)
	env "${envs[@]}" QUOTA_GRAPHS=1 LD_PRELOAD="$KMUX_LIB" "$Q" 8 1 >"$WORK/$mode" 2>"$WORK/$mode.err"
	rc=$?
	{ echo "----- ${envs[*]} (exit $rc)"; cat "$WORK/$mode" "$WORK/$mode.err"; } >>"$LOG"
	check "$mode: exit 0" [ $rc -eq 0 ]
	check "$mode: a graph freeing its own 32 MiB runs twice" bash -c "grep -qx 'graphs own-free err=0' '$WORK/$mode' && grep -qx 'graphs own-free-again err=0' '$WORK/$mode'"
	check "$mode: 48 MiB left live are counted" has "$WORK/$mode" "graphs-live total=64 free=16"
	check "$mode: so 32 MiB more is refused" has "$WORK/$mode" "graphs alloc-while-live err=2"
	check "$mode: cuMemFreeAsync and cuMemFree give them back" bash -c "grep -qx 'graphs-freed-async total=64 free=64' '$WORK/$mode' && grep -qx 'graphs-freed-sync total=64 free=64' '$WORK/$mode'"
	check "$mode: a launch allocating 2 x 40 MiB is refused" has "$WORK/$mode" "graphs too-big err=2"
	check "$mode: capture charges nothing" has "$WORK/$mode" "graphs-capturing total=64 free=64"
	check "$mode: the captured graph runs twice" bash -c "grep -qx 'graphs captured err=0' '$WORK/$mode' && grep -qx 'graphs captured-again err=0' '$WORK/$mode'"
	check "$mode: auto-free: 48 MiB held after two launches" bash -c "grep -qx 'graphs auto-free-again err=0' '$WORK/$mode' && grep -qx 'graphs-auto-live total=64 free=16' '$WORK/$mode'"
	check "$mode: everything back at the end" has "$WORK/$mode" "graphs-end total=64 free=64"
done

CTL=${GRAPHMEM_CONTROL_LIB:-}
if [ -n "$CTL" ]; then
	KMUX_MEM_QUOTA=64M QUOTA_GRAPHS=1 LD_PRELOAD="$CTL" "$Q" 8 1 >"$WORK/ctl" 2>&1
	{ echo "----- control $CTL (exit $?)"; cat "$WORK/ctl"; } >>"$LOG"
	say "     control, $(sha256sum "$CTL" | cut -c1-12): $(grep -E '^graphs-live|^graphs too-big|^graphs alloc-while' "$WORK/ctl" | tr '\n' ';')"
fi

if $PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	T=$PROGS/torch_graph_mem.py
	export PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
	for mib in 512 3072; do
		timeout 120 $PY "$T" $mib >"$WORK/t-plain-$mib" 2>&1
		{ echo "----- torch plain $mib MiB (exit $?)"; cat "$WORK/t-plain-$mib"; } >>"$LOG"
		KMUX_MEM_QUOTA=2G LD_PRELOAD="$KMUX_LIB" timeout 120 $PY "$T" $mib \
			>"$WORK/t-kmux-$mib" 2>&1
		{ echo "----- torch KMUX_MEM_QUOTA=2G $mib MiB (exit $?)"; cat "$WORK/t-kmux-$mib"; } >>"$LOG"
	done
	check "torch plain: 512 MiB graph replays twice" grep -q '^replay 1 ok' "$WORK/t-plain-512"
	check "torch plain: 3072 MiB graph replays twice" grep -q '^replay 1 ok' "$WORK/t-plain-3072"
	check "torch, quota 2G: 512 MiB graph replays twice" grep -q '^replay 1 ok' "$WORK/t-kmux-512"
	check "torch, quota 2G: 3072 MiB graph refused at replay" grep -q '^replay 0 failed' "$WORK/t-kmux-3072"
	say "     torch, quota 2G, 3072 MiB: $(grep -E '^(capture|replay)' "$WORK/t-kmux-3072" | tr '\n' ';' | cut -c1-300)"
else
	say "SKIP torch: no PyTorch with CUDA"
fi

{
	echo "# graphmem-check, $(date -u +%F)"
	echo
	echo "GPU: $(gpu_line). $(kmux_ident)."
	echo
	echo '```'
	cat "$WORK/report"
	echo '```'
	echo
	echo "$fails failed."
} >"$OUT/graphmem-check.md"
log "graphmem-check: $fails failed"
[ "$fails" -eq 0 ]
