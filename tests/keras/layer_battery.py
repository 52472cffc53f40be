"""One battery per layer, like Keras's `run_layer_test`: build on an input of unknown
batch size, check the static output shape against `compute_output_shape` and the
expected shape, run it on data (optionally against a reference of the layer's own
weights), check the weight count and the config round trip."""

import numpy as np

from mylib.layers import Input, backend


def run(t, feed=None):
    return backend.get_session(t.graph if not isinstance(t, list) else t[0].graph).run(t, feed)


def layer_test(cls, kwargs, input_shape, expected_output_shape, reference=None, training=None,
               num_weights=None, num_trainable=None, rtol=1e-5, atol=1e-5, input_data=None,
               seed=0):
    """Returns (layer, input data, output value).

    Args:
      input_shape: the per-sample shape (the batch is unknown in the graph).
      expected_output_shape: the per-sample output shape.
      reference: optional fn(x, layer weights as numpy) -> the expected output.
    """
    layer = cls(**kwargs)
    x = Input(shape=input_shape)
    y = layer(x, training=training) if training is not None else layer(x)
    assert tuple(y.shape.as_list()) == (None,) + tuple(expected_output_shape), y.shape
    assert tuple(layer.compute_output_shape((None,) + tuple(input_shape))) == \
        (None,) + tuple(expected_output_shape)
    if num_weights is not None:
        assert len(layer.weights) == num_weights
    if num_trainable is not None:
        assert len(layer.trainable_weights) == num_trainable
    backend.ensure_initialized(layer.weights)
    if input_data is None:
        input_data = np.random.RandomState(seed).randn(3, *input_shape).astype(np.float32)
    out = run(y, {x: input_data})
    assert out.shape == (len(input_data),) + tuple(expected_output_shape)
    if reference is not None:
        want = reference(input_data, [np.asarray(w) for w in layer.get_weights()])
        np.testing.assert_allclose(out, want, rtol=rtol, atol=atol)
    cfg = layer.get_config()
    cfg.pop("name")
    clone = cls.from_config(cfg)
    assert clone.get_config() == {**cfg, "name": clone.name}
    return layer, input_data, out
