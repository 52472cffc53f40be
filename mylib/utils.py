"""`ml.utils`: Keras-style utilities."""

from mylib.config import set_random_seed

__all__ = ["set_random_seed"]
