"""Random filter gradients whose C is no multiple of the tile width
(dnnc/codegen/gpu/tensorcore/wgrad_taps.py): C from 8, 16, 24, 40, 96, 144
and 200 (and 64 or 128 now and then, the tiles-in-a-tap layout beside
them), 96 configurations drawn from a fixed seed, eight to a graph, half
of the graphs bf16 and half f16.

Every draw is channels-last with K a multiple of 8 (dy is read
K-contiguous by 16-byte rows), so tc-sm90 runs it: a 1x1 filter (a fifth
of the draws) in tiles that may run past C, several taps with the taps as
the GEMM's batch. The geometry is conv_random's: 2-D images up to 20
pixels a side or 3-D volumes up to 8 (a fifth), filters of 1-7 taps a dim
(3-D: 1-3), stride and dilation 1-3, pre and post padding each 0 ..
(R - 1) * dilation, a quarter in convolution mode; N 1-4, and larger
images where the elements allow (N·P·Q long enough to split K). A
twelfth of the draws are 1x1 gradients of 2 or 4 groups (the groups the
batch, C a group's), and a few store dw in f32 (the accumulator written
through the taps' views).

The first ``SM80_GRAPHS`` graphs are built again with tc-sm80 forced
(``conv_wgrad_channels_sm80_*``): its cp.async gather zero-fills the
chunks past C.
"""

import math
from dataclasses import replace

import numpy as np

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs
from .conv_random import ConvConfig, _geometry
from .strides import channels_last

SEED = 20261204
GRAPHS = 12
PER_GRAPH = 8
CHANNELS = (8, 16, 24, 40, 96, 144, 200)
OUTPUT_CHANNELS = (8, 16, 24, 40, 64, 96, 144)
# Elements of x, dy and twice dw (stored as float64).
BUDGET = 120000
# Shares of the draws: C a multiple of 64, a 1x1 filter, grouped 1x1, dw in f32.
WHOLE, ONE_TAP, GROUPED, F32_OUT = 0.1, 0.2, 0.08, 0.1
CONVOLUTION_MODE, THREE_D = 0.25, 0.2


def _elements(conv):
    return math.prod(conv.x_dims) + math.prod(conv.y_dims) + 2 * math.prod(conv.w_dims)


def _draw_one(rng):
    """(ConvConfig, dw's type or None) within BUDGET."""
    while True:
        kind = rng.random()
        groups = 1
        c = int(rng.choice((64, 128) if kind < WHOLE else CHANNELS))
        k = int(rng.choice(OUTPUT_CHANNELS))
        nd = 3 if rng.random() < THREE_D else 2
        image, window, stride, dilation, pre, post = _geometry(rng, nd)
        if WHOLE <= kind < WHOLE + ONE_TAP + GROUPED:
            window, dilation = (1,) * nd, (1,) * nd
            pre, post = (0,) * nd, (0,) * nd
            if kind >= WHOLE + ONE_TAP:
                groups = int(rng.choice((2, 4)))
                c, k = c * groups, k * groups
        if nd == 3:
            window = tuple(min(w, 3) for w in window)
            pre = tuple(min(p, (w - 1) * d) for p, w, d in zip(pre, window, dilation))
            post = tuple(min(p, (w - 1) * d) for p, w, d in zip(post, window, dilation))
        conv = ConvConfig(
            n=int(rng.integers(1, 5)), c=c, k=k, image=image, filter=window, stride=stride,
            dilation=dilation, pre=pre, post=post,
            mode="convolution" if rng.random() < CONVOLUTION_MODE else "cross_correlation",
            groups=groups)
        if any(o < 1 for o in conv.out) or not conv.tma_im2col_fits():
            continue
        # A longer reduction where the elements allow: the image grown.
        grow = int(math.sqrt(BUDGET / max(1, _elements(conv)))) if nd == 2 else 1
        if grow > 1:
            bigger = tuple(min(56, i * grow) for i in image)
            wider = replace(conv, image=bigger)
            if all(o >= 1 for o in wider.out) and _elements(wider) <= BUDGET:
                conv = wider
        if _elements(conv) <= BUDGET:
            return conv, (F32 if rng.random() < F32_OUT else None)


def draw(seed=SEED, count=GRAPHS * PER_GRAPH):
    rng = np.random.default_rng(seed)
    return [_draw_one(rng) for _ in range(count)]


CONFIGS = draw()


def add_wgrad(g, i, conv, out_type=None):
    """Add the filter gradient of ``conv`` to ``g``: inputs ``x<i>``,
    ``dy<i>``, output ``dw<i>`` (of ``out_type``, else the graph's), every
    tensor channels-last."""
    x = g.tensor(name=f"x{i}", dim=conv.x_dims, stride=channels_last(conv.x_dims))
    dy = g.tensor(name=f"dy{i}", dim=conv.y_dims, stride=channels_last(conv.y_dims))
    dw = g.conv_wgrad(x, dy, conv.w_dims, pre_padding=list(conv.pre),
                      post_padding=list(conv.post), stride=list(conv.stride),
                      dilation=list(conv.dilation), conv_mode=conv.mode)
    dw.set_name(f"dw{i}").set_stride(channels_last(conv.w_dims))
    if out_type is not None:
        dw.set_data_type(out_type)
    outputs(contracted(dw, x, dy, conv.n * math.prod(conv.out)))
    return dw


def wgrads(dtype, configs):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        for i, (conv, out_type) in enumerate(configs):
            add_wgrad(g, i, conv, out_type)
        return g
    return build


SM80_GRAPHS = 4

CASES = [
    Case(f"conv_wgrad_channels_{j:02d}_{dtype.mlir}",
         wgrads(dtype, CONFIGS[j * PER_GRAPH:(j + 1) * PER_GRAPH]), seed=SEED + j)
    for j, dtype in zip(range(GRAPHS), [BF16, F16] * GRAPHS)
] + [
    Case(f"conv_wgrad_channels_sm80_{j:02d}_{dtype.mlir}",
         wgrads(dtype, CONFIGS[j * PER_GRAPH:(j + 1) * PER_GRAPH]), seed=SEED + 100 + j,
         config="*=strategy:tc-sm80")
    for j, dtype in zip(range(SM80_GRAPHS), [BF16, F16] * SM80_GRAPHS)
]
