"""kmux.worker: a persistent context worker of `kmux bench serve` (issue 6).

Started by kmux (never by hand) with a control socket on the fd named by
$KMUX_WORKER_FD.  It initializes CUDA once (torch when importable: import
torch, torch.cuda.init() and one allocation so that the primary context
exists; else the driver through ctypes: cuInit, cuDevicePrimaryCtxRetain,
cuCtxSetCurrent), says it is ready, then runs the Python jobs kmux sends it
one after another, in this process, so that each job finds the context (and
torch) already there: creating a context is slow and serialized across the
node.

Control protocol, one JSON object a line on the control fd:
  worker -> kmux  {"ready": true, "pid", "cuda", "torch", "ctx", "init_s"}
  kmux -> worker  {"i", "argv": [SCRIPT, ARGS...], "cwd", "out", "err",
                   "env": ["K=V", ...] (absent: the worker's own)}
  worker -> kmux  {"i", "exit", "run_s"}
A job runs as `python SCRIPT ARGS` would (runpy.run_path as __main__,
sys.argv set, the script's directory first on sys.path), in cwd, its
stdout/stderr redirected at the fd level to out/err (None: inherited),
os.environ set to env but for KEPT_ENV, which keep the worker's values (a
running process cannot change them), and the job's PYTHONPATH entries in
front of sys.path; all of it restored after the job.
SystemExit gives its exit code; an exception, exit 1 and its traceback on
the job's stderr.  A job that kills the process (os._exit, a signal) kills
the worker: kmux reports the job failed and starts another worker.  A job
that leaves more than $KMUX_WORKER_HELD_MAX_MIB (64) of GPU memory
referenced after it (torch tensors, CuPy arrays) makes the worker retire
once the job's result is sent; kmux starts another.
Stdlib only.
"""
import ctypes
import json
import os
import runpy
import sys
import time
import traceback

# os.environ of the job as $KMUX_WORKER_JOB_T0: the wall time (time.time())
# when the worker took the job, so that a benchmark can tell its start-up.
JOB_T0_ENV = "KMUX_WORKER_JOB_T0"

# Variables a process reads once as it starts (ld.so, libcuda, kmux's
# preload): a job cannot have its own, they stay the worker's.  The same
# list as bjob_env_kept() in src/cli/bench-job.c.
KEPT_ENV = ("LD_PRELOAD", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES")
KEPT_ENV_PREFIX = "KMUX_"


def _kept(name):
    return name in KEPT_ENV or name.startswith(KEPT_ENV_PREFIX)


def _job_environ(env, own):
    """The job's environment: env's "K=V" (the first of a name wins, as
    getenv(3) finds it) but the kept variables, which are own's."""
    new = {}
    for kv in env:
        k, _, v = kv.partition("=")
        if k and not _kept(k) and k not in new:
            new[k] = v
    new.update((k, v) for k, v in own.items() if _kept(k))
    return new


def init_cuda():
    """Create the CUDA context once; (description, torch version, ctx)."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        try:
            torch.cuda.init()
            torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
            return "torch", torch.__version__, _current_ctx()
        except Exception as e:  # noqa: BLE001 - reported, jobs still run
            return "torch: %s" % e, torch.__version__, None
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        dev = ctypes.c_int()
        ctx = ctypes.c_void_p()
        for what, rc in (
                ("cuInit", lambda: cu.cuInit(0)),
                ("cuDeviceGet", lambda: cu.cuDeviceGet(ctypes.byref(dev), 0)),
                ("cuDevicePrimaryCtxRetain",
                 lambda: cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)),
                ("cuCtxSetCurrent", lambda: cu.cuCtxSetCurrent(ctx))):
            r = rc()
            if r != 0:
                return "%s: CUDA error %d" % (what, r), None, None
        return "driver", None, ctx.value
    except OSError as e:
        return "no libcuda.so.1: %s" % e, None, None


def _current_ctx():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        ctx = ctypes.c_void_p()
        if cu.cuCtxGetCurrent(ctypes.byref(ctx)) == 0:
            return ctx.value
    except OSError:
        pass
    return None


def _exit_code(e):
    """The process exit status sys.exit(e.code) would give."""
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int) and not isinstance(c, bool):
        return c & 0xFF
    print(c, file=sys.stderr)
    return 1


def _open_out(path, fd):
    if path is None:
        return None
    saved = os.dup(fd)
    o = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(o, fd)
    os.close(o)
    return saved


def _print_job_traceback(e):
    """As python would print it: without the frames of this module and
    runpy above the script's."""
    tb = e.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename in (
            __file__, "<frozen runpy>") or "runpy" in
            tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb)


def run_job(job):
    """Run one job; its exit code."""
    argv = [str(a) for a in job["argv"]]
    script = argv[0]
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    saved_cwd = os.getcwd()
    saved_env = dict(os.environ)
    saved_streams = sys.stdout, sys.stderr
    sys.stdout.flush()
    sys.stderr.flush()
    so = se = None
    code = 1
    try:
        so = _open_out(job.get("out"), 1)
        se = _open_out(job.get("err"), 2)
        if job.get("cwd"):
            os.chdir(job["cwd"])
        sys.argv = argv
        if job.get("env") is not None:
            os.environ.clear()
            os.environ.update(_job_environ(job["env"], saved_env))
            # Python read PYTHONPATH as the worker started: put the
            # job's entries where they would have been.
            extra = [p for p in os.environ.get("PYTHONPATH", "").split(
                os.pathsep) if p and p not in sys.path]
            sys.path[0:0] = extra
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        os.environ[JOB_T0_ENV] = repr(job.get("t0", time.time()))
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as e:
        code = _exit_code(e)
    except BaseException as e:  # noqa: BLE001 - the job's failure, not ours
        _print_job_traceback(e)
        code = 1
    finally:
        for f in (sys.stdout, sys.stderr) + saved_streams:
            try:
                f.flush()
            except Exception:  # noqa: BLE001 - the job may have closed it
                pass
        sys.stdout, sys.stderr = saved_streams
        if so is not None:
            os.dup2(so, 1)
            os.close(so)
        if se is not None:
            os.dup2(se, 2)
            os.close(se)
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        try:
            os.chdir(saved_cwd)
        except OSError:
            pass
    return code


def _release_memory():
    """What the job left: its cycles, and torch's cached GPU blocks, so
    that an idle worker holds no more than its context (counted in the
    job's time: it is the job's garbage)."""
    import gc
    gc.collect()
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - best effort
        pass
    # CuPy keeps freed blocks in its own pools; on the H200 two jobs ran out
    # of memory after a CuPy job in the same worker (bench/results/
    # exclusive.md, run 2).
    cupy = sys.modules.get("cupy")
    try:
        if cupy is not None:
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:  # noqa: BLE001 - best effort
        pass


def _held_bytes():
    """GPU memory the job's objects still hold after _release_memory():
    torch tensors still referenced, CuPy arrays still alive."""
    held = 0
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            held += torch.cuda.memory_allocated()
    except Exception:  # noqa: BLE001 - best effort
        pass
    cupy = sys.modules.get("cupy")
    try:
        if cupy is not None:
            held += cupy.get_default_memory_pool().used_bytes()
    except Exception:  # noqa: BLE001 - best effort
        pass
    return held


def _held_limit():
    """$KMUX_WORKER_HELD_MAX_MIB (default 64): how much a job may leave
    behind before the worker retires."""
    try:
        return int(os.environ.get("KMUX_WORKER_HELD_MAX_MIB", "64")) << 20
    except ValueError:
        return 64 << 20


def _send(fd, obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def main():
    fd = int(os.environ.pop("KMUX_WORKER_FD"))
    os.set_inheritable(fd, False)
    # Run as a file, sys.path[0] is python/kmux/, whose modules would
    # shadow the jobs' (bench.py); the jobs import kmux from its parent.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    t = time.time()
    cuda, torch_version, ctx = init_cuda()
    try:
        _send(fd, {"ready": True, "pid": os.getpid(), "cuda": cuda,
                   "torch": torch_version, "ctx": ctx,
                   "init_s": time.time() - t})
    except BrokenPipeError:
        return 0                # kmux no longer needs this worker
    base = _held_bytes()
    limit = _held_limit()
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = os.read(fd, 65536)
            if not chunk:
                return 0        # kmux closed the control socket: stop
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        job = json.loads(line)
        job["t0"] = time.time()
        t = time.perf_counter()
        code = run_job(job)
        _release_memory()
        _send(fd, {"i": job["i"], "exit": code,
                   "run_s": time.perf_counter() - t})
        # Memory a job leaves referenced (a tensor kept in a module-level
        # cache, a CuPy array still alive) would count against every later
        # job's quota in this worker.  A worker that cannot get back to
        # its start retires; kmux starts another in its place.
        held = _held_bytes() - base
        if held > limit:
            sys.stderr.write("kmux: worker %d: job %s left %d MiB of GPU "
                             "memory referenced; retiring this worker\n"
                             % (os.getpid(), job["i"], held >> 20))
            sys.stderr.flush()
            return 0


if __name__ == "__main__":
    sys.exit(main())
