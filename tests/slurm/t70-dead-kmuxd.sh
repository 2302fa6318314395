#!/usr/bin/env bash
# kmuxd killed (SIGKILL) while a job's task runs under it: the task keeps
# its quota and runs to the end (its CUDA calls after the death still
# work), the job's output says what happened, nothing hangs; when a kmuxd
# is back, the task registers with it again.
. "$(dirname "$0")/lib.sh"

pid_of_kmuxd() { cat "$SC/kmux/n1/sock.lock" 2>/dev/null; }
slurm_task() { kmux_on n1 ps --json 2>/dev/null | python3 -c '
import json, sys
for j in json.load(sys.stdin):
    if j["name"].startswith("slurm-"):
        print(j["id"], j["pid"], j["name"])' | tail -1; }

# 128 MiB of steps of 64: two fit, the third is over the quota.  It holds
# them 6 s, time enough to kill kmuxd and start another.
t0=$(date +%s)
QUOTA_HOLD_MS=6000 T_SRUN -w n1 --kmux-mem=128M "$PROGS/quota" 64 3 \
	>"$TMP/out" 2>"$TMP/err" &
srun_pid=$!
if ! wait_until 50 cond '[ -n "$(slurm_task)" ]'; then
	skip "the task did not register with n1's kmuxd; dead-kmuxd case untested"
	wait "$srun_pid"
	finish
fi
read -r kid kpid kname <<<"$(slurm_task)"
check "the task registered with n1's kmuxd ($kname)" cond "[[ $kname == slurm-*.0.0 ]]"
old=$(pid_of_kmuxd)
kill -9 "$old"
wait_until 50 sh -c "! kill -0 $old 2>/dev/null"
check "n1's kmuxd is dead (SIGKILL)" sh -c "! kill -0 $old 2>/dev/null"
# A new daemon on the same socket (what systemd's Restart= would do).
KMUX_FAKE_GPUS=2:1G "$KMUX" daemon --socket "$SC/kmux/n1/sock" \
	--state-dir "$SC/kmux/n1/state" --slurm-node n1 --slurm-interval 1
check "a new kmuxd on n1" test -S "$SC/kmux/n1/sock"
# The new daemon recovers the job from its state; the task's own
# connection is what says it is alive and tracked again.
again="job $kid: pid $kpid registered again"
wait_until 60 has "$SC/kmux/n1/state/kmuxd.log" "$again"
check "the task registered again with the new kmuxd" has "$SC/kmux/n1/state/kmuxd.log" "$again"

wait "$srun_pid"
rc=$?
check "the job ran to the end (exit $rc)" [ "$rc" -eq 0 ]
check "no hang: it took the task's own time ($(( $(date +%s) - t0 )) s)" \
	[ $(( $(date +%s) - t0 )) -lt 30 ]
check "its quota held: got 128 MiB" hasx "$TMP/out" "got 128"
check "CUDA calls after kmuxd's death worked (free, alloc again)" \
	hasx "$TMP/out" "realloc err=0"
check "the job's output says kmuxd went away" \
	has "$TMP/err" "kmux: kmuxd on $SC/kmux/n1/sock went away; job [0-9]* runs on"
finish
