"""Keras 3's `TextVectorization`: standardize, split, n-grams and a `StringLookup`,
on the host (see `mylib.layers.lookup` for how host layers run eagerly, in
`Dataset.map` and inside a model, and how they differ from Keras 3)."""

from __future__ import annotations

import re

import numpy as np

from mylib.core import dtypes as _dtypes
from mylib.layers.lookup import _OUTPUT_MODES, StringLookup, _as_text, _batches, \
    _HostLayer, _to_host

_PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")


class TextVectorization(_HostLayer):
    """Turns strings into token ids or token-count vectors (Keras 3's
    `TextVectorization`). Runs on the host: apply it in the input pipeline
    (``ds.map(lambda x, y: (vectorize(x), y))``) or eagerly on arrays, as Keras 3 on JAX
    requires; inside a model it is one host op.

    Steps, as Keras 3: standardize (``"lower_and_strip_punctuation"``: ASCII
    lower-casing, as TensorFlow's `strings.lower`, then removing the characters of
    ``!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'``; or ``"lower"``, ``"strip_punctuation"``,
    None, or a callable taking and returning a numpy array of str), split
    (``"whitespace"``, ``"character"``, None, or a callable from a numpy array of str
    to a list of token lists), n-grams (``ngrams=2`` -> unigrams then bigrams, joined by
    a space), then a `StringLookup` with mask token ``""`` (id 0) and one OOV id (1).

    Args:
      max_tokens: vocabulary size limit (mask and OOV included).
      standardize, split, ngrams: as above (`ngrams` an int n for 1..n, or a tuple).
      output_mode: ``"int"`` (int64 ``[batch, length]``, padded with 0),
        ``"multi_hot"``, ``"count"``, ``"tf_idf"`` (float32 ``[batch, vocabulary
        size]``); ``"one_hot"`` is accepted as in Keras.
      output_sequence_length: ``"int"`` mode: pad / truncate every row to this length
        (else rows are padded to the longest of the call).
      pad_to_max_tokens, vocabulary, idf_weights: as `StringLookup`.
      sparse, ragged: must be False (dense outputs).

    Input: strings ``[batch]`` or ``[batch, 1]`` (or one string).

    Raises:
      ValueError: bad arguments (as Keras 3), a rank-2 input whose last axis is not 1.
    """

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", **kwargs):
        kwargs.pop("vocabulary_size", None)
        kwargs.pop("has_input_vocabulary", None)
        kwargs.pop("dtype", None)
        super().__init__(**kwargs)
        if not (standardize is None or callable(standardize) or standardize in (
                "lower_and_strip_punctuation", "lower", "strip_punctuation")):
            raise ValueError("Unknown value for `standardize`: expected None, a callable "
                             "or one of ('lower_and_strip_punctuation', 'lower', "
                             f"'strip_punctuation'). Received: standardize={standardize!r}")
        if not (split is None or callable(split) or split in ("whitespace", "character")):
            raise ValueError("Unknown value for `split`: expected None, a callable or one "
                             f"of ('whitespace', 'character'). Received: split={split!r}")
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode == "tf-idf":
            output_mode = "tf_idf"
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(f"Unknown value for `output_mode`: expected one of "
                             f"{_OUTPUT_MODES}. Received: output_mode={output_mode!r}")
        if isinstance(ngrams, list):
            ngrams = tuple(ngrams)
        if not (ngrams is None or isinstance(ngrams, int) or (
                isinstance(ngrams, tuple) and all(isinstance(n, int) for n in ngrams))):
            raise ValueError("`ngrams` must be None, an integer, or a tuple of integers. "
                             f"Received: ngrams={ngrams}")
        if output_mode == "int" and not (output_sequence_length is None or
                                         isinstance(output_sequence_length, int)):
            raise ValueError("`output_sequence_length` must be either None or an integer "
                             "when `output_mode` is 'int'. Received: "
                             f"output_sequence_length={output_sequence_length}")
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError("`output_sequence_length` must not be set if `output_mode` is "
                             "not 'int'. Received output_sequence_length="
                             f"{output_sequence_length}.")
        if sparse or ragged:
            raise ValueError("TextVectorization(sparse=True / ragged=True) is not "
                             "supported: outputs are dense, padded with 0.")
        self.max_tokens, self.standardize, self.split = max_tokens, standardize, split
        self.ngrams_arg = ngrams
        self.ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self.output_mode, self.output_sequence_length = output_mode, output_sequence_length
        self.pad_to_max_tokens, self.encoding = bool(pad_to_max_tokens), "utf-8"
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, mask_token="", output_mode=output_mode,
            name=f"{self.name}_lookup")

    # --- text processing ---
    def _standardize(self, arr):
        if callable(self.standardize):
            return _to_host(self.standardize(arr))
        if self.standardize is None:
            return arr
        out = np.empty(arr.shape, object)
        flat = arr.ravel()
        lower = self.standardize in ("lower", "lower_and_strip_punctuation")
        strip = self.standardize in ("strip_punctuation", "lower_and_strip_punctuation")
        res = []
        for s in flat:
            if lower:
                s = s.translate(_ASCII_LOWER)
            if strip:
                s = _PUNCTUATION.sub("", s)
            res.append(s)
        out.ravel()[:] = res if out.size else []
        return out

    def _tokens(self, x):
        """(token lists per document, or None without splitting; the standardized
        array; whether the input was one string)."""
        arr = _to_host(x)
        if arr.dtype != object:
            raise TypeError(f'Layer "{self.name}" takes strings. Received an array of dtype '
                            f"{arr.dtype}.")
        arr = self._standardize(arr)
        if self.split is None:
            return None, arr, False
        scalar = arr.ndim == 0
        if scalar:
            arr = arr.reshape(1)
        if arr.ndim > 1:
            if arr.shape[-1] != 1 or arr.ndim > 2:
                raise ValueError("When using `TextVectorization` to tokenize strings, the "
                                 "input rank must be 1 or the last shape dimension must be "
                                 f"1. Received: inputs.shape={arr.shape} with "
                                 f"rank={arr.ndim}")
            arr = arr[:, 0]
        if callable(self.split):
            docs = [list(map(_as_text, d)) for d in self.split(arr)]
        elif self.split == "whitespace":
            docs = [[t for t in _WHITESPACE.split(s) if t] for s in arr.tolist()]
        else:
            docs = [list(s) for s in arr.tolist()]
        if self.ngrams is not None:
            docs = [[" ".join(d[i:i + n]) for n in self.ngrams for i in range(len(d) - n + 1)]
                    for d in docs]
        return docs, arr, scalar

    # --- vocabulary ---
    def adapt(self, data, batch_size=None, steps=None):
        """Builds the vocabulary from the tokens of `data` (strings: a list, array,
        `mylib.data.Dataset` of batches or iterable of batches); order as Keras 3:
        by count, ties by token, descending. `batch_size` is accepted for Keras's
        signature (arrays are read whole).

        Raises:
          ValueError: the layer was given a vocabulary.
        """
        self._lookup_layer.reset_state()
        for batch in _batches(data, steps):
            self.update_state(batch)
        self._lookup_layer.finalize_state()

    def update_state(self, data):
        docs, arr, _ = self._tokens(data)
        if docs is None:
            docs = [r.ravel().tolist() for r in np.atleast_2d(arr)]
        if docs:
            self._lookup_layer.update_state(docs)

    def finalize_state(self):
        self._lookup_layer.finalize_state()

    def reset_state(self):
        self._lookup_layer.reset_state()

    def get_vocabulary(self, include_special_tokens=True):
        """The tokens by id: ``["", "[UNK]", ...]`` in ``"int"`` mode."""
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    # --- call ---
    def _forward(self, x):
        lk = self._lookup_layer
        lk._check_ready()
        docs, arr, scalar = self._tokens(x)
        if docs is None:
            ids = lk._lookup(arr)
            if self.output_mode != "int":
                return lk._encode(ids)
            if self.output_sequence_length is not None and ids.ndim:
                ids = _pad_trim(ids, self.output_sequence_length)
            return ids
        length = self.output_sequence_length
        if length is None:
            length = max((len(d) for d in docs), default=0)
        if self.output_mode == "int":
            docs = [d[:length] for d in docs]
        else:
            length = max((len(d) for d in docs), default=0)
        # One lookup for all the tokens of the call, then scattered into the rows.
        flat = np.empty(sum(len(d) for d in docs), object)
        flat[:] = [t for d in docs for t in d]
        found = lk._lookup(flat)
        fill = 0 if self.output_mode == "int" else -1  # padding; -1: no slot
        ids = np.full((len(docs), length), fill, np.int64)
        rows = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
        cols = np.concatenate([np.arange(len(d)) for d in docs]) if docs else \
            np.zeros(0, np.int64)
        ids[rows, cols] = found
        out = ids if self.output_mode == "int" else lk._encode(ids)
        return out[0] if scalar else out

    def _output_dtype(self):
        return _dtypes.int64 if self.output_mode == "int" else _dtypes.float32

    def compute_output_shape(self, input_shape):
        batch = input_shape[0] if input_shape else None
        if self.output_mode == "int":
            if self.split is None:
                return input_shape
            return (batch, self.output_sequence_length)
        depth = self.max_tokens if self.pad_to_max_tokens else (
            self.vocabulary_size() if self._lookup_layer._vocab is not None else None)
        return (batch, depth)

    def get_config(self):
        lk = self._lookup_layer.get_config()
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "standardize": self.standardize, "split": self.split, "ngrams": self.ngrams_arg,
                "output_mode": self.output_mode,
                "output_sequence_length": self.output_sequence_length,
                "pad_to_max_tokens": self.pad_to_max_tokens, "sparse": False, "ragged": False,
                "vocabulary": lk["vocabulary"], "idf_weights": lk["idf_weights"],
                "encoding": self.encoding}


def _pad_trim(ids, length):
    ids = ids[..., :length]
    pad = length - ids.shape[-1]
    if pad > 0:
        ids = np.pad(ids, [(0, 0)] * (ids.ndim - 1) + [(0, pad)])
    return ids
