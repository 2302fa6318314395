#!/usr/bin/env bash
# Busyness is learned from measurements (issue 4, item 4): while a job
# runs, kmuxd attributes each process's share of the GPU's SMs (NVML's
# per-process utilization; here simulated by KMUX_FAKE_PROC_UTIL) to the job
# it belongs to, and keeps the mean in the command's profile.  The next run
# of the same command is admitted by it: with --busy-max 1, four runs of a
# command measured at 0.2 share the GPU where the default prediction (0.5)
# lets two.  And while a job runs, its measurement replaces its prediction.
# What is learned is the job's demand (src/daemon/busy-est.c): over its
# active phase only (its start-up before its first kernel does not dilute
# it; the duty, which admission sums, is over its whole life), and
# corrected for contention (on a saturated GPU shared with other
# processes, a share relative to the heaviest one's).
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=1:16G
export KMUX_FAKE_PROC_UTIL=$TMP/util
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
: >"$KMUX_FAKE_PROC_UTIL"

start_daemon --busy-max 1 --default-busy 0.5
# The first run names its own pid in the simulated NVML's file as its
# first act (exec keeps the pid; UTIL_SELF, in the environment the job
# inherits, says so; the profile is keyed by the command line, the same
# for the runs below): written from here after it started, the daemon's
# first samples could see it idle on a loaded machine.
LEARNED=(sh -c '[ -z "$UTIL_SELF" ] || echo "0 $$ 20" >"$KMUX_FAKE_PROC_UTIL"; exec "$0" 16 2500' "$R")
a=$(UTIL_SELF=1 "$KMUX" submit -m 1G -- "${LEARNED[@]}")
check "the first run starts" wait_state "$a" running
"$KMUX" wait "$a" >/dev/null
check "  ... it ends (exit 0)" [ $? -eq 0 ]
check "  ... its busyness was measured: 0.20" \
	grep -q "job $a: measured busyness 0.20" "$KMUX_STATE_DIR/kmuxd.log"
: >"$KMUX_FAKE_PROC_UTIL"

ids=""
for i in 1 2 3 4; do ids="$ids $("$KMUX" submit -m 1G -- "${LEARNED[@]}")"; done
set -- $ids
j1=$1 j3=$3 j4=$4
check "the same command four times, admitted by its learned 0.2: all run" \
	wait_state "$j4" running 20
check "  ... at once" \
	cond '[ "$(jq_job "$j1" "j[\"state\"]")" = running ] && [ "$(jq_job "$j3" "j[\"state\"]")" = running ]'
b=$("$KMUX" submit -m 1G -- "$R" 17 2500)
c=$("$KMUX" submit -m 1G -- "$R" 17 2500)
check "  ... while a command never seen (predicted 0.5) waits" \
	cond '[ "$(jq_job "$c" "j[\"state\"]")" = queued ]'
"$KMUX" wait "$c" >/dev/null
check "  ... and runs when room frees (exit 0)" [ $? -eq 0 ]

# While running: two runs of a new command (0.5 each) fill the GPU; once
# they measure 0.1 for two seconds, their prediction is corrected and a
# third starts beside them.
d=$("$KMUX" submit -m 1G -- "$R" 18 8000)
e=$("$KMUX" submit -m 1G -- "$R" 18 8000)
f=$("$KMUX" submit -m 1G -- "$R" 18 8000)
wait_state "$e" running
check "a new command: two run, the third waits (predicted 0.5 each)" \
	cond '[ "$(jq_job "$f" "j[\"state\"]")" = queued ]'
printf '0 %s 10\n0 %s 10\n' "$(jq_job "$d" 'j["pid"]')" "$(jq_job "$e" 'j["pid"]')" \
	>"$KMUX_FAKE_PROC_UTIL"
check "  ... measured at 0.1 while they run, the third starts beside them" \
	wait_state "$f" running 50
check "  ... while the first two still run" \
	cond '[ "$(jq_job "$d" "j[\"state\"]")" = running ]'
"$KMUX" cancel "$d" "$e" "$f" >/dev/null 2>&1
wait_state "$d" cancelled 50; wait_state "$e" cancelled 50
wait_state "$f" cancelled 50
: >"$KMUX_FAKE_PROC_UTIL"

# The active phase: two seconds of start-up (imports, model construction:
# no kernel, so NVML lists no utilization), then 0.4 of the GPU.  The mean
# over its whole life would be about 0.2.
g=$("$KMUX" submit -m 1G -- sh -c 'sleep 2; echo "0 $$ 40" >"$KMUX_FAKE_PROC_UTIL"; exec "$0" 19 2500' "$R")
"$KMUX" wait "$g" >/dev/null
check "start-up, then busy: it ends (exit 0)" [ $? -eq 0 ]
check "  ... its busyness is learned over its active phase: 0.40" \
	grep -q "job $g: measured busyness 0.40 over" "$KMUX_STATE_DIR/kmuxd.log"
# Its duty (what admission sums) averages the start-up in: below 0.40,
# above 0 (about 0.4 x 2.5 / 4.5; the exact split depends on the ticks).
duty=$(sed -n "s/.*job $g: measured busyness 0.40 over .*, duty \([0-9.]*\)$/\1/p" \
	"$KMUX_STATE_DIR/kmuxd.log")
check "  ... its duty, over its whole life, is lower: $duty" \
	awk -v d="$duty" 'BEGIN { exit !(d != "" && d > 0.05 && d < 0.36) }'
: >"$KMUX_FAKE_PROC_UTIL"

# Contention: a heavy job and a light one share a GPU that a process kmux
# does not manage (pid 1 here) saturates with them: 45 %, 45 % and 8 %.
# The heavy job got as much as the heaviest process there: taken to want
# the whole GPU (1.00); the light one 8/45 of that (0.18), not its 0.08.
h=$("$KMUX" submit -m 1G -- "$R" 20 4000)
l=$("$KMUX" submit -m 1G -- "$R" 21 4000)
wait_state "$h" running && wait_state "$l" running
printf '0 1 45\n0 %s 45\n0 %s 8\n' "$(jq_job "$h" 'j["pid"]')" \
	"$(jq_job "$l" 'j["pid"]')" >"$KMUX_FAKE_PROC_UTIL"
"$KMUX" wait "$h" >/dev/null
check "a saturated GPU: the heavy job ends (exit 0)" [ $? -eq 0 ]
"$KMUX" wait "$l" >/dev/null
check "  ... and the light one (exit 0)" [ $? -eq 0 ]
check "  ... the heavy one is learned as the whole GPU: 1.00" \
	grep -q "job $h: measured busyness 1.00 over" "$KMUX_STATE_DIR/kmuxd.log"
check "  ... the light one in proportion: 0.18" \
	grep -q "job $l: measured busyness 0.18 over" "$KMUX_STATE_DIR/kmuxd.log"
finish
