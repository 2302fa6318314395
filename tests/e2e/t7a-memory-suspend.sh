#!/usr/bin/env bash
# Load control (issue 5; docs/design-memory.md, "Load control: suspending a
# task that cannot get room").  An evict-mode task that cannot get the room
# it needs stops competing: it evicts all it can, kmuxd lowers its
# commitment to what it still holds, and it waits (suspended) until kmuxd
# can commit what it asked for.
#  (a) three `memory cycle` tasks (working set 16 MiB) at 8 MiB budgets on
#      a GPU that commits 38 MiB: one grows; the others are refused and,
#      at the second refusal in a row, suspend; the room they gave up goes
#      to their neighbours; each resumes once its 16 MiB fits.  ps shows
#      "suspended" meanwhile; all give the plain run's results.
#  (b) a task that gave budget back (`memory regrow`: 10 -> 4 or 6 MiB) later
#      allocates 8 MiB while the GPU is full: it suspends and the
#      allocation succeeds once a neighbour ends (before: out of memory).
#  (c) the same with the daemon killed while it is suspended: the task
#      resumes and completes.
export KMUX_FAKE_GPUS=1:40M
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
M=$PROGS/memory
KLOG=$TMP/state/kmuxd.log
MiB=$((1 << 20))

suspended() { [ "$(jq_job "$1" 'j["suspended"]')" = True ]; }
any_suspended() {
	"$KMUX" ps --json | python3 -c '
import json, sys
sys.exit(0 if any(j["suspended"] for j in json.load(sys.stdin)) else 1)'
}

# --- (a) thrashing tasks, not all fit ---------------------------------------
CY="cycle 120 50"	# 120 rounds 50 ms apart: ~6 s; 16 MiB touched a round
"$M" $CY >"$TMP/cplain" 2>&1 &	# meanwhile: it sleeps most of its time
pp=$!
start_daemon
for t in x y z; do
	KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n "cy-$t" -- "$M" $CY \
		>"$TMP/$t" 2>"$TMP/$t.err" &
	eval "p_$t=\$!"
done
for t in x y z; do wait_job "cy-$t"; done
check "(a) a task is suspended (ps --json), and ps says so" \
	eval 'wait_for 15 any_suspended &&
		"$KMUX" ps | grep -q " suspended "'
wait "$p_x"; rx=$?
wait "$p_y"; ry=$?
wait "$p_z"; rz=$?
wait "$pp"
check "(a) all three exit 0 ($rx $ry $rz)" eval '[ "$rx$ry$rz" = 000 ]'
for t in x y z; do
	check "(a) $t: the plain run's results" cmp "$TMP/cplain" "$TMP/$t"
done
check "(a) a task suspended at the second refusal and kmuxd logged it" \
	eval 'grep -q "memory: no room to grow the budget of $((8 * MiB)) bytes to $((16 * MiB)): suspended" "$TMP"/[xyz].err &&
		grep -Eq "daemon: job [0-9]+ suspended: no room for its working set; holds 1.00 MiB \(was 8.00 MiB\), waits for 16.00 MiB" "$KLOG"'
check "(a) ... it resumed with its working set" \
	eval 'grep -q "memory: resumed with a budget of $((16 * MiB)) bytes" "$TMP"/[xyz].err &&
		grep -Eq "daemon: job [0-9]+ resumes with 16 MiB \(its working set\)" "$KLOG"'
# A suspended one resumed once its room was there: no thrashing for life.
check "(a) nobody thrashed to the end: every budget ended at 16 MiB" \
	eval '[ "$(grep -El "budget grew [0-9]+ times \(of [0-9]+ asks\) to $((16 * MiB)) bytes" "$TMP"/[xyz].err | wc -l)" = 3 ]'
stop_daemon

# --- (b) a budget given back, needed again ---------------------------------
export KMUX_FAKE_GPUS=1:24M	# 22.8 MiB committable: two 10 MiB budgets
ST="staged 3 200 20"		# ~12 s
rm -f "$TMP/state/kmux.db"*
"$M" $ST >"$TMP/splain" 2>&1 &	# meanwhile, as above
pp=$!
touch "$TMP/go0"
"$M" regrow "$TMP/go0" >"$TMP/rplain" 2>&1
check "the plain regrow run allocates and reads back" \
	eval 'grep -qx "regrow alloc err=0" "$TMP/rplain" &&
		grep -qx "obj 2 first=3 last=3" "$TMP/rplain"'

# run_b GO: A (regrow until GO exists) and B (staged) at 10 MiB; C (staged)
# is admitted once both gave budget back; then GO is created.
run_b() {
	KMUX_LOG=info "$KMUX" run --memory=evict --mem 10M -n rg-a -- "$M" regrow "$1" \
		>"$TMP/a" 2>"$TMP/a.err" &
	p_a=$!
	KMUX_LOG=info "$KMUX" run --memory=evict --mem 10M -n rg-b -- "$M" $ST \
		>"$TMP/b" 2>"$TMP/b.err" &
	p_b=$!
	wait_job rg-a && wait_job rg-b
	ja=$(job_of rg-a)
	jb=$(job_of rg-b)
	sleep 2.5	# MM_IDLE_MS, and past the staged run's early restores
	KMUX_LOG=info "$KMUX" run --memory=evict --mem 10M -n rg-c -- "$M" $ST \
		>"$TMP/c" 2>"$TMP/c.err" &
	p_c=$!
	wait_job rg-c
	jc=$(job_of rg-c)
	wait_for 20 job_running "$jc"
}

start_daemon
run_b "$TMP/go1"
check "(b) the third is admitted once the first two gave budget back" job_running "$jc"
# 4 MiB (its floor: the busy object) when asked first for the whole 7.2
# MiB short, 6 MiB when asked second for what B's giving left short.
check "(b) ... A gave 10 -> 4 or 6 MiB, below the 8 it will allocate" \
	grep -Eq "daemon: job $ja gave up budget: 10.00 MiB -> [46].00 MiB" "$KLOG"
touch "$TMP/go1"
check "(b) A's 8 MiB allocation suspends it while the GPU is full (ps)" \
	wait_for 10 suspended "$ja"
check "(b) ... its commitment is what it holds" \
	[ "$(jq_job "$ja" 'j["mem_quota"] >> 20')" -le 1 ]
wait "$p_a"; ra=$?
wait "$p_b"; rb=$?
wait "$p_c"; rc=$?
check "(b) all three exit 0 ($ra $rb $rc)" eval '[ "$ra$rb$rc" = 000 ]'
check "(b) A allocated and read back the plain run's results" cmp "$TMP/rplain" "$TMP/a"
check "(b) B and C: the plain staged results" \
	eval 'wait "$pp" && cmp "$TMP/splain" "$TMP/b" && cmp "$TMP/splain" "$TMP/c"'
check "(b) A waited for its admitted 10 MiB and got it" \
	eval 'grep -q "memory: resumed with a budget of $((10 * MiB)) bytes" "$TMP/a.err" &&
		grep -q "daemon: job $ja resumes with 10 MiB (its working set)" "$KLOG"'
check "(b) ... after a neighbour ended" \
	eval '"$KMUX" ps --all --json | python3 -c "
import json, sys
js = {j[\"id\"]: j for j in json.load(sys.stdin)}
a, b, c = js[$ja], js[$jb], js[$jc]
sys.exit(0 if min(b[\"end_us\"], c[\"end_us\"]) <= a[\"end_us\"] else 1)"'
stop_daemon

# --- (c) the daemon dies while the task is suspended -----------------------
rm -f "$TMP/state/kmux.db"*
start_daemon
run_b "$TMP/go2"
touch "$TMP/go2"
check "(c) A suspends" wait_for 10 suspended "$ja"
kill -9 "$(daemon_pid)"
wait "$p_a"; ra=$?
check "(c) A exits 0 with the plain run's results" \
	eval '[ "$ra" = 0 ] && cmp "$TMP/rplain" "$TMP/a"'
check "(c) ... it resumed without kmuxd, with its admitted budget" \
	grep -q "memory: resumed without kmuxd's grant (.*); the budget is $((10 * MiB)) bytes" "$TMP/a.err"
wait "$p_b"; wait "$p_c"
stop_daemon

# --- (d) the user's own KMUX_MEM_QUOTA: no growth past it ------------------
# A registering evict-mode `memory cycle` (16 MiB a round) capped at 8 MiB
# by its user thrashes within its 8 MiB: kmuxd, which would grow it, is
# not asked past the cap.
rm -f "$TMP/state/kmux.db"*
start_daemon
"$M" cycle 40 >"$TMP/cap-plain" 2>&1
KMUX_MEM_QUOTA=8M KMUX_MEMORY=evict KMUX_NAME=capped KMUX_LOG=info \
	LD_PRELOAD=$PRELOAD "$M" cycle 40 >"$TMP/cap" 2>"$TMP/cap.err"
rc=$?
check "(d) the capped task exits 0 with the plain run's results" \
	eval '[ $rc = 0 ] && cmp "$TMP/cap-plain" "$TMP/cap"'
check "(d) ... its budget never grew past its 8 MiB" \
	eval '! grep -q "kmuxd grew the budget" "$TMP/cap.err" &&
		[ "$(jq_job "$(job_of capped)" "j[\"mem_quota\"] >> 20")" -le 8 ]'
finish
