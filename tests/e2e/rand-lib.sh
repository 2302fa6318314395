# rand-lib.sh - the random-program check shared by the streams tests: a
# program of tests/e2e/progs run unscheduled, then under the preload with
# KMUX_STREAMS=N (and the variables in RAND_ENV, "K=V ..."), its outputs
# compared and simcuda's record of every scheduled run checked for
# conflicting operations that overlapped.  Sourced after lib.sh; the
# callers report bad_out, bad_check and runs (rand_report, or their own).
bad_out=""
bad_check=""
runs=0

# rand_run PROG SEED THREADS N...: the unscheduled output against each N's.
rand_run() {
	local prog=$1 seed=$2 th=$3 n
	shift 3
	"$PROGS/$prog" "$seed" 150 "$th" 2>&1 | sort -s -k1,1 >"$TMP/plain" || {
		fail "$prog $seed fails unscheduled"
		return
	}
	for n in "$@"; do
		rm -f "$TMP"/sim.*
		# shellcheck disable=SC2086
		env SIMCUDA_LOG="$TMP/sim.%p" KMUX_STREAMS="$n" ${RAND_ENV:-} \
			LD_PRELOAD="$PRELOAD" "$PROGS/$prog" "$seed" 150 "$th" 2>&1 |
			sort -s -k1,1 >"$TMP/sched"
		runs=$((runs + 1))
		cmp -s "$TMP/plain" "$TMP/sched" || bad_out="$bad_out $prog:$seed:$th/$n"
		"$SIMDIR/simcuda-check" -q "$TMP"/sim.* >"$TMP/check" 2>&1 || {
			bad_check="$bad_check $prog:$seed:$th/$n"
			sed 's/^/    /' "$TMP/check" | head -5
		}
	done
}

# rand_set SEEDS: the usual set with the current RAND_ENV: seeds 1..SEEDS
# of rand-dag on one thread (N = 4, 8), then seed 3 of both programs on
# four threads (N = 4).
rand_set() {
	local seed
	for seed in $(seq 1 "$1"); do
		rand_run rand-dag "$seed" 1 4 8
	done
	rand_run rand-dag 3 4 4
	rand_run rand-dag-pt 3 4 4
}

# rand_report WHAT: the two checks over every run so far, WHAT saying how
# they were scheduled.
rand_report() {
	check "$runs scheduled runs $1 print what the unscheduled ones print${bad_out:+ (differ:$bad_out)}" [ -z "$bad_out" ]
	check "  ... and no conflicting pair overlapped${bad_check:+ (conflicts:$bad_check)}" [ -z "$bad_check" ]
}
