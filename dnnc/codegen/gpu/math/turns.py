"""sin and cos arguments of any size: |x| 2/pi modulo 4 (Payne-Hanek), in
exact integer arithmetic.

A Cody-Waite reduction (x - j pi/2 with pi/2 in two or three parts) is
exact only while j pi/2 is: up to |x| ~ 2^20 in f64, 2^24 in f32 with an
fma. Beyond, the rounding of j pi/2 is larger than the remainder, and the
result means nothing; an f32 may be as large as 3.4e38. Here the remainder
is computed exactly instead, from the bits of 2/pi that matter for this x:

* |x| = M 2^(e - 150), M the 24-bit significand, e the biased exponent.
  Bit i of 2/pi (weight 2^-i) adds M 2^(e - 150 - i) to x 2/pi: a multiple
  of 4, which changes nothing modulo 4, for every i <= e - 152. So only
  the bits after e - 152 matter; 96 of them are enough: those after bit
  e - 152 + 96 add less than M 2^(2 - 96) < 2^-70.
* The 96 bits are read as three 32-bit words from ``WORDS``, the bits of
  2/pi cut at every byte. The window must start at a byte, so M is first
  shifted left by the (e - 152) mod 8 bits the window start is moved back
  (M' = M << sh, at most 31 bits).
* M' W modulo 2^96, W the 96-bit window, is x 2/pi mod 4 in units of
  2^-94; its top 64 bits (three 32 x 32 -> 64-bit products and their
  carries) are kept: ``quarter_turns`` returns them, x 2/pi mod 4 as an
  unsigned 64-bit fixed-point number with 62 fraction bits. Dropping the
  low 32 bits costs less than 2^-62 of a quarter turn.

An f32 very near a multiple of pi/2, 16367173 2^72, is 2^-29.9 of a
quarter turn away from it: the result still has 32 bits right, more than
an f32 sin or cos needs. Valid for |x| >= 2^17 (e >= 144; smaller exponents would need bits
before the first of 2/pi); callers select the Cody-Waite result below a
threshold, and handle inf and NaN themselves (their words are finite
garbage here). Tested on the CPU through the emulated GPU lowering
(test_cuda_compile.py: f32 sin and cos within 1 ulp of float64 up to
3.4e38, bf16 ones through math/fast.py); test_math_fast.py checks the
formulas around it against exact rational arithmetic.
"""

import math

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.gpu.math.scalar import bits, ci

# Bits of 2/pi computed here (``two_over_pi``): the last word read is bits
# 161..192 (WORDS[21]); 64 more guard the truncation.
FRACTION_BITS = 256
# Window words for windows starting at bytes -1 .. 20 (the first byte is the
# zeros before the binary point, for exponents 144 to 151).
FIRST_BYTE = -1
WORD_COUNT = 22
LEAST_EXPONENT = 144  # |x| >= 2^17
PI_OVER_2_ULP = math.pi / 2 * 2.0 ** -62  # a unit of quarter_turns, in radians


def _arctan_inverse(k, one):
    """atan(1/k) * ``one`` (an integer power of 2), by its Taylor series in
    integers; each term truncated, so off by at most the number of terms."""
    total, power, n, sign = 0, one // k, 1, 1
    while power:
        total += sign * (power // n)
        power //= k * k
        n += 2
        sign = -sign
    return total


def two_over_pi(bits_=FRACTION_BITS):
    """floor(2/pi 2^bits_), from Machin's formula pi = 16 atan(1/5) - 4
    atan(1/239) with 64 guard bits."""
    guard = 64
    one = 1 << (bits_ + guard)
    pi = 16 * _arctan_inverse(5, one) - 4 * _arctan_inverse(239, one)
    return (1 << (2 * (bits_ + guard) + 1)) // pi >> guard


def words():
    """Windows of 2/pi at every byte: word j holds its bits 8 b + 1 to
    8 b + 32 for b = j + FIRST_BYTE (the first of them its highest bit;
    bits before the binary point are 0)."""
    value = two_over_pi()
    out = []
    for j in range(WORD_COUNT):
        start = 8 * (j + FIRST_BYTE)  # the bit before the window
        out.append((value >> (FRACTION_BITS - start - 32)) & 0xFFFFFFFF)
    return out


WORDS = words()


def _i64():
    return ir.IntegerType.get_signless(64)


def _c64(value):
    return arith.constant(_i64(), int(value))


def quarter_turns(x):
    """|x| 2/pi mod 4 of an f32 ``x`` with |x| >= 2^17, as an i64 holding an
    unsigned fixed-point number with 62 fraction bits (see the module
    docstring); undefined below 2^17 and for inf and NaN."""
    word = arith.andi(bits(x), ci(0x7FFFFFFF))
    e = arith.maxsi(arith.shrui(word, ci(23)), ci(LEAST_EXPONENT))
    m = arith.ori(arith.andi(word, ci(0x007FFFFF)), ci(0x00800000))
    # The window starts after bit e - 152, moved back to a byte: M absorbs
    # the sh bits moved. byte = (e - 152 - sh) / 8 - FIRST_BYTE >= 0.
    start = arith.subi(e, ci(152 + 8 * FIRST_BYTE))
    sh = arith.andi(start, ci(7))
    byte = arith.shrui(start, ci(3))
    m = arith.extui(_i64(), arith.shli(m, sh))
    # WORDS[byte], WORDS[byte + 4], WORDS[byte + 8]: a chain of selects
    # (no memory in the kernel); bytes run to (254 - 144) / 8 = 13.
    hi_word, mid_word, lo_word = _c64(0), _c64(0), _c64(0)
    for b in range((254 - LEAST_EXPONENT) // 8 + 1):
        here = arith.cmpi(arith.CmpIPredicate.eq, byte, ci(b))
        hi_word = arith.select(here, _c64(WORDS[b]), hi_word)
        mid_word = arith.select(here, _c64(WORDS[b + 4]), mid_word)
        lo_word = arith.select(here, _c64(WORDS[b + 8]), lo_word)
    # M' W = (M' hi) 2^64 + (M' mid) 2^32 + M' lo, each product below 2^63;
    # carries go up 32 bits at a time, and what passes 2^96 is dropped.
    low32 = _c64(0xFFFFFFFF)
    lo = arith.muli(m, lo_word)
    mid = arith.addi(arith.muli(m, mid_word), arith.shrui(lo, _c64(32)))
    hi = arith.addi(arith.muli(m, hi_word), arith.shrui(mid, _c64(32)))
    return arith.ori(arith.shli(hi, _c64(32)), arith.andi(mid, low32))


def nearest_quadrant(turns):
    """(n, r): the quadrant n = round(turns) mod 4 (i32) and turns - n, in
    [-1/2, 1/2) quarter turns, as an f64 in radians."""
    n64 = arith.shrui(arith.addi(turns, _c64(1 << 61)), _c64(62))
    rest = arith.subi(turns, arith.shli(n64, _c64(62)))  # wraps into [-2^61, 2^61)
    r = arith.mulf(arith.sitofp(ir.F64Type.get(), rest),
                   arith.constant(ir.F64Type.get(), PI_OVER_2_ULP))
    return arith.trunci(ir.IntegerType.get_signless(32), n64), r


def half_turn(turns):
    """turns taken in [-2, 2) quarter turns, as an f64 in radians: |x| mod
    2 pi in [-pi, pi)."""
    return arith.mulf(arith.sitofp(ir.F64Type.get(), turns),
                      arith.constant(ir.F64Type.get(), PI_OVER_2_ULP))
