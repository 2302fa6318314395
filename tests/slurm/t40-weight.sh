#!/usr/bin/env bash
# Busyness steers Slurm: kmuxd (--slurm-node, --slurm-interval 1) turns its
# node's busyness into the node's weight; with n1 busy every new job goes
# to n2, and the other way round; a weight reset on the controller (as a
# reconfigure does) is put back.  Prints how long the weight took to move.
. "$(dirname "$0")/lib.sh"

# busy NODE: a kmux job holding 768M of one GPU there, for a minute.
busy() {
	kmux_on "$1" submit --mem 768M sleep 60 >/dev/null
}
idle() {
	local id
	for id in $(kmux_on "$1" ps --json | python3 -c '
import json, sys
print(" ".join(str(j["id"]) for j in json.load(sys.stdin)))'); do
		kmux_on "$1" cancel -s KILL "$id" >/dev/null
	done
}
heavier() { [ "$(node_weight "$1")" -gt "$(node_weight "$2")" ]; }
# A job still completing holds its CPU: two of them make a node full, and
# Slurm then sends the next job elsewhere whatever the weights say.
no_jobs() { [ -z "$(squeue -h -o %i)" ]; }
where() {
	wait_until 50 no_jobs
	T_SRUN sh -c 'echo $SLURMD_NODENAME'
}

# steer BUSY FREE: make BUSY busy, time the weight, place three jobs.
steer() {
	local t0 t1 n i
	idle "$2"
	wait_until 50 cond "[ \"\$(node_weight $2)\" = 1 ]"
	t0=$(date +%s%N)
	busy "$1"
	wait_until 50 heavier "$1" "$2"
	t1=$(date +%s%N)
	check "$1 busy: its weight rises above $2's ($(node_weight "$1") > $(node_weight "$2"), after $(( (t1 - t0) / 1000000 )) ms)" \
		heavier "$1" "$2"
	check "$1 busy: the weight moved within 2 s" [ $(( (t1 - t0) / 1000000 )) -le 2000 ]
	n=0
	for i in 1 2 3; do
		[ "$(where)" = "$2" ] && n=$((n + 1))
	done
	check "$1 busy: 3 of 3 new jobs go to $2 ($n)" [ "$n" -eq 3 ]
}

# Only the weights may differ between the nodes: no job of an earlier
# test may hold a CPU (a full node is skipped whatever its weight).
wait_until 100 no_jobs
check "no Slurm job left running" no_jobs
check "idle nodes: weight 1 each" cond "[ \"\$(node_weight n1)\" = 1 ] && [ \"\$(node_weight n2)\" = 1 ]"
steer n1 n2
steer n2 n1

# The controller forgets (reconfigure, restart): kmuxd puts it back within
# its check period (3 intervals) and a tick.
want=$(node_weight n2)
scontrol update NodeName=n2 Weight=1
check "weight of n2 reset to 1 behind kmuxd's back" [ "$(node_weight n2)" = 1 ]
wait_until 60 cond "[ \"\$(node_weight n2)\" = $want ]"
check "kmuxd puts n2's weight back ($want)" [ "$(node_weight n2)" = "$want" ]
scontrol reconfigure
wait_until 60 cond "[ \"\$(node_weight n2)\" = $want ]"
check "after scontrol reconfigure: weight back ($want)" [ "$(node_weight n2)" = "$want" ]
check "kmuxd logged why it set it again" \
	has "$SC/kmux/n2/state/kmuxd.log" "restarted or reconfigured"

idle n1
idle n2
wait_until 50 cond "[ \"\$(node_weight n1)\" = 1 ] && [ \"\$(node_weight n2)\" = 1 ]"
check "both idle again: weight 1 each" cond "[ \"\$(node_weight n1)\" = 1 ] && [ \"\$(node_weight n2)\" = 1 ]"
finish
