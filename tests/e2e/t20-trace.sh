#!/usr/bin/env bash
# kmux trace on a driver-API program: the trace holds every launch with its
# name, grid, block and the allocations it touched; copies; syncs; memory.
. "$(dirname "$0")/lib.sh"

out=$TMP/trace.json
"$KMUX" trace -o "$out" -- "$PROGS/drv-basic" 3 >"$TMP/stdout" 2>"$TMP/stderr"
check "kmux trace exits 0" [ $? -eq 0 ]
check "the program's own output is untouched" grep -q '^drv-basic ok' "$TMP/stdout"
check "a summary is printed" grep -q 'kmux trace' "$TMP/stderr"
check "the trace is valid JSON" json_check "$out" "True"
# 3 iterations x (2 vec_add + 1 copy_struct)
check "9 kernel launches recorded" json_check "$out" "len(kernels) == 9"
check "vec_add launched 6 times" json_check "$out" \
	"sum(1 for k in kernels if k['name'] == 'vec_add') == 6"
check "grid and block recorded" json_check "$out" \
	"all(k['args']['grid'] == [16,1,1] and k['args']['block'] == [256,1,1] for k in kernels)"
# vec_add touches a, b, c (three allocations) in both parameter forms;
# copy_struct reaches c and d only through a by-value struct.
check "vec_add touched 3 allocations (kernelParams and extra forms)" json_check "$out" \
	"all(len(set(k['args']['allocs'])) == 3 for k in kernels if k['name'] == 'vec_add')"
check "copy_struct's pointers inside a by-value struct were found" json_check "$out" \
	"all(len(set(k['args']['allocs'])) == 2 for k in kernels if k['name'] == 'copy_struct')"
check "copies recorded" json_check "$out" \
	"sum(1 for e in ev if e.get('cat') == 'memcpy') >= 12"
check "memsets recorded" json_check "$out" \
	"sum(1 for e in ev if e.get('cat') == 'memset') == 3"
check "synchronizations counted" json_check "$out" "summary['syncs'] >= 6"
check "peak device memory is the four 16 KiB buffers" json_check "$out" \
	"summary['peak_device_bytes'] == 4 * 16384"
check "all memory freed at exit" json_check "$out" "summary['current_device_bytes'] == 0"
check "summary counts vec_add 6 times, copy_struct 3 times" json_check "$out" \
	"{k['name']: k['count'] for k in summary['kernels']} == {'vec_add': 6, 'copy_struct': 3}"
check "summary kernels sorted by total time" json_check "$out" \
	"[k['total_us'] for k in summary['kernels']] == sorted([k['total_us'] for k in summary['kernels']], reverse=True)"
check "streams get their own tracks" json_check "$out" \
	"len({k['tid'] for k in kernels}) == 3"
finish
