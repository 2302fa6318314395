#!/usr/bin/env bash
# The pattern the memory manager is for (issue 5 (b), bench/memory/staged.cu
# and bench/memory-mix.sh's "staged" mix): a pipeline keeps every stage's
# weights allocated but uses them one stage after another, each request
# with a host round trip.  Under --memory=evict with a budget that holds
# one stage's weights (half the managed peak, at least the largest object:
# the mix's rule without its 8 MiB margin, which at this scale would hold
# everything), the results are those of the plain run, simcuda sees no
# access to an unmapped page, and objects move at stage boundaries only: at
# most 2S-1 evictions and S restores for S stages, whatever the number of
# requests.  Under kmuxd the task does not look like thrashing (no
# budget growth is asked).
export KMUX_FAKE_GPUS=1:1G
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"
M=$PROGS/memory
S=3
R=60

# exit-line fields of the preload's KMUX_LOG=info memory line
restores() { sed -nE 's/.*evict; .* ([0-9]+) restores \(.*/\1/p' "$1"; }
peak() { sed -nE 's/.*resident \(peak ([0-9]+)\).*/\1/p' "$1"; }

"$M" staged $S $R >"$TMP/plain" 2>&1
check "the plain run prints every stage and a check value" \
	eval '[ "$(grep -c "^stage [0-9]* sum=" "$TMP/plain")" = $S ] && grep -q "^staged check=0x" "$TMP/plain"'

# The calibration the mix does: lazy gives the managed peak (3 x 4 MiB).
env LD_PRELOAD="$PRELOAD" KMUX_MEMORY=lazy KMUX_LOG=info \
	"$M" staged $S $R >"$TMP/lazy" 2>"$TMP/lazy.err"
check "lazy: identical results" cmp "$TMP/plain" "$TMP/lazy"
check "  ... managed peak: every stage's weights, 12 MiB" [ "$(peak "$TMP/lazy.err")" = $((12 << 20)) ]

# Half the peak: one stage's weights fit, two do not.
env SIMCUDA_LOG="$TMP/sim.%p" LD_PRELOAD="$PRELOAD" KMUX_MEMORY=evict \
	KMUX_MEM_BUDGET=6M KMUX_LOG=info \
	"$M" staged $S $R >"$TMP/evict" 2>"$TMP/evict.err"
check "evict at half the peak: identical results" cmp "$TMP/plain" "$TMP/evict"
check "  ... simcuda saw no access to an evicted or unmapped page" \
	"$SIMDIR/simcuda-check" -q "$TMP"/sim.*
e=$(evicts "$TMP/evict.err")
r=$(restores "$TMP/evict.err")
check "  ... it evicted at stage boundaries only ($e evictions, $r restores; per request would be ~$((S * R)))" \
	eval '[ -n "$e" ] && [ "$e" -ge $((S - 1)) ] && [ "$e" -le $((2 * S - 1)) ] && [ -n "$r" ] && [ "$r" -ge 1 ] && [ "$r" -le $S ]'
p=$(peak "$TMP/evict.err")
check "  ... the resident peak stayed within the budget ($p bytes)" eval '[ -n "$p" ] && [ "$p" -le $((6 << 20)) ]'

# Pinned host buffers: a restored object's buffer serves the next eviction
# (pinning is most of an eviction's cost), never more pinned than the
# process's own peak; KMUX_MM_HOST_KEEP=0 pins afresh every time.
hostf() { sed -nE "s/.*pinned host buffers: ([0-9]+) allocated, ([0-9]+) reused, ([0-9]+) freed.*/\\$1/p" "$2"; }
a=$(hostf 1 "$TMP/evict.err")
u=$(hostf 2 "$TMP/evict.err")
check "  ... pinned buffers reused: $a allocated, $u reused for $e evictions" \
	eval '[ -n "$a" ] && [ -n "$u" ] && [ "$u" -ge 1 ] && [ $((a + u)) = "$e" ] && [ "$a" -lt "$e" ]'
env SIMCUDA_LOG="$TMP/sim0.%p" LD_PRELOAD="$PRELOAD" KMUX_MEMORY=evict \
	KMUX_MEM_BUDGET=6M KMUX_MM_HOST_KEEP=0 KMUX_LOG=info \
	"$M" staged $S $R >"$TMP/evict0" 2>"$TMP/evict0.err"
check "KMUX_MM_HOST_KEEP=0: identical results" cmp "$TMP/plain" "$TMP/evict0"
check "  ... simcuda saw no access to an evicted or unmapped page" \
	"$SIMDIR/simcuda-check" -q "$TMP"/sim0.*
e0=$(evicts "$TMP/evict0.err")
check "  ... every eviction pins a new buffer, none reused" \
	eval '[ "$(hostf 1 "$TMP/evict0.err")" = "$e0" ] && [ "$(hostf 2 "$TMP/evict0.err")" = 0 ]'
env LD_PRELOAD="$PRELOAD" KMUX_MEMORY=evict KMUX_MEM_BUDGET=6M \
	KMUX_MM_HOST_KEEP=12Q KMUX_LOG=info \
	"$M" staged $S $R >"$TMP/evictq" 2>"$TMP/evictq.err"
check "KMUX_MM_HOST_KEEP=12Q: a warning naming it, identical results" \
	eval 'grep -q "KMUX_MM_HOST_KEEP=12Q is not a byte count" "$TMP/evictq.err" && cmp -s "$TMP/plain" "$TMP/evictq"'

# The same under kmuxd, as the mix runs it: no thrash, nothing asked.
start_daemon
KMUX_LOG=info "$KMUX" run --memory=evict --mem 6M -n staged -- "$M" staged $S $R \
	>"$TMP/daemon" 2>"$TMP/daemon.err"
check "kmux run --memory=evict --mem 6M: identical results" cmp "$TMP/plain" "$TMP/daemon"
check "  ... never thrashing, no budget growth asked" \
	grep -Eq "thrashing in 0 of [0-9]+ windows; budget grew 0 times \(of 0 asks\)" "$TMP/daemon.err"
e=$(evicts "$TMP/daemon.err")
check "  ... again stage boundaries only ($e evictions)" eval '[ -n "$e" ] && [ "$e" -ge $((S - 1)) ] && [ "$e" -le $((2 * S - 1)) ]'
stop_daemon

# bench/memory-mix.sh's dry mode (simcuda stand-ins, `memory staged 3 200`
# for the staged mix): both mixes calibrate and run both modes, and with
# KMUX_MIX_MPS=1 both again under kmux daemon --mps (a stand-in control).  The
# script runs build/'s binaries: only in the plain build's pass.
if [ "$BUILD" = "$ROOT/build" ]; then
	OUT=$TMP/mix KMUX_MIX_DRY=1 KMUX_MIX_MPS=1 KMUX_MIX_BUDGET_S=120 bash "$ROOT/bench/memory-mix.sh" \
		>"$TMP/mix.out" 2>&1
	mrc=$?
	check "memory-mix.sh dry: exit 0 ($mrc)" eval '[ "$mrc" = 0 ] || { tail -n 20 "$TMP/mix.out"; false; }'
	check "  ... a table per mix, each with quota and evict run on 4 tasks" \
		eval '[ "$(grep -c "^## mix: " "$TMP/mix/mix.md")" = 2 ] &&
			[ "$(grep -Ec "^\| (quota|evict) \| [0-9]+ \| 4 \|" "$TMP/mix/mix.md")" = 4 ]'
	check "  ... staged calibrated by the common rule (peak 12 MiB: quota 20M, evict 14M)" \
		grep -q "staged: calibrate staged: managed peak 12 MiB, largest 4 MiB -> quota 20M, evict 14M" "$TMP/mix/mix.log"
	check "  ... staged: the cap (40 MiB, 38 admitted) runs 1 task at once under quota" \
		grep -q "^| quota | 40 | 4 | 1 |" "$TMP/mix/mix.md"
	check "  ... and 2 under evict" grep -q "^| evict | 40 | 4 | 2 |" "$TMP/mix/mix.md"
	check "  ... every staged run gave the same result" \
		grep -q "^Checksums: every run of each app gave the same one" "$TMP/mix/mix.md"
	check "  ... rows carry the mix" grep -q "^staged,evict,t3-staged,rc,0$" "$TMP/mix/mix.csv"
	check "  ... KMUX_MIX_MPS=1: evict-mps and quota-mps on 4 tasks in each mix, none failed" \
		eval '[ "$(grep -Ec "^\| (quota|evict)-mps \| [0-9]+ \| 4 \| [0-9]+ \| [0-9.]+ \| 0 \|" "$TMP/mix/mix.md")" = 4 ]'
	check "  ... the same caps: 1 staged task at once under quota-mps, 2 under evict-mps" \
		eval 'grep -q "^| quota-mps | 40 | 4 | 1 |" "$TMP/mix/mix.md" && grep -q "^| evict-mps | 40 | 4 | 2 |" "$TMP/mix/mix.md"'
	check "  ... each under a kmuxd --mps that started its control daemon and quit it" \
		eval 'grep -q "^\$ \[staged evict-mps\] kmux daemon .* --mps --mps-control " "$TMP/mix/mix.log" &&
			grep -q "mps: started .* -d; jobs run as clients" "$TMP/mix/kmuxd-staged-evict-mps.log" &&
			grep -q "\[staged evict-mps mps\] stub: started" "$TMP/mix/mix.log" &&
			grep -q "\[staged evict-mps mps\] stub: quit" "$TMP/mix/mix.log"'
	check "  ... and a ratio line for each" \
		eval 'grep -q "^Throughput evict-mps vs quota" "$TMP/mix/mix.md" && grep -q "^Throughput quota-mps vs quota" "$TMP/mix/mix.md"'
	check "  ... no learning pass asked, and the report says so" \
		eval 'grep -q "^No learning pass" "$TMP/mix/mix.md" &&
			not grep -q "evict-learn" "$TMP/mix/mix.csv"'

	# The torch mix (bench/memory/pipeline.py on a GPU) has the staged
	# stand-in here: it must be accepted, calibrated and run like staged.
	OUT=$TMP/mixt KMUX_MIX_DRY=1 KMUX_MIX_SETS=torch KMUX_MIX_BUDGET_S=120 \
		bash "$ROOT/bench/memory-mix.sh" >"$TMP/mixt.out" 2>&1
	mrc=$?
	check "memory-mix.sh dry, the torch mix: exit 0 ($mrc)" eval '[ "$mrc" = 0 ] || { tail -n 20 "$TMP/mixt.out"; false; }'
	check "  ... its own table: 1 task at once under quota, 2 under evict, and the ratio" \
		eval 'grep -q "^## mix: torch (copies of bench/memory/pipeline.py" "$TMP/mixt/mix.md" &&
			grep -q "^| quota | 40 | 4 | 1 |" "$TMP/mixt/mix.md" &&
			grep -q "^| evict | 40 | 4 | 2 |" "$TMP/mixt/mix.md" &&
			grep -q "^Throughput evict vs quota" "$TMP/mixt/mix.md" &&
			grep -q "^torch,evict,t3-pipeline,rc,0$" "$TMP/mixt/mix.csv"'
	OUT=$TMP/mixu KMUX_MIX_DRY=1 KMUX_MIX_SETS="torch nosuch" bash "$ROOT/bench/memory-mix.sh" \
		>"$TMP/mixu.out" 2>&1
	mrc=$?
	check "memory-mix.sh: an unknown mix is refused (exit 2, $mrc) and named" \
		eval '[ "$mrc" = 2 ] && grep -q "unknown mix .nosuch. (apps, staged, torch)" "$TMP/mixu.out"'

	# KMUX_MIX_LEARN=1 (bench/results/memory.md run 3): an apps mix whose
	# `memory cycle` tasks thrash under evict (no margin: 8 MiB budgets, a
	# 16 MiB working set).  The learning pass thrashes and kmuxd learns;
	# the measured evict run, on the same database, admits each thrashing
	# task at its working set: fewer at once, no evictions.
	OUT=$TMP/mixl KMUX_MIX_DRY=1 KMUX_MIX_SETS=apps KMUX_MIX_DRY_APPS="keep cycle" \
		KMUX_MIX_MARGIN_MIB=0 KMUX_MIX_LEARN=1 KMUX_MIX_BUDGET_S=120 \
		bash "$ROOT/bench/memory-mix.sh" >"$TMP/mixl.out" 2>&1
	mrc=$?
	check "memory-mix.sh dry, KMUX_MIX_LEARN=1: exit 0 ($mrc)" eval '[ "$mrc" = 0 ] || { tail -n 20 "$TMP/mixl.out"; false; }'
	check "  ... the report says a learning pass ran, and has its row before evict's" \
		eval 'grep -q "^Learning pass (KMUX_MIX_LEARN=1)" "$TMP/mixl/mix.md" &&
			grep -A1 "^| evict-learn | 48 | 4 |" "$TMP/mixl/mix.md" | grep -q "^| evict | 48 | 4 |"'
	check "  ... no pass for quota (nothing to learn)" not grep -q "quota-learn" "$TMP/mixl/mix.csv"
	check "  ... the learning pass thrashed: its daemon learned cycle's 16 MiB working set" \
		eval 'grep -Eq "^apps,evict-learn,t[0-9]-cycle,evictions,[1-9][0-9]*$" "$TMP/mixl/mix.csv" &&
			grep -Eq "thrashed \(.*\); its profile learned a working set of 16.00 MiB" "$TMP/mixl/kmuxd-apps-evict-learn.log"'
	check "  ... the measured run admitted each cycle task at it, and none thrashed" \
		eval '[ "$(grep -c "evict mode; its profile thrashed ([0-9]* runs) and needed 16.00 MiB: admitted at that, not the 8.00 MiB declared budget" "$TMP/mixl/kmuxd-apps-evict.log")" -ge 2 ] &&
			grep -q "^apps,evict,all,learned,1$" "$TMP/mixl/mix.csv" &&
			grep -q "^| evict | 48 | 4 | [0-9]* | [0-9.]* | 0 | 0 | 0 | 0 |" "$TMP/mixl/mix.md"'
fi
finish
