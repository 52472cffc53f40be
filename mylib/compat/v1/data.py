"""`ml.compat.v1.data`: `ml.data` plus TensorFlow 1's iterator functions."""

from __future__ import annotations


def _method(dataset, name):
    fn = getattr(dataset, name, None)
    if fn is None:
        raise NotImplementedError(
            f"{type(dataset).__name__} has no `{name}()` in this mylib: graph-mode "
            "iterators are not available; feed numpy batches through placeholders "
            "(for batch in dataset: sess.run(train, {x: batch[0], y: batch[1]})) or use "
            "Model.fit(dataset)")
    return fn


def make_one_shot_iterator(dataset):
    """``dataset.make_one_shot_iterator()`` (TensorFlow 1's function form)."""
    return _method(dataset, "make_one_shot_iterator")()


def make_initializable_iterator(dataset, shared_name=None):
    """``dataset.make_initializable_iterator()`` (TensorFlow 1's function form)."""
    fn = _method(dataset, "make_initializable_iterator")
    return fn() if shared_name is None else fn(shared_name=shared_name)


def get_output_shapes(dataset):
    return _method(dataset, "output_shapes") if not hasattr(dataset, "element_spec") else \
        _map(dataset.element_spec, lambda s: s.shape)


def get_output_types(dataset):
    return _map(dataset.element_spec, lambda s: s.dtype)


def _map(struct, fn):
    if isinstance(struct, dict):
        return {k: _map(v, fn) for k, v in struct.items()}
    if isinstance(struct, (list, tuple)):
        return type(struct)(_map(v, fn) for v in struct)
    return fn(struct)


def __getattr__(name):
    import mylib.data

    try:
        return getattr(mylib.data, name)
    except AttributeError:
        raise AttributeError(f"module 'mylib.compat.v1.data' has no attribute {name!r} "
                             "(nor has mylib.data)") from None
