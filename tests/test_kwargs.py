"""Keyword arguments everywhere: an unknown one raises `TypeError` naming it; one accepted
for TensorFlow/Keras compatibility but not honoured warns once per process
(`mylib.core.compat_args`); the ones that are honoured really are."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mylib as ml
from mylib import callbacks, optimizers
from mylib import layers as L
from mylib.core.compat_args import IgnoredArgumentWarning, reset_ignored_warnings
from mylib.core.op_registry import get_op_def
from mylib.layers import constraints, initializers, regularizers
from mylib.mixed_precision import LossScaleOptimizer

BAD = "bogus_kwarg"


@pytest.fixture(autouse=True)
def fresh():
    """A graph of its own, and a once-registry that has warned about nothing yet."""
    reset_ignored_warnings()
    with ml.Graph().as_default() as g:
        yield g
    reset_ignored_warnings()


def _model(compiled=True):
    inp = L.Input(shape=(3,))
    m = ml.Model(inp, L.Dense(2)(inp))
    if compiled:
        m.compile("sgd", "mse")
    return m


X, Y = np.zeros((4, 3), np.float32), np.zeros((4, 2), np.float32)


def _scalar_graph():
    x = ml.placeholder(ml.float32, [], name="x")
    return x, x * x


# ------------------------------------------------------------------ unknown -> TypeError
# Each entry calls one public callable with ``**kw``; the test passes {BAD: 1}.
UNKNOWN = {
    "Variable": lambda kw: ml.Variable(1.0, **kw),
    "Variable/creator": lambda kw: _with_creator(lambda: ml.Variable(1.0, **kw)),
    "placeholder": lambda kw: ml.placeholder(ml.float32, [None], **kw),
    "gradients": lambda kw: ml.gradients(*reversed(_scalar_graph()), **kw),
    "while_loop": lambda kw: ml.while_loop(lambda i: i < 2, lambda i: i + 1,
                                           [ml.constant(0)], **kw),
    "scan": lambda kw: ml.scan(lambda a, x: a + x, ml.constant([1.0]), **kw),
    "Dense": lambda kw: L.Dense(2, **kw),
    "Conv2D": lambda kw: L.Conv2D(2, 3, **kw),
    "LSTM": lambda kw: L.LSTM(2, **kw),
    "GRU": lambda kw: L.GRU(2, **kw),
    "SimpleRNN": lambda kw: L.SimpleRNN(2, **kw),
    "Embedding": lambda kw: L.Embedding(10, 2, **kw),
    "Dropout": lambda kw: L.Dropout(0.5, **kw),
    "BatchNormalization": lambda kw: L.BatchNormalization(**kw),
    "MultiHeadAttention": lambda kw: L.MultiHeadAttention(2, 4, **kw),
    "Bidirectional": lambda kw: L.Bidirectional(L.LSTM(2), **kw),
    "Input": lambda kw: L.Input(shape=(2,), **kw),
    "Sequential": lambda kw: ml.Sequential([L.Dense(2)], **kw),
    "Model": lambda kw: _functional(**kw),
    "compile": lambda kw: _model(compiled=False).compile("sgd", "mse", **kw),
    "fit": lambda kw: _model().fit(X, Y, verbose=0, **kw),
    "evaluate": lambda kw: _model().evaluate(X, Y, verbose=0, **kw),
    "predict": lambda kw: _model().predict(X, verbose=0, **kw),
    "SGD": lambda kw: optimizers.SGD(**kw),
    "Adam": lambda kw: optimizers.Adam(**kw),
    "AdamW": lambda kw: optimizers.AdamW(**kw),
    "RMSprop": lambda kw: optimizers.RMSprop(**kw),
    "Adagrad": lambda kw: optimizers.Adagrad(**kw),
    "LossScaleOptimizer": lambda kw: LossScaleOptimizer(optimizers.SGD(), **kw),
    "minimize": lambda kw: optimizers.SGD().minimize(ml.Variable(1.0) * 2.0, **kw),
    "Session": lambda kw: ml.Session(**kw),
    "ConfigProto": lambda kw: ml.ConfigProto(**kw),
    "RunOptions": lambda kw: ml.RunOptions(**kw),
    "Saver": lambda kw: (ml.Variable(1.0), ml.train.Saver(**kw)),
    "export_meta_graph": lambda kw: ml.train.export_meta_graph(**kw),
    "import_meta_graph": lambda kw: ml.train.import_meta_graph("unused.meta", **kw),
    "Zeros": lambda kw: initializers.Zeros(**kw),
    "GlorotUniform": lambda kw: initializers.GlorotUniform(**kw),
    "L1L2": lambda kw: regularizers.L1L2(**kw),
    "NonNeg": lambda kw: constraints.NonNeg(**kw),
    "ReduceLROnPlateau": lambda kw: callbacks.ReduceLROnPlateau(**kw),
    "EarlyStopping": lambda kw: callbacks.EarlyStopping(**kw),
    "TensorBoard": lambda kw: callbacks.TensorBoard(**kw),
}


def _with_creator(make):
    seen = []

    def creator(next_creator, **kwargs):
        seen.append(kwargs)
        return next_creator(**kwargs)

    with ml.variable_creator_scope(creator):
        try:
            return make()
        finally:
            assert not seen, "an unknown argument reached a variable creator"


def _functional(**kw):
    inp = L.Input(shape=(3,))
    return ml.Model(inp, L.Dense(2)(inp), **kw)


@pytest.mark.parametrize("name", sorted(UNKNOWN))
def test_unknown_keyword_raises_type_error_naming_it(name):
    with pytest.raises(TypeError, match=BAD):
        UNKNOWN[name]({BAD: 1})


def test_layer_message_is_keras_3s_and_suggests_the_near_name():
    with pytest.raises(TypeError) as e:
        L.Dense(2, foo=1)
    assert "Unrecognized keyword arguments passed to Dense: {'foo': 1}" in str(e.value)
    with pytest.raises(TypeError, match="`unroll` instead of `unrol`"):
        L.LSTM(2, unrol=True)
    with pytest.raises(TypeError, match="`learning_rate` instead of `lerning_rate`"):
        optimizers.Adam(lerning_rate=0.1)


def test_variable_typo_is_an_error_not_a_trainable_variable():
    with pytest.raises(TypeError, match="trainabel"):
        ml.Variable(1.0, trainabel=False)
    assert ml.trainable_variables() == [] and ml.global_variables() == []


def test_variable_creator_path_rejects_extra_positional_and_repeated_arguments():
    with pytest.raises(TypeError, match="Variable"):
        _with_creator(lambda: ml.Variable(1.0, True, "v", None, None, None, True, None, None,
                                          None, False, "one too many"))
    with pytest.raises(TypeError, match="trainable"):
        _with_creator(lambda: ml.Variable(1.0, True, trainable=False))


@pytest.mark.parametrize("creator", [False, True])
def test_trainable_false_is_not_trainable(creator):
    def make():
        return ml.Variable(1.0, trainable=False, name="frozen")

    v = _with_creator_passing(make) if creator else make()
    assert v.trainable is False
    assert v not in ml.trainable_variables() and v in ml.global_variables()
    w = ml.Variable(1.0, name="w")
    pairs = optimizers.SGD().compute_gradients(v * w * 2.0)
    assert [var for _, var in pairs] == [w]


def _with_creator_passing(make):
    with ml.variable_creator_scope(lambda next_creator, **kw: next_creator(**kw)):
        return make()


def test_layer_trainable_false_freezes_its_weights():
    layer = L.Dense(2, trainable=False)
    _functional_with(layer)
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 2


def _functional_with(layer):
    inp = L.Input(shape=(3,))
    return ml.Model(inp, layer(inp))


# ------------------------------------------------------------------ ignored -> warn once
def _flt(x):
    return ml.constant(x)


IGNORED = [
    ("Variable", "caching_device", lambda: ml.Variable(1.0, caching_device="/cpu:0")),
    ("Variable", "use_resource", lambda: ml.Variable(1.0, use_resource=False)),
    ("gradients", "colocate_gradients_with_ops",
     lambda: ml.gradients(*reversed(_scalar_graph()), colocate_gradients_with_ops=True)),
    ("gradients", "gate_gradients",
     lambda: ml.gradients(*reversed(_scalar_graph()), gate_gradients=True)),
    ("gradients", "aggregation_method",
     lambda: ml.gradients(*reversed(_scalar_graph()), aggregation_method=1)),
    ("while_loop", "back_prop", lambda: ml.while_loop(lambda i: i < 2, lambda i: i + 1,
                                                      [ml.constant(0)], back_prop=False)),
    ("scan", "back_prop", lambda: ml.scan(lambda a, x: a + x, _flt([1.0]), back_prop=False)),
    ("map_fn", "back_prop", lambda: ml.map_fn(lambda x: x, _flt([1.0]), back_prop=False)),
    ("transpose", "conjugate",
     lambda: ml.transpose(ml.constant([[1j]], dtype="complex64"), conjugate=True)),
    ("Embedding", "input_length", lambda: L.Embedding(10, 2, input_length=5)),
    ("InputLayer", "sparse", lambda: L.InputLayer(input_shape=(2,), sparse=True)),
    ("InputLayer", "ragged", lambda: L.InputLayer(input_shape=(2,), ragged=True)),
    ("Bidirectional", "weights", lambda: L.Bidirectional(L.LSTM(2), weights=[])),
    ("SimpleRNN", "recurrent_activation",
     lambda: L.SimpleRNN(2, recurrent_activation="sigmoid")),
    ("Model.compile", "jit_compile", lambda: _model(False).compile("sgd", "mse",
                                                                   jit_compile=False)),
    ("Model.predict", "verbose", lambda: _model().predict(X, verbose=1)),
    ("ConfigProto", "inter_op_parallelism_threads",
     lambda: ml.ConfigProto(inter_op_parallelism_threads=2)),
    ("ConfigProto", "intra_op_parallelism_threads",
     lambda: ml.ConfigProto(intra_op_parallelism_threads=2)),
    ("ConfigProto", "device_count", lambda: ml.ConfigProto(device_count={"GPU": 0})),
    ("ConfigProto", "gpu_options", lambda: ml.ConfigProto(gpu_options={"allow_growth": True})),
    ("Session", "target", lambda: ml.Session("grpc://localhost:2222").close()),
    ("Saver", "sharded", lambda: (ml.Variable(1.0), ml.train.Saver(sharded=True))),
    ("Saver", "restore_sequentially",
     lambda: (ml.Variable(1.0), ml.train.Saver(restore_sequentially=True))),
    ("export_meta_graph", "export_scope", lambda: ml.train.export_meta_graph(export_scope="a")),
    ("export_meta_graph", "strip_default_attrs",
     lambda: ml.train.export_meta_graph(strip_default_attrs=True)),
    ("TensorBoard", "write_images", lambda: callbacks.TensorBoard(write_images=True)),
    ("TensorBoard", "embeddings_freq", lambda: callbacks.TensorBoard(embeddings_freq=1)),
]


def _ignored_warnings(record, arg):
    return [w for w in record if issubclass(w.category, IgnoredArgumentWarning)
            and f"({arg}=...)" in str(w.message)]


@pytest.mark.parametrize("owner,arg,call", IGNORED, ids=[f"{o}.{a}" for o, a, _ in IGNORED])
def test_ignored_compat_argument_warns_once(owner, arg, call):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call()
        call()
    got = _ignored_warnings(record, arg)
    assert len(got) == 1, [str(w.message) for w in record]
    msg = str(got[0].message)
    assert msg.startswith(f"{owner}({arg}=...) is accepted for TensorFlow/Keras "
                          "compatibility and ignored: "), msg
    assert got[0].filename == __file__  # the user's line, not mylib's


def test_reset_lets_an_argument_warn_again():
    for _ in range(2):
        with pytest.warns(IgnoredArgumentWarning, match="gate_gradients"):
            ml.gradients(*reversed(_scalar_graph()), gate_gradients=True)
        reset_ignored_warnings()


def test_defaults_and_honoured_values_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredArgumentWarning)
        ml.Variable(1.0, use_resource=True)
        x, y = _scalar_graph()
        ml.gradients(y, x, colocate_gradients_with_ops=False, gate_gradients=False)
        ml.ConfigProto(allow_soft_placement=True, log_device_placement=False)
        ml.Session().close()
        ml.Session("").close()
        ml.transpose(ml.constant([[1.0]]), conjugate=True)  # real: nothing to conjugate
        ml.scan(lambda a, x: a + x, _flt([1.0]), back_prop=True, parallel_iterations=1)
        L.SimpleRNN(2)
        L.LSTM(2, unroll=True)
        L.Embedding(10, 2)
        L.BatchNormalization(synchronized=True)
        m = _model(False)
        m.compile("sgd", "mse", jit_compile=True)
        m.predict(X, verbose=0)
        ml.train.Saver()


# ------------------------------------------------------------------ honoured arguments
@pytest.mark.parametrize("cls", [L.SimpleRNN, L.LSTM, L.GRU])
def test_rnn_unroll_is_honoured(cls):
    """``unroll=True`` unrolls the scan (no loop left in the compiled time loop) and gives
    the same outputs and gradients as the rolled loop."""
    x = np.random.RandomState(0).randn(3, 5, 4).astype(np.float32)
    results = []
    weights = None
    for unroll in (False, True):
        inp = L.Input(shape=(5, 4), batch_size=3)
        layer = cls(6, unroll=unroll, return_sequences=True)
        out = layer(inp)
        model = ml.Model(inp, out)
        if weights is None:
            weights = model.get_weights()
        else:
            model.set_weights(weights)
        grads = ml.gradients(ml.reduce_sum(out * out), layer.trainable_weights)
        sess = model.session
        results.append(sess.run([out] + grads, {inp: x}))
        scan = [o for o in out.graph.get_operations() if o.type == "StatelessScan"][-1]
        assert scan.attrs.get("unroll", 1) == (True if unroll else 1)
        assert ("while" in _scan_hlo(scan)) is not unroll
        assert layer.get_config()["unroll"] is unroll
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _scan_hlo(op):
    kernel = get_op_def(op.type).kernel
    args = [jnp.zeros(t.shape.as_list(), t.dtype.np) for t in op.inputs]
    return jax.jit(lambda *a: kernel(*a, **op.attrs)).lower(*args).as_text()


def test_scan_unroll_argument():
    x = ml.constant(np.arange(6.0, dtype=np.float32))
    with ml.Session() as sess:
        for unroll in (1, 2, True, False):
            np.testing.assert_allclose(
                sess.run(ml.scan(lambda a, e: a + e, x, unroll=unroll)),
                np.cumsum(np.arange(6.0)))
    with pytest.raises(ValueError, match="unroll"):
        ml.scan(lambda a, e: a + e, x, unroll=0)


def test_gradients_takes_tensorflows_positional_order():
    # tf.gradients(ys, xs, grad_ys, name, colocate_gradients_with_ops, gate_gradients,
    #              aggregation_method, stop_gradients, unconnected_gradients)
    x = ml.placeholder(ml.float32, [], name="x")
    a = x * 2.0
    y = a * x
    with pytest.warns(IgnoredArgumentWarning):
        g, = ml.gradients(y, x, None, "g", True, False, None, [a])
    with ml.Session() as sess:
        assert sess.run(g, {x: 3.0}) == pytest.approx(6.0)  # a held constant: dy/dx = a


def test_activity_regularizer_is_a_base_layer_argument():
    inp = L.Input(shape=(1, 3))
    mha = L.MultiHeadAttention(1, 2, activity_regularizer="l2")
    out = L.Dropout(0.0, activity_regularizer="l1")(mha(inp, inp))
    assert len(ml.Model(inp, out).losses) == 2


class _Probe(L.Layer):
    """Records the dtype its weight reads have inside `call`."""

    def build(self, input_shape):
        self.w = self.add_weight("w", [1], "ones")

    def call(self, x):
        self.seen = self.w.value().dtype
        return x


@pytest.mark.parametrize("autocast,want", [(True, "bfloat16"), (False, "float32")])
def test_autocast_is_honoured(autocast, want):
    layer = _Probe(dtype="mixed_bfloat16", autocast=autocast)
    layer(L.Input(shape=(3,)))
    assert layer.seen == ml.as_dtype(want)
    assert _Probe.from_config(layer.get_config()).autocast is autocast


def test_reduce_lr_on_plateau_takes_keras_2s_epsilon():
    assert callbacks.ReduceLROnPlateau(epsilon=0.5).min_delta == 0.5
