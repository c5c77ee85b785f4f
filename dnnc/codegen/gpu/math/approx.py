"""f32 math functions as plain arith code, for GPU kernels without a math
library.

``convert-gpu-to-nvvm`` turns math ops into calls of libdevice (``__nv_expf``)
which only a CUDA toolkit provides. dnn-expand-math replaces every math op
with what ``FUNCTIONS`` builds here, so the PTX calls nothing and does not
depend on the machine that compiled it:

* ops with a native PTX instruction (sqrt.rn, abs, copysign, cvt.rmi / rpi /
  rzi / rni, fma.rn) become calls of the generic LLVM intrinsics
  (dnnc/codegen/gpu/math/scalar.py);
* transcendental functions are range reduction + polynomial, the Cephes
  single-precision algorithms (exp, log, tanh; the sin / cos polynomials),
  polynomials fitted for dnnc (erf: no division, one exponential, the cost
  matters in bandwidth-bound GELU), and identities for expm1, log1p and powf.

Accuracy, measured against float64 on the CPU (test_cuda_compile.py): exp,
log, sin, cos, tanh within 1 ulp, erf within 2, softplus / elu within 2.
sin and cos reduce by pi/2 in f64 (Cody-Waite, two parts) below 2^20 and
exactly (Payne-Hanek, math/turns.py) beyond: within 1 ulp for every f32.
powf is e^(y ln|x|) in f32: its relative error grows with |y ln x|
(about 1.5 ulp per unit: 75 ulp at results near e^50).

Every function takes and returns f32 Values and emits at the current
insertion point; branches are computed and selected (no control flow).
"""

import math

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.gpu.math import turns
from dnnc.codegen.gpu.math.scalar import (
    I, P, add, as_float, bits, c, ceil, ci, cmp, copysign, div, f32, fabs, floor, fma, horner,
    i32, intrinsic, isinf, isnan, mul, pow2, roundeven, select, sqrt, sub, trunc,
)


# ----------------------------------------------------------------------------
# exp, expm1


_EXP_POLY = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
             1.6666665459e-1, 5.0000001201e-1]


def exp(x):
    """e^x: x = k ln2 + r, |r| <= ln2 / 2; e^r by a degree-7 polynomial,
    scaled by 2^k in two steps so that subnormal results and 2^128 are right."""
    xc = arith.minimumf(arith.maximumf(x, c(-104.0)), c(89.0))
    k = floor(fma(xc, c(1.4426950408889634), c(0.5)))
    # ln2 = 0.693359375 - 2.12194440e-4: the first part has few bits, so
    # k * 0.693359375 is exact and the reduction loses nothing.
    r = fma(k, c(2.12194440e-4), fma(k, c(-0.693359375), xc))
    r2 = mul(r, r)
    p = add(fma(horner(r, _EXP_POLY), r2, r), c(1.0))
    ki = arith.fptosi(i32(), k)
    half = arith.divsi(ki, ci(2))
    y = mul(mul(p, pow2(half)), pow2(arith.subi(ki, half)))
    return select(isnan(x), x, y)


def exp_fast(x):
    """e^x as the hardware computes 2^x: ``ex2.approx.ftz.f32`` (one MUFU op)
    of x log2(e), for row programs (dnnc/codegen/gpu/reduce/rowwise.py), where exp's
    polynomial would be most of a bandwidth-bound kernel's instructions.
    Within 2 + 1.2 |x| ulp (CUDA's ``__expf``, the same two steps, documents
    2 + floor(|1.173 x|)): rounding x log2(e) costs |x| 2^-24 relative, the
    instruction about 2 ulp; a softmax's arguments (x - max <= 0, results
    that matter near 1) stay within a few ulp. Results below 2^-126 flush to
    0, -inf gives 0, +inf and overflow +inf, NaN stays NaN. GPU only: the
    intrinsic is NVPTX's."""
    return intrinsic("llvm.nvvm.ex2.approx.ftz.f", mul(x, c(1.4426950408889634)))


def expm1(x):
    """e^x - 1 without cancellation near 0 (Kahan: (u - 1) x / log u)."""
    u = exp(x)
    um1 = sub(u, c(1.0))
    y = div(mul(um1, x), log(u))
    y = select(cmp(P.OEQ, um1, c(-1.0)), c(-1.0), y)
    y = select(cmp(P.OEQ, u, c(1.0)), x, y)
    y = select(cmp(P.OEQ, u, c(math.inf)), u, y)
    return select(isnan(x), x, y)


# ----------------------------------------------------------------------------
# log, log1p


_LOG_POLY = [7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
             1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
             3.3333331174e-1]


def log(x):
    """ln x: x = m 2^e with m in [sqrt(1/2), sqrt(2)); ln(m) = f - f^2/2 +
    f^3 P(f) for f = m - 1; plus e ln2 in two parts."""
    # Subnormals: scale into the normal range first.
    tiny = cmp(P.OLT, x, c(1.1754943508222875e-38))
    xs = select(tiny, mul(x, c(8388608.0)), x)
    bias = select(tiny, c(-23.0), c(0.0))
    word = bits(xs)
    e = arith.sitofp(f32(), arith.subi(arith.shrui(word, ci(23)), ci(126)))
    m = as_float(arith.ori(arith.andi(word, ci(0x007FFFFF)), ci(0x3F000000)))  # [0.5, 1)
    small = cmp(P.OLT, m, c(0.707106781186547524))
    e = add(sub(e, select(small, c(1.0), c(0.0))), bias)
    f = sub(select(small, add(m, m), m), c(1.0))
    z = mul(f, f)
    y = mul(mul(horner(f, _LOG_POLY), f), z)
    y = fma(e, c(-2.12194440e-4), y)
    y = fma(z, c(-0.5), y)
    r = fma(e, c(0.693359375), add(f, y))
    r = select(cmp(P.OEQ, x, c(math.inf)), x, r)
    r = select(cmp(P.OEQ, x, c(0.0)), c(-math.inf), r)
    return select(cmp(P.OLT, x, c(0.0)), c(math.nan), select(isnan(x), x, r))


def log1p(x):
    """ln(1 + x) without cancellation near 0 (Goldberg: log(u) x / (u - 1))."""
    u = add(x, c(1.0))
    y = div(mul(log(u), x), sub(u, c(1.0)))
    y = select(cmp(P.OEQ, u, c(1.0)), x, y)
    y = select(cmp(P.OEQ, x, c(math.inf)), x, y)
    y = select(cmp(P.OEQ, x, c(-1.0)), c(-math.inf), y)
    return select(isnan(x), x, y)


# ----------------------------------------------------------------------------
# sin, cos


_SIN_POLY = [-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1]
_COS_POLY = [2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2]
# pi/2 = _PIO2_HI + _PIO2_LO: the first 33 bits, so j * _PIO2_HI is exact in
# f64 for |j| < 2^20; with the fma, the two-part reduction is accurate far
# beyond _CODY_WAITE_LIMIT, where math/turns.py takes over.
_PIO2_HI = 1.57079631090164184570e+00
_PIO2_LO = 1.58932547735281966916e-08
_CODY_WAITE_LIMIT = 2.0 ** 20


def _f64(x):
    return arith.extf(ir.F64Type.get(), x)


def _reduce_half_pi(x):
    """(r, n): x = j pi/2 + r with |r| <= pi/4 (r in f32) and n = j mod 4
    (i32): in f64 by Cody-Waite (two parts) for |x| < 2^20, exactly by
    math/turns.py (Payne-Hanek) beyond, in a branch only the lanes that need
    it take (turns.only_where)."""
    f64 = ir.F64Type.get()
    xd = _f64(x)
    j = intrinsic("llvm.roundeven.f64", arith.mulf(xd, arith.constant(f64, 2.0 / math.pi)),
                  type_=f64)
    r = fma(j, arith.constant(f64, -_PIO2_HI), xd)
    r = fma(j, arith.constant(f64, -_PIO2_LO), r)
    # j mod 4 from the integer-valued double, without an out-of-range fptosi.
    quarter = intrinsic("llvm.floor.f64", arith.mulf(j, arith.constant(f64, 0.25)), type_=f64)
    n = arith.fptosi(i32(), fma(quarter, arith.constant(f64, -4.0), j))
    small = cmp(P.OLT, fabs(x), c(_CODY_WAITE_LIMIT))

    def exact():
        # |x| = 4 m + n + r quarter turns; for a negative x both change sign.
        n, r = turns.nearest_quadrant(turns.quarter_turns(x))
        negative = cmp(P.OLT, x, c(0.0))
        return (select(negative, arith.andi(arith.subi(ci(0), n), ci(3)), n),
                select(negative, arith.negf(r), r))
    n_big, r_big = turns.only_where(arith.xori(small, arith.constant(
        ir.IntegerType.get_signless(1), 1)), exact, [i32(), f64])
    return arith.truncf(f32(), select(small, r, r_big)), select(small, n, n_big)


def _sin_cos_poly(z):
    """(sin z, cos z) for |z| <= pi/4: Cephes' odd and even polynomials."""
    zz = mul(z, z)
    s = fma(mul(horner(zz, _SIN_POLY), zz), z, z)
    cs = add(fma(mul(horner(zz, _COS_POLY), zz), zz, mul(zz, c(-0.5))), c(1.0))
    return s, cs


def _quadrant(r, n, shift):
    """sin (shift 0) or cos (shift 1) of x = j pi/2 + r, n = j mod 4: the
    function of quadrant (n + shift) mod 4 is sin, cos, -sin, -cos of r."""
    s, cs = _sin_cos_poly(r)
    q = arith.andi(arith.addi(n, ci(shift)), ci(3))
    y = select(arith.cmpi(I.ne, arith.andi(q, ci(1)), ci(0)), cs, s)
    y = select(arith.cmpi(I.ne, arith.andi(q, ci(2)), ci(0)), arith.negf(y), y)
    return y


def _finish(x, y):
    bad = arith.ori(isnan(x), isinf(x))
    return select(bad, c(math.nan), y)


def sin(x):
    r, n = _reduce_half_pi(x)
    return _finish(x, _quadrant(r, n, 0))


def cos(x):
    r, n = _reduce_half_pi(x)
    return _finish(x, _quadrant(r, n, 1))


# ----------------------------------------------------------------------------
# tanh, erf, pow


_TANH_POLY = [-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
              -3.33332819422e-1]


def tanh(x):
    """Odd polynomial for |x| < 0.625; 1 - 2 / (e^2|x| + 1) beyond, signed."""
    ax = fabs(x)
    z = mul(x, x)
    small = fma(mul(horner(z, _TANH_POLY), z), x, x)
    big = sub(c(1.0), div(c(2.0), add(exp(add(ax, ax)), c(1.0))))
    y = select(cmp(P.OLT, ax, c(0.625)), small, copysign(big, x))
    return select(isnan(x), x, y)


# erf's two polynomials, fitted for dnnc (weighted least squares iterated
# toward minimax, against mpmath, coefficients rounded to f32): for |x| <
# 0.875, erf(x) = x + x P(x^2), P(s) ~ erf(sqrt s)/sqrt s - 1; beyond,
# erf(x) = 1 - 2^Q(|x|), Q(t) ~ log2 erfc(t) on [0.875, 4] (erf(4) rounds
# to 1 in f32).
_ERF_SMALL = [-6.222517e-4, 5.035892e-3, -2.679397e-2, 1.12825245e-1, -3.7612557e-1,
              1.2837915e-1]
_ERF_LOG2_ERFC = [2.3119017e-6, -6.5432774e-5, 8.522214e-4, -6.8243514e-3, 3.7994143e-2,
                  -1.585885e-1, -9.1177654e-1, -1.6304351, 4.2454677e-4]
_ERF_SPLIT, _ERF_ONE = 0.875, 4.0


def _exp2_small(q):
    """2^q for q in [-26, -2]: ``llvm.exp2``, which NVPTX selects as the
    hardware's ex2.approx.f32 (relative error below 2^-22, one MUFU op where
    a polynomial takes a dozen; on the CPU, libm's exp2)."""
    return intrinsic("llvm.exp2.f32", q)


def erf(x):
    """x + x P(x^2) near 0, else 1 - 2^Q(min(|x|, 4)) with the sign of x.
    The polynomials are within 1.1 ulp; on the GPU, 2^Q's approximation adds
    at most 0.7 ulp (2^Q < 0.22 is subtracted from 1). A NaN goes through
    the second branch (the min keeps it) and stays NaN."""
    ax = fabs(x)
    near0 = fma(x, horner(mul(x, x), _ERF_SMALL), x)
    tail = sub(c(1.0), _exp2_small(horner(arith.minimumf(ax, c(_ERF_ONE)), _ERF_LOG2_ERFC)))
    return select(cmp(P.OLT, ax, c(_ERF_SPLIT)), near0, copysign(tail, x))


def powf(x, y):
    """x^y as C's powf: e^(y ln|x|), negative for a negative x and an odd
    integer y, NaN for a finite negative x and a non-integer y; pow(x, 0) = 1,
    pow(1, y) = 1 even for NaN, and pow(-1, +-inf) = 1."""
    ax = fabs(x)
    r = exp(mul(y, log(ax)))
    is_int = cmp(P.OEQ, floor(y), y)
    # Odd: an integer below 2^24 (every f32 beyond is even) with its last bit set.
    small = cmp(P.OLT, fabs(y), c(16777216.0))
    yi = arith.fptosi(i32(), select(small, y, c(0.0)))
    odd = arith.andi(arith.andi(is_int, small),
                     arith.cmpi(I.ne, arith.andi(yi, ci(1)), ci(0)))
    # A finite negative x only: pow(-inf, 0.5) is +inf.
    negative = arith.andi(cmp(P.OLT, x, c(0.0)), cmp(P.ONE, x, c(-math.inf)))
    # x = -0.0 with an odd y keeps the sign too: copysign(r, x) covers both.
    r = select(odd, copysign(r, x), r)
    r = select(arith.andi(negative, arith.xori(is_int, arith.constant(
        ir.IntegerType.get_signless(1), 1))), c(math.nan), r)
    r = select(isnan(y), y, select(isnan(x), x, r))
    one = arith.ori(cmp(P.OEQ, y, c(0.0)), cmp(P.OEQ, x, c(1.0)))
    one = arith.ori(one, arith.andi(cmp(P.OEQ, x, c(-1.0)), isinf(y)))  # pow(-1, +-inf)
    return select(one, c(1.0), r)


# math op name -> builder(*f32 operands) -> f32
FUNCTIONS = {
    "math.exp": exp, "math.expm1": expm1, "math.log": log, "math.log1p": log1p,
    "math.sin": sin, "math.cos": cos, "math.tanh": tanh, "math.erf": erf,
    "math.powf": powf, "math.sqrt": sqrt, "math.rsqrt": lambda x: div(c(1.0), sqrt(x)),
    "math.absf": fabs, "math.floor": floor, "math.ceil": ceil, "math.trunc": trunc,
    "math.roundeven": roundeven, "math.copysign": copysign, "math.fma": fma,
    "math.exp2": lambda x: exp(mul(x, c(math.log(2.0)))),
    "math.log2": lambda x: mul(log(x), c(1.0 / math.log(2.0))),
}

# math op name -> builder(f32 operand) -> i1
PREDICATES = {
    "math.isnan": isnan,
    "math.isinf": isinf,
    "math.isfinite": lambda x: cmp(P.ONE, fabs(x), c(math.inf)),
}
