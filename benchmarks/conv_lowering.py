"""Per-shape comparison of two CPU lowerings of a 'same' Conv2D (NHWC, stride 1) and
its gradients, for the layers of the convnets of issue 13 (`convnets.py`):
XLA's convolution (`lax.conv_general_dilated`, what hand-written JAX, Keras 3 on JAX
and mylib use) against an explicit im2col: the k*k shifted slices concatenated on the
channel axis and one 2-D `dot` (forward), `dot`s for the filter and patch gradients and
a col2im of k*k padded adds for the input gradient. Prints the largest differences
from XLA's convolution and its `jax.vjp` gradients, then milliseconds per call
(medians of interleaved repetitions): forward, forward + filter gradient (a first
layer: no input gradient), forward + both gradients.

    python benchmarks/conv_lowering.py [--reps 7]
"""

import argparse
import functools
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def conv_ref(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def im2col(x, kh, kw):
    n, h, wd, c = x.shape
    ph, pw = (kh - 1) // 2, (kw - 1) // 2
    xp = jnp.pad(x, ((0, 0), (ph, kh - 1 - ph), (pw, kw - 1 - pw), (0, 0)))
    cols = [xp[:, i:i + h, j:j + wd, :] for i in range(kh) for j in range(kw)]
    return jnp.concatenate(cols, axis=-1)  # [n, h, w, kh*kw*c], order (i, j, c)


def col2im(d, kh, kw, c):
    n, h, wd, _ = d.shape
    ph, pw = (kh - 1) // 2, (kw - 1) // 2
    out = jnp.zeros((n, h + kh - 1, wd + kw - 1, c), d.dtype)
    k = 0
    for i in range(kh):
        for j in range(kw):
            out = out.at[:, i:i + h, j:j + wd, :].add(d[..., k * c:(k + 1) * c])
            k += 1
    return out[:, ph:ph + h, pw:pw + wd, :]


@jax.custom_vjp
def conv_i2c(x, w):
    kh, kw, c, o = w.shape
    p = im2col(x, kh, kw)
    return (p.reshape(-1, kh * kw * c) @ w.reshape(-1, o)).reshape(x.shape[:3] + (o,))


def _fwd(x, w):
    kh, kw, c, o = w.shape
    p = im2col(x, kh, kw)
    y = (p.reshape(-1, kh * kw * c) @ w.reshape(-1, o)).reshape(x.shape[:3] + (o,))
    return y, (p, w)


def _bwd(res, g):
    p, w = res
    kh, kw, c, o = w.shape
    g2 = g.reshape(-1, o)
    dw = (p.reshape(-1, kh * kw * c).T @ g2).reshape(w.shape)
    dp = (g2 @ w.reshape(-1, o).T).reshape(p.shape)
    return col2im(dp, kh, kw, c), dw


conv_i2c.defvjp(_fwd, _bwd)


def bench(shape_x, shape_w, reps=7, inner=5):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=shape_x), jnp.float32)
    w = jnp.asarray(rng.normal(size=shape_w) * 0.05, jnp.float32)
    g = jnp.asarray(rng.normal(size=shape_x[:3] + (shape_w[-1],)), jnp.float32)
    fns = {}
    for name, conv in (("lax.conv", conv_ref), ("im2col+dot", conv_i2c)):
        fns[name + " fwd"] = jax.jit(conv)
        fns[name + " fwd+dw"] = jax.jit(lambda x, w, conv=conv: jax.vjp(
            lambda w: conv(x, w), w)[1](g))
        fns[name + " fwd+dx+dw"] = jax.jit(lambda x, w, conv=conv: jax.vjp(conv, x, w)[1](g))
    # exactness
    a = jax.vjp(conv_ref, x, w)[1](g)
    b = jax.vjp(conv_i2c, x, w)[1](g)
    print("  max |difference|: forward %.2g, dx %.2g, dw %.2g" % (
        float(jnp.abs(conv_ref(x, w) - conv_i2c(x, w)).max()),
        float(jnp.abs(a[0] - b[0]).max()), float(jnp.abs(a[1] - b[1]).max())))
    for f in fns.values():
        jax.block_until_ready(f(x, w))
    t = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                out = f(x, w)
            jax.block_until_ready(out)
            t[k].append((time.perf_counter() - t0) / inner * 1e3)
    for k in t:
        print(f"  {k:22s} {statistics.median(t[k]):8.2f} ms")
    for what in ("fwd", "fwd+dw", "fwd+dx+dw"):
        r = statistics.median(t["lax.conv " + what]) / statistics.median(t["im2col+dot " + what])
        print(f"  {what:10s} XLA conv time / im2col time: {r:.2f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args(argv)
    for sx, sw in [
            ((32, 32, 32, 3), (5, 5, 3, 64)),      # A, conv 1
            ((32, 16, 16, 64), (5, 5, 64, 128)),   # A, conv 2
            ((32, 32, 32, 3), (3, 3, 3, 32)),      # B, conv 1
            ((32, 32, 32, 32), (3, 3, 32, 32)),    # B, conv 2
            ((32, 16, 16, 32), (3, 3, 32, 32)),    # B, conv 3-4
            ((32, 8, 8, 32), (3, 3, 32, 64))]:     # B, conv 5
        print(f"x {sx}, filter {sw}")
        bench(sx, sw, reps=args.reps)


if __name__ == "__main__":
    main()
