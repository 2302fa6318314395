#!/usr/bin/env bash
# kmux run with admission (--gpus/--mem/--name) on one simulated 16 GiB GPU:
# CMD runs in the foreground with its GPU and quota in the environment and
# its exit code comes back (and is recorded); a 12 GiB run waits, saying
# so, while a submitted 10 GiB job runs, and starts after it ended (by the
# daemon's timestamps and CMD's own clock); ps shows a run job while it
# runs; bad sizes, too many GPUs, no daemon; SIGINT while queued leaves the
# queue (130) and the job is cancelled; `kmux cancel` of a queued run
# ends its client (1).
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=1:16G
. "$(dirname "$0")/kmuxd-lib.sh"

now_us() { python3 -c 'import time; print(int(time.time() * 1e6))'; }

# Admission asked for, no daemon, and none can start (a bad knob): exit 5.
KMUX_FAKE_GPUS=2x16G expect_rc 5 "--mem with no daemon that can start" \
	"$KMUX" run --mem 1G -- true
check "  ... says so" err_has "kmux: run: cannot start kmuxd"
check "  ... and CMD did not run" [ ! -s "$TMP/out" ]

start_daemon
"$KMUX" run --mem 4G -n first -- sh -c 'echo "$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER $KMUX_MEM_QUOTA"; exit 7' \
	>"$TMP/first" 2>"$TMP/first.err"
rc=$?
check "the command's exit code comes back (7, got $rc)" [ $rc -eq 7 ]
check "CMD saw its GPU and its 4 GiB quota ($(cat "$TMP/first"))" \
	[ "$(cat "$TMP/first")" = "0 PCI_BUS_ID 4294967296" ]
check "  ... without waiting (nothing on stderr)" [ ! -s "$TMP/first.err" ]
first=$("$KMUX" ps --all --json | python3 -c '
import json, sys
print(max(j["id"] for j in json.load(sys.stdin) if j["name"] == "first"))')
check "the daemon recorded the run: exited 7" \
	[ "$(jq_job "$first" 'j["state"], j["exit_code"]')" = "('exited', 7)" ]
check "  ... and nothing is left committed" [ "$(top_json 't["gpus"][0]["mem_committed"]')" = 0 ]

# Queueing: 10 + 12 GiB do not fit in 16.
blocker=$("$KMUX" submit -m 10G -n blocker -- sleep 1.5)
wait_state "$blocker" running
"$KMUX" run --mem 12G -n second -- python3 -c 'import time; print(int(time.time() * 1e6))' \
	>"$TMP/second" 2>"$TMP/second.err" &
runner=$!
for i in $(seq 50); do
	grep -q "queued" "$TMP/second.err" && break
	sleep 0.1
done
check "the 12 GiB run says it is queued" grep -q "^kmux: queued (position 1, job [0-9]*)$" "$TMP/second.err"
second=$(sed -n 's/.*job \([0-9]*\)).*/\1/p' "$TMP/second.err")
check "  ... and is queued in ps" [ "$(jq_job "$second" 'j["state"]')" = queued ]
wait "$runner"
rc=$?
check "it ran in the end (exit $rc)" [ $rc -eq 0 ]
b_end=$(jq_job "$blocker" 'j["end_us"]')
s_start=$(jq_job "$second" 'j["start_us"]')
ran=$(cat "$TMP/second")
check "admitted after the 10 GiB job ended ($s_start >= $b_end)" [ "$s_start" -ge "$b_end" ]
check "  ... CMD itself ran after that ($ran >= $b_end)" [ "$ran" -ge "$b_end" ]
check "  ... recorded as exited 0" [ "$(jq_job "$second" 'j["state"], j["exit_code"]')" = "('exited', 0)" ]

# ps shows a run job while it runs.
"$KMUX" run -n fgjob -- sleep 2 >/dev/null 2>&1 &
runner=$!
for i in $(seq 50); do
	"$KMUX" ps >"$TMP/ps" 2>/dev/null
	grep -q "running.*fgjob" "$TMP/ps" && break
	sleep 0.1
done
check "ps shows the run job running" grep -q "running.*fgjob" "$TMP/ps"
wait "$runner"
check "  ... and it exits 0" [ $? -eq 0 ]

# Bad input.
expect_rc 2 "--mem 12Q" "$KMUX" run --mem 12Q -- true
check "  ... says why" err_has "bad --mem '12Q'"
expect_rc 2 "--mem -1G" "$KMUX" run --mem -1G -- true
expect_rc 2 "--mem 0" "$KMUX" run --mem 0 -- true
expect_rc 2 "--gpus 0" "$KMUX" run --gpus 0 -- true
expect_rc 2 "--gpus 65" "$KMUX" run --gpus 65 -- true
expect_rc 2 "--gpus x" "$KMUX" run --gpus x -- true
expect_rc 2 "--gpus ' 1' (strtol would take it)" "$KMUX" run --gpus " 1" -- true
expect_rc 2 "--gpus +1" "$KMUX" run --gpus +1 -- true
expect_rc 2 "submit --prio ' 5'" "$KMUX" submit --prio " 5" -- true
expect_rc 2 "submit --prio 0x5" "$KMUX" submit --prio 0x5 -- true
expect_rc 2 "top -d 0x1" "$KMUX" top -d 0x1 --once
expect_rc 4 "--gpus 2 on a one-GPU node" "$KMUX" run --gpus 2 -- true
check "  ... the daemon's reason" err_has "GPU"
expect_rc 4 "--mem 20G on a 16 GiB GPU" "$KMUX" run --mem 20G -- true
check "  ... and CMD did not run" [ ! -s "$TMP/out" ]
expect_rc 7 "--streams with admission" "$KMUX" run -s 2 --mem 1G -- sh -c '[ "$KMUX_STREAMS" = 2 ] && exit 7'

# A command that cannot be executed: exit 127 as a shell's, and the job
# is recorded failed (protocol v13), as a submitted one that could not
# start, not "exited 127".
"$KMUX" run --mem 1G -n nosuch -- "$TMP/no-such-program" 2>"$TMP/err"
check "a missing program: kmux run exits 127" [ $? -eq 127 ]
nid=$("$KMUX" ps --all --json | python3 -c '
import json, sys
print([j["id"] for j in json.load(sys.stdin) if j["name"] == "nosuch"][0])')
check "  ... ps: failed, exit 127" [ "$(jq_job "$nid" 'j["state"], j["exit_code"]')" = "('failed', 127)" ]

# SIGINT while queued: exit 130, the job leaves the queue.
blocker=$("$KMUX" submit -m 10G -n blocker2 -- sleep 3)
wait_state "$blocker" running
"$KMUX" run --mem 12G -n interrupted -- touch "$TMP/must-not-run" \
	>/dev/null 2>"$TMP/int.err" &
runner=$!
for i in $(seq 50); do
	grep -q "queued" "$TMP/int.err" && break
	sleep 0.1
done
job=$(sed -n 's/.*job \([0-9]*\)).*/\1/p' "$TMP/int.err")
check "the run is queued (job $job)" [ "$(jq_job "$job" 'j["state"]')" = queued ]
kill -INT "$runner"
wait "$runner"
rc=$?
check "SIGINT while queued: exit 130 (got $rc)" [ $rc -eq 130 ]
check "  ... says so" grep -q "interrupted while queued" "$TMP/int.err"
check "  ... the job is cancelled" wait_state "$job" cancelled 20
"$KMUX" ps >"$TMP/ps"
check "  ... and gone from the queue" cond '! grep -q "interrupted" "$TMP/ps"'

# kmux cancel of a queued run: the waiting client is told and exits 1.
"$KMUX" run --mem 12G -n cancelled -- touch "$TMP/must-not-run" \
	>/dev/null 2>"$TMP/cancel.err" &
runner=$!
for i in $(seq 50); do
	grep -q "queued" "$TMP/cancel.err" && break
	sleep 0.1
done
job=$(sed -n 's/.*job \([0-9]*\)).*/\1/p' "$TMP/cancel.err")
expect_rc 0 "kmux cancel of a queued run job ($job)" "$KMUX" cancel "$job"
wait "$runner"
rc=$?
check "  ... its kmux run exits 1 (got $rc)" [ $rc -eq 1 ]
check "  ... saying why" grep -q "job $job was cancelled before it started" "$TMP/cancel.err"
"$KMUX" wait "$blocker" >/dev/null
check "  ... CMD never ran" [ ! -e "$TMP/must-not-run" ]
finish
