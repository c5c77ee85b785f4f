"""Random convolutions: 520 forward configurations drawn from a fixed seed,
ten to a graph (each with inputs of its own), half of the graphs bf16 and
half f16: what the tc-sm90 implicit GEMM takes, and what falls back from it;
and 520 data gradients and 520 filter gradients drawn alike (their own
seeds; no epilogue; a data gradient's stride is 1 in three draws of four and
a filter gradient's C 64 or 128 in most: its tiles lie in one filter tap;
the other multiples of 8, 8 to 40 and 256, run on tc-sm90 too, one tap in
tiles past C or the taps as the GEMM's batch: tensorcore/wgrad_taps.py,
and conv_wgrad_channels.py for more of them).

Most are what tc-sm90 takes: one group, channels-last x (strides
[HWC, 1, WC, C]), KRSC filters ([RSC, 1, SC, C]), channels-last outputs and
C a multiple of 8; on random geometry: N 1-4; 2-D images of 1-20 pixels a
side or 3-D volumes of 1-8; filters of 1-7 taps a dim; stride and dilation
1-3 a dim; pre and post padding each 0 .. (R - 1) * dilation; a quarter in
convolution mode. Some end in a fused epilogue: bias + relu, bias + a
residual (laid out as the output) + relu, or scale * y + shift per channel.
The rest fall back, their reason in the plan: to simt-depthwise, groups
(depthwise, 2 or 4) of fewer than 64 channels a group (conv_grouped_simt.py
draws more of those); to simt-generic, row-major (NCHW) operands and groups
simt-depthwise does not stage; to tc-sm80's implicit GEMM, 3-D filters
whose im2col pixel box TMA cannot describe (``tma_im2col_fits``), and
channels TMA cannot step (C, or a data gradient's K and C, or a filter
gradient's K, not a multiple of 8: 1, 3, 7, 63, 65), which tc-sm80's
loaders read where they lie, zero past C (a forward convolution of C below
8 and a filter of several columns keeps tc-sm90, its columns folded into
the channels: tensorcore/fold.py). conv_odd_channels.py draws more of
those.

Output channels K are drawn from all of those sizes: rows of 1, 3 or 65
channels are what the epilogue cannot store by TMA. Each convolution's
inputs, filter and outputs together hold at most ``BUDGET`` elements, to
keep the packages' data small.

The first ``SM80_GRAPHS`` graphs of each direction are built again with
tc-sm80 forced (``conv_random_sm80_*``: its implicit GEMM, a cp.async
gather and mma.sync, in the tiles of ``SM80_CONFIGS`` in turn: 4 warps of
128 x 128 with no tile named, 64 x 64 in 3 stages, and 8 warps of
256 x 128 x 64); what tc-sm80 does not take falls back to simt-generic.
"""

import math
from dataclasses import dataclass

import numpy as np

import dnnc

from .case import BF16, F16, Case, contracted, outputs
from .strides import channels_last

SEED = 20261128
GRAPHS = 52
PER_GRAPH = 10
# C and K: multiples of 8 (what TMA reads C in: 16-byte pixels) and others.
WIDE = (8, 16, 24, 40, 64, 128, 256)
ODD = (1, 3, 7, 63, 65)
# Elements of x, w, the epilogue's inputs and twice y (stored as float64).
BUDGET = 40000
# Shares of the draws (the rest: one group, channels-last, C from WIDE).
GROUPED, ROW_MAJOR, ODD_C, THREE_D, CONVOLUTION_MODE, EPILOGUE = \
    0.04, 0.04, 0.14, 0.2, 0.25, 0.3
EPILOGUES = ("bias_relu", "bias_residual_relu", "scale_shift")
# TMA's im2col pixel box corners for a rank-5 tensor (3-D convolutions).
CORNERS_3D = (-16, 15)


@dataclass(frozen=True)
class ConvConfig:
    """One forward convolution of ``x [n, c, *image]`` with ``w [k, c /
    groups, *filter]``; ``epilogue`` one of EPILOGUES or None."""

    n: int
    c: int
    k: int
    image: tuple
    filter: tuple
    stride: tuple
    dilation: tuple
    pre: tuple
    post: tuple
    mode: str = "cross_correlation"
    groups: int = 1
    channels_last: bool = True
    epilogue: str = None

    @property
    def out(self):
        """The output's spatial sizes."""
        return tuple((i + a + b - d * (f - 1) - 1) // s + 1 for i, f, a, b, s, d in
                     zip(self.image, self.filter, self.pre, self.post, self.stride,
                         self.dilation))

    @property
    def x_dims(self):
        return [self.n, self.c, *self.image]

    @property
    def w_dims(self):
        return [self.k, self.c // self.groups, *self.filter]

    @property
    def y_dims(self):
        return [self.n, self.k, *self.out]

    @property
    def reduced(self):
        """The products each output sums: C / groups x the filter's taps."""
        return self.c // self.groups * math.prod(self.filter)

    def elements(self):
        extra = {None: 0, "bias_relu": self.k, "scale_shift": 2 * self.k,
                 "bias_residual_relu": self.k + math.prod(self.y_dims)}[self.epilogue]
        return (math.prod(self.x_dims) + math.prod(self.w_dims) + extra
                + 2 * math.prod(self.y_dims))

    def strides(self, dims):
        """Channels-last strides of ``dims`` where this convolution is
        channels-last, else None (row-major)."""
        return channels_last(dims) if self.channels_last else None

    def tma_im2col_fits(self):
        """Whether TMA's im2col mode describes the pixel box: corners -pre
        and post - (R - 1) * dilation; only 3-D boxes (within [-16, 15])
        can fall outside with these sizes."""
        if len(self.image) != 3:
            return True
        lo, hi = CORNERS_3D
        return all(lo <= -p <= hi and lo <= q - (f - 1) * d <= hi
                   for p, q, f, d in zip(self.pre, self.post, self.filter, self.dilation))

    def tensor_core_eligible(self):
        """What tc-sm90 takes (bf16 and f16 alike) without handing it to
        tc-sm80 or folding it."""
        return (self.groups == 1 and self.channels_last and self.c % 8 == 0
                and self.tma_im2col_fits())


def _geometry(rng, nd):
    """(image, filter, stride, dilation, pre, post) with an output of at
    least one pixel a dim."""
    largest = 20 if nd == 2 else 8
    while True:
        image = rng.integers(1, largest + 1, nd)
        window = rng.integers(1, 8, nd)
        stride = rng.integers(1, 4, nd)
        dilation = rng.choice([1, 1, 2, 3], nd)
        span = (window - 1) * dilation
        pre = np.array([rng.integers(0, s + 1) for s in span])
        post = np.array([rng.integers(0, s + 1) for s in span])
        if np.all(image + pre + post - span >= 1):
            return tuple(tuple(int(v) for v in a) for a in
                         (image, window, stride, dilation, pre, post))


def _channels(rng, share_odd):
    pool = ODD if rng.random() < share_odd else WIDE
    return int(rng.choice(pool))


def _draw_one(rng, direction="fprop", budget=BUDGET):
    """A ConvConfig within ``budget`` elements (for a data gradient, stride 1 in three
    draws of four: what tc-sm90 takes; for a filter gradient, C a multiple
    of 64 in most draws, its tiles' width, as before tc-sm90 took others)."""
    while True:
        kind = rng.random()
        groups, channels_last, share_odd = 1, True, ODD_C
        if kind < GROUPED:
            c = _channels(rng, 0.0)
            if rng.random() < 0.5:
                groups = c                       # depthwise: K = C x 1 or 2
                k = c * int(rng.integers(1, 3))
            else:
                groups = int(rng.choice([2, 4]))
                k = groups * int(rng.integers(1, 5))
        else:
            if kind < GROUPED + ROW_MAJOR:
                channels_last, share_odd = False, 0.0
            c = _channels(rng, share_odd)
            k = int(rng.choice(WIDE + ODD))
        if direction == "wgrad" and groups == 1 and rng.random() < 0.7:
            c = int(rng.choice((64, 128)))
        nd = 3 if rng.random() < THREE_D else 2
        image, window, stride, dilation, pre, post = _geometry(rng, nd)
        if direction == "dgrad" and rng.random() < 0.75:
            stride = (1,) * nd
        conv = ConvConfig(
            n=int(rng.integers(1, 5)), c=c, k=k, image=image, filter=window, stride=stride,
            dilation=dilation, pre=pre, post=post,
            mode="convolution" if rng.random() < CONVOLUTION_MODE else "cross_correlation",
            groups=groups, channels_last=channels_last,
            epilogue=str(rng.choice(EPILOGUES)) if rng.random() < EPILOGUE and
            direction == "fprop" else None)
        if all(o >= 1 for o in conv.out) and conv.elements() <= budget:
            return conv


def draw(seed=SEED, count=GRAPHS * PER_GRAPH, direction="fprop", budget=BUDGET):
    """``count`` ConvConfigs drawn from ``seed``, each within ``budget`` elements."""
    rng = np.random.default_rng(seed)
    return [_draw_one(rng, direction, budget) for _ in range(count)]


CONFIGS = draw()
GRAD_CONFIGS = {d: draw(SEED + i, direction=d) for i, d in enumerate(("dgrad", "wgrad"), 1)}


def add_conv(g, i, conv):
    """Add ``conv`` to graph ``g`` as inputs ``x<i>``, ``w<i>`` (and the
    epilogue's ``b<i>``, ``r<i>``, ``s<i>``, ``t<i>``) and output ``y<i>``."""
    x = g.tensor(name=f"x{i}", dim=conv.x_dims, stride=conv.strides(conv.x_dims))
    w = g.tensor(name=f"w{i}", dim=conv.w_dims, stride=conv.strides(conv.w_dims))
    y = g.conv_fprop(x, w, pre_padding=list(conv.pre), post_padding=list(conv.post),
                     stride=list(conv.stride), dilation=list(conv.dilation),
                     conv_mode=conv.mode)
    assert [int(d) for d in y.dim] == conv.y_dims, (y.dim, conv)
    per_channel = [1, conv.k] + [1] * len(conv.image)
    gain = 1.0
    if conv.epilogue in ("bias_relu", "bias_residual_relu"):
        y = g.add(y, g.tensor(name=f"b{i}", dim=per_channel))
        if conv.epilogue == "bias_residual_relu":
            y = g.add(y, g.tensor(name=f"r{i}", dim=conv.y_dims,
                                  stride=conv.strides(conv.y_dims)))
        y = g.relu(y)
    elif conv.epilogue == "scale_shift":
        # s<i> is drawn from [0.5, 2) (Case.positive): it scales the sums by 2 at most.
        y = g.add(g.mul(y, g.tensor(name=f"s{i}", dim=per_channel)),
                  g.tensor(name=f"t{i}", dim=per_channel))
        gain = 2.0
    y.set_name(f"y{i}")
    if conv.channels_last:
        y.set_stride(channels_last(conv.y_dims))
    outputs(contracted(y, x, w, conv.reduced, gain))
    return y


def add_grad(g, i, conv, direction):
    """Add the data (``direction`` "dgrad") or filter ("wgrad") gradient of
    ``conv`` to graph ``g``: inputs ``dy<i>`` and ``w<i>`` or ``x<i>``,
    output ``dx<i>`` or ``dw<i>``, laid out as ``conv`` lays out its
    tensors."""
    geometry = dict(pre_padding=list(conv.pre), post_padding=list(conv.post),
                    stride=list(conv.stride), dilation=list(conv.dilation),
                    conv_mode=conv.mode)
    if direction == "dgrad":
        dy = g.tensor(name=f"dy{i}", dim=conv.y_dims, stride=conv.strides(conv.y_dims))
        w = g.tensor(name=f"w{i}", dim=conv.w_dims, stride=conv.strides(conv.w_dims))
        out = g.conv_dgrad(dy, w, conv.x_dims, **geometry).set_name(f"dx{i}")
        dims, (a, b) = conv.x_dims, (dy, w)
        # dx sums at most K / groups x taps products (fewer where strided).
        reduced = conv.k // conv.groups * math.prod(conv.filter)
    else:
        x = g.tensor(name=f"x{i}", dim=conv.x_dims, stride=conv.strides(conv.x_dims))
        dy = g.tensor(name=f"dy{i}", dim=conv.y_dims, stride=conv.strides(conv.y_dims))
        out = g.conv_wgrad(x, dy, conv.w_dims, **geometry).set_name(f"dw{i}")
        dims, (a, b) = conv.w_dims, (x, dy)
        reduced = conv.n * math.prod(conv.out)
    if conv.channels_last:
        out.set_stride(channels_last(dims))
    outputs(contracted(out, a, b, reduced))
    return out


def random_convs(dtype, convs, direction="fprop", compute=None):
    """A build of one graph of ``dtype`` tensors holding ``convs`` (each its
    own inputs) in ``direction``; ``compute``: the graph's compute_data_type
    (None: each convolution's default, tf32 for f32 tensors)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=compute)
        for i, conv in enumerate(convs):
            if direction == "fprop":
                add_conv(g, i, conv)
            else:
                add_grad(g, i, conv, direction)
        return g
    return build


# tc-sm80 forced on a share of the same graphs, in tiles of each size its
# heuristics use (a filter gradient's N narrowed to divide C where no tile
# is named).
SM80_GRAPHS = 12
SM80_CONFIGS = ("*=strategy:tc-sm80", "*=strategy:tc-sm80,tile:64x64x32,stages:3",
                "*=strategy:tc-sm80,tile:256x128x64,stages:3")

CASES = [
    Case(f"conv_random_{j:02d}_{dtype.mlir}",
         random_convs(dtype, CONFIGS[j * PER_GRAPH:(j + 1) * PER_GRAPH]),
         positive=tuple(f"s{i}" for i in range(PER_GRAPH)), seed=SEED + j)
    for j, dtype in zip(range(GRAPHS), [BF16, F16] * GRAPHS)
] + [
    Case(f"conv_random_{direction}_{j:02d}_{dtype.mlir}",
         random_convs(dtype, configs[j * PER_GRAPH:(j + 1) * PER_GRAPH], direction),
         seed=SEED + 1000 * (i + 1) + j)
    for i, (direction, configs) in enumerate(GRAD_CONFIGS.items())
    for j, dtype in zip(range(GRAPHS), [BF16, F16] * GRAPHS)
] + [
    Case(f"conv_random_sm80_{direction}_{j:02d}_{dtype.mlir}",
         random_convs(dtype, configs[j * PER_GRAPH:(j + 1) * PER_GRAPH], direction),
         positive=tuple(f"s{i}" for i in range(PER_GRAPH)) if direction == "fprop" else (),
         seed=SEED + 1000 * i + j, config=SM80_CONFIGS[j % len(SM80_CONFIGS)])
    for i, (direction, configs) in enumerate([("fprop", CONFIGS), *GRAD_CONFIGS.items()])
    for j, dtype in zip(range(SM80_GRAPHS), [BF16, F16] * SM80_GRAPHS)
]
