#!/usr/bin/env bash
# Registered processes over their life (issue 4, items 3, 4, 7): usage
# reports (memory used, kernels/s in ps and top), a killed process released
# within 1 s, the learned profile used by the next run of the same command,
# CUDA_VISIBLE_DEVICES set before kmux (a Slurm task) honoured in placement,
# and a daemon killed with -9 while the process runs: the process runs on
# and registers again with the restarted daemon, which shows it running
# with its memory.
KMUX_FAKE_GPUS=2:16G
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"
export SIMCUDA_DEVICES=2

. "$(dirname "$0")/reg-lib.sh"
committed() { top_json "sum(g['mem_committed'] for g in t['gpus']) >> 30"; }

start_daemon --guess 0.25

# Usage: 16 MiB resident, about 20 kernels/s (120 launches over 6 s).  The
# daemon has a rate once two reports a second apart came: wait for it (a
# loaded machine delays them), rather than look after a fixed time.
KMUX_NAME=usage LD_PRELOAD=$PRELOAD "$R" 16 6000 120 >"$TMP/u" 2>&1 &
pu=$!
wait_line "$TMP/u" ready
ju=$(job_of usage)
rate_of() { jq_job "$1" 'j["kernel_rate"]'; }
wait_for 5 cond '[ "$(rate_of "$ju")" -gt 0 ]'
check "ps --json: memory used is its 16 MiB" [ "$(jq_job "$ju" 'j["mem_used"] >> 20')" = 16 ]
rate=$(rate_of "$ju")
check "ps --json: kernels/s near 20 (got $rate)" cond '[ "$rate" -ge 10 ] && [ "$rate" -le 30 ]'
"$KMUX" top --once >"$TMP/top"
check "top: the task's line shows used / quota and kernels/s" \
	grep -Eq "^ +$ju  running +[01] +16.00 MiB / 4.00 GiB +[0-9]+ " "$TMP/top"
wait "$pu"
check "after it ended: its peak recorded (16 MiB)" [ "$(jq_job "$ju" 'j["mem_peak"] >> 20')" = 16 ]

# Learned: the second run of the same command is admitted with its peak
# (+10%, whole MiB) instead of the 4 GiB guess.
LD_PRELOAD=$PRELOAD "$R" 100 >"$TMP/l1" 2>&1
check "first run of 'reg 100': the guessed quota" has "$TMP/l1" "total=4096"
check "  ... its job ends with the process" wait_state "$(job_of reg)" exited 20
check "  ... its peak (100 MiB) reported before the exit" \
	[ "$(jq_job "$(job_of reg)" 'j["mem_peak"] >> 20')" = 100 ]
LD_PRELOAD=$PRELOAD "$R" 100 >"$TMP/l2" 2>&1
check "second run: the learned need (peak + 10%, rounded up to a MiB)" grep -Eqx "total=11[01]" "$TMP/l2"
check "  ... and it still gets its 100 MiB" has "$TMP/l2" "alloc err=0"

# CUDA_VISIBLE_DEVICES set before (a Slurm task on GPU 1): placed on GPU 1
# although GPU 0 is emptier; the variable is left as it was.
# The first holds GPU 1 until the second was seen waiting ($TMP/go-v1).
REG_HOLD_FILE=$TMP/go-v1 KMUX_MEM=12G KMUX_NAME=on1 CUDA_VISIBLE_DEVICES=1 LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/v1" 2>&1 &
pv1=$!
wait_line "$TMP/v1" ready
check "CUDA_VISIBLE_DEVICES=1: the job is on GPU 1" [ "$(jq_job "$(job_of on1)" 'j["gpus"]')" = "[1]" ]
check "  ... its CUDA_VISIBLE_DEVICES unchanged" has "$TMP/v1" "cvd=1"
KMUX_MEM=12G KMUX_NAME=on1b CUDA_VISIBLE_DEVICES=1 LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/v2" 2>&1 &
pv2=$!
wait_job on1b
check "a second 12 GiB task limited to GPU 1 waits (GPU 0 is free)" \
	[ "$(jq_job "$(job_of on1b)" 'j["state"]')" = queued ]
touch "$TMP/go-v1"
wait "$pv1" "$pv2"
check "  ... and runs on GPU 1 after the first" [ "$(jq_job "$(job_of on1b)" 'j["gpus"], j["state"]')" = "([1], 'exited')" ]
CUDA_VISIBLE_DEVICES=GPU-1234 KMUX_LOG=info LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/uuid" 2>&1
check "CUDA_VISIBLE_DEVICES by UUID: runs unmanaged, and says so" \
	grep -q "names no GPU indices" "$TMP/uuid"

# fork(): a child that outlives its parent does not hold the parent's
# registration (its copy of the connection is closed).
REG_FORK_MS=4000 KMUX_NAME=forker LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/f" 2>&1
child=$(sed -n 's/^child=//p' "$TMP/f")
check "fork: the parent exits, its child still runs" kill -0 "$child"
check "  ... the parent's job ends all the same" wait_state "$(job_of forker)" exited 20
check "  ... and its memory is free" [ "$(committed)" = 0 ]

# Killed from outside: its memory is given to the task waiting for it
# within 1 s.
KMUX_MEM=14G KMUX_NAME=victim LD_PRELOAD=$PRELOAD "$R" 16 60000 >"$TMP/k1" 2>&1 &
pk1=$!
KMUX_MEM=14G KMUX_NAME=victim2 LD_PRELOAD=$PRELOAD "$R" 16 60000 >"$TMP/k2" 2>&1 &
pk2=$!
wait_line "$TMP/k1" ready
wait_line "$TMP/k2" ready
KMUX_MEM=14G KMUX_NAME=waiter LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/k3" 2>&1 &
pk3=$!
wait_job waiter
check "a third 14 GiB task waits" [ "$(jq_job "$(job_of waiter)" 'j["state"]')" = queued ]
t0=$(date +%s%N)
kill -9 "$pk1"; wait "$pk1" 2>/dev/null
wait_line "$TMP/k3" ready 30
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
check "kill -9 of one: the waiting task runs within 1 s (${ms} ms)" [ "$ms" -lt 1000 ]
check "  ... the killed one's job has ended" [ "$(jq_job "$(job_of victim)" 'j["state"]')" = exited ]
wait "$pk3"

# kill -9 of the daemon while victim2 runs: it runs on, and registers again
# with the restarted daemon as the same running job with its memory.
jv=$(job_of victim2)
kill9_daemon
check "daemon gone: the task runs on" kill -0 "$pk2"
start_daemon --guess 0.25
ok=1
for i in $(seq 150); do
	[ "$(jq_job "$jv" 'j["state"], j["mem_used"] >> 20, j["mem_quota"] >> 30')" = "('running', 16, 14)" ] && ok=0 && break
	sleep 0.1
done
check "restarted daemon: the same job, running, with 16 MiB used of 14 GiB" [ $ok -eq 0 ]
check "  ... its 14 GiB committed again" [ "$(committed)" = 14 ]
kill -9 "$pk2"; wait "$pk2" 2>/dev/null
check "  ... and released when it dies" wait_state "$jv" exited 20
check "  ... nothing committed" [ "$(committed)" = 0 ]

# The daemon's database lost (a new state directory): the process is
# adopted as a new running job with what it holds.
KMUX_MEM=5G KMUX_NAME=adopt LD_PRELOAD=$PRELOAD "$R" 16 60000 >"$TMP/ad" 2>&1 &
pad=$!
wait_line "$TMP/ad" ready
kill9_daemon
export KMUX_STATE_DIR=$TMP/state2
start_daemon --guess 0.25
for i in $(seq 150); do
	[ -n "$(job_of adopt)" ] && break
	sleep 0.1
done
ja=$(job_of adopt)
check "a daemon that never knew it: adopted as running with its 5 GiB" \
	[ "$(jq_job "$ja" 'j["state"], j["mem_quota"] >> 30, j["pid"]')" = "('running', 5, $pad)" ]
kill -9 "$pad"; wait "$pad" 2>/dev/null
check "  ... released when it dies" wait_state "$ja" exited 20
finish
