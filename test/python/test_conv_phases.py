"""Strided data gradients split by stride phase
(dnnc/codegen/gpu/tensorcore/phases.py), without a GPU.

* The index math (``phases.split``): dx reassembled from the phases'
  stride-1 convolutions of dy by their sub-filters equals the NumPy
  reference's conv_dgrad, for strides 1 to 3, filters 1 to 7, dilations 1
  to 3 (gcd(stride, dilation) > 1 too), asymmetric padding, sizes that are
  no multiple of the stride, in convolution mode, 2-D and 3-D; every dx
  pixel lies in one phase and no tap serves two phases of a dim.
* The kernels (tc-sm80's, interpreted on the CPU by kernel_interpreter.py):
  dx written by the sub-filters' copy, a GEMM per phase with taps storing
  through pixel views and a launch per empty phase, its output poisoned
  with NaN first, against the reference, with fused epilogues (a bias and
  relu, whose empty phases hold relu(bias); a residual read through pixel
  views; an f32 dx).
  The same for 30 strided data gradients of the GPU cases' random draws
  (conv_random.py: strides, dilations and paddings up to 3 and 15, 2-D and
  3-D), each with an epilogue in turn.
* Plans: on sm_90a a strided data gradient is tc-sm90 kernels, one GEMM
  per phase with taps (plus the copy and the empty phases' launches), the
  plan naming the phases and their taps; tc-sm80 likewise on sm_80; a
  grouped one on tc-sm90, each phase's GEMM batched over the groups.
  A K split the heuristics (here an override) sum in clusters that a
  phase's K steps do not divide is summed without clusters for that phase.
* SASS: every phase's GEMM is HGMMA (sm_90a) with no spills or local
  memory.
"""

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

import dnnc
from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil, ptxas, sass
from dnnc.codegen.gpu.tensorcore import phases
from dnnc.dialect.ops_conv import output_size
from kernel_interpreter import run_kernel
from refutil import run
from test_conv_tensor_cores import channels_last, grad_graph
from test_tc_sass import needs_sass

# ----------------------------------------------------------------------------
# The index math


def reassembled(dy, w, size, stride, dilation, pre, mode):
    """dx of the strided gradient, built phase by phase as the kernels do:
    each phase's stride-1 correlation of dy (zero outside it) by its
    sub-filter, written to dx's rows s i + phi."""
    n, k = dy.shape[:2]
    c, window = w.shape[1], w.shape[2:]
    nd = len(window)
    flip = mode == "convolution"
    wf = w.reshape(k, c, -1)
    dx = np.full((n, c) + tuple(size), np.nan)
    for phase in phases.split(size, dy.shape[2:], window, stride, dilation, pre):
        out = np.zeros((n, c) + tuple(phase.out))
        for u, tap in zip(itertools.product(*(range(len(d.taps)) for d in phase.dims)),
                          phase.taps):
            sub = wf[:, :, phases.tap_index(tap, window, flip)]        # [K, C]
            # dy rows i - pre' + u dl' for every i of the phase, zero
            # outside dy.
            rows = [np.arange(o) - d.pre + t * d.dilation
                    for o, d, t in zip(phase.out, phase.dims, u)]
            picked = np.pad(dy, [(0, 0), (0, 0)] + [(1, 1)] * nd)
            picked = picked[np.ix_(range(n), range(k), *[
                np.where((r >= 0) & (r < m), r + 1, 0) for r, m in zip(rows, dy.shape[2:])])]
            out += np.einsum("nk...,kc->nc...", picked, sub)
        where = (slice(None), slice(None)) + tuple(
            slice(d.phase, d.phase + s * o, s) if o else slice(0, 0)
            for d, s, o in zip(phase.dims, stride, phase.out))
        dx[where] = out
    return dx


GEOMETRIES = [
    # (dx spatial, window, stride, dilation, pre, post, mode)
    ((9,), (3,), (2,), (1,), (1,), (1,), "cross_correlation"),
    ((10,), (1,), (2,), (1,), (0,), (0,), "cross_correlation"),
    ((11,), (7,), (3,), (1,), (3,), (2,), "convolution"),
    ((13,), (4,), (2,), (2,), (3,), (0,), "cross_correlation"),    # gcd(2, 2) = 2
    ((14,), (3,), (3,), (3,), (2,), (4,), "cross_correlation"),    # gcd 3: one phase of taps
    ((8,), (2,), (3,), (1,), (0,), (1,), "cross_correlation"),     # R < s
    ((12,), (5,), (2,), (3,), (4,), (4,), "convolution"),
    ((9, 7), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), "cross_correlation"),
    ((10, 9), (5, 3), (2, 3), (2, 1), (2, 0), (1, 1), "convolution"),
    ((7, 8), (1, 1), (2, 2), (1, 1), (0, 0), (0, 0), "cross_correlation"),
    ((11, 6), (7, 2), (3, 2), (1, 2), (3, 1), (2, 0), "cross_correlation"),
    ((5, 6, 7), (3, 2, 3), (2, 1, 3), (1, 2, 1), (1, 1, 2), (0, 1, 1), "cross_correlation"),
    ((6, 5, 4), (3, 3, 1), (2, 2, 2), (2, 1, 1), (2, 1, 0), (1, 1, 0), "convolution"),
]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g[0])) +
                         "_r" + "x".join(map(str, g[1])) + "_s" + "x".join(map(str, g[2])) +
                         "_d" + "x".join(map(str, g[3])))
def test_phases_reassemble_the_reference_gradient(geometry):
    size, window, stride, dilation, pre, post, mode = geometry
    if len(size) == 1:
        # The reference takes 2-D and 3-D: a second dim of stride 1.
        size, window, stride, dilation, pre, post = (
            v + e for v, e in zip((size, window, stride, dilation, pre, post),
                                  ((5,), (2,), (1,), (1,), (1,), (0,))))
    out = [output_size(*a) for a in zip(size, window, pre, post, stride, dilation)]
    rng = np.random.default_rng(len(size) * 100 + sum(window))
    dy = rng.normal(size=(2, 3, *out))
    w = rng.normal(size=(3, 4, *window))
    attrs = dict(pre_padding=pre, post_padding=post, stride=stride, dilation=dilation,
                 mode=mode)
    expected = run("conv_dgrad", {"dy": dy, "w": w}, declared={"dx": (2, 4, *size)},
                   **attrs)["dx"]
    got = reassembled(dy, w, size, stride, dilation, pre, mode)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    split = phases.split(size, out, window, stride, dilation, pre)
    # Every dx pixel is in one phase; the taps are shared out, none twice
    # (each tap meets the phases whose rows it reaches).
    assert sum(math.prod(p.out) for p in split) == math.prod(size)
    for d in range(len(size)):
        dims = phases.split_dim(size[d], out[d], window[d], stride[d], dilation[d], pre[d])
        used = sorted(t for dp in dims for t in dp.taps)
        assert len(used) == len(set(used)) and set(used) <= set(range(window[d]))


def test_phase_taps_of_common_shapes():
    """3 x 3 stride 2 padding 1: phases of 1, 2, 2 and 4 taps; 1 x 1
    stride 2: one phase of its tap and three of none; 3 x 3 stride 2
    dilation 2: gcd 2, the taps all in the phases of the padding's parity."""
    taps = [math.prod(p.filter) for p in phases.split([56, 56], [28, 28], [3, 3], [2, 2],
                                                      [1, 1], [1, 1])]
    assert taps == [1, 2, 2, 4]
    one = phases.split([56, 56], [28, 28], [1, 1], [2, 2], [1, 1], [0, 0])
    assert [p.empty for p in one] == [False, True, True, True]
    assert [math.prod(p.filter) for p in phases.split([9], [4], [3], [2], [2], [1])] == [0, 3]


# ----------------------------------------------------------------------------
# The kernels, interpreted (tc-sm80)


def dgrad_graph(name, dtype, dx_dims, k, window, epilogue=None, out_type=None, **attrs):
    """dx of a strided convolution of dx_dims by a k x C x window filter, every
    tensor channels-last; ``epilogue``: "bias_relu" (relu(dx + b)) or
    "residual" (dx + r)."""
    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        w_dims = [k, dx_dims[1], *window]
        x = g.tensor(name="x", dim=dx_dims, stride=channels_last(dx_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        y_dims = [int(d) for d in g.conv_fprop(x, w, **attrs).dim]
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        dx = g.conv_dgrad(dy, w, dx_dims, **attrs)
        if epilogue == "bias_relu":
            b_dims = [1, dx_dims[1]] + [1] * (len(dx_dims) - 2)
            dx = g.relu(g.add(dx, g.tensor(name="b", dim=b_dims, stride=channels_last(b_dims))))
        elif epilogue == "residual":
            dx = g.add(dx, g.tensor(name="r", dim=dx_dims, stride=channels_last(dx_dims)))
        dx.set_output(True).set_stride(channels_last(dx_dims))
        if out_type:
            dx.set_data_type(out_type)
        return g
    return build


def interpret(build, dtype, arch="sm_80", config=None, poison=True, fill=None):
    """(the reference output, what the kernels wrote, the conv kernel
    function's config) for ``build``'s graph of one kernel, its inputs of
    ``dtype`` ("bf16", "f16", "f32") drawn at random; ``config``: an override of
    the heuristics; ``poison`` (the default): the kernel's own buffers,
    the bytes between its operands and shared memory start as NaN, so that
    a read past an operand or of memory never written shows; ``fill``: a
    value for every input instead of random ones."""
    g = build()
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", stop_after="configured", config=config))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-tensor-cores") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    rng = np.random.default_rng(7)
    numpy_type = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}[dtype]
    data = {t.name: (rng.normal(size=[int(d) for d in t.dim]) if fill is None else
                     np.full([int(d) for d in t.dim], fill)).astype(numpy_type)
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
        config = str(fn.attributes["dnn.config"])
        arrays = []
        for value in call.operands:
            index = list(irutil.body(top).arguments).index(value)
            name = names[index]
            if name in data:
                arrays.append(np.asarray(data[name], np.float32))
            else:
                arrays.append(np.full(list(ir.MemRefType(value.type).shape), np.nan,
                                      np.float32))
                where = len(arrays) - 1
        got = run_kernel(fn, arrays, poison)[where]
    return np.asarray(expected[out.name], np.float64), got, config


INTERPRETED = {
    "s2_3x3_bias_relu_bf16": dgrad_graph("i1", "bf16", [2, 16, 9, 7], 16, [3, 3],
                                         epilogue="bias_relu", stride=[2, 2], padding=[1, 1]),
    "s2_1x1_bias_relu_bf16": dgrad_graph("i2", "bf16", [2, 16, 6, 5], 16, [1, 1],
                                         epilogue="bias_relu", stride=[2, 2]),
    "s23_dilated_convolution_residual_f16": dgrad_graph(
        "i3", "f16", [1, 16, 10, 9], 16, [3, 3], epilogue="residual", stride=[2, 3],
        dilation=[2, 1], pre_padding=[2, 0], post_padding=[1, 1], conv_mode="convolution"),
    "s3_2x2_f32_out_bf16": dgrad_graph("i4", "bf16", [1, 16, 8, 7], 16, [2, 2],
                                       out_type="f32", stride=[3, 3], padding=[0, 1]),
    "3d_f16": dgrad_graph("i5", "f16", [1, 16, 5, 4, 6], 16, [3, 1, 2], stride=[2, 1, 2],
                          padding=[1, 0, 0]),
}


@pytest.mark.parametrize("name", sorted(INTERPRETED))
def test_phased_kernels_compute_the_gradient(name):
    """dx (NaN-poisoned first) within the type's tolerance of the float64
    reference everywhere: every phase's pixels written, the empty ones with
    the epilogue of 0."""
    dtype = name.rsplit("_", 1)[1]
    expected, got, config = interpret(INTERPRETED[name], dtype)
    assert 'strategy = "tc-sm80"' in config, config
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    rtol = {"bf16": 1.6e-2, "f16": 2e-3}[dtype]
    atol = rtol * max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------
# Plans and SASS


PLANNED = {
    # name: (graph, arch, GEMM launches, phases note)
    "s2_3x3": (grad_graph("p1", "dgrad", "bf16", [2, 64, 13, 11], 64, [3, 3], stride=[2, 2],
                          padding=[1, 1]), 4, "4 stride phases (tensorcore/phases.py), a "
               "stride-1 GEMM each of 1/2/2/4 filter taps x 64 channels"),
    "s2_1x1": (grad_graph("p2", "dgrad", "bf16", [2, 64, 8, 8], 128, [1, 1], stride=[2, 2]),
               1, "4 stride phases (tensorcore/phases.py), a stride-1 GEMM each of 1/0/0/0 "
               "filter taps x 128 channels; 3 of no filter taps, written by the epilogue of 0"),
    "s3_3d": (grad_graph("p3", "dgrad", "f16", [1, 32, 5, 7, 6], 32, [2, 3, 3],
                         stride=[2, 3, 1], padding=[0, 1, 1]), 6, "6 stride phases"),
}


def compiled(name, arch):
    build, _, _ = PLANNED[name]
    return compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off"), basename=f"{name}_{arch}")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("name", sorted(PLANNED))
def test_plan_says_stride_phases(name, arch):
    _, gemms, note = PLANNED[name]
    kernels = compiled(name, arch).kernels
    strategy = "tc-sm90" if arch == "sm_90a" else "tc-sm80"
    assert all(k["strategy"] == strategy for k in kernels), \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    read = "read by TMA in im2col mode" if arch == "sm_90a" else "gathered by cp.async"
    assert f"implicit GEMM (dgrad): dy {read}, stride " in kernels[0]["reason"], \
        kernels[0]["reason"]
    assert note in kernels[0]["reason"], kernels[0]["reason"]
    big = [k for k in kernels if k["block"][0] > 256 or k.get("shared_bytes", 0) > 0]
    assert len(big) == gemms, [(k["entry"], k["block"], k.get("shared_bytes")) for k in kernels]


@pytest.mark.parametrize("window, launches", [((3, 3), 5), ((1, 1), 2)])
def test_grouped_strided_dgrad_by_phase(window, launches):
    """A grouped strided data gradient splits by phase too, each phase's
    GEMM batched over the groups (tc-sm90; the 3 x 3's copy and 4 GEMMs,
    the 1 x 1's GEMM and empty phases' launch)."""
    pad = [w // 2 for w in window]

    def build():
        g = dnnc.Graph(name="p4", io_data_type="bf16", compute_data_type="f32")
        w_dims = [128, 64, *window]
        x = g.tensor(name="x", dim=[2, 128, 9, 9], stride=channels_last([2, 128, 9, 9]))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        y_dims = [int(d) for d in g.conv_fprop(x, w, stride=[2, 2], padding=pad).dim]
        g = dnnc.Graph(name="p4", io_data_type="bf16", compute_data_type="f32")
        dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        dx = g.conv_dgrad(dy, w, [2, 128, 9, 9], stride=[2, 2], padding=pad)
        dx.set_output(True).set_stride(channels_last([2, 128, 9, 9]))
        return g
    kernels = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off"), basename="p4").kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm90"] * launches, \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    assert "4 stride phases" in kernels[0]["reason"] and \
        "2 groups (a GEMM each, the batch)" in kernels[0]["reason"], kernels[0]["reason"]


@needs_sass
@pytest.mark.parametrize("name", ["s2_3x3", "s2_1x1"])
def test_phase_gemms_sass(name):
    """Every phase GEMM of tc-sm90: HGMMA on bf16, TMA loads, no spills or
    local memory; the copy and empty-phase launches spill nothing."""
    package = compiled(name, "sm_90a")
    resources, cubin = ptxas.assemble_cubin(package.ptx, "sm_90a")
    functions = sass.functions(sass.disassemble(cubin))
    gemms = 0
    for k in package.kernels:
        r = resources[k["entry"]]
        assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), (k["entry"], r)
        counts = sass.opcodes(functions[k["entry"]])
        assert counts["LDL"] == counts["STL"] == 0, (k["entry"], counts["LDL"], counts["STL"])
        if any(op.startswith("HGMMA.") for op in counts):
            gemms += 1
            assert all(op.endswith(".F32.BF16") for op in counts if op.startswith("HGMMA.")), \
                sorted(counts)
            assert counts["UTMALDG"] > 0, sorted(counts)
    assert gemms == PLANNED[name][1]


def test_phase_splits_clusters_it_cannot_sum_without():
    """A K split summed in clusters of 4 (an override) that the phases of
    one and two taps (K steps) cannot divide: they sum without clusters,
    the 4-tap phase keeps them; every phase is a tc-sm90 GEMM."""
    build = PLANNED["s2_3x3"][0]
    package = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off",
        config="*=strategy:tc-sm90,tile:64x64x64,stages:4,split:4,cluster:4"),
        basename="clusters")
    kernels = package.kernels
    assert all(k["strategy"] == "tc-sm90" for k in kernels), \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    gemms = [k for k in kernels if k.get("shared_bytes", 0) > 0]
    assert len(gemms) == 4, [k["entry"] for k in kernels]
    # Phases of 1, 2, 2 and 4 taps (K steps): only the last splits 4 ways.
    assert [k.get("cluster", [1, 1, 1])[0] for k in gemms] == [1, 1, 1, 4], gemms
    assert "4 stride phases" in kernels[0]["reason"], kernels[0]["reason"]


def random_strided_dgrads(count=30):
    """The first ``count`` strided data gradients of the GPU cases' random
    draws (conv_random.py) that tc-sm80 takes: one group, channels-last, C
    and K multiples of 8."""
    from test_cuda_compile import _load_gpu_cases

    configs = _load_gpu_cases().conv_random.GRAD_CONFIGS["dgrad"]
    picked = [c for c in configs if any(s > 1 for s in c.stride) and c.groups == 1 and
              c.channels_last and c.c % 8 == 0 and c.k % 8 == 0]
    return picked[:count]


@pytest.mark.parametrize("index", range(30))
def test_random_phased_dgrads_interpreted(index):
    """The random draws' strided data gradients on tc-sm80's phase kernels,
    interpreted, against the reference (no NaN left: every pixel written)."""
    conv = random_strided_dgrads()[index]
    dtype = ("bf16", "f16")[index % 2]
    build = dgrad_graph(f"r{index}", dtype, list(conv.x_dims), conv.k, list(conv.filter),
                        epilogue=("bias_relu", "residual", None)[index % 3],
                        stride=list(conv.stride), dilation=list(conv.dilation),
                        pre_padding=list(conv.pre), post_padding=list(conv.post),
                        conv_mode=conv.mode)
    expected, got, config = interpret(build, dtype)
    assert 'strategy = "tc-sm80"' in config, (conv, config)
    assert not np.isnan(got).any(), (conv, np.argwhere(np.isnan(got))[:5])
    rtol = {"bf16": 1.6e-2, "f16": 2e-3}[dtype]
    # dx sums up to K x taps products: the tolerance scales with their count.
    atol = rtol * max(1.0, 4 * math.sqrt(conv.k * math.prod(conv.filter)))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=str(conv))
