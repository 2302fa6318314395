#!/usr/bin/env bash
# A task over its quota gets CUDA_ERROR_OUT_OF_MEMORY (2) and the other
# jobs on the node are unaffected: jobs on n1 with 64M, 128M and 512M
# quotas, each allocating up to 256 MiB in 8 MiB steps and holding its
# peak for 1.5 s; the 64M and 512M ones run at the same time.
. "$(dirname "$0")/lib.sh"

export QUOTA_HOLD_MS=1500
# run NAME QUOTA: the quota program as a step, its start and end times
# (ns) around it, in the background.
run() {
	T_SRUN -w n1 --kmux-mem="$2" sh -c \
		"date +%s%N >'$TMP/$1.t0'; '$PROGS/quota'; r=\$?; date +%s%N >'$TMP/$1.t1'; exit \$r" \
		>"$TMP/$1" 2>&1 &
}
run a 64M
pa=$!
run c 512M
pc=$!
wait $pa; ra=$?
wait $pc; rc=$?
run b 128M
wait $!; rb=$?
check "all three ran to the end (exit 0)" [ $((ra + rb + rc)) -eq 0 ]
check "64M job: gets 64 MiB" hasx "$TMP/a" "got 64"
check "64M job: then CUDA_ERROR_OUT_OF_MEMORY" hasx "$TMP/a" "stop err=2"
check "128M job: gets its 128 MiB" hasx "$TMP/b" "got 128"
check "128M job: then out of memory, its own limit" hasx "$TMP/b" "stop err=2"
check "512M job: all 256 MiB it wanted, no failure" \
	cond "grep -qxF 'got 256' '$TMP/c' && ! grep -q '^stop' '$TMP/c'"
check "each saw its own quota in cuMemGetInfo" \
	cond "grep -qxF 'info0 total=64 free=64' '$TMP/a' && grep -qxF 'info0 total=128 free=128' '$TMP/b' && grep -qxF 'info0 total=512 free=512' '$TMP/c'"
if [ "$(scontrol -o show node n1 | tr ' ' '\n' | sed -n 's/^CPUTot=//p')" -ge 2 ]; then
	check "the 64M and the 512M job ran at the same time" \
		[ "$(cat "$TMP/a.t0")" -lt "$(cat "$TMP/c.t1")" -a "$(cat "$TMP/c.t0")" -lt "$(cat "$TMP/a.t1")" ]
else
	skip "one CPU per node: the jobs ran one after the other"
fi
finish
