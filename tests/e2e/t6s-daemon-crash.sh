#!/usr/bin/env bash
# kmuxd killed (SIGKILL) inside the windows of a job's start, where a real
# crash lands only by chance.  The daemon's test knob KMUXD_TEST_DIE_AT=POINT
# (src/daemon/server.c, server_test_die; not for users) makes it kill
# itself at POINT:
#
#   admit  a job its client starts (`kmux run`) is recorded running, and
#          ADMIT is not sent yet.  The restarted daemon used to record it
#          lost (exited, code unknown): the command never ran and `kmux
#          run` exited 4, "failed before it started".  Now `kmux run`
#          attaches and gets ADMIT again; its command runs once.  With its
#          client dead too, the job keeps its memory 5 s, then is recorded
#          exited, code unknown, as before.
#   finished  a `kmux run`'s FINISHED is recorded and its OK not sent yet
#          (still in the daemon's buffers).  The client sends it again to
#          the new daemon, which used to answer "not yours to finish" (the
#          status was known already); now the same status again is OK.
#   spawn  a submitted job is forked and not yet exec'd.  Its pid used to be
#          recorded only after the exec: the restarted daemon recorded the
#          job lost while it ran on, its memory free for others.  Now it
#          finds the job running, its memory still committed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

# die_daemon POINT: a daemon that kills itself at POINT.
deaths=0
die_daemon() {
	deaths=$((deaths + 1))
	(export KMUXD_TEST_DIE_AT=$1; start_daemon)
}
# died_at POINT: it did (once more), and is gone.
died_at() {
	wait_for 10 daemon_unlocked &&
		grep -q "KMUXD_TEST_DIE_AT=$1: killing myself" "$KMUX_STATE_DIR/kmuxd.log" &&
		[ "$(grep -c "KMUXD_TEST_DIE_AT=" "$KMUX_STATE_DIR/kmuxd.log")" = "$deaths" ]
}
job_named() {
	"$KMUX" ps --all --json | python3 -c '
import json, sys
print([j["id"] for j in json.load(sys.stdin) if j["name"] == sys.argv[1]][0])' "$1"
}
committed_gib() { top_json 't["gpus"][0]["mem_committed"] >> 30'; }

# --- admit: the daemon dies between recording the start and ADMIT --------
# The run job waits behind a submitted one first, so that its client has
# OK and QUEUED (it knows its job) when the daemon dies admitting it.  A
# client that has not even had OK cannot know its job: it exits 5, and the
# job is recorded as below, "its client dead".
# blocker NAME: a submitted job holding 15 GiB until $TMP/NAME.go exists.
blocker() {
	"$KMUX" submit -m 15G -n "$1" -- sh -c "for i in \$(seq 1200); do [ -e '$TMP/$1.go' ] && break; sleep 0.05; done"
}
die_daemon admit
big=$(blocker big1)
check "job $big runs" wait_state "$big" running
"$KMUX" run -m 1G -n adm -- sh -c "echo ran >>'$TMP/adm.out'; exit 6" \
	>/dev/null 2>"$TMP/adm.err" &
rp=$!
check "a kmux run waits behind it" wait_for 10 grep -q "kmux: queued" "$TMP/adm.err"
rjob=$(job_named adm)
touch "$TMP/big1.go"
check "kmuxd dies after recording the run job's start, before ADMIT" \
	died_at admit
check "  ... its database says job $rjob runs" \
	[ "$(job_state "$rjob" 2>/dev/null)" = running ]
start_daemon
wait "$rp"
rc=$?
check "kmux run gets its job back from the new daemon and exits with its command's 6" \
	[ "$rc" -eq 6 ]
check "  ... its command ran once" cond '[ "$(cat "$TMP/adm.out" 2>/dev/null)" = ran ]'
check "  ... not 'failed before it started'" not grep -q "before it started" "$TMP/adm.err"
check "  ... the job is recorded exited 6" \
	[ "$(jq_job "$rjob" 'j["state"], j["exit_code"]')" = "('exited', 6)" ]
check "  ... the daemon's log says it sent ADMIT again" \
	grep -q "job $rjob: its \`kmux run\` is back (pid [0-9]*), admitted already: ADMIT again" \
	"$KMUX_STATE_DIR/kmuxd.log"
check "  ... and its memory is free again" wait_for 5 cond '[ "$(committed_gib)" = 0 ]'

# Its client dies too: nobody comes back.  The memory stays committed for
# the 5 s a client has, then the job is recorded lost as before.
stop_daemon
die_daemon admit
big=$(blocker big2)
check "job $big runs" wait_state "$big" running
"$KMUX" run -m 1G -n orphan -- sh -c "echo ran >>'$TMP/orphan.out'" \
	>/dev/null 2>"$TMP/orphan.err" &
rp=$!
check "a kmux run waits behind it" wait_for 10 grep -q "kmux: queued" "$TMP/orphan.err"
rjob=$(job_named orphan)
touch "$TMP/big2.go"
check "kmuxd dies again before ADMIT" died_at admit
kill -9 "$rp"
wait "$rp" 2>/dev/null
start_daemon
check "its client dead, job $rjob is kept running at first" \
	[ "$(job_state "$rjob")" = running ]
check "  ... its 1 GiB still committed" [ "$(committed_gib)" = 1 ]
check "  ... then recorded exited, code unknown (5 s)" wait_state "$rjob" exited 100
check "  ... with the code unknown" [ "$(jq_job "$rjob" 'j["exit_code"]')" = None ]
check "  ... its memory free" [ "$(committed_gib)" = 0 ]
check "  ... the log says why" \
	grep -q "job $rjob: its \`kmux run\` did not come back within 5 s of the restart and its command's pid is not known" \
	"$KMUX_STATE_DIR/kmuxd.log"
check "  ... its command never ran" not test -e "$TMP/orphan.out"

# --- finished: the daemon dies after recording a run's end, before OK ----
stop_daemon
die_daemon finished
"$KMUX" run -m 1G -n fin -- sh -c "exit 7" >/dev/null 2>"$TMP/fin.err" &
rp=$!
check "kmuxd dies after recording a kmux run's end, before its OK" \
	died_at finished
start_daemon
wait "$rp"
rc=$?
check "kmux run sends FINISHED again and exits with its command's 7 ($rc)" \
	[ "$rc" -eq 7 ]
check "  ... with no error" not grep -q "kmux: run" "$TMP/fin.err"
fjob=$(job_named fin)
check "  ... job $fjob recorded exited 7" \
	[ "$(jq_job "$fjob" 'j["state"], j["exit_code"]')" = "('exited', 7)" ]
check "  ... the new daemon took the same status again as recorded" \
	grep -q "job $fjob: its \`kmux run\` reported exit 7, signal 0 again: recorded already" \
	"$KMUX_STATE_DIR/kmuxd.log"

# --- spawn: the daemon dies between fork and exec of a submitted job ------
stop_daemon
die_daemon spawn
GO=$TMP/sub-may-end
"$KMUX" submit -m 3G -n sub -- sh -c "echo up >'$TMP/sub.up'; for i in \$(seq 1200); do [ -e '$GO' ] && break; sleep 0.05; done" \
	>/dev/null 2>"$TMP/sub.err"
check "kmuxd dies between the fork and the exec of a submitted job" \
	died_at spawn
sjob=$(job_named sub)
check "  ... the job's command runs without it" wait_for 10 test -e "$TMP/sub.up"
start_daemon
check "the new daemon finds job $sjob running (not lost)" \
	[ "$(job_state "$sjob")" = running ]
check "  ... its 3 GiB still committed" [ "$(committed_gib)" = 3 ]
touch "$GO"
check "  ... its end is seen" wait_state "$sjob" exited 100
check "  ... and its memory freed" wait_for 5 cond '[ "$(committed_gib)" = 0 ]'
finish
