#!/usr/bin/env bash
# Slurm itself keeps declared GPU memory within a node's: n1 advertises
# 2048 MiB of kmuxmem; beside a running 1536M job a 768M job pends (with a
# CPU free: it is the memory it waits for) until the first ends, then runs.
. "$(dirname "$0")/lib.sh"

sub() { sbatch --parsable -w n1 -o /dev/null "$@"; }
node_field() { scontrol -o show node n1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }

a=$(sub --kmux-mem=1536M --wrap "sleep 3")
wait_until 100 job_state_is "$a" RUNNING
check "A (1536M) runs" job_state_is "$a" RUNNING
b=$(sub --kmux-mem=768M --wrap "sleep 0.5")
sleep 1
check "B (768M, would make 2304 of 2048 MiB) pends while A runs" \
	cond "job_state_is $a RUNNING && job_state_is $b PENDING"
check "B pends for resources" [ "$(job_field "$b" Reason)" = Resources ]
if [ "$(node_field CPUTot)" -ge 2 ]; then
	check "with a CPU of n1 free (CPUAlloc < CPUTot): it waits for memory" \
		[ "$(node_field CPUAlloc)" -lt "$(node_field CPUTot)" ]
else
	skip "one CPU per node on this machine: B waits for the CPU as well"
fi
wait_until 200 job_state_is "$b" COMPLETED
check "B ran once A ended" job_state_is "$b" COMPLETED
a_end=$(date -d "$(job_field "$a" EndTime)" +%s)
b_start=$(date -d "$(job_field "$b" StartTime)" +%s)
check "B started no earlier than A ended ($b_start >= $a_end)" [ "$b_start" -ge "$a_end" ]
# Two that fit together run together (given two CPUs).
[ "$(node_field CPUTot)" -ge 2 ] || { skip "two jobs at once need 2 CPUs"; finish; }
c=$(sub --kmux-mem=1G --wrap "sleep 2")
d=$(sub --kmux-mem=1G --wrap "sleep 2")
wait_until 50 cond "job_state_is $c RUNNING && job_state_is $d RUNNING"
check "two 1G jobs (2048 of 2048 MiB) run at once" \
	cond "job_state_is $c RUNNING && job_state_is $d RUNNING"
# Gone before the next test: busy CPUs on n1 would steer t40's jobs.
scancel --quiet "$c" "$d"
wait_until 100 cond '[ -z "$(squeue -h -o %i)" ]'
finish
