#!/usr/bin/env bash
# bench/ptx-cost.sh - the host CPU time of kmux's PTX analysis, this tree's
# src/preload against another commit's, side by side on the PTX that the
# installed CUDA libraries embed.  CPU only: no GPU, no driver.
#
#   bash bench/ptx-cost.sh BASE [LIB...]
#
# BASE is a commit (e.g. HEAD, or the one before a change); LIBs default to
# cuRAND, cuDNN's ops and cuSPARSE under $CUDA_HOME/lib64.  Two things are
# measured, each the median over PC_REPS (default 5) runs of
# bench/ptx/ptx-cost.c, the two builds alternating:
#   scan   what a module load pays under --streams: find the PTX in the
#          fatbins, decompress it, parse every .entry (ptxro_scan_image)
#   solve  what a kernel's launch in a new geometry pays: one range solve
#          (ptxr_solve) per entry that has a range program, in 3 geometries
# First, both builds dump every verdict and every solved range; the run
# stops (exit 1) unless the two dumps are the same byte for byte, so a
# speed-up here never changes a decision.  PC_NEW_SRC (default
# src/preload) is the other side's source directory.
# Raw output goes to PC_OUT (default bench/results/raw/DATE-ptx-cost):
# commands.txt (command, CPU, compiler, libraries' sha256), the timings,
# the dumps' sha256, report.md.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bash bench/ptx-cost.sh BASE [LIB...]" >&2; exit 2; }
BASE=$1
shift
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
REPS=${PC_REPS:-5}
case $REPS in '' | *[!0-9]* | 0) echo "ptx-cost: PC_REPS must be a positive number, not '$REPS'" >&2; exit 2 ;; esac
LIBS=("$@")
if [ ${#LIBS[@]} -eq 0 ]; then
	for l in libcurand.so.10 libcudnn_ops.so.9 libcusparse.so.12; do
		[ -e "$CUDA_HOME/lib64/$l" ] && LIBS+=("$CUDA_HOME/lib64/$l")
	done
fi
[ ${#LIBS[@]} -gt 0 ] || { echo "ptx-cost: no CUDA library to read PTX from under $CUDA_HOME/lib64 (name some)" >&2; exit 1; }
for l in "${LIBS[@]}"; do
	[ -r "$l" ] || { echo "ptx-cost: cannot read $l" >&2; exit 1; }
done
base_rev=$(git rev-parse --short "$BASE^{commit}") ||
	{ echo "ptx-cost: $BASE is not a commit" >&2; exit 2; }
OUT=${PC_OUT:-bench/results/raw/$(date +%F)-ptx-cost}
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Both builds from the same harness and flags; only src/preload differs.
mkdir -p "$TMP/src-base"
git archive "$base_rev" src/preload | tar -x -C "$TMP/src-base"
build() {	# build NAME SRCDIR
	${CC:-gcc} -O2 -std=gnu11 -D_GNU_SOURCE -iquote "$2" -o "$TMP/$1" \
		bench/ptx/ptx-cost.c "$2/ptx-readonly.c" "$2/ptx-range.c" \
		"$2/codec-dl.c" -ldl -lpthread
}
build base "$TMP/src-base/src/preload"
NEW_SRC=${PC_NEW_SRC:-src/preload}
[ -r "$NEW_SRC/ptx-readonly.c" ] || { echo "ptx-cost: no ptx-readonly.c in $NEW_SRC" >&2; exit 2; }
build new "$NEW_SRC"

{
	echo "date: $(date -u +%FT%TZ)"
	echo "command: bash bench/ptx-cost.sh $BASE ${LIBS[*]} (PC_REPS=$REPS)"
	if [ -n "${PC_NEW_SRC:-}" ]; then
		echo "base: $base_rev; new: $NEW_SRC"
	else
		echo "base: $base_rev; new: $(git rev-parse --short HEAD)$(git diff --quiet -- src/preload || echo ' + uncommitted src/preload')"
	fi
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cpus"
	echo "compiler: $(${CC:-gcc} --version | head -n1)"
	sha256sum "${LIBS[@]}"
} > "$OUT/commands.txt"

echo "ptx-cost: dumping every verdict with both builds..."
"$TMP/base" dump "$TMP/base.dump" "${LIBS[@]}"
"$TMP/new" dump "$TMP/new.dump" "${LIBS[@]}"
(cd "$TMP" && sha256sum base.dump new.dump && wc -l base.dump) > "$OUT/dumps.txt"
if ! cmp -s "$TMP/base.dump" "$TMP/new.dump"; then
	diff "$TMP/base.dump" "$TMP/new.dump" | head -n 20 > "$OUT/dump-diff.txt" || true
	echo "ptx-cost: the two builds decide differently (first lines in $OUT/dump-diff.txt)" >&2
	exit 1
fi
echo "ptx-cost: identical verdicts and ranges ($(wc -l < "$TMP/base.dump") lines)"

: > "$OUT/times.txt"
for ((i = 1; i <= REPS; i++)); do
	# Alternate which goes first, so that a drift favours neither.
	if ((i % 2)); then order="base new"; else order="new base"; fi
	for b in $order; do
		"$TMP/$b" time "${LIBS[@]}" | sed "s/^/$b rep$i /" >> "$OUT/times.txt"
	done
done

python3 - "$OUT" "$base_rev" <<'EOF' | tee "$OUT/report.md"
import statistics, sys
out, base = sys.argv[1], sys.argv[2]
runs = {}
for line in open(out + "/times.txt"):
    f = line.split()
    who, what = f[0], f[2].rstrip(":")
    kv = dict(zip(f[3::2], f[4::2]))
    runs.setdefault((what, who), []).append(kv)
print("| file | images | entries | scan s (base) | scan s (new) | new/base "
      "| solves | ms per solve (base) | (new) | new/base |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (what, who) in runs:
    if who != "base":
        continue
    b, n = runs[(what, "base")], runs[(what, "new")]
    med = lambda rs, k: statistics.median(float(r[k]) for r in rs)
    sb, sn = med(b, "scan_cpu_s"), med(n, "scan_cpu_s")
    vb, vn = med(b, "solve_ms_each"), med(n, "solve_ms_each")
    name = what.rsplit("/", 1)[-1]
    ratio = lambda x, y: f"{x / y:.2f}" if y else "-"
    print(f"| {name} | {b[0]['images']} | {b[0]['entries']} | {sb:.3f} | "
          f"{sn:.3f} | {ratio(sn, sb)} | {b[0]['solves']} | {vb:.3f} | "
          f"{vn:.3f} | {ratio(vn, vb)} |")
print(f"\nbase {base}; medians of {len(runs[('all', 'base')])} runs each, "
      "CPU time of the process (CLOCK_PROCESS_CPUTIME_ID).")
EOF
