#!/usr/bin/env bash
# run-started.sh - on the GPU: `kmux run` of a real CUDA program (PyTorch)
# under a private kmuxd, for what protocol v12's STARTED changed (issue 4,
# item 7): the client names its command's pid, so
#   1. `kmux cancel` of a run job whose program ignores SIGTERM kills it
#      with SIGKILL after the grace period (kmux run exits 137);
#   2. after `kill -9` of the daemon and a restart, a run job keeps running
#      with its memory committed, and its exit status is recorded.
# A check, not a benchmark: every line of $OUT/run-started.txt says what was
# expected and what happened; exit 1 when any check failed.
#
# Usage (on the GPU machine, after bench/gpu/prepare.sh here):
#   OUT=$OUT/rs [RS_LONG_S=25] bash bench/gpu/run-started.sh
# RS_LONG_S: how long the second job computes (it must outlive the restart).
set -u
. "$(dirname "$0")/lib.sh"

W=$WORK/run-started
mkdir -p "$W" && chmod 700 "$W"
REPORT=$OUT/run-started.txt
: >"$REPORT"
export KMUX_SOCKET=$W/sock KMUX_STATE_DIR=$W/state
fails=0
LONG_S=${RS_LONG_S:-25}

say() { echo "$*" | tee -a "$REPORT"; }
check() {
	local what=$1
	shift
	if "$@"; then say "ok   $what"; else say "FAIL $what"; fails=$((fails + 1)); fi
}
kx() { LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$KMUX_BIN" "$@"; }
# The job's own environment: not kmux's devlibs.
JOBENV=(env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}")
# `kmux daemon` returns once it listens; its pid is in the socket's lock.
daemon_start() { kx daemon --kill-grace 2 >>"$W/daemon.out" 2>&1; }
daemon_pid() { cat "$KMUX_SOCKET.lock" 2>/dev/null; }
daemon_unlocked() { flock -n "$KMUX_SOCKET.lock" true; }
job_id() {
	kx ps --all --json | "$PY" -c '
import json, sys
print([j["id"] for j in json.load(sys.stdin) if j["name"] == sys.argv[1]][0])' "$1" 2>/dev/null
}
job_field() {
	kx ps --all --json | "$PY" -c '
import json, sys
j = [j for j in json.load(sys.stdin) if j["id"] == int(sys.argv[1])][0]
print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}
named_pid() { grep -q "job $1: its command runs as pid" "$KMUX_STATE_DIR/kmuxd.log"; }
wait_for() {
	local n=$1
	shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	return 1
}

# A program that holds 2 GiB on the GPU, computes for up to $1 s, ignores
# SIGTERM when $2 is 1, and exits with $3.
cat >"$W/busy.py" <<'PY'
import signal, sys, time
import torch
secs, deaf, code = float(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
if deaf:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
x = torch.ones(1 << 29, device="cuda")
torch.cuda.synchronize()
print("on the GPU", flush=True)
t = time.time()
while time.time() - t < secs:
    x.mul_(1.0000001)
    torch.cuda.synchronize()
sys.exit(code)
PY

say "# run-started.sh $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "# libkmux.so $(sha256sum "$KMUX_LIB" | cut -c1-12)"
if ! daemon_start; then
	say "FAIL a private kmuxd starts:"
	sed 's/^/     /' "$W/daemon.out" | tee -a "$REPORT"
	exit 1
fi
say "ok   a private kmuxd starts"

# start_run NAME WHAT ARGS...: kmux run of busy.py ARGS in the background
# (rp), checked on the GPU and named to kmuxd (job id in jid).
start_run() {
	local name=$1 what=$2
	shift 2
	kx run -m 8G -n "$name" -- "${JOBENV[@]}" "$PY" "$W/busy.py" "$@" \
		>"$W/$name.out" 2>&1 &
	rp=$!
	check "kmux run of a PyTorch job that $what: on the GPU" \
		wait_for 600 grep -q "on the GPU" "$W/$name.out"
	jid=$(job_id "$name")
	check "  ... kmuxd knows its command's pid (job $jid)" \
		wait_for 50 named_pid "$jid"
}

# 1. cancel of a run job that ignores SIGTERM.
start_run deaf "ignores SIGTERM" 120 1 0
jd=$jid
t0=$(date +%s%N)
check "  ... kmux cancel succeeds" kx cancel "$jd"
wait "$rp"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
say "     kmux run exit $rc after $ms ms (grace 2 s)"
killed_in_grace() { [ "$rc" -eq 137 ] && [ "$ms" -ge 1900 ] && [ "$ms" -lt 10000 ]; }
check "  ... SIGKILLed after the grace: exit 137, in 2-10 s" killed_in_grace
check "  ... recorded cancelled" [ "$(job_field "$jd" 'j["state"]')" = cancelled ]

# 2. kill -9 of the daemon while a run job computes.
start_run long "exits 5 after $LONG_S s" "$LONG_S" 0 5
jl=$jid
dpid=$(daemon_pid)
kill -9 "$dpid"
wait_for 300 daemon_unlocked
check "kill -9 of the daemon (pid $dpid); a new one starts" daemon_start
check "  ... the job still runs" [ "$(job_field "$jl" 'j["state"]')" = running ]
say "     committed on GPU 0 after the restart: $(kx top --once --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["gpus"][0]["mem_committed"] >> 30)') GiB"
wait "$rp"
rc=$?
check "  ... kmux run exits 5 (got $rc)" [ "$rc" -eq 5 ]
exited_5() { [ "$(job_field "$jl" '(j["state"], j["exit_code"])')" = "('exited', 5)" ]; }
check "  ... recorded exited 5" wait_for 50 exited_5
kx ps --all >>"$REPORT" 2>&1
kill "$(daemon_pid)" 2>/dev/null
cp "$KMUX_STATE_DIR/kmuxd.log" "$OUT/kmuxd.log" 2>/dev/null
cp "$W/deaf.out" "$W/long.out" "$OUT/" 2>/dev/null
say "# $fails check(s) failed"
[ "$fails" -eq 0 ]
