"""Error classes with TensorFlow's names.

Every error about an op carries the `Operation` (``error.op``) and quotes the user's
source line that created it, so a failure points at the model code, not at mylib.
"""

from __future__ import annotations


class OpError(Exception):
    """Base class of mylib runtime errors.

    Attributes:
      op: the `Operation` the error is about, or None.
      message: the message without the creation-line suffix.
    """

    error_code = 2

    def __init__(self, message, op=None, show_inputs=False):
        self.message = message
        self.op = op
        super().__init__(_format(message, op, show_inputs))

    def __reduce__(self):
        return (_rebuild, (type(self), str(self)))


def _rebuild(cls, text):
    e = cls.__new__(cls)
    Exception.__init__(e, text)
    e.message, e.op = text, None
    return e


def _format(message, op, show_inputs):
    if op is None:
        return message
    lines = [f"{op.type} '{op.name}': {message}"]
    if show_inputs:
        for i, t in enumerate(op.inputs):
            lines.append(f"  input {i} = '{t.name}'  {t.dtype.name} {t.shape}")
    tb = getattr(op, "traceback", None)
    if tb:
        lines.append(f"  created at {tb}")
    return "\n".join(lines)


class CancelledError(OpError):
    error_code = 1


class UnknownError(OpError):
    error_code = 2


class InvalidArgumentError(OpError, ValueError):
    error_code = 3


class DeadlineExceededError(OpError):
    error_code = 4


class NotFoundError(OpError, KeyError):
    error_code = 5

    def __str__(self):  # KeyError would repr() the message
        return Exception.__str__(self)


class AlreadyExistsError(OpError):
    error_code = 6


class PermissionDeniedError(OpError):
    error_code = 7


class ResourceExhaustedError(OpError):
    error_code = 8


class FailedPreconditionError(OpError):
    error_code = 9


class AbortedError(OpError):
    error_code = 10


class OutOfRangeError(OpError):
    error_code = 11


class UnimplementedError(OpError, NotImplementedError):
    error_code = 12


class InternalError(OpError):
    error_code = 13


class UnavailableError(OpError):
    error_code = 14


class DataLossError(OpError):
    error_code = 15


__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError",
    "PermissionDeniedError", "ResourceExhaustedError", "FailedPreconditionError",
    "AbortedError", "OutOfRangeError", "UnimplementedError", "InternalError",
    "UnavailableError", "DataLossError",
]
