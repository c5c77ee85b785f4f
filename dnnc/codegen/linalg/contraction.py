"""Matmul as a linalg.generic with f32 accumulation, and the operand rounding
shared with convolution (f32, or tf32 for ``compute_type = tf32``).

c[..., m, n] = sum_k a[..., m, k] * b[..., k, n]. Batch dims broadcast as in
NumPy: each operand's batch dims align right against c's, and a batch dim of
size 1 that c widens is read at index 0.
"""

from mlir.dialects import arith

from dnnc.codegen.linalg import emit
from dnnc.codegen.linalg.emit import PARALLEL, REDUCTION, ci, d, zero_expr
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


def operand_scalar(dtype, compute_type):
    """Stored element of ``dtype`` -> the f32 value the multiply sees (None
    when that is the identity)."""
    if str(compute_type) == "tf32":
        return lambda x: round_tf32(emit.to_f32(x, dtype))
    return emit.f32_scalar(dtype)


def as_compute(value, compute_type):
    """A tensor converted to f32 (tf32-rounded in tf32 mode); f32 is kept."""
    dtype = emit.logical_info(value).dtype
    if dtype is data_type.FLOAT and str(compute_type) != "tf32":
        return value
    return emit.convert(value, dtype, data_type.FLOAT,
                        round_tf32 if str(compute_type) == "tf32" else None)


def finish(acc, dtype):
    """The f32 accumulator rounded to the result type."""
    return acc if dtype is data_type.FLOAT else emit.convert(acc, data_type.FLOAT, dtype)


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
    acc = emit.filled(out.shape, emit.f32(), 0.0)

    def body(x, y, c):
        return [arith.addf(c, arith.mulf(sa(x), sb(y)))]

    acc = emit.generic([a, b], [acc], maps, [PARALLEL] * (nb + 2) + [REDUCTION], body)[0]
    return {"c": finish(acc, out.dtype)}
