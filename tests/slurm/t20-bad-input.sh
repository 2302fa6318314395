#!/usr/bin/env bash
# Bad input gets a clear message where the user typed it and a non-zero
# exit, before anything runs; a node without kmuxd runs the task with a
# warning in its output (under its quota), or refuses it when the admin
# set the plugin to strict.  Nothing hangs (every command is bounded).
. "$(dirname "$0")/lib.sh"

# expect_fail DESCRIPTION TEXT COMMAND...: non-zero exit, TEXT on stderr.
expect_fail() {
	local what=$1 text=$2 rc
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -ne 0 ] && grep -q -- "$text" "$TMP/err"; then
		ok "$what (exit $rc)"
	else
		fail "$what: exit $rc"
		sed 's/^/    /' "$TMP/err" | head -5
	fi
}

expect_fail "srun --kmux-mem=abc" "kmux: --kmux-mem=abc is not a size" T_SRUN --kmux-mem=abc true
expect_fail "srun --kmux-mem=1.5 (a fraction needs a unit)" "is not a size" T_SRUN --kmux-mem=1.5 true
expect_fail "srun --kmux-mem=100K (under 1 MiB)" "less than 1 MiB" T_SRUN --kmux-mem=100K true
expect_fail "srun --kmux-streams=0" "kmux: --kmux-streams=0: want an integer in 1..64" T_SRUN --kmux-streams=0 true
expect_fail "srun --kmux-streams=65" "want an integer in 1..64" T_SRUN --kmux-streams=65 true
expect_fail "sbatch --kmux-mem=zz" "kmux: --kmux-mem=zz is not a size" timeout 30 sbatch --kmux-mem=zz --wrap true
expect_fail "salloc --kmux-mem=zz" "kmux: --kmux-mem=zz is not a size" timeout 30 salloc --kmux-mem=zz true
# More than any node has: refused at submission, not pending forever.
expect_fail "srun --kmux-mem=8T: more than any node" "Requested node configuration is not available" \
	T_SRUN --kmux-mem=8T true
expect_fail "sbatch --kmux-mem=3G: more than a node's 2 GiB" "Requested node configuration is not available" \
	timeout 30 sbatch --kmux-mem=3G --wrap true

# Node n2 without its kmuxd: a warning, the task runs under its quota.
kmuxd_stop_n2() {
	local p
	p=$(cat "$SC/kmux/n2/sock.lock")
	kill "$p" && wait_until 50 sh -c "! kill -0 $p"
}
kmuxd_stop_n2
T_SRUN -w n2 --kmux-mem=64M "$PROGS/quota" >"$TMP/nod" 2>"$TMP/nod.err"
check "no kmuxd on n2: the task runs (exit 0)" [ $? -eq 0 ]
check "no kmuxd on n2: a warning in the job's output" \
	has "$TMP/nod.err" "kmux: warning: no kmuxd answers on $SC/kmux/n2/sock"
check "no kmuxd on n2: the quota still holds" hasx "$TMP/nod" "got 64"

# strict: the same task is refused, with the reason.
cp "$SC/etc/plugstack.conf" "$TMP/plugstack.keep"
sed -i 's/$/ strict/' "$SC/etc/plugstack.conf"
T_SRUN -w n2 --kmux-mem=64M true >"$TMP/strict" 2>"$TMP/strict.err"
check "strict, no kmuxd: the step fails" [ $? -ne 0 ]
check "strict, no kmuxd: the reason in the output" \
	has "$TMP/strict.err" "kmux: error: no kmuxd answers on .*(strict): task refused"
T_SRUN -w n1 --kmux-mem=64M true >"$TMP/strict1" 2>&1
check "strict, kmuxd running on n1: runs" [ $? -eq 0 ]
cp "$TMP/plugstack.keep" "$SC/etc/plugstack.conf"

# A preload that is not there: the task runs without kmux, and says so.
sed -i "s|lib=[^ ]*|lib=$TMP/no-such-libkmux.so|" "$SC/etc/plugstack.conf"
T_SRUN -w n1 --kmux-mem=64M sh -c 'echo "[$LD_PRELOAD]"' >"$TMP/nolib" 2>"$TMP/nolib.err"
check "missing preload: runs (exit 0)" [ $? -eq 0 ]
check "missing preload: says so" has "$TMP/nolib.err" "cannot read the kmux preload"
check "missing preload: LD_PRELOAD untouched" hasx "$TMP/nolib" "[]"
cp "$TMP/plugstack.keep" "$SC/etc/plugstack.conf"

# n2's kmuxd back, for the tests that follow.
kmuxd_restart() {
	KMUX_FAKE_GPUS=2:1G "$KMUX" daemon --socket "$SC/kmux/n2/sock" \
		--state-dir "$SC/kmux/n2/state" --slurm-node n2 --slurm-interval 1
}
kmuxd_restart
check "n2's kmuxd restarted" test -S "$SC/kmux/n2/sock"
finish
