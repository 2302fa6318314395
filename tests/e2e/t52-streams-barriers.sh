#!/usr/bin/env bash
# What kmux cannot see through is a barrier, as on the legacy stream: a
# graph launch, host functions and callbacks, kernels given managed or
# pinned host memory, kernels named by KMUX_BARRIER_KERNELS, launches with
# an `extra` blob kmux cannot read (a kernel without parameters, and one
# with a pointer), kernels whose parameter layout is unknown, default-stream
# work while a capture is in progress, a default stream waiting for an
# event, and kernels given a live texture or surface object (or a word
# equal to one), and every kernel once one was uploaded into device memory.  Each case checks itself from simcuda's records
# (tests/e2e/progs/streams-cases.c).  KMUX_BARRIER_KERNELS names the probe
# kernel in the regex case only: set for every case, it would make probe a
# barrier in each, whatever else kmux did.
. "$(dirname "$0")/lib.sh"

for m in graph hostfunc callback managed hostmem regex opaque opaque-params \
	 unknown unknown-extra streamop capture waitevent texture surface \
	 texture-word texture-table; do
	re=
	noinfo=
	case $m in
	regex) re='^probe$' ;;
	unknown*) noinfo=probe ;;
	esac
	rm -f "$TMP"/sim.*
	KMUX_BARRIER_KERNELS=$re SIMCUDA_NO_PARAM_INFO=$noinfo \
		SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=8 \
		LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" $m >"$TMP/$m" 2>&1
	rc=$?
	check "$m: keeps its place ($(head -c 60 "$TMP/$m"))" [ $rc -eq 0 ]
	check "$m: no conflicting overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
done

# Not a barrier, an address kmux learns from a graph: two default-stream
# kernels writing what a graph's memory node allocated keep their order.
rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD \
	"$PROGS/streams-cases" graph-mem >"$TMP/graph-mem" 2>&1
check "graph-mem: writers of a graph allocation keep their order ($(head -c 60 "$TMP/graph-mem"))" \
	grep -qx "graph-mem ordered" "$TMP/graph-mem"
check "graph-mem: no conflicting overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*

# The controls of the unreadable launches: probe through a short `extra`
# list kmux reads, and probe with its layout known, are ordinary kernels,
# and the same check sees them run beside their neighbours.
KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" extra >"$TMP/ctl-extra" 2>&1
check "control: probe through a readable extra list is no barrier" [ $? -ne 0 ]
KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" unknown >"$TMP/ctl-unknown" 2>&1
check "control: without SIMCUDA_NO_PARAM_INFO, probe is no barrier" [ $? -ne 0 ]

# The control of the texture cases: once the object is destroyed its value
# is data, and the kernel given it runs beside its neighbours.
KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" texture-gone >"$TMP/ctl-tex" 2>&1
check "control: a destroyed texture object's value is no barrier" [ $? -ne 0 ]

# The control: without KMUX_BARRIER_KERNELS the probe kernel is ordinary,
# and the same check sees it run beside its neighbours.
KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" regex >"$TMP/ctl" 2>&1
check "control: without KMUX_BARRIER_KERNELS the check fails" [ $? -ne 0 ]
# A regex that does not compile leaves the program unscheduled (with a warning).
KMUX_LOG=warn KMUX_BARRIER_KERNELS='(' KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD \
	"$PROGS/streams-cases" regex >"$TMP/bad" 2>&1
check "a bad KMUX_BARRIER_KERNELS: warned, and nothing is scheduled" \
	bash -c "grep -q 'KMUX_BARRIER_KERNELS' '$TMP/bad' && grep -q 'barrier held' '$TMP/bad'"
# ... and said at the default level too, on one line of stderr.
env -u KMUX_LOG KMUX_BARRIER_KERNELS='(' KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD \
	"$PROGS/streams-cases" regex >"$TMP/bad.out" 2>"$TMP/bad.err"
check "... without KMUX_LOG: the program runs (exit 0, the barrier held)" \
	bash -c "[ $? -eq 0 ] && grep -q 'barrier held' '$TMP/bad.out'"
check "... and one line says 'kmux: KMUX_BARRIER_KERNELS=(: ...; scheduling off'" \
	bash -c "[ \$(wc -l <'$TMP/bad.err') -eq 1 ] &&
		 grep -q '^kmux: KMUX_BARRIER_KERNELS=(: .*; scheduling off\$' '$TMP/bad.err'"
finish
