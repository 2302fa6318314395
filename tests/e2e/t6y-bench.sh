#!/usr/bin/env bash
# kmux bench run (issue 6): N commands at a time under the preload, each
# one's exit status and wall time as JSON lines, output per command, bad
# usage; and a batch whose commands time inside regions: the regions are
# serialized while the rest of each command runs concurrently.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

jl() {	# FILE EXPR: EXPR over `r`, the list of records
	python3 -c '
import json, sys
r = sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda x: x["i"])
print(eval(sys.argv[2]))' "$1" "$2"
}

"$KMUX" bench run -j 4 "sleep 0.5" "sleep 0.5" "sleep 0.5" "sleep 0.5" >"$TMP/j4" 2>"$TMP/j4.err"
check "-j 4: four 0.5 s commands together (start spread < 0.2 s)" \
	[ "$(jl "$TMP/j4" 'max(x["start_s"] for x in r) < 0.2')" = True ]
"$KMUX" bench run -j 2 "sleep 0.3" "sleep 0.3" "sleep 0.3" >"$TMP/j2" 2>/dev/null
check "-j 2: the third starts when one of the first two ended" \
	[ "$(jl "$TMP/j2" 'r[2]["start_s"] >= 0.25')" = True ]
check "  ... summary on stderr" grep -q "4 command(s), 0 failed" "$TMP/j4.err"

printf '# a comment\nexit 3\n\necho "$LD_PRELOAD"\nkill -9 $$\n' >"$TMP/list"
expect_rc 1 "a failing command: exit 1" "$KMUX" bench run -f "$TMP/list" --json "$TMP/l.json" -o "$TMP/outd"
check "-f: comments and blank lines skipped, 3 records" [ "$(jl "$TMP/l.json" 'len(r)')" = 3 ]
check "  ... exit codes and signals recorded" [ "$(jl "$TMP/l.json" '[(x["exit"], x["signal"]) for x in r]')" = "[(3, 0), (0, 0), (-1, 9)]" ]
check "  ... each under the preload, its output in DIR/I.out" grep -q "libkmux.so" "$TMP/outd/1.out"
"$KMUX" bench run --no-preload -o "$TMP/np" 'echo "[$LD_PRELOAD]"' >/dev/null 2>&1
check "--no-preload: without it" cond '[ -s "$TMP/np/0.out" ] && ! grep -q libkmux "$TMP/np/0.out"'
# Stopped (a timeout): every running command's process group is killed.
timeout 1 "$KMUX" bench run -j 2 "echo \$\$ >$TMP/p1; exec sleep 30" "sh -c 'echo \$\$ >$TMP/p2; sleep 30'" "sleep 30" >"$TMP/to" 2>"$TMP/to.err"
sleep 0.3
# Alive and not a zombie (an orphan's zombie waits for init to reap it).
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$s" ] && [ "${s#Z}" = "$s" ]; }
check "stopped by a signal: the running commands are killed" \
	cond '! alive "$(cat "$TMP/p1")" && ! alive "$(cat "$TMP/p2")"'
check "  ... recorded as killed, the third never started" [ "$(jl "$TMP/to" '[x["signal"] for x in r]')" = "[9, 9]" ]
expect_rc 2 "no commands" "$KMUX" bench run
expect_rc 2 "bad -j" "$KMUX" bench run -j 0 true
expect_rc 2 "unknown subcommand" "$KMUX" bench fly
expect_rc 1 "-f of a missing file" "$KMUX" bench run -f "$TMP/nope"
mkdir -p "$TMP/adir"
expect_rc 1 "-f of a directory: exit 1, not 'no commands'" "$KMUX" bench run -f "$TMP/adir"
check "  ... says it cannot be read" err_has "kmux: bench: cannot read $TMP/adir: Is a directory"

# Regions in a batch: three commands, each 0.3 s of setup and a 0.4 s
# region, at -j 3: the regions never overlap, the setups do.
start_daemon
R=$PROGS/region
for n in 1 2 3; do echo "$R hold 400 4 >$TMP/r$n"; done >"$TMP/rl"
"$KMUX" bench run -j 3 -f "$TMP/rl" >"$TMP/rj" 2>&1
python3 - "$TMP"/r1 "$TMP"/r2 "$TMP"/r3 >"$TMP/iv" <<'PY'
import sys, re
iv = []
for p in sys.argv[1:]:
    t = dict(re.findall(r"^(begin|end) rc=0 t=(\d+)", open(p).read(), re.M))
    iv.append((int(t["begin"]), int(t["end"])))
iv.sort()
print(all(a[1] <= b[0] for a, b in zip(iv, iv[1:])), len(iv))
PY
check "bench -j 3 of region commands: three regions, none overlapping" [ "$(cat "$TMP/iv")" = "True 3" ]

# --avoid-cpus: the commands start off those CPUs (kmuxd's --region-cpus).
if [ "$(nproc)" -ge 2 ]; then
	"$KMUX" bench run --no-preload --avoid-cpus 0 -o "$TMP/av" \
		'grep Cpus_allowed_list /proc/self/status' >/dev/null 2>&1
	check "--avoid-cpus 0: the command may not run on CPU 0" \
		grep -Eq "Cpus_allowed_list:[[:space:]]+(1|1-[0-9]+|1,.*)$" "$TMP/av/0.out"
fi
"$KMUX" bench run --avoid-cpus 3-1 true >"$TMP/avo" 2>&1
check "--avoid-cpus 3-1: usage error (exit 2)" [ $? -eq 2 ]
check "  ... that says why" grep -q "bad --avoid-cpus '3-1'" "$TMP/avo"
"$KMUX" bench run --avoid-cpus "0-$(( $(getconf _NPROCESSORS_CONF) - 1 ))" true >"$TMP/avo" 2>&1
check "--avoid-cpus of every CPU: an error (exit 1), nothing run" [ $? -eq 1 ]
check "  ... that says why" grep -q "leaves no CPU" "$TMP/avo"
finish
