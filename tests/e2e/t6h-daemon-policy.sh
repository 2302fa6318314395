#!/usr/bin/env bash
# The admission policy's busyness knobs: with --busy-max 1 and tasks of
# unknown busyness predicted at 0.5, two tasks share a GPU and the third
# waits although memory is plenty; the default (0.25) lets four in.  Bad
# values are usage errors (--guess and --grow-wait too).
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=1:16G
. "$(dirname "$0")/kmuxd-lib.sh"

expect_rc 2 "--busy-max abc" "$KMUX" daemon --busy-max abc
expect_rc 2 "--busy-max 0" "$KMUX" daemon --busy-max 0
expect_rc 2 "--default-busy 1.5" "$KMUX" daemon --default-busy 1.5
expect_rc 2 "--guess 0" "$KMUX" daemon --guess 0
expect_rc 2 "--guess 0.95" "$KMUX" daemon --guess 0.95
expect_rc 2 "--guess 1x" "$KMUX" daemon --guess 1x
expect_rc 2 "--grow-wait -1" "$KMUX" daemon --grow-wait -1
expect_rc 2 "--grow-wait 90000" "$KMUX" daemon --grow-wait 90000

start_daemon --busy-max 1 --default-busy 0.5 --grow-wait 0
check "the daemon logs its policy" \
	grep -q "busy-max 1, default-busy 0.5, guess 0.1, grow-wait 0 s" "$KMUX_STATE_DIR/kmuxd.log"
ids=""
for i in 1 2 3; do ids="$ids $("$KMUX" submit -m 1G -- sleep 3)"; done
set -- $ids
check "busy-max 1: the first task runs" wait_state "$1" running
check "  ... the second too" wait_state "$2" running
check "  ... the third waits: predicted busyness 1.5 > 1" \
	[ "$(jq_job "$3" 'j["state"]')" = queued ]
"$KMUX" cancel "$1" "$2" "$3" >/dev/null 2>&1
stop_daemon

rm -rf "$KMUX_STATE_DIR"
start_daemon --busy-max 1
ids=""
for i in 1 2 3 4 5; do ids="$ids $("$KMUX" submit -m 1G -- sleep 3)"; done
set -- $ids
check "default-busy 0.25: four tasks run" wait_state "$4" running
check "  ... the fifth waits" [ "$(jq_job "$5" 'j["state"]')" = queued ]
"$KMUX" cancel "$@" >/dev/null 2>&1
finish
