"""Matrix multiplication: batched, with broadcast batch dims.

Transposed operands are a layout, not an op: a column-major B is a B tensor whose
strides say so, exactly as in cuDNN and PyTorch.
"""

from dnnc.dialect.opdef import BYTE_INTEGERS, Attr, Operand, TensorInfo, op

COMPUTE_TYPES = ("f32", "tf32", "i32")


def check_compute(ctx, names):
    """int32 compute goes with int8 / uint8 operands, and only with them:
    the products and their sum are exact integers (wrapping past 2^31, as
    the hardware's s32 accumulators do), never a float rounding."""
    integer = [n for n in names if ctx[n].dtype in BYTE_INTEGERS]
    compute = str(ctx.attrs["compute_type"])
    if integer:
        for n in names:
            if ctx[n].dtype not in BYTE_INTEGERS:
                ctx.fail(f"operand '{n}'", f"expected si8 or ui8 (as operand '{integer[0]}'), "
                         f"got {ctx[n].dtype or 'a float tensor'}")
        if compute != "i32":
            ctx.fail("attribute 'compute_type'", f"expected i32 (the accumulation of si8 / ui8 "
                     f"operands), got {compute}")
    elif compute == "i32":
        ctx.fail("attribute 'compute_type'", f"i32 takes si8 or ui8 operands: expected f32 or "
                 f"tf32 for operand '{names[0]}' of {ctx[names[0]].dtype or 'a float type'}, "
                 "got i32")


@op("matmul", family="matmul",
    operands=[Operand("a", dtype="number"), Operand("b", dtype="number")], results=["c"],
    attrs=[Attr("compute_type", "type", "f32", COMPUTE_TYPES,
                "accumulation type; tf32 rounds f32 operands to tf32; i32 (si8 / ui8 "
                "operands) is exact integer accumulation")])
def _matmul(ctx):
    """c[..., m, n] = sum_k a[..., m, k] * b[..., k, n]; batch dims broadcast.
    si8 / ui8 operands accumulate exactly in int32 (compute_type i32)."""
    check_compute(ctx, ["a", "b"])
    a, b = ctx["a"], ctx["b"]
    for name, t in (("a", a), ("b", b)):
        if t.rank < 2:
            ctx.fail(f"operand '{name}'", f"expected rank >= 2, got rank {t.rank}")
    if a.shape[-1] != b.shape[-2]:
        ctx.fail_dim("b", b.rank - 2, a.shape[-1], b.shape[-2], "K of 'a'")
    batch_rank = max(a.rank, b.rank) - 2
    batch = []
    for i in range(batch_rank):
        da = a.shape[a.rank - 3 - i] if a.rank - 3 - i >= 0 else 1
        db = b.shape[b.rank - 3 - i] if b.rank - 3 - i >= 0 else 1
        if da != db and da != 1 and db != 1:
            ctx.fail_dim("b", b.rank - 3 - i, f"{da} or 1", db, "batch dim of 'a'")
        batch.append(max(da, db))
    return {"c": TensorInfo(tuple(reversed(batch)) + (a.shape[-2], b.shape[-1]))}
