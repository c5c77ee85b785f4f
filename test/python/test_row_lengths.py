"""The longest rows of the memory-bound targets (65536 and 262144 elements,
docs/performance.md) compile to row programs that keep to registers: every
kernel of softmax, log_softmax, layernorm, rmsnorm and their backwards is
simt-reduce (the backwards' dscale / dbias simt-reduce-columns), never the
simt-generic fallback, and ptxas reports no spills for sm_90a. No GPU
needed; the numerics on a GPU are the row_family cases of
test/gpu/gpu_cases/row_programs.py.

At these lengths a row is split over a thread-block cluster (simt-reduce
with ``split``, dnnc/codegen/gpu/reduce/rowsplit.py) whose blocks hold it in
registers, 32 elements of the row's inputs a thread, where that fits 8
blocks (the softmax family and the norms forward; the softmax backwards at
65536); otherwise a block of 1024 threads loops over its row (8 to 64
16-byte vectors a thread). Either way a thread of a 1024-thread block has
at most 64 registers (ptxas's limit) for its values, partials, addresses
and loop state.
"""

import pytest

import dnnc
import dnnc.graph_mlir
from dnnc import compiler
from dnnc.codegen.gpu import ptxas
from dnnc.dialect.types import data_type as dt

F32, BF16 = dt.FLOAT, dt.BFLOAT16
ROWS = 4
LENGTHS = (65536, 262144)
OPS = ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward", "layernorm",
       "layernorm_backward", "rmsnorm", "rmsnorm_backward")
FAST = {"simt-reduce", "simt-reduce-columns"}

# Spills ptxas reports today, each a few words stored once before a loop
# and loaded once after it (no local-memory traffic inside the loops):
# strict, so that the case fails, and its entry goes, once they are gone.
KNOWN_SPILLS = {
    ("softmax_backward", "f32", 262144): "4 bytes at 32 registers",
    ("softmax_backward", "bf16", 262144): "8 bytes at 32 registers",
    ("layernorm_backward", "f32", 262144): "24 bytes at 64 registers",
}

needs_ptxas = pytest.mark.skipif(ptxas.find() is None, reason="no ptxas")


def row_graph(op, dtype, n, rows=ROWS):
    """``op`` over ``rows`` rows of ``n``: the norms in training (their
    statistics are outputs), the backwards with the statistics as inputs and
    every gradient wanted."""
    g = dnnc.Graph(name=op, io_data_type=dtype)
    x = g.tensor(name="x", dim=[rows, n])
    if op in ("softmax", "log_softmax"):
        outs = [getattr(g, op)(x, axis=1)]
    elif op in ("softmax_backward", "log_softmax_backward"):
        dy = g.tensor(name="dy", dim=[rows, n])
        outs = [getattr(g, op)(dy, x, axis=1)]
    else:
        scale = g.tensor(name="scale", dim=[1, n])
        if op == "layernorm":
            bias = g.tensor(name="bias", dim=[1, n])
            outs = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
        elif op == "rmsnorm":
            outs = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
        else:
            dy = g.tensor(name="dy", dim=[rows, n])
            stats = [g.tensor(name=name, dim=[rows, 1], data_type=F32)
                     for name in (("mean", "inv_variance") if op == "layernorm_backward"
                                  else ("inv_rms",))]
            outs = getattr(g, op)(dy, x, scale, *stats, axis=1, has_bias=True)
    for t in outs:
        if t is not None:
            t.set_output(True)
    return g


def _params():
    for op in OPS:
        for dtype in (F32, BF16):
            for n in LENGTHS:
                known = KNOWN_SPILLS.get((op, dtype.mlir, n))
                marks = [pytest.mark.xfail(strict=True, reason=f"spills {known}")] if known else []
                yield pytest.param(op, dtype, n, id=f"{op}-{dtype.mlir}-{n}", marks=marks)


@needs_ptxas
@pytest.mark.parametrize("op, dtype, n", list(_params()))
def test_long_rows_are_row_programs_without_spills(op, dtype, n):
    module = dnnc.graph_mlir.to_module(row_graph(op, dtype, n))
    package = compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_90a"),
                                      basename=op)
    strategies = {k["strategy"] for k in package.kernels}
    assert strategies <= FAST, [(k["strategy"], k["reason"]) for k in package.kernels]
    assert "simt-reduce" in strategies
    for entry, r in ptxas.assemble(package.ptx, "sm_90a").items():
        assert r.spill_stores == 0 and r.spill_loads == 0, (entry, r)


SPLIT_OPS = ("softmax", "log_softmax", "layernorm", "rmsnorm")


@needs_ptxas
@pytest.mark.parametrize("op", SPLIT_OPS)
@pytest.mark.parametrize("dtype", (F32, BF16), ids=lambda d: d.mlir)
@pytest.mark.parametrize("n", (131072, 262144))
def test_forward_rows_split_over_clusters(op, dtype, n):
    """The forward row kernels of 131072 and 262144 run in clusters of 2 to
    8 blocks (the kernel's PTX fixes the shape, the manifest says it), and
    fit the registers that let every block of the grid be resident. (Rows
    of 65536 loop in one block: faster there, see reduction.MIN_SPLIT_ROW.)"""
    module = dnnc.graph_mlir.to_module(row_graph(op, dtype, n))
    package = compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_90a"),
                                      basename=op)
    [kernel] = [k for k in package.kernels if k["strategy"] == "simt-reduce"]
    split = kernel["config"]["split"]
    assert 2 <= split <= 8 and kernel["cluster"] == [split, 1, 1]
    assert kernel["grid"] == [ROWS * split, 1, 1]
    assert f".reqnctapercluster {split}, 1, 1" in package.ptx
    threads = kernel["block"][0]
    r = ptxas.assemble(package.ptx, "sm_90a")[kernel["entry"]]
    assert r.spill_stores == 0 and r.spill_loads == 0, r
    assert r.registers * threads <= 65536, (r, threads)
