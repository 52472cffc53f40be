"""`ml.version` (TensorFlow's `tf.version`): `VERSION` is mylib's own version string
(``mylib.__version__``, from `mylib/_version.py`), not a TensorFlow version. A program
that branches on ``tf.VERSION.startswith("1.")`` or compares it with ``"1.15"`` sees
mylib's version ("0.x") and may take its TensorFlow-0.x branch: compare with
`mylib.__version__` knowingly, or test for the feature (``hasattr(tf, "roll")``)."""

from mylib._version import __version__ as VERSION  # noqa: N811 - TensorFlow's name

__all__ = ["VERSION"]
