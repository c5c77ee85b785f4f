"""Small builders shared by the dnn -> linalg lowerings.

Everything here emits at the current insertion point and location (the
lowering pass sets both to the dnn op being replaced). The conventions:

* Storage types. A dnn tensor of ``i1`` is stored as ``i8`` (0 or 1) once
  lowered, because i1 memrefs do not lower to LLVM; every other dnn element
  type is kept. ``tensor_type`` and ``logical_info`` translate both ways.
  int8 and uint8 tensors keep their ``si8`` / ``ui8`` types through the
  lowering, so that they are never read as booleans; arith takes signless
  integers only, so bodies see their elements through ``signless`` casts,
  and convert-dnn-to-linalg gives them their ``i8`` storage at its end.
* Scalars inside linalg bodies are computed in f32 (``to_f32`` / ``from_f32``)
  or, for booleans, in i1 (``to_i1`` / ``from_i1``); int32 accumulation of
  int8 / uint8 products is integer (``to_i32`` / ``from_i32``), and casts
  between integers never go through a float (``cast_scalar``).
* ``generic`` builds a ``linalg.generic`` from plain Python: operands, affine
  maps, iterator kinds and a body callback returning the yielded values.
"""

from mlir import ir
from mlir.dialects import arith, bufferization, builtin, linalg, tensor

from dnnc.dialect.opdef import TensorInfo
from dnnc.dialect.types import data_type, from_mlir

PARALLEL = linalg.IteratorType.parallel
REDUCTION = linalg.IteratorType.reduction


# ----------------------------------------------------------------------------
# Types


def f32():
    return ir.F32Type.get()


def i32():
    return ir.IntegerType.get_signless(32)


def i8():
    return ir.IntegerType.get_signless(8)


def i1():
    return ir.IntegerType.get_signless(1)


def index_type():
    return ir.IndexType.get()


def storage_element(dtype):
    """Element type of a lowered tensor of ``dtype`` (i1 is stored as i8; si8
    and ui8 are kept until the end of the lowering, see the module docstring)."""
    if dtype is data_type.BOOLEAN:
        return i8()
    return ir.Type.parse(dtype.mlir)


def tensor_type(shape, dtype):
    return ir.RankedTensorType.get(list(shape), storage_element(dtype))


def logical_info(value_or_type):
    """TensorInfo of a value (or type) seen by the lowering: i8 reads as i1."""
    t = getattr(value_or_type, "type", value_or_type)
    t = ir.RankedTensorType(t)
    spelling = str(t.element_type)
    dtype = data_type.BOOLEAN if spelling in ("i8", "i1") else from_mlir(spelling)
    return TensorInfo(tuple(t.shape), dtype)


def shape_of(value):
    """Static shape of a ranked tensor value (any element type)."""
    return tuple(ir.RankedTensorType(value.type).shape)


# ----------------------------------------------------------------------------
# Scalars


def const(type_, value):
    """A scalar arith.constant of an integer, index or float type."""
    if isinstance(type_, (ir.IntegerType, ir.IndexType)):
        return arith.constant(type_, int(value))
    return arith.constant(type_, float(value))


def cf(value):
    """An f32 constant."""
    return const(f32(), value)


def ci(value, type_=None):
    """An i32 constant (or of the given integer type)."""
    return const(type_ or i32(), value)


def signless(value):
    """An si8 / ui8 scalar as the i8 that arith computes on (other scalars
    unchanged). The cast disappears when convert-dnn-to-linalg retypes the
    int8 storage to i8."""
    t = value.type
    if isinstance(t, ir.IntegerType) and not ir.IntegerType(t).is_signless:
        return builtin.unrealized_conversion_cast([i8()], [value])
    return value


def stored(value, dtype):
    """An i8 scalar as the stored element of ``dtype`` (si8 / ui8; others
    unchanged): the inverse of ``signless``."""
    if dtype in (data_type.INT8, data_type.UINT8):
        return builtin.unrealized_conversion_cast([storage_element(dtype)], [value])
    return value


def to_i32(value, dtype):
    """A stored int8 / uint8 / int32 scalar as i32 (exact)."""
    if dtype is data_type.INT32:
        return value
    if dtype is data_type.INT8:
        return arith.extsi(i32(), signless(value))
    if dtype is data_type.UINT8:
        return arith.extui(i32(), signless(value))
    if dtype is data_type.BOOLEAN:
        return arith.extui(i32(), to_i1(value))
    raise AssertionError(dtype)


def _byte_range(dtype):
    return (-128, 127) if dtype is data_type.INT8 else (0, 255)


def from_i32(value, dtype):
    """An i32 scalar as the storage of ``dtype``: int32 kept, int8 / uint8
    saturated to their range, a boolean ``!= 0``, f32 rounded once to
    nearest even, other floats through f32 (exact up to 2^24)."""
    if dtype is data_type.INT32:
        return value
    if dtype in (data_type.INT8, data_type.UINT8):
        lo, hi = _byte_range(dtype)
        clamped = arith.minsi(arith.maxsi(value, ci(lo)), ci(hi))
        return stored(arith.trunci(i8(), clamped), dtype)
    if dtype is data_type.BOOLEAN:
        return from_i1(arith.cmpi(arith.CmpIPredicate.ne, value, ci(0)))
    return from_f32(arith.sitofp(f32(), value), dtype)


def to_f32(value, dtype):
    """A stored scalar of ``dtype`` as f32 (booleans give 0.0 / 1.0, int8 and
    uint8 their value, int32 its value, exact up to 2^24). fp8 is an
    ``arith.extf`` like the 16-bit floats: dnn-expand-fp8 lowers it later, for
    the target at hand."""
    if dtype is data_type.FLOAT:
        return value
    if dtype in (data_type.HALF, data_type.BFLOAT16, data_type.FP8_E4M3, data_type.FP8_E5M2):
        return arith.extf(f32(), value)
    if dtype is data_type.BOOLEAN:
        return arith.uitofp(f32(), to_i1(value))
    if dtype in (data_type.INT32, data_type.INT8):
        return arith.sitofp(f32(), signless(value))
    if dtype is data_type.UINT8:
        return arith.uitofp(f32(), signless(value))
    raise AssertionError(dtype)


def from_f32(value, dtype):
    """An f32 scalar rounded to the storage of ``dtype`` (to nearest even; a
    boolean is ``value != 0``, NaN counting as true; int32 truncated toward
    zero; int8 and uint8 to nearest even and saturated, NaN giving 0, as PTX's
    cvt.rni.sat does). fp8 is an ``arith.truncf`` whose saturation
    (dnnc/codegen/linalg/fp8.py) is given by dnn-expand-fp8, which lowers it
    later for the target at hand."""
    if dtype is data_type.FLOAT:
        return value
    if dtype in (data_type.HALF, data_type.BFLOAT16, data_type.FP8_E4M3, data_type.FP8_E5M2):
        return arith.truncf(storage_element(dtype), value)
    if dtype is data_type.BOOLEAN:
        return from_i1(arith.cmpf(arith.CmpFPredicate.UNE, value, cf(0.0)))
    if dtype is data_type.INT32:
        return arith.fptosi(i32(), value)
    if dtype in (data_type.INT8, data_type.UINT8):
        # Clamp in float first (NaN -> 0 through the ordered compares), so the
        # conversion to i32 is always in range; then round to nearest even.
        lo, hi = _byte_range(dtype)
        x = arith.select(arith.cmpf(arith.CmpFPredicate.ORD, value, value), value, cf(0.0))
        x = arith.minimumf(arith.maximumf(x, cf(lo)), cf(hi))
        return from_i32(arith.fptosi(i32(), _round_even(x)), dtype)
    raise AssertionError(dtype)


def _round_even(x):
    """An f32 of magnitude below 2^23 rounded to the nearest integer, ties to
    even: adding and subtracting 1.5 * 2^23 leaves no fraction bits, and the
    add rounds to nearest even (math.roundeven needs libm on the CPU)."""
    magic = cf(12582912.0)
    return arith.subf(arith.addf(x, magic), magic)


def cast_scalar(value, src, dst):
    """A stored scalar of ``src`` as the storage of ``dst``: between integer
    types (and from booleans) exactly or saturated, never through a float;
    every other pair through f32 (``to_f32`` / ``from_f32``)."""
    if src is dst:
        return value
    integers = (data_type.INT32, data_type.INT8, data_type.UINT8)
    if src in integers + (data_type.BOOLEAN,) and dst in integers:
        return from_i32(to_i32(value, src), dst)
    if src in integers and dst is data_type.BOOLEAN:
        return from_i1(arith.cmpi(arith.CmpIPredicate.ne, to_i32(value, src), ci(0)))
    if src is data_type.INT32 and dst is data_type.FLOAT:
        return arith.sitofp(f32(), value)
    return from_f32(to_f32(value, src), dst)


def to_i1(value):
    """A stored boolean (i8, any nonzero is true) as i1."""
    if ir.IntegerType(value.type).width == 1:
        return value
    return arith.cmpi(arith.CmpIPredicate.ne, value, const(value.type, 0))


def from_i1(value):
    """An i1 as its i8 storage (0 or 1)."""
    return arith.extui(i8(), value)


def index(dim):
    """The loop index ``dim`` of the enclosing linalg.generic, as an index."""
    return linalg.IndexOp(dim).result


def index_i32(dim):
    return arith.index_cast(i32(), index(dim))


# ----------------------------------------------------------------------------
# Affine maps


def d(i):
    return ir.AffineDimExpr.get(i)


def zero_expr():
    return ir.AffineConstantExpr.get(0)


def amap(n_dims, exprs):
    return ir.AffineMap.get(n_dims, 0, list(exprs))


def identity(rank):
    return amap(rank, [d(i) for i in range(rank)])


def broadcast_map(shape, out_shape):
    """Map from the loops of ``out_shape`` to an operand of ``shape`` under NumPy
    broadcasting: the operand's dims align right, and a dim of size 1 that the
    output widens reads index 0."""
    rank, offset = len(out_shape), len(out_shape) - len(shape)
    exprs = []
    for i, n in enumerate(shape):
        j = offset + i  # the output dim this operand dim lines up with
        exprs.append(zero_expr() if n == 1 and out_shape[j] != 1 else d(j))
    return amap(rank, exprs)


# ----------------------------------------------------------------------------
# linalg and tensor ops


def generic(inputs, outputs, maps, iterators, body):
    """Emit a linalg.generic on tensors; ``body(*block_args)`` returns the list
    of values to yield (one per output). Returns the list of results."""
    op = linalg.GenericOp(
        [o.type for o in outputs], list(inputs), list(outputs),
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{it}>")
                          for it in iterators]))
    types = [ir.RankedTensorType(v.type).element_type for v in list(inputs) + list(outputs)]
    block = op.regions[0].blocks.append(*types)
    with ir.InsertionPoint(block):
        values = body(*block.arguments)
        linalg.YieldOp(list(values))
    return list(op.results)


def empty(shape, element_type):
    return tensor.EmptyOp(list(shape), element_type).result


def fresh(shape, element_type):
    """An uninitialized tensor that is its own buffer: unlike tensor.empty,
    bufferization.alloc_tensor is never merged with another by CSE. Tensors
    written in place with ``write_into`` start from one, so that two equal
    ones cannot become one buffer that needs copies."""
    t = ir.RankedTensorType.get(list(shape), element_type)
    return bufferization.AllocTensorOp(t, []).result


def filled(shape, element_type, value, unique=False):
    """A new tensor of ``shape`` holding ``value`` everywhere (``unique``: on
    a ``fresh`` tensor)."""
    out = (fresh if unique else empty)(shape, element_type)
    return generic([], [out], [identity(len(shape))], [PARALLEL] * len(shape),
                   lambda _: [const(element_type, value)])[0]


def convert(value, dtype_in, dtype_out, scalar=None):
    """Elementwise ``from_f32(scalar(to_f32(x)))`` into a new tensor of
    ``dtype_out``; ``scalar`` (optional) maps the f32 value. Without one,
    ``cast_scalar``: integers convert among themselves without a float."""
    shape = shape_of(value)
    out = empty(shape, storage_element(dtype_out))
    rank = len(shape)

    def body(x, _):
        if scalar is None:
            return [cast_scalar(x, dtype_in, dtype_out)]
        return [from_f32(scalar(to_f32(x, dtype_in)), dtype_out)]

    return generic([value], [out], [identity(rank)] * 2, [PARALLEL] * rank, body)[0]


def _i64_array(values):
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def extract_slice(source, offsets, sizes, strides):
    src = ir.RankedTensorType(source.type)
    result = ir.RankedTensorType.get(list(sizes), src.element_type)
    return tensor.ExtractSliceOp(result, source, [], [], [], _i64_array(offsets),
                                 _i64_array(sizes), _i64_array(strides)).result


def insert_slice(source, dest, offsets, sizes, strides):
    return tensor.InsertSliceOp(source, dest, [], [], [], _i64_array(offsets),
                                _i64_array(sizes), _i64_array(strides)).result


def write_into(dest, offsets, sizes, strides, fill_slice):
    """Write a region of ``dest`` in place: ``fill_slice(slice)`` computes the
    new contents of the (strided) slice into the given slice tensor, with a
    linalg op that canonicalization keeps (``copy``, or a generic that is not
    an identity).

    Extracting the slice, writing it with a linalg op and inserting it back at
    the same place is the pattern One-Shot Bufferize turns into an in-place
    write of a memref.subview (plus a self-copy that canonicalization removes),
    so no strided memref.copy, which would need a runtime library, is left.
    """
    part = extract_slice(dest, offsets, sizes, strides)
    return insert_slice(fill_slice(part), dest, offsets, sizes, strides)


def copy(value, dest):
    """linalg.copy of ``value`` into ``dest`` (same shape and element type).
    Unlike an identity linalg.generic, canonicalization does not erase it."""
    return linalg.copy(value, outs=[dest])


def f32_scalar(dtype):
    """``to_f32`` for stored elements of ``dtype``; None when that is the
    identity (f32), so callers can emit a plain copy."""
    if dtype is data_type.FLOAT:
        return None
    return lambda x: to_f32(x, dtype)


def collapse(value, groups, result_shape):
    """tensor.collapse_shape with reassociation ``groups`` (lists of dims)."""
    src = ir.RankedTensorType(value.type)
    result = ir.RankedTensorType.get(list(result_shape), src.element_type)
    return tensor.CollapseShapeOp(result, value, _reassociation(groups)).result


def expand(value, groups, result_shape):
    """tensor.expand_shape with reassociation ``groups`` (lists of dims)."""
    src = ir.RankedTensorType(value.type)
    result = ir.RankedTensorType.get(list(result_shape), src.element_type)
    return tensor.ExpandShapeOp(result, value, _reassociation(groups), [],
                                _i64_array(result_shape)).result


def _reassociation(groups):
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, g) for g in group])
                             for group in groups])
