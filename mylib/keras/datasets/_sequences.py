"""The shared post-processing of Keras's imdb / reuters loaders (word-index sequences in
an ``.npz``): start / OOV markers, index offset, `maxlen`, `num_words`, `skip_top`, in
Keras 3's order."""

import numpy as np


def mark(xs, start_char, index_from):
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in xs]
    if index_from:
        return [[w + index_from for w in x] for x in xs]
    return [list(x) for x in xs]


def remove_long(maxlen, xs, labels):
    keep = [i for i, x in enumerate(xs) if len(x) < maxlen]
    return [xs[i] for i in keep], np.asarray(labels)[keep]


def limit_words(xs, num_words, skip_top, oov_char):
    if not num_words:
        num_words = max(max(x) for x in xs if len(x)) if xs else 0
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def as_object_array(seqs):
    out = np.empty(len(seqs), dtype=object)
    out[:] = [list(s) for s in seqs]
    return out
