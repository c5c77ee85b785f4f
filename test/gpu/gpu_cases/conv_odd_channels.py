"""Random convolutions whose channel counts are not multiples of 8, on
tensor cores: the forward convolution, the data gradient and the filter
gradient, drawn from a fixed seed, ten to a graph, bf16 and f16 in turn.

tc-sm90's TMA cannot step pixels (or filter rows) that are not a multiple
of 16 bytes; tc-sm80's implicit GEMM reads them where they lie, its loaders
cutting each tap's last K step at C with zeros (cp.async of 8 or 4 bytes
for C = 12 or 6, 2-byte loads through registers for odd C:
dnnc/codegen/gpu/tensorcore/sm80/loader.py, im2col.py), on sm_90a as on
sm_80. A forward convolution of a few channels and a filter of several
columns keeps tc-sm90's stem fold (tensorcore/fold.py).

* fprop: C and K from ``ODD`` and ``WIDE`` with at least one of them in
  ``ODD`` (C, the reduced channels, unaligned in most draws), some with an
  epilogue (bias + relu, bias + residual + relu, scale * y + shift);
* dgrad: K (dy's channels, reduced) and C (the GEMM's N, the filter read
  C-contiguous) likewise, stride 1 in half the draws (strided ones: stride
  phases, tensorcore/phases.py);
* wgrad: K (dy's channels, the GEMM's M) or C (x's, the GEMM's N over
  (tap, channel): a tile's columns may span filter taps) unaligned, or
  both; a C of ``WIDE`` (8, 16) under an odd K runs with the taps as the
  GEMM's batch instead (tensorcore/wgrad_taps.py), on tc-sm80 too.

Geometry as conv_random.py draws it: N 1-4, 2-D images of 1-20 pixels a
side or 3-D of 1-8, filters 1-7, stride and dilation 1-3, asymmetric
padding, a quarter in convolution mode; channels-last tensors.
"""

import numpy as np

from .case import BF16, F16, Case
from .conv_random import BUDGET, EPILOGUES, ConvConfig, _geometry, random_convs

SEED = 20261201
GRAPHS = 12          # a direction's
PER_GRAPH = 10
ODD = (1, 3, 5, 6, 7, 12, 63, 65)
WIDE = (8, 16, 64)
THREE_D, CONVOLUTION_MODE, EPILOGUE = 0.2, 0.25, 0.3


def _draw_one(rng, direction):
    """A ConvConfig within BUDGET with unaligned channels where
    ``direction`` reduces or stores them."""
    while True:
        if direction == "wgrad" and rng.random() < 0.4:
            c, k = int(rng.choice((64, 128))), int(rng.choice(ODD))
        else:
            reduced, other = int(rng.choice(ODD)), int(rng.choice(ODD + WIDE))
            if rng.random() < 0.25:
                reduced, other = other, reduced     # the stored channels unaligned
            c, k = (reduced, other) if direction != "dgrad" else (other, reduced)
        nd = 3 if rng.random() < THREE_D else 2
        image, window, stride, dilation, pre, post = _geometry(rng, nd)
        if direction == "dgrad" and rng.random() < 0.5:
            stride = (1,) * nd
        conv = ConvConfig(
            n=int(rng.integers(1, 5)), c=c, k=k, image=image, filter=window, stride=stride,
            dilation=dilation, pre=pre, post=post,
            mode="convolution" if rng.random() < CONVOLUTION_MODE else "cross_correlation",
            epilogue=str(rng.choice(EPILOGUES)) if direction == "fprop" and
            rng.random() < EPILOGUE else None)
        if all(o >= 1 for o in conv.out) and conv.elements() <= BUDGET:
            return conv


def draw(direction, seed, count=GRAPHS * PER_GRAPH):
    """``count`` ConvConfigs of ``direction`` drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return [_draw_one(rng, direction) for _ in range(count)]


DIRECTIONS = ("fprop", "dgrad", "wgrad")
CONFIGS = {d: draw(d, SEED + i) for i, d in enumerate(DIRECTIONS)}

CASES = [
    Case(f"conv_odd_channels_{direction}_{j:02d}_{dtype.mlir}",
         random_convs(dtype, configs[j * PER_GRAPH:(j + 1) * PER_GRAPH], direction),
         positive=tuple(f"s{i}" for i in range(PER_GRAPH)) if direction == "fprop" else (),
         seed=SEED + 1000 * i + j)
    for i, (direction, configs) in enumerate(CONFIGS.items())
    for j, dtype in zip(range(GRAPHS), [BF16, F16] * GRAPHS)
]
