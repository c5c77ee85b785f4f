"""Convolution cases: forward, data and filter gradients on 2-D and 3-D
problems with uneven padding, strides and dilations (and true convolution
mode), in f32 (asked for: f32 convolutions take tf32 by default), f16, bf16
and tf32; a channels-last forward with a fused bias and relu; grouped and
depthwise convolutions; epilogues through a flattening view; a forward
in half-row tiles (64 x 128), bf16 and tf32.
"""

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs
from .strides import channels_last


CONV2D = [
    ([2, 3, 7, 5], [5, 3, 3, 2], dict(pre_padding=[1, 0], post_padding=[2, 1], stride=[2, 1],
                                      dilation=[1, 2])),
    ([1, 6, 7, 7], [4, 3, 3, 3], dict(padding=[1, 1], stride=[1, 3], dilation=[2, 1])),
    ([2, 4, 5, 13], [4, 1, 2, 3], dict(pre_padding=[0, 2], post_padding=[1, 0], stride=[3, 2],
                                       conv_mode="convolution")),
]
CONV3D = ([1, 2, 5, 3, 7], [3, 2, 2, 3, 3], dict(pre_padding=[1, 0, 1], post_padding=[0, 2, 1],
                                                stride=[2, 1, 2], dilation=[1, 1, 2]))


def exact(dtype):
    """The graph's compute type for these cases: f32 ones test exact f32
    convolutions (held to f32's RTOL), so they ask for float, which f32
    convolutions do not take by default (tf32: dnnc/compute_types.py)."""
    return "float" if dtype is F32 else None


def conv_fprop(dtype, compute=None):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=exact(dtype))
        for i, (xd, wd, attrs) in enumerate(CONV2D + [CONV3D]):
            x, w = g.tensor(name=f"x{i}", dim=xd), g.tensor(name=f"w{i}", dim=wd)
            kw = dict(attrs, compute_data_type=compute) if compute else attrs
            outputs(g.conv_fprop(x, w, **kw).set_name(f"y{i}"))
        return g
    return build


def conv_grads(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=exact(dtype))
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
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=exact(dtype))
        x = g.tensor(name="x", dim=[n, c, h, w], stride=[h * w * c, 1, w * c, c])
        wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=[9 * c, 1, 3 * c, c])
        b = g.tensor(name="b", dim=[1, k, 1, 1])
        y = g.relu(g.add(g.conv_fprop(x, wt, padding=[1, 1]), b)).set_name("y")
        y.set_stride([h * w * k, 1, w * k, k])
        outputs(y, g.sigmoid(x).set_name("row_major_out"))
        return g
    return build


def conv_grouped(dtype, compute=None):
    """Grouped convolutions with 64 channels a group (what tc-sm90 runs as a
    batch of GEMMs, one a group), channels-last: forward with bias + relu,
    3-D forward, the data and filter gradients; ``compute`` the graph's
    compute type."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=compute)
        for i, (xd, wd, groups, attrs) in enumerate([
                ([2, 128, 9, 10], [128, 64, 3, 3], 2, dict(padding=[1, 1])),
                ([1, 256, 7, 5], [64, 64, 1, 3], 4, dict(stride=[1, 2], pre_padding=[0, 1],
                                                          post_padding=[0, 0])),
                ([2, 128, 4, 5, 6], [32, 64, 3, 1, 2], 2, dict(pre_padding=[1, 0, 1],
                                                                post_padding=[1, 0, 0]))]):
            x = g.tensor(name=f"x{i}", dim=xd, stride=channels_last(xd))
            w = g.tensor(name=f"w{i}", dim=wd, stride=channels_last(wd))
            y = g.conv_fprop(x, w, **attrs)
            yd = [int(d) for d in y.dim]
            if i == 0:
                b = g.tensor(name="b0", dim=[1, wd[0], 1, 1])
                y = g.relu(g.add(y, b))
            y.set_name(f"y{i}").set_stride(channels_last(yd))
            taps = 1
            for r in wd[2:]:
                taps *= r
            outputs(contracted(y, x, w, wd[1] * taps))
            if len(xd) == 4:
                dy = g.tensor(name=f"dy{i}", dim=yd, stride=channels_last(yd))
                if attrs.get("stride", [1])[-1] == 1:
                    dx = g.conv_dgrad(dy, w, xd, **attrs).set_name(f"dx{i}")
                    dx.set_stride(channels_last(xd))
                    outputs(contracted(dx, dy, w, wd[0] // groups * taps))
                dw = g.conv_wgrad(x, dy, wd, **attrs).set_name(f"dw{i}")
                dw.set_stride(channels_last(wd))
                outputs(contracted(dw, x, dy, yd[0] * yd[2] * yd[3]))
        return g
    return build


def conv_fused_tc(dtype):
    """The patterns a network fuses into a tensor-core convolution's
    epilogue, channels-last: batchnorm inference (scale, shift) + relu after
    a forward convolution, the activation's gradient after a data gradient,
    a scale of a filter gradient."""
    def build():
        n, c, h, k = 2, 64, 7, 64
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype)

        def tensor(name, dims):
            return g.tensor(name=name, dim=dims, stride=channels_last(dims))
        x, w = tensor("x", [n, c, h, h]), tensor("w", [k, c, 3, 3])
        s, t = g.tensor(name="s", dim=[1, k, 1, 1]), g.tensor(name="t", dim=[1, k, 1, 1])
        y = g.relu(g.add(g.mul(g.conv_fprop(x, w, padding=1), s), t)).set_name("y")
        outputs(contracted(y.set_stride(channels_last([n, k, h, h])), x, w, c * 9, 2.0))
        dy, prev = tensor("dy", [n, k, h, h]), tensor("prev", [n, c, h, h])
        dx = g.relu_backward(g.conv_dgrad(dy, w, [n, c, h, h], padding=1), prev).set_name("dx")
        outputs(contracted(dx.set_stride(channels_last([n, c, h, h])), dy, w, k * 9))
        dw = g.mul(g.conv_wgrad(x, dy, [k, c, 3, 3], padding=1), g.constant(0.5)).set_name("dw")
        outputs(contracted(dw.set_stride(channels_last([k, c, 3, 3])), x, dy, n * h * h))
        return g
    return build


def conv_half_rows(dtype, n=24, k=128):
    """A forward whose 128 x K tiles leave their last wave mostly empty (24
    x 32 x 28 x 28 -> 128, 3x3: 147 tiles of 128x128 for 132 SMs, 56% of
    two waves; 32 x 32 x 28 x 28 -> 256: 196 tiles of 128x256, 74%), so
    that tc-sm90 takes half-row tiles (64 x K, one consumer warpgroup:
    heuristics/contraction.py's HALF_ROWS_MAX_N), with a bias and relu
    after it, channels-last."""
    def build():
        c, h = 32, 28
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype)

        def tensor(name, dims):
            return g.tensor(name=name, dim=dims, stride=channels_last(dims))
        x, w = tensor("x", [n, c, h, h]), tensor("w", [k, c, 3, 3])
        b = g.tensor(name="b", dim=[1, k, 1, 1])
        y = g.relu(g.add(g.conv_fprop(x, w, padding=1), b)).set_name("y")
        outputs(contracted(y.set_stride(channels_last([n, k, h, h])), x, w, c * 9))
        return g
    return build


def conv_views(dtype):
    """Convolutions flattened as ATen's flatten(2) does ([N, K, H, W] ->
    [N, K, H * W], a view) before their epilogue: a 16 x 16 / 16 convolution
    of an RGB image (a ViT's patch embedding; C = 3, its filter's columns
    folded into the channels) plus bias, then a residual [N, K, 196] read
    as [N, K, 14, 14] in the convolution's epilogue; a 3 x 3 convolution of
    64 channels, then relu; and the patch embedding's position table
    [1, K, 196], which the epilogue cannot read (it varies along the pixels
    and not the batch): a pointwise kernel of its own after a tc-sm90
    convolution."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype)
        x = g.tensor(name="x", dim=[2, 3, 224, 224])
        w = g.tensor(name="w", dim=[192, 3, 16, 16])
        b = g.tensor(name="b", dim=[1, 192, 1, 1])
        res = g.tensor(name="res", dim=[2, 192, 196])
        pos = g.tensor(name="pos", dim=[1, 192, 196])
        y = g.add(g.conv_fprop(x, w, stride=[16, 16]), b)
        emb = g.add(g.reshape(y, [2, 192, 196]), res).set_name("residual")
        table = g.add(g.reshape(g.conv_fprop(x, w, stride=[16, 16]), [2, 192, 196]), pos)
        v = g.tensor(name="v", dim=[2, 64, 9, 11], stride=channels_last([2, 64, 9, 11]))
        f = g.tensor(name="f", dim=[64, 64, 3, 3], stride=channels_last([64, 64, 3, 3]))
        z = g.relu(g.reshape(g.conv_fprop(v, f, padding=1), [2, 64, 99])).set_name("flat_relu")
        outputs(contracted(emb, x, w, 3 * 256),
                contracted(table.set_name("position"), x, w, 3 * 256),
                contracted(z, v, f, 64 * 9))
        return g
    return build


# (x dims, window, attrs, bias + relu): depthwise convolutions (groups ==
# C, simt-depthwise): MobileNet's 3x3 / 1 and / 2, ConvNeXt's 7x7, uneven
# padding, a W that the 4-output tiles do not divide, C of 12, 6 and 5
# (4-, 2- and 1-channel vectors), convolution mode with a dilation.
DEPTHWISE = [
    ([2, 32, 9, 13], [3, 3], dict(padding=[1, 1]), True),
    ([2, 24, 10, 11], [7, 7], dict(padding=[3, 3]), True),
    ([1, 16, 8, 9], [3, 3], dict(stride=[2, 2], pre_padding=[0, 1], post_padding=[1, 0]), False),
    ([2, 40, 12, 15], [7, 7], dict(stride=[2, 2], pre_padding=[3, 2], post_padding=[2, 3]),
     True),
    ([2, 12, 7, 10], [3, 3], dict(padding=[1, 1]), True),
    ([1, 6, 6, 7], [3, 3], dict(pre_padding=[1, 0], post_padding=[0, 2]), False),
    ([1, 5, 5, 9], [3, 3], dict(padding=[1, 1]), True),
    ([1, 16, 9, 9], [3, 3], dict(padding=[2, 2], dilation=[2, 2], conv_mode="convolution"),
     False),
]


def conv_depthwise(dtype):
    """Depthwise convolutions, channels-last x and y (DEPTHWISE), and one
    of row-major x (which simt-depthwise hands to simt-generic)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, (xd, win, attrs, epilogue) in enumerate(DEPTHWISE + [DEPTHWISE[0][:2] + (
                dict(padding=[1, 1]), False)]):
            last = i == len(DEPTHWISE)
            x = g.tensor(name=f"x{i}", dim=xd, stride=None if last else channels_last(xd))
            w = g.tensor(name=f"w{i}", dim=[xd[1], 1] + win)
            y = g.conv_fprop(x, w, **attrs)
            yd = [int(d) for d in y.dim]
            if epilogue:
                y = g.relu(g.add(y, g.tensor(name=f"b{i}", dim=[1, xd[1], 1, 1])))
            y.set_name(f"y{i}")
            if not last:
                y.set_stride(channels_last(yd))
            outputs(contracted(y, x, w, win[0] * win[1]))
        return g
    return build


CASES = [
    *(Case(f"conv_depthwise_{d.mlir}", conv_depthwise(d)) for d in (BF16, F16)),
    *(Case(f"conv_grouped_{d.mlir}", conv_grouped(d)) for d in (BF16, F16)),
    *(Case(f"conv_fused_tc_{d.mlir}", conv_fused_tc(d), positive=("s",)) for d in (BF16, F16)),
    *(Case(f"conv_fprop_{d.mlir}", conv_fprop(d)) for d in (F32, F16, BF16)),
    # On tc-sm90 the tensor cores read tf32 by truncation where the reference
    # rounds to nearest (as the tf32 matmul cases).
    Case("conv_fprop_tf32", conv_fprop(F32, "tf32"), rtol=2e-3),
    # f32 tensors multiplied as tf32 on tc-sm90's tf32 paths: grouped
    # convolutions, asking for tf32 (grouped f32 ones default to f32) (a data
    # gradient's filter copied K-major per group, a filter gradient's groups
    # the batch of its transposed product), and the fused patterns, the
    # compute type left to its default (tf32).
    Case("conv_grouped_tf32", conv_grouped(F32, "tf32"), rtol=2e-3),
    Case("conv_fused_tc_tf32", conv_fused_tc(F32), positive=("s",), rtol=2e-3),
    *(Case(f"conv_grads_{d.mlir}", conv_grads(d)) for d in (F32, BF16)),
    *(Case(f"conv_nhwc_{d.mlir}", conv_nhwc(d)) for d in (F32, F16)),
    *(Case(f"conv_views_{d.mlir}", conv_views(d)) for d in (BF16, F16)),
    Case("conv_half_rows_bf16", conv_half_rows(BF16)),
    Case("conv_half_rows_tf32", conv_half_rows(F32), rtol=2e-3),
    Case("conv_half_rows_wide_bf16", conv_half_rows(BF16, 32, 256)),
]
