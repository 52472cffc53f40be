"""The house rules of the design, checked on the code: what may import what, strategies
reach the runtime only through `ExecutionPolicy`, and importing or using mylib changes
nothing else in the user's process (JAX's global 64-bit flag, environment variables)."""

import ast
import os
import re
import subprocess
import sys

from import_graph import cycles

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "mylib")


def _modules():
    for root, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                yield os.path.relpath(path, ROOT), path


def _room(rel):
    bits = rel.split(os.sep)
    return bits[1] if len(bits) > 2 else bits[1][:-3]


def _imports(path):
    """Every mylib module that `path` imports, function-local imports included."""
    out = set()
    for n in ast.walk(ast.parse(open(path).read())):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            if n.module == "mylib":
                out |= {"mylib." + a.name if os.path.exists(os.path.join(PKG, a.name)) or
                        os.path.exists(os.path.join(PKG, a.name + ".py")) else "mylib"
                        for a in n.names}
            else:
                out.add(n.module)
    return {m for m in out if m == "mylib" or m.startswith("mylib.")}


def _room_edges():
    edges = {}
    for rel, path in _modules():
        if rel == os.path.join("mylib", "__init__.py"):
            continue  # the package face imports every room
        src = _room(rel)
        for m in _imports(path):
            dst = "<package>" if m == "mylib" else m.split(".")[1]
            if dst != src:
                edges.setdefault(src, {}).setdefault(dst, set()).add(rel)
    return edges


# What each room may not import (directly or through a function-local import).
_NEVER = {
    "devices": lambda d: d not in ("errors",),
    "core": lambda d: d in ("runtime", "layers", "models", "distribute", "callbacks",
                            "optimizers", "keras", "train", "config", "<package>"),
    "runtime": lambda d: d in ("layers", "models", "distribute", "callbacks", "optimizers",
                               "keras", "<package>"),
    "distribute": lambda d: d in ("layers", "models", "callbacks", "keras", "<package>"),
    "layers": lambda d: d in ("models", "callbacks", "keras", "<package>"),
}


def test_rooms_import_only_what_is_below_them():
    bad = [f"{src} -> {dst} ({sorted(files)[0]})"
           for src, outs in _room_edges().items() for dst, files in outs.items()
           if src in _NEVER and _NEVER[src](dst)]
    assert not bad, "imports against the layering: " + "; ".join(bad)


def test_no_module_imports_the_package_face():
    bad = sorted(rel for rel, path in _modules()
                 if rel != os.path.join("mylib", "__init__.py") and "mylib" in _imports(path))
    assert not bad, f"modules importing the top-level mylib package: {bad}"


def test_no_import_cycles_between_rooms():
    edges = _room_edges()
    found = cycles(edges)
    detail = [f"{c}: " + ", ".join(f"{a}->{b} {sorted(edges[a][b])[:2]}" for a in c for b in c
                                    if b in edges.get(a, {})) for c in found]
    assert not found, "import cycles between rooms: " + " | ".join(detail)


def test_strategies_reach_the_runtime_only_through_its_interface():
    pats = [re.compile(r"\._distribution\b"),
            re.compile(r"\bsess(?:ion)?\._(?:store|lock|seed_base|rng_counts|get_var|set_var|"
                       r"make_raw|read_vars|assign_vars|take_rng_counts|plans|vars)\b")]
    hits = []
    for rel, path in _modules():
        if rel.startswith(os.path.join("mylib", "runtime") + os.sep):
            continue
        text = open(path).read()
        for p in pats:
            hits += [f"{rel}:{text[:m.start()].count(chr(10)) + 1}" for m in p.finditer(text)]
    assert not hits, f"private execution state reached from outside the runtime: {hits}"


_PLAIN_JAX = """
import jax, jax.numpy as jnp, numpy as np
print(jax.config.jax_enable_x64, jnp.arange(3).dtype, jnp.ones(2).dtype,
      np.asarray(jax.random.normal(jax.random.PRNGKey(0), (3,))).tolist(),
      jax.jit(lambda a: a * 2)(jnp.arange(3)).dtype)
"""


def _run(code):
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64",)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()


def test_plain_jax_is_unchanged_by_importing_and_using_mylib():
    """Plain JAX code prints the same after `import mylib` and after a mylib training
    step (with a float64 variable) as in a process without mylib."""
    (alone,) = _run(_PLAIN_JAX)
    use = """
import os
env_before = dict(os.environ)
import numpy as np
import mylib as ml
g = ml.Graph()
with g.as_default():
    x = ml.placeholder(ml.float64, [None, 2])
    w = ml.Variable(np.ones((2, 1)), name="w")
    loss = ml.reduce_mean(ml.square(ml.matmul(x, w)))
    train = w.assign_sub(0.1 * ml.gradients(loss, [w])[0])
    with ml.Session(graph=g) as s:
        s.run(ml.global_variables_initializer())
        s.run(train, {x: np.ones((4, 2))})
        v = s.run(w)
        i = s.run(ml.constant(2**40, ml.int64) + 1)
print(v.dtype, type(i).__name__, int(i))
m = ml.Sequential([ml.layers.Input((4,)), ml.layers.Dense(2)])
m.compile("sgd", "mse")
m.fit(np.ones((8, 4), "float32"), np.ones((8, 2), "float32"), verbose=0)
print(dict(os.environ) == env_before)
""" + _PLAIN_JAX
    lines = _run(use)
    assert lines[0] == "float64 int64 1099511627777"  # 64-bit inside mylib
    assert lines[-2] == "True"  # no environment variable changed
    assert lines[-1] == alone  # plain JAX: same flag, dtypes and random numbers
