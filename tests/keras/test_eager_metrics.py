"""Metrics used directly on arrays (Keras 3's eager style: no graph open), compared with
Keras 3 (JAX backend) on the same batches."""

import keras
import numpy as np
import pytest

import mylib as ml


@pytest.fixture(autouse=True)
def fresh_graph():
    """Overrides the directory's fixture: an eager metric is used with no graph open
    (inside ``with graph.as_default():`` it would build graph ops instead)."""
    yield None


@pytest.mark.parametrize("kw", [{}, {"curve": "PR"}, {"label_weights": [1.0, 2.0, 0.5, 1.0]}])
def test_multi_label_auc_without_num_labels_used_directly(kw):
    rs = np.random.RandomState(1)
    batches = [(rs.randint(0, 2, (6, 4)).astype(np.float32), rs.rand(6, 4).astype(np.float32))
               for _ in range(2)]
    got = {}
    for lib in ("keras", "mylib"):
        m = (keras if lib == "keras" else ml).metrics.AUC(multi_label=True, **kw)
        vals = [float(m(*batches[0]))]
        m.update_state(*batches[1])
        vals.append(float(m.result()))
        m.reset_state()
        m.update_state(*batches[1])
        vals.append(float(m.result()))
        got[lib] = vals
    np.testing.assert_allclose(got["mylib"], got["keras"], rtol=1e-5)
