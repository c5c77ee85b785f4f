"""Row program cases: softmax, log_softmax, layernorm and rmsnorm (and
their backwards, and row reductions) over the row lengths, batch sizes,
strides and values the row kernels are held to: a warp a row, a block a
row, rows split over thread-block clusters, staged in shared memory or held
in registers; padded and transposed rows; masked rows all -inf; values near
f16's largest and far from 0; residual adds fused with the norms.
"""

import dnnc

from .case import BF16, E4M3, F16, F32, Case, outputs
from .strides import channels_last, padded_rows


def softmax_family(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[7, 127, 3])
        dy = g.tensor(name="dy", dim=[7, 127, 3])
        s = g.softmax(x, axis=1)
        ls = g.log_softmax(x, axis=2)
        outputs(s, ls, g.softmax_backward(dy, s, axis=1), g.log_softmax_backward(dy, ls, axis=2))
        return g
    return build


def strided_rows(dtype, rows, n, stride):
    """The row programs on x and dy declared with ``stride``, padded rows (a
    slice of a wider buffer, gaps between the rows) or column-major (a
    transposed view): softmax, log_softmax and their backwards, layernorm
    and rmsnorm in training and their backwards, row reductions (sum, max,
    norm2) and column reductions (sum, max) of x. As in row_family, from
    n = 128 on the softmax and its backward times n are outputs too."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[rows, n], stride=stride)
        dy = g.tensor(name="dy", dim=[rows, n], stride=stride)
        scale = g.tensor(name="scale", dim=[1, n])
        bias = g.tensor(name="bias", dim=[1, n])
        s, ls = g.softmax(x, axis=1), g.log_softmax(x, axis=1)
        ds = g.softmax_backward(dy, s, axis=1)
        y, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
        ry, inv_rms = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
        if n >= 128:
            outputs(g.cast(g.mul(s, g.constant(n)), dtype).set_name("softmax_times_n"),
                    g.cast(g.mul(ds, g.constant(n)), dtype).set_name("softmax_backward_times_n"))
        outputs(s, ls, ds, g.log_softmax_backward(dy, ls, axis=1),
                y, mean, inv, ry, inv_rms,
                *g.layernorm_backward(dy, x, scale, mean, inv, axis=1, has_bias=True),
                *g.rmsnorm_backward(dy, x, scale, inv_rms, axis=1),
                *(g.reduction(x, mode, [1]).set_name(f"row_{mode}")
                  for mode in ("sum", "max", "norm2")),
                *(g.reduction(x, mode, [0]).set_name(f"column_{mode}") for mode in ("sum", "max")))
        return g
    return build


# (layout, rows, n, dtype, strides) of strided_rows: each dtype once padded
# and once transposed, at a warp-per-row length (7) and block-per-row ones
# (1000, 4096); pads that keep rows 16-byte aligned (4104 bf16) and that do
# not (1003 f32, 9 f16).
STRIDED_ROWS = [
    ("padded", 37, 1000, F32, [1003, 1]), ("padded", 5, 4096, BF16, [4104, 1]),
    ("padded", 129, 7, F16, [9, 1]),
    ("transposed", 37, 1000, F16, [1, 37]), ("transposed", 5, 4096, F32, [1, 5]),
    ("transposed", 129, 7, BF16, [1, 129]),
]


def strided_group_norm(dtype):
    """groupnorm and instancenorm in training and their backwards on x and
    dy declared channels-last; groupnorm on x whose rows of W are padded (a
    slice of a wider image) and on x that is 6 of 10 channels (a channel
    slice)."""
    def build():
        dims = [2, 6, 7, 5]
        nhwc = channels_last(dims)
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=dims, stride=nhwc)
        dy = g.tensor(name="dy", dim=dims, stride=nhwc)
        scale = g.tensor(name="scale", dim=[1, 6, 1, 1])
        bias = g.tensor(name="bias", dim=[1, 6, 1, 1])
        y, mean, inv = g.groupnorm(x, 3, scale, bias, norm_forward_phase="training")
        iy, imean, iinv = g.instancenorm(x, scale, bias, norm_forward_phase="training")
        x_pad = g.tensor(name="x_pad", dim=dims, stride=padded_rows(dims, 3))
        x_slice = g.tensor(name="x_slice", dim=dims, stride=[10 * 7 * 5, 7 * 5, 5, 1])
        outputs(y, mean, inv, *g.groupnorm_backward(dy, x, 3, scale, mean, inv),
                iy, imean, iinv, *g.instancenorm_backward(dy, x, scale, imean, iinv),
                *(t.set_name(f"pad_{name}") for t, name in zip(
                    g.groupnorm(x_pad, 2, scale, bias, norm_forward_phase="training"),
                    ("y", "mean", "inv_variance"))),
                g.groupnorm(x_slice, 3, scale, None)[0].set_name("slice_y"))
        return g
    return build


def rmsnorm_variants(dtype):
    """rmsnorm forward with a bias (beside a scale, and alone) and without a
    scale (no parameters), in training and in inference, over rows of 7
    (a warp a row), 1000 and 4096 (a block a row), and over the last two
    dims of a rank-3 x (axis 1)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for name, dims, axis in (("a", [9, 7], 1), ("b", [37, 1000], 1), ("c", [5, 4096], 1),
                                 ("d", [3, 7, 127], 1)):
            x = g.tensor(name=f"x_{name}", dim=dims)
            params = [1] * axis + dims[axis:]
            scale = g.tensor(name=f"scale_{name}", dim=params)
            bias = g.tensor(name=f"bias_{name}", dim=params)
            y, inv = g.rmsnorm(x, scale, bias, axis=axis, norm_forward_phase="training")
            plain, plain_inv = g.rmsnorm(x, None, None, axis=axis, norm_forward_phase="training")
            outputs(y.set_name(f"scale_bias_{name}"), inv.set_name(f"inv_rms_{name}"),
                    g.rmsnorm(x, None, bias, axis=axis)[0].set_name(f"bias_only_{name}"),
                    plain.set_name(f"no_scale_{name}"),
                    plain_inv.set_name(f"no_scale_inv_rms_{name}"),
                    g.rmsnorm(x, axis=axis, epsilon=1e-3)[0].set_name(f"no_scale_inference_{name}"))
        return g
    return build


def long_rows(dtype, n):
    """Row programs (simt-reduce): rows long enough for a block each, some
    not a multiple of a block's vector sweep."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[6, n])
        dy = g.tensor(name="dy", dim=[6, n])
        scale = g.tensor(name="scale", dim=[1, n])
        bias = g.tensor(name="bias", dim=[1, n])
        s = g.softmax(x, axis=1)
        y, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
        ry, inv_rms = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
        outputs(s, g.log_softmax(x, axis=1), g.softmax_backward(dy, s, axis=1),
                y, mean, inv, ry, inv_rms,
                g.reduction(x, "sum", [1]).set_name("row_sum"),
                g.reduction(x, "max", [1]).set_name("row_max"),
                g.reduction(x, "mean", [1]).set_name("row_mean"))
        return g
    return build


def softmax_rows(dtype, n, rows=9):
    """The softmax family on rows of n (one kernel each, rows held in
    registers at 8192), on x as given and on x with rows 0 and 5 (those
    there are) all -inf (softmax 0, log_softmax -inf) and the elements above
    1.5 -inf."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[rows, n])
        dy = g.tensor(name="dy", dim=[rows, n])
        s, ls = g.softmax(x, axis=1), g.log_softmax(x, axis=1)
        outputs(s, ls, g.softmax_backward(dy, s, axis=1),
                g.log_softmax_backward(dy, ls, axis=1))
        row = g.gen_index(x, axis=0)
        dead = g.logical_or(g.cmp_eq(row, g.constant(0.0)), g.cmp_eq(row, g.constant(5.0)))
        masked = g.cast(g.select(g.logical_or(dead, g.cmp_gt(x, g.constant(1.5))),
                                 g.constant(float("-inf")), x), dtype)
        ms, mls = g.softmax(masked, axis=1), g.log_softmax(masked, axis=1)
        outputs(ms.set_name("masked_softmax"), mls.set_name("masked_log_softmax"),
                g.softmax_backward(dy, ms, axis=1).set_name("masked_softmax_backward"),
                g.log_softmax_backward(dy, mls, axis=1).set_name("masked_log_softmax_backward"))
        return g
    return build


def residual_norms(dtype, rows, n):
    """Residual add + layernorm with an fp8 output (scaled by a scalar, cast
    to e4m3) and residual add + rmsnorm with a cast to the other 16-bit
    type: one kernel each, the sums returned too."""
    other = BF16 if dtype is F16 else F16

    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x, res = g.tensor(name="x", dim=[rows, n]), g.tensor(name="res", dim=[rows, n])
        x2, res2 = g.tensor(name="x2", dim=[rows, n]), g.tensor(name="res2", dim=[rows, n])
        scale = g.tensor(name="scale", dim=[1, n])
        bias = g.tensor(name="bias", dim=[1, n])
        q = g.tensor(name="q", dim=[], data_type=F32)
        h = g.add(x, res).set_name("h")
        y = g.layernorm(h, scale, bias, axis=1)[0]
        h2 = g.add(x2, res2).set_name("h2")
        outputs(h, g.cast(g.mul(y, q), E4M3).set_name("layernorm_e4m3"),
                h2, g.cast(g.rmsnorm(h2, scale, axis=1)[0], other).set_name("rmsnorm_cast"))
        return g
    return build


def norms_near_f16_max(rows, n):
    """f16 rows near the type's largest value (the Case draws x around
    5.7e4, spread 1500): their sums and squares overflow f16 many times
    over, so statistics must be kept in f32; so must the backwards' sums
    over the row (of dy * x, 10^4 times past f16's range at 4096)."""
    def build():
        g = dnnc.Graph(io_data_type=F16)
        x = g.tensor(name="x", dim=[rows, n])
        dy = g.tensor(name="dy", dim=[rows, n])
        scale = g.tensor(name="scale", dim=[1, n])
        bias = g.tensor(name="bias", dim=[1, n])
        y, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
        ry, inv_rms = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
        outputs(y, mean, inv, ry, g.mul(inv_rms, g.constant(1e4)).set_name("inv_rms_times_1e4"),
                g.softmax(x, axis=1), g.reduction(x, "mean", [1]).set_name("row_mean"))
        dx, dscale, dbias = g.layernorm_backward(dy, x, scale, mean, inv, axis=1, has_bias=True)
        rdx, rdscale, _ = g.rmsnorm_backward(dy, x, scale, inv_rms, axis=1)
        outputs(dx.set_name("layernorm_dx"), dscale.set_name("layernorm_dscale"),
                dbias.set_name("layernorm_dbias"),
                g.mul(rdx, g.constant(100.0)).set_name("rmsnorm_dx_times_100"),
                rdscale.set_name("rmsnorm_dscale"))
        return g
    return build


def layernorm_offset(rows, n):
    """f32 rows far from 0 against their spread (the Case draws x around 100,
    spread 1): E[x^2] - E[x]^2 would lose three of f32's seven digits to
    cancellation; the statistics must centre the squares (a staged split
    row folds them in one pass, rowmerge.chan)."""
    def build():
        g = dnnc.Graph(io_data_type=F32)
        x = g.tensor(name="x", dim=[rows, n])
        y, mean, inv = g.layernorm(x, g.tensor(name="scale", dim=[1, n]),
                                   g.tensor(name="bias", dim=[1, n]), axis=1,
                                   norm_forward_phase="training")
        outputs(y, mean, inv, g.layernorm(x, None, None, axis=1)[0].set_name("plain"))
        return g
    return build


def split_rows(dtype, rows, n):
    """The forward row programs that a split row merges into one exchange
    (dnnc/codegen/gpu/reduce/rowmerge.py: softmax's max and sum, a layernorm's
    mean and centred squares; rmsnorm has one reduction), in inference, on
    x as given and, for the softmaxes, on x - 100 with the first half of
    every row -inf: the blocks of that half hold no finite element while the
    row's max is below -88 (a block's factor exp(0 - max) overflows, its sum
    is 0: the row's sum must stay finite)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[rows, n])
        scale = g.tensor(name="scale", dim=[1, n])
        bias = g.tensor(name="bias", dim=[1, n])
        outputs(g.cast(g.mul(g.softmax(x, axis=1), g.constant(n)), dtype).set_name(
                    "softmax_times_n"),
                g.log_softmax(x, axis=1),
                g.layernorm(x, scale, bias, axis=1)[0].set_name("layernorm"),
                g.rmsnorm(x, scale, axis=1)[0].set_name("rmsnorm"))
        column = g.gen_index(x, axis=1)
        low = g.sub(x, g.constant(100.0))
        masked = g.cast(g.select(g.cmp_lt(column, g.constant(n / 2)),
                                 g.constant(float("-inf")), low), dtype)
        outputs(g.cast(g.mul(g.softmax(masked, axis=1), g.constant(n)), dtype).set_name(
                    "masked_softmax_times_n"),
                g.log_softmax(masked, axis=1).set_name("masked_log_softmax"))
        return g
    return build


def row_family(dtype, rows, n):
    """softmax, log_softmax, layernorm and rmsnorm over ``rows`` rows of
    ``n``, forward (the norms in training: their statistics too) and
    backward, in one graph: the row lengths and batch sizes the memory-bound
    kernels are held to (ROW_FAMILY lists the covering set). The values of
    softmax and of its backward are about 1 / n, under the atol of a
    comparison scaled to max(1, |ref|): from n = 128 on, n times each is an
    output too."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[rows, n])
        dy = g.tensor(name="dy", dim=[rows, n])
        scale = g.tensor(name="scale", dim=[1, n])
        bias = g.tensor(name="bias", dim=[1, n])
        s, ls = g.softmax(x, axis=1), g.log_softmax(x, axis=1)
        ds = g.softmax_backward(dy, s, axis=1)
        y, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
        ry, inv_rms = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
        if n >= 128:
            outputs(g.cast(g.mul(s, g.constant(n)), dtype).set_name("softmax_times_n"),
                    g.cast(g.mul(ds, g.constant(n)), dtype).set_name("softmax_backward_times_n"))
        outputs(s, ls, ds, g.log_softmax_backward(dy, ls, axis=1),
                y, mean, inv, ry, inv_rms,
                *g.layernorm_backward(dy, x, scale, mean, inv, axis=1, has_bias=True),
                *g.rmsnorm_backward(dy, x, scale, inv_rms, axis=1))
        return g
    return build


# (rows, n, dtype, inputs drawn from {-2..2}) of row_family: a covering set,
# not every combination. Every row length of the targets (1, 7, 128, 1000,
# 4096, 65536, 262144; 8192 is long_rows', softmax_rows' and
# norm_backward_rows'); each dtype at a warp-per-row length, a block-per-row
# one and a cluster-split one, staged in shared memory (32768 and more; the
# softmax backward's two inputs loop past 131072 bf16); several split rows
# (3 x 131072); row counts that leave a block's 4 warp-rows part empty (1,
# 5, 9); the batch extremes, 1 row and
# 65536 rows. Rows of 32768 and more and the 65536-row batch take integer
# inputs: few distinct values keep their data files small, and an element
# read or written at the wrong place still shows. f32 rows of 262144 are
# checked for spills only (test/python/test_row_lengths.py): their data
# would take 3.4 MB.
ROW_FAMILY = [
    (9, 1, F32, False), (9, 7, F16, False), (1, 128, BF16, False), (5, 128, F32, False),
    (3, 1000, F16, False), (3, 4096, BF16, False), (2, 4096, F32, False),
    (2, 32768, F16, True), (1, 65536, BF16, True), (1, 65536, F32, True), (1, 65536, F16, True),
    (1, 262144, BF16, True), (1, 262144, F32, True),
    # Several rows split over clusters of 8 blocks (the row sweep's 131072).
    (3, 131072, BF16, True),
    (65536, 7, BF16, True),
]


# The row kernels of split_rows, as the fused stage names them.
SPLIT_ROW_KERNELS = ((0, "softmax"), (1, "log_softmax"), (2, "layernorm"), (3, "rmsnorm"),
                     (5, "softmax"), (6, "log_softmax"))


CASES = [
    *(Case(f"softmax_family_{d.mlir}", softmax_family(d)) for d in (F32, BF16, F16)),
    *(Case(f"strided_rows_{layout}_{rows}x{n}_{d.mlir}", strided_rows(d, rows, n, stride))
      for layout, rows, n, d, stride in STRIDED_ROWS),
    *(Case(f"strided_group_norm_{d.mlir}", strided_group_norm(d)) for d in (F32, F16)),
    *(Case(f"rmsnorm_variants_{d.mlir}", rmsnorm_variants(d)) for d in (F32, F16, BF16)),
    *(Case(f"long_rows_{n}_{d.mlir}", long_rows(d, n))
      for d, n in ((F32, 1000), (F32, 2080), (F16, 4096), (BF16, 8192), (F32, 40000),
                   (BF16, 40000))),
    *(Case(f"softmax_rows_8192_{d.mlir}", softmax_rows(d, 8192)) for d in (F32, BF16)),
    *(Case(f"softmax_rows_{n}_{d.mlir}", softmax_rows(d, n, rows))
      for n, d, rows in ((1, F32, 9), (128, F16, 9), (4096, BF16, 6))),
    Case("softmax_rows_65536_bf16", softmax_rows(BF16, 65536, rows=2), integers=("x", "dy")),
    # Clusters of 8 blocks of 1024 threads, row 0 all -inf (max and sum
    # exchanged between the blocks of a row that has no finite element).
    Case("softmax_rows_262144_bf16", softmax_rows(BF16, 262144, rows=2), integers=("x", "dy")),
    *(Case(f"row_family_{rows}x{n}_{d.mlir}", row_family(d, rows, n),
           integers=("x", "dy", "scale", "bias") if few else ())
      for rows, n, d, few in ROW_FAMILY),
    *(Case(f"residual_norms_{rows}x{n}_{d.mlir}", residual_norms(d, rows, n), positive=("q",))
      for rows, n, d in ((37, 4096, BF16), (3, 1000, F16), (2, 131072, BF16))),
    *(Case(f"norms_near_f16_max_{rows}x{n}", norms_near_f16_max(rows, n),
           normal={"x": (5.7e4, 1500.0), "dy": (0.0, 1000.0)})
      for rows, n in ((37, 4096), (2, 131072))),
    Case("layernorm_offset_2x131072_f32", layernorm_offset(2, 131072),
         normal={"x": (100.0, 1.0)}),
    # Split rows, staged in shared memory (a layernorm's two reductions in one
    # exchange); then held in registers, on persistent clusters of 2 rows
    # (tile = rows per cluster: 3 rows on 2 clusters, the second with one
    # row), each loading its next row during the current, and one row a cluster.
    Case("split_rows_2x131072_bf16", split_rows(BF16, 2, 131072),
         integers=("x", "scale", "bias")),
    Case("split_rows_persistent_3x131072_bf16", split_rows(BF16, 3, 131072),
         integers=("x", "scale", "bias"),
         config=";".join(f"main_k{k}_{name}=tile:2,block:512,split:8,staged:0"
                        for k, name in SPLIT_ROW_KERNELS)),
    # The heuristics stage these rows in shared memory; held in registers instead.
    Case("split_rows_registers_2x131072_bf16", split_rows(BF16, 2, 131072),
         integers=("x", "scale", "bias"),
         config=";".join(f"main_k{k}_{name}=block:512,split:8,staged:0"
                        for k, name in SPLIT_ROW_KERNELS)),
]
