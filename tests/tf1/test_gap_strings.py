"""String tensors as TF1 input pipelines use them: feeding a `placeholder(string)`,
fetching strings (bytes, as TensorFlow returns them), and the host string ops
(`string_to_number`, `as_string`, `reduce_join`, `substr`, `regex_replace`,
`string_join`, `tf.strings.*`, `decode_csv`). Values are checked against Python's own
string functions and printf formats; a string given to an XLA op is a clear error."""

import re

import numpy as np
import pytest

import mylib as tf


def _run(fetch, feed=None):
    with tf.Session() as s:
        return s.run(fetch, feed)


def test_feed_and_fetch_strings_as_bytes():
    s = tf.placeholder(tf.string, [None, 2])
    c = tf.constant([["a", "é"]])
    fed = [["x", b"y"], ["zz", "ü"]]
    got, cv = _run([s, c], {s: fed})
    assert got.shape == (2, 2) and got.dtype == object
    assert got.tolist() == [[b"x", b"y"], [b"zz", "ü".encode()]]
    assert cv.tolist() == [[b"a", "é".encode()]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        _run(s, {s: ["a", "b"]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Placeholder"):
        _run(s, {s: [[1, 2]]})


def test_string_to_number_and_as_string():
    s = tf.placeholder(tf.string, [None])
    f = tf.strings.to_number(s)
    i = tf.string_to_number(s, out_type=tf.int64)
    vals = ["1", " -25", "300"]
    fv, iv = _run([f, i], {s: vals})
    assert fv.dtype == np.float32 and iv.dtype == np.int64
    np.testing.assert_array_equal(fv, [float(v) for v in vals])
    np.testing.assert_array_equal(iv, [int(v) for v in vals])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="StringToNumber.*could not correctly convert string: 1.5x"):
        _run(f, {s: ["2", "1.5x"]})
    x = np.array([1.25, -3.0, 1234.5678], np.float32)
    k = np.array([7, -12, 0], np.int32)
    outs = _run([tf.as_string(x), tf.as_string(x, precision=2), tf.as_string(x, scientific=True),
                 tf.as_string(x, shortest=True), tf.as_string(k), tf.as_string(k, width=4),
                 tf.as_string(k, width=4, fill="0"), tf.as_string(tf.constant([True, False]))])
    py = [["%f" % v for v in x], ["%.2f" % v for v in x], ["%e" % v for v in x],
          ["%g" % v for v in x], ["%d" % v for v in k], ["%4d" % v for v in k],
          ["%04d" % v for v in k], ["true", "false"]]
    for got, want in zip(outs, py):
        assert got.tolist() == [w.encode() for w in want]


def test_reduce_join_substr_and_join():
    words = np.array([["a", "bc", "def"], ["g", "hi", "jkl"]], object)
    w = tf.constant(words)
    allj, ax0, ax1, keep = _run([tf.reduce_join(w), tf.reduce_join(w, 0, separator="+"),
                                 tf.strings.reduce_join(w, axis=-1, separator=" "),
                                 tf.reduce_join(w, 1, keepdims=True)])
    assert allj == b"abcdefghijkl"
    assert ax0.tolist() == [b"a+g", b"bc+hi", b"def+jkl"]
    assert ax1.tolist() == [b"a bc def", b"g hi jkl"]
    assert keep.shape == (2, 1) and keep[1, 0] == b"ghijkl"
    s = tf.placeholder(tf.string, [None])
    pos = tf.placeholder(tf.int32, [None])
    texts = ["hello", "world!", "ab"]
    sub, sub2, neg = _run([tf.substr(s, 1, 3), tf.strings.substr(s, pos, 2),
                           tf.substr(s, -2, 2)], {s: texts, pos: [0, 4, 1]})
    assert sub.tolist() == [t[1:4].encode() for t in texts]
    assert sub2.tolist() == [b"he", b"d!", b"b"]
    assert neg.tolist() == [t[-2:].encode() for t in texts]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Substr.*pos 4 out of range"):
        _run(tf.substr(s, 4, 1), {s: ["abc"]})
    j = _run(tf.string_join([s, "-", tf.strings.upper(s)], separator="|"), {s: ["ab", "Cd"]})
    assert j.tolist() == [b"ab|-|AB", b"Cd|-|CD"]
    ln, lo, st = _run([tf.strings.length(s), tf.strings.lower(s), tf.strings.strip(s)],
                      {s: [" Ab ", "ü"]})
    np.testing.assert_array_equal(ln, [4, len("ü".encode())])
    assert lo.tolist() == [b" ab ", "ü".encode()] and st.tolist() == [b"Ab", "ü".encode()]


def test_regex_replace_and_full_match():
    s = tf.placeholder(tf.string, [None])
    texts = ["a1b22c333", "no digits", "9"]
    pat = r"(\d+)"
    g, first, groups, full = _run(
        [tf.regex_replace(s, r"\d+", "#"), tf.strings.regex_replace(s, r"\d", "_", False),
         tf.strings.regex_replace(s, pat, r"<\1>"), tf.strings.regex_full_match(s, r"[a-z0-9]+")],
        {s: texts})
    assert g.tolist() == [re.sub(r"\d+", "#", t).encode() for t in texts]
    assert first.tolist() == [re.sub(r"\d", "_", t, count=1).encode() for t in texts]
    assert groups.tolist() == [re.sub(pat, r"<\1>", t).encode() for t in texts]
    assert full.tolist() == [re.fullmatch(r"[a-z0-9]+", t) is not None for t in texts]
    with pytest.raises(tf.errors.InvalidArgumentError, match="invalid pattern"):
        tf.regex_replace(s, "(", "x")


def test_decode_csv():
    lines = tf.placeholder(tf.string, [None])
    a, b, c, d = tf.decode_csv(lines, [[1.5], [0], ["none"], tf.constant([], tf.int64)])
    recs = ['2.5,3,"x,y",7', ",4,,8", "-1,-2,z,9"]
    av, bv, cv, dv = _run([a, b, c, d], {lines: recs})
    assert av.dtype == np.float32 and bv.dtype == np.int32 and dv.dtype == np.int64
    np.testing.assert_allclose(av, [2.5, 1.5, -1.0])
    np.testing.assert_array_equal(bv, [3, 4, -2])
    assert cv.tolist() == [b"x,y", b"none", b"z"]
    np.testing.assert_array_equal(dv, [7, 8, 9])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Field 3 is required"):
        _run(d, {lines: ["1,2,3,"]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 4 fields but have 2"):
        _run(a, {lines: ["1,2"]})
    x, y = tf.io.decode_csv(lines, [[0.0], [""]], field_delim=";", na_value="NA",
                            select_cols=[0, 2])
    xv, yv = _run([x, y], {lines: ["NA;skip;q", "2;skip;NA"]})
    np.testing.assert_allclose(xv, [0.0, 2.0])
    assert yv.tolist() == [b"q", b""]


def test_a_string_given_to_an_xla_op_names_the_op():
    s = tf.placeholder(tf.string, [None])
    y = tf.reshape(s, [-1, 1])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Reshape.*'Placeholder.*' is a string tensor.*host"):
        _run(y, {s: ["a", "b"]})
    c = tf.constant(["a", "b"])  # a constant: the step has no host op
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Tanh.*'Const.*' is a string tensor.*host"):
        _run(tf.tanh(c))


def test_a_csv_pipeline_trains_and_a_bad_record_changes_nothing():
    # Records fed as text, parsed on the host, a linear model trained on them.
    lines = tf.placeholder(tf.string, [None])
    x1, x2, y = tf.decode_csv(lines, [[0.0], [0.0], [0.0]])
    w = tf.Variable([0.5, -0.5])
    steps = tf.Variable(0)
    pred = x1 * w[0] + x2 * w[1]
    loss = tf.reduce_mean((pred - y) ** 2)
    with tf.control_dependencies([tf.assign_add(steps, 1)]):
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    data = np.array([[1.0, 2.0, 3.0], [2.0, -1.0, 0.5], [0.5, 0.5, 1.0]])
    recs = [",".join(str(v) for v in row) for row in data]
    wv = np.array([0.5, -0.5])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(3):
            s.run(train, {lines: recs})
            err = data[:, :2] @ wv - data[:, 2]
            wv = wv - 0.1 * 2 * data[:, :2].T @ err / len(data)
        np.testing.assert_allclose(s.run(w), wv, rtol=1e-5)
        with pytest.raises(tf.errors.InvalidArgumentError, match="DecodeCSV"):
            s.run(train, {lines: recs[:2] + ["1,oops,2"]})
        np.testing.assert_allclose(s.run(w), wv, rtol=1e-5)
        assert s.run(steps) == 3
