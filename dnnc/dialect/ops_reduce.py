"""Softmax, log-softmax (forward and backward), reductions and pooling."""

from dnnc.dialect.opdef import Attr, TensorInfo, op
from dnnc.dialect.ops_conv import output_size

REDUCTION_MODES = ("sum", "mean", "max", "min", "prod", "amax", "norm1", "norm2")
# Modes with no identity element: reducing no elements has no answer (NumPy
# and PyTorch refuse too). sum, prod and the norms give their identity; mean
# gives NaN (0 / 0).
NEEDS_AN_ELEMENT = ("max", "min", "amax")


def trailing_axes(axes, rank):
    """How many trailing axes of a rank-``rank`` operand ``axes`` are (the
    innermost alone, or it and the ones before it, never the first): the row
    dims of a row reduction; 0 for any other set of axes."""
    axes = sorted(axes)
    return len(axes) if axes and axes[0] > 0 and axes == list(range(axes[0], rank)) else 0


def _axis_op(ctx):
    x = ctx[ctx.opdef.operands[0].name]
    ctx.axis("axis", x.rank)
    return x


@op("softmax", family="softmax", operands=["x"], results=["y"], attrs=[Attr("axis", "int")])
def _softmax(ctx):
    """y = exp(x - max) / sum(exp(x - max)) along ``axis``. A row that is all
    -inf gives zeros, never NaN."""
    return {"y": TensorInfo(_axis_op(ctx).shape)}


@op("log_softmax", family="softmax", operands=["x"], results=["y"], attrs=[Attr("axis", "int")])
def _log_softmax(ctx):
    """y = x - logsumexp(x) along ``axis``. A row that is all -inf gives -inf."""
    return {"y": TensorInfo(_axis_op(ctx).shape)}


def _softmax_backward(ctx):
    dy = _axis_op(ctx)
    ctx.expect_shape("y", dy.shape, "shape of 'dy'")
    return {"dx": TensorInfo(dy.shape)}


op("softmax_backward", family="softmax", operands=["dy", "y"], results=["dx"],
   attrs=[Attr("axis", "int")],
   doc="dx = y * (dy - sum(dy * y)) along axis, from the forward output y.")(_softmax_backward)
op("log_softmax_backward", family="softmax", operands=["dy", "y"], results=["dx"],
   attrs=[Attr("axis", "int")],
   doc="dx = dy - exp(y) * sum(dy) along axis, from the forward output y.")(_softmax_backward)


@op("reduction", family="reduction", operands=["x"], results=["y"],
    attrs=[Attr("mode", "str", choices=REDUCTION_MODES), Attr("axes", "ints"),
           Attr("keepdims", "bool", True)])
def _reduction(ctx):
    """Reduce over ``axes``. amax is the largest absolute value (cuDNN's AMAX);
    norm1 and norm2 are the L1 and L2 norms. Over an axis of size 0, sum and
    the norms give 0, prod 1 and mean NaN; max, min and amax have no identity
    and are refused."""
    x = ctx["x"]
    axes = tuple(ctx.attrs["axes"])
    for i, a in enumerate(axes):
        if not 0 <= a < x.rank:
            ctx.fail(f"attribute 'axes' entry {i}", f"expected an axis in [0, {x.rank}), got {a}")
    if len(set(axes)) != len(axes) or list(axes) != sorted(axes):
        ctx.fail("attribute 'axes'", f"expected distinct axes in increasing order, got {list(axes)}")
    mode = ctx.attrs["mode"]
    if mode in NEEDS_AN_ELEMENT:
        for a in axes:
            if x.shape[a] == 0:
                ctx.fail_dim("x", a, "at least 1", 0,
                             f"mode '{mode}' needs an element to reduce: it has no identity")
    if ctx.attrs["keepdims"]:
        shape = [1 if d in axes else n for d, n in enumerate(x.shape)]
    else:
        shape = [n for d, n in enumerate(x.shape) if d not in axes]
    return {"y": TensorInfo(shape)}


POOL_ATTRS = (
    Attr("mode", "str", choices=("max", "avg")),
    Attr("window", "ints"),
    Attr("stride", "ints"),
    Attr("pre_padding", "ints"),
    Attr("post_padding", "ints"),
    Attr("count_include_pad", "bool", False,
         doc="avg: divide by the whole window, padding included"),
)


def _pool_geometry(ctx, x_shape):
    nd = len(x_shape) - 2
    window = ctx.int_list("window", nd, "spatial rank")
    stride = ctx.int_list("stride", nd, "spatial rank")
    pre = ctx.int_list("pre_padding", nd, "spatial rank")
    post = ctx.int_list("post_padding", nd, "spatial rank")
    ctx.positive("window", window)
    ctx.positive("stride", stride)
    ctx.positive("pre_padding", pre, 0)
    ctx.positive("post_padding", post, 0)
    out = []
    for i in range(nd):
        for attr, pad in (("pre_padding", pre[i]), ("post_padding", post[i])):
            if pad >= window[i]:
                ctx.fail(f"attribute '{attr}' entry {i}",
                         f"expected less than the window ({window[i]}), got {pad}")
        size = output_size(x_shape[2 + i], window[i], pre[i], post[i], stride[i], 1)
        if size < 1:
            ctx.fail(f"attribute 'window' entry {i}",
                     f"expected at most {x_shape[2 + i] + pre[i] + post[i]} (padded input), "
                     f"got {window[i]}")
        out.append(size)
    return tuple(x_shape[:2]) + tuple(out)


@op("pooling", family="pooling", operands=["x"], results=["y"], attrs=POOL_ATTRS)
def _pooling(ctx):
    """Max or average pooling over the spatial dims of (N, C, [D,] H, W).
    Max pooling ignores padding; the first maximum in a window wins."""
    ctx.expect_rank("x", (4, 5))
    return {"y": TensorInfo(_pool_geometry(ctx, ctx["x"].shape))}


@op("pooling_backward", family="pooling", operands=["dy", "x"], results=["dx"],
    attrs=POOL_ATTRS)
def _pooling_backward(ctx):
    """Max: dy goes to the first maximum of each window; avg: dy spreads evenly."""
    ctx.expect_rank("x", (4, 5))
    x = ctx["x"]
    ctx.expect_shape("dy", _pool_geometry(ctx, x.shape), "pooling output of 'x'")
    return {"dx": TensorInfo(x.shape)}
