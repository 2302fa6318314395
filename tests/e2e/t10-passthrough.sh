#!/usr/bin/env bash
# The bare preload changes nothing a program can see: same output, same
# exit status, for a program linked with -lcuda, one that loads the driver
# with dlopen + cuGetProcAddress, and a per-thread-default-stream program.
. "$(dirname "$0")/lib.sh"

for p in drv-basic drv-dlopen drv-threads; do
	"$PROGS/$p" >"$TMP/$p.plain" 2>&1
	rc_plain=$?
	LD_PRELOAD=$PRELOAD "$PROGS/$p" >"$TMP/$p.kmux" 2>&1
	rc_kmux=$?
	check "$p runs without kmux" [ $rc_plain -eq 0 ]
	check "$p: same exit status under the preload" [ $rc_plain -eq $rc_kmux ]
	check "$p: same output under the preload" cmp -s "$TMP/$p.plain" "$TMP/$p.kmux"
done

# The three layers hand out kmux's wrappers for hooked names and the
# driver's own functions for the rest (dladdr inside the program).
E2E_EXPECT_HOOKED=1 LD_PRELOAD=$PRELOAD "$PROGS/drv-dlopen" >"$TMP/hooked" 2>&1
check "cuGetProcAddress/dlsym hand out kmux's wrappers exactly for hooked names" [ $? -eq 0 ]
grep -v '^drv-dlopen ok' "$TMP/hooked" | sed 's/^/    /'

# And without the preload the same expectation must fail: the check bites.
E2E_EXPECT_HOOKED=1 "$PROGS/drv-dlopen" >/dev/null 2>&1
check "the hook check fails without kmux (it can fail)" [ $? -ne 0 ]

# Under the driver, the simulated recorder sees no conflicting overlap.
SIMCUDA_LOG=$TMP/sim.%p LD_PRELOAD=$PRELOAD "$PROGS/drv-basic" >/dev/null 2>&1
check "simcuda records no overlap or fault under the preload" "$SIMDIR/simcuda-check" "$TMP"/sim.*
finish
