#!/usr/bin/env bash
# kmux_streams_pause() (include/kmux.h): pausing drains the pool, so work
# submitted while paused starts after the scheduled work before it and runs
# as submitted (one after another on the default stream); resuming drains
# the default stream, so scheduled work starts after the paused work, and
# runs side by side again.  A pause during a capture is refused, a process
# that is not scheduled gets -ENOTSUP, and random programs that switch back
# and forth, from one thread or four at once, print what they print
# unscheduled with no conflicting overlap in simcuda's records.
. "$(dirname "$0")/lib.sh"

"$PROGS/streams-cases" pause >"$TMP/none" 2>&1
check "without the preload: nothing to pause" grep -q '^pause: not under kmux' "$TMP/none"

LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" pause >"$TMP/bare" 2>&1
check "bare preload, no scheduling: -ENOTSUP" \
	grep -q "^pause returned -$(python3 -c 'import errno; print(errno.ENOTSUP)') " "$TMP/bare"

KMUX_STREAMS=4 KMUX_LOG=info LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" pause \
	>"$TMP/p" 2>"$TMP/p.log"
rc=$?
check "KMUX_STREAMS=4: every order held (exit $rc)" bash -c "[ $rc = 0 ] && grep -q '^pause ok' '$TMP/p'"
check "  ... returned 0, then 1 (already paused), then 1 at the resume; -EBUSY in a capture" \
	grep -q "^pause returned 0 1 1, during a capture -$(python3 -c 'import errno; print(errno.EBUSY)')" "$TMP/p"
check "  ... scheduled before and after, serial while paused" \
	grep -qE '^pause overlaps: scheduled 1, paused 0, resumed [1-9]' "$TMP/p"
check "  ... the exit line counts one pause and four ops run as submitted" \
	grep -q 'paused 1 times (4 ops as submitted)' "$TMP/p.log"

# shellcheck source=tests/e2e/rand-lib.sh
. "$(dirname "$0")/rand-lib.sh"
export RAND_ENV="RAND_DAG_PAUSE=7"
for seed in 1 2 3 4 5 6; do
	rand_run rand-dag "$seed" 1 2 8
done
for seed in 1 2 3; do
	rand_run rand-dag "$seed" 4 4
	rand_run rand-dag-pt "$seed" 4 4
done
check "$runs runs switching every 7 ops print what unscheduled runs print${bad_out:+ (differ:$bad_out)}" [ -z "$bad_out" ]
check "  ... no conflicting pair overlapped${bad_check:+ (conflicts:$bad_check)}" [ -z "$bad_check" ]
KMUX_LOG=info KMUX_STREAMS=4 RAND_DAG_PAUSE=7 LD_PRELOAD=$PRELOAD "$PROGS/rand-dag" 3 150 \
	>/dev/null 2>"$TMP/r.log"
check "  ... the switches happened (paused 10 times or more)" \
	grep -qE 'paused [1-9][0-9]+ times \([1-9][0-9]* ops' "$TMP/r.log"
# The Python binding (python/kmux): the context manager pauses and resumes,
# nests, and is a no-op when the process is not scheduled.
cat >"$TMP/p.py" <<'PY'
import kmux
with kmux.streams_paused() as p:
    with kmux.streams_paused() as q:
        print("inner", p, q, kmux.streams_pause(True))
    print("outer still paused", kmux.streams_pause(True))
print("resumed", kmux.streams_pause(False))
PY
PYTHONPATH=$ROOT/python KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD python3 "$TMP/p.py" >"$TMP/py" 2>&1
check "python: kmux.streams_paused() pauses, nests, resumes" \
	bash -c "printf 'inner True True 1\nouter still paused 1\nresumed 0\n' | cmp -s - '$TMP/py'"
PYTHONPATH=$ROOT/python python3 -c 'import kmux
with kmux.streams_paused() as p: print("not scheduled", p, kmux.streams_pause(1))' >"$TMP/py0" 2>&1
check "python: outside kmux a no-op (False, -ENOTSUP)" \
	grep -q "^not scheduled False -$(python3 -c 'import errno; print(errno.ENOTSUP)')$" "$TMP/py0"
finish
