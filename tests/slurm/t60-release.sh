#!/usr/bin/env bash
# A task registered with kmuxd is released when it dies: kmuxd's record of
# it ends and its memory is free for the next job within a second.  Needs
# the preload's registration (REGISTER with job 0 at the first cuInit, from
# the branch wt-reg); without it the test says so and is skipped.
. "$(dirname "$0")/lib.sh"

committed() { kmux_on n1 top --once --json | python3 -c '
import json, sys
print(sum(g.get("mem_committed", 0) for g in json.load(sys.stdin).get("gpus", [])))'; }
slurm_job() { kmux_on n1 ps --all --json | python3 -c '
import json, sys
for j in json.load(sys.stdin):
    if j["name"].startswith("slurm-"):
        print(j["id"], j["pid"], j["state"], j["name"])' | tail -1; }

QUOTA_HOLD_MS=20000 T_SRUN -w n1 --kmux-mem=256M "$PROGS/quota" >"$TMP/out" 2>&1 &
srun_pid=$!
if ! wait_until 50 cond '[ -n "$(slurm_job)" ]'; then
	skip "the preload does not register processes with kmuxd yet (REGISTER job 0: branch wt-reg); task release untested"
	scancel --quiet -n quota 2>/dev/null
	kill "$srun_pid" 2>/dev/null
	wait "$srun_pid" 2>/dev/null
	finish
fi
read -r kid kpid kstate kname <<<"$(slurm_job)"
check "the task registered with n1's kmuxd as $kname" cond "[[ $kname == slurm-*.0.0 ]]"
check "registered as running" [ "$kstate" = running ]
check "its declared 256 MiB are committed" [ "$(committed)" -ge $((256 * 1048576)) ]
kill -9 "$kpid"
t0=$(date +%s%N)
wait_until 20 cond '[ "$(kmux_on n1 ps --all --json | python3 -c "
import json, sys
print([j[\"state\"] for j in json.load(sys.stdin) if j[\"id\"] == $kid][0])")" != running ]'
t1=$(date +%s%N)
check "killed task: kmuxd's record ends ($(( (t1 - t0) / 1000000 )) ms)" [ $(( (t1 - t0) / 1000000 )) -lt 2000 ]
check "killed task: its memory is released" [ "$(committed)" -eq 0 ]
wait "$srun_pid"
check "srun reports the task's death" [ $? -ne 0 ]
finish
