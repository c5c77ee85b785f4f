"""Attention written the PyTorch way reaches the attention kernels without
copies (dnn-slice-views, dnn-transpose-views): q, k and v split from one
``[B x S, 3 x H x D]`` projection, viewed ``[B, S, H, D]`` and transposed,
o transposed back and viewed ``[B x S, H x D]`` (the graphs are the GPU
cases ``sdpa_qkv_*`` of test/gpu/gpu_cases/attention.py).

* CPU back end: the graphs, forward and backward, against the NumPy
  reference (the semantics the views must keep).
* The sm_90a GPU lowering run on the CPU: the views made as for the GPU,
  then every kernel as simt-generic loops (test_cuda_compile's emulation),
  so that the host function's views, offsets and strided arguments are
  computed and checked against the reference (a wrong output view's
  strides fail it).
* sm_90a plans: a forward is one tc-sm90 kernel; q, k and v are TMA
  descriptors of the projection buffer at byte offsets 0, 2 C and 4 C with
  its row stride; o is written by TMA into the output through the
  transposed strides. A backward's dq, dk and dv are written into theirs
  the same way; o's transpose stays (the backward reads o too). Slices
  that start 8 bytes in stay copies, and their reasons say why.
* sm_80: the slices and o's transpose are views for tc-sm80's attention
  kernels too (cp.async loads and vector stores step any 16-byte aligned
  rows); the forward kernel run by the kernel interpreter on those views
  (each argument laid out at its memref's offset and strides) against the
  reference; so are the backward's kernels, dq, dk and dv written through
  the transposed strides.
"""

import numpy as np
import pytest

from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil
from kernel_builds import Builds
from kernel_interpreter import run_kernel
from test_cuda_compile import _load_gpu_cases


@pytest.fixture(scope="module")
def gpu_cases():
    return _load_gpu_cases()


@pytest.fixture(scope="module")
def built(gpu_cases):
    from gpu_cases import attention

    return Builds(lambda name: attention.QKV[name](), "sm_90a")


def sizes(build):
    """(B x S, C = H x D, the slices' start) of a qkv_attention graph, read
    from its tensors."""
    g = build()
    inputs = {t.name: t for t in g.inputs}
    o = next(t for t in g.outputs if t.name == "o")
    rows, c = (int(x) for x in o.dim)
    width = int(inputs["qkv"].dim[1])
    return rows, c, (width - 3 * c) // 2


def tensor_of(manifest, arg):
    buffer = manifest["buffers"][arg["buffer"]]
    if buffer["kind"] == "workspace":
        return "workspace"
    return manifest[buffer["kind"] + "s"][buffer["index"]]["name"]


def small(gpu_cases, backward):
    from gpu_cases import attention
    from gpu_cases.case import BF16

    return attention.qkv_attention(BF16, 2, 33, 2, 64, causal=True, backward=backward)


@pytest.mark.parametrize("backward", [False, True])
def test_cpu_back_end_against_numpy(gpu_cases, backward):
    from dnnc.targets import cpu
    from gpu_cases.case import RTOL, Case
    from gpu_cases.inputs import make_inputs

    build = small(gpu_cases, backward)
    g = build()
    data = make_inputs(Case("views", build), g)
    expected = g.execute_reference(data)
    got = cpu.compile_module(graph_mlir.to_module(g))(**data)
    names = ["o"] + (["dq", "dk", "dv"] if backward else [])
    assert sorted(expected) == sorted(names)
    for name in names:
        ref = np.asarray(expected[name], np.float64)
        out = np.asarray(got[name], np.float64)
        atol = RTOL["bf16"] * max(1.0, float(np.abs(ref).max()))
        assert np.allclose(out, ref, rtol=RTOL["bf16"], atol=atol), \
            (name, float(np.abs(out - ref).max()))


@pytest.mark.parametrize("name", ["sdpa_qkv_d64_causal_bf16", "sdpa_qkv_d128_bf16"])
def test_forward_is_one_kernel_on_views(built, name):
    from gpu_cases import attention

    package = built.package(name)
    assert [k["strategy"] for k in package.kernels] == ["tc-sm90"], \
        [(k["entry"], k["strategy"], k["reason"]) for k in package.kernels]
    rows, c, start = sizes(attention.QKV[name])
    assert start == 0
    manifest = package.manifest
    args = [a for a in package.kernels[0]["args"] if a["kind"] in ("tma", "buffer")]
    q, k, v, o = args[:4]
    s = rows // 2  # b = 2 in both
    for arg, i in zip((q, k, v), range(3)):
        assert (arg["kind"], tensor_of(manifest, arg)) == ("tma", "qkv"), arg
        assert arg["byte_offset"] == 2 * c * i, arg
        # [B, S, H, D] in memory order: the projection's rows, 3 C apart.
        assert arg["strides"][:2] == [s * 3 * c, 3 * c], arg
        assert arg["strides"][-1] == 1
    assert (o["kind"], tensor_of(manifest, o), o["byte_offset"]) == ("tma", "o", 0), o
    assert o["strides"][:2] == [s * c, c], o


@pytest.mark.parametrize("name", ["sdpa_qkv_backward_d64_causal_bf16",
                                  "sdpa_qkv_backward_d128_bf16"])
def test_backward_reads_and_writes_views(built, name):
    package = built.package(name)
    manifest = package.manifest
    copies = [k for k in package.kernels if k["strategy"] != "tc-sm90"]
    # o's transpose stays: the backward reads o [B, H, S, D] too.
    assert len(copies) == 1 and "copy by transpose" in copies[0]["reason"], \
        [(k["entry"], k["strategy"]) for k in package.kernels]
    assert tensor_of(manifest, copies[0]["args"][-1]) == "o"
    backward = [k for k in package.kernels if "sdpa_backward" in k["name"]]
    assert backward
    touched = {tensor_of(manifest, a) for k in backward for a in k["args"]
               if a["kind"] in ("tma", "buffer")}
    # q, k and v read in the projection, dq, dk and dv written in place.
    assert {"qkv", "do", "dq", "dk", "dv"} <= touched, touched


def test_unaligned_slices_keep_their_copies(built):
    package = built.package("sdpa_qkv_unaligned_bf16")
    copies = [k for k in package.kernels if "sdpa" not in k["name"]]
    assert len(copies) == 3, [(k["entry"], k["reason"]) for k in package.kernels]
    for k, (x, at) in zip(copies, (("q", 8), ("k", 8 + 256), ("v", 8 + 512))):
        assert k["reason"].endswith(f"kept as a copy, not a view: main_k6_sdpa reads {x} "
                                    f"through TMA: {x} starts {at} bytes into its buffer: "
                                    "expected 16-byte alignment"), k["reason"]
    (sdpa,) = [k for k in package.kernels if "sdpa" in k["name"]]
    assert sdpa["strategy"] == "tc-sm90"


def test_sm80_forward_reads_the_slices(gpu_cases):
    """tc-sm80's forward on the projection's views and o written through the
    transposed strides: the interpreter lays each argument out at its
    memref's offset and strides, so q, k and v are read, and o written, at
    the views' addresses."""
    from gpu_cases.case import RTOL, Case
    from gpu_cases.inputs import make_inputs

    b, s, h, d = 2, 33, 2, 64
    build = small(gpu_cases, backward=False)
    g = build()
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch="sm_80", tuning_db="off", stop_after="configured"))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-tensor-cores") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    data = make_inputs(Case("views", build), g)
    expected = g.execute_reference(data)
    with module.context:
        graph = irutil.graph_function(module)
        calls = [op.operation for op in irutil.body(graph).operations
                 if op.operation.name == "func.call"]
        names = [str(c.attributes["callee"]) for c in calls]
        assert len(calls) == 1 and "sdpa" in names[0], names   # no copy
        (fn,) = [f for f in irutil.kernel_functions(module) if irutil.symbol(f).endswith("_sdpa")]
        assert 'strategy = "tc-sm80"' in str(fn.attributes["dnn.config"])
        arguments = list(irutil.body(fn).arguments)
        geometry = [irutil.memref_geometry(a.type) for a in arguments[:4]]
        assert [g[2] for g in geometry] == [0, h * d, 2 * h * d, 0]
        assert [g[1] for g in geometry] == [[s * 3 * h * d, d, 3 * h * d, 1]] * 3 + \
            [[s * h * d, d, h * d, 1]]
        qkv = np.asarray(data["qkv"], np.float32).reshape(b, s, 3, h, d)
        arrays = [np.ascontiguousarray(qkv[:, :, i].transpose(0, 2, 1, 3)) for i in range(3)]
        arrays.append(np.full([b, h, s, d], np.nan, np.float32))
        got = run_kernel(fn, arrays)[3]
    reference = np.asarray(expected["o"], np.float64).reshape(b, s, h, d).transpose(0, 2, 1, 3)
    atol = RTOL["bf16"] * max(1.0, float(np.abs(reference).max()))
    assert np.allclose(got, reference, rtol=RTOL["bf16"], atol=atol), \
        float(np.nanmax(np.abs(got - reference)))


def emulate_with_views(g):
    """A CpuExecutable of ``g`` through the sm_90a GPU lowering, with the
    views made as on the GPU (the attention kernels still tc-sm90 when
    dnn-slice-views, dnn-transpose-views and dnn-concat-views run), then every kernel on
    simt-generic (the loops test_cuda_compile's ``emulate`` runs on the
    CPU): the host function's views, offsets and strided arguments
    computed by the CPU. Returns (the executable, the kernels the graph
    function calls after the views)."""
    from dnnc import heuristics
    from dnnc.targets import cpu
    from test_cuda_compile import EMULATION_TAIL

    module = graph_mlir.to_module(g)
    signature = cpu.signature_of(module)
    for stage in pipelines.get("cuda", "sm_90a"):
        if stage.name == "gpu":
            break
        passes.run_pipeline(module, stage.pipeline)
    gpu = pipelines.GPU.passes
    cut = gpu.index("dnn-concat-views") + 1
    passes.run_pipeline(module, "builtin.module(" + ",".join(gpu[:cut]) + ")")
    with module.context:
        graph = irutil.graph_function(module)
        called = [str(op.operation.attributes["callee"]) for op in irutil.body(graph).operations
                  if op.operation.name == "func.call"]
        for fn in irutil.kernel_functions(module):
            config = heuristics.Config.from_attr(fn.attributes["dnn.config"])
            fn.attributes["dnn.config"] = heuristics.Config("simt-generic", config.block).to_attr()
    rest = gpu[cut:gpu.index("dnn-distribute-loops") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(list(rest) + list(EMULATION_TAIL))
                        + ")")
    return cpu.CpuExecutable(module, signature), called


@pytest.mark.parametrize("backward", [False, True])
def test_views_computed_on_the_cpu(gpu_cases, backward):
    """The GPU lowering's host function with the views, run on the CPU (the
    attention kernels as simt-generic loops reading and writing through the
    views) against the NumPy reference: the forward calls the sdpa kernel
    only; the backward the forward, o's transpose (o is read by the
    backward) and the backward."""
    from gpu_cases.case import RTOL, Case
    from gpu_cases.inputs import make_inputs

    build = small(gpu_cases, backward)
    g = build()
    data = make_inputs(Case("views", build), g)
    expected = g.execute_reference(data)
    exe, called = emulate_with_views(g)
    kinds = [c.rsplit("_", 1)[-1] if "sdpa" not in c else "sdpa" for c in called]
    assert kinds == (["sdpa", "tensor", "sdpa"] if backward else ["sdpa"]), called
    got = exe(**data)
    for name in ["o"] + (["dq", "dk", "dv"] if backward else []):
        ref = np.asarray(expected[name], np.float64)
        out = np.asarray(got[name], np.float64)
        atol = RTOL["bf16"] * max(1.0, float(np.abs(ref).max()))
        assert np.allclose(out, ref, rtol=RTOL["bf16"], atol=atol), \
            (name, float(np.abs(out - ref).max()))


def test_sm80_backward_writes_through_the_views(gpu_cases):
    """tc-sm80's backward kernels on the projection's views (q, k, v), do
    transposed from its [B x S, H x D] input, and dq, dk, dv written through
    the transposed strides of theirs, interpreted on the CPU against the
    reference's gradients."""
    from gpu_cases.case import RTOL, Case
    from gpu_cases.inputs import make_inputs
    from mlir import ir

    from dnnc.codegen.gpu.tensorcore import attention as attention_match

    b, s, h, d = 2, 33, 2, 64
    build = small(gpu_cases, backward=True)
    g = build()
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch="sm_80", tuning_db="off", stop_after="configured"))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-tensor-cores") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    data = make_inputs(Case("views", build), g)
    expected = g.execute_reference(data)

    def heads(x):   # [B x S, H x D] -> [B, H, S, D]
        return np.asarray(x, np.float64).reshape(b, s, h, d).transpose(0, 2, 1, 3)

    qkv = np.asarray(data["qkv"], np.float64).reshape(b, s, 3, h, d).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    scores[..., np.triu(np.ones((s, s), bool), 1)] = -np.inf
    top = scores.max(-1, keepdims=True)
    stats = top + np.log(np.exp(scores - top).sum(-1, keepdims=True))
    given = {"q": q, "k": k, "v": v, "o": heads(expected["o"]), "do": heads(data["do"]),
             "stats": stats}
    with module.context:
        (fn,) = [f for f in irutil.kernel_functions(module)
                 if irutil.symbol(f).endswith("_sdpa_backward")]
        assert 'strategy = "tc-sm80"' in str(fn.attributes["dnn.config"])
        info = ir.DictAttr(fn.attributes[attention_match.ATTR])
        operand_names, result_names = attention_match.roles("sdpa_backward")
        arguments = list(irutil.body(fn).arguments)
        inputs = len(arguments) - ir.IntegerAttr(info["returned"]).value
        arrays, where = [None] * len(arguments), {}
        for name, i in zip(operand_names, ir.DenseI64ArrayAttr(info["operands"])):
            if i >= 0:
                arrays[i] = np.asarray(given[name], np.float32)
        for name, i in zip(result_names, ir.DenseI64ArrayAttr(info["results"])):
            if i >= 0:
                arrays[inputs + i] = np.full([b, h, s, d], np.nan, np.float32)
                where[name] = inputs + i
        # q, k, v at the slices' offsets; dq, dk, dv [B, S, H, D] in memory.
        offsets = [irutil.memref_geometry(arguments[i].type)[2] for i in range(3)]
        assert offsets == [0, h * d, 2 * h * d]
        for name in ("dq", "dk", "dv"):
            assert irutil.memref_geometry(arguments[where[name]].type)[1] == \
                [s * h * d, d, h * d, 1], name
        got = run_kernel(fn, arrays)
    for name in ("dq", "dk", "dv"):
        ref = heads(expected[name])
        out = np.asarray(got[where[name]], np.float64)
        atol = RTOL["bf16"] * max(1.0, float(np.abs(ref).max()))
        assert np.allclose(out, ref, rtol=RTOL["bf16"], atol=atol), \
            (name, float(np.nanmax(np.abs(out - ref))))


# -- dq, dk and dv joined by a concat (dnn-concat-views) --------------------------------------


def joined(gpu_cases):
    from gpu_cases import attention
    from gpu_cases.case import BF16

    return attention.qkv_attention(BF16, 2, 33, 2, 64, causal=True, backward=True, joined=True)


def test_joined_gradients_computed_on_the_cpu(gpu_cases):
    """The backward's dq, dk and dv concatenated into dqkv ([B x S, 3 C], the
    qkv projection's gradient): on the CPU back end, and through the GPU
    lowering's views (the attention backward, as simt-generic loops, writes
    each gradient through its slice of dqkv: no concat kernel), against the
    NumPy reference."""
    from dnnc.targets import cpu
    from gpu_cases.case import RTOL, Case
    from gpu_cases.inputs import make_inputs

    build = joined(gpu_cases)
    g = build()
    data = make_inputs(Case("joined", build), g)
    expected = g.execute_reference(data)
    exe, called = emulate_with_views(g)
    assert not any("concat" in c for c in called), called
    for got in (cpu.compile_module(graph_mlir.to_module(build()))(**data), exe(**data)):
        for name in ("o", "dqkv"):
            ref = np.asarray(expected[name], np.float64)
            out = np.asarray(got[name], np.float64)
            atol = RTOL["bf16"] * max(1.0, float(np.abs(ref).max()))
            assert np.allclose(out, ref, rtol=RTOL["bf16"], atol=atol), \
                (name, float(np.abs(out - ref).max()))


@pytest.mark.parametrize("name", ["sdpa_qkv_backward_joined_d64_causal_bf16",
                                  "sdpa_qkv_backward_joined_d128_bf16"])
def test_joined_gradients_written_in_place(built, name):
    """sm_90a: no concat kernel; only the attention backward's kernels touch
    dqkv: its three gradients are written there (each at its offset in the
    kernel's memref type, which test_joined_gradients_computed_on_the_cpu
    checks through the same views)."""
    package = built.package(name)
    manifest = package.manifest
    assert not any("concat" in k["name"] for k in package.kernels), \
        [(k["entry"], k["reason"]) for k in package.kernels]
    touching = [(k["name"], a) for k in package.kernels for a in k["args"]
                if a["kind"] in ("tma", "buffer") and tensor_of(manifest, a) == "dqkv"]
    assert len(touching) >= 3, touching
    assert all("sdpa_backward" in kernel for kernel, _ in touching), touching


def test_backward_reads_strided_inputs_in_place(built):
    """q, k and v graph inputs at the strides of slices of one [B x S, 3 C]
    projection (what the torch backend's backward graph receives): no load
    copies; the backward's TMA descriptors read them at rows of 3 C."""
    package = built.package("sdpa_backward_strided_qkv_d64_causal_bf16")
    manifest = package.manifest
    assert all("sdpa_backward" in k["name"] for k in package.kernels), \
        [(k["entry"], k["reason"]) for k in package.kernels]
    reads = {tensor_of(manifest, a): a for k in package.kernels for a in k["args"]
             if a["kind"] == "tma"}
    c = 4 * 64
    for name in "qkv":
        assert name in reads and 3 * c in reads[name]["strides"], reads.get(name)
