"""`fit` with ``compile(steps_per_execution=k)``: samples/s of the digits MLP (64-128-10,
batch 32, Adam, scikit-learn's digits) for k = 1, 8 and 32, against two hand-written
JAX loops doing the same training:

- one jitted step per batch (`jax.jit` + optax, parameters and state donated);
- k steps per call: one jitted `lax.scan` over k stacked batches, as
  ``steps_per_execution`` runs them. Like `fit`, each epoch's last group (fewer than
  k full batches) is one more scan of its own length and the short last batch one
  step.

    python benchmarks/fit_steps_per_execution.py [--epochs 20] [--repeats 3]
    python benchmarks/fit_steps_per_execution.py --interleaved 300

The second form measures each k (1, the default, then --k) against the hand-written
loop of the same k, mylib's epochs and the hand-written loop's in turn (the machine's
speed drifts between blocks of epochs).

mylib at k=1 has two rows: ``steps_per_execution=1`` (one step per call, always) and
compile's default (None), where `fit` itself groups the steps of a fit with at least
8192 full batches after its first epoch (see `Model.compile`): use ``--epochs 160``
or more (``--interleaved`` 160 or more) for that row to differ from the other.

samples/s is the median over epochs after the first (which includes compilation,
reported separately); repeats rotate the runners. The ratio column is against the
one-step-per-call hand-written loop; a second table puts each mylib k next to the
hand-written scan with the same k.
"""

from __future__ import annotations

import argparse
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import mylib as ml
from _harness import compare
from fit_mlp import digits_data, jax_epochs, run_jax, run_mylib


def jax_scan_epochs(x, y, sizes, batch, k, lr=1e-3, seed=0):
    """The hand-written k-steps-per-call loop (see the module docstring) as
    ``(epoch, mean_loss)``: `epoch()` trains one shuffled pass and returns its wall
    time (seconds)."""
    rng = np.random.default_rng(seed)
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        lim = np.sqrt(6.0 / (a + b))
        params.append((jnp.asarray(rng.uniform(-lim, lim, (a, b)), jnp.float32),
                       jnp.zeros((b,), jnp.float32)))
    tx = optax.adam(lr, eps=1e-7)
    state = [params, tx.init(params)]

    def loss_fn(p, xb, yb):
        h = xb
        for i, (w, b) in enumerate(p):
            h = h @ w + b
            if i < len(p) - 1:
                h = jax.nn.relu(h)
        return optax.softmax_cross_entropy_with_integer_labels(h, yb).mean()

    def one(carry, batch_xy):
        p, s = carry
        loss, g = jax.value_and_grad(loss_fn)(p, *batch_xy)
        upd, s = tx.update(g, s, p)
        return (optax.apply_updates(p, upd), s), loss

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(p, s, xb, yb):
        (p, s), loss = one((p, s), (xb, yb))
        return p, s, loss

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def steps(p, s, xk, yk):  # xk: [k, batch, ...]
        (p, s), losses = jax.lax.scan(one, (p, s), (xk, yk))
        return p, s, losses[-1]

    n = len(x)
    full = n // batch

    def epoch():
        t0 = time.perf_counter()
        perm = rng.permutation(n)
        xs, ys = x[perm], y[perm]
        params, opt_state = state
        for g in range(0, full, k):  # groups of k full batches, then the tail's run
            m = min(k, full - g)
            lo, hi = g * batch, (g + m) * batch
            if m > 1:
                params, opt_state, _ = steps(params, opt_state,
                                             xs[lo:hi].reshape(m, batch, -1),
                                             ys[lo:hi].reshape(m, batch))
            else:
                params, opt_state, _ = step(params, opt_state, xs[lo:hi], ys[lo:hi])
        if n % batch:
            params, opt_state, _ = step(params, opt_state, xs[full * batch:],
                                        ys[full * batch:])
        jax.block_until_ready(params)
        state[:] = [params, opt_state]
        return time.perf_counter() - t0

    return epoch, lambda: float(jax.jit(loss_fn)(state[0], x, y))


def run_jax_scan(x, y, sizes, batch, epochs, k, lr=1e-3, seed=0):
    epoch, mean_loss = jax_scan_epochs(x, y, sizes, batch, k, lr, seed)
    times = [epoch() for _ in range(epochs)]
    return times, mean_loss()


def interleaved(x, y, sizes, batch, epochs, steps_per_execution=1):
    """mylib's `fit` with `steps_per_execution` (None: compile's default, where fit
    groups steps itself on a fit this long) and the hand-written loop of as many steps
    per call (the per-step loop for 1 and None), epoch by epoch in turn (a callback
    runs one hand-written epoch after each of mylib's), so that both see the machine
    at the same speed. Returns ``(mylib medians, hand medians, ratio of
    the medians, median of the per-epoch ratios)``, times in seconds."""
    k = steps_per_execution or 1
    hand_epoch, _ = (jax_epochs(x, y, sizes, batch) if k == 1 else
                     jax_scan_epochs(x, y, sizes, batch, k))
    hand = []

    class Turn(ml.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            hand.append(hand_epoch())

    mine, _ = run_mylib(x, y, sizes, batch, epochs, callbacks=[Turn()],
                        steps_per_execution=steps_per_execution)
    m, h = np.array(mine[3:]), np.array(hand[3:])  # after compilation and warm-up
    return np.median(m), np.median(h), np.median(h) / np.median(m), np.median(h / m)


def main(argv=None):
    p = argparse.ArgumentParser(description="fit with steps_per_execution vs JAX loops")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--k", type=int, nargs="+", default=[8, 32])
    p.add_argument("--interleaved", type=int, default=0, metavar="EPOCHS",
                   help="compare each k (1, the default, --k) with the hand-written "
                        "loop of the same k, epochs in turn")
    args = p.parse_args(argv)
    x, y, sizes, batch = digits_data()
    print(f"jax {jax.__version__}, devices {jax.devices()}, epochs {args.epochs}, "
          f"{-(-len(x) // batch)} steps an epoch")
    if args.interleaved:
        for spe in [1, None] + args.k:
            what = "default (fit groups the steps; hand-written: 1 step/call)" \
                if spe is None else f"steps_per_execution={spe}"
            m, h, r, pr = interleaved(x, y, sizes, batch, args.interleaved, spe)
            print(f"{what}, {args.interleaved} epochs in turn: mylib "
                  f"{m * 1e3:.2f} ms/epoch, hand-written {h * 1e3:.2f}; ratio of medians "
                  f"{r:.3f}, median of the per-epoch ratios {pr:.3f}")
        return
    runners = [("jax.jit + optax, 1 step/call", lambda e: run_jax(x, y, sizes, batch, e)),
               ("mylib fit, steps_per_execution=1",
                lambda e: run_mylib(x, y, sizes, batch, e, steps_per_execution=1)),
               ("mylib fit, default",
                lambda e: run_mylib(x, y, sizes, batch, e))]
    for k in args.k:
        runners.append((f"jax lax.scan, {k} steps/call",
                        functools.partial(lambda e, k: run_jax_scan(x, y, sizes, batch,
                                                                    e, k), k=k)))
        runners.append((f"mylib fit, steps_per_execution={k}",
                        functools.partial(lambda e, k: run_mylib(
                            x, y, sizes, batch, e, steps_per_execution=k), k=k)))
    rows = compare("digits MLP 64-128-10, batch 32: steps per call", len(x), runners,
                   args.epochs, args.repeats)
    print("\n  mylib / hand-written at the same steps per call")
    pairs = [(1, "jax.jit + optax, 1 step/call", "mylib fit, steps_per_execution=1"),
             ("1 (default)", "jax.jit + optax, 1 step/call",
              "mylib fit, default")] + \
        [(k, f"jax lax.scan, {k} steps/call", f"mylib fit, steps_per_execution={k}")
         for k in args.k]
    for k, hand, mine in pairs:
        if hand in rows and mine in rows:
            print(f"  k={k!s:<12s} {rows[mine] / rows[hand]:6.2f}")


if __name__ == "__main__":
    main()
