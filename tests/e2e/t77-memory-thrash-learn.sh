#!/usr/bin/env bash
# Evict mode learns a thrashing task's working set (bench/results/memory.md
# run 3: the apps mix thrashed at 0.11x of quota mode).  A task whose
# working set (16 MiB) cycles through more than its budget (8 MiB)
# thrashes; kmuxd records what it asked for in the command's profile, and
# the next evict-mode run of the same command is admitted at that working
# set, so it never thrashes and nothing is asked.  A task that does not
# thrash, and the same command outside evict mode, are admitted as
# declared.  A task that never asks but whose run restored >= 1/64 of the
# bytes it touched is learned too; one with rare restores is not.  A
# refused thrashing task holds its GPU: a newcomer that fits
# waits until the thrashing task got its room.  A task admitted at its
# learned working set is never asked to give budget back.  A run that
# asked only in a warm-up is learned at what its reuse needed.
export KMUX_FAKE_GPUS=1:1G
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
M=$PROGS/memory
R=40

KLOG=$TMP/state/kmuxd.log

"$M" cycle $R >"$TMP/plain" 2>&1

start_daemon
KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n learn1 -- "$M" cycle $R \
	>"$TMP/one" 2>"$TMP/one.err"
check "first run: identical results" cmp "$TMP/plain" "$TMP/one"
check "  ... it thrashed and the budget grew to 16 MiB" \
	grep -q "budget grew 1 times (of 1 asks) to 16777216 bytes" "$TMP/one.err"
check "  ... admitted at its declared 8 MiB (no profile yet)" \
	not grep -q "evict mode; its profile thrashed" "$KLOG"
check "  ... the daemon learned a working set of 16 MiB" \
	grep -q "daemon: job 1: thrashed (asked to grow); its profile learned a working set of 16.00 MiB" "$KLOG"
stop_daemon

# A new daemon on the same database: the profile is persistent.
start_daemon
KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n learn2 -- "$M" cycle $R \
	>"$TMP/two" 2>"$TMP/two.err"
check "second run: identical results" cmp "$TMP/plain" "$TMP/two"
check "  ... admitted at the learned working set, and the log says why" \
	grep -q "daemon: job 2: evict mode; its profile thrashed (1 runs) and needed 16.00 MiB: admitted at that, not the 8.00 MiB declared budget" "$KLOG"
check "  ... its budget was 16 MiB from the start: nothing asked" \
	grep -q "thrashing in 0 of [0-9]* windows; budget grew 0 times (of 0 asks) to 16777216 bytes" "$TMP/two.err"
check "  ... no evictions at all" [ "$(evicts "$TMP/two.err")" = 0 ]
check "  ... the daemon granted 16 MiB" \
	grep -q "daemon: job 2 admitted on GPU 0, quota 16.00 MiB" "$KLOG"

# The same command under quota mode (8 MiB: its allocations then fail,
# but what counts here is the admission): declared, whatever the profile.
"$KMUX" run --mem 8M -n quota -- "$M" cycle $R >"$TMP/q" 2>"$TMP/q.err"
check "quota mode: admitted at its declared 8 MiB (the learned set is evict mode's)" \
	eval 'grep -q "daemon: job 3 admitted on GPU 0, quota 8.00 MiB" "$KLOG" &&
		not grep -q "daemon: job 3: evict mode" "$KLOG"'
# Evict mode inherited (KMUX_MEMORY=evict, no --memory): the same as asked.
KMUX_MEMORY=evict KMUX_LOG=info "$KMUX" run --mem 8M -n inherit -- "$M" cycle $R \
	>"$TMP/inh" 2>"$TMP/inh.err"
check "KMUX_MEMORY=evict inherited: identical results, admitted at 16 MiB" \
	eval 'cmp -s "$TMP/plain" "$TMP/inh" &&
		grep -q "daemon: job 4 admitted on GPU 0, quota 16.00 MiB" "$KLOG"'

# The whole run's verdict (src/preload/thrash.h, THRASH_RUN_DIV = 64): a
# task whose restores are a steady share of what it touches but never half
# of a window (staged with few requests a stage: each stage's 4 MiB weights
# come back once per 20 requests, ~1/21 of the touched bytes) never asks,
# yet kmuxd learns its peak backed bytes from its preload's reports (3 x 4
# MiB weights, and the small input and output buffers its budget is
# charged for: 13 MiB rounded up), and its second run is admitted at that
# and evicts nothing.
for n in 5 6; do
	KMUX_LOG=info "$KMUX" run --memory=evict --mem 6M -n few$n -- "$M" staged 3 20 \
		>"$TMP/s$n" 2>"$TMP/s$n.err"
done
check "restores of 1/21 of the touched bytes: never asks, the exit line says it thrashed" \
	eval 'grep -q "budget grew 0 times (of 0 asks) to 6291456 bytes" "$TMP/s5.err" &&
		grep -Eq "restored [0-9]+ of [0-9]+ touched bytes \(1/2[01]\): thrashed" "$TMP/s5.err"'
check "  ... kmuxd learned its working set (13 MiB) from the run's verdict" \
	grep -q "daemon: job 5: thrashed (its restores over the run); its profile learned a working set of 13.00 MiB" "$KLOG"
check "  ... its second run admitted at that, no evictions" \
	eval 'grep -q "daemon: job 6: evict mode; its profile thrashed (1 runs) and needed 13.00 MiB: admitted at that, not the 6.00 MiB declared budget" "$KLOG" &&
		grep -q "daemon: job 6 admitted on GPU 0, quota 13.00 MiB" "$KLOG" &&
		[ "$(evicts "$TMP/s6.err")" = 0 ]'
# The staged mix's pattern (bench/memory/staged.cu: many requests a stage,
# one restore of the stage's weights): rare restores, not thrash.
for n in 7 8; do
	KMUX_LOG=info "$KMUX" run --memory=evict --mem 6M -n staged$n -- "$M" staged 3 400 \
		>"$TMP/s$n" 2>"$TMP/s$n.err"
done
check "non-thrashing evict task (restores 1/401), twice: no thrash, no growth either time" \
	eval 'grep -q "budget grew 0 times (of 0 asks) to 6291456 bytes" "$TMP/s7.err" &&
		grep -q "budget grew 0 times (of 0 asks) to 6291456 bytes" "$TMP/s8.err" &&
		grep -Eq "restored [0-9]+ of [0-9]+ touched bytes \(1/40[01]\): did not thrash" "$TMP/s7.err"'
check "  ... nothing learned, the second admitted at its 6 MiB, evicting" \
	eval 'not grep -Eq "job [78]: (thrashed|evict mode)" "$KLOG" &&
		grep -q "daemon: job 8 admitted on GPU 0, quota 6.00 MiB" "$KLOG" &&
		[ "$(evicts "$TMP/s8.err")" -gt 0 ]'
# A warm-up that runs every stage once (bench/memory/pipeline.py; memory
# pipeline): one window cycles through all three stages' weights and asks
# for all of them, then each stage runs alone for many windows.  kmuxd
# learns the working set the run's reuse needed (one stage's 4 MiB: each
# request reuses its stage's weights, and only the few reuses across
# stages come from farther), not the ask (bench/results/memory.md run 17:
# learning the ask admitted the next runs one at a time), so the next run
# is admitted as declared.  Once the budget holds everything, the quiet
# state samples operations (mm.c) and with them the reuses, which would
# make what a run of this length learns depend on the machine's speed:
# every operation is tracked here, so each stage's ~150 windows reuse its
# weights and the 4 or 5 reuses across stages stay under 1/64.
"$M" staged 3 1000 >"$TMP/pplain" 2>&1
for n in 9 10; do
	KMUX_DEBUG_QUIET_TRACK=1000000000 KMUX_LOG=info "$KMUX" run --memory=evict --mem 6M \
		-n pipe$n -- "$M" pipeline 3 1000 >"$TMP/p$n" 2>"$TMP/p$n.err"
done
check "a warm-up through every stage: identical results, the warm-up asked to grow" \
	eval 'cmp -s "$TMP/pplain" "$TMP/p9" && cmp -s "$TMP/pplain" "$TMP/p10" &&
		grep -Eq "budget grew 1 times \(of 1 asks\)" "$TMP/p9.err" &&
		grep -Eq "touched bytes \(1/[0-9]+\): did not thrash" "$TMP/p9.err"'
check "  ... kmuxd learned the working set its reuse needed (4 MiB), not the ask" \
	grep -Eq "daemon: job 9: thrashed \(asked to grow\); its profile learned a working set of 4.00 MiB, what its reuse needed \(it asked for 1[0-9].[0-9]+ MiB\)" "$KLOG"
check "  ... so its next run is admitted at its declared 6 MiB" \
	eval 'grep -q "daemon: job 10 admitted on GPU 0, quota 6.00 MiB" "$KLOG" &&
		not grep -q "daemon: job 10: evict mode" "$KLOG"'
stop_daemon

# The hold.  Capacity 95 MiB: an idle quota task holds 80 MiB; a thrashing
# evict task (8 MiB, working set 16) has 7 MiB of room, so it is refused
# and holds the GPU.  A 4 MiB newcomer would fit but waits; once the idle
# task ends, the thrashing one grows and only then does the newcomer run.
# (Refused twice, it suspends meanwhile, load control: t7a; its wait holds
# the GPU the same way, and it resumes with its working set.)
rm -f "$TMP/state/kmux.db"*
mv "$KLOG" "$KLOG.1"
start_daemon --gpu-mem 100M
"$KMUX" run --mem 80M -n idle -- "$M" idle "$TMP/go" >"$TMP/idle" 2>&1 &
ip=$!
wait_for 10 grep -qs "idle ready" "$TMP/idle"
KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n thr -- "$M" cycle 100000 \
	>"$TMP/thr" 2>"$TMP/thr.err" &
tp=$!
wait_for 20 grep -q "its GPUs take no new task until it has it" "$KLOG"
check "refused thrashing task holds its GPU" \
	grep -q "job 2 thrashes; no room now to grow its evict budget from 8.00 MiB to 16.00 MiB: its GPUs take no new task" "$KLOG"
"$KMUX" run --mem 4M -n late -- "$M" context >"$TMP/late" 2>&1 &
lp=$!
sleep 1
check "  ... a newcomer that fits waits meanwhile" \
	eval '"$KMUX" ps --json | grep -Eq "\"state\":[[:space:]]*\"queued\""'
touch "$TMP/go"
wait $ip
wait $lp
lrc=$?
check "  ... the newcomer ran once the idle task ended ($lrc)" [ "$lrc" = 0 ]
check "  ... after the thrashing task grew into the room" \
	eval 'g=$(grep -En "job 2 (no longer holds new tasks off its GPUs: its evict budget grew|resumes with 16 MiB \(its working set\))" "$KLOG" | head -n 1 | cut -d: -f1);
		s=$(grep -n "daemon: job 3 admitted on GPU" "$KLOG" | head -n 1 | cut -d: -f1);
		[ -n "$g" ] && [ -n "$s" ] && [ "$g" -lt "$s" ]'
kill "$tp" 2>/dev/null
wait "$tp" 2>/dev/null
stop_daemon

# A task admitted at its learned working set has no budget to give back
# (below it, it thrashed): when a newcomer is kept out by commitments,
# kmuxd does not ask it (bench/results/memory.md run 10: phase_buffers,
# admitted at its learned 321 MiB, gave 239 of them and thrashed), and the
# newcomer waits for it to end.
start_daemon --gpu-mem 24M
CP="cycle 40 50"
"$M" $CP >"$TMP/cplain" 2>&1
KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n lw1 -- "$M" $CP >"$TMP/lw1" 2>"$TMP/lw1.err"
check "a paced cycle learns its 16 MiB working set" \
	eval 'cmp -s "$TMP/cplain" "$TMP/lw1" && grep -q "thrashed (asked to grow); its profile learned a working set of 16.00 MiB" "$KLOG"'
KMUX_LOG=info "$KMUX" run --memory=evict --mem 8M -n lw2 -- "$M" $CP >"$TMP/lw2" 2>"$TMP/lw2.err" &
p2=$!
wait_job lw2
j2=$(job_of lw2)
check "  ... its next run is admitted at 16 MiB" \
	wait_for 10 grep -q "daemon: job $j2 admitted on GPU 0, quota 16.00 MiB" "$KLOG"
sleep 1.5	# older than the idle horizon: it could be asked now
"$KMUX" run --memory=evict --mem 8M -n lw3 -- "$M" staged 3 20 >"$TMP/lw3" 2>&1 &
p3=$!
wait_job lw3
j3=$(job_of lw3)
wait "$p2"; r2=$?
wait "$p3"; r3=$?
check "  ... both exit 0 ($r2 $r3)" eval '[ "$r2$r3" = 00 ] && cmp -s "$TMP/cplain" "$TMP/lw2"'
check "  ... kmuxd never asked it for budget" \
	not grep -q "job $j2 asked to give up budget" "$KLOG"
check "  ... the newcomer started after it ended" \
	eval '[ "$("$KMUX" ps --all --json | python3 -c "
import json, sys
js = {j[\"id\"]: j for j in json.load(sys.stdin)}
print(int(js[$j3][\"start_us\"] >= js[$j2][\"end_us\"]))")" = 1 ]'
stop_daemon
finish
