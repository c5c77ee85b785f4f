"""Reductions over middle axes without a GPU: column programs over
``[O, R, N]`` (dnnc/codegen/gpu/reduce/colwise.py, the outer index as grid
z) and reductions over separated axes ending at the innermost, split by
dnn-split-reductions into a row program and a column program.

* Numerics: the column programs' launches run on the CPU (test_colwise's
  emulation: blocks and threads as loops, barriers kept) against NumPy in
  float64, every mode, f32 / bf16 / f16, keepdims or not, one split of the
  rows and several (partials summed by the last block of each outer index's
  column of blocks), ragged column blocks, several outer and inner dims, a
  pointwise prologue and epilogue in the kernel.
* The split: the CPU back end (the same decomposition) against NumPy for
  every mode; the plan is a row program and a column program.
* The heuristics' configs for the benchmark problems, the PTX (16-byte
  loads, grid z) and ptxas's registers and spills where ptxas is found.
"""

import numpy as np
import pytest

import dnnc
from dnnc import compiler, heuristics
from dnnc.codegen.gpu import ptxas
from dnnc.dialect.types import data_type as dt
from dnnc.heuristics import Problem, TensorSpec
from refutil import typed
from test_colwise import emulate

F32, F16, BF16 = dt.FLOAT, dt.HALF, dt.BFLOAT16
COLUMNS = "simt-reduce-columns"
MODES = ("sum", "mean", "max", "min", "prod", "amax", "norm1", "norm2")
TOLERANCE = {F32: 1e-4, F16: 2e-3, BF16: 1.6e-2}  # one rounding of the output, at most
PTXAS = ptxas.find()


def rounded(x, dtype):
    """``x`` as the graph's input type holds it, in float64."""
    import ml_dtypes

    kind = {F32: np.float32, F16: np.float16, BF16: ml_dtypes.bfloat16}[dtype]
    return np.asarray(x, np.float32).astype(kind).astype(np.float64)


def numpy_reduction(x, mode, axes, keepdims):
    """An independent float64 reference of dnn.reduction."""
    axes = tuple(axes)
    if mode == "amax":
        return np.abs(x).max(axis=axes, keepdims=keepdims)
    if mode == "norm1":
        return np.abs(x).sum(axis=axes, keepdims=keepdims)
    if mode == "norm2":
        return np.sqrt((x * x).sum(axis=axes, keepdims=keepdims))
    return getattr(np, mode)(x, axis=axes, keepdims=keepdims)


def reductions_graph(dtype, dims, axes, modes, keepdims):
    g = dnnc.Graph(io_data_type=dtype)
    x = g.tensor(name="x", dim=dims)
    for mode in modes:
        g.reduction(x, mode, axes, keepdims=keepdims).set_name(mode).set_output(True)
    return g


def draw(dims, modes, seed=3):
    x = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return 1 + x / 100 if "prod" in modes else x


def check(got, x64, modes, axes, keepdims, dtype):
    for mode in modes:
        ref = numpy_reduction(x64, mode, axes, keepdims)
        v = np.asarray(got[mode], np.float64)
        assert v.shape == ref.shape, (mode, v.shape, ref.shape)
        tol = TOLERANCE[dtype] * np.maximum(1.0, np.abs(ref))
        assert np.all(np.abs(v - ref) <= tol), (mode, np.abs(v - ref).max())


# ----------------------------------------------------------------------------
# Column programs over [O, R, N]


@pytest.mark.parametrize("dtype, dims, axes, modes, keepdims, config, split", [
    # Sum over H of [B, H, S, D] (the benchmark's, small): one split.
    (BF16, [3, 6, 10, 16], [1], MODES, True, "", False),
    (F32, [3, 6, 10, 16], [1], MODES, False, "", False),
    # The rows split over blocks: partials per outer index, the last block
    # of each (outer, column block) summing them; 37 rows = 24 + 13 (a
    # guarded step in the last block); 84 columns of 4 over 4-thread rows.
    (F32, [3, 37, 7, 12], [1], ("sum", "max", "mean", "norm2"), True,
     "*=block:4x8,tile:24,unroll:2", True),
    # Several outer and reduced dims.
    (F16, [2, 3, 5, 9, 8], [2, 3], ("sum", "min", "amax"), False,
     "*=block:8x4,tile:16,unroll:3", True),
    # Mean over axis 1 of [64, 512, 1024] (the benchmark's, small).
    (F32, [4, 130, 64], [1], ("mean", "prod", "norm1"), True, "", False),
    (BF16, [4, 130, 64], [1], ("mean", "sum"), False, "*=block:8x8,tile:32,unroll:2", True),
])
def test_middle_column_programs_match_numpy(dtype, dims, axes, modes, keepdims, config,
                                            split):
    g = reductions_graph(dtype, dims, axes, modes, keepdims)
    x = draw(dims, modes)
    run, strategies = emulate(g, config)
    assert set(strategies.values()) == {COLUMNS}, strategies
    check(run(x=typed(x, dtype)), rounded(x, dtype), modes, axes, keepdims, dtype)
    package = compiler.compile_cuda(g, "sm_90a", cache=False, config=config)
    outers = int(np.prod(dims[:axes[0]]))
    for k in package.kernels:
        assert k["strategy"] == COLUMNS and k["grid"][2] == outers, k
    assert (package.manifest["workspace_bytes"] > 0) == split


def test_prologue_and_epilogue_join_the_middle_column_program():
    # sqrt(mean(x * x, axes=[1]) + 1), bf16: the square, the scale and the
    # root in the one kernel that reads x.
    dims = [3, 20, 5, 8]
    g = dnnc.Graph(io_data_type=BF16)
    x = g.tensor(name="x", dim=dims)
    sq = g.mul(x, x)
    ms = g.reduction(sq, "mean", [1])
    g.sqrt(g.add(ms, g.tensor(name="one", dim=[1, 1, 1, 1]))).set_name("y").set_output(True)
    xv = draw(dims, ())
    one = np.ones([1, 1, 1, 1], np.float32)
    run, strategies = emulate(g, "*=block:8x4,tile:8,unroll:2")
    assert list(strategies.values()) == [COLUMNS], strategies
    got = np.asarray(run(x=typed(xv, BF16), one=typed(one, BF16))["y"], np.float64)
    x64 = rounded(xv, BF16)
    ref = np.sqrt(rounded(x64 * x64, BF16).mean(axis=1, keepdims=True) + 1)
    assert np.all(np.abs(got - ref) <= 1.6e-2 * np.maximum(1, np.abs(ref)))


# ----------------------------------------------------------------------------
# Separated axes: a row program, then a column program


def kernels(g, config=""):
    package = compiler.compile_cuda(g, "sm_90a", cache=False, config=config)
    return [(k["strategy"], k["grid"]) for k in package.kernels]


@pytest.mark.parametrize("dtype, dims, axes, keepdims", [
    (F32, [4, 6, 5, 7], [0, 2, 3], True),     # NCHW batchnorm statistics
    (BF16, [4, 6, 5, 7], [0, 2, 3], False),
    (F16, [3, 4, 2, 16], [0, 3], True),       # separated axes, one kept between
    (F32, [2, 3, 4, 5, 6], [0, 1, 3, 4], False),
])
def test_separated_axes_match_numpy(dtype, dims, axes, keepdims):
    g = reductions_graph(dtype, dims, axes, MODES, keepdims)
    x = draw(dims, MODES)
    check(g.compile(target="cpu")(x=typed(x, dtype)), rounded(x, dtype), MODES, axes, keepdims,
          dtype)


def test_nchw_statistics_are_a_row_program_then_a_column_program():
    g = reductions_graph(F32, [32, 64, 56, 56], [0, 2, 3], ("sum",), True)
    assert kernels(g) == [("simt-reduce", [2048, 1, 1]), (COLUMNS, [1, 1, 1])]
    # bf16 [128, 256, 14, 14]: a warp per plane of 196 (one row program
    # for both modes: they read the same rows), then [128, 256] columns.
    g = reductions_graph(BF16, [128, 256, 14, 14], [0, 2, 3], ("sum", "max"), False)
    strategies = [s for s, _ in kernels(g)]
    assert strategies == ["simt-reduce", COLUMNS, COLUMNS], strategies


def test_sum_of_squares_prologue_joins_the_row_program():
    # The statistics of a batchnorm by hand: mean and mean of squares.
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[8, 16, 6, 6])
    g.reduction(x, "mean", [0, 2, 3]).set_name("mean").set_output(True)
    g.reduction(g.mul(x, x), "mean", [0, 2, 3]).set_name("square").set_output(True)
    assert "simt-generic" not in [s for s, _ in kernels(g)]
    xv = draw([8, 16, 6, 6], ())
    got = g.compile(target="cpu")(x=xv)
    x64 = xv.astype(np.float64)
    np.testing.assert_allclose(got["mean"], x64.mean((0, 2, 3), keepdims=True), atol=1e-5)
    np.testing.assert_allclose(got["square"], (x64 * x64).mean((0, 2, 3), keepdims=True),
                               rtol=1e-5)


# ----------------------------------------------------------------------------
# Configs, PTX


def problem(dims, axes, dtype, keepdims=True):
    spec = TensorSpec(tuple(dims), dtype)
    kept = [1 if d in axes else n for d, n in enumerate(dims)] if keepdims else \
        [n for d, n in enumerate(dims) if d not in axes]
    out = TensorSpec(tuple(kept), dtype)
    return Problem(kernel="k", anchor="reduction", inputs=(spec,), outputs=(out,),
                   anchor_inputs=(spec,), anchor_outputs=(out,),
                   anchor_attrs=(("axes", tuple(axes)),))


def test_configs_of_the_benchmark_problems():
    # Sum over H of [8, 16, 1024, 64] bf16: 8 x 8192 vectors of 8 over
    # 32-thread rows, 16 rows each: no split (2048 blocks fill the GPU).
    c = heuristics.choose(problem([8, 16, 1024, 64], [1], "bf16"))
    assert (c.strategy, c.block, c.vector, c.tile) == (COLUMNS, (32, 8, 1), 8, (16,))
    assert c.reason.startswith("reduction: 8 x 65536 columns of 16: 2048x1 blocks")
    # Mean over axis 1 of [64, 512, 1024] f32: 64 x 8 block columns.
    c = heuristics.choose(problem([64, 512, 1024], [1], "f32"))
    assert (c.strategy, c.block, c.vector, c.unroll, c.tile) == \
        (COLUMNS, (32, 8, 1), 4, 8, (512,))
    # Few outer indices and columns, many rows: split over blocks, with
    # fewer rows in flight so that the 2 x 128 blocks outnumber the SMs.
    c = heuristics.choose(problem([2, 8192, 64], [1], "bf16"))
    assert (c.strategy, c.block, c.unroll, c.tile) == (COLUMNS, (8, 32, 1), 2, (64,)), c
    # Separated axes are not a column problem (dnn-split-reductions splits them).
    assert heuristics.choose(problem([4, 6, 5, 7], [0, 2], "f32")).strategy == "simt-generic"


def test_the_middle_sum_plan_and_ptx():
    g = reductions_graph(BF16, [8, 16, 1024, 64], [1], ("sum",), True)
    package = compiler.compile_cuda(g, "sm_90a", cache=False)
    (k,) = package.kernels
    assert (k["strategy"], k["grid"], k["block"]) == (COLUMNS, [256, 1, 8], [32, 8, 1])
    entry = package.ptx[package.ptx.index(f".entry {k['entry']}("):]
    entry = entry[:entry.index("\n}\n")]
    assert "ld.global.v4.b32" in entry and "%ctaid.z" in entry
    assert "atom." not in entry  # one split: no partials, no arrival count
    if PTXAS is None:
        return
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for info in resources.values():
        assert info.spill_stores == 0 and info.spill_loads == 0
        assert info.registers <= 128
