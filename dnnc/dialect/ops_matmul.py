"""Matrix multiplication: batched, with broadcast batch dims.

Transposed operands are a layout, not an op: a column-major B is a B tensor whose
strides say so, exactly as in cuDNN and PyTorch.
"""

from dnnc.dialect.opdef import BYTE_INTEGERS, Attr, Operand, TensorInfo, op
from dnnc.dialect.types import data_type

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


# The K extent of a scale block of both operands, and the N extent of one of
# B's: DeepSeek-V3's 1 x 128 activation and 128 x 128 weight blocks.
SCALE_BLOCK = 128
FP8_OPERANDS = (data_type.FP8_E4M3, data_type.FP8_E5M2)


@op("matmul_block_scaled", family="matmul",
    operands=[Operand("a"), Operand("b"), Operand("a_scale"), Operand("b_scale")],
    results=["c"],
    attrs=[Attr("compute_type", "type", "f32", ("f32",),
                "accumulation type (f32: the products of each 128-wide K block are "
                "summed in f32, scaled, and added to an f32 sum)")])
def _matmul_block_scaled(ctx):
    """c[m, n] = sum_kb a_scale[m, kb] * b_scale[kb, n / 128] *
    sum_{k in block kb} a[m, k] * b[k, n], with blocks kb of 128 along K
    (the last one partial when K is not a multiple of 128). a and b are fp8
    (e4m3 or e5m2, any pairing), the scales f32."""
    a, b = ctx["a"], ctx["b"]
    for name in ("a", "b"):
        info = ctx[name]
        if info.dtype is not None and info.dtype not in FP8_OPERANDS:
            ctx.fail(f"operand '{name}'", f"expected f8E4M3FN or f8E5M2, got {info.dtype}")
        ctx.expect_rank(name, 2)
    for name in ("a_scale", "b_scale"):
        ctx.expect_dtype(name, data_type.FLOAT)
    if a.shape[1] != b.shape[0]:
        ctx.fail_dim("b", 0, a.shape[1], b.shape[0], "K of 'a'")
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    blocks_k, blocks_n = -(-k // SCALE_BLOCK), -(-n // SCALE_BLOCK)
    ctx.expect_shape("a_scale", (m, blocks_k),
                     f"a_scale is M x ceil(K / {SCALE_BLOCK}): one per row and {SCALE_BLOCK}-wide "
                     "K block of 'a'")
    ctx.expect_shape("b_scale", (blocks_k, blocks_n),
                     f"b_scale is ceil(K / {SCALE_BLOCK}) x ceil(N / {SCALE_BLOCK}): one per "
                     f"{SCALE_BLOCK} x {SCALE_BLOCK} block of 'b'")
    return {"c": TensorInfo((m, n))}
