#!/usr/bin/env bash
# kmux verify: identical on a correct program; on a program that breaks
# the visibility assumption (a kernel writing through a pointer stored in
# device memory) it reports the first divergent read-back and names the
# kernel; distinct exit statuses for a failing command; a scheduled run
# that was not scheduled is never called identical.
. "$(dirname "$0")/lib.sh"

"$KMUX" verify -- "$PROGS/rand-dag" 9 >"$TMP/ok" 2>&1
check "a correct program: exit 0" [ $? -eq 0 ]
check "... reported identical" grep -q 'identical ([1-9][0-9]* device-to-host copies' "$TMP/ok"
"$KMUX" verify --streams 8 -- "$PROGS/rand-dag" 10 >"$TMP/ok8" 2>&1
check "--streams 8: identical too" [ $? -eq 0 ]
"$KMUX" verify -- "$PROGS/drv-threads" >"$TMP/thr" 2>&1
check "per-thread default streams in several threads: exit 0" [ $? -eq 0 ]
# Each copy names its own thread's kernels: two of the four threads also
# launch fill_u32, and all four launch before any copies back.
KMUX_STREAMS=4 KMUX_VERIFY_LOG=$TMP/marks.log LD_PRELOAD=$PRELOAD \
	"$PROGS/drv-threads" mark >/dev/null 2>&1
check "drv-threads mark under the recorder: exit 0" [ $? -eq 0 ]
check "... 20 copies recorded" [ "$(grep -c '^copy ' "$TMP/marks.log")" -eq 20 ]
check "... fill_u32 named by the copies of exactly two threads" [ "$(grep fill_u32 "$TMP/marks.log" |
	sed 's/.* thr=\([0-9]*\) .*/\1/' | sort -u | wc -l)" -eq 2 ]
check "... and in every copy of those two" [ "$(grep -c fill_u32 "$TMP/marks.log")" -eq 10 ]

"$KMUX" verify --streams 4 -- "$PROGS/streams-cases" chase >"$TMP/bad" 2>&1
check "pointer chasing: exit 1" [ $? -eq 1 ]
check "... the divergence is the second read-back" grep -q 'DIVERGED at device-to-host copy 1: different contents' "$TMP/bad"
check "... the kernel before it is named" grep -q 'before it.*store_via' "$TMP/bad"
sed 's/^/    /' "$TMP/bad" | head -5
KMUX_BARRIER_KERNELS='^store_via$' "$KMUX" verify -- "$PROGS/streams-cases" chase >"$TMP/fixed" 2>&1
check "with KMUX_BARRIER_KERNELS=^store_via\$: identical" [ $? -eq 0 ]

# A regex the preload would reject left the scheduled run unscheduled, and
# verify said "identical": now refused before anything runs.
rm -f "$TMP/ran"
KMUX_BARRIER_KERNELS='(' "$KMUX" verify --streams 4 -- "$PROGS/streams-cases" chase >"$TMP/re" 2>&1
check "KMUX_BARRIER_KERNELS='(': exit 2" [ $? -eq 2 ]
check "... named, and not 'identical'" bash -c "grep -q '^kmux: KMUX_BARRIER_KERNELS=(: ' '$TMP/re' && ! grep -q identical '$TMP/re'"
KMUX_BARRIER_KERNELS='(' "$KMUX" verify -- touch "$TMP/ran" >/dev/null 2>&1
check "... and CMD never started" [ ! -e "$TMP/ran" ]

"$KMUX" verify -- false >/dev/null 2>&1
check "CMD fails unscheduled: exit 3" [ $? -eq 3 ]
"$KMUX" verify -- sh -c 'test -z "$KMUX_STREAMS"' >/dev/null 2>&1
check "CMD fails only when scheduled: exit 4" [ $? -eq 4 ]
"$KMUX" verify -- /nonexistent/cmd >/dev/null 2>&1
check "CMD not found: exit 127" [ $? -eq 127 ]
"$KMUX" verify --streams 0 -- true >/dev/null 2>&1
check "--streams 0: exit 2" [ $? -eq 2 ]
# (A CUDA program after the echo: without one nothing is scheduled.)
"$KMUX" verify -- sh -c 'echo "$KMUX_STREAMS"; exec "$0" 9' "$PROGS/rand-dag" >"$TMP/so" 2>&1
check "stdout differs, not counted: exit 0" [ $? -eq 0 ]
check "... but reported" grep -q 'stdout differs from line 1' "$TMP/so"
"$KMUX" verify --stdout -- sh -c 'echo "$KMUX_STREAMS"; exec "$0" 9' "$PROGS/rand-dag" >/dev/null 2>&1
check "--stdout: a stdout difference is a divergence (exit 1)" [ $? -eq 1 ]

# The scheduled run records what its scheduler did; a run that scheduled
# nothing is "not scheduled", exit 6, whatever its copies say.  Scheduling
# switched off inside CMD (the preload rejects the regex there, after kmux
# verify's own check): chase diverges when scheduled, so "identical" here
# would be wrong.
"$KMUX" verify -- env KMUX_BARRIER_KERNELS='(' "$PROGS/streams-cases" chase >"$TMP/off" 2>"$TMP/off.err"
check "scheduling off in CMD: exit 6" [ $? -eq 6 ]
check "... 'not scheduled (scheduling was off in 1 of 1 process(es) ...): nothing compared'" \
	bash -c "grep -q '^kmux verify: the scheduled run was not scheduled (scheduling was off in 1 of 1 process(es).*): nothing compared\$' '$TMP/off' && ! grep -q identical '$TMP/off'"
check "... and the preload said why" grep -q 'KMUX_BARRIER_KERNELS=(: .*scheduling off' "$TMP/off.err"
"$KMUX" verify -- env KMUX_STREAMS=abc "$PROGS/rand-dag" 9 >"$TMP/off2" 2>/dev/null
check "a bad KMUX_STREAMS inside CMD: exit 6" [ $? -eq 6 ]
"$KMUX" verify -- "$PROGS/streams-cases" own >"$TMP/none" 2>&1
check "nothing on a default stream (own streams only): exit 6" [ $? -eq 6 ]
check "... 'the scheduler placed no operation'" grep -q 'not scheduled (the scheduler placed no operation' "$TMP/none"
"$KMUX" verify -- true >/dev/null 2>&1
check "no CUDA at all: exit 6" [ $? -eq 6 ]
# A process that leaves through _exit writes no exit record; its "placed"
# record, written when its scheduler placed its first operation, still
# says the run was scheduled, alone or under a shell whose own record says
# it placed nothing.
RAND_DAG_UNDERSCORE_EXIT=1 "$KMUX" verify -- "$PROGS/rand-dag" 9 >"$TMP/ux" 2>&1
check "a program that leaves through _exit: identical, exit 0" \
	bash -c "[ $? -eq 0 ] && grep -q '^kmux verify: identical' '$TMP/ux'"
RAND_DAG_UNDERSCORE_EXIT=1 "$KMUX" verify -- sh -c '"$0" 9; true' "$PROGS/rand-dag" >"$TMP/ux2" 2>&1
check "... under a shell that placed nothing: identical, exit 0" \
	bash -c "[ $? -eq 0 ] && grep -q '^kmux verify: identical' '$TMP/ux2'"
# Switched off part way (17 blocking streams): compared, with a warning.
"$KMUX" verify -- "$PROGS/streams-cases" blocking17 >"$TMP/part" 2>&1
check "a context switched off after scheduling: identical, exit 0" \
	bash -c "[ $? -eq 0 ] && grep -q '^kmux verify: identical' '$TMP/part'"
check "... with a warning naming 1 context switched off" \
	grep -q '^kmux verify: warning: the scheduled run switched 1 context(s) off' "$TMP/part"
finish
