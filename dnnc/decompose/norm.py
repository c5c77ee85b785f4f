"""Normalizations, forward and backward, as reductions and pointwise ops.

With ``mean`` over the normalized dims and the biased variance:

    inv  = rsqrt(mean((x - mean)^2) + epsilon)      (rmsnorm: rsqrt(mean(x^2) + eps))
    xhat = (x - mean) * inv                         (rmsnorm: x * inv)
    y    = xhat * scale + bias                      (absent scale/bias skipped)

Backward, from the saved statistics, with g = dy * scale:

    dx     = inv * (g - mean(g) - xhat * mean(g * xhat))   (rmsnorm: no mean(g))
    dscale = sum(dy * xhat), dbias = sum(dy)    over the dims the parameters broadcast on

The reductions are laid out for the kernels dnn-fuse makes of them: one
along the innermost dim becomes a row program with the pointwise ops around
it (dx), one along every other dim a column program (dscale and dbias, which
read dy and x once). A norm backward over several dims first views x and dy
as (rows, normalized elements).

groupnorm and instancenorm (which becomes groupnorm with G = C) normalize a
view of x with one (sample, group) per row, (N, G, C/G, spatial), over its
last two dims, the scale and bias viewed as (1, G, C/G, 1): the statistics
and y are then one row program whose parameters vary along the row by
channel (instancenorm: (N, C, spatial) over the last, the parameters a value
per row), and each reshape only relabels a buffer. The backward sums dy and
dy * x per (sample, channel) over the spatial dims, folds those sums per
group into the coefficients of dx = a * dy + p * x + q, and sums over the
samples for dscale and dbias. (PyTorch's kernels take the same steps.)
A channels-last x (a graph input whose strides put C innermost) is instead
read in its memory order, (N, spatial, C), by column programs:
dnnc/decompose/norm_channels_last.py.
Batchnorm has its own rules: dnnc/decompose/batchnorm.py. Semantics:
dnnc/dialect/ops_norm.py.
"""

import math

from dnnc.decompose import norm_channels_last
from dnnc.decompose.norm_channels_last import ChannelsLast

def _statistics(b, x, axes, epsilon):
    """mean, biased variance, inv = rsqrt(var + eps) and x - mean over ``axes``."""
    mean = b.mean(x, axes)
    centered = b.sub(x, mean)
    var = b.mean(b.unary("square", centered), axes)
    return mean, var, b.unary("rsqrt", b.add(var, epsilon)), centered


def _moments(b, x, axes, epsilon):
    """mean, biased variance, inv = rsqrt(var + eps) and xhat over ``axes``."""
    mean, var, inv, centered = _statistics(b, x, axes, epsilon)
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


def _epsilon(v):
    """A feature norm's epsilon: its ``epsilon`` operand (a runtime scalar,
    rank 0) when given, else the attribute (a dnn.constant)."""
    given = v.operands.get("epsilon")
    return given if given is not None else v.attrs["epsilon"]


def _rank(b, v):
    return len(b.shape_of(v.operands["x"]))


def _feature_axes(b, v):
    """(normalized dims [axis, rank), parameter-reduction dims [0, axis))."""
    axis = v.attrs["axis"]
    return list(range(axis, _rank(b, v))), list(range(axis))


# ---------------------------------------------------------------------- layernorm, rmsnorm

def layernorm(b, v):
    o = v.operands
    axes, _ = _feature_axes(b, v)
    mean, _, inv, xhat = _moments(b, o["x"], axes, _epsilon(v))
    y = _affine(b, xhat, o["scale"], o["bias"], b.out("y"))
    return {"y": y, "mean": mean, "inv_variance": inv}


def _as_rows(b, v):
    """The operands of a feature-norm backward, and (dx dims, parameter-reduction
    dims). When the op normalizes several dims, x and dy are viewed as
    (rows, normalized elements), the statistics as (rows, 1) and the scale as
    (1, normalized elements): dx's sums then run along the innermost dim alone
    and the parameter gradients' along the leading one, as row and column
    programs need; ``_restore`` gives the results their shapes back."""
    o = dict(v.operands)
    axes, param_axes = _feature_axes(b, v)
    if len(axes) < 2:
        return o, axes, param_axes
    shape, axis = b.shape_of(o["x"]), v.attrs["axis"]
    rows, n = math.prod(shape[:axis]), math.prod(shape[axis:])
    for name, view in (("dy", (rows, n)), ("x", (rows, n)), ("scale", (1, n)),
                       ("mean", (rows, 1)), ("inv_variance", (rows, 1)),
                       ("inv_rms", (rows, 1))):
        if o.get(name) is not None:
            o[name] = b.reshape(o[name], view)
    return o, [1], [0] if axis else []


def _restore(b, v, out):
    """The results of ``_as_rows``' views in the op's result shapes."""
    return {k: b.reshape(t, b.shape_of(v.results[k])) for k, t in out.items()}


def layernorm_backward(b, v):
    o, axes, param_axes = _as_rows(b, v)
    inv = o["inv_variance"]
    xhat = b.mul(b.sub(o["x"], o["mean"]), inv)
    g = _scaled(b, o["dy"], o["scale"])
    out = {"dx": _input_grad(b, g, xhat, inv, axes, b.out("dx"))}
    out.update(_param_grads(b, v, o["dy"], xhat, param_axes))
    return _restore(b, v, out)


def rmsnorm(b, v):
    o = v.operands
    axes, _ = _feature_axes(b, v)
    mean_square = b.mean(b.unary("square", o["x"]), axes)
    inv = b.unary("rsqrt", b.add(mean_square, _epsilon(v)))
    y = _affine(b, b.mul(o["x"], inv), o["scale"], o["bias"], b.out("y"))
    return {"y": y, "inv_rms": inv}


def rmsnorm_backward(b, v):
    o, axes, param_axes = _as_rows(b, v)
    inv = o["inv_rms"]
    xhat = b.mul(o["x"], inv)
    g = _scaled(b, o["dy"], o["scale"])
    out = {"dx": _input_grad(b, g, xhat, inv, axes, b.out("dx"), centered=False)}
    out.update(_param_grads(b, v, o["dy"], xhat, param_axes))
    return _restore(b, v, out)


# ---------------------------------------------------------------------- groupnorm, instancenorm

def _per_channel(shape):
    """(N, C, 1, ...): a value per (sample, channel), broadcast on x."""
    return tuple(shape[:2]) + (1,) * (len(shape) - 2)


def _group_view(shape, groups):
    """The view of x (N, C, ...) that groupnorm's forward normalizes, the axes
    it reduces and the view of a (1, C, 1, ...) parameter. The views keep x's
    rank where they can (3 at least, 4 for a row of several dims), so that
    the statistics (N, G, 1, ...) need no reshape:

    * (N, G, C/G, 1, ..., spatial) over all but the first two; the parameters
      (1, G, C/G, 1, ...) vary along the row by channel;
    * one channel a group (instancenorm): (N, C, 1, ..., spatial) over the
      last; the parameters (1, C, 1, ...) are a value per row;
    * no spatial dims: (N, G, 1, ..., C/G) over the last; the parameters
      (1, G, 1, ..., C/G) vary along the row."""
    per_group, spatial = shape[1] // groups, math.prod(shape[2:])
    ones = (1,) * max(0, len(shape) - 3)
    if per_group == 1 or spatial == 1:
        row = spatial if per_group == 1 else per_group
        view = (shape[0], groups) + ones + (row,)
        # The parameters: a value per row, or per element of a row of channels.
        return view, [len(view) - 1], (1, groups) + ones + (row // spatial,)
    ones = ones[1:]
    view = (shape[0], groups, per_group) + ones + (spatial,)
    return view, list(range(2, len(view))), (1, groups, per_group) + ones + (1,)


def groupnorm(b, v):
    o, groups = v.operands, v.attrs["groups"]
    channels_last = ChannelsLast.of(b, o["x"])
    if channels_last is not None:  # x in its memory order, (N, S, C)
        return norm_channels_last.groupnorm(b, v, channels_last)
    shape = b.shape_of(o["x"])
    # One (sample, group) per row, its channels and positions the row's
    # elements, so that the statistics and y are one row program: the
    # parameters vary along the row by channel, a value per C/G slice.
    view, axes, param = _group_view(shape, groups)
    mean, _, inv, centered = _statistics(b, b.reshape(o["x"], view), axes,
                                         v.attrs["epsilon"])
    stat_shape = (shape[0], groups) + (1,) * (len(shape) - 2)
    scale, bias = (b.reshape(t, param) if t is not None else None
                   for t in (o["scale"], o["bias"]))
    xhat = b.mul(centered, inv, out=b.out("y") if scale is None and bias is None else None)
    return {"y": b.reshape(_affine(b, xhat, scale, bias, b.out("y")), shape),
            "mean": b.reshape(mean, stat_shape), "inv_variance": b.reshape(inv, stat_shape)}


def groupnorm_backward(b, v):
    o, groups = v.operands, v.attrs["groups"]
    dy, x = o["dy"], o["x"]
    shape = b.shape_of(x)
    rank, per_group = len(shape), shape[1] // groups
    count = per_group * math.prod(shape[2:])  # elements of a (sample, group)
    channel = _per_channel(shape)
    # 1. Per (sample, channel): ds = sum(dy * x) and db = sum(dy) over the
    #    spatial dims, one row each (channels-last x: a column program over
    #    the (N, S, C) view, norm_channels_last).
    cl = ChannelsLast.of(b, x)
    if cl is not None:
        dy_rows, x_rows = cl.view(b, dy), cl.view(b, x)
        ds = cl.spatial_sum(b, b.mul(dy_rows, x_rows))
        db = cl.spatial_sum(b, dy_rows)
    elif rank > 2:
        rows = channel[:-1] + (math.prod(shape[2:]),)
        dy_rows, x_rows = b.reshape(dy, rows), b.reshape(x, rows)
        ds = b.sum(b.mul(dy_rows, x_rows), [rank - 1])
        db = b.sum(dy_rows, [rank - 1])
    else:
        ds, db = b.mul(dy, x), dy
    # 2. Per (sample, group), on the (N, G, C/G) view (instancenorm: (N, C, 1, ...)
    #    as it is): s1 = sum(g), s2 = sum(g * xhat) with g = dy * scale, and the
    #    coefficients of dx = a * dy + p * x + q, all spread per channel.
    if per_group > 1:
        view, axes = (shape[0], groups, per_group), [2]
        stat = (shape[0], groups, 1)
    else:  # channels-last: in the column program's (N, 1, C), its epilogue
        view, axes = (cl.channel_shape if cl is not None else channel), []
        stat = view
    mean, inv = b.reshape(o["mean"], stat), b.reshape(o["inv_variance"], stat)
    ds_view, db_view = b.reshape(ds, view), b.reshape(db, view)
    gamma = b.reshape(o["scale"], (1,) + view[1:]) if o["scale"] is not None else None
    s1 = b.sum(_scaled(b, db_view, gamma), axes)
    s2 = b.mul(inv, b.sub(b.sum(_scaled(b, ds_view, gamma), axes), b.mul(mean, s1)))
    # dx = inv * (g - s1 / count - xhat * s2 / count) with xhat = (x - mean) * inv:
    # a = inv * scale, p = -inv^2 * s2 / count, q = inv * (mean * inv * s2 - s1) / count.
    a = b.mul(inv, gamma) if gamma is not None else inv
    # Each product starts from a sum, so that all of them join the kernel
    # that makes the sums (one of the statistics alone would be a kernel).
    p = b.unary("neg", b.mul(b.mul(b.mul(s2, inv), inv), 1.0 / count))
    q = b.mul(b.mul(b.sub(b.mul(b.mul(s2, mean), inv), s1), inv), 1.0 / count)
    if per_group > 1:
        a = a if gamma is not None else b.spread(a, ds_view)
        p, q = b.spread(p, ds_view), b.spread(q, ds_view)
    if cl is not None:
        dy, x, channel = dy_rows, x_rows, cl.channel_shape
    dx = b.add(b.add(b.mul(b.reshape(a, channel), dy), b.mul(b.reshape(p, channel), x)),
               b.reshape(q, channel), out=b.out("dx"))
    out = {"dx": cl.restore(b, dx) if cl is not None else dx}
    # 3. dscale = sum over samples of inv * (ds - mean * db), dbias = of db: on
    #    (N, C) views, a reduction over the leading dim of a 2-D tensor.
    samples = tuple(shape[:2])
    if v.results.get("dscale") is not None:
        t = b.reshape(b.mul(b.sub(ds_view, b.mul(mean, db_view)), inv), samples)
        out["dscale"] = b.sum(t, [0], out=b.out("dscale"))
    if v.results.get("dbias") is not None:
        out["dbias"] = b.sum(b.reshape(db, samples), [0], out=b.out("dbias"))
    return _restore(b, v, out)


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
    "groupnorm": groupnorm,
    "groupnorm_backward": groupnorm_backward,
    "instancenorm": instancenorm,
    "instancenorm_backward": instancenorm_backward,
}
