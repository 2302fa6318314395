#!/usr/bin/env bash
# bench/jobmix.sh without a GPU (JOBMIX_SIM=1): stand-in jobs on simcuda over
# two simulated GPUs, all five modes and a --busy-max sweep run, so that the
# orchestration, the private kmuxd and its two placements, the stand-in MPS
# control, the parsing and the report are exercised before the one GPU run;
# then one GPU, two modes, for the sizing.  Checks what is deterministic:
# every mode ran every job, kmux completed all (it never commits more than a
# GPU holds, and the undeclared heavy jobs wait to grow rather than fail),
# all at once lost jobs to out of memory, the exclusive peaks make the mix
# an overcommit, MPS was started and quit, nothing is left running.  Then
# the placement repeats (JOBMIX_PLACEMENT_REPS=2, the long modes left out):
# interleaved runs, each its own rows, medians in the report, the learning
# pass first (every job predicted from its profile, each run from the same
# copy of them; JOBMIX_LEARN=0, the first call: none); bad mode names
# and repeat counts refused before anything runs; a pair the budget cannot
# hold skipped whole, and said so.
# e2e-timeout: 300
# (68-81 s seen beside two busy loops and other tests on 2 cores)
. "$(dirname "$0")/lib.sh"
if [ "$(basename "$BUILD")" = build-san ]; then
	ok "skipped under the sanitizer build (a benchmark script's test)"
	finish
fi

cond() { eval "$1"; }
left() { ps -eo args | awk -v p="$TMP/work" 'index($0, p) && !/awk/' | wc -l; }

export KMUX_BIN=$KMUX KMUX_LIB=$LIBKMUX KMUX_BENCH_WORK=$TMP/work
export JOBMIX_SIMCUDA_DIR=$SIMDIR
mkdir -p "$KMUX_BENCH_WORK"
O=$TMP/out
JOBMIX_SIM=1 JOBMIX_SIM_GPUS=2 JOBMIX_SCALE=0.5 JOBMIX_BUSY_SWEEP=2.0 JOBMIX_LEARN=0 OUT=$O \
	bash "$ROOT/bench/jobmix.sh" >"$TMP/stdout" 2>&1
rc=$?
check "JOBMIX_SIM=1 on two GPUs: exit 0" [ "$rc" -eq 0 ]
for f in jobmix.log jobmix.csv jobmix.md; do
	check "  ... wrote $f" [ -s "$O/$f" ]
done
check "  ... the CSV without the arrivals' submit_s column (JOBMIX_ARRIVALS unset)" \
	[ "$(head -1 "$O/jobmix.csv" | tr -d '\r')" = "mode,rep,job,class,mem_declared,gpu,start_s,end_s,rc,status,wall_s,init_s,work_s,peak_bytes,kmux_id,kmux_gpus,kmux_peak,kmux_wait_s,kmux_profile" ]
check "  ... and nothing else (no subfolders)" \
	[ "$(find "$O" -mindepth 1 ! -name 'jobmix.*' | wc -l)" -eq 0 ]
for m in kmux kmux-rr exclusive together mps kmux-bm2.0; do
	check "mode $m: 20 rows in the CSV (the 10-job mix once per GPU)" \
		[ "$(grep -c "^$m,1," "$O/jobmix.csv")" -eq 20 ]
done
check "every mode started every job (a status for each, none not-run)" \
	[ "$(awk -F, 'NR>1 && ($10=="not-run" || $10=="") ' "$O/jobmix.csv" | wc -l)" -eq 0 ]
check "kmux completed every job" grep -q '^| kmux | .* | 20/20 | 0 | none |' "$O/jobmix.md"
check "kmux --placement roundrobin too" grep -q '^| kmux-rr | .* | 20/20 | 0 | none |' "$O/jobmix.md"
check "kmux --busy-max 2.0 too" grep -q '^| kmux-bm2.0 | .* | 20/20 | 0 | none |' "$O/jobmix.md"
check "  ... with that option" grep -q '^| kmux-bm2.0 | `--placement busyness --busy-max 2.0` |' "$O/jobmix.md"
check "exclusive completed every job" grep -q '^| exclusive | .* | 20/20 | 0 | none |' "$O/jobmix.md"
check "all at once lost jobs to out of memory, and the report says which" \
	grep -q '^| together | .* | [0-9]*/20 | [1-9][0-9]*: [a-z_]*_[ab][,|]' "$O/jobmix.md"
check "JOBMIX_LEARN=0: no learning pass, every kmux job predicted from the defaults" \
	cond '! grep -q "== learn" "$O/jobmix.log" &&
	      grep -q "^- learning pass (JOBMIX_LEARN): off" "$O/jobmix.md" &&
	      [ "$(awk -F, "NR>1 && \$1 ~ /^kmux/ {print \$19}" "$O/jobmix.csv" | tr -d "\r" | sort -u)" = no ]'
check "kmux's undeclared jobs grew (nothing learned), none was refused" \
	grep -q '^| kmux | `--placement busyness` | [1-9][0-9]* grew, [0-9]* waited first, 0 refused |' "$O/jobmix.md"
check "kmux jobs ran on both GPUs" \
	[ "$(awk -F, '$1=="kmux" {print $6}' "$O/jobmix.csv" | sort -u | tr '\n' ' ')" = "0 1 " ]
check "the report sees an overcommit (66 GiB of peaks, 2 x 16 GiB)" \
	grep -q '\*\*66.0 GiB\*\* against 32.0 GiB .*an overcommit' "$O/jobmix.md"
check "the report gives the three ratios" \
	[ "$(grep -c '^| throughput vs\|^| busyness vs round-robin' "$O/jobmix.md")" -eq 3 ]
check "the kmux jobs were submitted with --mem where declared, without elsewhere" \
	cond 'grep -q "kmux submit --mem 7G --name big_train_a -- " "$O/jobmix.md" &&
	      grep -q "kmux submit --name infer_a_a -- " "$O/jobmix.md"'
check "the daemons logged their placements" \
	cond 'grep -q "placement busyness" "$O/jobmix.log" && grep -q "placement roundrobin" "$O/jobmix.log"'
check "MPS (the stand-in) was started and told to quit" \
	cond 'grep -q "stub: started" "$O/jobmix.log" && grep -q "stub: quit" "$O/jobmix.log"'
check "each job's output tail is in the log" grep -q -- '--- \[together\] app_b_b: ok' "$O/jobmix.log"
check "no process of the run is left (job, daemon, MPS stand-in)" [ "$(left)" -eq 0 ]

O1=$TMP/out1
# Jobs of 300-900 ms: at 0.5 (100-300 ms), on a loaded 2-core CI machine the
# "all at once" jobs once started so far apart that none overlapped, so no
# out-of-memory, and "all at once did not" failed.
JOBMIX_SIM=1 JOBMIX_SIM_GPUS=1 JOBMIX_SCALE=1.5 JOBMIX_MODES="kmux together kmux-mps" \
	OUT=$O1 bash "$ROOT/bench/jobmix.sh" >"$TMP/stdout1" 2>&1
check "one GPU: exit 0" [ $? -eq 0 ]
check "  ... the mix once, its names as in the file" \
	[ "$(awk -F, '$1=="kmux" {print $3}' "$O1/jobmix.csv" | tr '\n' ' ')" = \
	  "big_train infer_a hog_a infer_b hog_b app_a mid_train app_b small_train big_infer " ]
check "  ... kmux completed every job" grep -q '^| kmux | .* | 10/10 | 0 | none |' "$O1/jobmix.md"
check "  ... all at once did not" grep -q '^| together | .* | [0-9]/10 | [1-9]: ' "$O1/jobmix.md"
check "  ... an overcommit of the one GPU" \
	grep -q '\*\*33.0 GiB\*\* against 16.0 GiB .*an overcommit' "$O1/jobmix.md"
check "  ... kmux-mps (kmux daemon --mps) completed every job" \
	grep -q '^| kmux-mps | .* | 10/10 | 0 | none |' "$O1/jobmix.md"
check "  ... its daemon ran with --mps and the stand-in control" \
	grep -q '^| kmux-mps | `--placement busyness --mps --mps-control .*mps-control-stub.sh` |' "$O1/jobmix.md"
check "  ... which kmuxd started, made its jobs' MPS daemon and quit" \
	cond 'grep -q "mps: started .*mps-control-stub.sh -d; jobs run as clients" "$O1/jobmix.log" &&
	      sed -n "/^--- MPS logs (kmux-mps)/,/^---/p" "$O1/jobmix.log" | grep -q "stub: started" &&
	      grep -q "the MPS control daemon in .* stopped" "$O1/jobmix.log"'
check "  ... nothing of it left running" [ "$(left)" -eq 0 ]

# --- repeats ---------------------------------------------------------------
O3=$TMP/out3
JOBMIX_SIM=1 JOBMIX_SIM_GPUS=2 JOBMIX_SCALE=0.5 JOBMIX_PLACEMENT_REPS=2 \
	JOBMIX_MODES="kmux kmux-rr" OUT=$O3 bash "$ROOT/bench/jobmix.sh" >"$TMP/stdout3" 2>&1
check "placement repeats (JOBMIX_PLACEMENT_REPS=2, JOBMIX_MODES=\"kmux kmux-rr\"): exit 0" [ $? -eq 0 ]
check "  ... ran the pairs interleaved, the second pair round-robin first" \
	[ "$(sed -n 's/^\[[0-9:]*\] == \([^ ]*\) (.*/\1/p' "$O3/jobmix.log" | tr '\n' ' ')" = \
	  "kmux kmux-rr kmux-rr.2 kmux.2 " ]
for m in kmux kmux-rr; do
	for r in 1 2; do
		check "  ... $m run $r: its 20 rows (mode $m, rep $r)" \
			[ "$(grep -c "^$m,$r," "$O3/jobmix.csv")" -eq 20 ]
	done
done
check "  ... and no other rows (the long modes left out)" \
	[ "$(wc -l <"$O3/jobmix.csv")" -eq 81 ]
check "  ... each run on its own daemon" \
	cond 'grep -q "KMUX_STATE_DIR=\$W/kmux-kmux.2/state build/kmux daemon --placement busyness" "$O3/jobmix.log" &&
	      grep -q "KMUX_STATE_DIR=\$W/kmux-kmux-rr.2/state build/kmux daemon --placement roundrobin" "$O3/jobmix.log"'
check "  ... the report gives each mode's median over its 2 runs, and both runs' makespans" \
	cond 'grep -q "^| kmux | [0-9.]* s (median of 2: [0-9.]*, [0-9.]*) | .* | 40/40 | 0 | none |" "$O3/jobmix.md" &&
	      grep -q "^| kmux-rr | [0-9.]* s (median of 2: [0-9.]*, [0-9.]*) | .* | 40/40 | 0 | none |" "$O3/jobmix.md"'
check "  ... and lists the 4 runs in the order they ran" \
	[ "$(sed -n 's/^| \(kmux[-rr.2]*\) | kmux[-r]* | \([12]\) | \([1-4]\) | .*/\1@\2@\3/p' "$O3/jobmix.md" | tr '\n' ' ')" = \
	  "kmux@1@1 kmux-rr@1@2 kmux-rr.2@2@3 kmux.2@2@4 " ]
# the placement target from the CSV: a run's makespan is its last end; the
# median of two is their mean
want=$(awk -F, 'NR>1 && $8+0 > mk[$1","$2]+0 {mk[$1","$2]=$8}
	END {b=(mk["kmux,1"]+mk["kmux,2"])/2; r=(mk["kmux-rr,1"]+mk["kmux-rr,2"])/2;
	     printf "%.2f", r/b}' "$O3/jobmix.csv")
check "  ... the placement target is median(rr) / median(busyness) = $want, over 2 repeats each" \
	grep -q "^| busyness vs round-robin placement (makespan rr / busyness; medians over 2 repeats each) | ${want}× | ≥ 1.15× |" "$O3/jobmix.md"
check "  ... and each pair's ratio" grep -q '^Placement, repeat by repeat .* 1: .* 2: .*of 2\.$' "$O3/jobmix.md"
check "  ... kmux completes every job, over both runs" \
	grep -q '^| kmux completes every job | 40/40 over 2 runs | all | met |' "$O3/jobmix.md"
check "  ... the commands listed once, for each mode's first run" \
	cond '[ "$(grep -c "^\[kmux\] JOBMIX_REC_DIR=DIR kmux submit" "$O3/jobmix.md")" -eq 20 ] &&
	      ! grep -q "^\[kmux[-rr]*\.2\]" "$O3/jobmix.md"'
check "  ... the exact command has the knobs" \
	grep -q 'JOBMIX_PLACEMENT_REPS=2 JOBMIX_MODES="kmux kmux-rr" bash bench/jobmix.sh' "$O3/jobmix.md"
check "  ... the learning pass ran first (two GPUs, both placements: on by default)" \
	cond 'grep -q "^\[[0-9:]*\] == learn: the mix once through kmux" "$O3/jobmix.log" &&
	      grep -q "^- learning pass (JOBMIX_LEARN): [0-9]* s, 20 profiles, 20/20 jobs exited 0; each kmux run started from a copy" "$O3/jobmix.md"'
check "  ... every job of every kmux run was predicted from its learned profile (kmuxd's log, the CSV)" \
	cond '[ "$(awk -F, "NR>1 {print \$19}" "$O3/jobmix.csv" | tr -d "\r" | sort -u)" = yes ] &&
	      [ "$(grep -c "^| kmux[-rr.2]* | .* | 20/20 | GPU 0: [0-9]*, GPU 1: [0-9]* |$" "$O3/jobmix.md")" -eq 4 ]'
# each measured run started from the same copy: a profile has the learning
# pass's run and its own (2), never another measured run's
runs_of() {
	python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(" ".join(sorted({str(r[0]) for r in db.execute("SELECT runs FROM profiles")})))' "$1"
}
for m in kmux kmux-rr kmux-rr.2 kmux.2; do
	check "  ... $m's database: every profile has 2 runs (the learning pass's and its own)" \
		[ "$(runs_of "$KMUX_BENCH_WORK/kmux-$m/state/kmux.db")" = 2 ]
done
check "  ... the learned copy holds profiles only (no job to recover)" \
	cond '[ "$(python3 -c "import sqlite3; print(sqlite3.connect(\"$KMUX_BENCH_WORK/learned.db\").execute(\"SELECT count(*) FROM jobs\").fetchone()[0])")" = 0 ]'
check "  ... no process of the run is left" [ "$(left)" -eq 0 ]

# bad names and counts: exit 2 before a job runs or a CSV is written
bad() {	# bad WHAT MESSAGE ENV...
	local what=$1 msg=$2 d=$TMP/bad$((++nbad))
	shift 2
	env JOBMIX_SIM=1 JOBMIX_SIM_GPUS=2 OUT=$d "$@" bash "$ROOT/bench/jobmix.sh" >"$d.out" 2>&1
	check "$what: exit 2" [ $? -eq 2 ]
	check "  ... saying so" grep -qF "FATAL: $msg" "$d.out"
	check "  ... before anything ran (no run, no CSV)" \
		cond '! grep -q "^\[[0-9:]*\] == " "$d/jobmix.log" && [ ! -e "$d/jobmix.csv" ]'
}
nbad=0
bad "JOBMIX_MODES=kmux." "bad mode 'kmux.' in JOBMIX_MODES: its repeat '.' is not a whole number" JOBMIX_MODES="kmux kmux."
bad "JOBMIX_MODES=kmux.x" "bad mode 'kmux.x' in JOBMIX_MODES: its repeat '.x' is not" JOBMIX_MODES=kmux.x
bad "JOBMIX_MODES=kmux.0" "bad mode 'kmux.0' in JOBMIX_MODES: its repeat '.0' is not" JOBMIX_MODES=kmux.0
bad "JOBMIX_MODES=kmux.02" "bad mode 'kmux.02' in JOBMIX_MODES: its repeat '.02' is not" JOBMIX_MODES=kmux.02
bad "an unknown mode with a repeat" "bad mode 'kmox.2' in JOBMIX_MODES: no such mode 'kmox'" JOBMIX_MODES="kmux kmox.2"
bad "an unknown mode" "bad mode 'fast' in JOBMIX_MODES: no such mode" JOBMIX_MODES=fast
bad "a mode twice (kmux and kmux.1)" "mode 'kmux' is asked for twice" JOBMIX_MODES="kmux kmux.1"
bad "JOBMIX_PLACEMENT_REPS=0" "JOBMIX_PLACEMENT_REPS='0': " JOBMIX_PLACEMENT_REPS=0
bad "JOBMIX_PLACEMENT_REPS=2 with kmux.2 named too" "mode 'kmux.2' is asked for twice" \
	JOBMIX_PLACEMENT_REPS=2 JOBMIX_MODES="kmux kmux-rr kmux.2"
bad "JOBMIX_PLACEMENT_REPS=2 without kmux" "JOBMIX_PLACEMENT_REPS=2 but JOBMIX_MODES has neither kmux nor kmux-rr" \
	JOBMIX_PLACEMENT_REPS=2 JOBMIX_MODES=together
check "a sweep value with a point is a mode, with a repeat after it" \
	cond 'JOBMIX_SIM=1 JOBMIX_BUDGET_S=30 JOBMIX_MODES="kmux-bm2.5 kmux-bm2.5.3" OUT=$TMP/bm \
		bash "$ROOT/bench/jobmix.sh" >/dev/null 2>&1; grep -q "modes: kmux-bm2.5 kmux-bm2.5.3$" "$TMP/bm/jobmix.log"'

# the budget: a pair that will not fit is skipped whole, and said so
O4=$TMP/out4
JOBMIX_SIM=1 JOBMIX_SIM_GPUS=2 JOBMIX_BUDGET_S=60 JOBMIX_PLACEMENT_REPS=2 \
	JOBMIX_MODES="kmux kmux-rr" OUT=$O4 bash "$ROOT/bench/jobmix.sh" >"$TMP/stdout4" 2>&1
check "a budget too short for a pair: exit 1 (the first pair is not extra)" [ $? -eq 1 ]
check "  ... no run started" [ "$(wc -l <"$O4/jobmix.csv")" -eq 1 ]
check "  ... the log says why, for the pair's first run and its second" \
	cond 'grep -q "== kmux: SKIPPED, budget: [0-9]* s left, its pair with kmux-rr wants 75$" "$O4/jobmix.log" &&
	      grep -q "== kmux-rr: SKIPPED, budget: [0-9]* s left, its pair with kmux wants 75$" "$O4/jobmix.log"'
check "  ... and so does the report" \
	grep -q '^- run kmux-rr.2: \*\*skipped\*\* (budget: [0-9]* s left, its pair with kmux.2 wants 75)' "$O4/jobmix.md"
check "  ... nor the learning pass (it and a run after it want 90)" \
	grep -q "== learn: SKIPPED, budget: [0-9]* s left, it and a run after it want 90$" "$O4/jobmix.log"

JOBMIX_SIM=1 JOBMIX_MIX=$TMP/none.txt OUT=$TMP/out2 bash "$ROOT/bench/jobmix.sh" >"$TMP/bad" 2>&1
check "a missing mix file: exit 1" [ $? -eq 1 ]
check "  ... saying so" grep -q "FATAL: no mix file $TMP/none.txt" "$TMP/bad"
finish
