"""simt-gemv (dnnc/codegen/gpu/simt_gemv/): matmuls whose M or N is at most
8, on the CUDA cores in one launch, without a GPU. The kernels
dnn-map-simt-gemv builds are interpreted on the CPU by kernel_interpreter.py
(outputs NaN-poisoned first) against the NumPy reference in float64: f32
within the f32 error bound of a K-term sum (2 K u |A| |B|), tf32 within
the same bound of the reference's tf32-rounded operands, f16 / bf16 (inputs exact in
f32, so only the f32 sum's rounding) within the same bound. Both layouts
of the long operand (K-major: lanes split K, shuffles; MN-major: groups
down K, shared memory), M small and N small, odd sizes, batches and a
broadcast operand, vectors and unrolls that do not divide K, epilogues;
the heuristics (what is chosen, and why); the PTX through ptxas (no
spills).
"""

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

import dnnc
from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil, ptxas
from dnnc.heuristics import rank
from dnnc.heuristics.problem import Problem, TensorSpec
from kernel_interpreter import run_kernel

STRATEGY = "simt-gemv"
PTXAS = ptxas.find()
HOST = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def interpret(g, dtype="f32", config="", run=True):
    """(the reference's outputs in float64, {output: what the kernel
    wrote}, the kernel's dnn.config, its reason, its launches, the |A| |B|
    bound of each output) of graph ``g`` (one kernel), lowered up to
    dnn-map-simt-gemv and interpreted on random inputs of ``dtype``."""
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off", stop_after="configured",
        config=config))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-simt-gemv") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    rng = np.random.default_rng(7)
    data = {t.name: rng.normal(size=[int(d) for d in t.dim]).astype(HOST[dtype])
            .astype(np.float64) for t in g.inputs}
    expected = g.execute_reference(data)
    bound = g.execute_reference({k: np.abs(v) for k, v in data.items()})
    with module.context:
        top = irutil.graph_function(module)
        names = [ir.StringAttr(ir.DictAttr(a)["dnn.name"]).value
                 for a in ir.ArrayAttr(top.attributes["arg_attrs"])]
        (call,) = list(irutil.ops(top, "func.call"))
        fn = next(f for f in irutil.kernel_functions(module)
                  if irutil.symbol(f) == ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
        config_text = str(fn.attributes["dnn.config"])
        reason = str(ir.StringAttr(fn.attributes["dnn.config_reason"]).value)
        launches = len(list(irutil.ops(fn, "gpu.launch")))
        if not run:
            return None, None, config_text, reason, launches, None
        arrays, outs = [], {}
        arguments = list(irutil.body(top).arguments)
        for i, value in enumerate(call.operands):
            if value not in arguments:
                # A strided view of an input (dnn-transpose-views'): its
                # elements as the view reads the input's row-major data.
                source = irutil.defining_op(value).operands[0]
                flat = np.ascontiguousarray(data[names[arguments.index(source)]],
                                            np.float32).reshape(-1)
                shape, strides, offset = irutil.memref_geometry(value.type)
                arrays.append(np.lib.stride_tricks.as_strided(
                    flat[offset:], shape, [4 * st for st in strides]).copy())
                continue
            name = names[arguments.index(value)]
            if name in data:
                arrays.append(np.asarray(data[name], np.float32))
            else:
                arrays.append(np.full(list(ir.MemRefType(value.type).shape), np.nan,
                                      np.float32))
                outs[name] = i
        got = run_kernel(fn, arrays)
    return (expected, {name: got[i] for name, i in outs.items()}, config_text, reason,
            launches, bound)


def check(expected, got, bound, k, out="f32"):
    """No NaN left; within 2 K u of |A| |B| of the reference (which rounds
    tf32's operands as the kernel must); a 16-bit output: plus its
    rounding."""
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    tol = 2 * k * 2.0 ** -24 * np.abs(bound) + 1e-6 * np.abs(expected) + 1e-30
    if out != "f32":
        tol = tol + {"f16": 2.0 ** -10, "bf16": 2.0 ** -7}[out] * np.abs(expected)
    err = np.abs(got.astype(np.float64) - expected)
    assert (err <= tol).all(), (err.max(), np.unravel_index((err - tol).argmax(), err.shape))


def _mm(dtype, a_dims, b_dims, a_stride=None, b_stride=None, epilogue=None, compute=None):
    """y = a @ b (``dtype`` in and out, f32 sums) with ``epilogue``: None,
    "bias_relu" or "bias_residual"."""
    g = dnnc.Graph(io_data_type=dtype, compute_data_type="f32")
    a = g.tensor(name="a", dim=a_dims, **({"stride": a_stride} if a_stride else {}))
    b = g.tensor(name="b", dim=b_dims, **({"stride": b_stride} if b_stride else {}))
    y = g.matmul(a, b, **({"compute_data_type": compute} if compute else {}))
    if epilogue:
        y = g.add(y, g.tensor(name="bias", dim=[1, b_dims[-1]]))
        if epilogue == "bias_relu":
            y = g.relu(y)
        else:
            y = g.add(y, g.tensor(name="res", dim=list(a_dims[:-1]) + [b_dims[-1]]))
    y.set_name("y").set_output(True)
    return g


CASES = {
    # name: (dtype, a dims, b dims, a stride, b stride, epilogue, compute, override)
    # Issue 33's batched GEMV: M = 1, B MN-major with odd N and K.
    "issue33_f32": ("f32", [2, 1, 129], [2, 129, 127], None, None, None, None, ""),
    "issue33_tf32": ("f32", [2, 1, 129], [2, 129, 127], None, None, None, "tf32", ""),
    # M = 3, N a multiple of 4: MN-major vectors of 4 columns.
    "m3_vector4_bias_relu": ("f32", [3, 70], [70, 40], None, None, "bias_relu", None,
                             "*=strategy:simt-gemv,block:64,split:4,vector:4,unroll:3"),
    # One group down K (no shared memory): each thread all of K.
    "m2_split1": ("f32", [2, 21], [21, 50], None, None, None, None,
                  "*=strategy:simt-gemv,block:64,split:1,unroll:4"),
    # N small: W is A (K-major), lanes split K, shuffles; odd K.
    "n7_k_major_odd_k": ("f32", [45, 37], [37, 7], None, None, None, None, ""),
    # N small, K a multiple of 4: 16-byte loads of K, X (B stored N x K)
    # read in vectors too; a batch against a broadcast A.
    "n5_k_major_vectors_broadcast": (
        "f32", [1, 33, 64], [2, 64, 5], None, [320, 1, 64], None, None,
        "*=strategy:simt-gemv,block:64,split:8,vector:4,unroll:2"),
    # M = 1, B stored N x K (a linear layer's weight): K-major W.
    "m1_b_stored_n_by_k_bias_residual": ("f32", [1, 50], [50, 30], None, [1, 50],
                                         "bias_residual", None, ""),
    # A stored K x M (a transpose folded into the GEMM), M = 4.
    "a_stored_k_by_m": ("f32", [4, 19], [19, 33], [1, 4], None, None, None, ""),
    # 16-bit: bf16 M = 1 batched (issue 33's bf16 shape, smaller N), f16
    # N = 8 with 16-byte loads of 8 K.
    "bf16_m1_batched": ("bf16", [3, 1, 127], [3, 127, 100], None, None, None, None, ""),
    "f16_n8_vector8": ("f16", [40, 64], [64, 8], None, None, "bias_relu", None,
                       "*=strategy:simt-gemv,block:64,split:4,vector:8,unroll:2"),
    "f16_m8_mn_major_vector8": ("f16", [8, 24], [24, 64], None, None, None, None,
                                "*=strategy:simt-gemv,block:64,split:8,vector:4,unroll:3"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_simt_gemv_computes_the_matmul(name):
    dtype, a_dims, b_dims, a_stride, b_stride, epilogue, compute, override = CASES[name]
    g = _mm(dtype, a_dims, b_dims, a_stride, b_stride, epilogue, compute)
    expected, got, config, reason, launches, bound = interpret(g, dtype, override)
    assert f'strategy = "{STRATEGY}"' in config, (config, reason)
    assert launches == 1
    check(np.asarray(expected["y"], np.float64), got["y"], bound["y"], a_dims[-1], dtype)


def _problem(a, b, dtype="f32", compute="f32", out=None):
    out = tuple(out or tuple(a[:-1]) + (b[-1],))
    return Problem(kernel="k", anchor="matmul", arch="sm_90a",
                   anchor_inputs=(TensorSpec(tuple(a), dtype), TensorSpec(tuple(b), dtype)),
                   anchor_outputs=(TensorSpec(out, dtype),),
                   anchor_attrs=(("compute_type", compute),))


def test_heuristics_choose_a_gemv_where_a_side_is_small():
    # Issue 33's cases: f32 exact and tf32, M = 1, K = 129, N = 127 x 2.
    for compute in ("f32", "tf32"):
        first = rank(_problem([2, 1, 129], [2, 129, 127], compute=compute))[0]
        assert first.strategy == STRATEGY, first.reason
        assert first.threads % 32 == 0 and first.split > 1, first
        # At most MAX_ITERATIONS loads of K a thread, all in flight.
        assert -(-129 // first.split) <= 8 and first.unroll == -(-129 // first.split), first
        assert "one launch" in first.reason and "M = 1" in first.reason, first.reason
    # N = 7 (W = A, K-major): 32 lanes of 4 K each, simt-gemm next.
    n7 = rank(_problem([1, 127, 4096], [2, 4096, 7]))
    assert (n7[0].strategy, n7[0].split, n7[0].vector) == (STRATEGY, 32, 4), n7[0].reason
    assert n7[1].strategy == "simt-gemm"
    # bf16 M = 1 with a small W: first; a 32 MiB W stays on tc-sm90 first,
    # the GEMV ranked after the tensor cores.
    assert rank(_problem([3, 1, 127], [3, 127, 1000], "bf16"))[0].strategy == STRATEGY
    big = rank(_problem([1, 4096], [4096, 4096], "bf16"))
    assert big[0].strategy == "tc-sm90"
    assert STRATEGY in [c.strategy for c in big]
    # Two batch dims broadcast against each other: simt-gemv addresses one.
    two = rank(_problem([2, 1, 7, 127], [3, 127, 33], "f16", out=[2, 3, 7, 33]))
    assert STRATEGY not in [c.strategy for c in two]
    # M = 9: no GEMV.
    assert STRATEGY not in [c.strategy for c in rank(_problem([9, 64], [64, 64]))]
    assert rank(_problem([16, 4096], [4096, 4096], "bf16"))[0].strategy == "tc-sm90"


def test_unsupported_config_is_chosen_again_or_falls_back():
    # split 3 of a K-major W (lanes summed by shuffles need a power of 2):
    # chosen again for the operands as stored, and the reason says so.
    g = _mm("f32", [30, 40], [40, 3])
    expected, got, config, reason, _, bound = interpret(
        g, "f32", "*=strategy:simt-gemv,block:96,split:3")
    assert f'strategy = "{STRATEGY}"' in config
    assert reason.startswith("simt-gemv chosen again for the operands as stored (split 3 of "
                             "a K-major W"), reason
    check(np.asarray(expected["y"], np.float64), got["y"], bound["y"], 40)
    # M and N both above 8: simt-generic, saying why.
    g = _mm("f32", [12, 16], [16, 24])
    _, _, config, reason, _, _ = interpret(g, "f32", "*=strategy:simt-gemv,block:64,split:2",
                                          run=False)
    assert '"simt-generic"' in config
    assert reason.startswith("simt-gemv does not apply (M 12 and N 24: expected one of them "
                             "at most 8)"), reason


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
@pytest.mark.parametrize("dtype,shape,compute", [
    ("f32", ([2, 1, 129], [2, 129, 127]), None),
    ("f32", ([2, 1, 129], [2, 129, 127]), "tf32"),
    ("f32", ([1, 127, 4096], [2, 4096, 7]), None),
    ("f32", ([1, 4096], [4096, 4096]), None),
    ("bf16", ([3, 1, 127], [3, 127, 1000]), None),
    ("f16", ([1000, 128], [128, 8]), None),
])
def test_ptx_assembles_without_spills(dtype, shape, compute):
    g = _mm(dtype, *shape, epilogue="bias_relu", compute=compute)
    package = compiler.compile_cuda(g, "sm_90a", cache=False)
    kernels = package.manifest["kernels"]
    assert kernels[0]["strategy"] == STRATEGY, kernels[0]["reason"]
    assert len(kernels) == 1
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for name, info in resources.items():
        assert info.spill_stores == 0 and info.spill_loads == 0, (name, info)
    assert "fma.rn.f32" in package.ptx


def test_overrides_around_simt_gemv_start_from_the_ranked_plans():
    from dnnc.heuristics import choose

    def without_reason(c):
        return c.replace(reason="")
    # simt-gemv first: naming another strategy gets the plan it displaced.
    p = _problem([2, 1, 129], [2, 129, 127])
    ranked = rank(p)
    gemm = next(c for c in ranked if c.strategy == "simt-gemm")
    assert without_reason(choose(p, override="strategy:simt-gemm")) == without_reason(gemm)
    tf32 = _problem([2, 1, 129], [2, 129, 127], compute="tf32")
    tc = next(c for c in rank(tf32) if c.strategy == "tc-sm90")
    assert without_reason(choose(tf32, override="strategy:tc-sm90")) == without_reason(tc)
    # A field simt-gemv does not read: the first ranked strategy that does.
    tiled = choose(p, override="tile:32x32x8,block:64")
    assert (tiled.strategy, tiled.tile, tiled.threads) == ("simt-gemm", (32, 32, 8), 64)
    # simt-gemv asked where it is ranked later: its ranked split, vector
    # and unroll, not a fresh config's.
    big = _problem([1, 4096], [4096, 4096], "bf16")
    asked = choose(big, override="strategy:simt-gemv")
    ranked_gemv = next(c for c in rank(big) if c.strategy == STRATEGY)
    assert (asked.strategy, asked.block, asked.split, asked.unroll) == (
        STRATEGY, ranked_gemv.block, ranked_gemv.split, ranked_gemv.unroll)
    assert asked.split > 1
    # Elsewhere overrides apply to the best as before.
    sq = _problem([256, 128], [128, 384], "bf16")
    assert choose(sq, override="strategy:tc-sm80,split:2").split == 2


def test_the_gpu_family_draws_interpreted():
    """The small draws of the GPU family (test/gpu/gpu_cases/matmul_gemv.py,
    up to 60000 elements: 45 of 64), one matmul a graph, interpreted in
    their graph's type: odd sizes, both layouts of each operand, batches
    and a broadcast, epilogues (gelu as relu: the interpreter has no erf)."""
    from test_cuda_compile import _load_gpu_cases

    _load_gpu_cases()
    from gpu_cases import matmul_gemv as family
    from gpu_cases.case import BF16, F16, F32

    names = {F32: "f32", F16: "f16", BF16: "bf16"}
    done = 0
    for i, draw in enumerate(family.draws()):
        batch, _, m, n, k, _, _, epilogue = draw
        if batch * (m * k + k * n + m * n) > 60000:
            continue
        if epilogue == "bias_gelu":
            draw = draw[:-1] + ("bias_relu",)
        _, dtype, compute = family.TYPES[(i // family.PER_GRAPH) % len(family.TYPES)]
        g = dnnc.Graph(io_data_type=dtype, compute_data_type="f32")
        family._add(g, 0, draw, compute).set_output(True)
        expected, got, config, reason, launches, bound = interpret(g, names[dtype])
        (out,) = got
        assert f'strategy = "{STRATEGY}"' in config and launches == 1, (draw, reason)
        check(np.asarray(expected[out], np.float64), got[out], bound[out], k, names[dtype])
        done += 1
    assert done == 45
