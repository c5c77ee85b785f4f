"""dnn-canonicalize, dnn-recognize-sdpa, dnn-fold-operand-scales and dnn-fuse
keep a graph's meaning.

Each graph runs through the NumPy reference interpreter before and after the
passes (the interpreter follows func.call into the outlined kernels), and the
test checks how many dnn.kernel functions the fusion made and their anchors.
Outputs agree to the last bit unless a pass changes where rounding happens
(sdpa keeps the scores in higher precision than the f32 ops it replaces).

Each graph is also compiled whole by the CPU back end (front pipeline, then
linalg, LLVM and the ExecutionEngine) and checked against the reference: f32
arithmetic against float64, so to rtol 1e-4.
"""

import re

import numpy as np
import pytest

import dnnc
from dnnc import graph_mlir, interpreter, passes, pipelines
from mlir import ir
from refutil import typed

PIPELINE = ("builtin.module(dnn-canonicalize,dnn-recognize-sdpa,dnn-fold-operand-scales,"
            "dnn-fuse,dnn-verify)")
F32 = dnnc.data_type.FLOAT


def _inputs(graph, seed, positive=()):
    """Seeded random arrays for the graph inputs; names in ``positive`` get values
    in [0.5, 1.5) (variances, divisors)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for t in graph.inputs:
        if t.name in positive:
            x = rng.uniform(0.5, 1.5, t.dim)
        else:
            x = rng.standard_normal(t.dim)
        arrays.append(typed(x, t.get_data_type()))  # each in its own type, as executables take
    return arrays


def kernels(module):
    """Anchor names of the dnn.kernel functions of ``module``, in order."""
    with module.context:
        return [str(f.attributes["dnn.anchor"]).strip('"') for f in module.body.operations
                if f.operation.name == "func.func" and "dnn.kernel" in f.attributes]


def check(graph, anchors, seed=0, positive=(), pipeline=PIPELINE, rtol=0.0, atol=0.0):
    """Run ``graph`` before and after ``pipeline``; compare outputs and kernel anchors.
    Returns the transformed module."""
    module = graph_mlir.to_module(graph)
    arrays = _inputs(graph, seed, positive)
    before = interpreter.run_module(module, arrays)
    passes.run_pipeline(module, pipeline)
    after = interpreter.run_module(module, arrays)
    assert kernels(module) == anchors, str(module)
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    if pipeline == PIPELINE:
        _check_cpu(graph, arrays, before)
    return module


def _check_cpu(graph, arrays, expected):
    """The CPU back end runs the whole graph and matches the reference."""
    exe = graph.compile(target="cpu")
    got = exe.run(*arrays)
    for name, g, e in zip([t.name for t in graph.outputs], got, expected):
        g = np.asarray(g)
        assert g.shape == e.shape, name
        if e.dtype == np.bool_:
            np.testing.assert_array_equal(g, e, err_msg=name)
        else:
            np.testing.assert_allclose(g.astype(np.float64), e, rtol=1e-4, atol=1e-5,
                                       err_msg=name)


def _graph(name):
    return dnnc.Graph(name=name, io_data_type=F32)


def test_conv_bias_relu():
    g = _graph("conv_bias_relu")
    x = g.tensor(name="x", dim=[2, 3, 7, 7])
    w = g.tensor(name="w", dim=[5, 3, 3, 3])
    b = g.tensor(name="b", dim=[1, 5, 1, 1])
    g.relu(g.add(g.conv_fprop(x, w, padding=1), b)).set_output(True)
    check(g, ["conv_fprop"])


def test_matmul_bias_gelu():
    g = _graph("matmul_bias_gelu")
    a = g.tensor(name="a", dim=[3, 5, 13])
    w = g.tensor(name="w", dim=[13, 7])
    b = g.tensor(name="b", dim=[7])
    g.gelu(g.add(g.matmul(a, w), b)).set_output(True)
    check(g, ["matmul"])


def test_matmul_bias_residual_relu():
    g = _graph("mlp")
    a = g.tensor(name="a", dim=[5, 13])
    w = g.tensor(name="w", dim=[13, 7])
    b = g.tensor(name="b", dim=[1, 7])
    r = g.tensor(name="r", dim=[5, 7])
    g.relu(g.add(g.add(g.matmul(a, w), b), r)).set_output(True)
    module = check(g, ["matmul"])
    assert str(module).count("call @mlp_k0_matmul(%arg0, %arg1, %arg2, %arg3)") == 1


@pytest.mark.parametrize("also_output", [False, True])
def test_residual_layernorm(also_output):
    g = _graph("res_ln")
    x = g.tensor(name="x", dim=[3, 5, 13])
    r = g.tensor(name="r", dim=[3, 5, 13])
    scale = g.tensor(name="scale", dim=[1, 5, 13])
    bias = g.tensor(name="bias", dim=[1, 5, 13])
    h = g.add(x, r)
    y, _, _ = g.layernorm(h, scale, bias, axis=1)
    y.set_output(True)
    if also_output:
        h.set_output(True)
    module = check(g, ["layernorm"])
    results = "-> (tensor<3x5x13xf32>, tensor<3x5x13xf32>)" if also_output else \
        "-> tensor<3x5x13xf32> attributes {dnn.anchor"
    assert results in str(module)


def test_matmul_operand_scales_join_the_epilogue():
    # (s * x) @ (w / c) + bias, relu: s per row of x, c per column of w;
    # both scales move after the product (dnn-fold-operand-scales), one kernel.
    g = _graph("scaled")
    x = g.tensor(name="x", dim=[3, 7, 13])
    s = g.tensor(name="s", dim=[3, 7, 1])
    w = g.tensor(name="w", dim=[13, 5])
    c = g.tensor(name="c", dim=[5])
    b = g.tensor(name="b", dim=[1, 5])
    g.relu(g.add(g.matmul(g.mul(s, x), g.div(w, c)), b)).set_output(True)
    module = check(g, ["matmul"], positive=("c",), rtol=1e-5)
    assert str(module).count("call @scaled_k0_matmul(") == 1


def test_matmul_scale_along_k_stays_a_kernel():
    g = _graph("scaled_k")
    x = g.tensor(name="x", dim=[7, 13])
    s = g.tensor(name="s", dim=[1, 13])
    w = g.tensor(name="w", dim=[13, 5])
    g.matmul(g.mul(x, s), w).set_output(True)
    check(g, ["pointwise", "matmul"])


def test_residual_layernorm_scaled_fp8_output():
    # residual add + layernorm + the fp8 output's scale and cast: one kernel.
    g = _graph("res_ln_fp8")
    x = g.tensor(name="x", dim=[7, 13])
    r = g.tensor(name="r", dim=[7, 13])
    scale = g.tensor(name="scale", dim=[1, 13])
    bias = g.tensor(name="bias", dim=[1, 13])
    q = g.tensor(name="q", dim=[])
    y, _, _ = g.layernorm(g.add(x, r), scale, bias, axis=1)
    g.cast(g.mul(y, q), dnnc.data_type.FP8_E4M3).set_output(True)
    check(g, ["layernorm"], positive=("q",))


def test_residual_rmsnorm():
    g = _graph("res_rms")
    x = g.tensor(name="x", dim=[7, 13])
    r = g.tensor(name="r", dim=[7, 13])
    scale = g.tensor(name="scale", dim=[1, 13])
    y, _ = g.rmsnorm(g.add(x, r), scale, axis=1)
    y.set_output(True)
    check(g, ["rmsnorm"])


@pytest.mark.parametrize("io,out", [(F32, dnnc.data_type.BFLOAT16),
                                    (dnnc.data_type.BFLOAT16, dnnc.data_type.HALF)])
def test_residual_rmsnorm_cast(io, out):
    # residual add + rmsnorm + the output's cast (the sum and the norm in f32):
    # one kernel.
    g = dnnc.Graph(name="res_rms_cast", io_data_type=io)
    x = g.tensor(name="x", dim=[7, 13])
    r = g.tensor(name="r", dim=[7, 13])
    scale = g.tensor(name="scale", dim=[1, 13])
    y, _ = g.rmsnorm(g.add(x, r), scale, axis=1)
    g.cast(y, out).set_output(True)
    module = check(g, ["rmsnorm"])
    assert "call @res_rms_cast_k0_rmsnorm(%arg0, %arg1, %arg2)" in str(module)


def _attention(name, heads_k=3, scale_op="mul", bias=True, reuse_scores=False):
    g = _graph(name)
    q = g.tensor(name="q", dim=[2, 3, 5, 7])
    k = g.tensor(name="k", dim=[2, heads_k, 13, 7])
    v = g.tensor(name="v", dim=[2, heads_k, 13, 5])
    s = g.matmul(q, g.transpose(k, [0, 1, 3, 2]))
    if scale_op == "mul":
        s = g.mul(s, g.constant(7 ** -0.5))
    elif scale_op == "div":
        s = g.div(s, g.constant(7 ** 0.5))
    if bias:
        s = g.add(s, g.tensor(name="bias", dim=[1, 3, 5, 13]))
    p = g.softmax(s, axis=-1)
    g.matmul(p, v).set_output(True)
    if reuse_scores:
        s.set_output(True)
    return g


@pytest.mark.parametrize("scale_op,bias", [("mul", True), ("div", True), (None, False)])
def test_attention_becomes_sdpa(scale_op, bias):
    g = _attention("attn", scale_op=scale_op, bias=bias)
    module = check(g, ["sdpa"], rtol=1e-5, atol=1e-6)
    text = str(module)
    assert text.count('"dnn.sdpa"') == 1
    for gone in ("dnn.softmax", "dnn.matmul", "dnn.transpose", "dnn.constant"):
        assert gone not in text


@pytest.mark.parametrize("scaled", ["q", "k"])
def test_attention_written_the_pytorch_way_becomes_sdpa(scaled):
    """q (or k) scaled before the product, the scores cast for the softmax
    and the probabilities cast back: one sdpa, whose scale is the product
    of the scales, with the same outputs."""
    g = _graph(f"attn_{scaled}")
    q = g.tensor(name="q", dim=[2, 3, 5, 8])
    k = g.tensor(name="k", dim=[2, 3, 13, 8])
    v = g.tensor(name="v", dim=[2, 3, 13, 5])
    if scaled == "q":
        q = g.mul(q, g.constant(8 ** -0.5))
    else:
        k = g.div(k, g.constant(2.0))
    s = g.cast(g.matmul(q, g.transpose(k, [0, 1, 3, 2])), F32)
    p = g.cast(g.softmax(s, axis=-1), F32)
    g.matmul(p, v).set_output(True)
    module = check(g, ["sdpa"], rtol=1e-5, atol=1e-6)
    text = str(module)
    assert text.count('"dnn.sdpa"') == 1
    for gone in ("dnn.softmax", "dnn.matmul", "dnn.transpose", "dnn.constant", "dnn.cast",
                 "dnn.mul", "dnn.div"):
        assert gone not in text
    (got,) = re.findall(r"scale = ([-+0-9.e]+) : f64", text)
    # The constant is an f32 tensor: the scale is its rounded value.
    assert float(got) == pytest.approx(8 ** -0.5 if scaled == "q" else 0.5, rel=1e-7), text


def test_attention_with_shared_scores_is_left_alone():
    g = _attention("attn_shared", reuse_scores=True)
    module = check(g, ["tensor", "matmul", "softmax", "matmul"])
    assert "dnn.sdpa" not in str(module)


def test_multi_query_attention_becomes_sdpa():
    # k and v have one head for three query heads, which the matmuls
    # broadcast: multi-query attention, sdpa with one kv head.
    g = _graph("mqa")
    q = g.tensor(name="q", dim=[2, 3, 5, 7])
    k = g.tensor(name="k", dim=[2, 1, 13, 7])
    v = g.tensor(name="v", dim=[2, 1, 13, 5])
    p = g.softmax(g.matmul(q, g.transpose(k, [0, 1, 3, 2])), axis=-1)
    g.matmul(p, v).set_output(True)
    module = check(g, ["sdpa"], rtol=1e-5, atol=1e-6)
    assert str(module).count('"dnn.sdpa"') == 1


def test_mismatched_kv_heads_are_left_alone():
    # k has q's four heads and v one, broadcast: k and v of an sdpa share
    # their heads, so this is not one.
    g = _graph("kv_heads")
    q = g.tensor(name="q", dim=[2, 4, 5, 7])
    k = g.tensor(name="k", dim=[2, 4, 13, 7])
    v = g.tensor(name="v", dim=[2, 1, 13, 5])
    p = g.softmax(g.matmul(q, g.transpose(k, [0, 1, 3, 2])), axis=-1)
    g.matmul(p, v).set_output(True)
    module = check(g, ["tensor", "matmul", "softmax", "matmul"])
    assert "dnn.sdpa" not in str(module)


def test_softmax_backward_chain():
    g = _graph("sm_bwd")
    x = g.tensor(name="x", dim=[3, 5, 13])
    dy = g.tensor(name="dy", dim=[3, 5, 13])
    y = g.softmax(x, axis=2)
    dx = g.softmax_backward(dy, y, axis=2)
    g.mul(dx, g.constant(0.5)).set_output(True)
    check(g, ["softmax", "softmax_backward", "pointwise"])


def test_softmax_mul():
    g = _graph("sm_mul")
    x = g.tensor(name="x", dim=[5, 13])
    m = g.tensor(name="m", dim=[5, 1])
    g.neg(g.mul(g.softmax(x, axis=1), m)).set_output(True)
    check(g, ["softmax"])


def test_pointwise_chain_with_broadcasting():
    g = _graph("chain")
    x = g.tensor(name="x", dim=[3, 5, 7])
    s = g.tensor(name="s", dim=[5, 1])
    t = g.tensor(name="t", dim=[7])
    y = g.tanh(g.add(g.mul(x, s), t))
    y = g.select(g.cmp_gt(y, g.constant(0.1)), y, g.sub(y, g.constant(1.0)))
    y.set_output(True)
    module = check(g, ["pointwise"])
    # The constants are cloned into the kernel, not passed.
    assert "call @chain_k0_pointwise(%arg0, %arg1, %arg2)" in str(module)


@pytest.mark.parametrize("act", ["gelu", "silu", "leaky_relu", "elu"])
def test_bias_activation_chain(act):
    # x + bias (a [1, N] row), the activation, a per-column scale and the
    # residual add, with no matmul or conv to carry them: one pointwise kernel.
    g = _graph(f"bias_{act}")
    x = g.tensor(name="x", dim=[3, 5, 7])
    b = g.tensor(name="b", dim=[1, 7])
    s = g.tensor(name="s", dim=[1, 7])
    r = g.tensor(name="r", dim=[3, 5, 7])
    y = getattr(g, act)(g.add(x, b))
    g.add(g.mul(y, s), r).set_output(True)
    module = check(g, ["pointwise"])
    assert f"call @bias_{act}_k0_pointwise(%arg0, %arg1, %arg2, %arg3)" in str(module)


def test_conv_batchnorm_relu():
    g = _graph("conv_bn")
    x = g.tensor(name="x", dim=[2, 3, 7, 5])
    w = g.tensor(name="w", dim=[5, 3, 3, 3])
    stats = [g.tensor(name=n, dim=[1, 5, 1, 1]) for n in ("mean", "var", "scale", "bias")]
    y = g.batchnorm_inference(g.conv_fprop(x, w, padding=1), *stats)
    g.relu(y).set_output(True)
    check(g, ["conv_fprop", "batchnorm_inference", "pointwise"], positive=("var",))


def test_intermediate_used_twice_and_returned():
    g = _graph("shared")
    x = g.tensor(name="x", dim=[5, 13])
    w = g.tensor(name="w", dim=[13, 7])
    b = g.tensor(name="b", dim=[7])
    h = g.add(g.matmul(x, w), b)  # epilogue; h is used twice and returned
    h.set_output(True)
    g.add(g.relu(h), g.exp(h)).set_output(True)
    module = check(g, ["matmul", "pointwise"])
    text = str(module)
    assert "-> tensor<5x7xf32> attributes {dnn.anchor = \"matmul\"" in text
    assert "call @shared_k1_pointwise(%0)" in text


def test_layernorm_backward_chain():
    g = _graph("ln_bwd")
    x = g.tensor(name="x", dim=[3, 5, 7])
    scale = g.tensor(name="scale", dim=[1, 1, 7])
    dy = g.tensor(name="dy", dim=[3, 5, 7])
    y, mean, inv = g.layernorm(x, scale, axis=2, norm_forward_phase="training")
    y.set_output(True)
    dx, dscale, dbias = g.layernorm_backward(dy, x, scale, mean, inv, axis=2)
    g.mul(dx, g.constant(2.0)).set_output(True)
    dscale.set_output(True)
    dbias.set_output(True)
    check(g, ["layernorm", "layernorm_backward", "pointwise"])


def test_pooling_relu():
    g = _graph("pool")
    x = g.tensor(name="x", dim=[2, 3, 7, 5])
    g.relu(g.pooling(x, "max", window=[3, 2], stride=[2, 1], padding=1)).set_output(True)
    check(g, ["pooling"])  # the relu is the pooling kernel's epilogue


def test_cast_chain():
    g = dnnc.Graph(name="casts", io_data_type=dnnc.data_type.HALF)
    x = g.tensor(name="x", dim=[3, 13])
    wide = g.cast(x, F32)
    g.cast(wide, dnnc.data_type.BFLOAT16).set_output(True)  # exact inner cast: folded
    narrow = g.cast(g.relu(wide), dnnc.data_type.BFLOAT16)
    g.cast(narrow, dnnc.data_type.HALF).set_output(True)  # rounding inner cast: kept
    # Two chains that only share the input x are two kernels.
    module = check(g, ["pointwise", "pointwise"])
    text = str(module)
    assert '"dnn.cast"(%arg0) : (tensor<3x13xf16>) -> tensor<3x13xbf16>' in text
    assert text.count('"dnn.cast"') == 4


def test_tensor_ops_and_concat():
    g = _graph("tensors")
    x = g.tensor(name="x", dim=[3, 5, 7])
    t = g.transpose(g.transpose(x, [1, 0, 2]), [1, 0, 2])  # folds away
    r = g.reshape(g.reshape(t, [15, 7]), [5, 21])  # one reshape
    s = g.slice(r, [slice(None), slice(1, 20, 2)])
    g.concat([g.sigmoid(s), s], axis=1).set_output(True)
    module = check(g, ["tensor", "pointwise", "concat"])
    # The reshape moves no data: it stays in the graph function, a view.
    graph = str(module).split("func.func @tensors(")[1]
    assert '"dnn.reshape"(%arg0)' in graph


def test_join_that_would_make_a_cycle_is_refused():
    # a and b form a pointwise chain; d reads b and the matmul, which reads a, so
    # joining d to {a, b} would make the two kernels call each other. (c has a
    # second user, so d is no epilogue of the matmul either.)
    g = _graph("cycle")
    x = g.tensor(name="x", dim=[5, 5])
    a = g.exp(x)
    b = g.relu(a)
    c = g.matmul(a, x)
    g.neg(c).set_output(True)
    g.add(b, c).set_output(True)
    check(g, ["pointwise", "matmul", "pointwise", "pointwise"])


def test_returned_matmul_result_keeps_its_epilogue():
    # The pre-activation is returned and feeds gelu: one matmul kernel stores
    # both (a second output of the GEMM's epilogue).
    g = _graph("pre_activation")
    x = g.tensor(name="x", dim=[5, 13])
    w = g.tensor(name="w", dim=[13, 7])
    b = g.tensor(name="b", dim=[1, 7])
    pre = g.add(g.matmul(x, w), b)
    pre.set_output(True)
    g.gelu(pre).set_output(True)
    check(g, ["matmul"], rtol=1e-6, atol=1e-6)


def test_options_turn_off_epilogue_and_prologue():
    g = _graph("plain")
    x = g.tensor(name="x", dim=[5, 13])
    w = g.tensor(name="w", dim=[13, 13])
    r = g.tensor(name="r", dim=[5, 13])
    h = g.relu(g.matmul(x, w))
    y, _, _ = g.layernorm(g.add(h, r), axis=1)
    y.set_output(True)
    pipeline = "builtin.module(dnn-fuse{epilogue=false prologue=false})"
    check(g, ["matmul", "pointwise", "layernorm"], pipeline=pipeline)
    check(g, ["matmul", "layernorm"])  # relu and the residual add join the matmul


def test_matmul_operand_prologues_join_the_matmul():
    """relu of A and a shift of B by a constant join the matmul's kernel (its
    operands are reused little: N = 7, M = 5); a cast of B before a matmul
    of 300 rows stays a kernel (each tile of B would be converted per 128
    rows); the option turns the join off."""
    g = _graph("prologues")
    a = g.tensor(name="a", dim=[5, 13])
    w = g.tensor(name="w", dim=[13, 7])
    x = g.tensor(name="x", dim=[300, 13])
    shifted = g.add(w, g.constant(0.5))
    g.relu(g.matmul(g.relu(a), shifted)).set_output(True)
    g.matmul(x, g.neg(w)).set_output(True)
    module = check(g, ["matmul", "pointwise", "matmul"])
    with module.context:
        first = next(f for f in module.body.operations if "dnn.kernel" in f.attributes)
        names = [op.operation.name for op in first.regions[0].blocks[0].operations]
    assert names.count("dnn.relu") == 2 and "dnn.add" in names, names
    off = "builtin.module(dnn-fuse{matmul_prologue=false})"
    check(g, ["pointwise", "pointwise", "matmul", "pointwise", "matmul"], pipeline=off)


# ---------------------------------------------------------------------------
# Norms through the whole front pipeline: decomposed into reductions and
# pointwise ops, then fused into row programs (reductions along the innermost
# dim), column programs (along the leading dims) and pointwise kernels.

FRONT = "builtin.module(" + ",".join(p for s in pipelines.FRONT for p in s.passes) + ")"


def check_front(graph, anchors, positive=()):
    """``check`` through the front pipeline (the decomposition rounds
    differently: f32 tolerances), and the CPU back end against the reference."""
    module = check(graph, anchors, positive=positive, pipeline=FRONT, rtol=1e-5, atol=1e-5)
    arrays = _inputs(graph, 0, positive)
    _check_cpu(graph, arrays, interpreter.run_module(graph_mlir.to_module(graph), arrays))
    return module


def reduced_axes(module):
    """Per kernel, in order: the axes of each of its reductions, as a tuple."""
    out = []
    with module.context:
        for f in module.body.operations:
            if f.operation.name != "func.func" or "dnn.kernel" not in f.attributes:
                continue
            ops = f.regions[0].blocks[0].operations
            out.append([tuple(ir.DenseI64ArrayAttr(op.attributes["axes"])) for op in ops
                        if op.operation.name == "dnn.reduction"])
    return out


def graph_ops(module, name):
    """The names of the ops left in graph function ``name`` besides calls."""
    text = str(module).split(f"func.func @{name}(")[1]
    return [line.split('"')[1] for line in text.splitlines() if '= "dnn.' in line]


@pytest.mark.parametrize("op", ["layernorm_backward", "rmsnorm_backward"])
@pytest.mark.parametrize("affine", [True, False])
def test_norm_backward_is_one_row_program_with_column_sums(op, affine):
    g = _graph(f"{op}_{affine}")
    dy, x = g.tensor(name="dy", dim=[6, 16]), g.tensor(name="x", dim=[6, 16])
    scale = g.tensor(name="scale", dim=[1, 16]) if affine else None
    inv = g.tensor(name="inv", dim=[6, 1])
    if op == "layernorm_backward":
        mean = g.tensor(name="mean", dim=[6, 1])
        outs = g.layernorm_backward(dy, x, scale, mean, inv, axis=1, has_bias=affine)
    else:
        outs = g.rmsnorm_backward(dy, x, scale, inv, axis=1, has_bias=affine)
    for t in outs:
        if t is not None:
            t.set_output(True)
    module = check_front(g, ["reduction"], positive=("inv",))
    # dx: sums along the rows; dscale and dbias: along the columns, in the
    # same kernel (one pass over dy and x).
    rows = [(1,), (1,)] if op == "layernorm_backward" else [(1,)]
    assert reduced_axes(module) == [rows + ([(0,), (0,)] if affine else [])]


def test_norm_backward_over_several_dims_reads_rows_of_all_of_them():
    g = _graph("ln_bwd_3d")
    dy, x = g.tensor(name="dy", dim=[2, 3, 8]), g.tensor(name="x", dim=[2, 3, 8])
    scale = g.tensor(name="scale", dim=[1, 3, 8])
    mean, inv = g.tensor(name="mean", dim=[2, 1, 1]), g.tensor(name="inv", dim=[2, 1, 1])
    for t in g.layernorm_backward(dy, x, scale, mean, inv, axis=1):
        t.set_output(True)
    # Viewed as 2 rows of 24: a row program with column sums, then each
    # result copied back into its shape.
    module = check_front(g, ["reduction", "tensor", "tensor", "tensor"], positive=("inv",))
    assert reduced_axes(module)[0] == [(1,), (1,), (0,), (0,)]


def test_long_norm_backward_rows_keep_a_column_program():
    # 20000 f32 sums a column reduction: more than a block's shared memory
    # holds beside dx, so dscale and dbias stay a column program.
    g = _graph("ln_bwd_long")
    dy, x = g.tensor(name="dy", dim=[2, 20000]), g.tensor(name="x", dim=[2, 20000])
    scale = g.tensor(name="scale", dim=[1, 20000])
    mean, inv = g.tensor(name="mean", dim=[2, 1]), g.tensor(name="inv", dim=[2, 1])
    for t in g.layernorm_backward(dy, x, scale, mean, inv, axis=1):
        t.set_output(True)
    module = graph_mlir.to_module(g)
    passes.run_pipeline(module, FRONT)
    assert kernels(module) == ["reduction", "reduction"]
    assert reduced_axes(module) == [[(1,), (1,)], [(0,), (0,)]]


@pytest.mark.parametrize("groups", [3, 6])
def test_groupnorm_is_one_row_program(groups):
    g = _graph(f"gn{groups}")
    x = g.tensor(name="x", dim=[2, 6, 4, 5])
    scale = g.tensor(name="scale", dim=[1, 6, 1, 1])
    bias = g.tensor(name="bias", dim=[1, 6, 1, 1])
    for t in g.groupnorm(x, groups, scale, bias, norm_forward_phase="training"):
        t.set_output(True)
    # One row per (sample, group): the statistics and y = xhat * scale + bias
    # in one kernel, reduced over the group's channels and positions (over
    # the positions alone where a group is one channel, instancenorm). y's
    # reshape back to NCHW is a kernel here and a view of the row kernel's
    # output once dnn-layout-views sees the buffers.
    module = check_front(g, ["reduction", "tensor"])
    axes = (3,) if groups == 6 else (2, 3)
    assert reduced_axes(module) == [[axes, axes], []]
    assert "dnn.reshape" in graph_ops(module, f"gn{groups}")  # views, no copies


@pytest.mark.parametrize("groups", [3, 6])
def test_groupnorm_backward_kernels(groups):
    g = _graph(f"gn_bwd{groups}")
    dy, x = g.tensor(name="dy", dim=[2, 6, 4, 5]), g.tensor(name="x", dim=[2, 6, 4, 5])
    scale = g.tensor(name="scale", dim=[1, 6, 1, 1])
    mean = g.tensor(name="mean", dim=[2, groups, 1, 1])
    inv = g.tensor(name="inv", dim=[2, groups, 1, 1])
    for t in g.groupnorm_backward(dy, x, groups, scale, mean, inv):
        t.set_output(True)
    # Sums of dy and dy * x per (sample, channel) (a row program), their sums
    # per group into dx's coefficients (a row program over the channels of a
    # group; with one channel per group, part of the first), dx (pointwise),
    # dscale and dbias (a column program), copied into their (1, C, 1, 1).
    per_group = ["reduction"] if groups == 3 else []
    module = check_front(g, ["reduction"] + per_group + ["pointwise", "reduction", "tensor",
                                                          "tensor"], positive=("inv",))
    assert reduced_axes(module)[0] == [(3,), (3,)]


def test_channels_last_batchnorm_is_two_column_programs_and_a_pointwise_kernel():
    """The variance's sum reads the mean over the rows: a column program makes
    its sums in one pass, so the two sums are kernels of their own; the
    per-channel ops join them, y is one pointwise kernel over (N*H*W, C)."""
    n, c, h, w = 2, 4, 3, 5
    g = _graph("bn_nhwc")
    x = g.tensor(name="x", dim=[n, c, h, w], stride=[h * w * c, 1, w * c, c])
    p = [g.tensor(name=k, dim=[1, c, 1, 1]) for k in ("scale", "bias", "rm", "rv")]
    for t in g.batchnorm(x, *p, momentum=0.1):
        t.set_output(True)
    # The transposes of x and y and the returned (1, C) -> (1, C, 1, 1)
    # reshapes are "tensor" kernels here; on the GPU, views (dnn-layout-views).
    module = check_front(g, ["tensor", "reduction", "tensor", "tensor", "reduction", "pointwise",
                             "tensor", "tensor", "tensor"], positive=("rv",))
    assert [axes for axes in reduced_axes(module) if axes] == [[(0,)], [(0,)]]


@pytest.mark.parametrize("types", [("f8E4M3FN", "f8E4M3FN"), ("f8E4M3FN", "f8E5M2")])
def test_fp8_descales_join_the_epilogue(types):
    """(a * s_a) @ (b * s_b) of fp8 a and b (the descales of an fp8 GEMM,
    e4m3 x e5m2 too), then the output's scale: the descales move after the
    fp8 product (dnn-fold-operand-scales), one kernel, the fp8 operands read
    as they are stored."""
    g = _graph("fp8_scaled")
    a = g.tensor(name="a", dim=[7, 32], data_type=types[0])
    b = g.tensor(name="b", dim=[32, 5], data_type=types[1])
    sa = g.tensor(name="sa", dim=[])
    sb = g.tensor(name="sb", dim=[])
    sy = g.tensor(name="sy", dim=[])
    g.mul(g.matmul(g.mul(a, sa), g.mul(b, sb)), sy).set_output(True)
    module = check(g, ["matmul"], positive=("sa", "sb", "sy"), rtol=1e-5)
    assert f"(tensor<7x32x{types[0]}>, tensor<32x5x{types[1]}>) -> tensor<7x5xf32>" \
        in str(module)


def test_fp8_gemm_amax_joins_the_gemm():
    """An fp8 GEMM's descaled output y, its amax over every axis (the
    record of y's range, as Transformer Engine keeps it) and y scaled and
    cast to e4m3: one matmul kernel, which returns the amax and the fp8
    output; the same values before and after, and on the CPU back end."""
    g = _graph("fp8_amax")
    a = g.tensor(name="a", dim=[2, 7, 32], data_type="f8E4M3FN")
    b = g.tensor(name="b", dim=[2, 32, 5], data_type="f8E4M3FN")
    sa = g.tensor(name="sa", dim=[])
    sy = g.tensor(name="sy", dim=[])
    y = g.mul(g.matmul(a, b), sa)
    g.reduction(y, "amax", [0, 1, 2]).set_output(True)
    g.cast(g.mul(y, sy), "f8E4M3FN").set_output(True)
    module = check(g, ["matmul"], positive=("sa", "sy"))
    assert '"dnn.reduction"' in str(module)
