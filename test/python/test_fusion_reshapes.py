"""Epilogues through reshapes: dnn-sink-reshapes (dnnc/dialect/reshapes.py's
mapping of broadcast operands) ahead of dnn-fuse keeps a graph's meaning and
makes the kernels expected.

Each graph runs through the NumPy reference interpreter before and after the
front passes (bit for bit: moving an op across a reshape changes no rounding),
the kernels' anchors are checked, and the CPU back end runs the whole graph
against the reference (f32 to rtol 1e-4; bf16 graphs to bf16's precision).
"""

import numpy as np
import pytest

import dnnc
from dnnc import graph_mlir, interpreter, passes
from dnnc.dialect import reshapes
from refutil import typed

PIPELINE = ("builtin.module(dnn-canonicalize,dnn-recognize-sdpa,dnn-fold-operand-scales,"
            "dnn-sink-reshapes,dnn-fuse,dnn-verify)")
F32 = dnnc.data_type.FLOAT
BF16 = dnnc.data_type.BFLOAT16


# -- the mapping --------------------------------------------------------------


def test_groups_pair_runs_of_equal_size():
    assert reshapes.groups([8192, 768], [8, 1024, 768]) == [((0,), (0, 1)), ((1,), (2,))]
    assert reshapes.groups([512, 2304], [8, 64, 3, 768]) == [((0,), (0, 1)), ((1,), (2, 3))]
    assert reshapes.groups([6, 4], [4, 6]) == [((0, 1), (0, 1))]
    # Size-1 dims join a run on either side; a trailing one makes its own.
    assert reshapes.groups([16, 48], [16, 1, 48]) == [((0,), (0,)), ((1,), (1, 2))]
    assert reshapes.groups([6], [6, 1]) == [((0,), (0,)), ((), (1,))]
    assert reshapes.groups([0, 3], [3, 0]) is None
    assert reshapes.groups([4, 3], [5, 2]) is None


@pytest.mark.parametrize("shape, expected", [
    ([768], [1, 768]),                  # a bias: per column
    ([1, 1, 768], [1, 768]),
    ([8, 1024, 768], [8192, 768]),      # a residual: whole
    ([8, 1024, 1], [8192, 1]),          # a value per row
    ([], [1, 1]),                       # a scalar
])
def test_across_maps_whole_runs_and_broadcast_runs(shape, expected):
    assert reshapes.across(shape, [8192, 768], [8, 1024, 768]) == (expected, None)


@pytest.mark.parametrize("shape, src, dst, why", [
    ([8, 1, 768], [8192, 768], [8, 1024, 768],
     "operand [8, 1, 768] is [8, 1] along the dims [8, 1024] that the reshape makes of "
     "[8192]: it varies along part of them only"),
    ([1, 1024, 768], [8192, 768], [8, 1024, 768],
     "operand [1, 1024, 768] is [1, 1024] along the dims [8, 1024] that the reshape makes "
     "of [8192]: it varies along part of them only"),
    ([768], [512, 2304], [8, 64, 3, 768],
     "operand [768] is [1, 768] along the dims [3, 768] that the reshape makes of [2304]: "
     "it varies along part of them only"),
    ([5, 768], [8192, 768], [8, 1024, 768], "operand [5, 768] does not broadcast to "
                                            "[8, 1024, 768]"),
])
def test_across_refuses_an_operand_that_varies_along_part_of_a_run(shape, src, dst, why):
    assert reshapes.across(shape, src, dst) == (None, why)


def test_same_broadcast_ignores_leading_ones():
    assert reshapes.same_broadcast([1, 768], [768])
    assert reshapes.same_broadcast([1, 1, 768], [1, 768])
    assert not reshapes.same_broadcast([768, 1], [768])


# -- graphs -------------------------------------------------------------------


def _inputs(graph, seed):
    rng = np.random.default_rng(seed)
    return [typed(rng.standard_normal(t.dim), t.get_data_type()) for t in graph.inputs]


def _kernels(module):
    with module.context:
        return [str(f.attributes["dnn.anchor"]).strip('"') for f in module.body.operations
                if f.operation.name == "func.func" and "dnn.kernel" in f.attributes]


def check(graph, anchors, rtol=1e-4, atol=1e-5):
    """Reference before and after PIPELINE (bit for bit), the kernels'
    anchors, and the CPU back end against the reference; the module after."""
    module = graph_mlir.to_module(graph)
    arrays = _inputs(graph, 0)
    before = interpreter.run_module(module, arrays)
    passes.run_pipeline(module, PIPELINE)
    after = interpreter.run_module(module, arrays)
    assert _kernels(module) == anchors, str(module)
    for b, a in zip(before, after):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    got = graph.compile(target="cpu").run(*arrays)
    for t, g, e in zip(graph.outputs, got, before):
        g = np.asarray(g).astype(np.float64)
        assert g.shape == e.shape, t.name
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=t.name)
    return module


def test_matmul_view_gelu_is_one_kernel():
    g = dnnc.Graph(name="view_gelu", io_data_type=F32)
    x = g.tensor(name="x", dim=[2, 9, 16])
    w = g.tensor(name="w", dim=[16, 24])
    b = g.tensor(name="b", dim=[24])
    h = g.add(g.matmul(g.reshape(x, [18, 16]), w), b)
    g.gelu(g.reshape(h, [2, 9, 24]), approximate="tanh").set_output(True)
    module = check(g, ["matmul"])
    assert "dnn.gelu" in str(module).split("func.func @view_gelu")[0]


def test_matmul_view_residual_is_one_kernel():
    # The residual [2, 9, 24] against the GEMM's [18, 24]; the next layer reads
    # the sum as its A through the inverse view.
    g = dnnc.Graph(name="view_residual", io_data_type=F32)
    x = g.tensor(name="x", dim=[2, 9, 24])
    w = g.tensor(name="w", dim=[24, 24])
    b = g.tensor(name="b", dim=[24])
    w2 = g.tensor(name="w2", dim=[24, 8])
    h = g.add(g.matmul(g.reshape(x, [18, 24]), w), b)
    s = g.add(x, g.reshape(h, [2, 9, 24]))
    s.set_output(True)
    g.matmul(g.reshape(s, [18, 24]), w2).set_output(True)
    check(g, ["matmul", "matmul"])


def test_a_batch_of_one_residual_is_read_through_a_view():
    # A batch of one: the view only adds a leading 1, and the residual
    # [1, 5, 24] has more dims than the GEMM's [5, 24]; the moved add must
    # read it as [5, 24], not broadcast its result back to [1, 5, 24].
    g = dnnc.Graph(name="batch_of_one", io_data_type=F32)
    x = g.tensor(name="x", dim=[1, 5, 24])
    w = g.tensor(name="w", dim=[24, 24])
    b = g.tensor(name="b", dim=[24])
    h = g.add(g.matmul(g.reshape(x, [5, 24]), w), b)
    g.add(x, g.reshape(h, [1, 5, 24])).set_output(True)
    check(g, ["matmul"])


def test_per_batch_scale_after_a_view_stays_a_kernel_and_says_why():
    g = dnnc.Graph(name="per_batch", io_data_type=F32)
    a = g.tensor(name="a", dim=[18, 16])
    w = g.tensor(name="w", dim=[16, 24])
    s = g.tensor(name="s", dim=[2, 1, 24])
    g.mul(g.reshape(g.matmul(a, w), [2, 9, 24]), s).set_output(True)
    module = check(g, ["matmul", "pointwise"])
    assert ("the mul after the reshape of its output [18, 24] to [2, 9, 24] left to a kernel "
            "of its own") in str(module)


def test_bias_across_a_split_n_stays_a_kernel():
    g = dnnc.Graph(name="split_n", io_data_type=F32)
    a = g.tensor(name="a", dim=[6, 16])
    w = g.tensor(name="w", dim=[16, 24])
    b = g.tensor(name="b", dim=[8])
    g.add(g.reshape(g.matmul(a, w), [6, 3, 8]), b).set_output(True)
    module = check(g, ["matmul", "pointwise"])
    assert "[3, 8] that the reshape makes of [24]" in str(module)


def test_conv_flatten_residual_is_one_kernel():
    g = dnnc.Graph(name="flat", io_data_type=F32)
    x = g.tensor(name="x", dim=[2, 3, 8, 8])
    w = g.tensor(name="w", dim=[6, 3, 2, 2])
    r = g.tensor(name="r", dim=[2, 6, 16])
    b = g.tensor(name="b", dim=[1, 6, 1])
    c = g.conv_fprop(x, w, stride=[2, 2])
    g.relu(g.add(g.add(g.reshape(c, [2, 6, 16]), r), b)).set_output(True)
    check(g, ["conv_fprop"])


def test_conv_flatten_position_table_is_one_kernel():
    # [1, K, H * W] varies along the pixels, not the batch, which the
    # implicit GEMM's rows span together: its epilogue reads it through a
    # split view (conv_views.py), and the add joins the convolution.
    g = dnnc.Graph(name="patches", io_data_type=F32)
    x = g.tensor(name="x", dim=[2, 3, 8, 8])
    w = g.tensor(name="w", dim=[6, 3, 2, 2])
    p = g.tensor(name="p", dim=[1, 6, 16])
    c = g.conv_fprop(x, w, stride=[2, 2])
    g.add(g.reshape(c, [2, 6, 16]), p).set_output(True)
    module = check(g, ["conv_fprop"])
    assert "dnn.fusion_note" not in str(module)


def test_gpt2_mlp_bf16_is_three_kernels():
    # A GPT-2 MLP as ATen traces it (odd rows: 2 x 13 tokens): layernorm, the
    # views around each addmm, gelu and the residual add: a layernorm and two
    # GEMMs whose epilogues take the gelu and the residual.
    g = dnnc.Graph(name="mlp", io_data_type=BF16, intermediate_data_type=F32)
    x = g.tensor(name="x", dim=[2, 13, 32])
    w1 = g.tensor(name="w1", dim=[32, 64])
    b1 = g.tensor(name="b1", dim=[64])
    w2 = g.tensor(name="w2", dim=[64, 32])
    b2 = g.tensor(name="b2", dim=[32])
    y, _, _ = g.layernorm(x, axis=2)
    h = g.reshape(g.add(g.matmul(g.reshape(y, [26, 32]), w1), b1), [2, 13, 64])
    a = g.reshape(g.gelu(h, approximate="tanh"), [26, 64])
    o = g.reshape(g.add(g.matmul(a, w2), b2), [2, 13, 32])
    g.add(x, o).set_output(True)
    check(g, ["layernorm", "matmul", "matmul"], rtol=2e-2, atol=2e-2)


def test_linear_backward_gelu_joins_the_gemm_and_the_bias_gradient_reads_it():
    # dX of gelu(x @ w1) @ w2 through the views: dH = dY @ w2^T viewed
    # [2, 9, 24], gelu_backward against the saved pre-activation, viewed back
    # to rows for dW1 and the bias gradient (a sum over the rows).
    g = dnnc.Graph(name="mlp_backward", io_data_type=F32)
    dy = g.tensor(name="dy", dim=[18, 8])
    w2t = g.tensor(name="w2t", dim=[8, 24])
    pre = g.tensor(name="pre", dim=[2, 9, 24])
    w1t = g.tensor(name="w1t", dim=[24, 16])
    dh = g.reshape(g.matmul(dy, w2t), [2, 9, 24])
    dpre = g.reshape(g.gelu_backward(dh, pre), [18, 24])
    g.matmul(dpre, w1t).set_output(True)
    g.reduction(dpre, mode="sum", axes=[0]).set_output(True)
    module = check(g, ["matmul", "matmul", "reduction"])
    text = str(module)
    gemm = text.split("func.func private @mlp_backward_k0_matmul")[1].split("func.func")[0]
    assert "dnn.gelu_backward" in gemm and "-> tensor<18x24xf32> attributes" in gemm
    bias = text.split("func.func private @mlp_backward_k2_reduction")[1].split("func.func")[0]
    assert "dnn.gelu_backward" not in bias
