#!/usr/bin/env bash
# Exclusive regions (issue 6): while a region is held no other task's
# operation runs (simcuda's records against the holder's times), the other
# tasks are frozen and thawed, waiting regions are served FIFO, a holder
# killed with -9 releases the GPU within 1 s, a region held past
# --region-max is revoked, a daemon killed with -9 thaws on restart,
# nesting and bad calls, no daemon (a no-op with a warning), the Python
# context manager, and `kmux run --exclusive`.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

R=$PROGS/region
export SIMCUDA_KERNEL_US=1000

wait_line() {	# FILE REGEX [TENTHS]
	local i
	for i in $(seq "${3:-100}"); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
state_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
t_of() { sed -n "s/^$2 rc=-\{0,1\}[0-9]* t=//p" "$1" | sed -n "${3:-1}p"; }
rc_of() { sed -n "s/^$2 rc=\(-\{0,1\}[0-9]*\) .*/\1/p" "$1" | sed -n "${3:-1}p"; }

# No daemon: a counted no-op, with a warning.
LD_PRELOAD=$PRELOAD "$R" nest >"$TMP/nod" 2>"$TMP/nod.err"
check "no daemon: begin is a no-op (rc 1)" [ "$(rc_of "$TMP/nod" begin)" = 1 ]
check "  ... with a warning" grep -q "not exclusive" "$TMP/nod.err"
check "  ... and the unbalanced end is still refused (-EPERM)" [ "$(rc_of "$TMP/nod" end 3)" = -1 ]

start_daemon

# Bad input.
LD_PRELOAD=$PRELOAD "$R" bad >"$TMP/bad" 2>&1
check "end without begin: -EPERM" [ "$(rc_of "$TMP/bad" end)" = -1 ]

# Nesting: only the outer pair talks to the daemon.
KMUX_LOG=info LD_PRELOAD=$PRELOAD "$R" nest >"$TMP/nest" 2>"$TMP/nest.err"
check "nest: both begins succeed" [ "$(rc_of "$TMP/nest" begin 1),$(rc_of "$TMP/nest" begin 2)" = "0,0" ]
check "  ... depth 2 then 1 then 0" [ "$(grep -c '^depth=' "$TMP/nest"),$(sed -n 's/^depth=//p' "$TMP/nest" | tr '\n' ' ')" = "3,2 1 0 " ]
check "  ... the third end is refused (-EPERM)" [ "$(rc_of "$TMP/nest" end 3)" = -1 ]
check "  ... one region granted by the daemon" [ "$(grep -c 'exclusive region .* on GPU' "$TMP/nest.err")" = 1 ]

# Exclusivity: a sibling busy for 4 s, a holder with a 1.5 s region.
export SIMCUDA_LOG=$TMP/sim.%p.log
LD_PRELOAD=$PRELOAD "$R" busy 4000 >"$TMP/sib" 2>&1 &
psib=$!
wait_line "$TMP/sib" '^ready'
sleep 0.5
LD_PRELOAD=$PRELOAD "$R" hold 1500 15 >"$TMP/h" 2>&1 &
ph=$!
wait_line "$TMP/h" '^begin'
sleep 0.2
check "while held: the sibling is frozen (state T)" [ "$(state_of $psib)" = T ]
wait_line "$TMP/h" '^done' 50
sleep 0.3
st=$(state_of $psib)
check "after: the sibling is thawed (state $st)" [ "$st" != T ]
wait "$ph" "$psib"
check "  ... and both finished" grep -q '^done' "$TMP/sib"
unset SIMCUDA_LOG
b=$(t_of "$TMP/h" begin); e=$(t_of "$TMP/h" end)
python3 - "$ph" "$b" "$e" "$TMP"/sim.*.log >"$TMP/overlap" <<'PY'
import sys
holder, b, e = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
inside = before = after = mine = 0
for path in sys.argv[4:]:
    for line in open(path):
        if not line.startswith("op "):
            continue
        f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        pid, s, t = int(f["pid"]), int(f["start"], 0), int(f["end"], 0)
        if pid == holder:
            mine += 1
        elif s < e and t > b:
            inside += 1
        elif t <= b:
            before += 1
        else:
            after += 1
print(inside, before, after, mine)
PY
read -r inside before after mine <"$TMP/overlap"
check "simcuda: the holder's 15 kernels ran in its region (got $mine)" [ "$mine" -ge 15 ]
check "simcuda: the sibling ran before ($before) and after ($after) the region" [ "$before" -gt 0 ] && [ "$after" -gt 0 ]
check "simcuda: no sibling operation overlaps the region (got $inside)" [ "$inside" = 0 ]

# FIFO: three regions asked for in order are granted in order, one at a time.
for n in 1 2 3; do
	LD_PRELOAD=$PRELOAD "$R" hold 400 4 >"$TMP/f$n" 2>&1 &
	eval pf$n=\$!
	wait_line "$TMP/f$n" '^(begin|ready)'
	sleep 0.2
done
wait "$pf1" "$pf2" "$pf3"
b1=$(t_of "$TMP/f1" begin); e1=$(t_of "$TMP/f1" end)
b2=$(t_of "$TMP/f2" begin); e2=$(t_of "$TMP/f2" end)
b3=$(t_of "$TMP/f3" begin)
check "FIFO: granted in the order asked" [ "$b1" -lt "$b2" ] && [ "$b2" -lt "$b3" ]
check "  ... each after the one before it ended" [ "$e1" -lt "$b2" ] && [ "$e2" -lt "$b3" ]

# Holder killed with -9: the waiting region is granted within 1 s.
LD_PRELOAD=$PRELOAD "$R" hold 20000 2 >"$TMP/k1" 2>&1 &
pk1=$!
wait_line "$TMP/k1" '^begin'
LD_PRELOAD=$PRELOAD "$R" hold 100 1 >"$TMP/k2" 2>&1 &
pk2=$!
wait_line "$TMP/k2" '^ready'
sleep 0.3
check "a second region waits while the first is held" [ -z "$(t_of "$TMP/k2" begin)" ]
t0=$(date +%s%N)
kill -9 "$pk1"; wait "$pk1" 2>/dev/null
wait_line "$TMP/k2" '^begin' 30
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "kill -9 of the holder: the next region within 1 s (${ms} ms)" [ "$ms" -lt 1000 ]
wait "$pk2"

# Daemon killed with -9 while a sibling is frozen: the restart thaws it.
LD_PRELOAD=$PRELOAD "$R" busy 6000 >"$TMP/fs" 2>&1 &
pfs=$!
wait_line "$TMP/fs" '^ready'
LD_PRELOAD=$PRELOAD "$R" hold 20000 2 >"$TMP/fh" 2>&1 &
pfh=$!
wait_line "$TMP/fh" '^begin'
sleep 0.2
check "held: the sibling is frozen" [ "$(state_of $pfs)" = T ]
kill -9 "$(daemon_pid)"
sleep 0.3
check "daemon killed: the sibling stays frozen until a daemon is back" [ "$(state_of $pfs)" = T ]
start_daemon
sleep 0.3
st=$(state_of $pfs)
check "restarted daemon: the sibling is thawed (state $st)" [ "$st" != T ]
kill -9 "$pfh" 2>/dev/null; wait "$pfh" 2>/dev/null
wait "$pfs"
check "  ... and it finished" grep -q '^done' "$TMP/fs"

# Python: the context manager over the preloaded library (ctypes only).
export PYTHONPATH=$ROOT/python
cat >"$TMP/ex.py" <<'PY'
import sys, kmux
print("available", kmux.available())
with kmux.exclusive() as ex:
    print("exclusive", ex, kmux.depth())
    with kmux.exclusive() as ex2:
        print("nested", ex2, kmux.depth())
    sys.stdout.flush()
    import time; time.sleep(1.0)
print("after", kmux.depth())
try:
    with kmux.exclusive():
        kmux.end()
except kmux.KmuxError as e:
    print("error", e.errno)
PY
env -u KMUX_LIBRARY python3 "$TMP/ex.py" >"$TMP/py0" 2>&1
check "python without kmux: a no-op region" grep -qx "exclusive False 0" "$TMP/py0"
LD_PRELOAD=$PRELOAD "$R" busy 3000 >"$TMP/psib" 2>&1 &
ppsib=$!
wait_line "$TMP/psib" '^ready'
LD_PRELOAD=$PRELOAD python3 "$TMP/ex.py" >"$TMP/py1" 2>&1 &
ppy=$!
wait_line "$TMP/py1" '^nested' 50
sleep 0.2
check "python: with kmux.exclusive() holds the GPU (the sibling is frozen)" [ "$(state_of $ppsib)" = T ]
wait "$ppy"
check "  ... exclusive, nested (depth 2), released (depth 0)" \
	cond 'grep -qx "exclusive True 1" "$TMP/py1" && grep -qx "nested True 2" "$TMP/py1" && grep -qx "after 0" "$TMP/py1"'
check "  ... an end too many raises KmuxError(EPERM)" grep -qx "error 1" "$TMP/py1"
check "  ... the sibling is thawed" [ "$(state_of $ppsib)" != T ]
wait "$ppsib"

# kmux run --exclusive: the command-granular baseline, no job beside it.
"$KMUX" run --exclusive -n exA -- "$PROGS/reg" 16 1500 >"$TMP/xa" 2>&1 &
pxa=$!
wait_line "$TMP/xa" '^ready'
"$KMUX" run -n exB -- "$PROGS/reg" 16 >"$TMP/xb" 2>&1 &
pxb=$!
sleep 0.5
check "kmux run --exclusive: a second job waits while it runs" cond '! grep -q "^start" "$TMP/xb"'
wait "$pxa" "$pxb"
check "  ... and runs after it" grep -q '^done' "$TMP/xb"
expect_rc 2 "kmux run --exclusive without a command" "$KMUX" run --exclusive
# submit -x, as run -x: a job submitted beside it waits while it runs.
xid=$("$KMUX" submit -x -n exC -- "$PROGS/reg" 16 1500)
check "submit -x: queued" [ -n "$xid" ]
wait_state "$xid" running
"$KMUX" run -n exD -- "$PROGS/reg" 16 >"$TMP/xd" 2>&1 &
pxd=$!
sleep 0.5
check "  ... a second job waits while it runs" cond '! grep -q "^start" "$TMP/xd"'
wait "$pxd"
check "  ... and runs after it" grep -q '^done' "$TMP/xd"

# --region-max: a region held too long is revoked; its end says so.
stop_daemon
start_daemon --region-max 0.5
LD_PRELOAD=$PRELOAD "$R" hold 1500 3 >"$TMP/m" 2>&1
check "held past --region-max: end returns -ETIMEDOUT" [ "$(rc_of "$TMP/m" end)" = -110 ]
finish
