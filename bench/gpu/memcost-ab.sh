#!/usr/bin/env bash
# bench/gpu/memcost-ab.sh - issue 5 (c) on the device, one call: the cost
# of the memory manager with ample memory on staged (the app where it was
# at the 3% line) and two bench/apps programs, in interleaved rounds of
# none, quota, lazy and evict-ample under this build's libkmux.so and
# under an older one (build/libkmux-old.so: copy it there before the call),
# side by side.  Output under $OUT/c (bench/memory.sh's report, csv, log).
#
#   bash bench/gpu/memcost-ab.sh            (on the device; $OUT set)
# Knobs: MEMCOST_REPS (12), MEMCOST_APPS ("chain phase_buffers"),
# MEMCOST_MODES ("none quota lazy lazy-b evict-ample evict-ample-b"),
# MEMCOST_BUDGET_S (540).
set -u
cd "$(dirname "$0")/../.." || exit 1
OLD=$PWD/build/libkmux-old.so
[ -r "$OLD" ] || { echo "memcost-ab: $OLD missing (copy the older build there)" >&2; exit 2; }
echo "libkmux.so $(sha256sum build/libkmux.so | cut -c1-12), library B $(sha256sum "$OLD" | cut -c1-12)"
OUT=${OUT:-./out}/c KMUX_MEMBENCH_APPS="${MEMCOST_APPS:-chain phase_buffers}" KMUX_MEMBENCH_STAGED=1 \
	KMUX_MEMBENCH_TORCH=0 KMUX_MEMBENCH_SWEEP= KMUX_MEMBENCH_CTX_REPS=1 \
	KMUX_MEMBENCH_COST_MODES="${MEMCOST_MODES:-none quota lazy lazy-b evict-ample evict-ample-b}" \
	KMUX_MEMBENCH_LIB_B=$OLD KMUX_MEMBENCH_REPS=${MEMCOST_REPS:-12} \
	KMUX_MEMBENCH_BUDGET_S=${MEMCOST_BUDGET_S:-540} bash bench/memory.sh
