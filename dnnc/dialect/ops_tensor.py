"""Tensor ops: dtype casts, scalar constants, reshape, transpose, slice, concat."""

import math

from dnnc.dialect.opdef import Attr, Operand, TensorInfo, op


@op("cast", family="pointwise", operands=[Operand("x", dtype="any")], results=["y"])
def _cast(ctx):
    """Convert to the result's element type (round to nearest even; fp8 saturates
    to the largest finite value). The result type says the target type."""
    return {"y": TensorInfo(ctx["x"].shape)}


@op("constant", family="pointwise", operands=[], results=["y"],
    attrs=[Attr("value", "float")])
def _constant(ctx):
    """A scalar (rank-0 tensor) holding ``value``, broadcast by its users."""
    return {"y": TensorInfo(())}


@op("reshape", family="tensor", operands=[Operand("x", dtype="any")], results=["y"],
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


@op("concat", family="tensor", operands=[Operand("inputs", variadic=True, dtype="any")],
    results=["y"], attrs=[Attr("axis", "int")])
def _concat(ctx):
    """Join the inputs along ``axis``; all other dims agree."""
    inputs = ctx["inputs"] or []
    if not inputs:
        ctx.fail("operand 'inputs'", "expected at least 1 tensor, got 0")
    first = inputs[0]
    axis = ctx.axis("axis", first.rank)
    total = 0
    for i, t in enumerate(inputs):
        if t.rank != first.rank:
            ctx.fail(f"operand 'inputs' #{i}", f"expected rank {first.rank}, got rank {t.rank}")
        if t.dtype is not None and first.dtype is not None and t.dtype is not first.dtype:
            ctx.fail(f"operand 'inputs' #{i}",
                     f"expected element type {first.dtype}, got {t.dtype}")
        for d in range(first.rank):
            if d != axis and t.shape[d] != first.shape[d]:
                ctx.fail(f"operand 'inputs' #{i} dim {d}",
                         f"expected {first.shape[d]} (as input #0), got {t.shape[d]}")
        total += t.shape[axis]
    shape = list(first.shape)
    shape[axis] = total
    return {"y": TensorInfo(shape, first.dtype)}


TENSOR_OPS = {"cast", "constant", "reshape", "transpose", "slice", "concat"}
