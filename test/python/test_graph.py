"""The graph API: building, element-type rules, MLIR round trips, typed errors."""

import numpy as np
import pytest

import dnnc
from dnnc.errors import GraphError, ToolError, VerificationError
from dnnc.parsing import parse


def _conv_block(io="bf16"):
    g = dnnc.Graph(name="block", io_data_type=io)
    x = g.tensor(name="x", dim=[2, 6, 9, 7], stride=[6 * 63, 1, 7 * 6, 6])
    w = g.tensor(name="w", dim=[4, 3, 3, 3])
    b = g.tensor(name="b", dim=[1, 4, 1, 1])
    y = g.relu(g.add(g.conv_fprop(x, w, padding=[1, 0], stride=2, name="conv"), b))
    y.set_name("y").set_output(True)
    return g


def _many_ops():
    g = dnnc.Graph(name="many", io_data_type="f32")
    q = g.tensor(name="q", dim=[1, 4, 5, 8])
    k = g.tensor(name="k", dim=[1, 2, 7, 8])
    v = g.tensor(name="v", dim=[1, 2, 7, 3])
    o, stats = g.sdpa(q, k, v, use_causal_mask=True, generate_stats=True)
    o.set_output(True)
    stats.set_output(True)
    x = g.tensor(name="x", dim=[3, 5, 4])
    y, mean, inv = g.layernorm(x, axis=1, norm_forward_phase="training")
    for t in (y, mean, inv):
        t.set_output(True)
    g.concat([x, x, x], axis=2).set_output(True)
    g.select(g.cmp_lt(x, g.constant(0.25)), x, g.constant(-1.0)).set_output(True)
    g.reduction(x, "norm2", [0, 2], keepdims=False).set_output(True)
    g.reshape(g.transpose(x, [2, 0, 1]), [4, 15]).set_output(True)
    img = g.tensor(name="img", dim=[2, 3, 4, 5, 6])
    g.pooling(img, "avg", window=[2, 2, 3], stride=1, padding=[1, 0, 1],
              count_include_pad=True).set_output(True)
    g.cast(x, dnnc.data_type.FP8_E4M3).set_output(True)
    return g


@pytest.mark.parametrize("build", [_conv_block, _many_ops])
def test_round_trip_is_exact(build):
    text = build().to_mlir()
    again = dnnc.Graph.from_mlir(text).to_mlir()
    assert again == text


def test_text_carries_names_strides_and_graph_marker():
    text = _conv_block().to_mlir()
    assert 'dnn.name = "x", dnn.strides = array<i64: 378, 1, 42, 6>' in text
    assert 'dnn.name = "conv"' in text
    assert "attributes {dnn.graph}" in text
    assert '"dnn.conv_fprop"' in text and "stride = array<i64: 2, 2>" in text


def test_element_types_follow_cudnn_rules():
    g = _conv_block("bf16")
    conv = g.nodes[0].results["y"]
    out = g.outputs[0]
    # Virtual tensors take the intermediate type, outputs the io type.
    assert conv.get_data_type() is dnnc.data_type.FLOAT
    assert out.get_data_type() is dnnc.data_type.BFLOAT16
    out.set_data_type("f16")
    assert out.get_data_type() is dnnc.data_type.HALF
    g2 = dnnc.Graph(intermediate_data_type="f16")
    x = g2.tensor(name="x", dim=[3], data_type="f32")
    h = g2.exp(x)
    y = g2.cmp_gt(g2.relu(h), x)
    y.set_output(True)
    assert h.get_data_type() is dnnc.data_type.HALF
    assert y.get_data_type() is dnnc.data_type.BOOLEAN
    z = g2.neg(x).set_output(True)
    assert z.get_data_type() is dnnc.data_type.FLOAT  # first input's type, no io type


def test_shapes_are_inferred():
    g = dnnc.Graph(io_data_type="f32")
    x = g.tensor(name="x", dim=[2, 3, 10, 11])
    w = g.tensor(name="w", dim=[6, 1, 3, 2])
    y = g.conv_fprop(x, w, pre_padding=[1, 0], post_padding=[2, 1], stride=[2, 3],
                     dilation=[2, 1])
    # groups = 3; H: (10 + 3 - 2*2 - 1) // 2 + 1 = 5; W: (11 + 1 - 1 - 1) // 3 + 1 = 4
    assert y.dim == [2, 6, 5, 4]
    a = g.tensor(name="a", dim=[4, 1, 5, 7])
    b = g.tensor(name="b", dim=[3, 7, 2])
    assert g.matmul(a, b).dim == [4, 3, 5, 2]
    assert g.add(g.tensor(name="c", dim=[5, 1]), g.tensor(name="d", dim=[3, 1, 4])).dim == [3, 5, 4]
    assert g.slice(x, [slice(1, 2), slice(None, None, 2)]).dim == [1, 2, 10, 11]
    assert g.reduction(x, "max", [1, 3], keepdims=False).dim == [2, 10]
    assert g.pooling(x, "max", window=3, stride=2, padding=1).dim == [2, 3, 5, 6]


@pytest.mark.parametrize("make, message", [
    (lambda g, x: g.matmul(x, g.tensor(name="b", dim=[5, 2])),
     "'dnn.matmul' op operand 'b' dim 0: expected 4 (K of 'a'), got 5"),
    (lambda g, x: g.add(x, g.tensor(name="b", dim=[2, 3])),
     "'dnn.add' op operand 'b' dim 0: expected 3 or 1 (broadcast against 'a'), got 2"),
    (lambda g, x: g.conv_fprop(g.tensor(name="i", dim=[1, 4, 5, 5]),
                               g.tensor(name="w", dim=[2, 3, 3, 3])),
     "'dnn.conv_fprop' op operand 'w' dim 1: expected a divisor of 4 (channels of 'x' / groups), "
     "got 3"),
    (lambda g, x: g.softmax(x, axis=0) and g.reduction(x, "median", [0]),
     "'dnn.reduction' op attribute 'mode': expected one of sum, mean, max, min, prod, amax, "
     "norm1, norm2, got median"),
    (lambda g, x: g.reduction(g.tensor(name="e", dim=[3, 0]), "min", [1]),
     "'dnn.reduction' op operand 'x' dim 1: expected at least 1 (mode 'min' needs an element "
     "to reduce: it has no identity), got 0"),
    (lambda g, x: g.logical_not(x),
     "'dnn.logical_not' op operand 'x': expected a tensor of i1, got f32"),
    (lambda g, x: g.reshape(x, [7]),
     "'dnn.reshape' op result 'y': expected 12 elements (the number in operand 'x', 3x4), got 7"),
    (lambda g, x: g.transpose(x, [0, 0]),
     "'dnn.transpose' op attribute 'permutation': expected a permutation of 0..1, got [0, 0]"),
])
def test_build_errors_name_op_operand_and_dim(make, message):
    g = dnnc.Graph(io_data_type="f32")
    x = g.tensor(name="x", dim=[3, 4])
    with pytest.raises(VerificationError) as err:
        make(g, x)
    assert str(err.value) == message


def test_graph_errors_are_typed():
    g = dnnc.Graph()
    with pytest.raises(GraphError, match="expected a data_type"):
        g.tensor(name="x", dim=[2])
    x = g.tensor(name="x", dim=[2], data_type="f32")
    with pytest.raises(GraphError, match="used twice"):
        g.tensor(name="x", dim=[2], data_type="f32")
    with pytest.raises(GraphError, match="unknown data type"):
        g.tensor(name="y", dim=[2], data_type="int3")
    with pytest.raises(GraphError, match=r"tensor 'z': expected 1 strides \(one per dim\), got 2"):
        g.tensor(name="z", dim=[2], stride=[1, 1], data_type="f32")
    with pytest.raises(GraphError, match="tensor 'z': dim 0 stride: expected >= 0, got -1"):
        g.tensor(name="z", dim=[2], stride=[-1], data_type="f32")
    with pytest.raises(GraphError, match="no outputs"):
        g.to_mlir()
    other = dnnc.Graph(io_data_type="f32").tensor(name="o", dim=[2])
    with pytest.raises(GraphError, match="expected a tensor of this graph"):
        g.add(x, other)
    with pytest.raises(GraphError, match="unexpected argument 'slope'"):
        g.leaky_relu(x, slope=0.2)


def test_from_mlir_reports_parse_and_verify_errors():
    with pytest.raises(ToolError, match="cannot parse"):
        dnnc.Graph.from_mlir("func.func @f( {")
    bad = """
    func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {dnn.graph} {
      %0 = "dnn.softmax"(%a) {axis = 4 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    }"""
    with pytest.raises(VerificationError, match=r"attribute 'axis': expected an axis in \[0, 2\)"):
        dnnc.Graph.from_mlir(bad)
    wrong_result = bad.replace("axis = 4", "axis = 1").replace("tensor<2x3xf32>", "tensor<3x2xf32>")
    wrong_result = wrong_result.replace("(tensor<3x2xf32>) ->", "(tensor<2x3xf32>) ->").replace(
        "%a: tensor<3x2xf32>", "%a: tensor<2x3xf32>")
    with pytest.raises(VerificationError, match="result 'y': expected shape 2x3, got 3x2"):
        parse(wrong_result)


def test_execute_reference_checks_inputs_and_rounds_outputs():
    g = dnnc.Graph(io_data_type="bf16")
    x = g.tensor(name="x", dim=[4])
    y = g.mul(x, g.constant(1.0 / 3.0))
    y.set_output(True)
    inputs = {"x": np.array([1.0, 2.0, 3.0, 4.0], np.float32)}
    out = g.execute_reference(inputs)[y.name]
    import ml_dtypes

    expected = (np.array([1, 2, 3, 4]) / 3.0).astype(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(GraphError, match="input 'x': expected an array"):
        g.execute_reference({})
    with pytest.raises(GraphError, match="unknown inputs: z"):
        g.execute_reference({"x": inputs["x"], "z": inputs["x"]})
    with pytest.raises(GraphError, match="expected shape"):
        g.execute_reference({"x": np.ones(5, np.float32)})


def test_tensor_like_takes_layout_from_arrays():
    g = dnnc.Graph()
    arr = np.zeros((2, 3, 4, 5), np.float16).transpose(0, 3, 1, 2)
    t = g.tensor_like(arr, name="a")
    assert t.dim == [2, 5, 3, 4]
    assert t.get_stride() == [60, 1, 20, 5]
    assert t.data_type is dnnc.data_type.HALF


def test_conv_dgrad_and_wgrad_take_the_missing_shape():
    g = dnnc.Graph(io_data_type="f32")
    dy = g.tensor(name="dy", dim=[2, 4, 5, 5])
    w = g.tensor(name="w", dim=[4, 3, 3, 3])
    x = g.tensor(name="x", dim=[2, 3, 10, 10])
    dx = g.conv_dgrad(dy, w, dx_dim=[2, 3, 10, 10], padding=1, stride=2)
    dw = g.conv_wgrad(x, dy, dw_dim=[4, 3, 3, 3], padding=1, stride=2)
    assert dx.dim == [2, 3, 10, 10] and dw.dim == [4, 3, 3, 3]
    with pytest.raises(VerificationError, match="operand 'dy' dim 2: expected 4"):
        g.conv_dgrad(dy, w, dx_dim=[2, 3, 7, 10], padding=1, stride=2)
