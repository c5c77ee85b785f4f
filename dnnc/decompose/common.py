"""What the decomposition rules share: a builder that emits primitive dnn ops
just before the op being expanded.

Every floating-point result whose element type the op leaves free is f32 (the
compute type), whatever the inputs are; ``out=`` asks for another type on the
last op of a chain, so a bf16 result needs no extra cast. Data-movement ops
(reshape, transpose) keep their operand's type, as their definitions say.
Python numbers given as operands become scalar ``dnn.constant`` ops.
"""

import math

from mlir import ir

from dnnc.dialect import builders, opdef
from dnnc.dialect.types import data_type

F32 = data_type.FLOAT
NEG_INF = -math.inf


def shape_of(value):
    return builders.info_of(value.type).shape


def dtype_of(value):
    return builders.info_of(value.type).dtype


class Builder:
    """Emits dnn ops before ``view``'s op, at its location."""

    def __init__(self, view):
        self.view = view
        self._ip = ir.InsertionPoint(view.operation)
        self._loc = view.operation.location
        self._constants = {}

    def out(self, result):
        """Element type of the expanded op's result ``result``."""
        return dtype_of(self.view.results[result])

    shape_of = staticmethod(shape_of)
    dtype_of = staticmethod(dtype_of)

    # ------------------------------------------------------------------ generic

    def op(self, name, operands, attrs=None, types=None, dtype=None, discardable=None):
        """Create ``dnn.<name>``; return its OpView. ``types`` maps result names
        to MLIR types; other results get their inferred type, with free element
        types set to ``dtype`` (f32 unless given)."""
        d = opdef.get(name)
        operands = {k: self._value(v) for k, v in operands.items()}
        infos = {k: ([builders.info_of(x.type) for x in v] if isinstance(v, list) else
                     (builders.info_of(v.type) if v is not None else None))
                 for k, v in operands.items()}
        types = dict(types or {})
        declared = {k: builders.info_of(t) for k, t in types.items()}
        inferred, _ = opdef.infer(d, infos, dict(attrs or {}), declared)
        for r, info in inferred.items():
            if r not in types:
                types[r] = builders.tensor_type(info.shape, info.dtype or dtype or F32)
        return builders.create(name, operands, attrs, types, discardable=discardable,
                               loc=self._loc, ip=self._ip)

    def emit(self, name, operands, attrs=None, out=None):
        """A single-result op; its value, of element type ``out`` when given."""
        view = self.op(name, operands, attrs, dtype=out)
        value = next(v for v in view.results.values() if v is not None)
        return self.cast(value, out) if out is not None else value

    def _value(self, v):
        if isinstance(v, (int, float)):
            return self.const(v)
        if isinstance(v, list):
            return [self._value(x) for x in v]
        return v

    # ------------------------------------------------------------------ tensors

    def const(self, value):
        """A scalar f32 constant (one per value and expansion)."""
        value = float(value)
        if value not in self._constants:
            self._constants[value] = self.emit("constant", {}, {"value": value})
        return self._constants[value]

    def cast(self, x, dtype):
        """``x`` converted to ``dtype`` (x itself when it already has it)."""
        if dtype is None or dtype_of(x) is dtype:
            return x
        t = builders.tensor_type(shape_of(x), dtype)
        return self.op("cast", {"x": x}, types={"y": t}).results["y"]

    def reshape(self, x, shape):
        if tuple(shape) == shape_of(x):
            return x
        t = builders.tensor_type(shape, dtype_of(x))
        return self.op("reshape", {"x": x}, types={"y": t}).results["y"]

    def transpose(self, x, permutation):
        return self.emit("transpose", {"x": x}, {"permutation": list(permutation)})

    def swap_last(self, x):
        """Swap the last two dims (a matrix transpose of each batch entry)."""
        r = len(shape_of(x))
        return self.transpose(x, list(range(r - 2)) + [r - 1, r - 2])

    # ------------------------------------------------------------------ pointwise

    def unary(self, name, x, out=None):
        return self.emit(name, {"x": x}, out=out)

    def binary(self, name, a, b, out=None):
        return self.emit(name, {"a": a, "b": b}, out=out)

    def add(self, a, b, out=None):
        return self.binary("add", a, b, out)

    def sub(self, a, b, out=None):
        return self.binary("sub", a, b, out)

    def mul(self, a, b, out=None):
        return self.binary("mul", a, b, out)

    def div(self, a, b, out=None):
        return self.binary("div", a, b, out)

    def select(self, cond, a, b, out=None):
        return self.emit("select", {"cond": cond, "a": a, "b": b}, out=out)

    def spread(self, v, like):
        """``v`` broadcast to its shape and ``like``'s together, as v + 0 *
        position: gen_index reads no memory and its positions are finite,
        so the sum is v (a per-group value made per channel)."""
        position = self.emit("gen_index", {"x": like}, {"axis": 0})
        return self.add(v, self.mul(position, 0.0))

    def where_eq(self, x, value, then, otherwise=None, out=None):
        """``then`` where x == value, else ``otherwise`` (default x)."""
        cond = self.binary("cmp_eq", x, value)
        return self.select(cond, then, x if otherwise is None else otherwise, out)

    # ------------------------------------------------------------------ reductions, matmul

    def reduce(self, mode, x, axes, keepdims=True, out=None):
        """Reduce over ``axes``; with no axes, x itself."""
        axes = sorted(axes)
        if not axes:
            return self.cast(x, out)
        return self.emit("reduction", {"x": x},
                         {"mode": mode, "axes": axes, "keepdims": keepdims}, out=out)

    def sum(self, x, axes, keepdims=True, out=None):
        return self.reduce("sum", x, axes, keepdims, out)

    def mean(self, x, axes, out=None):
        return self.reduce("mean", x, axes, True, out)

    def max(self, x, axes):
        """The maximum over ``axes``; -inf over an empty axis, where
        dnn.reduction refuses max (it has no identity) and where the softmax
        and attention rules expect the shift of an all -inf row."""
        shape = shape_of(x)
        if any(shape[a] == 0 for a in axes):
            return self.add(self.sum(x, axes), NEG_INF)  # 0 + -inf, in the kept shape
        return self.reduce("max", x, axes)

    def matmul(self, a, b, out=None):
        return self.emit("matmul", {"a": a, "b": b}, out=out)
