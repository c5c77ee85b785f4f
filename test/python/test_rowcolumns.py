"""Row programs with column sums (simt-reduce-rows-columns,
dnnc/codegen/gpu/reduce/rowcolumns.py, dnn-reduce-rows-columns) without a GPU: the
launches a norm backward becomes, what one thread loads and stores per row,
ptxas's registers and spills. The numerics on a GPU are the norm_backward_rows
and layer_rms_norm cases of test/gpu/gpu_cases/normalization.py.
"""

import re

import pytest

import dnnc
import dnnc.graph_mlir
from dnnc import compiler
from dnnc.codegen.gpu import ptxas
from dnnc.dialect.types import data_type as dt

F32, BF16 = dt.FLOAT, dt.BFLOAT16
STRATEGY = "simt-reduce-rows-columns"
PTXAS = ptxas.find()


def norm_backward(op, dtype, n, rows=16384, affine=True):
    g = dnnc.Graph(name=op, io_data_type=dtype)
    dy = g.tensor(name="dy", dim=[rows, n])
    x = g.tensor(name="x", dim=[rows, n])
    scale = g.tensor(name="scale", dim=[1, n]) if affine else None
    inv = g.tensor(name="inv", dim=[rows, 1], data_type=F32)
    if op == "layernorm_backward":
        mean = g.tensor(name="mean", dim=[rows, 1], data_type=F32)
        outs = g.layernorm_backward(dy, x, scale, mean, inv, axis=1, has_bias=affine)
    else:
        outs = g.rmsnorm_backward(dy, x, scale, inv, axis=1, has_bias=affine)
    for t in outs:
        if t is not None:
            t.set_output(True)
    return g


def compile_cuda(g):
    module = dnnc.graph_mlir.to_module(g)
    return compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_90a"),
                                   basename=g.name)


def entry(ptx, name):
    """The PTX text of kernel ``name``."""
    start = ptx.index(f".entry {name}(")
    return ptx[start:ptx.index("\n}", start)]


def count(ptx, instruction):
    return len(re.findall(rf"^\s+{re.escape(instruction)}\b", ptx, re.M))


@pytest.mark.parametrize("op, sums, slots", [("layernorm_backward", 2, 64),
                                             ("rmsnorm_backward", 2, 32)])
def test_norm_backward_is_two_launches(op, sums, slots):
    # dx and the partials of dscale and dbias in one pass over dy and x, then
    # the finish: 261 blocks of 63 rows (two 256-thread blocks an SM), 64 KB
    # of f32 sums each, after the row program's slots (a slot per warp per row
    # sum: 2 sums for layernorm, 1 for rmsnorm, 8 warps; rounded to 16 bytes).
    package = compile_cuda(norm_backward(op, BF16, 8192))
    rows, finish = package.kernels
    assert rows["strategy"] == finish["strategy"] == STRATEGY, rows["reason"]
    assert rows["grid"] == [261, 1, 1] and rows["block"] == [256, 1, 1]
    assert rows["shared_bytes"] == slots + sums * 8192 * 4
    assert f"16384 rows of 8192 and {sums} column sums" in rows["reason"]
    ptx = entry(package.ptx, rows["entry"])
    # Per row, each thread loads its 8 vectors of dy, x and scale once and
    # stores 8 of dx; its sums are 16-byte shared loads and stores.
    assert count(ptx, "ld.global.v4.b16") == 24 and count(ptx, "st.global.v2.b32") == 8
    assert 8 * sums <= count(ptx, "ld.shared.v4.b32") <= 8 * sums + 4  # + the partials'
    assert count(ptx, "st.shared.v4.b32") == 8 * sums
    assert "atom" not in ptx  # the sums are summed in a fixed order


@pytest.mark.skipif(PTXAS is None, reason="no ptxas")
@pytest.mark.parametrize("dtype", [BF16, F32])
def test_rows_launch_fits_two_blocks_an_sm(dtype):
    package = compile_cuda(norm_backward("layernorm_backward", dtype, 8192))
    usage = ptxas.assemble(package.ptx, "sm_90a", PTXAS)
    rows = usage[package.kernels[0]["entry"]]
    assert rows.spill_stores == rows.spill_loads == 0
    assert rows.registers <= 128  # 256 threads: two blocks on an SM's 64K registers


def test_norm_backward_without_parameters_is_a_row_program():
    package = compile_cuda(norm_backward("rmsnorm_backward", BF16, 8192, affine=False))
    assert [k["strategy"] for k in package.kernels] == ["simt-reduce"]


def test_long_rows_keep_a_row_and_a_column_program():
    # 40000 columns: 320 KB of sums would not fit a block's shared memory.
    package = compile_cuda(norm_backward("layernorm_backward", BF16, 40000, rows=64))
    assert [k["strategy"] for k in package.kernels][:2] == [
        "simt-reduce", "simt-reduce-columns"]


def test_parameter_casts_fold_into_the_column_sums():
    """The torch backend's layernorm backward in bf16 (the GPU case
    layernorm_backward_params_cast_bf16): dscale and dbias, f32 column sums
    reshaped to [768] and cast to bf16, are stored as bf16 by the
    rows-columns kernel itself (dnn-canonicalize): its plan has no cast
    kernel, its PTX assembles, and the CPU back end (the same dnn stage)
    matches the NumPy reference."""
    import numpy as np

    from dnnc.targets import cpu
    from test_cuda_compile import _load_gpu_cases

    _load_gpu_cases()
    from gpu_cases import normalization
    from gpu_cases.case import RTOL, Case
    from gpu_cases.inputs import make_inputs

    build = normalization.layernorm_backward_params_cast(BF16)
    module = compiler.compile_cuda(build(), "sm_90a", stop_after="gpu")
    from dnnc import plan
    kernels = plan.strategies(module)
    assert [k.strategy for k in kernels] == ["simt-reduce", STRATEGY], \
        [(k.name, k.strategy) for k in kernels]
    if PTXAS:
        ptxas.assemble(compiler.compile_cuda(build(), "sm_90a", cache=False).ptx, "sm_90a",
                       PTXAS)
    g = build()
    data = make_inputs(Case("params_cast", build), g)
    expected = g.execute_reference(data)
    got = cpu.compile_module(dnnc.graph_mlir.to_module(build()))(**data)
    assert len(expected) == 3
    for name, ref in expected.items():
        ref = np.asarray(ref, np.float64)
        out = np.asarray(got[name], np.float64)
        atol = RTOL["bf16"] * max(1.0, float(np.abs(ref).max()))
        assert np.allclose(out, ref, rtol=RTOL["bf16"], atol=atol), \
            (name, float(np.abs(out - ref).max()))
