"""Strided data gradients, split by stride phase
(dnnc/codegen/gpu/tensorcore/phases.py), with fused epilogues: strides 2
and 3, filters smaller than the stride, of a size that is no multiple of
it, 1 x 1 (phases without taps, written by the epilogue of 0), dilation
sharing a factor with the stride, images that are no multiple of the
stride, convolution mode, 3-D, and grouped ones (3 x 3 and 1 x 1, on
tc-sm90: each phase's GEMM batched over the groups). One graph of them per 16-bit type on
tc-sm90, again with tc-sm80 forced, and once (bf16) with tc-sm90's K split
4 ways in clusters of 4 (phases of fewer K steps sum without clusters);
and a few with dx stored in f32.

Epilogues: bias + relu (a phase without taps holds relu(bias)), bias + a
residual laid out as dx + relu (the residual read through the phases'
pixel views), scale * dx + shift per channel, or none.
"""

import math

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs
from .conv_random import ConvConfig
from .strides import channels_last

SEED = 20261130

# The forward convolution's geometry: x [n, c, *image] (dx), w [k, c / groups,
# *filter]; the epilogue after the data gradient.
CONFIGS = [
    ConvConfig(2, 64, 64, (15, 13), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1),
               epilogue="bias_relu"),
    ConvConfig(2, 64, 128, (14, 14), (1, 1), (2, 2), (1, 1), (0, 0), (0, 0),
               epilogue="bias_relu"),
    ConvConfig(1, 24, 40, (13, 11), (1, 1), (2, 2), (1, 1), (0, 0), (0, 0)),
    ConvConfig(1, 32, 64, (16, 11), (3, 3), (3, 3), (1, 1), (1, 0), (1, 2),
               epilogue="scale_shift"),
    ConvConfig(2, 16, 24, (10, 9), (2, 2), (3, 3), (1, 1), (0, 1), (1, 0),
               epilogue="bias_relu"),
    ConvConfig(1, 32, 32, (12, 11), (5, 3), (2, 3), (2, 1), (2, 0), (1, 1),
               mode="convolution", epilogue="bias_residual_relu"),
    ConvConfig(1, 16, 32, (12, 12), (7, 7), (2, 2), (1, 1), (3, 3), (3, 3),
               epilogue="bias_residual_relu"),
    ConvConfig(1, 24, 16, (11, 10), (3, 3), (3, 3), (3, 3), (2, 2), (2, 1)),
    ConvConfig(1, 32, 32, (6, 7, 5), (3, 2, 3), (2, 2, 1), (1, 1, 1), (1, 0, 1), (1, 1, 1),
               epilogue="bias_relu"),
    ConvConfig(1, 16, 16, (7, 5, 6), (2, 3, 1), (3, 1, 2), (1, 2, 1), (0, 2, 0), (1, 0, 0),
               mode="convolution", epilogue="scale_shift"),
    ConvConfig(1, 128, 128, (9, 9), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), groups=2,
               epilogue="bias_relu"),
    ConvConfig(2, 128, 256, (7, 8), (1, 1), (2, 2), (1, 1), (0, 0), (0, 0), groups=2,
               epilogue="bias_residual_relu"),
]


def add_dgrad(g, i, conv, out_type=None):
    """Add the data gradient of ``conv`` and its epilogue to ``g``: inputs
    ``dy<i>``, ``w<i>`` (``b<i>``, ``r<i>``, ``s<i>``, ``t<i>``), output
    ``dx<i>`` (of ``out_type``, else the graph's), every tensor
    channels-last."""
    dy = g.tensor(name=f"dy{i}", dim=conv.y_dims, stride=channels_last(conv.y_dims))
    w = g.tensor(name=f"w{i}", dim=conv.w_dims, stride=channels_last(conv.w_dims))
    dx = g.conv_dgrad(dy, w, conv.x_dims, pre_padding=list(conv.pre),
                      post_padding=list(conv.post), stride=list(conv.stride),
                      dilation=list(conv.dilation), conv_mode=conv.mode)
    per_channel = [1, conv.c] + [1] * len(conv.image)
    gain = 1.0
    if conv.epilogue in ("bias_relu", "bias_residual_relu"):
        dx = g.add(dx, g.tensor(name=f"b{i}", dim=per_channel))
        if conv.epilogue == "bias_residual_relu":
            dx = g.add(dx, g.tensor(name=f"r{i}", dim=conv.x_dims,
                                    stride=channels_last(conv.x_dims)))
        dx = g.relu(dx)
    elif conv.epilogue == "scale_shift":
        # s<i> is drawn from [0.5, 2) (Case.positive).
        dx = g.add(g.mul(dx, g.tensor(name=f"s{i}", dim=per_channel)),
                   g.tensor(name=f"t{i}", dim=per_channel))
        gain = 2.0
    dx.set_name(f"dx{i}").set_stride(channels_last(conv.x_dims))
    if out_type is not None:
        dx.set_data_type(out_type)
    # dx sums at most K / groups x taps products (fewer: a phase's taps).
    outputs(contracted(dx, dy, w, conv.k // conv.groups * math.prod(conv.filter), gain))
    return dx


def phase_dgrads(dtype, out_type=None, configs=CONFIGS):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type="f32")
        for i, conv in enumerate(configs):
            add_dgrad(g, i, conv, out_type)
        return g
    return build


POSITIVE = tuple(f"s{i}" for i, c in enumerate(CONFIGS) if c.epilogue == "scale_shift")

CASES = [
    Case(f"conv_phases{suffix}_{dtype.mlir}", phase_dgrads(dtype), positive=POSITIVE,
         seed=SEED + j, config=config)
    for j, (suffix, config, dtype) in enumerate([
        ("", None, BF16), ("", None, F16),
        ("_sm80", "*=strategy:tc-sm80", BF16), ("_sm80", "*=strategy:tc-sm80", F16),
        ("_clusters", "*=strategy:tc-sm90,tile:64x64x64,stages:4,split:4,cluster:4", BF16)])
] + [
    # dx stored in f32: the accumulator itself, through the phases' views.
    Case("conv_phases_f32_out_bf16", phase_dgrads(BF16, F32, CONFIGS[:5]),
         positive=tuple(f"s{i}" for i, c in enumerate(CONFIGS[:5])
                        if c.epilogue == "scale_shift"), seed=SEED + 10),
]
