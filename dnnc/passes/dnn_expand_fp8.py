"""dnn-expand-fp8: lower every conversion between f32 and the fp8 formats,
with the converter instructions where the GPU has them and integer code
elsewhere.

The linalg lowering writes an fp8 store as ``arith.truncf`` f32 -> f8 and an
fp8 load as ``arith.extf`` f8 -> f32 (dnnc/codegen/linalg/emit.py). LLVM
lowers neither. This pass replaces each one:

* inside a ``gpu.module`` whose NVVM target is sm_89 or newer (sm_90a), with
  one PTX converter instruction: ``cvt.rn.satfinite.{e4m3,e5m2}x2.f32``
  (SASS ``F2FP``) to encode and ``cvt.rn.f16x2.{e4m3,e5m2}x2`` to decode, the
  half widened to f32 (exact: every fp8 value is an f16 value);
* anywhere else (the CPU back end, sm_80 kernels, the CPU emulation of the
  GPU lowering), with the integer code of dnnc/codegen/linalg/fp8.py, about
  25 instructions for an encode.

Both give the rounding the dnn dialect defines for a cast to fp8 (fp8.py's
docstring): to nearest even, finite values beyond the largest saturating to
it. ``.satfinite`` also saturates infinity, which is right for E4M3FN (it has
none); an E5M2 infinity stays infinity, so the native E5M2 encode selects
the infinity code for an infinite input. A NaN stays a NaN (the converter
writes the positive one).

Runs after dnn-expand-math, whose choice of fast math forms looks for these
roundings. Only f32 (or 16-bit float) scalars are converted; a vector or
another type is an UnsupportedError naming the op.

Before (in ``gpu.module @k [#nvvm.target<chip = "sm_90a">]``)::

    %y = arith.truncf %x : f32 to f8E4M3FN

After::

    %h = llvm.inline_asm "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $1;", "=h,f" %x : (f32) -> i16
    %b = arith.trunci %h : i16 to i8
    %y = arith.bitcast %b : i8 to f8E4M3FN

Lit test: test/lit/passes/dnn_expand_fp8.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm

from dnnc.codegen.gpu import irutil
from dnnc.codegen.linalg import fp8
from dnnc.codegen.linalg.emit import ci, storage_element
from dnnc.dialect.types import data_type
from dnnc.errors import UnsupportedError
from dnnc.passes import DnncPass, register

# The first NVIDIA architecture with the fp8 converters (PTX ISA: sm_89).
NATIVE_FROM_SM = 89

_FORMATS = {t.mlir: t for t in fp8.FORMATS}
_PTX_NAME = {data_type.FP8_E4M3: "e4m3", data_type.FP8_E5M2: "e5m2"}


def _format(type_):
    """The fp8 data_type of an MLIR scalar type (or of a vector's elements),
    else None."""
    if isinstance(type_, ir.VectorType):
        type_ = ir.VectorType(type_).element_type
    return _FORMATS.get(str(type_))


def _i(width):
    return ir.IntegerType.get_signless(width)


def _encode_native(value, dtype):
    """``cvt.rn.satfinite`` of the f32 ``value`` (both halves of the pair get
    it; the low byte is kept)."""
    name = _PTX_NAME[dtype]
    pair = llvm.inline_asm(_i(16), [value], f"cvt.rn.satfinite.{name}x2.f32 $0, $1, $1;",
                           "=h,f")
    code = arith.trunci(_i(8), pair)
    if dtype is data_type.FP8_E5M2:
        # .satfinite made an infinity the largest finite value; E5M2 keeps it.
        bits = arith.bitcast(_i(32), value)
        magnitude = arith.andi(bits, ci(0x7FFFFFFF))
        infinite = arith.cmpi(arith.CmpIPredicate.eq, magnitude, ci(0x7F800000))
        sign = arith.trunci(_i(8), arith.andi(arith.shrui(bits, ci(24)), ci(0x80)))
        inf = arith.ori(sign, ci(fp8.FORMATS[dtype].inf_code, _i(8)))
        code = arith.select(infinite, inf, code)
    return arith.bitcast(storage_element(dtype), code)


def _decode_native(value, dtype):
    """``cvt.rn.f16x2`` of the fp8 ``value`` (in the low byte of the pair),
    widened from f16 to f32."""
    name = _PTX_NAME[dtype]
    pair = arith.extui(_i(16), arith.bitcast(_i(8), value))
    halves = llvm.inline_asm(_i(32), [pair], f"cvt.rn.f16x2.{name}x2 $0, $1;", "=r,h")
    half = arith.bitcast(ir.F16Type.get(), arith.trunci(_i(16), halves))
    return arith.extf(ir.F32Type.get(), half)


def _conversion(op):
    """(fp8 data_type, encode?) for an arith.truncf to / extf from fp8, else None."""
    if op.name == "arith.truncf":
        dtype = _format(op.results[0].type)
        return (dtype, True) if dtype else None
    if op.name == "arith.extf":
        dtype = _format(op.operands[0].type)
        return (dtype, False) if dtype else None
    return None


def _check(op, dtype, encode):
    other = op.operands[0].type if encode else op.results[0].type
    if isinstance(op.results[0].type, ir.VectorType) or \
            not isinstance(other, (ir.F32Type, ir.F16Type, ir.BF16Type)):
        raise UnsupportedError(
            f"dnn-expand-fp8: '{op.name}' at {op.location} converts {dtype.value} "
            f"{'from' if encode else 'to'} {other}: expected an f32, f16 or bf16 scalar")


def expand(module):
    module = getattr(module, "operation", module)
    with module.context:
        native_in = {}  # gpu.module (or None) -> whether it has the converters
        for op in irutil.ops(module):
            kind = _conversion(op)
            if kind is None:
                continue
            dtype, encode = kind
            _check(op, dtype, encode)
            where = irutil.enclosing(op, "gpu.module")
            if where not in native_in:
                sm = irutil.target_sm(where)
                native_in[where] = sm is not None and sm >= NATIVE_FROM_SM
            native = native_in[where]
            with ir.InsertionPoint(op), op.location:
                f32 = ir.F32Type.get()
                if encode:
                    x = op.operands[0]
                    if not isinstance(x.type, ir.F32Type):
                        x = arith.extf(f32, x)
                    result = (_encode_native if native else fp8.encode)(x, dtype)
                else:
                    result = (_decode_native if native else fp8.decode)(op.operands[0], dtype)
                    if not isinstance(op.results[0].type, ir.F32Type):
                        result = arith.truncf(op.results[0].type, result)
            op.results[0].replace_all_uses_with(result)
            op.erase()


@register
@dataclass
class DnnExpandFp8(DnncPass):
    NAME = "dnn-expand-fp8"

    def run(self, module):
        expand(module)
