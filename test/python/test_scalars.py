"""Runtime scalars (``Graph.scalar``) without a GPU: one compiled graph, many
values.

* The API: a rank-0 f32 input marked ``dnn.by_value`` in the IR, read back
  by ``from_mlir``, keyed apart from a device tensor in ``serialize``; the
  ops that compile a value in refuse one by name.
* The CPU back end and the NumPy reference run one executable with several
  values, each checked against NumPy (a kernel that ignored the value, or
  kept the first, fails).
* The GPU lowering: each strategy that reads a scalar (pointwise, generic,
  row, row-and-column and column programs, window, depthwise, tc-sm90,
  tc-sm80, simt-gemm) takes it as a ``.param .f32`` (ptxas assembles it), the manifest binds it as a
  ``scalar_input`` of a ``by_value`` input, and the runtime loads it.
  Numerics: the pointwise and generic kernels through dnn-scalar-args,
  executed on the CPU; simt-gemm's and tc-sm80's epilogues in the kernel
  interpreter; each with two values.
* The GPU cases (gpu_cases/scalars.py): the CPU back end reproduces every
  run's reference outputs with one executable.
"""

import importlib.util
import os
import re
import sys

import numpy as np
import pytest

import dnnc
import dnnc.targets.cpu
from dnnc import artifact, compiler, graph_mlir, heuristics, passes, pipelines
from dnnc.codegen.gpu import irutil, ptx, ptxas
from dnnc.dialect.types import data_type as dt
from dnnc.errors import GraphError, UnsupportedError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import dnnc_runtime
except ImportError:  # a plain checkout: the runtime lives in runtime/
    sys.path.insert(0, os.path.join(ROOT, "runtime"))
    import dnnc_runtime
from kernel_interpreter import run_kernel  # noqa: E402

F32, BF16 = dt.FLOAT, dt.BFLOAT16
PTXAS = ptxas.find()


# ----------------------------------------------------------------------------
# The API and the IR


def scaled_graph():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[4, 24])
    s, t = g.scalar(name="s"), g.scalar(name="t")
    g.relu(g.add(g.mul(x, s), t)).set_output(True).set_name("y")
    return g


def test_scalar_is_a_by_value_rank0_input():
    g = scaled_graph()
    text = g.to_mlir()
    assert re.search(r'%arg1: tensor<f32> \{dnn.by_value, dnn.name = "s", '
                     r'dnn.strides = array<i64>\}', text)
    back = dnnc.Graph.from_mlir(text)
    assert back.to_mlir() == text and [t.is_by_value for t in back.inputs] == [False, True, True]
    # A device tensor of the same shape is another graph (and cache key).
    h = dnnc.Graph(io_data_type=F32)
    x = h.tensor(name="x", dim=[4, 24])
    s, t = h.tensor(name="s", dim=[]), h.tensor(name="t", dim=[])
    h.relu(h.add(h.mul(x, s), t)).set_output(True).set_name("y")
    assert h.serialize() != g.serialize() and '"by_value":true' in g.serialize()


def test_scalar_errors_name_the_op_and_the_scalar():
    g = dnnc.Graph(io_data_type=F32)
    with pytest.raises(UnsupportedError, match=r"scalar 'h': expected data_type FLOAT .* got "
                                               r"f16"):
        g.scalar(name="h", data_type=dt.HALF)
    eps = g.scalar(name="eps")
    with pytest.raises(GraphError, match="tensor name 'eps' is used twice"):
        g.scalar(name="eps")
    x = g.tensor(name="x", dim=[2, 4, 3, 3])
    p = g.tensor(name="p", dim=[1, 4, 1, 1])
    with pytest.raises(UnsupportedError, match=r"groupnorm: epsilon: expected a number, got "
                                               r"tensor 'eps'"):
        g.groupnorm(x, 2, p, p, epsilon=eps)
    with pytest.raises(UnsupportedError, match=r"batchnorm: momentum: expected a number, got "
                                               r"tensor 'eps'"):
        g.batchnorm(x, p, p, p, p, momentum=eps)
    q = g.tensor(name="q", dim=[1, 2, 8, 16], data_type=BF16)
    with pytest.raises(UnsupportedError, match=r"sdpa: attn_scale: expected a number, got "
                                               r"tensor 'eps'"):
        g.sdpa(q, q, q, attn_scale=eps)
    with pytest.raises(GraphError, match=r"layernorm: epsilon: expected a number, got str"):
        g.layernorm(x, epsilon="small")
    w = g.tensor(name="w", dim=[3])
    with pytest.raises(Exception, match=r"'dnn.rmsnorm' op operand 'epsilon': expected rank 0, "
                                        r"got rank 1"):
        g.rmsnorm(x, epsilon=w)


# ----------------------------------------------------------------------------
# The CPU back end and the reference: one executable, several values


def norms_graph():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[6, 64])
    scale = g.tensor(name="scale", dim=[1, 64])
    eps = g.scalar(name="eps")
    y, mean, inv = g.layernorm(x, scale, None, epsilon=eps, norm_forward_phase="training")
    r, inv_rms = g.rmsnorm(x, None, None, epsilon=eps, norm_forward_phase="training")
    for t, name in ((y, "y"), (inv, "inv"), (r, "r"), (inv_rms, "inv_rms")):
        t.set_output(True).set_name(name)
    return g


def _norms_numpy(x, scale, eps):
    mean = x.mean(axis=1, keepdims=True)
    inv = 1 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    inv_rms = 1 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    return {"y": (x - mean) * inv * scale, "inv": inv, "r": x * inv_rms, "inv_rms": inv_rms}


def test_cpu_back_end_takes_each_call_s_values():
    g = scaled_graph()
    exe = g.compile(target="cpu")
    x = np.random.default_rng(0).standard_normal((4, 24)).astype(np.float32)
    seen = []
    for s, t in ((2.0, 0.5), (-1.5, 0.25), (np.float32(0.125), np.float64(-3.0)), (3, 0)):
        got = exe(x, s, t)["y"]
        want = np.maximum(x * np.float32(s) + np.float32(t), 0)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        ref = g.execute_reference({"x": x, "s": s, "t": t})["y"]
        np.testing.assert_allclose(ref, want, rtol=1e-6, atol=1e-6)
        seen.append(got)
    assert not np.array_equal(seen[0], seen[1])


def test_cpu_back_end_norm_epsilons():
    g = norms_graph()
    exe = g.compile(target="cpu")
    rng = np.random.default_rng(1)
    x = (0.02 * rng.standard_normal((6, 64))).astype(np.float32)   # epsilon matters
    scale = rng.standard_normal((1, 64)).astype(np.float32)
    for eps in (1e-5, 0.5, 1e-3):
        got = exe(x=x, scale=scale, eps=eps)
        want = _norms_numpy(x.astype(np.float64), scale, np.float32(eps))
        ref = g.execute_reference({"x": x, "scale": scale, "eps": eps})
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=1e-5,
                                       err_msg=f"{name} eps={eps}")
            np.testing.assert_allclose(ref[name], want[name], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("value, message", [
    ("1", r"input 's': expected a number .* got str"),
    (np.ones(2, np.float32), r"input 's': expected a number .* shape \[2\]"),
    (True, r"input 's': expected a number .* got bool"),
])
def test_cpu_back_end_refuses_what_the_runtime_refuses(value, message):
    exe = scaled_graph().compile(target="cpu")
    with pytest.raises(dnnc_runtime.ArgumentError, match=message):
        exe(np.ones((4, 24), np.float32), value, 1.0)


# ----------------------------------------------------------------------------
# The GPU lowering: a .param .f32 per scalar for each strategy that reads one


def _matmul(g, dtype, m, n, k, s):
    a = g.tensor(name="a", dim=[m, k], data_type=dtype)
    b = g.tensor(name="b", dim=[k, n], data_type=dtype)
    return g.mul(g.matmul(a, b), s)


def _build(kind):
    g = dnnc.Graph(io_data_type=F32)
    s = g.scalar(name="s")
    if kind == "pointwise":
        x = g.tensor(name="x", dim=[64, 256])
        y = g.relu(g.mul(x, s))
    elif kind == "row_program":
        x = g.tensor(name="x", dim=[32, 512])
        y = g.layernorm(x, epsilon=s)[0]
    elif kind == "column_program":
        x = g.tensor(name="x", dim=[512, 32])
        y = g.reduction(g.mul(x, s), "sum", [0])
    elif kind == "tensor_cores":
        y = _matmul(g, BF16, 256, 256, 128, s)
    elif kind == "simt_gemm":
        y = _matmul(g, F32, 64, 48, 32, s)
    elif kind == "depthwise":
        x = g.tensor(name="x", dim=[2, 64, 16, 16], stride=[16384, 1, 1024, 64],
                     data_type=BF16)
        w = g.tensor(name="w", dim=[64, 1, 3, 3], data_type=BF16)
        y = g.mul(g.conv_fprop(x, w, padding=[1, 1]), s)
    elif kind == "window":
        x = g.tensor(name="x", dim=[2, 64, 16, 16], stride=[16384, 1, 1024, 64])
        y = g.mul(g.pooling(x, "max", [2, 2]), s)
    elif kind == "rows_columns":
        x, dy = g.tensor(name="x", dim=[64, 256]), g.tensor(name="dy", dim=[64, 256])
        stats = [g.tensor(name=n, dim=[64, 1]) for n in ("mean", "inv")]
        dx, dscale, _ = g.layernorm_backward(g.mul(dy, s), x, g.tensor(name="p", dim=[1, 256]),
                                             *stats)
        dscale.set_output(True)
        y = dx
    elif kind == "conv":
        x = g.tensor(name="x", dim=[2, 64, 16, 16], stride=[16384, 1, 1024, 64],
                     data_type=BF16)
        w = g.tensor(name="w", dim=[64, 64, 3, 3], stride=[576, 1, 192, 64], data_type=BF16)
        y = g.mul(g.conv_fprop(x, w, padding=[1, 1]), s)
    y.set_output(True)
    return g


# kind -> the strategy of the kernel that reads the scalar, per arch
KINDS = {"pointwise": "simt-pointwise", "row_program": "simt-reduce",
         "column_program": "simt-reduce-columns", "tensor_cores": {"sm_90a": "tc-sm90",
                                                                  "sm_80": "tc-sm80"},
         "simt_gemm": "simt-gemm", "conv": {"sm_90a": "tc-sm90", "sm_80": "tc-sm80"},
         "depthwise": "simt-depthwise", "window": "simt-window",
         "rows_columns": "simt-reduce-rows-columns"}


@pytest.mark.parametrize("arch", pipelines.ARCHS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_strategies_take_the_scalar_as_an_f32_parameter(kind, arch):
    package = compiler.compile_module(graph_mlir.to_module(_build(kind)),
                                      compiler.Options(target="cuda", arch=arch,
                                                       tuning_db="off"))
    m = package.manifest
    (scalar,) = [i for i, t in enumerate(m["inputs"]) if t.get("by_value")]
    assert m["inputs"][scalar] == {"name": "s", "dims": [], "strides": [], "dtype": "f32",
                                   "by_value": True}
    entries = ptx.entries(package.ptx)
    readers = []
    for k in m["kernels"]:
        for position, a in enumerate(k["args"]):
            # No kernel reads the scalar through a pointer.
            assert not (a["kind"] in ("buffer", "tma") and
                        m["buffers"][a["buffer"]] == {"kind": "input", "index": scalar})
            if a["kind"] == "scalar_input":
                assert m["buffers"][a["buffer"]] == {"kind": "input", "index": scalar}
                assert entries[k["entry"]][position] == "f32", (k["entry"], position)
                readers.append(k["strategy"])
    want = KINDS[kind] if isinstance(KINDS[kind], str) else KINDS[kind][arch]
    assert want in readers, (readers, [k["strategy"] for k in m["kernels"]])
    exe = dnnc_runtime.load(artifact.to_bytes(package))
    text = artifact.describe(m)
    assert [t.by_value for t in exe.inputs][scalar] and "f32 input 's'" in text
    assert re.search(r"input +s +f32 +by value \(a runtime scalar\)", text), text
    if PTXAS is not None:
        resources = ptxas.assemble(package.ptx, arch)
        assert all(resources[k["entry"]].spill_stores == 0 for k in m["kernels"])


# ----------------------------------------------------------------------------
# Numerics of the rewritten kernels, on the CPU


EMULATION_TAIL = ("dnn-scalar-args", "dnn-expand-math", "arith-expand{include-bf16}",
                  "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32}",
                  "expand-strided-metadata", "lower-affine", "convert-scf-to-cf",
                  "convert-vector-to-llvm", "finalize-memref-to-llvm", "convert-arith-to-llvm",
                  "convert-func-to-llvm", "convert-cf-to-llvm", "reconcile-unrealized-casts")


def test_gpu_lowering_reads_the_hoisted_value():
    """The simt kernels (pointwise, generic) lowered for the GPU up to the
    thread distribution, then dnn-scalar-args (the scalar loaded once on the
    host side of each kernel function), executed on the CPU with two values."""
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[37, 64])
    s, t = g.scalar(name="s"), g.scalar(name="t")
    g.add(g.mul(g.exp(x), s), t).set_output(True).set_name("y")
    g.mul(g.reduction(g.mul(x, t), "max", [1]), s).set_output(True).set_name("m")
    module = graph_mlir.to_module(g)
    signature = dnnc.targets.cpu.signature_of(module)
    for stage in pipelines.get("cuda", "sm_80"):
        if stage.name == "gpu":
            break
        passes.run_pipeline(module, stage.pipeline)
    with module.context:   # a row program's shuffles need a GPU
        for fn in irutil.kernel_functions(module):
            config = heuristics.Config.from_attr(fn.attributes["dnn.config"])
            if config.strategy != "simt-pointwise":
                fn.attributes["dnn.config"] = heuristics.Config("simt-generic",
                                                                config.block).to_attr()
    gpu = pipelines.GPU.passes
    upto = gpu[:gpu.index("dnn-distribute-loops") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto + EMULATION_TAIL) + ")")
    exe = dnnc.targets.cpu.CpuExecutable(module, signature)
    data = np.random.default_rng(2).standard_normal((37, 64)).astype(np.float32)
    for sv, tv in ((0.5, 2.0), (-3.0, 0.25)):
        got = exe(x=data, s=sv, t=tv)
        np.testing.assert_allclose(got["y"], np.exp(data) * sv + tv, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got["m"], (data * tv).max(axis=1, keepdims=True) * sv,
                                   rtol=1e-6)


@pytest.mark.parametrize("strategy, dtype, arch", [("simt-gemm", F32, "sm_90a"),
                                                   ("tc-sm80", BF16, "sm_80")])
def test_gemm_epilogue_reads_the_scalar_parameter(strategy, dtype, arch):
    """A matmul's epilogue y = (a @ b) * s + t lowered by ``strategy`` and
    dnn-scalar-args, run by the kernel interpreter with two values of s, t."""
    g = dnnc.Graph(io_data_type=dtype)
    a = g.tensor(name="a", dim=[40, 24])
    b = g.tensor(name="b", dim=[24, 72])
    s, t = g.scalar(name="s"), g.scalar(name="t")
    g.add(g.mul(g.matmul(a, b), s), t).set_output(True).set_name("y")
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", stop_after="configured",
        config=f"*=strategy:{strategy}"))
    gpu = pipelines.GPU.passes
    mapping = "dnn-map-simt-gemm" if strategy == "simt-gemm" else "dnn-map-tensor-cores"
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index(mapping) + 1] + ("dnn-scalar-args",)
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    rng = np.random.default_rng(3)
    av = rng.standard_normal((40, 24)).astype(np.float32)
    bv = rng.standard_normal((24, 72)).astype(np.float32)
    if dtype is BF16:
        import ml_dtypes

        av = av.astype(ml_dtypes.bfloat16).astype(np.float32)
        bv = bv.astype(ml_dtypes.bfloat16).astype(np.float32)
    with module.context:
        (fn,) = [f for f in irutil.kernel_functions(module)
                 if ir_strategy(f) == strategy]
        args = list(irutil.body(fn).arguments)
        assert [str(a.type) for a in args][2:4] == ["memref<f32>", "memref<f32>"]
        # The launches read the scalars only through the host-side loads.
        for launch in irutil.ops(fn, "gpu.launch"):
            loads = [op for op in irutil.ops(launch, "memref.load")
                     if op.operands[0] in args[2:4]]
            assert not loads
        results = []
        for sv, tv in ((1.5, 0.25), (-0.5, 4.0)):
            arrays = [av, bv, np.float32(sv), np.float32(tv), np.full((40, 72), np.nan,
                                                                      np.float32)]
            got = run_kernel(fn, arrays)[4].astype(np.float64)
            want = (av.astype(np.float64) @ bv) * np.float32(sv) + np.float32(tv)
            tol = 1e-4 if dtype is F32 else 2e-2
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
            results.append(got)
    assert not np.allclose(results[0], results[1])


def ir_strategy(fn):
    return heuristics.Config.from_attr(fn.attributes["dnn.config"]).strategy


# ----------------------------------------------------------------------------
# The GPU cases' runs, on the CPU back end


def _scalar_cases():
    path = os.path.join(ROOT, "test", "gpu", "gpu_cases", "__init__.py")
    spec = importlib.util.spec_from_file_location("gpu_cases", path)
    module = sys.modules.get("gpu_cases")
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return [c for c in module.CASES if c.runs]


@pytest.mark.parametrize("case", _scalar_cases(), ids=lambda c: c.name)
def test_gpu_case_runs_on_the_cpu_back_end(case):
    """Every run of a scalars GPU case (other values of its scalars) on one
    CPU executable gives the reference's outputs, which differ between runs."""
    from gpu_cases.case import CONTRACTIONS, comparison
    from gpu_cases.inputs import make_inputs

    CONTRACTIONS.clear()
    g = case.build()
    exe = g.compile(target="cpu")
    data = make_inputs(case, g)
    previous = None
    for values in ({},) + tuple(case.runs):
        feed = dict(data, **{k: np.float32(v) for k, v in values.items()})
        expected = g.execute_reference(feed)
        got = exe(**{t.name: (float(feed[t.name]) if t.is_by_value else feed[t.name])
                     for t in g.inputs})
        for t in g.outputs:
            e = np.asarray(expected[t.name], np.float64)
            rule = comparison(t.get_data_type(), e, case.rtol, CONTRACTIONS.get(t.name), feed)
            np.testing.assert_allclose(np.asarray(got[t.name]).astype(np.float64), e,
                                       rtol=rule["rtol"], atol=rule["atol"],
                                       err_msg=f"{t.name} {values}")
        if previous is not None:
            assert any(not np.array_equal(expected[t.name], previous[t.name])
                       for t in g.outputs)
        previous = expected
