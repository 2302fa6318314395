#!/usr/bin/env bash
# bench/exclusive/holders.py --dry (issue 6's diagnostic for the 10 ms
# memory-bound excess): the phases come in order for every cycle, the
# holders are started, stopped (SIGSTOP) while timed and all gone at the
# end, the summary compares every phase with the alone ones; bad arguments
# are a usage error.
. "$(dirname "$0")/lib.sh"
cond() { eval "$1"; }
H=$ROOT/bench/exclusive/holders.py

python3 "$H" --dry --holders 3 --cycles 2 --samples 5 >"$TMP/out" 2>"$TMP/err"
check "--dry run exits 0" [ $? -eq 0 ]
check "  ... the five phases, in order, for each of 2 cycles" \
	[ "$(python3 -c 'import json, sys
print(" ".join("%d:%s" % (r["cycle"], r["phase"]) for r in map(json.loads, open(sys.argv[1])) if "phase" in r))' "$TMP/out")" = \
	"0:alone 0:held 0:held-realloc 0:after 0:alone-again 1:alone 1:held 1:held-realloc 1:after 1:alone-again" ]
check "  ... a summary of every phase against the alone ones" \
	python3 -c 'import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])["summary"]
assert set(s) == {"alone", "held", "held-realloc", "after", "alone-again"}
assert abs(s["held"]["vs_alone_pct"]) < 1e-9' "$TMP/out"
# Holders of this tree's holders.py only (another checkout's test may run).
check "  ... no holder left running" \
	cond '! pgrep -f "$H [-]-hold" >/dev/null'

# The holders are stopped while the phases are timed: a stand-in Bench
# that looks at them when it times.
cat >"$TMP/peek.py" <<'PY'
import os, runpy, subprocess, sys
sys.argv = [sys.argv[1], "--dry", "--holders", "2", "--cycles", "1", "--samples", "1"]
import importlib.util
spec = importlib.util.spec_from_file_location("holders", sys.argv[0])
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
orig = h.Bench.time
def peek(self):
    st = subprocess.run(["sh", "-c", "ps -o stat= -p $(pgrep -d, -P %d -f 'holders.py [-]-hold') 2>/dev/null" % os.getpid()],
                        capture_output=True, text=True).stdout.split()
    print("STATES", "".join(s[0] for s in st), file=sys.stderr)
    return orig(self)
h.Bench.time = peek
sys.exit(h.main())
PY
python3 "$TMP/peek.py" "$H" >/dev/null 2>"$TMP/peek"
check "holders are stopped (T) while timed, absent when alone" \
	[ "$(grep '^STATES' "$TMP/peek" | awk '{print "[" $2 "]"}' | tr -d '\n')" = "[][TT][TT][][]" ]
python3 "$H" --dry --holders 0 >/dev/null 2>"$TMP/err"
check "--holders 0: usage error (exit 2)" [ $? -eq 2 ]
check "  ... that says why" grep -q "must be > 0" "$TMP/err"
finish
