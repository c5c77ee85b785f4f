"""Convolutions on tc-sm80 with K split over blocks
(dnnc/codegen/gpu/tensorcore/sm80/splitk.py): each split's f32 partials in
a workspace, a second launch that sums them in split order and runs the
epilogue. Against PyTorch's figures through the NumPy reference, outputs
poisoned with NaN first, like every family; a split kernel's two calls
must write the same bits (the sum has a fixed order).

* ``conv_sm80_split_wgrad_*``: filter gradients the heuristics split by
  themselves, on sm_90a as on sm_80 (tc-sm90's TMA cannot step rows of
  such channels): C or K from ``ODD`` (the other from ``ODD`` and
  ``WIDE``), long N·P·Q (2-4 images of 24-48 pixels a side) over few
  tiles (K x taps·C), 2-D filters of 1-3 taps a dim, stride and dilation
  1-2, asymmetric padding, a quarter in convolution mode.
* ``conv_sm80_split_forced_*``: conv_odd_channels.py's random forward
  convolutions (some with a fused epilogue: the second launch runs it),
  data gradients (strided ones: each stride phase's GEMM split) and filter
  gradients, with tc-sm80 forced in 64 x 64 x 32 tiles and K split 2, 3,
  5 or 8 ways in turn (fewer where K has fewer steps; the last split may
  run fewer steps than the others).
"""

import math

import numpy as np

import dnnc

from .case import BF16, F16, Case
from .conv_odd_channels import draw as draw_odd
from .conv_random import ConvConfig, add_grad, random_convs

SEED = 20261215
ODD = (1, 3, 7, 63, 65)
WIDE = (8, 16, 64)
# Elements of x, dy and twice dw (stored as float64).
BUDGET = 300000
# N·P·Q at least: 64 K steps of 32 pixels, which the heuristics split
# (contraction.TC80_SPLIT_FROM_STEPS).
MIN_PIXELS = 2048
WGRAD_GRAPHS, PER_WGRAD_GRAPH = 6, 4
FORCED_GRAPHS, PER_FORCED_GRAPH = 4, 8
SPLITS = (2, 3, 5, 8)
CONVOLUTION_MODE = 0.25


def _elements(conv):
    return math.prod(conv.x_dims) + math.prod(conv.y_dims) + 2 * math.prod(conv.w_dims)


def _draw_wgrad(rng):
    """A long filter gradient of unaligned channels within BUDGET."""
    while True:
        odd, other = int(rng.choice(ODD)), int(rng.choice(ODD + WIDE))
        c, k = (odd, other) if rng.random() < 0.5 else (other, odd)
        window = tuple(int(v) for v in rng.integers(1, 4, 2))
        stride = tuple(int(v) for v in rng.integers(1, 3, 2))
        dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
        span = [(f - 1) * d for f, d in zip(window, dilation)]
        pre = tuple(int(rng.integers(0, s + 1)) for s in span)
        post = tuple(int(rng.integers(0, s + 1)) for s in span)
        image = tuple(int(v) for v in rng.integers(24, 49, 2))
        conv = ConvConfig(
            n=int(rng.integers(2, 5)), c=c, k=k, image=image, filter=window, stride=stride,
            dilation=dilation, pre=pre, post=post,
            mode="convolution" if rng.random() < CONVOLUTION_MODE else "cross_correlation")
        if conv.n * math.prod(conv.out) >= MIN_PIXELS and _elements(conv) <= BUDGET:
            return conv


def draw_wgrads(seed=SEED, count=WGRAD_GRAPHS * PER_WGRAD_GRAPH):
    rng = np.random.default_rng(seed)
    return [_draw_wgrad(rng) for _ in range(count)]


WGRADS = draw_wgrads()
FORCED = {d: draw_odd(d, SEED + 10 + i, FORCED_GRAPHS * PER_FORCED_GRAPH)
          for i, d in enumerate(("fprop", "dgrad", "wgrad"))}


def wgrads(dtype, convs):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type="f32")
        for i, conv in enumerate(convs):
            add_grad(g, i, conv, "wgrad")
        return g
    return build


CASES = [
    Case(f"conv_sm80_split_wgrad_{j:02d}_{dtype.mlir}",
         wgrads(dtype, WGRADS[j * PER_WGRAD_GRAPH:(j + 1) * PER_WGRAD_GRAPH]), seed=SEED + j)
    for j, dtype in zip(range(WGRAD_GRAPHS), [BF16, F16] * WGRAD_GRAPHS)
] + [
    Case(f"conv_sm80_split_forced_{direction}_{j:02d}_{dtype.mlir}",
         random_convs(dtype, configs[j * PER_FORCED_GRAPH:(j + 1) * PER_FORCED_GRAPH],
                      direction),
         positive=tuple(f"s{i}" for i in range(PER_FORCED_GRAPH)) if direction == "fprop"
         else (),
         seed=SEED + 100 * (i + 1) + j,
         config=f"*=strategy:tc-sm80,tile:64x64x32,split:{SPLITS[j % len(SPLITS)]}")
    for i, (direction, configs) in enumerate(FORCED.items())
    for j, dtype in zip(range(FORCED_GRAPHS), [BF16, F16] * FORCED_GRAPHS)
]
