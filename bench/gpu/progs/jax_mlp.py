#!/usr/bin/env python3
"""jax_mlp.py - a JAX program under the stream scheduler.

What it is for: XLA submits its work to streams it creates itself, never to
the legacy default stream, so `kmux run --streams` must leave it as it is
(issue 3: "a program that itself uses many streams is left as it is on its
own streams") and change nothing it computes.  A small MLP trained with
jitted SGD steps on fixed random data; the loss of every step is printed
with 6 significant digits and checked to fall.

Determinism: XLA picks GEMM kernels by timing them (autotuning), so two
runs can pick different kernels and round differently (seen on the H200:
one step's loss differed in its 6th digit between two runs, kmux doing
nothing to either).  --xla_gpu_deterministic_ops=true (added to XLA_FLAGS
here) turns autotuning and nondeterministic kernels off, so that two runs
print the same bytes.

Memory: XLA_PYTHON_CLIENT_PREALLOCATE=false (set here unless given), so
the program does not take 75% of the GPU at start.  Exits nonzero on an
error or when the loss does not fall.
"""
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
if "xla_gpu_deterministic_ops" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_gpu_deterministic_ops=true").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

STEPS = 20


def init(key, sizes):
    params = []
    for i in range(len(sizes) - 1):
        key, k1 = jax.random.split(key)
        w = jax.random.normal(k1, (sizes[i], sizes[i + 1]), jnp.float32)
        params.append((w / jnp.sqrt(sizes[i]), jnp.zeros(sizes[i + 1], jnp.float32)))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = [(w - 0.05 * gw, b - 0.05 * gb) for (w, b), (gw, gb) in zip(params, grads)]
    return params, loss


def main():
    if not any(d.platform == "gpu" for d in jax.devices()):
        print("jax_mlp: no GPU device", file=sys.stderr)
        return 1
    key = jax.random.PRNGKey(7)
    kx, ky, kp = jax.random.split(key, 3)
    x = jax.random.normal(kx, (512, 256), jnp.float32)
    y = jnp.sin(x[:, :16] * 2.0)
    params = init(kp, [256, 512, 512, 16])
    losses = []
    for _ in range(STEPS):
        params, loss = step(params, x, y)
        losses.append(float(loss))
    print(f"jax_mlp steps={STEPS} jax={jax.__version__}")
    print("losses " + " ".join(f"{v:.6g}" for v in losses))
    if not losses[-1] < losses[0]:
        print("jax_mlp: the loss did not fall")
        return 1
    print("jax_mlp: check OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
