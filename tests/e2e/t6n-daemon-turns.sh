#!/usr/bin/env bash
# Turns (src/daemon/turns.c): two first runs that wait on the GPU
# thousands of times a second were admitted together, before anyone knew;
# once kmuxd sees both are wait-bound, it pauses one at a time at its
# submissions (the gate file's paused pids) and rotates the turn, so that
# they do not time-slice each other.  A task that hardly waits, on the same
# GPU, is never paused.  Time paused is left out of the wait rate the
# profiles learn.  A paused task does not wait for a dead daemon.  With
# --slice-waits 0 there are no turns.
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=1:16G
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
LOG=$KMUX_STATE_DIR/kmuxd.log

start_daemon
# Two commands never seen (no profile: both admitted at once) and one that
# hardly waits; the preloads log at info level (their exit lines).  The
# waiting ones go on until the test has seen turns (REG_SYNC_UNTIL), not for
# a time a loaded machine may overrun.
STOP=$KMUX_STATE_DIR/stop-syncing
a=$(KMUX_LOG=info REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "$R" 16 2)
b=$(KMUX_LOG=info REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "$R" 16 3)
c=$(KMUX_LOG=info "$KMUX" submit -m 1G -- "$R" 16 3500 70)
check "two waiting programs and a quiet one run at once" \
	wait_for 10 cond '[ "$(job_state "$a")" = running ] && [ "$(job_state "$b")" = running ] && [ "$(job_state "$c")" = running ]'
check "  ... both waiting ones are seen to be wait-bound" \
	wait_for 20 cond 'grep -q "job $a waits for the GPU" "$LOG" && grep -q "job $b waits for the GPU" "$LOG"'
check "  ... and take turns" \
	wait_for 10 grep -q "GPU 0: 2 wait-bound tasks share it without MPS: they take turns of 500 ms" "$LOG"
sleep 1.5	# three turns: each is paused at least once
touch "$STOP"
for j in "$a" "$b" "$c"; do "$KMUX" wait "$j" >/dev/null; done
check "  ... all three end (exit 0)" \
	cond '[ "$(job_state "$a")" = "exited" ] && [ "$(job_state "$b")" = exited ] && [ "$(job_state "$c")" = exited ]'
check "  ... the turns end with them" grep -q "GPU 0: turns end" "$LOG"
"$KMUX" logs "$a" >"$TMP/a.log" 2>&1
"$KMUX" logs "$b" >"$TMP/b.log" 2>&1
"$KMUX" logs "$c" >"$TMP/c.log" 2>&1
ta=$(sed -n 's/.*waited \([0-9.]*\) ms for its turn on the GPU.*/\1/p' "$TMP/a.log")
tb=$(sed -n 's/.*waited \([0-9.]*\) ms for its turn on the GPU.*/\1/p' "$TMP/b.log")
check "the first was paused for its turn (${ta:-never} ms)" \
	cond '[ -n "$ta" ] && [ "${ta%.*}" -ge 100 ]'
check "the second too (${tb:-never} ms)" \
	cond '[ -n "$tb" ] && [ "${tb%.*}" -ge 100 ]'
check "the quiet one never was" \
	cond '! grep -q "for its turn" "$TMP/c.log"'
check "  ... and it ran its 70 kernels (exit 0)" grep -qx "done" "$TMP/c.log"
check "the profiles learn the rates without the paused time" \
	cond 'grep "job $a: waited for the GPU" "$LOG" | grep -qv "(0.0 s paused"'
stop_daemon

# The daemon dies (kill -9) during turns: the paused task does not wait for
# a turn that no one will give it; both run to their end.
rm -f "$STOP"
f=$(REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "$R" 16 6)
g=$(REG_SYNC_UNTIL=$STOP REG_SYNC_MS=500 "$KMUX" submit -m 1G -- "$R" 16 7)
wait_state "$g" running
fp=$(jq_job "$f" 'j["pid"]')
gp=$(jq_job "$g" 'j["pid"]')
check "two more first runs take turns" \
	wait_for 20 cond '[ "$(grep -c "take turns" "$LOG")" -ge 2 ]'
kill9_daemon
touch "$STOP"
check "  ... after kill -9 of the daemon both still finish" \
	wait_for 20 cond '! kill -0 "$fp" 2>/dev/null && ! kill -0 "$gp" 2>/dev/null'
start_daemon
stop_daemon

# --slice-waits 0: nothing is wait-bound, nobody takes turns.
n0=$(wc -l <"$LOG")
start_daemon --slice-waits 0
d=$(KMUX_LOG=info REG_SYNC_MS=2000 "$KMUX" submit -m 1G -- "$R" 16 4)
e=$(KMUX_LOG=info REG_SYNC_MS=2000 "$KMUX" submit -m 1G -- "$R" 16 5)
"$KMUX" wait "$d" >/dev/null
"$KMUX" wait "$e" >/dev/null
check "--slice-waits 0: no turns" \
	cond '! tail -n "+$((n0 + 1))" "$LOG" | grep -q "take turns"'
"$KMUX" logs "$d" >"$TMP/d.log" 2>&1
check "  ... nobody waited for a turn" cond '! grep -q "for its turn" "$TMP/d.log"'
stop_daemon
finish
