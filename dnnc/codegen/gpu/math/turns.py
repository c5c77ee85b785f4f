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
* The 96 bits are cut from ``WORDS``, 2/pi's bits in 64-bit words (word
  k: bits 64 k - 63 to 64 k, the first of them its highest; word 0 the
  zeros before the binary point): three consecutive words picked by
  (e - 88) / 64 (selects among three) and funnel-shifted by (e - 88) mod
  64 (``llvm.fshl``), so no table lookup and no memory.
* M W modulo 2^96, W the 96-bit window, is x 2/pi mod 4 in units of
  2^-94; its top 64 bits, M high + (M low) / 2^32 modulo 2^64 (high: the
  window's first 64 bits, low: its last 32), are what ``quarter_turns``
  returns: x 2/pi mod 4 as an unsigned 64-bit fixed-point number with 62
  fraction bits. Dropping the low 32 bits costs less than 2^-62 of a
  quarter turn.

An f32 very near a multiple of pi/2, 16367173 2^72, is 2^-29.9 of a
quarter turn away from it: the result still has 32 bits right, more than
an f32 sin or cos needs. Valid for |x| >= 2^17 (e >= 144; smaller
exponents would need bits before the first word); callers select the
Cody-Waite result below a threshold, and handle inf and NaN themselves
(their words are finite garbage here). Tested on the CPU through the
emulated GPU lowering (test_cuda_compile.py: f32 sin and cos within 1 ulp
of float64 up to 3.4e38, bf16 ones through math/fast.py);
test_math_fast.py checks the formulas around it against exact rational
arithmetic, and the words.
"""

import math

from mlir import ir
from mlir.dialects import arith, scf

from dnnc.codegen.gpu.math.scalar import bits, ci, intrinsic

# Bits of 2/pi computed here (``two_over_pi``): the last word read, WORDS[4],
# ends at bit 256.
FRACTION_BITS = 256
WORD_COUNT = 5
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
    """2/pi's bits in 64-bit words: word k holds bits 64 k - 63 to 64 k (the
    first of them its highest); word 0, the bits before the binary point,
    is 0."""
    value = two_over_pi()
    return [(value >> (FRACTION_BITS - 64 * k)) & (2 ** 64 - 1) if k else 0
            for k in range(WORD_COUNT)]


WORDS = words()


def _i64():
    return ir.IntegerType.get_signless(64)


def _c64(value):
    """An i64 constant of the 64 bits ``value`` (>= 2^63 as a negative)."""
    value = int(value)
    return arith.constant(_i64(), value - (1 << 64) if value >= 1 << 63 else value)


def _word(q, first):
    """WORDS[first + q] for an i32 q in {0, 1, 2}: two selects."""
    return arith.select(arith.cmpi(arith.CmpIPredicate.eq, q, ci(0)), _c64(WORDS[first]),
                        arith.select(arith.cmpi(arith.CmpIPredicate.eq, q, ci(1)),
                                     _c64(WORDS[first + 1]), _c64(WORDS[first + 2])))


def _fshl(a, b, r):
    """The high 64 bits of (a:b) << r, r in [0, 63] (a alone for r = 0)."""
    return intrinsic("llvm.fshl.i64", a, b, r, type_=_i64())


def quarter_turns(x):
    """|x| 2/pi mod 4 of an f32 ``x`` with |x| >= 2^17, as an i64 holding an
    unsigned fixed-point number with 62 fraction bits (see the module
    docstring); undefined below 2^17 and for inf and NaN."""
    word = arith.andi(bits(x), ci(0x7FFFFFFF))
    e = arith.maxsi(arith.shrui(word, ci(23)), ci(LEAST_EXPONENT))
    m = arith.extui(_i64(), arith.ori(arith.andi(word, ci(0x007FFFFF)), ci(0x00800000)))
    # The window starts after bit e - 152, which is bit r of word q (counted
    # from its highest): e - 152 + 64 = 64 q + r, q in {0, 1, 2} for e in
    # [144, 255].
    start = arith.subi(e, ci(152 - 64))
    q = arith.shrui(start, ci(6))
    r = arith.extui(_i64(), arith.andi(start, ci(63)))
    w0, w1, w2 = _word(q, 0), _word(q, 1), _word(q, 2)
    high = _fshl(w0, w1, r)                                     # window bits 1 to 64
    low = arith.shrui(_fshl(w1, w2, r), _c64(32))               # window bits 65 to 96
    # (M W mod 2^96) / 2^32 = (M high + M low / 2^32) mod 2^64 (W = high
    # 2^32 + low): the i64 product wraps where the bits past 2^96 go.
    return arith.addi(arith.muli(m, high), arith.shrui(arith.muli(m, low), _c64(32)))


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


def only_where(condition, build, types):
    """The values ``build()`` makes (of ``types``) where the i1 ``condition``
    holds, zeros elsewhere: built inside an ``scf.if``, so that a warp none
    of whose lanes needs the exact reduction (|x| < 2^20, the common case)
    skips its some 40 instructions; the caller selects. The one branch
    among the math expansions, which are otherwise computed and selected:
    every other branch is a few instructions, this one is more than the
    rest of a 16-bit sin or cos."""
    op = scf.IfOp(condition, list(types), has_else=True)
    with ir.InsertionPoint(op.then_block):
        scf.YieldOp(list(build()))
    with ir.InsertionPoint(op.else_block):
        scf.YieldOp([arith.constant(t, 0.0 if isinstance(t, (ir.F32Type, ir.F64Type)) else 0)
                     for t in types])
    return list(op.results)
