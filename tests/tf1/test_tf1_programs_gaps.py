"""TF1 programs that used to fail: `from_generator`'s positional `output_types`, shared
weights of unnamed layers in a re-entered variable scope, fetching a variable's own tensor,
`.meta` files written by `Saver.save`, GPU options, string constants, scatter updates and
the sequence losses of char-rnn / PTB programs. Each is checked against numpy or a closed
form."""

import os

import numpy as np
import pytest

import mylib as tf
from mylib.core.compat_args import IgnoredArgumentWarning, reset_ignored_warnings


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


# --- 2. unnamed tf.layers in a re-entered variable scope share their weights ---

def _disc(x, reuse):
    with tf.variable_scope("D", reuse=reuse):
        h = tf.layers.dense(x, 4, activation=tf.nn.relu)
        return tf.layers.dense(h, 1)


def _names():
    return [v.name for v in tf.trainable_variables()]


@pytest.mark.parametrize("reuse", [True, tf.AUTO_REUSE])
def test_reentered_scope_numbers_unnamed_layers_again(reuse):
    x = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    a = _disc(tf.constant(x), tf.AUTO_REUSE if reuse is tf.AUTO_REUSE else False)
    b = _disc(tf.constant(x), reuse)
    assert _names() == ["D/dense/kernel:0", "D/dense/bias:0",
                        "D/dense_1/kernel:0", "D/dense_1/bias:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        va, vb, (k0, b0, k1, b1) = s.run([a, b, tf.trainable_variables()])
    ref = np.maximum(x @ k0 + b0, 0) @ k1 + b1
    np.testing.assert_allclose(va, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vb, ref, rtol=1e-5, atol=1e-6)


def test_first_entries_still_number_layers_and_scopes():
    x = tf.zeros([2, 3])
    tf.layers.dense(x, 2)
    tf.layers.dense(x, 2)       # the root scope is never left: counts go on
    with tf.variable_scope("G"):
        tf.layers.dense(x, 2)
        with tf.variable_scope("inner"):
            tf.layers.dense(x, 2)
    with tf.variable_scope("G", reuse=True):   # inner scopes numbered from 0 again
        tf.layers.dense(x, 2)
        with tf.variable_scope("inner"):
            tf.layers.dense(x, 2)
    tf.layers.dense(x, 2, reuse=True)          # an unnamed reusing layer is ``dense``
    assert [n for n in _names() if n.endswith("kernel:0")] == [
        "dense/kernel:0", "dense_1/kernel:0", "G/dense/kernel:0", "G/inner/dense/kernel:0"]


def test_default_name_scope_entered_twice_without_reuse_collides_as_tf1():
    def block():
        with tf.variable_scope("M"):
            with tf.variable_scope(None, default_name="block"):
                return tf.get_variable("w", [1]).name
    assert block() == "M/block/w:0"
    with pytest.raises(ValueError, match="M/block/w already exists"):
        block()


# --- 3. fetching a variable's own tensor ---

def test_fetch_variable_tensor_by_name_and_handle():
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.5, -2.0]))
    g = tf.get_default_graph()
    t = g.get_tensor_by_name("w:0")
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(w.assign_add([1.0, 1.0]))
        want = np.array([2.5, -1.0], np.float32)
        for got in (s.run("w:0"), s.run(t), s.run("w/read:0"), t.eval(),
                    s.run(g.get_operation_by_name("w").outputs[0]),
                    s.run({"a": [t]})["a"][0], s.make_callable(t)()):
            np.testing.assert_array_equal(got, want)


def test_fetch_variable_tensor_of_an_imported_meta_graph(tmp_path):
    w = tf.get_variable("model/w", [2, 1], initializer=tf.constant_initializer([[3.0], [4.0]]))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(s, str(tmp_path / "m"), write_meta_graph=True)
    with tf.Graph().as_default() as g:
        with tf.Session() as s:
            tf.train.import_meta_graph(path + ".meta").restore(s, path)
            np.testing.assert_array_equal(s.run(g.get_tensor_by_name("model/w:0")),
                                          [[3.0], [4.0]])
            np.testing.assert_array_equal(s.run("model/w/read:0"), [[3.0], [4.0]])
    assert w.name == "model/w:0"


def test_unknown_read_name_still_raises():
    tf.get_variable("w", [1])
    with tf.Session() as s:
        with pytest.raises(ValueError, match="cannot be interpreted"):
            s.run("v/read:0")


# --- 4. Saver.save writes the .meta file by default ---

def test_saver_save_writes_meta_by_default(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.get_variable("w", [2, 1], initializer=tf.constant_initializer([[2.0], [-1.0]]))
    tf.add(tf.matmul(x, w), 0.5, name="y")
    step = tf.train.get_or_create_global_step()
    saver = tf.train.Saver(max_to_keep=1)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        saver.save(s, str(tmp_path / "model.ckpt"), global_step=step)
        s.run(step.assign(7))
        saver.save(s, str(tmp_path / "model.ckpt"), global_step=step)
        tf.train.Saver().save(s, str(tmp_path / "other"), write_meta_graph=False,
                              latest_filename="other_index")
    files = sorted(os.listdir(tmp_path))
    assert "model.ckpt-7.meta" in files and "other.mylib" in files
    assert "model.ckpt-0.meta" not in files and "other.meta" not in files  # max_to_keep
    latest = tf.train.latest_checkpoint(str(tmp_path))
    with tf.Graph().as_default() as g, tf.Session() as s:
        tf.train.import_meta_graph(latest + ".meta").restore(s, latest)
        got = s.run("y:0", {"x:0": [[1.0, 3.0]]})
        np.testing.assert_allclose(got, np.array([[1.0, 3.0]]) @ [[2.0], [-1.0]] + 0.5)
        assert s.run(g.get_tensor_by_name("global_step:0")) == 7


# --- 5. GPU options are accepted (and do nothing) ---

def test_gpu_options_are_accepted():
    config = tf.ConfigProto(allow_soft_placement=True)
    config.gpu_options.allow_growth = True
    config.gpu_options.per_process_gpu_memory_fraction = 0.4
    assert config.gpu_options.allow_growth is True
    reset_ignored_warnings()
    with pytest.warns(IgnoredArgumentWarning, match="per_process_gpu_memory_fraction"):
        opts = tf.GPUOptions(per_process_gpu_memory_fraction=0.3)
    c2 = tf.compat.v1.ConfigProto(gpu_options=opts)
    assert c2.gpu_options.per_process_gpu_memory_fraction == 0.3
    assert tf.compat.v1.GPUOptions is tf.GPUOptions
    with tf.Session(config=config) as s:
        assert s.run(tf.constant(3) + 4) == 7
    with pytest.raises(TypeError, match="allow_grow"):
        tf.GPUOptions(allow_grow=True)


# --- 6. string constants ---

@pytest.mark.parametrize("value,want", [
    ("Hello, TensorFlow!", b"Hello, TensorFlow!"),
    (b"hi", b"hi"),
    ("h\u00e9", "h\u00e9".encode("utf-8")),
])
def test_scalar_string_constant_is_fetched_as_bytes(value, want):
    t = tf.constant(value)
    assert t.dtype == tf.string and t.shape.as_list() == []
    with tf.Session() as s:
        got = s.run(t)
    assert type(got) is bytes and got == want


def test_string_constant_arrays():
    a = tf.constant(["a", "b"])
    b = tf.constant(np.array([[b"x"], [b"yz"]]))
    c = tf.constant("hi", dtype=tf.string)
    d = tf.constant("z", shape=[2])
    assert [t.dtype for t in (a, b, c, d)] == [tf.string] * 4
    assert b.shape.as_list() == [2, 1]
    with tf.Session() as s:
        va, vb, vc, vd = s.run([a, b, c, d])
    np.testing.assert_array_equal(va, np.array([b"a", b"b"], dtype=object))
    np.testing.assert_array_equal(vb, np.array([[b"x"], [b"yz"]], dtype=object))
    assert vc == b"hi"
    np.testing.assert_array_equal(vd, np.array([b"z", b"z"], dtype=object))
    with pytest.raises(TypeError):
        tf.constant(["a", 1])
    with pytest.raises((TypeError, ValueError)):
        tf.constant("a", dtype=tf.float32)


# --- 7. scatter updates of variables ---

def _np_scatter(base, idx, upd, kind):
    out = base.copy()
    for i, u in zip(idx, upd):  # numpy, one row at a time: repeated rows add up
        out[i] = u if kind == "update" else out[i] + (u if kind == "add" else -u)
    return out


@pytest.mark.parametrize("kind", ["update", "add", "sub"])
@pytest.mark.parametrize("spelling", ["tf", "compat"])
def test_scatter_functions_match_numpy(kind, spelling):
    fn = getattr(tf if spelling == "tf" else tf.compat.v1, "scatter_" + kind)
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([2, 0, 2] if kind != "update" else [2, 0], np.int32)
    upd = np.random.RandomState(1).randn(len(idx), 3).astype(np.float32)
    v = tf.Variable(base)
    ph_i = tf.placeholder(tf.int32, [None])
    ph_u = tf.placeholder(tf.float32, [None, 3])
    out = fn(v, ph_i, ph_u)
    assert out.dtype == tf.float32 and out.shape.as_list() == [4, 3]
    with tf.Session() as s:
        s.run(v.initializer)
        got = s.run(out, {ph_i: idx, ph_u: upd})
        np.testing.assert_allclose(got, _np_scatter(base, idx, upd, kind), rtol=1e-6)
        np.testing.assert_allclose(s.run(v), got)
        got2 = s.run(out, {ph_i: idx, ph_u: upd})   # applied again on the new value
    np.testing.assert_allclose(got2, _np_scatter(got, idx, upd, kind), rtol=1e-6)


def test_scatter_nd_update_add_sub_match_numpy():
    base = np.zeros((3, 4), np.float32)
    v = tf.Variable(base)
    idx = np.array([[0, 1], [2, 3], [0, 1]], np.int64)
    upd = np.array([1.0, 2.0, 4.0], np.float32)
    add = tf.scatter_nd_add(v, idx, upd)
    sub = tf.compat.v1.scatter_nd_sub(v, idx[:1], upd[:1])
    rows = tf.scatter_nd_update(v, [[1]], [[9.0, 8.0, 7.0, 6.0]])   # K=1: whole rows
    with tf.Session() as s:
        s.run(v.initializer)
        got_add = s.run(add)
        got_sub = s.run(sub)
        got_rows = s.run(rows)
    ref = base.copy()
    np.add.at(ref, (idx[:, 0], idx[:, 1]), upd)
    np.testing.assert_array_equal(got_add, ref)
    ref[0, 1] -= 1.0
    np.testing.assert_array_equal(got_sub, ref)
    ref[1] = [9, 8, 7, 6]
    np.testing.assert_array_equal(got_rows, ref)


def test_variable_scatter_methods_return_the_new_value():
    v = tf.Variable([0.0, 0.0, 0.0])
    op = v.scatter_add(tf.IndexedSlices(tf.constant([1.0, 2.0]), tf.constant([1, 1])))
    sub = v.scatter_sub(tf.IndexedSlices(tf.constant([0.5]), tf.constant([2])))
    upd = v.scatter_update(tf.IndexedSlices(tf.constant([7.0]), tf.constant([0])))
    raw = v.scatter_add(tf.IndexedSlices(tf.constant([1.0]), tf.constant([0])),
                        read_value=False)
    assert isinstance(raw, tf.Operation)
    with tf.Session() as s:
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(op), [0.0, 3.0, 0.0])
        np.testing.assert_array_equal(s.run(sub), [0.0, 3.0, -0.5])
        np.testing.assert_array_equal(s.run(upd), [7.0, 3.0, -0.5])
        assert s.run(raw) is None
        np.testing.assert_array_equal(s.run(v), [8.0, 3.0, -0.5])


def test_scatter_shape_and_dtype_errors():
    v = tf.Variable(np.zeros((4, 3), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"ask for \(2, 3\)|\[2, 3\]"):
        tf.scatter_update(v, [0, 1], np.ones((2, 2), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="indices must be int"):
        tf.scatter_add(v, [0.5], np.ones((1, 3), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="index at most 2"):
        tf.scatter_nd_update(v, [[0, 1, 2]], [1.0])
    with pytest.raises(TypeError, match="must be a Variable"):
        tf.scatter_update(tf.zeros([2]), [0], [1.0])


# --- 8. sequence losses and OutputProjectionWrapper ---

def _xent(logits, targets):
    m = logits.max(-1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, targets[..., None], -1)[..., 0]


def _seq_data(B=3, T=4, C=5):
    r = np.random.RandomState(3)
    logits = r.randn(B, T, C).astype(np.float32)
    targets = r.randint(0, C, (B, T)).astype(np.int32)
    weights = (r.rand(B, T) > 0.3).astype(np.float32)
    weights[0] = 0.0            # an all-padding example: its average is 0, not NaN
    return logits, targets, weights


@pytest.mark.parametrize("flags", [
    dict(), dict(average_across_batch=False), dict(average_across_timesteps=False),
    dict(average_across_timesteps=False, average_across_batch=False),
    dict(average_across_timesteps=False, average_across_batch=False,
         sum_over_timesteps=True, sum_over_batch=True),
    dict(average_across_timesteps=False, sum_over_timesteps=True,
         average_across_batch=False),
])
def test_contrib_seq2seq_sequence_loss_matches_numpy(flags):
    logits, targets, weights = _seq_data()
    l = _xent(logits.astype(np.float64), targets) * weights
    at = flags.get("average_across_timesteps", True)
    ab = flags.get("average_across_batch", True)
    st, sb = flags.get("sum_over_timesteps", False), flags.get("sum_over_batch", False)

    def div(a, b):
        return np.where(b == 0, 0.0, a / np.where(b == 0, 1, b))
    if at and ab:
        want = l.sum() / weights.sum()
    elif st and sb:
        want = l.sum() / np.count_nonzero(weights)
    elif at or ab:
        ax = 0 if ab else 1
        want = div(l.sum(ax), weights.sum(ax))
    elif st or sb:
        ax = 0 if sb else 1
        want = div(l.sum(ax), np.count_nonzero(weights, axis=ax))
    else:
        want = l
    loss = tf.contrib.seq2seq.sequence_loss(tf.constant(logits), tf.constant(targets),
                                            tf.constant(weights), **flags)
    with tf.Session() as s:
        got = s.run(loss)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_contrib_seq2seq_sequence_loss_errors_and_custom_loss():
    logits, targets, weights = _seq_data()
    with pytest.raises(ValueError, match="Logits must be"):
        tf.contrib.seq2seq.sequence_loss(logits[0], targets, weights)
    with pytest.raises(ValueError, match="cannot be set"):
        tf.contrib.seq2seq.sequence_loss(logits, targets, weights, sum_over_batch=True)
    calls = []

    def half_xent(labels, logits):
        calls.append((labels.shape.as_list(), logits.shape.as_list()))
        return 0.5 * tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                    logits=logits)
    loss = tf.contrib.seq2seq.sequence_loss(logits, targets, weights,
                                            softmax_loss_function=half_xent)
    with tf.Session() as s:
        got = s.run(loss)
    assert calls == [([12], [12, 5])]
    np.testing.assert_allclose(got, 0.5 * (_xent(logits, targets) * weights).sum()
                               / weights.sum(), rtol=1e-5)


@pytest.mark.parametrize("avg_t,avg_b", [(True, True), (False, True), (True, False)])
def test_legacy_seq2seq_losses_match_numpy(avg_t, avg_b):
    logits, targets, weights = _seq_data()
    steps = range(logits.shape[1])
    lg = [tf.constant(logits[:, t]) for t in steps]
    tg = [tf.constant(targets[:, t]) for t in steps]
    wt = [tf.constant(weights[:, t]) for t in steps]
    per_ex = (_xent(logits.astype(np.float64), targets) * weights).sum(1)
    if avg_t:
        per_ex = per_ex / (weights.sum(1) + 1e-12)
    by_ex = tf.contrib.legacy_seq2seq.sequence_loss_by_example(
        lg, tg, wt, average_across_timesteps=avg_t)
    total = tf.contrib.legacy_seq2seq.sequence_loss(lg, tg, wt, average_across_timesteps=avg_t,
                                                    average_across_batch=avg_b)
    with tf.Session() as s:
        got_ex, got_total = s.run([by_ex, total])
    np.testing.assert_allclose(got_ex, per_ex, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_total, per_ex.sum() / (3 if avg_b else 1), rtol=1e-5)
    with pytest.raises(ValueError, match="Lengths of logits"):
        tf.contrib.legacy_seq2seq.sequence_loss_by_example(lg, tg[:2], wt)


def test_ptb_style_sequence_loss_by_example():
    # PTB: one flattened step, targets [batch * time], weights of ones.
    logits, targets, _ = _seq_data()
    flat = logits.reshape(-1, 5)
    loss = tf.contrib.legacy_seq2seq.sequence_loss_by_example(
        [tf.constant(flat)], [tf.reshape(tf.constant(targets), [-1])], [tf.ones([12])])
    with tf.Session() as s:
        got = s.run(loss)
    np.testing.assert_allclose(got, _xent(flat, targets.reshape(-1)), rtol=1e-5, atol=1e-6)


def test_output_projection_wrapper_matches_numpy():
    r = np.random.RandomState(4)
    xv = r.randn(2, 3, 4).astype(np.float32)
    cell = tf.contrib.rnn.OutputProjectionWrapper(tf.nn.rnn_cell.BasicRNNCell(5), 7,
                                                  activation=tf.nn.relu)
    out, state = tf.nn.dynamic_rnn(cell, tf.constant(xv), dtype=tf.float32)
    assert cell.output_size == 7 and cell.state_size == 5
    assert out.shape.as_list() == [2, 3, 7]
    assert _names() == ["rnn/output_projection_wrapper/basic_rnn_cell/kernel:0",
                        "rnn/output_projection_wrapper/basic_rnn_cell/bias:0",
                        "rnn/output_projection_wrapper/kernel:0",
                        "rnn/output_projection_wrapper/bias:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run([v.assign(r.randn(*v.shape.as_list()).astype(np.float32))
               for v in tf.trainable_variables()])
        (k, b, pk, pb), got, got_state = s.run([tf.trainable_variables(), out, state])
    h = np.zeros((2, 5), np.float32)
    want = []
    for t in range(3):
        h = np.tanh(np.concatenate([xv[:, t], h], 1) @ k + b)
        want.append(np.maximum(h @ pk + pb, 0))
    np.testing.assert_allclose(got, np.stack(want, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_state, h, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="output_size must be > 0"):
        tf.contrib.rnn.OutputProjectionWrapper(tf.nn.rnn_cell.BasicRNNCell(5), 0)
