"""BN-ReLU-conv: 160 random forward convolutions of relu(x * scale + shift)
(or x * scale + shift, or relu(x)) with scale and shift f32 per channel of
x, drawn from a fixed seed, eight to a graph, half of the graphs bf16 and
half f16 (the graph's intermediates too: the prologue rounds as the
reference does); and ResNet's shapes (``CLASSIC``) in each type.

Most are what tc-sm90 runs with the prologue in the convolution's kernel
(dnn-fuse's ``conv_prologue``; sm90/prologue.py): one group (or groups of
64 channels), channels-last tensors, C a multiple of 8, 2-D images of 1-20
pixels a side or 3-D volumes of 1-8, filters of 1-7 taps a dim (1 x 1 and
3 x 3 among them), stride and dilation 1-3, pre and post padding each 0 ..
(R - 1) * dilation (asymmetric), a quarter in convolution mode, K of every
size. The padding is what the prologue must get right: the shift is drawn
around 0.5, so that relu(shift) is mostly not 0 and a padding tap that
kept it would show. Some convolutions keep two kernels, the reference
checking those too: C not a multiple of 8 (3, 63) and depthwise
convolutions, which tc-sm90 does not run with a prologue, and a
pre-activation that is also an output (only the relu joins).

The tolerance of each output scales with its K (``contracted``), the
prologue's output counted through ``gain``: scale in [0.5, 2) and shift
N(0.5, 0.5) keep rms(relu(x * scale + shift)) within 2.2 rms(x).
"""

import math
from dataclasses import dataclass

import numpy as np

import dnnc

from .case import BF16, F16, Case, contracted, outputs
from .conv_random import ConvConfig, _geometry
from .strides import channels_last

SEED = 20261130
GRAPHS = 20
PER_GRAPH = 8
WIDE = (8, 16, 24, 64, 72, 128, 256)
ODD = (3, 63)
KS = (1, 3, 7, 16, 63, 64, 65, 128)
# Elements of x, w, the per-channel operands and twice y.
BUDGET = 40000
# Shares of the draws (the rest: relu(x * scale + shift), one group, C from WIDE).
ODD_C, DEPTHWISE, GROUPS_OF_64, SHARED, THREE_D, CONVOLUTION_MODE = \
    0.08, 0.05, 0.05, 0.08, 0.2, 0.25
PROLOGUES = ("bn_relu", "bn_relu", "bn", "relu")
SHIFT = (0.5, 0.5)         # the shift's mean and std
GAIN = 2.2


@dataclass(frozen=True)
class PrologueConfig:
    """One convolution of ``prologue``(x); ``shared``: x * scale + shift
    is an output too."""

    conv: ConvConfig
    prologue: str
    shared: bool = False

    def elements(self):
        return self.conv.elements() + 2 * self.conv.c + \
            (math.prod(self.conv.x_dims) if self.shared else 0)


def _draw_one(rng):
    while True:
        kind = rng.random()
        groups, c = 1, int(rng.choice(WIDE))
        if kind < ODD_C:
            c = int(rng.choice(ODD))
        elif kind < ODD_C + DEPTHWISE:
            groups = c
        elif kind < ODD_C + DEPTHWISE + GROUPS_OF_64:
            groups, c = 2, 128
        k = groups * int(rng.integers(1, 3)) if groups == c else int(rng.choice(KS))
        if groups == 2:
            k = 2 * int(rng.choice((8, 16, 32)))
        nd = 3 if rng.random() < THREE_D else 2
        image, window, stride, dilation, pre, post = _geometry(rng, nd)
        conv = ConvConfig(
            n=int(rng.integers(1, 4)), c=c, k=k, image=image, filter=window, stride=stride,
            dilation=dilation, pre=pre, post=post,
            mode="convolution" if rng.random() < CONVOLUTION_MODE else "cross_correlation",
            groups=groups)
        prologue = str(rng.choice(PROLOGUES))
        shared = prologue == "bn_relu" and rng.random() < SHARED
        config = PrologueConfig(conv, prologue, shared)
        if all(o >= 1 for o in conv.out) and config.elements() <= BUDGET:
            return config


def draw(seed=SEED, count=GRAPHS * PER_GRAPH):
    """``count`` PrologueConfigs drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return [_draw_one(rng) for _ in range(count)]


CONFIGS = draw()


def _classic(c, k, image, window, stride, pre, post, prologue="bn_relu", nhwc=True):
    nd = len(image)
    conv = ConvConfig(n=2, c=c, k=k, image=tuple(image), filter=tuple(window),
                      stride=(stride,) * nd, dilation=(1,) * nd, pre=tuple(pre),
                      post=tuple(post), channels_last=nhwc)
    return PrologueConfig(conv, prologue)


# ResNet's shapes, small: 3 x 3 padded by 1 (stride 1 and 2), 1 x 1 (stride
# 1 and 2), 3 x 3 padded on one side only (TF's SAME at stride 2), two
# K steps of channels, 3-D 3 x 3 x 3, the plain scale and shift, and NCHW
# tensors (x laid out channels-last by a kernel of dnn-conv-layouts first,
# which the prologue then reads).
CLASSIC = [
    _classic(64, 64, [9, 11], [3, 3], 1, [1, 1], [1, 1]),
    _classic(64, 128, [10, 10], [3, 3], 2, [1, 1], [1, 1]),
    _classic(256, 64, [7, 6], [1, 1], 1, [0, 0], [0, 0]),
    _classic(128, 256, [8, 9], [1, 1], 2, [0, 0], [0, 0]),
    _classic(64, 64, [10, 9], [3, 3], 2, [0, 0], [1, 1]),
    _classic(136, 40, [6, 7], [3, 3], 1, [1, 1], [1, 1]),
    _classic(32, 32, [4, 5, 6], [3, 3, 3], 1, [1, 1, 1], [1, 1, 1]),
    _classic(64, 64, [9, 11], [3, 3], 1, [1, 1], [1, 1], prologue="bn"),
    _classic(64, 32, [8, 8], [3, 3], 1, [1, 1], [1, 1], nhwc=False),
]


def add_prologue_conv(g, i, config):
    """Add ``config`` to graph ``g``: inputs ``x<i>``, ``w<i>``, ``s<i>``
    (scale), ``t<i>`` (shift); output ``y<i>`` (and ``h<i>``, the
    pre-activation, where shared), channels-last where ``config.conv`` is."""
    conv = config.conv
    x = g.tensor(name=f"x{i}", dim=conv.x_dims, stride=conv.strides(conv.x_dims))
    w = g.tensor(name=f"w{i}", dim=conv.w_dims, stride=conv.strides(conv.w_dims))
    h = x
    if config.prologue in ("bn_relu", "bn"):
        per_channel = [1, conv.c] + [1] * len(conv.image)
        scale = g.tensor(name=f"s{i}", dim=per_channel, data_type="f32")
        shift = g.tensor(name=f"t{i}", dim=per_channel, data_type="f32")
        h = g.add(g.mul(h, scale), shift)
        if config.shared:
            h.set_name(f"h{i}")
            if conv.channels_last:
                h.set_stride(channels_last(conv.x_dims))
            outputs(h)
    if config.prologue in ("bn_relu", "relu"):
        h = g.relu(h)
    y = g.conv_fprop(h, w, pre_padding=list(conv.pre), post_padding=list(conv.post),
                     stride=list(conv.stride), dilation=list(conv.dilation),
                     conv_mode=conv.mode)
    assert [int(d) for d in y.dim] == conv.y_dims, (y.dim, conv)
    y.set_name(f"y{i}")
    if conv.channels_last:
        y.set_stride(channels_last(conv.y_dims))
    outputs(contracted(y, x, w, conv.reduced, GAIN))
    return y


def random_prologue_convs(dtype, configs):
    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype)
        for i, config in enumerate(configs):
            add_prologue_conv(g, i, config)
        return g
    return build


CASES = [
    Case(f"conv_prologue_{j:02d}_{dtype.mlir}",
         random_prologue_convs(dtype, CONFIGS[j * PER_GRAPH:(j + 1) * PER_GRAPH]),
         positive=tuple(f"s{i}" for i in range(PER_GRAPH)),
         normal={f"t{i}": SHIFT for i in range(PER_GRAPH)}, seed=SEED + j)
    for j, dtype in zip(range(GRAPHS), [BF16, F16] * GRAPHS)
] + [
    Case(f"conv_prologue_classic_{dtype.mlir}", random_prologue_convs(dtype, CLASSIC),
         positive=tuple(f"s{i}" for i in range(len(CLASSIC))),
         normal={f"t{i}": SHIFT for i in range(len(CLASSIC))}, seed=SEED + 100 + j)
    for j, dtype in enumerate((BF16, F16))
]
