"""`keras.ops` against numpy and Keras 3 (JAX backend): each op on arrays, the same op
built into a graph and run by a Session, and the gradients of the differentiable ones
through `ml.gradients` against `jax.grad` of Keras 3's op, on random inputs with
broadcasting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib.keras import ops

keras = pytest.importorskip("keras")
kops = keras.ops

R = np.random.default_rng(0)


def f32(*shape, lo=-2.0, hi=2.0):
    return R.uniform(lo, hi, size=shape).astype(np.float32)


def pos(*shape):
    return R.uniform(0.2, 2.0, size=shape).astype(np.float32)


def ints(*shape, hi=4):
    return R.integers(0, hi, size=shape).astype(np.int32)


A, B, V = f32(3, 4), f32(4), f32(5)
P = pos(3, 4)
# (name, positional args, kwargs, numpy reference or None, differentiable)
ROWS = [
    ("abs", [A], {}, np.abs, True),
    ("negative", [A], {}, np.negative, True),
    ("sqrt", [P], {}, np.sqrt, True),
    ("square", [A], {}, np.square, True),
    ("exp", [A], {}, np.exp, True),
    ("log", [P], {}, np.log, True),
    ("log1p", [P], {}, np.log1p, True),
    ("expm1", [A], {}, np.expm1, True),
    ("floor", [A], {}, np.floor, False),
    ("ceil", [A], {}, np.ceil, False),
    ("round", [A], {}, np.round, False),
    ("sign", [A], {}, np.sign, False),
    ("sin", [A], {}, np.sin, True),
    ("cos", [A], {}, np.cos, True),
    ("tanh", [A], {}, np.tanh, True),
    ("reciprocal", [P], {}, np.reciprocal, True),
    ("add", [A, B], {}, np.add, True),
    ("subtract", [A, B], {}, np.subtract, True),
    ("multiply", [A, B], {}, np.multiply, True),
    ("divide", [A, pos(4)], {}, np.divide, True),
    ("power", [P, f32(4)], {}, np.power, True),
    ("mod", [P, pos(4)], {}, np.mod, False),
    ("maximum", [A, B], {}, np.maximum, True),
    ("minimum", [A, B], {}, np.minimum, True),
    ("equal", [ints(3, 4), ints(4)], {}, np.equal, False),
    ("not_equal", [ints(3, 4), ints(4)], {}, np.not_equal, False),
    ("greater", [A, B], {}, np.greater, False),
    ("greater_equal", [A, B], {}, np.greater_equal, False),
    ("less", [A, B], {}, np.less, False),
    ("less_equal", [A, B], {}, np.less_equal, False),
    ("logical_and", [A > 0, B > 0], {}, np.logical_and, False),
    ("logical_or", [A > 0, B > 0], {}, np.logical_or, False),
    ("logical_not", [A > 0], {}, np.logical_not, False),
    ("clip", [A, np.float32(-0.5), np.float32(0.7)], {}, np.clip, True),
    ("where", [A > 0, A, B], {}, np.where, True),
    ("sum", [A], {"axis": 1}, lambda x, axis: np.sum(x, axis=axis), True),
    ("sum", [A], {"axis": None, "keepdims": True},
     lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), True),
    ("mean", [A], {"axis": 0}, lambda x, axis: np.mean(x, axis=axis), True),
    ("max", [A], {"axis": 1}, lambda x, axis: np.max(x, axis=axis), True),
    ("min", [A], {"axis": (0, 1)}, lambda x, axis: np.min(x, axis=axis), True),
    ("prod", [P], {"axis": 1}, lambda x, axis: np.prod(x, axis=axis), True),
    ("var", [A], {"axis": 1}, lambda x, axis: np.var(x, axis=axis), True),
    ("std", [A], {"axis": 0}, lambda x, axis: np.std(x, axis=axis), True),
    ("any", [A > 1], {"axis": 1}, lambda x, axis: np.any(x, axis=axis), False),
    ("all", [A > -1], {"axis": 0}, lambda x, axis: np.all(x, axis=axis), False),
    ("argmax", [A], {"axis": 1}, lambda x, axis: np.argmax(x, axis=axis), False),
    ("argmin", [A], {"axis": 0}, lambda x, axis: np.argmin(x, axis=axis), False),
    ("cumsum", [A], {"axis": 1}, lambda x, axis: np.cumsum(x, axis=axis), True),
    ("cumprod", [P], {"axis": 0}, lambda x, axis: np.cumprod(x, axis=axis), True),
    ("logsumexp", [A], {"axis": 1}, None, True),
    ("reshape", [A], {"newshape": (2, 6)}, lambda x, newshape: np.reshape(x, newshape), True),
    ("reshape", [A], {"newshape": (-1,)}, lambda x, newshape: np.reshape(x, newshape), True),
    ("transpose", [f32(2, 3, 4)], {"axes": (2, 0, 1)},
     lambda x, axes: np.transpose(x, axes), True),
    ("expand_dims", [A], {"axis": 1}, lambda x, axis: np.expand_dims(x, axis), True),
    ("squeeze", [f32(3, 1, 4)], {"axis": 1}, lambda x, axis: np.squeeze(x, axis), True),
    ("matmul", [A, f32(4, 2)], {}, np.matmul, True),
    ("matmul", [f32(2, 3, 4), f32(4, 5)], {}, np.matmul, True),
    ("dot", [A, B], {}, np.dot, True),
    ("tensordot", [f32(2, 3, 4), f32(3, 4, 5)], {"axes": 2},
     lambda a, b, axes: np.tensordot(a, b, axes), True),
    ("outer", [V, B], {}, np.outer, True),
    ("take", [A, ints(5, hi=4)], {"axis": 1},
     lambda x, i, axis: np.take(x, i, axis=axis), True),
    ("take_along_axis", [A, ints(3, 2, hi=4)], {"axis": 1},
     lambda x, i, axis: np.take_along_axis(x, i, axis=axis), True),
    ("sort", [A], {"axis": 1}, lambda x, axis: np.sort(x, axis=axis), True),
    ("argsort", [A], {"axis": 1}, lambda x, axis: np.argsort(x, axis=axis), False),
    ("tile", [A], {"repeats": (2, 1)}, lambda x, repeats: np.tile(x, repeats), True),
    ("repeat", [A], {"repeats": 2, "axis": 0},
     lambda x, repeats, axis: np.repeat(x, repeats, axis), True),
    ("flip", [A], {"axis": 1}, lambda x, axis: np.flip(x, axis), True),
    ("roll", [A], {"shift": 1, "axis": 1}, lambda x, shift, axis: np.roll(x, shift, axis),
     True),
    ("pad", [A], {"pad_width": ((1, 0), (0, 2))},
     lambda x, pad_width: np.pad(x, pad_width), True),
    ("broadcast_to", [B], {"shape": (3, 4)}, lambda x, shape: np.broadcast_to(x, shape),
     True),
    ("norm", [A], {"axis": 1}, lambda x, axis: np.linalg.norm(x, axis=axis), True),
    ("tril", [A], {}, np.tril, True),
    ("triu", [A], {"k": 1}, lambda x, k: np.triu(x, k), True),
    ("zeros_like", [A], {}, np.zeros_like, False),
    ("ones_like", [A], {}, np.ones_like, False),
    ("erf", [A], {}, None, True),
    ("softmax", [A], {"axis": -1}, None, True),
    ("log_softmax", [A], {"axis": 0}, None, True),
    ("sigmoid", [A], {}, lambda x: 1 / (1 + np.exp(-x)), True),
    ("relu", [A], {}, lambda x: np.maximum(x, 0), True),
    ("relu6", [f32(3, 4, lo=-3, hi=8)], {}, lambda x: np.clip(x, 0, 6), True),
    ("gelu", [A], {}, None, True),
    ("silu", [A], {}, lambda x: x / (1 + np.exp(-x)), True),
    ("softplus", [A], {}, lambda x: np.log1p(np.exp(x)), True),
    ("elu", [A], {}, lambda x: np.where(x > 0, x, np.expm1(x)), True),
    ("selu", [A], {}, None, True),
    ("leaky_relu", [A], {}, lambda x: np.where(x > 0, x, 0.2 * x), True),
    ("hard_sigmoid", [A], {}, None, True),
    ("one_hot", [ints(5, hi=4)], {"num_classes": 4}, lambda x, num_classes:
     np.eye(num_classes, dtype=np.float32)[x], False),
    ("binary_crossentropy", [(A > 0).astype("float32"), pos(3, 4) / 2.1], {}, None, True),
    ("binary_crossentropy", [(A > 0).astype("float32"), A], {"from_logits": True}, None,
     True),
    ("categorical_crossentropy", [np.eye(4, dtype="float32")[ints(3)], P], {}, None, True),
    ("categorical_crossentropy", [np.eye(4, dtype="float32")[ints(3)], A],
     {"from_logits": True}, None, True),
    ("sparse_categorical_crossentropy", [ints(3), A], {"from_logits": True}, None, True),
    ("sparse_categorical_crossentropy", [ints(3), P], {}, None, True),
    ("normalize", [A], {"axis": -1}, None, True),
    ("in_top_k", [ints(3), A], {"k": 2}, None, False),
    ("average_pool", [f32(2, 4, 4, 3)], {"pool_size": (2, 2), "strides": (2, 2)}, None,
     True),
    ("max_pool", [f32(2, 4, 4, 3)], {"pool_size": 2, "strides": 1, "padding": "same"}, None,
     True),
    ("conv", [f32(2, 5, 5, 3), f32(3, 3, 3, 4)], {"padding": "same"}, None, True),
    ("conv", [f32(2, 7, 3), f32(2, 3, 2)], {"strides": 2}, None, True),
    ("depthwise_conv", [f32(2, 5, 5, 3), f32(3, 3, 3, 2)], {}, None, True),
    ("erfinv", [f32(3, 4, lo=-0.9, hi=0.9)], {}, None, True),
    ("isnan", [A], {}, np.isnan, False),
    ("arctan2", [A, B], {}, np.arctan2, True),
    ("swapaxes", [f32(2, 3, 4)], {"axis1": 0, "axis2": 2},
     lambda x, axis1, axis2: np.swapaxes(x, axis1, axis2), True),
    ("moveaxis", [f32(2, 3, 4)], {"source": 0, "destination": -1},
     lambda x, source, destination: np.moveaxis(x, source, destination), True),
    ("full_like", [A, np.float32(3.0)], {}, np.full_like, False),
    ("diagonal", [f32(4, 4)], {}, np.diagonal, True),
    ("trace", [f32(4, 4)], {}, np.trace, True),
    ("cross", [f32(2, 3), f32(3)], {}, np.cross, True),
    # the less common ones (mylib.keras.ops.more)
    ("cbrt", [P], {}, np.cbrt, True),
    ("erfc", [A], {}, None, True),
    ("fmax", [A, B], {}, np.fmax, True),
    ("kron", [f32(2, 2), f32(2, 3)], {}, np.kron, True),
    ("nanmean", [A], {"axis": 1}, lambda x, axis: np.nanmean(x, axis=axis), True),
    ("ptp", [A], {"axis": 0}, lambda x, axis: np.ptp(x, axis=axis), True),
    ("diff", [A], {"axis": 1}, lambda a, axis: np.diff(a, axis=axis), True),
    ("rot90", [A], {}, np.rot90, True),
    ("glu", [f32(3, 4)], {}, None, True),
    ("hard_tanh", [A], {}, lambda x: np.clip(x, -1, 1), True),
    ("soft_shrink", [A], {}, None, True),
    ("squareplus", [A], {}, None, True),
    ("layer_normalization", [A, pos(4), f32(4)], {}, None, True),
    ("rms_normalization", [A, pos(4)], {}, None, True),
    ("dot_product_attention", [f32(2, 5, 2, 4), f32(2, 6, 2, 4), f32(2, 6, 2, 4)], {}, None,
     True),
    ("logdet", [np.eye(3, dtype=np.float32) * 2 + f32(3, 3) * 0.1], {}, None, True),
    ("pinv", [f32(3, 2)], {}, np.linalg.pinv, True),
    ("cdist", [f32(4, 3), f32(5, 3)], {}, None, True),
    ("isin", [ints(3, 4, hi=6), np.array([1, 3], np.int32)], {}, np.isin, False),
    ("inv", [np.eye(3, dtype=np.float32) * 2 + f32(3, 3) * 0.1], {}, np.linalg.inv, True),
    ("solve", [np.eye(3, dtype=np.float32) * 2 + f32(3, 3) * 0.1, f32(3, 2)], {},
     np.linalg.solve, True),
]


def _ids():
    seen = {}
    out = []
    for r in ROWS:
        seen[r[0]] = seen.get(r[0], 0) + 1
        out.append(r[0] if seen[r[0]] == 1 else f"{r[0]}-{seen[r[0]]}")
    return out


def _close(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    if a.dtype == bool or b.dtype == bool or np.issubdtype(b.dtype, np.integer):
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5, err_msg=what)


def _graph_run(name, args, kwargs):
    g = ml.Graph()
    with g.as_default():
        phs = [ml.placeholder(ml.as_dtype(np.asarray(a).dtype), np.asarray(a).shape)
               for a in args]
        out = getattr(ops, name)(*phs, **kwargs)
        assert isinstance(out, ml.Tensor), f"{name}: symbolic inputs gave {type(out)}"
    with ml.Session(graph=g) as sess:
        return sess.run(out, dict(zip(phs, args))), g, phs, out


@pytest.mark.parametrize("row", ROWS, ids=_ids())
def test_op_arrays_graph_and_keras(row):
    name, args, kwargs, ref, _ = row
    ours = getattr(ops, name)(*args, **kwargs)
    theirs = getattr(kops, name)(*args, **kwargs)
    _close(ours, theirs, f"{name} vs keras.ops")
    if ref is not None:
        _close(ours, np.asarray(ref(*args, **kwargs)).astype(np.asarray(theirs).dtype),
               f"{name} vs numpy")
    got, _, _, _ = _graph_run(name, args, kwargs)
    _close(got, theirs, f"{name} in a graph vs keras.ops")


@pytest.mark.parametrize("row", [r for r in ROWS if r[4]],
                         ids=[i for i, r in zip(_ids(), ROWS) if r[4]])
def test_op_gradients(row):
    name, args, kwargs, _, _ = row
    float_idx = [i for i, a in enumerate(args)
                 if np.asarray(a).dtype == np.float32 and np.asarray(a).ndim > 0]
    out_shape = np.shape(kops.convert_to_numpy(getattr(kops, name)(*args, **kwargs)))
    w = R.normal(size=out_shape).astype(np.float32)

    def f(*fl):
        full = list(args)
        for i, v in zip(float_idx, fl):
            full[i] = v
        return jnp.sum(getattr(kops, name)(*full, **kwargs) * w)

    want = jax.grad(f, argnums=tuple(range(len(float_idx))))(
        *[jnp.asarray(args[i]) for i in float_idx])
    g = ml.Graph()
    with g.as_default():
        phs = [ml.placeholder(ml.as_dtype(np.asarray(a).dtype), np.asarray(a).shape)
               for a in args]
        out = getattr(ops, name)(*phs, **kwargs)
        loss = ml.reduce_sum(out * w)
        grads = ml.gradients(loss, [phs[i] for i in float_idx])
    with ml.Session(graph=g) as sess:
        got = sess.run(grads, dict(zip(phs, args)))
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4,
                                   err_msg=f"d{name}/d(arg {float_idx[i]})")


def test_list_ops_concatenate_stack_einsum_split():
    a, b = f32(2, 3), f32(4, 3)
    _close(ops.concatenate([a, b], axis=0), np.concatenate([a, b]), "concatenate")
    _close(ops.stack([a, a * 2], axis=1), np.stack([a, a * 2], axis=1), "stack")
    _close(ops.einsum("ij,kj->ik", a, b), np.einsum("ij,kj->ik", a, b), "einsum")
    parts = ops.split(b, 2, axis=0)
    assert len(parts) == 2
    _close(parts[1], b[2:], "split")
    g = ml.Graph()
    with g.as_default():
        pa, pb = ml.placeholder(ml.float32, (None, 3)), ml.placeholder(ml.float32, (None, 3))
        c = ops.concatenate([pa, pb], axis=0)
        e = ops.einsum("ij,kj->ik", pa, pb)
        s = ops.stack([pa, pa * 2.0], axis=1)
        gr = ml.gradients(ml.reduce_sum(c * 2.0) + ml.reduce_sum(e), [pa, pb])
    with ml.Session(graph=g) as sess:
        cv, ev, sv, (ga, gb) = sess.run([c, e, s, gr], {pa: a, pb: b})
    _close(cv, np.concatenate([a, b]), "concatenate (graph)")
    _close(ev, a @ b.T, "einsum (graph)")
    _close(sv, np.stack([a, a * 2], axis=1), "stack (graph)")
    _close(ga, 2 + np.ones((2, 4)) @ b, "d einsum/da")
    _close(gb, 2 + np.ones((4, 2)) @ a, "d einsum/db")


def test_shape_of_symbolic_batch_sizes_other_ops():
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, (None, 3))
        shp = ops.shape(x)
        assert shp[1] == 3 and isinstance(shp[0], ml.Tensor)
        z = ops.zeros((shp[0], 2))
        o = ops.ones((shp[0], 1), dtype="int32")
        r = ops.reshape(x, (shp[0], 3, 1))
        full = ops.full((shp[0],), 7.0)
    with ml.Session(graph=g) as sess:
        zv, ov, rv, fv = sess.run([z, o, r, full], {x: np.ones((5, 3), np.float32)})
    assert zv.shape == (5, 2) and ov.shape == (5, 1) and ov.dtype == np.int32
    assert rv.shape == (5, 3, 1)
    np.testing.assert_array_equal(fv, np.full(5, 7.0))


def test_top_k_moments_and_python_scalars_keep_dtype():
    x = f32(3, 6)
    v, i = ops.top_k(x, 2)
    kv, ki = kops.top_k(x, 2)
    _close(v, kv, "top_k values")
    _close(i, ki, "top_k indices")
    m, var = ops.moments(x, axes=[1])
    _close(m, x.mean(1), "moments mean")
    _close(var, x.var(1), "moments variance")
    g = ml.Graph()
    with g.as_default():
        p = ml.placeholder(ml.bfloat16, (2,))
        assert ops.multiply(p, 2.0).dtype == ml.bfloat16  # weak-typed Python number
        pv, pi = ops.top_k(ml.placeholder(ml.float32, (None, 6)), 3)
        assert pi.dtype == ml.int32 and pv.shape.as_list() == [None, 3]


def test_control_flow_on_arrays_and_graphs():
    # arrays: like jax.lax
    assert int(ops.fori_loop(0, 5, lambda i, v: v + i, 0)) == 10
    out = ops.while_loop(lambda a, b: a < 10, lambda a, b: (a + 1, b * 2), (0, 1))
    assert tuple(int(v) for v in out) == (10, 1024)
    carry, ys = ops.scan(lambda c, x: (c + x, c * x), 0.0, jnp.arange(4.0))
    assert float(carry) == 6.0
    np.testing.assert_allclose(ys, [0.0, 0.0, 2.0, 9.0])
    assert float(ops.cond(True, lambda: 1.0, lambda: 2.0)) == 1.0
    # graphs: mylib's control flow, differentiable
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, ())
        y = ops.cond(x > 0, lambda: x * x, lambda: -x)
        # Gradients through a graph while_loop need a bound (mylib's rule).
        a, b = ops.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                              (ml.constant(0), ml.constant(1.0)), maximum_iterations=10)
        fl = ops.fori_loop(0, 4, lambda i, v: v + ml.cast(i, ml.float32) * x, x)
        c, s = ops.scan(lambda c, e: (c + e, c * e), x, ops.convert_to_tensor(
            np.arange(3, dtype=np.float32)))
        dy, db = ml.gradients(y, x)[0], ml.gradients(b, x)[0]
    with ml.Session(graph=g) as sess:
        vals = sess.run([y, b, dy, db, fl, c, s], {x: 1.5})
    np.testing.assert_allclose(vals[:5], [2.25, 1.5 ** 3, 3.0, 3 * 1.5 ** 2, 1.5 + 6 * 1.5],
                               rtol=1e-6)
    assert float(vals[5]) == pytest.approx(4.5)
    np.testing.assert_allclose(vals[6], [0.0, 1.5, 5.0])


def test_segment_sum_slice_scatter_cast_convert():
    data, ids = f32(6, 2), np.array([0, 0, 1, 2, 2, 2], np.int32)
    want = np.stack([data[ids == k].sum(0) for k in range(3)])
    _close(ops.segment_sum(data, ids), want, "segment_sum")
    _close(ops.segment_max(data, ids, num_segments=3),
           np.stack([data[ids == k].max(0) for k in range(3)]), "segment_max")
    _close(ops.slice(A, (1, 1), (2, 2)), A[1:3, 1:3], "slice")
    _close(ops.slice_update(A, (0, 1), np.zeros((2, 2), np.float32)),
           np.where(np.pad(np.ones((2, 2)), ((0, 1), (1, 1))) > 0, 0, A), "slice_update")
    _close(ops.scatter(np.array([[0, 1], [2, 3]]), np.array([5.0, 6.0], np.float32), (3, 4)),
           kops.scatter(np.array([[0, 1], [2, 3]]), np.array([5.0, 6.0], np.float32), (3, 4)),
           "scatter")
    assert ops.cast(A, "int32").dtype == jnp.int32
    assert isinstance(ops.convert_to_numpy(ops.convert_to_tensor([1, 2])), np.ndarray)
    g = ml.Graph()
    with g.as_default():
        p = ml.placeholder(ml.float32, (None, 2))
        pid = ml.placeholder(ml.int32, (None,))
        s = ops.segment_sum(p, pid, num_segments=3)
        assert ops.cast(p, "float16").dtype == ml.float16
        with pytest.raises(ValueError, match="num_segments"):
            ops.segment_sum(p, ml.constant(ids))
        with pytest.raises(ValueError, match="symbolic"):
            ops.convert_to_numpy(p)
    with ml.Session(graph=g) as sess:
        _close(sess.run(s, {p: data, pid: ids}), want, "segment_sum (graph)")


def test_ops_in_a_custom_layer_train_and_save(tmp_path):
    from mylib import keras

    @keras.saving.register_keras_serializable(package="kface_test")
    class Poly(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(3,), initializer="zeros")

        def call(self, x):
            powers = ops.stack([ops.ones_like(x), x, ops.square(x)], axis=-1)
            return ops.sum(powers * self.w, axis=-1)

    x = np.linspace(-1, 1, 64, dtype=np.float32)[:, None]
    y = 0.5 - 2.0 * x + 3.0 * x ** 2
    inp = keras.Input(shape=(1,))
    model = keras.Model(inp, Poly()(inp))
    model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
    model.fit(x, y, epochs=300, batch_size=64, verbose=0)
    w = model.get_weights()[0]
    np.testing.assert_allclose(w, [0.5, -2.0, 3.0], atol=0.1)
    path = str(tmp_path / "poly.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
