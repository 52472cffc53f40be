"""`layer.compute_mask(...)` called on numpy batches, as the Keras 3 masking & padding
guide does, gives Keras 3's numpy masks: built-in mask makers (`Embedding`,
`Masking`), a user layer's own `compute_mask`, one returning a list, and a mask
passed in."""

import keras
import numpy as np

from mylib import keras as mk

PADDED = keras.utils.pad_sequences([[711, 632, 71], [73, 8, 3215, 55, 927],
                                    [83, 91, 1, 645, 1253, 927]], padding="post")


def _both(make, *args):
    want = make(keras).compute_mask(*args)
    got = make(mk).compute_mask(*args)
    return got, want


def test_builtin_mask_makers_on_arrays():
    got, want = _both(lambda K: K.layers.Embedding(5000, 16, mask_zero=True), PADDED)
    assert isinstance(got, np.ndarray) and got.dtype == np.bool_
    np.testing.assert_array_equal(got, np.asarray(want))
    x = np.tile(PADDED[..., None], [1, 1, 10]).astype("float32")
    got, want = _both(lambda K: K.layers.Masking(), x)
    np.testing.assert_array_equal(got, np.asarray(want))
    # A layer that passes its input's mask on returns it as given.
    m = PADDED != 0
    got, want = _both(lambda K: K.layers.Dropout(0.5), x, m)
    np.testing.assert_array_equal(got, np.asarray(want))


def test_user_compute_mask_on_arrays_including_a_list_of_masks():
    def split_layer(K):
        class TemporalSplit(K.layers.Layer):
            def call(self, inputs):
                return K.ops.split(inputs, 2, axis=1)

            def compute_mask(self, inputs, mask=None):
                if mask is None:
                    return None
                return K.ops.split(mask, 2, axis=1)
        return TemporalSplit()

    x = np.random.RandomState(0).rand(3, 6, 2).astype("float32")
    got, want = _both(split_layer, x, PADDED != 0)
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, np.asarray(w))
    assert split_layer(mk).compute_mask(x) is None

    def custom_embedding(K):
        class CustomEmbedding(K.layers.Layer):
            def compute_mask(self, inputs, mask=None):
                return K.ops.not_equal(inputs, 0)
        return CustomEmbedding()

    got, want = _both(custom_embedding, PADDED)
    np.testing.assert_array_equal(got, np.asarray(want))
