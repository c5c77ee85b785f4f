"""``dnnc::pool`` and ``dnnc::pool_backward``: max or average pooling over
2 or 3 spatial dims with a window, stride and symmetric padding, as
PyTorch's ``max_pool{2,3}d`` / ``avg_pool{2,3}d`` without ceil mode,
dilation or a divisor override (dnnc.torch falls back to torch for those).
Max pooling never takes a padded element; average pooling counts them when
``count_include_pad`` (torch's default). The output takes the input's
layout (row-major or channels-last).
"""

from typing import List

import torch
from torch import Tensor

from dnnc.torch._library import (call, check, dense, empty, is_channels_last, layout_like,
                                 output, qualified)


def _out_shape(x, kernel, stride, padding):
    spatial = [(x.shape[2 + i] + 2 * padding[i] - kernel[i]) // stride[i] + 1
               for i in range(x.dim() - 2)]
    return [x.shape[0], x.shape[1], *spatial]


def _check(x, mode, kernel, stride, padding):
    nd = x.dim() - 2
    check(x.dim() in (4, 5), "pool", f"input 'x': expected rank 4 or 5 (N, C, spatial...), got "
          f"rank {x.dim()}")
    check(mode in ("max", "avg"), "pool", f"mode: expected 'max' or 'avg', got {mode!r}")
    for what, v in (("kernel", kernel), ("stride", stride), ("padding", padding)):
        check(len(v) == nd, "pool", f"{what}: expected {nd} values (spatial rank), got {len(v)}")
    for i in range(nd):
        check(2 * padding[i] <= kernel[i], "pool", f"padding dim {i}: expected at most half "
              f"the window ({kernel[i] // 2}), got {padding[i]}")


def _attrs(mode, kernel, stride, padding, count_include_pad):
    return dict(mode=mode, window=list(kernel),
                stride=list(stride), padding=list(padding),
                count_include_pad=bool(count_include_pad))


@torch.library.custom_op(qualified("pool"), mutates_args=())
def pool(x: Tensor, mode: str, kernel: List[int], stride: List[int], padding: List[int],
         count_include_pad: bool) -> Tensor:
    """Max (``mode="max"``) or average (``"avg"``) pooling."""
    _check(x, mode, kernel, stride, padding)
    x = dense(x)
    shape = _out_shape(x, kernel, stride, padding)
    strides = layout_like(shape, x)
    attrs = _attrs(mode, kernel, stride, padding, count_include_pad)

    def build(g, i):
        return [output(g.pooling(i["x"], **attrs), x.dtype, strides)]

    key = (mode, tuple(kernel), tuple(stride), tuple(padding), bool(count_include_pad))
    return call("pool", key, [("x", x)], build, [x.dtype])[0]


@pool.register_fake
def _(x, mode, kernel, stride, padding, count_include_pad):
    _check(x, mode, kernel, stride, padding)
    return empty(_out_shape(x, kernel, stride, padding), x.dtype, x.device, is_channels_last(x))


@torch.library.custom_op(qualified("pool_backward"), mutates_args=())
def pool_backward(dy: Tensor, x: Tensor, mode: str, kernel: List[int], stride: List[int],
                  padding: List[int], count_include_pad: bool) -> Tensor:
    """dx of pooling from dy and the forward's input."""
    x, dy = dense(x), dense(dy)
    strides = layout_like(x.shape, x)
    attrs = _attrs(mode, kernel, stride, padding, count_include_pad)

    def build(g, i):
        return [output(g.pooling_backward(i["dy"], i["x"], **attrs), x.dtype, strides)]

    key = (mode, tuple(kernel), tuple(stride), tuple(padding), bool(count_include_pad))
    return call("pool_backward", key, [("dy", dy), ("x", x)], build, [x.dtype])[0]


@pool_backward.register_fake
def _(dy, x, mode, kernel, stride, padding, count_include_pad):
    return empty(x.shape, x.dtype, x.device, is_channels_last(x))


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.attrs = inputs[1:]


def _backward(ctx, dy):
    (x,) = ctx.saved_tensors
    return (pool_backward(dy, x, *ctx.attrs),) + (None,) * 5


pool.register_autograd(_backward, setup_context=_setup)
