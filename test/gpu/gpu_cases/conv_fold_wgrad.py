"""Filter gradients of few channels with the filter's columns folded into
them on tc-sm90 (dnnc/codegen/gpu/tensorcore/fold.py): C from 1 to 7 (a
pixel of less than 16 bytes, which TMA cannot step), a filter of two or
more columns, K a multiple of 8 (dy read K-contiguous by 16-byte rows).
The kernel function's first launch writes x' (the S columns' pixels side
by side, S x C channels), then tc-sm90 computes the gradient of x' by an
R x 1 filter, its outer taps the GEMM's batch, into dw where it lies.

* ``conv_fold_wgrad_*``: 64 random draws, eight to a graph, bf16 and f16
  in turn: conv_random's geometry (2-D images up to 20 pixels a side, a
  fifth 3-D up to 8; filters of 2-7 columns, stride and dilation 1-3, pre
  and post padding each 0 .. (R - 1) * dilation, a quarter in convolution
  mode; N 1-4), images grown where the elements allow so that N·P·Q runs
  long enough to split K; a few of one filter row (1 x S: one outer tap,
  no batch) and a few storing dw in f32.
* ``conv_fold_wgrad_fixed_*``: the ResNet stem's 7 x 7 / 2 over two
  112 x 112 RGB images (K split over blocks, the splits summed in
  clusters), a 3 x 3 over C = 3 and a 3 x 3 / 2 over C = 1, in bf16 and f16,
  in cross-correlation and convolution mode.
"""

import math
from dataclasses import replace

import numpy as np

from .case import BF16, F16, F32, Case
from .conv_random import ConvConfig, _geometry
from .conv_wgrad_channels import _elements, wgrads

SEED = 20261205
GRAPHS = 8
PER_GRAPH = 8
CHANNELS = (1, 2, 3, 4, 5, 6, 7)
OUTPUT_CHANNELS = (8, 16, 24, 64, 128)
# Elements of x, dy and twice dw (stored as float64).
BUDGET = 150000
ONE_ROW, F32_OUT, CONVOLUTION_MODE, THREE_D = 0.1, 0.1, 0.25, 0.2


def _draw_one(rng):
    """(ConvConfig, dw's type or None) within BUDGET, its filter of two or
    more columns."""
    while True:
        nd = 3 if rng.random() < THREE_D else 2
        image, window, stride, dilation, pre, post = _geometry(rng, nd)
        if nd == 3:
            window = tuple(min(w, 3) for w in window)
        if rng.random() < ONE_ROW:
            window = (1,) * (nd - 1) + window[-1:]
        if window[-1] < 2:
            continue
        pre = tuple(min(p, (w - 1) * d) for p, w, d in zip(pre, window, dilation))
        post = tuple(min(p, (w - 1) * d) for p, w, d in zip(post, window, dilation))
        conv = ConvConfig(
            n=int(rng.integers(1, 5)), c=int(rng.choice(CHANNELS)),
            k=int(rng.choice(OUTPUT_CHANNELS)), image=image, filter=window, stride=stride,
            dilation=dilation, pre=pre, post=post,
            mode="convolution" if rng.random() < CONVOLUTION_MODE else "cross_correlation")
        if any(o < 1 for o in conv.out) or not conv.tma_im2col_fits():
            continue
        grow = int(math.sqrt(BUDGET / max(1, _elements(conv)))) if nd == 2 else 1
        if grow > 1:
            wider = replace(conv, image=tuple(min(96, i * grow) for i in image))
            if all(o >= 1 for o in wider.out) and _elements(wider) <= BUDGET:
                conv = wider
        if _elements(conv) <= BUDGET:
            return conv, (F32 if rng.random() < F32_OUT else None)


def draw(seed=SEED, count=GRAPHS * PER_GRAPH):
    rng = np.random.default_rng(seed)
    return [_draw_one(rng) for _ in range(count)]


CONFIGS = draw()


def _fixed(c, image, k, r, stride, pad, mode="cross_correlation", n=2):
    return ConvConfig(n=n, c=c, k=k, image=(image, image), filter=(r, r),
                      stride=(stride, stride), dilation=(1, 1), pre=(pad, pad),
                      post=(pad, pad), mode=mode)


FIXED = [
    (_fixed(3, 112, 64, 7, 2, 3), None),
    (_fixed(3, 40, 64, 3, 1, 1, "convolution"), None),
    (_fixed(1, 48, 32, 3, 2, 1), None),
]


CASES = [
    Case(f"conv_fold_wgrad_{j:02d}_{dtype.mlir}",
         wgrads(dtype, CONFIGS[j * PER_GRAPH:(j + 1) * PER_GRAPH]), seed=SEED + j)
    for j, dtype in zip(range(GRAPHS), [BF16, F16] * GRAPHS)
] + [
    Case(f"conv_fold_wgrad_fixed_{mode}_{dtype.mlir}",
         wgrads(dtype, [(replace(conv, mode=mode), out) for conv, out in FIXED]),
         seed=SEED + 100 + i)
    for i, (mode, dtype) in enumerate([("cross_correlation", BF16), ("convolution", F16)])
]
