"""`keras.preprocessing` (Keras 3's legacy home of `sequence.pad_sequences`)."""

from mylib.keras.preprocessing import sequence  # noqa: F401

__all__ = ["sequence"]
