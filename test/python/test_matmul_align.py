"""Matmuls of any alignment on tensor cores, without a GPU: tc-sm80's
loaders read operands whose rows are not 16 bytes apart where they lie
(cp.async of 8 or 4 bytes, or element by element through registers where
rows start 2 bytes apart: an odd K, or an odd M or N of an operand stored
MN-major), zero past M, N and K (dnnc/codegen/gpu/tensorcore/sm80/); two
batch dims broadcast against each other (gemm.Gemm.batch_shape); K = 0 as
the pointwise epilogue of a zero product.

* The kernels, interpreted on the CPU (kernel_interpreter.py), their
  output poisoned with NaN first, against the NumPy reference, on sm_80
  and sm_90a (where tc-sm90 hands them to tc-sm80).
* Plans: the reason names the loader of each operand and why.
* SASS: HMMA, no spills; 16-bit global loads where an operand is read
  element by element.
* A large GEMM of odd K on sm_90a: tc-sm90 after a copy of the operand
  into rows of a 16-byte multiple (elementwise/pad_rows.py, interpreted
  here), where the copy is small beside the GEMM (sm90.padded_operands);
  a small one stays on tc-sm80.
"""

import math

import numpy as np
import pytest

import dnnc
from mlir import ir
from mlir.dialects import func

import dnnc.dialect
from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil, ptxas, sass
from dnnc.codegen.gpu.elementwise import pad_rows, transpose
from kernel_builds import assert_fit, assert_no_local_memory
from kernel_interpreter import run_kernel
from test_conv_phases import interpret
from test_tc_sass import needs_sass


def matmul_graph(name, dtype, a_dims, b_dims, a_stride=None, b_stride=None, bias=None,
                 relu=False, compute=None):
    """One matmul ``a @ b`` (strides given: graph inputs stored so), with a
    ``bias`` of those dims added and a relu after it where asked."""
    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        a = g.tensor(name="a", dim=a_dims, stride=a_stride)
        b = g.tensor(name="b", dim=b_dims, stride=b_stride)
        kw = {"compute_data_type": compute} if compute else {}
        y = g.matmul(a, b, **kw)
        if bias is not None:
            y = g.add(y, g.tensor(name="bias", dim=bias))
        if relu:
            y = g.relu(y)
        y.set_output(True).set_name("y")
        return g
    return build


# name: (dtype, a dims, b dims, extra keywords); K is a's last dim.
CASES = {
    # K = 129 and N = 129 in f16: both operands' rows start 2 bytes apart.
    "k129_n129_f16": ("f16", [37, 129], [129, 129], {}),
    # bf16 [3, 1, 127] @ [3, 127, 100]: one row a batch, odd K.
    "m1_k127_batched_bf16": ("bf16", [3, 1, 127], [3, 127, 100], {}),
    # Two batch dims broadcast against each other ([2, 1] against [3]).
    "two_batch_dims_f16": ("f16", [2, 1, 7, 127], [3, 127, 33], {}),
    # A broadcast over B's batch.
    "broadcast_a_bf16": ("bf16", [1, 9, 131], [4, 131, 24], {}),
    # B stored N x K (a linear layer's weight) of odd K: K-major, element-wise.
    "b_stored_n_by_k_k99_bf16": ("bf16", [20, 99], [99, 30], dict(b_stride=[1, 99])),
    # A stored K x M of odd M: MN-major, element-wise along M (on sm_90a
    # tc-sm90 copies it transposed first: K is a multiple of 8).
    "a_stored_k_by_m_m37_f16": ("f16", [37, 48], [48, 40], dict(a_stride=[1, 37])),
    # Several K steps (K = 515: 17 steps of 32) with a bias and relu, odd N.
    "k515_n127_bias_relu_bf16": ("bf16", [70, 515], [515, 127],
                                 dict(bias=[1, 127], relu=True)),
    # K = 130: rows 4-byte aligned, cp.async of 4 bytes.
    "k130_f16": ("f16", [21, 130], [130, 64], {}),
}


# Cases tc-sm90 runs on sm_90a.
TC_SM90 = {"a_stored_k_by_m_m37_f16"}
GEMV = {name for name, (_, a, b, _) in CASES.items() if min(a[-2], b[-1]) <= 8}


def build_of(name):
    dtype, a_dims, b_dims, kw = CASES[name]
    return matmul_graph(name, dtype, a_dims, b_dims, **kw)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matmul_align_interpreted(name, arch):
    """The tc-sm80 kernel (on sm_90a: handed over by tc-sm90), interpreted,
    within the type's tolerance of the reference, every output written."""
    dtype, a_dims, _, _ = CASES[name]
    if arch == "sm_90a" and name in TC_SM90:
        pytest.skip("tc-sm90 takes it on sm_90a (an operand copied transposed first)")
    # A side of at most 8 rows runs on simt-gemv unless the tensor cores are
    # asked for (test_simt_gemv.py).
    ask = ("*=strategy:" + ("tc-sm90" if arch == "sm_90a" else "tc-sm80")) \
        if name in GEMV else None
    expected, got, config = interpret(build_of(name), "bf16" if dtype == "bf16" else "f16",
                                      arch, config=ask)
    assert 'strategy = "tc-sm80"' in config, config
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    rtol = {"bf16": 1.6e-2, "f16": 2e-3, "f32": 2e-3}[dtype]
    atol = rtol * max(1.0, 4 * math.sqrt(a_dims[-1]))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def package(name, arch):
    return compiler.compile_module(graph_mlir.to_module(build_of(name)()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off"), basename=f"{name}_{arch}")


# name: what the reason must say of the loaders.
PLANNED = {
    "k129_n129_f16": ["A element by element through registers (its rows start 2 bytes "
                      "apart: K = 129 f16)",
                      "B element by element through registers (its rows start 2 bytes "
                      "apart: N = 129 f16)"],
    "k130_f16": ["A in 4-byte cp.async copies (its rows are 4-byte aligned: K = 130 f16)"],
    "two_batch_dims_f16": ["tc-sm90 does not apply (2 batch dims [2, 3]",
                           "A element by element"],
}


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_sm90a_plan_names_the_loader(name):
    """On sm_90a: one tc-sm80 kernel, its reason saying why tc-sm90 does
    not apply and how each unaligned operand is read (no padded copy)."""
    (k,) = {k["entry"]: k for k in package(name, "sm_90a").kernels}.values()
    assert k["strategy"] == "tc-sm80", (k["strategy"], k.get("reason"))
    reason = k["reason"]
    assert reason.startswith("tc-sm90 does not apply ("), reason
    for part in PLANNED[name]:
        assert part in reason, (part, reason)
    if "by element" in " ".join(PLANNED[name]):
        assert "zero past M, N and K in the loader (no padded copy)" in reason, reason


def test_sm80_plan_mn_major_element_wise():
    """On sm_80: A stored K x M of odd M is read element by element along M."""
    (k,) = {k["entry"]: k for k in package("a_stored_k_by_m_m37_f16", "sm_80")
            .kernels}.values()
    assert k["strategy"] == "tc-sm80", (k["strategy"], k.get("reason"))
    assert "A element by element through registers (its rows start 2 bytes apart: M = 37 " \
        "f16)" in k["reason"], k["reason"]


@needs_sass
def test_element_wise_tile_fits_registers():
    """A large odd-K matmul on sm_80: the heuristics' 8-warp 256 x 128 x 64
    tile would hold its element-wise loads on top of 128 accumulators a
    thread; the tile runs narrowed (sm80.fit_gemm), its config and reason
    say so, and ptxas spills nothing."""
    from dnnc.codegen.gpu.tensorcore import sm80

    build = matmul_graph("big_odd_k", "f16", [4096, 4095], [4095, 4096])
    built = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_80", tuning_db="off"), basename="big")
    (k,) = {k["entry"]: k for k in built.kernels}.values()
    assert k["strategy"] == "tc-sm80", k.get("reason")
    m, n, bk = k["config"]["tile"]
    assert "A element by element" in k["reason"], k["reason"]
    assert f"tile narrowed to {m}x{n}x{bk}" in k["reason"], k["reason"]
    tile = sm80.Tile(m, n, bk, warps=k["block"][0] // 32)
    held = tile.m * tile.k // tile.threads
    assert tile.warp_m * tile.warp_n // 32 + held <= sm80.ELEMENT_WISE_BUDGET, tile
    resources, _ = ptxas.assemble_cubin(built.ptx, "sm_80")
    r = resources[k["entry"]]
    assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), r


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_k0_is_a_pointwise_epilogue(arch):
    """K = 0: C is 0; the kernel (a fill and the epilogue on it, the empty
    contraction dropped) runs on simt-pointwise, its reason saying so, and
    dnn-vectorize-pointwise turns both of its loops into 16-byte vectors
    (the GPU test family matmul_align checks its values)."""
    build = matmul_graph("k0", "bf16", [33, 0], [0, 40], bias=[1, 40], relu=True)
    kernels = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off"), basename=f"k0_{arch}").kernels
    assert {k["strategy"] for k in kernels} == {"simt-pointwise"}, \
        [(k["strategy"], k.get("reason")) for k in kernels]
    assert "K = 0: the epilogue of a zero product" in kernels[0]["reason"]
    module = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", stop_after="configured"))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-vectorize-pointwise") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    with module.context:
        (fn,) = irutil.kernel_functions(module)
        assert str(fn.attributes["dnn.vectorized"]) == "[2, 2]", fn


SASS = {"k129_n129_f16": "HMMA.16816.F32", "two_batch_dims_f16": "HMMA.16816.F32",
        "k515_n127_bias_relu_bf16": "HMMA.16816.F32.BF16"}


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(SASS))
def test_matmul_align_sass(name, arch):
    """ptxas's verdict and the SASS: no spills or local memory, registers
    within what the block's threads may have; HMMA of the operand type;
    16-bit global loads for the element-wise operand."""
    built = package(name, arch)
    resources, cubin = ptxas.assemble_cubin(built.ptx, arch)
    functions = sass.functions(sass.disassemble(cubin))
    (k,) = {k["entry"]: k for k in built.kernels}.values()
    assert_fit([k], resources, most_registers=255)
    assert_no_local_memory([k], functions)
    counts = sass.opcodes(functions[k["entry"]])
    hmma = SASS[name]
    assert counts[hmma] > 0, sorted(counts)
    assert any(op.startswith("LDG") and "U16" in op for op in counts), sorted(counts)


@pytest.mark.parametrize("shape, dims, k", [
    ([3, 5, 13], {"batch": 0, "mn": 1, "k": 2}, 13),
    ([20, 129], {"batch": None, "mn": 0, "k": 1}, 129),
    # A weight stored N x K read as K x N: K-major in dim 0.
    ([7, 9], {"batch": None, "mn": 1, "k": 0}, 7),
])
def test_pad_rows_interpreted(shape, dims, k):
    """pad_rows.emit, interpreted: each row of K elements copied into a
    row of a 16-byte multiple, zero after K, every element written."""
    with dnnc.dialect.context(), ir.Location.unknown():
        module = ir.Module.create()
        f16 = ir.F16Type.get()
        extent = shape[dims["mn"]]
        pitch = pad_rows.pitch_of(k, 2)
        lead = [shape[0]] if dims["batch"] is not None else []
        src_t = ir.MemRefType.get(shape, f16)
        dst_t = ir.MemRefType.get(lead + [extent, pitch], f16)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("pad", ([src_t, dst_t], []))
            entry = fn.add_entry_block()
            with ir.InsertionPoint(entry):
                pad_rows.emit(entry.arguments[0], dims, entry.arguments[1], k)
                func.ReturnOp([])
        rng = np.random.default_rng(1)
        src = rng.normal(size=shape).astype(np.float16).astype(np.float32)
        out = run_kernel(fn, [src, np.full(lead + [extent, pitch], np.nan, np.float32)])[1]
    rows = src if dims["k"] == len(shape) - 1 else np.swapaxes(src, -1, -2)
    np.testing.assert_array_equal(out[..., :k], rows)
    assert (out[..., k:] == 0).all()


@pytest.mark.parametrize("a_dims, b_dims, b_stride, padded", [
    ([2048, 1023], [1023, 8192], None, "A"),
    ([4096, 4095], [4095, 4096], [1, 4095], "A, B"),
    # Skinny: tc-sm80 would run 64 tiles on 132 SMs; A is 1% of the bytes.
    ([16, 4095], [4095, 4096], None, "A"),
])
def test_large_odd_k_pads_for_tc_sm90(a_dims, b_dims, b_stride, padded):
    """A large GEMM of odd K on sm_90a: tc-sm90, each odd-K K-major operand
    copied into rows of a 16-byte multiple first (the reason says so, with
    the copy's and the GEMM's estimated times); the copy kernel and the
    GEMM assemble without spills."""
    build = matmul_graph("pad", "f16", a_dims, b_dims, b_stride=b_stride)
    built = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off"), basename="pad")
    kernels = list({k["entry"]: k for k in built.kernels}.values())
    assert {k["strategy"] for k in kernels} == {"tc-sm90"}, \
        [(k["strategy"], k.get("reason")) for k in kernels]
    reason = kernels[0]["reason"]
    k = a_dims[-1]
    for name in padded.split(", "):
        assert f"{name} copied into rows of {pad_rows.pitch_of(k, 2)} elements first" in reason, \
            reason
    assert reason.count("copied into rows") == len(padded.split(", ")), reason
    resources, _ = ptxas.assemble_cubin(built.ptx, "sm_90a")
    for kernel in kernels:
        r = resources[kernel["entry"]]
        assert (r.spill_stores, r.spill_loads) == (0, 0), (kernel["entry"], r)


def test_small_odd_k_stays_on_tc_sm80():
    """An odd-K GEMM too small for the copy to pay (37 x 129 x 129): tc-sm80's
    loader reads A where it lies. One row a batch of 3 (1 x 100 x 127):
    simt-gemv, one launch, no copy either."""
    (k,) = {k["entry"]: k for k in package("k129_n129_f16", "sm_90a").kernels}.values()
    assert k["strategy"] == "tc-sm80" and "copied into rows" not in k["reason"], k["reason"]
    (k,) = {k["entry"]: k for k in package("m1_k127_batched_bf16", "sm_90a").kernels}.values()
    assert k["strategy"] == "simt-gemv" and "copied into rows" not in k["reason"], k["reason"]


def test_transposed_copy_into_padded_rows_interpreted():
    """The transposing copy ahead of tc-sm90 with rows of an odd K padded
    (transpose.transposed_copy's ``pitch``: K = 13 into rows of 16),
    interpreted: each row of the copy is a column of the source, the
    padding left as it was (never read: TMA stops at K)."""
    k, n, pitch = 13, 70, pad_rows.pitch_of(13, 2)
    with dnnc.dialect.context(), ir.Location.unknown():
        module = ir.Module.create()
        f16 = ir.F16Type.get()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("tp", ([ir.MemRefType.get([k, n], f16),
                                     ir.MemRefType.get([n, pitch], f16)], []))
            entry = fn.add_entry_block()
            with ir.InsertionPoint(entry):
                copy = transpose.Copy(transpose.Axis(n, 1, pitch), transpose.Axis(k, n, 1))
                transpose.emit(copy, entry.arguments[0], entry.arguments[1])
                func.ReturnOp([])
        src = np.random.default_rng(2).normal(size=[k, n]).astype(np.float16).astype(np.float32)
        out = run_kernel(fn, [src, np.full([n, pitch], np.nan, np.float32)])[1]
    np.testing.assert_array_equal(out[:, :k], src.T)
    assert np.isnan(out[:, k:]).all()


def test_odd_k_lm_head_both_operands_copied():
    """An LM head of odd K and odd vocabulary (4096 x 50257 x 767, W stored
    K x N): tc-sm90 after two copies, A into rows of 768 elements, W
    transposed into rows of 768; ptxas spills nothing."""
    build = matmul_graph("lm_head", "bf16", [4096, 767], [767, 50257])
    built = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off"), basename="lm_head")
    kernels = list({k["entry"]: k for k in built.kernels}.values())
    assert len(kernels) == 3 and {k["strategy"] for k in kernels} == {"tc-sm90"}, \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    reason = kernels[0]["reason"]
    assert "A copied into rows of 768 elements first" in reason, reason
    assert "B stored K x N copied transposed first" in reason, reason
    assert "into rows of K padded to 16 bytes" in reason, reason
    resources, _ = ptxas.assemble_cubin(built.ptx, "sm_90a")
    for kernel in kernels:
        r = resources[kernel["entry"]]
        assert (r.spill_stores, r.spill_loads) == (0, 0), (kernel["entry"], r)
