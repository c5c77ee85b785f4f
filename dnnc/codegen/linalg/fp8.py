"""fp8 <-> f32 conversion with integer arithmetic.

LLVM cannot lower ``arith.extf`` / ``arith.truncf`` on f8E4M3FN and f8E5M2.
dnn-expand-fp8 replaces them with this integer code wherever the target has
no fp8 converter instructions (the CPU, sm_80); both functions run on the i8
bit pattern (``arith.bitcast`` of the f8 scalar) widened to i32.

Formats (sign, exponent, mantissa bits; bias):

* f8E4M3FN: 1, 4, 3; bias 7. No infinities; only S.1111.111 is NaN, so the
  largest finite value is S.1111.110 = 448.
* f8E5M2: 1, 5, 2; bias 15. IEEE-like: exponent 11111 is inf (mantissa 0) or
  NaN; the largest finite value is 0.11110.11 = 57344.

Encoding rounds to nearest even. Finite values beyond the largest finite value
saturate to it; NaN stays NaN; infinity saturates in E4M3FN (it has none) and
stays infinity in E5M2.
"""

import math
from dataclasses import dataclass

import numpy as np

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.linalg.emit import cf, ci, f32, i32, i8, storage_element
from dnnc.dialect.types import data_type


@dataclass(frozen=True)
class Format:
    mantissa: int
    exponent: int
    bias: int
    max_code: int  # magnitude code of the largest finite value
    inf_code: int  # magnitude code that infinity encodes to
    nan_code: int

    @property
    def exponent_max(self):
        return (1 << self.exponent) - 1


FORMATS = {
    data_type.FP8_E4M3: Format(mantissa=3, exponent=4, bias=7, max_code=0x7E, inf_code=0x7E,
                               nan_code=0x7F),
    data_type.FP8_E5M2: Format(mantissa=2, exponent=5, bias=15, max_code=0x7B, inf_code=0x7C,
                               nan_code=0x7E),
}

_F32_BIAS = 127
_F32_MANTISSA = 23


def _and(a, mask):
    return arith.andi(a, ci(mask))


def _eq(a, b):
    return arith.cmpi(arith.CmpIPredicate.eq, a, b if isinstance(b, ir.Value) else ci(b))


def decode(value, dtype):
    """An f8 scalar as f32 (exact)."""
    fmt = FORMATS[dtype]
    m_bits = fmt.mantissa
    u = arith.extui(i32(), arith.bitcast(i8(), value))
    sign = arith.shli(_and(u, 0x80), ci(24))  # f8 bit 7 -> f32 bit 31
    exp = _and(arith.shrui(u, ci(m_bits)), fmt.exponent_max)
    man = _and(u, (1 << m_bits) - 1)
    # Normal: rebias the exponent and left-align the mantissa in 23 bits.
    normal = arith.ori(arith.shli(arith.addi(exp, ci(_F32_BIAS - fmt.bias)), ci(_F32_MANTISSA)),
                       arith.shli(man, ci(_F32_MANTISSA - m_bits)))
    # Subnormal: man * 2^(1 - bias - m_bits), exact in f32.
    sub_value = arith.mulf(arith.uitofp(f32(), man), cf(2.0 ** (1 - fmt.bias - m_bits)))
    magnitude = arith.select(_eq(exp, 0), arith.bitcast(i32(), sub_value), normal)
    if dtype is data_type.FP8_E4M3:
        is_nan = arith.andi(_eq(exp, fmt.exponent_max), _eq(man, (1 << m_bits) - 1))
        magnitude = arith.select(is_nan, ci(0x7FC00000), magnitude)
    else:
        # Exponent all ones: inf for a zero mantissa, else NaN.
        special = arith.select(_eq(man, 0), ci(0x7F800000), ci(0x7FC00000))
        magnitude = arith.select(_eq(exp, fmt.exponent_max), special, magnitude)
    return arith.bitcast(f32(), arith.ori(magnitude, sign))


def encode(value, dtype):
    """An f32 scalar rounded to the f8 ``dtype`` (see the module docstring)."""
    fmt = FORMATS[dtype]
    m_bits = fmt.mantissa
    bits = arith.bitcast(i32(), value)
    sign = _and(arith.shrui(bits, ci(24)), 0x80)  # f32 bit 31 -> f8 bit 7
    mag = _and(bits, 0x7FFFFFFF)

    # Normal range: drop the low (23 - m_bits) mantissa bits with round to
    # nearest even (add half an ulp minus one plus the kept lsb), then rebias
    # the exponent from 127 to the format's bias; a carry rounds up a binade.
    shift = _F32_MANTISSA - m_bits
    lsb = _and(arith.shrui(mag, ci(shift)), 1)
    rounded = arith.shrui(arith.addi(arith.addi(mag, ci((1 << (shift - 1)) - 1)), lsb), ci(shift))
    normal = arith.subi(rounded, ci((_F32_BIAS - fmt.bias) << m_bits))
    normal = arith.minsi(normal, ci(fmt.max_code))  # saturate finite overflow

    # Subnormal range: value = mant * 2^(e - 150) with the implicit bit in
    # mant (e = biased f32 exponent); in units of the smallest subnormal
    # 2^(1 - bias - m_bits) that is mant >> s, s = (151 - bias - m_bits) - e.
    # s >= 32 would be poison; any s >= 25 already rounds to 0, so clamp to 31.
    e = arith.shrui(mag, ci(_F32_MANTISSA))
    mant = arith.ori(_and(mag, 0x7FFFFF), ci(0x800000))
    s = arith.subi(ci(151 - fmt.bias - m_bits), e)
    s = arith.minsi(arith.maxsi(s, ci(1)), ci(31))
    q = arith.shrui(mant, s)
    rem = arith.subi(mant, arith.shli(q, s))
    half = arith.shli(ci(1), arith.subi(s, ci(1)))
    above = arith.cmpi(arith.CmpIPredicate.ugt, rem, half)
    tie_odd = arith.andi(_eq(rem, half), _eq(_and(q, 1), 1))
    sub = arith.addi(q, arith.extui(i32(), arith.ori(above, tie_odd)))

    # Below 2^(1 - bias) the result is subnormal (or zero).
    min_normal = (_F32_BIAS + 1 - fmt.bias) << _F32_MANTISSA
    is_sub = arith.cmpi(arith.CmpIPredicate.slt, mag, ci(min_normal))
    code = arith.select(is_sub, sub, normal)
    code = arith.select(_eq(mag, 0x7F800000), ci(fmt.inf_code), code)
    is_nan = arith.cmpi(arith.CmpIPredicate.sgt, mag, ci(0x7F800000))
    code = arith.select(is_nan, ci(fmt.nan_code), code)
    code = arith.ori(code, sign)
    return arith.bitcast(storage_element(dtype), arith.trunci(i8(), code))


def round_value(value, dtype):
    """A Python float rounded to the nearest f8 value (ties to the even code),
    with the same saturation as ``encode``; for compile-time constants."""
    fmt = FORMATS[dtype]
    if math.isnan(value):
        return value
    if math.isinf(value) and fmt.inf_code != fmt.max_code:
        return value
    codes = np.arange(fmt.max_code + 1, dtype=np.uint8)
    magnitudes = codes.view(dtype.numpy).astype(np.float64)  # exact, increasing
    error = np.abs(magnitudes - min(abs(value), magnitudes[-1]))
    best = np.flatnonzero(error == error.min())
    code = best[0] if len(best) == 1 or best[0] % 2 == 0 else best[1]
    return math.copysign(float(magnitudes[code]), value)
