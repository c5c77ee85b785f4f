"""f32 math for results that are rounded to a 16-bit float (bf16, f16), from
the hardware's approximations.

math/approx.py keeps f32 results within 1-2 ulp with range reduction and
polynomials: 25 to 100 SASS instructions per element, more than a
bandwidth-bound kernel can hide (an H200 streaming bf16 at 4 TB/s leaves each
element about 30 instruction issues of the whole GPU, loads and stores
included). A result that is rounded to bf16 (8 significant bits) or f16 (11)
needs far less: the SFU's ("MUFU") approximations of 2^x, log2 x, 1/x,
sin x, tanh x, sqrt x and 1/sqrt x, one instruction each, with a few FMAs
around them. dnn-expand-math uses these forms where every use of a math op's
result ends, through f32 arithmetic, in a rounding to a 16-bit float.

Errors of the hardware approximations (PTX ISA), and what they make here:

* ``ex2.approx.ftz``: 2 ulp; exp(x) = 2^(x log2 e) adds |x| 2^-24 relative
  from rounding x log2 e (below 2^-17 for finite results). Results below
  2^-126 flush to 0.
* ``lg2.approx``: 2^-22.6 absolute; ln x = lg2 x * ln 2.
* ``rcp.approx``: 1 ulp. The ``.ftz`` form (one instruction, where the plain
  one takes seven) is used where the operand is known to be at least 1.
* ``sin.approx`` / ``cos.approx``: 2^-20.9 absolute on [-pi, pi]: the
  argument is first reduced by 2 pi (Cody-Waite, two f32 parts, below 2^20;
  exactly beyond, math/turns.py), and sin x = x - x^3 / 6 near 0, where an
  absolute error would be a large relative one.
* ``tanh.approx``: 2^-10.99 relative, a quarter of a bf16 ulp and half an f16
  ulp; results differ from the correctly rounded ones by at most one unit.
* ``sqrt.approx`` / ``rsqrt.approx``: 2^-23 relative.

Where cancellation would turn the absolute error of a MUFU result into a large
relative one (expm1 and log1p near 0), a short series takes over.

Every function takes an ``Ops`` first: ``Ops(gpu=True)`` emits the NVPTX
intrinsics (``llvm.nvvm.ex2.approx.ftz.f``...); ``Ops(gpu=False)`` their exact
portable counterparts (``llvm.exp2.f32``...), so that the CPU emulation of the
GPU lowering (test_cuda_compile.py) runs the same formulas. The formulas are
also written against this small interface so that test_math_fast.py can run
them in NumPy float32, with the hardware's error bounds injected, and compare
against float64.
"""

import math

from mlir import ir
from mlir.dialects import arith, llvm

from dnnc.codegen.gpu.math import scalar as s, turns

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
# 2 pi = _TWO_PI_HI + _TWO_PI_LO (f32 parts): j * _TWO_PI_HI is exact inside
# an fma, and the sum is 2 pi within 2^-47 relative.
_TWO_PI_HI = 6.2831854820251465
_TWO_PI_LO = -1.7484555314695172e-07
_INV_TWO_PI = 0.15915493667125702
_TWO_PART_LIMIT = 2.0 ** 20


class Ops:
    """The operations the formulas below are written in, emitted as MLIR at
    the current insertion point: arith, the generic LLVM intrinsics of
    math/scalar.py, and the hardware approximations (NVPTX intrinsics when
    ``gpu``, else exact portable equivalents)."""

    def __init__(self, gpu):
        self.gpu = gpu

    # -- arithmetic
    const = staticmethod(s.c)
    add = staticmethod(s.add)
    sub = staticmethod(s.sub)
    mul = staticmethod(s.mul)
    fma = staticmethod(s.fma)
    fabs = staticmethod(s.fabs)
    copysign = staticmethod(s.copysign)
    floor = staticmethod(s.floor)
    roundeven = staticmethod(s.roundeven)
    select = staticmethod(s.select)
    isnan = staticmethod(s.isnan)
    isinf = staticmethod(s.isinf)
    minimum = staticmethod(arith.minimumf)  # NaN if either is

    @staticmethod
    def lt(a, b):
        return s.cmp(s.P.OLT, a, b)

    @staticmethod
    def eq(a, b):
        return s.cmp(s.P.OEQ, a, b)

    @staticmethod
    def ne(a, b):
        return s.cmp(s.P.ONE, a, b)

    @staticmethod
    def and_(p, q):
        return arith.andi(p, q)

    @staticmethod
    def or_(p, q):
        return arith.ori(p, q)

    @staticmethod
    def not_(p):
        return arith.xori(p, arith.constant(ir.IntegerType.get_signless(1), 1))

    # -- the hardware's approximations
    def ex2(self, x):
        """2^x; subnormal results flush to 0 on the GPU."""
        return s.intrinsic("llvm.nvvm.ex2.approx.ftz.f" if self.gpu else "llvm.exp2.f32", x)

    def lg2(self, x, ftz=False):
        """log2 x; ``ftz`` (one instruction instead of four) only where x is
        known not to be subnormal."""
        if not self.gpu:
            return s.intrinsic("llvm.log2.f32", x)
        return s.intrinsic("llvm.nvvm.lg2.approx.ftz.f" if ftz else "llvm.nvvm.lg2.approx.f", x)

    def rcp(self, x, ftz=False):
        """1/x; ``ftz`` only where |x| is known to lie in [2^-126, 2^126]
        (or be 0, inf or NaN)."""
        if self.gpu and ftz:
            return s.intrinsic("llvm.nvvm.rcp.approx.ftz.f", x)
        # NVPTX selects rcp.approx.f32 for an afn 1/x: full range, 1 ulp.
        flags = arith.FastMathFlags.afn if self.gpu else None
        return arith.divf(s.c(1.0), x, fastmath=flags)

    def tanh(self, x):
        """NVPTX selects tanh.approx.f32 (sm_75+) for an afn llvm.tanh; LLVM
        has no NVVM intrinsic for it (llvm.nvvm.tanh.approx.f32 is upgraded
        to this form when read, and MLIR does not know the old name)."""
        if not self.gpu:
            return s.intrinsic("llvm.tanh.f32", x)
        return llvm.CallIntrinsicOp(s.f32(), "llvm.tanh.f32", [x], [], [],
                                    fastmathFlags=ir.Attribute.parse("#llvm.fastmath<afn>")
                                    ).result

    def turn(self, x, where):
        """x mod 2 pi in [-pi, pi] for |x| >= 2^17, exactly (math/turns.py,
        integer arithmetic), then rounded to f32; computed only where the
        i1 ``where`` holds (a branch: turns.only_where), 0 elsewhere."""
        def exact():
            t = arith.truncf(s.f32(), turns.half_turn(turns.quarter_turns(x)))
            return [s.select(s.cmp(s.P.OLT, x, s.c(0.0)), arith.negf(t), t)]
        return turns.only_where(where, exact, [s.f32()])[0]

    def sin(self, x):
        return s.intrinsic("llvm.nvvm.sin.approx.ftz.f" if self.gpu else "llvm.sin.f32", x)

    def cos(self, x):
        return s.intrinsic("llvm.nvvm.cos.approx.ftz.f" if self.gpu else "llvm.cos.f32", x)

    def sqrt(self, x):
        return s.intrinsic("llvm.nvvm.sqrt.approx.f" if self.gpu else "llvm.sqrt.f32", x)

    def rsqrt(self, x):
        if self.gpu:
            return s.intrinsic("llvm.nvvm.rsqrt.approx.f", x)
        return s.div(s.c(1.0), s.sqrt(x))


# ----------------------------------------------------------------------------
# The functions: o is an Ops, every operand and result an f32 value.


def exp(o, x):
    """e^x = 2^(x log2 e). +-inf and NaN go through ex2 as they should."""
    return o.ex2(o.mul(x, o.const(LOG2E)))


def expm1(o, x):
    """e^x - 1: x + x^2/2 + x^3/6 for |x| < 1/16 (relative error below
    2^-16 there), where 2^(x log2 e) - 1 would cancel its 2 ulp to
    2^-22 / |x|."""
    big = o.sub(exp(o, x), o.const(1.0))
    small = o.fma(o.mul(x, x), o.fma(x, o.const(1.0 / 6.0), o.const(0.5)), x)
    return o.select(o.lt(o.fabs(x), o.const(0.0625)), small, big)


def log(o, x):
    """ln x = lg2 x * ln 2; 0 gives -inf, a negative x NaN, subnormals are
    kept (not the ftz form: a bf16 input may be subnormal)."""
    return o.mul(o.lg2(x), o.const(LN2))


def log1p(o, x):
    """ln(1 + x): x - x^2/2 + x^3/3 for |x| < 1/64, lg2(1 + x) ln 2 beyond
    (1 + x is 0 or at least 2^-24: the ftz form is exact there)."""
    big = o.mul(o.lg2(o.add(x, o.const(1.0)), ftz=True), o.const(LN2))
    small = o.fma(o.mul(x, x), o.fma(x, o.const(1.0 / 3.0), o.const(-0.5)), x)
    return o.select(o.lt(o.fabs(x), o.const(1.0 / 64.0)), small, big)


def tanh(o, x):
    return o.tanh(x)


def _reduce_two_pi(o, x):
    """x - j 2 pi for the integer j nearest x / 2 pi, in [-pi, pi] up to
    rounding: below 2^20 in two f32 parts, exact there; beyond, where j 2 pi
    would round by more than the remainder (f32 inputs reach 3.4e38), the
    exact reduction of math/turns.py (``Ops.turn``). inf and NaN give NaN."""
    j = o.roundeven(o.mul(x, o.const(_INV_TWO_PI)))
    r = o.fma(j, o.const(-_TWO_PI_HI), x)
    r = o.fma(j, o.const(-_TWO_PI_LO), r)
    ax = o.fabs(x)
    big = o.and_(o.not_(o.lt(ax, o.const(_TWO_PART_LIMIT))), o.lt(ax, o.const(math.inf)))
    return o.select(big, o.turn(x, big), r)


def sin(o, x):
    """sin.approx of the reduced argument; x - x^3/6 for |x| < 1/16."""
    y = o.sin(_reduce_two_pi(o, x))
    small = o.fma(o.mul(o.mul(x, x), x), o.const(-1.0 / 6.0), x)
    return o.select(o.lt(o.fabs(x), o.const(0.0625)), small, y)


def cos(o, x):
    return o.cos(_reduce_two_pi(o, x))


def pow(o, x, y):
    """x^y as C's powf, from 2^(y log2|x|): negative for a negative x and an
    odd integer y, NaN for a finite negative x and a non-integer y; pow(x, 0) = 1,
    pow(1, y) = 1 even for NaN, and pow(-1, +-inf) = 1. A NaN x or y
    otherwise reaches the result through lg2 and the product. y is odd when
    y/2 is not an integer (exact for |y| < 2^25; every f32 beyond is even).
    lg2 keeps subnormal x (a bf16 may be one)."""
    ax = o.fabs(x)
    # |x| = 1 exactly, not through lg2 1 (0 within 2^-22.6): pow(-1, 1e30) is
    # 1, pow(-1, +-inf) too; the sign and NaN rules below apply to it.
    r = o.select(o.eq(ax, o.const(1.0)), o.const(1.0), o.ex2(o.mul(y, o.lg2(ax))))
    is_int = o.eq(o.floor(y), y)
    half = o.mul(y, o.const(0.5))
    odd = o.and_(is_int, o.ne(o.floor(half), half))
    # x = -0.0 with an odd y keeps the sign too: copysign(r, x) covers both.
    r = o.select(odd, o.copysign(r, x), r)
    # A finite negative x only: pow(-inf, 0.5) is +inf, as 2^(0.5 lg2 inf).
    negative = o.and_(o.lt(x, o.const(0.0)), o.not_(o.isinf(x)))
    r = o.select(o.and_(negative, o.not_(is_int)), o.const(math.nan), r)
    return o.select(o.eq(y, o.const(0.0)), o.const(1.0), r)


# erf(t) = 1 - 2^Q(t) for t in [1/16, 3.5]: Q ~ log2 erfc, fitted for dnnc
# (least squares reweighted toward the smallest largest relative error of
# erf, coefficients rounded to f32): within 8.1e-7 of erf, relative.
# erfc(3.5) = 7.4e-7: beyond, erf is exactly +-1. Not 1 - 2^Q(3.5), which
# would round to 1 in bf16 and f16 but not in the f32 arithmetic after it:
# GELU's 0.5 x (1 + erf(x / sqrt 2)) would be -3.7e-7 x for every x below
# -4.95 (-inf at -inf, where the reference's -inf * 0 is NaN; -3.7e8 at
# -1e15, where it is -0).
_ERF_LOG2_ERFC = [-2.9946169815957546e-3, 2.9790878295898438e-2, -1.4892756938934326e-1,
                  -9.183821082115173e-1, -1.6279069185256958, -7.253621703284807e-8]
_ERF_CLAMP = 3.5


def erf(o, x):
    """sign(x) (1 - 2^Q(|x|)) for |x| < 3.5, sign(x) beyond; x (2/sqrt(pi))
    (1 - x^2/3) for |x| < 1/16 (relative error x^4/10), where 1 - 2^Q would
    cancel. A NaN goes through the clamp (minimumf keeps it), fails the
    test for the clamp's value and stays NaN in 1 - 2^Q(NaN)."""
    t = o.minimum(o.fabs(x), o.const(_ERF_CLAMP))
    q = o.const(_ERF_LOG2_ERFC[0])
    for k in _ERF_LOG2_ERFC[1:]:
        q = o.fma(q, t, o.const(k))
    tail = o.select(o.eq(t, o.const(_ERF_CLAMP)), o.const(1.0),
                    o.sub(o.const(1.0), o.ex2(q)))
    tail = o.copysign(tail, x)
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    small = o.mul(x, o.fma(o.mul(x, x), o.const(-two_over_sqrt_pi / 3.0),
                           o.const(two_over_sqrt_pi)))
    return o.select(o.lt(o.fabs(x), o.const(0.0625)), small, tail)


def divide(o, a, b, divisor_at_least_one=False):
    """a / b as a * (1/b) (1 + 2 ulp); 1/b alone when a is the constant 1."""
    r = o.rcp(b, ftz=divisor_at_least_one)
    return r if a is None else o.mul(a, r)


# math op name -> builder(ops, *f32 operands) -> f32
FUNCTIONS = {
    "math.exp": exp, "math.expm1": expm1, "math.log": log, "math.log1p": log1p,
    "math.sin": sin, "math.cos": cos, "math.tanh": tanh, "math.powf": pow, "math.erf": erf,
    "math.sqrt": lambda o, x: o.sqrt(x), "math.rsqrt": lambda o, x: o.rsqrt(x),
    "math.exp2": lambda o, x: o.ex2(x),
    "math.log2": lambda o, x: o.lg2(x),
}
