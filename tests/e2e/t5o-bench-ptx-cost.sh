#!/usr/bin/env bash
# bench/ptx-cost.sh without CUDA's libraries: the fuzz corpus's fatbins
# stand in for them.  Two builds that decide the same give a report with a
# row per file; two that decide differently stop the run before any timing
# (exit 1, the first differing lines kept); a bad BASE, PC_REPS or source
# directory is a usage error (2), an unreadable file an error (1).
. "$(dirname "$0")/lib.sh"

cond() { eval "$1"; }
cd "$ROOT" || exit 1
FILES=(tests/fuzz/corpus-ptx/zstd.fatbin tests/fuzz/corpus-ptx/image_pipeline-none.fatbin)

PC_REPS=2 PC_OUT=$TMP/same bash bench/ptx-cost.sh HEAD "${FILES[@]}" >"$TMP/same.console" 2>&1
rc=$?
check "HEAD against this tree: exit 0 ($rc)" [ "$rc" = 0 ]
check "  ... the two builds' verdicts were compared and are the same" \
	grep -q "identical verdicts and ranges" "$TMP/same.console"
check "  ... a row for each file and one for all, with both sides' medians" \
	cond '[ "$(grep -cE "^\| (zstd.fatbin|image_pipeline-none.fatbin|all) \| [0-9]+ \| [1-9][0-9]* \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|" "$TMP/same/report.md")" = 3 ]'
check "  ... each build ran PC_REPS times, alternating" \
	cond '[ "$(grep -c "^base rep[12] all:" "$TMP/same/times.txt")" = 2 ] &&
	      [ "$(grep -c "^new rep[12] all:" "$TMP/same/times.txt")" = 2 ] &&
	      [ "$(sed -n "1s/ .*//p" "$TMP/same/times.txt")" = base ] &&
	      [ "$(grep -m1 "rep2" "$TMP/same/times.txt" | cut -d" " -f1)" = new ]'
check "  ... commands.txt names the command, the base and each file's sha256" \
	cond 'grep -q "^command: bash bench/ptx-cost.sh HEAD" "$TMP/same/commands.txt" &&
	      grep -q "^base: $(git rev-parse --short HEAD)" "$TMP/same/commands.txt" &&
	      [ "$(grep -c "  tests/fuzz/corpus-ptx/" "$TMP/same/commands.txt")" = 2 ]'

# A source that proves less: "add" is no longer an instruction it knows.
mkdir -p "$TMP/worse"
cp src/preload/*.c src/preload/*.h "$TMP/worse/"
sed -i 's/PURE_OP("add"), //' "$TMP/worse/ptx-readonly.c"
PC_NEW_SRC=$TMP/worse PC_REPS=1 PC_OUT=$TMP/diff bash bench/ptx-cost.sh HEAD "${FILES[@]}" >"$TMP/diff.console" 2>&1
rc=$?
check "a build that decides differently: exit 1 ($rc)" [ "$rc" = 1 ]
check "  ... said, with the first differing lines kept and nothing timed" \
	cond 'grep -q "decide differently" "$TMP/diff.console" &&
	      grep -q "^[<>] .*entry" "$TMP/diff/dump-diff.txt" && [ ! -e "$TMP/diff/times.txt" ]'

PC_REPS=1 PC_OUT=$TMP/b1 bash bench/ptx-cost.sh no-such-rev "${FILES[@]}" >"$TMP/b1.console" 2>&1
rc=$?
check "a BASE that is not a commit: exit 2 ($rc)" cond '[ "$rc" = 2 ] && grep -q "not a commit" "$TMP/b1.console"'
PC_REPS=3x PC_OUT=$TMP/b2 bash bench/ptx-cost.sh HEAD "${FILES[@]}" >"$TMP/b2.console" 2>&1
rc=$?
check "PC_REPS=3x: exit 2 ($rc)" cond '[ "$rc" = 2 ] && grep -q "PC_REPS must be" "$TMP/b2.console"'
PC_NEW_SRC=$TMP/nowhere PC_REPS=1 PC_OUT=$TMP/b3 bash bench/ptx-cost.sh HEAD "${FILES[@]}" >"$TMP/b3.console" 2>&1
rc=$?
check "a PC_NEW_SRC without the sources: exit 2 ($rc)" cond '[ "$rc" = 2 ] && grep -q "no ptx-readonly.c in" "$TMP/b3.console"'
PC_REPS=1 PC_OUT=$TMP/b4 bash bench/ptx-cost.sh HEAD "$TMP/missing.so" >"$TMP/b4.console" 2>&1
rc=$?
check "a file that is not there: exit 1 ($rc)" cond '[ "$rc" = 1 ] && grep -q "cannot read $TMP/missing.so" "$TMP/b4.console"'
bash bench/ptx-cost.sh >"$TMP/b5.console" 2>&1
rc=$?
check "no BASE: usage, exit 2 ($rc)" cond '[ "$rc" = 2 ] && grep -q "^usage:" "$TMP/b5.console"'
finish
