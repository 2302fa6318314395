#!/usr/bin/env bash
# --timing times each launch with driver events: on simcuda, kernels that
# run for 2 ms show at least 2 ms of GPU time.
. "$(dirname "$0")/lib.sh"

out=$TMP/timing.json
SIMCUDA_KERNEL_US=2000 "$KMUX" trace --timing -o "$out" -- "$PROGS/drv-basic" 1 >/dev/null 2>&1
check "kmux trace --timing exits 0" [ $? -eq 0 ]
check "every kernel has a GPU duration of at least 2 ms" json_check "$out" \
	"len(kernels) == 3 and all(k['args'].get('gpu_dur', 0) >= 2000 for k in kernels)"
check "the summary says the times are GPU times" json_check "$out" "summary['timing'] is True"
check "total GPU time of vec_add >= 4 ms" json_check "$out" \
	"[k for k in summary['kernels'] if k['name'] == 'vec_add'][0]['total_us'] >= 4000"
finish
