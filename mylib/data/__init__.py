"""`ml.data`: input pipelines of numpy structures (TensorFlow's `tf.data` API, on the
host): `Dataset.from_tensor_slices`, `from_generator`, `range`, `zip`, `map`, `filter`,
`batch`, `padded_batch`, `shuffle`, `repeat`, `prefetch`, `take`, `skip`, `cache`,
`flat_map`, `interleave`; `TextLineDataset` reads text files line by line. `Model.fit`/`evaluate`/`predict` take a `Dataset` of
``(x, y)`` or ``(x, y, sample_weight)`` batches; TensorFlow 1 graph programs read one
through an `Iterator` (`make_one_shot_iterator`, `make_initializable_iterator`,
`Iterator.from_structure`, `get_next`)."""

from mylib.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset
from mylib.data.iterator_ops import Iterator
from mylib.data.readers import TextLineDataset

__all__ = ["Dataset", "Iterator", "TextLineDataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]
