"""Every layer's config round-trips every constructor argument (regularizers,
constraints, initializers, activations, flags), and a saved model with regularizers
and constraints evaluates and trains exactly as the original."""

import inspect
import json

import numpy as np
import pytest

import mylib as ml
from mylib import layers as L
from mylib.layers import constraints as C
from mylib.layers import initializers as I
from mylib.layers import regularizers as R
from mylib.models import saving

# Non-default values by constructor-argument name, used for every layer that takes it.
GENERIC = {
    "activation": "relu",
    "recurrent_activation": "tanh",
    "use_bias": False,
    "kernel_initializer": lambda: I.RandomNormal(stddev=0.07, seed=3),
    "bias_initializer": lambda: I.Constant(0.25),
    "recurrent_initializer": lambda: I.GlorotNormal(seed=5),
    "depthwise_initializer": lambda: I.HeUniform(seed=2),
    "embeddings_initializer": lambda: I.RandomUniform(-0.2, 0.2, seed=4),
    "beta_initializer": lambda: I.Constant(0.1),
    "gamma_initializer": lambda: I.Constant(0.9),
    "moving_mean_initializer": lambda: I.Constant(0.3),
    "moving_variance_initializer": lambda: I.Constant(2.0),
    "kernel_regularizer": lambda: R.L1L2(l1=0.001, l2=0.02),
    "bias_regularizer": lambda: R.L2(0.03),
    "recurrent_regularizer": lambda: R.L1(0.004),
    "depthwise_regularizer": lambda: R.L2(0.05),
    "embeddings_regularizer": lambda: R.L2(0.06),
    "beta_regularizer": lambda: R.L1(0.07),
    "gamma_regularizer": lambda: R.L2(0.08),
    "activity_regularizer": lambda: R.L1L2(l1=0.01, l2=0.02),
    "kernel_constraint": lambda: C.MaxNorm(1.5, axis=0),
    "bias_constraint": lambda: C.NonNeg(),
    "recurrent_constraint": lambda: C.UnitNorm(axis=1),
    "depthwise_constraint": lambda: C.MinMaxNorm(0.1, 2.0, rate=0.5, axis=[0, 1, 2]),
    "embeddings_constraint": lambda: C.MaxNorm(3.0, axis=1),
    "beta_constraint": lambda: C.NonNeg(),
    "gamma_constraint": lambda: C.MaxNorm(2.5),
    "dropout": 0.25,
    "recurrent_dropout": 0.125,
    "seed": 7,
    "return_sequences": True,
    "return_state": True,
    "go_backwards": True,
    "unroll": True,
    "zero_output_for_mask": True,
    "trainable": False,
    "data_format": "channels_last",
    "keepdims": True,
    "padding": "same",
    "mask_zero": True,
    "center": False,
    "scale": False,
    "epsilon": 0.01,
    "momentum": 0.9,
}

# Required arguments and class-specific values.
SPECIFIC = {
    "Activation": {"activation": "tanh"},
    "ActivityRegularization": {"l1": 0.01, "l2": 0.02},
    "AveragePooling1D": {"pool_size": 3, "strides": 2},
    "AveragePooling2D": {"pool_size": (3, 3), "strides": (2, 1)},
    "MaxPool1D": {"pool_size": 3, "strides": 2},
    "MaxPool2D": {"pool_size": (3, 3), "strides": (2, 1)},
    "BatchNormalization": {"axis": 1},
    "Concatenate": {"axis": 1},
    "Conv1D": {"filters": 4, "kernel_size": 3, "strides": 2, "dilation_rate": 1, "groups": 1},
    "Conv2D": {"filters": 4, "kernel_size": (3, 2), "strides": (1, 1),
               "dilation_rate": (2, 1), "groups": 1},
    "Conv2DTranspose": {"filters": 4, "kernel_size": (3, 3), "strides": (2, 2),
                        "output_padding": (1, 1)},
    "Conv3D": {"filters": 4, "kernel_size": (3, 2, 2), "strides": (1, 2, 1),
               "dilation_rate": (1, 1, 2), "groups": 2},
    "Conv1DTranspose": {"filters": 4, "kernel_size": 3, "strides": 2, "output_padding": 1,
                        "dilation_rate": 1},
    "Conv3DTranspose": {"filters": 4, "kernel_size": (3, 2, 2), "strides": (2, 2, 1),
                        "output_padding": (1, 0, 0)},
    "EinsumDense": {"equation": "abc,cde->abde", "output_shape": (None, 2, 4),
                    "bias_axes": "de"},
    "SpatialDropout3D": {"rate": 0.2},
    "Resizing": {"height": 5, "width": 7, "interpolation": "nearest",
                 "crop_to_aspect_ratio": True},
    "CenterCrop": {"height": 5, "width": 7},
    "RandomCrop": {"height": 5, "width": 7, "seed": 3},
    "RandomRotation": {"factor": (-0.1, 0.2), "fill_mode": "constant", "fill_value": 0.5},
    "RandomZoom": {"height_factor": (-0.2, 0.1), "width_factor": 0.3},
    "RandomTranslation": {"height_factor": 0.1, "width_factor": (-0.2, 0.2),
                          "fill_mode": "wrap"},
    "RandomContrast": {"factor": (0.1, 0.3), "value_range": (0, 1)},  # Keras keeps pairs
    "RandomBrightness": {"factor": (-0.2, 0.4), "value_range": (0, 1)},
    "AlphaDropout": {"rate": 0.2, "noise_shape": (None, 1)},
    "RMSNormalization": {"axis": [1, 2], "epsilon": 1e-4},
    "Cropping1D": {"cropping": (2, 3)},
    "Cropping2D": {"cropping": ((1, 2), (0, 1))},
    "Dense": {"units": 3},
    "DepthwiseConv2D": {"kernel_size": (3, 3), "depth_multiplier": 2},
    "Dot": {"axes": 1, "normalize": True},
    "Dropout": {"rate": 0.3, "noise_shape": (None, 1)},
    "Embedding": {"input_dim": 11, "output_dim": 4},
    "GRU": {"units": 3, "reset_after": False},
    "LSTM": {"units": 3, "unit_forget_bias": False},
    "SimpleRNN": {"units": 3},
    "SimpleRNNCell": {"units": 3},
    "LSTMCell": {"units": 3, "unit_forget_bias": False},
    "GRUCell": {"units": 3, "reset_after": False},
    "AdaptiveAveragePooling1D": {"output_size": 3},
    "AdaptiveAveragePooling2D": {"output_size": (2, 3), "data_format": "channels_first"},
    "AdaptiveAveragePooling3D": {"output_size": 2},
    "AdaptiveMaxPooling1D": {"output_size": 4},
    "AdaptiveMaxPooling2D": {"output_size": 2},
    "AdaptiveMaxPooling3D": {"output_size": (1, 2, 3)},
    "GroupedQueryAttention": {"head_dim": 4, "num_query_heads": 4, "num_key_value_heads": 2,
                              "use_gate": True, "sliding_window": 3, "dropout": 0.1},
    "ConvLSTMCell": {"rank": 2, "filters": 3, "kernel_size": (3, 2), "padding": "same",
                     "dilation_rate": (2, 1), "unit_forget_bias": False},
    "ConvLSTM1D": {"filters": 3, "kernel_size": 2, "strides": 2, "return_sequences": True},
    "ConvLSTM2D": {"filters": 3, "kernel_size": (3, 2), "padding": "same",
                   "data_format": "channels_first", "go_backwards": True,
                   "recurrent_dropout": 0.1},
    "ConvLSTM3D": {"filters": 2, "kernel_size": 2, "stateful": True, "return_state": True},
    "RNN": {"cell": lambda: L.LSTMCell(3, dropout=0.1, kernel_regularizer=R.L2(0.01)),
            "return_sequences": True, "go_backwards": True},
    "StackedRNNCells": {"cells": lambda: [L.LSTMCell(3), L.GRUCell(2, reset_after=False)]},
    "GaussianDropout": {"rate": 0.2},
    "GaussianNoise": {"stddev": 0.3},
    "GroupNormalization": {"groups": 2, "axis": 1},
    "LayerNormalization": {"axis": [1, 2], "rms_scaling": True},
    "MultiHeadAttention": {"num_heads": 2, "key_dim": 3, "value_dim": 5, "output_shape": 6},
    "Permute": {"dims": (2, 1)},
    "RepeatVector": {"n": 3},
    "Reshape": {"target_shape": (2, -1)},
    "SpatialDropout1D": {"rate": 0.2},
    "SpatialDropout2D": {"rate": 0.2},
    "UpSampling1D": {"size": 3},
    "UpSampling2D": {"size": (2, 3), "interpolation": "bilinear"},
    "ZeroPadding1D": {"padding": (1, 2)},
    "ZeroPadding2D": {"padding": ((1, 2), (3, 4))},
    "Bidirectional": {"layer": lambda: L.LSTM(3, return_sequences=True, dropout=0.1,
                                              kernel_regularizer=R.L2(0.01),
                                              kernel_constraint=C.MaxNorm(2.0)),
                      "backward_layer": lambda: L.LSTM(3, return_sequences=True,
                                                       go_backwards=True, dropout=0.2,
                                                       recurrent_regularizer=R.L1(0.1)),
                      "merge_mode": "sum"},
    "TimeDistributed": {"layer": lambda: L.Dense(3, kernel_regularizer=R.L2(0.01),
                                                 bias_constraint=C.NonNeg())},
    "ReLU": {"max_value": 3.0, "negative_slope": 0.1, "threshold": 0.5},
    "LeakyReLU": {"negative_slope": 0.1},
    "PReLU": {"alpha_initializer": lambda: I.Constant(0.25),
              "alpha_regularizer": lambda: R.L2(0.01), "alpha_constraint": lambda: C.NonNeg(),
              "shared_axes": [1]},
    "ELU": {"alpha": 0.5},
    "Softmax": {"axis": 1},
    "Rescaling": {"scale": 0.5, "offset": 1.0},
    "Normalization": {"axis": [1, 2], "mean": [1.0, 2.0], "variance": [3.0, 4.0],
                      "invert": True},
    "CategoryEncoding": {"num_tokens": 5, "output_mode": "count"},
    "Hashing": {"num_bins": 5, "mask_value": "x", "salt": [1, 2], "output_mode": "multi_hot"},
    "StringLookup": {"max_tokens": 10, "num_oov_indices": 2, "mask_token": "",
                     "oov_token": "?", "vocabulary": ["a", "b"], "output_mode": "count",
                     "pad_to_max_tokens": True},
    "IntegerLookup": {"vocabulary": [5, 7], "num_oov_indices": 2, "mask_token": 0,
                      "oov_token": -2, "oov_method": "farmhash", "invert": False},
    "Attention": {"use_scale": True, "score_mode": "concat", "dropout": 0.1},
    "AdditiveAttention": {"use_scale": False, "dropout": 0.1},
    "UnitNormalization": {"axis": [1, 2]},
    "SeparableConv2D": {"filters": 4, "kernel_size": (3, 2), "strides": (2, 1),
                        "dilation_rate": (1, 1), "depth_multiplier": 2,
                        "pointwise_initializer": lambda: I.Constant(0.5),
                        "pointwise_regularizer": lambda: R.L2(0.02),
                        "pointwise_constraint": lambda: C.NonNeg()},
    "SeparableConv1D": {"filters": 4, "kernel_size": 3, "strides": 2, "dilation_rate": 1,
                        "depth_multiplier": 2,
                        "pointwise_initializer": lambda: I.Constant(0.5),
                        "pointwise_regularizer": lambda: R.L2(0.02),
                        "pointwise_constraint": lambda: C.NonNeg()},
    "DepthwiseConv1D": {"kernel_size": 3, "depth_multiplier": 2},
    "Cropping3D": {"cropping": ((1, 2), (0, 1), (2, 0))},
    "ZeroPadding3D": {"padding": ((1, 2), (0, 1), (2, 0))},
    "TextVectorization": {"max_tokens": 20, "standardize": "lower", "split": "character",
                          "ngrams": 2, "output_sequence_length": 5, "vocabulary": ["a", "b"]},
}

# Arguments that configure construction only (not part of a layer's config), by class.
NOT_IN_CONFIG = {"name", "dtype", "input_shape", "batch_size", "input_dim",
                 "batch_input_shape", "autocast", "weights",
                 "input_length"}  # Embedding's input_length: ignored, as Keras 3
# Arguments of a base class that a subclass does not take (it sets them itself).
NOT_TAKEN = {
    "SimpleRNN": {"recurrent_activation"},
    "DepthwiseConv2D": {"filters", "groups", "kernel_initializer", "kernel_regularizer",
                        "kernel_constraint"},
    "DepthwiseConv1D": {"filters", "groups", "kernel_initializer", "kernel_regularizer",
                        "kernel_constraint"},
    "Conv2DTranspose": {"groups"},
    "Conv1DTranspose": {"groups"},
    "Conv3DTranspose": {"groups"},
    "MultiHeadAttention": {"attention_axes"},
}
SKIP = {"Layer", "InputLayer", "FlaxLayer", "Lambda"}  # tested in their own files
# Values a layer may rename or normalise: compared through from_config only.
NORMALISED = {("Cropping1D", "cropping"), ("ZeroPadding1D", "padding"),
              ("Dot", "axes")}


def _layer_classes():
    out, seen = [], set()
    for n in sorted(dir(L)):
        c = getattr(L, n)
        if isinstance(c, type) and issubclass(c, L.Layer) and c not in seen and \
                c.__name__ not in SKIP:
            seen.add(c)
            out.append(c)
    return out


def _init_params(cls):
    """The constructor's named arguments, following ``**kwargs`` up the class chain."""
    names = []
    for k in cls.__mro__:
        if "__init__" not in vars(k):
            continue
        sig = inspect.signature(vars(k)["__init__"])
        names += [p.name for p in sig.parameters.values()
                  if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
                  and p.name not in names]
        if not any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
            break
        if k is L.Layer:
            break
    return names


def _kwargs_for(cls):
    spec = SPECIFIC.get(cls.__name__, {})
    kw = {}
    for name in _init_params(cls):
        if name in NOT_TAKEN.get(cls.__name__, ()):
            continue
        if name in spec:
            v = spec[name]
        elif name in GENERIC:
            v = GENERIC[name]
        else:
            continue
        kw[name] = v() if callable(v) and not isinstance(v, str) else v
    if cls.__name__ == "ActivityRegularization":
        kw.pop("activity_regularizer", None)
    if cls.__name__ in ("GaussianDropout", "GaussianNoise", "SpatialDropout1D",
                        "SpatialDropout2D", "Dropout") and "padding" in kw:
        kw.pop("padding")
    return kw


def _expected(value):
    """The config form of a constructor value."""
    if isinstance(value, R.Regularizer):
        return R.serialize(value)
    if isinstance(value, C.Constraint):
        return C.serialize(value)
    if isinstance(value, I.Initializer):
        return I.serialize(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _plain(v):
    return json.loads(json.dumps(v))


CLASSES = _layer_classes()


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_config_keeps_every_constructor_argument(cls):
    kw = _kwargs_for(cls)
    layer = cls(**kw)
    cfg = layer.get_config()
    missing = [k for k in kw if k not in cfg and k not in NOT_IN_CONFIG]
    assert not missing, f"{cls.__name__}.get_config() drops {missing}"
    for k, v in kw.items():
        if k in NOT_IN_CONFIG or k in ("layer", "backward_layer", "cell", "cells") or (cls.__name__, k) in NORMALISED:
            continue
        got = cfg[k]
        if k == "activation" or k == "recurrent_activation":
            assert got == v, (cls.__name__, k, got)
            continue
        want = _plain(_expected(v))
        if isinstance(want, int) and not isinstance(want, bool) and isinstance(got, (list,
                                                                                   tuple)):
            want = [want] * len(got)  # an int size normalised to one per spatial axis
        assert _plain(got) == want, (cls.__name__, k, got, v)
    # from_config rebuilds the same config, also through the saved (JSON) form
    again = cls.from_config(cfg).get_config()
    assert _plain({**again, "name": None}) == _plain({**cfg, "name": None})
    entry = json.loads(json.dumps(saving.serialize_layer(layer)))
    loaded = saving.deserialize_layer(entry)
    assert type(loaded) is cls
    assert _plain({**loaded.get_config(), "name": None}) == _plain({**cfg, "name": None})


def test_regularizer_constraint_initializer_objects_are_rebuilt_not_named():
    layer = L.Dense(3, kernel_regularizer=R.L2(0.5), kernel_constraint=C.MaxNorm(1.0),
                    activity_regularizer=R.L1(0.25), bias_constraint="non_neg")
    entry = json.loads(json.dumps(saving.serialize_layer(layer)))
    new = saving.deserialize_layer(entry)
    assert isinstance(new.kernel_regularizer, R.L1L2) and new.kernel_regularizer.l2 == 0.5
    assert isinstance(new.activity_regularizer, R.L1L2)
    assert new.activity_regularizer.l1 == 0.25
    assert isinstance(new.kernel_constraint, C.MaxNorm)
    assert new.kernel_constraint.max_value == 1.0
    assert isinstance(new.bias_constraint, C.NonNeg)


def test_registered_custom_regularizer_and_constraint_round_trip():
    @ml.saving.register_serializable(package="cfgtest")
    class Scaled(R.Regularizer):
        def __init__(self, factor=1.0):
            self.factor = factor

        def __call__(self, x):
            return self.factor * ml.reduce_sum(x * x)

        def get_config(self):
            return {"factor": self.factor}

    @ml.saving.register_serializable(package="cfgtest")
    class Clip(C.Constraint):
        def __init__(self, limit=1.0):
            self.limit = limit

        def __call__(self, w):
            return ml.clip_by_value(w, -self.limit, self.limit)

        def get_config(self):
            return {"limit": self.limit}

    layer = L.Dense(2, kernel_regularizer=Scaled(0.3), kernel_constraint=Clip(0.7))
    entry = json.loads(json.dumps(saving.serialize_layer(layer)))
    new = saving.deserialize_layer(entry)
    assert type(new.kernel_regularizer) is Scaled and new.kernel_regularizer.factor == 0.3
    assert type(new.kernel_constraint) is Clip and new.kernel_constraint.limit == 0.7


def test_wrappers_keep_registered_inner_layers_and_the_backward_layer():
    @ml.saving.register_serializable(package="cfgtest")
    class Scale(L.Layer):
        def __init__(self, factor=2.0, **kw):
            super().__init__(**kw)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def compute_output_shape(self, s):
            return s

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    td = L.TimeDistributed(Scale(3.0))
    new = saving.deserialize_layer(json.loads(json.dumps(saving.serialize_layer(td))))
    assert type(new.layer) is Scale and new.layer.factor == 3.0
    bi = L.Bidirectional(L.GRU(2), backward_layer=L.GRU(2, go_backwards=True,
                                                        kernel_regularizer=R.L2(0.4)))
    new = saving.deserialize_layer(json.loads(json.dumps(saving.serialize_layer(bi))))
    assert new.backward_layer.kernel_regularizer.l2 == 0.4


def test_saved_regularized_constrained_model_evaluates_and_trains_identically(tmp_path):
    rs = np.random.RandomState(0)
    x = rs.randn(32, 4).astype(np.float32)
    y = rs.randn(32, 2).astype(np.float32)
    m = ml.Sequential([
        L.Input(shape=(4,)),
        L.Dense(8, activation="relu", kernel_regularizer=R.L2(0.5),
                kernel_constraint=C.MaxNorm(0.8), activity_regularizer=R.L1(0.05)),
        L.Dense(2, kernel_regularizer="l2", bias_regularizer=R.L1(0.1)),
    ])
    m.compile(ml.optimizers.SGD(0.05), "mse")
    m.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    before = m.evaluate(x, y, verbose=0)
    plain = ml.Sequential([L.Input(shape=(4,)), L.Dense(8, activation="relu"), L.Dense(2)])
    plain.compile(ml.optimizers.SGD(0.05), "mse")
    plain.set_weights(m.get_weights())
    assert before > plain.evaluate(x, y, verbose=0) + 1e-3  # regularization is counted
    path = tmp_path / "reg.mylib"
    m.save(path)
    m2 = ml.models.load_model(path)
    assert m2.evaluate(x, y, verbose=0) == before
    m.fit(x, y, epochs=1, batch_size=32, shuffle=False, verbose=0)
    m2.fit(x, y, epochs=1, batch_size=32, shuffle=False, verbose=0)
    for a, b in zip(m.get_weights(), m2.get_weights()):
        np.testing.assert_array_equal(a, b)
    # the constraint still holds after the step on the loaded model
    k = m2.get_weights()[0]
    assert np.sqrt((k ** 2).sum(axis=0)).max() <= 0.8 + 1e-5
    assert m2.evaluate(x, y, verbose=0) == m.evaluate(x, y, verbose=0)
