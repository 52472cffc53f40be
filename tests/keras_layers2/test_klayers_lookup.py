"""Hashing, StringLookup, IntegerLookup and TextVectorization.

Keras 3 runs these layers only with TensorFlow installed (not a dependency here), so
the references are the values Keras 3's own tests and docstrings state
(keras/src/layers/preprocessing/*_test.py, the layers' docstrings), and numpy / Python
definitions of the documented rules (vocabulary order: count descending, ties by token
descending; idf = log(1 + N / (1 + df)))."""

import collections
import math
import os

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib import layers as L

pytest.importorskip("farmhash")

NAMES = [["omar"], ["stringer"], ["marlo"], ["wire"], ["skywalker"]]


# ------------------------------------------------------------ Hashing
@pytest.mark.parametrize("kw,inp,want", [  # values from Keras 3's hashing_test.py
    ({"num_bins": 3}, [["A"], ["B"], ["C"], ["D"], ["E"]], [1, 0, 1, 1, 2]),
    ({"num_bins": 3, "mask_value": ""}, [["A"], ["B"], [""], ["C"], ["D"]], [1, 1, 0, 2, 2]),
    ({"num_bins": 3, "salt": [133, 137]}, [["A"], ["B"], ["C"], ["D"], ["E"]],
     [1, 2, 1, 0, 2]),
    ({"num_bins": 3, "salt": 133}, [["A"], ["B"], ["C"], ["D"], ["E"]], [0, 0, 2, 1, 0]),
    ({"num_bins": 2}, NAMES, [0, 0, 1, 0, 0]),
    ({"num_bins": 3, "mask_value": ""}, NAMES, [1, 1, 2, 1, 1]),
    ({"num_bins": 3, "mask_value": "omar"}, NAMES, [0, 1, 2, 1, 1]),
    ({"num_bins": 2, "salt": [133, 137]}, NAMES, [0, 1, 0, 1, 0]),
    ({"num_bins": 2, "salt": [211, 137]}, NAMES, [1, 0, 1, 0, 1]),
    ({"num_bins": 3}, np.array([[0], [1], [2], [3], [4]]), [1, 0, 1, 0, 2]),
    ({"num_bins": 3, "salt": [133, 137]}, np.array([[0], [1], [2], [3], [4]]),
     [1, 1, 2, 0, 1]),
    ({"num_bins": 1}, [["A"], ["B"]], [0, 0]),
])
def test_hashing_matches_keras_values(kw, inp, want):
    out = L.Hashing(**kw)(inp)
    assert out.dtype == np.int64 and out.shape == (len(want), 1)
    np.testing.assert_array_equal(out.ravel(), want)


def test_hashing_output_modes_config_and_graph():
    h = L.Hashing(num_bins=4, output_mode="multi_hot")
    ids = L.Hashing(num_bins=4)(np.array([["a", "b"], ["c", "a"]], object))
    want = np.zeros((2, 4), np.float32)
    for r in range(2):
        want[r, ids[r]] = 1.0
    np.testing.assert_array_equal(h(np.array([["a", "b"], ["c", "a"]])), want)
    cfg = L.Hashing(num_bins=5, mask_value=0, salt=7).get_config()
    again = L.Hashing.from_config(cfg)
    assert cfg["salt"] == [7, 7] and again.get_config() == {**cfg, "name": again.name}
    # floats are cast to int64 first, as Keras
    np.testing.assert_array_equal(L.Hashing(7)(np.array([1.7, 2.2])),
                                  L.Hashing(7)(np.array([1, 2])))
    # inside a graph: one host op
    inp = L.Input((2,), dtype="int64")
    out = L.Hashing(num_bins=11)(inp)
    x = np.array([[5, 17], [0, 123456]])
    got = ml.layers.backend.get_session(inp.graph).run(out, {inp: x})
    np.testing.assert_array_equal(got, L.Hashing(num_bins=11)(x))
    with pytest.raises(ValueError, match="num_bins"):
        L.Hashing(num_bins=0)
    with pytest.raises(ValueError, match="salt"):
        L.Hashing(3, salt="x")


# ------------------------------------------------------------ StringLookup
def test_string_lookup_keras_examples():
    vocab = ["a", "b", "c", "d"]
    data = [["a", "c", "d"], ["d", "z", "b"]]
    # the Keras 3 docstring's examples
    np.testing.assert_array_equal(L.StringLookup(vocabulary=vocab)(data), [[1, 3, 4], [4, 0, 2]])
    np.testing.assert_array_equal(L.StringLookup(vocabulary=vocab, num_oov_indices=2)(data),
                                  [[2, 4, 5], [5, 1, 3]])
    np.testing.assert_array_equal(
        L.StringLookup(vocabulary=vocab, output_mode="one_hot")(["a", "b", "c", "d", "z"]),
        np.vstack([np.eye(5)[1:], np.eye(5)[:1]]))
    np.testing.assert_array_equal(
        L.StringLookup(vocabulary=vocab, output_mode="multi_hot")(
            [["a", "c", "d", "d"], ["d", "z", "b", "z"]]),
        [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    np.testing.assert_array_equal(
        L.StringLookup(vocabulary=vocab, output_mode="count")(
            [["a", "c", "d", "d"], ["d", "z", "b", "z"]]),
        [[0, 1, 0, 1, 2], [2, 0, 1, 0, 1]])
    inv = L.StringLookup(vocabulary=vocab, invert=True)
    assert inv([[1, 3, 4], [4, 0, 2]]).tolist() == [["a", "c", "d"], ["d", "[UNK]", "b"]]
    # tf_idf with given weights: OOV slot gets their mean (Keras's docstring example)
    idf = [0.25, 0.75, 0.6, 0.4]
    out = L.StringLookup(output_mode="tf_idf", vocabulary=vocab, idf_weights=idf)(
        [["a", "c", "d", "d"], ["d", "z", "b", "z"]])
    np.testing.assert_allclose(out, [[0, 0.25, 0, 0.6, 0.8], [1.0, 0, 0.75, 0, 0.4]])
    # mask token: index 0, vocabulary shifted by one
    m = L.StringLookup(vocabulary=vocab, mask_token="")
    np.testing.assert_array_equal(m([["a", ""], ["z", "d"]]), [[2, 0], [1, 5]])
    assert m.get_vocabulary() == ["", "[UNK]", "a", "b", "c", "d"]


def test_string_lookup_adapt_orders_as_keras():
    rs = np.random.RandomState(0)
    words = ["apple", "Zebra", "banana", "b", "éclair", "a", "car", "cat"]
    data = rs.choice(words, size=(50, 3), p=[.3, .1, .1, .1, .1, .1, .1, .1])
    lk = L.StringLookup()
    lk.adapt(data)
    counts = collections.Counter(data.ravel().tolist())
    want = sorted(counts, key=lambda t: (counts[t], t.encode()), reverse=True)
    assert lk.get_vocabulary() == ["[UNK]"] + want
    assert lk.get_vocabulary(include_special_tokens=False) == want
    ids = lk(data)
    np.testing.assert_array_equal(ids, np.vectorize(lambda t: want.index(t) + 1)(data))
    # max_tokens keeps the most frequent; ties are broken by the token, descending.
    lk2 = L.StringLookup(max_tokens=4)
    lk2.adapt(["x", "y", "y", "z", "z", "w", "w", "v"])
    assert lk2.get_vocabulary() == ["[UNK]", "z", "y", "w"]
    # adapt on a mylib Dataset of batches; bytes are read as utf-8
    lk3 = L.StringLookup()
    lk3.adapt(ml.data.Dataset.from_tensor_slices(data).batch(8))
    assert lk3.get_vocabulary() == lk.get_vocabulary()
    np.testing.assert_array_equal(lk3(np.array([b"apple", "car"], object)), lk(["apple", "car"]))


def test_string_lookup_oov_hashing_tfidf_adapt_and_errors():
    lk = L.StringLookup(vocabulary=["a", "b"], num_oov_indices=3)
    import farmhash

    toks = ["q", "rr", "sss", "a"]
    want = [farmhash.fingerprint64(t) % 3 for t in toks[:3]] + [3]
    np.testing.assert_array_equal(lk(toks), want)
    # tf_idf from adapt: idf = log(1 + N / (1 + df)), the OOV slot the mean
    docs = [["a", "b", "b"], ["b", "c", "c"], ["c", "c", "d"]]
    t = L.StringLookup(output_mode="tf_idf")
    t.adapt(docs)
    vocab = t.get_vocabulary(include_special_tokens=False)
    assert vocab == ["c", "b", "d", "a"]
    df = {"c": 2, "b": 2, "d": 1, "a": 1}
    idf = np.array([math.log(1 + 3 / (1 + df[v])) for v in vocab])
    got = t([["c", "c", "zz", "a"]])
    np.testing.assert_allclose(got, [[idf.mean() * 1, 2 * idf[0], 0, 0, idf[3]]], rtol=1e-6)
    with pytest.raises(errors.InvalidArgumentError, match="num_oov_indices=0"):
        L.StringLookup(vocabulary=["a"], num_oov_indices=0)(["b"])
    with pytest.raises(ValueError, match="repeated"):
        L.StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="Cannot adapt"):
        L.StringLookup(vocabulary=["a"]).adapt(["b"])
    with pytest.raises(RuntimeError, match="vocabulary before calling"):
        L.StringLookup(output_mode="multi_hot")(["a"])
    with pytest.raises(ValueError, match="invert"):
        L.StringLookup(invert=True, output_mode="count")


# ------------------------------------------------------------ IntegerLookup
def test_integer_lookup_keras_examples_and_adapt():
    vocab = [12, 36, 1138, 42]
    data = np.array([[12, 1138, 42], [42, 1000, 36]])
    np.testing.assert_array_equal(L.IntegerLookup(vocabulary=vocab)(data),
                                  [[1, 3, 4], [4, 0, 2]])
    np.testing.assert_array_equal(  # OOV 37 -> 37 % 2 = slot 1, 1000 -> slot 0
        L.IntegerLookup(vocabulary=vocab, num_oov_indices=2)([[12, 1138, 42], [37, 1000, 36]]),
        [[2, 4, 5], [1, 0, 3]])
    lk = L.IntegerLookup()
    lk.adapt(np.array([[12, 1138, 42], [42, 1000, 36], [36, 36, 42]]))
    assert lk.get_vocabulary() == [-1, 42, 36, 1138, 1000, 12]
    inv = L.IntegerLookup(vocabulary=vocab, invert=True)
    np.testing.assert_array_equal(inv([[1, 3, 4], [4, 0, 2]]), [[12, 1138, 42], [42, -1, 36]])
    mh = L.IntegerLookup(vocabulary=vocab, output_mode="multi_hot", mask_token=0)
    np.testing.assert_array_equal(mh([[12, 0, 42], [5, 36, 36]]),
                                  [[0, 1, 0, 0, 1], [1, 0, 1, 0, 0]])
    cfg = lk.get_config()
    again = L.IntegerLookup.from_config(cfg)
    assert again.get_vocabulary() == lk.get_vocabulary()


def test_integer_lookup_inside_a_model_trains_and_round_trips(tmp_path):
    rs = np.random.RandomState(2)
    codes = rs.choice([7, 19, 301, 4000, 55], size=(400, 1))
    y = np.isin(codes, [19, 4000]).astype(np.float32)
    lk = L.IntegerLookup(output_mode="one_hot")
    lk.adapt(codes)
    inp = L.Input((1,), dtype="int64")
    out = L.Dense(1, activation="sigmoid")(lk(inp))
    model = ml.Model(inp, out)
    model.compile(optimizer=ml.optimizers.Adam(0.1), loss="binary_crossentropy",
                  metrics=["accuracy"])
    hist = model.fit(codes, y, epochs=8, batch_size=50, verbose=0)
    assert hist.history["accuracy"][-1] > 0.95
    want = model.predict(codes[:10], verbose=0)
    path = os.path.join(tmp_path, "m.mylib")
    model.save(path)
    with ml.Graph().as_default():
        again = ml.models.load_model(path)
        np.testing.assert_allclose(again.predict(codes[:10], verbose=0), want, rtol=1e-6)


# ------------------------------------------------------------ TextVectorization
def test_text_vectorization_keras_examples():
    # the Keras 3 docstring's examples
    tv = L.TextVectorization(max_tokens=5000, output_mode="int", output_sequence_length=4)
    tv.adapt(["foo bar", "bar baz", "baz bada boom"])
    np.testing.assert_array_equal(tv([["foo qux bar"], ["qux baz"]]),
                                  [[4, 1, 3, 0], [1, 2, 0, 0]])
    vocab = ["earth", "wind", "and", "fire"]
    tv = L.TextVectorization(max_tokens=5000, output_mode="int", output_sequence_length=4,
                             vocabulary=vocab)
    np.testing.assert_array_equal(tv([["earth wind and also fire"]]), [[2, 3, 4, 1]])
    assert tv.get_vocabulary() == ["", "[UNK]", "earth", "wind", "and", "fire"]


def test_text_vectorization_standardize_split_ngrams_modes():
    tv = L.TextVectorization()
    tv.adapt(["The cat sat.", "the dog, THE cat!", "a bird   flew\tby"])
    vocab = tv.get_vocabulary()
    assert vocab[:4] == ["", "[UNK]", "the", "cat"]
    # padded to the longest row of the call, 0 = padding, 1 = OOV
    out = tv(np.array(["The CAT; ran", "bird"]))
    assert out.tolist() == [[2, 3, 1], [vocab.index("bird"), 0, 0]]
    assert tv("the cat").tolist() == [2, 3]  # one string -> one row
    # ASCII-only lower-casing, as TensorFlow's strings.lower
    low = L.TextVectorization(standardize="lower", split=None, vocabulary=["éa", "x"])
    assert low(["ÉA", "éa", "X"]).tolist() == [1, 2, 3]
    ng = L.TextVectorization(ngrams=2, output_mode="count")
    ng.adapt(["a b c", "a b"])
    v = ng.get_vocabulary()
    assert set(v) == {"[UNK]", "a", "b", "c", "a b", "b c"} and v[:3] == ["[UNK]", "b", "a b"]
    got = ng(["a b a b z"])
    want = np.zeros((1, len(v)))
    for tok in ["a", "b", "a", "b", "z", "a b", "b a", "a b", "b z"]:
        want[0, v.index(tok) if tok in v else 0] += 1  # OOV: 0 (no mask slot here)
    np.testing.assert_array_equal(got, want)
    ch = L.TextVectorization(split="character", standardize=None)
    ch.adapt(["abca"])
    assert ch.get_vocabulary() == ["", "[UNK]", "a", "c", "b"]
    mh = L.TextVectorization(output_mode="multi_hot", pad_to_max_tokens=True, max_tokens=8,
                             vocabulary=["x", "y"])
    assert mh(["x x q"]).tolist() == [[1, 1, 0, 0, 0, 0, 0, 0]]
    with pytest.raises(ValueError, match="output_sequence_length"):
        L.TextVectorization(output_mode="count", output_sequence_length=3)
    with pytest.raises(ValueError, match="last shape dimension must be 1"):
        tv(np.array([["a", "b"]]))


def test_text_vectorization_tf_idf_and_config_round_trip():
    docs = ["red fish blue fish", "one fish", "blue sky"]
    tv = L.TextVectorization(output_mode="tf_idf")
    tv.adapt(docs)
    vocab = tv.get_vocabulary()
    assert vocab[:3] == ["[UNK]", "fish", "blue"]
    toks = [d.split() for d in docs]
    df = {w: sum(w in t for t in toks) for w in vocab[1:]}
    idf = np.array([math.log(1 + 3 / (1 + df[w])) for w in vocab[1:]])
    got = tv(["fish fish sky zzz"])
    want = np.zeros(len(vocab))
    want[0] = idf.mean()
    want[vocab.index("fish")] = 2 * idf[vocab.index("fish") - 1]
    want[vocab.index("sky")] = idf[vocab.index("sky") - 1]
    np.testing.assert_allclose(got[0], want, rtol=1e-6)
    again = L.TextVectorization.from_config(tv.get_config())
    np.testing.assert_allclose(again(["fish fish sky zzz"]), got, rtol=1e-6)
    assert again.get_vocabulary() == vocab


def test_text_vectorization_in_dataset_map_and_in_a_model_graph(tmp_path):
    texts = np.array(["good movie", "bad movie", "very good", "very bad plot"])
    labels = np.array([1, 0, 1, 0], np.float32)
    tv = L.TextVectorization(output_sequence_length=3)
    tv.adapt(texts)
    ds = ml.data.Dataset.from_tensor_slices((texts, labels)).batch(2).map(
        lambda x, y: (tv(x), y))
    xs = np.concatenate([x for x, _ in ds])
    np.testing.assert_array_equal(xs, tv(texts))
    assert xs.dtype == np.int64
    # inside a model: the layer is one host op on a string input
    inp = L.Input((1,), dtype="string")
    emb = L.Embedding(tv.vocabulary_size(), 4)(tv(inp))
    model = ml.Model(inp, L.Dense(1, activation="sigmoid")(L.GlobalAveragePooling1D()(emb)))
    out = model.predict(texts[:, None], verbose=0)
    assert out.shape == (4, 1)
    # fit / evaluate take string arrays (unicode or object) for a string input
    model.compile(optimizer=ml.optimizers.Adam(0.1), loss="binary_crossentropy",
                  metrics=["accuracy"])
    x_fit = np.repeat(texts.astype(str), 8)[:, None]
    model.fit(x_fit, np.repeat(labels, 8), epochs=6, batch_size=8, verbose=0)
    assert model.evaluate(texts[:, None], labels, verbose=0)[1] == 1.0
    out = model.predict(texts[:, None], verbose=0)
    path = os.path.join(tmp_path, "m.mylib")
    model.save(path)
    with ml.Graph().as_default():
        again = ml.models.load_model(path)
        np.testing.assert_allclose(again.predict(texts[:, None], verbose=0), out, rtol=1e-6)


def test_hashing_without_pyfarmhash_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "farmhash", None)
    with pytest.raises(ImportError, match=r"pyfarmhash.*mylib\[preprocessing\]"):
        L.Hashing(num_bins=3)(["a"])
    # the keyed hash needs no package
    assert L.Hashing(num_bins=3, salt=133)([["A"]]).ravel().tolist() == [0]
