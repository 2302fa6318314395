# tests/e2e/kmuxd-lib.sh - sourced (after lib.sh) by the t6x-daemon tests.
#
# Gives each test a private daemon: its socket and state under $TMP,
# simulated GPUs (KMUX_FAKE_GPUS, 1:16G unless the test sets it first), and
# an exit trap that kills the daemon and every job it still runs, whatever
# happened to the test.  Not named t*.sh: run.sh does not run it.

export KMUX_SOCKET=$TMP/run/sock
export KMUX_STATE_DIR=$TMP/state
export KMUX_FAKE_GPUS=${KMUX_FAKE_GPUS:-1:16G}
unset XDG_RUNTIME_DIR KMUX_DB_MAX_PAGES KMUX_DB_FULL
mkdir -p "$TMP/run"
chmod 700 "$TMP/run"

# Under the sanitizer build the preload the jobs load needs the ASan
# runtime in front of it; kmux keeps sanitizer runtimes that are in the
# submitter's LD_PRELOAD first, so give it to kmux alone, via a wrapper.
if [ -n "${ASAN_LIB:-}" ]; then
	cat >"$TMP/kmux-san" <<EOS
#!/bin/sh
LD_PRELOAD=$ASAN_LIB\${LD_PRELOAD:+:\$LD_PRELOAD} exec "$KMUX" "\$@"
EOS
	chmod +x "$TMP/kmux-san"
	KMUX_BIN=$KMUX
	KMUX=$TMP/kmux-san
fi

daemon_pid() { cat "$KMUX_SOCKET.lock" 2>/dev/null; }

# Kill the jobs still running (each is its own process group), then the
# daemon, then remove $TMP.
daemon_cleanup() {
	local pids p
	pids=$("$KMUX" ps --json 2>/dev/null | python3 -c '
import json, sys
try:
    print(" ".join(str(j["pid"]) for j in json.load(sys.stdin)
                   if j["state"] == "running" and j["pid"]))
except Exception:
    pass' 2>/dev/null)
	for p in $pids; do kill -9 -- "-$p" "$p" 2>/dev/null; done
	p=$(daemon_pid)
	[ -n "$p" ] && kill -9 "$p" 2>/dev/null
	rm -rf "$TMP"
}
trap daemon_cleanup EXIT

# start_daemon [ARGS...]: kmux daemon (background); returns once it listens.
start_daemon() {
	"$KMUX" daemon --kill-grace 1 "$@"
}

# daemon_unlocked: no daemon holds the socket's lock, so one may start.
daemon_unlocked() {
	[ ! -e "$KMUX_SOCKET.lock" ] || flock -n "$KMUX_SOCKET.lock" true
}

# stop_daemon: SIGTERM, and wait until it is gone and its lock free.  A
# clean stop under ASan on a loaded machine can take seconds: kill -9 only
# after 30 s (it would skip what the daemon does on its way out).
stop_daemon() {
	local p i
	p=$(daemon_pid)
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	for i in $(seq 300); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
	wait_for 30 daemon_unlocked
}

# kill9_daemon: kill -9 (a crash), and wait until the lock is free: the
# kernel releases it only once the process is gone, and a daemon started
# before that finds it held and refuses to start.
kill9_daemon() {
	local p
	p=$(daemon_pid)
	[ -n "$p" ] && kill -9 "$p" 2>/dev/null
	wait_for 30 daemon_unlocked
}

# jq_job ID EXPR: evaluates the Python expression EXPR with `j` bound to
# job ID's object of `kmux ps --all --json`; prints the value.
jq_job() {
	"$KMUX" ps --all --json | python3 -c '
import json, sys
jobs = {j["id"]: j for j in json.load(sys.stdin)}
j = jobs.get(int(sys.argv[1]))
print(eval(sys.argv[2]) if j is not None else "NOJOB")' "$1" "$2"
}

# job_state ID: the job's state in `kmux ps --all --json`; job_running ID.
job_state() { jq_job "$1" 'j["state"]'; }
job_running() { [ "$(job_state "$1")" = running ]; }

# top_json EXPR: evaluates EXPR with `t` bound to `kmux top --once --json`.
top_json() {
	"$KMUX" top --once --json | python3 -c '
import json, sys
t = json.load(sys.stdin)
print(eval(sys.argv[1]))' "$1"
}

# wait_state ID STATE [TENTHS]: until job ID is in STATE (default 10 s).
wait_state() {
	local i n=${3:-100}
	for i in $(seq "$n"); do
		[ "$(jq_job "$1" 'j["state"]')" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# expect_rc N DESCRIPTION COMMAND...: COMMAND exits with N.
expect_rc() {
	local want=$1 what=$2 got
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	if [ "$got" -eq "$want" ]; then
		ok "$what (exit $got)"
	else
		fail "$what: exit $got, wanted $want"
		sed 's/^/    /' "$TMP/out" "$TMP/err" | head -10
	fi
}

# err_has TEXT: the last expect_rc's stderr contains TEXT.
err_has() { grep -q -- "$1" "$TMP/err"; }

# cond 'SHELL CONDITION': for check, when a condition has && or ||
# (`check X [ a ] && [ b ]` would check [ a ] alone).
cond() { eval "$1"; }

# wait_for SECONDS COMMAND...: until COMMAND succeeds, at most that long.
wait_for() {
	local n=$(($1 * 10))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}
