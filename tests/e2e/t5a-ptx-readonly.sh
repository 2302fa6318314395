#!/usr/bin/env bash
# The PTX read-only proof, on by default: four kernels that only read one
# shared buffer (each writing its own) run side by side under KMUX_STREAMS
# with KMUX_PTX_READONLY unset, because the PTX they were loaded from
# proves the shared parameters read-only; with KMUX_PTX_READONLY=0, or when
# the PTX writes through, leaks or does not explain the shared pointer,
# they run one after another.  simcuda's overlap check
# finds no conflict and the outputs equal the unscheduled run.  Verdicts
# belong to the image a function was loaded from: the same kernel loaded
# from an image without PTX or from a file stays read-write, an unload
# forgets them, a reload proves them again.
. "$(dirname "$0")/lib.sh"

P=$PROGS/ptx-readonly
pairs() { sed -n 's/^overlapping pairs //p' "$1"; }
sum() { sed -n 's/^sum //p' "$1"; }
same_sum() { [ -n "$(sum "$1")" ] && [ "$(sum "$1")" = "$(sum "$2")" ]; }
# Every run below without KMUX_PTX_READONLY gets kmux's default.
unset KMUX_PTX_READONLY

"$P" ro >"$TMP/plain" 2>&1
check "unscheduled: the readers never overlap" [ "$(pairs "$TMP/plain")" = 0 ]
KMUX_PTX_READONLY=0 KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD "$P" ro \
	>"$TMP/off" 2>&1
check "KMUX_PTX_READONLY=0: serialized (the shared buffer is read-write)" \
	[ "$(pairs "$TMP/off")" = 0 ]
check "KMUX_PTX_READONLY=0: no conflict" grep -q '^conflicts none' "$TMP/off"
check "KMUX_PTX_READONLY=0: no image scanned (no ptx-readonly line)" \
	not grep -q 'ptx-readonly:' "$TMP/off"
KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD "$P" ro >"$TMP/on" 2>&1
check "default (unset): the readers overlap ($(pairs "$TMP/on") of 6 pairs)" \
	[ "$(pairs "$TMP/on")" -ge 1 ]
check "no conflicting overlap" grep -q '^conflicts none' "$TMP/on"
check "outputs equal the unscheduled run" same_sum "$TMP/on" "$TMP/plain"
# a, b and the two scalars: only dst is written.
check "the exit line counts the proof (4 of mix's 5 parameters)" \
	grep -q 'ptx-readonly: pid [0-9]*: 1 images, 1 PTX texts.*1 kernels analysed; 1 launched kernels matched, 4 parameters proven read-only' "$TMP/on"

phase() { sed -n "s/^pairs $2 //p" "$1"; }
for mode in same-name reload library; do
	"$P" "$mode" >"$TMP/p-$mode" 2>&1
	KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD "$P" "$mode" \
		>"$TMP/$mode" 2>&1
	check "$mode: no conflict" grep -q '^conflicts none' "$TMP/$mode"
	check "$mode: same outputs as unscheduled" same_sum "$TMP/$mode" "$TMP/p-$mode"
done
f=$TMP/same-name
check "same name, PTX image: the readers overlap" [ "$(phase "$f" ptx)" -ge 1 ]
for p in noptx file noptx-after file-after; do
	check "same name, $p: no verdict by name, serialized" [ "$(phase "$f" "$p")" = 0 ]
done
check "same name: two launched kernels without a readable image" \
	grep -q 'launched kernels matched, 4 parameters proven read-only, [0-9]* with exact extents, [0-9]* kernels with ranges by geometry, 0 layout mismatches, 2 launched kernels without a readable image' "$f"
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
	KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$P" "$mode" >"$TMP/$mode" 2>&1
	check "$mode: PTX that does not prove the shared buffer read-only keeps it serialized" \
		[ "$(pairs "$TMP/$mode")" = 0 ]
	check "$mode: no conflict" grep -q '^conflicts none' "$TMP/$mode"
	check "$mode: same outputs as unscheduled" same_sum "$TMP/$mode" "$TMP/p-$mode"
done

# Only "0" is off: anything else keeps the default (with a warning).
KMUX_PTX_READONLY=off KMUX_STREAMS=4 KMUX_LOG=warn LD_PRELOAD=$PRELOAD "$P" ro \
	>"$TMP/typo" 2>&1
check "KMUX_PTX_READONLY=off: still on, the readers overlap" [ "$(pairs "$TMP/typo")" -ge 1 ]
check "KMUX_PTX_READONLY=off: warned" grep -q 'KMUX_PTX_READONLY=off: only 0 turns' "$TMP/typo"
# Without the scheduler nothing reads the verdicts: no image is scanned.
KMUX_LOG=info LD_PRELOAD=$PRELOAD "$P" ro >"$TMP/nosched" 2>&1
check "no KMUX_STREAMS: no image scanned" not grep -q 'ptx-readonly:' "$TMP/nosched"

# kmux run and kmux verify leave the variable as the caller has it.
"$KMUX" run --streams 4 -- "$P" ro >"$TMP/run" 2>&1
check "kmux run --streams, default: overlap" [ "$(pairs "$TMP/run")" -ge 1 ]
KMUX_PTX_READONLY=0 "$KMUX" run --streams 4 -- "$P" ro >"$TMP/run0" 2>&1
check "KMUX_PTX_READONLY=0 kmux run --streams: serialized" [ "$(pairs "$TMP/run0")" = 0 ]
check "kmux run: outputs equal the unscheduled run" same_sum "$TMP/run" "$TMP/plain"
"$KMUX" verify --streams 4 -- "$P" ro >"$TMP/verify" 2>&1
vrc=$?
check "kmux verify --streams 4, default: identical (exit $vrc)" [ "$vrc" = 0 ]
finish
