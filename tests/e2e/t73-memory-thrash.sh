#!/usr/bin/env bash
# Adaptive evict budgets (issue 5, follow-up of bench/results/memory.md run
# 2): a task under --memory=evict whose working set cycles through more
# than its budget thrashes (every touch restores); the preload sees it
# (src/preload/thrash.c) and asks kmuxd, without waiting, for a budget that
# holds what it has backed.  A daemon with room grants it: evictions stop,
# the results are those of the plain run.  A daemon whose GPU has no room
# (kmux daemon --gpu-mem) refuses at once: the task keeps running
# correctly, thrashing, asking at most once a second.  Without a daemon
# nothing is asked.
export KMUX_FAKE_GPUS=1:1G
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
M=$PROGS/memory
R=40

"$M" cycle $R >"$TMP/plain" 2>&1
check "the plain run reads back the last round" \
	grep -qx "obj 3 first=$((R * 4)) last=$((R * 4))" "$TMP/plain"

# Without a daemon: the budget stays, it thrashes, nobody is asked.
env LD_PRELOAD="$PRELOAD" KMUX_MEMORY=evict KMUX_MEM_BUDGET=8M KMUX_LOG=info \
	"$M" cycle $R >"$TMP/alone" 2>"$TMP/alone.err"
check "no daemon: results identical" cmp "$TMP/plain" "$TMP/alone"
check "  ... it thrashes (every round evicts)" [ "$(evicts "$TMP/alone.err")" -ge $((R * 3)) ]
check "  ... and never asks" grep -q "budget grew 0 times (of 0 asks) to 8388608 bytes" "$TMP/alone.err"

# A daemon with room: the budget grows once, to the working set.
start_daemon
KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n grow -- "$M" cycle $R \
	>"$TMP/grow" 2>"$TMP/grow.err"
check "room: the task exits 0 with identical results" cmp "$TMP/plain" "$TMP/grow"
check "  ... the preload saw thrash and the daemon grew the budget to 16 MiB" \
	grep -q "thrashing .*kmuxd grew the budget from 8388608 to 16777216 bytes" "$TMP/grow.err"
check "  ... counted at exit" grep -q "budget grew 1 times (of 1 asks) to 16777216 bytes" "$TMP/grow.err"
check "  ... evictions stopped: a few before the growth, none per round after" \
	[ "$(evicts "$TMP/grow.err")" -lt 16 ]
check "  ... the daemon logged the growth" \
	grep -q "daemon: job [0-9]* grew from 8.00 MiB to 16.00 MiB" "$TMP/state/kmuxd.log"

# Steady restores below half: object 0 hot, 1..3 each back once in three
# rounds; a quarter of every round restored.  The half rule alone never
# asks; 4 of 8 windows at 1/64 or more do (src/preload/thrash.h).
H=40
"$M" hot $H >"$TMP/hplain" 2>&1
env LD_PRELOAD="$PRELOAD" KMUX_MEMORY=evict KMUX_MEM_BUDGET=8M KMUX_LOG=info \
	"$M" hot $H >"$TMP/hot-alone" 2>"$TMP/hot-alone.err"
check "hot: no daemon, identical results" cmp "$TMP/hplain" "$TMP/hot-alone"
check "  ... a restore per round, about (never half a window)" \
	[ "$(evicts "$TMP/hot-alone.err")" -ge $((H / 2)) ]
KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n hot -- "$M" hot $H \
	>"$TMP/hot" 2>"$TMP/hot.err"
check "hot: room, identical results" cmp "$TMP/hplain" "$TMP/hot"
check "  ... steady restores asked, and the budget grew to 16 MiB" \
	grep -q "thrashing .*kmuxd grew the budget from 8388608 to 16777216 bytes" "$TMP/hot.err"
check "  ... restores stopped early (a few rounds' worth)" \
	[ "$(evicts "$TMP/hot.err")" -lt $((H / 2)) ]
stop_daemon

# No room on the GPU: refused at once, the task thrashes on, correct.  A
# fresh database: the run above taught the profile its 16 MiB working set,
# which would admit this one at the whole capped GPU (t77 tests that).
rm -f "$TMP/state/kmux.db"*
start_daemon --gpu-mem 9M
KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n tight -- "$M" cycle $R \
	>"$TMP/tight" 2>"$TMP/tight.err"
check "no room: the task exits 0 with identical results" cmp "$TMP/plain" "$TMP/tight"
check "  ... it was refused" grep -q "kmuxd did not grow the budget of 8388608 bytes to 16777216" "$TMP/tight.err"
check "  ... the daemon said why" grep -q "job [0-9]* thrashes; no room now to grow its evict budget" "$TMP/state/kmuxd.log"
check "  ... it kept evicting every round" [ "$(evicts "$TMP/tight.err")" -ge $((R * 3)) ]
check "  ... the budget stayed, asks rate limited (at most 1/s + 1)" \
	eval 'grep -Eq "budget grew 0 times \(of [1-9][0-9]* asks\) to 8388608 bytes" "$TMP/tight.err" &&
		[ "$(grep -c "did not grow the budget" "$TMP/tight.err")" -le $((SECONDS + 1)) ]'
stop_daemon

# Quota mode under the same daemon asks nothing of the kind.
start_daemon
KMUX_LOG=info "$KMUX" run --memory=lazy --mem 32M -n lazy -- "$M" cycle 4 >"$TMP/lazy" 2>"$TMP/lazy.err"
check "lazy: runs correctly" grep -qx "obj 3 first=16 last=16" "$TMP/lazy"
check "  ... no thrash detection, no asks" not grep -Eq "thrashing|budget grew" "$TMP/lazy.err"
finish
