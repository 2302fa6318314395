#!/usr/bin/env bash
# Multi-process and multi-threaded programs: one merged file, one pid per
# process, one track per per-thread default stream.
. "$(dirname "$0")/lib.sh"

out=$TMP/mp.json
"$KMUX" trace -o "$out" -- sh -c "'$PROGS/drv-basic' 1 && '$PROGS/drv-basic' 2" >/dev/null 2>&1
check "multi-process trace exits 0" [ $? -eq 0 ]
check "kernels from two processes" json_check "$out" "len({k['pid'] for k in kernels}) == 2"
check "3 + 6 launches in all" json_check "$out" "len(kernels) == 9"

out=$TMP/mt.json
"$KMUX" trace -o "$out" -- "$PROGS/drv-threads" >/dev/null 2>&1
check "multi-threaded trace exits 0" [ $? -eq 0 ]
check "20 launches from 4 threads" json_check "$out" "len(kernels) == 20"
check "one track per per-thread default stream" json_check "$out" \
	"len({k['tid'] for k in kernels}) == 4"
finish
