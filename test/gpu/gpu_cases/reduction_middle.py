"""Reductions over middle axes: one run of axes with kept axes on both
sides (a column program per outer index, simt-reduce-columns with grid z),
and separated axes ending at the innermost, such as a channels-first
batchnorm's [0, 2, 3] (dnn-split-reductions: a row program, then a column
program). Every mode, f32 / bf16 / f16, keepdims either way, the benchmark
problems at their size, rows split over blocks (forced and chosen), and a
pointwise prologue and epilogue in the kernel.
"""

import dnnc

from .case import BF16, F16, F32, Case, outputs

MODES = ("sum", "mean", "max", "min", "prod", "amax", "norm1", "norm2")


def middle(dtype, dims, axes, modes=MODES, keepdims=(True, False)):
    """Every mode of ``modes`` over ``axes`` of one input, with each keepdims."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=dims)
        for mode in modes:
            for keep in keepdims:
                outputs(g.reduction(x, mode, axes, keepdims=keep)
                        .set_name(f"{mode}_{'keep' if keep else 'drop'}"))
        return g
    return build


def statistics(dtype, dims, axes):
    """A norm's statistics by hand: mean(x) and sqrt(mean(x * x) + 1), the
    square a prologue and the root an epilogue of the kernel that reads x."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=dims)
        one = g.tensor(name="one", dim=[1] * len(dims))
        outputs(g.reduction(x, "mean", axes).set_name("mean"),
                g.sqrt(g.add(g.reduction(g.mul(x, x), "mean", axes), one)).set_name("rms"))
        return g
    return build


# Values near 1 for prod: a product of a few hundred stays finite.
NEAR_ONE = {"x": (1.0, 0.01)}

CASES = [
    # [O, R, N]: every mode, each dtype; N a multiple of the vector or not.
    *(Case(f"reduction_middle_{d.mlir}", middle(d, [6, 37, 5, 24], [1]), normal=NEAR_ONE)
      for d in (F32, BF16, F16)),
    Case("reduction_middle_odd_f32", middle(F32, [3, 129, 7], [1]), normal=NEAR_ONE),
    Case("reduction_middle_two_runs_bf16", middle(BF16, [2, 3, 40, 6, 64], [2, 3]),
         normal=NEAR_ONE),
    # Rows split over blocks, the last block of each outer index's column
    # of blocks summing the partials: forced, and as the heuristics split
    # few columns of many rows.
    Case("reduction_middle_split_f32", middle(F32, [5, 301, 72], [1]), normal=NEAR_ONE,
         config="*=block:8x8,tile:64,unroll:2"),
    Case("reduction_middle_many_rows_bf16",
         middle(BF16, [2, 8192, 64], [1], ("sum", "max", "mean")), normal=NEAR_ONE),
    # Separated axes: NCHW statistics (every mode), and [0, 3] of 4-D.
    *(Case(f"reduction_middle_nchw_{d.mlir}", middle(d, [8, 12, 9, 11], [0, 2, 3]),
           normal=NEAR_ONE) for d in (F32, BF16, F16)),
    Case("reduction_middle_separated_f32", middle(F32, [4, 6, 5, 16], [0, 3]), normal=NEAR_ONE),
    # The benchmark problems (bench/cases.py's reduce-middle cases).
    Case("reduction_middle_sum_h_bf16",
         middle(BF16, [8, 16, 1024, 64], [1], ("sum",), (True,))),
    Case("reduction_middle_bn_stats_f32",
         middle(F32, [32, 64, 56, 56], [0, 2, 3], ("sum", "max"), (True,))),
    Case("reduction_middle_bn_stats_bf16",
         middle(BF16, [128, 256, 14, 14], [0, 2, 3], ("sum",), (True,))),
    Case("reduction_middle_mean_f32", middle(F32, [16, 512, 1024], [1], ("mean",), (True,))),
    # Prologue and epilogue in the kernel.
    Case("reduction_middle_statistics_bf16", statistics(BF16, [4, 32, 16, 64], [1])),
    Case("reduction_middle_nchw_statistics_f32", statistics(F32, [16, 32, 7, 7], [0, 2, 3])),
]
