#!/usr/bin/env bash
# pace-long.sh - what does checking that spreading pays (KMUX_PACE=1,
# src/preload/pace.h) cost a suite app that gains from spreading, once its
# one in-line trial epoch is paid?  bench/streams.sh runs each app for 10
# ROIs, and its trial lands in one of the 7 timed ones; here each process
# runs PL_REPS (40) ROIs, so the median shows what stays after the trial.
# Run on the GPU machine from the repo root, with build/ carried:
#   OUT=$OUT bash bench/gpu/pace-long.sh
#
# For each app in PL_APPS, PL_ROUNDS (5) rounds of fresh processes under
# kmux run --streams 16, one per arm of PL_ARMS (default "off on off2"):
# off (KMUX_PACE=0), on (KMUX_PACE=1), off2 (KMUX_PACE=0 again: the A/A
# control, so that off/off2 shows the noise and any bias of a position in
# the round), sham (KMUX_PACE=1 KMUX_DEBUG_PACE=spread: the bookkeeping
# without trials, so that sham/off is what the bookkeeping costs and
# on/sham what the trials do); boff and bon are off and on with another
# library, PL_BASE_LIB (through KMUX_LIBRARY), so that two builds are
# measured side by side, bon2 bon again (the base's A/A control) and bdur
# dur with the base library; on2 is on again (an A/A control of on); dur, lvl
# and both are on with KMUX_DURATIONS=1 (learned kernel durations,
# kdur.h), KMUX_LEVEL=1 (levelling at full synchronizations, sched.h
# SCHED_LEVEL) or both, u64 both with a weight unit of 64 us instead of
# 16 (KMUX_DEBUG_DURATION_UNIT_US); the order of the arms rotates from
# round to round.  Ratios are against off, or the first arm
# when off is not run: the ratio of the medians, and in brackets the
# median of the rounds' own ratios (a round's arms run back to back, so
# that one pairs away drift between rounds).  Output: $OUT/pace-long.log (every command,
# its RESULT line and kmux's exit line), $OUT/pace-long.md (medians over
# the rounds of each process's median ROI time, on/off and off2/off).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/pace-long.log
MD=$OUT/pace-long.md
: >"$LOG"
APPS=${PL_APPS:-reductions image_pipeline phase_buffers mha host_sync stencil_dag}
ROUNDS=${PL_ROUNDS:-5}
REPS=${PL_REPS:-40}

log "pace-long: GPU $(gpu_line); $(kmux_ident)"
if [[ " ${PL_ARMS:-} " == *" b"* ]]; then
	[ -r "${PL_BASE_LIB:-}" ] ||
		{ log "pace-long: arms boff/bon need PL_BASE_LIB, a readable libkmux.so"; exit 1; }
	log "pace-long: boff/bon use $PL_BASE_LIB, sha256 $(sha256sum "$PL_BASE_LIB" | cut -c1-12)"
fi
for a in $APPS; do
	logq "\$ $NVCC $NVCCFLAGS $ROOT/bench/apps/$a.cu -o $WORK/bin/$a"
	# shellcheck disable=SC2086  # NVCCFLAGS is a word list
	"$NVCC" $NVCCFLAGS "$ROOT/bench/apps/$a.cu" -o "$WORK/bin/$a" >>"$LOG" 2>&1 ||
		{ log "pace-long: cannot build $a"; exit 1; }
done

one() {
	local app=$1 mode=$2 out rc
	local -a env=(KMUX_PACE=0)
	case $mode in
	on) env=(KMUX_PACE=1) ;;
	sham) env=(KMUX_PACE=1 KMUX_DEBUG_PACE=spread) ;;
	on2) env=(KMUX_PACE=1) ;;
	dur) env=(KMUX_PACE=1 KMUX_DURATIONS=1) ;;
	lvl) env=(KMUX_PACE=1 KMUX_LEVEL=1) ;;
	both) env=(KMUX_PACE=1 KMUX_DURATIONS=1 KMUX_LEVEL=1) ;;
	u64) env=(KMUX_PACE=1 KMUX_DURATIONS=1 KMUX_LEVEL=1 KMUX_DEBUG_DURATION_UNIT_US=64) ;;
	boff) env=(KMUX_PACE=0 "KMUX_LIBRARY=$PL_BASE_LIB") ;;
	bon | bon2) env=(KMUX_PACE=1 "KMUX_LIBRARY=$PL_BASE_LIB") ;;
	bdur) env=(KMUX_PACE=1 KMUX_DURATIONS=1 "KMUX_LIBRARY=$PL_BASE_LIB") ;;
	esac
	out=$WORK/run/$app-$mode.txt
	logq "----- $app/$mode: \$ KMUX_LOG=info ${env[*]} kmux run --streams 16 -- $app plain --reps $REPS --warmup 3"
	# kmux_cli is a function: the variables go through a subshell's export
	(export KMUX_LOG=info "${env[@]}" &&
		kmux_cli run --streams 16 -- "$WORK/bin/$app" plain --reps "$REPS" \
			--warmup 3) >"$out" 2>&1
	rc=$?
	logq "exit $rc"
	[ "$rc" -eq 0 ] || { failed=$((failed + 1)); tail -n 3 "$out" >>"$LOG"; }
	grep -E '^RESULT|spreading checked' "$out" |
		sed -e 's/.*\(spreading checked[^;]*\);\( durations learned[^;]*\)\{0,1\}.*/\1;\2/' >>"$LOG"
}

failed=0
read -r -a ARMS <<<"${PL_ARMS:-off on off2}"
for app in $APPS; do
	for r in $(seq 1 "$ROUNDS"); do
		have_time 20 || { log "pace-long: out of time at $app round $r"; break 2; }
		# round r starts at arm r - 1: each arm takes each position in turn
		for i in $(seq 0 $(( ${#ARMS[@]} - 1 ))); do
			one "$app" "${ARMS[$(( (r - 1 + i) % ${#ARMS[@]} ))]}"
		done
	done
	log "  $app done"
done

"$PY" - "$LOG" >"$MD" <<'EOF'
import re, statistics, sys
runs = {}      # (app, arm) -> {round: ms}
heads = {}     # (app, arm) -> runs started, so a failed run keeps its round
cur = None
for line in open(sys.argv[1]):
    m = re.match(r'----- (\w+)/(\w+):', line)
    if m:
        heads[m.groups()] = heads.get(m.groups(), 0) + 1
        cur = (m.groups(), heads[m.groups()])
        continue
    m = re.match(r'RESULT .* ms=([0-9.]+) .*min_ms=([0-9.]+)', line)
    if m and cur:
        runs.setdefault(cur[0], {})[cur[1]] = float(m.group(1))
        cur = None
if not runs:
    print("no run printed a RESULT line")
    sys.exit(0)
arms = list(dict.fromkeys(m for _, m in runs))
ref = "off" if "off" in arms else arms[0]
others = [m for m in arms if m != ref]
print("| app | " + " | ".join(f"{m} ms" for m in arms) + " | " +
      " | ".join(f"{m}/{ref}" for m in others) + " | rounds |")
print("|---|" + "---|" * (len(arms) + len(others) + 1))
for app in dict.fromkeys(a for a, _ in runs):
    got = {m: runs.get((app, m), {}) for m in arms}
    med = {m: statistics.median(got[m].values()) if got[m] else float('nan')
           for m in arms}
    n = min(len(got[m]) for m in arms)
    def paired(m):
        r = [got[m][k] / got[ref][k] for k in got[m] if k in got[ref]]
        return statistics.median(r) if r else float('nan')
    print(f"| {app} | " + " | ".join(f"{med[m]:.4f}" for m in arms) + " | " +
          " | ".join(f"{med[m] / med[ref]:.3f} ({paired(m):.3f})" for m in others) +
          f" | {n} |")
print()
print("median over the rounds of each process's median ROI time; in brackets the "
      "median of the rounds' own ratios; off2, on2 and bon2 are A/A controls")
EOF
cat "$MD"
[ "$failed" -eq 0 ] || { log "pace-long: $failed runs failed (their tails are in $LOG)"; exit 1; }
