"""The version of mylib (one place; `mylib.__version__` and saved files read it)."""

__version__ = "0.1.0"
