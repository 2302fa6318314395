"""kmux: exclusive regions for benchmarks on shared GPUs (issue 6).

    import kmux
    with kmux.exclusive():          # waits for the GPU alone (FIFO)
        time_the_kernel()           # others' work is gated and frozen
    # leaving synchronizes the holder's work, then releases the GPU

ctypes over libkmux.so, no build step.  The library is the one the
process already carries (kmux runs it with LD_PRELOAD), or $KMUX_LIBRARY.
Outside kmux every call is a cheap no-op: begin() returns NOOP (1).
Return codes are those of include/kmux.h (0, NOOP, or -errno); the
context manager raises KmuxError on a negative one.

    with kmux.streams_paused():     # under kmux run --streams N
        code_kmux_must_not_reorder()

runs the block's default-stream work as submitted (kmux_streams_pause()).
"""
import contextlib
import ctypes
import errno
import os
import warnings

__all__ = ["NOOP", "KmuxError", "available", "begin", "end", "depth",
           "exclusive", "library", "streams_pause", "streams_paused"]

NOOP = 1

_lib = None
_looked = False


class KmuxError(OSError):
    """A region call failed: errno is the negated return code."""


def library():
    """The ctypes handle of libkmux.so, or None when not under kmux."""
    global _lib, _looked
    if _looked:
        return _lib
    _looked = True
    candidates = []
    try:
        candidates.append(ctypes.CDLL(None))   # the process, LD_PRELOAD included
    except OSError:
        pass
    path = os.environ.get("KMUX_LIBRARY")
    if path:
        try:
            candidates.append(ctypes.CDLL(path))
        except OSError as e:
            warnings.warn("kmux: cannot load KMUX_LIBRARY=%s: %s" % (path, e))
    for lib in candidates:
        try:
            fb, fe, fd = (lib.kmux_exclusive_begin, lib.kmux_exclusive_end,
                          lib.kmux_exclusive_depth)
        except AttributeError:
            continue
        for f in (fb, fe, fd):
            f.restype = ctypes.c_int
            f.argtypes = []
        _lib = lib
        break
    return _lib


def available():
    """True when the process runs under libkmux.so."""
    return library() is not None


def begin():
    """Enter a region: 0 (held), NOOP (not under kmux), or -errno."""
    lib = library()
    return lib.kmux_exclusive_begin() if lib else NOOP


def end():
    """Leave a region: 0, or -errno (-EPERM: none open)."""
    lib = library()
    return lib.kmux_exclusive_end() if lib else 0


def depth():
    """Regions open in this process."""
    lib = library()
    return lib.kmux_exclusive_depth() if lib else 0


def _check(rc, what):
    if rc < 0:
        raise KmuxError(-rc, "kmux: %s: %s" % (what, os.strerror(-rc)))
    return rc


@contextlib.contextmanager
def exclusive():
    """The GPU alone for the duration of the block (nestable).

    Yields True when the region is exclusive, False when it is a no-op
    (no kmux daemon: the library warns once on stderr).
    """
    rc = _check(begin(), "exclusive region")
    try:
        yield rc == 0
    finally:
        _check(end(), "leaving the exclusive region")


def streams_pause(pause):
    """Pause (True) or resume (False) kmux's stream scheduler.

    The state before (1: it was paused), or -errno: -ENOTSUP when the
    process is not scheduled (no kmux, or no --streams), -EBUSY during a
    stream capture.  Each switch drains the GPU work of the process.
    """
    lib = library()
    fn = getattr(lib, "kmux_streams_pause", None) if lib else None
    if fn is None:
        return -errno.ENOTSUP
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int]
    return fn(1 if pause else 0)


@contextlib.contextmanager
def streams_paused():
    """The block's default-stream work runs as submitted, not reordered.

    Yields True when it paused the scheduler, False when there was nothing
    to pause (not scheduled).  Nests: an inner block leaves it paused.
    """
    rc = streams_pause(True)
    if rc == -errno.ENOTSUP:
        yield False
        return
    _check(rc, "pausing the stream scheduler")
    try:
        yield True
    finally:
        if rc == 0:
            _check(streams_pause(False), "resuming the stream scheduler")
