"""`ml.compat.v1.data`: `ml.data` plus TensorFlow 1's iterator functions."""

from __future__ import annotations

from mylib.data.iterator_ops import (Iterator, get_output_classes,  # noqa: F401
                                     get_output_shapes, get_output_types,
                                     make_initializable_iterator, make_one_shot_iterator)


def __getattr__(name):
    import mylib.data

    try:
        return getattr(mylib.data, name)
    except AttributeError:
        raise AttributeError(f"module 'mylib.compat.v1.data' has no attribute {name!r} "
                             "(nor has mylib.data)") from None
