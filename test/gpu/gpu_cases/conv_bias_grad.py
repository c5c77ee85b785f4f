"""Filter gradients with their bias gradient (db = the sum of dy over
N·(D)·P·Q) in one tc-sm90 kernel (dnn-fuse's ``conv_bias_grad``;
dnnc/codegen/gpu/tensorcore/sm90/bias_grad.py), against the reference.

* ``chosen``: 3x3 padded, 1x1, strided with asymmetric padding, dilated,
  3-D, C = 24 over 3x3 taps (the taps the GEMM's batch: tap 0's blocks
  sum), K of 24, 40, 72 and 200 (tiles of M past K), the sum before the
  filter gradient in the graph and without kept dims; bf16 and f16, with
  the heuristics' tiles and K splits. Three pairs to a graph.
* ``splits``: one long 1x1 and one 3x3 gradient with the K split forced
  each way the partials are summed: unsplit, 2 splits (the last warp to
  arrive sums), 8 (a second launch), a cluster of 2 splits (its owner
  sums), 8 in clusters of 2 (four partials, the last to arrive), 16 in
  clusters of 2 (a second launch).
* ``backward``: dx, dw and db of one dy (a data gradient beside the
  fused pair), dy an input or computed by a relu_backward.
* ``tf32``: f32 tensors (tf32 filter gradient): the sum stays a kernel of
  its own (the plan says why), checked all the same.

dw's tolerance scales with N·P·Q (``contracted``); db is a sum of N·P·Q
elements of dy, held to the same rule with dy as both factors.
"""

import math

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs
from .strides import channels_last

SEED = 20261205


def _y_dims(x_dims, k, window, stride, dilation, pre, post):
    out = [(i + a + b - d * (f - 1) - 1) // s + 1 for i, f, a, b, s, d in
           zip(x_dims[2:], window, pre, post, stride, dilation)]
    return [x_dims[0], k, *out]


def add_wgrad_bias(g, i, x_dims, k, window, stride=None, dilation=None, pre=None, post=None,
                   bias_first=False, keepdims=True):
    """Inputs ``x<i>``, ``dy<i>``; outputs ``dw<i>`` (KRSC) and ``db<i>``."""
    nd = len(window)
    stride, dilation = stride or [1] * nd, dilation or [1] * nd
    pre, post = pre or [0] * nd, post or [0] * nd
    y_dims = _y_dims(x_dims, k, window, stride, dilation, pre, post)
    w_dims = [k, x_dims[1], *window]
    x = g.tensor(name=f"x{i}", dim=list(x_dims), stride=channels_last(list(x_dims)))
    dy = g.tensor(name=f"dy{i}", dim=y_dims, stride=channels_last(y_dims))
    axes = [0] + list(range(2, len(y_dims)))
    pixels = math.prod(y_dims) // k
    if bias_first:
        db = g.reduction(dy, "sum", axes, keepdims=keepdims)
    dw = g.conv_wgrad(x, dy, w_dims, stride=list(stride), dilation=list(dilation),
                      pre_padding=list(pre), post_padding=list(post))
    if not bias_first:
        db = g.reduction(dy, "sum", axes, keepdims=keepdims)
    dw.set_name(f"dw{i}").set_stride(channels_last(w_dims))
    db.set_name(f"db{i}")
    outputs(contracted(dw, x, dy, pixels))
    outputs(contracted(db, dy, dy, pixels))


CHOSEN = [
    dict(x_dims=[4, 64, 14, 14], k=64, window=[3, 3], pre=[1, 1], post=[1, 1]),
    dict(x_dims=[8, 128, 7, 9], k=72, window=[1, 1]),
    dict(x_dims=[3, 64, 15, 13], k=200, window=[3, 3], stride=[2, 2], pre=[1, 0],
         post=[0, 1]),
    dict(x_dims=[2, 32, 12, 12], k=40, window=[3, 3], dilation=[2, 2], pre=[2, 2],
         post=[2, 2], bias_first=True),
    dict(x_dims=[2, 16, 4, 6, 6], k=24, window=[3, 3, 3], pre=[1, 1, 1], post=[1, 1, 1],
         keepdims=False),
    dict(x_dims=[2, 24, 10, 10], k=128, window=[3, 3], pre=[1, 1], post=[1, 1]),
]
PER_GRAPH = 3
# (name, pair, config override): the K split summed each way.
LONG_1X1 = dict(x_dims=[4, 64, 32, 32], k=96, window=[1, 1])
LONG_3X3 = dict(x_dims=[4, 64, 32, 32], k=64, window=[3, 3], pre=[1, 1], post=[1, 1])
SPLITS = [
    ("unsplit", LONG_3X3, "tile:128x64x64,split:1"),
    ("last_arrival", LONG_3X3, "tile:128x64x64,split:2"),
    ("second_launch", LONG_3X3, "tile:128x64x64,split:8"),
    ("cluster_owner", LONG_1X1, "tile:128x64x64,split:2,cluster:2"),
    ("cluster_partials", LONG_1X1, "tile:128x64x64,split:8,cluster:2"),
    ("cluster_second_launch", LONG_1X1, "tile:128x64x64,split:16,cluster:2"),
]


def _graph(dtype, pairs):
    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype,
                       compute_data_type="f32")
        for i, pair in enumerate(pairs):
            add_wgrad_bias(g, i, **pair)
        return g
    return build


def _backward(dtype, computed):
    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype,
                       compute_data_type="f32")
        xd, yd, wd = [4, 64, 14, 14], [4, 128, 14, 14], [128, 64, 3, 3]
        x = g.tensor(name="x", dim=xd, stride=channels_last(xd))
        w = g.tensor(name="w", dim=wd, stride=channels_last(wd))
        given = g.tensor(name="dy", dim=yd, stride=channels_last(yd))
        dy = given
        if computed:
            y = g.tensor(name="y", dim=yd, stride=channels_last(yd))
            dy = g.relu_backward(given, y)
        # (Tolerances from the drawn dy: relu_backward only zeroes some of it.)
        dx = g.conv_dgrad(dy, w, xd, padding=1).set_name("dx")
        outputs(contracted(dx.set_stride(channels_last(xd)), given, w, 128 * 9))
        dw = g.conv_wgrad(x, dy, wd, padding=1).set_name("dw")
        outputs(contracted(dw.set_stride(channels_last(wd)), x, given, 4 * 14 * 14))
        db = g.reduction(dy, "sum", [0, 2, 3]).set_name("db")
        outputs(contracted(db, given, given, 4 * 14 * 14))
        return g
    return build


def _tf32():
    g = dnnc.Graph(io_data_type=F32)
    add_wgrad_bias(g, 0, **CHOSEN[0])
    return g


CASES = [
    Case(f"conv_bias_grad_{j:02d}_{dtype.mlir}",
         _graph(dtype, CHOSEN[j * PER_GRAPH:(j + 1) * PER_GRAPH]), seed=SEED + j)
    for j in range(len(CHOSEN) // PER_GRAPH) for dtype in (BF16, F16)
] + [
    Case(f"conv_bias_grad_split_{name}_{dtype.mlir}", _graph(dtype, [pair]),
         seed=SEED + 10 + j, config=f"*={config}")
    for j, (name, pair, config) in enumerate(SPLITS) for dtype in (BF16, F16)
] + [
    Case(f"conv_bias_grad_backward_{'computed' if computed else 'input'}_{dtype.mlir}",
         _backward(dtype, computed), seed=SEED + 30 + j)
    for j, (computed, dtype) in enumerate([(False, BF16), (True, F16)])
] + [
    Case("conv_bias_grad_tf32", _tf32, seed=SEED + 20, rtol=2e-3),
]
