#!/usr/bin/env python3
"""Check that the hook table and the wrappers agree.

  - src/preload/hooks.def: HOOK lines strictly sorted (strcmp order, as the
    binary search in real.c assumes), no duplicates, every REAL after every
    HOOK, every name a driver name (cu + upper case letter);
  - every HOOK has exactly one exported wrapper definition in src/preload/*.c
    and every exported driver wrapper has a HOOK;
  - a HOOK_FORWARD wrapper only forwards (kmux hands out the driver's own);
  - every cuda.h entry point that puts work on a stream is hooked
    (scripts/gen-wrap-opaque.py decides which do);
  - when build/libkmux.so exists: its dynamic symbols are exactly the hooks,
    dlsym and the public kmux_* API.
Exit 0 when all agree, 1 with one line per problem otherwise.
"""
import glob
import os
import re
import subprocess
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
problems = []

hooks, reals, forwards, seen_real = [], [], [], False
for n, line in enumerate(open(os.path.join(root, "src/preload/hooks.def")), 1):
    m = re.match(r"^(HOOK|HOOK_FORWARD|REAL)\((\w+)\)\s*$", line)
    if not m:
        continue
    kind, name = m.groups()
    if kind == "HOOK_FORWARD":
        forwards.append(name)
        kind = "HOOK"
    if not re.match(r"^cu[A-Z]", name):
        problems.append("hooks.def:%d: %s is not a driver API name" % (n, name))
    if kind == "HOOK":
        if seen_real:
            problems.append("hooks.def:%d: HOOK(%s) after a REAL line" % (n, name))
        if hooks and name.encode() <= hooks[-1].encode():
            problems.append("hooks.def:%d: HOOK(%s) out of order or duplicate" % (n, name))
        hooks.append(name)
    else:
        seen_real = True
        if name in hooks or name in reals:
            problems.append("hooks.def:%d: REAL(%s) listed twice" % (n, name))
        reals.append(name)

defs = {}
pat = re.compile(r"^KMUX_EXPORT\s+CUresult\s+CUDAAPI\s+(cu[A-Z]\w*)\s*\(", re.M)
for path in sorted(glob.glob(os.path.join(root, "src/preload/*.c"))):
    for m in pat.finditer(open(path).read()):
        defs.setdefault(m.group(1), []).append(os.path.basename(path))

for name in hooks:
    where = defs.get(name, [])
    if len(where) != 1:
        problems.append("HOOK(%s) has %d wrapper definitions %s" % (name, len(where), where))
for name, where in sorted(defs.items()):
    if name not in hooks:
        problems.append("%s (%s) is exported but has no HOOK line" % (name, where[0]))

# A HOOK_FORWARD wrapper is handed out as the driver's own function, so it
# must do nothing but forward: the driver check, then the call with its
# parameters in order.  Anything more would be skipped for cudart's calls.
fwd_pat = re.compile(
    r"^\{if\(NO_DRIVER\((\w+)\)\)returnCUDA_ERROR_NOT_INITIALIZED;"
    r"returnREAL\((\w+)\)\(([\w,]*)\);\}$")
for name in forwards:
    where = defs.get(name, [])
    if len(where) != 1:
        continue
    text = open(os.path.join(root, "src/preload", where[0])).read()
    m = re.search(r"^KMUX_EXPORT\s+CUresult\s+CUDAAPI\s+%s\s*\(([^)]*)\)\s*\n(\{.*?\n\})"
                  % re.escape(name), text, re.M | re.S)
    params = [re.split(r"[\s*]+", p.strip())[-1] for p in m.group(1).split(",")] if m else []
    body = re.sub(r"\s+", "", m.group(2)) if m else ""
    f = fwd_pat.match(body)
    if not f or f.group(1) != name or f.group(2) != name or \
            f.group(3).split(",") != params:
        problems.append("HOOK_FORWARD(%s): its wrapper (%s) does more than forward "
                        "to the driver: make it HOOK" % (name, where[0]))

# A newer ABI version of a hooked function in cuda.h than any hooked one is
# a hole: CUDA's runtime asks cuGetProcAddress for the newest its version
# allows and would get an unwrapped function (cuCtxSynchronize_v2 in CUDA 13).
cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
try:
    pre = subprocess.run(
        ["cc", "-E", "-P", "-I" + cuda + "/include", "-x", "c", "-"],
        input="#define __CUDA_API_VERSION_INTERNAL 1\n#include <cuda.h>\n",
        capture_output=True, text=True, check=True).stdout
    declared = set(re.findall(r"CUresult\s+(?:CUDAAPI\s+)?(cu[A-Z]\w*)\s*\(", pre))
except (OSError, subprocess.CalledProcessError) as e:
    declared = None
    problems.append("cannot preprocess cuda.h to compare versions: %s" % e)


def split_version(n):
    m = re.match(r"^(.*?)(?:_v(\d+))?(_pt(?:sz|ds))?$", n)
    return m.group(1), int(m.group(2) or 1)


if declared is not None:
    for name in hooks:
        if name not in declared:
            problems.append("HOOK(%s) is not declared in cuda.h" % name)
    newest_hooked = {}
    for name in hooks:
        b, v = split_version(name)
        newest_hooked[b] = max(v, newest_hooked.get(b, 0))
    for name in sorted(declared):
        b, v = split_version(name)
        if b in newest_hooked and v > newest_hooked[b] and name not in hooks:
            problems.append("cuda.h declares %s, newer than every hooked %s variant" % (name, b))

# Every entry point that puts work on a stream must be wrapped (or kmux's
# pool runs unordered with it): gen-wrap-opaque.py knows which those are and
# which submit nothing; what it would generate must all be hooked already.
if declared is not None:
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "gen_wrap_opaque", os.path.join(root, "scripts/gen-wrap-opaque.py"))
    gen = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(gen)
        wanted = gen.wanted(gen.declarations(), gen.defined_elsewhere())
    except (OSError, subprocess.CalledProcessError) as e:
        wanted = []
        problems.append("cannot list the stream-taking entry points "
                        "(scripts/gen-wrap-opaque.py): %s" % e)
    for name in wanted:
        if name not in hooks:
            problems.append("cuda.h's %s puts work on a stream but is not "
                            "wrapped: run scripts/gen-wrap-opaque.py" % name)

lib = os.path.join(root, os.environ.get("BUILD", "build"), "libkmux.so")
if os.path.exists(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib],
                         capture_output=True, text=True).stdout
    syms = {l.split()[-1].split("@")[0] for l in out.splitlines() if l.strip()}
    syms = {s for s in syms if s and not s.startswith(("_", "GLIBC"))}
    want = set(hooks) | {"dlsym"}
    extra = sorted(s for s in syms - want if not s.startswith("kmux_"))
    missing = sorted(want - syms)
    if extra:
        problems.append("libkmux.so exports symbols outside the hook table: %s" % " ".join(extra))
    if missing:
        problems.append("libkmux.so does not export: %s" % " ".join(missing))

for p in problems:
    print("check-hooks: " + p)
if problems:
    sys.exit(1)
print("check-hooks: %d hooks, %d real-only, %d wrappers agree" % (len(hooks), len(reals), len(defs)))
