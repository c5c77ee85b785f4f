"""Normalizations, forward and backward, as reductions and pointwise ops.

With ``mean`` over the normalized dims and the biased variance:

    inv  = rsqrt(mean((x - mean)^2) + epsilon)      (rmsnorm: rsqrt(mean(x^2) + eps))
    xhat = (x - mean) * inv                         (rmsnorm: x * inv)
    y    = xhat * scale + bias                      (absent scale/bias skipped)

Backward, from the saved statistics, with g = dy * scale:

    dx     = inv * (g - mean(g) - xhat * mean(g * xhat))   (rmsnorm: no mean(g))
    dscale = sum(dy * xhat), dbias = sum(dy)    over the dims the parameters broadcast on

groupnorm views x (N, C, ...) as (N, G, C/G * spatial) for its statistics;
instancenorm (and its backward) become groupnorm with G = C. Inference
batchnorm folds into one per-channel multiply-add, y = x * a + c with
a = scale * rsqrt(variance + eps) and c = bias - mean * a, the form that fuses
into a convolution epilogue. Semantics: dnnc/dialect/ops_norm.py.
"""

import math


def _moments(b, x, axes, epsilon):
    """mean, biased variance, inv = rsqrt(var + eps) and xhat over ``axes``."""
    mean = b.mean(x, axes)
    centered = b.sub(x, mean)
    var = b.mean(b.unary("square", centered), axes)
    inv = b.unary("rsqrt", b.add(var, epsilon))
    return mean, var, inv, b.mul(centered, inv)


def _affine(b, xhat, scale, bias, out):
    """xhat * scale + bias, the last op giving element type ``out``."""
    y = xhat
    if scale is not None:
        y = b.mul(y, scale, out=out if bias is None else None)
    if bias is not None:
        y = b.add(y, bias, out=out)
    return y


def _scaled(b, dy, scale):
    """dL/dxhat = dy * scale."""
    return dy if scale is None else b.mul(dy, scale)


def _input_grad(b, g, xhat, inv, axes, out, centered=True):
    """dx = inv * (g - mean(g) - xhat * mean(g * xhat)); rmsnorm drops mean(g)."""
    h = b.sub(g, b.mul(xhat, b.mean(b.mul(g, xhat), axes)))
    if centered:
        h = b.sub(h, b.mean(g, axes))
    return b.mul(inv, h, out=out)


def _param_grads(b, v, dy, xhat, axes):
    """dscale = sum(dy * xhat) and dbias = sum(dy) over ``axes``, those present."""
    out = {}
    if v.results.get("dscale") is not None:
        out["dscale"] = b.sum(b.mul(dy, xhat), axes, out=b.out("dscale"))
    if v.results.get("dbias") is not None:
        out["dbias"] = b.sum(dy, axes, out=b.out("dbias"))
    return out


def _rank(b, v):
    return len(b.shape_of(v.operands["x"]))


def _feature_axes(b, v):
    """(normalized dims [axis, rank), parameter-reduction dims [0, axis))."""
    axis = v.attrs["axis"]
    return list(range(axis, _rank(b, v))), list(range(axis))


def _channel_axes(b, v):
    """Every dim of x but the channel dim 1."""
    return [0] + list(range(2, _rank(b, v)))


# ---------------------------------------------------------------------- layernorm, rmsnorm

def layernorm(b, v):
    o = v.operands
    axes, _ = _feature_axes(b, v)
    mean, _, inv, xhat = _moments(b, o["x"], axes, v.attrs["epsilon"])
    y = _affine(b, xhat, o["scale"], o["bias"], b.out("y"))
    return {"y": y, "mean": mean, "inv_variance": inv}


def layernorm_backward(b, v):
    o = v.operands
    axes, param_axes = _feature_axes(b, v)
    inv = o["inv_variance"]
    xhat = b.mul(b.sub(o["x"], o["mean"]), inv)
    g = _scaled(b, o["dy"], o["scale"])
    out = {"dx": _input_grad(b, g, xhat, inv, axes, b.out("dx"))}
    out.update(_param_grads(b, v, o["dy"], xhat, param_axes))
    return out


def rmsnorm(b, v):
    o = v.operands
    axes, _ = _feature_axes(b, v)
    mean_square = b.mean(b.unary("square", o["x"]), axes)
    inv = b.unary("rsqrt", b.add(mean_square, v.attrs["epsilon"]))
    y = _affine(b, b.mul(o["x"], inv), o["scale"], o["bias"], b.out("y"))
    return {"y": y, "inv_rms": inv}


def rmsnorm_backward(b, v):
    o = v.operands
    axes, param_axes = _feature_axes(b, v)
    inv = o["inv_rms"]
    xhat = b.mul(o["x"], inv)
    g = _scaled(b, o["dy"], o["scale"])
    out = {"dx": _input_grad(b, g, xhat, inv, axes, b.out("dx"), centered=False)}
    out.update(_param_grads(b, v, o["dy"], xhat, param_axes))
    return out


# ---------------------------------------------------------------------- batchnorm

def batchnorm(b, v):
    o, momentum = v.operands, v.attrs["momentum"]
    axes = _channel_axes(b, v)
    mean, var, inv, xhat = _moments(b, o["x"], axes, v.attrs["epsilon"])
    out = {"y": _affine(b, xhat, o["scale"], o["bias"], b.out("y")),
           "mean": mean, "inv_variance": inv}
    if o["running_mean"] is not None:
        shape = b.shape_of(o["x"])
        count = math.prod(shape) // shape[1]
        unbiased = count / (count - 1) if count > 1 else math.inf
        keep = 1.0 - momentum
        out["next_running_mean"] = b.add(b.mul(o["running_mean"], keep),
                                         b.mul(mean, momentum))
        out["next_running_var"] = b.add(b.mul(o["running_var"], keep),
                                        b.mul(var, momentum * unbiased))
    return out


def batchnorm_inference(b, v):
    o = v.operands
    a = b.mul(o["scale"], b.unary("rsqrt", b.add(o["variance"], v.attrs["epsilon"])))
    c = b.sub(o["bias"], b.mul(o["mean"], a))
    return {"y": b.add(b.mul(o["x"], a), c, out=b.out("y"))}


def batchnorm_backward(b, v):
    o = v.operands
    axes = _channel_axes(b, v)
    inv = o["inv_variance"]
    xhat = b.mul(b.sub(o["x"], o["mean"]), inv)
    g = _scaled(b, o["dy"], o["scale"])
    out = {"dx": _input_grad(b, g, xhat, inv, axes, b.out("dx"))}
    out.update(_param_grads(b, v, o["dy"], xhat, axes))
    return out


# ---------------------------------------------------------------------- groupnorm, instancenorm

def _grouped(b, t, groups):
    """(N, C, ...) -> (N, G, C/G * spatial)."""
    shape = b.shape_of(t)
    return b.reshape(t, (shape[0], groups, math.prod(shape[1:]) // groups))


def _group_stat(b, t, groups):
    """(N, G, 1, ...) statistics -> (N, G, 1), to broadcast on the grouped view."""
    return b.reshape(t, (b.shape_of(t)[0], groups, 1))


def groupnorm(b, v):
    o, groups = v.operands, v.attrs["groups"]
    shape = b.shape_of(o["x"])
    mean, _, inv, xhat = _moments(b, _grouped(b, o["x"], groups), [2], v.attrs["epsilon"])
    y = _affine(b, b.reshape(xhat, shape), o["scale"], o["bias"], b.out("y"))
    stat_shape = (shape[0], groups) + (1,) * (len(shape) - 2)
    return {"y": y, "mean": b.reshape(mean, stat_shape),
            "inv_variance": b.reshape(inv, stat_shape)}


def groupnorm_backward(b, v):
    o, groups = v.operands, v.attrs["groups"]
    shape = b.shape_of(o["x"])
    inv = _group_stat(b, o["inv_variance"], groups)
    xhat = b.mul(b.sub(_grouped(b, o["x"], groups), _group_stat(b, o["mean"], groups)), inv)
    g = _grouped(b, _scaled(b, o["dy"], o["scale"]), groups)
    dx = _input_grad(b, g, xhat, inv, [2], b.out("dx"))
    out = {"dx": b.reshape(dx, shape)}
    out.update(_param_grads(b, v, o["dy"], b.reshape(xhat, shape), _channel_axes(b, v)))
    return out


def _as_groupnorm(b, v, name, attrs):
    """The same op as groupnorm with one group per channel (keeping its name)."""
    attrs = dict(attrs, groups=b.shape_of(v.operands["x"])[1])
    types = {k: r.type for k, r in v.results.items() if r is not None}
    return b.op(name, v.operands, attrs, types=types, discardable=v.discardable).results


def instancenorm(b, v):
    return _as_groupnorm(b, v, "groupnorm", v.attrs)


def instancenorm_backward(b, v):
    return _as_groupnorm(b, v, "groupnorm_backward", v.attrs)


RULES = {
    "layernorm": layernorm,
    "layernorm_backward": layernorm_backward,
    "rmsnorm": rmsnorm,
    "rmsnorm_backward": rmsnorm_backward,
    "batchnorm": batchnorm,
    "batchnorm_inference": batchnorm_inference,
    "batchnorm_backward": batchnorm_backward,
    "groupnorm": groupnorm,
    "groupnorm_backward": groupnorm_backward,
    "instancenorm": instancenorm,
    "instancenorm_backward": instancenorm_backward,
}
