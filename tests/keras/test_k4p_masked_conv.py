"""keras-io's PixelCNN pattern, against Keras 3 on the same weights: a layer that
builds its Conv2D sublayer itself in `build` (which must then not build again, with
new weights, when first called) and masks the kernel in `call` with
``kernel.assign(kernel * mask)`` before convolving (the convolution must read the
masked kernel, so no output sees its own or later pixels)."""

import keras
import numpy as np

from mylib import keras as mk


def _model(K):
    class PixelConvLayer(K.layers.Layer):
        def __init__(self, mask_type, **kwargs):
            super().__init__()
            self.mask_type = mask_type
            self.conv = K.layers.Conv2D(**kwargs)

        def build(self, input_shape):
            self.conv.build(input_shape)
            kernel_shape = K.ops.shape(self.conv.kernel)
            self.mask = np.zeros(shape=kernel_shape)
            self.mask[: kernel_shape[0] // 2, ...] = 1.0
            self.mask[kernel_shape[0] // 2, : kernel_shape[1] // 2, ...] = 1.0
            if self.mask_type == "B":
                self.mask[kernel_shape[0] // 2, kernel_shape[1] // 2, ...] = 1.0

        def call(self, inputs):
            self.conv.kernel.assign(self.conv.kernel * self.mask)
            return self.conv(inputs)

    inputs = K.Input((5, 5, 1))
    x = PixelConvLayer("A", filters=4, kernel_size=3, padding="same",
                       activation="relu")(inputs)
    x = PixelConvLayer("B", filters=4, kernel_size=3, padding="same",
                       activation="relu")(x)
    out = K.layers.Conv2D(1, 1, activation="sigmoid")(x)
    return K.Model(inputs, out)


def test_pixel_conv_builds_once_masks_and_trains_as_keras():
    mm, km = _model(mk), _model(keras)
    assert mm.count_params() == km.count_params() == (9 + 1) * 4 + (36 + 1) * 4 + 5
    assert len(mm.weights) == len(km.weights) == 6
    rs = np.random.RandomState(0)
    ws = [rs.randn(*w.shape).astype("float32") * 0.5 for w in km.get_weights()]
    km.set_weights(ws)
    mm.set_weights(ws)
    x = (rs.rand(8, 5, 5, 1) > 0.5).astype("float32")
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    # causal: changing the last pixel changes no output
    x2 = x.copy()
    x2[:, 4, 4, 0] = 1.0 - x2[:, 4, 4, 0]
    np.testing.assert_array_equal(mm.predict(x2, verbose=0), mm.predict(x, verbose=0))
    for m, opt in ((mm, mk.optimizers.SGD(0.5)), (km, keras.optimizers.SGD(0.5))):
        m.compile(opt, "binary_crossentropy")
    hm = mm.fit(x, x, epochs=3, batch_size=4, shuffle=False, verbose=0).history
    hk = km.fit(x, x, epochs=3, batch_size=4, shuffle=False, verbose=0).history
    np.testing.assert_allclose(hm["loss"], hk["loss"], rtol=1e-5)
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_direct_build_marks_a_layer_built():
    d = mk.layers.Dense(3)
    d.build((None, 2))
    assert d.built
    out = d(mk.Input((2,)))
    assert out.shape.as_list() == [None, 3] and len(d.weights) == 2
