"""No tensor-core contraction on simt-generic for what its epilogue or
prologue reads, without a GPU.

* The sweep: every (operand kind, epilogue) of gpu_cases/epilogue_reads.py
  (bias, per-channel scale and shift, residuals NHWC and NCHW, broadcasts
  over the batch, over the pixels, over all but the pixels, scalars, one
  dim, per row; a second output, an f32 output, an f32 operand on a bf16 /
  f16 contraction) on a forward convolution (of two groups and 3-D too),
  data gradients of stride 1 and 2, a filter gradient and a batched
  matmul, compiled to the gpu stage for sm_90a and sm_80: each
  contraction's kernel runs on its tensor-core strategy and holds its
  whole epilogue (no pointwise kernel is left).
  Those read through split views (conv_views.Views._split) ran on
  simt-generic before.
* Prologues: BN-ReLU before a forward convolution with scale and shift of
  each kind, and the matmul's operand prologues with a tensor operand:
  what the kernel cannot apply (a scale that is not per channel, a
  tensor operand of a matmul's prologue) stays a pointwise kernel of its
  own, the convolution's plan reason saying why, and the contraction
  keeps its tensor-core strategy.
* tc-sm80's kernels run in the kernel interpreter (kernel_interpreter.py),
  every output NaN-poisoned first, match the NumPy reference: the split
  views' coordinates (a row split into image and pixel, a column into tap
  and channel, a filter gradient's taps batch split), a stride phase's
  views of them, and a matmul's column-major residual.
* ptxas and the SASS of tc-sm90's kernels that read split views: no
  spills, no local memory, within the register budget.
"""

import importlib.util
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import dnnc
from benchutil import ROOT
from dnnc import compiler, graph_mlir, passes, pipelines, plan
from dnnc.codegen.gpu import irutil
from kernel_builds import Builds, assert_fit, assert_no_local_memory
from kernel_interpreter import run_kernel
from mlir import ir
from test_tc_sass import MAX_SHARED, needs_sass


def _cases_module():
    """gpu_cases/epilogue_reads.py, imported from its file with the package
    (test/gpu is not on sys.path: its test_tune.py has the name of one
    here)."""
    if "gpu_cases" not in sys.modules:
        path = os.path.join(ROOT, "test", "gpu", "gpu_cases", "__init__.py")
        spec = importlib.util.spec_from_file_location("gpu_cases", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # for the package's relative imports
        spec.loader.exec_module(module)
    from gpu_cases import epilogue_reads

    return epilogue_reads


reads = _cases_module()
CONTRACTIONS = ("matmul", "conv_fprop", "conv_dgrad", "conv_wgrad")
TENSOR_CORES = {"sm_90a": "tc-sm90", "sm_80": "tc-sm80"}


def _kernels(build, arch):
    """The plan's KernelStrategy rows of ``build``'s graph compiled for
    ``arch`` to the gpu stage (the strategies final)."""
    module = build().compile(target="cuda", arch=arch, tuning_db="off", stop_after="gpu")
    return list(plan.strategies(module))


@pytest.mark.parametrize("arch", sorted(TENSOR_CORES))
@pytest.mark.parametrize("direction", reads.DIRECTIONS)
def test_every_epilogue_read_on_tensor_cores(direction, arch):
    """One graph of every (kind, epilogue) pair of ``direction``: as many
    contraction kernels as pairs, each on the arch's tensor-core strategy,
    and no pointwise kernel (every epilogue joined its contraction)."""
    if arch == "sm_80" and direction in reads.SM90_ONLY:
        pytest.skip("tc-sm80 takes one group")
    pairs = reads.combos(direction)
    kernels = _kernels(reads.graph(direction, "bf16"), arch)
    contractions = [k for k in kernels if k.anchor in CONTRACTIONS]
    assert len(contractions) == len(pairs), [(k.name, k.anchor) for k in kernels]
    slow = [(pairs[i], k.strategy, k.reason[:300]) for i, k in enumerate(contractions)
            if k.strategy != TENSOR_CORES[arch]]
    assert not slow, slow
    assert not [k for k in kernels if k.anchor == "pointwise"], \
        [(k.name, k.reason[:200]) for k in kernels]


def test_position_table_joins_the_convolution():
    """A position table [1, K, P·Q] added to a convolution's flattened
    output: the add joins the convolution's kernel, on tc-sm90."""
    kernels = _kernels(reads.position_table("bf16"), "sm_90a")
    (conv,) = [k for k in kernels if k.anchor in CONTRACTIONS]
    assert conv.strategy == "tc-sm90", conv.reason
    assert not [k for k in kernels if k.anchor == "pointwise"], kernels


def _prologue_graph(kind, matmul=False):
    """BN-ReLU (relu(x * s + t)) before a forward convolution, s and t of
    ``kind`` against x (gpu_cases' operand kinds); or, ``matmul``, relu(A
    * s) before a matmul, s of ``kind`` against A."""
    def build():
        g = dnnc.Graph(io_data_type="bf16", intermediate_data_type="bf16",
                       compute_data_type="f32")
        if matmul:
            a_dims = [reads.BATCH, reads.M, reads.KM]
            a = g.tensor(name="a", dim=a_dims)
            b = g.tensor(name="b", dim=[reads.BATCH, reads.KM, reads.NM])
            s_dims, s_strides = reads.operand_layout(kind, a_dims, 2)
            s = g.tensor(name="s", dim=s_dims, stride=s_strides)
            g.matmul(g.relu(g.mul(a, s)), b).set_output(True)
            return g
        x_dims = [reads.N, reads.C, *reads.IMAGE]
        w_dims = [reads.K, reads.C, *reads.WINDOW]
        x = g.tensor(name="x", dim=x_dims, stride=reads.channels_last(x_dims))
        w = g.tensor(name="w", dim=w_dims, stride=reads.channels_last(w_dims))
        s_dims, s_strides = reads.operand_layout(kind, x_dims, 1)
        s = g.tensor(name="s", dim=s_dims, stride=s_strides)
        t = g.tensor(name="t", dim=s_dims, stride=s_strides)
        y = g.conv_fprop(g.relu(g.add(g.mul(x, s), t)), w, padding=[1, 1])
        y.set_output(True).set_stride(reads.channels_last([reads.N, reads.K, *reads.IMAGE]))
        return g
    return build


@pytest.mark.parametrize("matmul", [False, True], ids=["conv_fprop", "matmul"])
@pytest.mark.parametrize("kind", reads.OPERANDS)
def test_prologue_reads_keep_tensor_cores(kind, matmul):
    """Whatever the prologue's operand, the contraction runs on tc-sm90;
    a per-channel (or one-element) scale and shift join the convolution's
    kernel, others are left to a pointwise kernel."""
    kernels = _kernels(_prologue_graph(kind, matmul), "sm_90a")
    (contraction,) = [k for k in kernels if k.anchor in CONTRACTIONS]
    assert contraction.strategy == "tc-sm90", contraction.reason
    joined = not [k for k in kernels if k.anchor == "pointwise"]
    if not matmul:
        assert joined == (kind in ("bias", "scalar")), [(k.anchor, k.reason) for k in kernels]
        # A scale of another shape than x's, not per channel: the plan says
        # why (a full-size one is no prologue operand at all).
        noted = "prologue reads per-channel operands" in contraction.reason
        assert noted == (not joined and not kind.startswith("residual")), contraction.reason


# ----------------------------------------------------------------------------
# tc-sm80's kernels, interpreted

INTERPRETED = [
    ("over_batch", "bn_relu"), ("over_pixels", "add"), ("pixels_only", "bn_relu"),
    ("last_dim", "add"), ("per_row", "second"), ("bias", "second"),
    ("over_batch", "f32_operand"), ("residual_nhwc", "cast"), ("over_batch_nchw", "add"),
]


def _interpret(build, dtype):
    """({output: the reference}, {output: what the kernel wrote}, its
    config) of ``build``'s graph of one kernel on tc-sm80 (sm_80), inputs of
    ``dtype`` drawn at random (scales from [0.5, 2)), outputs NaN-poisoned."""
    g = build()
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch="sm_80", tuning_db="off", stop_after="configured"))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-tensor-cores") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    rng = np.random.default_rng(11)
    stored = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}
    data = {}
    for t in g.inputs:
        dims = [int(d) for d in t.dim]
        values = rng.uniform(0.5, 2.0, dims) if t.name.startswith("s") else rng.normal(size=dims)
        data[t.name] = values.astype(stored[str(t.get_data_type().mlir)]).astype(np.float64)
    expected = g.execute_reference(data)
    with module.context:
        top = irutil.graph_function(module)
        names = [ir.StringAttr(ir.DictAttr(a)["dnn.name"]).value
                 for a in ir.ArrayAttr(top.attributes["arg_attrs"])]
        (call,) = list(irutil.ops(top, "func.call"))
        fn = next(f for f in irutil.kernel_functions(module)
                  if irutil.symbol(f) == ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
        config = str(fn.attributes["dnn.config"])
        arrays, outputs = [], {}
        for value in call.operands:
            name = names[list(irutil.body(top).arguments).index(value)]
            if name in data:
                arrays.append(np.asarray(data[name], np.float32))
            else:
                outputs[name] = len(arrays)
                arrays.append(np.full(list(ir.MemRefType(value.type).shape), np.nan,
                                      np.float32))
        got = run_kernel(fn, arrays, poison=True)
    return ({n: np.asarray(expected[n], np.float64) for n in outputs},
            {n: got[i] for n, i in outputs.items()}, config)


@pytest.mark.parametrize("kind,epilogue", INTERPRETED, ids=[f"{k}-{e}" for k, e in INTERPRETED])
@pytest.mark.parametrize("direction", reads.DIRECTIONS)
def test_tc_sm80_reads_match_the_reference(direction, kind, epilogue):
    """Every output of the one tc-sm80 kernel (poisoned with NaN first)
    within bf16's tolerance of the float64 reference."""
    if direction in reads.SM90_ONLY:
        pytest.skip("tc-sm80 takes one group")
    expected, got, config = _interpret(reads.graph(direction, "bf16", [(kind, epilogue)]),
                                       "bf16")
    assert 'strategy = "tc-sm80"' in config, config
    assert set(got) == ({"z0", "y0"} if epilogue == "second" else {"z0"})
    for name in got:
        assert not np.isnan(got[name]).any(), (name, np.argwhere(np.isnan(got[name]))[:5])
        rtol = 1.6e-2
        atol = rtol * max(1.0, float(np.abs(expected[name]).max()))
        np.testing.assert_allclose(got[name], expected[name], rtol=rtol, atol=atol,
                                   err_msg=name)


# ----------------------------------------------------------------------------
# ptxas and SASS of tc-sm90's kernels

SASS_PAIRS = [("over_batch", "bn_relu"), ("pixels_only", "add"), ("last_dim", "second"),
              ("residual_nhwc", "add")]


@pytest.fixture(scope="module")
def built():
    return Builds(lambda name: reads.graph(name, "bf16", SASS_PAIRS)(), "sm_90a")


@needs_sass
@pytest.mark.parametrize("direction", reads.DIRECTIONS)
def test_split_view_kernels_fit(built, direction):
    package = built.package(direction)
    resources, functions = built.assembly(direction)
    assert_fit(package.kernels, resources, MAX_SHARED)
    assert_no_local_memory(package.kernels, functions)
