#!/usr/bin/env bash
# kmux cancel: a queued job leaves the queue; a running one gets SIGTERM on
# its process group; one that ignores SIGTERM gets SIGKILL after the grace
# period (1 s here); -s picks the signal; errors have their own statuses.
# A `kmux run` job's command is signalled the same way (its client names
# it); t6r-daemon-run-proto covers the client that does not.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

start_daemon --kill-grace 1
r=$("$KMUX" submit -m 10G -- sh -c 'sleep 30; echo never')
q=$("$KMUX" submit -m 10G -- echo never)
check "one runs" wait_state "$r" running
check "one waits" [ "$(jq_job "$q" 'j["state"]')" = queued ]
expect_rc 0 "cancel of the queued job" "$KMUX" cancel "$q"
check "  ... it is cancelled at once" [ "$(jq_job "$q" 'j["state"]')" = cancelled ]
expect_rc 125 "wait on it: its status is not known" "$KMUX" wait "$q"
check "  ... and says it was cancelled" err_has "cancelled before it ended"
check "the running job still runs" [ "$(jq_job "$r" 'j["state"]')" = running ]

t0=$(date +%s%N)
expect_rc 0 "cancel of the running job" "$KMUX" cancel "$r"
expect_rc 143 "wait: it died of SIGTERM (128+15)" "$KMUX" wait "$r"
check "  ... promptly" [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 2000 ]
check "  ... state cancelled, signal TERM" [ "$(jq_job "$r" 'j["state"], j["signal"]')" = "('cancelled', 'TERM')" ]
check "  ... its whole process group went (no 'never' in its log)" cond '! grep -q never <("$KMUX" logs "$r")'

s=$("$KMUX" submit -- sh -c 'trap "" TERM; while :; do sleep 0.1; done')
check "a job that ignores SIGTERM runs" wait_state "$s" running
t0=$(date +%s%N)
"$KMUX" cancel "$s"
expect_rc 137 "it is killed with SIGKILL after the grace period" "$KMUX" wait "$s"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "  ... after 1 s, not before ($ms ms)" cond '[ $ms -ge 900 ] && [ $ms -lt 4000 ]'

k=$("$KMUX" submit -- sleep 30)
wait_state "$k" running
expect_rc 0 "cancel -s KILL" "$KMUX" cancel -s KILL "$k"
expect_rc 137 "  ... killed by SIGKILL" "$KMUX" wait "$k"

# A `kmux run` job, CUDA or not: its client told kmuxd the command's pid
# (STARTED), so cancel signals the command itself, as for a submitted job.
. "$(dirname "$0")/reg-lib.sh"
"$KMUX" run -m 1G -n fg -- sh -c 'trap "echo got-term; exit 42" TERM; sleep 30 & wait' >"$TMP/fg.out" 2>&1 &
pf=$!
wait_job fg
f=$(job_of fg)
check "a kmux run job runs" wait_state "$f" running
check "  ... kmuxd knows its command's pid" \
	wait_for 10 grep -q "job $f: its command runs as pid" "$KMUX_STATE_DIR/kmuxd.log"
expect_rc 0 "cancel of it" "$KMUX" cancel "$f"
wait "$pf"
check "  ... the command got SIGTERM and kmux run returned its exit code (42)" [ $? -eq 42 ]
check "  ... from its trap" grep -q got-term "$TMP/fg.out"
check "  ... state cancelled" wait_state "$f" cancelled 30

# One that ignores SIGTERM gets SIGKILL after the grace period, as a
# submitted job does (kmux run passing signals on could not do that).
"$KMUX" run -m 1G -n deaf -- sh -c 'trap "" TERM; for i in $(seq 100); do sleep 0.1; done' >/dev/null 2>&1 &
pd=$!
wait_job deaf
d=$(job_of deaf)
check "a kmux run job that ignores SIGTERM runs" \
	wait_for 10 grep -q "job $d: its command runs as pid" "$KMUX_STATE_DIR/kmuxd.log"
t0=$(date +%s%N)
expect_rc 0 "cancel of it" "$KMUX" cancel "$d"
wait "$pd"
check "  ... it is killed with SIGKILL and kmux run exits 137" [ $? -eq 137 ]
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "  ... after the 1 s grace, not before ($ms ms)" cond '[ $ms -ge 900 ] && [ $ms -lt 4000 ]'
check "  ... state cancelled" wait_state "$d" cancelled 30

"$KMUX" run -m 1G -n killme -- sleep 30 >/dev/null 2>&1 &
pk=$!
wait_job killme
k2=$(job_of killme)
check "a third kmux run job runs" \
	wait_for 10 grep -q "job $k2: its command runs as pid" "$KMUX_STATE_DIR/kmuxd.log"
expect_rc 0 "cancel -s KILL of it is accepted (it reaches the command)" "$KMUX" cancel -s KILL "$k2"
wait "$pk"
check "  ... kmux run exits 137" [ $? -eq 137 ]

expect_rc 3 "cancel of an unknown job" "$KMUX" cancel 999
check "  ... says so" err_has "no job 999"
expect_rc 1 "cancel of a job that ended" "$KMUX" cancel "$r"
check "  ... says so" err_has "already ended"
expect_rc 2 "cancel with a bad id" "$KMUX" cancel abc
expect_rc 2 "cancel with a bad signal" "$KMUX" cancel -s NOPE 1
finish
