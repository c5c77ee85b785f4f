"""Tensor ops: dtype casts, scalar constants, reshape, transpose, slice, concat."""

import math

from dnnc.dialect.opdef import Attr, Operand, TensorInfo, op


@op("cast", family="pointwise", operands=[Operand("x", dtype="any")], results=["y"])
def _cast(ctx):
    """Convert to the result's element type, rounding to nearest even. fp8
    saturates finite values to the largest finite one; inf saturates in
    f8E4M3FN (no inf) and stays inf in f8E5M2. si8 and ui8 saturate to their
    range (NaN gives 0); a float to i32 truncates toward zero; between
    integer types (i32, si8, ui8, and from i1) values are kept, or saturated,
    exactly. To i1: x != 0. The result type is the target."""
    return {"y": TensorInfo(ctx["x"].shape)}


@op("constant", family="pointwise", operands=[], results=["y"],
    attrs=[Attr("value", "float")])
def _constant(ctx):
    """A scalar (rank-0 tensor) holding ``value``, broadcast by its users."""
    return {"y": TensorInfo(())}


@op("reshape", family="tensor", operands=[Operand("x", dtype="any")], results=["y"],
    dtype_from="x",
    declared_results=("y",))
def _reshape(ctx):
    """Same elements in row-major logical order, new shape (given by the result type)."""
    shape = ctx.declared_shape("y")
    x = ctx["x"]
    if math.prod(shape) != math.prod(x.shape):
        shape_text = "x".join(map(str, x.shape)) or "a scalar"
        ctx.fail("result 'y'", f"expected {math.prod(x.shape)} elements (the number in operand "
                 f"'x', {shape_text}), got {math.prod(shape)}")
    return {"y": TensorInfo(shape, x.dtype)}


@op("transpose", family="tensor", operands=[Operand("x", dtype="any")], results=["y"],
    dtype_from="x",
    attrs=[Attr("permutation", "ints")])
def _transpose(ctx):
    """y.dim[i] = x.dim[permutation[i]]."""
    x = ctx["x"]
    perm = ctx.int_list("permutation", x.rank, "rank of 'x'")
    if sorted(perm) != list(range(x.rank)):
        ctx.fail("attribute 'permutation'",
                 f"expected a permutation of 0..{x.rank - 1}, got {list(perm)}")
    return {"y": TensorInfo([x.shape[p] for p in perm], x.dtype)}


@op("slice", family="tensor", operands=[Operand("x", dtype="any")], results=["y"],
    dtype_from="x",
    attrs=[Attr("start", "ints"), Attr("limit", "ints"), Attr("step", "ints")])
def _slice(ctx):
    """x[start:limit:step] along every dim (steps positive, bounds in range)."""
    x = ctx["x"]
    start = ctx.int_list("start", x.rank, "rank of 'x'")
    limit = ctx.int_list("limit", x.rank, "rank of 'x'")
    step = ctx.int_list("step", x.rank, "rank of 'x'")
    ctx.positive("step", step)
    shape = []
    for d, (s, e, k) in enumerate(zip(start, limit, step)):
        if not 0 <= s <= x.shape[d]:
            ctx.fail(f"attribute 'start' entry {d}", f"expected 0..{x.shape[d]}, got {s}")
        if not s <= e <= x.shape[d]:
            ctx.fail(f"attribute 'limit' entry {d}", f"expected {s}..{x.shape[d]}, got {e}")
        shape.append(-(-(e - s) // k))
    return {"y": TensorInfo(shape, x.dtype)}


@op("concat", family="tensor", operands=[Operand("a", dtype="any"), Operand("b", dtype="any")],
    results=["y"], attrs=[Attr("axis", "int")], dtype_from="a")
def _concat(ctx):
    """Join a and b along ``axis``; all other dims and the element types agree.
    (Binary: IRDL gives all operands of a variadic group one type, so inputs of
    different sizes cannot share one. More inputs are a chain of concats.)"""
    a, b = ctx["a"], ctx["b"]
    axis = ctx.axis("axis", a.rank)
    if b.rank != a.rank:
        ctx.fail("operand 'b'", f"expected rank {a.rank} (rank of 'a'), got rank {b.rank}")
    if a.dtype is not None and b.dtype is not None and a.dtype is not b.dtype:
        ctx.fail("operand 'b'", f"expected element type {a.dtype} (as 'a'), got {b.dtype}")
    for d in range(a.rank):
        if d != axis and b.shape[d] != a.shape[d]:
            ctx.fail_dim("b", d, a.shape[d], b.shape[d], "as 'a'")
    shape = list(a.shape)
    shape[axis] += b.shape[axis]
    return {"y": TensorInfo(shape, a.dtype)}


TENSOR_OPS = {"cast", "constant", "reshape", "transpose", "slice", "concat"}
