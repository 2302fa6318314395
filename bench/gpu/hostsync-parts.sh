#!/usr/bin/env bash
# hostsync-parts.sh - where host_sync's gap to its hand-written version goes
# (issue 3).  A diagnostic, not a claim: it runs, side by side in rounds with
# the order rotated, bench/apps/host_sync as shipped (plain, under kmux run
# --streams N, expert) and a build without the step's closing
# cudaStreamSynchronize(0) (-DHOST_SYNC_TAIL=0; same results, checked by
# checksum), plain and under kmux.  If kmux on the build without it comes
# within a few percent of the expert, that one synchronization, whose
# meaning kmux keeps, is the gap.  The "-nora" modes run kmux with
# KMUX_READAHEAD=0 (no read-aheads, docs/design-streams.md), side by side.
# "expert-tail" is the expert with the plain program's closing
# synchronization kept (-DHOST_SYNC_EXPERT_TAIL=1: each of its streams
# synchronized at the step's end): what that meaning costs when paid by hand.
#
# Usage (on the GPU machine, from the repo root, build/ carried):
#   OUT=$OUT/hs bash bench/gpu/hostsync-parts.sh
# Knobs: HS_ROUNDS (7), HS_N (16), HS_ARGS ("--reps 7 --warmup 3"),
# HS_MODES (a subset of the modes, in order; default all).
# Writes $OUT/hostsync-parts.{log,csv,md}.
set -u
# shellcheck source=bench/gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/hostsync-parts.log
CSV=$OUT/hostsync-parts.csv
MD=$OUT/hostsync-parts.md
ROUNDS=${HS_ROUNDS:-7}
N=${HS_N:-16}
read -r -a ARGS <<<"${HS_ARGS:---reps 7 --warmup 3}"
: >"$LOG"
echo "round,mode,ms,wall_ms,checksum" >"$CSV"

B=$WORK/bin
for v in 1 0; do
	# shellcheck disable=SC2086  # NVCCFLAGS is a word list
	"$NVCC" $NVCCFLAGS -DHOST_SYNC_TAIL=$v "$ROOT/bench/apps/host_sync.cu" \
		-o "$B/host_sync_tail$v" >>"$LOG" 2>&1 ||
		{ log "hostsync-parts: nvcc failed for HOST_SYNC_TAIL=$v (see $LOG)"; exit 1; }
done
# shellcheck disable=SC2086
"$NVCC" $NVCCFLAGS -DHOST_SYNC_EXPERT_TAIL=1 "$ROOT/bench/apps/host_sync.cu" \
	-o "$B/host_sync_etail" >>"$LOG" 2>&1 ||
	{ log "hostsync-parts: nvcc failed for HOST_SYNC_EXPERT_TAIL=1 (see $LOG)"; exit 1; }

# mode -> command words
mode_cmd() {
	case $1 in
	plain) echo "$B/host_sync_tail1 plain" ;;
	kmux) echo "$KMUX_BIN run --streams $N -- $B/host_sync_tail1 plain" ;;
	expert) echo "$B/host_sync_tail1 expert" ;;
	expert-tail) echo "$B/host_sync_etail expert" ;;
	notail-plain) echo "$B/host_sync_tail0 plain" ;;
	notail-kmux) echo "$KMUX_BIN run --streams $N -- $B/host_sync_tail0 plain" ;;
	kmux-nora) echo "env KMUX_READAHEAD=0 $KMUX_BIN run --streams $N -- $B/host_sync_tail1 plain" ;;
	notail-kmux-nora) echo "env KMUX_READAHEAD=0 $KMUX_BIN run --streams $N -- $B/host_sync_tail0 plain" ;;
	esac
}
MODES=(plain kmux expert expert-tail notail-plain notail-kmux kmux-nora notail-kmux-nora)
# HS_MODES="plain kmux expert expert-tail" runs a subset.
if [ -n "${HS_MODES:-}" ]; then read -r -a MODES <<<"$HS_MODES"; fi

for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < ${#MODES[@]}; i++)); do
		m=${MODES[$(((i + r) % ${#MODES[@]}))]}
		read -r -a cmd <<<"$(mode_cmd "$m")"
		out=$(LD_LIBRARY_PATH="$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			KMUX_LOG=info timeout 60 "${cmd[@]}" "${ARGS[@]}" 2>&1)
		rc=$?
		printf '### round %d %s rc=%d: %s %s\n%s\n' "$r" "$m" "$rc" "${cmd[*]}" \
			"${ARGS[*]}" "$out" >>"$LOG"
		ms=$(sed -n 's/^RESULT .* ms=\([0-9.]*\) wall_ms=\([0-9.]*\).*/\1,\2/p' <<<"$out")
		ck=$(sed -n 's/^CHECKSUM .*value=\(0x[0-9a-f]*\).*/\1/p' <<<"$out")
		if [ "$rc" -ne 0 ] || [ -z "$ms" ] || ! grep -q '^CHECK ok' <<<"$out"; then
			log "hostsync-parts: round $r $m failed (rc $rc); see $LOG"
			ms=","
		fi
		echo "$r,$m,$ms,$ck" >>"$CSV"
	done
	log "hostsync-parts: round $((r + 1))/$ROUNDS done"
done

{
	echo "# host_sync: where the gap to the expert goes ($(date -u +%F), $(gpu_line))"
	echo
	echo "Rounds: $ROUNDS, order rotated each round; each run: ${ARGS[*]}; kmux: --streams $N."
	echo
	python3 - "$CSV" "${MODES[@]}" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
modes = sys.argv[2:]
ms, sums = {}, {}
for r in rows:
    if r["ms"]:
        ms.setdefault(r["mode"], []).append(float(r["ms"]))
        sums.setdefault(r["mode"], set()).add(r["checksum"])
med = {m: statistics.median(v) for m, v in ms.items()}
print("| mode | median ms | min..max | runs | / expert | checksums |")
print("|---|---|---|---|---|---|")
for m in modes:
    if m not in med:
        print(f"| {m} | - | - | 0 | - | - |")
        continue
    rel = med[m] / med["expert"] if "expert" in med else float("nan")
    print(f"| {m} | {med[m]:.4f} | {min(ms[m]):.4f}..{max(ms[m]):.4f} | {len(ms[m])} "
          f"| {rel:.3f} | {' '.join(sorted(sums[m]))} |")
print()
# per-round ratios, so that drift between rounds cancels
by = {}
for r in rows:
    if r["ms"]:
        by.setdefault(r["round"], {})[r["mode"]] = float(r["ms"])
for a, b in [("kmux", "expert"), ("kmux", "expert-tail"), ("expert-tail", "expert"),
             ("notail-kmux", "expert"), ("kmux", "notail-kmux"),
             ("kmux-nora", "expert"), ("notail-kmux-nora", "expert"),
             ("kmux", "kmux-nora"), ("notail-kmux", "notail-kmux-nora")]:
    q = [d[a] / d[b] for d in by.values() if a in d and b in d]
    if q:
        print(f"- {a} / {b}: median over rounds {statistics.median(q):.3f} "
              f"({min(q):.3f}..{max(q):.3f}, {len(q)} rounds)")
EOF
	echo
	echo "Read-aheads (kmux's exit line, first run of each kmux mode):"
	echo
	for m in kmux notail-kmux kmux-nora notail-kmux-nora; do
		[[ " ${MODES[*]} " == *" $m "* ]] || continue
		printf -- '- %s: %s\n' "$m" "$(awk -v m="$m" '$1 == "###" && $4 == m {f = 1; next}
			$1 == "###" {f = 0} f && /read ahead/ {sub(/.*read ahead/, "read ahead"); print; exit}' "$LOG")"
	done
	echo
	echo "Commands (\$W: scratch dir):"
	echo
	for m in "${MODES[@]}"; do echo "    $(mode_cmd "$m" | shorten_cmds) ${ARGS[*]}"; done
} >"$MD"
cat "$MD"
