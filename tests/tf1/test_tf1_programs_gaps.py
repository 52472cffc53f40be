"""TF1 programs that used to fail: `from_generator`'s positional `output_types`, shared
weights of unnamed layers in a re-entered variable scope, fetching a variable's own tensor,
`.meta` files written by `Saver.save`, GPU options, string constants, scatter updates and
the sequence losses of char-rnn / PTB programs. Each is checked against numpy or a closed
form."""

import numpy as np
import pytest

import mylib as tf


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


# --- 1. from_generator(gen, output_types, output_shapes) ---

def _ragged_gen():
    for n in [3, 1, 4]:
        yield np.arange(1, n + 1, dtype=np.int32), n


def test_from_generator_second_positional_is_output_types():
    ds = tf.data.Dataset.from_generator(_ragged_gen, (tf.int32, tf.int32),
                                        (tf.TensorShape([None]), tf.TensorShape([])))
    assert ds.output_types == (tf.int32, tf.int32)
    nx = ds.padded_batch(2, padded_shapes=([None], [])).make_one_shot_iterator().get_next()
    assert nx[0].dtype == tf.int32 and nx[1].dtype == tf.int32
    with tf.Session() as s:
        seqs, lens = s.run(nx)
    assert seqs.dtype == np.int32 and lens.dtype == np.int32
    np.testing.assert_array_equal(seqs, [[1, 2, 3], [1, 0, 0]])
    np.testing.assert_array_equal(lens, [3, 1])


def test_from_generator_output_signature_keyword_still_works():
    ds = tf.data.Dataset.from_generator(
        _ragged_gen, output_signature=(tf.TensorSpec([None], tf.int64),
                                       tf.TensorSpec([], tf.int64)))
    first = next(iter(ds))
    assert np.asarray(first[0]).dtype == np.int64
    np.testing.assert_array_equal(first[0], [1, 2, 3])
    with pytest.raises(TypeError, match="not both"):
        tf.data.Dataset.from_generator(_ragged_gen, (tf.int32, tf.int32),
                                       output_signature=(tf.TensorSpec([None], tf.int32),
                                                         tf.TensorSpec([], tf.int32)))
