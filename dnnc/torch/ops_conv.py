"""``dnnc::conv`` and ``dnnc::conv_backward``: convolution of any spatial
rank (2D, 3D), with stride, asymmetric padding, dilation and groups, on
row-major (NCHW) or channels-last images; the output takes the image's
layout. The backward computes the data gradient (``conv_dgrad``), the filter
gradient (``conv_wgrad``) and the bias gradient (a sum over N and the
spatial dims) in one graph, only those asked for.

f32 convolutions multiply as cuDNN's do under PyTorch: on CUDA as tf32 when
``torch.backends.cudnn.allow_tf32`` (the default; grouped convolutions stay
f32, dnnc/compute_types.py), exactly otherwise and always on the CPU, where
PyTorch multiplies exactly.
"""

from typing import List, Optional

import torch
from torch import Tensor

from dnnc.torch._library import (call, check, dense, empty, is_channels_last, layout_like,
                                 output, qualified)


def out_size(size, k, stride, pre, post, dilation):
    return (size + pre + post - dilation * (k - 1) - 1) // stride + 1


def _out_shape(x, w, stride, pre, post, dilation):
    spatial = [out_size(x.shape[2 + i], w.shape[2 + i], stride[i], pre[i], post[i], dilation[i])
               for i in range(x.dim() - 2)]
    return [x.shape[0], w.shape[0], *spatial]


def _compute(x):
    """The conv's compute type, as PyTorch would multiply (module docstring)."""
    if x.dtype != torch.float32:
        return None
    if x.device.type == "cuda" and torch.backends.cudnn.allow_tf32:
        return None  # dnnc's default: tf32 unless grouped, as cuDNN's
    return "float"


def _check(x, w, stride, pre, post, dilation, groups):
    nd = x.dim() - 2
    check(x.dim() in (4, 5), "conv", f"input 'x': expected rank 4 or 5 (N, C, spatial...), "
          f"got rank {x.dim()}")
    check(w.dim() == x.dim(), "conv", f"input 'w': expected rank {x.dim()} (of 'x'), got "
          f"rank {w.dim()}")
    for what, v in (("stride", stride), ("pre_padding", pre), ("post_padding", post),
                    ("dilation", dilation)):
        check(len(v) == nd, "conv", f"{what}: expected {nd} values (spatial rank), got {len(v)}")
    check(groups >= 1 and x.shape[1] == w.shape[1] * groups, "conv",
          f"input 'w' dim 1: expected {x.shape[1] // max(groups, 1)} (channels of 'x' / "
          f"groups {groups}), got {w.shape[1]}")
    check(w.shape[0] % groups == 0, "conv", f"input 'w' dim 0: expected a multiple of groups "
          f"{groups}, got {w.shape[0]}")


@torch.library.custom_op(qualified("conv"), mutates_args=())
def conv(x: Tensor, w: Tensor, bias: Optional[Tensor], stride: List[int],
         pre_padding: List[int], post_padding: List[int], dilation: List[int],
         groups: int) -> Tensor:
    """y = conv(x, w) (+ bias over the channels)."""
    _check(x, w, stride, pre_padding, post_padding, dilation, groups)
    x, w = dense(x), dense(w)
    shape = _out_shape(x, w, stride, pre_padding, post_padding, dilation)
    strides = layout_like(shape, x)
    compute = _compute(x)
    b = bias.reshape([1, -1] + [1] * (x.dim() - 2)) if bias is not None else None

    def build(g, i):
        y = g.conv_fprop(i["x"], i["w"], stride=stride, pre_padding=pre_padding,
                         post_padding=post_padding, dilation=dilation,
                         compute_data_type=compute)
        if "bias" in i:
            y = g.add(y, i["bias"])
        return [output(y, x.dtype, strides)]

    attrs = (tuple(stride), tuple(pre_padding), tuple(post_padding), tuple(dilation), compute)
    return call("conv", attrs, [("x", x), ("w", w), ("bias", b)], build, [x.dtype])[0]


@conv.register_fake
def _(x, w, bias, stride, pre_padding, post_padding, dilation, groups):
    _check(x, w, stride, pre_padding, post_padding, dilation, groups)
    shape = _out_shape(x, w, stride, pre_padding, post_padding, dilation)
    return empty(shape, x.dtype, x.device, is_channels_last(x))


@torch.library.custom_op(qualified("conv_backward"), mutates_args=())
def conv_backward(dy: Tensor, x: Tensor, w: Tensor, stride: List[int], pre_padding: List[int],
                  post_padding: List[int], dilation: List[int], groups: int,
                  needs: List[bool]) -> List[Tensor]:
    """[dx, dw, dbias], each only where ``needs`` says (in that order)."""
    x, w, dy = dense(x), dense(w), dense(dy)
    compute = _compute(x)
    nd = x.dim() - 2
    geometry = dict(stride=stride, pre_padding=pre_padding, post_padding=post_padding,
                    dilation=dilation, compute_data_type=compute)
    dtypes = []
    if needs[0]:
        dtypes.append(x.dtype)
    if needs[1]:
        dtypes.append(w.dtype)
    if needs[2]:
        dtypes.append(dy.dtype)

    def build(g, i):
        outs = []
        if needs[0]:
            dx = g.conv_dgrad(i["dy"], i["w"], list(x.shape), **geometry)
            outs.append(output(dx, x.dtype, layout_like(x.shape, x)))
        if needs[1]:
            dw = g.conv_wgrad(i["x"], i["dy"], list(w.shape), **geometry)
            outs.append(output(dw, w.dtype, layout_like(w.shape, w)))
        if needs[2]:
            db = g.reduction(i["dy"], "sum", [0] + list(range(2, 2 + nd)), keepdims=False)
            outs.append(output(db, dy.dtype))
        return outs

    attrs = (tuple(stride), tuple(pre_padding), tuple(post_padding), tuple(dilation), compute,
             tuple(needs))
    tensors = [("dy", dy), ("x", x if needs[1] else None), ("w", w if needs[0] else None)]
    return call("conv_backward", attrs, tensors, build, dtypes)


@conv_backward.register_fake
def _(dy, x, w, stride, pre_padding, post_padding, dilation, groups, needs):
    outs = []
    if needs[0]:
        outs.append(empty(x.shape, x.dtype, x.device, is_channels_last(x)))
    if needs[1]:
        outs.append(empty(w.shape, w.dtype, w.device, is_channels_last(w)))
    if needs[2]:
        outs.append(empty([w.shape[0]], dy.dtype, dy.device))
    return outs


def _setup(ctx, inputs, output):
    x, w, bias, stride, pre, post, dilation, groups = inputs
    ctx.save_for_backward(x, w)
    ctx.geometry = (stride, pre, post, dilation, groups)
    ctx.has_bias = bias is not None


def _backward(ctx, dy):
    x, w = ctx.saved_tensors
    needs = [ctx.needs_input_grad[0], ctx.needs_input_grad[1],
             ctx.has_bias and ctx.needs_input_grad[2]]
    grads = iter(conv_backward(dy, x, w, *ctx.geometry, needs) if any(needs) else [])
    dx, dw, db = (next(grads) if n else None for n in needs)
    return dx, dw, db, None, None, None, None, None


conv.register_autograd(_backward, setup_context=_setup)
