"""The CUDA back end without a GPU: every op of the dialect compiles to PTX for
sm_80 and sm_90a, ptxas accepts it, the manifest is consistent, and the
lowering computes the right numbers.

* One graph per op family (several outputs each, to keep compilations few);
  together they use all 75 ops (``test_families_cover_every_op``).
* ptxas (DNNC_PTXAS, the nvidia-cuda-nvcc wheel, or PATH) assembles the PTX
  for the arch it was made for; without one, those tests skip and say why.
* Numerics: the GPU lowering is run on the CPU up to the thread mapping
  (bufferization, host-to-kernels, strided I/O, loop distribution into
  blocks x threads with bounds guards, math expansion), then lowered with the
  CPU tail and executed by MLIR's ExecutionEngine. Its results must match the
  CPU back end's to 1e-4 (relative to max(1, |value|)), NaN for NaN;
  the math expansions must match float64 to 1-2 ulp.
* A .dnnpkg round-trips through dnnc.artifact; the examples compile; the CLI
  writes and inspects a package.
"""

import importlib.util
import io
import json
import os
import re
import sys
import zipfile

import ml_dtypes
import numpy as np
import pytest

import dnnc
import dnnc.targets.cpu
import dnnc.dialect
import dnnc.graph_mlir
from dnnc import artifact, compiler, heuristics, pipelines
from dnnc.codegen.gpu import host_plan, irutil, ptx, ptxas, sass
from dnnc.dialect.types import data_type as dt
from dnnc.errors import LoweringError, UnsupportedError
from dnnc.parsing import parse
from dnnc.passes import run_pipeline

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import dnnc_runtime
except ImportError:  # a plain checkout: the runtime lives in runtime/
    sys.path.insert(0, os.path.join(ROOT, "runtime"))
    import dnnc_runtime
from dnnc_runtime import artifact as runtime_artifact  # noqa: E402
ARCHS = pipelines.ARCHS
F32, F16, BF16 = dt.FLOAT, dt.HALF, dt.BFLOAT16
E4M3, E5M2, BOOL = dt.FP8_E4M3, dt.FP8_E5M2, dt.BOOLEAN
PTXAS = ptxas.find()
needs_ptxas = pytest.mark.skipif(
    PTXAS is None, reason="no ptxas: set DNNC_PTXAS, pip install nvidia-cuda-nvcc, or put "
                          "ptxas on PATH")


def outputs(*tensors):
    for t in tensors:
        if t is not None:
            t.set_output(True)


# ----------------------------------------------------------------------------
# One graph per op family


UNARY = [("relu", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
         ("swish", {"beta": 1.5}), ("sigmoid", {}), ("tanh", {}), ("elu", {"alpha": 0.7}),
         ("leaky_relu", {"negative_slope": 0.2}), ("softplus", {}), ("exp", {}), ("abs", {}),
         ("neg", {}), ("square", {}), ("reciprocal", {}), ("sin", {}), ("cos", {}),
         ("erf", {}), ("floor", {}), ("ceil", {}), ("log", {}), ("sqrt", {}), ("rsqrt", {})]


def pointwise():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[3, 7, 5])
    b = g.tensor(name="b", dim=[7, 1])
    h = g.tensor(name="h", dim=[3, 7, 5], data_type=BF16)
    m = g.tensor(name="m", dim=[7, 5], data_type=BOOL)
    for i, (op, attrs) in enumerate(UNARY):
        outputs(getattr(g, op)(x, name=f"{op}{i}", **attrs))
    for op in ("add", "sub", "mul", "div", "max", "min", "pow"):
        outputs(getattr(g, op)(x, b, name=op))
    cmps = [getattr(g, op)(x, b, name=op)
            for op in ("cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge")]
    outputs(*cmps)
    outputs(g.logical_and(cmps[0], m, name="and"), g.logical_or(cmps[1], m, name="or"),
            g.logical_not(m, name="not"), g.select(m, x, b, name="select"))
    for op in ("relu_backward", "gelu_backward", "silu_backward", "sigmoid_backward",
               "tanh_backward", "swish_backward", "elu_backward", "leaky_relu_backward",
               "softplus_backward"):
        outputs(getattr(g, op)(x, h, name=op))
    outputs(g.cast(h, E4M3, name="to_e4m3"), g.cast(g.cast(x, E5M2), F16, name="via_e5m2"),
            g.mul(x, g.constant(0.5), name="scaled"), g.gen_index(x, axis=1, name="index"))
    return g


def tensor_ops():
    g = dnnc.Graph(io_data_type=BF16)
    x = g.tensor(name="x", dim=[3, 5, 7])
    y = g.tensor(name="y", dim=[3, 2, 7])
    outputs(g.reshape(x, [7, 15], name="reshape"), g.transpose(x, [2, 0, 1], name="transpose"),
            g.slice(x, [slice(1, 3), slice(0, 5, 2), slice(1, 7, 3)], name="slice"),
            g.concat([x, y], axis=1, name="concat"))
    return g


def copies():
    """Data movement by 16-byte vectors: a heads transpose, a strided input
    reshaped, slices and a concat at vector boundaries, a bool transpose;
    and the copies handed back to one thread per element."""
    g = dnnc.Graph(io_data_type=BF16)
    x = g.tensor(name="x", dim=[2, 3, 4, 16])
    heads = g.tensor(name="heads", dim=[2, 3, 4, 16], stride=[3 * 4 * 16, 16, 3 * 16, 1])
    a = g.tensor(name="a", dim=[6, 32])
    outputs(g.transpose(x, [0, 2, 1, 3], name="split_heads"),
            g.reshape(heads, [2, 3, 64], name="merge_heads"),
            g.slice(a, [slice(1, 6, 2), slice(8, 24)], name="slice"),
            g.concat([a, g.slice(a, [slice(None), slice(16, 32)])], axis=1, name="concat"),
            g.transpose(g.cmp_gt(x, g.constant(0.0)), [1, 0, 2, 3], name="mask_t"),
            g.transpose(a, [1, 0], name="transpose_inner"),
            g.slice(a, [slice(None), slice(3, 19)], name="misaligned"))
    return g


def matmul_conv():
    g = dnnc.Graph(io_data_type=F16)
    a = g.tensor(name="a", dim=[2, 3, 13])
    b = g.tensor(name="b", dim=[13, 7])
    outputs(g.matmul(a, b, name="mm"))
    # fp8 with 1x128 / 128x128 block scales: K = 130 is two blocks, the last of 2.
    qa = g.tensor(name="qa", dim=[5, 130], data_type=E4M3)
    qb = g.tensor(name="qb", dim=[130, 9], data_type=E5M2)
    qsa = g.tensor(name="qsa", dim=[5, 2], data_type=F32)
    qsb = g.tensor(name="qsb", dim=[2, 1], data_type=F32)
    outputs(g.matmul_block_scaled(qa, qb, qsa, qsb, name="mm_block_scaled"))
    x = g.tensor(name="x", dim=[2, 3, 7, 5])
    w = g.tensor(name="w", dim=[4, 3, 3, 2])
    attrs = dict(pre_padding=[1, 0], post_padding=[1, 1], stride=[2, 1])
    y = g.conv_fprop(x, w, name="fprop", **attrs)
    dy = g.tensor(name="dy", dim=[int(d) for d in y.dim])
    outputs(y, g.conv_dgrad(dy, w, [2, 3, 7, 5], name="dgrad", **attrs),
            g.conv_wgrad(x, dy, [4, 3, 3, 2], name="wgrad", **attrs))
    return g


def reduce_pool():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[2, 3, 7, 5])
    outputs(g.reduction(x, "sum", [1], name="sum"),
            g.reduction(x, "max", [0, 2, 3], keepdims=False, name="max"))
    attrs = dict(window=[3, 2], stride=[2, 1], pre_padding=[1, 0], post_padding=[2, 1])
    p = g.pooling(x, "max", name="pool", **attrs)
    dy = g.tensor(name="dy", dim=[int(d) for d in p.dim])
    outputs(p, g.pooling_backward(dy, x, "avg", name="pool_bwd", **attrs))
    return g


def norms():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[2, 6, 3, 5])
    scale = g.tensor(name="scale", dim=[1, 6, 1, 1])
    bias = g.tensor(name="bias", dim=[1, 6, 1, 1])
    dy = g.tensor(name="dy", dim=[2, 6, 3, 5])
    y, mean, inv = g.layernorm(x, axis=1, norm_forward_phase="training")
    outputs(y, mean, inv, *g.layernorm_backward(dy, x, None, mean, inv, axis=1))
    ry, inv_rms = g.rmsnorm(x, axis=3, norm_forward_phase="training")
    outputs(ry, inv_rms, *g.rmsnorm_backward(dy, x, None, inv_rms, axis=3))
    bn = g.batchnorm(x, scale, bias)
    outputs(*bn, *g.batchnorm_backward(dy, x, scale, bn[1], bn[2]))
    outputs(g.batchnorm_inference(x, scale, bias, scale, bias))
    gy, gmean, ginv = g.groupnorm(x, 3, scale, bias, norm_forward_phase="training")
    outputs(gy, gmean, ginv, *g.groupnorm_backward(dy, x, 3, scale, gmean, ginv))
    iy, imean, iinv = g.instancenorm(x, scale, bias, norm_forward_phase="training")
    outputs(iy, imean, iinv, *g.instancenorm_backward(dy, x, scale, imean, iinv))
    return g


def softmax_attention():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[3, 13, 7])
    dy = g.tensor(name="dy", dim=[3, 13, 7])
    s = g.softmax(x, axis=1)
    ls = g.log_softmax(x, axis=2)
    outputs(s, ls, g.softmax_backward(dy, s, axis=1), g.log_softmax_backward(dy, ls, axis=2))
    q = g.tensor(name="q", dim=[1, 2, 5, 8])
    k = g.tensor(name="k", dim=[1, 2, 7, 8])
    v = g.tensor(name="v", dim=[1, 2, 7, 3])
    o, stats = g.sdpa(q, k, v, use_causal_mask=True, generate_stats=True)
    do = g.tensor(name="do", dim=[1, 2, 5, 3])
    o_in = g.tensor(name="o_in", dim=[1, 2, 5, 3])
    st = g.tensor(name="st", dim=[1, 2, 5, 1])
    outputs(o, stats, *g.sdpa_backward(q, k, v, o_in, do, st, use_causal_mask=True))
    return g


def channels_last():
    """NHWC input and output (a conv, a bias, a pointwise op) plus a row-major
    output of the same input."""
    n, c, h, w = 2, 3, 5, 7
    nhwc = [h * w * c, 1, w * c, c]
    # Exact f32: the convolution stays on simt-generic, whose strided
    # operands are what dnn-io-strides copies (tf32, the f32 default, would
    # take it to tc-sm90 and dnn-conv-layouts).
    g = dnnc.Graph(io_data_type=F32, compute_data_type="float")
    x = g.tensor(name="x", dim=[n, c, h, w], stride=nhwc)
    wt = g.tensor(name="w", dim=[4, c, 3, 3], stride=[9 * c, 1, 3 * c, c])
    b = g.tensor(name="b", dim=[1, c, 1, 1])
    y = g.relu(g.add(x, b)).set_name("y")
    y.set_stride(nhwc)
    z = g.conv_fprop(x, wt, padding=[1, 1]).set_name("z")
    z.set_stride([h * w * 4, 1, w * 4, 4])
    outputs(y, z, g.exp(x, name="e"))
    return g


def batchnorm_channels_last():
    """Batchnorm training (with running statistics), backward and inference on
    channels-last x, dy, y and dx: the rules read them as (N*H*W, C) views of
    the graph's buffers (dnn-layout-views), with no copy kernel."""
    n, c, h, w = 3, 8, 5, 7
    nhwc = [h * w * c, 1, w * c, c]
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[n, c, h, w], stride=nhwc)
    dy = g.tensor(name="dy", dim=[n, c, h, w], stride=nhwc)
    p = {k: g.tensor(name=k, dim=[1, c, 1, 1]) for k in ("scale", "bias", "rm", "rv")}
    y, mean, inv, rm, rv = g.batchnorm(x, p["scale"], p["bias"], p["rm"], p["rv"],
                                       momentum=0.1)
    dx, dscale, dbias = g.batchnorm_backward(dy, x, p["scale"], mean, inv)
    infer = g.batchnorm_inference(x, p["rm"], p["bias"], p["scale"], p["bias"], epsilon=4.0)
    for t in (y, dx, infer):
        t.set_stride(nhwc)
    outputs(y, mean, inv, rm, rv, dx, dscale, dbias, infer)
    return g


def zero_size():
    """Zero-size dims: outputs with no element (no launch) beside outputs that
    must still be written (sums over an empty axis: zeros; a mean: NaN; a
    matmul with K = 0: zeros; a concat with an empty operand)."""
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[0, 16])
    b = g.tensor(name="b", dim=[16])
    z = g.tensor(name="z", dim=[4, 0])
    a = g.tensor(name="a", dim=[4, 0])
    k0 = g.tensor(name="k0", dim=[0, 5])
    c = g.tensor(name="c", dim=[0, 3])
    d = g.tensor(name="d", dim=[3, 5])
    v = g.tensor(name="v", dim=[2, 5])
    nhwc = g.tensor(name="nhwc", dim=[2, 0, 3, 3], stride=[0, 1, 0, 0])
    image = g.tensor(name="image", dim=[0, 3, 5, 5])
    w = g.tensor(name="w", dim=[4, 3, 3, 3])
    outputs(g.relu(x, name="relu"), g.add(x, b, name="add"), g.softmax(x, axis=1, name="softmax"),
            g.reduction(x, "sum", [0], name="sum_rows"), g.reduction(z, "sum", [1], name="sum"),
            g.reduction(z, "mean", [1], name="mean"), g.matmul(a, k0, name="mm_k0"),
            g.matmul(c, d, name="mm_m0"), g.concat([k0, v], axis=0, name="concat"),
            g.reduction(nhwc, "sum", [1], name="sum_c"),
            g.conv_fprop(image, w, padding=[1, 1], name="conv_n0"))
    return g


FAMILIES = {f.__name__: f for f in (pointwise, tensor_ops, copies, matmul_conv, reduce_pool, norms,
                                    softmax_attention, channels_last, batchnorm_channels_last,
                                    zero_size)}


def op_names(g):
    return set(re.findall(r'"dnn\.(\w+)"', g.to_mlir()))


def test_families_cover_every_op():
    used = set().union(*(op_names(f()) for f in FAMILIES.values()))
    missing = sorted({d.name for d in dnnc.dialect.all_ops()} - used)
    assert not missing, f"ops no CUDA test graph uses: {missing}"


# ----------------------------------------------------------------------------
# Compilation, PTX and manifest


_PACKAGES = {}


def compile_cuda(family, arch):
    """The Package of a family graph for ``arch`` (compiled once per session)."""
    key = (family, arch)
    if key not in _PACKAGES:
        g = FAMILIES[family]()
        _PACKAGES[key] = compiler.compile_module(
            dnnc.graph_mlir.to_module(g), compiler.Options(target="cuda", arch=arch))
    return _PACKAGES[key]


def check_manifest(m, arch):
    """Every argument names a real buffer, workspace slices are aligned and
    inside the workspace, launches are within the hardware limits."""
    assert m["format_version"] == artifact.FORMAT_VERSION and m["arch"] == arch
    assert m["mlir_version"].startswith("22.") and m["dnnc_version"] == dnnc.__version__
    buffers = m["buffers"]
    for b in buffers:
        if b["kind"] == "workspace":
            assert b["offset"] % 256 == 0
            assert 0 <= b["offset"] and b["offset"] + b["bytes"] <= m["workspace_bytes"]
        else:
            assert 0 <= b["index"] < len(m[b["kind"] + "s"])
    for k in m["kernels"]:
        assert k["strategy"] in heuristics.IMPLEMENTED
        assert 1 <= k["block"][0] * k["block"][1] * k["block"][2] <= 1024
        assert all(g >= 1 for g in k["grid"]) and k["grid"][0] < 2 ** 31
        assert k["grid"][1] <= 65535 and k["grid"][2] <= 65535
        # Dynamic shared memory: a row program's column sums, the rings of
        # the tensor-core kernels (the small convolutions here take tc-sm90)
        # and simt-gemm's two stages (an f32 matmul's).
        assert k["shared_bytes"] == 0 or k["strategy"] in (
            "simt-reduce-rows-columns", "tc-sm90", "tc-sm80", "simt-gemm", "simt-gemv")
        assert k["args"], k["entry"]
        for a in k["args"]:
            if a["kind"] == "buffer":
                assert 0 <= a["buffer"] < len(buffers) and a["byte_offset"] == 0
            elif a["kind"] == "tma":
                assert k["strategy"] == "tc-sm90" and 0 <= a["buffer"] < len(buffers)
            else:
                assert a["kind"] == "scalar" and a["type"] in ("i32", "i64", "f32")
    for kind in ("inputs", "outputs"):
        assert [t["name"] for t in m[kind]] and all(len(t["dims"]) == len(t["strides"])
                                                    for t in m[kind])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_compiles_to_ptx(family, arch):
    package = compile_cuda(family, arch)
    check_manifest(package.manifest, arch)
    text = package.ptx
    assert f".target {arch}" in text
    assert not ptx.external_calls(text), "the PTX calls functions it does not define"
    assert not re.search(r"^\s*call", text, re.M), "no calls at all"
    entries = ptx.entries(text)
    launched = {k["entry"] for k in package.kernels}
    assert launched <= set(entries)
    for k in package.kernels:
        # Bare-pointer convention: a buffer argument is one 64-bit pointer.
        params = entries[k["entry"]]
        assert len(params) == len(k["args"])
        for p, a in zip(params, k["args"]):
            assert p == ("u64" if a["kind"] == "buffer" else p), (k["entry"], params)
    host_plan.check({"buffers": package.manifest["buffers"], "kernels": package.kernels},
                    entries)


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_ptxas_assembles(family, arch):
    package = compile_cuda(family, arch)
    resources = ptxas.assemble(package.ptx, arch)
    for k in package.kernels:
        r = resources[k["entry"]]
        assert r.spill_stores == 0 and r.spill_loads == 0, (k["entry"], r)
        assert 0 < r.registers <= 255


def _fp8_casts():
    g = dnnc.Graph(name="fp8_casts")
    x = g.tensor(name="x", dim=[64, 128], data_type=dt.FLOAT)
    h = g.tensor(name="h", dim=[64, 128], data_type=dt.BFLOAT16)
    q = g.tensor(name="q", dim=[64, 128], data_type=dt.FP8_E4M3)
    g.cast(x, dt.FP8_E4M3).set_output(True)
    g.cast(h, dt.FP8_E5M2).set_output(True)
    g.cast(q, dt.FLOAT).set_output(True)
    return g


@pytest.mark.parametrize("arch", ARCHS)
def test_fp8_conversions_use_the_converters_where_the_gpu_has_them(arch):
    """sm_90a: one cvt per element converted (dnn-expand-fp8), SASS F2FP;
    sm_80 has no fp8 converters: integer code, no cvt to or from fp8."""
    g = _fp8_casts()
    package = compiler.compile_module(dnnc.graph_mlir.to_module(g),
                                      compiler.Options(target="cuda", arch=arch))
    encodes = {fmt: len(re.findall(rf"cvt\.rn\.satfinite\.{fmt}x2\.f32", package.ptx))
               for fmt in ("e4m3", "e5m2")}
    decodes = len(re.findall(r"cvt\.rn\.f16x2\.e4m3x2", package.ptx))
    if arch == "sm_80":
        assert encodes == {"e4m3": 0, "e5m2": 0} and decodes == 0
        return
    # Each thread converts whole 16-byte vectors of its kernel's widest type.
    assert encodes["e4m3"] % 4 == 0 and encodes["e4m3"] > 0, encodes
    assert encodes["e5m2"] % 8 == 0 and encodes["e5m2"] > 0, encodes
    assert decodes % 4 == 0 and decodes > 0, decodes
    if PTXAS is None or sass.missing() is not None:
        return
    _, cubin = ptxas.assemble_cubin(package.ptx, arch)
    code = sass.disassemble(cubin)
    assert code.count("F2FP.SATFINITE.E4M3.F32") == encodes["e4m3"]
    assert code.count("F2FP.SATFINITE.E5M2.F32") == encodes["e5m2"]


def test_strided_inputs_and_outputs_are_declared():
    package = compile_cuda("channels_last", "sm_90a")
    tensors = {t["name"]: t for t in package.manifest["inputs"] + package.manifest["outputs"]}
    assert tensors["x"]["strides"] == [105, 1, 21, 3]
    assert tensors["w"]["strides"] == [27, 1, 9, 3]
    assert tensors["b"]["strides"] == [3, 1, 1, 1]
    assert tensors["z"]["strides"] == [140, 1, 28, 4]
    names = [k["name"] for k in package.kernels]
    # One copy kernel per non-row-major tensor, nothing for the row-major ones.
    assert {n for n in names if "_load_" in n or "_store_" in n} == {
        "main_load_x", "main_load_w", "main_store_y", "main_store_z"}


def test_options():
    g = channels_last()
    with pytest.raises(UnsupportedError, match="target 'cuda' needs an arch"):
        compiler.compile_module(dnnc.graph_mlir.to_module(g), compiler.Options(target="cuda"))
    with pytest.raises(UnsupportedError, match="arch 'sm_70'"):
        compiler.Options(target="cuda", arch="sm_70")
    with pytest.raises(UnsupportedError, match="applies to target 'cuda'"):
        compiler.Options(target="cpu", arch="sm_80")


def test_dump_ir_writes_every_stage_and_the_ptx(tmp_path):
    module = parse(open(os.path.join(ROOT, "examples", "mlp.mlir")).read())
    compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_80",
                                                     dump_ir=str(tmp_path)), basename="mlp")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["mlp.configured.mlir", "mlp.decomposed.mlir", "mlp.dnn.mlir",
                     "mlp.fused.mlir", "mlp.gpu.mlir", "mlp.input.mlir", "mlp.linalg.mlir",
                     "mlp.nvvm.mlir", "mlp.ptx"]
    assert "gpu.launch_func" in (tmp_path / "mlp.gpu.mlir").read_text()
    assert (tmp_path / "mlp.ptx").read_text().lstrip().startswith("//")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(os.path.join(ROOT, "examples"))
                                        if f.endswith(".mlir")))
def test_examples_compile(name):
    text = open(os.path.join(ROOT, "examples", name)).read()
    package = compiler.compile_module(parse(text),
                                      compiler.Options(target="cuda", arch="sm_90a"))
    check_manifest(package.manifest, "sm_90a")
    if PTXAS:
        ptxas.assemble(package.ptx, "sm_90a")


def test_every_launch_records_its_config_and_reason():
    package = compile_cuda("channels_last", "sm_90a")
    by_name = {}
    for k in package.kernels:
        by_name.setdefault(k["name"], []).append(k)
        assert k["config"]["strategy"] == k["strategy"] and "block" in k["config"]
        assert k["reason"] and "\n" not in k["reason"], k["entry"]
    for name, launches in by_name.items():
        # Launches of one kernel function share its config and reason.
        assert all(k["config"] == launches[0]["config"] and k["reason"] == launches[0]["reason"]
                   for k in launches)
        late = "_load_" in name or "_store_" in name
        assert ("created by dnn-io-strides after the heuristics" in launches[0]["reason"]) == late
        if late:
            # Channels-last strides permute a dense layout: the copy is a
            # transpose, configured by the pass itself.
            assert launches[0]["strategy"] == "simt-transpose", launches[0]["reason"]
            assert "between its declared strides" in launches[0]["reason"]
    # dnnc inspect: "<strategy>: <reason>" (wrapped) once per kernel function.
    text = " ".join(package.describe().split())
    heads = [" ".join(f"{k[0]['strategy']}: {k[0]['reason']}".split()) for k in by_name.values()]
    for head in heads:
        assert text.count(head) == heads.count(head), head
    # The runtime reads them and shows them in exe.plan, once per kernel function.
    plan = str(dnnc_runtime.load(artifact.to_bytes(package)).plan)
    assert plan.count("why: ") == len(by_name)
    assert "why: created by dnn-io-strides after the heuristics" in plan


def test_copies_take_vectors_where_the_innermost_dim_stays():
    """The copies family's kernels: 16-byte vectors (simt-pointwise) for
    every copy that keeps the innermost dim innermost and aligned, the
    layout copy of the strided input included, which writes the reshaped
    output itself; simt-transpose for a transpose of the innermost dim;
    simt-generic, with the reason, for a misaligned slice.
    (test_gpu_lowering_matches_the_cpu_back_end runs them.)"""
    package = compile_cuda("copies", "sm_90a")
    by_name = {}
    for k in package.kernels:
        by_name.setdefault(k["name"].split("_", 1)[1], []).append(k)
    generic = {n for n, ks in by_name.items() if ks[0]["strategy"] == "simt-generic"}
    assert generic == {"k8_tensor"}, by_name
    moved = by_name["k7_tensor"][0]
    assert moved["strategy"] == "simt-transpose"
    # 6 x 32 bf16: rows of 6 take pairs.
    assert moved["reason"].endswith("; a 6 x 32 transpose in 64 x 64 tiles: 16-byte reads, "
                                    "4-byte writes"), moved["reason"]
    assert by_name["k8_tensor"][0]["reason"].startswith(
        "simt-pointwise does not apply (a slice that starts at 3, inside a vector of 8; ")
    assert by_name["load_heads"][0]["config"]["vector"] == 8
    assert by_name["k6_tensor"][0]["config"]["vector"] == 16  # bools: a byte each
    # merge_heads: the strided input's layout copy writes the output itself
    # (dnn-layout-views after dnn-io-strides): no reshape kernel.
    assert "k1_tensor" not in by_name
    ptx = package.ptx
    for name in ("k0_tensor", "load_heads", "k4_concat"):
        entry = ptx[ptx.index(f".entry main_{name}"):]
        entry = entry[:entry.index("\n}\n")]
        assert "ld.global.v4.b32" in entry and "st.global.v4.b32" in entry, name


def test_manifest_without_config_and_reason_still_validates():
    package = compile_cuda("channels_last", "sm_90a")
    old = json.loads(json.dumps(package.manifest))
    for k in old["kernels"]:
        del k["config"], k["reason"]
    artifact.validate(old)
    text = artifact.describe(old)
    assert "grid [" in text and "default config" not in text
    kernels = runtime_artifact.parse(old, package.ptx, cubins=package.cubins).kernels
    assert all(k.reason == "" and k.config == {} for k in kernels)
    bad = json.loads(json.dumps(package.manifest))
    bad["kernels"][0]["config"] = "block=128"
    with pytest.raises(artifact.ArtifactError, match="config expected an object, got str"):
        artifact.validate(bad)


# ----------------------------------------------------------------------------
# Zero-size dims


def test_zero_size_dims_launch_only_what_writes():
    package = compile_cuda("zero_size", "sm_90a")
    m = package.manifest
    written = {m["outputs"][m["buffers"][a["buffer"]]["index"]]["name"]
               for k in m["kernels"] for a in k["args"]
               if a["kind"] == "buffer" and m["buffers"][a["buffer"]]["kind"] == "output"}
    empty = {t["name"] for t in m["outputs"] if 0 in t["dims"]}
    assert written == {t["name"] for t in m["outputs"]} - empty
    assert written == {"sum_rows.y", "sum.y", "mean.y", "mm_k0.c", "concat.y", "sum_c.y"}
    # No kernel reads an input without elements, and every launch has work.
    reads = {m["inputs"][m["buffers"][a["buffer"]]["index"]]["name"]
             for k in m["kernels"] for a in k["args"]
             if a["kind"] == "buffer" and m["buffers"][a["buffer"]]["kind"] == "input"}
    assert reads == {"v"}
    exe = dnnc_runtime.load(artifact.to_bytes(package))
    assert len(exe.plan) == len(m["kernels"]) and all(k.has_work for k in exe.plan)


def _all_empty_pointwise(g):
    g.relu(g.tensor(name="x", dim=[0, 16]), name="relu").set_output(True)
    return "relu.y", [0, 16]


def _all_empty_softmax(g):
    g.softmax(g.tensor(name="x", dim=[0, 16]), axis=1, name="softmax").set_output(True)
    return "softmax.y", [0, 16]


def _all_empty_reduction(g):
    g.reduction(g.tensor(name="x", dim=[0, 8]), "sum", [1], name="sum").set_output(True)
    return "sum.y", [0, 1]


def _all_empty_matmul(g):
    a, b = g.tensor(name="a", dim=[0, 3]), g.tensor(name="b", dim=[3, 5])
    g.matmul(a, b, name="mm").set_output(True)
    return "mm.c", [0, 5]


def _all_empty_strided(g):
    x = g.tensor(name="x", dim=[2, 0, 3], stride=[0, 1, 0])
    y = g.exp(x, name="exp")
    y.set_stride([0, 1, 0])
    y.set_output(True)
    return "exp.y", [2, 0, 3]


@pytest.mark.parametrize("build", [_all_empty_pointwise, _all_empty_softmax,
                                   _all_empty_reduction, _all_empty_matmul, _all_empty_strided])
def test_graph_without_any_output_element_is_refused(build):
    g = dnnc.Graph(io_data_type=F32)
    name, dims = build(g)
    message = (f"graph 'main': nothing to launch: every output has a zero-size dim "
               f"(output '{name}' dims {dims}); a package without kernels is not supported")
    with pytest.raises(UnsupportedError, match=re.escape(message)):
        compiler.compile_module(dnnc.graph_mlir.to_module(g),
                                compiler.Options(target="cuda", arch="sm_90a"))


# ----------------------------------------------------------------------------
# TMA descriptors: the host plan's tma arguments, dnn-tma-grid-constant


def _descriptor(tensor, swizzle, l2promo, oob):
    return (f"!nvgpu.tensormap.descriptor<tensor = memref<{tensor}, 3>, swizzle = {swizzle}, "
            f"l2promo = {l2promo}, oob = {oob}, interleave = none>")


DESC_A = _descriptor("128x64xbf16", "swizzle_128b", "l2promo_256b", "zero")
DESC_B = _descriptor("64x64xbf16", "swizzle_128b", "none", "nan")
DESC_W = _descriptor("64x32xf16", "swizzle_64b", "l2promo_64b", "zero")

# A graph calling one kernel function that makes three descriptors on the
# host (of an input, of a transposed view of an input, of a workspace slice at
# an offset) and launches a kernel with their addresses and the output. Its
# gpu.launch is what convert-parallel-loops-to-gpu would leave.
TMA_MODULE = f"""
module attributes {{gpu.container_module}} {{
  func.func @main(%a: memref<256x512xbf16>, %b: memref<2048x4096xbf16>,
                  %c: memref<256x256xf32>) attributes {{dnn.graph}} {{
    call @main_k0(%a, %b, %c)
        : (memref<256x512xbf16>, memref<2048x4096xbf16>, memref<256x256xf32>) -> ()
    return
  }}
  func.func private @main_k0(%a: memref<256x512xbf16>, %b: memref<2048x4096xbf16>,
                             %c: memref<256x256xf32>) attributes {{dnn.kernel}} {{
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %ua = memref.cast %a : memref<256x512xbf16> to memref<*xbf16>
    %da = nvgpu.tma.create.descriptor %ua box[%c128, %c64] : memref<*xbf16> -> {DESC_A}
    %pa = builtin.unrealized_conversion_cast %da : {DESC_A} to !llvm.ptr
    %bt = memref.reinterpret_cast %b to offset: [0], sizes: [4096, 2048], strides: [1, 4096]
        : memref<2048x4096xbf16> to memref<4096x2048xbf16, strided<[1, 4096]>>
    %ub = memref.cast %bt : memref<4096x2048xbf16, strided<[1, 4096]>> to memref<*xbf16>
    %db = nvgpu.tma.create.descriptor %ub box[%c64, %c64] : memref<*xbf16> -> {DESC_B}
    %pb = builtin.unrealized_conversion_cast %db : {DESC_B} to !llvm.ptr
    %w = memref.alloc() : memref<1024x256xf16>
    %ws = memref.subview %w[64, 0] [128, 256] [1, 1]
        : memref<1024x256xf16> to memref<128x256xf16, strided<[256, 1], offset: 16384>>
    %uw = memref.cast %ws : memref<128x256xf16, strided<[256, 1], offset: 16384>> to memref<*xf16>
    %dw = nvgpu.tma.create.descriptor %uw box[%c64, %c32] : memref<*xf16> -> {DESC_W}
    %pw = builtin.unrealized_conversion_cast %dw : {DESC_W} to !llvm.ptr
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {{
      nvvm.prefetch tensormap, %pa : !llvm.ptr
      nvvm.prefetch tensormap, %pb : !llvm.ptr
      nvvm.prefetch tensormap, %pw : !llvm.ptr
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %c[%c0, %c0] : memref<256x256xf32>
      gpu.terminator
    }}
    memref.dealloc %w : memref<1024x256xf16>
    return
  }}
}}
"""


def _outlined(text):
    """``text`` after the gpu stage's outlining (as host_plan.extract sees it)."""
    from mlir import ir  # after dnnc, which loads libLLVM first

    with dnnc.dialect.context():
        module = ir.Module.parse(text)
    run_pipeline(module, "gpu-kernel-outlining,dnn-merge-gpu-modules,canonicalize,cse")
    return module


def test_host_plan_records_tma_descriptors():
    plan = host_plan.extract(_outlined(TMA_MODULE), 2)
    assert plan["buffers"] == [{"kind": "input", "index": 0}, {"kind": "input", "index": 1},
                               {"kind": "output", "index": 0},
                               {"kind": "workspace", "offset": 0, "bytes": 1024 * 256 * 2}]
    [kernel] = plan["kernels"]
    a, b, w, c = kernel["args"]
    assert a == {"kind": "tma", "buffer": 0, "byte_offset": 0, "dtype": "bf16",
                 "shape": [256, 512], "strides": [512, 1], "box": [128, 64],
                 "swizzle": 128, "l2_promotion": 256, "oob_fill": "zero"}
    # A transposed view: the source memref's strides, outermost first.
    assert b == {"kind": "tma", "buffer": 1, "byte_offset": 0, "dtype": "bf16",
                 "shape": [4096, 2048], "strides": [1, 4096], "box": [64, 64],
                 "swizzle": 128, "l2_promotion": 0, "oob_fill": "nan"}
    # A workspace slice: its layout's offset (64 rows of 256 f16) in bytes.
    assert w == {"kind": "tma", "buffer": 3, "byte_offset": 64 * 256 * 2, "dtype": "f16",
                 "shape": [128, 256], "strides": [256, 1], "box": [64, 32],
                 "swizzle": 64, "l2_promotion": 64, "oob_fill": "zero"}
    assert c == {"kind": "buffer", "buffer": 2, "byte_offset": 0}


def test_tma_descriptors_are_passed_by_value():
    module = _outlined(TMA_MODULE)
    plan = host_plan.extract(module, 2)
    stages = pipelines.cuda("sm_90a")
    for stage in stages[[s.name for s in stages].index("nvvm"):]:
        run_pipeline(module, stage.pipeline)
    text = ptx.extract(module)
    assert re.search(r"\.param \.align 64 \.b8 main_k0_kernel_param_0\[128\]", text)
    assert "cvta.param.u64" in text
    entries = ptx.entries(text)
    assert entries == {"main_k0_kernel": ["b8[128]", "b8[128]", "b8[128]", "u64"]}
    host_plan.check(plan, entries)
    if PTXAS:
        ptxas.assemble(text, "sm_90a")
    # The parameter must be the descriptor by value, and the buffer must exist.
    with pytest.raises(LoweringError, match="needs the PTX parameter .param .align 64 .b8 "
                                            r"NAME\[128\] .*got .u64"):
        host_plan.check(plan, {"main_k0_kernel": ["u64", "b8[128]", "b8[128]", "u64"]})
    bad = json.loads(json.dumps(plan))
    bad["kernels"][0]["args"][1]["buffer"] = 9
    with pytest.raises(LoweringError, match="argument names buffer 9, expected 0 to 3"):
        host_plan.check(bad, entries)


def test_ptx_entries_read_parameter_types():
    text = (".visible .entry k(\n\t.param .align 64 .b8 k_param_0[128],\n"
            "\t.param .u64 .ptr .align 1 k_param_1,\n\t.param .u32 k_param_2,\n"
            "\t.param .f32 k_param_3\n)\n{\n}\n.visible .entry e()\n{\n}\n")
    assert ptx.entries(text) == {"k": ["b8[128]", "u64", "u32", "f32"], "e": []}


_NOT_A_DESCRIPTOR = """
module attributes {gpu.container_module} {
  func.func @main(%a: memref<256x512xbf16>) attributes {dnn.graph} {
    %c1 = arith.constant 1 : index
    %p = builtin.unrealized_conversion_cast %a : memref<256x512xbf16> to !llvm.ptr
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      nvvm.prefetch tensormap, %p : !llvm.ptr
      gpu.terminator
    }
    return
  }
}
"""

# The kernel function gets an unranked memref: its descriptor's memref is
# not a memref.cast of a known buffer.
_UNTRACEABLE = f"""
module attributes {{gpu.container_module}} {{
  func.func @main(%a: memref<256x512xbf16>) attributes {{dnn.graph}} {{
    %u = memref.cast %a : memref<256x512xbf16> to memref<*xbf16>
    call @main_k0(%u) : (memref<*xbf16>) -> ()
    return
  }}
  func.func private @main_k0(%u: memref<*xbf16>) attributes {{dnn.kernel}} {{
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %d = nvgpu.tma.create.descriptor %u box[%c128, %c64] : memref<*xbf16> -> {DESC_A}
    %p = builtin.unrealized_conversion_cast %d : {DESC_A} to !llvm.ptr
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {{
      nvvm.prefetch tensormap, %p : !llvm.ptr
      gpu.terminator
    }}
    return
  }}
}}
"""


@pytest.mark.parametrize("text, message", [
    (_UNTRACEABLE, "host plan: 'nvgpu.tma.create.descriptor' at .*: expected its memref to be "
                   "a memref.cast of a ranked memref, got an argument"),
    (_NOT_A_DESCRIPTOR, "host plan: 'builtin.unrealized_conversion_cast' at .*: expected a "
                        "cast of one nvgpu.tma.create.descriptor result to !llvm.ptr"),
])
def test_untraceable_tma_descriptors_are_refused(text, message):
    with pytest.raises(UnsupportedError, match=message):
        host_plan.extract(_outlined(text), 1)


# Im2col descriptors: a kernel function making one of an NHWC activation (a
# 3x3 convolution, padding 1, stride 2) and one of an NDHWC workspace slice.
DESC_X = _descriptor("128x64xbf16", "swizzle_128b", "l2promo_256b", "zero")
DESC_V = _descriptor("64x16xf16", "none", "none", "zero")
IM2COL_X = ("{dnn.im2col = {lower = array<i64: -1, -1>, upper = array<i64: -1, -1>, "
            "element_strides = array<i64: 1, 2, 2, 1>}}")
IM2COL_V = ("{dnn.im2col = {lower = array<i64: 0, -1, -1>, upper = array<i64: -2, -1, -1>, "
            "element_strides = array<i64: 1, 1, 1, 1, 1>}}")


def _im2col_module(x_attr=IM2COL_X, v_attr=IM2COL_V, x_box="%c128, %c64", desc_x=DESC_X):
    return f"""
module attributes {{gpu.container_module}} {{
  func.func @main(%x: memref<2x8x8x64xbf16>, %y: memref<64xf32>) attributes {{dnn.graph}} {{
    call @main_k0(%x, %y) : (memref<2x8x8x64xbf16>, memref<64xf32>) -> ()
    return
  }}
  func.func private @main_k0(%x: memref<2x8x8x64xbf16>, %y: memref<64xf32>)
      attributes {{dnn.kernel}} {{
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %ux = memref.cast %x : memref<2x8x8x64xbf16> to memref<*xbf16>
    %dx = nvgpu.tma.create.descriptor %ux box[{x_box}] {x_attr} : memref<*xbf16> -> {desc_x}
    %px = builtin.unrealized_conversion_cast %dx : {desc_x} to !llvm.ptr
    %w = memref.alloc() : memref<4096xf16>
    %v = memref.reinterpret_cast %w to offset: [512], sizes: [1, 3, 4, 4, 16],
        strides: [768, 256, 64, 16, 1]
        : memref<4096xf16> to memref<1x3x4x4x16xf16, strided<[768, 256, 64, 16, 1], offset: 512>>
    %uv = memref.cast %v : memref<1x3x4x4x16xf16, strided<[768, 256, 64, 16, 1], offset: 512>>
        to memref<*xf16>
    %dv = nvgpu.tma.create.descriptor %uv box[%c64, %c16] {v_attr} : memref<*xf16> -> {DESC_V}
    %pv = builtin.unrealized_conversion_cast %dv : {DESC_V} to !llvm.ptr
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {{
      nvvm.prefetch tensormap, %px : !llvm.ptr
      nvvm.prefetch tensormap, %pv : !llvm.ptr
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %y[%c0] : memref<64xf32>
      gpu.terminator
    }}
    memref.dealloc %w : memref<4096xf16>
    return
  }}
}}
"""


def test_host_plan_records_im2col_descriptors():
    plan = host_plan.extract(_outlined(_im2col_module()), 1)
    [kernel] = plan["kernels"]
    x, v, y = kernel["args"]
    assert x == {"kind": "tma", "buffer": 0, "byte_offset": 0, "dtype": "bf16",
                 "shape": [2, 8, 8, 64], "strides": [4096, 512, 64, 1], "box": [128, 64],
                 "swizzle": 128, "l2_promotion": 256, "oob_fill": "zero",
                 "im2col": {"lower": [-1, -1], "upper": [-1, -1],
                            "element_strides": [1, 2, 2, 1]}}
    # Rank 5 (N, D, H, W, C) over a workspace slice at an offset.
    assert v == {"kind": "tma", "buffer": 2, "byte_offset": 512 * 2, "dtype": "f16",
                 "shape": [1, 3, 4, 4, 16], "strides": [768, 256, 64, 16, 1], "box": [64, 16],
                 "swizzle": 0, "l2_promotion": 0, "oob_fill": "zero",
                 "im2col": {"lower": [0, -1, -1], "upper": [-2, -1, -1],
                            "element_strides": [1, 1, 1, 1, 1]}}
    assert y == {"kind": "buffer", "buffer": 1, "byte_offset": 0}
    # The runtime reads the records as im2col descriptors.
    where = "kernels[0]: args[0]"
    buffers = [runtime_artifact.BufferSpec("input", nbytes=2 * 8 * 8 * 64 * 2),
               runtime_artifact.BufferSpec("output", nbytes=256),
               runtime_artifact.BufferSpec("workspace", nbytes=plan["workspace_bytes"])]
    spec = runtime_artifact._tma_arg(x, where, buffers)
    assert spec.im2col == runtime_artifact.Im2colSpec((-1, -1), (-1, -1), (1, 2, 2, 1))
    assert runtime_artifact._tma_arg(v, where, buffers).im2col.lower == (0, -1, -1)


@pytest.mark.parametrize("changes, message", [
    (dict(x_attr="{dnn.im2col = [-1, -1]}"),
     r"expected a dictionary of lower, upper, element_strides, got \[-1, -1\]"),
    (dict(x_attr="{dnn.im2col = {lower = array<i64: -1, -1>, upper = array<i64: -1, -1>}}"),
     r"expected a dictionary of lower, upper, element_strides, got \{lower = "),
    (dict(x_attr=IM2COL_X.replace("lower = array<i64: -1, -1>", "lower = [-1, -1]")),
     r"lower: expected array<i64: \.\.\.>, got \[-1, -1\]"),
    (dict(x_attr=IM2COL_X.replace("upper = array<i64: -1, -1>", "upper = array<i64: -1>")),
     r"upper: expected 2 entries for a rank 4 tensor, got \[-1\]"),
    (dict(v_attr=IM2COL_V.replace("lower = array<i64: 0, -1, -1>", "lower = array<i64: -1, -1>")),
     r"lower: expected 3 entries for a rank 5 tensor, got \[-1, -1\]"),
    (dict(x_attr=IM2COL_X.replace("1, 2, 2, 1", "2, 2")),
     r"element_strides: expected 4 entries for a rank 4 tensor, got \[2, 2\]"),
    (dict(x_box="%c16, %c16, %c64", desc_x=_descriptor("16x16x64xbf16", "swizzle_128b",
                                                       "l2promo_256b", "zero")),
     r"expected a box of two dims \[pixels, channels\], got \[16, 16, 64\]"),
])
def test_malformed_im2col_descriptors_are_refused(changes, message):
    with pytest.raises(UnsupportedError, match=r"host plan: 'nvgpu.tma.create.descriptor' at .*: "
                                               r"dnn.im2col: " + message):
        host_plan.extract(_outlined(_im2col_module(**changes)), 1)


# TMA_MODULE with dnn.im2col on the descriptor of its matrix %a.
_IM2COL_RANK2 = TMA_MODULE.replace(f"box[%c128, %c64] : memref<*xbf16> -> {DESC_A}",
                                   f"box[%c128, %c64] {IM2COL_X} : memref<*xbf16> -> {DESC_A}")


def test_im2col_descriptor_of_a_matrix_is_refused():
    assert _IM2COL_RANK2 != TMA_MODULE
    with pytest.raises(UnsupportedError, match=r"dnn.im2col: expected a tensor of rank 3 to 5 "
                                               r"\(N, \[D, H,\] W, C\), got rank 2"):
        host_plan.extract(_outlined(_IM2COL_RANK2), 2)


def test_im2col_descriptor_builder_makes_what_the_host_plan_reads():
    """tma.im2col_descriptor's IR is the convention: the kernel function's
    launch takes the pointer it returns (standing in for an llvm.mlir.zero)."""
    from mlir import ir
    from mlir.dialects import memref

    from dnnc.codegen.gpu.tensorcore.sm90 import tma

    text = _im2col_module().replace(
        "    %ux = memref.cast", "    %px = llvm.mlir.zero : !llvm.ptr\n    %ux = memref.cast")
    text = re.sub(r"    %dx = .*\n    %px = builtin.*\n", "", text)
    with dnnc.dialect.context():
        module = ir.Module.parse(text)
        kernel_fn = [f for f in irutil.functions(module.operation)
                     if irutil.symbol(f) == "main_k0"][0]
        x = irutil.body(kernel_fn).arguments[0]
        zero = [op for op in irutil.body(kernel_fn).operations
                if op.operation.name == "llvm.mlir.zero"][0]
        with ir.InsertionPoint(zero), ir.Location.unknown():
            # A 16-channel slice of x's 64 channels: a view in memory order.
            view = ir.MemRefType.get([2, 8, 8, 16], ir.BF16Type.get(),
                                     layout=ir.StridedLayoutAttr.get(16, [4096, 512, 64, 1]))
            source = memref.reinterpret_cast(view, x, [], [], [], [16], [2, 8, 8, 16],
                                             [4096, 512, 64, 1])
            with pytest.raises(LoweringError, match=r"im2col descriptor of memref<2x8x8x16xbf16"
                                                    r".*: upper: expected 2 entries, got \[-1\]"):
                tma.im2col_descriptor(source, 64, 16, [-1, 0], [-1], [1, 2, 1, 1])
            with pytest.raises(LoweringError, match=r"expected a rank 3 to 5 activation .*got "
                                                    r"rank 1"):
                tma.im2col_descriptor(irutil.body(kernel_fn).arguments[1], 64, 16, [], [], [1])
            pointer = tma.im2col_descriptor(source, 64, 16, [-1, 0], [-1, -2], [1, 2, 1, 1],
                                            swizzled=False)
        zero.result.replace_all_uses_with(pointer)
        zero.operation.erase()
        assert module.operation.verify()
    run_pipeline(module, "gpu-kernel-outlining,dnn-merge-gpu-modules,canonicalize,cse")
    x_arg = host_plan.extract(module, 1)["kernels"][0]["args"][0]
    assert x_arg == {"kind": "tma", "buffer": 0, "byte_offset": 32, "dtype": "bf16",
                     "shape": [2, 8, 8, 16], "strides": [4096, 512, 64, 1], "box": [64, 16],
                     "swizzle": 0, "l2_promotion": 256, "oob_fill": "zero",
                     "im2col": {"lower": [-1, 0], "upper": [-1, -2],
                                "element_strides": [1, 2, 1, 1]}}


# ----------------------------------------------------------------------------
# The artifact


def test_package_round_trip(tmp_path):
    package = compile_cuda("reduce_pool", "sm_80")
    path = package.save(str(tmp_path / "g.dnnpkg"))
    back = artifact.read(path)
    assert back.manifest == package.manifest
    assert back.ptx == package.ptx and back.source == package.source
    assert back.cubins == package.cubins   # the cubin, where ptxas made one (test_cubin.py)
    assert 'func.func @main' in back.source and '"dnn.pooling"' in back.source
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == sorted(["graph.mlir", "kernels.ptx", "manifest.json",
                                               *package.cubins])
        assert json.loads(z.read("manifest.json")) == package.manifest
    assert artifact.read(open(path, "rb").read()).manifest == package.manifest


def test_package_is_validated(tmp_path):
    package = compile_cuda("tensor_ops", "sm_80")
    bad = dict(package.manifest, format_version=3)
    with pytest.raises(artifact.ArtifactError, match="format_version: expected one of 1, 2, got 3"):
        artifact.validate(bad)
    kernels = json.loads(json.dumps(package.kernels))
    kernels[0]["args"][0]["buffer"] = 99
    with pytest.raises(artifact.ArtifactError, match="names buffer 99"):
        artifact.validate(dict(package.manifest, kernels=kernels))
    with pytest.raises(artifact.ArtifactError, match="not a readable dnnpkg"):
        artifact.read(b"not a zip")
    path = tmp_path / "partial.dnnpkg"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", json.dumps(package.manifest))
    with pytest.raises(artifact.ArtifactError, match="missing kernels.ptx, graph.mlir"):
        artifact.read(str(path))


def test_cli_compile_and_inspect(tmp_path, capsys):
    from dnnc import cli

    src = os.path.join(ROOT, "examples", "conv_bias_relu.mlir")
    out = str(tmp_path / "cbr.dnnpkg")
    assert cli.main(["compile", src, "-o", out, "--arch", "sm_90a"]) == 0
    text = capsys.readouterr().out
    # x is channels-last, y is not: the tensor-core kernel reads x where it
    # lies and writes y channels-last, which a layout kernel transposes.
    assert "0. conv_bias_relu_k0_conv_fprop_kernel  [tc-sm90]" in text
    assert "1. conv_bias_relu_layout_0_kernel  [simt-transpose]" in text
    assert "load_x" not in text and f"wrote {out}" in text
    assert cli.main(["inspect", out]) == 0
    text = capsys.readouterr().out
    assert "graph conv_bias_relu for sm_90a" in text and "grid [" in text
    assert ("ptxas: " in text) == (PTXAS is not None)
    assert cli.main(["compile", src, "-o", str(tmp_path / "x.dnnpkg")]) == 2
    assert "needs --arch" in capsys.readouterr().err


# ----------------------------------------------------------------------------
# Numerics of the GPU lowering, executed on the CPU


# After the GPU passes up to the thread distribution, lower with the CPU
# tail: each scf.parallel (blocks, threads) runs as a loop, guards included.
EMULATION_TAIL = (
    "dnn-expand-math",
    "dnn-expand-fp8",
    "arith-expand{include-bf16}",
    "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32}",
    "expand-strided-metadata",
    "lower-affine",
    "convert-scf-to-cf",
    "convert-vector-to-llvm",  # simt-pointwise's 16-byte vectors
    "finalize-memref-to-llvm",
    "convert-arith-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "reconcile-unrealized-casts",
)


def emulate(g):
    """A CpuExecutable running ``g`` through the GPU lowering (see above)."""
    module = dnnc.graph_mlir.to_module(g)
    signature = dnnc.targets.cpu.signature_of(module)
    for stage in pipelines.get("cuda", "sm_80"):
        if stage.name == "gpu":
            break
        run_pipeline(module, stage.pipeline)
    gpu = pipelines.GPU.passes
    configured = gpu.index("dnn-default-config") + 1
    _as_simt_generic(module)
    # The kernels the gpu stage makes itself (dnn-io-strides' and
    # dnn-conv-layouts' copies, configured simt-transpose) are configured
    # by then: once more.
    run_pipeline(module, "builtin.module(" + ",".join(gpu[:configured]) + ")")
    _as_simt_generic(module)
    upto = gpu[configured:gpu.index("dnn-distribute-loops") + 1]
    run_pipeline(module, "builtin.module(" + ",".join(upto + EMULATION_TAIL) + ")")
    return dnnc.targets.cpu.CpuExecutable(module, signature)


def _as_simt_generic(module):
    """A row program's shuffles and barriers need a GPU, as do the tensor-core
    kernels (the small convolutions here take tc-sm90; GPU cases test them)
    and simt-gemv's shuffles (test_simt_gemv.py interprets it): their
    kernels run as simt-generic's loops here (column programs:
    test_colwise.py, window programs: test_windows.py, transposes: the GPU
    family transposes_*)."""
    with module.context:
        for fn in irutil.kernel_functions(module):
            if "dnn.config" not in fn.attributes:
                continue
            config = heuristics.Config.from_attr(fn.attributes["dnn.config"])
            if config.strategy in ("simt-reduce", "simt-reduce-columns",
                                   "simt-reduce-rows-columns", "simt-window",
                                   "simt-transpose", "tc-sm90", "tc-sm80", "simt-gemv"):
                fn.attributes["dnn.config"] = heuristics.Config(
                    "simt-generic", config.block).to_attr()


def random_inputs(g, seed=0):
    rng = np.random.default_rng(seed)
    values = {}
    for t in g.inputs:
        if t.get_data_type() is BOOL:
            values[t.name] = rng.random(t.dim) < 0.5
        else:
            values[t.name] = rng.standard_normal(t.dim).astype(np.float32).astype(
                t.get_data_type().numpy)
    return values


def physical(array, strides):
    """The row-major-shaped array whose memory holds ``array`` laid out with
    ``strides`` (a permutation of the dims, as channels-last is)."""
    order = sorted(range(array.ndim), key=lambda i: -strides[i])
    return np.ascontiguousarray(array.transpose(order)).reshape(array.shape)


def logical(array, strides):
    order = sorted(range(array.ndim), key=lambda i: -strides[i])
    shape = [array.shape[i] for i in order]
    return array.reshape(shape).transpose(np.argsort(order))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_gpu_lowering_matches_the_cpu_back_end(family):
    g = FAMILIES[family]()
    data = random_inputs(g)
    expected = g.compile(target="cpu")(**data)
    strides = {t.name: [int(s) for s in t.get_stride()] for t in g.inputs + g.outputs}
    feed = {k: physical(v, strides[k]) if v.ndim else v for k, v in data.items()}
    got = emulate(g)(**feed)
    for t in g.outputs:
        e = np.asarray(expected[t.name])
        v = np.asarray(got[t.name])
        v = logical(v, strides[t.name]) if v.ndim else v
        if t.get_data_type() in (E4M3, E5M2, BOOL):
            np.testing.assert_array_equal(v.view(np.uint8), e.view(np.uint8), err_msg=t.name)
            continue
        e64, v64 = e.astype(np.float64), v.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(v64), np.isnan(e64), err_msg=t.name)
        ok = ~np.isnan(e64)
        tol = 1e-4 * np.maximum(1.0, np.abs(e64[ok]))
        assert np.all(np.abs(v64[ok] - e64[ok]) <= tol), (t.name, np.abs(v64 - e64).max())


def ulps(a, b):
    """|a - b| in f32 units in the last place (sign-magnitude ordered)."""
    def order(x):
        i = x.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(order(a) - order(b))


MATH_ULPS = {"exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1, "erf": 2, "sqrt": 0,
             "rsqrt": 1, "floor": 0, "ceil": 0, "abs": 0, "softplus": 2, "elu": 2}


def test_math_expansions_are_accurate():
    rng = np.random.default_rng(1)
    xs = np.concatenate([
        rng.standard_normal(4000) * 3, rng.standard_normal(4000) * 300,
        np.exp(rng.uniform(-100, 88, 4000)), -np.exp(rng.uniform(-100, 19, 4000)),
        np.linspace(-10, 10, 2001),
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, 88.72, 88.73, -87.3,
         -103.9, -104.5, 8191.0, 1e8, 1.0, -1.0, 0.84375, 0.875, -0.875, 1.25, 4.0, 6.0, 2.857],
        # sin and cos: either side of the switch to the exact reduction
        # (2^20), the fuzzer's large values (1e15 to 2e15), the largest f32
        # and an f32 very near a multiple of pi/2 (16367173 * 2^72: 2^-29.9
        # of a quarter turn away).
        np.ldexp(1.0, 20) * np.array([1 - 2.0 ** -24, 1.0]), [1e15, -1.5e15, 2e15, 3.4e38],
        [np.ldexp(16367173.0, 72), -np.ldexp(16367173.0, 72)],
        np.exp(rng.uniform(14, 88, 4000)) * rng.choice([-1, 1], 4000)]).astype(np.float32)
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[xs.size])
    results = {op: getattr(g, op)(x, name=op) for op in MATH_ULPS}
    outputs(*results.values())
    got = emulate(g)(x=xs)
    ref = g.execute_reference({"x": xs})
    for op, limit in MATH_ULPS.items():
        a, r = got[results[op].name], ref[results[op].name]
        np.testing.assert_array_equal(np.isnan(a), np.isnan(r), err_msg=op)
        np.testing.assert_array_equal(np.isinf(a), np.isinf(r), err_msg=op)
        ok = np.isfinite(r)
        worst = ulps(a[ok], r[ok]).max()
        assert worst <= limit, f"{op}: {worst} ulp, expected at most {limit}"


def test_math_of_16_bit_results_keeps_large_arguments_and_the_references_nans():
    """bf16 results take math/fast.py's forms. sin and cos of arguments
    past 2^20 (the fuzzer's 1e15 to 2e15; bf16 reaches 3.4e38) reduce
    exactly, and gelu(-inf) is NaN as in the reference (-inf * 0), its large
    negative values -0: erf is exactly -1 there."""
    rng = np.random.default_rng(2)
    xs = np.concatenate([
        rng.standard_normal(2000) * 3,
        np.exp(rng.uniform(14, 88, 2000)) * rng.choice([-1, 1], 2000),
        [1e15, -1.5e15, 2e15, 3.3e38, -3.3e38, np.inf, -np.inf, np.nan, -10.0, -1e15]])
    xs = xs.astype(ml_dtypes.bfloat16)
    g = dnnc.Graph(io_data_type=BF16)
    x = g.tensor(name="x", dim=[xs.size])
    ops = ("sin", "cos", "gelu")
    results = {op: getattr(g, op)(x, name=op) for op in ops}
    outputs(*results.values())
    got = emulate(g)(x=xs)
    ref = g.execute_reference({"x": xs})
    for op in ops:
        a = np.asarray(got[results[op].name]).astype(np.float64)
        r = np.asarray(ref[results[op].name]).astype(np.float64)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(r), err_msg=op)
        np.testing.assert_array_equal(a[np.isinf(r)], r[np.isinf(r)], err_msg=op)
        ok = np.isfinite(r)
        # One bf16 unit of the result, or 2^-9 absolute near sin's and cos's roots.
        bad = np.abs(a[ok] - r[ok]) > np.maximum(np.abs(r[ok]) * 2.0 ** -7, 2.0 ** -9)
        assert not bad.any(), (op, xs[ok][bad][:5], a[ok][bad][:5], r[ok][bad][:5])


# ----------------------------------------------------------------------------
# The GPU test cases that tools/build-gpu-tests packages


def _load_gpu_cases():
    """test/gpu/gpu_cases, imported from its file rather than by putting
    test/gpu on sys.path, where its test_tune.py has the name of this
    folder's."""
    path = os.path.join(ROOT, "test", "gpu", "gpu_cases", "__init__.py")
    spec = importlib.util.spec_from_file_location("gpu_cases", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # for the package's relative imports
    spec.loader.exec_module(module)
    return module


def test_gpu_test_packages_cover_every_op():
    gpu_cases = _load_gpu_cases()
    used = set()
    for case in gpu_cases.CASES:
        used |= op_names(case.build())
    missing = sorted({d.name for d in dnnc.dialect.all_ops()} - used)
    assert not missing, f"ops tools/build-gpu-tests never packages: {missing}"


def test_resnet50_example_runs_on_tensor_cores():
    """examples/resnet50.py's graph (ResNet-50 inference, bf16, NHWC,
    batchnorm folded) compiles for sm_90a into one tc-sm90 implicit GEMM per
    convolution (the stem's folded: its two launches and the GEMM's), the
    fully connected layer's matmul and the two pools: nothing on
    simt-generic, no layout kernel."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "resnet50_example", os.path.join(ROOT, "examples", "resnet50.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    g = example.build_graph(2)
    package = compiler.compile_module(g.to_module(), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off"), basename=g.name)
    check_manifest(package.manifest, "sm_90a")
    kernels = package.manifest["kernels"]
    strategies = [k["config"]["strategy"] for k in kernels]
    assert set(strategies) == {"tc-sm90", "simt-window"}, sorted(set(strategies))
    assert strategies.count("simt-window") == 2                 # max and average pool
    convs = {k["name"] for k in kernels if "conv_fprop" in k["name"]}
    assert len(convs) == len(example.convolutions()) == 53
    assert not any("_layout_" in k["entry"] for k in kernels)
    stem = next(k for k in kernels if k["name"] == min(convs))
    assert "folded into its channels" in stem["reason"], stem["reason"]


def test_tma_strides_of_unit_dims_are_16_byte_aligned_in_the_manifest():
    """A GEMM of M = 1 over an odd K: A's row stride (61 bf16, 122 bytes)
    steps a dim of size 1, which TMA never steps, but cuTensorMapEncode wants
    every outer stride a multiple of 16 bytes. The manifest says a valid one
    and the runtime loads the package (it refused it before)."""
    g = dnnc.Graph(name="m1", io_data_type=dt.BFLOAT16, compute_data_type=dt.FLOAT)
    a = g.tensor(name="a", dim=[1, 61])
    b = g.tensor(name="b", dim=[61, 256])
    g.matmul(a, b).set_output(True).set_name("y")
    # tc-sm90 asked for: simt-gemv takes so small an M = 1 product first.
    data = artifact.to_bytes(compiler.compile_cuda(g, "sm_90a", cache=False,
                                                   config="*=strategy:tc-sm90"))
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
    tma = [arg for k in manifest["kernels"] for arg in k["args"] if arg["kind"] == "tma"]
    assert tma, "expected the GEMM on tc-sm90's TMA loads"
    for arg in tma:
        size = {"bf16": 2}.get(arg["dtype"], 4)
        assert all(s * size % 16 == 0 for s in arg["strides"][:-1]), arg
    assert host_plan._unit_dims_aligned([1, 61], [61, 1], 2) == [64, 1]
    assert host_plan._unit_dims_aligned([3, 61], [61, 1], 2) == [61, 1]   # stepped: kept
    runtime_artifact.read(data)
