"""How a dnn op is described: operands, results, attributes and shape rules.

Every op of the dialect is one ``OpDef``. It is the single source that the
graph builder (result shapes), the MLIR verifier (checking parsed IR), the IRDL
definition (operand and result structure), the NumPy reference and the
lowerings read. An op's ``infer`` function receives an ``InferContext`` and
returns the result types; it reports bad input through ``ctx.fail`` so every
message has the same shape::

    'dnn.matmul' op operand 'b' dim 1: expected 64 (K of a), got 32
"""

import inspect
import math
from dataclasses import dataclass, field
from typing import Callable

from dnnc.dialect.types import data_type
from dnnc.errors import VerificationError

REQUIRED = object()

# The integer operand types of convolution and matmul (int32 compute).
BYTE_INTEGERS = (data_type.INT8, data_type.UINT8)

# Attribute kinds and the MLIR attribute each is stored as.
#   int    -> 3 : i64            ints  -> array<i64: 1, 2>
#   float  -> 1.0e-05 : f64      bool  -> true
#   str    -> "max"              type  -> f32 (a TypeAttr)
ATTR_KINDS = ("int", "ints", "float", "bool", "str", "type")


@dataclass(frozen=True)
class Attr:
    name: str
    kind: str
    default: object = REQUIRED
    choices: tuple = ()
    doc: str = ""

    @property
    def required(self):
        return self.default is REQUIRED


@dataclass(frozen=True)
class Operand:
    name: str
    optional: bool = False
    variadic: bool = False
    # "float", "bool", "int32", "any", or "number": a float, or int8 / uint8
    # (the operands of convolution and matmul, which int32 compute takes).
    dtype: str = "float"


@dataclass(frozen=True)
class Result:
    name: str
    optional: bool = False


@dataclass(frozen=True)
class TensorInfo:
    """Logical shape and element type of a tensor. ``dtype`` None means free."""

    shape: tuple
    dtype: data_type = None

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def rank(self):
        return len(self.shape)


@dataclass(frozen=True)
class OpDef:
    """One op of the dnn dialect."""

    name: str
    family: str
    operands: tuple
    results: tuple
    attrs: tuple
    infer: Callable
    doc: str = ""
    # Results whose shape cannot be derived from the operands (conv_dgrad's dx,
    # reshape's result) are taken from the declared result type.
    declared_results: tuple = ()
    # The operand whose element type the result keeps (data-movement ops).
    dtype_from: str = None

    @property
    def mlir_name(self):
        return f"dnn.{self.name}"

    def attr(self, name):
        for a in self.attrs:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def has_optional_operands(self):
        return sum(1 for o in self.operands if o.optional or o.variadic) > 1

    @property
    def has_optional_results(self):
        return sum(1 for r in self.results if r.optional) > 1


@dataclass
class InferContext:
    """What an infer function sees: operand types by name, attributes, and
    (when verifying IR) the declared result types."""

    opdef: OpDef
    operands: dict  # name -> TensorInfo | None | list[TensorInfo]
    attrs: dict
    declared: dict = field(default_factory=dict)  # result name -> TensorInfo
    location: object = None

    def __getitem__(self, name):
        return self.operands[name]

    def fail(self, what, message):
        """Raise the op's VerificationError. ``what`` names the operand/attribute."""
        prefix = f"'{self.opdef.mlir_name}' op"
        text = f"{prefix} {what}: {message}" if what else f"{prefix} {message}"
        raise VerificationError(text, op=self.opdef.mlir_name, location=self.location)

    def fail_dim(self, operand, dim, expected, got, why="", kind="operand"):
        reason = f" ({why})" if why else ""
        self.fail(f"{kind} '{operand}' dim {dim}", f"expected {expected}{reason}, got {got}")

    def expect_rank(self, operand, ranks):
        info = self.operands[operand]
        ranks = (ranks,) if isinstance(ranks, int) else tuple(ranks)
        if info.rank not in ranks:
            want = str(ranks[0]) if len(ranks) == 1 else \
                ", ".join(map(str, ranks[:-1])) + f" or {ranks[-1]}"
            self.fail(f"operand '{operand}'", f"expected rank {want}, got rank {info.rank}")

    def expect_shape(self, operand, shape, why=""):
        info = self.operands[operand]
        shape = tuple(shape)
        if info.rank != len(shape):
            self.fail(f"operand '{operand}'",
                      f"expected rank {len(shape)}, got rank {info.rank}")
        for d, (want, got) in enumerate(zip(shape, info.shape)):
            if want != got:
                self.fail_dim(operand, d, want, got, why)

    def expect_dtype(self, operand, dtype):
        info = self.operands[operand]
        if info.dtype is not None and info.dtype is not dtype:
            self.fail(f"operand '{operand}'", f"expected element type {dtype}, got {info.dtype}")

    def int_list(self, attr, length, why=""):
        values = tuple(self.attrs[attr])
        if len(values) != length:
            reason = f" ({why})" if why else ""
            self.fail(f"attribute '{attr}'", f"expected {length} values{reason}, got {len(values)}")
        return values

    def positive(self, attr, values, minimum=1):
        for i, v in enumerate(values):
            if v < minimum:
                self.fail(f"attribute '{attr}' entry {i}", f"expected >= {minimum}, got {v}")

    def axis(self, attr, rank):
        value = self.attrs[attr]
        if not 0 <= value < rank:
            self.fail(f"attribute '{attr}'", f"expected an axis in [0, {rank}), got {value}")
        return value

    def declared_shape(self, result):
        if result not in self.declared:
            self.fail(f"result '{result}'", "the result shape must be given")
        return self.declared[result].shape


_REGISTRY = {}


def register(opdef):
    """Add an OpDef to the dialect; names are unique."""
    if opdef.name in _REGISTRY:
        raise ValueError(f"duplicate op {opdef.name}")
    for a in opdef.attrs:
        assert a.kind in ATTR_KINDS, (opdef.name, a)
    _REGISTRY[opdef.name] = opdef
    return opdef


def op(name, *, family, operands, results, attrs=(), doc="", declared_results=(),
       dtype_from=None):
    """Decorator form of ``register`` around an infer function."""

    def wrap(infer):
        register(OpDef(
            name=name, family=family,
            operands=tuple(o if isinstance(o, Operand) else Operand(o) for o in operands),
            results=tuple(r if isinstance(r, Result) else Result(r) for r in results),
            attrs=tuple(attrs), infer=infer, doc=inspect.cleandoc(doc or infer.__doc__ or ""),
            declared_results=tuple(declared_results), dtype_from=dtype_from))
        return infer

    return wrap


def get(name):
    """The OpDef for ``name`` (with or without the ``dnn.`` prefix)."""
    key = name[4:] if name.startswith("dnn.") else name
    try:
        return _REGISTRY[key]
    except KeyError:
        raise VerificationError(f"unknown op 'dnn.{key}'", op=f"dnn.{key}") from None


def all_ops():
    """Every registered OpDef, in registration order."""
    return list(_REGISTRY.values())


def complete_attrs(opdef, attrs, ctx_fail=None):
    """Fill static defaults; reject unknown and missing attributes."""
    out = {}
    known = {a.name for a in opdef.attrs}
    for key in attrs:
        if key not in known:
            expected = (f"expected one of {', '.join(sorted(known))}" if known
                        else "the op has no attributes")
            raise VerificationError(
                f"'{opdef.mlir_name}' op attribute '{key}': unknown attribute; {expected}",
                op=opdef.mlir_name)
    for a in opdef.attrs:
        if a.name in attrs and attrs[a.name] is not None:
            value = attrs[a.name]
        elif a.required:
            raise VerificationError(
                f"'{opdef.mlir_name}' op attribute '{a.name}': expected a value, got none",
                op=opdef.mlir_name)
        else:
            value = a.default
        value = _check_kind(opdef, a, value)
        if a.choices and value not in a.choices:
            raise VerificationError(
                f"'{opdef.mlir_name}' op attribute '{a.name}': expected one of "
                f"{', '.join(map(str, a.choices))}, got {value}", op=opdef.mlir_name)
        out[a.name] = value
    return out


def _check_kind(opdef, a, value):
    """Coerce an attribute's Python value to its kind, or raise naming it."""
    def bad(expected):
        raise VerificationError(f"'{opdef.mlir_name}' op attribute '{a.name}': expected "
                                f"{expected}, got {value!r}", op=opdef.mlir_name)

    if a.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            bad("an integer")
        return value
    if a.kind == "ints":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            bad("a list of integers")
        values = tuple(value)
        if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            bad("a list of integers")
        return values
    if a.kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            bad("a number")
        # Only a constant's value may be infinite (masks use -inf).
        if math.isnan(value) or (math.isinf(value) and a.name != "value"):
            bad("a finite number")
        return float(value)
    if a.kind == "bool":
        if not isinstance(value, bool):
            bad("true or false")
        return value
    if a.kind in ("str", "type"):
        if not isinstance(value, str):
            bad("a string")
        return value
    return value


def infer(opdef, operands, attrs, declared=None, location=None):
    """Check operands and attributes, and return the result infos by name.

    ``operands`` maps operand name to TensorInfo (None for an absent optional
    operand, a list for a variadic one). The returned dict holds the present
    results only; a result's dtype is None when the op leaves it free.
    """
    attrs = complete_attrs(opdef, attrs)
    ctx = InferContext(opdef, dict(operands), attrs, dict(declared or {}), location)
    for o in opdef.operands:
        value = ctx.operands.get(o.name)
        if value is None:
            if not (o.optional or o.variadic):
                ctx.fail(f"operand '{o.name}'", "expected a tensor, got none")
            continue
        for info in value if isinstance(value, list) else [value]:
            # A dtype of None is a floating-point type the graph has not chosen yet.
            if o.dtype == "bool" and info.dtype is not data_type.BOOLEAN:
                ctx.fail(f"operand '{o.name}'",
                         f"expected a tensor of i1, got {info.dtype or 'a float tensor'}")
            if o.dtype == "int32" and info.dtype is not data_type.INT32:
                ctx.fail(f"operand '{o.name}'",
                         f"expected a tensor of int32, got {info.dtype or 'a float tensor'}")
            if info.dtype is None:
                continue
            if o.dtype == "float" and not info.dtype.is_float:
                ctx.fail(f"operand '{o.name}'", f"expected a floating-point tensor, got {info.dtype}")
            if o.dtype == "number" and not (info.dtype.is_float or info.dtype in BYTE_INTEGERS):
                ctx.fail(f"operand '{o.name}'", "expected a floating-point, si8 or ui8 tensor, "
                         f"got {info.dtype}")
    results = opdef.infer(ctx)
    return {k: v for k, v in results.items() if v is not None}, attrs


def broadcast_shapes(ctx, names):
    """NumPy broadcasting of the named operands; errors name the operand and dim."""
    shapes = [(n, ctx.operands[n].shape) for n in names if ctx.operands.get(n) is not None]
    rank = max(len(s) for _, s in shapes)
    out = [1] * rank
    owner = [None] * rank
    for name, shape in shapes:
        offset = rank - len(shape)
        for i, d in enumerate(shape):
            j = offset + i
            if d == out[j] or d == 1:
                continue
            if out[j] == 1:
                out[j], owner[j] = d, name
                continue
            ctx.fail_dim(name, i, f"{out[j]} or 1", d, f"broadcast against '{owner[j]}'")
    return tuple(out)
