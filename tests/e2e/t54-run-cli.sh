#!/usr/bin/env bash
# kmux run: bad --streams values are usage errors (exit 2); the command's
# exit status comes back; the environment asks the preload for the pool.
# The bare preload with a bad KMUX_STREAMS runs the program unscheduled.
. "$(dirname "$0")/lib.sh"

for v in 0 -1 x 65 4x "" " 4" +4; do
	"$KMUX" run --streams "$v" -- true >/dev/null 2>"$TMP/err"
	rc=$?
	check "--streams '$v': usage error, exit 2" [ $rc -eq 2 ]
done
check "the usage is printed" grep -q '^usage: kmux run' "$TMP/err"
"$KMUX" run --streams >/dev/null 2>&1
check "--streams without a value: exit 2" [ $? -eq 2 ]
"$KMUX" run --streams 4 >/dev/null 2>&1
check "no command: exit 2" [ $? -eq 2 ]
"$KMUX" run --help >"$TMP/help" 2>&1
check "--help: exit 0 and the usage" bash -c "[ $? -eq 0 ] && grep -q streams '$TMP/help'"
"$KMUX" run -s 3 -- sh -c 'exit 7'
check "the command's exit status comes back (7)" [ $? -eq 7 ]
"$KMUX" run -- /nonexistent/cmd 2>/dev/null
check "a missing command: 127" [ $? -eq 127 ]

# A KMUX_BARRIER_KERNELS the preload would reject (it would then run CMD
# unscheduled) is refused before CMD starts, when scheduling is asked for.
for how in "--streams 4" "KMUX_STREAMS=4"; do
	rm -f "$TMP/ran"
	case $how in
	--*) KMUX_BARRIER_KERNELS='(' "$KMUX" run $how -- touch "$TMP/ran" 2>"$TMP/err" ;;
	*) env "$how" KMUX_BARRIER_KERNELS='(' "$KMUX" run -- touch "$TMP/ran" 2>"$TMP/err" ;;
	esac
	rc=$?
	check "KMUX_BARRIER_KERNELS='(' with $how: exit 2, CMD not started" \
		bash -c "[ $rc -eq 2 ] && [ ! -e '$TMP/ran' ]"
	check "... and the variable, its value and why are named" \
		grep -q "^kmux: KMUX_BARRIER_KERNELS=(: .*CMD not started" "$TMP/err"
done
env -u KMUX_STREAMS KMUX_BARRIER_KERNELS='(' "$KMUX" run -- true 2>/dev/null
check "... without scheduling it is not looked at (exit 0)" [ $? -eq 0 ]
KMUX_BARRIER_KERNELS='^(probe|x)$' "$KMUX" run --streams 4 -- true
check "a good KMUX_BARRIER_KERNELS is accepted (exit 0)" [ $? -eq 0 ]

out=$(env -u CUDA_DEVICE_MAX_CONNECTIONS "$KMUX" run --streams 4 -- sh -c 'echo "$KMUX_STREAMS ${CUDA_DEVICE_MAX_CONNECTIONS:-unset}"')
check "--streams 4 sets KMUX_STREAMS=4, leaves the connections alone ($out)" [ "$out" = "4 unset" ]
out=$(env -u CUDA_DEVICE_MAX_CONNECTIONS "$KMUX" run --streams 48 -- sh -c 'echo "$KMUX_STREAMS $CUDA_DEVICE_MAX_CONNECTIONS"')
check "--streams 48 raises CUDA_DEVICE_MAX_CONNECTIONS to 32 ($out)" [ "$out" = "48 32" ]
out=$(CUDA_DEVICE_MAX_CONNECTIONS=12 "$KMUX" run --streams 48 -- sh -c 'echo "$CUDA_DEVICE_MAX_CONNECTIONS"')
check "a CUDA_DEVICE_MAX_CONNECTIONS of the user's is kept ($out)" [ "$out" = 12 ]

# The bare preload: bad values warn (with KMUX_LOG) and run unscheduled.
"$PROGS/rand-dag" 2 >"$TMP/plain" 2>&1
for v in 0 abc 65 -2; do
	KMUX_LOG=warn KMUX_STREAMS=$v LD_PRELOAD=$PRELOAD "$PROGS/rand-dag" 2 \
		>"$TMP/out" 2>"$TMP/err"
	check "KMUX_STREAMS=$v: warned, runs unscheduled with the same output" \
		bash -c "grep -q 'KMUX_STREAMS=$v' '$TMP/err' && cmp -s '$TMP/plain' '$TMP/out'"
done
# ... and say so without KMUX_LOG too (the default level): one line naming
# the variable, its value and what kmux does, and the program still runs.
for v in garbage 0 -3 99999; do
	env -u KMUX_LOG KMUX_STREAMS=$v LD_PRELOAD=$PRELOAD "$PROGS/rand-dag" 2 \
		>"$TMP/out" 2>"$TMP/err"
	rc=$?
	check "KMUX_STREAMS=$v without KMUX_LOG: exit 0, same output" \
		bash -c "[ $rc -eq 0 ] && cmp -s '$TMP/plain' '$TMP/out'"
	check "... one line: 'kmux: KMUX_STREAMS=$v: ...; scheduling off'" \
		bash -c "[ \$(wc -l <'$TMP/err') -eq 1 ] &&
			 grep -q '^kmux: KMUX_STREAMS=$v: .*; scheduling off\$' '$TMP/err'"
done
KMUX_LOG=info KMUX_STREAMS=20 LD_PRELOAD=$PRELOAD "$PROGS/rand-dag" 2 2>&1 >/dev/null | grep 'streams: pid' >"$TMP/info"
check "KMUX_STREAMS=20 without CUDA_DEVICE_MAX_CONNECTIONS: 8 streams" grep -q ': 8 streams' "$TMP/info"
KMUX_LOG=info CUDA_DEVICE_MAX_CONNECTIONS=16 KMUX_STREAMS=20 LD_PRELOAD=$PRELOAD "$PROGS/rand-dag" 2 2>&1 >/dev/null | grep 'streams: pid' >"$TMP/info"
check "... and with CUDA_DEVICE_MAX_CONNECTIONS=16: 16 streams" grep -q ': 16 streams' "$TMP/info"
finish
