"""The heuristics (dnnc/heuristics) and the configured stage (dnn-configure).

* Rules per family on hand-made Problems: the block size follows the
  parallelism, every config is a strategy the code generator implements,
  every reason names the faster strategy that is not implemented yet.
* Determinism, the Config <-> dnn.config round trip, overrides (and their
  errors).
* End to end (no GPU): the config is in the configured IR, the manifest
  records strategy and reason, ``dnnc inspect`` prints them, and an
  overridden block size changes the launch and the PTX's ``.maxntid``.
"""

import re

import pytest

import dnnc
from dnnc import artifact, compiler, graph_mlir, heuristics, pipelines
from dnnc.codegen.gpu import irutil, ptx
from dnnc.dialect.types import data_type as dt
from dnnc.errors import PipelineError, UnsupportedError
from dnnc.heuristics import Config, Problem, TensorSpec, choose, rank
from dnnc.heuristics import override as override_mod
from dnnc.parsing import parse

F32 = dt.FLOAT


def spec(shape, dtype="f32"):
    return TensorSpec(tuple(shape), dtype)


def problem(anchor, ins, outs, *, ops=None, arch="sm_90a", attrs=(), anchor_ins=None,
            anchor_outs=None, kernel="k"):
    """A Problem whose anchor reads ``ins`` and makes ``outs`` (shapes, or
    (shape, dtype) pairs)."""
    def specs(items):
        return tuple(spec(*i) if isinstance(i[0], (list, tuple)) else spec(i) for i in items)

    ins, outs = specs(ins), specs(outs)
    return Problem(kernel=kernel, anchor=anchor, ops=tuple(ops or (anchor,)), inputs=ins,
                   outputs=outs, arch=arch,
                   anchor_inputs=specs(anchor_ins) if anchor_ins else ins,
                   anchor_outputs=specs(anchor_outs) if anchor_outs else outs,
                   anchor_attrs=tuple(sorted(attrs)))


def blocks(configs):
    return [c.block[0] for c in configs]


# ----------------------------------------------------------------------------
# Rules per family


def test_pointwise_chains_get_vectors():
    small = problem("pointwise", [[4, 8]], [[4, 8]], ops=["relu"])
    c = choose(small)
    assert (c.strategy, c.vector, c.unroll, c.block) == ("simt-pointwise", 4, 1, (128, 1, 1))
    assert c.reason == "1 pointwise op over 32 elements: vectors of 4 (16 bytes), 1 per " \
                       "thread, block 128"
    medium = problem("pointwise", [[1024, 1024]], [[1024, 1024]], ops=["add", "relu"])
    assert choose(medium).block == (256, 1, 1) and choose(medium).unroll == 1
    # Many waves of vectors: two per thread, four (in smaller blocks) when the
    # chain's math is long.
    cheap = problem("pointwise", [([16384, 8192], "bf16")], [([16384, 8192], "bf16")],
                    ops=["relu"])
    assert (choose(cheap).vector, choose(cheap).unroll, choose(cheap).block) == (8, 2, (256, 1, 1))
    heavy = problem("pointwise", [([16384, 8192], "bf16")], [([16384, 8192], "bf16")],
                    ops=["add", "gelu"])
    assert (choose(heavy).vector, choose(heavy).unroll, choose(heavy).block) == (8, 4, (128, 1, 1))
    # The widest element sets the vector; every innermost dim must divide by it.
    mixed = problem("pointwise", [([64, 24], "bf16"), [1, 24]], [([64, 24], "bf16")],
                    ops=["add"])
    assert choose(mixed).vector == 4
    assert choose(problem("pointwise", [[64, 6]], [[64, 6]], ops=["exp"])).vector == 2
    # Broadcast along the innermost dim (size 1) does not limit it.
    column = problem("pointwise", [[64, 32], [64, 1]], [[64, 32]], ops=["mul"])
    assert choose(column).vector == 4


def test_pointwise_without_a_vector_is_simt_generic():
    odd = problem("pointwise", [[1024, 1023]], [[1024, 1023]], ops=["add", "relu"])
    configs = rank(odd)
    assert {c.strategy for c in configs} == {"simt-generic"}
    assert blocks(configs) == [256, 128, 512]
    assert configs[0].reason.startswith(
        "simt-pointwise needs a vector dim that is a multiple of 2 elements at least, "
        "got 1023 (2 pointwise ops over 1047552 elements); block 256")
    scalar = problem("pointwise", [([], "f32")], [([], "f32")], ops=["exp"])
    assert choose(scalar).strategy == "simt-generic"


def test_smaller_gpus_need_fewer_points_for_256():
    # 65536 threads: fewer than two 256-blocks per SM on 132 SMs, not on 108.
    p = dict(anchor="pointwise", ins=[[256, 255]], outs=[[256, 255]], ops=["relu"])
    assert choose(problem(**p, arch="sm_90a")).block == (128, 1, 1)
    assert choose(problem(**p, arch="sm_80")).block == (256, 1, 1)


def test_reductions_rank_by_rows_and_name_simt_reduce():
    # Long rows: a block per row, about four vectors per thread.
    few = problem("softmax", [[8, 1024]], [[8, 1024]], attrs=[("axis", 1)])
    c = choose(few)
    assert (c.strategy, c.block, c.vector, c.tile) == ("simt-reduce", (64, 1, 1), 4, ())
    assert c.reason == "softmax: 8 rows of 1024: a block of 64 per row, vectors of 4, " \
                       "4 per thread"
    # A norm's rows of up to 512 vectors: about two.
    mid = problem("rmsnorm", [([2048, 4096], "bf16")], [([2048, 4096], "bf16")],
                  attrs=[("axis", 1)])
    assert (choose(mid).block, choose(mid).vector) == ((256, 1, 1), 8)
    assert choose(mid).reason.endswith("2 per thread")
    stats = problem("reduction", [([2048, 4096], "bf16")], [([2048, 1], "f32")],
                    attrs=[("axes", (1,))])
    assert choose(stats).block == (128, 1, 1)
    # Longer rows: about four.
    bf16 = problem("layernorm", [([16384, 8192], "bf16")], [([16384, 8192], "bf16")],
                   attrs=[("axis", 1)])
    assert (choose(bf16).block, choose(bf16).vector) == ((256, 1, 1), 8)
    assert choose(bf16).reason.endswith("4 per thread")
    # A row of several dims keeps about four.
    dims = problem("rmsnorm", [([2048, 64, 64], "bf16")], [([2048, 64, 64], "bf16")],
                   attrs=[("axis", 1)])
    assert (choose(dims).block, choose(dims).vector) == ((128, 1, 1), 8)
    # Short rows: a warp each, four to a block; a norm's eight where the
    # rows are one wave of warps (64 an SM).
    many = problem("softmax", [[262144, 64]], [[262144, 64]], attrs=[("axis", 1)])
    assert (choose(many).block, choose(many).tile) == ((128, 1, 1), (4,))
    wave = problem("rmsnorm", [([2048, 768, 1, 1], "bf16")], [([2048, 768, 1, 1], "bf16")],
                   attrs=[("axis", 1)])
    assert (choose(wave).block, choose(wave).tile) == ((256, 1, 1), (8,))
    assert "a warp per row, 8 rows per block" in choose(wave).reason
    # Every axis but the innermost: simt-reduce-columns (test_colwise.py).
    columns = problem("reduction", [[1 << 20, 4]], [[1, 4]], attrs=[("axes", (0,))])
    assert choose(columns).strategy == "simt-reduce-columns"
    assert choose(columns).reason.startswith("reduction: 4 columns of 1048576: 1x256 blocks "
                                             "of 1x256")
    # Middle axes: a column program per outer index (test_middle_reductions.py).
    middle = problem("reduction", [[64, 32, 4]], [[64, 1, 4]], attrs=[("axes", (1,))])
    assert choose(middle).strategy == "simt-reduce-columns"
    assert choose(middle).reason.startswith("reduction: 64 x 4 columns of 32: 64x1 blocks")
    # Any other axes (separated ones reach the kernels split by
    # dnn-split-reductions), or simt-generic: one thread per row, never a
    # big block first (each thread loops over its row).
    apart = problem("reduction", [[64, 32, 4]], [[1, 32, 1]], attrs=[("axes", (0, 2))])
    assert choose(apart).strategy == "simt-generic"
    assert choose(apart).reason.startswith("simt-reduce not implemented yet (reduction: 32 "
                                           "rows of 256)")
    inner = problem("softmax", [[4, 64, 8]], [[4, 64, 8]], attrs=[("axis", 1)])
    assert choose(inner).strategy == "simt-generic"
    huge = problem("reduction", [[1 << 26, 4], ], [[1 << 26, 1]], attrs=[("axes", (1,))])
    assert choose(huge).strategy == "simt-reduce"
    assert "reduction: 67108864 rows of 4: a warp per row" in choose(huge).reason


@pytest.mark.parametrize("anchor, dtype, n, inputs, block, split, staged", [
    # Held by one block (at most 32 elements a thread): no split.
    ("softmax", "bf16", 16384, 1, 512, 1, 0),
    ("softmax", "f32", 16384, 1, 1024, 1, 0),
    # Too long to hold and no multiple of the staged parts' vectors: a
    # looping block of 1024.
    ("softmax", "bf16", 40000, 1, 1024, 1, 0),
    # From 32768: staged in shared memory, up to 64 KB of the streamed inputs
    # a block of 256, the fewest blocks that hold the row...
    ("softmax", "bf16", 32768, 1, 256, 2, 1),
    ("softmax", "f32", 32768, 1, 256, 2, 1),
    ("softmax", "bf16", 65536, 1, 256, 2, 1),
    ("softmax", "f32", 65536, 1, 256, 4, 1),
    ("softmax", "bf16", 131072, 1, 256, 4, 1),
    ("softmax", "f32", 131072, 1, 256, 8, 1),
    ("rmsnorm", "bf16", 131072, 1, 256, 4, 1),
    ("softmax", "bf16", 262144, 1, 256, 8, 1),
    ("softmax_backward", "bf16", 131072, 2, 256, 8, 1),
    # ... else split in registers: blocks of 1024 where 8 of 512 do not hold
    # the row (140000 is no multiple of 8 x 256 vectors of 8; 8 parts of
    # an f32 262144 are 128 KB) ...
    ("softmax", "bf16", 140000, 1, 1024, 8, 0),   # ragged: 3 vectors of 8 a thread
    ("log_softmax", "f32", 262144, 1, 1024, 8, 0),
    # ... or, 16 elements of each of two inputs (dy and y) a thread and
    # never 1024 threads, looped.
    ("softmax_backward", "bf16", 262144, 2, 1024, 1, 0),
])
def test_long_rows_split_over_a_cluster(anchor, dtype, n, inputs, block, split, staged):
    x = ([2, n], dtype)
    p = problem(anchor, [x] * inputs, [x], attrs=[("axis", 1)], anchor_ins=[x])
    c = choose(p)
    assert (c.strategy, c.block[0], c.split, c.staged) == ("simt-reduce", block, split,
                                                           staged), c.reason
    if split > 1:
        assert f"a cluster of {split} blocks of {block} per row" in c.reason
        width = c.vector
        if staged:
            part = n // split * inputs * (2 if dtype == "bf16" else 4)
            assert part <= 64 * 1024 and n % (split * block * width) == 0
            assert f"copying its {part} bytes of the row into shared memory" in c.reason
        else:
            assert -(-n // (width * block * split)) * width * inputs <= 32
        # Clusters are sm_90's: an sm_80 row loops, as before.
        assert choose(problem(anchor, [x] * inputs, [x], attrs=[("axis", 1)],
                              anchor_ins=[x], arch="sm_80")).split == 1


@pytest.mark.parametrize("anchor, params, n, unroll", [
    # A staged pass takes up to 16 vectors an iteration, and the output
    # pass's loads of a scale or bias stay at 16 a thread: softmax 16 (the
    # thread's whole part of 16 vectors), rmsnorm (a scale) 16, layernorm (a
    # scale and a bias) 8. A layernorm with a scale alone stays at 8 (its
    # registers at 16 leave an SM two blocks); without either it takes 16.
    ("softmax", 0, 262144, 16),
    ("rmsnorm", 1, 262144, 16),
    ("layernorm", 2, 262144, 8),
    ("layernorm", 2, 65536, 8),
    ("layernorm", 1, 131072, 8),
    ("layernorm", 0, 131072, 16),
    # 32768 in 2 parts of 32 KB: more blocks than three an SM, as many as
    # their registers allow: 4 vectors an iteration.
    ("softmax", 0, 32768, 4),
    ("layernorm", 2, 32768, 4),
])
def test_staged_passes_unroll_within_the_loads_in_flight(anchor, params, n, unroll):
    x = ([2, n], "bf16")
    p = problem(anchor, [x] + [([1, n], "bf16")] * params, [x], attrs=[("axis", 1)],
                anchor_ins=[x])
    c = choose(p)
    assert (c.staged, c.unroll) == (1, unroll), c.reason
    assert f"vectors of 8, {unroll} an iteration" in c.reason


def test_rows_of_several_trailing_dims():
    # groupnorm's rows: (sample, group) x (channels, positions), reduced over
    # both. A vector lies inside a channel's positions (100: vectors of 4,
    # not 8), and a row of several dims is never split over a cluster.
    x = ([8, 32, 10, 100], "bf16")
    c = choose(problem("reduction", [x], [([8, 32, 1, 1], "f32")], attrs=[("axes", (2, 3))]))
    assert (c.strategy, c.vector, c.split) == ("simt-reduce", 4, 1), c.reason
    assert "256 rows of 1000" in c.reason
    long = ([2, 4, 8, 32768], "bf16")
    c = choose(problem("reduction", [long], [([2, 4, 1, 1], "f32")], attrs=[("axes", (2, 3))]))
    assert (c.strategy, c.block[0], c.split) == ("simt-reduce", 1024, 1), c.reason
    # Not trailing: the first axis, or a gap, is no row.
    for axes in ((1, 3), (0, 1, 2, 3)):
        c = choose(problem("reduction", [x], [([8, 1, 10, 1], "f32")], attrs=[("axes", axes)]))
        assert c.strategy != "simt-reduce", axes


def test_split_limits_match_the_row_programs():
    from dnnc.codegen.gpu.reduce import rowsplit, rowwise
    from dnnc.heuristics import reduction

    assert reduction.HELD_ELEMENTS == rowwise.REGISTER_ELEMENTS
    assert reduction.MAX_ROW_SPLIT == rowsplit.MAX_CLUSTER
    assert reduction.STAGE_BYTES == rowsplit.MAX_STAGE_BYTES


@pytest.mark.parametrize("anchor, attrs, x, rows, extent", [
    ("layernorm", [("axis", 1)], [7, 64], 7, 64),
    ("rmsnorm", [("axis", 2)], [2, 6, 5], 12, 5),
    ("batchnorm", [], [2, 6, 3, 5], 6, 30),
    ("groupnorm", [("groups", 3)], [2, 6, 3, 5], 6, 30),
    ("instancenorm", [], [2, 6, 3, 5], 12, 15),
    ("log_softmax", [("axis", 0)], [13, 7], 7, 13),
])
def test_norm_rows_and_extent(anchor, attrs, x, rows, extent):
    from dnnc.heuristics import reduction

    p = problem(anchor, [x], [x], attrs=attrs)
    assert reduction.rows_and_extent(p) == (rows, extent)
    assert f"{anchor}: {rows} rows of {extent}" in choose(p).reason


def test_pooling_backward_gathers_dx_on_simt_window():
    # 2 x 2 / 2: one window covers each input row; 8 bf16 channels a thread.
    attrs = [("mode", "max"), ("stride", (2, 2)), ("window", (2, 2))]
    pool = problem("pooling_backward", [([2, 64, 4, 4], "bf16"), ([2, 64, 8, 8], "bf16")],
                   [([2, 64, 8, 8], "bf16")], attrs=attrs)
    best = choose(pool)
    assert (best.strategy, best.vector) == ("simt-window", 8)
    # A thread per tile of 2 x 2 pixels: 2 x 8 channel groups x 4 x 4 tiles.
    assert "pooling_backward: 8192 dx elements gathered, 4 taps a thread; a thread per " \
        "tile of 2x2 pixels and 8 channels where C is contiguous (256 threads)" in best.reason
    # 5 x 5 / 1 max: 25 covering windows of 25 taps a thread, too many.
    attrs = [("mode", "max"), ("stride", (1, 1)), ("window", (5, 5))]
    pool = problem("pooling_backward", [[2, 3, 8, 8], [2, 3, 8, 8]], [[2, 3, 8, 8]],
                   attrs=attrs)
    assert "simt-reduce not implemented yet (pooling_backward: 384 windows of 25)" in \
        choose(pool).reason


@pytest.mark.parametrize("dtype, channels, vector", [
    ("bf16", 64, 8), ("f16", 7, 1), ("f32", 64, 4), ("bf16", 12, 4), ("f32", 6, 2),
])
def test_pooling_forward_is_a_window_program(dtype, channels, vector):
    # 16 bytes of channels per thread, halved until they divide C.
    x, y = [32, channels, 112, 112], [32, channels, 56, 56]
    pool = problem("pooling", [(x, dtype)], [(y, dtype)], attrs=[("window", (3, 3))])
    best = choose(pool)
    assert (best.strategy, best.vector, best.block) == ("simt-window", vector, (256, 1, 1))
    assert f"pooling: {32 * channels * 56 * 56} outputs of 9 taps" in best.reason
    assert [c.strategy for c in rank(pool)][-1] == "simt-generic"


def test_pooling_forward_tiles():
    # 3x3 / 2 overlaps along H and W: 2 x 2 outputs a thread load 25 pixels.
    attrs = [("mode", "max"), ("stride", (2, 2)), ("window", (3, 3))]
    pool = problem("pooling", [([32, 64, 112, 112], "bf16")], [([32, 64, 56, 56], "bf16")],
                   attrs=attrs)
    configs = rank(pool)
    assert (configs[0].tile, configs[0].block) == ((2, 2), (256, 1, 1))
    assert "a thread per 2x2 pixels and 8 channels (200704 threads)" in configs[0].reason
    assert "overlapping windows: 25 loads for 2x2 outputs, not 36" in configs[0].reason
    # The tuner's other tiles: one output a thread and 4 x 2.
    assert [c.tile for c in configs if c.strategy == "simt-window"] == \
        [(2, 2)] * 3 + [(), (4, 2)]
    # 2x2 / 2 does not overlap: 2 along H where a thread an output would make
    # more than a wave (2048 threads x 132 SMs), else one.
    attrs = [("mode", "avg"), ("stride", (2, 2)), ("window", (2, 2))]
    big = problem("pooling", [([32, 128, 56, 56], "bf16")], [([32, 128, 28, 28], "bf16")],
                  attrs=attrs)
    assert choose(big).tile == (2, 1)
    assert "401408 threads at one output a thread are more than a wave" in choose(big).reason
    small = problem("pooling", [([8, 128, 56, 56], "bf16")], [([8, 128, 28, 28], "bf16")],
                    attrs=attrs)
    assert choose(small).tile == ()
    # A 5x5 / 1 tile of 2 x 2 would load 36 pixels: 2 along W alone (30).
    attrs = [("mode", "max"), ("stride", (1, 1)), ("window", (5, 5))]
    wide = problem("pooling", [[8, 64, 32, 32]], [[8, 64, 28, 28]], attrs=attrs)
    assert choose(wide).tile == (1, 2)
    # A backward's tile is its stride's, not a config field.
    attrs = [("mode", "max"), ("stride", (2, 2)), ("window", (3, 3))]
    back = problem("pooling_backward", [([32, 64, 56, 56], "bf16"),
                                        ([32, 64, 112, 112], "bf16")],
                   [([32, 64, 112, 112], "bf16")], attrs=attrs)
    assert all(c.tile == () for c in rank(back))


def test_a_global_pool_stays_on_simt_generic():
    pool = problem("pooling", [[8, 64, 14, 14]], [[8, 64, 1, 1]], attrs=[("window", (14, 14))])
    assert choose(pool).strategy == "simt-generic"
    # batchnorm_inference reduces nothing: a pointwise problem.
    bn = problem("batchnorm_inference", [[2, 6, 3, 8]], [[2, 6, 3, 8]])
    assert choose(bn).strategy == "simt-pointwise"


def test_contractions_name_the_tensor_core_strategy_of_the_arch():
    mm = dict(anchor="matmul", ins=[([128, 256], "bf16"), ([256, 512], "bf16")],
              outs=[[128, 512]])
    best = choose(problem(**mm))
    assert (best.strategy, best.block, best.tile, best.stages) == \
        ("tc-sm90", (384, 1, 1), (128, 64, 64), 8)
    # Too few tiles at any width, and K (4 steps of 64) too short to split.
    assert best.reason.startswith("matmul: 128x512x256 (M x N x K) bf16; 128x64 tiles, 8 of "
                                  "them for 132 SMs (too few tiles at any width: the "
                                  "narrowest); 8 stages of 24 KiB")
    assert best.split == 1
    # A long K is split over enough blocks to fill the SMs (each split at
    # least 4 steps) when the tiles leave half of them idle, with the widest
    # tile whose splits keep 32 steps (128 wide: 1024 steps in 32 splits;
    # 256 wide would split 64 ways, 16 steps each); at most 64 rows take
    # 64-row tiles and one consumer warpgroup.
    long_k = choose(problem("matmul", [([256, 65536], "bf16"), ([65536, 256], "bf16")],
                            [[256, 256]]))
    assert (long_k.tile, long_k.split, long_k.block) == ((128, 128, 64), 32, (384, 1, 1))
    assert ("128x128 tiles, 4 of them for 132 SMs, K split 32 ways (128 blocks) (too few "
            "tiles at any width: the widest whose K splits run 32 steps or more)") in long_k.reason
    # Splits of 32 steps, all 128 blocks resident: summed in pairs
    # (clusters of 2) first.
    assert long_k.cluster == 2
    assert long_k.reason.endswith("the splits summed in clusters of 2 (16 partials)")
    # 128x64 tiles split 32 ways run 8 steps a split: no clusters.
    short = choose(problem("matmul", [([128, 16384], "bf16"), ([16384, 256], "bf16")],
                           [[128, 256]]))
    assert (short.tile, short.split, short.cluster) == ((128, 64, 64), 32, 1)
    skinny = choose(problem("matmul", [([64, 4096], "bf16"), ([4096, 4096], "bf16")],
                            [[64, 4096]]))
    # 64 tiles for 132 SMs: split 2 ways (128 blocks).
    # Two splits of 32 steps: one pair, which runs the epilogue.
    assert (skinny.tile, skinny.split, skinny.block, skinny.cluster) == \
        ((64, 64, 64), 2, (256, 1, 1), 2)
    assert skinny.reason.endswith("summed in a cluster of 2, which runs the epilogue")
    assert "64x64 tiles, 64 of them for 132 SMs, K split 2 ways (128 blocks)" in skinny.reason
    # 16 tiles for 132 SMs: K split 8 ways.
    skinnier = choose(problem("matmul", [([64, 4096], "bf16"), ([4096, 1024], "bf16")],
                              [[64, 1024]]))
    # ... of 8 steps each: not paired.
    assert (skinnier.tile, skinnier.split, skinnier.cluster) == ((64, 64, 64), 8, 1)
    # Enough tiles of 128 x 256 for the SMs: the wider tile, 4 stages of 48 KiB.
    big = problem("matmul", [([4096, 4096], "f16"), ([4096, 4096], "f16")], [[4096, 4096]])
    assert (choose(big).tile, choose(big).stages) == ((128, 256, 64), 4)
    # The simt-generic configs after them stand in where tc-sm90 does not apply.
    assert rank(problem(**mm))[-1].reason.startswith(
        "for when tc-sm90 does not apply (matmul: 128x512x256")
    assert choose(problem(**mm, arch="sm_80")).strategy == "tc-sm80"
    f32 = problem("matmul", [[4, 12, 16], [16, 32]], [[4, 12, 32]])
    # An f32 multiply stays off the tensor cores (they round to tf32), saying so:
    # simt-gemm's FFMAs, simt-generic behind them; in tf32 mode it is
    # tc-sm90's, with 32-element (128-byte) K steps.
    assert choose(f32).strategy == "simt-gemm"
    assert choose(f32).reason.startswith(
        "matmul: 12x32x16 (M x N x K) x4 batch f32, an f32 "
        "multiply (the tensor cores take f32 as tf32: compute_data_type tf32; an operand "
        "computed in the graph is bf16/f16 with intermediate_data_type); FFMA")
    assert rank(problem("matmul", [[4, 12, 16], [16, 32]], [[4, 12, 32]]))[-1].reason \
        .startswith("for when simt-gemm does not apply (matmul: 12x32x16")
    # M at most 8: a GEMV on the CUDA cores first, simt-gemm next
    # (heuristics/simt_gemv.py).
    gemv = rank(problem("matmul", [[4, 8, 16], [16, 32]], [[4, 8, 32]]))
    assert [c.strategy for c in gemv[:2]] == ["simt-gemv", "simt-gemm"]
    tf32 = problem("matmul", [[4096, 4096], [4096, 4096]], [[4096, 4096]],
                   attrs=[("compute_type", "tf32")])
    assert (choose(tf32).strategy, choose(tf32).tile) == ("tc-sm90", (128, 256, 32))
    # mma.sync takes no fp8: nothing faster is planned for it on sm_80.
    fp8 = problem("matmul", [([64, 64], "f8E4M3FN"), ([64, 64], "f8E4M3FN")], [[64, 64]],
                  arch="sm_80")
    assert choose(fp8).reason.startswith("no faster strategy planned (matmul: 64x64x64")
    assert "a type no tensor-core path takes on sm_80" in choose(fp8).reason


def test_tc_sm80_ranks_tiles_by_the_blocks_they_make():
    from dnnc.heuristics import contraction

    # sm_80: enough 256 x 128 tiles for the 108 SMs: 8 warps of 64 x 64, a
    # block alone on its SM, 128-byte K steps and as many stages of 54 KiB as
    # 163 KiB holds (3); the narrower tiles follow (4-warp tiles: 64-byte K
    # steps, 96 KiB: two blocks an SM), then simt-generic.
    big = problem("matmul", [([4096, 4096], "bf16"), ([4096, 4096], "bf16")], [[4096, 4096]],
                  arch="sm_80")
    configs = rank(big)
    best = configs[0]
    assert (best.strategy, best.block, best.tile, best.stages) == \
        ("tc-sm80", (256, 1, 1), (256, 128, 64), 3)
    assert best.reason == ("matmul: 4096x4096x4096 (M x N x K) bf16; 256x128 tiles, 512 of "
                           "them for 108 SMs (the widest with a block for every SM), 8 warps "
                           "of 64x64; 3 stages of 54 KiB")
    assert [(c.tile, c.block[0], c.stages) for c in configs if c.strategy == "tc-sm80"] == [
        ((256, 128, 64), 256, 3), ((128, 256, 64), 256, 3), ((128, 128, 32), 128, 4),
        ((64, 128, 32), 128, 4), ((64, 64, 32), 128, 4)]
    assert configs[-1].strategy == "simt-generic"
    assert configs[-1].reason.startswith("for when tc-sm80 does not apply")
    # N past M: the 256 columns wide tile first.
    wide = choose(problem("matmul", [([1024, 4096], "bf16"), ([4096, 8192], "bf16")],
                          [[1024, 8192]], arch="sm_80"))
    assert (wide.tile, wide.block, wide.stages) == ((128, 256, 64), (256, 1, 1), 3)
    # Few tiles at any width: the narrowest; at most 64 rows: 64-row tiles only.
    small = choose(problem("matmul", [([256, 128], "f16"), ([128, 384], "f16")], [[256, 384]],
                           arch="sm_80"))
    assert (small.tile, small.block) == ((64, 64, 32), (128, 1, 1))
    skinny = rank(problem("matmul", [([64, 4096], "bf16"), ([4096, 4096], "bf16")],
                          [[64, 4096]], arch="sm_80"))
    assert {c.tile[0] for c in skinny if c.strategy == "tc-sm80"} == {64}
    # tf32 (an f32 matmul whose compute type is tf32): 16 elements of K a
    # step (64 bytes); plain f32 is multiplied exactly, by simt-gemm.
    tf32 = problem("matmul", [[1024, 1024], [1024, 1024]], [[1024, 1024]], arch="sm_80",
                   attrs=[("compute_type", "tf32")])
    assert (choose(tf32).strategy, choose(tf32).tile) == ("tc-sm80", (64, 128, 16))
    f32 = problem("matmul", [[1024, 1024], [1024, 1024]], [[1024, 1024]], arch="sm_80")
    assert choose(f32).strategy == "simt-gemm"
    # sm_90a: tc-sm80 configs follow tc-sm90's, before simt-generic.
    ranked = rank(problem("matmul", [([4096, 4096], "bf16"), ([4096, 4096], "bf16")],
                          [[4096, 4096]]))
    strategies = [c.strategy for c in ranked]
    first80 = strategies.index("tc-sm80")
    assert set(strategies[:first80]) == {"tc-sm90"}
    assert strategies.index("simt-generic") > first80 and strategies[-1] == "simt-generic"
    assert ranked[first80].reason.startswith("fallback for when tc-sm90 does not apply: "
                                             "matmul: ")
    # sm_90a's 227 KiB hold 4 stages of the 8-warp tile.
    fallback = contraction.tc_sm80_configs(4096, 4096, 1, "bf16", 132, "x", fallback=True)[0]
    assert (fallback.tile, fallback.stages) == ((256, 128, 64), 4)
    assert contraction.tc_sm80_configs(4096, 4096, 1, "bf16", 132, "x")[0].stages == 3


def test_tc_sm80_override():
    p = problem("matmul", [([256, 128], "bf16"), ([128, 384], "bf16")], [[256, 384]])
    c = choose(p, override="strategy:tc-sm80,tile:128x128x32,stages:4")
    assert (c.strategy, c.tile, c.stages, c.block) == ("tc-sm80", (128, 128, 32), 4, (128, 1, 1))
    wide = choose(p, override="strategy:tc-sm80,tile:128x256x32")
    assert wide.block == (256, 1, 1)
    # Split-K (sm80/splitk.py) takes a split, summed by a second launch,
    # not in clusters.
    assert choose(p, override="strategy:tc-sm80,split:2").split == 2
    with pytest.raises(PipelineError, match="strategy 'tc-sm80' has no field 'cluster'"):
        choose(p, override="strategy:tc-sm80,split:2,cluster:2")


def test_tc_sm90_tile_override_brings_its_block():
    p = problem("matmul", [([640, 512], "bf16"), ([512, 512], "bf16")], [[640, 512]])
    assert choose(p).block == (384, 1, 1)
    c = choose(p, override="tile:64x64x64,split:2")
    assert (c.tile, c.split, c.block) == ((64, 64, 64), 2, (256, 1, 1))
    assert choose(p, override="tile:128x128x64").block == (384, 1, 1)


def test_unstaging_override_drops_the_staged_unroll():
    # A staged row's vectors an iteration do not carry over to a row held in
    # registers (staged:0), unless the override sets them too.
    x = ([2, 262144], "bf16")
    p = problem("softmax", [x], [x], attrs=[("axis", 1)], anchor_ins=[x])
    assert (choose(p).staged, choose(p).unroll) == (1, 16)
    held = choose(p, override="staged:0,block:512")
    assert (held.staged, held.unroll) == (0, 1)
    assert choose(p, override="staged:0,block:512,unroll:2").unroll == 2


def test_convolution_is_an_implicit_gemm():
    from dnnc.heuristics import contraction

    conv = problem("conv_fprop", [([8, 64, 56, 56], "f16"), ([128, 64, 3, 3], "f16")],
                   [[8, 128, 56, 56]])
    assert contraction.gemm_shape(conv) == (8 * 56 * 56, 128, 64 * 9, 1)
    assert "conv_fprop: 25088x128x576 (M x N x K) f16" in choose(conv).reason
    wgrad = problem("conv_wgrad", [[8, 128, 56, 56], [8, 64, 56, 56]], [[128, 64, 3, 3]])
    assert contraction.gemm_shape(wgrad) == (128, 64 * 9, 8 * 56 * 56, 1)
    sdpa = problem("sdpa", [[1, 2, 5, 8], [1, 2, 7, 8], [1, 2, 7, 3]], [[1, 2, 5, 3]])
    assert "sdpa: 5x7x8 (S x Skv x D) x2 batch" in choose(sdpa).reason


def test_unit_convolutions_read_x_as_a_matrix():
    """tc-sm90's configs of a 1x1, unit-stride, unpadded forward convolution
    or data gradient set ``tiled`` (x, or dy, read as the [N*H*W, C]
    matrix by tiled TMA boxes: tensorcore/pixel_rows.py); padding, a
    stride, a wider filter, groups or a filter gradient keep im2col mode,
    and tc-sm80's configs never carry it."""
    x, y = [32, 1024, 14, 14], [32, 256, 14, 14]
    w = [256, 1024, 1, 1]

    def configs(anchor="conv_fprop", filter_=w, attrs=(), ins=None, out=None):
        ins = ins or [(x, "bf16"), (filter_, "bf16")]
        out = out or [(y, "bf16")]
        return [c for c in rank(problem(anchor, ins, out, attrs=attrs))
                if c.strategy != "simt-generic"]

    plain = configs()
    assert {c.tiled for c in plain if c.strategy == "tc-sm90"} == {1}, plain
    assert {c.tiled for c in plain if c.strategy == "tc-sm80"} == {0}, plain
    assert "tiled: the activation read as a matrix of pixels by channels" in plain[0].reason
    dgrad = configs("conv_dgrad", ins=[(y, "bf16"), (w, "bf16")], out=[(x, "bf16")])
    assert dgrad[0].strategy == "tc-sm90" and dgrad[0].tiled == 1, dgrad[0]
    padded = configs(attrs=[("pre_padding", [1, 1]), ("post_padding", [1, 1])],
                     out=[([32, 256, 16, 16], "bf16")])
    strided = configs(attrs=[("stride", [2, 2])], out=[([32, 256, 7, 7], "bf16")])
    wide = configs(filter_=[256, 1024, 3, 3], attrs=[("pre_padding", [1, 1]),
                                                     ("post_padding", [1, 1])])
    wgrad = configs("conv_wgrad", ins=[(y, "bf16"), (x, "bf16")], out=[(w, "bf16")])
    for other in (padded, strided, wide, wgrad):
        assert other[0].strategy == "tc-sm90" and not any(c.tiled for c in other), other[0]
    assert choose(problem("conv_fprop", [(x, "bf16"), (w, "bf16")], [(y, "bf16")]),
                  override="tiled:0").tiled == 0


def test_convolutions_on_tensor_cores():
    """Implicit GEMM: tc-sm90 on sm_90a, tc-sm80 after it (its fallback) and
    on sm_80, each tap's channels read in whole K steps; a filter
    gradient's tiles of N lie in one filter tap: of a width that divides C
    (a multiple of 64), or any where the taps are the GEMM's batch (C a
    multiple of 8), and span taps on tc-sm80 only where neither reads C
    (odd C) (dnnc/codegen/gpu/tensorcore/wgrad_taps.py)."""
    bf16 = [([8, 40, 28, 28], "bf16"), ([64, 40, 3, 3], "bf16")]
    for arch, first in (("sm_90a", "tc-sm90"), ("sm_80", "tc-sm80")):
        configs = rank(problem("conv_fprop", bf16, [([8, 64, 28, 28], "bf16")], arch=arch))
        strategies = [c.strategy for c in configs]
        assert strategies[0] == first and "tc-sm80" in strategies, strategies
        assert strategies[-1] == "simt-generic", strategies
        sm80 = [c for c in configs if c.strategy == "tc-sm80"]
        # 40 channels a tap take 64 of K in steps of 32 or of 64.
        assert all(f"K 576 (9 taps x 40 channels in steps of {c.tile[2]})" in c.reason
                   for c in sm80), [c.reason for c in sm80]
    for channels, widths in ((192, {64}), (96, {64, 128})):
        wgrad = rank(problem("conv_wgrad", [([8, 64, 28, 28], "bf16"),
                                            ([8, channels, 28, 28], "bf16")],
                             [([64, channels, 3, 3], "bf16")], arch="sm_80"))
        assert {c.tile[1] for c in wgrad if c.strategy == "tc-sm80"} == widths, wgrad
    # C = 63: rows of 126 bytes, which neither layout above reads (tc-sm90's
    # TMA cannot step them): tc-sm80 only, on sm_90a as tc-sm90's fallback,
    # any tile, its columns spanning taps.
    for arch in ("sm_80", "sm_90a"):
        wgrad = rank(problem("conv_wgrad", [([8, 64, 28, 28], "bf16"),
                                            ([8, 63, 28, 28], "bf16")],
                             [([64, 63, 3, 3], "bf16")], arch=arch))
        sm80 = [c for c in wgrad if c.strategy == "tc-sm80"]
        assert sm80 and wgrad[0].strategy == "tc-sm80", wgrad
        assert "tc-sm90" not in {c.strategy for c in wgrad}, wgrad
        assert all("columns span filter taps" in c.reason for c in sm80), sm80


def test_tensor_and_unknown_anchors():
    # A copy by 16-byte vectors where the innermost dims allow them, else
    # one thread per element.
    t = choose(problem("tensor", [[2, 3, 4]], [[6, 4]], ops=["reshape"]))
    assert (t.strategy, t.vector) == ("simt-pointwise", 4)
    assert t.reason == "copy by reshape: 24 elements: vectors of 4 (16 bytes), 1 per thread, " \
                       "block 128"
    # A chain of concats in one kernel says how many inputs it copies.
    chain = choose(problem("concat", [[4, 8]] * 4, [[4, 32]], ops=["concat"] * 3))
    assert chain.reason.startswith("copy by a concat of 4 inputs: 128 elements: vectors"), \
        chain.reason
    odd = choose(problem("tensor", [[2, 3, 5]], [[6, 5]], ops=["reshape"]))
    assert odd.strategy == "simt-generic"
    assert odd.reason.startswith("no faster strategy planned (copy by reshape: 30")
    # A transpose that moves the innermost dim: tiles through shared memory,
    # simt-generic behind it.
    moved = rank(problem("tensor", [([64, 96], "bf16")], [([96, 64], "bf16")],
                         ops=["transpose"], attrs={"permutation": (1, 0)}.items()))
    assert [(c.strategy, c.threads) for c in moved[:2]] == [("simt-transpose", 256),
                                                           ("simt-generic", 128)]
    assert moved[0].reason == ("copy by transpose: 6144 elements: the transpose [1, 0] moves "
                               "the innermost dim, so its tiles go through shared memory; "
                               "block 256")
    assert moved[1].reason.startswith("for when simt-transpose does not apply"), moved[1].reason
    # With the unary epilogue dnn-fuse joins (a cast) too; not with a second
    # input, nor after another data movement.
    cast = choose(problem("tensor", [([64, 96], "f32")], [([96, 64], "bf16")],
                          ops=["transpose", "cast"], attrs={"permutation": (1, 0)}.items()))
    assert cast.strategy == "simt-transpose"
    assert cast.reason.startswith("copy by transpose, cast: 6144 elements: the transpose"), \
        cast.reason
    for inputs, ops in [([([64, 96], "f32"), ([96, 64], "f32")], ["transpose", "add"]),
                        ([([64, 96], "f32")], ["transpose", "reshape"])]:
        c = choose(problem("tensor", inputs, [([96, 64], "f32")], ops=ops,
                           attrs={"permutation": (1, 0)}.items()))
        assert c.strategy != "simt-transpose", (ops, c)
    # What the anchor's attributes say: a slice that starts inside a vector
    # or steps along it.
    for op, attrs, why in [
            ("slice", {"start": (0, 3), "step": (1, 1)},
             "a slice that starts at 3, inside a vector of 8"),
            ("slice", {"start": (0, 8), "step": (1, 2)},
             "a slice with step 2 along the innermost dim")]:
        c = choose(problem("tensor", [([64, 64], "bf16")], [([64, 64], "bf16")], ops=[op],
                           attrs=attrs.items()))
        assert c.strategy == "simt-generic", c
        assert c.reason.startswith(f"simt-pointwise does not apply ({why}; copy by {op}"), c.reason
    kept = problem("tensor", [([64, 64], "bf16")], [([64, 64], "bf16")], ops=["transpose"],
                   attrs={"permutation": (0, 1)}.items())
    assert choose(kept).strategy == "simt-pointwise"
    other = choose(problem("copy", [[4]], [[4]], ops=[]))
    assert other.reason.startswith("no faster strategy planned (anchor 'copy', 4 elements)")


def every_anchor():
    ops = [d.name for d in dnnc.dialect.all_ops()]
    return ops + ["pointwise", "tensor", "not_an_op"]


@pytest.mark.parametrize("arch", pipelines.ARCHS)
@pytest.mark.parametrize("anchor", every_anchor())
def test_every_anchor_ranks_implemented_configs_with_a_reason(anchor, arch):
    # With and without the anchor's operands: a rule must not need more than it has.
    for p in (problem(anchor, [[4, 6, 8, 8], [4, 6, 8, 8]], [[4, 6, 8, 8]], arch=arch),
              Problem(kernel="k", anchor=anchor, arch=arch)):
        configs = rank(p)
        assert configs and len(set(configs)) == len(configs)
        for c in configs:
            assert c.strategy in heuristics.IMPLEMENTED == (
                "simt-generic", "simt-pointwise", "simt-reduce", "simt-reduce-columns",
                "simt-reduce-rows-columns", "simt-window", "simt-transpose", "tc-sm90",
                "tc-sm80", "simt-depthwise", "simt-gemm", "simt-gemv")
            assert 1 <= c.threads <= 1024
            assert c.reason and "\n" not in c.reason
            if c.strategy == "simt-generic":  # says why nothing faster runs
                assert re.search("not implemented yet|no faster strategy|simt-pointwise needs"
                                 "|does not apply",
                                 c.reason)
        assert choose(p) == configs[0]


def test_rank_is_deterministic():
    p = problem("softmax", [[8, 1024]], [[8, 1024]], attrs=[("axis", 1)])
    first = [(c, c.reason) for c in rank(p)]
    again = problem("softmax", [[8, 1024]], [[8, 1024]], attrs=[("axis", 1)])
    assert p == again and hash(p) == hash(again)
    assert [(c, c.reason) for c in rank(again)] == first


# ----------------------------------------------------------------------------
# Config


def test_config_round_trips_through_its_attribute():
    with dnnc.dialect.context():
        for c in (Config(block=128), Config(block=(64, 2)),
                  Config("tc-sm90", (128, 1, 1), tile=(128, 256, 64), stages=4, warps=8,
                         vector=8)):
            attr = c.to_attr()
            assert str(attr) == c.to_text()
            assert Config.from_attr(attr) == c
    assert Config(block=128).to_text() == '{block = [128, 1, 1], strategy = "simt-generic"}'
    assert str(Config(block=128)) == "simt-generic block=128x1x1"


def test_config_is_checked():
    with pytest.raises(PipelineError, match=r"block \[2048, 1, 1\]: expected 1 to 1024"):
        Config(block=2048)
    with pytest.raises(PipelineError, match=r"block \[0, 1, 1\]"):
        Config(block=0)
    with pytest.raises(PipelineError, match="strategy 'fast': expected one of simt-generic"):
        Config("fast")
    from mlir import ir

    with dnnc.dialect.context():
        attr = ir.Attribute.parse('{strategy = "simt-generic", blocks = [1, 1, 1]}')
        with pytest.raises(PipelineError, match="unknown field 'blocks'"):
            Config.from_attr(attr)


# ----------------------------------------------------------------------------
# Overrides


def test_override_syntax():
    parsed = override_mod.parse(" main_k0_softmax=block:128 ; *=block:64x2,strategy:simt-generic")
    assert parsed == {"main_k0_softmax": {"block": (128,)},
                      "*": {"block": (64, 2), "strategy": "simt-generic"}}
    assert override_mod.fields_for(parsed, "main_k0_softmax")["block"] == (128,)
    assert override_mod.fields_for(parsed, "other")["block"] == (64, 2)
    assert override_mod.parse("") == {}


def test_override_of_a_split_resets_its_cluster():
    p = problem("matmul", [([256, 65536], "bf16"), ([65536, 256], "bf16")], [[256, 256]])
    assert choose(p).cluster == 2
    # A split set by hand: no cluster unless named too.
    assert (choose(p, override="split:16").split, choose(p, override="split:16").cluster) == \
        (16, 1)
    c = choose(p, override="split:32,cluster:8")
    assert (c.split, c.cluster) == (32, 8)
    assert "cluster = 8 : i64, split = 32 : i64" in c.to_text()
    # Stages and tiles set by hand keep the heuristics' cluster.
    assert choose(p, override="stages:4").cluster == 2
    with pytest.raises(PipelineError, match="strategy 'tc-sm80' has no field 'cluster'"):
        choose(p, override="strategy:tc-sm80,cluster:2")


def test_persistent_is_a_tc_sm90_field():
    """``persistent`` (tc-sm90's attention): written only when not 0,
    round-trips through the attribute, refused when negative and
    elsewhere."""
    assert "persistent" not in Config("tc-sm90", 384, tile=(64, 128)).fields()
    c = Config("tc-sm90", 384, tile=(64, 128), persistent=1)
    assert c.fields()["persistent"] == 1 and str(c).endswith("persistent=1")
    with dnnc.dialect.context():
        assert Config.from_attr(c.to_attr()) == c
    assert Config("tc-sm90", 384, persistent=4).fields()["persistent"] == 4
    with pytest.raises(PipelineError, match="config: persistent: expected >= 0, got -1"):
        Config("tc-sm90", 384, persistent=-1)
    p = problem("softmax", [[8, 1024]], [[8, 1024]], attrs=[("axis", 1)])
    with pytest.raises(PipelineError, match="strategy 'simt-reduce' has no field 'persistent'"):
        choose(p, override="persistent:0")


def test_fused_is_a_tc_sm80_field():
    """``fused`` (tc-sm80's attention backward): written only when not 0,
    round-trips through the attribute, refused when not 0 or 1 and
    elsewhere."""
    assert "fused" not in Config("tc-sm80", 256, tile=(64, 64)).fields()
    c = Config("tc-sm80", 256, tile=(64, 64), fused=1)
    assert c.fields()["fused"] == 1 and str(c).endswith("fused=1")
    with dnnc.dialect.context():
        assert Config.from_attr(c.to_attr()) == c
    with pytest.raises(PipelineError, match="config: fused: expected 0 or 1, got 2"):
        Config("tc-sm80", 256, fused=2)
    p = problem("softmax", [[8, 1024]], [[8, 1024]], attrs=[("axis", 1)])
    with pytest.raises(PipelineError, match="strategy 'simt-reduce' has no field 'fused'"):
        choose(p, override="fused:1")


def test_override_wins():
    p = problem("softmax", [[8, 1024]], [[8, 1024]], attrs=[("axis", 1)])
    assert choose(p).block == (64, 1, 1)
    for given in ("block:512", {"block": 512}):
        c = choose(p, override=given)
        assert c.block == (512, 1, 1) and c.strategy == "simt-reduce"
        assert c.reason.startswith("user override block=512; heuristics: softmax: 8 rows")
    c = choose(p, override=Config(block=512))
    assert c.block == (512, 1, 1) and c.strategy == "simt-generic"


@pytest.mark.parametrize("text, message", [
    ("k=block:2048", "block 2048: expected 1 to 1024 threads per block, got 2048"),
    ("k=block:0", "block 0: expected 1 to 1024 threads per block, got 0"),
    ("k=block:32x64", "block 32x64: expected 1 to 1024 threads per block, got 2048"),
    ("k=block:abc", "block: expected threads per block as N or NxMxK, got 'abc'"),
    ("k=stages:9", "stages: expected an integer from 1 to 8, got '9'"),
    ("k=warps:2", "unknown key 'warps': expected one of block, cluster, fold, fused, "
                  "persistent, promote_overlap, split, staged, stages, strategy, tail_split, "
                  "tile, tiled, unroll, vector"),
    ("k=fused:2", "fused: expected 0 or 1, got '2'"),
    ("k=persistent:x", "persistent: expected an integer from 0 to 1024, got 'x'"),
    ("k=fold:0", "fold: expected a positive integer, got '0'"),
    ("k=cluster:3", "cluster: expected one of 1, 2, 4, 8, got '3'"),
    ("k=staged:2", "staged: expected 0 or 1, got '2'"),
    ("k=tiled:2", "tiled: expected 0 or 1, got '2'"),
    ("k=promote_overlap:3", "promote_overlap: expected one of 0, 2, 4, 8, got '3'"),
    ("k=split:0", "split: expected an integer from 1 to 64, got '0'"),
    ("k=tile:0", "tile: expected N or NxM positive integers, got '0'"),
    ("k=vector:3", "vector: expected a power of two, got 3"),
    ("k=strategy:fast", "unknown strategy 'fast'"),
    ("k=block:1;k=block:2", "kernel 'k' is given twice"),
    ("block:128", "entry 'block:128': expected KERNEL=key:value"),
    ("k=block:{1}", "expected KERNEL=key:value"),
])
def test_bad_overrides_are_refused(text, message):
    with pytest.raises(PipelineError, match=re.escape(message)):
        override_mod.parse(text)


# ----------------------------------------------------------------------------
# End to end: configured IR, manifest, PTX (no GPU)


def graph():
    """A softmax, a matmul + relu, and an exp, over an input in column-major
    order (whose layout copy is made after the configured stage)."""
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[8, 64], stride=[1, 8])
    w = g.tensor(name="w", dim=[64, 32])
    g.relu(g.matmul(g.softmax(x, axis=1), w)).set_name("y").set_output(True)
    g.exp(x).set_name("z").set_output(True)
    return g


KERNELS = ["main_k0_softmax", "main_k1_matmul", "main_k2_pointwise"]


def compile_cuda(config=None, arch="sm_90a", **options):
    return compiler.compile_module(graph_mlir.to_module(graph()),
                                   compiler.Options(target="cuda", arch=arch, config=config,
                                                    **options))


def test_configured_stage_holds_the_config_of_every_kernel():
    fused = compile_cuda(stop_after="fused")
    assert "dnn.config" not in str(fused)
    module = compile_cuda(stop_after="configured")
    with module.context:
        kernels = irutil.kernel_functions(module)
        assert [irutil.symbol(k) for k in kernels] == KERNELS
        for fn in kernels:
            expected = choose(heuristics.problem_of(fn, "sm_90a"))
            assert str(fn.attributes["dnn.config"]) == expected.to_text()
            assert fn.attributes["dnn.config_reason"].value == expected.reason
    assert ('dnn.config_reason = "softmax: 8 rows of 64: a warp per row, 4 rows per block'
            in str(module))
    # The stage is deterministic.
    assert str(compile_cuda(stop_after="configured")) == str(module)


def test_problem_of_a_kernel_function():
    module = compile_cuda(stop_after="fused")
    with module.context:
        fn = irutil.kernel_functions(module)[1]
        p = heuristics.problem_of(fn, "sm_80")
        assert p == heuristics.problem_of(fn, "sm_80")
    assert (p.kernel, p.anchor, p.ops, p.arch, p.family) == (
        "main_k1_matmul", "matmul", ("matmul", "relu"), "sm_80", "matmul")
    assert p.inputs == (spec([8, 64]), spec([64, 32])) and p.outputs == (spec([8, 32]),)
    assert p.anchor_attrs == (("compute_type", "f32"),)


def test_manifest_records_strategy_and_reason():
    package = compile_cuda()
    by_name = {}
    for k in package.kernels:
        by_name.setdefault(k["name"], []).append(k)
    assert set(by_name) == {"main_load_x", *KERNELS}
    for name in KERNELS:
        for k in by_name[name]:
            strategy, block = {"main_k2_pointwise": ("simt-pointwise", 128),
                               "main_k0_softmax": ("simt-reduce", 128),
                               "main_k1_matmul": ("simt-gemv", 64)}[name]
            assert k["strategy"] == strategy and k["block"] == [block, 1, 1]
            assert k["reason"] == by_name[name][0]["reason"]
    assert by_name["main_k0_softmax"][0]["reason"].startswith("softmax: 8 rows of 64: a warp")
    assert by_name["main_k1_matmul"][0]["reason"].startswith("matmul: 8x32x64 (M x N x K)")
    assert "an f32 multiply" in by_name["main_k1_matmul"][0]["reason"]
    # The layout copy is made after the heuristics ran: the fallback config, which
    # the reason says.
    assert by_name["main_load_x"][0]["block"] == [256, 1, 1]
    assert "after the heuristics" in by_name["main_load_x"][0]["reason"]
    artifact.validate(package.manifest)
    text = package.describe()
    assert "simt-reduce: softmax: 8 rows of 64: a warp per row" in text
    assert text.count("simt-reduce: softmax") == 1  # once per kernel function
    bad = dict(package.manifest, kernels=[dict(package.kernels[1], reason=3)])
    with pytest.raises(artifact.ArtifactError, match="reason expected a string, got int"):
        artifact.validate(bad)


def maxntid(text, entry):
    """The .maxntid of PTX entry ``entry``."""
    m = re.search(rf"\.entry {re.escape(entry)}\(.*?\)\s*\.maxntid (\d+), (\d+), (\d+)",
                  text, re.S)
    assert m, entry
    return [int(v) for v in m.groups()]


def test_an_overridden_block_changes_the_launch_and_the_ptx():
    default = compile_cuda()
    changed = compile_cuda(config="main_k2_pointwise=block:64; main_k1_matmul=block:32")
    assert set(ptx.entries(changed.ptx)) == set(ptx.entries(default.ptx))
    for before, after in zip(default.kernels, changed.kernels):
        assert before["entry"] == after["entry"]
        block = {"main_k2_pointwise": [64, 1, 1], "main_k1_matmul": [32, 1, 1]}.get(
            after["name"], before["block"])
        assert after["block"] == block
        assert maxntid(changed.ptx, after["entry"]) == block
        assert maxntid(default.ptx, before["entry"]) == before["block"]
        if after["name"] == "main_k2_pointwise":  # 128 vectors: 2 blocks of 64, not 1 of 128
            assert (before["grid"], after["grid"]) == ([1, 1, 1], [2, 1, 1])
            assert after["reason"].startswith("user override block=64; heuristics: ")
    every = compile_cuda(config="*=block:512")
    assert all(k["block"] == [512, 1, 1] for k in every.kernels if k["name"] in KERNELS)


def test_override_errors_name_what_is_wrong():
    with pytest.raises(PipelineError, match="config override names kernel 'main_k9_relu', "
                                            "which is not in the module: expected one of "
                                            + ", ".join(KERNELS)):
        compile_cuda(config="main_k9_relu=block:128")
    with pytest.raises(PipelineError, match="block 4096: expected 1 to 1024 threads"):
        compile_cuda(config="main_k0_softmax=block:4096")
    with pytest.raises(PipelineError, match="strategy 'simt-reduce' runs 1-D blocks: "
                                            "expected block N, got 32x2"):
        compile_cuda(config="main_k0_softmax=block:32x2")
    with pytest.raises(UnsupportedError, match="option config='k=block:1' applies to target "
                                               "'cuda'"):
        compiler.Options(target="cpu", config="k=block:1")
    with pytest.raises(PipelineError, match="pipeline 'cpu' has no configured stage"):
        pipelines.get("cpu", config="k=block:1")


def test_cuda_pipeline_has_the_configured_stage():
    names = [s.name for s in pipelines.get("cuda", "sm_80")]
    assert names[names.index("fused") + 1] == "configured"
    stage = pipelines.get("cuda", "sm_80", config="a=block:64; b=block:32")[names.index(
        "configured")]
    assert stage.passes == ("dnn-configure{arch=sm_80 override=a=block:64;b=block:32}",)


def test_cli_config_flag(tmp_path, capsys):
    from dnnc import cli

    src = tmp_path / "g.mlir"
    src.write_text(graph().to_mlir())
    out = str(tmp_path / "g.dnnpkg")
    assert cli.main(["compile", str(src), "--arch", "sm_90a", "-o", out,
                     "--config", "main_k2_pointwise=block:64"]) == 0
    assert "block [64, 1, 1]" in capsys.readouterr().out
    assert cli.main(["inspect", out]) == 0
    assert "simt-pointwise: user override block=64; heuristics: 1 pointwise op" in \
        capsys.readouterr().out
    assert cli.main(["compile", str(src), "--config", "main_k2_pointwise=block:64"]) == 2
    assert "--config configures GPU kernels: it needs --arch" in capsys.readouterr().err
    assert cli.main(["compile", str(src), "--arch", "sm_90a", "--config", "nope=block:64"]) == 1
    assert "dnnc: error: config override names kernel 'nope'" in capsys.readouterr().err


def test_default_config_honours_a_config_on_the_kernel():
    from dnnc.passes import run_pipeline

    text = """
    func.func private @no_block(%x: memref<4xf32>)
        attributes {dnn.config = {strategy = "simt-generic"}, dnn.kernel} {
      return
    }
    func.func private @chosen(%x: memref<4xf32>)
        attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
      return
    }
    """
    module = parse(text)
    run_pipeline(module, "builtin.module(dnn-default-config{block=32})")
    with module.context:
        configs = {irutil.symbol(f): str(f.attributes["dnn.config"])
                   for f in irutil.kernel_functions(module)}
    assert configs == {"no_block": Config(block=32).to_text(),
                       "chosen": Config(block=64).to_text()}
    bad = parse(text.replace("strategy = ", "threads = 3, strategy = ", 1))
    with pytest.raises(PipelineError, match="kernel 'no_block': config: unknown field 'threads'"):
        run_pipeline(bad, "builtin.module(dnn-default-config)")


def test_tc_sm90_prologue_operands_size_the_ring():
    """An operand with a prologue is loaded as stored (an f32 B: 4 bytes an
    element) and converted into tiles that take shared memory from the ring;
    the reason names the prologue."""
    import dataclasses

    from dnnc.codegen.gpu.tensorcore import sm90

    base = problem("matmul", [([64, 4096], "bf16"), ([4096, 4096], "bf16")],
                   [([64, 4096], "bf16")])
    plain = dnnc.heuristics.rank(base)[0]
    cast = dataclasses.replace(base, prologues=((1, "f32"),))
    first = dnnc.heuristics.rank(cast)[0]
    assert first.strategy == "tc-sm90" and first.tile == plain.tile
    assert "a prologue on B (f32 tiles converted in shared memory)" in first.reason
    # A stage: 64 rows of bf16 A and 64 columns of f32 B, 64 deep.
    assert "8 stages of 16 KiB" in plain.reason and "8 stages of 24 KiB" in first.reason
    wide = dataclasses.replace(base, anchor_inputs=(spec([1024, 4096], "bf16"),
                                                     spec([4096, 256], "bf16")),
                               anchor_outputs=(spec([1024, 256], "bf16"),))
    assert dnnc.heuristics.rank(dataclasses.replace(wide, prologues=((1, "f32"),)))[0].stages \
        < dnnc.heuristics.rank(wide)[0].stages
    bm, bn, bk = first.tile
    tile = sm90.Tile(bm, bn, bk, first.stages, max(1, bm // 64), first.split)
    size = sm90.smem_bytes(tile, "bf16", (None, "f32"))
    more = sm90.smem_bytes(dataclasses.replace(tile, stages=first.stages + 1), "bf16",
                              (None, "f32"))
    assert size <= 227 * 1024 and (first.stages == 8 or more > 227 * 1024)


def test_convolution_takes_the_narrower_tile_that_fills_its_waves():
    """128x256 tiles of the 3x3 128x256x14x14 forward are 196 blocks, 1.48
    waves of 132 SMs; 128x128 tiles are 392, 2.97 waves: the narrower goes
    first. Where the wide tile's waves are full enough, or the narrower's
    are no fuller, the order stays."""
    from dnnc.heuristics.config import Config
    from dnnc.heuristics.contraction import _whole_waves

    wide = Config("tc-sm90", (384, 1, 1), tile=(128, 256, 64), stages=4, reason="wide")
    narrow = Config("tc-sm90", (384, 1, 1), tile=(128, 128, 64), stages=6, reason="narrow")
    # A data gradient halves the columns of a 256-wide tile.
    ranked = _whole_waves([wide, narrow], 132, 25088, 256, 1, forward=False)
    assert [c.tile for c in ranked] == [(128, 128, 64), (128, 256, 64)]
    assert "392 tiles fill 99% of their waves, 196 only 74%" in ranked[0].reason
    # A forward halves its rows: 64x256 in the 5 stages of 40 KiB that fit.
    first = _whole_waves([wide, narrow], 132, 25088, 256, 1)[0]
    assert (first.tile, first.block, first.stages) == ((64, 256, 64), (256, 1, 1), 5)
    assert "64x256 tiles, not 128x256: 392 tiles fill 99% of their waves" in first.reason
    # ... but not when a prologue's converted tiles share the ring.
    fed = wide.replace(reason="wide; a prologue on A (bf16 tiles converted in shared memory)")
    assert _whole_waves([fed, narrow], 132, 25088, 256, 1)[0].tile == (128, 128, 64)
    assert _whole_waves([wide, narrow], 132, 100352, 256, 1) == [wide, narrow]  # 784: 99%
    assert _whole_waves([wide, narrow], 132, 6272, 512, 1) == [wide, narrow]    # 98 vs 196
    split = wide.replace(split=2)
    assert _whole_waves([split, narrow], 132, 25088, 256, 1) == [split, narrow]


def test_convolution_halves_the_rows_of_a_tile_up_to_128_wide():
    """The 3x3 32x128x28x28 forward: 196 tiles of 128x128 (74% of their
    waves) become 392 of 64x128 (one consumer warpgroup, a 256-thread
    block), not 128x64; the narrower config's stages carry over (the same
    stage bytes)."""
    from dnnc.heuristics.config import Config
    from dnnc.heuristics.contraction import HALF_ROWS_MAX_N, _whole_waves

    assert HALF_ROWS_MAX_N == 256
    wide = Config("tc-sm90", (384, 1, 1), tile=(128, 128, 64), stages=6, reason="wide")
    narrow = Config("tc-sm90", (384, 1, 1), tile=(128, 64, 64), stages=8, reason="narrow")
    first = _whole_waves([wide, narrow], 132, 25088, 128, 1)[0]
    assert (first.tile, first.block, first.stages) == ((64, 128, 64), (256, 1, 1), 8)
    assert "64x128 tiles, not 128x128: 392 tiles fill 99% of their waves" in first.reason


def test_convolution_of_few_narrow_tiles_takes_the_wider_tile_split():
    """A convolution whose first tc-sm90 config is 64 wide, unsplit, with
    fewer tiles than SMs gets the 128-wide tile split 2 ways first (as many
    blocks, a cluster of 2 summing the pair, 4 stages: measured faster on an
    H200); one whose first is wider keeps it."""
    from dnnc.heuristics.config import Config
    from dnnc.heuristics.contraction import _split_wider

    narrow = Config("tc-sm90", (384, 1, 1), tile=(128, 64, 64), stages=8,
                    reason="conv_fprop: 1568x512x4608 (M x N x K) bf16; 128x64 tiles, 104 of "
                           "them for 132 SMs")
    wide = Config("tc-sm90", (384, 1, 1), tile=(128, 128, 64), stages=6,
                  reason="conv_fprop: ...; 128x128 tiles, 52 of them for 132 SMs")
    ranked = _split_wider([narrow, wide], 132, 1568, 512, 1, 4608)     # 104 tiles of 128x64
    assert ranked[0].tile == (128, 128, 64) and ranked[0].split == 2
    assert ranked[0].cluster == 2 and ranked[0].stages == 4   # the pair sums in a cluster
    assert ranked[1:] == [narrow, wide]
    many = narrow
    assert _split_wider([many, wide], 132, 2240, 512, 1, 4608) == [many, wide]    # 144 tiles
    assert _split_wider([wide, narrow], 132, 1568, 512, 1, 4608) == [wide, narrow]
    # A single K step cannot be split (tc-sm90 would refuse the cluster).
    assert _split_wider([narrow, wide], 132, 1568, 512, 1, 64) == [narrow, wide]


def test_tc_sm90_block_scaled_ranks_its_loops_for_autotuning():
    """A block-scaled fp8 GEMM: first the tile in groups of 8 K steps (32
    steps) or of 2 (11 steps, 128 columns), then the same tile's other
    loops (whole steps, groups of 4) and a 256-wide tile in two halves,
    each saying it is ranked for autotuning: autotuning's top 4 times them
    all."""
    for k, group, other in ((4096, 8, 4), (1408, 2, 4)):
        blocks = -(-k // 128)
        p = problem("matmul_block_scaled",
                    [([2048, k], "f8E4M3FN"), ([k, 2048], "f8E4M3FN"),
                     ([2048, blocks], "f32"), ([blocks, 16], "f32")], [([2048, 2048], "f32")])
        top = dnnc.heuristics.rank(p)[:4]
        assert [(c.strategy, c.tile, c.promote_overlap) for c in top] == [
            ("tc-sm90", (128, 128, 128), group), ("tc-sm90", (128, 128, 128), 0),
            ("tc-sm90", (128, 128, 128), other), ("tc-sm90", (128, 256, 128), 0)], top
        assert f"K steps in groups of {group}, each step's promotion overlapping" in top[0].reason
        assert "each K step whole (ranked for autotuning)" in top[1].reason
        assert f"K steps in groups of {other} (ranked for autotuning)" in top[2].reason
        assert "two halves of 128 columns, whole (ptxas spills" in top[3].reason
