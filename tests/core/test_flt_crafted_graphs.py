"""Crafted graph files found by mutating a saved graph entry by entry: a `format`
that is not a string and a `_class` colocation attr that is not a list of strings are
clear errors (they were TypeErrors), and a failed import adds no op to the graph."""

import json

import numpy as np
import pytest

import mylib as ml
from mylib import errors
from mylib.core import graph_io


def _graph_file(tmp_path):
    with ml.Graph().as_default() as g:
        x = ml.placeholder(ml.float32, [None, 4], name="x")
        v = ml.Variable(np.ones((4, 2), np.float32), name="v")
        ml.reduce_sum(ml.nn.relu(ml.matmul(x, v)), axis=1, name="z")
        return ml.train.write_graph(g, str(tmp_path), "g.json", as_text=True)


@pytest.mark.parametrize("fmt", [["mylib.graph"], {"a": 1}, 3, None])
def test_format_that_is_not_a_string_is_data_loss(tmp_path, fmt):
    path = _graph_file(tmp_path)
    tree = json.load(open(path))
    tree["format"] = fmt
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(tree))
    with pytest.raises(errors.DataLossError, match="not a mylib graph file"):
        graph_io.load_graph_def(str(bad))
    with pytest.raises(errors.DataLossError, match="not a mylib graph file"):
        ml.train.import_meta_graph(str(bad))


@pytest.mark.parametrize("loc", [5, "loc:@v", [1, 2], [["loc:@v"]]])
def test_malformed_colocation_attr_is_refused_and_nothing_imported(tmp_path, loc):
    gd = graph_io.load_graph_def(_graph_file(tmp_path))
    node = [n for n in gd.node if n.name == "z"][0]
    node.attr["_class"] = loc
    with ml.Graph().as_default() as g:
        with pytest.raises(errors.InvalidArgumentError, match="'z'.*malformed '_class'"):
            ml.import_graph_def(gd, name="imp")
        assert g.get_operations() == []


def test_a_good_colocation_attr_still_imports(tmp_path):
    gd = graph_io.load_graph_def(_graph_file(tmp_path))
    node = [n for n in gd.node if n.name == "z"][0]
    node.attr["_class"] = ["loc:@x"]
    with ml.Graph().as_default() as g:
        ml.import_graph_def(gd, name="imp")
        assert g.get_operation_by_name("imp/z").attrs["_class"] == ["loc:@imp/x"]
