# wire.py - kmuxd's wire protocol for the e2e tests that speak it directly
# (t66, t6r): the frame, the str and strv encodings, RUN's and FINISHED's
# payloads, a connection that has said HELLO, and the tests' ok/BAD lines.  The version is read from
# src/common/proto.h, so a protocol bump needs no edit here.
import os
import re
import socket
import struct

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "..", "..", "src", "common", "proto.h")) as _f:
    VERSION = int(re.search(r"#define PROTO_VERSION (\d+)", _f.read()).group(1))
MAGIC = 0x58554d4b
GiB = 1 << 30


def s(text):
    """A str field: u32 length, bytes, NUL."""
    b = text.encode() + b"\0"
    return struct.pack("<I", len(b)) + b


def strv(items):
    """A strv field: u32 count, u32 bytes, the NUL-terminated strings."""
    block = b"".join(x.encode() + b"\0" for x in items)
    return struct.pack("<II", len(items), len(block)) + block


def run_req(mem, argv, name="fg"):
    """RUN's payload: one GPU, mem bytes, cwd "/", the environment A=1."""
    return (struct.pack("<IIQiI", 0, 1, mem, 0, 0) + s(name) + s("/") +
            strv(argv) + strv(["A=1"]))


def finished(job, code):
    """FINISHED's payload: job ended with exit code, from this process."""
    return struct.pack("<QIiiI", job, os.getpid(), code, 0, 0)


class Conn:
    """A connection to path that has said HELLO (role CLI)."""

    def __init__(self, path, ident="e2e"):
        self.c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.c.settimeout(10)
        self.c.connect(path)
        self.buf = b""
        self.seq = 0
        self.send(100, struct.pack("<HHI", 1, 0, os.getpid()) + s(ident))
        assert self.recv()[0] == 200

    def send(self, typ, payload):
        self.seq += 1
        self.c.sendall(struct.pack("<IHHII", MAGIC, VERSION, typ, len(payload),
                                   self.seq) + payload)
        return self.seq

    def recv(self):
        while len(self.buf) < 16 or \
                len(self.buf) < 16 + struct.unpack("<I", self.buf[8:12])[0]:
            b = self.c.recv(65536)
            if not b:
                raise EOFError
            self.buf += b
        _, _, typ, n, seq = struct.unpack("<IHHII", self.buf[:16])
        p, self.buf = self.buf[16:16 + n], self.buf[16 + n:]
        return typ, seq, p


def check(what, cond):
    print(("ok   " if cond else "BAD  ") + what)
