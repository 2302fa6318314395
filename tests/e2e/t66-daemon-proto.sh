#!/usr/bin/env bash
# Bad peers on the socket: garbage, an oversized header, another protocol
# version, a request before HELLO, a malformed payload, a reply sent as a
# request, a peer that hangs up mid-frame.  Each gets an ERROR (with the
# right errno) and is disconnected; the daemon serves the next client.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

start_daemon
pid=$(daemon_pid)
PYTHONPATH=$(dirname "$0") python3 - "$KMUX_SOCKET" >"$TMP/proto" 2>&1 <<'PY'
import errno, os, socket, struct, sys
from wire import MAGIC, VERSION, s

path = sys.argv[1]

def frame(typ, payload=b"", seq=7, version=VERSION, length=None):
    n = len(payload) if length is None else length
    return struct.pack("<IHHII", MAGIC, version, typ, n, seq) + payload

def hello():
    return frame(100, struct.pack("<HHI", 1, 0, os.getpid()) + s("test"), seq=1)

def exchange(data, close_write=False):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(5)
    c.connect(path)
    c.sendall(data)
    if close_write:
        c.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        try:
            b = c.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        got += b
    c.close()
    frames = []
    while len(got) >= 16:
        magic, ver, typ, n, seq = struct.unpack("<IHHII", got[:16])
        frames.append((typ, seq, got[16:16 + n]))
        got = got[16 + n:]
    return frames

def error_of(frames):
    typ, seq, p = frames[-1]
    assert typ == 201, frames
    err, = struct.unpack("<i", p[:4])
    n, = struct.unpack("<I", p[8:12])
    return err, seq, p[12:12 + n - 1].decode()

def case(name, data, want_err, want_seq=None, after_hello=False, keep=False):
    # keep: an error about the request, not the peer: no hang-up expected.
    frames = exchange((hello() if after_hello else b"") + data, keep)
    err, seq, msg = error_of(frames)
    ok = err == want_err and (want_seq is None or seq == want_seq)
    print(("ok  " if ok else "BAD ") + "%s: errno %d (%s) seq %d: %s" %
          (name, err, errno.errorcode.get(err, "?"), seq, msg))

case("garbage", b"GET / HTTP/1.0\r\n\r\n", errno.EPROTO)
case("oversized", frame(105, length=2 << 20), errno.EMSGSIZE, 7)
case("version 1", frame(105, struct.pack("<II", 0, 0), version=1),
     errno.EPROTONOSUPPORT, 7)
# v4 peers (before ADMIT carried the MPS directories) are refused clearly.
case("version 4", frame(105, struct.pack("<II", 0, 0), version=4),
     errno.EPROTONOSUPPORT, 7)
# v5 peers (before ALLOC_UPDATE carried the thrash verdict) too.
case("version 5", frame(105, struct.pack("<II", 0, 0), version=5),
     errno.EPROTONOSUPPORT, 7)
# v6 peers (before MEM_PRESSURE could ask for budget) too.
case("version 6", frame(105, struct.pack("<II", 0, 0), version=6),
     errno.EPROTONOSUPPORT, 7)
# v8 peers (before ALLOC_UPDATE carried the host's waits) too.
case("version 8", frame(105, struct.pack("<II", 0, 0), version=8),
     errno.EPROTONOSUPPORT, 7)
# v9 peers (before a job record said why a queued job is held) too.
case("version 9", frame(105, struct.pack("<II", 0, 0), version=9),
     errno.EPROTONOSUPPORT, 7)
# v10 peers (before a `kmux run` could ATTACH to its job again) too.
case("version 10", frame(105, struct.pack("<II", 0, 0), version=10),
     errno.EPROTONOSUPPORT, 7)
case("before HELLO", frame(105, struct.pack("<II", 0, 0)), errno.EPROTO, 7)
case("bad HELLO role", frame(100, struct.pack("<HHI", 9, 0, 1) + s("x")),
     errno.EBADMSG, 7)
case("reply as request", frame(200, struct.pack("<Q", 0)), errno.EPROTO,
     after_hello=True)
case("trailing bytes", frame(105, struct.pack("<III", 0, 0, 0)),
     errno.EBADMSG, 7, after_hello=True)
case("unknown job", frame(106, struct.pack("<Q", 424242)), errno.ENOENT,
     7, after_hello=True, keep=True)
# Half a frame, then the peer hangs up: nothing to answer, nothing breaks.
frames = exchange(hello() + frame(105, struct.pack("<II", 0, 0))[:20],
                  close_write=True)
print(("ok  " if [f[0] for f in frames] == [200] else "BAD ") +
      "half a frame then EOF: %s" % [f[0] for f in frames])
# A well-formed session still works on a fresh connection.
frames = exchange(hello() + frame(105, struct.pack("<II", 0, 0), seq=2),
                  close_write=True)
print(("ok  " if [f[0] for f in frames] == [200, 203] else "BAD ") +
      "HELLO + PS: %s" % [f[0] for f in frames])
PY
sed 's/^/    /' "$TMP/proto"
check "every bad peer got the right ERROR" cond '! grep -q "^BAD" "$TMP/proto" && [ $(grep -c "^ok" "$TMP/proto") -eq 16 ]'
check "the daemon is the same process" [ "$(daemon_pid)" = "$pid" ]
check "  ... and alive" kill -0 "$pid"
expect_rc 0 "the next client is served" "$KMUX" ps
id=$("$KMUX" submit -- echo fine)
expect_rc 0 "  ... and jobs still run" "$KMUX" wait "$id"
finish
