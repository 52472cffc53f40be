"""Calling a layer (or a model) on numpy or JAX arrays, as Keras 3 does eagerly.

``layer(x, training=True, mask=m)`` with array inputs runs the layer's own graph: once
per call signature, the layer is called on placeholders in the graph of its weights
(building it first from the arrays' shapes if it was never built), inside
`collect_call_effects`, and the session of that graph (its Keras session, which holds
the values `fit` trains) compiles one step that fetches the outputs AND runs the
call's state updates (BatchNormalization's moving statistics with ``training=True``).
Every later call with the same signature runs that compiled step.

The signature is: the nesting of the positional and keyword arguments, the dtype and
shape (without the leading batch dimension: placeholders take any batch size, XLA
compiles each batch size once) of every array among them, and the value of every other
argument (``training``, Python numbers, strings, ...). Each layer keeps the last
`CACHE_SIZE` signatures (least recently used first out); an evicted signature's
compiled program is freed (its graph ops stay in the graph, as data).

The outputs are numpy arrays (the same nesting as the layer's outputs), like
`Model.predict`. Floating arrays passed as the layer's inputs are cast to the layer's
compute dtype (as Keras 3 does); other arguments are fed with their own dtypes.
Losses a call adds (`add_loss`, activity regularizers) are not kept: `layer.losses`
holds only the losses of symbolic calls and weight regularizers.
"""

from __future__ import annotations

import collections

import numpy as np

CACHE_SIZE = 32  # call signatures kept per layer (LRU)


def _jax_array_type():
    try:
        import jax

        return jax.Array
    except Exception:  # pragma: no cover - jax is a dependency
        return ()


_JAX_ARRAY = _jax_array_type()


def is_array(x):
    """True for numpy arrays and scalars and JAX arrays."""
    return isinstance(x, (np.ndarray, np.generic)) or (
        bool(_JAX_ARRAY) and isinstance(x, _JAX_ARRAY))


def contains_array(struct):
    if isinstance(struct, dict):
        return any(contains_array(v) for v in struct.values())
    if isinstance(struct, (list, tuple)):
        return any(contains_array(v) for v in struct)
    return is_array(struct)


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


def _split(struct, arrays, keys):
    """`struct` with each array replaced by a `_Slot` (arrays appended to `arrays`),
    and a hashable description of it appended to `keys`."""
    if isinstance(struct, dict):
        out = {}
        for k in struct:
            sub = []
            out[k] = _split(struct[k], arrays, sub)
            keys.append(("k", k, sub[0]))
        keys.append(("dict", len(struct)))
        return out
    if isinstance(struct, (list, tuple)):
        sub = []
        out = [_split(v, arrays, sub) for v in struct]
        keys.append((type(struct).__name__, tuple(sub)))
        return type(struct)(out) if type(struct) in (list, tuple) else out
    if is_array(struct):
        arrays.append(struct)
        keys.append(("array", str(np.dtype(struct.dtype)), tuple(np.shape(struct))[1:],
                     np.ndim(struct)))
        return _Slot(len(arrays) - 1)
    try:
        hash(struct)
        keys.append(("value", type(struct).__name__, struct))
    except TypeError:
        keys.append(("object", id(struct)))
    return struct


def _fill(struct, values):
    if isinstance(struct, dict):
        return {k: _fill(v, values) for k, v in struct.items()}
    if isinstance(struct, (list, tuple)):
        return type(struct)(_fill(v, values) for v in struct)
    if isinstance(struct, _Slot):
        return values[struct.i]
    return struct


def _all_layers(layer, seen=None):
    seen = set() if seen is None else seen
    if id(layer) in seen:
        return []
    seen.add(id(layer))
    out = [layer]
    for sub in layer.__dict__.get("_layers", []):
        out.extend(_all_layers(sub, seen))
    return out


def _graph_of(layer):
    """The graph a layer's array calls run in: its weights' graph, else the graph it
    was first called in, else the default graph at its first array call."""
    from mylib.core.graph import Tensor, get_default_graph

    ws = layer.weights
    if ws:
        return ws[0].graph
    for node in layer.__dict__.get("_inbound_nodes", []):
        for t in node.input_tensors:
            if isinstance(t, Tensor):
                return t.graph
    g = layer.__dict__.get("_array_graph")
    if g is None:
        g = get_default_graph()
        layer.__dict__["_array_graph"] = g
    return g


_OUT = _Slot(-1)  # marks a tensor output in an entry's output structure


class _Entry:
    __slots__ = ("fn", "dtypes", "out_struct", "n_out")

    def __init__(self, fn, dtypes, out_struct, n_out):
        self.fn, self.dtypes, self.out_struct, self.n_out = fn, dtypes, out_struct, n_out


def cache_entries(layer):
    """The number of call signatures `layer` holds compiled (at most `CACHE_SIZE`)."""
    return len(layer.__dict__.get("_array_calls") or ())


def call_on_arrays(layer, inputs, args, kwargs, graph=None, extra_key=()):
    """Runs ``layer(inputs, *args, **kwargs)`` on arrays; returns numpy arrays."""
    from mylib.layers.base import flatten, pack_like

    want = layer.compute_dtype
    if want.is_floating:
        def cast(a):
            if np.issubdtype(np.dtype(a.dtype), np.floating) and np.dtype(a.dtype) != want.np:
                return np.asarray(a).astype(want.np)
            return a
        inputs = _map_arrays(inputs, cast)
    arrays, keys = [], []
    template = _split((inputs, tuple(args), dict(kwargs)), arrays, keys)
    key = (tuple(keys), tuple(extra_key))
    cache = layer.__dict__.get("_array_calls")
    if cache is None:
        cache = layer.__dict__["_array_calls"] = collections.OrderedDict()
    entry = cache.get(key)
    if entry is None:
        entry = _build(layer, template, arrays, graph if graph is not None else _graph_of(layer))
        cache[key] = entry
        while len(cache) > CACHE_SIZE:
            _, old = cache.popitem(last=False)
            release = getattr(old.fn, "release", None)
            if release is not None:
                release()
    else:
        cache.move_to_end(key)
    feeds = []
    for a, dt in zip(arrays, entry.dtypes):
        if isinstance(a, np.ndarray) and a.dtype == dt:
            feeds.append(a)
        elif bool(_JAX_ARRAY) and isinstance(a, _JAX_ARRAY) and np.dtype(a.dtype) == dt:
            feeds.append(a)
        else:
            feeds.append(np.asarray(a, dtype=dt))
    outs = entry.fn(*feeds)
    it = iter([np.asarray(o) for o in outs[:entry.n_out]])
    vals = [next(it) if t is _OUT else t for t in flatten(entry.out_struct)]
    return pack_like(entry.out_struct, vals)


def _map_arrays(struct, f):
    if isinstance(struct, dict):
        return {k: _map_arrays(v, f) for k, v in struct.items()}
    if isinstance(struct, (list, tuple)):
        return type(struct)(_map_arrays(v, f) for v in struct)
    return f(struct) if is_array(struct) else struct


def _build(layer, template, arrays, g):
    """Traces ``layer`` on placeholders of one signature; the compiled step."""
    from mylib.core import dtypes as _dtypes
    from mylib.core.graph import GraphKeys, Tensor
    from mylib.core.ops import array_ops
    from mylib.layers.base import collect_call_effects, flatten, pack_like
    from mylib.runtime import keras_session

    # A stateful recurrent layer keeps states of one batch size: its batch is static.
    static_batch = any(getattr(sub, "stateful", False) for sub in _all_layers(layer))
    with g.as_default(), g.collectable():
        phs, dts = [], []
        for a in arrays:
            dt = _dtypes.as_dtype(np.dtype(a.dtype))
            shape = list(np.shape(a))
            if shape and not static_batch:
                shape[0] = None
            phs.append(array_ops.placeholder(dt, shape, name=f"{layer.name}_array_arg"))
            dts.append(np.dtype(dt.np))
        ins, args, kwargs = _fill(template, phs)
        n_nodes = len(layer._inbound_nodes)
        with collect_call_effects() as fx:
            out = layer(ins, *args, **kwargs)
        del layer._inbound_nodes[n_nodes:]
        # This signature's updates run in its own step only: not in UPDATE_OPS (a TF1
        # loop running them would need these placeholders fed) nor `layer.updates`.
        upd = {id(op) for op in fx.updates}
        if upd:
            # (rebuilt, not edited through get_collection_ref, which would hold the
            # other models' update ops strongly from then on)
            kept = [op for op in g.get_collection(GraphKeys.UPDATE_OPS) if id(op) not in upd]
            g.clear_collection(GraphKeys.UPDATE_OPS)
            for op in kept:
                g.add_to_collection(GraphKeys.UPDATE_OPS, op)
            for sub in _all_layers(layer):
                ups = sub.__dict__.get("_updates")
                if ups:
                    ups[:] = [op for op in ups if id(op) not in upd]
        flat = flatten(out)
        tensors = [t for t in flat if isinstance(t, Tensor)]
        out_struct = pack_like(out, [_OUT if isinstance(t, Tensor) else t for t in flat])
    keras_session.ensure_initialized(layer.weights + g.get_collection(
        GraphKeys.GLOBAL_VARIABLES) + g.get_collection(GraphKeys.LOCAL_VARIABLES))
    sess = keras_session.get_session(g)
    fn = sess.make_device_callable(tensors + list(fx.updates), phs)
    return _Entry(fn, dts, out_struct, len(tensors))


def mask_on_arrays(compute_mask):
    """`compute_mask` (a layer class's method) made to accept arrays as Keras 3's does:
    ``Embedding(..., mask_zero=True).compute_mask(padded)`` on a numpy batch returns a
    numpy bool mask. Symbolic inputs go to `compute_mask` unchanged; array inputs (and
    an array `mask`) are fed to placeholders of a private graph, whose mask is run
    once and returned as numpy arrays (None stays None)."""
    import functools

    @functools.wraps(compute_mask)
    def wrapper(self, inputs, mask=None, *args, **kwargs):
        from mylib.core.graph import Graph, Tensor
        from mylib.layers.base import flatten

        flat = flatten([inputs, mask])
        if not contains_array([inputs, mask]) or any(isinstance(x, Tensor) for x in flat):
            return compute_mask(self, inputs, mask, *args, **kwargs)
        return _run_on_arrays(lambda i, m: compute_mask(self, i, m, *args, **kwargs),
                              inputs, mask, Graph())

    wrapper._mask_on_arrays = True
    return wrapper


def _run_on_arrays(fn, inputs, mask, g):
    from mylib.core.graph import Tensor
    from mylib.core.ops import array_ops
    from mylib.layers.base import flatten, pack_like
    from mylib.runtime.session import Session

    feeds = {}

    def ph(a):
        a = np.asarray(a)
        p = array_ops.placeholder(a.dtype, a.shape)
        feeds[p] = a
        return p

    with g.as_default():
        out = fn(_map_arrays(inputs, ph), _map_arrays(mask, ph))
        if out is None:
            return None
        flat = flatten(out)
        tensors = [t for t in flat if isinstance(t, Tensor)]
        with Session(graph=g) as sess:
            vals = iter(sess.run(tensors, feed_dict=feeds)) if tensors else iter(())
        res = [np.asarray(next(vals)) if isinstance(t, Tensor) else t for t in flat]
    return res[0] if isinstance(out, Tensor) else pack_like(out, res)
