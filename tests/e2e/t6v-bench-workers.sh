#!/usr/bin/env bash
# Persistent context workers (issue 6): `kmux bench serve -w 2` runs the
# Python jobs `kmux bench submit` sends in two long-lived workers that keep
# their CUDA context: the same worker pids come back, each job finds a
# context already current (the worker's, not one of its own), exit codes
# and output propagate, a job that kills its worker is reported and the
# worker replaced, bad socket messages get errors, a job runs with its
# submitter's environment (but the worker's LD_PRELOAD, CUDA_VISIBLE_DEVICES,
# KMUX_*) and leaves none of it behind, a submit interrupted mid-job gets
# the job's worker killed and replaced, a queued job whose client left
# never runs, SIGTERM leaves no process behind; and `kmux bench run
# --workers`.
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
# request_taken PID: the submit client PID sent its request (it sleeps in
# read(2) on its socket, waiting for the record) and the server accepted
# and read it (no socket at the server's path has a connection or a byte
# waiting): the job is the server's, queued or running.  What a test
# needs to know before it makes the client leave or stops the server.
case $(uname -m) in aarch64 | riscv64) SYS_READ=63 ;; *) SYS_READ=0 ;; esac
request_taken() {
	local sc fd
	read -r sc fd _ <"/proc/$1/syscall" 2>/dev/null || return 1
	[ "$sc" = "$SYS_READ" ] || return 1
	case $(readlink "/proc/$1/fd/$((fd))") in socket:*) ;; *) return 1 ;; esac
	ss -xna | awk -v p="$KMUX_BENCH_SOCKET" '$5 == p && $3 != 0 {n++} END {exit n > 0}'
}
# until SECONDS COMMAND...: until COMMAND succeeds, at most that long.
until_ok() {
	local n=$(($1 * 10))
	shift
	until "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.1
	done
}

expect_rc 5 "submit without a server: exit 5" "$KMUX" bench submit -- job.py 0
check "  ... says so" grep -q "no bench server at $TMP/bench.sock" "$TMP/err"

SERVER_ONLY=1 "$KMUX" bench serve -w 2 2>"$TMP/serve.err" &
SERVE=$!
for _ in $(seq 300); do [ -S "$TMP/bench.sock" ] && break; sleep 0.1; done
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
# two_jobs_avoid WHAT PID...: two jobs at once both exit 0, in none of PIDs.
two_jobs_avoid() {
	local what=$1 ok=1 f p
	shift
	"$KMUX" bench submit -- job.py 0 >"$TMP/a1" 2>/dev/null &
	p=$!
	"$KMUX" bench submit -- job.py 0 >"$TMP/a2" 2>/dev/null &
	wait "$p" $!
	for f in "$TMP/a1" "$TMP/a2"; do
		[ "$(rec "$f" 'r["exit"]')" = 0 ] || ok=0
		for p in "$@"; do
			[ "$(rec "$f" 'r["worker_pid"]')" != "$p" ] || ok=0
		done
	done
	check "$what" [ "$ok" = 1 ]
}
two_jobs_avoid "the workers were replaced: new jobs run, in new pids" "$dead" "$dead2"
# A job that leaves GPU memory referenced (here a stand-in CuPy whose pool
# says 100 MiB are still in use) retires its worker after its result: the
# next job runs in a new pid.  One that leaves little keeps it.
cat >leak.py <<'PY'
import os, sys, types
N = int(sys.argv[1]) << 20
class Pool:
    def used_bytes(self): return N
    def free_all_blocks(self): pass
cp = types.ModuleType("cupy")
cp.get_default_memory_pool = Pool
cp.get_default_pinned_memory_pool = Pool
sys.modules["cupy"] = cp
print("pid=%d" % os.getpid())
PY
expect_rc 0 "a job leaving 10 MiB referenced (under the 64 MiB limit)" "$KMUX" bench submit -- leak.py 10
small=$(rec "$TMP/out" 'r["worker_pid"]')
expect_rc 0 "a job leaving 100 MiB referenced: exit 0 all the same" "$KMUX" bench submit -- leak.py 100
leaky=$(rec "$TMP/out" 'r["worker_pid"]')
check "  ... its worker says it retires" \
	grep -q "kmux: worker $leaky: job [0-9]* left 100 MiB of GPU memory referenced; retiring this worker" "$TMP/serve.err"
check "  ... and is gone" cond 'for _ in $(seq 50); do kill -0 "$leaky" 2>/dev/null || break; sleep 0.1; done; ! kill -0 "$leaky" 2>/dev/null'
check "the one that left 10 MiB did not retire" cond '[ "$small" = "$leaky" ] || kill -0 "$small" 2>/dev/null'
two_jobs_avoid "  ... later jobs run in the remaining and a new worker, never the retired pid" "$leaky"
expect_rc 0 "a non-Python command runs as a plain process" "$KMUX" bench submit -- sh -c 'echo plain'
check "  ... worker -1" [ "$(rec "$TMP/out" 'r["worker"]')" = -1 ]

# Bad messages on the socket: an error each, the server unaffected.
python3 - "$TMP/bench.sock" >"$TMP/bad" <<'PY'
import socket, sys
cases = [b"garbage\n", b'{"argv": []}\n', b'{"argv": ["x.py"]}\n',
         b'{"argv": ["x.py"], "cwd": "rel"}\n', b'{"argv": [1], "cwd": "/"}\n',
         b'{"argv": ["x.py"], "cwd": "/", "evil": 1}\n', b"\x00\xff\n",
         b"x" * (1024 * 1024 + 10), b'{"argv": ["a\\u0000b"], "cwd": "/"}\n']
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

# The submitter's environment: the job has it (a megabyte is allowed), but
# for the variables a running process cannot change, which stay the
# worker's; a variable only the server has is not there; and all of it is
# gone in the next job on the same worker (sequential jobs go to the first
# idle worker).  The job's PYTHONPATH is in front of its sys.path.
mkdir -p "$TMP/pp" && echo 'X = "from-pp"' >"$TMP/pp/ppmod.py"
cat >env.py <<'PY'
import json, os, sys
try:
    import ppmod
    pp = ppmod.X
except ImportError:
    pp = None
# (A module once imported stays in a worker: sys.path tells the next job.)
inpath = any(p.endswith("/pp") for p in sys.path)
print(json.dumps({k: os.environ.get(k) for k in (
    "FOO", "SERVER_ONLY", "CUDA_VISIBLE_DEVICES", "KMUX_WORKER_INDEX",
    "LD_PRELOAD", "ADDED")} | {"pp": pp, "inpath": inpath,
                               "big": len(os.environ.get("BIG1", ""))}))
os.environ["ADDED"] = "by the job"
PY
big=$(head -c 100000 /dev/zero | tr '\0' x)
FOO="a b=c" BIG1=$big BIG2=$big CUDA_VISIBLE_DEVICES=5 KMUX_WORKER_INDEX=99 \
	PYTHONPATH=$TMP/pp expect_rc 0 "a job with the submitter's environment (200 KB)" \
	"$KMUX" bench submit -o "$TMP/env" -- env.py
cp "$TMP/out" "$TMP/env1"
expect_rc 0 "  ... and the next job without it" "$KMUX" bench submit -o "$TMP/env" -- env.py
cp "$TMP/out" "$TMP/env2"
python3 - "$TMP/env1" "$TMP/env2" "${CUDA_VISIBLE_DEVICES-}" >"$TMP/envs" <<'PY'
import json, sys
r1, r2 = (json.load(open(f)) for f in sys.argv[1:3])
e1, e2 = (json.loads(open(r["out"]).read()) for r in (r1, r2))
cvd = sys.argv[3] or None
print(e1["FOO"] == "a b=c" and e1["big"] == 100000 and e1["pp"] == "from-pp" and e1["inpath"],
      e1["SERVER_ONLY"] is None and e1["CUDA_VISIBLE_DEVICES"] == cvd and
      e1["KMUX_WORKER_INDEX"] == str(r1["worker"]) and
      "libkmux" in (e1["LD_PRELOAD"] or ""),
      r1["worker_pid"] == r2["worker_pid"] and e2["FOO"] is None and
      e2["big"] == 0 and e2["ADDED"] is None and not e2["inpath"] and
      e2["SERVER_ONLY"] is None)
PY
check "  ... it had FOO, the 100 KB BIG1 and PYTHONPATH's module" [ "$(cut -d' ' -f1 "$TMP/envs")" = True ]
check "  ... but not the server's SERVER_ONLY; CUDA_VISIBLE_DEVICES, KMUX_*, LD_PRELOAD the worker's" \
	[ "$(cut -d' ' -f2 "$TMP/envs")" = True ]
check "  ... the next job on the same worker has none of it, nor what the job added" \
	[ "$(cut -d' ' -f3 "$TMP/envs")" = True ]
FOO=plain expect_rc 0 "a plain job gets the environment too" "$KMUX" bench submit -o "$TMP/envp" -- sh -c 'echo "$FOO $KMUX_WORKER_INDEX"'
check "  ... FOO, no worker index" [ "$(cat "$(rec "$TMP/out" 'r["out"]')")" = "plain " ]
big=$(head -c 110000 /dev/zero | tr '\0' x)
B1=$big B2=$big B3=$big B4=$big B5=$big B6=$big B7=$big B8=$big B9=$big B10=$big \
	expect_rc 1 "an environment over the 1 MiB request limit: refused" "$KMUX" bench submit -- env.py
check "  ... saying so" grep -q "more than a request may be (1048576)" "$TMP/err"
unset big
# A client that shuts down its writing side still gets its record.
python3 - "$TMP/bench.sock" "$TMP" >"$TMP/half" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps({"argv": ["job.py", "4"], "cwd": sys.argv[2],
                      "out_dir": sys.argv[2], "env": ["A=1"]}).encode()
          + b"\n")
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(json.loads(data)["exit"])
PY
check "a client that half-closes after its request: the job runs, its record comes" [ "$(cat "$TMP/half")" = 4 ]

# Cancelling: a submit interrupted mid-job exits 130, and the server kills
# that worker (the job's process) and replaces it.
rm -f "$TMP/c1"
"$KMUX" bench submit -- sleepy.py "$TMP/c1" >/dev/null 2>&1 &
cp=$!
for _ in $(seq 100); do [ -s "$TMP/c1" ] && break; sleep 0.1; done
victim=$(cat "$TMP/c1")
kill -INT "$cp"
wait "$cp"
check "an interrupted submit (SIGINT) exits 130" [ $? = 130 ]
for _ in $(seq 100); do kill -0 "$victim" 2>/dev/null || break; sleep 0.1; done
check "  ... the server killed the job's worker" cond '! kill -0 "$victim" 2>/dev/null'
check "  ... and says so" grep -q "cancelled: its client left; killing worker" "$TMP/serve.err"
"$KMUX" bench submit -- job.py 0 >"$TMP/a1" 2>/dev/null &
p1=$!
"$KMUX" bench submit -- job.py 0 >"$TMP/a2" 2>/dev/null &
wait "$p1" $!
check "  ... the next jobs run, in live workers" \
	cond '[ "$(rec "$TMP/a1" "r[\"exit\"]")" = 0 ] && [ "$(rec "$TMP/a2" "r[\"exit\"]")" = 0 ] &&
	      [ "$(rec "$TMP/a1" "r[\"worker_pid\"]")" != "$victim" ] && [ "$(rec "$TMP/a2" "r[\"worker_pid\"]")" != "$victim" ]'
# A queued job whose client left never runs: both workers busy, a third
# job queued, its client killed; then the busy ones' clients are
# terminated (143), which frees the workers.
rm -f "$TMP/q1" "$TMP/q2" "$TMP/q3"
"$KMUX" bench submit -- sleepy.py "$TMP/q1" >/dev/null 2>&1 &
q1=$!
"$KMUX" bench submit -- sleepy.py "$TMP/q2" >/dev/null 2>&1 &
q2=$!
for _ in $(seq 100); do [ -s "$TMP/q1" ] && [ -s "$TMP/q2" ] && break; sleep 0.1; done
"$KMUX" bench submit -- sleepy.py "$TMP/q3" >/dev/null 2>&1 &
q3=$!
check "  ... a third job is taken, and waits" until_ok 10 request_taken "$q3"
# Its hangup is seen at the latest with the others' below, before their
# workers are gone: no wait needed.
{ kill -KILL "$q3"; wait "$q3"; } 2>/dev/null
kill -TERM "$q1" "$q2"
wait "$q1"; r1=$?
wait "$q2"; r2=$?
check "terminated submits (SIGTERM) exit 143" [ "$r1 $r2" = "143 143" ]
for _ in $(seq 100); do grep -q "dropped before it ran" "$TMP/serve.err" && break; sleep 0.1; done
check "  ... the queued job whose client was killed is dropped" grep -q "sleepy.py $TMP/q3) dropped before it ran: its client left" "$TMP/serve.err"
expect_rc 0 "  ... the workers come back: a job runs" "$KMUX" bench submit -- job.py 0
sleep 0.5
check "  ... and the dropped job never ran" [ ! -e "$TMP/q3" ]
check "  ... the cancelled workers are gone" cond '! kill -0 "$(cat "$TMP/q1")" 2>/dev/null && ! kill -0 "$(cat "$TMP/q2")" 2>/dev/null'

# Two jobs running, a third queued, then SIGTERM.
pids=$(pgrep -P "$SERVE")
"$KMUX" bench submit -- sleepy.py "$TMP/t1" >"$TMP/k1" 2>"$TMP/k1.err" &
sp1=$!
until_ok 10 test -s "$TMP/t1"
"$KMUX" bench submit -- sleepy.py "$TMP/t2" >"$TMP/k2" 2>"$TMP/k2.err" &
sp2=$!
until_ok 10 test -s "$TMP/t2"
"$KMUX" bench submit -- sleepy.py "$TMP/t3" >"$TMP/k3" 2>"$TMP/k3.err" &
sp3=$!
check "two jobs run, a third is taken and queued" until_ok 10 request_taken "$sp3"
# A client connected that has not sent its request yet (accepted or still
# in the listen backlog): it gets an answer too, not a bare hangup.
python3 - "$TMP/bench.sock" >"$TMP/idle.out" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("connected", flush=True)
s.settimeout(30)
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data.decode(errors="replace"), flush=True)
PY
idle=$!
until_ok 10 grep -q connected "$TMP/idle.out"
kill -TERM "$SERVE"
wait "$SERVE"
check "SIGTERM: serve exits 0" [ $? = 0 ]
wait "$sp1"; r1=$?
wait "$sp2"; r2=$?
wait "$sp3"; r3=$?
check "  ... the running jobs' clients get their records: killed, 128+15" cond '[ $r1 = 143 ] && [ $r2 = 143 ] && grep -q "\"signal\":15" "$TMP/k1"'
check "  ... the queued job's client gets an error: exit 1" cond '[ $r3 = 1 ] && grep -q "the server is stopping" "$TMP/k3.err" && [ ! -e "$TMP/t3" ]' 
wait "$idle"
check "  ... a client that sent nothing yet gets the same error" grep -q "the server is stopping" "$TMP/idle.out"
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

# Stopped (SIGINT once two jobs run): the workers and what they run are
# gone.
"$KMUX" bench run -w 2 "sleepy.py $TMP/s1" "sleepy.py $TMP/s2" "sleepy.py $TMP/s3" >"$TMP/st.json" 2>/dev/null &
br=$!
until_ok 30 cond '[ -s "$TMP/s1" ] && [ -s "$TMP/s2" ]'
kill -INT "$br"
wait "$br"
check "run --workers stopped by SIGINT: exit 1" [ $? = 1 ]
check "  ... both running jobs killed, recorded with their signal" \
	[ "$(python3 -c 'import json, sys; print(sorted(r["signal"] for r in map(json.loads, open(sys.argv[1]))))' "$TMP/st.json")" = "[15, 15]" ]
check "  ... their workers gone, the third never started" \
	cond '! kill -0 "$(cat "$TMP/s1")" 2>/dev/null && ! kill -0 "$(cat "$TMP/s2")" 2>/dev/null && [ ! -e "$TMP/s3" ]'
kill -0 "$SERVE" 2>/dev/null && kill -9 "$SERVE"
finish
