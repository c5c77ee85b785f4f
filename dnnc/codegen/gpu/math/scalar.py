"""Scalar builders for the math expansions (dnnc/codegen/gpu/math/approx.py).

Constants, arith shorthands, and the math functions PTX has an instruction
for, emitted as calls of the generic LLVM intrinsics (``llvm.call_intrinsic
"llvm.sqrt.f32"``): the NVPTX back end selects sqrt.rn, abs, copysign,
cvt.rmi / rpi / rzi / rni and fma.rn for them (a CPU back end, its own
instructions), and ``convert-gpu-to-nvvm`` leaves them alone, where it would
turn math ops into libdevice calls. Everything emits at the current
insertion point.
"""


import math

from mlir import ir
from mlir.dialects import arith, llvm

P = arith.CmpFPredicate
I = arith.CmpIPredicate


def f32():
    return ir.F32Type.get()


def i32():
    return ir.IntegerType.get_signless(32)


def c(value):
    return arith.constant(f32(), float(value))


def ci(value):
    return arith.constant(i32(), int(value))


def intrinsic(name, *args, type_=None):
    """A call of the LLVM intrinsic ``name`` returning ``type_`` (f32)."""
    return llvm.CallIntrinsicOp(type_ or f32(), name, list(args), [], []).result


def sqrt(x):
    return intrinsic("llvm.sqrt.f32", x)


def fabs(x):
    return intrinsic("llvm.fabs.f32", x)


def floor(x):
    return intrinsic("llvm.floor.f32", x)


def ceil(x):
    return intrinsic("llvm.ceil.f32", x)


def trunc(x):
    return intrinsic("llvm.trunc.f32", x)


def roundeven(x):
    return intrinsic("llvm.roundeven.f32", x)


def copysign(x, y):
    return intrinsic("llvm.copysign.f32", x, y)


def fma(a, b, d):
    """a * b + d rounded once (f32 or f64)."""
    if isinstance(a.type, ir.F64Type):
        return intrinsic("llvm.fma.f64", a, b, d, type_=a.type)
    return intrinsic("llvm.fma.f32", a, b, d)


def add(a, b):
    return arith.addf(a, b)


def sub(a, b):
    return arith.subf(a, b)


def mul(a, b):
    return arith.mulf(a, b)


def div(a, b):
    return arith.divf(a, b)


def cmp(pred, a, b):
    return arith.cmpf(pred, a, b)


def select(cond, a, b):
    return arith.select(cond, a, b)


def isnan(x):
    return cmp(P.UNO, x, x)


def isinf(x):
    return cmp(P.OEQ, fabs(x), c(math.inf))


def horner(x, coefficients):
    """coefficients[0] * x^(n-1) + ... + coefficients[-1]."""
    acc = c(coefficients[0])
    for k in coefficients[1:]:
        acc = fma(acc, x, c(k))
    return acc


def bits(x):
    """The bits of an f32 as an i32."""
    return arith.bitcast(i32(), x)


def as_float(b):
    """The f32 whose bits are the i32 ``b``."""
    return arith.bitcast(f32(), b)


def pow2(k):
    """2^k for an i32 k in [-126, 127]: the exponent field alone."""
    return as_float(arith.shli(arith.addi(k, ci(127)), ci(23)))
