"""One layout rule on every path (dnnc_runtime/layout.py): one stride per
dim, none negative, inputs may broadcast with stride 0, an output's elements
at distinct addresses. Graph building, dnn MLIR (dnnc run / compile,
Graph.from_mlir) and package loading (test_runtime.py) refuse alike, naming
the tensor."""

import numpy as np
import pytest

import dnnc
from dnnc import cli
from dnnc.errors import GraphError
from dnnc_runtime import layout


@pytest.mark.parametrize("dims, strides", [
    ([2, 3], [3, 1]),             # row-major
    ([2, 3], [1, 2]),             # column-major
    ([2, 4, 5, 6], [120, 1, 24, 4]),  # channels-last
    ([3, 8], [16, 1]),            # a padded pitch
    ([1, 5], [0, 1]),             # a unit dim's stride is free
    ([0, 4], [0, 0]),             # no elements
])
def test_outputs_that_do_not_overlap_pass(dims, strides):
    assert layout.problem(dims, strides, output=True) is None


@pytest.mark.parametrize("dims, strides, message", [
    ([2, 3, 4], [1, 1, 1],
     "dim 1 (size 3) stride: expected >= 2, the elements dim 0 spans, got 1: dims 0 and 1 overlap"),
    ([2, 3], [0, 1], "dim 0 (size 2) stride: expected > 0, got 0 (an output cannot broadcast"),
    ([4, 4], [2, 1],
     "dim 0 (size 4) stride: expected >= 4, the elements dim 1 spans, got 2: dims 1 and 0 overlap"),
    ([2, 3], [3, -1], "dim 1 stride: expected >= 0, got -1"),
    ([2, 3, 4], [12, 4], "expected 3 strides (one per dim), got 2"),
])
def test_outputs_that_overlap_are_named(dims, strides, message):
    assert message in layout.problem(dims, strides, output=True)


def test_inputs_may_broadcast():
    assert layout.problem([2, 3], [0, 1], output=False) is None
    assert layout.problem([2, 3], [1], output=False) == "expected 2 strides (one per dim), got 1"


def _relu(out_strides=None, in_strides=None):
    g = dnnc.Graph(io_data_type="f32")
    x = g.tensor(name="x", dim=[2, 3, 4], stride=in_strides)
    y = g.relu(x).set_name("y")
    y.set_output(True)
    if out_strides is not None:
        y.set_stride(out_strides)
    return g


def test_a_graph_with_an_overlapping_output_is_refused():
    with pytest.raises(GraphError, match=r"output 'y': dim 1 \(size 3\) stride: expected >= 2, "
                                         r"the elements dim 0 spans, got 1"):
        _relu(out_strides=[1, 1, 1]).to_mlir()


def test_a_broadcast_input_and_a_padded_output_run():
    exe = _relu(out_strides=[40, 8, 1], in_strides=[0, 4, 1]).compile(target="cpu")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    x[1] = x[0]   # the values a stride-0 batch dim reads
    (y,) = exe.run(x)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def _mlir(arg_strides, res_strides):
    return f'''func.func @main(%arg0: tensor<2x3x4xf32> {{dnn.name = "x", dnn.strides = array<i64: {arg_strides}>}}) -> (tensor<2x3x4xf32> {{dnn.name = "y", dnn.strides = array<i64: {res_strides}>}}) attributes {{dnn.graph}} {{
  %0 = "dnn.relu"(%arg0) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}}
'''


@pytest.mark.parametrize("arg, res, message", [
    ("12, 4", "12, 4, 1", "input 'x': expected 3 strides (one per dim), got 2"),
    ("12, 4, 1", "1, 1, 1", "output 'y': dim 1 (size 3) stride: expected >= 2"),
])
def test_mlir_with_a_bad_layout_is_refused_on_every_path(tmp_path, capsys, arg, res, message):
    path = tmp_path / "g.mlir"
    path.write_text(_mlir(arg, res))
    assert cli.main(["run", str(path)]) == 1
    assert message in capsys.readouterr().err
    assert cli.main(["compile", str(path), "--arch", "sm_90a"]) == 1
    assert message in capsys.readouterr().err
    with pytest.raises(GraphError, match=message.replace("(", r"\(").replace(")", r"\)")):
        dnnc.Graph.from_mlir(path.read_text())
