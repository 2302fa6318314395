#!/usr/bin/env bash
# bench/jobmix.sh's arrivals over time (JOBMIX_ARRIVALS=1) without a GPU:
# the schedule (bench/jobmix/arrivals.py) is a function of the seed, the
# window and the names only; a simulated two-GPU run submits the same jobs
# in the same order, none before its offset, in both placements, the
# learning pass all at once and the window half its makespan; an explicit
# window and seed, the baselines all at once; the report's judged number is
# the median of the per-pair makespan ratios (a synthetic CSV, three
# pairs); bad knobs refused before anything runs.  Kept apart from
# t6j-jobmix-sim so that neither grows slow.
. "$(dirname "$0")/lib.sh"
if [ "$(basename "$BUILD")" = build-san ]; then
	ok "skipped under the sanitizer build (a benchmark script's test)"
	finish
fi

cond() { eval "$1"; }
left() { ps -eo args | awk -v p="$TMP/work" 'index($0, p) && !/awk/' | wc -l; }
ARRPY=$ROOT/bench/jobmix/arrivals.py

# --- the schedule ------------------------------------------------------------
names="a b c d e f g h"
python3 "$ARRPY" 1 20 $names >"$TMP/s1"
python3 "$ARRPY" 1 20 $names >"$TMP/s1b"
python3 "$ARRPY" 2 20 $names >"$TMP/s2"
check "arrivals.py: the same seed and window, the same schedule" cmp -s "$TMP/s1" "$TMP/s1b"
check "  ... another seed, another one" cond '! cmp -s "$TMP/s1" "$TMP/s2"'
check "  ... every job once (a shuffle of the names)" \
	[ "$(awk '{print $2}' "$TMP/s1" | sort | tr '\n' ' ')" = "a b c d e f g h " ]
check "  ... the first at 0, the offsets sorted, inside [0, 20]" \
	awk 'NR == 1 && $1 != 0 {exit 1} $1 < p || $1 > 20 {exit 1} {p = $1}' "$TMP/s1"
check "  ... a negative window refused (exit 2)" \
	cond 'python3 "$ARRPY" 1 -1 a >/dev/null 2>&1; [ $? -eq 2 ]'

# --- a simulated run, two GPUs, the learning pass's window ------------------
export KMUX_BIN=$KMUX KMUX_LIB=$LIBKMUX KMUX_BENCH_WORK=$TMP/work
export JOBMIX_SIMCUDA_DIR=$SIMDIR
mkdir -p "$KMUX_BENCH_WORK"
O=$TMP/out
JOBMIX_SIM=1 JOBMIX_SIM_GPUS=2 JOBMIX_SCALE=0.5 JOBMIX_ARRIVALS=1 JOBMIX_MODES="kmux kmux-rr" \
	OUT=$O bash "$ROOT/bench/jobmix.sh" >"$TMP/stdout" 2>&1
check "JOBMIX_ARRIVALS=1, kmux and kmux-rr on two simulated GPUs: exit 0" [ $? -eq 0 ]
for m in kmux kmux-rr; do
	check "  ... $m: 20 rows, each with its submit time" \
		[ "$(awk -F, -v m="$m" '{sub(/\r$/, "")} $1 == m && $20 != ""' "$O/jobmix.csv" | wc -l)" -eq 20 ]
done
# W: half the learning pass's makespan, as the report says both
read -r W LMK < <(sed -n 's/.*arrivals (JOBMIX_ARRIVALS=1): seed 1, window \([0-9.]*\) s (half the learning pass.s makespan, \([0-9.]*\) s).*/\1 \2/p' "$O/jobmix.md")
check "  ... the window is half the learning pass's makespan (W=${W:-?} of ${LMK:-?} s)" \
	cond '[ -n "$W" ] && [ "$(awk -v m="$LMK" "BEGIN{printf \"%.1f\", m / 2}")" = "$W" ]'
check "  ... the learning pass ran all at once (no submit times of its own)" \
	cond 'grep -q "^\[[0-9:]*\] == learn" "$O/jobmix.log" && [ ! -e "$KMUX_BENCH_WORK/mode-learn/submits" ]'
# the schedule the report prints is arrivals.py's for seed 1 and that W
python3 "$ARRPY" 1 "$W" $(awk -F'\t' '{print $1}' "$KMUX_BENCH_WORK/jobs.tsv") |
	awk '{printf "%s%s @ %s", (NR > 1 ? ", " : ""), $2, $1}' >"$TMP/want"
check "  ... the report prints the schedule, arrivals.py's for seed 1 and W" \
	grep -qF "at these offsets (s): $(cat "$TMP/want")." "$O/jobmix.md"
for m in kmux kmux-rr; do
	check "  ... $m submitted the jobs in the schedule's order" \
		[ "$(awk -F, -v m="$m" '$1 == m {print $20, $3}' "$O/jobmix.csv" | sort -n | awk '{print $2}' | tr '\n' ' ')" = \
		  "$(awk '{print $2}' "$KMUX_BENCH_WORK/arrivals.txt" | tr '\n' ' ')" ]
	# none early; none late by more than 1 s after it could be submitted:
	# its offset, or when the submission before it returned (submissions
	# are one at a time, and on a loaded machine each can take a while)
	awk -v m="$m" -F, 'FNR > 1 && $1 == m {print $20, $3}' "$O/jobmix.csv" | sort -n >"$TMP/subs-$m"
	check "  ... $m: each job submitted at its offset, never before, never held up but by the one before" \
		awk 'FILENAME == ARGV[1] {off[$2] = $1; next}
			FILENAME == ARGV[2] {end[$1] = $2; next}
			{may = off[$2]; if (n && end[prev] > may) may = end[prev]
			 if ($1 < off[$2] - 0.002 || $1 - may > 1) bad = 1; prev = $2; n++}
			END {exit bad || n != 20}' "$KMUX_BENCH_WORK/arrivals.txt" \
			"$KMUX_BENCH_WORK/mode-$m/submit-ends" "$TMP/subs-$m"
done
# the judged number, from the CSV: one pair, rr makespan / busyness makespan
want=$(awk -F, 'NR > 1 && $8 + 0 > mk[$1] + 0 {mk[$1] = $8}
	END {printf "%.2f", mk["kmux-rr"] / mk["kmux"]}' "$O/jobmix.csv")
check "  ... the judged placement ratio is rr / busyness makespan = $want (one pair)" \
	grep -q "^| busyness vs round-robin placement, jobs arriving over time (median over 1 pair of makespan rr / busyness) | ${want}× | ≥ 1.15× |" "$O/jobmix.md"
check "  ... with the pair table, its median row and the judging rule" \
	cond 'grep -q "^| 1 | [0-9.]* s | [0-9.]* s | ${want}× | [0-9.]* s | [0-9.]* s | [0-9.]*× |$" "$O/jobmix.md" &&
	      grep -q "^| median | | | ${want}× | | | [0-9.]*× |$" "$O/jobmix.md" &&
	      grep -q "^Judged (the rule in bench/jobmix.sh.s header, fixed before any run)" "$O/jobmix.md"'
check "  ... and says arrivals apply to the kmux-family runs only" \
	grep -q "arrivals apply to the kmux-family runs only" "$O/jobmix.md"
check "  ... the commands listed with their offsets" \
	[ "$(grep -c "^\[kmux\] at +[0-9.]* s: JOBMIX_REC_DIR=DIR kmux submit" "$O/jobmix.md")" -eq 20 ]
check "  ... the exact command has the knob" \
	grep -q 'JOBMIX_MODES="kmux kmux-rr" JOBMIX_ARRIVALS=1 bash bench/jobmix.sh' "$O/jobmix.md"
check "  ... no process of the run is left" [ "$(left)" -eq 0 ]

# --- an explicit window and seed; a baseline beside -------------------------
O2=$TMP/out2
JOBMIX_SIM=1 JOBMIX_SIM_GPUS=1 JOBMIX_SCALE=0.5 JOBMIX_ARRIVALS=1 JOBMIX_SEED=7 \
	JOBMIX_ARRIVAL_WINDOW_S=0.5 JOBMIX_LEARN=0 JOBMIX_MODES="kmux together" \
	OUT=$O2 bash "$ROOT/bench/jobmix.sh" >"$TMP/stdout2" 2>&1
check "JOBMIX_ARRIVAL_WINDOW_S=0.5 JOBMIX_SEED=7, one GPU, kmux and together: exit 0" [ $? -eq 0 ]
check "  ... the report names the seed and the window given" \
	grep -q "arrivals (JOBMIX_ARRIVALS=1): seed 7, window 0.5 s (JOBMIX_ARRIVAL_WINDOW_S)" "$O2/jobmix.md"
check "  ... the schedule is arrivals.py's for them" \
	cmp -s "$KMUX_BENCH_WORK/arrivals.txt" <(python3 "$ARRPY" 7 0.5 $(awk -F'\t' '{print $1}' "$KMUX_BENCH_WORK/jobs.tsv"))
check "  ... the baseline started its jobs at once (no submit times)" \
	[ "$(awk -F, '{sub(/\r$/, "")} $1 == "together" && $20 == ""' "$O2/jobmix.csv" | wc -l)" -eq 10 ]
check "  ... kmux completed every job" grep -q '^| kmux | .* | 10/10 | 0 | none |' "$O2/jobmix.md"
check "  ... the throughput targets are not judged under arrivals" \
	grep -q '^| throughput vs the best complete baseline, vs exclusive | not judged |' "$O2/jobmix.md"

# --- the judging rule on a synthetic CSV: three pairs -------------------------
# pair ratios 12/10, 18/20, 15/10 = 1.2, 0.9, 1.5: median 1.20 (met); the
# ratio of the medians would be 15/10 = 1.50
S=$TMP/syn
mkdir -p "$S"
printf 'a\ttrain\t-\t0\tx\nb\tinfer\t-\t0\tx\n' >"$S/jobs.tsv"
: >"$S/cmds"
printf '%s\n' "nuse=2" "gpu_mib=16384" "modes=kmux kmux-rr kmux-rr.2 kmux.2 kmux.3 kmux-rr.3" \
	"arrivals=seed 1, window 5 s (JOBMIX_ARRIVAL_WINDOW_S)" "arrival_offsets=a@0.000 b@1.000" >"$S/meta"
{
	echo "mode,rep,job,class,mem_declared,gpu,start_s,end_s,rc,status,wall_s,init_s,work_s,peak_bytes,kmux_id,kmux_gpus,kmux_peak,kmux_wait_s,kmux_profile,submit_s"
	for x in kmux:1:10 kmux-rr:1:12 kmux-rr:2:18 kmux:2:20 kmux:3:10 kmux-rr:3:15; do
		IFS=: read -r m r mk <<<"$x"
		echo "$m,$r,a,train,-,0,0.1,$mk,0,ok,,,,,,0,,,yes,0.000"
		echo "$m,$r,b,infer,-,1,1.1,$((mk / 2)),0,ok,,,,,,1,,,yes,1.000"
	done
} >"$S/csv"
python3 "$ROOT/bench/jobmix/report.py" report --csv "$S/csv" --meta "$S/meta" --cmds "$S/cmds" \
	--jobs "$S/jobs.tsv" --md "$S/md" --png "$S/png" --root "$ROOT" --work "$S" >/dev/null 2>&1
check "report.py: the judged number is the median of the pair ratios (1.20×), not the ratio of medians" \
	grep -q '^| busyness vs round-robin placement, jobs arriving over time (median over 3 pairs of makespan rr / busyness) | 1.20× | ≥ 1.15× | met |' "$S/md"
# mean completion (end - own submission): (mk + mk/2 - 1) / 2
check "  ... each pair's makespan and completion-time ratios, and their medians" \
	cond 'grep -q "^| 1 | 12.0 s | 10.0 s | 1.20× | 8.5 s | 7.0 s | 1.21× |$" "$S/md" &&
	      grep -q "^| 2 | 18.0 s | 20.0 s | 0.90× | 13.0 s | 14.5 s | 0.90× |$" "$S/md" &&
	      grep -q "^| 3 | 15.0 s | 10.0 s | 1.50× | 10.5 s | 7.0 s | 1.50× |$" "$S/md" &&
	      grep -q "^| median | | | 1.20× | | | 1.21× |$" "$S/md" &&
	      grep -q "busyness faster in 2 of 3 pairs\.$" "$S/md"'

# --- bad knobs: exit 2 before anything runs ----------------------------------
bad() {	# bad WHAT MESSAGE ENV...
	local what=$1 msg=$2 d=$TMP/bad$((++nbad))
	shift 2
	env JOBMIX_SIM=1 JOBMIX_SIM_GPUS=2 OUT=$d "$@" bash "$ROOT/bench/jobmix.sh" >"$d.out" 2>&1
	local rc=$?
	check "$what: exit 2, saying so, nothing run" \
		cond '[ $rc -eq 2 ] && grep -qF "FATAL: $msg" "$d.out" && [ ! -e "$d/jobmix.csv" ]'
}
nbad=0
bad "JOBMIX_ARRIVALS=yes" "JOBMIX_ARRIVALS='yes': 1" JOBMIX_ARRIVALS=yes
bad "JOBMIX_SEED=-3" "JOBMIX_SEED='-3': a whole number" JOBMIX_ARRIVALS=1 JOBMIX_SEED=-3
bad "JOBMIX_ARRIVAL_WINDOW_S=ten" "JOBMIX_ARRIVAL_WINDOW_S='ten': the arrival window in seconds" \
	JOBMIX_ARRIVALS=1 JOBMIX_ARRIVAL_WINDOW_S=ten
finish
