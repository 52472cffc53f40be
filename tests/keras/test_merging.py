"""Merge and shape layers against numpy; shape errors name the layer."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers import backend


def run(t, feed):
    return backend.get_session(ml.get_default_graph()).run(t, feed)


def test_elementwise_merges_match_numpy():
    a, b, c = L.Input(shape=(3,)), L.Input(shape=(3,)), L.Input(shape=(1,))
    rs = np.random.RandomState(0)
    av, bv, cv = rs.randn(2, 3), rs.randn(2, 3), rs.randn(2, 1)
    cases = [(L.Add(), [a, b, c], av + bv + cv), (L.Subtract(), [a, b], av - bv),
             (L.Multiply(), [a, b], av * bv), (L.Average(), [a, b], (av + bv) / 2),
             (L.Maximum(), [a, b], np.maximum(av, bv)), (L.Minimum(), [a, b], np.minimum(av, bv))]
    outs = [layer(ins) for layer, ins, _ in cases]
    got = run(outs, {a: av, b: bv, c: cv})
    for g, (_, _, want) in zip(got, cases):
        np.testing.assert_allclose(g, want, rtol=1e-6)
    assert outs[0].shape.as_list() == [None, 3]


def test_concatenate_and_dot():
    a, b = L.Input(shape=(2, 3)), L.Input(shape=(2, 5))
    rs = np.random.RandomState(1)
    av, bv = rs.randn(4, 2, 3), rs.randn(4, 2, 5)
    y = L.Concatenate()([a, b])
    assert y.shape.as_list() == [None, 2, 8]
    y1 = L.Concatenate(axis=1)([a, a])
    d = L.Dot(axes=1)([a, b])  # contract the length-2 axis: [B, 3, 5]
    assert d.shape.as_list() == [None, 3, 5]
    u, v = L.Input(shape=(4,)), L.Input(shape=(4,))
    uv, vv = rs.randn(4, 4), rs.randn(4, 4)
    cos = L.Dot(axes=-1, normalize=True)([u, v])
    assert cos.shape.as_list() == [None, 1]
    got = run([y, y1, d, cos], {a: av, b: bv, u: uv, v: vv})
    np.testing.assert_allclose(got[0], np.concatenate([av, bv], -1))
    np.testing.assert_allclose(got[1], np.concatenate([av, av], 1))
    np.testing.assert_allclose(got[2], np.einsum("bti,btj->bij", av, bv), rtol=1e-5)
    want = (uv * vv).sum(1) / np.linalg.norm(uv, axis=1) / np.linalg.norm(vv, axis=1)
    np.testing.assert_allclose(got[3][:, 0], want, rtol=1e-5)


def test_shape_errors_name_the_layer():
    a, b = L.Input(shape=(3,)), L.Input(shape=(4,))
    with pytest.raises(ValueError, match=r'"add".*incompatible shapes.*\(None, 3\).*\(None, 4\)'):
        L.Add()([a, b])
    with pytest.raises(ValueError, match=r'"concatenate".*matching shapes'):
        L.Concatenate(axis=0)([a, b])
    with pytest.raises(ValueError, match=r'"subtract".*exactly 2'):
        L.Subtract()([a, a, a])
    with pytest.raises(ValueError, match=r'"dot".*axis 1 is 3.*axis 1 is 4'):
        L.Dot(axes=1)([a, b])
    with pytest.raises(ValueError, match="list"):
        L.Add()(a)


def test_permute_and_repeat_vector():
    x, v = L.Input(shape=(2, 3)), L.Input(shape=(3,))
    p, r = L.Permute((2, 1))(x), L.RepeatVector(4)(v)
    assert p.shape.as_list() == [None, 3, 2] and r.shape.as_list() == [None, 4, 3]
    xv, vv = np.arange(12.0).reshape(2, 2, 3), np.arange(6.0).reshape(2, 3)
    got = run([p, r], {x: xv, v: vv})
    np.testing.assert_allclose(got[0], xv.transpose(0, 2, 1))
    np.testing.assert_allclose(got[1], np.repeat(vv[:, None], 4, 1))
    with pytest.raises(ValueError, match="dims"):
        L.Permute((0, 1))
