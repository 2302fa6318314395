#!/usr/bin/env bash
# kmux submit starts the daemon on demand (tmux style), and a job makes the
# round trip: submit -> ps -> wait (its exit status) -> logs (its output).
# The job runs in the submitter's directory and environment, under the
# preload, with its GPUs and quota in its environment.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

check "no daemon runs yet" [ ! -S "$KMUX_SOCKET" ]
id=$("$KMUX" submit -n hello -- sh -c 'echo hi; echo oops >&2; exit 3' 2>"$TMP/submit.err")
rc=$?
check "submit exits 0 and prints a job id ($id)" cond '[ $rc -eq 0 ] && [ "$id" -ge 1 ]'
check "submit started a daemon, quietly" cond '[ -S "$KMUX_SOCKET" ] && [ ! -s "$TMP/submit.err" ]'
check "the daemon writes its pid in the socket's lock" kill -0 "$(daemon_pid)"
"$KMUX" wait "$id"
check "kmux wait exits with the job's status (3)" [ $? -eq 3 ]
"$KMUX" logs "$id" >"$TMP/log"
check "kmux logs shows stdout and stderr" cond 'grep -qx hi "$TMP/log" && grep -qx oops "$TMP/log"'
check "ps --all lists it as exited 3" [ "$(jq_job "$id" 'j["state"], j["exit_code"], j["name"]')" = "('exited', 3, 'hello')" ]
check "ps without --all hides ended jobs" [ -z "$("$KMUX" ps | sed 1d)" ]
check "the state survives in \$KMUX_STATE_DIR" [ -f "$KMUX_STATE_DIR/kmux.db" ]

# Directory, environment, GPUs, quota, preload.
mkdir -p "$TMP/work dir"
id=$(cd "$TMP/work dir" && MYVAR=42 "$KMUX" submit -m 2G -- sh -c \
	'pwd; echo "MYVAR=$MYVAR"; echo "CVD=$CUDA_VISIBLE_DEVICES"; echo "Q=$KMUX_MEM_QUOTA"; echo "JOB=$KMUX_JOB"; echo "PRE=$LD_PRELOAD"; echo "ORDER=$CUDA_DEVICE_ORDER"')
"$KMUX" wait "$id"
check "a second job succeeds" [ $? -eq 0 ]
"$KMUX" logs "$id" >"$TMP/env"
check "it ran in the submitter's directory" grep -qx "$TMP/work dir" "$TMP/env"
check "with the submitter's environment" grep -qx "MYVAR=42" "$TMP/env"
check "on the placed GPU (CUDA_VISIBLE_DEVICES=0)" grep -qx "CVD=0" "$TMP/env"
check "with its quota in KMUX_MEM_QUOTA (2 GiB)" grep -qx "Q=2147483648" "$TMP/env"
check "with its job id in KMUX_JOB" grep -qx "JOB=$id" "$TMP/env"
check "under the preload" grep -q "PRE=.*libkmux.so" "$TMP/env"
check "with CUDA numbering GPUs as NVML does" grep -qx "ORDER=PCI_BUS_ID" "$TMP/env"

# Its id that cannot be written: exit 1, and stderr says the job is queued
# all the same (a retry would queue it twice).
if [ -w /dev/full ]; then
	"$KMUX" submit -n full -- true >/dev/full 2>"$TMP/full.err"
	check "submit into a full disk: exit 1" [ $? -eq 1 ]
	check "  ... says the job is queued" grep -q '^kmux: submit: job [0-9]* is queued, but its id could not be written' "$TMP/full.err"
	check "  ... and it is" [ "$("$KMUX" ps --all --json | python3 -c '
import json, sys
print(sum(j["name"] == "full" for j in json.load(sys.stdin)))')" = 1 ]
	"$KMUX" ps >/dev/full 2>"$TMP/full.err"
	rc=$?
	check "ps into a full disk: exit 1, said" \
		cond '[ $rc -eq 1 ] && grep -q "^kmux: ps: cannot write to standard output" "$TMP/full.err"'
fi

# A command that cannot be run, a job killed by a signal.
id=$("$KMUX" submit -- "$TMP/no-such-program")
"$KMUX" wait "$id" 2>"$TMP/werr"
check "a missing program: wait exits 127, as a shell would" [ $? -eq 127 ]
check "  ... its log says why" grep -q "cannot run.*no-such-program" <("$KMUX" logs "$id")
check "  ... ps shows it failed" [ "$(jq_job "$id" 'j["state"]')" = failed ]
id=$("$KMUX" submit -- sh -c 'kill -9 $$')
"$KMUX" wait "$id"
check "a job killed by SIGKILL: wait exits 137" [ $? -eq 137 ]
check "  ... ps says killed by SIGKILL" [ "$(jq_job "$id" 'j["signal"]')" = KILL ]

# logs -f follows a running job to its end.
id=$("$KMUX" submit -- sh -c 'echo one; sleep 0.5; echo two')
timeout 10 "$KMUX" logs -f "$id" >"$TMP/follow"
check "logs -f returns when the job ends, with all of its output" \
	[ "$(cat "$TMP/follow")" = "$(printf 'one\ntwo')" ]

# top --once: one text frame, and JSON.
"$KMUX" top --once >"$TMP/top"
check "top --once prints the GPU table" grep -q "^  0 " "$TMP/top"
check "top --once --json has the GPU's memory" [ "$(top_json 't["gpus"][0]["mem_total"]')" = 17179869184 ]

# The live view, on a pseudo-terminal (script(1)); q quits it.
if command -v script >/dev/null 2>&1; then
	id=$("$KMUX" submit -n live-one -- sleep 3)
	(sleep 1; printf q) | TERM=xterm timeout 10 script -qec "$KMUX top -d 0.2" /dev/null >"$TMP/live" 2>&1
	rc=$?
	check "live top runs on a terminal and quits on q" cond '[ $rc -eq 0 ] && grep -q "kmux top: 1 GPU" "$TMP/live"'
	check "  ... showing the running job" grep -q "live-one" "$TMP/live"
	"$KMUX" cancel "$id"
fi

# Every command answers --help.
for c in daemon submit ps wait cancel logs top; do
	"$KMUX" "$c" --help >"$TMP/help" 2>&1
	rc=$?
	check "kmux $c --help exits 0 with a usage" cond '[ $rc -eq 0 ] && grep -q "^usage: kmux $c" "$TMP/help"'
done
stop_daemon
check "a daemon stopped with SIGTERM removes its socket" [ ! -e "$KMUX_SOCKET" ]
finish
