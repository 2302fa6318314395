#!/usr/bin/env bash
# wide-check.sh - kernels of several full waves placed in line
# (KMUX_WIDE_WAVES, docs/design-streams.md "Wide kernels"): does it take
# back what spreading cost googlenet at large batches, and does it leave
# the CUDA apps of bench/apps alone?  Run on the GPU machine from the repo
# root, with build/ carried:  OUT=$OUT bash bench/gpu/wide-check.sh
#
#   $OUT/g/   torch-alloc.sh: googlenet, native allocator, batches 128 and
#             256, the in-process A/B as shipped (ab) and with
#             KMUX_WIDE_WAVES=0 (ab,w0), kmux verify at 256
#   $OUT/ga/  the same A/B at 256 with PyTorch's cudaMallocAsync allocator
#   $OUT/s/   bench/streams.sh, the 9 CUDA apps once each (plain, kmux 16,
#             expert, verify): their exit lines say how many kernels were
#             placed in line (streams.log)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
OUT=${OUT:-./out}
mkdir -p "$OUT/g" "$OUT/ga" "$OUT/s"
OUT=$OUT/g TA_BATCHES="128 256" TA_ALLOCS=native TA_MODES="ab ab,w0" TA_PAIRS=8 \
	bash bench/gpu/torch-alloc.sh
OUT=$OUT/ga TA_BATCHES=256 TA_ALLOCS=async TA_MODES="ab ab,w0" TA_PAIRS=8 TA_VERIFY=0 \
	bash bench/gpu/torch-alloc.sh
OUT=$OUT/s KMUX_STREAMS_REPS=1 KMUX_STREAMS_NS=16 KMUX_STREAMS_SA_NS= KMUX_STREAMS_PY_APPS= \
	KMUX_STREAMS_BUDGET_S=${WIDE_SUITE_BUDGET_S:-260} bash bench/streams.sh >"$OUT/s/console.txt" 2>&1
echo "suite: exit $?"
grep -o 'wide kernels in line [0-9]*' "$OUT/s/streams.log" | sort | uniq -c
