"""Convolution cases: forward, data and filter gradients on 2-D and 3-D
problems with uneven padding, strides and dilations (and true convolution
mode), in f32, f16, bf16 and tf32; and a channels-last forward with a
fused bias and relu.
"""

import dnnc

from .case import BF16, F16, F32, Case, outputs


CONV2D = [
    ([2, 3, 7, 5], [5, 3, 3, 2], dict(pre_padding=[1, 0], post_padding=[2, 1], stride=[2, 1],
                                      dilation=[1, 2])),
    ([1, 6, 7, 7], [4, 3, 3, 3], dict(padding=[1, 1], stride=[1, 3], dilation=[2, 1])),
    ([2, 4, 5, 13], [4, 1, 2, 3], dict(pre_padding=[0, 2], post_padding=[1, 0], stride=[3, 2],
                                       conv_mode="convolution")),
]
CONV3D = ([1, 2, 5, 3, 7], [3, 2, 2, 3, 3], dict(pre_padding=[1, 0, 1], post_padding=[0, 2, 1],
                                                stride=[2, 1, 2], dilation=[1, 1, 2]))


def conv_fprop(dtype, compute=None):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, (xd, wd, attrs) in enumerate(CONV2D + [CONV3D]):
            x, w = g.tensor(name=f"x{i}", dim=xd), g.tensor(name=f"w{i}", dim=wd)
            kw = dict(attrs, compute_data_type=compute) if compute else attrs
            outputs(g.conv_fprop(x, w, **kw).set_name(f"y{i}"))
        return g
    return build


def conv_grads(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, (xd, wd, attrs) in enumerate(CONV2D + [CONV3D]):
            x, w = g.tensor(name=f"x{i}", dim=xd), g.tensor(name=f"w{i}", dim=wd)
            yd = [int(d) for d in g.conv_fprop(x, w, **attrs).dim]
            dy = g.tensor(name=f"dy{i}", dim=yd)
            outputs(g.conv_dgrad(dy, w, xd, **attrs).set_name(f"dx{i}"),
                    g.conv_wgrad(x, dy, wd, **attrs).set_name(f"dw{i}"))
        return g
    return build


def conv_nhwc(dtype):
    """Channels-last input, filter and output (NHWC / KRSC memory)."""
    def build():
        n, c, h, w, k = 2, 7, 9, 11, 5
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[n, c, h, w], stride=[h * w * c, 1, w * c, c])
        wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=[9 * c, 1, 3 * c, c])
        b = g.tensor(name="b", dim=[1, k, 1, 1])
        y = g.relu(g.add(g.conv_fprop(x, wt, padding=[1, 1]), b)).set_name("y")
        y.set_stride([h * w * k, 1, w * k, k])
        outputs(y, g.sigmoid(x).set_name("row_major_out"))
        return g
    return build


CASES = [
    *(Case(f"conv_fprop_{d.mlir}", conv_fprop(d)) for d in (F32, F16, BF16)),
    Case("conv_fprop_tf32", conv_fprop(F32, "tf32")),
    *(Case(f"conv_grads_{d.mlir}", conv_grads(d)) for d in (F32, BF16)),
    *(Case(f"conv_nhwc_{d.mlir}", conv_nhwc(d)) for d in (F32, F16)),
]
