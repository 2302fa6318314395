#!/usr/bin/env bash
# host-cost.sh - one device call for issue 3's PyTorch gap ("no app slower
# than plain by more than 2%"): selfprof.sh (where the preload's host time
# goes, profiling build) and torch-modes.sh (fresh processes: plain, A/A,
# bare preload, KMUX_STREAMS=8 with this library and up to two others side
# by side), packed into one file, since the device tool returns few files.
#
# Usage (GPU machine, repo root, build/ carried; build/prof from make prof):
#   OUT=$OUT [HC_BUDGET_S=300] [HC_REPS=4] [HC_CTL=lib] [HC_SKIP=lib] \
#       bash bench/gpu/host-cost.sh
# HC_CTL: the library before launches passed through went unread
# (edf5ec4~1); HC_SKIP: the one before the short way (6d1907b); each mode
# is left out when its variable is unset.  Output: $OUT/host-cost.tgz
# (gpu.txt with the libraries' sha256, selfprof/, torch-modes.*, consoles).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-./out}
export KMUX_BENCH_DEADLINE=$(( $(date +%s) + ${HC_BUDGET_S:-300} ))
R=$OUT/host-cost
mkdir -p "$R"
modes="plain plain2 bare st8"
{
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
	sha256sum "$ROOT/build/libkmux.so" "$ROOT/build/prof/libkmux.so" \
		${HC_CTL:+"$HC_CTL"} ${HC_SKIP:+"$HC_SKIP"}
} >"$R/gpu.txt"
[ -n "${HC_SKIP:-}" ] && modes="$modes st8-skip"
[ -n "${HC_CTL:-}" ] && modes="$modes st8-ctl"
OUT=$R bash "$ROOT/bench/gpu/selfprof.sh" >"$R/selfprof.console" 2>&1
OUT=$R TM_REPS=${HC_REPS:-4} TM_CONTROL_LIB=${HC_CTL:-} TM_LIB_skip=${HC_SKIP:-} \
	TM_MODES="$modes" bash "$ROOT/bench/gpu/torch-modes.sh" >"$R/tm.console" 2>&1
tar -C "$OUT" -czf "$OUT/host-cost.tgz" host-cost && rm -rf "$R"
