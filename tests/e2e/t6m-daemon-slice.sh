#!/usr/bin/env bash
# Tasks that wait for the GPU thousands of times a second never share a
# GPU with each other when the GPUs are not shared through MPS (kmux daemon
# --slice-waits; docs/design-daemon.md, "Tasks that wait on the GPU often
# do not share one"): the preload counts the host's waits
# (synchronizations, synchronous copies to the host) and reports them;
# kmuxd measures the rate while a task runs (it turns wait-bound: no other
# wait-bound task joins it) and learns it into the command's profile (the
# next run is admitted as wait-bound).  A task that hardly waits joins a
# wait-bound one as before; --slice-waits 0 and --mps turn the rule off;
# bad values are usage errors.
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=1:16G
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
LOG=$KMUX_STATE_DIR/kmuxd.log

expect_rc 2 "--slice-waits -1" "$KMUX" daemon --slice-waits -1
check "  ... the error names the option" err_has "bad --slice-waits '-1'"
expect_rc 2 "--slice-waits abc" "$KMUX" daemon --slice-waits abc
expect_rc 2 "--slice-waits 1e10" "$KMUX" daemon --slice-waits 1e10
expect_rc 2 "--slice-waits 5x" "$KMUX" daemon --slice-waits 5x

start_daemon
check "the daemon logs the rule" grep -q "slice-waits 1000" "$LOG"

# The waiting program: launch, synchronize, in a loop (REG_SYNC_MS; the
# same command line every time: one profile).
WAITER=("$R" 16 0)
a=$(REG_SYNC_MS=2000 "$KMUX" submit -m 1G -- "${WAITER[@]}")
check "a program that waits on the GPU in a loop runs" wait_state "$a" running
check "  ... kmuxd sees it wait often: wait-bound" \
	wait_for 20 grep -q "job $a waits for the GPU [0-9]* times a second (--slice-waits 1000): wait-bound" "$LOG"
"$KMUX" wait "$a" >/dev/null
check "  ... it ends (exit 0)" [ $? -eq 0 ]
rate=$(sed -n "s/.*job $a: waited for the GPU \([0-9]*\) times a second.*/\1/p" "$LOG")
check "its profile learned its wait rate (${rate:-none}/s, >= 1000)" \
	[ "${rate:-0}" -ge 1000 ]
b=$("$KMUX" submit -m 1G -- "$R" 16 1500 30)
"$KMUX" wait "$b" >/dev/null
brate=$(sed -n "s/.*job $b: waited for the GPU \([0-9]*\) times a second.*/\1/p" "$LOG")
check "a program that hardly waits learns a low rate (${brate:-none}/s)" \
	cond '[ -n "$brate" ] && [ "$brate" -lt 1000 ]'

# Learned: two runs of the waiter never share the GPU; a task that hardly
# waits joins either.
# c, h, k, m and n wait until the test has looked (REG_SYNC_UNTIL), not
# for a time a loaded machine may overrun.
STOP=$KMUX_STATE_DIR/stop-syncing
c=$(REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "${WAITER[@]}")
check "learned: the next run says it is wait-bound" \
	wait_for 10 grep -q "job $c: its profile waits for the GPU [0-9]* times a second (1 runs; --slice-waits 1000): wait-bound" "$LOG"
check "  ... it runs" wait_state "$c" running
d=$(REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "${WAITER[@]}")
e=$("$KMUX" submit -m 1G -- "$R" 16 1000 20)
check "  ... a task that hardly waits runs beside it" wait_state "$e" running
check "  ... while a second wait-bound run waits" \
	[ "$(job_state "$d")" = queued ]
check "  ... ps --json calls both wait-bound" \
	cond '[ "$(jq_job "$c" "j[\"wait_bound\"]")" = True ] && [ "$(jq_job "$d" "j[\"wait_bound\"]")" = True ]'
check "  ... and not the one beside it" \
	[ "$(jq_job "$e" 'j["wait_bound"]')" = False ]
check "  ... with the running one's waits per second (>= 1000)" \
	wait_for 5 cond '[ "$(jq_job "$c" "j[\"wait_rate\"]")" -ge 1000 ]'

check "  ... (the first still runs)" job_running "$c"
touch "$STOP"
"$KMUX" wait "$d" >/dev/null
check "  ... and runs once the first ended (exit 0)" [ $? -eq 0 ]
check "  ... not before" cond '[ "$(jq_job "$d" "j[\"start_us\"] >= $(jq_job "$c" "j[\"end_us\"]")")" = True ]'

# Seen while it runs: a command with no profile turns out wait-bound; a
# learned wait-bound one submitted then waits for it to end.
rm -f "$STOP"
f=$(REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "$R" 16 1)
check "a new command that waits often is seen to while it runs" \
	wait_for 20 grep -q "job $f waits for the GPU [0-9]* times a second (--slice-waits 1000): wait-bound" "$LOG"
g=$(REG_SYNC_MS=300 "$KMUX" submit -m 1G -- "${WAITER[@]}")
sleep 0.5
check "  ... a learned wait-bound task submitted then waits" \
	[ "$(job_state "$g")" = queued ]
check "  ... while it runs" job_running "$f"
touch "$STOP"
"$KMUX" wait "$g" >/dev/null
check "  ... and runs after it (exit 0)" [ $? -eq 0 ]
stop_daemon

# --slice-waits 0 turns the rule off: two learned waiters share.
start_daemon --slice-waits 0
check "--slice-waits 0 is logged" grep -q "slice-waits 0" "$LOG"
rm -f "$STOP"
h=$(REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "${WAITER[@]}")
k=$(REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "${WAITER[@]}")
check "--slice-waits 0: a learned waiter runs" wait_state "$h" running
check "  ... and a second beside it" wait_state "$k" running
check "  ... at once" job_running "$h"
touch "$STOP"
"$KMUX" wait "$h" >/dev/null
"$KMUX" wait "$k" >/dev/null
stop_daemon

# Under MPS the rule is off: co-located contexts do not time-slice.
start_daemon --mps --mps-control "$ROOT/bench/gpu/mps-control-stub.sh"
check "--mps: the log says the rule is off" \
	grep -q "slice-waits 1000 (off: MPS shares the GPUs)" "$LOG"
rm -f "$STOP"
m=$(REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "${WAITER[@]}")
n=$(REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "${WAITER[@]}")
check "--mps: a learned waiter runs" wait_state "$m" running
check "  ... and a second beside it" wait_state "$n" running
check "  ... at once" job_running "$m"
check "  ... neither called wait-bound" \
	cond '! grep -q "job $m: its profile waits for the GPU" "$LOG"'
touch "$STOP"
"$KMUX" wait "$m" >/dev/null
"$KMUX" wait "$n" >/dev/null
stop_daemon
finish
