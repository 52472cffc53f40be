"""`MultiHeadAttention` on padded sequences (`Embedding(mask_zero=True)`): a padded query
step has every key masked. Keras 3 attends uniformly there on its fused path and gives
all-zero probabilities (output = the output bias) on its explicit path, taken with
`dropout > 0` or `return_attention_scores=True`; mylib attended uniformly on both.
Compared with Keras 3 on the same weights, with and without a causal mask, including
a row that is padding only."""

import keras
import numpy as np
import pytest

from mylib import keras as mk
from tests.keras.keras_compare import _close, _same_weights

IDS = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 0, 0], [4, 5, 6, 7, 8], [0, 0, 0, 0, 0]],
               "int32")


def _model(K, dropout, scores, causal):
    i = K.Input((None,), dtype="int32")
    x = K.layers.Embedding(10, 4, mask_zero=True)(i)
    r = K.layers.MultiHeadAttention(2, 3, dropout=dropout)(
        x, x, return_attention_scores=scores, use_causal_mask=causal)
    return K.Model(i, list(r) if scores else r)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dropout,scores", [(0.0, False), (0.0, True), (0.3, False),
                                            (0.3, True)])
def test_padded_query_rows_match_keras(dropout, scores, causal):
    km, mm = _model(keras, dropout, scores, causal), _model(mk, dropout, scores, causal)
    _same_weights(mm, km)
    want = km.predict(IDS, verbose=0)
    got = mm.predict(IDS, verbose=0)
    for g, w in zip(got if scores else [got], want if scores else [want]):
        _close(g, w)
    if scores:
        probs = got[1]
        # Row 0's steps 2..4 and all of row 3 are padding: no probability mass.
        np.testing.assert_array_equal(probs[0, :, 2:], 0.0)
        np.testing.assert_array_equal(probs[3], 0.0)
        np.testing.assert_allclose(probs[2].sum(-1), 1.0, rtol=1e-6)
