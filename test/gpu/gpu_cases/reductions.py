"""Reduction cases: every mode over one axis, over two and over all of
them, kept or dropped; and reductions over every axis but the innermost
(the column kernels), from 1 x 129 to 4096 x 2048.
"""

import dnnc

from .case import BF16, F16, F32, Case, outputs


def reductions(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[7, 127, 3])
        for mode in ("sum", "mean", "max", "min", "prod", "amax", "norm1", "norm2"):
            outputs(g.reduction(x, mode, [1]).set_name(f"{mode}_1"),
                    g.reduction(x, mode, [0, 2], keepdims=False).set_name(f"{mode}_02"))
        outputs(g.reduction(x, "sum", [0, 1, 2], keepdims=False).set_name("sum_all"),
                g.reduction(x, "max", [0, 1, 2]).set_name("max_all"))
        return g
    return build


def reduce_columns(dtype, dims, modes, flat=False):
    """Reductions over every axis but the innermost (simt-reduce-columns:
    the rows split over blocks whose partials a second launch sums, or not);
    ``flat`` adds a sum with keepdims=False."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=dims)
        axes = list(range(len(dims) - 1))
        for mode in modes:
            outputs(g.reduction(x, mode, axes).set_name(f"{mode}_columns"))
        if flat:
            outputs(g.reduction(x, "sum", axes, keepdims=False).set_name("sum_flat"))
        return g
    return build


CASES = [
    *(Case(f"reduction_{d.mlir}", reductions(d)) for d in (F32, BF16, F16)),
    # The bias gradient of a linear layer (bench/cases.py times 16384 x 4096), several row splits.
    Case("reduce_columns_4096x2048_bf16",
         reduce_columns(BF16, [4096, 2048], ("sum", "mean", "max"))),
    Case("reduce_columns_2048x520_bf16", reduce_columns(BF16, [2048, 520], ("sum", "min"))),
    Case("reduce_columns_1000x7_f32",
         reduce_columns(F32, [1000, 7], ("sum", "mean", "max", "min", "norm1", "norm2",
                                         "amax"))),
    Case("reduce_columns_7x1000_bf16", reduce_columns(BF16, [7, 1000], ("sum", "max", "mean"))),
    Case("reduce_columns_1x129_f16", reduce_columns(F16, [1, 129], ("sum", "max", "mean"))),
    Case("reduce_columns_3d_f32",
         reduce_columns(F32, [9, 130, 72], ("sum", "max", "mean"), flat=True)),
]
