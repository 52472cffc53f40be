"""`ml.data`: input pipelines of numpy structures (TensorFlow's `tf.data` API, on the
host): `Dataset.from_tensor_slices`, `from_generator`, `map`, `batch`, `shuffle`,
`repeat`, `prefetch`, `take`, `skip`, `cache`. `Model.fit`/`evaluate`/`predict` take a
`Dataset` of ``(x, y)`` or ``(x, y, sample_weight)`` batches."""

from mylib.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]
