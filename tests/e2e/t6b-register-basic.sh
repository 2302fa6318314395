#!/usr/bin/env bash
# Uncooperative processes (issue 4, item 3): a CUDA program started with
# LD_PRELOAD alone, not by kmux, registers with kmuxd at its first cuInit.
# It becomes a job (named after argv[0], or KMUX_NAME), is given a GPU in
# CUDA_VISIBLE_DEVICES and a quota, appears in `kmux ps` while it runs, and
# its job ends (memory released) when it exits.  It waits in cuInit while
# the memory it needs is taken, and starts when that frees.  KMUX_MEM
# declares its need.  With no daemon it runs unmanaged, as without kmux.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"

# No daemon yet: unmanaged, the program's own view, one info line (KMUX_LOG).
KMUX_LOG=info LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/none" 2>"$TMP/none.err"
check "no daemon: the program runs (exit 0)" [ $? -eq 0 ]
check "no daemon: no GPU chosen for it" has "$TMP/none" "cvd=unset"
check "no daemon: no quota (all of the simulated 16 GiB)" has "$TMP/none" "total=16384"
check "no daemon: one info line says it runs unmanaged" \
	[ "$(grep -c "no kmuxd on $KMUX_SOCKET: running unmanaged" "$TMP/none.err")" = 1 ]

start_daemon

# Registered: a job named after the program, GPU 0, a guessed quota (10% of
# the 16 GiB GPU, rounded up to a MiB); running in ps while it holds, released after it exits.
# It holds until the checks below have looked (REG_HOLD_FILE): under the
# sanitizers a fixed 1.5 s ran out before the last of them.
REG_HOLD_FILE=$TMP/one.go LD_PRELOAD=$PRELOAD "$R" 16 100 >"$TMP/one" 2>&1 &
p1=$!
check "registered: it starts" wait_line "$TMP/one" ready
j1=$(job_of reg)
check "registered: a job named after argv[0]" [ -n "$j1" ]
check "  ... running, with the process's pid" \
	[ "$(jq_job "$j1" 'j["state"], j["pid"]')" = "('running', $p1)" ]
check "  ... GPU 0 in its CUDA_VISIBLE_DEVICES" has "$TMP/one" "cvd=0"
check "  ... quota: the guess, 1639 MiB, which cuMemGetInfo reports" has "$TMP/one" "total=1639"
check "  ... ps --json shows that quota" [ "$(jq_job "$j1" 'j["mem_quota"] >> 20')" = 1639 ]
check "  ... committed on the GPU" [ "$(top_json 't["gpus"][0]["mem_committed"] >> 20')" = 1639 ]
touch "$TMP/one.go"
wait "$p1"
check "  ... the program exits 0" [ $? -eq 0 ]
check "  ... its job ends when it exits" wait_state "$j1" exited 20
check "  ... and nothing stays committed" [ "$(top_json 't["gpus"][0]["mem_committed"]')" = 0 ]
expect_rc 125 "  ... kmux wait: its exit status is unknown" "$KMUX" wait "$j1"
check "  ... because kmux did not start it" err_has "kmux did not start it"
expect_rc 3 "  ... kmux logs: it has none" "$KMUX" logs "$j1"
check "  ... because kmux did not start it (not 'in the foreground')" \
	cond 'err_has "kmux did not start it" && ! err_has "foreground"'

# KMUX_MEM and KMUX_NAME (the Slurm plugin's interface): a 10 GiB task
# holds the GPU; a second one waits in cuInit until the first exits.
REG_HOLD_FILE=$TMP/go-first KMUX_MEM=10G KMUX_NAME=first LD_PRELOAD=$PRELOAD "$R" 16 1 >"$TMP/a" 2>&1 &
pa=$!
check "KMUX_MEM=10G: admitted" wait_line "$TMP/a" ready
ja=$(job_of first)
check "  ... named by KMUX_NAME" [ -n "$ja" ]
check "  ... its quota is the declared 10 GiB" has "$TMP/a" "total=10240"
check "  ... ps: mem_request 10 GiB" [ "$(jq_job "$ja" 'j["mem_request"] >> 30')" = 10 ]
KMUX_MEM=10G KMUX_NAME=second LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/b" 2>&1 &
pb=$!
wait_job second
jb=$(job_of second)
check "a second 10 GiB task: queued" [ "$(jq_job "$jb" 'j["state"]')" = queued ]
check "  ... and it says so on stderr, at the default log level" \
	wait_line "$TMP/b" "kmux: queued by kmuxd as job $jb (position 1): waiting for a GPU (KMUX_REGISTER=0 runs unmanaged)"
check "  ... it waits inside cuInit" cond 'has "$TMP/b" start && ! has "$TMP/b" ready'
touch "$TMP/go-first"
wait "$pa"
check "  ... it starts once the first has exited" wait_line "$TMP/b" ready 50
wait "$pb"
check "  ... and completes (exit 0)" [ $? -eq 0 ]
check "  ... it started after the first ended" [ "$(python3 -c '
import json, subprocess, sys
jobs = {j["id"]: j for j in json.load(sys.stdin)}
print(jobs[int(sys.argv[2])]["start_us"] >= jobs[int(sys.argv[1])]["end_us"])' "$ja" "$jb" \
	< <("$KMUX" ps --all --json))" = True ]

# The user's own KMUX_MEM_QUOTA: declared as the need, and the quota kmuxd
# gives never exceeds it (without it the guess, 1639 MiB, above).
KMUX_MEM_QUOTA=64M KMUX_NAME=capped LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/cap" 2>&1
check "KMUX_MEM_QUOTA=64M with a daemon: the program runs (exit 0)" [ $? -eq 0 ]
check "  ... its quota is the 64 MiB it set" has "$TMP/cap" "total=64"
check "  ... declared to kmuxd as its need" \
	[ "$(jq_job "$(job_of capped)" 'j["mem_request"] >> 20')" = 64 ]

# A declared need no GPU can hold: refused, and the program runs unmanaged.
KMUX_MEM=100G LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/big" 2>&1
check "KMUX_MEM beyond any GPU: the program still runs (fail open)" \
	cond '[ $? -eq 0 ] && has "$TMP/big" "cvd=unset" && has "$TMP/big" "total=16384"'
# Under valgrind (memcheck): registration, reports and the exit report
# make no memory error.
if [ -z "${ASAN_LIB:-}" ] && command -v valgrind >/dev/null 2>&1; then
	KMUX_NAME=vg LD_PRELOAD=$PRELOAD valgrind -q --error-exitcode=99 \
		--leak-check=no "$R" 16 800 10 >"$TMP/vg" 2>&1
	check "memcheck: no errors in a registered, reporting process" \
		cond '[ $? -eq 0 ] && has "$TMP/vg" done'
	check "  ... it was registered and its peak reported" \
		[ "$(jq_job "$(job_of vg)" 'j["mem_peak"] >> 20')" = 16 ]
fi
# KMUX_REGISTER=0: not registered.
n0=$("$KMUX" ps --all --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
KMUX_REGISTER=0 LD_PRELOAD=$PRELOAD "$R" 16 >"$TMP/off" 2>&1
check "KMUX_REGISTER=0: runs without registering" \
	cond 'has "$TMP/off" "cvd=unset" && [ "$("$KMUX" ps --all --json | python3 -c "import json,sys; print(len(json.load(sys.stdin)))")" = "$n0" ]'
finish
