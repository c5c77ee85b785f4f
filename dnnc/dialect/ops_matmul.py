"""Matrix multiplication: batched, with broadcast batch dims.

Transposed operands are a layout, not an op: a column-major B is a B tensor whose
strides say so, exactly as in cuDNN and PyTorch.
"""

from dnnc.dialect.opdef import Attr, TensorInfo, op

COMPUTE_TYPES = ("f32", "tf32")


@op("matmul", family="matmul", operands=["a", "b"], results=["c"],
    attrs=[Attr("compute_type", "type", "f32", COMPUTE_TYPES,
                "accumulation type; tf32 rounds f32 operands to tf32")])
def _matmul(ctx):
    """c[..., m, n] = sum_k a[..., m, k] * b[..., k, n]; batch dims broadcast."""
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
