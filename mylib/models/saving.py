"""Whole-model saving: `save_model` / `load_model`, weights files, configs, `clone_model`,
JSON, and the registry of serializable classes.

A model file (``model.mylib``) is one zip archive holding

- ``metadata.json``: ``{"format": "mylib.model", "format_version": 1, ...}`` and, for
  each array, its name, shape and dtype;
- ``config.json``: the architecture (``{"class_name", "config", "registered_name",
  "module", "build_config", "compile_config"}``): each layer's `get_config` and class
  name; for functional models the call graph as inbound nodes named by layer; the
  compile arguments (loss, metrics, optimizer config);
- ``model.weights.npz``: the weights, in `model.weights` order (``w0000``, ...);
- ``optimizer.npz``: the optimizer's state: ``iterations``, ``learning_rate`` and the
  slots of each weight (``s0003_1``: slot 1 of weight 3).

Arrays are numpy ``.npy`` records read with ``allow_pickle=False``; nothing in a file
is ever executed. A file is untrusted input: only the members above are read, and sizes,
shapes and dtypes are checked against the model before array data is read, so a load
allocates at most the model's own variables plus its JSON members (at most 64 MiB each,
nested at most 100 levels); see `mylib.models._archive`. Loads are all or nothing:
every check precedes the first assignment. A class is found only by name: built-in mylib layers and models, or
classes registered with `register_serializable` (or passed as ``custom_objects``).
Writes are atomic (a temporary file renamed over the target).
"""

from __future__ import annotations

import io
import json
import time
import warnings
import zipfile

import numpy as np

from mylib import errors
from mylib._fileio import atomic_write
from mylib._version import __version__
from mylib.models import _archive

FORMAT = "mylib.model"
WEIGHTS_FORMAT = "mylib.weights"
FORMAT_VERSION = 1

# The registry of serializable classes lives with the layers, which use it too.
from mylib.layers.registration import (  # noqa: E402,F401
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    register_serializable,
    registered_name_of,
)


def _builtin_classes():
    """Layer and model classes of mylib itself, by class name."""
    import sys

    from mylib.layers.base import Layer
    from mylib.models.sequential import Sequential
    from mylib.models.training import Model

    out = {}
    for modname, mod in list(sys.modules.items()):
        if mod is None or not (modname == "mylib.layers" or modname.startswith("mylib.layers.")):
            continue
        for k, v in vars(mod).items():
            if isinstance(v, type) and issubclass(v, Layer) and v.__module__.startswith("mylib."):
                out.setdefault(v.__name__, v)
                out.setdefault(k, v)
    from mylib.models.op_nodes import TFOpLambda

    out.update({"Sequential": Sequential, "Model": Model, "Functional": Model,
                "TFOpLambda": TFOpLambda})
    return out


def _resolve_class(entry, custom_objects, what="layer"):
    class_name = entry.get("class_name")
    reg = entry.get("registered_name")
    if not isinstance(class_name, str):
        raise errors.DataLossError(f"The saved config has a {what} entry without a "
                                   f"`class_name`: {str(entry)[:200]}")
    for key in (reg, class_name):
        if key:
            obj = get_registered_object(key, custom_objects)
            if obj is not None:
                return obj
    builtin = _builtin_classes().get(class_name)
    if builtin is not None and (not reg or reg == class_name or
                                entry.get("module", "mylib").startswith("mylib")):
        return builtin
    module = entry.get("module") or "?"
    raise ValueError(
        f"Unknown {what} class '{class_name}' (saved from module '{module}'"
        + (f", registered as '{reg}'" if reg and reg != class_name else "") + "). mylib "
        "never imports code from a saved file: register the class before loading with "
        "`@ml.saving.register_serializable(package=...)`, or pass "
        f"`custom_objects={{'{class_name}': {class_name}}}` to `load_model`.")


def _jsonable(value, where):
    """`value` with tuples as lists and numpy scalars as Python numbers; raises for
    anything JSON cannot hold."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, where) for v in value]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, type) or callable(value):
        reg = registered_name_of(value)
        if reg is not None:
            return {"registered_name": reg}
    if hasattr(value, "get_config"):
        cls = type(value)
        return {"class_name": cls.__name__, "registered_name": registered_name_of(cls),
                "config": _jsonable(value.get_config(), where)}
    raise ValueError(f"Cannot serialize {where}={value!r} ({type(value).__name__}): "
                     "configs hold plain values only (register custom functions and "
                     "classes with `ml.saving.register_serializable`).")


# ---------------------------------------------------------------- layer configs
def serialize_layer(layer):
    """``{"module", "class_name", "registered_name", "config"}`` of a layer or model."""
    cls = type(layer)
    return {"module": cls.__module__, "class_name": cls.__name__,
            "registered_name": registered_name_of(cls),
            "config": _jsonable(layer.get_config(), f"{cls.__name__}.get_config()")}


def deserialize_layer(entry, custom_objects=None):
    """A new layer (or model) from `serialize_layer`'s form."""
    from mylib.models.training import Model

    if not isinstance(entry, dict):
        raise errors.DataLossError(f"Expected a layer entry (a dict); got {str(entry)[:200]}")
    cls = _resolve_class(entry, custom_objects)
    config = entry.get("config")
    if not isinstance(config, dict):
        raise errors.DataLossError(f"The saved entry of class '{entry['class_name']}' has no "
                                   "config dict.")
    config = _restore_registered(config, custom_objects)
    try:
        if isinstance(cls, type) and (issubclass(cls, Model) or _takes_custom_objects(cls)):
            # Models, and layers holding layers by config (RNN's cell), resolve their
            # inner classes with the caller's custom_objects too.
            return cls.from_config(config, custom_objects=custom_objects)
        return cls.from_config(config)
    except (TypeError, KeyError) as e:
        raise ValueError(
            f"{cls.__name__}.from_config could not recreate the {entry['class_name']!r} "
            f"from its saved config ({type(e).__name__}: {e}). A custom class must "
            "implement `get_config()` returning its constructor arguments.") from e


def _takes_custom_objects(cls):
    import inspect

    try:
        return "custom_objects" in inspect.signature(cls.from_config).parameters
    except (TypeError, ValueError):
        return False


def _restore_registered(value, custom_objects):
    # {"registered_name": name} alone stands for a registered function or class.
    if isinstance(value, dict):
        if set(value) == {"registered_name"}:
            obj = get_registered_object(value["registered_name"], custom_objects)
            if obj is None:
                raise ValueError(f"Unknown object '{value['registered_name']}': register it "
                                 "with `ml.saving.register_serializable` before loading.")
            return obj
        return {k: _restore_registered(v, custom_objects) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_registered(v, custom_objects) for v in value]
    return value


# ---------------------------------------------------------------- model configs
def _input_specs(model):
    """How a deferred model (Sequential without Input, subclassed) was built: the
    structure, shapes and dtypes of its inputs."""
    ins = model._nested_inputs
    kind = "dict" if isinstance(ins, dict) else "list" if isinstance(ins, (list, tuple)) \
        else "single"
    keys = sorted(ins) if kind == "dict" else None
    return {"structure": kind, "keys": keys,
            "shapes": [t.shape.as_list() for t in model.inputs],
            "dtypes": [t.dtype.name for t in model.inputs]}


def _build_from_specs(model, specs):
    from mylib.layers.base import Input

    try:
        ins = [Input(batch_shape=tuple(s), dtype=d)
               for s, d in zip(specs["shapes"], specs["dtypes"])]
        if specs["structure"] == "dict":
            ins = dict(zip(specs["keys"], ins))
        elif specs["structure"] == "single":
            ins = ins[0]
    except (KeyError, TypeError, ValueError) as e:
        raise errors.DataLossError(f"Invalid build config {specs!r}: {e}") from e
    model._trace(ins)


def model_get_config(model):
    """The config of a Sequential, functional or subclassed model (see the module)."""
    from mylib.layers.base import InputLayer
    from mylib.models.sequential import Sequential

    cfg = {"name": model.name, "trainable": model.trainable}
    if isinstance(model, Sequential):
        cfg["layers"] = [serialize_layer(l) for l in model._layers]
        if model.inputs is not None and not any(isinstance(l, InputLayer)
                                                for l in model._layers):
            cfg["build_input_shape"] = _input_specs(model)
        return cfg
    if model._is_graph_network:
        cfg.update(_functional_config(model))
    return cfg


def _functional_config(model):
    from mylib.core.graph import Tensor
    from mylib.layers.base import InputLayer, keras_history
    from mylib.models.op_nodes import TFOpLambda

    per_layer = {}  # id(layer) -> [node, ...] of this model
    op_layers = []  # the ops between layers (not in model.layers): entries too
    for node in model._nodes:
        if isinstance(node.layer, TFOpLambda) and id(node.layer) not in per_layer:
            op_layers.append(node.layer)
        per_layer.setdefault(id(node.layer), []).append(node)
    node_index = {id(n): i for nodes in per_layer.values() for i, n in enumerate(nodes)}
    # Op nodes are named after their last op ("add"); where that name is taken, the
    # entry gets a free one (the name is the config's key, not the layer's identity).
    entry_name = {id(l): l.name for l in model.layers}
    taken = set(entry_name.values())
    for layer in op_layers:
        name, i = layer.name, 1
        while name in taken:
            name, i = f"{layer.name}_{i}", i + 1
        taken.add(name)
        entry_name[id(layer)] = name

    def ref(t):
        node, idx = keras_history(t)
        if isinstance(node.layer, InputLayer):
            return [node.layer.name, 0, 0]
        return [entry_name[id(node.layer)], node_index[id(node)], idx]

    def enc(v, where):
        if isinstance(v, Tensor):
            return {"__tensor__": ref(v)}
        if isinstance(v, dict):
            return {"__dict__": [[str(k), enc(x, where)] for k, x in v.items()]}
        if isinstance(v, (list, tuple)):
            return [enc(x, where) for x in v]
        return _jsonable(v, where)

    names = [l.name for l in model.layers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"Cannot serialize model \"{model.name}\": layer names must be "
                         f"unique, but {dup} appear more than once.")
    layers = []
    for layer in list(model.layers) + op_layers:
        entry = serialize_layer(layer)
        entry["name"] = entry_name[id(layer)]
        entry["config"]["name"] = entry["name"]
        entry["inbound_nodes"] = [
            {"args": enc(n.inputs, layer.name), "extra_args": enc(list(n.args), layer.name),
             "kwargs": enc(dict(n.kwargs), layer.name)}
            for n in per_layer.get(id(layer), [])]
        layers.append(entry)
    return {"layers": layers,
            "node_order": [[entry_name[id(n.layer)], node_index[id(n)]]
                           for n in model._nodes],
            "input_layers": enc(model._nested_inputs, "inputs"),
            "output_layers": enc(model._nested_outputs, "outputs")}


def model_from_config_dict(cls, config, custom_objects=None):
    """A new, built model of class `cls` from `model_get_config`'s form."""
    from mylib.models.sequential import Sequential

    config = dict(config)
    try:
        if issubclass(cls, Sequential):
            specs = config.pop("build_input_shape", None)
            entries = config.pop("layers", [])
            model = cls(name=config.get("name"), trainable=config.get("trainable", True))
            for e in entries:
                model.add(deserialize_layer(e, custom_objects))
            if specs is not None:
                _build_from_specs(model, specs)
            return model
        if "input_layers" in config and "layers" in config:
            return _functional_from_config(cls, config, custom_objects)
        specs = config.pop("build_input_shape", None)
        model = cls(**config)
    except (KeyError, IndexError) as e:
        raise errors.DataLossError(f"Invalid or truncated model config: missing {e}") from e
    if specs is not None:
        _build_from_specs(model, specs)
    return model


def _functional_from_config(cls, config, custom_objects):
    from mylib.layers.base import InputLayer, flatten

    if "node_order" not in config:
        return _keras_functional_from_config(cls, config, custom_objects)
    layers, nodes_cfg, produced = {}, {}, {}
    for entry in config["layers"]:
        layer = deserialize_layer(entry, custom_objects)
        name = entry.get("name", layer.name)
        layers[name] = layer
        nodes_cfg[name] = entry.get("inbound_nodes", [])
        if isinstance(layer, InputLayer):
            produced[(name, 0)] = [layer.input_tensor]

    def dec(v):
        if isinstance(v, dict):
            if "__tensor__" in v:
                name, k, i = v["__tensor__"]
                if (name, k) not in produced:
                    raise errors.DataLossError(
                        f"The saved model config refers to output {k} of layer '{name}', "
                        "which no earlier node produces.")
                return produced[(name, k)][i]
            if "__dict__" in v:
                return {k: dec(x) for k, x in v["__dict__"]}
            return v
        if isinstance(v, list):
            return [dec(x) for x in v]
        return v

    for name, k in config["node_order"]:
        if name not in layers:
            raise errors.DataLossError(f"The saved model config calls unknown layer '{name}'.")
        nc = nodes_cfg[name][k]
        inputs = dec(nc["args"])
        out = layers[name](inputs, *dec(nc.get("extra_args", [])), **dec(nc.get("kwargs", {})))
        produced[(name, k)] = flatten(out)
    kwargs = {k: v for k, v in config.items() if k in ("name", "trainable")}
    return cls(inputs=dec(config["input_layers"]), outputs=dec(config["output_layers"]),
               **kwargs)


# ------------------------------------------------- functional configs of Keras 3
# `mylib.keras` registers how an op entry of Keras 3's config (``{"module":
# "keras.src.ops.numpy", "class_name": "Add", ...}``) becomes a function of
# `mylib.keras.ops`: ``resolver(class_name, config) -> callable or None``.
_keras_op_resolver = None


def register_keras_op_resolver(fn):
    global _keras_op_resolver
    _keras_op_resolver = fn


def _is_keras_op_entry(entry):
    module = entry.get("module")
    return isinstance(module, str) and (module.startswith("keras.src.ops.") or
                                        module.startswith("keras.ops"))


def _keras_op(entry):
    name = entry.get("class_name")
    config = entry.get("config") or {}
    fn = _keras_op_resolver(name, config) if _keras_op_resolver is not None else None
    if fn is None:
        raise ValueError(
            f"The saved Keras model applies the op {name!r} (from "
            f"{str(entry.get('module'))[:60]!r}, entry {str(entry.get('name'))[:60]!r}) "
            "between layers, which mylib cannot rebuild: mylib rebuilds only the ops "
            "of keras.ops it has, by name, and never runs code from a file.")
    return fn


def _keras_functional_from_config(cls, config, custom_objects):
    """A functional model from the config Keras 3 writes: each entry's
    ``inbound_nodes`` call it on ``{"class_name": "__keras_tensor__", "config":
    {"keras_history": [layer, node, index]}}`` references; entries of ops
    (``keras.src.ops.numpy.Add``) are rebuilt with `mylib.keras.ops`; nodes run once
    the tensors they read exist, in Keras's order."""
    from mylib.layers.base import InputLayer, flatten

    layers, pending, produced = {}, [], {}
    for entry in config["layers"]:
        name = entry["name"] if "name" in entry else entry["config"]["name"]
        if not isinstance(name, str) or name in layers:
            raise ValueError(f"The saved Keras model config has a missing or repeated "
                             f"layer name: {str(name)[:80]!r}.")
        if _is_keras_op_entry(entry):
            layers[name] = _keras_op(entry)
        else:
            layers[name] = deserialize_layer(entry, custom_objects)
            if isinstance(layers[name], InputLayer):
                produced[(name, 0)] = [layers[name].input_tensor]
        for k, node in enumerate(entry.get("inbound_nodes") or []):
            pending.append((name, k, node, _is_keras_op_entry(entry)))

    class _Missing(Exception):
        pass

    def dec(v):
        if isinstance(v, dict):
            kind = v.get("class_name")
            if kind == "__keras_tensor__":
                lname, k, i = v["config"]["keras_history"]
                if (lname, k) not in produced:
                    raise _Missing((lname, k))
                return produced[(lname, k)][i]
            if kind == "__slice__":
                c = v["config"]
                return slice(c.get("start"), c.get("stop"), c.get("step"))
            if kind == "__ellipsis__":
                return Ellipsis
            return {k: dec(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):  # tuples: a config not through JSON
            return [dec(x) for x in v]
        return v

    while pending:
        left = []
        for name, k, node, is_op in pending:
            try:
                args, kwargs = dec(node.get("args", [])), dec(node.get("kwargs", {}))
            except _Missing:
                left.append((name, k, node, is_op))
                continue
            if kwargs.get("mask", 0) is None:  # Keras records a nested model's mask=None
                del kwargs["mask"]
            try:
                out = layers[name](*args, **kwargs)
            except errors.OpError as e:
                if not is_op:
                    raise
                raise ValueError(f"The saved Keras op entry {name!r} cannot be applied to "
                                 f"its saved arguments: {e}") from None
            produced[(name, k)] = flatten(out)
        if len(left) == len(pending):
            raise ValueError(
                "The saved Keras model config calls layers on tensors no node produces "
                f"(first: {left[0][0]!r} node {left[0][1]}); nothing was built.")
        pending = left

    def io(v):
        if isinstance(v, dict):
            return {k: io(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)) and len(v) == 3 and isinstance(v[0], str) and \
                isinstance(v[1], int):
            if (v[0], v[1]) not in produced:
                raise ValueError(f"The saved Keras model config names the model tensor "
                                 f"{v!r}, which no node produces.")
            return produced[(v[0], v[1])][v[2]]
        if isinstance(v, (list, tuple)):
            return [io(x) for x in v]
        raise ValueError(f"The saved Keras model config has a bad input/output entry "
                         f"{str(v)[:80]!r}.")

    def one(v):  # Keras 3 unwraps a single input or output from its list
        return v[0] if isinstance(v, list) and len(v) == 1 else v

    kwargs = {k: v for k, v in config.items() if k in ("name", "trainable")}
    model = cls(inputs=one(io(config["input_layers"])),
                outputs=one(io(config["output_layers"])), **kwargs)
    # Keras lists its layers in `model.layers` order, which `get_weights` follows:
    # keep it, so Keras's weights go to the same layers with `set_weights`.
    saved = [layers[e.get("name", e["config"]["name"])] for e in config["layers"]
             if not _is_keras_op_entry(e)]
    if sorted(map(id, saved)) == sorted(map(id, model._layers)):
        model._layers = saved
    return model


def _compile_config(model):
    from mylib import losses as L
    from mylib import metrics as M
    from mylib import optimizers

    if not model.compiled:
        return None
    args = model._compile_args

    def ser_loss(x):
        if x is None or isinstance(x, str):
            return x
        if isinstance(x, dict):
            return {"__dict__": [[k, ser_loss(v)] for k, v in x.items()]}
        if isinstance(x, (list, tuple)):
            return [ser_loss(v) for v in x]
        if registered_name_of(x) is not None:
            return {"registered_name": registered_name_of(x)}
        if registered_name_of(type(x)) is not None:
            return _jsonable(x, "loss")
        return L.serialize(x)

    def ser_metric(x):
        if x is None or isinstance(x, str):
            return x
        if isinstance(x, dict):
            return {"__dict__": [[k, ser_metric(v)] for k, v in x.items()]}
        if isinstance(x, (list, tuple)):
            return [ser_metric(v) for v in x]
        if not isinstance(x, M.Metric) and registered_name_of(x) is not None:
            return {"registered_name": registered_name_of(x)}
        if isinstance(x, M.Metric):
            if type(x).__name__ in M._CLASSES or registered_name_of(type(x)) is not None:
                return _jsonable(x, "metric")
        raise ValueError(f"Cannot serialize metric {x!r}")

    opt = optimizers.serialize(model.optimizer)
    if registered_name_of(type(model.optimizer)) is not None:
        opt["registered_name"] = registered_name_of(type(model.optimizer))
    opt = {**opt, "config": _jsonable(opt["config"], "optimizer config")}
    return {"optimizer": opt, "loss": ser_loss(args["loss"]),
            "metrics": ser_metric(args["metrics"]),
            "weighted_metrics": ser_metric(args["weighted_metrics"]),
            "loss_weights": _jsonable(args["loss_weights"], "loss_weights")}


def _deserialize_compile(cfg, custom_objects):
    from mylib import losses as L
    from mylib import metrics as M
    from mylib import optimizers

    def dec(x, fn):
        if isinstance(x, dict):
            if "__dict__" in x:
                return {k: dec(v, fn) for k, v in x["__dict__"]}
            if set(x) == {"registered_name"}:
                return _restore_registered(x, custom_objects)
            if x.get("registered_name"):
                cls = _resolve_class(x, custom_objects, "object")
                return cls.from_config(dict(x.get("config") or {}))
            return fn(x)
        if isinstance(x, list):
            return [dec(v, fn) for v in x]
        return x

    o = cfg["optimizer"]
    if o.get("registered_name"):
        opt = _resolve_class(o, custom_objects, "optimizer").from_config(dict(o["config"]))
    else:
        opt = optimizers.deserialize(o)
    return dict(optimizer=opt, loss=dec(cfg.get("loss"), L.get),
                metrics=dec(cfg.get("metrics"), M.get),
                weighted_metrics=dec(cfg.get("weighted_metrics"), M.get),
                loss_weights=cfg.get("loss_weights"))


def model_to_dict(model, include_compile=True):
    """Everything `config.json` holds for `model`."""
    cls = type(model)
    from mylib.models.sequential import Sequential
    from mylib.models.training import Model

    builtin = cls in (Sequential, Model)
    if not builtin and registered_name_of(cls) is None:
        raise ValueError(
            f"Cannot save the architecture of the subclassed model '{cls.__name__}': its "
            "class is not registered, so it could not be found again when loading. Either "
            "save the weights only (`model.save_weights(path)`, then build a new instance "
            "and `load_weights`), or register the class with "
            "`@ml.saving.register_serializable(package=...)` and implement `get_config()`.")
    out = serialize_layer(model)
    if not model._is_graph_network and not isinstance(model, Sequential) and \
            model.inputs is not None:
        out["build_config"] = _input_specs(model)
    if include_compile:
        try:
            out["compile_config"] = _compile_config(model)
        except ValueError as e:
            warnings.warn(f"The model's compile arguments were not saved ({e}); "
                          "`load_model` returns an uncompiled model.", stacklevel=3)
            out["compile_config"] = None
    return out


def model_from_dict(d, custom_objects=None, compile=True):
    from mylib.models.training import Model

    cls = _resolve_class(d, custom_objects, "model")
    if not (isinstance(cls, type) and issubclass(cls, Model)):
        raise ValueError(f"The saved object '{d.get('class_name')}' is not a model.")
    config = _restore_registered(dict(d.get("config") or {}), custom_objects)
    model = cls.from_config(config, custom_objects=custom_objects)
    if d.get("build_config") is not None and model.inputs is None:
        _build_from_specs(model, d["build_config"])
    if compile and d.get("compile_config"):
        model.compile(**_deserialize_compile(d["compile_config"], custom_objects))
    return model


def to_json(model, **kwargs):
    return json.dumps(model_to_dict(model, include_compile=False), **kwargs)


def model_from_json(json_string, custom_objects=None):
    """A new model (with new weights) from `Model.to_json()`'s text.

    Raises:
      ValueError: the text is not JSON, names an unknown class, or does not describe a
        model (a wrong type or a missing entry anywhere in it).
    """
    d = _archive.loads_json(json_string.encode() if isinstance(json_string, str)
                            else json_string, "model_from_json: the text")
    return _rebuild(d, custom_objects, False, "model_from_json: the text")


# What rebuilding from a config raises when an entry has the wrong type or is missing
# (a corrupted or crafted file): reported as one ValueError naming the source.
_MALFORMED = (TypeError, AttributeError, KeyError, IndexError, RecursionError)


def _rebuild(d, custom_objects, compile, where):
    """`model_from_dict` for a config read from a file or text (`where`): every error
    of a config that does not describe a model becomes a ValueError naming `where`."""
    if not isinstance(d, dict):
        raise ValueError(f"{where} is not a model config (a JSON object); got "
                         f"{type(d).__name__}.")
    try:
        return model_from_dict(d, custom_objects, compile=compile)
    except RecursionError:
        raise ValueError(f"{where} is nested too deeply to rebuild the model.") from None
    except _MALFORMED as e:
        raise ValueError(
            f"{where} does not describe a model mylib can rebuild ({type(e).__name__}: "
            f"{str(e)[:300]}). The file is corrupted, crafted, or was written by another "
            "program; nothing was loaded.") from e


def clone_model(model, custom_objects=None):
    """A new model with the architecture of `model` (Sequential or functional, or a
    registered subclassed model) and newly initialized weights."""
    m = model_from_dict(model_to_dict(model, include_compile=False), custom_objects,
                        compile=False)
    if m.inputs is not None:
        m._ensure_built()
    return m


# ---------------------------------------------------------------- arrays
def _encode_array(a):
    """(array numpy can store without pickling, dtype name)."""
    a = np.asarray(a)
    name = a.dtype.name
    if a.dtype.kind == "V" or name in ("bfloat16",) or a.dtype.type.__module__ == "ml_dtypes":
        return a.view(np.dtype(f"u{a.dtype.itemsize}")), name
    return a, name


def _decode_array(a, dtype_name):
    if a.dtype.name == dtype_name:
        return a
    import ml_dtypes  # noqa: F401 - registers bfloat16 & co. with numpy

    dt = np.dtype(getattr(ml_dtypes, dtype_name, dtype_name))
    return a.view(dt)


def _npz_bytes(arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _pack(arrays, entries):
    out, meta = {}, []
    for key, (name, value) in zip(entries, arrays):
        a, dt = _encode_array(value)
        out[key] = a
        meta.append({"key": key, "name": name, "shape": list(np.shape(value)), "dtype": dt})
    return out, meta


def _weights_payload(model):
    from mylib.runtime import keras_session as backend

    ws = model.weights
    values = backend.get_values(ws)
    keys = [f"w{i:04d}" for i in range(len(ws))]
    return _pack(list(zip([w.name for w in ws], values)), keys)


def _optimizer_payload(model):
    from mylib.runtime import keras_session as backend

    opt = model.optimizer
    if opt is None or opt._iterations is None:
        return None, None
    names, vars_ = ["iterations"], [opt._iterations]
    if opt._lr_var is not None:
        names.append("learning_rate")
        vars_.append(opt._lr_var)
    for i, w in enumerate(model.weights):
        for j, s in enumerate(opt._slots.get(w._key, [])):
            names.append(f"s{i:04d}_{j}")
            vars_.append(s)
    values = backend.get_values(vars_)
    return _pack(list(zip([v.name for v in vars_], values)), names)


def _write_zip(path, members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in members:
            z.writestr(name, data)
    atomic_write(path, buf.getvalue())


def _metadata(fmt, **extra):
    return {"format": fmt, "format_version": FORMAT_VERSION,
            "mylib_version": __version__,
            "date_saved": time.strftime("%Y-%m-%d@%H:%M:%S"), **extra}


def _check_overwrite(path, overwrite):
    import os

    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} exists and overwrite=False.")


def save_model(model, filepath, overwrite=True, include_optimizer=True, extra_state=None):
    """Writes `model` (architecture, weights, compile arguments and optimizer state)
    to the zip file `filepath` (see the module docstring).

    Raises:
      ValueError: a subclassed model whose class is not registered (save its weights
        with `save_weights` instead), or a config value JSON cannot hold.
    """
    import os

    filepath = os.fspath(filepath)
    _check_overwrite(filepath, overwrite)
    if model.inputs is None:
        raise ValueError(f'Model "{model.name}" has not been built yet: call it on data or '
                         "`build(input_shape)` before saving.")
    model._ensure_built()
    config = model_to_dict(model)
    weights, wmeta = _weights_payload(model)
    members = [("config.json", json.dumps(config).encode())]
    ometa = None
    if include_optimizer:
        opt, ometa = _optimizer_payload(model)
        if opt is not None:
            members.append(("optimizer.npz", _npz_bytes(opt)))
    members.append(("model.weights.npz", _npz_bytes(weights)))
    meta = _metadata(FORMAT, weights=wmeta, optimizer=ometa, extra=extra_state)
    members.insert(0, ("metadata.json", json.dumps(meta).encode()))
    _write_zip(filepath, members)


def _open_archive(path):
    """The open `Archive` of a mylib model or weights file (read lazily: see
    `mylib.models._archive` for what is checked before any data is read)."""
    return _archive.Archive(path, (FORMAT, WEIGHTS_FORMAT), FORMAT_VERSION)


def _check_weight_entries(model, ar, wmeta):
    """Validates the file's weight metadata against `model.weights` (count and shapes)
    before anything is read; returns the weights."""
    path = ar.path
    ar.check_entries(wmeta, "weight")
    ws = _in_file_order(model.weights, wmeta)
    if len(wmeta) != len(ws):
        raise ValueError(
            f"{path} holds {len(wmeta)} weights ({[m.get('name') for m in wmeta]}), but "
            f'model "{model.name}" has {len(ws)} ({[w.name for w in ws]}). Nothing was '
            "loaded.")
    for w, m in zip(ws, wmeta):
        if tuple(m["shape"]) != tuple(w.shape.as_list()):
            raise ValueError(
                f"{path}: weight shape mismatch for '{w.name}' (saved as '{m['name']}'): "
                f"the model expects {tuple(w.shape.as_list())}, the file holds "
                f"{tuple(m['shape'])}. Nothing was loaded.")
    return ws


def _in_file_order(ws, wmeta):
    """`ws` in the order of the file's weight entries where the file names the same
    weights in another order (files written before functional models ordered their
    layers as Keras does); else `ws` as it is, matched by position."""
    names = [m.get("name") for m in wmeta]
    by_name = {w.name: w for w in ws}
    if len(by_name) != len(ws) or len(set(names)) != len(names) or \
            set(names) != set(by_name) or names == [w.name for w in ws]:
        return list(ws)
    return [by_name[n] for n in names]


def _optimizer_targets(model, ar, ometa, ws):
    """The optimizer variables the file's optimizer arrays go to (slot ``s<i>_<j>``: slot j
    of the file's weight i, `ws[i]`; slots are created
    where missing), each entry's shape checked against its variable; nothing is
    assigned."""
    path = ar.path
    ar.check_entries(ometa, "optimizer")
    opt = model.optimizer
    opt._ensure_built(model.graph)
    targets = []
    for m in ometa:
        k = m["key"]
        if k == "iterations":
            t = opt._iterations
        elif k == "learning_rate":
            if opt._lr_var is None:
                raise ValueError(f"{path}: the saved optimizer has a learning-rate variable, "
                                 "the loaded one uses a schedule. Nothing was loaded.")
            t = opt._lr_var
        else:
            parts = k[1:].split("_") if k.startswith("s") else []
            if len(parts) != 2 or not all(x.isdigit() for x in parts):
                raise errors.DataLossError(f"{path}: unknown optimizer array '{k}'.")
            i, j = int(parts[0]), int(parts[1])
            if i >= len(ws):
                raise ValueError(f"{path}: optimizer slot '{m['name']}' belongs to weight "
                                 f"{i}; the model has {len(ws)}. Nothing was loaded.")
            slots = opt._get_slots(ws[i])
            if j >= len(slots):
                raise ValueError(f"{path}: optimizer slot '{m['name']}' does not exist in "
                                 f"the loaded optimizer '{opt.name}'. Nothing was loaded.")
            t = slots[j]
        if tuple(m["shape"]) != tuple(t.shape.as_list()):
            raise ValueError(f"{path}: optimizer variable '{t.name}' has shape "
                             f"{tuple(t.shape.as_list())}, the file holds "
                             f"{tuple(m['shape'])} ('{m['name']}'). Nothing was loaded.")
        targets.append(t)
    return targets


def _restore(model, ar, with_optimizer, validate_extra=None):
    """Loads the weights (and with `with_optimizer` the optimizer state) of open
    archive `ar` into `model`: every check (metadata against the model, `validate_extra`
    on the file's ``extra``, each array's header, size and checksum) comes before the
    first assignment, and all variables are then set together. Returns ``extra``."""
    from mylib.runtime import keras_session as backend

    meta = ar.meta
    ws = _check_weight_entries(model, ar, meta.get("weights"))
    ometa = meta.get("optimizer") if with_optimizer else None
    otargets = _optimizer_targets(model, ar, ometa, ws) if ometa else []
    extra = meta.get("extra")
    if validate_extra is not None:
        validate_extra(extra)
    values = _arrays_from(ar, meta["weights"], "model.weights.npz", "weight")
    if ometa:
        values += _arrays_from(ar, ometa, "optimizer.npz", "optimizer")
        backend.ensure_initialized(otargets)
    backend.set_values(list(ws) + otargets, values, owner=f'Model "{model.name}"')
    return extra


def _arrays_from(ar, meta_list, member, what):
    return [_decode_array(a, m["dtype"])
            for a, m in zip(ar.read_arrays(member, meta_list, what), meta_list)]


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model from a file written by `Model.save`: same architecture, weights and
    (with `compile`) compile arguments and optimizer state, so it predicts identically
    and continues training exactly where the saved model stopped.

    The file is untrusted input: nothing in it runs, only the members needed are read,
    and every array's shape, dtype and size are checked against the built model before
    its data is read, so a load allocates at most the model's own variables plus the
    JSON members (at most 64 MiB each, nested at most 100 levels).

    Args:
      filepath: path of the ``.mylib`` file.
      custom_objects: ``{name: class or function}`` for custom classes not registered
        with `register_serializable`.
      compile: compile the model as it was saved (with the optimizer's state).
      safe_mode: accepted for Keras 3's signature. Keras 3 refuses to load a `Lambda`
        layer's Python bytecode unless ``safe_mode=False``; mylib never stores or
        loads code (a `Lambda`'s function is saved by its registered name), so loading
        is safe either way and this flag changes nothing.
    Raises:
      ValueError: an unknown class name (the message says how to register it), a
        config nested too deeply or not describing a model (a wrong type or a missing
        entry: a corrupted or crafted file), or weights whose shapes do not match the
        architecture.
      DataLossError: a truncated, corrupted, oversized or foreign file.
    """
    with _open_archive(filepath) as ar:
        if ar.meta["format"] != FORMAT or not ar.has("config.json"):
            raise ValueError(f"{filepath} holds weights only (from `save_weights`); build "
                             "the model and call `model.load_weights(path)`.")
        d = ar.read_json("config.json")
        if not isinstance(d, dict):
            raise errors.DataLossError(f"{filepath}: config.json is not a model config.")
        model = _rebuild(d, custom_objects, compile, f"{filepath}: config.json")
        if model.inputs is not None:  # before its variables take memory
            _check_weight_entries(model, ar, ar.meta.get("weights"))
        model._ensure_built()
        _restore(model, ar, compile and bool(ar.meta.get("optimizer")) and model.compiled)
    return model


def save_weights(model, filepath, overwrite=True):
    import os

    filepath = os.fspath(filepath)
    _check_overwrite(filepath, overwrite)
    if model.inputs is None:
        raise ValueError(f'Model "{model.name}" has not been built yet; nothing to save.')
    model._ensure_built()
    weights, wmeta = _weights_payload(model)
    meta = _metadata(WEIGHTS_FORMAT, weights=wmeta)
    _write_zip(filepath, [("metadata.json", json.dumps(meta).encode()),
                          ("model.weights.npz", _npz_bytes(weights))])


def load_weights(model, filepath):
    """Sets `model`'s weights from a `save_weights` (or `save`) file; every shape is
    checked first (before any array data is read) and nothing changes on a mismatch."""
    if model.inputs is None:
        raise ValueError(f'Model "{model.name}" has not been built yet: build it (call it on '
                         "data or `build(input_shape)`) before `load_weights`.")
    model._ensure_built()
    with _open_archive(filepath) as ar:
        _restore(model, ar, with_optimizer=False)


# ---------------------------------------------------------------- full training state
def save_training_state(model, filepath, extra):
    """Weights, optimizer state and `extra` (JSON: epoch, step, RNG state...) in one
    file, for `BackupAndRestore`. Works for subclassed models too (no config)."""
    weights, wmeta = _weights_payload(model)
    opt, ometa = _optimizer_payload(model)
    members = [("model.weights.npz", _npz_bytes(weights))]
    if opt is not None:
        members.append(("optimizer.npz", _npz_bytes(opt)))
    meta = _metadata(WEIGHTS_FORMAT, weights=wmeta, optimizer=ometa, extra=extra)
    members.insert(0, ("metadata.json", json.dumps(meta).encode()))
    _write_zip(filepath, members)


def load_training_state(model, filepath, validate_extra=None):
    """Restores what `save_training_state` wrote; returns its `extra`.

    All or nothing: the weights and optimizer metadata are checked against the model,
    `validate_extra(extra)` (if given) is called, and every array is read and checked
    before any variable changes; on any error (raised as is) the model keeps its
    weights and optimizer state.
    """
    model._ensure_built()
    with _open_archive(filepath) as ar:
        return _restore(model, ar, model.optimizer is not None, validate_extra)
