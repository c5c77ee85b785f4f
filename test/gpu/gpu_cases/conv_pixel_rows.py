"""1x1, unit-stride, unpadded convolutions, whose activation tc-sm90 reads
as the [N*H*W, C] matrix by tiled TMA boxes (the config's ``tiled``,
which the heuristics set for them: dnnc/codegen/gpu/tensorcore/pixel_rows.py),
forward and data gradient, each package once by default (tiled) and once
with ``tiled:0`` (TMA's im2col mode), bf16 and f16.

The geometry: N*H*W no multiple of the 128-row tile (its last tile's rows
past M zero-filled by TMA and not stored), C no multiple of the 64-channel K
step (72, 200: channels past C zero-filled), K narrower and wider than a
tile, one pixel (1x1 image), a 3-D convolution, ResNet-50's 1x1 14x14 layer
at batch 2; epilogues bias + relu, bias + residual + relu, scale * y + shift.
"""

import dnnc

from .case import BF16, F16, Case
from .conv_phases import add_dgrad
from .conv_random import ConvConfig, add_conv

SEED = 20261128


def one_by_one(n, c, k, image, epilogue=None):
    """A 1x1 convolution of unit stride, no padding, channels-last."""
    nd = len(image)
    return ConvConfig(n, c, k, tuple(image), (1,) * nd, (1,) * nd, (1,) * nd, (0,) * nd,
                      (0,) * nd, epilogue=epilogue)


CONFIGS = [
    one_by_one(3, 72, 40, (9, 11), "bias_relu"),
    one_by_one(2, 200, 136, (7, 13), "bias_residual_relu"),
    one_by_one(1, 64, 8, (1, 1)),
    one_by_one(2, 1024, 256, (14, 14), "scale_shift"),
    one_by_one(2, 128, 264, (15, 17)),
    one_by_one(1, 48, 32, (3, 5, 7), "bias_relu"),
]
POSITIVE = tuple(f"s{i}" for i, c in enumerate(CONFIGS) if c.epilogue == "scale_shift")


def pixel_rows(dtype, direction):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type="f32")
        for i, conv in enumerate(CONFIGS):
            if direction == "fprop":
                add_conv(g, i, conv)
            else:
                add_dgrad(g, i, conv)
        return g
    return build


CASES = [
    Case(f"conv_pixel_rows_{direction}{suffix}_{dtype.mlir}", pixel_rows(dtype, direction),
         positive=POSITIVE, seed=SEED + j, config=config)
    for j, (direction, suffix, config, dtype) in enumerate(
        (direction, suffix, config, dtype)
        for direction in ("fprop", "dgrad")
        for suffix, config in (("", None), ("_im2col", "*=tiled:0"))
        for dtype in (BF16, F16))
]
