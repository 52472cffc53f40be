"""Per-shape comparison of two CPU lowerings of 2x2/2 max pooling and its gradient, for
the pools of the convnets of issue 13 (`convnets.py`): XLA's `reduce_window`, whose
gradient is a `select_and_scatter` (what hand-written JAX, flax and Keras 3 on JAX run),
against mylib's `MaxPool` kernel, which pools windows that tile the input as a max over
reshaped axes with an elementwise first-maximum gradient. Prints the largest
differences (values and gradients, on ReLU outputs with many tied maxima), then
milliseconds per call, medians of interleaved repetitions.

    python benchmarks/pool_lowering.py [--reps 15]
"""

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from mylib.core.ops import nn_ops


def reduce_window_pool(x):
    return lax.reduce_window(x, np.array(-np.inf, x.dtype), lax.max, (1, 2, 2, 1),
                             (1, 2, 2, 1), "VALID")


def mylib_pool(x):
    return nn_ops._max_pool_kernel(x, ksize=(2, 2), strides=(2, 2), padding="VALID",
                                   data_format="NHWC")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=15)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    for shape in [(32, 32, 32, 64), (32, 16, 16, 128),   # A, pools 1-2
                  (32, 32, 32, 32), (32, 16, 16, 32), (32, 8, 8, 64)]:  # B, pools 1-3
        x = jnp.asarray(np.maximum(rng.normal(size=shape), 0).astype(np.float32))
        g = jnp.asarray(rng.normal(size=(shape[0], shape[1] // 2, shape[2] // 2,
                                         shape[3])).astype(np.float32))
        fns = {}
        for name, f in (("reduce_window", reduce_window_pool), ("mylib tiled", mylib_pool)):
            fns[name + " fwd"] = jax.jit(f)
            fns[name + " fwd+grad"] = jax.jit(lambda x, g, f=f: jax.vjp(f, x)[1](g)[0])
        args_of = {k: (x,) if k.endswith("fwd") else (x, g) for k in fns}
        outs = {k: jax.block_until_ready(f(*args_of[k])) for k, f in fns.items()}
        print(f"input {shape}: max |difference| forward "
              f"{float(jnp.abs(outs['reduce_window fwd'] - outs['mylib tiled fwd']).max()):.2g}"
              f", gradient {float(jnp.abs(outs['reduce_window fwd+grad'] - outs['mylib tiled fwd+grad']).max()):.2g}")
        t = {k: [] for k in fns}
        for _ in range(args.reps):
            for k, f in fns.items():
                t0 = time.perf_counter()
                jax.block_until_ready(f(*args_of[k]))
                t[k].append((time.perf_counter() - t0) * 1e3)
        for k in t:
            print(f"  {k:26s} {statistics.median(t[k]):8.2f} ms")
        print("  gradient: reduce_window time / tiled time: %.1f" % (
            statistics.median(t["reduce_window fwd+grad"])
            / statistics.median(t["mylib tiled fwd+grad"])))


if __name__ == "__main__":
    main()
