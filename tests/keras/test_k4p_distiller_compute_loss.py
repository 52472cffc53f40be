"""keras-io's knowledge distillation: a Model subclass whose `compute_loss` override
(written without a `training` argument, as keras-io's `Distiller`) mixes the student's
loss with a KL term against a frozen teacher. Keras 3 passes `training` only to an
override that names it; fit, evaluate and the weights match Keras 3 on the same weights."""

import keras
import numpy as np

from mylib import keras as mk

RS = np.random.RandomState(5)
X = RS.randn(32, 6).astype("float32")
Y = RS.randint(0, 4, 32)


def _distiller(K):
    class Distiller(K.Model):
        def __init__(self, student, teacher):
            super().__init__()
            self.teacher, self.student = teacher, student

        def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn,
                    alpha=0.1, temperature=3):
            super().compile(optimizer=optimizer, metrics=metrics)
            self.student_loss_fn = student_loss_fn
            self.distillation_loss_fn = distillation_loss_fn
            self.alpha, self.temperature = alpha, temperature

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         allow_empty=False):
            teacher_pred = self.teacher(x, training=False)
            student_loss = self.student_loss_fn(y, y_pred)
            distill = self.distillation_loss_fn(
                K.ops.softmax(teacher_pred / self.temperature, axis=1),
                K.ops.softmax(y_pred / self.temperature, axis=1)) * self.temperature ** 2
            return self.alpha * student_loss + (1 - self.alpha) * distill

        def call(self, x):
            return self.student(x)

    teacher = K.Sequential([K.Input((6,)), K.layers.Dense(8, activation="relu"),
                            K.layers.Dense(4)])
    student = K.Sequential([K.Input((6,)), K.layers.Dense(4)])
    d = Distiller(student, teacher)
    d.compile(optimizer=K.optimizers.SGD(0.1),
              metrics=[K.metrics.SparseCategoricalAccuracy()],
              student_loss_fn=K.losses.SparseCategoricalCrossentropy(from_logits=True),
              distillation_loss_fn=K.losses.KLDivergence(), alpha=0.2, temperature=4)
    return d, teacher, student


def test_distiller_fit_and_evaluate_match_keras():
    dk, tk, sk = _distiller(keras)
    dm, tm, sm = _distiller(mk)
    rs = np.random.RandomState(0)
    for m_, k_ in ((tm, tk), (sm, sk)):
        ws = [rs.randn(*w.shape).astype("float32") * 0.5 for w in k_.get_weights()]
        k_.set_weights(ws)
        m_.set_weights(ws)
    kw = dict(epochs=2, batch_size=8, shuffle=False, verbose=0)
    hk, hm = dk.fit(X, Y, **kw).history, dm.fit(X, Y, **kw).history
    for k in hk:
        np.testing.assert_allclose(hm[k], hk[k], rtol=1e-4, err_msg=k)
    for a, b in zip(sm.get_weights(), sk.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    ek = dk.evaluate(X, Y, verbose=0, return_dict=True)
    em = dm.evaluate(X, Y, verbose=0, return_dict=True)
    assert sorted(em) == sorted(ek)
    for k in ek:
        np.testing.assert_allclose(em[k], ek[k], rtol=1e-4, err_msg=k)
    # keras-io's Distiller does not freeze the teacher: the KL term's gradient moves
    # its weights, in Keras 3 as in mylib
    for a, b in zip(tm.get_weights(), tk.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
