import pytest

import mylib as ml


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test builds its models in a graph of its own (layer names restart at
    `dense`, `dense_1`, ...)."""
    g = ml.Graph()
    with g.as_default():
        yield g
