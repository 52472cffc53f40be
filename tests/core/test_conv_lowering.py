"""Conv2D over inputs of few channels (an image's first layer) computes its filter
gradient as a matmul of patches: the forward values are XLA's convolution exactly, and
both gradients match `jax.vjp` of `lax.conv_general_dilated` up to float32 rounding."""

import jax
import numpy as np
import pytest
from jax import lax

import mylib as ml


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("xs,ws", [((2, 9, 7, 3), (5, 5, 3, 4)), ((3, 6, 6, 1), (3, 2, 1, 5)),
                                   ((2, 8, 8, 4), (4, 4, 4, 3))])
def test_few_channel_conv2d_matches_xla_and_its_gradients(xs, ws, padding):
    rng = np.random.default_rng(0)
    xv = rng.normal(size=xs).astype(np.float32)
    wv = rng.normal(size=ws).astype(np.float32)

    def ref(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), padding,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    want = ref(xv, wv)
    gv = rng.normal(size=want.shape).astype(np.float32)
    want_dx, want_dw = jax.vjp(ref, xv, wv)[1](gv)
    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder("float32", xs)
        w = ml.Variable(wv)
        y = ml.nn.conv2d(x, w, strides=1, padding=padding)
        dx, dw = ml.gradients(ml.reduce_sum(y * gv), [x, w])
        with ml.Session(graph=g) as s:
            s.run(ml.global_variables_initializer())
            got, gdx, gdw = s.run([y, dx, dw], {x: xv})
    np.testing.assert_array_equal(got, np.asarray(want))
    np.testing.assert_allclose(gdx, want_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gdw, want_dw, rtol=1e-5, atol=1e-4)
    # and against float64 sums: the patch matmul is no less accurate
    x64 = xv.astype(np.float64)
    with jax.enable_x64(True):
        exact_dw = np.asarray(jax.vjp(lambda w: ref(x64, w), wv.astype(np.float64))[1](
            gv.astype(np.float64))[0])
    assert np.abs(gdw - exact_dw).max() <= 2 * np.abs(np.asarray(want_dw) - exact_dw).max() \
        + 1e-5


def test_many_channel_conv2d_keeps_xla_gradients():
    """Above the channel threshold the op differentiates XLA's convolution as before."""
    from mylib.core.ops import nn_ops

    rng = np.random.default_rng(1)
    xv = rng.normal(size=(2, 6, 6, nn_ops._FEW_CHANNELS + 1)).astype(np.float32)
    wv = rng.normal(size=(3, 3, nn_ops._FEW_CHANNELS + 1, 2)).astype(np.float32)
    jaxpr = jax.make_jaxpr(lambda x, w: nn_ops._conv2d_kernel(
        x, w, strides=(1, 1), padding="SAME", dilations=(1, 1), data_format="NHWC"))(xv, wv)
    assert "custom_vjp" not in str(jaxpr)
    jaxpr = jax.make_jaxpr(lambda x, w: nn_ops._conv2d_kernel(
        x[..., :3], w[:, :, :3], strides=(1, 1), padding="SAME", dilations=(1, 1),
        data_format="NHWC"))(xv, wv)
    assert "custom_vjp" in str(jaxpr)
