#!/usr/bin/env bash
# Deferred frees (docs/design-streams.md): under the scheduler a synchronous
# cuMemFree of a plain device allocation does not drain the device; kmux
# keeps the memory until a host synchronization leaves the pool idle, or
# until memory or the quota is short.  Phase-local buffers
# (progs/phase-alloc.c) print what they print unscheduled, nothing is used
# after its free or overlaps a conflicting operation in simcuda's records,
# and every real cuMemFree comes after the last kernel (with
# KMUX_DEFER_FREE=0, the control, they come between the phases).
. "$(dirname "$0")/lib.sh"

frees_after_kernels() { # the sim logs: 1 when no cuMemFree precedes a kernel
	cat "$TMP"/sim.* | awk '/^op / {
		seq = $3; sub("seq=", "", seq); seq += 0
		if ($0 ~ /kind=kernel/ && seq > lastk) lastk = seq
		if ($0 ~ /kind=free name=cuMemFree /) { if (!firstf || seq < firstf) firstf = seq }
	} END { print (firstf && firstf > lastk) ? 1 : 0 }'
}

"$PROGS/phase-alloc" phases 4 3 >"$TMP/plain" 2>&1
check "phase-alloc runs unscheduled" grep -q '^done' "$TMP/plain"

rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD \
	"$PROGS/phase-alloc" phases 4 3 >"$TMP/d" 2>"$TMP/d.log"
check "deferred: the same output" cmp -s "$TMP/plain" "$TMP/d"
check "  ... no conflicting overlap, no use after free" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
check "  ... every real cuMemFree after the last kernel" [ "$(frees_after_kernels)" = 1 ]
check "  ... 16 frees deferred, freed at an idle synchronization" \
	grep -qE 'frees deferred 16 \(freed at idle syncs [1-9][0-9]* times' "$TMP/d.log"

rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=4 KMUX_LOG=info KMUX_DEFER_FREE=0 LD_PRELOAD=$PRELOAD \
	"$PROGS/phase-alloc" phases 4 3 >"$TMP/nd" 2>"$TMP/nd.log"
check "KMUX_DEFER_FREE=0: the same output" cmp -s "$TMP/plain" "$TMP/nd"
check "  ... frees between the phases (the control)" [ "$(frees_after_kernels)" = 0 ]
check "  ... nothing deferred" grep -q 'frees deferred 0 ' "$TMP/nd.log"

for n in 2 8; do
	rm -f "$TMP"/sim.*
	env SIMCUDA_LOG="$TMP/sim.%p" SIMCUDA_KERNEL_US=300 KMUX_STREAMS=$n LD_PRELOAD="$PRELOAD" \
		"$PROGS/phase-alloc" phases 8 6 >"$TMP/d$n" 2>/dev/null
	"$PROGS/phase-alloc" phases 8 6 >"$TMP/plain86" 2>&1
	check "8 tasks, 6 phases on $n streams: same output, no conflict" \
		bash -c "cmp -s '$TMP/plain86' '$TMP/d$n' && '$SIMDIR/simcuda-check' -q '$TMP'/sim.*"
done

# No host synchronization for a while: the keeping-up probe finds the pool
# idle and frees then (some real cuMemFree before the last kernel); with
# the probe off they wait for the final synchronization.
rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=4 KMUX_DEBUG_KEEP_UP_US=5000 LD_PRELOAD=$PRELOAD \
	"$PROGS/phase-alloc" defer-probe >"$TMP/p" 2>&1
fak=$(frees_after_kernels)
check "an idle pool found by the probe: deferred frees done before the end" \
	bash -c "grep -q '^done' '$TMP/p' && [ '$fak' = 0 ]"
check "  ... no use after free" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=4 KMUX_KEEP_UP=0 LD_PRELOAD=$PRELOAD \
	"$PROGS/phase-alloc" defer-probe >/dev/null 2>&1
check "  ... with KMUX_KEEP_UP=0 they wait for the synchronization (the control)" \
	[ "$(frees_after_kernels)" = 1 ]

# A program's own non-blocking stream writes a buffer kmux cannot see until
# its free: the memory stays valid until the real free, which synchronizes.
rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$PROGS/phase-alloc" own-stream \
	>"$TMP/own" 2>&1
check "own stream: runs, no use after free" \
	bash -c "grep -q '^done' '$TMP/own' && '$SIMDIR/simcuda-check' -q '$TMP'/sim.*"

# Memory first: 100 MiB deferred on a 1 GiB device, then 950 MiB.
env SIMCUDA_MEM_BYTES=1G KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD="$PRELOAD" \
	"$PROGS/phase-alloc" defer-oom >"$TMP/o" 2>"$TMP/o.log"
check "out of device memory: deferred frees are freed and the allocation succeeds" \
	grep -qx 'big err=0' "$TMP/o"
check "  ... counted as freed after a drain" grep -qE 'after a drain [1-9]' "$TMP/o.log"
env SIMCUDA_MEM_BYTES=1G KMUX_STREAMS=4 KMUX_DEFER_FREE=0 LD_PRELOAD="$PRELOAD" \
	"$PROGS/phase-alloc" defer-oom >"$TMP/o0" 2>&1
check "  ... as without deferral" grep -qx 'big err=0' "$TMP/o0"

# The quota: 60 MiB deferred under a 100 MiB quota, then 70 MiB; a double
# free gets the driver's answer.
env KMUX_MEM_QUOTA=100M KMUX_STREAMS=4 LD_PRELOAD="$PRELOAD" \
	"$PROGS/phase-alloc" defer-quota >"$TMP/q" 2>&1
check "quota: the deferred charge is given back for 70 MiB" grep -qx 'big err=0' "$TMP/q"
check "a second cuMemFree of a deferred buffer: CUDA_ERROR_INVALID_VALUE (1)" \
	grep -qx 'again err=1' "$TMP/q"
env KMUX_MEM_QUOTA=100M KMUX_STREAMS=4 LD_PRELOAD="$PRELOAD" \
	"$PROGS/phase-alloc" quota >"$TMP/qi" 2>&1
check "cuMemGetInfo after a deferred free: its memory counts as free (100 of 100 MiB)" \
	grep -qx 'free 100' "$TMP/qi"

env KMUX_STREAMS=4 KMUX_MEMORY=lazy KMUX_LOG=info LD_PRELOAD="$PRELOAD" \
	"$PROGS/phase-alloc" phases 4 3 >"$TMP/mm" 2>"$TMP/mm.log"
check "with a memory mode (it is there to hold less): the same output, nothing deferred" \
	bash -c "cmp -s '$TMP/plain' '$TMP/mm' && grep -q 'frees deferred 0 ' '$TMP/mm.log'"

env KMUX_STREAMS=4 KMUX_DEFER_FREE=sometimes KMUX_LOG=info LD_PRELOAD="$PRELOAD" \
	"$PROGS/phase-alloc" phases 2 2 >/dev/null 2>"$TMP/bad"
check "KMUX_DEFER_FREE=sometimes: warned about, deferral stays on" \
	bash -c "grep -q 'KMUX_DEFER_FREE=sometimes: only 0' '$TMP/bad' && grep -qE 'frees deferred [1-9]' '$TMP/bad'"
finish
