"""dnn-expand-math: replace every math op by arith code and native LLVM
intrinsics, so GPU kernels need no math library.

``convert-gpu-to-nvvm`` lowers math ops to calls of libdevice functions
(``__nv_expf``), which exist only where a CUDA toolkit is installed and leave
external calls in the PTX otherwise. This pass runs before that conversion,
on the whole module (kernels included), and rewrites every math op with
dnnc/codegen/gpu/math_approx.py: polynomials for the transcendental functions
and ``llvm.call_intrinsic`` of ``llvm.sqrt.f32``, ``llvm.floor.f32``... for
what PTX has an instruction for (math_scalar.py).
f16 and bf16 operands are computed in f32 and rounded back. A math op of
another type (f64, vectors) is an UnsupportedError naming it.

Before::

    %y = math.exp %x : f32

After::

    %c = arith.constant -1.040000e+02 : f32
    %0 = arith.maximumf %x, %c : f32
    ...
    %k = llvm.call_intrinsic "llvm.floor.f32"(%2) : (f32) -> f32
    ...
    %y = arith.select %nan, %x, %r : f32

Lit test: test/lit/passes/dnn_expand_math.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.gpu import irutil, math_approx
from dnnc.errors import UnsupportedError
from dnnc.passes import DnncPass, register


def _expand(op):
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
        elif name in math_approx.FUNCTIONS:
            result = math_approx.FUNCTIONS[name](*args)
            if not isinstance(op.results[0].type, ir.F32Type):
                result = arith.truncf(op.results[0].type, result)
        else:
            raise UnsupportedError(f"dnn-expand-math: '{name}' has no expansion")
    op.results[0].replace_all_uses_with(result)
    op.erase()


def expand(module):
    module = getattr(module, "operation", module)
    with module.context:
        for op in irutil.ops(module):
            if op.name.startswith("math."):
                _expand(op)


@register
@dataclass
class DnnExpandMath(DnncPass):
    NAME = "dnn-expand-math"

    def run(self, module):
        expand(module)
