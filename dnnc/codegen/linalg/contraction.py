"""Matmul as a linalg.generic with f32 accumulation, and the operand rounding
shared with convolution (f32, or tf32 for ``compute_type = tf32``). With
``compute_type = i32`` (int8 / uint8 operands) the products and their sum
are i32, exact (wrapping past 2^31 as the hardware's s32 accumulators do),
converted once to the result type (``emit.from_i32``).

c[..., m, n] = sum_k a[..., m, k] * b[..., k, n]. Batch dims broadcast as in
NumPy: each operand's batch dims align right against c's, and a batch dim of
size 1 that c widens is read at index 0.
"""

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.linalg import emit
from dnnc.codegen.linalg.emit import PARALLEL, REDUCTION, ci, d, zero_expr
from dnnc.dialect.ops_matmul import SCALE_BLOCK
from dnnc.dialect.types import data_type


def round_tf32(x):
    """An f32 scalar rounded to tf32 (10 mantissa bits), to nearest even on the
    bit pattern; inf and NaN are kept."""
    bits = arith.bitcast(emit.i32(), x)
    # Drop the 13 low mantissa bits: add half an ulp minus one plus the lowest
    # kept bit (ties to even), then clear them. A carry into the exponent is
    # the correct rounding up (to the next binade, or to inf).
    lsb = arith.andi(arith.shrui(bits, ci(13)), ci(1))
    rounded = arith.andi(arith.addi(arith.addi(bits, ci(0xFFF)), lsb), ci(-0x2000))
    exponent = arith.andi(bits, ci(0x7F800000))
    finite = arith.cmpi(arith.CmpIPredicate.ne, exponent, ci(0x7F800000))
    return arith.bitcast(emit.f32(), arith.select(finite, rounded, bits))


def integer(compute_type):
    """Whether ``compute_type`` is int32 accumulation (int8 / uint8 operands)."""
    return str(compute_type) == "i32"


def accumulator(compute_type):
    """The element type of the accumulator: i32 or f32."""
    return emit.i32() if integer(compute_type) else emit.f32()


def operand_scalar(dtype, compute_type):
    """Stored element of ``dtype`` -> the value the multiply sees: f32
    (tf32-rounded in tf32 mode), or i32 in i32 mode. None when that is the
    identity."""
    if integer(compute_type):
        return lambda x: emit.to_i32(x, dtype)
    if str(compute_type) == "tf32":
        return lambda x: round_tf32(emit.to_f32(x, dtype))
    return emit.f32_scalar(dtype)


def as_compute(value, compute_type):
    """A tensor converted to f32 (tf32-rounded in tf32 mode) or, in i32 mode,
    to i32; f32 is kept."""
    dtype = emit.logical_info(value).dtype
    if integer(compute_type):
        return emit.convert(value, dtype, data_type.INT32)
    if dtype is data_type.FLOAT and str(compute_type) != "tf32":
        return value
    return emit.convert(value, dtype, data_type.FLOAT,
                        round_tf32 if str(compute_type) == "tf32" else None)


def mac(compute_type):
    """The body ``acc + x * y`` of the accumulator's type."""
    if integer(compute_type):
        return lambda x, y, acc: [arith.addi(acc, arith.muli(x, y))]
    return lambda x, y, acc: [arith.addf(acc, arith.mulf(x, y))]


def finish(acc, dtype, compute_type="f32"):
    """The accumulator (f32, or i32 in i32 mode) converted to the result type."""
    have = data_type.INT32 if integer(compute_type) else data_type.FLOAT
    return acc if dtype is have else emit.convert(acc, have, dtype)


def _batch_exprs(shape, batch):
    """Exprs of an operand's batch dims (all but its last two) against the
    output batch loops 0..len(batch)-1."""
    own = shape[:-2]
    offset = len(batch) - len(own)
    return [zero_expr() if n == 1 and batch[offset + i] != 1 else d(offset + i)
            for i, n in enumerate(own)]


def lower_matmul(view):
    a, b = view.operands["a"], view.operands["b"]
    ia, ib = emit.logical_info(a), emit.logical_info(b)
    out = emit.logical_info(view.results["c"])
    batch = out.shape[:-2]
    nb = len(batch)
    m, n, k = nb, nb + 1, nb + 2  # loop numbers of m, n and the reduction k
    loops = nb + 3
    maps = [
        emit.amap(loops, _batch_exprs(ia.shape, batch) + [d(m), d(k)]),
        emit.amap(loops, _batch_exprs(ib.shape, batch) + [d(k), d(n)]),
        emit.amap(loops, [d(i) for i in range(nb)] + [d(m), d(n)]),
    ]
    ct = view.attrs["compute_type"]
    sa = operand_scalar(ia.dtype, ct) or (lambda v: v)
    sb = operand_scalar(ib.dtype, ct) or (lambda v: v)
    acc = emit.filled(out.shape, accumulator(ct), 0.0)
    step = mac(ct)

    def body(x, y, c):
        return step(sa(x), sb(y), c)

    acc = emit.generic([a, b], [acc], maps, [PARALLEL] * (nb + 2) + [REDUCTION], body)[0]
    return {"c": finish(acc, out.dtype, ct)}


def lower_matmul_block_scaled(view):
    """c[m, n] = sum_k (a[m, k] * b[k, n]) * (a_scale[m, k / 128] *
    b_scale[k / 128, n / 128]) in f32: every product scaled by its blocks'
    scales (the scales' maps divide k and n by the block), which equals
    scaling each block's sum. The tensor-core kernels match this generic
    (four inputs, gemm.BlockScales) and sum each block before scaling it."""
    a, b = view.operands["a"], view.operands["b"]
    sa, sb = view.operands["a_scale"], view.operands["b_scale"]
    ia, ib = emit.logical_info(a), emit.logical_info(b)
    out = emit.logical_info(view.results["c"])
    m, n, k = 0, 1, 2

    def block(i):
        return ir.AffineFloorDivExpr.get(d(i), ir.AffineConstantExpr.get(SCALE_BLOCK))

    maps = [
        emit.amap(3, [d(m), d(k)]),
        emit.amap(3, [d(k), d(n)]),
        emit.amap(3, [d(m), block(k)]),
        emit.amap(3, [block(k), block(n)]),
        emit.amap(3, [d(m), d(n)]),
    ]
    to_a, to_b = emit.f32_scalar(ia.dtype), emit.f32_scalar(ib.dtype)
    acc = emit.filled(out.shape, emit.f32(), 0.0)

    def body(x, y, s, t, c):
        product = arith.mulf(to_a(x), to_b(y))
        return [arith.addf(c, arith.mulf(product, arith.mulf(s, t)))]

    acc = emit.generic([a, b, sa, sb], [acc], maps, [PARALLEL, PARALLEL, REDUCTION], body)[0]
    return {"c": finish(acc, out.dtype)}
