#!/usr/bin/env bash
# Persistent context workers (issue 6): `kmux bench serve -w 2` runs the
# Python jobs `kmux bench submit` sends in two long-lived workers that keep
# their CUDA context: the same worker pids come back, each job finds a
# context already current (the worker's, not one of its own), exit codes
# and output propagate, a job that kills its worker is reported and the
# worker replaced, bad socket messages get errors, SIGTERM leaves no
# process behind; and `kmux bench run --workers`.
. "$(dirname "$0")/lib.sh"
export KMUX_BENCH_SOCKET=$TMP/bench.sock
# Under the sanitizer build the preload the workers load needs the ASan
# runtime in front of it; kmux keeps it first when it is in its own
# LD_PRELOAD: give it to kmux alone, via a wrapper.
if [ -n "${ASAN_LIB:-}" ]; then
	cat >"$TMP/kmux-san" <<EOS
#!/bin/sh
LD_PRELOAD=$ASAN_LIB\${LD_PRELOAD:+:\$LD_PRELOAD} exec "$KMUX" "\$@"
EOS
	chmod +x "$TMP/kmux-san"
	KMUX=$TMP/kmux-san
fi
cd "$TMP" || exit 1
cond() { eval "$1"; }

# A job: its pid, the context current when it starts (created by nobody
# in the job), its argv; exits with argv[1].
cat >job.py <<'PY'
import ctypes, os, sys
cu = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
rc = cu.cuCtxGetCurrent(ctypes.byref(ctx))
print("pid=%d ctx=%s rc=%d args=%s" % (os.getpid(), ctx.value, rc,
                                       "|".join(sys.argv[1:])))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
PY
printf 'import os, time\ntime.sleep(0.3)\nos._exit(7)\n' >crash.py
printf 'import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n' >killself.py
printf 'def f():\n    raise ValueError("boom")\nf()\n' >raise.py
printf 'import os, sys, time\nopen(sys.argv[1], "w").write(str(os.getpid()))\ntime.sleep(30)\n' >sleepy.py

expect_rc() {
	local want=$1 what=$2 got
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	if [ "$got" -eq "$want" ]; then ok "$what (exit $got)"; else
		fail "$what: exit $got, wanted $want"
		sed 's/^/    /' "$TMP/out" "$TMP/err" | head -10
	fi
}
rec() {	# FILE EXPR: EXPR over the record r in FILE
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

expect_rc 5 "submit without a server: exit 5" "$KMUX" bench submit -- job.py 0
check "  ... says so" grep -q "no bench server at $TMP/bench.sock" "$TMP/err"

"$KMUX" bench serve -w 2 2>"$TMP/serve.err" &
SERVE=$!
for _ in $(seq 50); do [ -S "$TMP/bench.sock" ] && break; sleep 0.1; done
check "serve listens on a socket of mode 0600" \
	[ "$(stat -c %a "$TMP/bench.sock")" = 600 ]
expect_rc 1 "a second serve on the same socket is refused" "$KMUX" bench serve -w 1

# Six jobs, two at a time (each waits for the previous pair).
for n in 0 2 4; do
	"$KMUX" bench submit -o "$TMP/o" -- job.py 0 "a b" "$n" >"$TMP/r$n" 2>"$TMP/e$n" &
	p1=$!
	"$KMUX" bench submit -o "$TMP/o" -- job.py 0 "a b" $((n + 1)) >"$TMP/r$((n + 1))" 2>"$TMP/e$((n + 1))" &
	wait "$p1" $!
done
python3 - "$TMP" >"$TMP/sum" <<'PY'
import json, re, sys
d = sys.argv[1]
pids, ctxs, ok = {}, {}, True
for n in range(6):
    r = json.load(open("%s/r%d" % (d, n)))
    out = open(r["out"]).read()
    m = re.match(r"pid=(\d+) ctx=(\d+) rc=0 args=0\|a b\|%d\n$" % n, out)
    ok &= bool(m) and r["exit"] == 0 and int(m.group(1)) == r["worker_pid"]
    ok &= open(r["err"]).read() == "to stderr\n"
    pids.setdefault(r["worker"], set()).add(r["worker_pid"])
    ctxs.setdefault(r["worker_pid"], set()).add(m.group(2) if m else None)
# A worker still starting leaves the first jobs to the other: at most 2.
print(ok, all(len(p) == 1 for p in pids.values()) and len(pids) <= 2,
      len(ctxs) <= 2, all(len(c) == 1 for c in ctxs.values()))
PY
check "six jobs: each ran OK in a worker, output and argv right" [ "$(cut -d' ' -f1 "$TMP/sum")" = True ]
check "  ... at most two worker pids, one each across the jobs, each with one context kept" \
	[ "$(cut -d' ' -f2- "$TMP/sum")" = "True True True" ]

expect_rc 3 "exit code propagates (3)" "$KMUX" bench submit -- job.py 3
check "  ... the record says exit 3" [ "$(rec "$TMP/out" 'r["exit"]')" = 3 ]
expect_rc 1 "an exception: exit 1" "$KMUX" bench submit -o "$TMP/x" -- raise.py
check "  ... its traceback on its stderr, without the worker's frames" \
	cond 'grep -q "ValueError: boom" "$TMP"/x/*.err && ! grep -q worker.py "$TMP"/x/*.err'

before=$(rec "$TMP/r0" 'r["worker_pid"]')
expect_rc 7 "os._exit(7) in a job: exit 7" "$KMUX" bench submit -- crash.py
check "  ... reported: its worker died" grep -q '"error":"its worker died (exited 7)"' "$TMP/out"
dead=$(rec "$TMP/out" 'r["worker_pid"]')
expect_rc 137 "a job killing itself (SIGKILL): 128+9" "$KMUX" bench submit -- killself.py
check "  ... recorded as signal 9" [ "$(rec "$TMP/out" 'r["signal"]')" = 9 ]
dead2=$(rec "$TMP/out" 'r["worker_pid"]')
check "  ... the dead worker is gone (reaped)" cond '! kill -0 "$dead" 2>/dev/null && ! kill -0 "$dead2" 2>/dev/null'
"$KMUX" bench submit -- job.py 0 >"$TMP/a1" 2>/dev/null &
p1=$!
"$KMUX" bench submit -- job.py 0 >"$TMP/a2" 2>/dev/null &
wait "$p1" $!
check "the workers were replaced: new jobs run, in new pids" \
	cond '[ "$(rec "$TMP/a1" "r[\"exit\"]")" = 0 ] && [ "$(rec "$TMP/a2" "r[\"exit\"]")" = 0 ] &&
	      [ "$(rec "$TMP/a1" "r[\"worker_pid\"]")" != "$dead" ] && [ "$(rec "$TMP/a1" "r[\"worker_pid\"]")" != "$dead2" ]'
expect_rc 0 "a non-Python command runs as a plain process" "$KMUX" bench submit -- sh -c 'echo plain'
check "  ... worker -1" [ "$(rec "$TMP/out" 'r["worker"]')" = -1 ]

# Bad messages on the socket: an error each, the server unaffected.
python3 - "$TMP/bench.sock" >"$TMP/bad" <<'PY'
import socket, sys
cases = [b"garbage\n", b'{"argv": []}\n', b'{"argv": ["x.py"]}\n',
         b'{"argv": ["x.py"], "cwd": "rel"}\n', b'{"argv": [1], "cwd": "/"}\n',
         b'{"argv": ["x.py"], "cwd": "/", "evil": 1}\n', b"\x00\xff\n",
         b"x" * 70000, b'{"argv": ["a\\u0000b"], "cwd": "/"}\n']
for c in cases:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    try:
        s.sendall(c)
    except OSError:
        pass
    data = b""
    while True:
        try:
            b = s.recv(4096)
        except OSError:
            break
        if not b:
            break
        data += b
    print(data.startswith(b'{"error":'))
    s.close()
PY
check "nine bad requests: nine error replies" [ "$(grep -c True "$TMP/bad")" = 9 ]
expect_rc 0 "  ... the server still serves" "$KMUX" bench submit -- job.py 0

# Two jobs running, a third queued, then SIGTERM.
pids=$(pgrep -P "$SERVE")
for n in 1 2 3; do
	"$KMUX" bench submit -- sleepy.py "$TMP/t$n" >"$TMP/k$n" 2>"$TMP/k$n.err" &
	eval "sp$n=\$!"
	sleep 0.2
done
for _ in $(seq 50); do [ -e "$TMP/t1" ] && [ -e "$TMP/t2" ] && break; sleep 0.1; done
kill -TERM "$SERVE"
wait "$SERVE"
check "SIGTERM: serve exits 0" [ $? = 0 ]
wait "$sp1"; r1=$?
wait "$sp2"; r2=$?
wait "$sp3"; r3=$?
check "  ... the running jobs' clients get their records: killed, 128+15" cond '[ $r1 = 143 ] && [ $r2 = 143 ] && grep -q "\"signal\":15" "$TMP/k1"'
check "  ... the queued job's client gets an error: exit 1" cond '[ $r3 = 1 ] && grep -q "the server is stopping" "$TMP/k3.err" && [ ! -e "$TMP/t3" ]' 
sleep 0.2
left=0
for p in $pids; do kill -0 "$p" 2>/dev/null && left=1; done
check "  ... no worker left, and the socket removed" cond '[ $left = 0 ] && [ ! -e "$TMP/bench.sock" ]'
check "  ... no zombie children of this shell" cond '! ps -o stat= --ppid $$ | grep -q Z'

# bench run --workers: a batch, Python lines in the workers.
printf '%s\n' "python3 job.py 0 x" "job.py 0 y" "job.py 2" "echo plain" "job.py 0 'q r'" >"$TMP/list"
expect_rc 1 "run --workers 2: one command fails: exit 1" "$KMUX" bench run -w 2 -f "$TMP/list" --json "$TMP/b.json" -o "$TMP/bo"
python3 - "$TMP/b.json" "$TMP/bo" >"$TMP/bs" <<'PY'
import json, sys
r = sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda x: x["i"])
print([x["exit"] for x in r], [x["worker"] >= 0 for x in r],
      len({x["worker_pid"] for x in r if x["worker"] >= 0}) <= 2,
      open(sys.argv[2] + "/4.out").read().endswith("args=0|q r\n"))
PY
check "  ... records: exits, which ran in workers, at most 2 worker pids, quoting" \
	[ "$(cat "$TMP/bs")" = "[0, 0, 2, 0, 0] [True, True, True, False, True] True True" ]
expect_rc 2 "run: -j differing from --workers" "$KMUX" bench run -w 2 -j 3 true
expect_rc 1 "run --workers, workers that cannot start: exit 1" \
	"$KMUX" bench run -w 1 --python "$TMP/no-python" --json "$TMP/np.json" "job.py 0" "echo plain"
check "  ... the Python command failed as such, the plain one ran" \
	[ "$(python3 -c 'import json, sys; print(sorted((r["i"], r["exit"], r.get("error")) for r in map(json.loads, open(sys.argv[1]))))' "$TMP/np.json")" = "[(0, 127, 'no worker could start'), (1, 0, None)]" ]

# Stopped (a timeout): the workers and what they run are gone.
timeout --preserve-status -s INT 1.5 "$KMUX" bench run -w 2 "sleepy.py $TMP/s1" "sleepy.py $TMP/s2" "sleepy.py $TMP/s3" >"$TMP/st.json" 2>/dev/null
check "run --workers stopped by SIGINT: exit 1" [ $? = 1 ]
sleep 0.3
check "  ... both running jobs killed, recorded with their signal" \
	[ "$(python3 -c 'import json, sys; print(sorted(r["signal"] for r in map(json.loads, open(sys.argv[1]))))' "$TMP/st.json")" = "[15, 15]" ]
check "  ... their workers gone, the third never started" \
	cond '! kill -0 "$(cat "$TMP/s1")" 2>/dev/null && ! kill -0 "$(cat "$TMP/s2")" 2>/dev/null && [ ! -e "$TMP/s3" ]'
kill -0 "$SERVE" 2>/dev/null && kill -9 "$SERVE"
finish
