"""MultiHeadAttention with a padding mask under mixed_float16: finite, and close to the
float32 layer with the same weights (the masked softmax runs in float32)."""

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L


@pytest.fixture(autouse=True)
def reset_policy():
    yield
    ml.mixed_precision.set_global_policy(None)


def _model(policy):
    ml.mixed_precision.set_global_policy(policy)
    ids = L.Input(shape=(6,), dtype="int32")
    x = L.Embedding(10, 8, mask_zero=True)(ids)  # id 0: padding, masked
    mha = L.MultiHeadAttention(num_heads=2, key_dim=4)
    out, probs = mha(x, x, return_attention_scores=True)
    return ml.Model(ids, [out, probs])


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_masked_attention_low_precision_matches_float32(policy):
    ids = np.array([[3, 5, 1, 0, 0, 0], [2, 2, 7, 9, 4, 0], [1, 0, 0, 0, 0, 0]], np.int32)
    ref = _model("float32")
    low = _model(policy)
    low.set_weights(ref.get_weights())
    want_out, want_p = ref.predict(ids, verbose=0)
    got_out, got_p = low.predict(ids, verbose=0)
    assert got_out.dtype.name == policy.split("_")[1]
    assert np.isfinite(got_out.astype(np.float32)).all()
    assert np.isfinite(got_p.astype(np.float32)).all()
    tol = 2e-2 if policy == "mixed_float16" else 6e-2
    np.testing.assert_allclose(got_out.astype(np.float32), want_out, rtol=tol, atol=tol)
    np.testing.assert_allclose(got_p.astype(np.float32), want_p, atol=tol)
    # valid queries give padded keys no attention; each valid query's row sums to 1,
    # a padded query's row to 0 (Keras 3's masked softmax with the scores returned)
    valid = ids != 0
    np.testing.assert_allclose(want_p.sum(-1), np.broadcast_to(
        valid[:, None, :].astype(np.float32), want_p.shape[:-1]), rtol=1e-5)
    key_pad = np.broadcast_to(valid[:, None, :, None] & ~valid[:, None, None, :],
                              want_p.shape)
    assert np.all(want_p[key_pad] == 0)
    assert np.all(got_p.astype(np.float32)[key_pad] == 0)


def test_float16_attention_mask_argument_is_finite():
    ml.mixed_precision.set_global_policy("mixed_float16")
    q = L.Input(shape=(4, 6))
    m = L.Input(shape=(4, 4), dtype="bool")
    out = L.MultiHeadAttention(num_heads=2, key_dim=3)(q, q, attention_mask=m)
    model = ml.Model([q, m], out)
    x = np.random.RandomState(0).randn(2, 4, 6).astype(np.float32)
    mask = np.tril(np.ones((4, 4), bool))[None].repeat(2, 0)
    mask[1, :, 2:] = False
    assert np.isfinite(model.predict([x, mask], verbose=0).astype(np.float32)).all()
