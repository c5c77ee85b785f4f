"""Depthwise convolution gradients on the simt-depthwise strategy
(dnnc/codegen/gpu/window/depthwise_dgrad.py, depthwise_wgrad.py), without
a GPU: the kernels dnn-depthwise-conv builds, interpreted on the CPU by
kernel_interpreter.py, against the NumPy reference (outputs NaN-poisoned
first); the plans of the benchmark's layers (one kernel for a data
gradient, two for a filter gradient: partial sums and their deterministic
sum, no layout copies, the workspace bounded), their PTX through ptxas; the
heuristics; the data gradient's compile-time stride phases along W.
"""

import math

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

import dnnc
from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil, ptxas
from dnnc.codegen.gpu.window.depthwise_dgrad import taps_of_outputs
from dnnc.codegen.gpu.window.tile import blocks_per_sm
from dnnc.heuristics import rank
from dnnc.heuristics.depthwise import WGRAD_WORKSPACE_SHARE
from dnnc.heuristics.problem import SMS, Problem, TensorSpec
from kernel_interpreter import run_kernel
from test_conv_tensor_cores import channels_last

STRATEGY = "simt-depthwise"
PTXAS = ptxas.find()


def depthwise_graph(name, direction, dtype, x_dims, window, epilogue=None, out_type=None,
                    **attrs):
    """The ``direction`` ("fprop", "dgrad", "wgrad") of a depthwise
    convolution of x ``x_dims`` (groups = C), every tensor channels-last;
    ``epilogue`` "bias_relu" adds a per-channel bias and a relu."""
    c = x_dims[1]
    w_dims = [c, 1, *window]

    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        y_dims = [int(d) for d in g.conv_fprop(x, w, **attrs).dim]
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        if direction == "fprop":
            x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
            w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
            out, dims = g.conv_fprop(x, w, **attrs), y_dims
        elif direction == "dgrad":
            dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
            w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
            out, dims = g.conv_dgrad(dy, w, x_dims, **attrs), x_dims
        else:
            x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
            dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
            out, dims = g.conv_wgrad(x, dy, w_dims, **attrs), w_dims
        if epilogue == "bias_relu":
            b_dims = [1, dims[1]] + [1] * (len(dims) - 2)
            out = g.relu(g.add(out, g.tensor(name="b", dim=b_dims,
                                             stride=channels_last(b_dims))))
        out.set_output(True).set_stride(channels_last(dims))
        if out_type:
            out.set_data_type(out_type)
        return g
    return build


def interpret(build, dtype, config=""):
    """(the reference output, what the kernels wrote, the kernel's config)
    of ``build``'s graph of one kernel, lowered up to dnn-depthwise-conv and
    run by the interpreter on random inputs of ``dtype``."""
    g = build()
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off", stop_after="configured",
        config=config))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-depthwise-conv") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    rng = np.random.default_rng(11)
    numpy_type = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}[dtype]
    data = {t.name: rng.normal(size=[int(d) for d in t.dim]).astype(numpy_type)
            .astype(np.float64) for t in g.inputs}
    expected = g.execute_reference(data)
    (out,) = g.outputs
    with module.context:
        top = irutil.graph_function(module)
        names = [ir.StringAttr(ir.DictAttr(a)["dnn.name"]).value
                 for a in ir.ArrayAttr(top.attributes["arg_attrs"])]
        (call,) = [op for op in irutil.ops(top, "func.call")]
        fn = next(f for f in irutil.kernel_functions(module)
                  if irutil.symbol(f) == ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
        found = str(fn.attributes["dnn.config"])
        launches = len(list(irutil.ops(fn, "gpu.launch")))
        arrays = []
        for value in call.operands:
            name = names[list(irutil.body(top).arguments).index(value)]
            if name in data:
                arrays.append(np.asarray(data[name], np.float32))
            else:
                arrays.append(np.full(list(ir.MemRefType(value.type).shape), np.nan,
                                      np.float32))
                where = len(arrays) - 1
        got = run_kernel(fn, arrays)[where]
    return np.asarray(expected[out.name], np.float64), got, found, launches


def check(expected, got, dtype, reduced):
    """No NaN left, and within the type's rounding of the result (a
    tolerance grown with the square root of the terms each output sums)."""
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    rtol = {"bf16": 1.6e-2, "f16": 2e-3, "f32": 1e-5}[dtype]
    atol = rtol * max(1.0, float(np.abs(expected).max())) * max(1.0, np.sqrt(reduced) / 4)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


DGRADS = {
    # name: (dtype, x dims, window, attrs, epilogue)
    "3x3_s1_bf16": ("bf16", [2, 16, 7, 9], [3, 3], dict(padding=[1, 1]), None),
    "3x3_s2_bias_relu_bf16": ("bf16", [2, 16, 9, 7], [3, 3], dict(stride=[2, 2], padding=[1, 1]),
                              "bias_relu"),
    "5x5_s3_dilated_asymmetric_f16": ("f16", [1, 8, 11, 13], [5, 5], dict(
        stride=[3, 3], dilation=[2, 1], pre_padding=[2, 0], post_padding=[1, 3]), None),
    "7x7_s1_f32": ("f32", [1, 4, 9, 10], [7, 7], dict(padding=[3, 3]), None),
    "3x3_s2_convolution_f16": ("f16", [2, 8, 6, 10], [3, 3], dict(
        stride=[2, 2], padding=[1, 1], conv_mode="convolution"), None),
    "3x5_s21_12_channels_bf16": ("bf16", [1, 12, 8, 9], [3, 5], dict(
        stride=[2, 1], pre_padding=[0, 2], post_padding=[2, 1]), None),
    "3d_s2_f16": ("f16", [1, 8, 5, 6, 7], [3, 3, 3], dict(stride=[1, 2, 2], padding=[1, 1, 1]),
                  None),
}


@pytest.mark.parametrize("name", sorted(DGRADS))
def test_depthwise_dgrad_kernel_computes_the_gradient(name):
    dtype, x_dims, window, attrs, epilogue = DGRADS[name]
    build = depthwise_graph(f"dg_{name}", "dgrad", dtype, x_dims, window, epilogue, **attrs)
    expected, got, config, launches = interpret(build, dtype)
    assert f'strategy = "{STRATEGY}"' in config, config
    assert launches == 1
    check(expected, got, dtype, int(np.prod(window)))


def test_taps_of_a_strided_tile_are_its_stride_phases():
    # 3x3 / 2, pre 1, a tile of 4: outputs 0 and 2 (even rows + 1 = odd:
    # tap 1 only), 1 and 3 taps 0 and 2; dy columns of the tile's first.
    plan = taps_of_outputs(4, 3, 2, 1, 1)
    assert plan == {0: [(1, 0)], 1: [(0, 1), (2, 0)], 2: [(1, 1)], 3: [(0, 2), (2, 1)]}
    # Stride 1 is the forward with the filter flipped: every tap, column
    # u + pre - t.
    assert taps_of_outputs(2, 3, 1, 1, 1) == {0: [(0, 1), (1, 0), (2, -1)],
                                              1: [(0, 2), (1, 1), (2, 0)]}


WGRADS = {
    # name: (dtype, x dims, window, attrs, epilogue, config override)
    "3x3_s1_bf16": ("bf16", [2, 16, 7, 9], [3, 3], dict(padding=[1, 1]), None, ""),
    # The reduction split over 3 blocks of 4 lanes, runs of 3 (Q = 5: a
    # tail past Q).
    "3x3_s2_split_bias_relu_bf16": (
        "bf16", [2, 16, 9, 10], [3, 3], dict(stride=[2, 2], padding=[1, 1]), "bias_relu",
        "*=strategy:simt-depthwise,block:8,vector:8,tile:1x3,split:3"),
    # A thread per filter row (7 x 8 accumulators), split over 2 blocks.
    "7x7_rows_f16": ("f16", [1, 16, 9, 11], [7, 7], dict(padding=[3, 3]), None,
                     "*=strategy:simt-depthwise,block:64,vector:8,tile:1x4,split:2"),
    # 40 partials: the second launch's lanes sum two each (l, l + 32), then
    # the shuffles; rows of 3 taps x 4 channels a thread.
    "3x3_split_over_a_warp_bf16": (
        "bf16", [2, 16, 12, 12], [3, 3], dict(padding=[1, 1]), None,
        "*=strategy:simt-depthwise,block:8,vector:4,tile:1x2,split:40"),
    "5x5_s3_dilated_asymmetric_f32": ("f32", [2, 8, 13, 12], [5, 5], dict(
        stride=[3, 3], dilation=[2, 1], pre_padding=[2, 0], post_padding=[1, 3]), None, ""),
    "3x3_convolution_mode_12_channels_f16": ("f16", [1, 12, 6, 7], [3, 3], dict(
        padding=[1, 1], conv_mode="convolution"), None,
        "*=strategy:simt-depthwise,block:16,vector:4,tile:1x2,split:2"),
    "3d_f16": ("f16", [1, 8, 4, 5, 6], [3, 3, 3], dict(stride=[1, 2, 1], padding=[1, 1, 1]),
               None, ""),
}


@pytest.mark.parametrize("name", sorted(WGRADS))
def test_depthwise_wgrad_kernels_compute_the_gradient(name):
    """Partial sums, then their sum in order: two launches, every filter
    tap written (NaN-poisoned first)."""
    dtype, x_dims, window, attrs, epilogue, config = WGRADS[name]
    build = depthwise_graph(f"wg_{name}", "wgrad", dtype, x_dims, window, epilogue, **attrs)
    expected, got, found, launches = interpret(build, dtype, config)
    assert f'strategy = "{STRATEGY}"' in found, found
    if "split:" in config:
        assert f"split = {config.split('split:')[1]}" in found, found
    assert launches == 2
    pixels = int(np.prod(x_dims)) // x_dims[1]
    check(expected, got, dtype, pixels)


# ----------------------------------------------------------------------------
# Plans and PTX of the benchmark's layers


def _bench_graph(direction, n, c, h, r, pad, stride=1):
    return depthwise_graph(f"dw_{direction}_{c}_{r}_{stride}", direction, "bf16",
                           [n, c, h, h], [r, r], padding=[pad, pad], stride=[stride, stride])()


@pytest.mark.parametrize("direction,n,c,h,r,pad,stride,spills", [
    ("dgrad", 32, 144, 56, 3, 1, 1, False),
    ("dgrad", 32, 144, 56, 3, 1, 2, False),
    ("dgrad", 32, 96, 56, 7, 3, 1, True),
    ("wgrad", 32, 144, 56, 3, 1, 1, False),
    ("wgrad", 32, 96, 56, 7, 3, 1, False),
])
def test_benchmark_gradients_plan(direction, n, c, h, r, pad, stride, spills):
    """MobileNetV2's 3x3 and ConvNeXt's 7x7 gradients (channels-last bf16):
    no layout copies; a data gradient is one kernel with 16-byte loads of
    its inputs, a filter gradient two (the partials' workspace at most 1/8
    of x and dy) with 8-byte loads (4 channels a thread); ptxas assembles
    them (the 7x7 data gradient's 8 outputs a thread spill a few bytes, as
    the forward's do), and a filter gradient's partial sums take no more
    registers than the heuristics counted on (their launch bound): the SMs
    hold its whole grid at once (four blocks an SM for the 3x3, two for the
    7x7)."""
    package = compiler.compile_cuda(_bench_graph(direction, n, c, h, r, pad, stride), "sm_90a",
                                    cache=False)
    m = package.manifest
    kernels = m["kernels"]
    assert {k["strategy"] for k in kernels} == {STRATEGY}, [k["reason"] for k in kernels]
    assert len(kernels) == (1 if direction == "dgrad" else 2)
    p = (h + 2 * pad - r) // stride + 1
    if direction == "dgrad":
        assert m["workspace_bytes"] == 0
    else:
        inputs = (n * c * h * h + n * c * p * p) * 2
        assert 0 < 2 * m["workspace_bytes"] <= inputs // WGRAD_WORKSPACE_SHARE + 4096
        split = kernels[0]["config"]["split"]
        assert m["workspace_bytes"] == split * r * r * c * 4
    text = package.ptx[package.ptx.index(f".entry {kernels[0]['entry']}("):]
    text = text[:text.index("\n}\n")]
    if direction == "wgrad":
        # The blocks an SM the grid was planned for, ptxas's launch bound.
        assert f".minnctapersm {4 if r == 3 else 2}" in text, text[:400]
    vector = "v4.b32" if direction == "dgrad" else "v4.b16"
    assert f"ld.global.{vector}" in text or f"ld.global.nc.{vector}" in text
    if PTXAS is None:
        return
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for info in resources.values():
        assert info.spill_stores <= (64 if spills else 0)
    if direction == "wgrad":
        partials = kernels[0]
        threads = partials["block"][0]
        resident = blocks_per_sm(resources[partials["entry"]].registers, threads)
        assert resident >= {3: 4, 7: 2}[r], (resident, resources[partials["entry"]])
        assert math.prod(partials["grid"]) <= resident * SMS["sm_90a"], (partials["grid"],
                                                                          resident)


def test_heuristics_rank_depthwise_gradients_first():
    def problem(anchor, ins, out):
        return Problem(kernel="k", anchor=anchor, arch="sm_90a",
                       anchor_inputs=tuple(TensorSpec(tuple(s), "bf16") for s in ins),
                       anchor_outputs=(TensorSpec(tuple(out), "bf16"),),
                       anchor_attrs=(("stride", (2, 2)),))
    dgrad = rank(problem("conv_dgrad", ([32, 144, 28, 28], [144, 1, 3, 3]), [32, 144, 56, 56]))
    assert dgrad[0].strategy == STRATEGY and dgrad[0].tile == (1, 4)
    assert "simt-generic" in [c.strategy for c in dgrad]
    wgrad = rank(problem("conv_wgrad", ([32, 144, 28, 28], [32, 144, 56, 56]), [144, 1, 3, 3]))
    assert wgrad[0].strategy == STRATEGY and wgrad[0].split > 1
    # A few channels a group (2) too (test_grouped_simt.py); 64 a group go
    # to the tensor cores.
    small = rank(problem("conv_dgrad", ([32, 144, 28, 28], [144, 2, 3, 3]), [32, 288, 56, 56]))
    assert small[0].strategy == STRATEGY
    wide = rank(problem("conv_dgrad", ([32, 256, 28, 28], [256, 64, 3, 3]), [32, 256, 56, 56]))
    assert wide[0].strategy == "tc-sm90"
