#!/usr/bin/env bash
# Exclusive regions, isolation (issue 6 item 2): --region-cpus pins the
# holder (every thread) to the reserved core and moves the other tasks off
# it, and leaving, the holder's kill -9 and a revoked region all give every
# mask back exactly; --cgroup-root over a fake cgroup tree: a sibling alone
# in a writable cgroup is frozen by writing 1 to cgroup.freeze (not
# SIGSTOP) and thawed by writing 0, a cgroup that also holds an unrelated
# process is not (SIGSTOP instead), and a daemon killed with -9 while a
# cgroup is frozen writes 0 once restarted.  The SIGSTOP path itself is
# t6x-region.sh's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

R=$PROGS/region
export SIMCUDA_KERNEL_US=1000
LOG=$KMUX_STATE_DIR/kmuxd.log

wait_line() {	# FILE REGEX [TENTHS]
	local i
	for i in $(seq "${3:-100}"); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
state_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
# cpus PID: every thread's Cpus_allowed_list, distinct, space-separated.
cpus() {
	local s
	for s in /proc/"$1"/task/*/status; do
		sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$s" 2>/dev/null
	done | sort -u | tr '\n' ' ' | sed 's/ $//'
}
nthreads() { ls "/proc/$1/task" 2>/dev/null | wc -l; }
# less LIST: LIST without CPU 1, as a canonical list.
less1() {
	python3 - "$1" <<'PY'
import sys
s = set()
for it in sys.argv[1].split(","):
    a, _, b = it.partition("-")
    s.update(range(int(a), int(b or a) + 1))
s.discard(1)
out, v = [], sorted(s)
i = 0
while i < len(v):
    j = i
    while j + 1 < len(v) and v[j + 1] == v[j] + 1:
        j += 1
    out.append(str(v[i]) if i == j else "%d-%d" % (v[i], v[j]))
    i = j + 1
print(",".join(out))
PY
}

# --- Bad --region-cpus: a clear error at start, exit 2 -------------------
for bad in 3-1 x "" 1, 99999 "$(nproc --all)"; do
	"$KMUX" daemon --region-cpus "$bad" >"$TMP/bad.out" 2>&1
	rc=$?
	check "--region-cpus '$bad': exit 2 ($rc)" [ "$rc" = 2 ]
	check "  ... with the reason" grep -q "bad --region-cpus" "$TMP/bad.out"
done
check "no daemon was left running" [ -z "$(daemon_pid)" ]

# --- CPU isolation ----------------------------------------------------------
mine=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
ncpu=$(nproc)
if [ "$ncpu" -lt 2 ]; then
	echo "  skip $T_NAME: CPU isolation needs 2 CPUs, this machine has $ncpu"
elif ! python3 -c 'import os,sys; sys.exit(1 not in os.sched_getaffinity(0) or len(os.sched_getaffinity(0)) < 2)'; then
	echo "  skip $T_NAME: CPU isolation needs CPU 1 and another (allowed: $mine)"
else
	others=$(less1 "$mine")
	start_daemon --region-cpus 1 --cgroup-root ""
	LD_PRELOAD=$PRELOAD "$R" busy 8000 >"$TMP/sib" 2>&1 &
	psib=$!
	wait_line "$TMP/sib" '^ready'
	sleep 0.3
	sib0=$(cpus $psib)
	LD_PRELOAD=$PRELOAD "$R" hold 1500 10 2000 >"$TMP/h" 2>&1 &
	ph=$!
	# The holder inherits $mine from this shell (it asks for its region
	# at once, so it cannot be read before).
	check "before: the sibling may use $mine (got $sib0)" [ "$sib0" = "$mine" ]
	wait_line "$TMP/h" '^begin'
	sleep 0.3
	check "held: every holder thread ($(nthreads $ph)) on CPU 1 alone (got '$(cpus $ph)')" [ "$(cpus $ph)" = 1 ]
	check "held: every sibling thread ($(nthreads $psib)) off CPU 1: $others (got '$(cpus $psib)')" [ "$(cpus $psib)" = "$others" ]
	check "  ... and the sibling is also frozen (SIGSTOP: no cgroup root)" [ "$(state_of $psib)" = T ]
	wait_line "$TMP/h" '^end' 50
	sleep 0.3
	check "left: the holder has $mine again (got '$(cpus $ph)')" [ "$(cpus $ph)" = "$mine" ]
	check "left: the sibling has $mine again (got '$(cpus $psib)')" [ "$(cpus $psib)" = "$mine" ]
	check "  ... and runs" [ "$(state_of $psib)" != T ]
	wait "$ph"

	# A sibling whose own mask is CPU 1 alone is left as it is.
	taskset -c 1 env LD_PRELOAD="$PRELOAD" "$R" busy 5000 >"$TMP/only1" 2>&1 &
	p1=$!
	wait_line "$TMP/only1" '^ready'

	# kill -9 of the holder: the masks come back.
	LD_PRELOAD=$PRELOAD "$R" hold 20000 2 >"$TMP/k" 2>&1 &
	pk=$!
	wait_line "$TMP/k" '^begin'
	sleep 0.3
	check "held again: the sibling is off CPU 1 ('$(cpus $psib)')" [ "$(cpus $psib)" = "$others" ]
	check "  ... a task on CPU 1 alone is left there ('$(cpus $p1)')" [ "$(cpus $p1)" = 1 ]
	check "  ... and the daemon says so" grep -q "may run on reserved cores only" "$LOG"
	kill -9 "$pk"; wait "$pk" 2>/dev/null
	sleep 0.5
	check "holder killed: the sibling has $mine again ('$(cpus $psib)')" [ "$(cpus $psib)" = "$mine" ]
	check "  ... the CPU-1 task still has 1 ('$(cpus $p1)')" [ "$(cpus $p1)" = 1 ]
	kill "$p1" 2>/dev/null; wait "$p1" 2>/dev/null

	# A revoked region (--region-max) gives the masks back too.
	stop_daemon
	start_daemon --region-cpus 1 --cgroup-root "" --region-max 0.5
	kill -9 "$psib" 2>/dev/null; wait "$psib" 2>/dev/null
	LD_PRELOAD=$PRELOAD "$R" busy 8000 >"$TMP/sib2" 2>&1 &
	psib=$!
	wait_line "$TMP/sib2" '^ready'
	LD_PRELOAD=$PRELOAD "$R" hold 3000 3 >"$TMP/m" 2>&1 &
	pm=$!
	wait_line "$TMP/m" '^begin'
	sleep 0.2
	held=$(cpus $psib)
	sleep 1.0
	check "revoked region: the sibling was off CPU 1 ($held) and has $mine again ('$(cpus $psib)')" \
		cond '[ "$held" = "$others" ] && [ "$(cpus $psib)" = "$mine" ]'
	check "  ... the holder too ('$(cpus $pm)')" [ "$(cpus $pm)" = "$mine" ]
	kill -9 "$pm" "$psib" 2>/dev/null; wait "$pm" "$psib" 2>/dev/null
	stop_daemon
fi

# --- cgroup v2 freezing, on a fake cgroup tree ------------------------------
# The tree has plain files: the daemon's writes are seen, nothing is frozen
# in truth (the gate keeps the region exclusive meanwhile).
CG=$TMP/cg
# mkcg PID PIDS...: PID's cgroup directory under $CG, holding PIDS.
mkcg() {
	local p d
	p=$(sed -n 's/^0:://p' "/proc/$1/cgroup")
	[ "$p" = / ] && p=
	d=$CG$p
	mkdir -p "$d"
	shift
	printf '%s\n' "$@" >"$d/cgroup.procs"
	echo 0 >"$d/cgroup.freeze"
	printf 'populated 1\nfrozen 1\n' >"$d/cgroup.events"
	echo "$d"
}
if ! grep -q '^0::/' /proc/self/cgroup; then
	echo "  skip $T_NAME: no cgroup v2 path in /proc/self/cgroup"
	finish
fi
mkdir -p "$CG"
start_daemon --cgroup-root "$CG"
LD_PRELOAD=$PRELOAD "$R" busy 8000 >"$TMP/cs" 2>&1 &
pcs=$!
wait_line "$TMP/cs" '^ready'
d=$(mkcg $pcs $pcs)
: >"$TMP/fz.trace"
LD_PRELOAD=$PRELOAD "$R" hold 1200 6 500 >"$TMP/ch" 2>&1 &
pch=$!
wait_line "$TMP/ch" '^begin'
sleep 0.2
check "cgroup: held: 1 written to cgroup.freeze (got $(cat "$d/cgroup.freeze"))" [ "$(cat "$d/cgroup.freeze")" = 1 ]
check "  ... not SIGSTOP (state $(state_of $pcs))" [ "$(state_of $pcs)" != T ]
check "  ... the daemon logs the cgroup" grep -q "froze cgroup $d " "$LOG"
check "  ... and the database row names it" \
	cond "python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); sys.exit(0 if c.execute(\"select count(*) from frozen where pid=? and cgroup=?\", (int(sys.argv[2]), sys.argv[3])).fetchone()[0]==1 else 1)' '$KMUX_STATE_DIR/kmux.db' $pcs '$d'"
wait_line "$TMP/ch" '^end' 50
sleep 0.2
check "cgroup: left: 0 written (got $(cat "$d/cgroup.freeze"))" [ "$(cat "$d/cgroup.freeze")" = 0 ]
wait "$pch"

# A cgroup that also holds an unrelated process (this shell): SIGSTOP.
mkcg $pcs $pcs $$ >/dev/null
LD_PRELOAD=$PRELOAD "$R" hold 800 4 >"$TMP/ch2" 2>&1 &
pch2=$!
wait_line "$TMP/ch2" '^begin'
sleep 0.2
check "cgroup with an unrelated process: not written ($(cat "$d/cgroup.freeze"))" [ "$(cat "$d/cgroup.freeze")" = 0 ]
check "  ... SIGSTOP instead (state $(state_of $pcs))" [ "$(state_of $pcs)" = T ]
wait "$pch2"
sleep 0.2
check "  ... thawed after" [ "$(state_of $pcs)" != T ]

# A cgroup that holds the holder: SIGSTOP too.
LD_PRELOAD=$PRELOAD "$R" hold 800 4 300 >"$TMP/ch3" 2>&1 &
pch3=$!
wait_line "$TMP/ch3" '^ready'
mkcg $pcs $pcs $pch3 >/dev/null
wait_line "$TMP/ch3" '^begin'
sleep 0.2
check "cgroup with the holder in it: not written ($(cat "$d/cgroup.freeze"))" [ "$(cat "$d/cgroup.freeze")" = 0 ]
check "  ... SIGSTOP instead" [ "$(state_of $pcs)" = T ]
wait "$pch3"

# An unrelated process in a cgroup below (the freeze would reach it), and
# a cgroup someone else froze already: SIGSTOP, and nothing written.
mkcg $pcs $pcs >/dev/null
mkdir -p "$d/sub"
echo $$ >"$d/sub/cgroup.procs"
LD_PRELOAD=$PRELOAD "$R" hold 600 3 >"$TMP/ch4" 2>&1 &
pch4=$!
wait_line "$TMP/ch4" '^begin'
sleep 0.2
check "unrelated process in a child cgroup: not written ($(cat "$d/cgroup.freeze"))" [ "$(cat "$d/cgroup.freeze")" = 0 ]
check "  ... SIGSTOP instead" [ "$(state_of $pcs)" = T ]
wait "$pch4"
rm -rf "$d/sub"
echo 1 >"$d/cgroup.freeze"
LD_PRELOAD=$PRELOAD "$R" hold 600 3 >"$TMP/ch5" 2>&1 &
pch5=$!
wait_line "$TMP/ch5" '^begin'
sleep 0.2
check "a cgroup frozen by someone else: SIGSTOP" [ "$(state_of $pcs)" = T ]
wait "$pch5"
sleep 0.2
check "  ... and its freeze is not undone ($(cat "$d/cgroup.freeze"))" [ "$(cat "$d/cgroup.freeze")" = 1 ]

# Daemon killed with -9 while the cgroup is frozen: the restart writes 0.
mkcg $pcs $pcs >/dev/null
LD_PRELOAD=$PRELOAD "$R" hold 20000 2 >"$TMP/ck" 2>&1 &
pck=$!
wait_line "$TMP/ck" '^begin'
sleep 0.2
check "held: the cgroup is frozen (1)" [ "$(cat "$d/cgroup.freeze")" = 1 ]
kill -9 "$(daemon_pid)"
sleep 0.3
check "daemon killed: the cgroup stays frozen" [ "$(cat "$d/cgroup.freeze")" = 1 ]
kill -9 "$pck"; wait "$pck" 2>/dev/null
start_daemon --cgroup-root "$CG" 2>"$TMP/restart.err"
sleep 0.3
check "restarted daemon: 0 written to cgroup.freeze ($(cat "$d/cgroup.freeze"))" [ "$(cat "$d/cgroup.freeze")" = 0 ]
check "  ... the log says it thawed through the cgroup" grep -q "thawing pid $pcs through cgroup $d," "$TMP/restart.err"

kill -9 "$pcs" 2>/dev/null; wait "$pcs" 2>/dev/null
finish
