"""Epilogue operands of every broadcast and layout on the tensor-core
contractions: a forward convolution (also of two groups, and 3-D), a data
gradient (stride 1, and stride 2 split by stride phase), a filter gradient
and a batched matmul, each
ending in a pointwise epilogue that reads one operand of a kind in
``OPERANDS`` (or two: a scale and a shift):

    bias            per output channel ([1, K, 1, 1]; a matmul's [1, 1, N])
    residual_nhwc   the output's shape, channels-last (a matmul's stored
                    column-major: an input of strides the epilogue reads
                    element by element)
    residual_nchw   the output's shape, row-major (NCHW: a layout kernel
                    makes it channels-last for a convolution)
    over_batch      the same for every image ([1, K, P, Q]; [1, M, N])
    over_batch_nchw the same, row-major (read where it lies: no layout kernel)
    over_pixels     one value a channel of each image ([N, K, 1, 1]; [B, 1, N])
    pixels_only     one value a pixel, every channel ([1, 1, P, Q]; [1, M, 1])
    scalar          one element
    last_dim        along the innermost dim only ([1, 1, 1, Q]; [1, 1, N])
    per_row         every dim but the innermost ([N, K, P, 1]; [B, M, 1])

and an epilogue of ``EPILOGUES``: ``add`` (y + r), ``bn_relu`` (relu(y * s
+ t), s and t of the kind), ``second`` (y + r, y returned too: the
contraction's kernel stores both), ``cast`` (y + r stored as f32) and
``f32_operand`` (y + r with r f32 on a bf16 / f16 contraction); and a
ViT's position table added to a flattened convolution (``position_table``).

Broadcasts over some of the output pixel dims (``over_batch``,
``over_pixels``, ``pixels_only``, ``last_dim``, ``per_row``) and a filter
gradient's per-channel operand are read through split views
(dnnc/codegen/gpu/tensorcore/conv_views.py: the row or column split into
its coordinates, pair_epilogue.at), which ran on simt-generic before;
test/python/test_epilogue_reads.py checks on the CPU that none of these
contractions lands there and runs tc-sm80's kernels in the kernel
interpreter. ``CASES``: every kind under ``bn_relu`` and a few under the
other epilogues, a graph per direction and type, on the heuristics'
strategy (tc-sm90 on an H100 / H200) and again with tc-sm80 forced (not
the grouped one: tc-sm80 takes one group).
"""

import math

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs
from .strides import channels_last

SEED = 20261201
# A convolution's sizes: M = N·P·Q = 70 output pixels (no tile multiple),
# C = 16 and K = 24 channels (multiples of 8: tc-sm90 reads them by TMA).
N, C, K, IMAGE, WINDOW = 2, 16, 24, (5, 7), (3, 3)
# A matmul's: a batch of 3 of [33, 40] @ [40, 48].
BATCH, M, KM, NM = 3, 33, 40, 48
DIRECTIONS = ("fprop", "fprop_groups", "fprop_3d", "dgrad", "dgrad_strided", "wgrad", "matmul")
# What tc-sm80 does not take (one group only): no tc-sm80 package.
SM90_ONLY = ("fprop_groups",)
OPERANDS = ("bias", "residual_nhwc", "residual_nchw", "over_batch", "over_batch_nchw",
            "over_pixels", "pixels_only", "scalar", "last_dim", "per_row")
EPILOGUES = ("add", "bn_relu", "second", "cast", "f32_operand")
# The kinds each epilogue but bn_relu (which takes them all) is built with.
SOME = ("bias", "over_batch", "over_pixels", "residual_nhwc")


def row_major(dims):
    strides, step = [0] * len(dims), 1
    for d in reversed(range(len(dims))):
        strides[d] = step
        step *= dims[d]
    return strides


def _conv_out(image, stride):
    return [(n + 2 - 3) // stride + 1 for n in image]


def contraction(g, i, direction):
    """Add the contraction of ``direction`` to ``g`` (inputs ``a<i>``,
    ``b<i>``, channels-last); returns (its result, the result's dims, its
    channel axis, the two operands, the products each element sums)."""
    if direction == "matmul":
        a = g.tensor(name=f"a{i}", dim=[BATCH, M, KM])
        b = g.tensor(name=f"b{i}", dim=[BATCH, KM, NM])
        return g.matmul(a, b), [BATCH, M, NM], 2, a, b, KM
    taps = math.prod(WINDOW)
    x_dims, w_dims = [N, C, *IMAGE], [K, C, *WINDOW]
    if direction == "wgrad":
        y_dims = [N, K, *_conv_out(IMAGE, 1)]
        a = g.tensor(name=f"a{i}", dim=x_dims, stride=channels_last(x_dims))
        b = g.tensor(name=f"b{i}", dim=y_dims, stride=channels_last(y_dims))
        dw = g.conv_wgrad(a, b, w_dims, padding=[1, 1])
        return dw, w_dims, 1, a, b, N * math.prod(y_dims[2:])
    if direction == "fprop_groups":
        # Two groups of 64 channels (whole K steps a group): the GEMM's
        # batch, each epilogue view [G, M, N].
        x_dims, w_dims = [N, 128, *IMAGE], [64, 64, *WINDOW]
        a = g.tensor(name=f"a{i}", dim=x_dims, stride=channels_last(x_dims))
        b = g.tensor(name=f"b{i}", dim=w_dims, stride=channels_last(w_dims))
        y = g.conv_fprop(a, b, padding=[1, 1])
        return y, [N, 64, *IMAGE], 1, a, b, 64 * taps
    if direction == "fprop_3d":
        x_dims, w_dims = [N, C, 3, *IMAGE], [K, C, 3, *WINDOW]
        a = g.tensor(name=f"a{i}", dim=x_dims, stride=channels_last(x_dims))
        b = g.tensor(name=f"b{i}", dim=w_dims, stride=channels_last(w_dims))
        y = g.conv_fprop(a, b, padding=[1, 1, 1])
        return y, [N, K, 3, *IMAGE], 1, a, b, C * taps * 3
    stride = 2 if direction == "dgrad_strided" else 1
    if direction == "fprop":
        a = g.tensor(name=f"a{i}", dim=x_dims, stride=channels_last(x_dims))
        b = g.tensor(name=f"b{i}", dim=w_dims, stride=channels_last(w_dims))
        y = g.conv_fprop(a, b, padding=[1, 1])
        return y, [N, K, *IMAGE], 1, a, b, C * taps
    y_dims = [N, K, *_conv_out(IMAGE, stride)]
    a = g.tensor(name=f"a{i}", dim=y_dims, stride=channels_last(y_dims))
    b = g.tensor(name=f"b{i}", dim=w_dims, stride=channels_last(w_dims))
    dx = g.conv_dgrad(a, b, x_dims, padding=[1, 1], stride=[stride, stride])
    return dx, x_dims, 1, a, b, K * taps


def operand_layout(kind, dims, channel):
    """(dims, strides or None) of an epilogue operand of ``kind`` against an
    output of ``dims`` whose channels are dim ``channel``."""
    rank = len(dims)
    conv = channel == 1
    if kind == "bias":
        return [n if d == channel else 1 for d, n in enumerate(dims)], None
    if kind == "residual_nhwc":
        if conv:
            return list(dims), channels_last(list(dims))
        # A matmul's output stored column-major in each batch.
        return list(dims), [dims[1] * dims[2], 1, dims[1]]
    if kind == "residual_nchw":
        return list(dims), row_major(list(dims))
    if kind == "over_batch":
        out = [1] + list(dims[1:])
        return out, channels_last(out) if conv else None
    if kind == "over_batch_nchw":
        return [1] + list(dims[1:]), None
    if kind == "over_pixels":
        if conv:
            return list(dims[:2]) + [1] * (rank - 2), None
        return [dims[0], 1, dims[2]], None
    if kind == "pixels_only":
        if conv:
            return [1, 1] + list(dims[2:]), None
        return [1, dims[1], 1], None
    if kind == "scalar":
        return [1] * rank, None
    if kind == "last_dim":
        return [1] * (rank - 1) + [dims[-1]], None
    if kind == "per_row":
        out = list(dims[:-1]) + [1]
        return out, channels_last(out) if conv else None
    raise ValueError(f"unknown operand kind {kind!r}")


def add_epilogue_read(g, i, direction, kind, epilogue, dtype):
    """Add to ``g`` the contraction of ``direction`` and ``epilogue`` reading
    an operand of ``kind`` (inputs ``r<i>``, or ``s<i>`` and ``t<i>``);
    outputs ``z<i>`` (and ``y<i>``, the contraction's result, for
    ``second``), channels-last for a convolution."""
    y, dims, channel, a, b, k = contraction(g, i, direction)
    operand_dims, strides = operand_layout(kind, dims, channel)
    conv = channel == 1
    operand_type = F32 if epilogue == "f32_operand" else None

    def operand(name):
        return g.tensor(name=name, dim=operand_dims, stride=strides, data_type=operand_type)
    gain = 1.0
    if epilogue == "bn_relu":
        z = g.relu(g.add(g.mul(y, operand(f"s{i}")), operand(f"t{i}")))
        gain = 2.0  # s<i> from [0.5, 2)
    else:
        z = g.add(y, operand(f"r{i}"))
    if epilogue == "cast":
        z = g.cast(z, F32)
    z.set_name(f"z{i}")
    if conv:
        z.set_stride(channels_last(dims))
    # A cast's f32 output holds the dtype intermediate's rounding.
    outputs(contracted(z, a, b, k, gain, rounded=dtype if epilogue == "cast" else None))
    if epilogue == "second":
        y.set_name(f"y{i}")
        if conv:
            y.set_stride(channels_last(dims))
        outputs(contracted(y, a, b, k))
    return z


def combos(direction):
    """The (kind, epilogue) pairs a direction's graph holds."""
    out = [(kind, "bn_relu") for kind in OPERANDS]
    out += [(kind, epilogue) for epilogue in EPILOGUES if epilogue != "bn_relu"
            for kind in SOME]
    return out


def graph(direction, dtype, pairs=None):
    """The build of one graph of ``dtype`` holding ``direction``'s
    contraction once for each (kind, epilogue) of ``pairs`` (default:
    ``combos``)."""
    pairs = combos(direction) if pairs is None else pairs

    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype,
                       compute_data_type="f32")
        for i, (kind, epilogue) in enumerate(pairs):
            add_epilogue_read(g, i, direction, kind, epilogue, dtype)
        return g
    return build


def position_table(dtype):
    """The build of a ViT's patch embedding: a 4 x 4 stride-4 convolution
    of channels-last x (C = 16, K = 32, 12 x 12 pixels), its output
    flattened to [N, K, P·Q] and a position table [1, K, P·Q] added:
    dnn-sink-reshapes moves the add above the view, and the implicit GEMM's
    epilogue reads the table, which varies along the pixels and not the
    images, through a split view."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype,
                       compute_data_type="f32")
        x_dims, w_dims = [N, 16, 12, 12], [32, 16, 4, 4]
        x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        table = g.tensor(name="p", dim=[1, 32, 9])
        y = g.conv_fprop(x, w, stride=[4, 4])
        z = g.add(g.reshape(y, [N, 32, 9]), table)
        z.set_name("z")
        outputs(contracted(z, x, w, 16 * 16))
        return g
    return build


def _positive(direction):
    return tuple(f"s{i}" for i, (_, e) in enumerate(combos(direction)) if e == "bn_relu")


CASES = [
    Case(f"epilogue_reads_{direction}{suffix}_{dtype.mlir}", graph(direction, dtype),
         positive=_positive(direction), seed=SEED + j, config=config)
    for j, (direction, suffix, config, dtype) in enumerate(
        (direction, suffix, config, dtype)
        for direction in DIRECTIONS
        for suffix, config, dtype in (("", None, BF16), ("", None, F16),
                                      ("_sm80", "*=strategy:tc-sm80", BF16))
        if not (suffix and direction in SM90_ONLY))
] + [
    Case(f"epilogue_reads_position_table_{dtype.mlir}", position_table(dtype),
         seed=SEED + 100 + j)
    for j, dtype in enumerate((BF16, F16))
]
