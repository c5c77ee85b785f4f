"""Pointwise ops, cast, constant and gen_index as linalg.generic on tensors.

One ``linalg.generic`` per op, all loops parallel over the result shape.
Operands broadcast as in NumPy: they align to the right, and an operand dim of
size 1 that the result widens is read at index 0 (see ``emit.broadcast_map``).
The body widens every float operand to f32, computes with arith / math
(``scalar.SCALAR``) and rounds once to the result's storage type.
"""

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.linalg import emit, fp8
from dnnc.codegen.linalg.emit import PARALLEL
from dnnc.codegen.linalg.scalar import SCALAR
from dnnc.dialect.types import data_type


def _result(view):
    (name, value), = [(k, v) for k, v in view.results.items() if v is not None]
    return name, emit.logical_info(value)


def lower_pointwise(view):
    """Every op of SCALAR: broadcast operands, compute, round."""
    name, out = _result(view)
    operands = [(o, view.operands[o.name]) for o in view.opdef.operands]
    values = [v for _, v in operands]
    infos = [emit.logical_info(v) for v in values]
    rank = len(out.shape)
    maps = [emit.broadcast_map(i.shape, out.shape) for i in infos] + [emit.identity(rank)]
    init = emit.empty(out.shape, emit.storage_element(out.dtype))
    scalar = SCALAR[view.name]

    def body(*args):
        converted = []
        for (o, _), info, arg in zip(operands, infos, args):
            # i1 operands (logic, select's condition) stay i1; a boolean fed to
            # an op that takes any type (cast) becomes 0.0 / 1.0.
            if o.dtype == "bool":
                converted.append(emit.to_i1(arg))
            else:
                converted.append(emit.to_f32(arg, info.dtype))
        r = scalar(converted, view.attrs)
        if isinstance(r.type, ir.IntegerType):  # comparisons and logic give i1
            return [emit.from_i1(r)]
        return [emit.from_f32(r, out.dtype)]

    y = emit.generic(values, [init], maps, [PARALLEL] * rank, body)[0]
    return {name: y}


def lower_cast(view):
    """cast: ``emit.cast_scalar`` per element. Between integer types (int32,
    int8, uint8, from booleans) no float is involved, so int32 values are
    kept exactly; every other pair goes through f32, as in lower_pointwise."""
    x = view.operands["x"]
    have = emit.logical_info(x).dtype
    name, out = _result(view)
    return {name: emit.convert(x, have, out.dtype)}


def lower_constant(view):
    """A rank-0 tensor holding ``value`` rounded to the result type."""
    name, out = _result(view)
    value = float(view.attrs["value"])
    if out.dtype is data_type.BOOLEAN:
        attr = ir.IntegerAttr.get(emit.i8(), int(value != 0))
        return {name: _splat(attr, emit.i8())}
    if out.dtype.is_integer:
        # An f32 constant converted as a cast would (no si8 / ui8 constant:
        # arith has signless integers only).
        c = _splat(ir.FloatAttr.get(emit.f32(), value), emit.f32())
        return {name: emit.convert(c, data_type.FLOAT, out.dtype)}
    if out.dtype in (data_type.FLOAT, data_type.HALF, data_type.BFLOAT16):
        elt = emit.storage_element(out.dtype)
        # FloatAttr rounds the double once, to nearest even.
        return {name: _splat(ir.FloatAttr.get(elt, value), elt)}
    # fp8: round here, exactly, to an f8 value (exact in f32), and store it
    # through the same encoder as every other fp8 store.
    c = _splat(ir.FloatAttr.get(emit.f32(), fp8.round_value(value, out.dtype)), emit.f32())
    return {name: emit.convert(c, data_type.FLOAT, out.dtype)}


def _splat(attr, elt):
    t = ir.RankedTensorType.get([], elt)
    return arith.ConstantOp(t, ir.DenseElementsAttr.get_splat(t, attr)).result


def lower_gen_index(view):
    """y = position along ``axis`` as a float; x only gives the shape."""
    name, out = _result(view)
    rank, axis = len(out.shape), view.attrs["axis"]
    init = emit.empty(out.shape, emit.storage_element(out.dtype))

    def body(_):
        i = arith.index_cast(ir.IntegerType.get_signless(64), emit.index(axis))
        return [emit.from_f32(arith.uitofp(emit.f32(), i), out.dtype)]

    return {name: emit.generic([], [init], [emit.identity(rank)], [PARALLEL] * rank, body)[0]}
