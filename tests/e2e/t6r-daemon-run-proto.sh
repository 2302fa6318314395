#!/usr/bin/env bash
# The daemon's side of `kmux run` and of the preload, driven over the wire
# (python3): RUN gets OK(id), then QUEUED once if it must wait, then ADMIT
# with its GPUs and quota when memory frees up; the preload's REGISTER of a
# running job gets the same ADMIT and tells the daemon the pid; ALLOC_UPDATE
# raises the job's peak; FINISHED records the exit code; a RUN client that
# hangs up takes its job with it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

start_daemon
blocker=$("$KMUX" submit -m 10G -- sleep 1)
wait_state "$blocker" running
python3 - "$KMUX_SOCKET" >"$TMP/runproto" 2>&1 <<'PY'
import os, socket, struct, sys

path = sys.argv[1]
MAGIC, VERSION = 0x58554d4b, 11
GiB = 1 << 30

def s(text):
    b = text.encode() + b"\0"
    return struct.pack("<I", len(b)) + b

def strv(items):
    block = b"".join(x.encode() + b"\0" for x in items)
    return struct.pack("<II", len(items), len(block)) + block

class Conn:
    def __init__(self):
        self.c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.c.settimeout(10)
        self.c.connect(path)
        self.buf = b""
        self.seq = 0
        self.send(100, struct.pack("<HHI", 1, 0, os.getpid()) + s("t6r"))
        assert self.recv()[0] == 200

    def send(self, typ, payload):
        self.seq += 1
        self.c.sendall(struct.pack("<IHHII", MAGIC, VERSION, typ, len(payload),
                                   self.seq) + payload)
        return self.seq

    def recv(self):
        while len(self.buf) < 16 or len(self.buf) < 16 + struct.unpack("<I", self.buf[8:12])[0]:
            b = self.c.recv(65536)
            if not b:
                raise EOFError
            self.buf += b
        _, _, typ, n, seq = struct.unpack("<IHHII", self.buf[:16])
        p, self.buf = self.buf[16:16 + n], self.buf[16 + n:]
        return typ, seq, p

def check(what, cond):
    print(("ok   " if cond else "BAD  ") + what)

def run_req(mem, argv):
    return (struct.pack("<IIQiI", 0, 1, mem, 0, 0) + s("fg") + s("/") +
            strv(argv) + strv(["A=1"]))

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
seq = a.send(110, struct.pack("<QIiiI", job, os.getpid(), 7, 0, 0))
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
finish
