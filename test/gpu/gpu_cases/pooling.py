"""Pooling cases: max, avg and avg counting the padding, forward and
backward, 2-D and 3-D, with uneven padding and strides; row-major and
channels-last (the window kernels), with forced tile shapes.
"""

import dnnc

from .case import BF16, F16, F32, Case, outputs
from .strides import channels_last


POOLS = [
    ([2, 3, 7, 5], dict(window=[3, 2], stride=[2, 1], pre_padding=[1, 0], post_padding=[2, 1])),
    ([1, 2, 5, 13], dict(window=[2, 3], stride=[1, 3], padding=[1, 2])),
    ([1, 2, 5, 3, 7], dict(window=[2, 2, 3], stride=[2, 1, 2], pre_padding=[1, 0, 2],
                           post_padding=[0, 1, 1])),
]


def pooling(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, (xd, attrs) in enumerate(POOLS):
            x = g.tensor(name=f"x{i}", dim=xd)
            outputs(g.pooling(x, "max", **attrs).set_name(f"max{i}"),
                    g.pooling(x, "avg", **attrs).set_name(f"avg{i}"),
                    g.pooling(x, "avg", count_include_pad=True, **attrs).set_name(f"avg_pad{i}"))
        return g
    return build


def pooling_backward(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, (xd, attrs) in enumerate(POOLS):
            x = g.tensor(name=f"x{i}", dim=xd)
            yd = [int(s) for s in g.pooling(x, "max", **attrs).dim]
            dy = g.tensor(name=f"dy{i}", dim=yd)
            outputs(g.pooling_backward(dy, x, "max", **attrs).set_name(f"max{i}"),
                    g.pooling_backward(dy, x, "avg", **attrs).set_name(f"avg{i}"),
                    g.pooling_backward(dy, x, "avg", count_include_pad=True,
                                       **attrs).set_name(f"avg_pad{i}"))
        return g
    return build


# Channels-last pools (simt-window): ragged C (7: one channel per thread),
# C = 64 (16-byte vectors), 2-D and 3-D, padding and stride.
POOLS_NHWC = [
    ([2, 7, 9, 11], dict(window=[3, 3], stride=[2, 2], padding=[1, 1])),
    ([3, 64, 13, 10], dict(window=[3, 2], stride=[2, 1], pre_padding=[1, 0],
                           post_padding=[2, 1])),
    ([2, 64, 5, 6, 7], dict(window=[2, 3, 3], stride=[1, 2, 2], pre_padding=[1, 1, 0],
                            post_padding=[0, 1, 2])),
]


def pooling_nhwc(dtype):
    """Max (with a fused relu on one), avg and avg counting the padding, on
    channels-last inputs and outputs."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, (xd, attrs) in enumerate(POOLS_NHWC):
            x = g.tensor(name=f"x{i}", dim=xd, stride=channels_last(xd))
            ys = [g.pooling(x, "max", **attrs).set_name(f"max{i}"),
                  g.relu(g.pooling(x, "max", **attrs)).set_name(f"max_relu{i}"),
                  g.pooling(x, "avg", **attrs).set_name(f"avg{i}"),
                  g.pooling(x, "avg", count_include_pad=True, **attrs).set_name(f"avg_pad{i}")]
            for y in ys:
                y.set_stride(channels_last([int(s) for s in y.dim]))
            outputs(*ys)
        return g
    return build


def pooling_backward_nhwc(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, (xd, attrs) in enumerate(POOLS_NHWC):
            x = g.tensor(name=f"x{i}", dim=xd, stride=channels_last(xd))
            yd = [int(s) for s in g.pooling(x, "max", **attrs).dim]
            dy = g.tensor(name=f"dy{i}", dim=yd, stride=channels_last(yd))
            dxs = [g.pooling_backward(dy, x, "max", **attrs).set_name(f"max{i}"),
                   g.pooling_backward(dy, x, "avg", **attrs).set_name(f"avg{i}"),
                   g.pooling_backward(dy, x, "avg", count_include_pad=True,
                                      **attrs).set_name(f"avg_pad{i}")]
            for dx in dxs:
                dx.set_stride(channels_last(xd))
            outputs(*dxs)
        return g
    return build


CASES = [
    *(Case(f"pooling_{d.mlir}", pooling(d)) for d in (F32, BF16)),
    *(Case(f"pooling_backward_{d.mlir}", pooling_backward(d), integers=("x0", "x1", "x2"))
      for d in (F32, F16)),
    *(Case(f"pooling_nhwc_{d.mlir}", pooling_nhwc(d)) for d in (F32, BF16, F16)),
    # Tiles of outputs a thread that divide none of the outputs' H (2-D: 3 x 1)
    # or D (3-D: 2 x 3 x 1), and one output a thread.
    Case("pooling_nhwc_tile_ragged_bf16", pooling_nhwc(BF16), config="*=tile:2x3x1"),
    Case("pooling_nhwc_tile_1_bf16", pooling_nhwc(BF16), config="*=tile:1"),
    *(Case(f"pooling_backward_nhwc_{d.mlir}", pooling_backward_nhwc(d),
           integers=("x0", "x1", "x2")) for d in (F32, BF16)),
]
