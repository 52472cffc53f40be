"""Keras 3 losses whose gradients users train on, checked against Keras 3 (JAX
backend) and jax.grad: categorical cross-entropy from logits with targets that do not
sum to 1 (multi-hot department tags, as in keras-io's functional API guide)."""

import jax
import jax.numpy as jnp
import keras
import numpy as np

import mylib as ml
from mylib import keras as mk

from keras_compare import _same_weights

RS = np.random.RandomState(2)


def test_categorical_crossentropy_from_logits_gradient_for_multi_hot_targets():
    logits = RS.randn(5, 4).astype(np.float32)
    targets = RS.randint(0, 2, size=(5, 4)).astype(np.float32)
    targets[0] = [0.2, 0.1, 0.0, 0.0]  # unnormalized soft targets too
    lg = ml.placeholder(ml.float32, [None, 4])
    loss = mk.losses.CategoricalCrossentropy(from_logits=True)(targets, lg)
    (grad,) = ml.gradients(loss, [lg])
    with ml.Session() as s:
        got_loss, got_grad = s.run([loss, grad], {lg: logits})

    def ref(z):
        return jnp.mean(-jnp.sum(targets * jax.nn.log_softmax(z), -1))

    np.testing.assert_allclose(got_loss, ref(logits), rtol=1e-6)
    np.testing.assert_allclose(got_grad, jax.grad(ref)(logits), rtol=1e-5, atol=1e-7)
    want_keras = keras.losses.CategoricalCrossentropy(from_logits=True)(targets, logits)
    np.testing.assert_allclose(got_loss, np.asarray(want_keras), rtol=1e-6)


def test_tf_nn_softmax_cross_entropy_keeps_tensorflows_backprop():
    # tf.nn's fused op backpropagates softmax - labels, as TensorFlow does (TF1
    # programs rely on its numbers); only the Keras loss uses the exact gradient.
    logits = RS.randn(3, 4).astype(np.float32)
    labels = np.array([[1, 1, 0, 0], [0, 1, 0, 0], [0.5, 0, 0, 0]], np.float32)
    lg = ml.placeholder(ml.float32, [None, 4])
    loss = ml.nn.softmax_cross_entropy_with_logits(labels=labels, logits=lg)
    (grad,) = ml.gradients(ml.reduce_sum(loss), [lg])
    with ml.Session() as s:
        got = s.run(grad, {lg: logits})
    np.testing.assert_allclose(got, jax.nn.softmax(logits) - labels, rtol=1e-5, atol=1e-7)


def test_multi_output_fit_with_multi_hot_targets_matches_keras():
    x = RS.randn(64, 6).astype(np.float32)
    priority = RS.rand(64, 1)
    department = RS.randint(0, 2, size=(64, 4))
    hist = {}
    models = {}
    for name, K in (("keras", keras), ("mylib", mk)):
        inp = K.Input((6,))
        h = K.layers.Dense(5, activation="tanh")(inp)
        models[name] = K.Model(inp, {"priority": K.layers.Dense(1, name="priority")(h),
                                     "department": K.layers.Dense(4, name="department")(h)})
    _same_weights(models["mylib"], models["keras"])
    for name, K in (("keras", keras), ("mylib", mk)):
        m = models[name]
        m.compile(optimizer=K.optimizers.RMSprop(1e-2),
                  loss={"priority": K.losses.BinaryCrossentropy(from_logits=True),
                        "department": K.losses.CategoricalCrossentropy(from_logits=True)},
                  loss_weights={"priority": 1.0, "department": 0.2})
        h = m.fit(x, {"priority": priority, "department": department}, batch_size=16,
                  epochs=3, shuffle=False, verbose=0).history
        hist[name] = [h[k] for k in ("loss", "priority_loss", "department_loss")]
    np.testing.assert_allclose(hist["mylib"], hist["keras"], rtol=2e-5)
