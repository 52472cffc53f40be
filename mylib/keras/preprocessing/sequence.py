"""`keras.preprocessing.sequence.pad_sequences`."""

from mylib.keras.utils.sequences import pad_sequences  # noqa: F401

__all__ = ["pad_sequences"]
