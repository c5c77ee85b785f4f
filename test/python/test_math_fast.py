"""The formulas of dnnc/codegen/gpu/math/fast.py run in NumPy float32, with
the hardware approximations' documented error bounds injected (both signs),
against float64: the errors stay far below what a bf16 or f16 rounding
loses, and the special values (0, +-inf, NaN, subnormals, negative bases of
pow) come out as the math functions define them.

The same builder functions that emit MLIR run here on ``NumpyOps``, so the
steps checked are the steps emitted. The CPU emulation of the GPU lowering
(test_cuda_compile.py) checks the emitted code with exact stand-ins for the
hardware approximations; this file checks the approximations' effect.
"""

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from dnnc.codegen.gpu.math import fast as math_fast, turns

F32 = np.float32
TINY = 2.0 ** -126


def f32(x):
    return np.asarray(x, dtype=np.float64).astype(F32)


def _flush(x):
    """ftz: a subnormal becomes a zero of its sign."""
    return np.where(np.abs(x) < TINY, np.copysign(F32(0.0), x), x).astype(F32)


class NumpyOps:
    """math_fast's Ops in float32 NumPy. Every hardware approximation is the
    exactly rounded function moved by its error bound times ``sign`` (+1,
    -1): ex2 2 ulp, lg2 2^-22.6 absolute, rcp 1 ulp, sin / cos 2^-20.9
    absolute, tanh 2^-10.987 relative, sqrt / rsqrt 2^-23 relative (PTX ISA,
    "Floating-Point Instructions")."""

    def __init__(self, sign):
        self.s = sign

    const = staticmethod(F32)

    def add(self, a, b):
        return f32(a) + f32(b)

    def sub(self, a, b):
        return f32(a) - f32(b)

    def mul(self, a, b):
        return f32(a) * f32(b)

    def fma(self, a, b, c):
        # The product of two f32 is exact in f64; one more rounding at most.
        return f32(np.float64(a) * np.float64(b) + np.float64(c))

    def fabs(self, x):
        return np.abs(f32(x))

    def copysign(self, x, y):
        return np.copysign(f32(x), f32(y))

    def floor(self, x):
        return np.floor(f32(x))

    def roundeven(self, x):
        return np.rint(f32(x))

    def minimum(self, a, b):
        return np.minimum(f32(a), f32(b))

    def select(self, p, a, b):
        return np.where(p, f32(a), f32(b)).astype(F32)

    def isnan(self, x):
        return np.isnan(x)

    def isinf(self, x):
        return np.isinf(x)

    def lt(self, a, b):
        return f32(a) < f32(b)

    def eq(self, a, b):
        return f32(a) == f32(b)

    def ne(self, a, b):  # ordered: false on NaN
        return (f32(a) != f32(b)) & ~np.isnan(a) & ~np.isnan(b)

    def and_(self, p, q):
        return p & q

    def or_(self, p, q):
        return p | q

    def not_(self, p):
        return ~p

    def _rel(self, y, bits):
        return f32(np.float64(y) * (1.0 + self.s * 2.0 ** -bits))

    def ex2(self, x):
        with np.errstate(over="ignore"):
            return _flush(self._rel(np.exp2(_flush(x).astype(np.float64)), 22))

    def lg2(self, x, ftz=False):
        x = _flush(x) if ftz else f32(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return f32(np.log2(x.astype(np.float64)) + self.s * 2.0 ** -22.6)

    def rcp(self, x, ftz=False):
        x = _flush(x) if ftz else f32(x)
        with np.errstate(divide="ignore", over="ignore"):
            y = self._rel(1.0 / x.astype(np.float64), 23)
        return _flush(y) if ftz else y

    def tanh(self, x):
        return self._rel(np.tanh(np.float64(x)), 10.987)

    def turn(self, x, where):
        """x mod 2 pi in [-pi, pi], exactly (rational arithmetic with 400
        bits of 2/pi) then rounded to f32, where |x| >= 2^17 is finite; 0
        elsewhere (the formulas do not use it there, ``where`` says)."""
        return f32([_exact_turn(float(v)) for v in np.ravel(f32(x))]).reshape(np.shape(x))

    def sin(self, x):
        with np.errstate(invalid="ignore"):
            return f32(np.sin(_flush(x).astype(np.float64)) + self.s * 2.0 ** -20.9)

    def cos(self, x):
        with np.errstate(invalid="ignore"):
            return f32(np.cos(_flush(x).astype(np.float64)) + self.s * 2.0 ** -20.9)

    def sqrt(self, x):
        with np.errstate(invalid="ignore"):
            return self._rel(np.sqrt(np.float64(x)), 23)

    def rsqrt(self, x):
        with np.errstate(invalid="ignore", divide="ignore"):
            return self._rel(1.0 / np.sqrt(np.float64(x)), 23)


_TWO_OVER_PI = Fraction(turns.two_over_pi(400), 2 ** 400)


def _exact_turn(x):
    if not math.isfinite(x) or abs(x) < 2.0 ** 17:
        return 0.0
    t = Fraction(abs(x)) * _TWO_OVER_PI % 4  # quarter turns, in [0, 4)
    t = t - 4 if t >= 2 else t
    r = float(t) * (math.pi / 2)
    return -r if x < 0 else r


def sweep():
    rng = np.random.default_rng(7)
    xs = np.concatenate([
        np.linspace(-12, 12, 48001), rng.standard_normal(20000) * 3,
        np.exp(rng.uniform(-90, 88, 8000)), -np.exp(rng.uniform(-90, 20, 8000)),
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-39, -1e-39, 1e-38, 88.7, 89.0,
         -87.0, -88.0, -104.0, 1e4, -1e4, 1e6, 3.5, 1.0 / 16, 1.0 / 64, -1.0 / 64,
         # sin and cos: either side of the exact reduction's threshold, the
         # fuzzer's large values, the largest f32.
         2.0 ** 20 - 0.0625, 2.0 ** 20, 1e15, -1.5e15, 2e15, 3.4e38, -3.4e38]])
    return xs.astype(F32)


def _reference(name, x):
    with np.errstate(all="ignore"):
        x = x.astype(np.float64)
        if name == "erf":
            return np.vectorize(math.erf, otypes=[np.float64])(x)
        return getattr(np, name)(x)


# name -> (largest relative error before rounding, its floor: errors are
# measured relative to max(|ref|, floor)). tanh's is the hardware's; sin's and
# cos's are relative only where |result| >= 1/16 (and near x = 0), 2^-20
# absolute elsewhere.
BOUNDS = {
    "exp": (2.0 ** -16, 0.0), "expm1": (2.0 ** -16, 0.0), "log": (2.0 ** -16, 2.0 ** -7),
    "log1p": (2.0 ** -15, 0.0), "tanh": (2.0 ** -10.9, 0.0), "sin": (2.0 ** -16, 2.0 ** -4),
    "cos": (2.0 ** -16, 2.0 ** -4), "erf": (2.0 ** -16, 0.0),
}


def _check(name, got, ref, xs):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=name)
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(got[~finite], ref[~finite].astype(F32), err_msg=name)
    bound, floor = BOUNDS[name]
    # Results beyond f32's range, or flushed below 2^-126, are not compared.
    ok = finite & (np.abs(ref) < 3e38) & ((np.abs(ref) >= TINY) | (ref == 0))
    if name in ("sin", "cos"):
        assert np.all(np.abs(got[finite]) <= 1.0 + 2.0 ** -20), name
    err = np.abs(got[ok].astype(np.float64) - ref[ok]) / np.maximum(np.abs(ref[ok]),
                                                                     max(floor, TINY))
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}: relative error {err[worst]:.3g} at x = " \
        f"{xs[ok][worst]!r}, expected at most {bound:.3g}"
    # tanh.approx serves bf16 results only (dnn-expand-math's _PRECISION).
    for half in (ml_dtypes.bfloat16,) if name == "tanh" else (ml_dtypes.bfloat16, np.float16):
        # At most one unit of the 16-bit type from the correctly rounded one.
        with np.errstate(over="ignore"):
            a, r = got[ok].astype(half), ref[ok].astype(half)
        # sin and cos err absolutely (2^-20.9) near their roots but 0.
        least = 2.0 ** -5 if name in ("sin", "cos") else float(ml_dtypes.finfo(half).tiny)
        fin = np.isfinite(r.astype(np.float64)) & (np.abs(ref[ok]) >= least)
        ua = a[fin].view(np.int16).astype(np.int64)
        ur = r[fin].view(np.int16).astype(np.int64)
        ua = np.where(ua < 0, -(ua & 0x7FFF), ua)
        ur = np.where(ur < 0, -(ur & 0x7FFF), ur)
        assert np.abs(ua - ur).max() <= 1, f"{name}: more than 1 {half.__name__} ulp"


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_unary_within_bounds(name, sign):
    xs = sweep()
    if name == "log1p":
        xs = np.concatenate([xs, np.linspace(-1, 1, 20001).astype(F32)])
    with np.errstate(all="ignore"):
        got = getattr(math_fast, name)(NumpyOps(sign), xs)
    _check(name, got, _reference(name, xs), xs)


@pytest.mark.parametrize("sign", [1, -1])
def test_erf_is_one_beyond_its_clamp_so_gelu_keeps_the_references_nan(sign):
    """Past 3.5, erf is +-1 exactly, so that GELU's 1 + erf(x / sqrt 2) is
    0: gelu(-inf) is NaN (-inf * 0), as the reference has it, and the
    large negative values give -0, not -3.7e-7 x."""
    o = NumpyOps(sign)
    xs = f32([3.5, 3.6, 10.0, 1e15, np.inf, -3.5, -7.0, -1e15, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        e = math_fast.erf(o, xs)
        np.testing.assert_array_equal(e[:9], f32([1, 1, 1, 1, 1, -1, -1, -1, -1]))
        assert np.isnan(e[9])
        x = f32([-1e15, -np.inf, -10.0, np.nan])
        u = math_fast.erf(o, o.mul(x, F32(1.0 / math.sqrt(2.0))))
        gelu = o.mul(o.mul(F32(0.5), x), o.add(F32(1.0), u))
    assert gelu[0] == 0.0 and np.signbit(gelu[0]) and gelu[2] == 0.0
    assert np.isnan(gelu[1]) and np.isnan(gelu[3])


@pytest.mark.parametrize("sign", [1, -1])
def test_sigmoid_and_softplus_compositions(sign):
    """sigmoid = 1 / (1 + e^-x) (the divisor is >= 1: rcp.approx.ftz) and
    softplus = max(x, 0) + log1p(e^-|x|), as dnn-expand-math rewrites
    dnnc/codegen/linalg/scalar.py's formulas for rounded results."""
    o, xs = NumpyOps(sign), sweep()
    with np.errstate(all="ignore"):
        e = math_fast.exp(o, o.mul(xs, F32(-1.0)))
        sig = math_fast.divide(o, None, o.add(F32(1.0), e), divisor_at_least_one=True)
        ref = 1.0 / (1.0 + np.exp(-xs.astype(np.float64)))
        sp = o.add(np.maximum(xs, F32(0.0)),
                   math_fast.log1p(o, math_fast.exp(o, o.mul(np.abs(xs), F32(-1.0)))))
        sp_ref = np.logaddexp(0.0, xs.astype(np.float64))
    for got, r in ((sig, ref), (sp, sp_ref)):
        ok = np.isfinite(xs) & (r >= 1e-30)
        err = np.abs(got[ok] - r[ok]) / r[ok]
        assert err.max() <= 2.0 ** -15, err.max()
    assert sig[np.isnan(xs)].size and np.all(np.isnan(sig[np.isnan(xs)]))
    # 1 / 1 is rcp.approx's: within 1 ulp of 1.
    assert abs(sig[xs == np.inf][0] - 1.0) <= 2.0 ** -23 and sig[xs == -np.inf][0] == 0.0
    assert sp[xs == np.inf][0] == np.inf and sp[xs == -np.inf][0] == 0.0


@pytest.mark.parametrize("sign", [1, -1])
def test_pow(sign):
    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, np.inf, -np.inf, np.nan,
                        1e-40, -1e-40, 3.0, -3.0, 1e30], dtype=F32)
    x = np.concatenate([np.repeat(special, special.size),
                        np.exp(rng.uniform(-20, 20, 20000)),
                        -np.exp(rng.uniform(-5, 5, 4000))]).astype(F32)
    y = np.concatenate([np.tile(special, special.size), rng.uniform(-8, 8, 20000),
                        rng.integers(-9, 10, 4000)]).astype(F32)
    with np.errstate(all="ignore"):
        got = math_fast.pow(NumpyOps(sign), x, y)
        ref = np.power(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    # Overflow (f32's largest is 3.4e38) and infinities are exact.
    big = ~np.isnan(ref) & (np.abs(ref) > 3.5e38)
    np.testing.assert_array_equal(got[big], np.copysign(np.inf, ref[big]).astype(F32))
    # Within 2 ulp of the ends of the normal range, ex2 may overflow or flush.
    ok = np.isfinite(ref) & (np.abs(ref) <= 2.0 ** 127.9) & (np.abs(ref) >= 2.0 ** -125.9)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(ref[ok]))
    err = np.abs(got[ok] - ref[ok]) / np.abs(ref[ok])
    assert err.max() <= 2.0 ** -15, err.max()
    zero = ref == 0
    np.testing.assert_array_equal(got[zero], ref[zero].astype(F32))


def test_two_over_pi_bits_and_words():
    """turns.py's 2/pi: its first 64 bits are the known ones, and its words
    are 2/pi's bits 64 k - 63 to 64 k, word 0 the zeros before them."""
    assert turns.two_over_pi(64) == 0xA2F9836E4E441529
    value = turns.two_over_pi(400)
    assert turns.WORDS[0] == 0 and turns.WORDS[1] == 0xA2F9836E4E441529
    for k, word in enumerate(turns.WORDS[1:], 1):
        assert word == (value >> (400 - 64 * k)) & (2 ** 64 - 1), k
