#!/usr/bin/env bash
# kill -9 of the daemon loses nothing: the queued job is still queued after
# a restart (which replaces the stale socket) and then runs; the running
# job kept running without the daemon, is watched again, and its end frees
# its memory for the queued one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

start_daemon
# Job 1 runs until the test has looked (at most 60 s), not for a fixed time
# a loaded machine can overrun before the checks that it is still running.
GO=$TMP/a-may-end
a=$("$KMUX" submit -m 10G -- sh -c "for i in \$(seq 1200); do [ -e '$GO' ] && break; sleep 0.05; done; echo a-done")
b=$("$KMUX" submit -m 10G -- echo b-ran)
check "job $a runs" wait_state "$a" running
check "job $b is queued" [ "$(jq_job "$b" 'j["state"]')" = queued ]
apid=$(jq_job "$a" 'j["pid"]')
kill9_daemon
check "after kill -9 the socket is stale" [ -S "$KMUX_SOCKET" ]
expect_rc 0 "ps without a daemon reads its database" "$KMUX" ps
check "  ... and says so" err_has "no kmuxd is running; these are the jobs as its database"
check "  ... job $a as running, job $b as queued" \
	cond 'grep -Eq "^ +$a +running" "$TMP/out" && grep -Eq "^ +$b +queued" "$TMP/out"'
check "the running job outlived the daemon" kill -0 "$apid"
expect_rc 0 "a new daemon starts on the stale socket" start_daemon
check "  ... and logs that it replaced it" grep -q "replaced the stale socket" "$KMUX_STATE_DIR/kmuxd.log" 
check "job $b is still queued" [ "$(jq_job "$b" 'j["state"]')" = queued ]
check "job $a is still running" [ "$(jq_job "$a" 'j["state"]')" = running ]
touch "$GO"
expect_rc 0 "job $b runs once job $a ended" "$KMUX" wait "$b"
check "  ... with its output in its log" grep -qx b-ran <("$KMUX" logs "$b")
a_end=$(jq_job "$a" 'j["end_us"]')
b_start=$(jq_job "$b" 'j["start_us"]')
check "  ... after job $a ended, by the daemon's clock" [ "$b_start" -ge "$a_end" ]
check "job $a's output is complete" grep -qx a-done <("$KMUX" logs "$a")
expect_rc 125 "wait on job $a: its status was not seen by anyone" "$KMUX" wait "$a"
check "  ... says so" err_has "unknown"

# A job that dies while no daemon runs is found gone at the restart, and
# the job queued behind it runs.
d=$("$KMUX" submit -m 15G -- sleep 5)
e=$("$KMUX" submit -m 15G -- echo e-ran)
wait_state "$d" running
dpid=$(jq_job "$d" 'j["pid"]')
kill -9 "$(daemon_pid)"
kill -9 -- "-$dpid" 2>/dev/null
sleep 0.1
start_daemon
check "a job that died with no daemon is exited, status unknown" \
	[ "$(jq_job "$d" 'j["state"], j["exit_code"]')" = "('exited', None)" ]
expect_rc 0 "the job queued behind it runs" "$KMUX" wait "$e"
check "  ... output intact" grep -qx e-ran <("$KMUX" logs "$e")

# `kmux wait` outlives a daemon restart: it connects again and gets the
# status from the new daemon.
GO2=$TMP/f-may-end
f=$("$KMUX" submit -m 10G -- sh -c "for i in \$(seq 1200); do [ -e '$GO2' ] && break; sleep 0.05; done")
g=$("$KMUX" submit -m 10G -- sh -c 'exit 7')
wait_state "$f" running
"$KMUX" wait "$g" >"$TMP/w.out" 2>"$TMP/w.err" &
wp=$!
# Connected to the daemon (its socket among the client's files) before the kill.
for i in $(seq 200); do
	ls -l "/proc/$wp/fd" 2>/dev/null | grep -q 'socket:' && break
	sleep 0.05
done
dpid=$(daemon_pid)
kill -9 "$dpid"
for i in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
start_daemon
touch "$GO2"
wait "$wp"
check "wait across a restart: the job's own status (7)" [ $? -eq 7 ]
check "  ... after saying it waits for kmuxd" \
	grep -q "waiting up to 60 s for kmuxd to come back" "$TMP/w.err"

# A daemon that comes back without the job (its database lost) answers at
# once: the wait ends then, not after the 60 s of looking for a daemon.
h=$("$KMUX" submit -- sleep 5)
wait_state "$h" running
hpid=$(jq_job "$h" 'j["pid"]')
"$KMUX" wait "$h" >"$TMP/w2.out" 2>"$TMP/w2.err" &
wp=$!
sleep 0.3
dpid=$(daemon_pid)
kill -9 "$dpid"
for i in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
rm -rf "$KMUX_STATE_DIR"
start_daemon
t0=$(date +%s)
wait "$wp"
rc=$?
kill -9 -- "-$hpid" 2>/dev/null
check "a restarted daemon that does not know the job: wait exits 125" [ "$rc" -eq 125 ]
check "  ... within seconds, not the full 60 s" [ $(($(date +%s) - t0)) -le 5 ]
check "  ... and says no such job" grep -qi "no .*job" "$TMP/w2.err"

# A restart with fewer GPUs, or none (NVML failed to load, a card out for
# repair), holds the queued jobs it cannot run now instead of failing them:
# nothing queued is lost, and they run once a daemon with the GPUs starts.
stop_daemon
GO3=$TMP/blk-may-end
KMUX_FAKE_GPUS=2:16G start_daemon
blk=$("$KMUX" submit --gpus 2 -m 15G -- sh -c "for i in \$(seq 1200); do [ -e '$GO3' ] && break; sleep 0.05; done")
two=$("$KMUX" submit --gpus 2 -m 1G -- echo two-ran)
one=$("$KMUX" submit -m 1G -- echo one-ran)
check "2 GPUs: job $blk runs on both" wait_state "$blk" running
check "  ... jobs $two (2 GPUs) and $one (1 GPU) wait behind it" \
	cond '[ "$(job_state "$two")" = queued ] && [ "$(job_state "$one")" = queued ]'
blkpid=$(jq_job "$blk" 'j["pid"]')
stop_daemon
KMUX_FAKE_GPUS=1:16G start_daemon
check "restarted with 1 GPU: job $two is held, not failed" \
	[ "$(jq_job "$two" 'j["state"], j["held"]')" = "('queued', 'gpus')" ]
check "  ... ps says why" \
	cond '"$KMUX" ps | grep -Eq "^ +$two +held \(GPUs\) "'
check "  ... the log says why" \
	grep -q "job $two held: it asks for 2 GPUs and this node has 1 now" "$KMUX_STATE_DIR/kmuxd.log"
check "  ... job $one is queued, not held" \
	[ "$(jq_job "$one" 'j["state"], j["held"]')" = "('queued', None)" ]
expect_rc 4 "  ... a new 2-GPU submission is still refused" \
	"$KMUX" submit --gpus 2 -- true
check "  ... saying why" err_has "2 GPUs asked for, but this node has 1"
stop_daemon
KMUX_FAKE_GPUS=0 expect_rc 0 "restarted with no GPUs: the daemon starts" start_daemon
check "  ... and says so loudly" err_has "no GPUs: KMUX_FAKE_GPUS=0 simulates a node without GPUs.  kmuxd runs but admits nothing"
held_two=$(jq_job "$two" 'j["held"]')
held_one=$(jq_job "$one" 'j["held"]')
check "  ... both jobs held (no GPUs)" \
	cond '[ "$held_two" = no-gpus ] && [ "$held_one" = no-gpus ]'
check "  ... ps says so" cond '"$KMUX" ps | grep -Eq "^ +$one +held \(no GPUs\) "'
"$KMUX" top --once >"$TMP/top.out" 2>&1
check "  ... top says why there are none" \
	grep -q "kmuxd has no GPUs: KMUX_FAKE_GPUS=0 simulates" "$TMP/top.out"
check "  ... top --json too" \
	[ "$(top_json 't["no_gpus"]')" = "KMUX_FAKE_GPUS=0 simulates a node without GPUs" ]
check "job $blk kept running through all this" kill -0 "$blkpid"
stop_daemon
touch "$GO3"
check "job $blk ends while no daemon runs" \
	wait_for 10 cond '! kill -0 "$blkpid" 2>/dev/null'
KMUX_FAKE_GPUS=2:16G start_daemon
expect_rc 0 "back with 2 GPUs: the held 2-GPU job runs" "$KMUX" wait "$two"
check "  ... its output intact" grep -qx two-ran <("$KMUX" logs "$two")
expect_rc 0 "  ... and so does the 1-GPU job" "$KMUX" wait "$one"
check "  ... its output intact" grep -qx one-ran <("$KMUX" logs "$one")

# `kmux run` outlives a restart too.  Queued: it finds the new daemon and
# takes its job back (ATTACH), which the new daemon kept queued for it;
# its command then runs and kmux run exits with its status.
stop_daemon
start_daemon
# job_named NAME: the id of the job of that name.
job_named() {
	"$KMUX" ps --all --json | python3 -c '
import json, sys
print([j["id"] for j in json.load(sys.stdin) if j["name"] == sys.argv[1]][0])' "$1"
}
GO4=$TMP/big-may-end
big=$("$KMUX" submit -m 15G -- sh -c "for i in \$(seq 1200); do [ -e '$GO4' ] && break; sleep 0.05; done")
check "job $big runs" wait_state "$big" running
"$KMUX" run -m 10G -n behind -- sh -c "echo run-ran >'$TMP/run.out'; exit 7" \
	>"$TMP/r.out" 2>"$TMP/r.err" &
rp=$!
check "a kmux run waits behind it" wait_for 10 grep -q "kmux: queued" "$TMP/r.err"
rjob=$(job_named behind)
kill9_daemon
start_daemon
check "after kill -9 and a restart its job $rjob is still queued" \
	[ "$(job_state "$rjob")" = queued ]
check "  ... and kmux run takes it back" \
	wait_for 10 grep -q "kmux: run: job $rjob is queued again" "$TMP/r.err"
check "  ... (the daemon's log says so)" \
	grep -q "job $rjob: its \`kmux run\` is back" "$KMUX_STATE_DIR/kmuxd.log"
touch "$GO4"
wait "$rp"
check "  ... its command runs once there is room, and kmux run exits 7" [ $? -eq 7 ]
check "  ... the command's output is there" grep -qx run-ran "$TMP/run.out"
check "  ... the job is recorded exited 7" \
	[ "$(jq_job "$rjob" 'j["state"], j["exit_code"]')" = "('exited', 7)" ]
check "  ... kmux run said it waited for kmuxd" \
	grep -q "while job $rjob was queued; waiting up to 60 s for kmuxd to come back" "$TMP/r.err"

# A queued kmux run that dies while no daemon runs: the new daemon keeps
# its job for 5 s, then cancels it (nobody would start it).
rm -f "$GO4"
big=$("$KMUX" submit -m 15G -- sh -c "for i in \$(seq 1200); do [ -e '$GO4' ] && break; sleep 0.05; done")
check "job $big runs" wait_state "$big" running
"$KMUX" run -m 10G -n orphan -- true >/dev/null 2>"$TMP/r2.err" &
rp=$!
check "a kmux run waits behind it" wait_for 10 grep -q "kmux: queued" "$TMP/r2.err"
rjob=$(job_named orphan)
kill9_daemon
kill -9 "$rp"
wait "$rp" 2>/dev/null
start_daemon
check "its client dead, job $rjob is kept queued at first" \
	[ "$(job_state "$rjob")" = queued ]
check "  ... and cancelled once nobody came back (5 s)" \
	wait_state "$rjob" cancelled 100
check "  ... the log says why" \
	grep -q "job $rjob: its \`kmux run\` did not come back within 5 s of the restart: cancelled" "$KMUX_STATE_DIR/kmuxd.log"
touch "$GO4"
"$KMUX" wait "$big" >/dev/null 2>&1

# Running: kmux run told the daemon its command's pid, so the daemon that
# recovers the job watches it (and can cancel it); kmux run, its command
# over, finds the new daemon and records the status.
GO5=$TMP/run-may-end
"$KMUX" run -m 1G -n runs -- sh -c "for i in \$(seq 1200); do [ -e '$GO5' ] && break; sleep 0.05; done; exit 5" \
	>/dev/null 2>"$TMP/r3.err" &
rp=$!
runs_running() { [ "$(job_state "$(job_named runs 2>/dev/null)")" = running ]; }
check "a kmux run runs" wait_for 10 runs_running
rjob=$(job_named runs)
check "  ... kmuxd knows its command's pid (no CUDA, so from kmux run)" \
	wait_for 10 grep -q "job $rjob: its command runs as pid" "$KMUX_STATE_DIR/kmuxd.log"
kill9_daemon
start_daemon
check "after kill -9 and a restart the job still runs (not lost)" \
	[ "$(job_state "$rjob")" = running ]
check "  ... its 1 GiB still committed" \
	[ "$(top_json 't["gpus"][0]["mem_committed"] >> 30')" = 1 ]
touch "$GO5"
wait "$rp"
check "its daemon restarted while it ran: kmux run exits 5" [ $? -eq 5 ]
exited_5() { [ "$(jq_job "$rjob" 'j["state"], j["exit_code"]')" = "('exited', 5)" ]; }
check "  ... and the job is recorded exited 5, not unknown" wait_for 5 exited_5

# The new daemon can cancel it: it signals the command, whose pid it
# recovered, and SIGKILLs it after the grace period if it must.
"$KMUX" run -m 1G -n runs2 -- sh -c 'trap "" TERM; for i in $(seq 200); do sleep 0.05; done; exit 5' \
	>/dev/null 2>"$TMP/r4.err" &
rp=$!
runs2_pid() { grep -q "job $(job_named runs2 2>/dev/null): its command runs as pid" "$KMUX_STATE_DIR/kmuxd.log"; }
check "a kmux run runs" wait_for 10 runs2_pid
rjob=$(job_named runs2)
kill9_daemon
start_daemon --kill-grace 0.5
expect_rc 0 "the restarted daemon cancels it" "$KMUX" cancel "$rjob"
wait "$rp"
check "  ... its command is killed (SIGKILL after the grace): kmux run exits 137" [ $? -eq 137 ]
check "  ... the job is recorded cancelled" wait_state "$rjob" cancelled 50
finish
