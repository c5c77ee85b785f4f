"""Build dnn ops in MLIR and read them back, through the OpDefs.

``create`` makes an op from operand Values and Python attribute values, inferring
result types; ``read`` turns an op back into Python values. Passes use both, so
they never spell attribute encodings or segment sizes themselves.

Attributes are encoded as:

    int -> 3 : i64        ints -> array<i64: 1, 2>     float -> 1.0e-05 : f64
    bool -> true          str -> "max"                 type -> f32
"""

import contextlib
from dataclasses import dataclass

from mlir import ir

from dnnc.dialect import opdef as _opdef
from dnnc.dialect.types import as_data_type, data_type, from_mlir
from dnnc.errors import DnncError, VerificationError

# The one discardable attribute a dnn op may carry: its name in the graph.
NAME_ATTR = "dnn.name"


def tensor_type(shape, dtype):
    """``tensor<...>`` for a shape and a data_type."""
    return ir.RankedTensorType.get(list(shape), element_type(dtype))


def element_type(dtype):
    return ir.Type.parse(as_data_type(dtype).mlir)


def info_of(type_):
    """TensorInfo of an MLIR ranked tensor type with a static shape, no encoding
    and a dnn element type; anything else is a VerificationError."""
    if not isinstance(type_, ir.RankedTensorType):
        raise VerificationError(f"expected a ranked tensor, got {type_}")
    if type_.encoding is not None:
        raise VerificationError(f"expected a tensor without encoding, got {type_}")
    if not type_.has_static_shape:
        raise VerificationError(f"expected a static shape, got {type_}")
    try:
        dtype = from_mlir(str(type_.element_type))
    except DnncError:
        raise VerificationError(f"expected element type f32, f16, bf16, f8E4M3FN, f8E5M2, "
                                f"i1, i32, si8 or ui8, got {type_.element_type}") from None
    return _opdef.TensorInfo(tuple(type_.shape), dtype)


def encode_attr(kind, value):
    """Python value -> MLIR attribute for an attribute kind."""
    if kind == "int":
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
    if kind == "ints":
        return ir.DenseI64ArrayAttr.get([int(v) for v in value])
    if kind == "float":
        return ir.FloatAttr.get(ir.F64Type.get(), float(value))
    if kind == "bool":
        return ir.BoolAttr.get(bool(value))
    if kind == "str":
        return ir.StringAttr.get(str(value))
    if kind == "type":
        return ir.TypeAttr.get(ir.Type.parse(str(value)))
    raise AssertionError(kind)


def decode_attr(kind, attr, where):
    """MLIR attribute -> Python value; a wrong attribute kind is a VerificationError."""
    expected = {"int": "an i64 integer", "ints": "array<i64: ...>", "float": "an f64 float",
                "bool": "true or false", "str": "a string", "type": "a type"}[kind]
    if (kind == "int" and isinstance(attr, ir.IntegerAttr) and not isinstance(attr, ir.BoolAttr)
            and str(attr.type) == "i64"):
        return attr.value
    if kind == "ints" and isinstance(attr, ir.DenseI64ArrayAttr):
        return tuple(attr)
    if kind == "float" and isinstance(attr, ir.FloatAttr) and str(attr.type) == "f64":
        return attr.value
    if kind == "bool" and isinstance(attr, ir.BoolAttr):
        return attr.value
    if kind == "str" and isinstance(attr, ir.StringAttr):
        return attr.value
    if kind == "type" and isinstance(attr, ir.TypeAttr):
        return str(attr.value)
    raise VerificationError(f"{where}: expected {expected}, got {attr}")


@dataclass
class OpView:
    """A dnn op read back into Python: its OpDef, operand Values by name (None
    for an absent optional operand, a list for a variadic one), attribute values
    and result Values by name."""

    opdef: object
    operation: object
    operands: dict
    attrs: dict
    results: dict
    discardable: dict

    @property
    def name(self):
        return self.opdef.name


def _segments(items, present):
    return [len(present[i.name]) if getattr(i, "variadic", False)
            else (0 if present[i.name] is None else 1) for i in items]


def create(name, operands, attrs=None, result_types=None, *, discardable=None, loc=None,
           ip=None):
    """Create ``dnn.<name>``; return an OpView.

    ``operands`` maps operand names to Values (None or absent for optional ones).
    ``result_types`` maps result names to MLIR types; results not given get the
    inferred shape, and the inferred dtype or, when the op leaves it free, the
    dtype of the first operand.
    """
    with loc if loc is not None else contextlib.nullcontext():
        return _create(name, operands, attrs, result_types, discardable, loc, ip)


def _create(name, operands, attrs, result_types, discardable, loc, ip):
    d = _opdef.get(name)
    operands = {o.name: operands.get(o.name) for o in d.operands}
    infos = {k: ([info_of(v.type) for v in val] if isinstance(val, list) else
                 (info_of(val.type) if val is not None else None))
             for k, val in operands.items()}
    result_types = dict(result_types or {})
    declared = {k: info_of(t) for k, t in result_types.items()}
    inferred, full_attrs = _opdef.infer(d, infos, dict(attrs or {}), declared)
    types = []
    present_results = {}
    fallback = next((i.dtype for i in _flat(infos.values()) if i.dtype and i.dtype.is_float),
                    data_type.FLOAT)
    for r in d.results:
        if r.name not in inferred:
            present_results[r.name] = None
            continue
        t = result_types.get(r.name)
        if t is None:
            info = inferred[r.name]
            t = tensor_type(info.shape, info.dtype or fallback)
        types.append(t)
        present_results[r.name] = t
    flat_operands = []
    for o in d.operands:
        v = operands[o.name]
        if isinstance(v, list):
            flat_operands.extend(v)
        elif v is not None:
            flat_operands.append(v)
    mattrs = {a.name: encode_attr(a.kind, full_attrs[a.name]) for a in d.attrs}
    if d.has_optional_operands:
        mattrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(_segments(d.operands, operands))
    if d.has_optional_results:
        mattrs["resultSegmentSizes"] = ir.DenseI32ArrayAttr.get(
            [0 if present_results[r.name] is None else 1 for r in d.results])
    for key, value in (discardable or {}).items():
        mattrs[key] = value
    operation = ir.Operation.create(d.mlir_name, results=types, operands=flat_operands,
                                    attributes=mattrs, loc=loc, ip=ip)
    return read(operation)


def _flat(values):
    for v in values:
        if isinstance(v, list):
            yield from v
        elif v is not None:
            yield v


def _split(items, values, sizes):
    if sizes is None:
        # At most one optional/variadic group: it takes what the fixed ones leave.
        fixed = sum(1 for i in items if not (i.optional or getattr(i, "variadic", False)))
        extra = len(values) - fixed
        sizes = []
        for i in items:
            if getattr(i, "variadic", False):
                sizes.append(extra)
            elif i.optional:
                sizes.append(extra)
            else:
                sizes.append(1)
    out, pos = {}, 0
    for item, n in zip(items, sizes):
        if getattr(item, "variadic", False):
            out[item.name] = list(values[pos:pos + n])
        else:
            out[item.name] = values[pos] if n else None
        pos += n
    return out


def read(operation):
    """OpView of a dnn operation; attributes left out get their static defaults."""
    operation = getattr(operation, "operation", operation)
    d = _opdef.get(operation.name)
    attrs, discardable = {}, {}
    known = {a.name: a for a in d.attrs}
    operand_sizes = result_sizes = None
    def fail(key, message):
        raise VerificationError(f"'{d.mlir_name}' op attribute '{key}': {message}",
                                op=d.mlir_name, location=operation.location)

    for key, value in operation.attributes.items():
        if key == "operandSegmentSizes" and d.has_optional_operands:
            if not isinstance(value, ir.DenseI32ArrayAttr):
                fail(key, f"expected array<i32: ...>, got {value}")
            operand_sizes = list(value)
        elif key == "resultSegmentSizes" and d.has_optional_results:
            if not isinstance(value, ir.DenseI32ArrayAttr):
                fail(key, f"expected array<i32: ...>, got {value}")
            result_sizes = list(value)
        elif key == NAME_ATTR:
            if not isinstance(value, ir.StringAttr):
                fail(key, f"expected a string, got {value}")
            discardable[key] = value
        elif key in known:
            attrs[key] = decode_attr(known[key].kind, value,
                                     f"'{d.mlir_name}' op attribute '{key}'")
        elif known:
            fail(key, f"unknown attribute; expected one of {', '.join(sorted(known))}")
        else:
            fail(key, "unknown attribute; the op has no attributes")
    for a in d.attrs:
        if a.name not in attrs and not a.required:
            attrs[a.name] = a.default
    operands = _split(d.operands, list(operation.operands), operand_sizes)
    results = _split(d.results, list(operation.results), result_sizes)
    return OpView(d, operation, operands, attrs, results, discardable)


def verify(operation):
    """Check one dnn op against its OpDef; raise VerificationError naming it.

    Returns the OpView with attributes completed by their defaults.
    """
    operation = getattr(operation, "operation", operation)
    try:
        view = read(operation)
        d = view.opdef
        infos = {k: ([_info(d, "operand", k, v) for v in val] if isinstance(val, list) else
                     (_info(d, "operand", k, val) if val is not None else None))
                 for k, val in view.operands.items()}
        declared = {k: _info(d, "result", k, v) for k, v in view.results.items()
                    if v is not None}
        inferred, full = _opdef.infer(d, infos, view.attrs, declared, operation.location)
        for r in d.results:
            have, want = view.results[r.name], inferred.get(r.name)
            if (have is None) != (want is None):
                expect = "present" if want is not None else "absent"
                got = "absent" if have is None else "present"
                raise VerificationError(f"'{d.mlir_name}' op result '{r.name}': expected "
                                        f"{expect}, got {got}")
            if have is None:
                continue
            info = info_of(have.type)
            if info.shape != want.shape:
                raise VerificationError(
                    f"'{d.mlir_name}' op result '{r.name}': expected shape "
                    f"{_shape(want.shape)}, got {_shape(info.shape)}")
            if want.dtype is not None and info.dtype is not want.dtype:
                raise VerificationError(f"'{d.mlir_name}' op result '{r.name}': expected "
                                        f"element type {want.dtype}, got {info.dtype}")
            # A result the op leaves free is a float or an integer (int32,
            # int8: rounded and saturated, as cast does); only cast makes i1.
            if want.dtype is None and not (info.dtype.is_float or info.dtype.is_integer) \
                    and d.name != "cast":
                raise VerificationError(f"'{d.mlir_name}' op result '{r.name}': expected a "
                                        "floating-point or integer element type, got "
                                        f"{info.dtype}")
        view.attrs = full
        return view
    except VerificationError as err:
        if err.location is None:
            err.location = operation.location
        raise


def _info(d, kind, name, value):
    try:
        return info_of(value.type)
    except VerificationError as err:
        raise VerificationError(f"'{d.mlir_name}' op {kind} '{name}': {err}") from None


def _shape(shape):
    return "x".join(str(s) for s in shape) if shape else "scalar"
