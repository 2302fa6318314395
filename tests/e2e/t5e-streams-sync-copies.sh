#!/usr/bin/env bash
# Synchronous copies that CUDA does not make synchronous (src/preload/copy.c,
# copy_sync_waits()): a device-to-device cudaMemcpy and a memset of device
# memory return without waiting for the work they follow, as on the driver,
# and still run after it; not once the program has a non-blocking stream of
# its own.  simcuda makes every synchronous copy wait (the
# control: the unscheduled run holds the host for the 30 ms kernel).
. "$(dirname "$0")/lib.sh"

us() { sed -n "s/.*$1 \([0-9]*\).*/\1/p" "$2"; }

"$PROGS/streams-cases" d2d >"$TMP/plain" 2>&1
check "unscheduled (simcuda): the copy waits for the 30 ms kernel ($(us d2d_us "$TMP/plain") us)" \
	[ "$(us d2d_us "$TMP/plain")" -ge 25000 ]
KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" d2d >"$TMP/s4" 2>&1
check "scheduled: the device-to-device copy returns at once ($(us d2d_us "$TMP/s4") us)" \
	[ "$(us d2d_us "$TMP/s4")" -lt 15000 ]
check "  ... so does the memset ($(us memset_us "$TMP/s4") us)" [ "$(us memset_us "$TMP/s4")" -lt 15000 ]
check "  ... and the copy still starts after the kernel that wrote its source" \
	grep -qx 'order ok' "$TMP/s4"
KMUX_STREAMS=4 KMUX_DEBUG_SYNC_WAIT=1 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" d2d \
	>"$TMP/w" 2>&1
check "KMUX_DEBUG_SYNC_WAIT=1 (the bench's baseline): the copy waits again ($(us d2d_us "$TMP/w") us)" \
	[ "$(us d2d_us "$TMP/w")" -ge 25000 ]
KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" d2d-own >"$TMP/own" 2>&1
check "with a non-blocking stream of the program's own: the copy is waited for ($(us d2d_us "$TMP/own") us)" \
	[ "$(us d2d_us "$TMP/own")" -ge 25000 ]
KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" d2d-blocking >"$TMP/blk" 2>&1
check "with a blocking stream of its own: not waited for ($(us d2d_us "$TMP/blk") us), and its kernel still follows the memset" \
	bash -c "[ \$(sed -n 's/.*d2d_us \([0-9]*\).*/\1/p' '$TMP/blk') -lt 15000 ] && grep -qx 'blocking ok' '$TMP/blk'"
finish
