"""`tf.contrib.layers`: the initializers and regularizers TF1 programs take from it.

`l1_regularizer(scale)` is ``scale * sum(|w|)``; `l2_regularizer(scale)` is
``scale * sum(w ** 2) / 2`` (TF1's, built on `tf.nn.l2_loss`, unlike Keras's `l2`, which
has no ``/ 2``); `sum_regularizer` adds several. Layers (`fully_connected`, ...) are
`tf.layers`' functions: see the AttributeError for the name to use.
"""

from mylib.core.init_ops import contrib_variance_scaling_initializer as \
    variance_scaling_initializer  # noqa: F401
from mylib.core.init_ops import xavier_initializer  # noqa: F401
from mylib.core.ops import math_ops, nn_ops, reduction_ops

__all__ = ["xavier_initializer", "xavier_initializer_conv2d", "variance_scaling_initializer",
           "l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer"]

xavier_initializer_conv2d = xavier_initializer


def _check_scale(scale, who):
    if isinstance(scale, (int, float)) and scale < 0:
        raise ValueError(f"{who}: setting a scale less than 0 on a regularizer: {scale}")


def l1_regularizer(scale, scope=None):
    """``fn(weights) -> scale * sum(|weights|)`` (None for scale 0, as TF1)."""
    _check_scale(scale, "l1_regularizer")

    def l1(weights):
        if scale == 0:
            return None
        return math_ops.multiply(scale, reduction_ops.reduce_sum(math_ops.abs(weights)),
                                 name="l1_regularizer")

    return l1


def l2_regularizer(scale, scope=None):
    """``fn(weights) -> scale * sum(weights ** 2) / 2`` (None for scale 0, as TF1)."""
    _check_scale(scale, "l2_regularizer")

    def l2(weights):
        if scale == 0:
            return None
        return math_ops.multiply(scale, nn_ops.l2_loss(weights), name="l2_regularizer")

    return l2


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of `l1_regularizer(scale_l1)` and `l2_regularizer(scale_l2)`."""
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)])


def sum_regularizer(regularizer_list, scope=None):
    """``fn(weights)``: the sum of the non-None results of `regularizer_list`."""
    def fn(weights):
        terms = [t for t in (r(weights) for r in regularizer_list) if t is not None]
        return math_ops.add_n(terms) if terms else None

    return fn


_INSTEAD = {"fully_connected": "tf.layers.dense", "conv2d": "tf.layers.conv2d",
            "max_pool2d": "tf.layers.max_pooling2d", "flatten": "tf.layers.flatten",
            "batch_norm": "tf.layers.batch_normalization", "dropout": "tf.layers.dropout",
            "embed_sequence": "tf.get_variable + tf.nn.embedding_lookup"}


def __getattr__(name):
    if name in _INSTEAD:
        raise AttributeError(f"mylib.contrib.layers has no {name}; use {_INSTEAD[name]} "
                             "(note the argument names) instead.")
    raise AttributeError(f"module 'mylib.contrib.layers' has no attribute '{name}'")
