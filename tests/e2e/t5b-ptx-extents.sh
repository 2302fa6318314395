#!/usr/bin/env bash
# Exact extents, on by default under KMUX_STREAMS: kernels that each
# update one 4-byte slot of one allocation (out = &arr[k]) through a PTX
# store at a constant offset run side by side; with KMUX_PTX_EXTENTS=0 (or
# KMUX_PTX_READONLY=0, the same scan) they run one after another.  Two
# launches on the same slot stay ordered.  A kernel that indexes the
# pointer with the thread id gets a range by its launch geometry (ptx-range):
# one thread reaches 4 bytes (side by side again), four threads 16 bytes
# (neighbouring slots ordered); KMUX_PTX_RANGES=0 gives it the whole
# allocation.  simcuda's overlap check (byte
# ranges) finds no conflicting pair and the outputs equal the unscheduled
# run.
. "$(dirname "$0")/lib.sh"

P=$PROGS/ptx-extents
pairs() { sed -n 's/^overlapping pairs //p' "$1"; }
sum() { sed -n 's/^sum //p' "$1"; }
same_sum() { [ -n "$(sum "$1")" ] && [ "$(sum "$1")" = "$(sum "$2")" ]; }
unset KMUX_PTX_READONLY KMUX_PTX_EXTENTS

for mode in slots same indexed wide; do
	"$P" "$mode" >"$TMP/p-$mode" 2>&1
	check "$mode unscheduled: nothing overlaps" [ "$(pairs "$TMP/p-$mode")" = 0 ]
	KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD "$P" "$mode" \
		>"$TMP/$mode" 2>&1
	check "$mode: no conflicting overlap" grep -q '^conflicts none' "$TMP/$mode"
	check "$mode: outputs equal the unscheduled run" same_sum "$TMP/$mode" "$TMP/p-$mode"
	for off in KMUX_PTX_EXTENTS KMUX_PTX_READONLY; do
		env "$off=0" KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD \
			"$P" "$mode" >"$TMP/$mode-$off" 2>&1
		check "$mode, $off=0: serialized" [ "$(pairs "$TMP/$mode-$off")" = 0 ]
		check "$mode, $off=0: no conflict" grep -q '^conflicts none' "$TMP/$mode-$off"
		check "$mode, $off=0: same outputs" same_sum "$TMP/$mode-$off" "$TMP/p-$mode"
	done
done
# 8 launches on 4 distinct slots: 28 pairs, 24 of them on different slots.
check "slots: the launches overlap ($(pairs "$TMP/slots") pairs)" \
	[ "$(pairs "$TMP/slots")" -ge 1 ]
check "slots: the exit line counts the extent" \
	grep -q 'proven read-only, 1 with exact extents' "$TMP/slots"
check "KMUX_PTX_EXTENTS=0: no extent given" \
	grep -q 'proven read-only, 0 with exact extents' "$TMP/slots-KMUX_PTX_EXTENTS"
# slots 0 and 1 alternate: only different slots may overlap (the check
# above proves that no two launches on one slot did).
check "same: launches on different slots overlap ($(pairs "$TMP/same") pairs)" \
	[ "$(pairs "$TMP/same")" -ge 1 ]
check "indexed: one thread, a 4-byte range: the launches overlap ($(pairs "$TMP/indexed") pairs)" \
	[ "$(pairs "$TMP/indexed")" -ge 1 ]
check "indexed: the exit line counts no exact extent, one ranged kernel" \
	grep -q 'proven read-only, 0 with exact extents, 1 kernels with ranges' "$TMP/indexed"
# wide: launch k reaches [8k, 8k + 16): k and k + 1 overlap in bytes, so
# they stay ordered (the overlap check above), k and k + 2 may not.
KMUX_PTX_RANGES=0 KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD "$P" indexed \
	>"$TMP/indexed-norange" 2>&1
check "indexed, KMUX_PTX_RANGES=0: the whole allocation, serialized" \
	[ "$(pairs "$TMP/indexed-norange")" = 0 ]
check "indexed, KMUX_PTX_RANGES=0: no ranged kernel" \
	grep -q '0 kernels with ranges' "$TMP/indexed-norange"
check "indexed, KMUX_PTX_RANGES=0: same outputs" same_sum "$TMP/indexed-norange" "$TMP/p-indexed"

# Only "0" is off: anything else keeps the default (with a warning).
KMUX_PTX_EXTENTS=off KMUX_STREAMS=4 KMUX_LOG=warn LD_PRELOAD=$PRELOAD "$P" slots \
	>"$TMP/typo" 2>&1
check "KMUX_PTX_EXTENTS=off: still on" [ "$(pairs "$TMP/typo")" -ge 1 ]
check "KMUX_PTX_EXTENTS=off: warned" grep -q 'KMUX_PTX_EXTENTS=off: only 0 turns' "$TMP/typo"
# kmux verify runs it scheduled and unscheduled: identical.
"$KMUX" verify --streams 4 -- "$P" slots >"$TMP/verify" 2>&1
vrc=$?
check "kmux verify --streams 4 slots: identical (exit $vrc)" [ "$vrc" = 0 ]
finish
