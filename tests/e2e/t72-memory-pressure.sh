#!/usr/bin/env bash
# Memory pressure (issue 5, item 2): when a GPU's memory in use passes what
# kmuxd may commit, it asks the tasks there whose memory manager evicts
# (kmux run --memory=evict) to give up resident bytes (MEM_PRESSURE); the
# task evicts its least recently used objects and its next usage report
# shows them evicted (ps --json, top).  A task without the memory manager
# is not asked.  Both tasks' results stay correct; the evicted objects come
# back when touched.  The fake GPU's memory in use is the tasks' resident
# bytes plus KMUX_FAKE_MEM_USED's (memory of processes kmux does not manage).
export KMUX_FAKE_GPUS=1:1G
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
M=$PROGS/memory
MiB=$((1 << 20))

# jq_true ID EXPR: EXPR (Python, j = the job's ps --json object) holds.
jq_true() { [ "$(jq_job "$1" "$2")" = True ]; }

export KMUX_FAKE_MEM_USED=$TMP/foreign
start_daemon

KMUX_LOG=info "$KMUX" run --memory=evict --mem 256M -n ev -- "$M" idle "$TMP/go" \
	>"$TMP/ev" 2>"$TMP/ev.err" &
pe=$!
"$KMUX" run --mem 256M -n plain -- "$M" idle "$TMP/go" >"$TMP/plain" 2>&1 &
pp=$!
check "two tasks start (evict and quota)" \
	eval 'wait_line "$TMP/ev" "idle ready" && wait_line "$TMP/plain" "idle ready"'
je=$(job_of ev)
jp=$(job_of plain)
# Let a report (every 250 ms) carry the memory manager's numbers.
for i in $(seq 50); do
	[ "$(jq_job "$je" 'j["mem_reserved"] >> 20')" = 64 ] && break
	sleep 0.1
done
check "ps --json: the evict task manages 64 MiB, all resident" \
	[ "$(jq_job "$je" 'j["mem_reserved"] >> 20, j["mem_used"] >> 20, j["mem_evicted"]')" = "(64, 64, 0)" ]
check "  ... the quota task has no memory manager" \
	[ "$(jq_job "$jp" 'j["mem_reserved"], j["mem_evicted"], j["evicts"]')" = "(0, 0, 0)" ]
check "no pressure yet: nothing asked" not grep -q "short of memory" "$TMP/state/kmuxd.log"

# 900 MiB used by others: 1028 MiB in use on a GPU of 972.8 MiB capacity.
echo "0 $((900 * MiB))" >"$TMP/foreign"
for i in $(seq 50); do
	[ "$(jq_job "$je" 'j["mem_evicted"] >> 20')" != 0 ] && break
	sleep 0.1
done
check "pressure: the daemon asks the evict task" \
	grep -q "GPU 0 is .* short of memory: job $je asked to give up" "$TMP/state/kmuxd.log"
check "  ... never the quota task" not grep -q "job $jp asked" "$TMP/state/kmuxd.log"
check "  ... its resident bytes drop, evicted bytes rise (ps --json)" \
	jq_true "$je" 'j["mem_used"] <= 8 << 20 and j["mem_evicted"] >= 56 << 20 and j["evicts"] >= 4'
check "  ... the preload says what it gave" grep -q "kmuxd: GPU 0 is short of memory: asked for .*, evicted 64.00 MiB" "$TMP/ev.err"
check "  ... top shows the evicted bytes" eval '"$KMUX" top --once | grep -qE "^ +$je .*64\.00 MiB"'
check "  ... the quota task keeps its memory" [ "$(jq_job "$jp" 'j["mem_used"] >> 20')" = 64 ]
check "  ... its GPU is within capacity again (nobody asked twice)" \
	[ "$(grep -c "asked to give up" "$TMP/state/kmuxd.log")" = 1 ]

rm -f "$TMP/foreign"
touch "$TMP/go"
wait "$pe"
check "the evict task exits 0" [ $? -eq 0 ]
wait "$pp"
check "the quota task exits 0" [ $? -eq 0 ]
for t in ev plain; do
	check "$t: every object reads back what was written" eval '[ "$(grep -c "^obj" "$TMP/$t")" = 4 ] &&
		grep -qx "obj 0 first=1 last=1" "$TMP/$t" && grep -qx "obj 1 first=2 last=2" "$TMP/$t" &&
		grep -qx "obj 2 first=3 last=3" "$TMP/$t" && grep -qx "obj 3 first=4 last=4" "$TMP/$t"'
done
check "the evicted objects were restored when touched" \
	grep -Eq "memory: pid [0-9]+: evict; .* [1-9][0-9]* restores .* 1 daemon requests freed 67108864 bytes" "$TMP/ev.err"
finish
