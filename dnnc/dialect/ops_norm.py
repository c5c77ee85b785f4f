"""Normalizations and their backward ops.

Shapes keep the rank of x, as cuDNN does, so every parameter and statistic
broadcasts against x:

* layernorm / rmsnorm normalize over dims ``[axis, rank)``: scale and bias are
  ``[1] * axis + x.shape[axis:]``; mean / inv_variance (rmsnorm: inv_rms) are
  ``x.shape[:axis] + [1] * (rank - axis)``.
* batchnorm normalizes per channel (dim 1) over N and the spatial dims: scale,
  bias, mean, variance and running statistics are ``[1, C, 1, ...]``.
* instancenorm normalizes per (N, C) over the spatial dims: stats ``[N, C, 1, ...]``,
  scale and bias ``[1, C, 1, ...]``.
* groupnorm splits C into ``groups`` and normalizes each (N, group) over its
  channels and the spatial dims: stats ``[N, groups, 1, ...]``, scale and bias
  ``[1, C, 1, ...]``.

Statistics are f32. ``inv_variance`` is 1 / sqrt(var + epsilon), with the biased
variance. layernorm and rmsnorm take epsilon from their optional rank-0
``epsilon`` operand when given (a runtime scalar, ``Graph.scalar``: one
compiled graph for every epsilon), else from the attribute. Training batchnorm updates running statistics with PyTorch's rule
``running = (1 - momentum) * running + momentum * batch`` (unbiased batch
variance for the running variance).
"""

import math

from dnnc.dialect.opdef import Attr, Operand, Result, TensorInfo, op
from dnnc.dialect.types import data_type

F32 = data_type.FLOAT
EPS = Attr("epsilon", "float", 1e-5)
STATS = (Attr("training", "bool", False, doc="also return the saved statistics"),)


def _param_shape(ctx, name, shape, why):
    if ctx.operands.get(name) is not None:
        ctx.expect_shape(name, shape, why)


def _gradients(ctx, x, param_shape):
    """Results of a norm's backward op: dx, and dscale / dbias shaped like the
    parameters when scale is given / has_bias is set."""
    out = {"dx": TensorInfo(x.shape)}
    if ctx.operands.get("scale") is not None:
        out["dscale"] = TensorInfo(param_shape)
    if ctx.attrs["has_bias"]:
        out["dbias"] = TensorInfo(param_shape)
    return out


def _feature_norm(ctx):
    if ctx.operands.get("epsilon") is not None:
        # A runtime scalar (Graph.scalar) standing in for the attribute.
        ctx.expect_shape("epsilon", (), "a scalar: it replaces the epsilon attribute")
    x = ctx["x"]
    if x.rank < 1:
        ctx.fail("operand 'x'", "expected rank >= 1, got rank 0")
    axis = ctx.axis("axis", x.rank)
    pshape = (1,) * axis + x.shape[axis:]
    sshape = x.shape[:axis] + (1,) * (x.rank - axis)
    for p in ("scale", "bias"):
        _param_shape(ctx, p, pshape, "[1] * axis + x.shape[axis:]")
    return x, pshape, sshape


@op("layernorm", family="norm",
    operands=["x", Operand("scale", optional=True), Operand("bias", optional=True),
              Operand("epsilon", optional=True)],
    results=["y", Result("mean", optional=True), Result("inv_variance", optional=True)],
    attrs=(Attr("axis", "int"), EPS) + STATS)
def _layernorm(ctx):
    """y = (x - mean) * inv_variance * scale + bias over dims [axis, rank)."""
    x, _, sshape = _feature_norm(ctx)
    out = {"y": TensorInfo(x.shape)}
    if ctx.attrs["training"]:
        out["mean"] = TensorInfo(sshape, F32)
        out["inv_variance"] = TensorInfo(sshape, F32)
    return out


@op("rmsnorm", family="norm",
    operands=["x", Operand("scale", optional=True), Operand("bias", optional=True),
              Operand("epsilon", optional=True)],
    results=["y", Result("inv_rms", optional=True)],
    attrs=(Attr("axis", "int"), EPS) + STATS)
def _rmsnorm(ctx):
    """y = x * inv_rms * scale + bias, inv_rms = 1 / sqrt(mean(x^2) + epsilon)."""
    x, _, sshape = _feature_norm(ctx)
    out = {"y": TensorInfo(x.shape)}
    if ctx.attrs["training"]:
        out["inv_rms"] = TensorInfo(sshape, F32)
    return out


@op("layernorm_backward", family="norm",
    operands=["dy", "x", Operand("scale", optional=True), "mean", "inv_variance"],
    results=["dx", Result("dscale", optional=True), Result("dbias", optional=True)],
    attrs=(Attr("axis", "int"), Attr("has_bias", "bool", True)))
def _layernorm_backward(ctx):
    """Gradients of layernorm; dscale when scale is given, dbias when has_bias."""
    x, pshape, sshape = _feature_norm(ctx)
    ctx.expect_shape("dy", x.shape, "shape of 'x'")
    ctx.expect_shape("mean", sshape, "x.shape[:axis] + [1, ...]")
    ctx.expect_shape("inv_variance", sshape, "x.shape[:axis] + [1, ...]")
    return _gradients(ctx, x, pshape)


@op("rmsnorm_backward", family="norm",
    operands=["dy", "x", Operand("scale", optional=True), "inv_rms"],
    results=["dx", Result("dscale", optional=True), Result("dbias", optional=True)],
    attrs=(Attr("axis", "int"), Attr("has_bias", "bool", False)))
def _rmsnorm_backward(ctx):
    """Gradients of rmsnorm; dscale when scale is given, dbias when has_bias."""
    x, pshape, sshape = _feature_norm(ctx)
    ctx.expect_shape("dy", x.shape, "shape of 'x'")
    ctx.expect_shape("inv_rms", sshape, "x.shape[:axis] + [1, ...]")
    return _gradients(ctx, x, pshape)


def _channel_shapes(ctx):
    ctx.expect_rank("x", (2, 3, 4, 5))
    x = ctx["x"]
    return x, (1, x.shape[1]) + (1,) * (x.rank - 2)


@op("batchnorm", family="norm",
    operands=["x", "scale", "bias", Operand("running_mean", optional=True),
              Operand("running_var", optional=True)],
    results=["y", "mean", "inv_variance", Result("next_running_mean", optional=True),
             Result("next_running_var", optional=True)],
    attrs=(EPS, Attr("momentum", "float", 0.1)))
def _batchnorm(ctx):
    """Training batchnorm: batch statistics per channel, optional running-stat update."""
    x, cshape = _channel_shapes(ctx)
    for p in ("scale", "bias", "running_mean", "running_var"):
        _param_shape(ctx, p, cshape, "[1, C, 1, ...]")
    per_channel = x.shape[0] * math.prod(x.shape[2:])
    if per_channel < 2:
        ctx.fail("operand 'x'", f"expected more than 1 value per channel (N * spatial) for "
                 f"batch statistics, got {per_channel}")
    has_mean = ctx.operands.get("running_mean") is not None
    if has_mean != (ctx.operands.get("running_var") is not None):
        ctx.fail("operand 'running_var'", "expected running_mean and running_var together, "
                 "got only one")
    out = {"y": TensorInfo(x.shape), "mean": TensorInfo(cshape, F32),
           "inv_variance": TensorInfo(cshape, F32)}
    if has_mean:
        out["next_running_mean"] = TensorInfo(cshape, F32)
        out["next_running_var"] = TensorInfo(cshape, F32)
    return out


@op("batchnorm_inference", family="norm",
    operands=["x", "scale", "bias", "mean", "variance"], results=["y"], attrs=(EPS,))
def _batchnorm_inference(ctx):
    """y = (x - mean) / sqrt(variance + epsilon) * scale + bias, per channel."""
    x, cshape = _channel_shapes(ctx)
    for p in ("scale", "bias", "mean", "variance"):
        ctx.expect_shape(p, cshape, "[1, C, 1, ...]")
    return {"y": TensorInfo(x.shape)}


@op("batchnorm_backward", family="norm",
    operands=["dy", "x", "scale", "mean", "inv_variance"],
    results=["dx", "dscale", "dbias"])
def _batchnorm_backward(ctx):
    """Gradients of training batchnorm from its saved mean and inv_variance."""
    x, cshape = _channel_shapes(ctx)
    ctx.expect_shape("dy", x.shape, "shape of 'x'")
    for p in ("scale", "mean", "inv_variance"):
        ctx.expect_shape(p, cshape, "[1, C, 1, ...]")
    return {"dx": TensorInfo(x.shape), "dscale": TensorInfo(cshape), "dbias": TensorInfo(cshape)}


def _group_shapes(ctx, groups):
    x, cshape = _channel_shapes(ctx)
    c = x.shape[1]
    if groups < 1 or c % groups:
        ctx.fail("attribute 'groups'", f"expected a divisor of {c} (channels of 'x'), got {groups}")
    return x, cshape, (x.shape[0], groups) + (1,) * (x.rank - 2)


@op("groupnorm", family="norm",
    operands=["x", Operand("scale", optional=True), Operand("bias", optional=True)],
    results=["y", Result("mean", optional=True), Result("inv_variance", optional=True)],
    attrs=(Attr("groups", "int"), EPS) + STATS)
def _groupnorm(ctx):
    """Normalize each (sample, channel group) over its channels and spatial dims."""
    x, cshape, sshape = _group_shapes(ctx, ctx.attrs["groups"])
    for p in ("scale", "bias"):
        _param_shape(ctx, p, cshape, "[1, C, 1, ...]")
    out = {"y": TensorInfo(x.shape)}
    if ctx.attrs["training"]:
        out["mean"] = TensorInfo(sshape, F32)
        out["inv_variance"] = TensorInfo(sshape, F32)
    return out


@op("groupnorm_backward", family="norm",
    operands=["dy", "x", Operand("scale", optional=True), "mean", "inv_variance"],
    results=["dx", Result("dscale", optional=True), Result("dbias", optional=True)],
    attrs=(Attr("groups", "int"), Attr("has_bias", "bool", True)))
def _groupnorm_backward(ctx):
    """Gradients of groupnorm."""
    x, cshape, sshape = _group_shapes(ctx, ctx.attrs["groups"])
    ctx.expect_shape("dy", x.shape, "shape of 'x'")
    _param_shape(ctx, "scale", cshape, "[1, C, 1, ...]")
    ctx.expect_shape("mean", sshape, "[N, groups, 1, ...]")
    ctx.expect_shape("inv_variance", sshape, "[N, groups, 1, ...]")
    return _gradients(ctx, x, cshape)


@op("instancenorm", family="norm",
    operands=["x", Operand("scale", optional=True), Operand("bias", optional=True)],
    results=["y", Result("mean", optional=True), Result("inv_variance", optional=True)],
    attrs=(EPS,) + STATS)
def _instancenorm(ctx):
    """Normalize each (sample, channel) over the spatial dims."""
    x, cshape = _channel_shapes(ctx)
    for p in ("scale", "bias"):
        _param_shape(ctx, p, cshape, "[1, C, 1, ...]")
    sshape = x.shape[:2] + (1,) * (x.rank - 2)
    out = {"y": TensorInfo(x.shape)}
    if ctx.attrs["training"]:
        out["mean"] = TensorInfo(sshape, F32)
        out["inv_variance"] = TensorInfo(sshape, F32)
    return out


@op("instancenorm_backward", family="norm",
    operands=["dy", "x", Operand("scale", optional=True), "mean", "inv_variance"],
    results=["dx", Result("dscale", optional=True), Result("dbias", optional=True)],
    attrs=(Attr("has_bias", "bool", True),))
def _instancenorm_backward(ctx):
    """Gradients of instancenorm."""
    x, cshape = _channel_shapes(ctx)
    sshape = x.shape[:2] + (1,) * (x.rank - 2)
    ctx.expect_shape("dy", x.shape, "shape of 'x'")
    _param_shape(ctx, "scale", cshape, "[1, C, 1, ...]")
    ctx.expect_shape("mean", sshape, "[N, C, 1, ...]")
    ctx.expect_shape("inv_variance", sshape, "[N, C, 1, ...]")
    return _gradients(ctx, x, cshape)
