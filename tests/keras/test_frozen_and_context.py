"""`trainable = False` on a model or layer freezes its sublayers too, and the training
mode reaches the sublayers of a layer whose `call` has no ``training`` argument (Keras
3's call context): fit losses, weights and BatchNormalization's moving statistics
compared with Keras 3 on the same weights."""

import keras
import numpy as np
import pytest

import mylib as ml
from tests.keras.keras_compare import _close, _same_weights

_rng = np.random.RandomState(0)
X = (_rng.randn(8, 4) * 2 + 1).astype("float32")
Y = _rng.randn(8, 1).astype("float32")


def _frozen_transfer(L, Model, Input, Seq):
    base = Seq([Input((4,)), L.Dense(5, name="d0"), L.BatchNormalization(name="bn"),
                L.Dense(5, activation="relu", name="d1")], name="base")
    base.trainable = False
    i = Input((4,))
    return Model(i, L.Dense(1, name="head")(base(i))), base


def _both(build):
    km, kb = build(keras.layers, keras.Model, keras.Input, keras.Sequential)
    mm, mb = build(ml.layers, ml.Model, ml.layers.Input, ml.Sequential)
    _same_weights(mm, km)
    return km, kb, mm, mb


def _fit_both(km, mm, lr=0.01, epochs=2):
    km.compile(keras.optimizers.SGD(lr), "mse")
    mm.compile(ml.optimizers.SGD(lr), "mse")
    hk = km.fit(X, Y, epochs=epochs, batch_size=4, shuffle=False, verbose=0)
    hm = mm.fit(X, Y, epochs=epochs, batch_size=4, shuffle=False, verbose=0)
    _close(hm.history["loss"], hk.history["loss"], rtol=1e-4)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        _close(a, b, rtol=1e-4)


def _flags(model):
    return [l.trainable for l in model.layers]


def test_freezing_a_model_freezes_its_layers_and_batchnorm_infers_in_fit():
    km, kb, mm, mb = _both(_frozen_transfer)
    assert _flags(mb) == _flags(kb) == [False, False, False]
    assert mb.trainable_weights == [] and mb.layers[1].trainable_weights == []
    assert [tuple(w.shape) for w in mm.trainable_weights] == \
        [tuple(w.shape) for w in km.trainable_weights] == [(5, 1), (1,)]
    moving = mb.layers[1].get_weights()[2:]
    _fit_both(km, mm)
    # The moving statistics are those set before fit (Keras's, redrawn), unchanged.
    for a, b in zip(mb.layers[1].get_weights()[2:], moving):
        _close(a, b, rtol=0, atol=0)


def test_unfreezing_trains_every_layer_again():
    km, kb, mm, mb = _both(_frozen_transfer)
    kb.trainable = True
    mb.trainable = True
    assert _flags(mb) == _flags(kb) == [True, True, True]
    assert [tuple(w.shape) for w in mm.trainable_weights] == \
        [tuple(w.shape) for w in km.trainable_weights]
    moving = mb.layers[1].get_weights()[2]
    _fit_both(km, mm)
    assert not np.allclose(mb.layers[1].get_weights()[2], moving)


def test_parent_setting_overrides_a_sublayer_frozen_before():
    def build(L, Model, Input, Seq):
        base = Seq([Input((4,)), L.Dense(3), L.Dense(2)])
        base.layers[0].trainable = False
        base.trainable = True
        return base, base

    km, kb, mm, mb = _both(build)
    assert _flags(mb) == _flags(kb) == [True, True]
    assert len(mm.trainable_weights) == len(km.trainable_weights) == 4


def test_freezing_then_compiling_gives_the_head_only():
    km, kb, mm, mb = _both(_frozen_transfer)
    mm.compile(ml.optimizers.SGD(0.01), "mse")
    km.compile(keras.optimizers.SGD(0.01), "mse")
    assert [tuple(w.shape) for w in mm.trainable_weights] == \
        [tuple(w.shape) for w in km.trainable_weights] == [(5, 1), (1,)]
    assert len(mm.non_trainable_weights) == len(km.non_trainable_weights) == 8


# ---------------------------------------------------------------- call context
def _block_class(L, explicit_false=False):
    class Block(L.Layer):
        """A layer whose `call` takes no ``training``; its BatchNormalization does."""

        def __init__(self, **kw):
            super().__init__(**kw)
            self.d = L.Dense(3)
            self.bn = L.BatchNormalization()

        def call(self, x):
            return self.bn(self.d(x), training=False) if explicit_false \
                else self.bn(self.d(x))

    return Block


def _block_model(explicit_false=False):
    def build(L, Model, Input, Seq):
        m = Seq([Input((4,)), _block_class(L, explicit_false)(), L.Dense(1)])
        return m, m.layers[0]
    return build


def test_training_reaches_sublayers_of_a_call_without_training_argument():
    km, kb, mm, mb = _both(_block_model())
    _close(mm(X, training=True), km(X, training=True), rtol=1e-4)
    _close(mm(X), km(X), rtol=1e-4)
    moving = mb.bn.get_weights()[2]
    _fit_both(km, mm, lr=0.1)
    assert not np.allclose(mb.bn.get_weights()[2], moving)  # the statistics moved


def test_an_explicit_training_false_inside_call_wins_over_the_context():
    km, kb, mm, mb = _both(_block_model(explicit_false=True))
    moving = mb.bn.get_weights()[2]
    _fit_both(km, mm, lr=0.1)
    _close(mb.bn.get_weights()[2], moving, rtol=0, atol=0)


@pytest.mark.parametrize("takes_training", [False, True])
def test_subclassed_model_calling_a_block_without_training(takes_training):
    # As Keras 3 (JAX): the train step calls the model's own `call` (with
    # ``training=True`` where it takes one); that is the top of the context, so a
    # sublayer called without ``training`` there runs in inference mode and its
    # statistics stay as they were.
    def build(L, Model, Input, Seq):
        Block = _block_class(L)

        class Net(Model):
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.out = L.Dense(1)

            if takes_training:
                def call(self, x, training=None):
                    return self.out(self.block(x))
            else:
                def call(self, x):
                    return self.out(self.block(x))

        net = Net()
        net(X[:2])
        return net, net.block

    km, kb, mm, mb = _both(build)
    moving = mb.bn.get_weights()[2]
    _fit_both(km, mm, lr=0.1)
    _close(mb.bn.get_weights()[2], moving, rtol=0, atol=0)


def test_model_called_with_training_passes_it_to_nested_blocks():
    # `model(x, training=True)` goes through `__call__`: the context reaches the
    # block's BatchNormalization (batch statistics), as Keras 3.
    def build(L, Model, Input, Seq):
        Block = _block_class(L)

        class Net(Model):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def call(self, x):
                return self.block(x)

        net = Net()
        net(X[:2])
        return net, net.block

    km, kb, mm, mb = _both(build)
    _close(mm(X, training=True), km(X, training=True), rtol=1e-4)
    _close(mb.bn.get_weights()[2], kb.bn.get_weights()[2], rtol=1e-5)


def test_dropout_inside_a_layer_without_training_argument():
    class Wrap(ml.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.drop = ml.layers.Dropout(0.5, seed=1)

        def call(self, x):
            return self.drop(x)

    m = ml.Sequential([ml.layers.Input((200,)), Wrap()])
    x = np.ones((4, 200), "float32")
    np.testing.assert_array_equal(m.predict(x, verbose=0), x)
    out = m(x, training=True)
    assert set(np.unique(out)) == {0.0, 2.0}  # dropped, or scaled by 1 / (1 - rate)
