"""`ml.flags` / `ml.app.flags`: TensorFlow 1's command-line flags, which are absl-py's.

``FLAGS`` is absl's global `FlagValues` behind TensorFlow 1's wrapper: reading a flag
before the flags are parsed parses ``sys.argv`` first, ignoring flags nobody defined
(so a program that never calls `ml.app.run` still sees its command line). The
``DEFINE_*`` functions are absl's own.

Example::

    flags = ml.app.flags
    flags.DEFINE_integer("steps", 100, "Training steps.")
    FLAGS = flags.FLAGS
    def main(_):
        print(FLAGS.steps)
    ml.app.run()
"""

from __future__ import annotations

import sys as _sys

from absl import flags as _flags

__all__ = ["FLAGS", "DEFINE", "DEFINE_string", "DEFINE_integer", "DEFINE_float",
           "DEFINE_boolean", "DEFINE_bool", "DEFINE_enum", "DEFINE_enum_class",
           "DEFINE_list", "DEFINE_spaceseplist", "DEFINE_multi_string",
           "DEFINE_multi_integer", "DEFINE_multi_float", "DEFINE_multi_enum",
           "DEFINE_alias", "FlagValues", "Flag", "Error", "IllegalFlagValueError",
           "UnrecognizedFlagError", "mark_flag_as_required", "mark_flags_as_required",
           "mark_flags_as_mutual_exclusive", "register_validator", "flag_dict_to_args"]

DEFINE = _flags.DEFINE
DEFINE_string = _flags.DEFINE_string
DEFINE_integer = _flags.DEFINE_integer
DEFINE_float = _flags.DEFINE_float
DEFINE_boolean = _flags.DEFINE_boolean
DEFINE_bool = _flags.DEFINE_bool
DEFINE_enum = _flags.DEFINE_enum
DEFINE_enum_class = _flags.DEFINE_enum_class
DEFINE_list = _flags.DEFINE_list
DEFINE_spaceseplist = _flags.DEFINE_spaceseplist
DEFINE_multi_string = _flags.DEFINE_multi_string
DEFINE_multi_integer = _flags.DEFINE_multi_integer
DEFINE_multi_float = _flags.DEFINE_multi_float
DEFINE_multi_enum = _flags.DEFINE_multi_enum
DEFINE_alias = _flags.DEFINE_alias
FlagValues = _flags.FlagValues
Flag = _flags.Flag
Error = _flags.Error
IllegalFlagValueError = _flags.IllegalFlagValueError
UnrecognizedFlagError = _flags.UnrecognizedFlagError
mark_flag_as_required = _flags.mark_flag_as_required
mark_flags_as_required = _flags.mark_flags_as_required
mark_flags_as_mutual_exclusive = _flags.mark_flags_as_mutual_exclusive
register_validator = _flags.register_validator
flag_dict_to_args = _flags.flag_dict_to_args


class _FlagValuesWrapper:
    """absl's `FLAGS`, parsing ``sys.argv`` (known flags only) on the first read of an
    undefined attribute before parsing, as TensorFlow 1's ``tf.flags.FLAGS``."""

    def __init__(self, flags_object):
        self.__dict__["_wrapped"] = flags_object

    def __getattribute__(self, name):
        if name == "__dict__":
            return super().__getattribute__(name)
        if name in ("_parse_flags", "__flags"):
            return super().__getattribute__("_tf14_" + name.strip("_"))
        return self.__dict__["_wrapped"].__getattribute__(name)

    # TensorFlow <= 1.4 programs call ``FLAGS._parse_flags()`` and read ``FLAGS.__flags``
    # (a dict of flag name -> value).
    def _tf14_parse_flags(self, args=None):
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed():
            wrapped(_sys.argv if args is None else [_sys.argv[0], *args], known_only=True)

    @property
    def _tf14_flags(self):
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed():
            wrapped(_sys.argv, known_only=True)
        return wrapped.flag_values_dict()

    def __getattr__(self, name):
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed():
            wrapped(_sys.argv, known_only=True)
        return wrapped.__getattr__(name)

    def __setattr__(self, name, value):
        return self.__dict__["_wrapped"].__setattr__(name, value)

    def __delattr__(self, name):
        return self.__dict__["_wrapped"].__delattr__(name)

    def __dir__(self):
        return self.__dict__["_wrapped"].__dir__()

    def __getitem__(self, name):
        return self.__dict__["_wrapped"].__getitem__(name)

    def __setitem__(self, name, flag):
        return self.__dict__["_wrapped"].__setitem__(name, flag)

    def __len__(self):
        return self.__dict__["_wrapped"].__len__()

    def __iter__(self):
        return self.__dict__["_wrapped"].__iter__()

    def __str__(self):
        return self.__dict__["_wrapped"].__str__()

    def __call__(self, *args, **kwargs):
        return self.__dict__["_wrapped"].__call__(*args, **kwargs)

    def __contains__(self, name):
        return self.__dict__["_wrapped"].__contains__(name)


FLAGS = _FlagValuesWrapper(_flags.FLAGS)
