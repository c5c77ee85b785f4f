"""dnn-expand-math: replace every math op by arith code and native LLVM
intrinsics, so GPU kernels need no math library; where a result is only
ever rounded to a 16-bit float, use the hardware's approximations.

``convert-gpu-to-nvvm`` lowers math ops to calls of libdevice functions
(``__nv_expf``), which exist only where a CUDA toolkit is installed and leave
external calls in the PTX otherwise. This pass runs before that conversion,
on the whole module (kernels included), and rewrites every math op:

* by default with dnnc/codegen/gpu/math/approx.py: range reduction and
  polynomials within 1-2 ulp of f32, and ``llvm.call_intrinsic`` of
  ``llvm.sqrt.f32``, ``llvm.floor.f32``... for what PTX has an instruction
  for (math_scalar.py);
* with dnnc/codegen/gpu/math/fast.py (ex2 / lg2 / rcp / sin / tanh
  approximations, a few instructions each) when every use of the result
  ends, through f32 arithmetic, in an ``arith.truncf`` to a float of 16 bits
  or fewer: bf16 keeps 8 significant bits and f16 11, where the
  approximations err by 2^-21 or less relative (sin, cos: absolute). A cmpf,
  a store or anything else reading the f32 value keeps the accurate form.
  tanh.approx errs by 2^-11: it serves bf16 (and fp8) results only, reached
  through arith alone (another math function could amplify its error); f16
  results keep the accurate tanh. ``arith.divf`` results rounded so become
  a * (1/b) with ``rcp.approx`` (``rsqrt.approx`` for 1 / sqrt v, a multiply
  for a constant divisor).

Ops inside a ``gpu.module`` get the NVPTX intrinsics; elsewhere (the CPU
emulation of the GPU lowering) math_fast's exact portable counterparts, so
that the same formulas run on the CPU. f16 and bf16 operands are computed in
f32 and rounded back. A math op of another type (f64, vectors) is an
UnsupportedError naming it.

Before::

    %y = math.exp %x : f32
    %h = math.exp %x : f32
    %b = arith.truncf %h : f32 to bf16

After::

    %c = arith.constant -1.040000e+02 : f32
    %0 = arith.maximumf %x, %c : f32
    ...
    %y = arith.select %nan, %x, %r : f32
    %l = arith.mulf %x, %log2e : f32
    %h = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%l) : (f32) -> f32
    %b = arith.truncf %h : f32 to bf16

Lit test: test/lit/passes/dnn_expand_math.mlir.
"""

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.math import approx as math_approx, fast as math_fast
from dnnc.errors import UnsupportedError
from dnnc.passes import DnncPass, register

# f32 -> f32 ops through which a value reaches a rounding unchanged in
# precision (up to their own conditioning).
_ARITH_THROUGH = frozenset({
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.negf", "arith.maximumf",
    "arith.minimumf", "arith.select",
})
# Significant bits a rounded result may keep for math_fast's form of an op to
# be used: tanh.approx's 2^-11 is a quarter of a bf16 ulp but half an f16 one
# (f16 results keep math_approx's tanh). Its result must also reach the
# rounding through arith alone: another math function could amplify it.
_PRECISION = {"math.tanh": 8}
_FAST_PRECISION = 11


def _significand_bits(t):
    """Significant bits of a float type of 16 bits or fewer, else None."""
    if isinstance(t, ir.BF16Type):
        return 8
    if isinstance(t, ir.F16Type):
        return 11
    if isinstance(t, ir.FloatType) and t.width <= 8:
        return 4  # fp8 (e4m3: 4, e5m2: 3)
    return None


def _rounded(value, through_math, precision, memo):
    """True when every use of the f32 ``value`` ends in a truncf to a float of
    at most ``precision`` significant bits, through the ops of _ARITH_THROUGH
    (and math ops when ``through_math``)."""
    uses = list(value.uses)
    if not uses:
        return False
    for use in uses:
        user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        name = user.name
        if name == "arith.truncf":
            bits = _significand_bits(user.results[0].type)
            ok = bits is not None and bits <= precision
        elif name in _ARITH_THROUGH or (through_math and name.startswith("math.")):
            if name == "arith.select" and use.operand_number == 0:
                return False
            result = user.results[0]
            key = (user, through_math, precision)
            if key not in memo:
                memo[key] = None  # a cycle (none in SSA outside loops) is not rounded
                memo[key] = isinstance(result.type, ir.F32Type) and \
                    _rounded(result, through_math, precision, memo)
            ok = bool(memo[key])
        else:
            ok = False
        if not ok:
            return False
    return True


def _constant(value):
    """The float value of an arith.constant f32 scalar, else None."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    owner = owner.operation if hasattr(owner, "operation") else owner
    if owner.name != "arith.constant" or not isinstance(value.type, ir.F32Type):
        return None
    return ir.FloatAttr(owner.attributes["value"]).value


def _defining(value):
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if hasattr(owner, "operation") else owner


def _nonnegative(value):
    op = _defining(value)
    if op is None:
        return False
    if op.name in ("math.exp", "math.absf", "math.sqrt"):
        return True
    return op.name == "arith.mulf" and op.operands[0] == op.operands[1]


def _at_least_one(value):
    """True when ``value`` is >= 1 (or +inf / NaN) by construction: a
    constant, or a constant >= 1 plus something non-negative (sigmoid's
    1 + e^-x)."""
    k = _constant(value)
    if k is not None:
        return 1.0 <= k <= 2.0 ** 126
    op = _defining(value)
    if op is None or op.name != "arith.addf":
        return False
    a, b = op.operands
    for k, other in ((_constant(a), b), (_constant(b), a)):
        if k is not None and k >= 1.0 and _nonnegative(other):
            return True
    return False


def _plan_division(op):
    """How a rounded ``arith.divf`` is rewritten: a closure emitting the
    result with math_fast's ops, decided on the IR as it is before any
    rewriting (its operands' defining ops are still math ops)."""
    a, b = op.operands
    k = _constant(b)
    if k is not None and k != 0.0 and math.isfinite(k) and 2.0 ** -126 <= abs(1.0 / k) < 2.0 ** 126:
        return lambda o: o.mul(a, o.const(1.0 / k))
    numerator = None if _constant(a) == 1.0 else a
    sqrt = _defining(b)
    if numerator is None and sqrt is not None and sqrt.name == "math.sqrt":
        v = sqrt.operands[0]
        if isinstance(v.type, ir.F32Type):
            return lambda o: o.rsqrt(v)
    at_least_one = _at_least_one(b)
    return lambda o: math_fast.divide(o, numerator, b, at_least_one)


def _expand(op, fast):
    """Replace the math op ``op``; ``fast``: an Ops to use math_fast's form
    with, or None for math_approx's."""
    name = op.name
    types = [v.type for v in op.operands]
    if not types or any(not isinstance(t, (ir.F32Type, ir.F16Type, ir.BF16Type))
                        for t in types):
        raise UnsupportedError(f"dnn-expand-math: '{name}' on {', '.join(map(str, types))}: "
                               "expected f32, f16 or bf16 scalars")
    with ir.InsertionPoint(op), op.location:
        args = [v if isinstance(v.type, ir.F32Type) else arith.extf(ir.F32Type.get(), v)
                for v in op.operands]
        if name in math_approx.PREDICATES:
            result = math_approx.PREDICATES[name](*args)
        elif fast is not None and name in math_fast.FUNCTIONS:
            result = math_fast.FUNCTIONS[name](fast, *args)
        elif name in math_approx.FUNCTIONS:
            result = math_approx.FUNCTIONS[name](*args)
        else:
            raise UnsupportedError(f"dnn-expand-math: '{name}' has no expansion")
        if not isinstance(op.results[0].type, (ir.F32Type, ir.IntegerType)):
            result = arith.truncf(op.results[0].type, result)
    op.results[0].replace_all_uses_with(result)
    op.erase()


def _half_result(op, memo):
    """True when the result of ``op`` only ever feeds roundings precise
    enough for math_fast's form (``_PRECISION``, else 11 bits: f16)."""
    result = op.results[0]
    precision = _PRECISION.get(op.name, _FAST_PRECISION)
    bits = _significand_bits(result.type)
    if bits is not None:
        return bits <= precision
    if not isinstance(result.type, ir.F32Type):
        return False
    return _rounded(result, op.name not in _PRECISION, precision, memo)


def expand(module):
    module = getattr(module, "operation", module)
    with module.context:
        memo, plan = {}, []
        # Decide everything on the unmodified IR, then rewrite.
        for op in irutil.ops(module):
            if op.name.startswith("math."):
                half = op.name in math_fast.FUNCTIONS and _half_result(op, memo)
                plan.append((op, half, None))
            elif op.name == "arith.divf" and isinstance(op.results[0].type, ir.F32Type) \
                    and _half_result(op, memo):
                plan.append((op, True, _plan_division(op)))
        # Divisions first: their plans read the math ops' results (1 / sqrt
        # v becomes rsqrt v), which the math rewrites then replace.
        plan.sort(key=lambda entry: entry[2] is None)
        for op, half, division in plan:
            fast = math_fast.Ops(irutil.enclosing(op, "gpu.module") is not None) if half else None
            if division is None:
                _expand(op, fast)
                continue
            with ir.InsertionPoint(op), op.location:
                result = division(fast)
            op.results[0].replace_all_uses_with(result)
            op.erase()


@register
@dataclass
class DnnExpandMath(DnncPass):
    NAME = "dnn-expand-math"

    def run(self, module):
        expand(module)
