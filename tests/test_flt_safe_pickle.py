"""The restricted unpickler (Keras dataset files, parameter-server messages) builds
arrays only the way numpy pickles them: empty, then filled from the pickle's own
bytes. A crafted pickle asking numpy's `_reconstruct` for a large shape directly (60
bytes returned an uninitialized 3 GB array) is refused; real pickles still load."""

import pickle

import numpy as np
import pytest

from mylib import _safe_pickle


def _reconstruct_pickle(n):
    mod = np.ndarray.__reduce__(np.zeros(1))[0].__module__.encode()
    return (b"\x80\x02c" + mod + b"\n_reconstruct\nq\x00cnumpy\nndarray\nq\x01"
            + b"\x8a\x05" + n.to_bytes(5, "little") + b"\x85" + b"C\x01b" + b"\x87R.")


def test_a_directly_sized_array_is_refused():
    with pytest.raises(pickle.UnpicklingError, match=r"shape \(3000000000,\).*a message"):
        _safe_pickle.loads(_reconstruct_pickle(3 * 10 ** 9), "a message")
    # The same opcodes with numpy's own empty shape are what real pickles hold.
    assert _safe_pickle.loads(_reconstruct_pickle(0), "a message").shape == (0,)


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_real_numpy_pickles_round_trip(protocol):
    values = [np.arange(12.0).reshape(3, 4), np.asfortranarray(np.ones((2, 3), np.int16)),
              np.arange(20.0)[::2], np.ones((4, 4))[:, 1:3], np.array(3.0),
              np.zeros((0, 5)), np.float32(2.5),
              {"w": np.ones(3, np.int8), "n": [1, 2.0, "x", None]}]
    for v in values:
        got = _safe_pickle.loads(pickle.dumps(v, protocol=protocol), "a message")
        if isinstance(v, dict):
            np.testing.assert_array_equal(got["w"], v["w"])
            assert got["n"] == v["n"]
        else:
            np.testing.assert_array_equal(got, v)
            assert np.asarray(got).dtype == np.asarray(v).dtype
    ragged = np.array([[1, 2], [3]], dtype=object)  # imdb/reuters sequences
    got = _safe_pickle.loads(pickle.dumps(ragged, protocol=protocol), "a dataset file")
    assert [list(x) for x in got] == [[1, 2], [3]]
