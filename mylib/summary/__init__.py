"""`ml.summary`: TensorBoard summaries, as TensorFlow 1's ``tf.summary``.

Summary ops (`scalar`, `histogram`, `image`, `text`, `merge`, `merge_all`) are host
ops producing serialized `Summary` protos; `FileWriter` writes them, the graph and run
metadata to an event file through tensorboardX.
"""

from mylib.summary.summary_ops import (histogram, image, merge, merge_all,  # noqa: F401
                                       scalar, text)
from mylib.summary.writer import FileWriter, FileWriterCache, run_metadata_proto  # noqa: F401

__all__ = ["scalar", "histogram", "image", "text", "merge", "merge_all", "FileWriter",
           "FileWriterCache", "run_metadata_proto"]
