"""MirroredStrategy on 4 forced CPU devices (tests/conftest.py): equivalence with one
device, the strategy API, errors."""

import jax
import numpy as np
import pytest

import mylib as ml
from mylib.distribute import MirroredStrategy, ReduceOp


def _data(n=70, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 10)).astype(np.float32)
    y = (x[:, :3].sum(1) > 0).astype(np.int64)
    return x, y


def _mlp(optimizer):
    init = ml.initializers.GlorotUniform
    m = ml.Sequential([ml.layers.Input((10,)),
                       ml.layers.Dense(16, activation="relu", kernel_initializer=init(seed=1)),
                       ml.layers.Dense(2, kernel_initializer=init(seed=2))])
    m.compile(optimizer=optimizer, metrics=["accuracy"],
              loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def _fit(strategy, optimizer_fn, batch, epochs=3):
    x, y = _data()
    g = ml.Graph()
    with g.as_default():
        if strategy is None:
            m = _mlp(optimizer_fn())
        else:
            with strategy.scope():
                m = _mlp(optimizer_fn())
    h = m.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, shuffle=False)
    return m, h


@pytest.mark.parametrize("opt", [lambda: ml.optimizers.SGD(0.1, momentum=0.9),
                                 lambda: ml.optimizers.Adam(0.01)], ids=["sgd", "adam"])
def test_four_replicas_equal_one_device(opt):
    # 70 samples, global batch 16: the last batch (6) does not divide by 4 replicas.
    m1, h1 = _fit(None, opt, 16)
    s = MirroredStrategy()
    assert s.num_replicas_in_sync == 4
    m4, h4 = _fit(s, opt, 16)
    np.testing.assert_allclose(h4.history["loss"], h1.history["loss"], rtol=1e-5)
    np.testing.assert_allclose(h4.history["accuracy"], h1.history["accuracy"], rtol=1e-6)
    for a, b in zip(m1.get_weights(), m4.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # Variables are mirrored: one replicated value across the 4 devices.
    for w in m4.trainable_weights:
        arr = m4.session._store[w._key]
        assert len(arr.devices()) == 4 and arr.sharding.is_fully_replicated


def test_devices_subset_and_bad_devices():
    s = MirroredStrategy(devices=["/cpu:0", "/cpu:2"])
    assert s.num_replicas_in_sync == 2
    assert s.extended.worker_devices == ("/device:CPU:0", "/device:CPU:2")
    with pytest.raises(ml.errors.InvalidArgumentError, match="available"):
        MirroredStrategy(devices=["/gpu:0"])
    with pytest.raises(ml.errors.InvalidArgumentError, match="repeat"):
        MirroredStrategy(devices=["/cpu:1", "/cpu:1"])


def test_scope_get_strategy_has_strategy():
    s = MirroredStrategy()
    assert not ml.distribute.has_strategy()
    assert ml.distribute.get_strategy().num_replicas_in_sync == 1
    assert ml.distribute.get_replica_context().replica_id_in_sync_group == 0
    with s.scope():
        assert ml.distribute.has_strategy() and ml.distribute.get_strategy() is s
        assert ml.distribute.get_replica_context() is None  # cross-replica context
        with pytest.raises(ValueError, match="Mixing"):
            with MirroredStrategy().scope():
                pass
    assert not ml.distribute.has_strategy()


def test_run_all_reduce_reduce_gather_merge_call():
    s = MirroredStrategy()
    g = ml.Graph()
    with g.as_default(), s.scope():
        v = ml.Variable(2.0, name="v")
        data = s.experimental_distribute_values_from_function(
            lambda ctx: ml.constant([float(ctx.replica_id_in_sync_group)] * 2))

        def fn(t):
            ctx = ml.distribute.get_replica_context()
            local = t * v                                       # [2] per replica
            total = ctx.all_reduce(ReduceOp.SUM, local)        # sum over replicas
            mean = ctx.all_reduce(ReduceOp.MEAN, ml.reduce_sum(local))
            merged = ctx.merge_call(lambda strat, x: strat.reduce(ReduceOp.SUM, x),
                                    args=(ml.reduce_sum(t),))
            return local, total, mean, merged

        res = s.run(fn, args=(data,))
        per = [r for r in res.values]
        red = s.reduce(ReduceOp.SUM, ml.distribute.PerReplica([p[0] for p in per]), axis=0)
        gat = s.gather(ml.distribute.PerReplica([p[0] for p in per]), axis=0)
        with ml.Session(graph=g) as sess:
            sess.run(ml.global_variables_initializer())
            vals = sess.run({"per": per, "red": red, "gat": gat})
    # replica r holds [r, r] * 2
    for r, (loc, tot, mean, merged) in enumerate(vals["per"]):
        np.testing.assert_allclose(loc, [2.0 * r] * 2)
        np.testing.assert_allclose(tot, [12.0, 12.0])           # 2 * (0+1+2+3)
        np.testing.assert_allclose(mean, 6.0)                    # mean of 4 * r
        np.testing.assert_allclose(merged, 12.0)                 # sum of 2r over replicas
    np.testing.assert_allclose(vals["red"], 24.0)
    np.testing.assert_allclose(vals["gat"], [0, 0, 2, 2, 4, 4, 6, 6])


def test_error_in_one_replica_propagates_without_hanging():
    s = MirroredStrategy()
    g = ml.Graph()
    with g.as_default(), s.scope():
        def fn():
            ctx = ml.distribute.get_replica_context()
            if ctx.replica_id_in_sync_group == 2:
                raise RuntimeError("replica 2 failed")
            return ctx.all_reduce(ReduceOp.SUM, ml.constant(1.0))

        with pytest.raises(RuntimeError, match="replica 2 failed"):
            s.run(fn)


def test_saver_roundtrip_under_strategy(tmp_path):
    s = MirroredStrategy()
    g = ml.Graph()
    with g.as_default():
        with s.scope():
            v = ml.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
        upd = v.assign_add(np.ones((2, 3), np.float32))
        saver = ml.train.Saver()
        with ml.Session(graph=g) as sess:
            sess.run(v.initializer)
            sess.run(upd)
            path = saver.save(sess, str(tmp_path / "m"))
        with ml.Session(graph=g) as sess2:
            saver.restore(sess2, path)
            np.testing.assert_array_equal(sess2.run(v), np.arange(6).reshape(2, 3) + 1)
            sess2.run(upd)  # a restored value works in the replicated step
            np.testing.assert_array_equal(sess2.run(v), np.arange(6).reshape(2, 3) + 2)


def _cnn(optimizer):
    init = ml.initializers.GlorotUniform
    m = ml.Sequential([
        ml.layers.Input((8, 8, 1)),
        # No conv bias before BatchNormalization: its gradient is zero up to rounding,
        # which Adam would amplify into noise.
        ml.layers.Conv2D(4, 3, padding="same", use_bias=False,
                         kernel_initializer=init(seed=3)),
        ml.layers.BatchNormalization(synchronized=True),
        ml.layers.Activation("relu"),
        ml.layers.MaxPooling2D(2),
        ml.layers.Flatten(),
        ml.layers.Dense(3, kernel_initializer=init(seed=4))])
    m.compile(optimizer=optimizer, metrics=["accuracy"],
              loss=ml.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


@pytest.mark.parametrize("opt", [lambda: ml.optimizers.SGD(0.05, momentum=0.9),
                                 lambda: ml.optimizers.Adam(0.01)], ids=["sgd", "adam"])
def test_cnn_with_batchnorm_four_replicas_equal_one_device(opt):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((48, 8, 8, 1)).astype(np.float32)
    y = rng.integers(0, 3, 48)
    models = []
    for strategy in (None, MirroredStrategy()):
        g = ml.Graph()
        with g.as_default():
            if strategy is None:
                m = _cnn(opt())
            else:
                with strategy.scope():
                    m = _cnn(opt())
        h = m.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        models.append((m, h))
    (m1, h1), (m4, h4) = models
    np.testing.assert_allclose(h4.history["loss"], h1.history["loss"], rtol=1e-5)
    # Batch statistics are over the global batch: the moving statistics agree too.
    for a, b in zip(m1.get_weights(), m4.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m4.predict(x[:8], verbose=0), m1.predict(x[:8], verbose=0),
                               rtol=1e-4, atol=1e-5)
