"""`ml.debugging`: checks that run inside a step (TensorFlow's ``tf.debugging``):
`check_numerics` and `assert_*`. A failing check raises `InvalidArgumentError` naming
the op and the user's line that created it."""

from mylib.core.ops.check_ops import (Assert, assert_equal, assert_greater,  # noqa: F401
                                      assert_greater_equal, assert_less, assert_less_equal,
                                      assert_negative, assert_non_negative,
                                      assert_non_positive, assert_none_equal,
                                      assert_positive, assert_rank, assert_type,
                                      check_numerics)
