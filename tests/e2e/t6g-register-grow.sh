#!/usr/bin/env bash
# A need kmuxd only guessed is corrected as the task allocates (issue 4,
# item 4): an allocation past the quota asks the daemon for more, which it
# grants while the GPU has uncommitted room.  A declared need (KMUX_MEM) is
# the limit.  With no room, that allocation fails with out of memory for
# that task alone, and its neighbour is unaffected.
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=1:16G
. "$(dirname "$0")/kmuxd-lib.sh"
. "$(dirname "$0")/reg-lib.sh"
committed_mib() { top_json 't["gpus"][0]["mem_committed"] >> 20'; }

start_daemon

# The guess is a quarter of the 16 GiB GPU; the task wants 6 GiB.
LD_PRELOAD=$PRELOAD "$R" 6144 1500 >"$TMP/g" 2>&1 &
pg=$!
check "guessed: it starts" wait_line "$TMP/g" ready
jg=$(job_of reg)
check "  ... admitted with the 4 GiB guess" has "$TMP/g" "total=4096"
check "  ... its 6 GiB allocation past the guess succeeds" has "$TMP/g" "alloc err=0"
check "  ... its quota grew to 6 GiB (ps --json)" \
	[ "$(jq_job "$jg" 'j["mem_quota"] >> 20')" = 6144 ]
check "  ... and so did the GPU's commitment" [ "$(committed_mib)" = 6144 ]
check "  ... the daemon says so" \
	grep -q "job $jg grew from 4.00 GiB to 6.00 GiB" "$KMUX_STATE_DIR/kmuxd.log"
wait "$pg"
check "  ... the program exits 0" [ $? -eq 0 ]
check "  ... and its commitment goes with it" wait_state "$jg" exited 20
check "  ... nothing left committed" [ "$(committed_mib)" = 0 ]

# Declared: KMUX_MEM=1G is the limit, whatever room there is.
KMUX_MEM=1G KMUX_NAME=decl LD_PRELOAD=$PRELOAD "$R" 2048 >"$TMP/d" 2>&1
check "declared 1 GiB: a 2 GiB allocation fails with out of memory" \
	has "$TMP/d" "alloc err=2"

# No room: a declared 10 GiB task holds the GPU; a guessed one (4 GiB fits
# beside it) cannot grow to 8 GiB: its allocation fails, the other runs on.
KMUX_MEM=10G KMUX_NAME=big LD_PRELOAD=$PRELOAD "$R" 9216 2500 >"$TMP/b" 2>&1 &
pb=$!
check "a declared 10 GiB task runs" wait_line "$TMP/b" ready
KMUX_NAME=grower LD_PRELOAD=$PRELOAD "$R" 8192 >"$TMP/n" 2>&1
check "no room: the guessed task's 8 GiB allocation fails with out of memory" \
	has "$TMP/n" "alloc err=2"
check "  ... its quota stayed at the guess" \
	[ "$(jq_job "$(job_of grower)" 'j["mem_quota"] >> 20')" = 4096 ]
check "  ... the refusal is logged in the task's own output" \
	bash -c "KMUX_LOG=info KMUX_NAME=grower2 LD_PRELOAD=$PRELOAD '$R' 8192 2>&1 | grep -q 'no more memory: job .* no room to grow'"
wait "$pb"
check "  ... the declared task was unaffected (exit 0)" [ $? -eq 0 ]
check "  ... with its 9 GiB" has "$TMP/b" "alloc err=0"
finish
