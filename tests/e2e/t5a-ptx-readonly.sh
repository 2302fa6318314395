#!/usr/bin/env bash
# KMUX_PTX_READONLY=1: four kernels that only read one shared buffer (each
# writing its own) run side by side under KMUX_STREAMS, because the PTX
# they were loaded from proves the shared parameters read-only; without the
# option, or when the PTX writes through, leaks or does not explain the
# shared pointer, they run one after another.  simcuda's overlap check
# finds no conflict and the outputs equal the unscheduled run.  Verdicts
# belong to the image a function was loaded from: the same kernel loaded
# from an image without PTX or from a file stays read-write, an unload
# forgets them, a reload proves them again.
. "$(dirname "$0")/lib.sh"

P=$PROGS/ptx-readonly
pairs() { sed -n 's/^overlapping pairs //p' "$1"; }
sum() { sed -n 's/^sum //p' "$1"; }
same_sum() { [ -n "$(sum "$1")" ] && [ "$(sum "$1")" = "$(sum "$2")" ]; }

"$P" ro >"$TMP/plain" 2>&1
check "unscheduled: the readers never overlap" [ "$(pairs "$TMP/plain")" = 0 ]
KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$P" ro >"$TMP/off" 2>&1
check "--streams without the option: still serialized (the shared buffer is read-write)" \
	[ "$(pairs "$TMP/off")" = 0 ]
KMUX_PTX_READONLY=1 KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD "$P" ro \
	>"$TMP/on" 2>&1
check "KMUX_PTX_READONLY=1: the readers overlap ($(pairs "$TMP/on") of 6 pairs)" \
	[ "$(pairs "$TMP/on")" -ge 1 ]
check "no conflicting overlap" grep -q '^conflicts none' "$TMP/on"
check "outputs equal the unscheduled run" same_sum "$TMP/on" "$TMP/plain"
# a, b and the two scalars: only dst is written.
check "the exit line counts the proof (4 of mix's 5 parameters)" \
	grep -q 'ptx-readonly: pid [0-9]*: 1 images, 1 PTX texts.*1 kernels analysed; 1 launched kernels matched, 4 parameters proven read-only' "$TMP/on"

phase() { sed -n "s/^pairs $2 //p" "$1"; }
for mode in same-name reload library; do
	"$P" "$mode" >"$TMP/p-$mode" 2>&1
	KMUX_PTX_READONLY=1 KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD \
		"$P" "$mode" >"$TMP/$mode" 2>&1
	check "$mode: no conflict" grep -q '^conflicts none' "$TMP/$mode"
	check "$mode: same outputs as unscheduled" same_sum "$TMP/$mode" "$TMP/p-$mode"
done
f=$TMP/same-name
check "same name, PTX image: the readers overlap" [ "$(phase "$f" ptx)" -ge 1 ]
for p in noptx file noptx-after file-after; do
	check "same name, $p: no verdict by name, serialized" [ "$(phase "$f" "$p")" = 0 ]
done
check "same name: two launched kernels without a readable image" \
	grep -q 'launched kernels matched, 4 parameters proven read-only, 0 layout mismatches, 2 launched kernels without a readable image' "$f"
f=$TMP/reload
check "reload: first load overlaps" [ "$(phase "$f" first)" -ge 1 ]
check "reload: after unload, an image without PTX serializes (handle reused: $(sed -n "s/^handle reused //p" "$f"))" \
	[ "$(phase "$f" noptx)" = 0 ]
check "reload: the PTX image loaded again overlaps again" [ "$(phase "$f" again)" -ge 1 ]
check "reload: three images unloaded" grep -q ' 3 images unloaded' "$f"
f=$TMP/library
check "library: the CUkernel of the PTX library overlaps" [ "$(phase "$f" kernel)" -ge 1 ]
check "library: its CUfunction (cuKernelGetFunction) overlaps" [ "$(phase "$f" function)" -ge 1 ]
check "library: the same kernel from cuLibraryLoadFromFile serializes" [ "$(phase "$f" file)" = 0 ]

for mode in write escape unknown; do
	"$P" "$mode" >"$TMP/p-$mode" 2>&1
	KMUX_PTX_READONLY=1 KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$P" "$mode" \
		>"$TMP/$mode" 2>&1
	check "$mode: PTX that does not prove the shared buffer read-only keeps it serialized" \
		[ "$(pairs "$TMP/$mode")" = 0 ]
	check "$mode: no conflict" grep -q '^conflicts none' "$TMP/$mode"
	check "$mode: same outputs as unscheduled" same_sum "$TMP/$mode" "$TMP/p-$mode"
done

"$KMUX" run --streams 4 -- env KMUX_PTX_READONLY=1 "$P" ro >"$TMP/run" 2>&1
check "under kmux run --streams with the env: overlap" [ "$(pairs "$TMP/run")" -ge 1 ]
finish
