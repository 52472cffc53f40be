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


def _is_tensor(x):
    from mylib.core.graph import Tensor

    return isinstance(x, Tensor)


def _as_graph_or_array(x):
    """Graph tensors (and variables) stay symbolic; everything else becomes numpy."""
    if _is_tensor(x):
        return x
    if hasattr(x, "_as_tensor") and not isinstance(x, np.ndarray):
        from mylib.core.op_registry import convert_to_tensor

        return convert_to_tensor(x)
    return _to_numpy(x)


def _tensors_in(struct):
    out = []
    for x in _flatten(struct) if isinstance(struct, (dict, list, tuple)) else [struct]:
        if _is_tensor(x) and x not in out:
            out.append(x)
    return out


def _merge_captures(*groups):
    out = []
    for g in groups:
        for t in g:
            if t not in out:
                out.append(t)
    return tuple(out)


def _rank(a):
    if _is_tensor(a):
        return a.shape.rank
    return a.ndim


def _static_shape(a):
    if _is_tensor(a):
        return None if a.shape.rank is None else tuple(a.shape.as_list())
    return a.shape


def _np_dtype(a):
    return a.dtype.np if _is_tensor(a) else a.dtype


def _val(x, env):
    """The value of a transformation argument: a graph tensor's from `env`."""
    if _is_tensor(x):
        if x not in env:
            raise ValueError(f"the value of '{x.name}' is not available here")
        return np.asarray(env[x]).item()
    return x


def _slices_of(arrays, flat):
    sizes = {a.shape[0] for a in flat}
    if len(sizes) > 1:
        raise ValueError("Dimensions of the components of `from_tensor_slices` must "
                         f"match in axis 0; received sizes {[a.shape[0] for a in flat]}.")
    return arrays, flat, flat[0].shape[0]


# ------------------------------------------------------------ Dataset
class Dataset:
    """A re-iterable sequence of elements (numpy structures). Build one with
    `from_tensor_slices` or `from_generator`, then chain transformations; iterate it
    with ``for element in ds`` (each pass starts from the beginning)."""

    def __init__(self, make_iter, element_spec=None, cardinality=UNKNOWN_CARDINALITY,
                 captures=(), parents=()):
        # make_iter(env) -> iterator; `env` maps the graph tensors the pipeline depends
        # on (its captures: placeholders, tensor arguments, tensors a graph-mode map
        # function uses) to their values in one run of an iterator's initializer. A
        # dataset without captures gets an empty env.
        self._make_iter = make_iter
        self._element_spec = element_spec
        self._cardinality = cardinality
        self._captures = tuple(captures)
        self._parents = tuple(parents)
        self._fn = None  # a graph-or-numpy function (map, filter, flat_map ...)
        self._spec_fn = None  # computes the element spec without running the pipeline

    def _iter(self, env):
        return iter(self._make_iter(env))

    def _derive(self, make_iter, element_spec=None, cardinality=UNKNOWN_CARDINALITY,
                extra=(), parents=None):
        """A dataset computed from this one (and the tensor arguments in `extra`)."""
        return Dataset(make_iter, element_spec, cardinality, _tensors_in(list(extra)),
                       (self,) if parents is None else parents)

    def _all_captures(self):
        """The graph tensors this pipeline reads, in a fixed order."""
        groups = [p._all_captures() for p in self._parents] + [self._captures]
        if self._fn is not None:
            groups.append(self._fn.captures())
        return _merge_captures(*groups)

    def _static_spec(self):
        """The element spec as known without running the pipeline (graph-mode map
        functions are traced for it), or None."""
        if self._element_spec is None and self._spec_fn is not None:
            self._element_spec = self._spec_fn()
        return self._element_spec

    # --- sources ---
    @staticmethod
    def from_tensor_slices(tensors):
        """Elements are the slices of `tensors` (a structure of arrays) along axis 0.

        Components may be graph tensors (placeholders, variables): the dataset then
        takes their values each time an iterator's initializer runs (TensorFlow 1's
        feedable-initializer pattern), and can only be read through
        `make_initializable_iterator`.

        Raises:
          ValueError: if the arrays' first dimensions differ (for graph tensors: when
            the initializer runs, as `InvalidArgumentError`).
        """
        tensors = _map_structure(_as_graph_or_array, tensors)
        flat = _flatten(tensors)
        caps = _tensors_in(flat)
        if not flat or any(_rank(a) == 0 for a in flat):
            raise ValueError("from_tensor_slices needs arrays with at least one dimension.")
        if caps:
            def slices(env):
                vals = [np.asarray(env[a]) if _is_tensor(a) else a for a in flat]
                if any(v.ndim == 0 for v in vals):
                    raise ValueError("from_tensor_slices needs arrays with at least one "
                                     "dimension; a fed value is a scalar.")
                return _slices_of(_pack(tensors, vals), vals)

            spec = _map_structure(lambda a: TensorSpec(_static_shape(a)[1:], _np_dtype(a))
                                  if _static_shape(a) is not None else
                                  TensorSpec(None, _np_dtype(a)), tensors)
            card = UNKNOWN_CARDINALITY
        else:
            fixed = _slices_of(tensors, flat)

            def slices(env):
                return fixed

            spec = _map_structure(lambda a: TensorSpec(a.shape[1:], a.dtype), tensors)
            card = fixed[2]

        def gen(env):
            arrays, fl, n = slices(env)
            for i in range(n):
                yield _pack(arrays, [a[i] for a in fl])

        ds = Dataset(gen, spec, card, caps)
        ds._slices = slices  # lets batch() slice instead of stacking rows
        return ds

    @staticmethod
    def from_tensors(tensors):
        """A dataset of one element: `tensors` (a structure of arrays, or graph tensors
        read when an iterator's initializer runs)."""
        def one(a):
            if _is_tensor(a):
                from mylib.core.ops.array_ops import expand_dims

                return expand_dims(a, 0)
            return np.asarray(a)[None]

        return Dataset.from_tensor_slices(_map_structure(
            one, _map_structure(_as_graph_or_array, tensors)))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None):
        """Elements from ``generator(*args)`` (a callable returning an iterator, called
        once per pass), converted to numpy and checked against `output_signature` (a
        structure of `TensorSpec`s, keyword only) or `output_types`/`output_shapes`.

        The positional order is TensorFlow's: ``from_generator(gen, output_types,
        output_shapes, args)``; each component is converted to its declared dtype (with no
        signature, to numpy's inferred one). A structure of `TensorSpec`s passed as
        `output_types` is taken as the signature.

        Raises:
          TypeError: `generator` is not callable, or both `output_signature` and
            `output_types` are given.
          ValueError (while iterating): an element does not match the signature.
        """
        if not callable(generator):
            raise TypeError("`generator` must be a callable that returns an iterator "
                            f"(e.g. a generator function). Received: {generator!r}")
        if output_types is not None and output_signature is None and all(
                isinstance(t, TensorSpec) for t in _flatten(output_types)):
            output_signature, output_types = output_types, None
        if output_signature is not None and (output_types is not None
                                             or output_shapes is not None):
            raise TypeError("`from_generator`: give either `output_signature` or "
                            "`output_types`/`output_shapes`, not both.")
        if output_signature is None and output_types is not None:
            shapes = output_shapes if output_shapes is not None else _map_structure(
                lambda _: None, output_types)
            flat_t, flat_s = _flatten(output_types), _flatten(shapes)
            output_signature = _pack(output_types, [TensorSpec(s, t) for t, s in
                                                    zip(flat_t, flat_s)])
        spec = None if output_signature is None else _map_structure(_as_spec, output_signature)
        flat_spec = None if spec is None else _flatten(spec)
        args = tuple(args or ())

        def gen(env):
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
        return Dataset(lambda env: (np.int64(i) for i in r), TensorSpec((), np.int64), len(r))

    # --- properties ---
    @property
    def element_spec(self):
        """The structure of `TensorSpec`s of one element (peeks at the first element when
        the pipeline cannot tell)."""
        if self._static_spec() is None and not self._all_captures():
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
        caps = self._all_captures()
        if caps:
            raise TypeError(
                "This dataset depends on graph tensors "
                f"({', '.join(t.name for t in caps[:3])}): iterate it in a Session "
                "with `it = ds.make_initializable_iterator()`, running `it.initializer` with "
                "their values in feed_dict, then `it.get_next()`.")
        return self._iter({})

    def as_numpy_iterator(self):
        return iter(self)

    def __repr__(self):
        return f"<Dataset element_spec={self._element_spec} cardinality={self._cardinality}>"

    # --- TensorFlow 1 graph iterators (see mylib.data.iterator_ops) ---
    def make_one_shot_iterator(self):
        """An `Iterator` that starts on this dataset at its first use in each session.

        Raises:
          ValueError: the dataset depends on graph tensors (placeholders): use
            `make_initializable_iterator`.
        """
        from mylib.data import iterator_ops

        return iterator_ops.make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name=None):
        """An `Iterator` whose `initializer` op (re)starts it on this dataset, taking
        the current values of the graph tensors (placeholders) the dataset uses."""
        from mylib.data import iterator_ops

        return iterator_ops.make_initializable_iterator(self, shared_name=shared_name)

    @property
    def output_types(self):
        """TensorFlow 1's structure of element `DType`s."""
        from mylib.data import iterator_ops

        return iterator_ops.get_output_types(self)

    @property
    def output_shapes(self):
        """TensorFlow 1's structure of element `TensorShape`s."""
        from mylib.data import iterator_ops

        return iterator_ops.get_output_shapes(self)

    @property
    def output_classes(self):
        """TensorFlow 1's structure of element classes (`Tensor`)."""
        from mylib.data import iterator_ops

        return iterator_ops.get_output_classes(self)

    # --- transformations ---
    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        """Applies ``map_func`` to each element (tuples are unpacked into arguments, as
        tf.data). With `num_parallel_calls` (> 1, or `AUTOTUNE`) up to that many calls
        run at once on a thread pool; the output order is always the input order.

        `map_func` may be numpy code (called on numpy arrays) or graph code written
        with mylib ops (``ml.cast``, ``ml.one_hot``, ``ml.reshape``, ``ml.py_func`` ...),
        as TensorFlow 1 programs write it: such a function is traced once on
        placeholders into a function graph and that graph runs for each element in a
        private `Session` (see `mylib.data.functions`). Which kind a function is, is
        decided by its first call: when, called on numpy arrays, it returns graph
        tensors, it is graph code. A graph iterator (`make_initializable_iterator`)
        traces it when it needs the output types and shapes.
        """
        from mylib.data.functions import DataFunction

        src = self
        par = num_parallel_calls
        if par == AUTOTUNE:
            par = os.cpu_count() or 4
        par = int(par or 1)
        fn = DataFunction(map_func, "map", src)

        def gen_serial(env):
            for el in src._iter(env):
                yield fn(el, env)

        def gen_parallel(env):
            pool = concurrent.futures.ThreadPoolExecutor(par, thread_name_prefix="ml-data-map")
            pending = collections.deque()
            try:
                for el in src._iter(env):
                    pending.append(pool.submit(fn, el, env))
                    if len(pending) >= 2 * par:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for f in pending:
                    f.cancel()
                pool.shutdown(wait=False)

        ds = self._derive(gen_parallel if par > 1 else gen_serial, None, self._cardinality)
        ds._fn = fn
        ds._spec_fn = fn.output_spec
        return ds

    def filter(self, predicate):
        """Keeps the elements for which ``predicate(*element)`` is true (numpy code, or
        graph code returning a scalar bool tensor, as `map`)."""
        from mylib.data.functions import DataFunction

        src = self
        fn = DataFunction(predicate, "filter", src)

        def gen(env):
            for el in src._iter(env):
                if bool(np.asarray(fn(el, env))):
                    yield el

        ds = self._derive(gen)
        ds._fn = fn
        ds._spec_fn = src._static_spec
        return ds

    def flat_map(self, map_func):
        """Maps each element to a `Dataset` (``map_func(*element)``, Python code that
        may use the element's numpy values) and chains those datasets.

        Differs from TensorFlow: `map_func` runs on numpy values at iteration time (not
        traced); the output spec is read from the first produced dataset."""
        src = self

        def gen(env):
            for el in src._iter(env):
                inner = map_func(*el) if isinstance(el, tuple) and not hasattr(
                    el, "_fields") else map_func(el)
                if not isinstance(inner, Dataset):
                    raise TypeError("`flat_map`'s function must return a Dataset. "
                                    f"Received: {type(inner).__name__}")
                yield from inner._iter(env)

        return self._derive(gen)

    def interleave(self, map_func, cycle_length=None, block_length=1,
                   num_parallel_calls=None, deterministic=None):
        """Maps each element to a `Dataset` and interleaves them: `cycle_length`
        datasets open at once, `block_length` consecutive elements from each in turn
        (TensorFlow's order). `map_func` is Python code, as in `flat_map`."""
        src = self
        cycle = 4 if cycle_length in (None, AUTOTUNE) else int(cycle_length)
        block = int(block_length)
        if cycle <= 0 or block <= 0:
            raise ValueError("`cycle_length` and `block_length` must be positive. Received: "
                             f"cycle_length={cycle_length}, block_length={block_length}")

        def open_one(el, env):
            inner = map_func(*el) if isinstance(el, tuple) and not hasattr(
                el, "_fields") else map_func(el)
            if not isinstance(inner, Dataset):
                raise TypeError("`interleave`'s function must return a Dataset. "
                                f"Received: {type(inner).__name__}")
            return inner._iter(env)

        def gen(env):
            outer = src._iter(env)
            active = []
            exhausted = False
            while True:
                while not exhausted and len(active) < cycle:
                    try:
                        active.append(open_one(next(outer), env))
                    except StopIteration:
                        exhausted = True
                if not active:
                    return
                i = 0
                while i < len(active):
                    it = active[i]
                    done = False
                    for _ in range(block):
                        try:
                            yield next(it)
                        except StopIteration:
                            done = True
                            break
                    if done:
                        active.pop(i)
                        # TensorFlow refills the freed slot before moving on.
                        if not exhausted:
                            try:
                                active.insert(i, open_one(next(outer), env))
                                continue
                            except StopIteration:
                                exhausted = True
                    else:
                        i += 1

        return self._derive(gen)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None):
        """Stacks `batch_size` consecutive elements into one (a short last batch unless
        `drop_remainder`). `batch_size` may be a scalar int64 graph tensor (a
        placeholder fed with the initializer); the batch dimension is then unknown."""
        size_t = batch_size if _is_tensor(batch_size) else None
        if size_t is None:
            batch_size = _positive(batch_size, "batch_size")
        src = self
        sl = getattr(self, "_slices", None)

        def size(env):
            return batch_size if size_t is None else _positive(_val(size_t, env),
                                                               "batch_size")

        if sl is not None:
            def gen(env):
                arrays, flat, n = sl(env)
                b = size(env)
                stop = n - n % b if drop_remainder else n
                for lo in range(0, stop, b):
                    yield _pack(arrays, [a[lo:lo + b] for a in flat])
        else:
            def gen(env):
                b = size(env)
                buf = []
                for el in src._iter(env):
                    buf.append(el)
                    if len(buf) == b:
                        yield _stack(buf)
                        buf = []
                if buf and not drop_remainder:
                    yield _stack(buf)

        card = self._cardinality
        if card >= 0 and size_t is None:
            card = card // batch_size if drop_remainder else -(-card // batch_size)
        elif card >= 0:
            card = UNKNOWN_CARDINALITY
        lead = batch_size if drop_remainder and size_t is None else None

        def spec():
            sp = src._static_spec()
            return None if sp is None else _map_structure(lambda s: TensorSpec(
                None if s.shape is None else (lead,) + s.shape, s.dtype), sp)

        ds = self._derive(gen, None, card, extra=[size_t] if size_t is not None else ())
        ds._spec_fn = spec
        return ds

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        """Batches elements of differing shapes, padding each component to
        `padded_shapes` (a structure like the element; ``None``/-1 dims pad to the
        longest in the batch; default: all dims) with `padding_values` (default 0, or
        b"" for strings).

        Raises:
          ValueError (while iterating): an element longer than a fixed padded dim.
        """
        batch_size = _positive(batch_size, "batch_size")
        src = self

        def spec():
            sp = src._static_spec()
            if sp is None:
                return None
            shapes = padded_shapes if padded_shapes is not None else _map_structure(
                lambda s: None if s.shape is None else [None] * len(s.shape), sp)
            flat_sp, flat_sh = _flatten(sp), _flatten_shapes(shapes, sp)
            out = [TensorSpec(None if sh is None else (
                batch_size if drop_remainder else None,) + tuple(sh), s.dtype)
                for s, sh in zip(flat_sp, flat_sh)]
            return _pack(sp, out)

        def gen(env):
            buf = []
            for el in src._iter(env):
                buf.append(el)
                if len(buf) == batch_size:
                    yield _pad_stack(buf, padded_shapes, padding_values)
                    buf = []
            if buf and not drop_remainder:
                yield _pad_stack(buf, padded_shapes, padding_values)

        card = self._cardinality
        if card >= 0:
            card = card // batch_size if drop_remainder else -(-card // batch_size)
        ds = self._derive(gen, None, card)
        ds._spec_fn = spec
        return ds

    def unbatch(self):
        """Splits each element along its first axis."""
        src = self

        def gen(env):
            for el in src._iter(env):
                flat = _flatten(el)
                for i in range(len(flat[0])):
                    yield _pack(el, [a[i] for a in flat])

        def spec():
            sp = src._static_spec()
            return None if sp is None else _map_structure(lambda s: TensorSpec(
                None if s.shape is None else s.shape[1:], s.dtype), sp)

        ds = self._derive(gen)
        ds._spec_fn = spec
        return ds

    @staticmethod
    def zip(datasets):
        """Elements are tuples (or the structure of `datasets`) of one element of each
        dataset; ends with the shortest."""
        flat = _flatten_datasets(datasets)
        if not flat:
            raise ValueError("`zip` needs at least one dataset. Received: datasets="
                             f"{datasets!r}")

        def gen(env):
            its = [d._iter(env) for d in flat]
            while True:
                els = []
                for it in its:
                    try:
                        els.append(next(it))
                    except StopIteration:
                        return
                yield _pack_datasets(datasets, els)

        def spec():
            sps = [d._static_spec() for d in flat]
            return None if any(s is None for s in sps) else _pack_datasets(datasets, sps)

        cards = [d._cardinality for d in flat]
        finite = [c for c in cards if c >= 0]
        if any(c == UNKNOWN_CARDINALITY for c in cards):
            card = UNKNOWN_CARDINALITY
        else:
            card = min(finite) if finite else INFINITE_CARDINALITY
        ds = Dataset(gen, None, card, parents=tuple(flat))
        ds._spec_fn = spec
        return ds

    def concatenate(self, dataset):
        """This dataset's elements, then `dataset`'s."""
        src = self

        def gen(env):
            yield from src._iter(env)
            yield from dataset._iter(env)

        a, b = self._cardinality, dataset._cardinality
        card = a + b if a >= 0 and b >= 0 else (
            INFINITE_CARDINALITY if INFINITE_CARDINALITY in (a, b) else UNKNOWN_CARDINALITY)
        ds = self._derive(gen, None, card, parents=(self, dataset))
        ds._spec_fn = src._static_spec
        return ds

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        """Randomly shuffles the elements with a buffer of `buffer_size` (a full
        shuffle when it is at least the dataset size), as tf.data: each output is drawn
        uniformly from the buffer, which is refilled from the input.

        Args:
          buffer_size: a positive int (or a scalar graph tensor fed with the
            initializer).
          seed: fixes the order; otherwise the global seed (`ml.utils.set_random_seed`)
            or fresh entropy.
          reshuffle_each_iteration: a different order for each pass (each epoch, and
            each run of an iterator's initializer).
        """
        size_t = buffer_size if _is_tensor(buffer_size) else None
        if size_t is None:
            buffer_size = _positive(buffer_size, "buffer_size")
        src = self
        if seed is None:
            seed = _config.next_seed()
        base = np.random.SeedSequence(seed).entropy if seed is not None else \
            np.random.SeedSequence().entropy
        passes = itertools.count()

        def gen(env):
            n = buffer_size if size_t is None else _positive(_val(size_t, env),
                                                             "buffer_size")
            k = next(passes) if reshuffle_each_iteration else 0
            rng = np.random.default_rng([base % (2 ** 63), k])
            buf = []
            for el in src._iter(env):
                if len(buf) < n:
                    buf.append(el)
                    continue
                i = rng.integers(len(buf))
                out, buf[i] = buf[i], el
                yield out
            while buf:
                i = rng.integers(len(buf))
                buf[i], buf[-1] = buf[-1], buf[i]
                yield buf.pop()

        return self._spec_passing(gen, self._cardinality, [size_t])

    def repeat(self, count=None):
        """Repeats the dataset `count` times (forever when None or -1; `count` may be
        a scalar graph tensor fed with the initializer)."""
        src = self
        count_t = count if _is_tensor(count) else None

        def gen(env):
            c = _val(count_t, env) if count_t is not None else count
            forever = c is None or c < 0
            for _ in (itertools.count() if forever else range(int(c))):
                empty = True
                for el in src._iter(env):
                    empty = False
                    yield el
                if empty:
                    return

        card = self._cardinality
        if count_t is not None:
            card = UNKNOWN_CARDINALITY
        elif count is None or count < 0:
            card = 0 if card == 0 else INFINITE_CARDINALITY
        elif card >= 0:
            card = card * int(count)
        return self._spec_passing(gen, card, [count_t])

    def take(self, count):
        """The first `count` elements (all of them when `count` is -1)."""
        count_t = count if _is_tensor(count) else None
        count = None if count_t is not None else int(count)
        src = self

        def gen(env):
            c = int(_val(count_t, env)) if count_t is not None else count
            it = src._iter(env)
            try:
                for el in (it if c < 0 else itertools.islice(it, c)):
                    yield el
            finally:
                close = getattr(it, "close", None)
                if close is not None:
                    close()

        card = self._cardinality
        if count is None:
            card = UNKNOWN_CARDINALITY
        elif count >= 0:
            card = count if card == INFINITE_CARDINALITY else (
                min(card, count) if card >= 0 else UNKNOWN_CARDINALITY)
        return self._spec_passing(gen, card, [count_t])

    def skip(self, count):
        """All but the first `count` elements."""
        count_t = count if _is_tensor(count) else None
        count = None if count_t is not None else int(count)
        src = self

        def gen(env):
            c = int(_val(count_t, env)) if count_t is not None else count
            return itertools.islice(src._iter(env), max(c, 0), None)

        card = self._cardinality
        if count is None:
            card = UNKNOWN_CARDINALITY
        elif card >= 0:
            card = max(card - count, 0)
        return self._spec_passing(gen, card, [count_t])

    def _spec_passing(self, gen, card, tensor_args=()):
        """A derived dataset whose elements have this one's spec."""
        ds = self._derive(gen, self._element_spec, card,
                          extra=[t for t in tensor_args if t is not None])
        ds._spec_fn = self._static_spec
        return ds

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

        def gen(env):
            if env:  # a pipeline over fed tensors: each initialization is a new pass
                yield from src._iter(env)
                return
            if store:
                yield from store[0]
                return
            seen = []
            for el in src._iter(env):
                seen.append(el)
                yield el
            if not store:
                store.append(seen)

        return self._spec_passing(gen, self._cardinality)

    def _file_cache(self, prefix):

        src = self
        first = []  # an element seen here: its types (namedtuples) rebuild later ones

        def gen(env):
            index = fc.read_index(prefix)
            if index is not None:
                template = first[0] if first and fc.encode_structure(
                    first[0], []) == index["structure"] else None
                yield from fc.read_elements(index, _pack, template)
                return
            writer = fc.Writer(prefix)
            done = False
            try:
                for el in src._iter(env):
                    writer.write(el, _flatten)
                    if not first:
                        first.append(el)
                    yield el
                writer.commit()
                done = True
            finally:
                if not done:
                    writer.abort(partial=True)

        return self._spec_passing(gen, self._cardinality)

    def prefetch(self, buffer_size=AUTOTUNE):
        """Produces up to `buffer_size` elements ahead on a background thread, so the
        pipeline's work overlaps the consumer's (the training step). Errors raised
        upstream are re-raised in the consumer, in order."""
        n = 2 if buffer_size in (None, AUTOTUNE) else max(int(buffer_size), 1)
        src = self
        return self._spec_passing(lambda env: _PrefetchIterator(src, n, env), self._cardinality)

    def apply(self, transformation_func):
        return transformation_func(self)


def _stack(elements):
    first = elements[0]
    flats = [_flatten(e) for e in elements]
    return _pack(first, [np.stack([f[i] for f in flats]) for i in range(len(flats[0]))])


def _positive(v, what):
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise TypeError(f"`{what}` must be an int or a scalar integer tensor. Received: "
                        f"{what}={v!r}") from None
    if n <= 0:
        raise ValueError(f"`{what}` must be positive. Received: {what}={n}")
    return n


def _flatten_shapes(shapes, spec):
    """One padded shape (tuple, None dims) per component of `spec`."""
    if isinstance(spec, dict):
        return [x for k in sorted(spec) for x in _flatten_shapes(shapes[k], spec[k])]
    if isinstance(spec, (tuple, list)):
        return [x for sh, sp in zip(shapes, spec) for x in _flatten_shapes(sh, sp)]
    if shapes is None:
        return [None]
    dims = shapes.as_list() if hasattr(shapes, "as_list") else list(shapes)
    return [tuple(None if d is None or int(d) < 0 else int(d) for d in dims)]


def _pad_stack(elements, padded_shapes, padding_values):
    first = elements[0]
    flats = [[np.asarray(c) for c in _flatten(e)] for e in elements]
    k = len(flats[0])
    shapes = [None] * k if padded_shapes is None else _flatten_shapes(
        padded_shapes, _map_structure(lambda a: a, first))
    pads = [None] * k if padding_values is None else (
        _flatten(padding_values) if isinstance(padding_values, (tuple, list, dict))
        else [padding_values] * k)
    out = []
    for i in range(k):
        comps = [f[i] for f in flats]
        rank = comps[0].ndim
        want = shapes[i] if shapes[i] is not None else (None,) * rank
        if len(want) != rank:
            raise ValueError(f"`padded_batch`: component {i} has rank {rank}, its padded "
                             f"shape {want} has rank {len(want)}.")
        dims = []
        for d in range(rank):
            longest = max(c.shape[d] for c in comps)
            if want[d] is not None and longest > want[d]:
                raise ValueError(f"`padded_batch`: component {i} has size {longest} in "
                                 f"dimension {d}, more than its padded size {want[d]}.")
            dims.append(longest if want[d] is None else want[d])
        dt = comps[0].dtype
        fill = pads[i] if pads[i] is not None else (b"" if dt == object else 0)
        buf = np.full([len(comps)] + dims, fill, dtype=dt)
        for j, c in enumerate(comps):
            buf[(j,) + tuple(slice(0, n) for n in c.shape)] = c
        out.append(buf)
    return _pack(first, out)


def _flatten_datasets(s):
    if isinstance(s, Dataset):
        return [s]
    if isinstance(s, dict):
        return [x for k in sorted(s) for x in _flatten_datasets(s[k])]
    if isinstance(s, (tuple, list)):
        return [x for v in s for x in _flatten_datasets(v)]
    raise TypeError(f"`zip` takes a (nested) tuple or dict of datasets. Received: {s!r}")


def _pack_datasets(structure, flat):
    it = iter(flat)

    def build(s):
        if isinstance(s, Dataset):
            return next(it)
        if isinstance(s, dict):
            vals = {k: build(s[k]) for k in sorted(s)}
            return {k: vals[k] for k in s}
        return tuple(build(v) for v in s)

    return build(structure)


_END = object()


class _PrefetchIterator:
    """Runs the upstream iterator on a daemon thread into a bounded queue. Closing the
    iterator (or dropping it) stops the thread at its next put."""

    def __init__(self, src, n, env):
        self._q = queue.Queue(maxsize=n)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._work, args=(src, env), daemon=True,
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

    def _work(self, src, env):
        it = None
        try:
            it = src._iter(env)
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
