#!/usr/bin/env bash
# bench/exclusive.sh --dry (issue 6): the device script's logic on simcuda
# with a small batch: every mode runs (alone first and alone2 last, in one
# persistent worker each; seq within its fixed share), every command
# succeeds, the regions are taken, and the report has its rows.
. "$(dirname "$0")/lib.sh"
# A test of the script's logic; the sanitizer build's preload would need
# the ASan runtime in every Python command, which the script does not add.
if [ -n "${ASAN_LIB:-}" ]; then
	ok "skipped under the sanitizer build (logic covered by the plain build)"
	finish
fi

OUT=$TMP/out KMUX_BIN=$KMUX KMUX_LIB=$LIBKMUX KMUX_EXCL_COUNT=6 KMUX_EXCL_NS=2 \
	KMUX_EXCL_NONE_N=3 KMUX_EXCL_BUDGET_S=150 KMUX_EXCL_SEQ_S=50 \
	KMUX_EXCL_ALONE_S=40 \
	bash "$ROOT/bench/exclusive.sh" --dry >"$TMP/log" 2>&1
check "exclusive.sh --dry exits 0" [ $? -eq 0 ]
check "under \$OUT: the report, the csv, the log and the tar, nothing more" \
	[ "$(find "$TMP/out" -mindepth 1 -maxdepth 1 ! -name exclusive.png -printf '%f\n' | LC_ALL=C sort | tr '\n' ' ')" = "exclusive-raw.tgz exclusive.csv exclusive.log exclusive.md " ]
# The raw output, from the tar.
mkdir -p "$TMP/raw"
tar -C "$TMP/raw" -xzf "$TMP/out/exclusive-raw.tgz"
R=$TMP/raw/exclusive
md=$TMP/out/exclusive.md
for m in alone seq region2 workers2 none3 alone2; do
	check "report: mode $m ran its 6 commands without failure" \
		grep -Eq "^\| $m \| [0-9]+ \| 6 \| 0 \|" "$md"
done
check "report: inflation rows for the region mode" grep -q "^| region2 | " <(sed -n '/Inflation/,$p' "$md")
check "  ... seq's as information, against the alone passes" grep -q '^| seq (information) | ' "$md"
check "  ... with a met (reproducible kernels) column" grep -q '| met | met (reproducible kernels) |' "$md"
check "  ... and the table over the reproducible kernels" grep -q '^The same over the reproducible kernels only' "$md"
check "report: the A/A table over the six kernels timed in both passes" \
	[ "$(sed -n '/^A\/A:/,/^Kernels left out/p' "$md" | grep -E '^\| [0-9.]+ ms \| ' | awk -F'|' '{s += $3} END {print s}')" = 6 ]
check "modes ran in order: warm alone seq region2 workers2 none3 alone2" \
	[ "$(sed -n 's/^\[[0-9:]*\] \([a-z0-9]*\): -j.*/\1/p' "$R/exclusive.log" | tr '\n' ' ')" = "warm alone seq region2 workers2 none3 alone2 " ]
check "seq had its fixed share (KMUX_EXCL_SEQ_S), alone its cap" \
	grep -q '^\[[0-9:]*\] seq: -j 1, at most 50s' "$R/exclusive.log"
check "  ... and the alone passes one worker, one command at a time" \
	[ "$(python3 -c 'import json, sys; print(len({json.loads(l)["worker_pid"] for f in sys.argv[1:] for l in open(f)}))' "$R/alone/records.jsonl" "$R/alone2/records.jsonl")" = 2 ]
check "report: marked as a dry run" grep -q "DRY RUN" "$md"
check "report: workers2 ran all 6 commands in its workers" grep -Eq "^\| workers2 \| 6 \| 6 \| " "$md"
check "  ... and says what they save per command against region2" grep -q "^workers2 against region2: " "$md"
check "  ... the six commands in at most two worker pids (reused)" \
	[ "$(python3 -c 'import json, sys; print(len({json.loads(l)["worker_pid"] for l in open(sys.argv[1])}) <= 2)' "$R/workers2/records.jsonl")" = True ]
check "the daemon granted regions (alone, seq, region2, workers2, alone2: 30)" \
	[ "$(grep -c 'GPU 0 to pid' "$R/kmuxd.log")" -ge 30 ]
for m in alone region2 workers2 alone2; do
	check "each command's output is packed, and its JSON line says it was exclusive ($m)" \
		[ "$(tar -xzOf "$TMP/out/exclusive-raw.tgz" --wildcards "exclusive/$m/out/*.out" | grep -c '"exclusive": true')" = 6 ]
done
check "the unpacked raw directory is gone (the device returns few files)" \
	[ ! -d "$TMP/out/exclusive" ]
check "the tar holds kmuxd.log and the command lists" \
	test -s "$R/kmuxd.log" -a -s "$R/alone2.cmds" -a -s "$R/seq.cmds"
finish
