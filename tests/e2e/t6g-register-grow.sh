#!/usr/bin/env bash
# A need kmuxd only guessed is corrected as the task allocates (issue 4,
# item 4): an allocation past the quota asks the daemon for more, which it
# grants while the GPU has uncommitted room.  A declared need (KMUX_MEM) is
# the limit.  With no room now, the allocation waits until the tasks beside
# it end (no new task takes the room meanwhile), rather than failing a task
# for memory that will come back.  It fails, for that task alone, only when
# it could never fit or when every task on the GPU waits (the last to ask).
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=1:16G
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
committed_mib() { top_json 't["gpus"][0]["mem_committed"] >> 20'; }
# wait_log REGEX: until the daemon's log has a line matching it (10 s).
wait_log() {
	local i
	for i in $(seq 100); do
		grep -q "$1" "$KMUX_STATE_DIR/kmuxd.log" && return 0
		sleep 0.1
	done
	return 1
}

# The default guess is a tenth of the GPU: 1639 MiB of 16 GiB.
start_daemon
KMUX_NAME=tiny LD_PRELOAD=$PRELOAD "$R" 64 >"$TMP/t" 2>&1
check "default guess: a tenth of the GPU" has "$TMP/t" "total=1639"
stop_daemon

# A quarter (4 GiB) from here on, for round numbers.
start_daemon --guess 0.25
check "the daemon logs its guess" grep -q "guess 0.25, grow-wait 600 s" \
	"$KMUX_STATE_DIR/kmuxd.log"

# The task wants 6 GiB.
# A hold argument keeps its command apart from the tasks below (profiles).
REG_HOLD_FILE=$TMP/go-g LD_PRELOAD=$PRELOAD "$R" 6144 1 >"$TMP/g" 2>&1 &
pg=$!
check "guessed: it starts" wait_line "$TMP/g" ready || cat "$TMP/g"
jg=$(job_of reg)
check "  ... admitted with the 4 GiB guess" has "$TMP/g" "total=4096"
check "  ... its 6 GiB allocation past the guess succeeds" has "$TMP/g" "alloc err=0"
check "  ... its quota grew to 6 GiB (ps --json)" \
	[ "$(jq_job "$jg" 'j["mem_quota"] >> 20')" = 6144 ]
check "  ... and so did the GPU's commitment" [ "$(committed_mib)" = 6144 ]
check "  ... the daemon says so" \
	grep -q "job $jg grew from 4.00 GiB to 6.00 GiB" "$KMUX_STATE_DIR/kmuxd.log"
touch "$TMP/go-g"
wait "$pg"
check "  ... the program exits 0" [ $? -eq 0 ]
check "  ... and its commitment goes with it" wait_state "$jg" exited 20
check "  ... nothing left committed" [ "$(committed_mib)" = 0 ]

# Declared: KMUX_MEM=1G is the limit, whatever room there is.
KMUX_MEM=1G KMUX_NAME=decl LD_PRELOAD=$PRELOAD "$R" 2048 >"$TMP/d" 2>&1
check "declared 1 GiB: a 2 GiB allocation fails with out of memory" \
	has "$TMP/d" "alloc err=2"

# More than the GPU holds (15.2 GiB after headroom): refused at once.
KMUX_LOG=info KMUX_NAME=huge LD_PRELOAD=$PRELOAD "$R" 16384 >"$TMP/h" 2>&1
check "a growth past the GPU fails at once with out of memory" \
	has "$TMP/h" "alloc err=2"
check "  ... the refusal is in the task's own output" \
	grep -q "no more memory: job .* no room to grow.*more than the GPU holds" "$TMP/h"

# No room now: a declared 10 GiB task holds the GPU (until $TMP/go-big); a
# guessed one (4 GiB fits beside it) wants 8 GiB: it waits for the big one
# to end.
REG_HOLD_FILE=$TMP/go-big KMUX_MEM=10G KMUX_NAME=big LD_PRELOAD=$PRELOAD "$R" 9216 >"$TMP/b" 2>&1 &
pb=$!
check "a declared 10 GiB task runs" wait_line "$TMP/b" ready
KMUX_NAME=grower LD_PRELOAD=$PRELOAD "$R" 8192 >"$TMP/n" 2>&1 &
pn=$!
check "no room: the guessed task waits to grow" \
	wait_log "job [0-9]* waits to grow from 4.00 GiB to 8.00 GiB"
check "  ... its allocation has not returned" \
	bash -c "! grep -q 'alloc err' '$TMP/n'"
# A small task that would fit waits too: the room is the grower's.
KMUX_MEM=1G KMUX_NAME=late LD_PRELOAD=$PRELOAD "$R" 64 >"$TMP/l" 2>&1 &
pl=$!
wait_job late
check "  ... a new 1 GiB task is not admitted meanwhile" \
	[ "$(jq_job "$(job_of late)" 'j["state"]')" = queued ]
touch "$TMP/go-big"
wait "$pb"
check "  ... the declared task ran unaffected (exit 0)" [ $? -eq 0 ]
check "  ... with its 9 GiB" has "$TMP/b" "alloc err=0"
wait "$pn"
check "the waiting allocation succeeds once the big task ended (exit 0)" [ $? -eq 0 ]
check "  ... alloc err=0" has "$TMP/n" "alloc err=0"
check "  ... its quota grew to 8 GiB" \
	[ "$(jq_job "$(job_of grower)" 'j["mem_quota"] >> 20')" = 8192 ]
wait "$pl"
check "  ... then the small task ran (exit 0)" [ $? -eq 0 ]

# Both wait: A (6 GiB) and B (6 GiB) each want 6 GiB more once both run;
# 24 GiB never fit.  A asks first and waits for B; B asks next: every task
# on the GPU would wait, so B (the last to ask) fails; A then gets its room.
# Each asks when the test says ($TMP/go-a, $TMP/go-b): in that order, and
# only once both run.
REG_HOLD_FILE=$TMP/go-a REG_ALLOC2_MIB=6144 KMUX_NAME=ga LD_PRELOAD=$PRELOAD "$R" 6144 >"$TMP/a" 2>&1 &
pa=$!
check "deadlock: A runs" wait_line "$TMP/a" ready
REG_HOLD_FILE=$TMP/go-b REG_ALLOC2_MIB=6144 KMUX_NAME=gb LD_PRELOAD=$PRELOAD "$R" 6144 >"$TMP/bb" 2>&1 &
pbb=$!
check "  ... B runs beside it" wait_line "$TMP/bb" ready
touch "$TMP/go-a"
check "  ... A asks first, and waits" \
	wait_log "job $(job_of ga) waits to grow from 6.00 GiB to 12.00 GiB"
touch "$TMP/go-b"
wait "$pbb"
check "  ... B, the last to ask, fails its second allocation" \
	has "$TMP/bb" "alloc2 err=2"
check "  ... the daemon says why" \
	grep -q "may not grow.*every task on its GPUs waits for memory" \
	"$KMUX_STATE_DIR/kmuxd.log"
wait "$pa"
check "  ... A waited, then got its 12 GiB (exit 0)" [ $? -eq 0 ]
check "  ... alloc2 err=0" has "$TMP/a" "alloc2 err=0"
finish
