"""Host preprocessing layers of Keras 3: `Hashing`, `StringLookup`, `IntegerLookup`
(and, in `mylib.layers.text_vectorization`, `TextVectorization`).

They work on the host, in Python and numpy, as Keras 3 runs them in TensorFlow's
string kernels outside the jitted model:

- called on numpy arrays, Python lists or strings (or JAX arrays) they run at once and
  return numpy arrays: use them eagerly or in ``mylib.data.Dataset.map`` (the input
  pipeline, where Keras 3 puts them with ``tf.data``);
- called on a symbolic tensor (inside a model: ``Input(shape=(1,), dtype="string")``
  for strings) they add one host op (`numpy_function`) to the graph: the step runs it on
  the host between its compiled XLA parts. Their outputs have no gradient (ids).

Vocabularies from `adapt` are ordered as Keras 3 orders them: by count, most frequent
first, ties broken by the token in descending order (byte order for strings, numeric
for integers). Hashing uses FarmHash Fingerprint64 (from the `pyfarmhash` package) of
the value's text, as TensorFlow's `to_hash_bucket_fast`, so bins equal Keras 3's; with a
`salt`, SipHash-2-4 keyed by the salt, as `to_hash_bucket_strong`.

Differences from Keras 3: outputs are dense numpy arrays (no `sparse` / `ragged`
tensors: ragged `TextVectorization` output is padded with 0 to the longest sequence of
the call, as Keras does when ``ragged=False``); `get_config` also holds an adapted
vocabulary (and idf weights), where Keras writes it as a separate asset file, so
`save` / `load_model` round-trip it through the config; vocabulary files (a path as
`vocabulary`) are read when the layer is made.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np

from mylib import errors
from mylib.core import dtypes as _dtypes
from mylib.core.graph import Tensor
from mylib.layers.base import Layer, flatten

_OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


def _farmhash():
    from mylib._optional import require

    return require("farmhash", "Hashing (FarmHash Fingerprint64)", "preprocessing",
                   package="pyfarmhash")


def _siphash24(k0, k1, data):
    """SipHash-2-4 of `data` (bytes) keyed by two 64-bit words (Aumasson & Bernstein,
    "SipHash: a fast short-input PRF", 2012), as TensorFlow's `StrongKeyedHash`."""
    m64 = 0xFFFFFFFFFFFFFFFF

    def rotl(x, b):
        return ((x << b) | (x >> (64 - b))) & m64

    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def sip_round():
        v[0] = (v[0] + v[1]) & m64
        v[1] = rotl(v[1], 13) ^ v[0]
        v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & m64
        v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & m64
        v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & m64
        v[1] = rotl(v[1], 17) ^ v[2]
        v[2] = rotl(v[2], 32)

    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v[3] ^= m
        sip_round()
        sip_round()
        v[0] ^= m
    m = int.from_bytes(data[end:], "little") | ((n & 0xFF) << 56)
    v[3] ^= m
    sip_round()
    sip_round()
    v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        sip_round()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def _parse_salt(salt, owner):
    if salt is None:
        return None
    if isinstance(salt, (tuple, list)) and len(salt) == 2:
        return [int(s) for s in salt]
    if isinstance(salt, (int, np.integer)) and not isinstance(salt, bool):
        return [int(salt), int(salt)]
    raise ValueError(f"The `salt` argument for `{owner}` can only be a tuple of size 2 "
                     f"integers, or a single integer. Received: salt={salt}.")


def _bucket_fn(num_buckets, salt):
    """text -> bucket in [0, num_buckets): Fingerprint64 (or keyed SipHash) modulo."""
    if salt is not None:
        k0, k1 = (s & 0xFFFFFFFFFFFFFFFF for s in salt)
        return lambda s: _siphash24(k0, k1, s.encode("utf-8")) % num_buckets
    fp = _farmhash().fingerprint64
    return lambda s: fp(s) % num_buckets


def _as_text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    return str(v)


def _to_host(x):
    """A Python / numpy / JAX value as a numpy array (strings as str objects)."""
    a = np.asarray(x)
    if a.dtype.kind == "S" or (a.dtype == object and any(isinstance(v, bytes)
                                                         for v in a.ravel())):
        a = np.vectorize(_as_text, otypes=[object])(a) if a.size else a.astype(object)
    elif a.dtype.kind == "U":
        a = a.astype(object)
    return a


def _encode_np(idx, mode, depth, weights=None):
    """numpy twin of `preprocessing.encode_categorical` (ids outside [0, depth) give no
    slot; rank-1 input is one sample for multi_hot / count). Memory is that of the
    output (a scatter, not a one-hot tensor per token)."""
    idx = np.asarray(idx, np.int64)
    if idx.ndim == 0:
        idx = idx.reshape(1)
    if mode == "one_hot":
        if idx.ndim > 1 and idx.shape[-1] == 1:
            idx = idx[..., 0]
        flat = idx.reshape(-1)
        out = np.zeros((flat.size, depth), np.float32)
        ok = (flat >= 0) & (flat < depth)
        out[np.nonzero(ok)[0], flat[ok]] = 1.0
        return out.reshape(idx.shape + (depth,))
    lead = idx.shape[:-1]
    rows_n = int(np.prod(lead)) if lead else 1
    flat = idx.reshape(rows_n, idx.shape[-1])
    rows = np.repeat(np.arange(rows_n), flat.shape[1])
    flat = flat.reshape(-1)
    ok = (flat >= 0) & (flat < depth)
    out = np.zeros((rows_n, depth), np.float32)
    if mode == "multi_hot":
        out[rows[ok], flat[ok]] = 1.0
    else:
        w = np.ones(flat.shape, np.float32) if weights is None else \
            np.broadcast_to(np.asarray(weights, np.float32), idx.shape).reshape(-1)
        np.add.at(out, (rows[ok], flat[ok]), w[ok])
    return out.reshape(lead + (depth,))


class _HostLayer(Layer):
    """A layer computed by a numpy function `_forward` on the host: directly for
    array / list / string inputs, as one host op for symbolic inputs."""

    _string_output = False

    def __call__(self, inputs, *args, **kwargs):
        flat = flatten(inputs)
        if any(isinstance(t, Tensor) for t in flat):
            return super().__call__(inputs, *args, **kwargs)
        if args or set(kwargs) - {"training"}:
            raise TypeError(f'Layer "{self.name}" takes only its inputs. Received extra '
                            f"arguments: {args or ''} {sorted(set(kwargs) - {'training'})}")
        return self._forward(_to_host(inputs))

    def call(self, inputs):
        from mylib.core.ops import host_ops

        out_dtype = self._output_dtype()
        out = host_ops.numpy_function(self._forward, [inputs], out_dtype,
                                      name=type(self).__name__)
        out.set_shape(self.compute_output_shape(tuple(inputs.shape.as_list())
                                                if inputs.shape.rank is not None else None))
        return out

    def _output_dtype(self):
        return _dtypes.int64 if self.output_mode == "int" else _dtypes.float32


# ------------------------------------------------------------ Hashing
class Hashing(_HostLayer):
    """Hashes values into `num_bins` bins (Keras 3's `Hashing`).

    Each value's text (strings as they are, integers in decimal, floats cast to int64
    first) is hashed with FarmHash Fingerprint64 (the `pyfarmhash` package; TensorFlow's
    `to_hash_bucket_fast`, which Keras 3 calls), or, with a `salt`, with SipHash-2-4
    keyed by it (`to_hash_bucket_strong`); the bin is the hash modulo the number of
    bins. Bins equal Keras 3's for strings and integers.

    Args:
      num_bins: int > 0, number of bins, including the mask bin when `mask_value` is
        set.
      mask_value: a value (string or number) that goes to bin 0; the others then go to
        ``1 + hash % (num_bins - 1)``.
      salt: int or pair of ints: use the keyed (strong) hash.
      output_mode: ``"int"`` (bin ids, int64, default), ``"one_hot"``, ``"multi_hot"``
        or ``"count"`` (float32 ``[..., num_bins]`` as `CategoryEncoding`).
      sparse: must be False (dense outputs only).

    Raises:
      ValueError: `num_bins` None or <= 0, a bad `salt` or `output_mode`, `sparse`.
      ImportError: `pyfarmhash` not installed (``pip install 'mylib[preprocessing]'``),
        at the first unsalted call.
    """

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int",
                 sparse=False, **kwargs):
        kwargs.pop("dtype", None)
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError("The `num_bins` for `Hashing` cannot be `None` or non-positive "
                             f"values. Received: num_bins={num_bins}.")
        if output_mode not in ("int", "one_hot", "multi_hot", "count"):
            raise ValueError("Invalid value for argument `output_mode`. Expected one of "
                             "('int', 'one_hot', 'multi_hot', 'count'). Received: "
                             f"output_mode={output_mode}")
        if sparse:
            raise ValueError("Hashing(sparse=True) is not supported: outputs are dense.")
        self.num_bins, self.mask_value, self.output_mode = int(num_bins), mask_value, output_mode
        self.sparse = False
        self.salt = _parse_salt(salt, "Hashing")

    def _forward(self, x):
        x = _to_host(x)
        bins = self.num_bins
        mask = None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mask = x == self.mask_value
            mask = np.asarray(mask, bool) if np.shape(mask) == x.shape else \
                np.zeros(x.shape, bool)
        if x.dtype.kind == "f":
            x = x.astype(np.int64)
        bucket = _bucket_fn(bins, self.salt)
        flat = x.ravel().tolist()
        cache = {}
        out = np.empty(len(flat), np.int64)
        for i, v in enumerate(flat):
            s = _as_text(v)
            h = cache.get(s)
            if h is None:
                h = cache[s] = bucket(s)
            out[i] = h
        out = out.reshape(x.shape)
        if mask is not None:
            out = np.where(mask, 0, out + 1)
        if self.output_mode == "int":
            return out
        return _encode_np(out, self.output_mode, self.num_bins)

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return input_shape
        if input_shape is None:
            return None
        if len(input_shape) == 0:
            return (self.num_bins,)
        if self.output_mode == "one_hot" and input_shape[-1] != 1:
            return tuple(input_shape) + (self.num_bins,)
        return tuple(input_shape[:-1]) + (self.num_bins,)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt,
                "mask_value": self.mask_value, "output_mode": self.output_mode,
                "sparse": self.sparse}


# ------------------------------------------------------------ lookups
def _batches(data, steps):
    """The batches of `data` (an array / list: one batch; a Dataset or iterable:
    its elements, the x of (x, y) pairs)."""
    from mylib.data import Dataset

    if isinstance(data, (np.ndarray, list, tuple, str, bytes)) or hasattr(data, "__array__"):
        return [data]
    if not (isinstance(data, Dataset) or hasattr(data, "__iter__")):
        raise TypeError(f"adapt() takes an array, a list, a mylib.data.Dataset or an "
                        f"iterable of batches. Received: {type(data).__name__}")

    def first(b):
        return b[0] if isinstance(b, tuple) and not hasattr(b, "_fields") else b

    it = (first(b) for b in data)
    return itertools.islice(it, int(steps)) if steps is not None else it


class _IndexLookup(_HostLayer):
    """Shared machinery of `StringLookup` and `IntegerLookup` (Keras's `IndexLookup`).

    Index layout (``output_mode="int"``): the mask token at 0 when there is one, then
    `num_oov_indices` OOV slots, then the vocabulary. Other output modes have no mask
    slot: masked tokens are dropped from the encoding.
    """

    _is_string = True

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", sparse=False,
                 pad_to_max_tokens=False, oov_method="floormod", salt=None, **kwargs):
        kwargs.pop("vocabulary_size", None)
        kwargs.pop("has_input_vocabulary", None)
        kwargs.pop("dtype", None)
        super().__init__(**kwargs)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"If set, `max_tokens` must be greater than 1. Received: "
                             f"max_tokens={max_tokens}")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError("If pad_to_max_tokens is True, must set `max_tokens`. "
                             f"Received: max_tokens={max_tokens}")
        if num_oov_indices is None or num_oov_indices < 0:
            raise ValueError("`num_oov_indices` must be greater than or equal to 0. "
                             f"Received: num_oov_indices={num_oov_indices}")
        if oov_method not in ("floormod", "farmhash"):
            raise ValueError("Unknown value for `oov_method`: expected 'floormod' or "
                             f"'farmhash'. Received: oov_method={oov_method!r}")
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode == "tf-idf":
            output_mode = "tf_idf"
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(f"Unknown value for `output_mode`: expected one of "
                             f"{_OUTPUT_MODES}. Received: output_mode={output_mode!r}")
        if invert and output_mode != "int":
            raise ValueError("`output_mode` must be `'int'` when `invert` is true. "
                             f"Received: output_mode={output_mode}")
        if sparse:
            raise ValueError(f"{type(self).__name__}(sparse=True) is not supported: "
                             "outputs are dense.")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError("`idf_weights` should only be set if `output_mode` is "
                             f"`'tf_idf'`. Received: idf_weights={idf_weights} and "
                             f"output_mode={output_mode}")
        if salt is not None and not self._is_string and oov_method != "farmhash":
            raise ValueError("`salt` can only be used when `oov_method='farmhash'`. "
                             f"Received: oov_method={oov_method}")
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = self._token(mask_token) if mask_token is not None else None
        self.oov_token = self._token(oov_token) if oov_token is not None else None
        self.invert, self.output_mode = bool(invert), output_mode
        self.sparse, self.pad_to_max_tokens = False, bool(pad_to_max_tokens)
        self.oov_method, self.salt = oov_method, _parse_salt(salt, type(self).__name__)
        self._vocab = None  # learned / given tokens, without mask and OOV
        self._idf = None  # float32 [vocabulary_size] (tf_idf)
        self._counts = collections.Counter()
        self._doc_counts = collections.Counter()
        self._num_docs = 0
        self._input_vocabulary = vocabulary is not None
        if output_mode == "tf_idf" and vocabulary is not None and idf_weights is None:
            raise ValueError("When specifying the `vocabulary` argument, in TF-IDF output "
                             "mode, the `idf_weights` argument must also be provided.")
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # --- tokens ---
    def _token(self, v):
        if self._is_string:
            return _as_text(v)
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{type(self).__name__} tokens must be integers. Received: "
                            f"{v!r}")
        return int(v)

    def _host_tokens(self, x):
        a = _to_host(x)
        if self._is_string:
            if a.dtype != object:
                raise TypeError(f'Layer "{self.name}" takes strings. Received an array of '
                                f"dtype {a.dtype}.")
            return a
        if a.dtype.kind not in "iuf":
            raise TypeError(f'Layer "{self.name}" takes integers. Received an array of '
                            f"dtype {a.dtype}.")
        return a.astype(np.int64)

    def _sort_key(self, tok):
        return tok.encode("utf-8") if self._is_string else tok

    def _oov_start(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start(self):
        return self._oov_start() + self.num_oov_indices

    # --- vocabulary ---
    def vocabulary_size(self):
        """The number of indices, mask and OOV slots included."""
        return len(self._vocab or ()) + self._token_start()

    def get_vocabulary(self, include_special_tokens=True):
        """The tokens by index: ``[mask] + [oov] * num_oov_indices + vocabulary`` (the
        mask only in ``"int"`` mode), or the vocabulary alone."""
        vocab = [self.oov_token] * self._token_start() + list(self._vocab or ())
        if self.mask_token is not None and self.output_mode == "int":
            vocab[0] = self.mask_token
        return vocab if include_special_tokens else vocab[self._token_start():]

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary (and, in ``"tf_idf"`` mode, the idf weights) directly.

        Args:
          vocabulary: list / 1-D array of unique tokens (optionally starting with the
            mask and OOV tokens in their index order), or the path of a text file
            with one token per line.
          idf_weights: ``[len(vocabulary)]`` floats, in ``"tf_idf"`` mode only.
        Raises:
          ValueError: as Keras 3: an empty vocabulary, repeated tokens, a mask / OOV
            token inside it, more than `max_tokens` entries, idf weights of another
            length or outside ``"tf_idf"`` mode.
        """
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError("`idf_weights` must be set if output_mode is 'tf_idf'.")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError("`idf_weights` should only be set if output_mode is "
                             f"`'tf_idf'`. Received: output_mode={self.output_mode} and "
                             f"idf_weights={idf_weights}")
        if isinstance(vocabulary, str):
            with open(vocabulary, encoding="utf-8") as f:
                lines = f.read().splitlines()
            while lines and lines[-1] == "":
                lines.pop()
            vocabulary = lines if self._is_string else [int(v) for v in lines]
        vocab = [self._token(v) for v in np.asarray(vocabulary, dtype=object).ravel()]
        if not vocab:
            raise ValueError(f"Cannot set an empty vocabulary. Received: "
                             f"vocabulary={vocabulary}")
        start = self._token_start()
        special = [self.mask_token] * self._oov_start() + [self.oov_token] * \
            self.num_oov_indices
        found_special = vocab[:start] == special
        tokens = vocab[start:] if found_special else vocab
        repeated = [t for t, c in collections.Counter(tokens).items() if c > 1]
        if repeated:
            raise ValueError("The passed vocabulary has at least one repeated term. Please "
                             f"uniquify your dataset. The repeated terms are: {repeated}")
        for what, tok in (("mask", self.mask_token),
                          ("OOV", self.oov_token if self.invert else None)):
            if tok is not None and tok in tokens:
                raise ValueError(f"Found reserved {what} token at unexpected location in "
                                 "`vocabulary`. Note that passed `vocabulary` does not need "
                                 "to include the OOV and mask tokens. Either remove all mask "
                                 "and OOV tokens, or include them only at the start of the "
                                 f"vocabulary in precisely this order: {special}. Received: "
                                 f"{what.lower()}_token={tok}")
        if self.max_tokens is not None and start + len(tokens) > self.max_tokens:
            raise ValueError("Attempted to set a vocabulary larger than the maximum vocab "
                             f"size. Received vocabulary size is {start + len(tokens)}; "
                             f"`max_tokens` is {self.max_tokens}.")
        self._vocab = tokens
        if self.output_mode == "tf_idf":
            w = np.asarray(idf_weights, np.float64)
            if w.ndim != 1 or len(w) != len(vocab):
                raise ValueError("`idf_weights` must be the same length as vocabulary. "
                                 f"len(idf_weights) is {len(w)}; len(vocabulary) is "
                                 f"{len(vocab)}")
            front, value = (0, 0.0) if found_special else (start, float(np.average(w)))
            back = self.max_tokens - front - len(w) if self.pad_to_max_tokens else 0
            self._idf = np.pad(w, (front, back), constant_values=(value, 0.0)).astype(
                np.float32)

    # --- adapt ---
    def adapt(self, data, steps=None):
        """Builds the vocabulary from `data`: a list or array of tokens (each row a
        document for ``"tf_idf"``), a `mylib.data.Dataset` of batches (x of (x, y)
        pairs), or any iterable of batches; `steps` bounds the batches read.

        Raises:
          ValueError: the layer was given a vocabulary.
        """
        self.reset_state()
        for batch in _batches(data, steps):
            b = self._host_tokens(batch)
            if b.ndim == 1 and isinstance(batch, (np.ndarray, list, tuple)) and \
                    data is batch:
                b = b[:, None]  # an array of tokens: each token is a document (Keras)
            self.update_state(b)
        self.finalize_state()

    def update_state(self, data):
        if self._input_vocabulary:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static "
                             "vocabulary via `vocabulary` argument or `set_vocabulary()` "
                             "method.")
        rows = self._rows(data)
        for row in rows:
            self._counts.update(row)
        if self.output_mode == "tf_idf":
            for row in rows:
                self._doc_counts.update(set(row))
            self._num_docs += len(rows)

    def _rows(self, data):
        a = data if isinstance(data, list) and data and isinstance(data[0], list) else None
        if a is not None:  # already token lists (TextVectorization)
            return a
        arr = self._host_tokens(data)
        if arr.ndim == 0:
            arr = arr.reshape(1, 1)
        elif arr.ndim == 1:
            arr = arr.reshape(1, -1)
        return [r.ravel().tolist() for r in arr]

    def finalize_state(self):
        if self._input_vocabulary or not self._counts:
            return
        for tok in (self.mask_token, self.oov_token):
            if tok is not None:
                self._counts.pop(tok, None)
        items = sorted(self._counts.items(), key=lambda kv: (kv[1], self._sort_key(kv[0])),
                       reverse=True)
        start = self._token_start()
        if self.max_tokens:
            items = items[:max(self.max_tokens - start, 0)]
        self._vocab = [t for t, _ in items]
        if self.output_mode == "tf_idf":
            dc = np.array([self._doc_counts[t] for t in self._vocab], np.float64)
            idf = np.log(1.0 + self._num_docs / (1.0 + dc)).astype(np.float32)
            front = float(np.mean(idf)) if len(idf) else 0.0
            idf = np.pad(idf, (start, 0), constant_values=front)
            if self.pad_to_max_tokens:
                idf = np.pad(idf, (0, self.max_tokens - len(idf)))
            self._idf = idf.astype(np.float32)
        self.reset_state()

    def reset_state(self):
        self._counts = collections.Counter()
        self._doc_counts = collections.Counter()
        self._num_docs = 0

    # --- lookup ---
    def _depth(self):
        return self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()

    def _oov_bucket(self):
        n = self.num_oov_indices
        if not self._is_string and self.oov_method != "farmhash":
            return lambda t: t % n  # Python's % is floormod, as tf.math.floormod
        bucket = _bucket_fn(n, self.salt)
        return lambda t: bucket(_as_text(t))

    def _lookup(self, arr):
        """ids (int64, -1 for masked tokens outside ``"int"`` mode) of a token array,
        or tokens of an id array when inverted."""
        flat = arr.ravel().tolist()
        if self.invert:
            table = self._table(inverse=True)
            out = [table.get(int(i), self.oov_token) for i in flat]
            if self.mask_token is not None:
                out = [self.mask_token if int(i) == 0 else t for i, t in zip(flat, out)]
            res = np.empty(len(out), object if self._is_string else np.int64)
            res[:] = out
            return res.reshape(arr.shape)
        table = self._table()
        get = table.get
        out = np.fromiter((get(t, -1) for t in flat), np.int64, count=len(flat))
        is_mask = None
        if self.mask_token is not None:
            eq = arr.ravel() == self.mask_token
            is_mask = np.asarray(eq, bool) if np.shape(eq) == (len(flat),) else \
                np.zeros(len(flat), bool)
        miss = out == -1
        if is_mask is not None:
            miss &= ~is_mask
        if miss.any():
            where = np.nonzero(miss)[0]
            if self.num_oov_indices == 0:
                raise errors.InvalidArgumentError(
                    f'Layer "{self.name}": when `num_oov_indices=0` all inputs should be in '
                    f"vocabulary, found OOV values {[flat[i] for i in where[:10]]}, consider "
                    "setting `num_oov_indices=1`.")
            if self.num_oov_indices == 1:
                out[where] = self._oov_start()
            else:
                bucket = self._oov_bucket()
                out[where] = [self._oov_start() + bucket(flat[i]) for i in where]
        if is_mask is not None:
            out[is_mask] = 0 if self.output_mode == "int" else -1  # -1: dropped
        return out.reshape(arr.shape)

    def _table(self, inverse=False):
        """token -> id (or id -> token), built once per vocabulary."""
        vocab = self._vocab or ()
        cache = self.__dict__.get("_table_cache")
        if cache is None or cache[0] is not vocab or cache[1] != self._token_start():
            start = self._token_start()
            cache = (vocab, start, {t: i + start for i, t in enumerate(vocab)},
                     {i + start: t for i, t in enumerate(vocab)})
            self.__dict__["_table_cache"] = cache
        return cache[3] if inverse else cache[2]

    def _check_ready(self):
        if self.output_mode != "int" and not self.pad_to_max_tokens and self._vocab is None:
            raise RuntimeError(f"When using `output_mode={self.output_mode}` and "
                               "`pad_to_max_tokens=False`, you must set the layer's "
                               "vocabulary before calling it. Either pass a `vocabulary` "
                               "argument to the layer, or call `adapt` with some sample "
                               "data.")

    def _encode(self, ids):
        mode = "count" if self.output_mode == "tf_idf" else self.output_mode
        out = _encode_np(ids, mode, self._depth())
        if self.output_mode == "tf_idf":
            out = out * self._idf[:out.shape[-1]]
        return out

    def _forward(self, x):
        self._check_ready()
        arr = self._host_tokens(x) if not self.invert else np.asarray(x).astype(np.int64)
        scalar = arr.ndim == 0
        if scalar:
            arr = arr.reshape(1)
        ids = self._lookup(arr)
        if self.output_mode == "int":
            return ids[0] if scalar else ids
        return self._encode(ids)

    def _output_dtype(self):
        if self.invert:
            return _dtypes.string if self._is_string else _dtypes.int64
        return super()._output_dtype()

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int" or input_shape is None:
            return input_shape
        depth = self.max_tokens if self.pad_to_max_tokens else \
            (self.vocabulary_size() if self._vocab is not None else None)
        if self.output_mode == "one_hot":
            if len(input_shape) > 1 and input_shape[-1] == 1:
                return tuple(input_shape[:-1]) + (depth,)
            return tuple(input_shape) + (depth,)
        return tuple(input_shape[:-1]) + (depth,)

    def get_config(self):
        vocab = list(self._vocab) if self._vocab is not None else None
        idf = None
        if self.output_mode == "tf_idf" and self._idf is not None and vocab is not None:
            # With the OOV entries, whose idf (the mean) set_vocabulary then keeps.
            vocab = self.get_vocabulary(include_special_tokens=True)
            idf = self._idf[:len(vocab)].tolist()
        return {**super().get_config(), "invert": self.invert, "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "oov_token": self.oov_token,
                "mask_token": self.mask_token, "output_mode": self.output_mode,
                "sparse": self.sparse, "pad_to_max_tokens": self.pad_to_max_tokens,
                "vocabulary": vocab, "idf_weights": idf, "oov_method": self.oov_method,
                "salt": self.salt}


class StringLookup(_IndexLookup):
    """Maps strings to integer ids from a vocabulary (Keras 3's `StringLookup`); with
    ``invert=True``, ids back to strings. Runs on the host (see the module doc).

    Args:
      max_tokens: optional maximum vocabulary size, mask and OOV slots included.
      num_oov_indices: OOV slots (default 1); with more, an OOV token goes to slot
        ``Fingerprint64(token) % num_oov_indices``; 0: an OOV token is an error.
      mask_token: optional token mapped to 0 (``"int"`` mode) / dropped (other modes).
      oov_token: the token that OOV ids give back when inverted (default ``"[UNK]"``).
      vocabulary: list of tokens or a text file path; else call `adapt`.
      idf_weights: for ``"tf_idf"`` with a given vocabulary.
      invert: map ids to tokens.
      output_mode: ``"int"`` (int64 ids, the input's shape), ``"one_hot"``,
        ``"multi_hot"``, ``"count"``, ``"tf_idf"`` (float32 ``[..., vocabulary_size]``).
      pad_to_max_tokens: encoded outputs have `max_tokens` slots.
      sparse: must be False.
      encoding: text encoding of bytes inputs (utf-8 only).
      salt: with several OOV slots, use SipHash keyed by `salt`.

    Raises:
      ValueError / TypeError: bad arguments (as Keras 3), non-string inputs.
      InvalidArgumentError: an OOV token with ``num_oov_indices=0``.
      RuntimeError: an encoded output mode before any vocabulary is known.
    """

    _is_string = True

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 pad_to_max_tokens=False, sparse=False, encoding="utf-8", salt=None, **kwargs):
        if encoding not in ("utf-8", "utf8", "UTF-8"):
            raise ValueError(f"StringLookup supports encoding='utf-8' only. Received: "
                             f"encoding={encoding!r}")
        self.encoding = "utf-8"
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token,
                         vocabulary=vocabulary, idf_weights=idf_weights, invert=invert,
                         output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, salt=salt, **kwargs)

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("oov_method", None)
        return {**cfg, "encoding": self.encoding}


class IntegerLookup(_IndexLookup):
    """Maps integers to contiguous ids from a vocabulary (Keras 3's `IntegerLookup`);
    with ``invert=True``, ids back to the integers. Runs on the host, also inside a
    model (one host op); see the module doc.

    Args: as `StringLookup`, with integer tokens: `oov_token` default -1, `mask_token`
    default None; `oov_method` ``"floormod"`` (an OOV value v goes to slot ``v %
    num_oov_indices``, default) or ``"farmhash"`` (Fingerprint64 of its decimal text);
    `vocabulary_dtype` must be ``"int64"``.
    """

    _is_string = False

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False,
                 oov_method="floormod", salt=None, **kwargs):
        if vocabulary_dtype != "int64":
            raise ValueError("Only `vocabulary_dtype='int64'` is supported at this time. "
                             f"Received: vocabulary_dtype={vocabulary_dtype}")
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token,
                         vocabulary=vocabulary, idf_weights=idf_weights, invert=invert,
                         output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, oov_method=oov_method,
                         salt=salt, **kwargs)

    def get_config(self):
        return {**super().get_config(), "vocabulary_dtype": "int64"}
