"""The normalizations: ``dnnc::layer_norm``, ``dnnc::rms_norm``,
``dnnc::batch_norm`` (training and eval) and ``dnnc::group_norm``, each with
its backward.

Each forward also returns the f32 statistics its backward reads (dnnc's
training-phase outputs): mean and inverse deviation (layer, batch, group
norm) or the inverse RMS (rms norm), so the backward does not recompute
them. Parameter shapes are torch's (``normalized_shape`` for layer/rms
norm, (C,) for batch/group norm); the graphs read them through the views
dnnc's ops take ([1] * axis + normalized_shape, [1, C, 1, ...]).

``batch_norm`` is functional (autograd needs that of a custom op): in
training it also returns the next running mean and variance (momentum,
unbiased variance, as PyTorch's), which ``dnnc.torch.batch_norm`` copies
into the module's buffers; in eval it normalizes with the running ones,
and its backward is the eval formula (the statistics are constants there),
built from pointwise ops and sums.
"""

from typing import List, Optional, Tuple

import torch
from torch import Tensor

from dnnc.torch._library import (call, check, dense, empty, is_channels_last, layout_like,
                                 output, qualified, stats)


def _view(t, shape):
    return t.reshape(shape) if t is not None else None


def _picked(values, needs):
    return [v for v, n in zip(values, needs) if n]


def _grads(grads, needs, count):
    it = iter(grads)
    return tuple(next(it) if i < len(needs) and needs[i] else None for i in range(count))


# ---------------------------------------------------------------- layer norm and rms norm

def _feature_axis(op, x, normalized_shape):
    n = len(normalized_shape)
    check(0 < n <= x.dim() and list(x.shape[x.dim() - n:]) == list(normalized_shape), op,
          f"input 'x': expected trailing dims {list(normalized_shape)} (normalized_shape), "
          f"got shape {list(x.shape)}")
    return x.dim() - n


def _stat_shape(x, axis):
    return list(x.shape[:axis]) + [1] * (x.dim() - axis)


@torch.library.custom_op(qualified("layer_norm"), mutates_args=())
def layer_norm(x: Tensor, normalized_shape: List[int], weight: Optional[Tensor],
               bias: Optional[Tensor], eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    """(y, mean, inverse deviation)."""
    axis = _feature_axis("layer_norm", x, normalized_shape)
    pshape = [1] * axis + list(normalized_shape)
    x = x.contiguous()

    def build(g, i):
        y, mean, inv = g.layernorm(i["x"], scale=i.get("weight"), bias=i.get("bias"),
                                   epsilon=eps, axis=axis, norm_forward_phase="training")
        return [output(y, x.dtype), stats(mean), stats(inv)]

    out = call("layer_norm", (axis, float(eps)),
               [("x", x), ("weight", _view(weight, pshape)), ("bias", _view(bias, pshape))],
               build, [x.dtype, torch.float32, torch.float32])
    return tuple(out)


@layer_norm.register_fake
def _(x, normalized_shape, weight, bias, eps):
    axis = _feature_axis("layer_norm", x, normalized_shape)
    s = _stat_shape(x, axis)
    return (empty(x.shape, x.dtype, x.device), empty(s, torch.float32, x.device),
            empty(s, torch.float32, x.device))


@torch.library.custom_op(qualified("layer_norm_backward"), mutates_args=())
def layer_norm_backward(dy: Tensor, x: Tensor, weight: Optional[Tensor], mean: Tensor,
                        rstd: Tensor, normalized_shape: List[int], has_bias: bool,
                        needs: List[bool]) -> List[Tensor]:
    """[dx, dweight, dbias] where ``needs`` says."""
    axis = _feature_axis("layer_norm_backward", x, normalized_shape)
    pshape = [1] * axis + list(normalized_shape)
    x, dy = x.contiguous(), dy.contiguous()

    def build(g, i):
        dx, dw, db = g.layernorm_backward(i["dy"], i["x"], scale=i.get("weight"),
                                          mean=i["mean"], inv_variance=i["rstd"], axis=axis,
                                          has_bias=has_bias)
        outs = [output(dx, x.dtype) if needs[0] else None,
                output(dw, weight.dtype) if needs[1] else None,
                output(db, dy.dtype) if needs[2] else None]
        return [o for o in outs if o is not None]

    dtypes = _picked([x.dtype, weight.dtype if weight is not None else None, dy.dtype], needs)
    outs = call("layer_norm_backward", (axis, has_bias, tuple(needs)),
                [("dy", dy), ("x", x), ("weight", _view(weight, pshape)),
                 ("mean", mean.contiguous()), ("rstd", rstd.contiguous())], build, dtypes)
    shapes = _picked([x.shape, normalized_shape, normalized_shape], needs)
    return [o.reshape(list(s)) for o, s in zip(outs, shapes)]


@layer_norm_backward.register_fake
def _(dy, x, weight, mean, rstd, normalized_shape, has_bias, needs):
    specs = [(x.shape, x.dtype), (normalized_shape, weight.dtype if weight is not None else None),
             (normalized_shape, dy.dtype)]
    return [empty(s, dt, x.device) for s, dt in _picked(specs, needs)]


def _mean_rstd_autograd(backward_op):
    """(backward, setup_context) of a norm called as (x, arg, weight, bias, eps)
    returning (y, mean, rstd), whose backward op takes (dy, x, weight, mean,
    rstd, arg, has_bias, needs): layer_norm (arg: normalized_shape) and
    group_norm (arg: groups)."""
    def setup(ctx, inputs, output):
        x, arg, weight, bias, eps = inputs
        _, mean, rstd = output
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.arg = arg
        ctx.has_bias = bias is not None
        ctx.mark_non_differentiable(mean, rstd)

    def backward(ctx, dy, dmean, drstd):
        x, weight, mean, rstd = ctx.saved_tensors
        needs = [ctx.needs_input_grad[0], weight is not None and ctx.needs_input_grad[2],
                 ctx.has_bias and ctx.needs_input_grad[3]]
        grads = backward_op(dy, x, weight, mean, rstd, ctx.arg, ctx.has_bias,
                            needs) if any(needs) else []
        dx, dw, db = _grads(grads, needs, 3)
        return dx, None, dw, db, None

    return backward, setup


_backward, _setup = _mean_rstd_autograd(layer_norm_backward)
layer_norm.register_autograd(_backward, setup_context=_setup)


@torch.library.custom_op(qualified("rms_norm"), mutates_args=())
def rms_norm(x: Tensor, normalized_shape: List[int], weight: Optional[Tensor],
             eps: float) -> Tuple[Tensor, Tensor]:
    """(y, inverse RMS)."""
    axis = _feature_axis("rms_norm", x, normalized_shape)
    pshape = [1] * axis + list(normalized_shape)
    x = x.contiguous()

    def build(g, i):
        y, inv = g.rmsnorm(i["x"], scale=i.get("weight"), epsilon=eps, axis=axis,
                           norm_forward_phase="training")
        return [output(y, x.dtype), stats(inv)]

    out = call("rms_norm", (axis, float(eps)),
               [("x", x), ("weight", _view(weight, pshape))], build, [x.dtype, torch.float32])
    return tuple(out)


@rms_norm.register_fake
def _(x, normalized_shape, weight, eps):
    axis = _feature_axis("rms_norm", x, normalized_shape)
    return (empty(x.shape, x.dtype, x.device),
            empty(_stat_shape(x, axis), torch.float32, x.device))


@torch.library.custom_op(qualified("rms_norm_backward"), mutates_args=())
def rms_norm_backward(dy: Tensor, x: Tensor, weight: Optional[Tensor], inv_rms: Tensor,
                      normalized_shape: List[int], needs: List[bool]) -> List[Tensor]:
    """[dx, dweight] where ``needs`` says."""
    axis = _feature_axis("rms_norm_backward", x, normalized_shape)
    pshape = [1] * axis + list(normalized_shape)
    x, dy = x.contiguous(), dy.contiguous()

    def build(g, i):
        dx, dw, _ = g.rmsnorm_backward(i["dy"], i["x"], scale=i.get("weight"),
                                       inv_rms=i["inv_rms"], axis=axis, has_bias=False)
        outs = [output(dx, x.dtype) if needs[0] else None,
                output(dw, weight.dtype) if needs[1] else None]
        return [o for o in outs if o is not None]

    dtypes = _picked([x.dtype, weight.dtype if weight is not None else None], needs)
    outs = call("rms_norm_backward", (axis, tuple(needs)),
                [("dy", dy), ("x", x), ("weight", _view(weight, pshape)),
                 ("inv_rms", inv_rms.contiguous())], build, dtypes)
    shapes = _picked([x.shape, normalized_shape], needs)
    return [o.reshape(list(s)) for o, s in zip(outs, shapes)]


@rms_norm_backward.register_fake
def _(dy, x, weight, inv_rms, normalized_shape, needs):
    specs = [(x.shape, x.dtype), (normalized_shape, weight.dtype if weight is not None else None)]
    return [empty(s, dt, x.device) for s, dt in _picked(specs, needs)]


def _setup_rms_norm(ctx, inputs, output):
    x, normalized_shape, weight, eps = inputs
    ctx.save_for_backward(x, weight, output[1])
    ctx.normalized_shape = normalized_shape
    ctx.mark_non_differentiable(output[1])


def _backward_rms_norm(ctx, dy, dinv):
    x, weight, inv_rms = ctx.saved_tensors
    needs = [ctx.needs_input_grad[0], weight is not None and ctx.needs_input_grad[2]]
    grads = rms_norm_backward(dy, x, weight, inv_rms, ctx.normalized_shape,
                              needs) if any(needs) else []
    dx, dw = _grads(grads, needs, 2)
    return dx, None, dw, None


rms_norm.register_autograd(_backward_rms_norm, setup_context=_setup_rms_norm)


# ---------------------------------------------------------------- batch norm

def _channel_view(t, x):
    return t.reshape([1, -1] + [1] * (x.dim() - 2)) if t is not None else None


def _check_channels(op, x, **params):
    check(x.dim() >= 2, op, f"input 'x': expected rank >= 2 (N, C, ...), got rank {x.dim()}")
    for name, t in params.items():
        if t is not None:
            check(list(t.shape) == [x.shape[1]], op, f"input '{name}': expected "
                  f"[{x.shape[1]}] (channels of 'x'), got {list(t.shape)}")


@torch.library.custom_op(qualified("batch_norm"), mutates_args=())
def batch_norm(x: Tensor, weight: Tensor, bias: Tensor, running_mean: Optional[Tensor],
               running_var: Optional[Tensor], training: bool, momentum: float,
               eps: float) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(y, mean, inverse deviation, next running mean, next running var), the
    statistics (C,) f32: the batch's in training, the running ones in eval.
    The next running statistics are empty (shape [0]) in eval and without
    running statistics."""
    _check_channels("batch_norm", x, weight=weight, bias=bias, running_mean=running_mean,
                    running_var=running_var)
    check(training or (running_mean is not None and running_var is not None), "batch_norm",
          "inputs 'running_mean', 'running_var': expected tensors in eval, got None")
    x = dense(x)
    strides = layout_like(x.shape, x)
    c = x.shape[1]
    params = [("x", x), ("weight", _channel_view(weight, x)), ("bias", _channel_view(bias, x)),
              ("running_mean", _channel_view(running_mean, x)),
              ("running_var", _channel_view(running_var, x))]
    if not training:
        def build(g, i):
            y = g.batchnorm_inference(i["x"], i["running_mean"], i["running_var"],
                                      i["weight"], i["bias"], epsilon=eps)
            return [output(y, x.dtype, strides)]

        (y,) = call("batch_norm_inference", (float(eps),), params, build, [x.dtype])
        none = x.new_empty([0], dtype=torch.float32)
        return (y, running_mean.float().clone(), torch.rsqrt(running_var.float() + eps), none,
                none.clone())
    running = running_mean is not None

    def build(g, i):
        y, mean, inv, new_mean, new_var = g.batchnorm(
            i["x"], i["weight"], i["bias"], i.get("running_mean"), i.get("running_var"),
            epsilon=eps, momentum=momentum)
        outs = [output(y, x.dtype, strides), stats(mean), stats(inv)]
        return outs + ([stats(new_mean), stats(new_var)] if running else [])

    dtypes = [x.dtype] + [torch.float32] * (4 if running else 2)
    out = call("batch_norm", (float(eps), float(momentum)), params, build, dtypes)
    stats_c = [o.reshape(c) for o in out[1:]]
    if not running:
        stats_c += [x.new_empty([0], dtype=torch.float32) for _ in range(2)]
    return (out[0], *stats_c)


@batch_norm.register_fake
def _(x, weight, bias, running_mean, running_var, training, momentum, eps):
    c = x.shape[1]
    stat = [empty([c], torch.float32, x.device) for _ in range(2)]
    running = training and running_mean is not None
    nxt = [empty([c] if running else [0], torch.float32, x.device) for _ in range(2)]
    return (empty(x.shape, x.dtype, x.device, is_channels_last(x)), *stat, *nxt)


@torch.library.custom_op(qualified("batch_norm_backward"), mutates_args=())
def batch_norm_backward(dy: Tensor, x: Tensor, weight: Tensor, mean: Tensor, invstd: Tensor,
                        training: bool, needs: List[bool]) -> List[Tensor]:
    """[dx, dweight, dbias] where ``needs`` says: dnnc's batchnorm_backward in
    training; in eval, dx = dy * weight * invstd, dweight = sum(dy * (x - mean)
    * invstd), dbias = sum(dy), the sums over N and the spatial dims."""
    x, dy = dense(x), dense(dy)
    strides = layout_like(x.shape, x)
    axes = [0] + list(range(2, x.dim()))

    def build(g, i):
        if training:
            dx, dw, db = g.batchnorm_backward(i["dy"], i["x"], i["weight"], i["mean"],
                                              i["invstd"])
        else:
            dx = g.mul(i["dy"], g.mul(i["weight"], i["invstd"]))
            xhat = g.mul(g.sub(i["x"], i["mean"]), i["invstd"])
            dw = g.reduction(g.mul(i["dy"], xhat), "sum", axes, keepdims=True)
            db = g.reduction(i["dy"], "sum", axes, keepdims=True)
        outs = [output(dx, x.dtype, strides) if needs[0] else None,
                output(dw, weight.dtype) if needs[1] else None,
                output(db, weight.dtype) if needs[2] else None]
        return [o for o in outs if o is not None]

    dtypes = _picked([x.dtype, weight.dtype, weight.dtype], needs)
    outs = call("batch_norm_backward", (training, tuple(needs)),
                [("dy", dy), ("x", x), ("weight", _channel_view(weight, x)),
                 ("mean", _channel_view(mean, x)), ("invstd", _channel_view(invstd, x))],
                build, dtypes)
    shapes = _picked([x.shape, weight.shape, weight.shape], needs)
    return [o.reshape(list(s)) if len(s) == 1 else o for o, s in zip(outs, shapes)]


@batch_norm_backward.register_fake
def _(dy, x, weight, mean, invstd, training, needs):
    specs = [empty(x.shape, x.dtype, x.device, is_channels_last(x)),
             empty(weight.shape, weight.dtype, x.device), empty(weight.shape, weight.dtype,
                                                                 x.device)]
    return _picked(specs, needs)


def _setup_batch_norm(ctx, inputs, output):
    x, weight, bias, running_mean, running_var, training, momentum, eps = inputs
    _, mean, invstd, next_mean, next_var = output
    ctx.save_for_backward(x, weight, mean, invstd)
    ctx.training = training
    ctx.mark_non_differentiable(mean, invstd, next_mean, next_var)


def _backward_batch_norm(ctx, dy, dmean, dinvstd, dnext_mean, dnext_var):
    x, weight, mean, invstd = ctx.saved_tensors
    needs = list(ctx.needs_input_grad[:3])
    grads = batch_norm_backward(dy, x, weight, mean, invstd, ctx.training,
                                needs) if any(needs) else []
    dx, dw, db = _grads(grads, needs, 3)
    return dx, dw, db, None, None, None, None, None


batch_norm.register_autograd(_backward_batch_norm, setup_context=_setup_batch_norm)


# ---------------------------------------------------------------- group norm

def _check_groups(x, groups):
    check(x.dim() >= 2 and groups >= 1 and x.shape[1] % groups == 0, "group_norm",
          f"num_groups: expected a divisor of {x.shape[1] if x.dim() >= 2 else '?'} "
          f"(channels of 'x'), got {groups}")


@torch.library.custom_op(qualified("group_norm"), mutates_args=())
def group_norm(x: Tensor, groups: int, weight: Optional[Tensor], bias: Optional[Tensor],
               eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    """(y, mean, inverse deviation), the statistics (N, groups, 1, ...) f32."""
    _check_groups(x, groups)
    _check_channels("group_norm", x, weight=weight, bias=bias)
    x = x.contiguous()

    def build(g, i):
        y, mean, inv = g.groupnorm(i["x"], groups, scale=i.get("weight"), bias=i.get("bias"),
                                   epsilon=eps, norm_forward_phase="training")
        return [output(y, x.dtype), stats(mean), stats(inv)]

    out = call("group_norm", (groups, float(eps)),
               [("x", x), ("weight", _channel_view(weight, x)),
                ("bias", _channel_view(bias, x))], build, [x.dtype, torch.float32, torch.float32])
    return tuple(out)


@group_norm.register_fake
def _(x, groups, weight, bias, eps):
    _check_groups(x, groups)
    s = [x.shape[0], groups] + [1] * (x.dim() - 2)
    return (empty(x.shape, x.dtype, x.device), empty(s, torch.float32, x.device),
            empty(s, torch.float32, x.device))


@torch.library.custom_op(qualified("group_norm_backward"), mutates_args=())
def group_norm_backward(dy: Tensor, x: Tensor, weight: Optional[Tensor], mean: Tensor,
                        rstd: Tensor, groups: int, has_bias: bool,
                        needs: List[bool]) -> List[Tensor]:
    """[dx, dweight, dbias] where ``needs`` says."""
    x, dy = x.contiguous(), dy.contiguous()

    def build(g, i):
        dx, dw, db = g.groupnorm_backward(i["dy"], i["x"], groups, scale=i.get("weight"),
                                          mean=i["mean"], inv_variance=i["rstd"],
                                          has_bias=has_bias)
        outs = [output(dx, x.dtype) if needs[0] else None,
                output(dw, weight.dtype) if needs[1] else None,
                output(db, dy.dtype) if needs[2] else None]
        return [o for o in outs if o is not None]

    dtypes = _picked([x.dtype, weight.dtype if weight is not None else None, dy.dtype], needs)
    outs = call("group_norm_backward", (groups, has_bias, tuple(needs)),
                [("dy", dy), ("x", x), ("weight", _channel_view(weight, x)),
                 ("mean", mean.contiguous()), ("rstd", rstd.contiguous())], build, dtypes)
    c = x.shape[1]
    return [o if k == 0 else o.reshape(c) for k, o in zip(_picked([0, 1, 2], needs), outs)]


@group_norm_backward.register_fake
def _(dy, x, weight, mean, rstd, groups, has_bias, needs):
    c = x.shape[1]
    specs = [empty(x.shape, x.dtype, x.device),
             empty([c], weight.dtype if weight is not None else dy.dtype, x.device),
             empty([c], dy.dtype, x.device)]
    return _picked(specs, needs)


_backward, _setup = _mean_rstd_autograd(group_norm_backward)
group_norm.register_autograd(_backward, setup_context=_setup)
