"""`plot_model` / `model_to_dot`: the layer graph drawn with pydot + graphviz."""

from __future__ import annotations

__all__ = ["model_to_dot", "plot_model"]

_INSTALL = ("plot_model needs the Python package `pydot` (pip install pydot) and the "
            "Graphviz `dot` program (apt-get install graphviz, brew install graphviz, or "
            "https://graphviz.org/download/)")


def _pydot():
    try:
        import pydot
    except ImportError:
        raise ImportError(_INSTALL + "; pydot is not installed.") from None
    return pydot


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=200, subgraph=False,
                 show_layer_activations=False, show_trainable=False, **kwargs):
    """A `pydot.Dot` graph of `model`'s layers: one node per layer (name, class, and
    the output shape with `show_shapes`), an edge per connection between layers.

    Raises:
      ImportError: pydot is not installed (the message says what to install).
    """
    pydot = _pydot()
    dot = pydot.Dot(graph_type="digraph", rankdir=rankdir, dpi=dpi)
    dot.set_node_defaults(shape="record")
    layers = model.layers
    ids = {id(l): str(i) for i, l in enumerate(layers)}
    for layer in layers:
        label = f"{layer.name} | {type(layer).__name__}" if show_layer_names else \
            type(layer).__name__
        if show_layer_activations and getattr(layer, "activation", None) is not None:
            label += f" | {getattr(layer.activation, '__name__', layer.activation)}"
        if show_shapes:
            try:
                shape = layer.output_shape
            except (AttributeError, ValueError):
                shape = "?"
            label += f" | {shape}".replace("None", "?")
        if show_dtype:
            label += f" | {layer.dtype.name}"
        if show_trainable:
            label += f" | trainable={layer.trainable}"
        dot.add_node(pydot.Node(ids[id(layer)], label="{" + label + "}"))
    for layer in layers:
        for node in getattr(layer, "_inbound_nodes", []):
            for src in _inbound_layers(node):
                if id(src) in ids and src is not layer:
                    dot.add_edge(pydot.Edge(ids[id(src)], ids[id(layer)]))
    return dot


def _inbound_layers(node):
    from mylib.layers.base import flatten, keras_history

    out = []
    for t in flatten(getattr(node, "inputs", None)):
        h = keras_history(t) if t is not None else None
        if h is not None:
            out.append(h[0].layer)
    return out


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=True, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, **kwargs):
    """Writes a drawing of `model`'s layer graph to `to_file` (the format from its
    extension: png, svg, pdf, dot).

    Raises:
      ImportError: pydot or Graphviz's `dot` program is missing (the message says what
        to install and where).
    """
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir, dpi=dpi,
                       show_layer_activations=show_layer_activations,
                       show_trainable=show_trainable)
    ext = to_file.rsplit(".", 1)[-1].lower() if "." in to_file else "png"
    if ext == "dot":
        dot.write_raw(to_file)
        return dot
    try:
        dot.write(to_file, format=ext)
    except FileNotFoundError:
        raise ImportError(_INSTALL + "; the Graphviz `dot` program was not found on "
                          "PATH.") from None
    return dot
