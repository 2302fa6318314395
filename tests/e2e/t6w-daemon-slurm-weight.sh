#!/usr/bin/env bash
# kmux daemon --slurm-node, without Slurm: a stand-in scontrol (KMUX_SCONTROL)
# records what kmuxd runs and plays the controller's weight.  The weight
# follows the busyness (set at start, raised by a job, lowered when it
# ends), updates are rate-limited, a weight reset behind kmuxd's back is
# put back, a failing or missing scontrol is logged and retried without
# hurting the daemon, bad options are refused.  (tests/slurm/ runs the
# real thing on a Slurm cluster.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

LOG=$KMUX_STATE_DIR/kmuxd.log
cat >"$TMP/scontrol" <<EOS
#!/bin/sh
echo "\$*" >>"$TMP/calls"
[ -e "$TMP/fail" ] && { echo "slurm_update error: Unable to contact slurm controller" >&2; exit 1; }
case "\$1 \$2" in
"update NodeName=n7") echo "\${3#Weight=}" >"$TMP/weight" ;;
"-o show") echo "NodeName=n7 Arch=x86_64 CoresPerSocket=1 Weight=\$(cat "$TMP/weight" 2>/dev/null || echo 1) Owner=N/A" ;;
*) echo "unexpected: \$*" >&2; exit 2 ;;
esac
EOS
chmod +x "$TMP/scontrol"
export KMUX_SCONTROL=$TMP/scontrol
weight() { cat "$TMP/weight" 2>/dev/null; }
updates() { grep -c '^update' "$TMP/calls" 2>/dev/null || echo 0; }
wait_for() {	# wait_for TENTHS COMMAND...
	local n=$1 i
	shift
	for i in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	return 1
}

# Bad options: usage errors, nothing started.
expect_rc 2 "--slurm-node 'n7 State=DOWN' refused" "$KMUX" daemon -f --slurm-node 'n7 State=DOWN'
check "  ... says why" err_has "not a Slurm node name\|bad --slurm-node"
expect_rc 2 "--slurm-interval 0 refused" "$KMUX" daemon -f --slurm-node n7 --slurm-interval 0
expect_rc 2 "--slurm-interval abc refused" "$KMUX" daemon -f --slurm-node n7 --slurm-interval abc

start_daemon --default-busy 0.5 --slurm-node n7 --slurm-interval 0.5
check "idle node: weight 1 set at start" wait_for 20 cond '[ "$(weight)" = 1 ]'
check "  ... with the node name and the weight as scontrol arguments" \
	grep -qx "update NodeName=n7 Weight=1" "$TMP/calls"

# A 12 GiB job on the 16 GiB GPU (--default-busy 0.5): busyness 0.5 + 0.5 * 0.75 + 0.1 = 0.975,
# bucket 3, weight 4.
t0=$(date +%s%N)
a=$("$KMUX" submit -m 12G -- sleep 100)
wait_for 30 cond '[ "$(weight)" = 4 ]'
check "a 12G job: weight 4, within 2 s ($(( ($(date +%s%N) - t0) / 1000000 )) ms)" \
	cond '[ "$(weight)" = 4 ] && [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 2000 ]'
"$KMUX" cancel -s KILL "$a" >/dev/null
check "job ended: weight back to 1" wait_for 30 cond '[ "$(weight)" = 1 ]'

# No change, no update; but the weight is read back every 3 intervals.
sleep 0.6
n0=$(updates)
s0=$(grep -c '^-o show node n7' "$TMP/calls")
sleep 2
check "steady: no update in 2 s" [ "$(updates)" -eq "$n0" ]
check "steady: the weight is read back (scontrol -o show node)" \
	[ "$(grep -c '^-o show node n7' "$TMP/calls")" -gt "$s0" ]

# The controller forgets (restart, reconfigure): set again.
a=$("$KMUX" submit -m 12G -- sleep 100)
wait_for 30 cond '[ "$(weight)" = 4 ]'
echo 1 >"$TMP/weight"
check "weight reset behind kmuxd's back: put back within 3 s" wait_for 30 cond '[ "$(weight)" = 4 ]'
check "  ... and logged" grep -q "controller has weight 1, not 4" "$LOG"

# A failing scontrol: one warning, retried, the daemon unaffected.
touch "$TMP/fail"
"$KMUX" cancel -s KILL "$a" >/dev/null
sleep 2
check "scontrol failing: one warning with its message" \
	[ "$(grep -c 'scontrol failed (exit 1): slurm_update error' "$LOG")" -eq 1 ]
check "  ... retried (more than one attempt in 2 s)" \
	[ "$(tail -n 5 "$TMP/calls" | grep -c '^update')" -gt 1 ]
check "  ... the daemon still answers" cond "\"$KMUX\" ps >/dev/null" >/dev/null
rm "$TMP/fail"
check "scontrol back: the weight catches up" wait_for 30 cond '[ "$(weight)" = 1 ]'
check "  ... and that is logged" grep -q "works again" "$LOG"
stop_daemon

# Rate limit: with --slurm-interval 1.5, busy and idle flip every 0.4 s
# for 3.2 s (the 500 ms tick alone would see 6 changes): at most one update
# per 1.5 s, 3 in all.
start_daemon --default-busy 0.5 --slurm-node n7 --slurm-interval 1.5
wait_for 20 cond '[ "$(weight)" = 1 ]'
sleep 1.6
n0=$(updates)
for i in 1 2 3 4; do
	a=$("$KMUX" submit -m 12G -- sleep 100)
	sleep 0.4
	"$KMUX" cancel -s KILL "$a" >/dev/null
	sleep 0.4
done
n=$(( $(updates) - n0 ))
check "8 changes in 3.2 s: $n updates (at most 3: one per 1.5 s)" [ "$n" -le 3 ]
check "  ... at least one: the changes were seen" [ "$n" -ge 1 ]
check "  ... it settles on the idle weight" wait_for 40 cond '[ "$(weight)" = 1 ]'
stop_daemon

# No scontrol at all: a warning, the daemon runs on.
rm -f "$TMP/calls"
KMUX_SCONTROL=$TMP/no-such-scontrol start_daemon --default-busy 0.5 --slurm-node n7 --slurm-interval 0.5
sleep 1.2
check "missing scontrol: warned (exit 127)" grep -q "no-such-scontrol failed (exit 127)" "$LOG"
check "  ... the daemon still answers" cond "\"$KMUX\" ps >/dev/null" >/dev/null
stop_daemon

# No GPUs: nothing to say about busyness, no scontrol run.
rm -f "$TMP/calls"
KMUX_FAKE_GPUS=0 start_daemon --default-busy 0.5 --slurm-node n7 --slurm-interval 0.5
sleep 1.2
check "no GPUs: scontrol never run" [ ! -e "$TMP/calls" ]
finish
