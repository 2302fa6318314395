#!/usr/bin/env bash
# bench/slurm.sh - issue 7's Measure, on the one-machine test cluster of
# tests/slurm/cluster.sh (two slurmd on loopback, kmuxd on each with
# simulated GPUs; no GPU needed):
#
#   latency    what the SPANK plugin adds to the time from `srun` to task
#              start and to srun's wall time: Slurm without the plugin,
#              with it loaded but unused, and with --kmux-mem=1G,
#              interleaved round by round (bench/slurm/latency.py)
#   placement  with one node made busy, the share of new jobs Slurm sends
#              to the idle node, and how long the weight takes to follow
#              (bench/slurm/placement.py)
#
# Run as root from anywhere, after `make` (it runs `make all slurm`):
#
#     bash bench/slurm.sh
#
# Output under $OUT (default ./out):
#   slurm.md       the tables against the targets (bench/slurm/report.py)
#   meta.txt       date, machine, Slurm version, the knobs
#   latency.csv    one row per srun (variant, round, t0, task's timestamp)
#   rounds.csv     one row per placement round
#   placement.csv  one row per placed job
#   weights.csv    every reading of the two nodes' weights
#   slurm.log      the checks and failures
#   logs/          slurmctld's, each slurmd's and each kmuxd's log
#
# Knobs (environment): SLURM_BENCH_N (60 timed runs a variant),
# SLURM_BENCH_WARMUP (5 rounds, not counted), SLURM_BENCH_ROUNDS (6
# placement rounds), SLURM_BENCH_JOBS (12 jobs a round),
# SLURM_BENCH_SPACING_MS (200: the k-th job of a round starts k * 200 ms
# after the busyness change), SLURM_BENCH_POLL_MS
# (50, weight readings), SLURM_BENCH_PARTS ("latency placement"),
# KMUX_SLURM_PORT (16917: not the tests' port, so both can run).
# Exit 0 when every part ran and its checks held (targets may be missed:
# that is what is measured), 1 otherwise.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
KMUX=$BUILD/kmux
export BUILD
export OUT=${OUT:-./out}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
N=${SLURM_BENCH_N:-60}
WARMUP=${SLURM_BENCH_WARMUP:-5}
ROUNDS=${SLURM_BENCH_ROUNDS:-6}
JOBS=${SLURM_BENCH_JOBS:-12}
SPACING_MS=${SLURM_BENCH_SPACING_MS:-200}
POLL_MS=${SLURM_BENCH_POLL_MS:-50}
PARTS=${SLURM_BENCH_PARTS:-latency placement}
export KMUX_SLURM_PORT=${KMUX_SLURM_PORT:-16917}
LOG=$OUT/slurm.log
: >"$LOG"

. "$ROOT/tests/slurm/cluster.sh"
save_logs() {
	local f
	[ -n "${SC:-}" ] || return 0
	mkdir -p "$OUT/logs"
	cp "$SC"/log/*.log "$OUT/logs/" 2>/dev/null
	for f in "$SC"/kmux/*/state/kmuxd.log; do
		[ -f "$f" ] && cp "$f" "$OUT/logs/kmuxd.$(basename "$(dirname "$(dirname "$f")")").log"
	done
}
trap 'save_logs; cluster_stop' EXIT
cluster_install || { echo "bench/slurm: cannot install $SC_PKGS" >&2; exit 1; }
make -C "$ROOT" --no-print-directory -j2 BUILD="$BUILD" all slurm >>"$LOG" 2>&1 ||
	{ echo "bench/slurm: make all slurm failed (see $LOG)" >&2; exit 1; }
cluster_start >>"$LOG" 2>&1 || { echo "bench/slurm: the cluster did not start (see $LOG)" >&2; exit 1; }

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host: $(uname -srm), $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "slurm: $(sinfo --version), nodes: $(sinfo -h -N -o '%N CPUs=%c' | tr '\n' ' ')"
	echo "kmux: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+dirty')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "knobs: N=$N WARMUP=$WARMUP ROUNDS=$ROUNDS JOBS=$JOBS SPACING_MS=$SPACING_MS POLL_MS=$POLL_MS"
	echo "plugin line: $(cat "$SC/etc/plugstack.conf")"
} >"$OUT/meta.txt"

rc=0
for part in $PARTS; do
	echo "bench/slurm: $part" | tee -a "$LOG"
	case $part in
	latency)
		python3 "$ROOT/bench/slurm/latency.py" --plugstack "$SC/etc/plugstack.conf" \
			--line "$(cat "$SC/etc/plugstack.conf")" --node n1 --n "$N" \
			--warmup "$WARMUP" --csv "$OUT/latency.csv" --log "$LOG" || rc=1
		;;
	placement)
		python3 "$ROOT/bench/slurm/placement.py" --kmux "$KMUX" --sockdir "$SC/kmux" \
			--rounds "$ROUNDS" --jobs "$JOBS" --spacing-ms "$SPACING_MS" --poll-ms "$POLL_MS" \
			--out "$OUT" --log "$LOG" || rc=1
		;;
	*)
		echo "bench/slurm: no part $part" >&2
		rc=1
		;;
	esac
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"
python3 "$ROOT/bench/slurm/report.py" "$OUT" || rc=1
[ "$rc" -eq 0 ] || echo "bench/slurm: a part failed its checks (see $LOG)" >&2
exit "$rc"
