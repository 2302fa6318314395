#!/usr/bin/env bash
# Bad input gets a clear message and an exit status that says what kind of
# failure it was; nothing is queued by a refused request and nothing queued
# is lost by a failing one (a full disk included).
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=2:16G
. "$(dirname "$0")/kmuxd-lib.sh"

start_daemon
for bad in 12Q -1G 0 1.5 G ""; do
	expect_rc 2 "submit --mem '$bad'" "$KMUX" submit --mem "$bad" -- true
	check "  ... names the bad size" err_has "bad --mem '$bad'"
done
expect_rc 2 "submit --mem 99999999T (beyond 64 bits)" "$KMUX" submit --mem 99999999T -- true
check "  ... too large" err_has "too large"
for bad in 0 -1 x 65; do
	expect_rc 2 "submit --gpus $bad" "$KMUX" submit --gpus "$bad" -- true
done
expect_rc 4 "submit --gpus 3 on a node of 2" "$KMUX" submit --gpus 3 -- true
check "  ... says how many there are" err_has "3 GPUs asked for, but this node has 2"
expect_rc 4 "submit --mem 20G on 16 GiB GPUs" "$KMUX" submit --mem 20G -- true
check "  ... says what fits" err_has "no GPU of this node can give more than 15.20 GiB"
expect_rc 2 "submit without a command" "$KMUX" submit --mem 1G
expect_rc 2 "submit with an unknown option" "$KMUX" submit --bogus -- true
expect_rc 2 "submit --prio 101" "$KMUX" submit --prio 101 -- true
check "nothing was queued by any of them" [ -z "$("$KMUX" ps --all | sed 1d)" ]

expect_rc 125 "wait on an unknown job" "$KMUX" wait 999
check "  ... says so" err_has "no job 999"
expect_rc 3 "logs of an unknown job" "$KMUX" logs 999
expect_rc 3 "cancel of an unknown job" "$KMUX" cancel 999
expect_rc 2 "wait with a bad id" "$KMUX" wait 12x
expect_rc 2 "logs without an id" "$KMUX" logs
expect_rc 2 "ps with an argument" "$KMUX" ps extra
expect_rc 2 "top --json without --once" "$KMUX" top --json

# A full disk: the database is capped a few pages above its size.
blocker=$("$KMUX" submit -m 15G -- sleep 30)
blocker2=$("$KMUX" submit -m 15G -- sleep 30)
queued=$("$KMUX" submit -m 15G -- echo kept)
stop_daemon
pages=$(python3 -c 'import os, sys; print(os.path.getsize(sys.argv[1]) // 4096)' "$KMUX_STATE_DIR/kmux.db")
KMUX_DB_MAX_PAGES=$((pages + 2)) start_daemon
big=$(head -c 3000 /dev/zero | tr '\0' x)
full=0
for i in $(seq 40); do
	BIG=$big "$KMUX" submit -m 15G -- echo "$i" >/dev/null 2>"$TMP/full.err"
	rc=$?
	if [ $rc -ne 0 ]; then full=$rc; break; fi
done
check "once the disk is full, submit fails (exit $full)" [ "$full" -eq 1 ]
check "  ... with a clear message" grep -q "cannot queue the job: .*full" "$TMP/full.err"
check "the job queued before is still queued" [ "$(jq_job "$queued" 'j["state"]')" = queued ]
# Its start is a write too: on a disk still full it fits only by luck (room
# left on its row's page; the environment's size decides), else admission
# waits for room.  Room comes back: a daemon without the cap.
stop_daemon
start_daemon
check "  ... and still queued once there is room again" \
	[ "$(jq_job "$queued" 'j["state"]')" = queued ]
"$KMUX" cancel -s KILL "$blocker" "$blocker2"
expect_rc 0 "  ... and runs when its turn comes" "$KMUX" wait "$queued"
check "  ... output intact" grep -qx kept <("$KMUX" logs "$queued")
stop_daemon

# A full disk when a job ends.  KMUX_DB_FULL=FILE: while FILE exists every
# write to the database fails as on a full disk, the job's end (an UPDATE
# in place, which the page cap above lets through) included; remove it and
# there is room again, with no restart.  The end must not be lost: clients
# are told from memory, and the row is written once there is room.
FULL=$TMP/disk-full
GO=$TMP/end-now
# db_row ID: the job's state and exit code as the database has them.
db_row() {
	python3 -c '
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
print("%s|%s" % db.execute("SELECT state, exit_code FROM jobs WHERE id = ?",
                           (int(sys.argv[2]),)).fetchone())' \
		"$KMUX_STATE_DIR/kmux.db" "$1"
}
row_is() { [ "$(db_row "$1")" = "$2" ]; }
KMUX_DB_FULL=$FULL start_daemon
ender=$("$KMUX" submit -m 15G -- sh -c "while [ ! -e '$GO' ]; do sleep 0.05; done; exit 3")
after=$("$KMUX" submit --gpus 2 -m 15G -- echo after)
check "job $ender runs" wait_state "$ender" running
epid=$(jq_job "$ender" 'j["pid"]')
touch "$FULL"
touch "$GO"
check "job $ender ends while the disk is full" \
	wait_for 10 cond '! kill -0 "$epid" 2>/dev/null'
sleep 0.3	# reaped: SIGCHLD, then the failed write
expect_rc 3 "  ... wait, asked after its end, returns its exit code" \
	timeout 10 "$KMUX" wait "$ender"
check "  ... ps --json shows it exited with 3" \
	[ "$(jq_job "$ender" 'j["state"], j["exit_code"]')" = "('exited', 3)" ]
check "  ... plain ps (queued and running jobs) leaves it out" \
	cond '! "$KMUX" ps | grep -Eq "^ +$ender "'
expect_rc 1 "  ... cancel: it has ended" "$KMUX" cancel "$ender"
check "  ... (exited), not (running)" err_has "job $ender has already ended (exited)"
check "  ... while its row still says running (the disk is full)" \
	row_is "$ender" "running|None"
check "  ... the daemon said why, once" \
	[ "$(grep -c "job $ender exited (exit 3, signal 0), but the database cannot record it: .*full" "$KMUX_STATE_DIR/kmuxd.log")" -eq 1 ]
check "the job queued behind it waits (its start cannot be written)" \
	[ "$(job_state "$after")" = queued ]
# A cancel kept only in memory would be undone by a restart (recovery finds
# the row queued and runs the job): refused while it cannot be written.
expect_rc 1 "  ... cancelling it on the full disk is refused" "$KMUX" cancel "$after"
check "  ... with why" err_has "cannot cancel job $after: the database cannot record it (.*full.*); it stays queued"
check "  ... and it stays queued" [ "$(job_state "$after")" = queued ]
rm "$FULL"
check "room again: the row says exited 3, with no restart" \
	wait_for 10 row_is "$ender" "exited|3"
check "  ... and the daemon says it wrote it" \
	grep -q "job $ender: its end (exited, exit 3, signal 0) is recorded now" "$KMUX_STATE_DIR/kmuxd.log"
expect_rc 0 "  ... and the queued job runs" "$KMUX" wait "$after"
# Still full when the daemon stops: the end is lost with it, and the next
# daemon finds the job gone (exited, code unknown), not running.
rm -f "$GO"
ender=$("$KMUX" submit -m 15G -- sh -c "while [ ! -e '$GO' ]; do sleep 0.05; done; exit 4")
check "job $ender runs" wait_state "$ender" running
touch "$FULL" "$GO"
expect_rc 4 "another ends on a full disk (exit 4)" timeout 10 "$KMUX" wait "$ender"
stop_daemon
check "  ... stopped while still full: the daemon says the end is lost" \
	grep -q "job $ender's end (exited, exit 4) was never recorded" "$KMUX_STATE_DIR/kmuxd.log"
rm "$FULL"
start_daemon
check "  ... the next daemon records it exited, code unknown" \
	row_is "$ender" "exited|None"
# A job that ends while no daemon runs, and a disk still full when the
# next one starts: recovery cannot record the end.  The daemon starts all
# the same (queued jobs need it), answers for the job from memory and
# writes the row once there is room.
gone=$("$KMUX" submit -m 15G -- sleep 60)
check "job $gone runs" wait_state "$gone" running
gpid=$(jq_job "$gone" 'j["pid"]')
waiting=$("$KMUX" submit --gpus 2 -m 15G -- echo waited)
check "  ... a 2-GPU job queued behind it" [ "$(job_state "$waiting")" = queued ]
kill9_daemon
kill -9 "$gpid"
touch "$FULL"
KMUX_DB_FULL=$FULL expect_rc 0 "a daemon starts on a full disk with a job that ended meanwhile" start_daemon
check "  ... ps shows job $gone exited" [ "$(jq_job "$gone" 'j["state"]')" = exited ]
expect_rc 125 "  ... wait: ended, its code unknown" timeout 10 "$KMUX" wait "$gone"
check "  ... its row still says running" row_is "$gone" "running|None"
rm "$FULL"
check "room again: its row says exited" wait_for 10 row_is "$gone" "exited|None"
expect_rc 0 "  ... and the job queued behind it runs" timeout 20 "$KMUX" wait "$waiting"
stop_daemon

# No daemon: every command says so; ps shows what the database recorded,
# and with no database either it fails like the others.
expect_rc 0 "ps with no daemon: from the database" "$KMUX" ps
check "  ... says so" err_has "no kmuxd is running; these are the jobs as its database"
mkdir -p "$TMP/badstate" && echo 'not a database, at all' >"$TMP/badstate/kmux.db"
KMUX_STATE_DIR=$TMP/badstate expect_rc 1 "ps with no daemon and a corrupt database: exit 1" "$KMUX" ps
check "  ... names the file" err_has "kmux: ps: $TMP/badstate/kmux.db: .*not a database"
KMUX_STATE_DIR=$TMP/nostate expect_rc 5 "ps with no daemon and no database" "$KMUX" ps
check "  ... says so" err_has "no kmuxd is running on $KMUX_SOCKET"
expect_rc 5 "cancel with no daemon" "$KMUX" cancel 1
expect_rc 5 "logs with no daemon" "$KMUX" logs 1
expect_rc 5 "top with no daemon" "$KMUX" top --once
expect_rc 125 "wait with no daemon" "$KMUX" wait 1

# No GPUs at all, and a mistyped test knob.
KMUX_FAKE_GPUS=0 start_daemon 2>/dev/null
expect_rc 4 "submit on a node without GPUs" "$KMUX" submit -- true
check "  ... says why" err_has "no GPUs"
stop_daemon
KMUX_FAKE_GPUS=2x16G expect_rc 1 "a bad KMUX_FAKE_GPUS stops the daemon" "$KMUX" daemon
check "  ... with the reason" err_has "KMUX_FAKE_GPUS='2x16G'"
KMUX_FAKE_GPUS=2x16G expect_rc 5 "  ... and submit says it could not start one" "$KMUX" submit -- true
finish
