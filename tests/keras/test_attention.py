"""MultiHeadAttention against a numpy re-implementation with the layer's own weights."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers import backend


def np_mha(q, v, k, w, H, mask=None):
    qk, qb, kk, kb, vk, vb, ok, ob = w
    Q = np.einsum("btd,dhk->bhtk", q, qk) + qb[None, :, None]
    K = np.einsum("bsd,dhk->bhsk", k, kk) + kb[None, :, None]
    V = np.einsum("bsd,dhk->bhsk", v, vk) + vb[None, :, None]
    s = np.einsum("bhtk,bhsk->bhts", Q / np.sqrt(qk.shape[-1]), K)
    if mask is not None:
        s = s + (1.0 - mask[:, None].astype(np.float64)) * -1e9
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("bhts,bhsk->bhtk", p, V)
    return np.einsum("bhtk,hko->bto", o, ok) + ob, p


def test_mha_matches_numpy_with_masks():
    rs = np.random.RandomState(0)
    B, T, S, D, H, K = 2, 3, 4, 5, 2, 3
    q, v = L.Input(shape=(T, D)), L.Input(shape=(S, 6))
    am = L.Input(shape=(T, S), dtype="bool")
    mha = L.MultiHeadAttention(num_heads=H, key_dim=K, value_dim=4,
                               bias_initializer="random_normal")
    out, scores = mha(q, v, attention_mask=am, return_attention_scores=True)
    assert out.shape.as_list() == [None, T, D] and scores.shape.as_list() == [None, H, T, S]
    assert [w.name for w in mha.weights][:2] == ["multi_head_attention/query/kernel:0",
                                                 "multi_head_attention/query/bias:0"]
    plain = mha(q, v)
    backend.ensure_initialized(mha.weights)
    w = mha.get_weights()
    assert [x.shape for x in w][::2] == [(D, H, K), (6, H, K), (6, H, 4), (H, 4, D)]
    qv, vv = rs.randn(B, T, D), rs.randn(B, S, 6)
    amv = rs.rand(B, T, S) > 0.3
    amv[:, :, 0] = True
    sess = backend.get_session(ml.get_default_graph())
    o, p, o2 = sess.run([out, scores, plain], {q: qv, v: vv, am: amv})
    want_o, want_p = np_mha(qv, vv, vv, w, H, amv)
    np.testing.assert_allclose(p, want_p, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(o, want_o, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(o2, np_mha(qv, vv, vv, w, H)[0], rtol=1e-4, atol=1e-5)


def test_causal_mask_key_and_output_shape():
    rs = np.random.RandomState(1)
    x, k = L.Input(shape=(4, 3)), L.Input(shape=(4, 2))
    mha = L.MultiHeadAttention(2, 2, output_shape=7)
    y, s = mha(x, x, key=k, use_causal_mask=True, return_attention_scores=True)
    assert y.shape.as_list() == [None, 4, 7]
    backend.ensure_initialized(mha.weights)
    xv, kv = rs.randn(2, 4, 3), rs.randn(2, 4, 2)
    sess = backend.get_session(ml.get_default_graph())
    yo, so = sess.run([y, s], {x: xv, k: kv})
    causal = np.broadcast_to(np.tril(np.ones((4, 4), bool)), (2, 4, 4))
    want_o, want_p = np_mha(xv, xv, kv, mha.get_weights(), 2, causal)
    np.testing.assert_allclose(so, want_p, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(yo, want_o, rtol=1e-4, atol=1e-5)
    assert np.all(so[:, :, 0, 1:] < 1e-6)


def test_padding_mask_from_embedding_and_errors():
    ids = L.Input(shape=(4,), dtype="int32")
    e = L.Embedding(9, 4, mask_zero=True)(ids)
    mha = L.MultiHeadAttention(1, 4)
    y, s = mha(e, e, return_attention_scores=True)
    model = ml.Model(ids, [y, s])
    _, so = model.predict(np.array([[3, 2, 0, 0]]), verbose=0)
    assert np.all(so[0, 0, :2, 2:] < 1e-6)  # padded query rows are fully masked
    with pytest.raises(ValueError, match="num_heads"):
        L.MultiHeadAttention(0, 2)
    with pytest.raises(ValueError, match=r"multi_head_attention_\d.*batch, length, dim"):
        L.MultiHeadAttention(1, 2)(L.Input(shape=(3,)), L.Input(shape=(3,)))
