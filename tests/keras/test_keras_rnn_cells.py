"""`RNN`, `LSTMCell`, `GRUCell`, `SimpleRNNCell`, `StackedRNNCells` and a user's cell
against Keras 3 itself (JAX backend): the same weights (Keras's, redrawn, copied with
set_weights) give the same outputs, states, masked outputs and training steps."""

import json

import keras
import numpy as np
import pytest

import mylib as ml
import mylib.keras as mk

from keras_compare import _randomized

RS = np.random.RandomState(7)
X = RS.randn(3, 5, 4).astype(np.float32)


def _flat(x):
    return [np.asarray(a) for a in keras.tree.flatten(x)]


def _same_weights(ours, theirs, seed=0):
    theirs.set_weights(_randomized([(v.path, np.asarray(v)) for v in theirs.weights], seed))
    ours.set_weights(theirs.get_weights())


def _assert_same(got, want, rtol=1e-4, atol=1e-5):
    got, want = _flat(got), _flat(want)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def minimal_cell(K):
    """The "MinimalRNNCell" of Keras's `RNN` docs, written against `K` (Keras or mylib)."""
    class MinimalRNNCell(K.layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.state_size = units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units),
                                          initializer="uniform", name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units),
                                                    initializer="uniform",
                                                    name="recurrent_kernel")
            self.built = True

        def call(self, inputs, states):
            prev_output = states[0]
            h = K.ops.matmul(inputs, self.kernel)
            output = h + K.ops.matmul(prev_output, self.recurrent_kernel)
            return output, [output]

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    return MinimalRNNCell


def pair_cell(K):
    """A cell with two states of different sizes, an `output_size` that is not the first
    state's, and its own `get_initial_state` (ones)."""
    class PairCell(K.layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.state_size = [units, 2 * units]
            self.output_size = 2 * units

        def build(self, input_shape):
            self.k = self.add_weight(shape=(input_shape[-1], self.units), name="k")
            self.u = self.add_weight(shape=(2 * self.units, self.units), name="u")

        def get_initial_state(self, batch_size=None):
            return [K.ops.ones((batch_size, self.units)),
                    K.ops.zeros((batch_size, 2 * self.units))]

        def call(self, inputs, states, training=None):
            a, b = states
            a2 = K.ops.tanh(K.ops.matmul(inputs, self.k) + K.ops.matmul(b, self.u)) + a * 0.5
            b2 = K.ops.concatenate([a2, a], axis=-1)
            return b2 * 2.0, [a2, b2]

    return PairCell


CELLS = {
    "lstm": lambda K: K.layers.LSTMCell(6),
    "gru": lambda K: K.layers.GRUCell(6),
    "gru_reset_before": lambda K: K.layers.GRUCell(6, reset_after=False),
    "simple": lambda K: K.layers.SimpleRNNCell(6, activation="relu"),
    "stacked": lambda K: [K.layers.LSTMCell(6), K.layers.GRUCell(3)],
    "minimal": lambda K: minimal_cell(K)(5),
    "pair": lambda K: pair_cell(K)(3),
}
OPTIONS = {
    "last": {},
    "sequences": {"return_sequences": True},
    "state": {"return_state": True},
    "backwards_all": {"go_backwards": True, "return_sequences": True, "return_state": True},
}


@pytest.mark.parametrize("cell, opts", [
    ("lstm", "last"), ("lstm", "state"), ("lstm", "backwards_all"),
    ("gru", "backwards_all"), ("gru_reset_before", "backwards_all"),
    ("simple", "backwards_all"), ("stacked", "backwards_all"),
    ("minimal", "sequences"), ("pair", "backwards_all"),
])
def test_rnn_matches_keras(cell, opts):
    kw = OPTIONS[opts]
    theirs = keras.layers.RNN(CELLS[cell](keras), **kw)
    ours = mk.layers.RNN(CELLS[cell](mk), **kw)
    theirs(X)
    ours(X)
    _same_weights(ours, theirs)
    _assert_same(ours(X), theirs(X))


def test_weights_named_and_ordered_as_keras():
    ours = mk.layers.RNN([mk.layers.LSTMCell(4), mk.layers.GRUCell(2)])
    theirs = keras.layers.RNN([keras.layers.LSTMCell(4), keras.layers.GRUCell(2)])
    ours(mk.Input((5, 4)))
    theirs.build((None, 5, 4))
    want = [(v.path.split("/")[-1], tuple(v.shape)) for v in theirs.weights]
    got = [(w.name.split("/")[-1].split(":")[0], tuple(w.shape.as_list()))
           for w in ours.weights]
    assert got == want
    assert want[2] == ("bias", (16,)) and want[5] == ("bias", (2, 6))


def _masked_model(K, cell, kw):
    ids = K.Input((6,), dtype="int32")
    x = K.layers.Embedding(10, 4, mask_zero=True)(ids)
    return K.Model(ids, K.layers.RNN(CELLS[cell](K), **kw)(x))


# Masked steps at the start, the middle and the end of sequences (0 is the mask id).
IDS = RS.randint(1, 10, size=(4, 6))
IDS[0, 3:] = 0
IDS[1, :2] = 0
IDS[2, 2] = 0


@pytest.mark.parametrize("cell, kw", [
    ("lstm", {"return_sequences": True, "return_state": True}),
    ("gru", {"return_sequences": True, "go_backwards": True}),
    ("gru", {"return_sequences": True, "zero_output_for_mask": True}),
    ("stacked", {"return_sequences": True, "return_state": True}),
    ("minimal", {}),
    ("lstm", {"return_sequences": True, "unroll": True}),
])
def test_mask_matches_keras(cell, kw):
    # A masked step keeps the states; its output is Keras's (the previous state in the
    # scan, the previous output when unrolled, zeros with zero_output_for_mask).
    theirs, ours = _masked_model(keras, cell, kw), _masked_model(mk, cell, kw)
    _same_weights(ours, theirs, seed=1)
    _assert_same(ours.predict(IDS, verbose=0), theirs.predict(IDS, verbose=0))


def test_mask_argument_and_output_mask():
    mask = np.ones((3, 5), bool)
    mask[0, 2:] = False
    layer = mk.layers.RNN(mk.layers.GRUCell(3), return_sequences=True)
    theirs = keras.layers.RNN(keras.layers.GRUCell(3), return_sequences=True)
    layer(X)
    theirs(X)
    _same_weights(layer, theirs)
    out = layer(X, mask=mask)
    _assert_same(out, theirs(X, mask=mask))
    np.testing.assert_allclose(out[0, 2:], np.repeat(out[0, 1:2], 3, axis=0))
    x = mk.Input((5, 4))
    y = mk.layers.Masking()(x)
    assert mk.layers.RNN(mk.layers.GRUCell(3), return_sequences=True)(y)._keras_mask \
        is not None
    assert getattr(mk.layers.RNN(mk.layers.GRUCell(3))(y), "_keras_mask", None) is None


def _init_state_model(K, stacked):
    seq, h, c = K.Input((5, 4)), K.Input((4,)), K.Input((4,))
    if stacked:
        g = K.Input((2,))
        rnn = K.layers.RNN([K.layers.LSTMCell(4), K.layers.GRUCell(2)], return_state=True)
        return K.Model([seq, h, c, g], rnn(seq, initial_state=[[h, c], [g]]))
    rnn = K.layers.RNN(K.layers.LSTMCell(4), return_sequences=True, return_state=True)
    return K.Model([seq, h, c], rnn(seq, initial_state=[h, c]))


@pytest.mark.parametrize("stacked", [False, True])
def test_initial_state_matches_keras(stacked):
    theirs, ours = _init_state_model(keras, stacked), _init_state_model(mk, stacked)
    _same_weights(ours, theirs, seed=2)
    feed = [X, RS.randn(3, 4).astype(np.float32), RS.randn(3, 4).astype(np.float32)]
    if stacked:
        feed.append(RS.randn(3, 2).astype(np.float32))
    _assert_same(ours.predict(feed, verbose=0), theirs.predict(feed, verbose=0))


def test_initial_state_flat_list_for_a_stack_and_bad_count():
    rnn = mk.layers.RNN([mk.layers.LSTMCell(4), mk.layers.GRUCell(2)], return_state=True)
    h = np.full((3, 4), 0.5, np.float32)
    out, (h1, c1), (g1,) = rnn(X, initial_state=[h, h, np.ones((3, 2), np.float32)])
    out2, *_ = rnn(X, initial_state=[[h, h], [np.ones((3, 2), np.float32)]])
    np.testing.assert_allclose(out, out2)
    assert out.shape == (3, 2) and c1.shape == (3, 4)
    with pytest.raises(ValueError, match="expects 3 initial state"):
        rnn(X, initial_state=[h, h])


def _fit_model(K):
    model = K.Sequential([K.Input((5, 4)), K.layers.RNN(K.layers.LSTMCell(4)),
                          K.layers.Dense(2)])
    model.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    return model


def test_fit_matches_keras():
    # Gradients through the loop: two epochs of SGD on the same batches.
    x = RS.randn(16, 5, 4).astype(np.float32)
    y = RS.randn(16, 2).astype(np.float32)
    theirs, ours = _fit_model(keras), _fit_model(mk)
    _same_weights(ours, theirs, seed=3)
    start = theirs.get_weights()
    kh = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    mh = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(mh.history["loss"], kh.history["loss"], rtol=1e-4)
    for got, want, w0 in zip(ours.get_weights(), theirs.get_weights(), start):
        assert np.abs(want - w0).max() > 1e-3  # the step moved every weight
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_user_cell_is_traced_once_into_one_loop():
    calls = []

    class Counting(minimal_cell(mk)):
        def call(self, inputs, states):
            calls.append(1)
            return super().call(inputs, states)

    x = mk.Input((50, 4))
    mk.layers.RNN(Counting(3), return_sequences=True)(x)
    assert len(calls) == 1
    types = [op.type for op in ml.get_default_graph().get_operations()]
    assert types.count("StatelessScan") == 1


def test_dropout_in_training_only():
    rnn = mk.layers.RNN([mk.layers.LSTMCell(4, dropout=0.5, recurrent_dropout=0.5),
                         mk.layers.SimpleRNNCell(3, recurrent_dropout=0.5, seed=1)])
    a, b = rnn(X, training=True), rnn(X, training=True)
    assert not np.allclose(a, b)
    np.testing.assert_allclose(rnn(X), rnn(X))


def test_cell_called_on_its_own_matches_keras():
    ours, theirs = mk.layers.GRUCell(3, reset_after=False), keras.layers.GRUCell(3,
                                                                                   reset_after=False)
    h = RS.randn(3, 3).astype(np.float32)
    theirs(X[:, 0], [h])
    ours(X[:, 0], [h])
    _same_weights(ours, theirs)
    _assert_same(ours(X[:, 0], [h]), theirs(X[:, 0], [h]))


def test_config_round_trip_as_keras():
    rnn = mk.layers.RNN([mk.layers.LSTMCell(4, dropout=0.1),
                         mk.layers.GRUCell(2, reset_after=False)],
                        return_sequences=True, go_backwards=True)
    cfg = json.loads(json.dumps(rnn.get_config()))
    theirs = keras.layers.RNN([keras.layers.LSTMCell(4), keras.layers.GRUCell(2)]).get_config()
    assert set(cfg) == set(theirs)
    assert set(cfg["cell"]) == set(theirs["cell"]) == {"module", "class_name", "config",
                                                       "registered_name"}
    assert set(cfg["cell"]["config"]["cells"][0]["config"]) <= \
        set(theirs["cell"]["config"]["cells"][0]["config"]) | {"batch_input_shape"}
    again = mk.layers.RNN.from_config(cfg)
    assert isinstance(again.cell, mk.layers.StackedRNNCells)
    assert again.go_backwards and again.return_sequences
    inner = again.cell.cells
    assert inner[0].dropout == 0.1 and inner[1].reset_after is False
    assert json.loads(json.dumps(again.get_config()))["cell"]["config"]["cells"][1] == \
        cfg["cell"]["config"]["cells"][1] | {"config": {**cfg["cell"]["config"]["cells"][1][
            "config"], "name": inner[1].name}}


def test_save_and_load_with_a_registered_user_cell(tmp_path):
    cell_cls = mk.saving.register_keras_serializable(package="test_rnn_cells")(
        minimal_cell(mk))
    model = mk.Sequential([mk.Input((5, 4)),
                           mk.layers.RNN([cell_cls(3), mk.layers.GRUCell(2)])])
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = mk.saving.load_model(path)
    assert type(loaded.layers[0].cell.cells[0]) is cell_cls
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0),
                               rtol=1e-6)


def test_output_shapes_and_bad_arguments():
    x = mk.Input((None, 4))
    out, h, c = mk.layers.RNN(mk.layers.LSTMCell(3), return_sequences=True,
                              return_state=True)(x)
    assert out.shape.as_list() == [None, None, 3] and c.shape.as_list() == [None, 3]
    rnn = mk.layers.RNN(pair_cell(mk)(2), return_state=True)
    assert rnn.compute_output_shape((None, 7, 4)) == [(None, 4), (None, 2), (None, 4)]

    class NoState(mk.layers.Layer):
        def call(self, inputs, states):
            return inputs, states

    with pytest.raises(ValueError, match="state_size"):
        mk.layers.RNN(NoState())
    with pytest.raises(ValueError, match="batch size must be static"):
        mk.layers.RNN(mk.layers.LSTMCell(2), stateful=True)(x)
    with pytest.raises(ValueError, match="dropout"):
        mk.layers.LSTMCell(2, dropout=1.5)
    with pytest.raises(ValueError, match="unroll"):
        mk.layers.RNN(mk.layers.LSTMCell(2), unroll=True)(x)


def test_mixed_precision_cells_in_a_float32_stack():
    # The cells compute in bfloat16 inside a float32 StackedRNNCells (Keras casts at
    # each cell's __call__); the result stays close to the float32 one.
    def layer(dtype):
        return mk.layers.RNN([mk.layers.LSTMCell(4, dtype=dtype),
                              mk.layers.GRUCell(3, dtype=dtype)], dtype=dtype)
    low, full = layer("mixed_bfloat16"), layer("float32")
    low(X)
    full(X)
    full.set_weights(low.get_weights())
    got = low(X)
    assert got.dtype == np.dtype("bfloat16")
    np.testing.assert_allclose(got.astype(np.float32), full(X), atol=0.05)
