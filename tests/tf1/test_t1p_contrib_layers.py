"""`tf.contrib.layers` layer functions (TF1 variable names and scopes, values against
numpy / jax), `tf.arg_max` / `tf.arg_min`, `Operation.node_def` for device functions,
and whole-number floats fed to integer placeholders."""

import jax
import numpy as np
import pytest

import mylib as tf
from mylib import errors

layers = tf.contrib.layers


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def _run(graph, fetches, feed=None):
    with tf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def _names():
    return [v.name for v in tf.global_variables()]


def test_fully_connected_names_defaults_and_values(g):
    x = tf.placeholder(tf.float32, [None, 3])
    y1 = layers.fully_connected(x, 4)  # relu by default, as TF1
    y2 = layers.fully_connected(x, 2, activation_fn=None, biases_initializer=None)
    y3 = layers.linear(x, 2, biases_initializer=None, scope="fully_connected_1", reuse=True)
    with tf.variable_scope("tower"):
        layers.fully_connected(x, 5, scope="fc")
    assert _names() == ["fully_connected/weights:0", "fully_connected/biases:0",
                        "fully_connected_1/weights:0", "tower/fc/weights:0",
                        "tower/fc/biases:0"]
    assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == 5
    xv = np.random.RandomState(0).randn(6, 3).astype(np.float32)
    w, b, w2, o1, o2, o3 = _run(g, tf.global_variables()[:3] + [y1, y2, y3], {x: xv})
    np.testing.assert_allclose(o1, np.maximum(xv @ w + b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o2, xv @ w2, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(o2, o3)
    # xavier_initializer: uniform within sqrt(6 / (fan_in + fan_out))
    assert np.abs(w).max() <= np.sqrt(6 / 7) and np.abs(w).std() > 0.1


def test_fully_connected_rank3_normalizer_and_collections(g):
    x = tf.placeholder(tf.float32, [2, 5, 3])
    y = layers.fully_connected(x, 4, activation_fn=tf.nn.tanh,
                               normalizer_fn=lambda t, k: t * k, normalizer_params={"k": 2.0},
                               variables_collections={"weights": ["my_w"]},
                               outputs_collections="outs",
                               weights_regularizer=layers.l2_regularizer(0.1))
    assert y.shape.as_list() == [2, 5, 4]
    assert _names() == ["fully_connected/weights:0"]  # a normalizer replaces the biases
    assert [v.name for v in tf.get_collection("my_w")] == ["fully_connected/weights:0"]
    assert tf.get_collection("outs") == [y]
    xv = np.random.RandomState(1).randn(2, 5, 3).astype(np.float32)
    w, out, reg = _run(g, [tf.global_variables()[0], y, tf.losses.get_regularization_loss()],
                       {x: xv})
    np.testing.assert_allclose(out, np.tanh(2 * xv @ w), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(reg, 0.1 * (w ** 2).sum() / 2, rtol=1e-5)


def test_fully_connected_errors(g):
    with pytest.raises(ValueError, match="num_outputs should be int"):
        layers.fully_connected(tf.zeros([2, 3]), 2.0)
    with pytest.raises(ValueError, match="float tensor.*int32"):
        layers.fully_connected(tf.zeros([2, 3], tf.int32), 2)
    with pytest.raises(ValueError, match="last dimension.*must be known"):
        layers.fully_connected(tf.placeholder(tf.float32, [None, None]), 2)


def _conv_ref(x, w, stride, padding):
    return np.asarray(jax.lax.conv_general_dilated(
        x, w, (stride, stride), padding, dimension_numbers=("NHWC", "HWIO", "NHWC")))


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_conv2d_names_same_padding_and_values(g, data_format):
    xv = np.random.RandomState(2).randn(2, 7, 7, 3).astype(np.float32)
    fed = xv if data_format == "NHWC" else xv.transpose(0, 3, 1, 2)
    x = tf.placeholder(tf.float32, fed.shape)
    y = layers.conv2d(x, 4, [3, 3], stride=2, data_format=data_format,
                      biases_initializer=tf.constant_initializer(0.25))
    y2 = layers.convolution2d(y, 5, 2, padding="VALID", activation_fn=None,
                              data_format=data_format)
    assert _names() == ["Conv/weights:0", "Conv/biases:0", "Conv_1/weights:0",
                        "Conv_1/biases:0"]
    w, w2, out, out2 = _run(g, [tf.global_variables()[0], tf.global_variables()[2], y, y2],
                            {x: fed})
    assert w.shape == (3, 3, 3, 4) and w2.shape == (2, 2, 4, 5)
    ref = np.maximum(_conv_ref(xv, w, 2, "SAME") + 0.25, 0)
    ref2 = _conv_ref(ref, w2, 1, "VALID")
    if data_format == "NCHW":
        ref, ref2 = ref.transpose(0, 3, 1, 2), ref2.transpose(0, 3, 1, 2)
    assert out.shape == ref.shape and out2.shape == ref2.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out2, ref2, rtol=1e-4, atol=1e-5)


def test_conv1d_rank3_and_errors(g):
    xv = np.random.RandomState(3).randn(2, 9, 2).astype(np.float32)
    x = tf.constant(xv)
    y = layers.conv1d(x, 3, 3, activation_fn=None)
    (w, out) = _run(g, [tf.global_variables()[0], y])
    ref = sum(np.pad(xv, ((0, 0), (1, 1), (0, 0)))[:, i:i + 9] @ w[i] for i in range(3))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="rank 3, 4 or 5"):
        layers.conv2d(tf.zeros([2, 3]), 2, 3)
    with pytest.raises(ValueError, match="stride and a rate"):
        layers.conv2d(tf.zeros([1, 8, 8, 1]), 2, 3, stride=2, rate=2)
    with pytest.raises(ValueError, match="data_format"):
        layers.conv2d(tf.zeros([1, 8, 8, 1]), 2, 3, data_format="NWC")


@pytest.mark.parametrize("padding,size", [("SAME", 10), ("VALID", 11)])
def test_conv2d_transpose_shape_weights_and_values(g, padding, size):
    xv = np.random.RandomState(4).randn(2, 5, 5, 3).astype(np.float32)
    x = tf.constant(xv)
    y = layers.conv2d_transpose(x, 4, 3, stride=2, padding=padding, activation_fn=None)
    assert _names() == ["Conv2d_transpose/weights:0", "Conv2d_transpose/biases:0"]
    assert y.shape.as_list() == [2, size, size, 4]
    w, out = _run(g, [tf.global_variables()[0], y])
    assert w.shape == (3, 3, 4, 3)  # [kh, kw, out, in], TF1's order
    # the transposed convolution is the gradient of conv2d with respect to its input
    _, vjp = jax.vjp(lambda z: jax.lax.conv_general_dilated(
        z, w, (2, 2), padding,
        dimension_numbers=("NHWC", "HWIO", "NHWC")), np.zeros((2, size, size, 4), np.float32))
    ref = np.asarray(vjp(xv)[0])
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_pools_flatten_one_hot(g):
    xv = np.random.RandomState(5).randn(2, 6, 6, 3).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 6, 6, 3])
    mp = layers.max_pool2d(x, [2, 2])
    ap = layers.avg_pool2d(x, 3, stride=3)
    fl = layers.flatten(mp)
    fl_dyn = layers.flatten(tf.placeholder_with_default(xv, [None, None, 6, 3]))
    oh = layers.one_hot_encoding(tf.constant([0, 2, 1]), 3, on_value=5.0)
    assert fl.shape.as_list() == [None, 27] and fl_dyn.shape.rank == 2
    assert oh.dtype == tf.float32
    m, a, f, fd, o = _run(g, [mp, ap, fl, fl_dyn, oh], {x: xv})
    np.testing.assert_allclose(m, xv.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4)))
    np.testing.assert_allclose(a, xv.reshape(2, 2, 3, 2, 3, 3).mean(axis=(2, 4)), rtol=1e-5)
    np.testing.assert_array_equal(f, m.reshape(2, -1))
    np.testing.assert_array_equal(fd, xv.reshape(2, -1))
    np.testing.assert_array_equal(o, 5 * np.eye(3)[[0, 2, 1]])
    with pytest.raises(ValueError, match="a least 2 dimensions"):
        layers.flatten(tf.zeros([3]))


def test_dropout_keep_prob_and_tensor_is_training(g):
    x = tf.ones([200, 50])
    training = tf.placeholder(tf.bool, [])
    d = layers.dropout(x, keep_prob=0.25, is_training=training)
    d_off = layers.dropout(x, 0.25, is_training=False)
    with tf.Session(graph=g) as s:
        on = s.run(d, {training: True})
        off, fixed_off = s.run([d, d_off], {training: False})
    assert set(np.unique(on)) <= {0.0, 4.0}
    assert abs((on > 0).mean() - 0.25) < 0.03  # keep_prob, not a drop rate
    np.testing.assert_array_equal(off, np.ones([200, 50]))
    np.testing.assert_array_equal(fixed_off, np.ones([200, 50]))


def test_batch_norm_training_updates_and_inference(g):
    rng = np.random.RandomState(6)
    xv = (rng.randn(8, 4, 4, 3) * 2 + 1).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 4, 4, 3])
    is_training = tf.placeholder(tf.bool, [])
    y = layers.batch_norm(x, decay=0.9, scale=True, is_training=is_training,
                          activation_fn=tf.nn.relu)
    assert _names() == ["BatchNorm/beta:0", "BatchNorm/gamma:0", "BatchNorm/moving_mean:0",
                        "BatchNorm/moving_variance:0"]
    assert [v.name for v in tf.trainable_variables()] == ["BatchNorm/beta:0",
                                                           "BatchNorm/gamma:0"]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    mean, var = xv.mean(axis=(0, 1, 2)), xv.var(axis=(0, 1, 2))
    with tf.Session(graph=g) as s:
        s.run(tf.global_variables_initializer())
        out, _ = s.run([y, updates], {x: xv, is_training: True})
        mm, mv = s.run(tf.global_variables()[2:])
        s.run(updates, {x: xv, is_training: False})  # a False step moves nothing
        mm2, mv2 = s.run(tf.global_variables()[2:])
        inf = s.run(y, {x: xv, is_training: False})
    np.testing.assert_allclose(out, np.maximum((xv - mean) / np.sqrt(var + 1e-3), 0),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mm, 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(mv, 0.9 + 0.1 * var, rtol=1e-5)
    np.testing.assert_array_equal(mm2, mm)
    np.testing.assert_array_equal(mv2, mv)
    np.testing.assert_allclose(inf, np.maximum((xv - mm) / np.sqrt(mv + 1e-3), 0),
                               rtol=1e-4, atol=1e-4)


def test_batch_norm_in_place_updates_nchw_and_as_normalizer(g):
    rng = np.random.RandomState(7)
    xv = rng.randn(5, 3, 2, 2).astype(np.float32)
    y = layers.batch_norm(tf.constant(xv), decay=0.5, updates_collections=None,
                          data_format="NCHW", center=False)
    assert _names() == ["BatchNorm/moving_mean:0", "BatchNorm/moving_variance:0"]
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    mean = xv.mean(axis=(0, 2, 3))
    with tf.Session(graph=g) as s:
        s.run(tf.global_variables_initializer())
        out = s.run(y)
        mm = s.run(tf.global_variables()[0])  # updated by running y alone
    np.testing.assert_allclose(mm, 0.5 * mean, rtol=1e-5)
    ref = (xv - mean[:, None, None]) / np.sqrt(xv.var(axis=(0, 2, 3))[:, None, None] + 1e-3)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    h = layers.fully_connected(tf.constant(xv.reshape(5, 12)), 4, normalizer_fn=layers.batch_norm,
                               normalizer_params={"is_training": False})
    assert h.shape.as_list() == [5, 4]
    assert "fully_connected/BatchNorm/moving_mean:0" in _names()
    with pytest.raises(ValueError, match="not supported"):
        layers.batch_norm(tf.constant(xv), renorm=True)


def test_layer_norm_against_numpy_and_gradient(g):
    xv = np.random.RandomState(8).randn(4, 3, 5).astype(np.float32)
    x = tf.constant(xv)
    y = layers.layer_norm(x)
    assert _names() == ["LayerNorm/beta:0", "LayerNorm/gamma:0"]
    assert tf.global_variables()[0].shape.as_list() == [5]
    grad = tf.gradients(tf.reduce_sum(y * y * tf.range(5.0)), x)[0]
    out, gv = _run(g, [y, grad])

    def ref(z):
        m = z.mean(axis=(1, 2), keepdims=True)
        v = ((z - m) ** 2).mean(axis=(1, 2), keepdims=True)
        return (z - m) / jax.numpy.sqrt(v + 1e-12)

    np.testing.assert_allclose(out, ref(xv), rtol=1e-4, atol=1e-5)
    gref = jax.grad(lambda z: (ref(z) ** 2 * jax.numpy.arange(5.0)).sum())(xv)
    np.testing.assert_allclose(gv, gref, rtol=1e-3, atol=1e-4)


def test_embed_sequence_and_apply_regularization(g):
    ids = tf.constant([[0, 3], [2, 2]])
    e = layers.embed_sequence(ids, vocab_size=4, embed_dim=3)
    assert _names() == ["EmbedSequence/embeddings:0"]
    w = tf.get_variable("w", initializer=tf.constant([[1.0, -2.0]]))
    pen = layers.apply_regularization(layers.l1_regularizer(0.5), [w])
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [pen]
    table, out, p = _run(g, [tf.global_variables()[0], e, pen])
    np.testing.assert_array_equal(out, table[[[0, 3], [2, 2]]])
    np.testing.assert_allclose(p, 1.5)
    with pytest.raises(ValueError, match="no weights"):
        layers.apply_regularization(layers.l1_regularizer(0.5))
    with pytest.raises(ValueError, match="vocab_size and embed_dim"):
        layers.embed_sequence(ids, vocab_size=4)


def test_arg_max_arg_min(g):
    xv = np.array([[1.0, 5.0, 5.0, -2.0], [7.0, 0.0, -1.0, -1.0]], np.float32)
    a1, a0, b1 = tf.arg_max(xv, 1), tf.arg_max(xv, dimension=0), tf.arg_min(xv, 1)
    b32 = tf.arg_min(xv, 0, output_type=tf.int32)
    assert a1.dtype == tf.int64 and b32.dtype == tf.int32
    out = _run(g, [a1, a0, b1, b32])
    np.testing.assert_array_equal(out[0], np.argmax(xv, 1))
    np.testing.assert_array_equal(out[1], np.argmax(xv, 0))
    np.testing.assert_array_equal(out[2], np.argmin(xv, 1))  # first index on ties
    np.testing.assert_array_equal(out[3], np.argmin(xv, 0))
    with pytest.raises(TypeError):
        tf.arg_max(xv)  # `dimension` is required, as TF1


def test_node_def_in_a_device_function(g):
    placed = []

    def ps_for_variables(op):
        node_def = op.node_def
        placed.append((node_def.name, node_def.op))
        return "/cpu:0" if node_def.op == "VarHandleOp" else "/cpu:1"

    with tf.device(ps_for_variables):
        v = tf.get_variable("v", [2])
        y = tf.identity(v * 2.0, name="y")
    assert v.op.device.endswith("CPU:0") and y.op.device.endswith("CPU:1")
    assert ("v", "VarHandleOp") in placed and ("y", "Identity") in placed
    nd = y.op.node_def
    assert nd.name == "y" and nd.op == "Identity" and nd.input == [y.op.inputs[0].op.name]
    assert nd.device == y.op.device


def test_integral_floats_feed_integer_placeholders(g):
    labels = tf.placeholder(tf.int32, [None])
    doubled = labels * 2
    with tf.Session() as s:
        out = s.run(doubled, {labels: np.ones(3)})  # float64 ones, as in TF1 GAN examples
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, [2, 2, 2])
        np.testing.assert_array_equal(s.run(doubled, {labels: [-4.0, 0.0]}), [-8, 0])
        for bad in ([1.5, 2.0], [np.nan], [2.0 ** 40]):
            with pytest.raises(errors.InvalidArgumentError,
                               match="Placeholder.*lose information.*not a whole number"):
                s.run(doubled, {labels: np.array(bad)})


def test_missing_contrib_layers_name_the_replacement():
    with pytest.raises(AttributeError, match="optimize_loss.*minimize"):
        layers.optimize_loss  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'no_such_layer'"):
        layers.no_such_layer  # noqa: B018
