#!/usr/bin/env bash
# bench/memory.sh's dry mode (issue 5 (a)): the context's own footprint is
# measured in the run (`memory context` standing in for ctxonly, under none
# and under kmux, before any app), and the report keeps the whole-process
# peaks as they were and adds the memory objects' peak (whole-process peak
# minus the median context of the matching mode) and the 30% target judged
# on both.  The fake sampler's readings come from KMUX_MEMBENCH_DRY_MIB, so
# every figure below is arithmetic the script must get right.
. "$(dirname "$0")/lib.sh"
# The script runs build/'s binaries: only in the plain build's pass.
if [ "$BUILD" != "$ROOT/build" ]; then
	ok "skipped outside the plain build (logic covered there)"
	finish
fi

O=$TMP/out
OUT=$O KMUX_MEMBENCH_DRY=1 KMUX_MEMBENCH_REPS=1 KMUX_MEMBENCH_BUDGET_S=120 \
	KMUX_MEMBENCH_DRY_MIB="context:none:1=520 context:none:2=531 context:none:3=528
		context:kmux=540 memory-objects:none=849 memory-objects:lazy=850
		memory-objects:evict-half=673 memory-objects:evict-sweep-q4=600" \
	bash "$ROOT/bench/memory.sh" >"$TMP/stdout" 2>&1
rc=$?
md=$O/memory.md
check "memory.sh dry: exit 0 ($rc)" eval '[ "$rc" = 0 ] || { tail -n 20 "$TMP/stdout"; false; }'
check "the context ran 3 times under none and kmux, alternately, before any app" \
	[ "$(sed -n 's/^\$ \[\([a-z-]*\) \([a-z-]*\) \([0-9]\)[] ].*/\1 \2 \3/p' "$O/memory.log" | head -n 7 | tr '\n' ,)" = \
		"context none 1,context kmux 1,context none 2,context kmux 2,context none 3,context kmux 3,memory-objects none 0," ]
# run_tail NAME: the output tail the log holds for the run "[NAME]".
run_tail() { sed -n "/^\$ \[$1\]/,/^\\$ /p" "$O/memory.log" | sed 1d; }
check "  ... its kmux runs under kmux run --memory=lazy (the preload's memory line)" \
	eval 'run_tail "context kmux 1" | grep -q "^    kmux: memory: pid [0-9]*: lazy;"'
check "  ... and its none runs without kmux" \
	eval 'run_tail "context none 1" | grep -q "^    context ok" && ! run_tail "context none 1" | grep -q "kmux:"'
check "the whole-process table is as before (first, unchanged)" \
	grep -q "^| memory-objects | 849 | 850 | 673 | +0.1% | -20.7% | " "$md"
check "  ... and comes before the memory objects' tables" \
	[ "$(grep -n "^## (a) peak device memory" "$md" | cut -d: -f1)" -lt "$(grep -n "^### Context footprint" "$md" | cut -d: -f1)" ]
check "the rule in one line" \
	grep -q "^Rule: memory objects peak = whole-process peak - median context footprint of the matching mode (none's for none, kmux's for lazy and evict)" "$md"
check "the context figures: the median of each mode's runs (none 520 531 528 -> 528)" \
	grep -q "^| none (no kmux) | 528 | 520 531 528 | 0 |" "$md"
check "  ... kmux's" grep -q '^| `kmux run --memory=lazy` | 540 | 540 540 540 | 0 |' "$md"
check "memory objects: none - none's context, lazy/evict - kmux's (321, 310, 133)" \
	grep -q "^| memory-objects | 321 | 310 | 133 | -3.4% | -58.6% |$" "$md"
check "the target judged on both figures, side by side" \
	grep -q "^| memory-objects | +0.1% / -20.7% | no | no | -3.4% / -58.6% | yes | yes |$" "$md"
check "the sweep shows both figures (600 whole, 60 objects)" \
	grep -q "^| memory-objects | 1/4 | [0-9]* | 600 | -29.3% | 60 | -81.3% | " "$md"
check "the header names the context program and its repeats" \
	grep -q '^- context: `ctxonly --hold-ms 500` (bench/memory/ctxonly.cu, .* 3 times under none and under `kmux run --memory=lazy`' "$md"

# A failed context run leaves the memory objects' figure unknown, never
# assumed: a context program that fails.
OUT=$TMP/out2 KMUX_MEMBENCH_DRY=1 KMUX_MEMBENCH_REPS=1 KMUX_MEMBENCH_CTX_REPS=1 \
	KMUX_MEMBENCH_SWEEP=none KMUX_MEMBENCH_DRY_CTX_CMD=/bin/false \
	KMUX_MEMBENCH_DRY_MIB="context:none=500 context:kmux=500 memory-objects:none=849" \
	bash "$ROOT/bench/memory.sh" >"$TMP/stdout2" 2>&1
rc=$?
check "a failing context run is a failure (exit $rc)" [ "$rc" != 0 ]
check "  ... its median is n/a, the objects n/a, the whole-process peak still there" \
	eval 'grep -q "^| none (no kmux) | n/a | 500 | 1 |" "$TMP/out2/memory.md" &&
		grep -q "^| memory-objects | n/a | n/a | n/a | n/a | n/a |$" "$TMP/out2/memory.md" &&
		grep -q "^| memory-objects | 849 | " "$TMP/out2/memory.md"'
# KMUX_MEMBENCH_SWEEP set and empty: no sweep at all (it used to fall back
# to the default list).
OUT=$TMP/out3 KMUX_MEMBENCH_DRY=1 KMUX_MEMBENCH_REPS=0 KMUX_MEMBENCH_CTX_REPS=1 \
	KMUX_MEMBENCH_SWEEP= \
	KMUX_MEMBENCH_DRY_MIB="context:none=500 context:kmux=500 memory-objects:none=849" \
	bash "$ROOT/bench/memory.sh" >"$TMP/stdout3" 2>&1
rc=$?
check "an empty KMUX_MEMBENCH_SWEEP: exit 0 ($rc)" [ "$rc" = 0 ]
check "  ... (a) ran" grep -q '^\$ \[memory-objects lazy 0\]' "$TMP/out3/memory.log"
check "  ... and no sweep run" eval '! grep -q "evict-sweep" "$TMP/out3/memory.log"'
# KMUX_MEMBENCH_COST_MODES: a subset runs only those modes in (c); an
# unknown name is a usage error before anything runs.
OUT=$TMP/out4 KMUX_MEMBENCH_DRY=1 KMUX_MEMBENCH_REPS=1 KMUX_MEMBENCH_CTX_REPS=1 \
	KMUX_MEMBENCH_SWEEP= KMUX_MEMBENCH_COST_MODES="none lazy" KMUX_MEMBENCH_PIN=0 \
	KMUX_MEMBENCH_DRY_MIB="context:none=500 context:kmux=500 memory-objects:none=849" \
	bash "$ROOT/bench/memory.sh" >"$TMP/stdout4" 2>&1
rc=$?
check "KMUX_MEMBENCH_COST_MODES='none lazy': exit 0 ($rc)" [ "$rc" = 0 ]
check "  ... (c) ran none and lazy" eval 'grep -q "^\$ \[memory-objects none 1 " "$TMP/out4/memory.log" &&
		grep -q "^\$ \[memory-objects lazy 1 " "$TMP/out4/memory.log"'
check "  ... and not quota" eval '! grep -q "^\$ \[memory-objects quota 1 " "$TMP/out4/memory.log"'
check "  ... KMUX_MEMBENCH_PIN=0: the report says every run was pinned" \
	grep -qx -- '- CPU pinning: every run under `taskset -c 0`' "$TMP/out4/memory.md"
OUT=$TMP/out6 KMUX_MEMBENCH_DRY=1 KMUX_MEMBENCH_PIN=x7 \
	bash "$ROOT/bench/memory.sh" >"$TMP/stdout6" 2>&1
rc=$?
check "a CPU list taskset refuses: exit 2 ($rc), named" eval '[ "$rc" = 2 ] && grep -q "KMUX_MEMBENCH_PIN=.x7." "$TMP/stdout6"'
check "  ... before any run" eval '! grep -q "^\$ " "$TMP/out6/memory.log" 2>/dev/null'
# Library B (KMUX_MEMBENCH_LIB_B): lazy-b runs kmux run with KMUX_LIBRARY
# set to it, in the same rounds; the report has a column for every mode
# and the per-round ratios.  Without a readable B: usage error.
cp "$ROOT/build/libkmux.so" "$TMP/libkmux-b.so"
OUT=$TMP/out7 KMUX_MEMBENCH_DRY=1 KMUX_MEMBENCH_REPS=2 KMUX_MEMBENCH_CTX_REPS=1 \
	KMUX_MEMBENCH_SWEEP= KMUX_MEMBENCH_COST_MODES="none lazy lazy-b" \
	KMUX_MEMBENCH_LIB_B=$TMP/libkmux-b.so \
	KMUX_MEMBENCH_DRY_MIB="context:none=500 context:kmux=500 memory-objects:none=849" \
	bash "$ROOT/bench/memory.sh" >"$TMP/stdout7" 2>&1
rc=$?
check "KMUX_MEMBENCH_LIB_B with lazy-b: exit 0 ($rc)" [ "$rc" = 0 ]
check "  ... lazy-b ran under library B" \
	eval 'run_tail() { sed -n "/^\$ \[\$1\]/,/^\\$ /p" "$TMP/out7/memory.log" | sed 1d; }
		grep -q "^\$ \[memory-objects lazy-b 2 " "$TMP/out7/memory.log"'
check "  ... (c) has a column for each mode" \
	grep -q "^| app | reps | none | lazy | lazy, library B | lazy vs none | lazy-b vs none | failures |$" "$TMP/out7/memory.md"
check "  ... and the per-round ratios (2 rounds) with the ratio of medians' interval" \
	grep -q "^| memory-objects | lazy-b | 2 | [-+][0-9.]*% | [-+][0-9.]*% .. [-+][0-9.]*% | [-+][0-9.]*% \[[-+][0-9.]*%, [-+][0-9.]*%\] |$" "$TMP/out7/memory.md"
OUT=$TMP/out8 KMUX_MEMBENCH_DRY=1 KMUX_MEMBENCH_COST_MODES="none lazy-b" \
	bash "$ROOT/bench/memory.sh" >"$TMP/stdout8" 2>&1
rc=$?
check "lazy-b without KMUX_MEMBENCH_LIB_B: exit 2 ($rc), said" \
	eval '[ "$rc" = 2 ] && grep -q "lazy-b needs KMUX_MEMBENCH_LIB_B" "$TMP/stdout8"'
OUT=$TMP/out5 KMUX_MEMBENCH_DRY=1 KMUX_MEMBENCH_COST_MODES="none fast" \
	bash "$ROOT/bench/memory.sh" >"$TMP/stdout5" 2>&1
rc=$?
check "an unknown cost mode: exit 2 ($rc), named" eval '[ "$rc" = 2 ] && grep -q "unknown mode .fast." "$TMP/stdout5"'
check "  ... before any run" eval '! grep -q "^\$ " "$TMP/out5/memory.log" 2>/dev/null'
finish
