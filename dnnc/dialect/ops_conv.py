"""Convolution forward, data gradient and filter gradient; 2D and 3D.

Logical dims follow cuDNN: x is (N, C, [D,] H, W), the filter (K, C/groups,
[T,] R, S), y (N, K, [D',] P, Q). Groups are the ratio C / filter C. Output size
per spatial dim: ``(in + pre + post - dilation * (window - 1) - 1) // stride + 1``.
``mode = "convolution"`` flips the filter window; "cross_correlation" (what deep
learning frameworks call convolution) does not.
"""

from dnnc.dialect.opdef import Attr, Operand, TensorInfo, op
from dnnc.dialect.ops_matmul import COMPUTE_TYPES, check_compute

CONV_ATTRS = (
    Attr("pre_padding", "ints"),
    Attr("post_padding", "ints"),
    Attr("stride", "ints"),
    Attr("dilation", "ints"),
    Attr("mode", "str", "cross_correlation", ("cross_correlation", "convolution")),
    Attr("compute_type", "type", "f32", COMPUTE_TYPES,
         "accumulation type; tf32 rounds both operands to tf32; i32 (conv_fprop of si8 / "
         "ui8 operands) is exact integer accumulation"),
)


def output_size(size, window, pre, post, stride, dilation):
    """Output length of one spatial dim."""
    return (size + pre + post - dilation * (window - 1) - 1) // stride + 1


def _geometry(ctx, x_name, x_shape, w_shape, w_kind="operand", w_name="w"):
    """Check the conv attributes against x and w; return (groups, out spatial)."""
    nd = len(x_shape) - 2
    pre = ctx.int_list("pre_padding", nd, "spatial rank")
    post = ctx.int_list("post_padding", nd, "spatial rank")
    stride = ctx.int_list("stride", nd, "spatial rank")
    dilation = ctx.int_list("dilation", nd, "spatial rank")
    ctx.positive("stride", stride)
    ctx.positive("dilation", dilation)
    ctx.positive("pre_padding", pre, 0)
    ctx.positive("post_padding", post, 0)
    c, wc, k = x_shape[1], w_shape[1], w_shape[0]
    if wc < 1 or c % wc:
        ctx.fail_dim(w_name, 1, f"a divisor of {c}", wc, f"channels of '{x_name}' / groups",
                     w_kind)
    groups = c // wc
    if k % groups:
        ctx.fail_dim(w_name, 0, f"a multiple of {groups}", k, "groups", w_kind)
    out = []
    for i in range(nd):
        size = output_size(x_shape[2 + i], w_shape[2 + i], pre[i], post[i], stride[i], dilation[i])
        if size < 1:
            ctx.fail_dim(w_name, 2 + i, f"at most {x_shape[2 + i] + pre[i] + post[i]}",
                         dilation[i] * (w_shape[2 + i] - 1) + 1,
                         f"dilated window within padded '{x_name}'", w_kind)
        out.append(size)
    return groups, out


def _check_ranks(ctx, names):
    ctx.expect_rank(names[0], (4, 5))
    rank = ctx[names[0]].rank
    for n in names[1:]:
        ctx.expect_rank(n, rank)


@op("conv_fprop", family="conv",
    operands=[Operand("x", dtype="number"), Operand("w", dtype="number")], results=["y"],
    attrs=CONV_ATTRS)
def _conv_fprop(ctx):
    """y = x (*) w, with padding, stride, dilation and groups. si8 / ui8
    operands accumulate exactly in int32 (compute_type i32)."""
    check_compute(ctx, ["x", "w"])
    _check_ranks(ctx, ["x", "w"])
    x, w = ctx["x"], ctx["w"]
    _, out = _geometry(ctx, "x", x.shape, w.shape)
    return {"y": TensorInfo((x.shape[0], w.shape[0], *out))}


@op("conv_dgrad", family="conv", operands=["dy", "w"], results=["dx"], attrs=CONV_ATTRS,
    declared_results=("dx",))
def _conv_dgrad(ctx):
    """dx = gradient of conv_fprop(x, w) with respect to x, given dy. The shape of
    dx is given by the result type (several x sizes give one y size)."""
    check_compute(ctx, ["dy", "w"])
    _check_ranks(ctx, ["dy", "w"])
    dy, w = ctx["dy"], ctx["w"]
    dx = ctx.declared_shape("dx")
    if len(dx) != dy.rank:
        ctx.fail("result 'dx'", f"expected rank {dy.rank}, got rank {len(dx)}")
    _, out = _geometry(ctx, "dx", dx, w.shape)
    ctx.expect_shape("dy", (dx[0], w.shape[0], *out), "conv_fprop output of dx and w")
    return {"dx": TensorInfo(dx)}


@op("conv_wgrad", family="conv", operands=["dy", "x"], results=["dw"], attrs=CONV_ATTRS,
    declared_results=("dw",))
def _conv_wgrad(ctx):
    """dw = gradient of conv_fprop(x, w) with respect to w, given dy. The shape of
    dw is given by the result type."""
    check_compute(ctx, ["dy", "x"])
    _check_ranks(ctx, ["dy", "x"])
    x = ctx["x"]
    dw = ctx.declared_shape("dw")
    if len(dw) != x.rank:
        ctx.fail("result 'dw'", f"expected rank {x.rank}, got rank {len(dw)}")
    _, out = _geometry(ctx, "x", x.shape, dw, w_kind="result", w_name="dw")
    ctx.expect_shape("dy", (x.shape[0], dw[0], *out), "conv_fprop output of x and dw")
    return {"dw": TensorInfo(dw)}
