#!/usr/bin/env bash
# bench/jobmix.sh without a GPU (JOBMIX_SIM=1): stand-in jobs on simcuda over
# two simulated GPUs, all five modes and a --busy-max sweep run, so that the
# orchestration, the private kmuxd and its two placements, the stand-in MPS
# control, the parsing and the report are exercised before the one GPU run;
# then one GPU, two modes, for the sizing.  Checks what is deterministic:
# every mode ran every job, kmux completed all (it never commits more than a
# GPU holds, and the undeclared heavy jobs wait to grow rather than fail),
# all at once lost jobs to out of memory, the exclusive peaks make the mix
# an overcommit, MPS was started and quit, nothing is left running.
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
JOBMIX_SIM=1 JOBMIX_SIM_GPUS=2 JOBMIX_SCALE=0.5 JOBMIX_BUSY_SWEEP=2.0 OUT=$O \
	bash "$ROOT/bench/jobmix.sh" >"$TMP/stdout" 2>&1
rc=$?
check "JOBMIX_SIM=1 on two GPUs: exit 0" [ "$rc" -eq 0 ]
for f in jobmix.log jobmix.csv jobmix.md; do
	check "  ... wrote $f" [ -s "$O/$f" ]
done
check "  ... and nothing else (no subfolders)" \
	[ "$(find "$O" -mindepth 1 ! -name 'jobmix.*' | wc -l)" -eq 0 ]
for m in kmux kmux-rr exclusive together mps kmux-bm2.0; do
	check "mode $m: 20 rows in the CSV (the 10-job mix once per GPU)" \
		[ "$(grep -c "^$m," "$O/jobmix.csv")" -eq 20 ]
done
check "every mode started every job (a status for each, none not-run)" \
	[ "$(awk -F, 'NR>1 && ($9=="not-run" || $9=="") ' "$O/jobmix.csv" | wc -l)" -eq 0 ]
check "kmux completed every job" grep -q '^| kmux | .* | 20/20 | 0 | none |' "$O/jobmix.md"
check "kmux --placement roundrobin too" grep -q '^| kmux-rr | .* | 20/20 | 0 | none |' "$O/jobmix.md"
check "kmux --busy-max 2.0 too" grep -q '^| kmux-bm2.0 | .* | 20/20 | 0 | none |' "$O/jobmix.md"
check "  ... with that option" grep -q '^| kmux-bm2.0 | `--placement busyness --busy-max 2.0` |' "$O/jobmix.md"
check "exclusive completed every job" grep -q '^| exclusive | .* | 20/20 | 0 | none |' "$O/jobmix.md"
check "all at once lost jobs to out of memory, and the report says which" \
	grep -q '^| together | .* | [0-9]*/20 | [1-9][0-9]*: [a-z_]*_[ab][,|]' "$O/jobmix.md"
check "kmux's undeclared jobs grew, none was refused" \
	grep -q '^| kmux | `--placement busyness` | [1-9][0-9]* grew, [0-9]* waited first, 0 refused |' "$O/jobmix.md"
check "kmux jobs ran on both GPUs" \
	[ "$(awk -F, '$1=="kmux" {print $5}' "$O/jobmix.csv" | sort -u | tr '\n' ' ')" = "0 1 " ]
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
JOBMIX_SIM=1 JOBMIX_SIM_GPUS=1 JOBMIX_SCALE=0.5 JOBMIX_MODES="kmux together kmux-mps" \
	OUT=$O1 bash "$ROOT/bench/jobmix.sh" >"$TMP/stdout1" 2>&1
check "one GPU: exit 0" [ $? -eq 0 ]
check "  ... the mix once, its names as in the file" \
	[ "$(awk -F, '$1=="kmux" {print $2}' "$O1/jobmix.csv" | tr '\n' ' ')" = \
	  "big_train infer_a hog_a infer_b hog_b app_a mid_train app_b small_train big_infer " ]
check "  ... kmux completed every job" grep -q '^| kmux | .* | 10/10 | 0 | none |' "$O1/jobmix.md"
check "  ... all at once did not" grep -q '^| together | .* | [0-9]/10 | [1-9]: ' "$O1/jobmix.md"
check "  ... an overcommit of the one GPU" \
	grep -q '\*\*33.0 GiB\*\* against 16.0 GiB .*an overcommit' "$O1/jobmix.md"
check "  ... kmux-mps (kmux daemon --mps) completed every job" \
	grep -q '^| kmux-mps | .* | 10/10 | 0 | none |' "$O1/jobmix.md"
check "  ... its daemon ran with --mps and the stand-in control" \
	grep -q '^| kmux-mps | `--placement busyness --mps --mps-control .*nvidia-cuda-mps-control` |' "$O1/jobmix.md"
check "  ... which kmuxd started, made its jobs' MPS daemon and quit" \
	cond 'grep -q "mps: started .*nvidia-cuda-mps-control -d; jobs run as clients" "$O1/jobmix.log" &&
	      sed -n "/^--- MPS logs (kmux-mps)/,/^---/p" "$O1/jobmix.log" | grep -q "stub: started" &&
	      grep -q "the MPS control daemon in .* stopped" "$O1/jobmix.log"'
check "  ... nothing of it left running" [ "$(left)" -eq 0 ]

JOBMIX_SIM=1 JOBMIX_MIX=$TMP/none.txt OUT=$TMP/out2 bash "$ROOT/bench/jobmix.sh" >"$TMP/bad" 2>&1
check "a missing mix file: exit 1" [ $? -eq 1 ]
check "  ... saying so" grep -q "FATAL: no mix file $TMP/none.txt" "$TMP/bad"
finish
