#!/usr/bin/env bash
# The profiling build (make prof: build/prof/libkmux.so, selfprof.c) counts
# every call of the preload's functions and scripts/selfprof-report.py
# names them: a launch-bound program's launches are all there, in the
# wrapper and, under KMUX_STREAMS, in the scheduler's path; the ordinary
# library has no probes; bad input to the report is an error.  Skipped
# under the sanitizer build (no profiling build there).
. "$(dirname "$0")/lib.sh"

PLIB=$BUILD/prof/libkmux.so
REPORT=("${PYTHON:-python3}" "$ROOT/scripts/selfprof-report.py")
if [ -n "${ASAN_LIB:-}" ]; then
	echo "  skip $T_NAME: sanitizer build"
	finish
fi
check "the profiling build exists" [ -e "$PLIB" ]
check "the ordinary library has no probes" \
	bash -c "! nm '$LIBKMUX' | grep -q __cyg_profile_func_enter"

export SIMCUDA_DISCARD=1
KMUX_SELFPROF=$TMP/bare LD_PRELOAD=$PLIB "$PROGS/launch-cost" torch 2000 2 >"$TMP/bare.out" 2>&1
check "bare: the program runs" grep -q '^torch ns/launch [0-9]' "$TMP/bare.out"
n=$(ls "$TMP"/bare.* 2>/dev/null | grep -vc 'bare.out$')
check "bare: one table, named by pid ($n)" [ "$n" = 1 ]
"${REPORT[@]}" --top 200 "$PLIB" "$TMP"/bare.[0-9]* >"$TMP/bare.rep" 2>&1
check "bare: the report names cuLaunchKernel with the 4000 launches" \
	grep -Eq '^cuLaunchKernel +4000 ' "$TMP/bare.rep"
check "bare: nothing of the scheduler ran" \
	bash -c "! grep -Eq '^(launch_kernel|streams_run) ' '$TMP/bare.rep'"

KMUX_STREAMS=4 KMUX_SELFPROF=$TMP/st4 LD_PRELOAD=$PLIB "$PROGS/launch-cost" torch 2000 2 >"$TMP/st4.out" 2>&1
"${REPORT[@]}" --top 300 "$PLIB" "$TMP"/st4.[0-9]* >"$TMP/st4.rep" 2>&1
check "KMUX_STREAMS=4: every launch went through launch_kernel" \
	grep -Eq '^launch_kernel +4000 ' "$TMP/st4.rep"
# Passing through (the "GPU" discards launches: kmux finds it idle), a
# launch takes the short way: issued as submitted, not described first.
# How many depends on the host's load (a busy simulated GPU ends the
# stretch), not on whether the way exists.
quick=$(awk '$1 == "launch_call_issue" { print $2 }' "$TMP/st4.rep")
full=$(awk '$1 == "launch_op_begin" { print $2 }' "$TMP/st4.rep")
check "KMUX_STREAMS=4: passing through, launches take the short way ($quick) and the rest the full one (${full:-0})" \
	bash -c "[ ${quick:-0} -gt 0 ] && [ $(( ${quick:-0} + ${full:-0} )) -eq 4000 ]"
KMUX_STREAMS=4 KMUX_PASS_THROUGH=0 KMUX_SELFPROF=$TMP/np LD_PRELOAD=$PLIB "$PROGS/launch-cost" torch 2000 2 >"$TMP/np.out" 2>&1
"${REPORT[@]}" --top 300 "$PLIB" "$TMP"/np.[0-9]* >"$TMP/np.rep" 2>&1
check "KMUX_PASS_THROUGH=0: every launch is described and scheduled" \
	bash -c "grep -Eq '^launch_op_begin +4000 ' '$TMP/np.rep' && ! grep -q '^launch_call_issue ' '$TMP/np.rep'"
"${REPORT[@]}" --diff --match '^(cuLaunchKernel|launch_kernel)$' "$PLIB" \
	"$TMP"/bare.[0-9]* "$TMP"/st4.[0-9]* >"$TMP/diff" 2>&1
check "--diff: both sides of cuLaunchKernel, launch_kernel only on one" \
	bash -c "grep -Eq '^cuLaunchKernel +4000 +[0-9.]+ +4000 ' '$TMP/diff' &&
		 grep -Eq '^launch_kernel +0 +0.0 +4000 ' '$TMP/diff'"

KMUX_SELFPROF=$TMP/none LD_PRELOAD=$PLIB /bin/true
check "a process that launched no kernel (a helper) writes no table" \
	bash -c "! ls '$TMP'/none.* >/dev/null 2>&1"
KMUX_SELFPROF_ALL=1 KMUX_SELFPROF=$TMP/all LD_PRELOAD=$PLIB /bin/true
check "  ... unless KMUX_SELFPROF_ALL is set" \
	bash -c "ls '$TMP'/all.[0-9]* >/dev/null 2>&1"
KMUX_SELFPROF=/nonexistent/dir/x LD_PRELOAD=$PLIB "$PROGS/launch-cost" torch 1000 1 \
	>"$TMP/nodir" 2>&1
rc=$?
check "an unwritable KMUX_SELFPROF: the program's exit stands, the file is named" \
	eval '[ $rc -eq 0 ] && grep -q "kmux: cannot write /nonexistent/dir/x\." "$TMP/nodir"'

echo "not a table" >"$TMP/junk"
"${REPORT[@]}" "$PLIB" "$TMP/junk" >"$TMP/r1" 2>&1
rc=$?
check "report: not a selfprof file is exit 1, named" \
	eval '[ $rc -eq 1 ] && grep -q "junk: not a kmux selfprof file" "$TMP/r1"'
"${REPORT[@]}" "$PLIB" "$TMP/missing" >"$TMP/r2" 2>&1
rc=$?
check "report: a missing file is exit 1, named" \
	eval '[ $rc -eq 1 ] && grep -q "cannot read .*missing" "$TMP/r2"'
{ head -2 "$TMP"/bare.[0-9]*; echo "0x10 twelve 3 4"; } >"$TMP/bad"
"${REPORT[@]}" "$PLIB" "$TMP/bad" >"$TMP/r3" 2>&1
rc=$?
check "report: a malformed line is exit 1, shown" \
	eval '[ $rc -eq 1 ] && grep -q "bad line: .0x10 twelve" "$TMP/r3"'
"${REPORT[@]}" --diff "$PLIB" "$TMP"/bare.[0-9]* >/dev/null 2>&1
check "report: --diff with one file is a usage error (exit 2)" [ $? -eq 2 ]
finish
