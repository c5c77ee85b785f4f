"""f32 math functions as plain arith code, for GPU kernels without a math
library.

``convert-gpu-to-nvvm`` turns math ops into calls of libdevice (``__nv_expf``)
which only a CUDA toolkit provides. dnn-expand-math replaces every math op
with what ``FUNCTIONS`` builds here, so the PTX calls nothing and does not
depend on the machine that compiled it:

* ops with a native PTX instruction (sqrt.rn, abs, copysign, cvt.rmi / rpi /
  rzi / rni, fma.rn) become calls of the generic LLVM intrinsics
  (dnnc/codegen/gpu/math_scalar.py);
* transcendental functions are range reduction + polynomial, the Cephes
  single-precision algorithms (exp, log, tanh; the sin / cos polynomials),
  fdlibm's erff (its coefficients, Sun Microsystems, freely distributable),
  and identities for expm1, log1p and powf.

Accuracy, measured against float64 on the CPU (test_cuda_compile.py): exp,
log, sin, cos, tanh, erf within 1 ulp, softplus / elu within 2; sin and cos
reduce by pi/2 in f64 (Cody-Waite, two parts), accurate for |x| < 2^28 pi/2
and clamped to [-1, 1] beyond. powf is e^(y ln|x|) in f32: its relative error
grows with |y ln x| (about 1.5 ulp per unit: 75 ulp at results near e^50).

Every function takes and returns f32 Values and emits at the current
insertion point; branches are computed and selected (no control flow).
"""

import math

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.gpu.math_scalar import (
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
# f64 for |j| < 2^20 and the reduction stays accurate up to |x| ~ 2^28 pi/2.
_PIO2_HI = 1.57079631090164184570e+00
_PIO2_LO = 1.58932547735281966916e-08


def _f64(x):
    return arith.extf(ir.F64Type.get(), x)


def _reduce_half_pi(x):
    """(r, n): x = j pi/2 + r with |r| <= pi/4 (r in f32) and n = j mod 4
    (i32), the reduction done in f64 (Cody-Waite, two parts)."""
    f64 = ir.F64Type.get()
    xd = _f64(x)
    j = intrinsic("llvm.roundeven.f64", arith.mulf(xd, arith.constant(f64, 2.0 / math.pi)),
                  type_=f64)
    r = fma(j, arith.constant(f64, -_PIO2_HI), xd)
    r = fma(j, arith.constant(f64, -_PIO2_LO), r)
    # j mod 4 from the integer-valued double, without an out-of-range fptosi.
    quarter = intrinsic("llvm.floor.f64", arith.mulf(j, arith.constant(f64, 0.25)), type_=f64)
    n = arith.fptosi(i32(), fma(quarter, arith.constant(f64, -4.0), j))
    # Clamped: where the reduction is inexact (|x| > ~4e8) r may leave
    # [-pi/4, pi/4]; the result stays finite, in [-1, 1].
    r = arith.truncf(f32(), r)
    return arith.minimumf(arith.maximumf(r, c(-0.7854)), c(0.7854)), n


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


_ERF_PP = [-2.3763017452e-05, -5.7702702470e-03, -2.8481749818e-02, -3.2504209876e-01,
           1.2837916613e-01]
_ERF_QQ = [-3.9602282413e-06, 1.3249473704e-04, 5.0813062117e-03, 6.5022252500e-02,
           3.9791721106e-01, 1.0]
_ERF_PA = [-2.1663755178e-03, 3.5478305072e-02, -1.1089469492e-01, 3.1834661961e-01,
           -3.7220788002e-01, 4.1485610604e-01, -2.3621185683e-03]
_ERF_QA = [1.1984500103e-02, 1.3637083583e-02, 1.2617121637e-01, 7.1828655899e-02,
           5.4039794207e-01, 1.0642088205e-01, 1.0]
_ERF_RA = [-9.8143291473e+00, -8.1287437439e+01, -1.8460508728e+02, -1.6239666748e+02,
           -6.2375331879e+01, -1.0558626175e+01, -6.9385856390e-01, -9.8649440333e-03]
_ERF_SA = [-6.0424413532e-02, 6.5702495575e+00, 1.0863500214e+02, 4.2900814819e+02,
           6.4538726807e+02, 4.3456588745e+02, 1.3765776062e+02, 1.9651271820e+01, 1.0]
_ERF_RB = [-4.8351919556e+02, -1.0250950928e+03, -6.3756646729e+02, -1.6063638306e+02,
           -1.7757955551e+01, -7.9928326607e-01, -9.8649431020e-03]
_ERF_SB = [-2.2440952301e+01, 4.7452853394e+02, 2.5530502930e+03, 3.1998581543e+03,
           1.5367296143e+03, 3.2579251099e+02, 3.0338060379e+01, 1.0]
_ERX = 8.4506291151e-01


def erf(x):
    """fdlibm's erff: rational approximations on |x| < 0.84375, < 1.25, < 6;
    beyond, 1 - erfc(|x|) with erfc(x) = exp(-x^2 - 0.5625 + R/S) / x."""
    ax = fabs(x)
    z = mul(x, x)
    near0 = fma(x, div(horner(z, _ERF_PP), horner(z, _ERF_QQ)), x)
    s = sub(ax, c(1.0))
    near1 = add(c(_ERX), div(horner(s, _ERF_PA), horner(s, _ERF_QA)))
    w = div(c(1.0), z)
    mid = cmp(P.OLT, ax, c(2.857142857142857))
    ratio = select(mid, div(horner(w, _ERF_RA), horner(w, _ERF_SA)),
                   div(horner(w, _ERF_RB), horner(w, _ERF_SB)))
    # Split x = hi + lo with hi's low 12 bits clear, so hi^2 is exact.
    hi = as_float(arith.andi(bits(ax), ci(-4096)))
    r = mul(exp(sub(mul(arith.negf(hi), hi), c(0.5625))),
            exp(add(mul(sub(hi, ax), add(hi, ax)), ratio)))
    tail = sub(c(1.0), div(r, ax))
    y = select(cmp(P.OLT, ax, c(6.0)), tail, c(1.0))
    y = select(cmp(P.OLT, ax, c(1.25)), near1, y)
    y = copysign(y, x)
    y = select(cmp(P.OLT, ax, c(0.84375)), near0, y)
    return select(isnan(x), x, y)


def powf(x, y):
    """x^y as C's powf: e^(y ln|x|), negative for a negative x and an odd
    integer y, NaN for a negative x and a non-integer y; pow(x, 0) = 1,
    pow(1, y) = 1 even for NaN, and pow(-1, +-inf) = 1."""
    ax = fabs(x)
    r = exp(mul(y, log(ax)))
    is_int = cmp(P.OEQ, floor(y), y)
    # Odd: an integer below 2^24 (every f32 beyond is even) with its last bit set.
    small = cmp(P.OLT, fabs(y), c(16777216.0))
    yi = arith.fptosi(i32(), select(small, y, c(0.0)))
    odd = arith.andi(arith.andi(is_int, small),
                     arith.cmpi(I.ne, arith.andi(yi, ci(1)), ci(0)))
    negative = cmp(P.OLT, x, c(0.0))
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
