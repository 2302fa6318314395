#!/usr/bin/env bash
# The daemon's side of `kmux run` and of the preload, driven over the wire
# (python3): RUN gets OK(id), then QUEUED once if it must wait, then ADMIT
# with its GPUs and quota when memory frees up; the preload's REGISTER of a
# running job gets the same ADMIT and tells the daemon the pid; ALLOC_UPDATE
# raises the job's peak; FINISHED records the exit code; a RUN client that
# hangs up takes its job with it.  STARTED (v12) names the command's pid,
# which kmuxd then signals itself; it takes that only from the job's own
# connection, for a child of that connection's process.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

start_daemon
# Long enough that a loaded machine still starts the RUN below while it runs.
blocker=$("$KMUX" submit -m 10G -- sleep 3)
wait_state "$blocker" running
PYTHONPATH=$(dirname "$0") python3 - "$KMUX_SOCKET" >"$TMP/runproto" 2>&1 <<'PY'
import os, struct, sys
from wire import GiB, Conn as WireConn, check, finished, run_req, s, strv

path = sys.argv[1]
Conn = lambda: WireConn(path, "t6r")

# RUN while the GPU is taken: OK, QUEUED, then ADMIT once it is free.
a = Conn()
seq = a.send(102, run_req(10 * GiB, ["fg-cmd", "x"]))
typ, rseq, p = a.recv()
check("RUN -> OK(id)", typ == 200 and rseq == seq)
job, = struct.unpack("<Q", p)
typ, rseq, p = a.recv()
check("then QUEUED (position 0)", typ == 207 and struct.unpack("<QI", p[:12]) == (job, 0))
typ, rseq, p = a.recv()
j, quota, n, _ = struct.unpack("<QQII", p[:24])
gpus = struct.unpack("<%dI" % n, p[24:24 + 4 * n])
check("then ADMIT with its GPU and its 10 GiB quota", typ == 202 and rseq == seq and
      j == job and quota == 10 * GiB and gpus == (0,))
# v5: then the MPS pipe and log directories, "" and "" without --mps.
check("  ... and no MPS directories (a daemon without --mps)",
      p[24 + 4 * n:] == struct.pack("<I", 1) + b"\0" + struct.pack("<I", 1) + b"\0")

# The preload of that process registers: same ADMIT; the daemon learns its pid.
pre = Conn()
def register(job, argv, mem=0, gpus=0, flags=0, ngpus=1, name=""):
    return (struct.pack("<QQQQIIII", job, 0, mem, gpus, os.getpid(), flags,
                        ngpus, 0) + s(name) + strv(argv))

pre.send(103, register(job, ["fg-cmd", "x"]))
typ, _, p = pre.recv()
check("REGISTER of the job -> ADMIT", typ == 202 and struct.unpack("<QQ", p[:16]) == (job, 10 * GiB))
pre.send(104, struct.pack("<QIIQQQQQQQQIIQQ", job, os.getpid(), 0, 1 * GiB, 3 * GiB, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
# REGISTER of a process kmux did not start: a job of its own, admitted on
# the declared 2 GiB beside the 10 GiB run job.
other = Conn()
other.send(103, register(0, ["other"], mem=2 * GiB, name="uncoop"))
typ, _, p = other.recv()
check("REGISTER of a process kmux did not start -> ADMIT (a new job, 2 GiB)",
      typ == 202 and struct.unpack("<Q", p[8:16])[0] == 2 * GiB and
      struct.unpack("<Q", p[:8])[0] not in (0, job))
other.c.close()
print("JOB %d" % job)
sys.stdout.flush()
# A RUN client that hangs up while queued takes its job with it.
b = Conn()
b.send(102, run_req(15 * GiB, ["gone"]))
typ, _, p = b.recv()
job2, = struct.unpack("<Q", p)
typ, _, _ = b.recv()
check("a second RUN that does not fit beside the first is QUEUED", typ == 207)
print("JOB2 %d" % job2)
b.c.close()
# FINISHED with exit 7.
seq = a.send(110, finished(job, 7))
typ, rseq, _ = a.recv()
check("FINISHED -> OK", typ == 200 and rseq == seq)
PY
sed 's/^/    /' "$TMP/runproto"
check "every exchange as documented" cond '! grep -q "^BAD" "$TMP/runproto" && [ "$(grep -c "^ok" "$TMP/runproto")" = 8 ]'
job=$(sed -n 's/^JOB \([0-9]*\)$/\1/p' "$TMP/runproto")
job2=$(sed -n 's/^JOB2 \([0-9]*\)$/\1/p' "$TMP/runproto")
check "the RUN job ended with the exit code its client reported" \
	[ "$(jq_job "$job" 'j["state"], j["exit_code"]')" = "('exited', 7)" ]
check "  ... its peak came from ALLOC_UPDATE (3 GiB)" [ "$(jq_job "$job" 'j["mem_peak"] >> 30')" = 3 ]
check "  ... its pid from REGISTER" [ "$(jq_job "$job" 'j["pid"] is not None')" = True ]
check "  ... it has no log" cond '! "$KMUX" logs "$job" 2>/dev/null'
check "the job of the client that hung up is cancelled" wait_state "$job2" cancelled 20
check "nothing is left committed" [ "$(top_json 't["gpus"][0]["mem_committed"]')" = 0 ]

# STARTED: the client names its command's pid; kmuxd checks it is the
# client's own child and then signals the command itself on cancel.
# Without it, cancel reaches the client (SIGTERM here), which passes it on.
PYTHONPATH=$(dirname "$0") python3 - "$KMUX_SOCKET" "$KMUX" >"$TMP/started" 2>&1 <<'PY'
import os, signal, subprocess, sys, time, struct
from wire import GiB, Conn as WireConn, check, finished, run_req, s, strv

path, kmux = sys.argv[1], sys.argv[2]
Conn = lambda: WireConn(path, "t6r")

def admitted(conn, name):
    conn.send(102, run_req(1 * GiB, [name], name))
    typ, _, p = conn.recv()
    job, = struct.unpack("<Q", p)
    typ, _, p = conn.recv()
    return job if typ == 202 else None

def started(conn, job, pid):
    seq = conn.send(115, struct.pack("<QII", job, pid, 0))
    typ, rseq, p = conn.recv()
    err = struct.unpack("<Q", p[:8])[0] if typ == 201 else 0
    return typ, err

def cancel(job, *opts):
    return subprocess.run([kmux, "cancel", *opts, str(job)],
                          capture_output=True, text=True)

a = Conn()
job = admitted(a, "started")
check("a RUN job is admitted", job is not None)
child = subprocess.Popen(["sleep", "30"])
check("STARTED with a pid that is not the client's child -> EPERM",
      started(a, job, os.getppid()) == (201, 1))
other = Conn()
check("STARTED from another connection -> ENOENT",
      started(other, job, child.pid) == (201, 2))
check("STARTED for a job that does not exist -> ENOENT",
      started(a, 999999, child.pid) == (201, 2))
check("STARTED with the client's own child -> OK",
      started(a, job, child.pid)[0] == 200)
r = cancel(job)
check("kmux cancel of it succeeds", r.returncode == 0)
try:
    rc = child.wait(timeout=5)
except subprocess.TimeoutExpired:
    rc = None
check("  ... and kmuxd signalled the command itself (SIGTERM)", rc == -signal.SIGTERM)
seq = a.send(110, finished(job, 128 + 15))
check("FINISHED -> OK", a.recv()[0] == 200)
print("JOB %d" % job)

# No STARTED: kmuxd knows only the client, and signals it.
got = []
signal.signal(signal.SIGTERM, lambda sig, frame: got.append(sig))
b = Conn()
job2 = admitted(b, "nostart")
r = cancel(job2, "-s", "KILL")
check("without STARTED, cancel -s KILL is refused (it would kill the client)",
      r.returncode == 1 and "would stop the client" in r.stderr)
r = cancel(job2)
for _ in range(100):
    if got:
        break
    time.sleep(0.05)
check("  ... and cancel sends SIGTERM to the client", r.returncode == 0 and got == [signal.SIGTERM])
b.send(110, finished(job2, 128 + 15))
check("FINISHED -> OK", b.recv()[0] == 200)
print("JOB2 %d" % job2)
PY
sed 's/^/    /' "$TMP/started"
check "STARTED as documented" cond '! grep -q "^BAD" "$TMP/started" && [ "$(grep -c "^ok" "$TMP/started")" = 11 ]'
sj=$(sed -n 's/^JOB \([0-9]*\)$/\1/p' "$TMP/started")
sj2=$(sed -n 's/^JOB2 \([0-9]*\)$/\1/p' "$TMP/started")
check "  ... the job has its command's pid and is recorded cancelled" \
	[ "$(jq_job "$sj" 'j["state"], j["pid"] is not None')" = "('cancelled', True)" ]
check "  ... the daemon's log names the pid" \
	grep -q "job $sj: its command runs as pid" "$KMUX_STATE_DIR/kmuxd.log"
check "  ... the one without STARTED is cancelled too" \
	[ "$(jq_job "$sj2" 'j["state"]')" = cancelled ]

# A daemon restarted while a `kmux run` command runs watches it by the pid
# STARTED named; cancelled by that daemon and seen gone before its client
# comes back (the client has not reaped it yet), the job is recorded
# cancelled with its code unknown, and the client's late FINISHED fills
# the code in.
PYTHONPATH=$(dirname "$0") python3 - "$KMUX_SOCKET" "$KMUX" >"$TMP/late" 2>&1 <<'PY'
import fcntl, json, os, signal, struct, subprocess, sys, time
from wire import GiB, Conn as WireConn, check, finished, run_req, s, strv

path, kmux = sys.argv[1], sys.argv[2]
Conn = lambda: WireConn(path, "t6r")

def state(job):
    out = subprocess.run([kmux, "ps", "--all", "--json"], capture_output=True,
                         text=True).stdout
    return [j["state"] for j in json.loads(out) if j["id"] == job][0]

a = Conn()
a.send(102, run_req(1 * GiB, ["late"], "late"))
job, = struct.unpack("<Q", a.recv()[2][:8])
check("a RUN job is admitted", a.recv()[0] == 202)
child = subprocess.Popen(["sleep", "30"])
a.send(115, struct.pack("<QII", job, child.pid, 0))
check("STARTED -> OK", a.recv()[0] == 200)
lock = path + ".lock"
os.kill(int(open(lock).read()), signal.SIGKILL)
for _ in range(300):
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        break
    except BlockingIOError:
        time.sleep(0.1)
    finally:
        os.close(fd)
check("kill -9 of the daemon; a new one starts",
      subprocess.run([kmux, "daemon", "--kill-grace", "1"]).returncode == 0)
check("  ... the job still runs", state(job) == "running")
check("the new daemon cancels it",
      subprocess.run([kmux, "cancel", str(job)]).returncode == 0)
for _ in range(100):
    if state(job) == "cancelled":
        break
    time.sleep(0.1)
check("  ... and records it cancelled once the command is gone",
      state(job) == "cancelled")
b = Conn()
b.send(110, finished(job, 128 + 15))
rep = b.recv()
check("the client's late FINISHED -> OK", rep[0] == 200)
check("  ... its command did die of SIGTERM", child.wait() == -signal.SIGTERM)
print("JOB3 %d" % job)
PY
sed 's/^/    /' "$TMP/late"
check "a late FINISHED after a restart and a cancel" cond '! grep -q "^BAD" "$TMP/late" && [ "$(grep -c "^ok" "$TMP/late")" = 8 ]'
lj=$(sed -n 's/^JOB3 \([0-9]*\)$/\1/p' "$TMP/late")
check "  ... the job is recorded cancelled, with the code its client sent" \
	[ "$(jq_job "$lj" 'j["state"], j["exit_code"]')" = "('cancelled', 143)" ]
finish
