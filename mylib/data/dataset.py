"""`Dataset`: a re-iterable pipeline of elements, each a numpy structure (an array, or a
tuple/list/dict of them), built by chaining transformations as `tf.data` does.

Everything runs on the host, in Python and numpy: the compiled training step is fed
ready batches, and `prefetch` overlaps producing the next ones (on a background thread)
with the device running the current step. Iterating a dataset twice gives two
independent passes (`shuffle` reshuffles each pass unless told not to).

Example::

    ds = (ml.data.Dataset.from_tensor_slices((x, y))
          .shuffle(1024, seed=0).batch(32).prefetch(2))
    model.fit(ds, epochs=3)
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import os
import queue
import threading

import numpy as np
from mylib import config as _config
from mylib.data import _file_cache as fc

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


# ------------------------------------------------------------ structures
def _map_structure(fn, s):
    if isinstance(s, dict):
        return {k: _map_structure(fn, v) for k, v in s.items()}
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return type(s)(*[_map_structure(fn, v) for v in s])
    if isinstance(s, (tuple, list)):
        return type(s)(_map_structure(fn, v) for v in s)
    return fn(s)


def _flatten(s):
    if isinstance(s, dict):
        return [x for k in sorted(s) for x in _flatten(s[k])]
    if isinstance(s, (tuple, list)):
        return [x for v in s for x in _flatten(v)]
    return [s]


def _pack(structure, flat):
    it = iter(flat)

    def build(s):
        if isinstance(s, dict):
            vals = {k: build(s[k]) for k in sorted(s)}
            return {k: vals[k] for k in s}
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[build(v) for v in s])
        if isinstance(s, (tuple, list)):
            return type(s)(build(v) for v in s)
        return next(it)

    return build(structure)


class TensorSpec:
    """Shape and dtype of one component of a dataset element (`None` dims unknown)."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = None if shape is None else tuple(None if d is None else int(d)
                                                      for d in shape)
        self.dtype = np.dtype(getattr(dtype, "np", dtype))
        self.name = name

    def is_compatible_with(self, arr):
        a = np.asarray(arr)
        if self.shape is None:
            return True
        return a.ndim == len(self.shape) and all(
            d is None or d == s for d, s in zip(self.shape, a.shape))

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype) == (other.shape,
                                                                              other.dtype)

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name})"


def _spec_of(x):
    a = np.asarray(x)
    return TensorSpec(a.shape, a.dtype)


def _as_spec(s):
    if isinstance(s, TensorSpec):
        return s
    shape = getattr(s, "shape", None)
    if shape is not None and hasattr(shape, "as_list"):
        shape = shape.as_list() if shape.rank is not None else None
    return TensorSpec(shape, getattr(s, "dtype", "float32"))


def _to_numpy(x):
    a = np.asarray(x)
    if a.dtype == np.float64:
        a = a.astype(np.float32)  # floatx, as Keras
    return a


# ------------------------------------------------------------ Dataset
class Dataset:
    """A re-iterable sequence of elements (numpy structures). Build one with
    `from_tensor_slices` or `from_generator`, then chain transformations; iterate it
    with ``for element in ds`` (each pass starts from the beginning)."""

    def __init__(self, make_iter, element_spec=None, cardinality=UNKNOWN_CARDINALITY):
        self._make_iter = make_iter
        self._element_spec = element_spec
        self._cardinality = cardinality

    # --- sources ---
    @staticmethod
    def from_tensor_slices(tensors):
        """Elements are the slices of `tensors` (a structure of arrays) along axis 0.

        Raises:
          ValueError: if the arrays' first dimensions differ.
        """
        arrays = _map_structure(_to_numpy, tensors)
        flat = _flatten(arrays)
        if not flat or any(a.ndim == 0 for a in flat):
            raise ValueError("from_tensor_slices needs arrays with at least one dimension.")
        sizes = {a.shape[0] for a in flat}
        if len(sizes) > 1:
            raise ValueError("Dimensions of the components of `from_tensor_slices` must "
                             f"match in axis 0; received sizes {[a.shape[0] for a in flat]}.")
        n = flat[0].shape[0]

        def gen():
            for i in range(n):
                yield _pack(arrays, [a[i] for a in flat])

        spec = _map_structure(lambda a: TensorSpec(a.shape[1:], a.dtype), arrays)
        ds = Dataset(gen, spec, n)
        ds._slices = (arrays, flat, n)  # lets batch() slice instead of stacking rows
        return ds

    @staticmethod
    def from_generator(generator, output_signature=None, output_types=None,
                       output_shapes=None, args=None):
        """Elements from ``generator(*args)`` (a callable returning an iterator, called
        once per pass), converted to numpy and checked against `output_signature` (a
        structure of `TensorSpec`s; or `output_types`/`output_shapes`).

        Raises:
          TypeError: `generator` is not callable.
          ValueError (while iterating): an element does not match the signature.
        """
        if not callable(generator):
            raise TypeError("`generator` must be a callable that returns an iterator "
                            f"(e.g. a generator function). Received: {generator!r}")
        if output_signature is None and output_types is not None:
            shapes = output_shapes if output_shapes is not None else _map_structure(
                lambda _: None, output_types)
            flat_t, flat_s = _flatten(output_types), _flatten(shapes)
            output_signature = _pack(output_types, [TensorSpec(s, t) for t, s in
                                                    zip(flat_t, flat_s)])
        spec = None if output_signature is None else _map_structure(_as_spec, output_signature)
        flat_spec = None if spec is None else _flatten(spec)
        args = tuple(args or ())

        def gen():
            for el in generator(*args):
                if flat_spec is None:
                    yield _map_structure(_to_numpy, el)
                    continue
                flat = _flatten(el) if not (len(flat_spec) == 1 and not isinstance(
                    el, (tuple, list, dict))) else [el]
                if len(flat) != len(flat_spec):
                    raise ValueError(f"`from_generator`: the generator yielded an element "
                                     f"with {len(flat)} components; output_signature has "
                                     f"{len(flat_spec)}: {spec}.")
                out = []
                for v, s in zip(flat, flat_spec):
                    a = np.asarray(v, dtype=s.dtype)
                    if not s.is_compatible_with(a):
                        raise ValueError(f"`from_generator`: the generator yielded an element "
                                         f"of shape {a.shape} where the output_signature "
                                         f"expects {s}.")
                    out.append(a)
                yield _pack(spec, out)

        return Dataset(gen, spec)

    @staticmethod
    def range(*args):
        """Elements ``np.int64`` from `range(*args)`."""
        r = range(*args)
        return Dataset(lambda: (np.int64(i) for i in r), TensorSpec((), np.int64), len(r))

    # --- properties ---
    @property
    def element_spec(self):
        """The structure of `TensorSpec`s of one element (peeks at the first element when
        the pipeline cannot tell)."""
        if self._element_spec is None:
            it = iter(self)
            try:
                first = next(it)
            except StopIteration:
                return None
            finally:
                close = getattr(it, "close", None)
                if close is not None:
                    close()
            self._element_spec = _map_structure(_spec_of, first)
        return self._element_spec

    def cardinality(self):
        """The number of elements; `INFINITE_CARDINALITY` (-1) or `UNKNOWN_CARDINALITY`
        (-2) when not known without iterating."""
        return self._cardinality

    def __len__(self):
        if self._cardinality < 0:
            raise TypeError("The dataset length is " + (
                "infinite." if self._cardinality == INFINITE_CARDINALITY else "unknown."))
        return self._cardinality

    def __iter__(self):
        return iter(self._make_iter())

    def as_numpy_iterator(self):
        return iter(self)

    def __repr__(self):
        return f"<Dataset element_spec={self._element_spec} cardinality={self._cardinality}>"

    # --- transformations ---
    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        """Applies ``map_func`` to each element (tuples are unpacked into arguments, as
        tf.data). With `num_parallel_calls` (> 1, or `AUTOTUNE`) up to that many calls
        run at once on a thread pool; the output order is always the input order."""
        src = self
        par = num_parallel_calls
        if par == AUTOTUNE:
            par = os.cpu_count() or 4
        par = int(par or 1)

        def call(el):
            out = map_func(*el) if isinstance(el, tuple) and not hasattr(el, "_fields") \
                else map_func(el)
            return _map_structure(_to_numpy, out)

        def gen_serial():
            for el in src:
                yield call(el)

        def gen_parallel():
            pool = concurrent.futures.ThreadPoolExecutor(par, thread_name_prefix="ml-data-map")
            pending = collections.deque()
            try:
                for el in src:
                    pending.append(pool.submit(call, el))
                    if len(pending) >= 2 * par:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for f in pending:
                    f.cancel()
                pool.shutdown(wait=False)

        return Dataset(gen_parallel if par > 1 else gen_serial, None, self._cardinality)

    def filter(self, predicate):
        """Keeps the elements for which ``predicate(*element)`` is true."""
        src = self

        def gen():
            for el in src:
                keep = predicate(*el) if isinstance(el, tuple) else predicate(el)
                if bool(np.asarray(keep)):
                    yield el

        return Dataset(gen, self._element_spec)

    def batch(self, batch_size, drop_remainder=False):
        """Stacks `batch_size` consecutive elements into one (a short last batch unless
        `drop_remainder`)."""
        batch_size = int(batch_size)
        if batch_size <= 0:
            raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
        src = self
        sl = getattr(self, "_slices", None)

        if sl is not None:
            arrays, flat, n = sl

            def gen():
                stop = n - n % batch_size if drop_remainder else n
                for lo in range(0, stop, batch_size):
                    yield _pack(arrays, [a[lo:lo + batch_size] for a in flat])
        else:
            def gen():
                buf = []
                for el in src:
                    buf.append(el)
                    if len(buf) == batch_size:
                        yield _stack(buf)
                        buf = []
                if buf and not drop_remainder:
                    yield _stack(buf)

        card = self._cardinality
        if card >= 0:
            card = card // batch_size if drop_remainder else -(-card // batch_size)
        spec = None
        if self._element_spec is not None:
            spec = _map_structure(lambda s: TensorSpec(
                None if s.shape is None else (batch_size if drop_remainder else None,) + s.shape,
                s.dtype), self._element_spec)
        return Dataset(gen, spec, card)

    def unbatch(self):
        """Splits each element along its first axis."""
        src = self

        def gen():
            for el in src:
                flat = _flatten(el)
                for i in range(len(flat[0])):
                    yield _pack(el, [a[i] for a in flat])

        return Dataset(gen)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        """Randomly shuffles the elements with a buffer of `buffer_size` (a full
        shuffle when it is at least the dataset size), as tf.data: each output is drawn
        uniformly from the buffer, which is refilled from the input.

        Args:
          seed: fixes the order; otherwise the global seed (`ml.utils.set_random_seed`)
            or fresh entropy.
          reshuffle_each_iteration: a different order for each pass (each epoch).
        """

        buffer_size = int(buffer_size)
        if buffer_size <= 0:
            raise ValueError(f"`buffer_size` must be positive. Received: {buffer_size}")
        src = self
        if seed is None:
            seed = _config.next_seed()
        base = np.random.SeedSequence(seed).entropy if seed is not None else \
            np.random.SeedSequence().entropy
        passes = itertools.count()

        def gen():
            k = next(passes) if reshuffle_each_iteration else 0
            rng = np.random.default_rng([base % (2 ** 63), k])
            buf = []
            for el in src:
                if len(buf) < buffer_size:
                    buf.append(el)
                    continue
                i = rng.integers(len(buf))
                out, buf[i] = buf[i], el
                yield out
            while buf:
                i = rng.integers(len(buf))
                buf[i], buf[-1] = buf[-1], buf[i]
                yield buf.pop()

        return Dataset(gen, self._element_spec, self._cardinality)

    def repeat(self, count=None):
        """Repeats the dataset `count` times (forever when None or -1)."""
        src = self
        forever = count is None or count < 0

        def gen():
            for _ in (itertools.count() if forever else range(int(count))):
                empty = True
                for el in src:
                    empty = False
                    yield el
                if empty:
                    return

        card = self._cardinality
        if forever:
            card = 0 if card == 0 else INFINITE_CARDINALITY
        elif card >= 0:
            card = card * int(count)
        return Dataset(gen, self._element_spec, card)

    def take(self, count):
        """The first `count` elements (all of them when `count` is -1)."""
        count = int(count)
        src = self

        def gen():
            it = iter(src)
            try:
                for el in (it if count < 0 else itertools.islice(it, count)):
                    yield el
            finally:
                close = getattr(it, "close", None)
                if close is not None:
                    close()

        card = self._cardinality
        if count >= 0:
            card = count if card == INFINITE_CARDINALITY else (
                min(card, count) if card >= 0 else UNKNOWN_CARDINALITY)
        return Dataset(gen, self._element_spec, card)

    def skip(self, count):
        """All but the first `count` elements."""
        count = int(count)
        src = self

        def gen():
            return itertools.islice(iter(src), max(count, 0), None)

        card = self._cardinality
        if card >= 0:
            card = max(card - count, 0)
        return Dataset(gen, self._element_spec, card)

    def cache(self, filename=""):
        """Caches the elements of the first complete pass, as `tf.data`'s `cache`: later
        passes replay them without running the upstream pipeline.

        Args:
          filename: "" keeps the elements in memory, in this `Dataset` object. A path
            prefix stores them on disk instead: the first complete pass writes
            ``<filename>.cache-data-<token>`` (the components of each element in numpy
            ``.npy`` format, no pickle) and ``<filename>.cache-index.json``; from then on
            every pass, of this dataset or of any dataset (in any process) cached to the
            same `filename`, reads the files instead of running the upstream pipeline.
            The files are not matched against the pipeline (as in TensorFlow): delete
            them when the pipeline changes.

        A pass that stops early (``take``, ``break``, an error) keeps nothing: in memory
        the elements are dropped; on disk the data goes to a temporary file that is
        only renamed, and the index written, when the upstream pipeline ends, so a
        partial cache is never read. Elements may be arrays, numpy scalars, or
        tuples / lists / dicts / namedtuples of them (a namedtuple read in another
        process is rebuilt as a namedtuple of the same name and fields).

        Returns:
          A `Dataset` with this one's element spec and cardinality.
        Raises:
          TypeError: (when writing) a component of object dtype, or a dict key that is
            not a str or int.
          ValueError: (when writing) elements of differing structure.
          DataLossError: (when reading) an index that is not mylib's, or a data file
            missing, truncated or changed since it was written.
        """
        src = self
        if filename:
            return self._file_cache(os.fspath(filename))
        store = []

        def gen():
            if store:
                yield from store[0]
                return
            seen = []
            for el in src:
                seen.append(el)
                yield el
            if not store:
                store.append(seen)

        return Dataset(gen, self._element_spec, self._cardinality)

    def _file_cache(self, prefix):

        src = self
        first = []  # an element seen here: its types (namedtuples) rebuild later ones

        def gen():
            index = fc.read_index(prefix)
            if index is not None:
                template = first[0] if first and fc.encode_structure(
                    first[0], []) == index["structure"] else None
                yield from fc.read_elements(index, _pack, template)
                return
            writer = fc.Writer(prefix)
            done = False
            try:
                for el in src:
                    writer.write(el, _flatten)
                    if not first:
                        first.append(el)
                    yield el
                writer.commit()
                done = True
            finally:
                if not done:
                    writer.abort(partial=True)

        return Dataset(gen, self._element_spec, self._cardinality)

    def prefetch(self, buffer_size=AUTOTUNE):
        """Produces up to `buffer_size` elements ahead on a background thread, so the
        pipeline's work overlaps the consumer's (the training step). Errors raised
        upstream are re-raised in the consumer, in order."""
        n = 2 if buffer_size in (None, AUTOTUNE) else max(int(buffer_size), 1)
        src = self
        return Dataset(lambda: _PrefetchIterator(src, n), self._element_spec, self._cardinality)

    def apply(self, transformation_func):
        return transformation_func(self)


def _stack(elements):
    first = elements[0]
    flats = [_flatten(e) for e in elements]
    return _pack(first, [np.stack([f[i] for f in flats]) for i in range(len(flats[0]))])


_END = object()


class _PrefetchIterator:
    """Runs the upstream iterator on a daemon thread into a bounded queue. Closing the
    iterator (or dropping it) stops the thread at its next put."""

    def __init__(self, src, n):
        self._q = queue.Queue(maxsize=n)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._work, args=(src,), daemon=True,
                                        name="ml-data-prefetch")
        self._thread.start()

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work(self, src):
        it = None
        try:
            it = iter(src)
            for el in it:
                if not self._put((True, el)):
                    return
            self._put((True, _END))
        except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
            self._put((False, e))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # noqa: BLE001
                    pass

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        ok, item = self._q.get()
        if not ok:
            self._done = True
            raise item
        if item is _END:
            self._done = True
            raise StopIteration
        return item

    def close(self):
        self._done = True
        self._stop.set()

    def __del__(self):
        self._stop.set()
