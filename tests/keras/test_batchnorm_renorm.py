"""BatchNormalization(renorm=True) (batch renormalization, Ioffe 2017) against Keras 3
on JAX: weights in Keras's order, a few SGD steps of fit (every statistic), inference,
configs, bad clipping arguments."""

import keras
import numpy as np
import pytest

from mylib import keras as mk


def _model(K, **bn):
    return K.Sequential([K.Input((5,)), K.layers.Dense(4),
                         K.layers.BatchNormalization(renorm=True, **bn),
                         K.layers.Dense(1)])


@pytest.mark.parametrize("bn", [
    {},
    {"renorm_clipping": {"rmin": 0.8, "rmax": 1.25, "dmax": 0.1}, "renorm_momentum": 0.5,
     "momentum": 0.7},
    {"center": False, "scale": False, "renorm_momentum": 0.9},
])
def test_fit_matches_keras(bn):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((32, 5)) * 3 + 1).astype("float32")
    y = rng.standard_normal((32, 1)).astype("float32")
    km, mm = _model(keras, **bn), _model(mk, **bn)
    names = [v.path.split("/")[-1] for v in km.layers[1].weights]
    assert [v.name.split("/")[-1].split(":")[0] for v in mm.layers[1].weights] == names
    mm.set_weights(km.get_weights())
    for m, opt in ((km, keras.optimizers.SGD(0.05)), (mm, mk.optimizers.SGD(0.05))):
        m.compile(opt, "mse")
        m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(mm.get_weights(), km.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(mm.predict(x, verbose=0), km.predict(x, verbose=0),
                               rtol=2e-4, atol=2e-5)
    cfg = mm.layers[1].get_config()
    assert cfg["renorm"] is True
    assert keras.layers.BatchNormalization.from_config(cfg).renorm
    assert mk.layers.BatchNormalization.from_config(km.layers[1].get_config()).renorm


def test_bad_clipping():
    with pytest.raises(ValueError, match="invalid keys"):
        mk.layers.BatchNormalization(renorm=True, renorm_clipping={"r": 1})
    with pytest.raises(ValueError, match="rmax should be greater"):
        mk.layers.BatchNormalization(renorm=True, renorm_clipping={"rmin": 2, "rmax": 1})
    with pytest.raises(ValueError, match="dmax"):
        mk.layers.BatchNormalization(renorm=True, renorm_clipping={"dmax": -1})
