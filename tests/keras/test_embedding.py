"""Embedding: lookup values, the sparse (IndexedSlices) gradient, training with fit."""

import numpy as np

import mylib as ml
from mylib import layers as L
from mylib.layers import backend
from mylib.layers.base import get_mask


def test_lookup_mask_and_sparse_gradient():
    ids = L.Input(shape=(3,), dtype="int32")
    emb = L.Embedding(6, 4, mask_zero=True)
    y = emb(ids)
    assert y.shape.as_list() == [None, 3, 4]
    g = ml.gradients(ml.reduce_sum(y * y), emb.embeddings)[0]
    assert isinstance(g, ml.IndexedSlices)
    backend.ensure_initialized(emb.weights)
    table = emb.get_weights()[0]
    assert np.all(np.abs(table) <= 0.05)  # "uniform" initializer
    iv = np.array([[1, 2, 0], [2, 5, 0]])
    sess = backend.get_session(ml.get_default_graph())
    out, mask, vals, idx = sess.run([y, get_mask(y), g.values, g.indices], {ids: iv})
    np.testing.assert_allclose(out, table[iv])
    np.testing.assert_array_equal(mask, iv != 0)
    dense = np.zeros_like(table)
    np.add.at(dense, idx, vals)
    want = np.zeros_like(table)
    np.add.at(want, iv.ravel(), 2 * table[iv].reshape(-1, 4))
    np.testing.assert_allclose(dense, want, rtol=1e-6)


def test_fit_with_sgd_changes_only_looked_up_rows():
    model = ml.Sequential([L.Input(shape=(2,), dtype="int32"), L.Embedding(10, 3),
                           L.Flatten(), L.Dense(1)])
    before = model.get_weights()[0]
    model.compile(ml.optimizers.SGD(learning_rate=0.1), "mse")
    X = np.array([[1, 3], [3, 4], [1, 1]])
    model.fit(X, np.ones(3, np.float32), batch_size=3, epochs=2, verbose=0)
    after = model.get_weights()[0]
    changed = np.where(np.any(after != before, axis=1))[0]
    assert changed.tolist() == [1, 3, 4]


def test_float_ids_are_cast_and_config():
    x = L.Input(shape=(2,))
    emb = L.Embedding(5, 2, embeddings_initializer="ones", name="tok")
    y = emb(x)
    backend.ensure_initialized(emb.weights)
    sess = backend.get_session(ml.get_default_graph())
    np.testing.assert_allclose(sess.run(y, {x: np.array([[1.0, 4.0]])}), np.ones((1, 2, 2)))
    cfg = emb.get_config()
    assert cfg["input_dim"] == 5 and cfg["output_dim"] == 2 and cfg["name"] == "tok"
