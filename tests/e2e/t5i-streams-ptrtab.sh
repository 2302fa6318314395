#!/usr/bin/env bash
# Pointer tables (src/preload/ptrtab.h): a kernel given a device array the
# host filled with pointers (cuBLAS batched calls take such arrays) reaches
# what they point to; the scheduler must order it with those allocations'
# other users.  Each case checks its read-back and simcuda's records
# (tests/e2e/progs/streams-cases.c); KMUX_PTRTAB=0 is the control that
# must fail; a table wider than kmux keeps, or too large to read to its
# end, makes its kernel a barrier; a table staged through a device-to-
# device copy and one whose pointer lies past the first 64 KiB are
# followed; random programs with tables keep their output; a table built
# by kernels stays invisible (t55's chase).
. "$(dirname "$0")/lib.sh"

for m in table table-unified table-wide table-dtod table-large table-huge; do
	rm -f "$TMP"/sim.*
	KMUX_LOG=info SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=8 \
		LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" $m >"$TMP/$m" 2>&1
	rc=$?
	check "$m: the read-back sees the write through the table" \
		bash -c "[ $rc -eq 0 ] && grep -q '^table ok' '$TMP/$m'"
	check "$m: no conflicting overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
done
check "table: the exit line counts it" \
	grep -q 'pointer tables 1 (0 opaque; the others reach 1 allocations)' "$TMP/table"
check "table-wide: opaque, and its kernel a barrier" bash -c "
	grep -q 'pointer tables 1 (1 opaque' '$TMP/table-wide' &&
	grep -q ' [1-9][0-9]* barriers' '$TMP/table-wide'"
check "table-dtod: the staging buffer and the table, both followed" \
	grep -q 'pointer tables 2 (0 opaque; the others reach 2 allocations)' "$TMP/table-dtod"
check "table-large: read past its head (a table of 2 allocations)" \
	grep -q 'pointer tables 1 (0 opaque; the others reach 2 allocations)' "$TMP/table-large"
check "table-huge: opaque, and its kernel a barrier" bash -c "
	grep -q 'pointer tables 1 (1 opaque' '$TMP/table-huge' &&
	grep -q ' [1-9][0-9]* barriers' '$TMP/table-huge'"

# The control: without tables the kernel writing through one is ordered
# by its parameters alone, and the read-back overtakes it.
# (The program exits at the wrong read, often before the kernel ends, so
# simcuda's records need not hold the overlap.)
for m in table table-unified table-dtod table-large; do
	KMUX_PTRTAB=0 KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD \
		"$PROGS/streams-cases" $m >"$TMP/ctl-$m" 2>&1
	rc=$?
	check "control $m: with KMUX_PTRTAB=0 the check fails" \
		bash -c "[ $rc -eq 1 ] && grep -q 'did not wait for the kernel' '$TMP/ctl-$m'"
done

"$KMUX" verify --streams 4 -- "$PROGS/streams-cases" table >"$TMP/verify" 2>&1
check "kmux verify: identical" [ $? -eq 0 ]

# Random programs where a sixth of the kernels reach their buffers only
# through a table uploaded before each launch (RAND_DAG_TABLES): the same
# output as unscheduled, no conflicting overlap, with frees and
# re-allocations moving what the table points to.
# shellcheck source=tests/e2e/rand-lib.sh
. "$(dirname "$0")/rand-lib.sh"
export RAND_DAG_TABLES=1
for seed in $(seq 1 8); do
	rand_run rand-dag "$seed" 1 2 8
done
for seed in 1 2 3 4; do
	rand_run rand-dag-pt "$seed" 1 8
done
rand_run rand-dag 1 4 4
rand_run rand-dag-pt 2 4 4
unset RAND_DAG_TABLES
check "random programs with tables: $runs scheduled runs print what the unscheduled ones print${bad_out:+ (differ:$bad_out)}" [ -z "$bad_out" ]
check "random programs with tables: no conflicting overlap${bad_check:+ (conflicts:$bad_check)}" [ -z "$bad_check" ]

KMUX_LOG=warn KMUX_PTRTAB=yes KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD \
	"$PROGS/streams-cases" table >"$TMP/badval" 2>&1
check "KMUX_PTRTAB=yes: warned, tables stay on" bash -c "
	grep -q 'KMUX_PTRTAB=yes: only 0 turns pointer tables off' '$TMP/badval' &&
	grep -q '^table ok' '$TMP/badval'"
finish
