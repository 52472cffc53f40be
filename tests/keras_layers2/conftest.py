import pytest

import mylib as ml


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test builds its layers in a graph of its own."""
    g = ml.Graph()
    with g.as_default():
        yield g
