"""`ml.strings`: TensorFlow's ``tf.strings``: string ops, run on the host (XLA has no
strings; see `mylib.core.ops.string_ops`). Strings are `bytes`."""

from mylib.core.ops.string_ops import as_string, reduce_join, regex_full_match, substr
from mylib.core.ops.string_ops import regex_replace
from mylib.core.ops.string_ops import string_join as join
from mylib.core.ops.string_ops import string_length as length
from mylib.core.ops.string_ops import string_lower as lower
from mylib.core.ops.string_ops import string_strip as strip
from mylib.core.ops.string_ops import string_to_number as to_number
from mylib.core.ops.string_ops import string_upper as upper

__all__ = ["as_string", "join", "length", "lower", "reduce_join", "regex_full_match",
           "regex_replace", "strip", "substr", "to_number", "upper"]
