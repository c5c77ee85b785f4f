"""Random convolutions of 8, 16 and 32 channels a group, which sm_90a's
pipeline runs as convolutions of 64 channels a group with block-diagonal
filters on tc-sm90 (dnn-widen-groups): forward, data gradient and filter
gradient, 48 of each direction drawn from a fixed seed, eight to a graph,
bf16 and f16 in turn.

Groups: Cg = Kg from 8, 16, 32; C = K from 64 to 256 in multiples of 64
(2 to 32 small groups, 1 to 4 wide ones). Geometry: N 1-4; 2-D images of
1-20 pixels a side (a tenth 3-D, 1-6); filters of 1-5 taps a dim; stride
1-2 and dilation 1-2 a dim; pre and post padding each 0 .. (R - 1) *
dilation, drawn apart; a quarter in convolution mode; every tensor
channels-last. A quarter of the forwards end in bias + relu, which the
implicit GEMM's epilogue takes. A data gradient of stride 2 runs by stride
phase.

``LAYERS``: ResNeXt-50's 3x3 layers of 8, 16 and 32 channels a group at a
small batch.
"""

import numpy as np

from .case import BF16, F16, Case
from .conv_random import ConvConfig, random_convs

SEED = 20261128
GRAPHS = 6
PER_GRAPH = 8
BUDGET = 60000
THREE_D, CONVOLUTION_MODE, EPILOGUE = 0.1, 0.25, 0.25


def _draw_one(rng, direction):
    while True:
        cg = int(rng.choice([8, 16, 32]))
        c = 64 * int(rng.integers(1, 5))
        nd = 3 if rng.random() < THREE_D else 2
        largest = 20 if nd == 2 else 6
        image = tuple(int(v) for v in rng.integers(1, largest + 1, nd))
        window = tuple(int(v) for v in rng.integers(1, 6, nd))
        stride = tuple(int(v) for v in rng.integers(1, 3, nd))
        dilation = tuple(int(v) for v in rng.integers(1, 3, nd))
        span = [(w - 1) * d for w, d in zip(window, dilation)]
        pre = tuple(int(rng.integers(0, s + 1)) for s in span)
        post = tuple(int(rng.integers(0, s + 1)) for s in span)
        conv = ConvConfig(
            n=int(rng.integers(1, 5)), c=c, k=c, image=image, filter=window, stride=stride,
            dilation=dilation, pre=pre, post=post,
            mode="convolution" if rng.random() < CONVOLUTION_MODE else "cross_correlation",
            groups=c // cg,
            epilogue="bias_relu" if direction == "fprop" and rng.random() < EPILOGUE else None)
        if all(o >= 1 for o in conv.out) and conv.elements() <= BUDGET:
            return conv


DIRECTIONS = ("fprop", "dgrad", "wgrad")


def draw(direction, seed):
    rng = np.random.default_rng(seed)
    return [_draw_one(rng, direction) for _ in range(GRAPHS * PER_GRAPH)]


CONFIGS = {d: draw(d, SEED + i) for i, d in enumerate(DIRECTIONS)}


def _layer(n, c, image, groups):
    return ConvConfig(n=n, c=c, k=c, image=(image, image), filter=(3, 3), stride=(1, 1),
                      dilation=(1, 1), pre=(1, 1), post=(1, 1), groups=groups)


# ResNeXt-50 32x4d's second, third and fourth stages' 3x3 (one of each
# direction a graph).
LAYERS = [("3x3_32_groups_of_8", _layer(2, 256, 28, 32)),
          ("3x3_32_groups_of_16", _layer(2, 512, 14, 32)),
          ("3x3_32_groups_of_32", _layer(2, 1024, 7, 32))]

CASES = [
    Case(f"conv_widened_groups_{direction}_{j:02d}_{dtype.mlir}",
         random_convs(dtype, CONFIGS[direction][j * PER_GRAPH:(j + 1) * PER_GRAPH], direction,
                      "f32"),
         seed=SEED + 100 * i + j)
    for i, direction in enumerate(DIRECTIONS)
    for j, dtype in zip(range(GRAPHS), [BF16, F16] * GRAPHS)
] + [
    Case(f"conv_widened_groups_layer_{name}_{direction}_{BF16.mlir}",
         random_convs(BF16, [conv], direction, "f32"), seed=SEED + 1000 + 10 * i + k)
    for i, (name, conv) in enumerate(LAYERS)
    for k, direction in enumerate(DIRECTIONS)
]
