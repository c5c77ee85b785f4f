"""A training step's convolution, batchnorm and relu, as a framework's
forward and backward graphs hold them, channels-last: the batchnorm's x is
the convolution's output, read in its memory order as (N*H*W, C) by column
sums (dnnc/decompose/batchnorm.py), the saved output read back in place
(dnn-layout-views); the backward's dy is the relu's gradient of two saved
channels-last tensors, its transposes moved onto them
(dnn-hoist-transposes), and its dx feeds the filter and data gradients.

* ``conv_batchnorm_forward_*``: x -> conv 3x3 -> batchnorm (training,
  running statistics) -> relu -> conv 1x1; the first convolution's output
  and the relu's are returned too (saved for the backward), every tensor
  channels-last.
* ``conv_batchnorm_backward_*``: relu_backward(g, r) -> batchnorm backward
  (x, the saved convolution output) -> the convolution's filter and data
  gradients.
* ``conv_batchnorm_backward_residual_*``: a data gradient that a batchnorm
  backward reads as its dy and the next data gradient adds as its
  residual.
"""

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs
from .strides import channels_last

SHAPES = ((2, 16, 9, 11, 24), (3, 64, 14, 14, 64))   # N, C, H, W, K


def _params(g, k, names):
    return [g.tensor(name=n, dim=[1, k, 1, 1], data_type=F32) for n in names]


def forward(dtype, shape):
    n, c, h, w, k = shape

    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        x_dims, w_dims, y_dims = [n, c, h, w], [k, c, 3, 3], [n, k, h, w]
        x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
        wt = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        w2_dims = [c, k, 1, 1]
        w2 = g.tensor(name="w2", dim=w2_dims, stride=channels_last(w2_dims))
        y = g.conv_fprop(x, wt, padding=[1, 1]).set_name("y")
        y.set_stride(channels_last(y_dims))
        contracted(y, x, wt, c * 9)
        s, b, rm, rv = _params(g, k, ["scale", "bias", "running_mean", "running_var"])
        yn, mean, inv, next_rm, next_rv = g.batchnorm(y, s, b, rm, rv, momentum=0.1)
        r = g.relu(yn).set_name("r")
        r.set_stride(channels_last(y_dims))
        z = g.conv_fprop(r, w2).set_name("z")
        z.set_stride(channels_last([n, c, h, w]))
        outputs(y, r, z, mean, inv, next_rm, next_rv)
        return g
    return build


def backward(dtype, shape):
    n, c, h, w, k = shape

    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        x_dims, w_dims, y_dims = [n, c, h, w], [k, c, 3, 3], [n, k, h, w]
        gr = g.tensor(name="g", dim=y_dims, stride=channels_last(y_dims))
        r = g.tensor(name="r", dim=y_dims, stride=channels_last(y_dims))
        y = g.tensor(name="y", dim=y_dims, stride=channels_last(y_dims))
        x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
        wt = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        s, mean, inv = _params(g, k, ["scale", "mean", "inv_variance"])
        dy = g.relu_backward(gr, r)
        dx, dscale, dbias = g.batchnorm_backward(dy, y, s, mean, inv)
        dx.set_name("dx").set_data_type(dtype)      # as a framework keeps it
        dw = g.conv_wgrad(x, dx, w_dims, padding=[1, 1]).set_name("dw")
        dw.set_stride(channels_last(w_dims))
        din = g.conv_dgrad(dx, wt, x_dims, padding=[1, 1]).set_name("din")
        din.set_stride(channels_last(x_dims))
        dscale.set_data_type(F32)
        dbias.set_data_type(F32)
        # dx is dy scaled by the inverse deviation and the scale (each below
        # 2, drawn positive) less its means: at most 4 times dy's size.
        contracted(dw, x, gr, n * h * w, gain=4.0)
        contracted(din, gr, wt, k * 9, gain=4.0)
        outputs(dw, din, dscale, dbias)
        return g
    return build


def backward_residual(dtype, shape):
    """A data gradient read twice, as ResNet's backward reads one: by the
    batchnorm backward before it (as its dy, in rows) and as the residual
    the next data gradient's epilogue adds (the skip connection)."""
    n, c, h, w, k = shape

    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        x_dims, w_dims = [n, c, h, w], [k, c, 3, 3]
        dy1 = g.tensor(name="dy1", dim=[n, k, h, w], stride=channels_last([n, k, h, w]))
        dy2 = g.tensor(name="dy2", dim=[n, k, h, w], stride=channels_last([n, k, h, w]))
        w1 = g.tensor(name="w1", dim=w_dims, stride=channels_last(w_dims))
        w2 = g.tensor(name="w2", dim=w_dims, stride=channels_last(w_dims))
        y = g.tensor(name="y", dim=x_dims, stride=channels_last(x_dims))
        s, mean, inv = _params(g, c, ["scale", "mean", "inv_variance"])
        d1 = g.conv_dgrad(dy1, w1, x_dims, padding=[1, 1])
        dx, dscale, dbias = g.batchnorm_backward(d1, y, s, mean, inv)
        dx.set_name("dx").set_stride(channels_last(x_dims)).set_data_type(dtype)
        din = g.add(g.conv_dgrad(dy2, w2, x_dims, padding=[1, 1]), d1).set_name("din")
        din.set_stride(channels_last(x_dims)).set_data_type(dtype)
        dscale.set_data_type(F32)
        dbias.set_data_type(F32)
        # dx: d1 scaled by the inverse deviation and the scale (each below
        # 2) less its means; din: two such sums added.
        contracted(dx, dy1, w1, k * 9, gain=4.0)
        contracted(din, dy2, w2, k * 9, gain=2.0)
        outputs(dx, din, dscale, dbias)
        return g
    return build


POSITIVE = {"forward": ("running_var", "scale"), "backward": ("inv_variance", "scale"),
            "backward_residual": ("inv_variance", "scale")}

CASES = [
    Case(f"conv_batchnorm_{kind}_{i}_{dtype.mlir}", build(dtype, shape),
         positive=POSITIVE[kind], seed=20261206 + 10 * i + j)
    for i, shape in enumerate(SHAPES)
    for j, (kind, build) in enumerate((("forward", forward), ("backward", backward),
                                       ("backward_residual", backward_residual)))
    for dtype in (BF16, F16)
]
