"""The activations and softmax: ``dnnc::relu``, ``gelu`` (approximate
"none" or "tanh"), ``silu``, ``sigmoid``, ``tanh``, ``leaky_relu``, ``elu``,
``softplus``, each with a ``<name>_backward`` op built from dnnc's
activation backward (dx = dy * f'(x), reading the forward's input), and
``dnnc::softmax`` (``log=True``: log-softmax) over one dim, whose backward
reads the forward's output.

An activation's output takes its input's layout (row-major or
channels-last); softmax's is row-major.
"""

import torch
from torch import Tensor

from dnnc.torch._library import (call, check, dense, empty, is_channels_last, layout_like,
                                 output, qualified)

# name -> the dnnc attributes it takes, in schema order (name, schema type, default).
ACTIVATIONS = {
    "relu": (),
    "gelu": (("approximate", "str", "none"),),
    "silu": (),
    "sigmoid": (),
    "tanh": (),
    "leaky_relu": (("negative_slope", "float", 0.01),),
    "elu": (("alpha", "float", 1.0),),
    "softplus": (("beta", "float", 1.0), ("threshold", "float", 20.0)),
}


def _schema_args(attrs):
    return "".join(f", {kind} {name}" for name, kind, _ in attrs)


def _forward(name, attrs):
    def impl(x, *values):
        x = dense(x)
        kwargs = {a[0]: v for a, v in zip(attrs, values)}
        strides = layout_like(x.shape, x)

        def build(g, i):
            return [output(getattr(g, name)(i["x"], **kwargs), x.dtype, strides)]

        return call(name, tuple(values), [("x", x)], build, [x.dtype])[0]

    return impl


def _backward_impl(name, attrs):
    def impl(dy, x, *values):
        x = dense(x)
        dy = dense(dy)
        kwargs = {a[0]: v for a, v in zip(attrs, values)}
        strides = layout_like(x.shape, x)

        def build(g, i):
            dx = getattr(g, f"{name}_backward")(i["dy"], i["x"], **kwargs)
            return [output(dx, x.dtype, strides)]

        return call(f"{name}_backward", tuple(values), [("dy", dy), ("x", x)], build,
                    [x.dtype])[0]

    return impl


def _fake(x, *values):
    return empty(x.shape, x.dtype, x.device, is_channels_last(x))


def _fake_backward(dy, x, *values):
    return empty(x.shape, x.dtype, x.device, is_channels_last(x))


def _register(name, attrs):
    args = _schema_args(attrs)
    forward = torch.library.custom_op(qualified(name), _forward(name, attrs), mutates_args=(),
                                      schema=f"(Tensor x{args}) -> Tensor")
    backward = torch.library.custom_op(qualified(f"{name}_backward"), _backward_impl(name, attrs),
                                       mutates_args=(),
                                       schema=f"(Tensor dy, Tensor x{args}) -> Tensor")
    forward.register_fake(_fake)
    backward.register_fake(_fake_backward)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.values = inputs[1:]

    def grad(ctx, dy):
        (x,) = ctx.saved_tensors
        return (backward(dy, x, *ctx.values),) + (None,) * len(ctx.values)

    forward.register_autograd(grad, setup_context=setup)
    return forward, backward


OPS = {name: _register(name, attrs) for name, attrs in ACTIVATIONS.items()}


def _axis(x, dim):
    check(-max(x.dim(), 1) <= dim < max(x.dim(), 1), "softmax",
          f"dim: expected in [{-x.dim()}, {x.dim()}), got {dim}")
    return dim % x.dim()


@torch.library.custom_op(qualified("softmax"), mutates_args=())
def softmax(x: Tensor, dim: int, log: bool) -> Tensor:
    """softmax (or log-softmax) of ``x`` over ``dim``."""
    axis = _axis(x, dim)
    x = x.contiguous()
    name = "log_softmax" if log else "softmax"

    def build(g, i):
        return [output(getattr(g, name)(i["x"], axis=axis), x.dtype)]

    return call(name, (axis,), [("x", x)], build, [x.dtype])[0]


@softmax.register_fake
def _(x, dim, log):
    _axis(x, dim)
    return empty(x.shape, x.dtype, x.device)


@torch.library.custom_op(qualified("softmax_backward"), mutates_args=())
def softmax_backward(dy: Tensor, y: Tensor, dim: int, log: bool) -> Tensor:
    """dx from dy and the forward's output y."""
    axis = _axis(y, dim)
    y, dy = y.contiguous(), dy.contiguous()
    name = "log_softmax_backward" if log else "softmax_backward"

    def build(g, i):
        return [output(getattr(g, name)(i["dy"], i["y"], axis=axis), y.dtype)]

    return call(name, (axis,), [("dy", dy), ("y", y)], build, [y.dtype])[0]


@softmax_backward.register_fake
def _(dy, y, dim, log):
    return empty(y.shape, y.dtype, y.device)


def _setup_softmax(ctx, inputs, output):
    ctx.save_for_backward(output)
    ctx.attrs = inputs[1:]


def _backward_softmax(ctx, dy):
    (y,) = ctx.saved_tensors
    return softmax_backward(dy, y, *ctx.attrs), None, None


softmax.register_autograd(_backward_softmax, setup_context=_setup_softmax)
