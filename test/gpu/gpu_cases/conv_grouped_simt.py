"""Random depthwise and small-group convolutions on the simt-depthwise
strategy: forward, data gradient and filter gradient, 192 of each direction
drawn from a fixed seed, eight to a graph, a third of the graphs each bf16,
f16 and f32 (f32 computed as f32: simt-depthwise takes no tf32).

Groups: two draws in three depthwise (K = C, a third of them K = 2C: a
channel multiplier), one in three of a few channels a group: Cg from 2, 3,
4, 8, 16 and Kg from Cg, 2 Cg or Cg / 2 (ResNeXt's 4 in, 4 out among them;
on sm_90a, those of Cg = Kg = 8 or 16 over C a multiple of 64 run as 64
channels a group on tc-sm90 instead: dnn-widen-groups, and
conv_widened_groups.py).
(A 3-D one whose filters for a vector of output channels overflow the
shared memory simt-depthwise stages them in runs on simt-generic, its plan
saying why: one such forward in these draws.)

Geometry: N 1-4; 2-D images of 1-24 pixels a side (a tenth 3-D, 1-8);
filters of 3, 5 or 7 taps a dim (a fifth 1-7 at random); stride 1-3 and
dilation 1-3 a dim; pre and post padding each 0 .. (R - 1) * dilation,
drawn apart (asymmetric); a quarter in convolution mode; C from 8 to 96 in
multiples of 8 (16-byte channel vectors in bf16 and f16) and others (3, 4,
12, 20: narrower vectors, down to one channel); every tensor channels-last
(NHWC, KRSC), so that N x P x Q is a multiple of nothing in particular.
A fifth of the forwards and data gradients end in bias + relu.

One graph of each direction again with the filter gradient's reduction
forced over many small blocks (``SPLIT_CONFIG``: 32 threads, split 5): the
partial sums of several lanes and blocks summed by the second launch.

``LAYERS``: the benchmark's layers (bench/conv_cases.py: MobileNetV2's
3x3, ConvNeXt's 7x7, ResNeXt-50's 32 groups of 4) at a smaller batch, with
the heuristics' own configs: filter gradients of 4 channels and a filter
row a thread whose second launch sums more than 32 partials (a lane two
or three), a strided one, an f32 one (2 channels a thread), and ResNeXt's
forward of 4 channels x 8 outputs a thread.
"""

import numpy as np

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs
from .conv_random import ConvConfig, add_conv, add_grad
from .strides import channels_last

SEED = 20261201
GRAPHS = 24
PER_GRAPH = 8
CHANNELS = (8, 16, 24, 32, 40, 64, 96, 3, 4, 12, 20)
BUDGET = 30000
THREE_D, CONVOLUTION_MODE, EPILOGUE, ANY_FILTER = 0.1, 0.25, 0.2, 0.2
SMALL_GROUPS, MULTIPLIER = 1 / 3, 1 / 3
GROUP_CHANNELS = (2, 3, 4, 4, 8, 16)
SPLIT_CONFIG = "*=strategy:simt-depthwise,block:32,split:5"


def _geometry(rng, nd):
    largest = 24 if nd == 2 else 8
    while True:
        image = rng.integers(1, largest + 1, nd)
        if rng.random() < ANY_FILTER:
            window = rng.integers(1, 8, nd)
        else:
            window = np.full(nd, int(rng.choice([3, 5, 7])))
        stride = rng.integers(1, 4, nd)
        dilation = rng.choice([1, 1, 2, 3], nd)
        span = (window - 1) * dilation
        pre = np.array([rng.integers(0, s + 1) for s in span])
        post = np.array([rng.integers(0, s + 1) for s in span])
        if np.all(image + pre + post - span >= 1):
            return tuple(tuple(int(v) for v in a) for a in
                         (image, window, stride, dilation, pre, post))


def _channels(rng):
    """(C, K, groups): depthwise (with a multiplier of 1 or 2) or a few
    channels a group."""
    if rng.random() < SMALL_GROUPS:
        cg = int(rng.choice(GROUP_CHANNELS))
        kg = max(1, int(rng.choice([cg, 2 * cg, cg // 2])))
        groups = int(rng.integers(2, 9))
        return cg * groups, kg * groups, groups
    c = int(rng.choice(CHANNELS))
    return c, c * (2 if rng.random() < MULTIPLIER else 1), c


def _draw_one(rng, direction):
    while True:
        c, k, groups = _channels(rng)
        nd = 3 if rng.random() < THREE_D else 2
        image, window, stride, dilation, pre, post = _geometry(rng, nd)
        conv = ConvConfig(
            n=int(rng.integers(1, 5)), c=c, k=k, image=image, filter=window, stride=stride,
            dilation=dilation, pre=pre, post=post,
            mode="convolution" if rng.random() < CONVOLUTION_MODE else "cross_correlation",
            groups=groups, epilogue="bias_relu" if direction != "wgrad" and
            rng.random() < EPILOGUE else None)
        if all(o >= 1 for o in conv.out) and conv.elements() <= BUDGET:
            return conv


def draw(direction, seed):
    rng = np.random.default_rng(seed)
    return [_draw_one(rng, direction) for _ in range(GRAPHS * PER_GRAPH)]


DIRECTIONS = ("fprop", "dgrad", "wgrad")
CONFIGS = {d: draw(d, SEED + i) for i, d in enumerate(DIRECTIONS)}


def _add_dgrad_epilogue(g, i, conv):
    """A data gradient with bias + relu after it (conv_random's add_grad
    has no epilogue)."""
    dy = g.tensor(name=f"dy{i}", dim=conv.y_dims, stride=channels_last(conv.y_dims))
    w = g.tensor(name=f"w{i}", dim=conv.w_dims, stride=channels_last(conv.w_dims))
    dx = g.conv_dgrad(dy, w, conv.x_dims, pre_padding=list(conv.pre),
                      post_padding=list(conv.post), stride=list(conv.stride),
                      dilation=list(conv.dilation), conv_mode=conv.mode)
    b = g.tensor(name=f"b{i}", dim=[1, conv.c] + [1] * len(conv.image))
    dx = g.relu(g.add(dx, b)).set_name(f"dx{i}").set_stride(channels_last(conv.x_dims))
    outputs(contracted(dx, dy, w, conv.k // conv.groups * int(np.prod(conv.filter))))


def depthwise_convs(dtype, convs, direction):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type="f32")
        for i, conv in enumerate(convs):
            if direction == "fprop":
                add_conv(g, i, conv)
            elif direction == "dgrad" and conv.epilogue:
                _add_dgrad_epilogue(g, i, conv)
            else:
                add_grad(g, i, conv, direction)
        return g
    return build


CASES = [
    Case(f"conv_grouped_simt_{direction}_{j:02d}_{dtype.mlir}",
         depthwise_convs(dtype, CONFIGS[direction][j * PER_GRAPH:(j + 1) * PER_GRAPH],
                         direction),
         seed=SEED + 100 * i + j)
    for i, direction in enumerate(DIRECTIONS)
    for j, dtype in zip(range(GRAPHS), [BF16, F16, F32] * GRAPHS)
] + [
    Case(f"conv_grouped_simt_split_{direction}_{BF16.mlir}",
         depthwise_convs(BF16, CONFIGS[direction][:PER_GRAPH], direction),
         seed=SEED + 900 + i, config=SPLIT_CONFIG)
    for i, direction in enumerate(DIRECTIONS)
]


def _layer(n, c, k, image, window, stride, pad, groups):
    return ConvConfig(n=n, c=c, k=k, image=(image, image), filter=(window, window),
                      stride=(stride, stride), dilation=(1, 1), pre=(pad, pad),
                      post=(pad, pad), groups=groups)


# (name, direction, dtype, convolution)
LAYERS = [
    ("wgrad_3x3_depthwise", "wgrad", BF16, _layer(8, 144, 144, 56, 3, 1, 1, 144)),
    ("wgrad_7x7_depthwise", "wgrad", BF16, _layer(8, 96, 96, 56, 7, 1, 3, 96)),
    ("wgrad_3x3s2_depthwise", "wgrad", F16, _layer(4, 96, 96, 112, 3, 2, 1, 96)),
    ("wgrad_3x3_depthwise", "wgrad", F32, _layer(4, 144, 144, 28, 3, 1, 1, 144)),
    ("wgrad_3x3_32_groups", "wgrad", BF16, _layer(4, 128, 128, 56, 3, 1, 1, 32)),
    ("fprop_3x3_32_groups", "fprop", BF16, _layer(4, 128, 128, 56, 3, 1, 1, 32)),
    ("fprop_3x3_32_groups", "fprop", F16, _layer(2, 128, 128, 28, 3, 1, 1, 32)),
    # W = 14: tiles along W that divide it (7 for the 7x7, 2 for the 3x3).
    ("fprop_7x7_depthwise_14", "fprop", BF16, _layer(4, 384, 384, 14, 7, 1, 3, 384)),
    ("dgrad_7x7_depthwise_14", "dgrad", BF16, _layer(4, 384, 384, 14, 7, 1, 3, 384)),
    ("fprop_3x3_depthwise_14", "fprop", F16, _layer(4, 384, 384, 14, 3, 1, 1, 384)),
    # The 7x7's filter gradient over rows of 14: runs of 7, two waves.
    ("wgrad_7x7_depthwise_14", "wgrad", BF16, _layer(8, 384, 384, 14, 7, 1, 3, 384)),
    # The 3x3's over rows of 14: runs of 7 that divide W.
    ("wgrad_3x3_depthwise_14", "wgrad", BF16, _layer(8, 384, 384, 14, 3, 1, 1, 384)),
]

CASES += [
    Case(f"conv_grouped_simt_layer_{name}_{dtype.mlir}",
         depthwise_convs(dtype, [conv], direction), seed=SEED + 1000 + i)
    for i, (name, direction, dtype, conv) in enumerate(LAYERS)
]
